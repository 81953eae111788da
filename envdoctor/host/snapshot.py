"""Snapshots: the raw evidence of one machine, written to and replayed from JSON.

A snapshot is what the probes *read* (files, listings, links, command results,
environment, NVML answers, the interpreter's paths), never what they
concluded, so a newer envdoctor replaying an old snapshot draws newer
conclusions.  The format is public (``envdoctor/schemas/snapshot.schema.json``).

Replay rules for questions the snapshot holds no answer to (hand-made
fixtures rely on them): a file or directory is absent (``ENOENT``), a path is
no symbolic link, a command is not installed, NVML's library is not found.
"""

from __future__ import annotations

import base64
import datetime
import json
from typing import Any, Dict, List, Optional, Sequence

from .base import (
    MAX_FILE_BYTES,
    CommandResult,
    DirResult,
    ElfResult,
    FileResult,
    Host,
    LinkResult,
    NvmlResult,
    PythonInfo,
)
from .live import LiveHost
from .privacy import Scrubber

SCHEMA_VERSION = 1


class SnapshotError(Exception):
    """The snapshot file cannot be used; the message says why, for the user."""


# -- writing -------------------------------------------------------------------

def _file_entry(res: FileResult) -> Dict[str, Any]:
    if res.data is None:
        return {"error": res.error or "EIO", "message": res.message}
    try:
        entry: Dict[str, Any] = {"text": res.data.decode("utf-8")}
    except UnicodeDecodeError:
        entry = {"base64": base64.b64encode(res.data).decode("ascii")}
    if res.truncated:
        entry["truncated"] = True
    return entry


def document_from_host(host: LiveHost, scrubber: Scrubber, envdoctor_version: str) -> Dict[str, Any]:
    """Everything ``host`` was asked so far, as a snapshot document."""
    nvml = host.nvml()
    if scrubber.redact_ids and nvml.data:
        for key, ans in nvml.data.items():
            if key.endswith(".serial") and isinstance(ans, dict) and isinstance(ans.get("value"), str):
                scrubber.add_serial(ans["value"])
    py = host.python()
    doc: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "envdoctor_version": envdoctor_version,
        "created": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "redaction": {"host_identity": not scrubber.include_host, "gpu_ids": scrubber.redact_ids},
        "uname": dict(host.uname()),
        "environ": scrubber.environ(host.environ()),
        "python": {
            "executable": py.executable, "version": py.version, "implementation": py.implementation,
            "prefix": py.prefix, "base_prefix": py.base_prefix, "sys_path": list(py.sys_path),
            **({"error": py.error, "message": py.message} if py.error else {}),
        },
        "nvml": ({"data": nvml.data, "duration": round(nvml.duration, 4)} if nvml.ok else
                 {"error": nvml.error, "message": nvml.message, "duration": round(nvml.duration, 4)}),
        "files": {p: _file_entry(r) for p, r in sorted(host.files.items())},
        "dirs": {p: ({"entries": list(r.entries)} if r.entries is not None else
                     {"error": r.error or "EIO", "message": r.message}) for p, r in sorted(host.dirs.items())},
        "links": {p: ({"target": r.target} if r.target is not None else {"error": r.error or "EINVAL"})
                  for p, r in sorted(host.links.items())},
        "elf": {p: ({"soname": r.soname, "needed": list(r.needed), "rpath": list(r.rpath), "runpath": list(r.runpath)}
                    if r.ok else {"error": r.error, "message": r.message}) for p, r in sorted(host.elfs.items())},
        "commands": [
            {"argv": list(r.argv), "returncode": r.returncode, "stdout": r.stdout, "stderr": r.stderr,
             "timed_out": r.timed_out, "error": r.error, "message": r.message, "duration": round(r.duration, 4)}
            for _, r in sorted(host.commands.items())
        ],
    }
    return scrubber(doc)


def write_snapshot(doc: Dict[str, Any], path: str) -> None:
    text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if path == "-":
        import sys

        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


# -- reading -------------------------------------------------------------------

def load_snapshot(path: str) -> Dict[str, Any]:
    """Read and validate a snapshot file; raise :class:`SnapshotError` with a clear reason."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(512 * 1024 * 1024 + 1)
    except OSError as exc:
        raise SnapshotError("cannot read snapshot %s: %s" % (path, exc.strerror or exc)) from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SnapshotError("%s is not a snapshot: not UTF-8 text" % path) from None
    except ValueError as exc:
        hint = " (the file looks truncated)" if "Expecting" in str(exc) and raw.rstrip()[-1:] not in (b"}",) else ""
        raise SnapshotError("%s is not valid JSON%s: %s" % (path, hint, exc)) from None
    validate_document(doc, path)
    return doc


def _need(cond: bool, path: str, where: str, what: str) -> None:
    if not cond:
        raise SnapshotError("%s is not a valid envdoctor snapshot: %s %s" % (path, where, what))


def validate_document(doc: Any, path: str = "snapshot") -> None:
    """Structural validation matching the JSON Schema (without needing jsonschema)."""
    _need(isinstance(doc, dict), path, "the document", "must be a JSON object")
    version = doc.get("schema_version")
    _need(isinstance(version, int) and not isinstance(version, bool), path, "schema_version",
          "is missing or not an integer")
    if version > SCHEMA_VERSION:
        raise SnapshotError("%s has snapshot schema %d, newer than this envdoctor understands (%d); "
                            "upgrade envdoctor to replay it" % (path, version, SCHEMA_VERSION))
    for section, kind in (("files", dict), ("dirs", dict), ("links", dict), ("commands", list), ("elf", dict),
                          ("environ", dict), ("uname", dict), ("python", dict), ("nvml", dict)):
        if section in doc:
            _need(isinstance(doc[section], kind), path, section, "must be a JSON %s" %
                  ("object" if kind is dict else "array"))
    for p, entry in doc.get("files", {}).items():
        _need(isinstance(entry, dict) and (isinstance(entry.get("text"), str) or isinstance(entry.get("base64"), str)
                                           or isinstance(entry.get("error"), str)),
              path, "files[%r]" % p, "needs text, base64 or error")
    for p, entry in doc.get("dirs", {}).items():
        ok = isinstance(entry, dict) and (
            (isinstance(entry.get("entries"), list) and all(isinstance(n, str) for n in entry["entries"]))
            or isinstance(entry.get("error"), str))
        _need(ok, path, "dirs[%r]" % p, "needs entries (strings) or error")
    for p, entry in doc.get("links", {}).items():
        _need(isinstance(entry, dict) and (isinstance(entry.get("target"), str) or isinstance(entry.get("error"), str)),
              path, "links[%r]" % p, "needs target or error")
    for p, entry in doc.get("elf", {}).items():
        ok = isinstance(entry, dict) and (isinstance(entry.get("error"), str) or all(
            isinstance(entry.get(k, []), list) and all(isinstance(x, str) for x in entry.get(k, []))
            for k in ("needed", "rpath", "runpath")))
        _need(ok, path, "elf[%r]" % p, "needs needed/rpath/runpath string arrays or error")
    for i, cmd in enumerate(doc.get("commands", [])):
        _need(isinstance(cmd, dict) and isinstance(cmd.get("argv"), list) and cmd["argv"]
              and all(isinstance(a, str) for a in cmd["argv"]), path, "commands[%d]" % i, "needs a non-empty argv")
        rc = cmd.get("returncode")
        _need(rc is None or (isinstance(rc, int) and not isinstance(rc, bool)), path, "commands[%d].returncode" % i,
              "must be an integer or null")
        for k in ("stdout", "stderr"):
            _need(isinstance(cmd.get(k, ""), str), path, "commands[%d].%s" % (i, k), "must be a string")
    env = doc.get("environ", {})
    _need(all(isinstance(v, str) for v in env.values()), path, "environ", "values must be strings")
    py = doc.get("python", {})
    if py:
        _need(isinstance(py.get("sys_path", []), list), path, "python.sys_path", "must be an array")
    nvml = doc.get("nvml", {})
    if nvml:
        _need(isinstance(nvml.get("data"), dict) or isinstance(nvml.get("error"), str), path, "nvml",
              "needs data (object) or error")


class SnapshotHost(Host):
    """Replays a snapshot document.  Questions it has no answer to read as absent."""

    def __init__(self, doc: Dict[str, Any], name: str = "snapshot") -> None:
        validate_document(doc, name)
        self.doc = doc
        self.description = "snapshot %s" % name
        self._commands = {tuple(c["argv"]): c for c in doc.get("commands", [])}

    def read_file(self, path: str, limit: int = MAX_FILE_BYTES) -> FileResult:
        entry = self.doc.get("files", {}).get(path)
        if entry is None:
            return FileResult(path, error="ENOENT", message="No such file or directory")
        if "text" in entry:
            data = entry["text"].encode("utf-8")
        elif "base64" in entry:
            try:
                data = base64.b64decode(entry["base64"], validate=True)
            except ValueError:
                return FileResult(path, error="EIO", message="snapshot holds undecodable base64 for this file")
        else:
            return FileResult(path, error=entry.get("error") or "EIO", message=entry.get("message", ""))
        return FileResult(path, data=data[:limit], truncated=bool(entry.get("truncated")) or len(data) > limit)

    def list_dir(self, path: str) -> DirResult:
        entry = self.doc.get("dirs", {}).get(path)
        if entry is None:
            return DirResult(path, error="ENOENT", message="No such file or directory")
        if "entries" in entry:
            return DirResult(path, entries=tuple(sorted(entry["entries"])))
        return DirResult(path, error=entry.get("error") or "EIO", message=entry.get("message", ""))

    def read_link(self, path: str) -> LinkResult:
        entry = self.doc.get("links", {}).get(path)
        if entry is None:
            return LinkResult(path, error="EINVAL", message="not a symbolic link")
        if "target" in entry:
            return LinkResult(path, target=entry["target"])
        return LinkResult(path, error=entry.get("error") or "EINVAL", message=entry.get("message", ""))

    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        key = tuple(str(a) for a in argv)
        c = self._commands.get(key)
        if c is None:
            return CommandResult(key, error="ENOENT", message="No such file or directory")
        return CommandResult(key, returncode=c.get("returncode"), stdout=c.get("stdout", ""),
                             stderr=c.get("stderr", ""), timed_out=bool(c.get("timed_out")),
                             error=c.get("error"), message=c.get("message", "") or "",
                             duration=float(c.get("duration") or 0.0))

    def elf(self, path: str) -> ElfResult:
        entry = self.doc.get("elf", {}).get(path)
        if entry is None:
            # Not recorded: absent, unless the snapshot holds the file itself (then: no ELF we can read).
            if path in self.doc.get("files", {}) or self.exists(path):
                return ElfResult(path, error="not_recorded", message="the snapshot holds no ELF headers for it")
            return ElfResult(path, error="ENOENT", message="No such file or directory")
        if "error" in entry:
            return ElfResult(path, error=entry["error"], message=entry.get("message", ""))
        return ElfResult(path, soname=entry.get("soname"), needed=tuple(entry.get("needed", [])),
                         rpath=tuple(entry.get("rpath", [])), runpath=tuple(entry.get("runpath", [])))

    def environ(self) -> Dict[str, str]:
        return dict(self.doc.get("environ", {}))

    def uname(self) -> Dict[str, str]:
        u = self.doc.get("uname", {})
        return {k: str(u.get(k, "")) for k in ("sysname", "release", "version", "machine")}

    def nvml(self) -> NvmlResult:
        n = self.doc.get("nvml")
        if not n:
            return NvmlResult(data={"init": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND", "code": 12}})
        if isinstance(n.get("data"), dict):
            return NvmlResult(data=n["data"], duration=float(n.get("duration") or 0.0))
        return NvmlResult(error=n.get("error") or "worker_failed", message=n.get("message", ""),
                          duration=float(n.get("duration") or 0.0))

    def python(self) -> PythonInfo:
        p = self.doc.get("python") or {}
        sys_path: List[str] = [str(x) for x in p.get("sys_path", [])]
        return PythonInfo(executable=str(p.get("executable", "")), version=str(p.get("version", "")),
                          implementation=str(p.get("implementation", "")), prefix=str(p.get("prefix", "")),
                          base_prefix=str(p.get("base_prefix", "")), sys_path=tuple(sys_path),
                          error=p.get("error"), message=p.get("message", ""))

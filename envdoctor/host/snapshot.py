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
import re
import sys
from typing import Any, Dict, List, Optional, Sequence

from .base import (
    COMMAND_FILTERS,
    IN_FLIGHT,
    MAX_FILE_BYTES,
    CommandResult,
    CudaInitResult,
    DirResult,
    ElfResult,
    FatbinResult,
    FileResult,
    Host,
    LinkResult,
    NamesResult,
    NvmlResult,
    PythonInfo,
    ReadEnviron,
    ReadHung,
    SymbolsResult,
    file_filter,
)
from .cudainit import from_entry as cuda_init_result
from .cudainit import to_entry as cuda_init_entry
from .live import LiveHost
from .privacy import Scrubber, is_path_name

SCHEMA_VERSION = 1

#: Environment variables whose values a snapshot records even when no probe of this version read them
#: (a newer envdoctor replaying the snapshot may): CUDA's, NVIDIA's, NCCL's, the loader's, conda's, Numba's, and
#: search paths (:func:`~envdoctor.host.privacy.is_path_name`). Of every other variable only the name is kept.
RECORDED_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "LD_", "CONDA_", "NUMBA")


def recorded_variable(name: str) -> bool:
    return name.upper().startswith(RECORDED_PREFIXES) or is_path_name(name)


class SnapshotError(Exception):
    """The snapshot file cannot be used; the message says why, for the user."""


# -- writing -------------------------------------------------------------------

def _file_entry(res: FileResult) -> Dict[str, Any]:
    if res.data is None:
        return {"error": res.error or "EIO", "message": res.message}
    try:
        text = res.data.decode("utf-8")
        keep = file_filter(res.path)
        entry: Dict[str, Any] = {"text": keep(text) if keep is not None else text}
    except UnicodeDecodeError:
        entry = {"base64": base64.b64encode(res.data).decode("ascii")}
    if res.truncated:
        entry["truncated"] = True
    return entry


def _elf_entry(r: ElfResult) -> Dict[str, Any]:
    """One library's dynamic section as the snapshot records it (``verneed`` when it was read, else
    ``verneed_error`` when it could not be)."""
    out: Dict[str, Any] = {"soname": r.soname, "needed": list(r.needed), "rpath": list(r.rpath),
                           "runpath": list(r.runpath)}
    if r.verneed is not None:
        out["verneed"] = {lib: list(v) for lib, v in r.verneed.items()}
    elif r.verneed_error:
        out["verneed_error"] = r.verneed_error
    return out


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
        **_environ(host.environ(), scrubber),
        "python": {
            "executable": py.executable, "version": py.version, "implementation": py.implementation,
            "prefix": py.prefix, "base_prefix": py.base_prefix, "sys_path": list(py.sys_path),
            **({"stdlib": py.stdlib} if py.stdlib else {}),
            **({"chosen": {"rule": py.rule, "reason": py.reason}} if py.rule else {}),
            **({"error": py.error, "message": py.message} if py.error else {}),
        },
        "nvml": ({"data": nvml.data, "duration": round(nvml.duration, 4)} if nvml.ok else
                 {"error": nvml.error, "message": nvml.message, "duration": round(nvml.duration, 4)}),
        **({"cuda_init": cuda_init_entry(host.cuda_init())} if getattr(host, "cuda_init_asked", False) else {}),
        "files": {p: _file_entry(r) for p, r in sorted(host.files.items())},
        "dirs": {p: ({"entries": list(r.entries)} if r.entries is not None else
                     {"error": r.error or "EIO", "message": r.message}) for p, r in sorted(host.dirs.items())},
        "links": {p: ({"target": r.target} if r.target is not None else {"error": r.error or "EINVAL"})
                  for p, r in sorted(host.links.items())},
        "elf": {p: (_elf_entry(r) if r.ok else {"error": r.error, "message": r.message})
                for p, r in sorted(host.elfs.items())},
        "fatbin": {p: (dict({"sass": list(r.sass), "ptx": list(r.ptx), "section": r.section, "complete": r.complete},
                            **({"ptx_isa": r.ptx_isa} if r.ptx_isa else {}))
                       if r.ok else {"error": r.error, "message": r.message})
                   for p, r in sorted(getattr(host, "fatbins", {}).items())},
        "elf_names": {p: ({"sonames": list(r.sonames), "size": r.size} if r.ok else
                          {"error": r.error, "message": r.message, "size": r.size})
                      for p, r in sorted(getattr(host, "names", {}).items())},
        "elf_symbols": [dict({"path": r.path, "providers": list(r.providers), "names": r.names},
                             **({"missing": [list(m) for m in r.missing], "checked": r.checked} if r.ok else
                                {"error": r.error, "message": r.message}))
                        for _, r in sorted(getattr(host, "symbols", {}).items())],
        "commands": [
            {"argv": list(r.argv), "returncode": r.returncode, "stdout": _command_output(r), "stderr": r.stderr,
             "timed_out": r.timed_out, "error": r.error, "message": r.message, "duration": round(r.duration, 4)}
            for _, r in sorted(host.commands.items())
        ],
    }
    # Reads still hanging at the deadline (another probe was stuck on them): recorded as timed out, so
    # the replay's verdict is the live run's.
    hung = host.in_flight()
    for table in ("files", "dirs", "links", "elf"):
        for path in hung.get(table, []):
            doc[table].setdefault(str(path), {"error": IN_FLIGHT, "message": "still being read when the time "
                                                                           "limit came (hung)"})
    for argv in hung.get("commands", []):
        if all(tuple(c["argv"]) != tuple(argv) for c in doc["commands"]):
            doc["commands"].append({"argv": list(argv), "returncode": None, "stdout": "", "stderr": "",
                                    "timed_out": True, "error": None, "message": "still running when the time "
                                                                                "limit came (hung)",
                                    "duration": round(host.timeout, 4)})
    return scrubber(doc)


def _environ(env: Dict[str, str], scrubber: Scrubber) -> Dict[str, Any]:
    """The values of the variables a probe read and of those :func:`~envdoctor.host.base.recorded_variable`
    names (secrets redacted); of every other variable the name only (``environ_names``)."""
    read = getattr(env, "read", None)
    keep = {k: v for k, v in env.items() if recorded_variable(k) or (read is None or k in read)}
    out: Dict[str, Any] = {"environ": scrubber.environ(keep)}
    names = sorted(scrubber(k) for k in env if k not in keep)
    if names:
        out["environ_names"] = names
    return out


def trim_document(doc: Dict[str, Any], read: Sequence[str]) -> Dict[str, Any]:
    """A snapshot written before the capture kept only what the probes use, as a capture writes it now: the
    environment variables in ``read`` (those its replay's probes read) and :func:`recorded_variable` keep
    their values, the others their names; package databases keep the stanzas a probe reads
    (``scripts/snapshot_size.py`` measures the difference; a replay of either gives the same report)."""
    out = json.loads(json.dumps(doc))
    env = out.get("environ") or {}
    wanted = set(read)
    out["environ"] = {k: v for k, v in env.items() if recorded_variable(k) or k in wanted}
    names = sorted(set(out.get("environ_names", [])) | {k for k in env if k not in out["environ"]})
    if names:
        out["environ_names"] = names
    for path, entry in out.get("files", {}).items():
        keep = file_filter(path)
        if keep is not None and isinstance(entry, dict) and isinstance(entry.get("text"), str):
            entry["text"] = keep(entry["text"])
    for cmd in out.get("commands", []):
        keep_out = COMMAND_FILTERS.get(tuple(cmd.get("argv", [])[1:]))
        if keep_out is not None and cmd.get("stdout"):
            cmd["stdout"] = keep_out(cmd["stdout"])
    return out


def _command_output(r: CommandResult) -> str:
    keep = COMMAND_FILTERS.get(tuple(r.argv[1:]))
    return keep(r.stdout) if keep is not None and r.stdout else r.stdout


def snapshot_text(doc: Dict[str, Any]) -> str:
    """The snapshot document as the JSON text envdoctor writes."""
    from ..jsontext import escape_raw

    # Any byte sequence (a file name or variable that is not UTF-8 arrives as lone surrogates) is kept
    # losslessly as a JSON escape, so the file is valid UTF-8 JSON and replays the same text.
    return escape_raw(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False)) + "\n"


def snapshot_bytes(doc: Dict[str, Any], path: str) -> bytes:
    """What ``snapshot -o PATH`` writes: the JSON text in UTF-8, gzip-compressed for a name ending in ``.gz``."""
    data = snapshot_text(doc).encode("utf-8")
    if path.endswith(".gz"):
        import gzip

        data = gzip.compress(data, mtime=0)
    return data


def write_snapshot(doc: Dict[str, Any], path: str) -> None:
    """Write ``doc`` to ``path`` (``-``: stdout; a name ending in ``.gz``: gzip-compressed) the way every
    ``-o`` is written (:func:`envdoctor.output.write_output`): a regular file appears whole or not at all, so
    a full disk or an interrupted run never leaves a truncated snapshot for a fleet's archive to trip over;
    a device or pipe is written into."""
    if path == "-":
        import sys

        sys.stdout.write(snapshot_text(doc))
        sys.stdout.flush()
        return
    from ..output import write_output

    write_output(path, snapshot_bytes(doc, path))


# -- reading -------------------------------------------------------------------

#: The largest snapshot (after gunzip) replayed.  envdoctor writes about 1 MB on a full
#: workstation (most of it the dpkg status file) and about 15 KB for the test machines.
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
#: The most JSON values (and object keys) a snapshot or report may hold.  A live capture of a real H100
#: node holds about 7,000 (tests/live/h100-ubuntu2404-container), a full workstation a few times that;
#: each costs a Python object of 50 to 350 bytes and its validation, so a crafted file of millions of
#: tiny values (which fits in MAX_SNAPSHOT_BYTES) would take hundreds of MB and tens of seconds. Counted
#: on the bytes, before anything is parsed.
MAX_SNAPSHOT_VALUES = 200000
#: Files up to this size are parsed before they are counted, and counted only when the parse fails: valid JSON
#: of L bytes holds at most 1 + 4L/3 by :func:`_count_values`' documented bound (its densest text is ``[{},{},...``:
#: an object costs 2 and a comma 2 in 3 bytes; every comma follows a value's last byte and every bracket has its
#: closing one), so a file this small that parses is never over MAX_SNAPSHOT_VALUES, and its parse cannot cost more
#: than a few MB whatever it holds. A report of an 8-GPU node (about 116 kB) is read in one pass, the parse; a file
#: that does not parse is counted then, so what is refused, and with which message, is as when it is counted first.
_PARSE_FIRST_BYTES = 3 * (MAX_SNAPSHOT_VALUES - 1) // 4
#: Files up to this size whose loose count is over MAX_SNAPSHOT_VALUES are counted again without their
#: strings' contents (about 1 s for 8 MiB on a small VM; a crafted 60 MB file is refused on the loose count).
_EXACT_COUNT_BYTES = 8 * 1024 * 1024
#: How many bytes :func:`_count_values` looks at for spaces at a time.
_SPACES_PIECE = 16 * 1024
#: A JSON string (escapes included): what :func:`_count_values` skips, so commas inside text do not count.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
#: How long a pipe or device may keep us waiting for more of the snapshot.
READ_TIMEOUT = 60.0
_GZIP_MAGIC = b"\x1f\x8b"
_schema: Optional[Dict[str, Any]] = None


def _read_bytes(path: str, timeout: float, noun: str = "snapshot") -> bytes:
    """The file's bytes, at most MAX_SNAPSHOT_BYTES + 1, never blocking on a FIFO or device for longer
    than ``timeout`` (a FIFO nobody writes to reads as empty instead of hanging)."""
    import os
    import select
    import stat
    import time

    if path == "-":
        import sys

        # Not made non-blocking: O_NONBLOCK belongs to the open file description, which standard
        # input shares with the shell (a terminal left non-blocking breaks it). select() before each
        # read is enough to keep the time limit.
        fd = os.dup(sys.stdin.fileno())
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SnapshotError("cannot read %s %s: it is a directory" % (noun, path))
        regular = stat.S_ISREG(mode)
        # A regular file's size is asked for (one byte more, to see it end; at least 64 KiB, for a file whose size
        # says nothing), never the limit: a read of 64 MiB allocates 64 MiB first and gives most of it back, which
        # cost fleet a fifth of json.load's time a report. The limit still bounds what is read, however much the
        # file grows meanwhile.
        want = max(os.fstat(fd).st_size + 1, 1 << 16) if regular else 0
        deadline = time.monotonic() + timeout
        chunks: List[bytes] = []
        total = 0
        while total <= MAX_SNAPSHOT_BYTES:
            if not regular:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise SnapshotError("cannot read %s %s: %s within %gs" % (
                        noun, path, "the rest did not arrive" if chunks else "nothing arrived", timeout))
            try:
                # A regular file in one read (one buffer, returned as it is: the bytes are held once).
                chunk = os.read(fd, min(want, MAX_SNAPSHOT_BYTES + 1 - total) if regular else 1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                break
            if not chunks:
                _check_start(chunk, path, noun)
            chunks.append(chunk)
            total += len(chunk)
            want = max(want - len(chunk), 1 << 16)  # a file that grew: the rest in pieces
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def _check_start(head: bytes, path: str, noun: str = "snapshot") -> None:
    """Fail at the first read, not after 64 MiB, when the file cannot be a snapshot (``/dev/zero``)."""
    text = head.lstrip(b" \t\r\n")
    if text.startswith(b"\xef\xbb\xbf"):
        text = text[3:].lstrip(b" \t\r\n")
    if not text or text.startswith((b"{", _GZIP_MAGIC)):
        return
    if text[:1] in b'["-0123456789tfn':  # JSON, but not an object
        raise SnapshotError("%s is not a valid envdoctor %s: the document must be a JSON object, and this "
                            "file starts with %r" % (path, noun, text[:16]))
    raise SnapshotError("%s is not valid JSON (nor gzip): it starts with %r" % (path, text[:16]))


def _gunzip(raw: bytes, path: str) -> bytes:
    import zlib

    out = b""
    rest = raw
    while rest:  # a gzip file may hold several members one after another (`cat a.gz b.gz`); zcat reads all
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += d.decompress(rest, MAX_SNAPSHOT_BYTES + 1 - len(out))
        except zlib.error as exc:
            raise SnapshotError("%s is not a valid gzip file: %s" % (path, exc)) from None
        if len(out) > MAX_SNAPSHOT_BYTES or (not d.eof and d.unconsumed_tail):
            raise SnapshotError("%s unpacks to more than %d MiB; envdoctor writes snapshots of about 1 MB" % (
                path, MAX_SNAPSHOT_BYTES >> 20))
        if not d.eof:
            raise SnapshotError("%s is a truncated gzip file" % path)
        rest = d.unused_data.lstrip(b"\0")  # gzip allows zero padding after the last member
    return out


def _count_values(raw: bytes) -> int:
    """An upper bound on the values and keys of the JSON in ``raw``, from its bytes: every item of an array
    and every member (a key and a value) of an object but the first follows a comma, and every container
    opens with a bracket, so there are at most 1 + 2 commas + arrays + 2 objects.  Commas and brackets
    inside strings count too (a loose bound, in C speed); when that bound is over the limit on a file
    small enough to scan quickly, strings are skipped and it is counted again, so the commas of a file's
    text cannot get a real snapshot refused."""
    def bound(data: bytes) -> int:
        return 1 + 2 * data.count(b",") + data.count(b"[") + 2 * data.count(b"{")

    # First looser bounds, each below the limit only if the bound above is (commas and brackets counted twice):
    # every byte of a small file, every byte but its spaces (a report is indented: one pass of bytes.count), or
    # every comma and bracket (one pass). Fleet reads thousands of files: three passes cost a third of json.load.
    quick = 1 + 2 * len(raw)
    if quick > MAX_SNAPSHOT_VALUES:
        # Each space lowers that bound by two: spaces are counted only until the bound is under the limit (a third
        # of an indented report), and no further once the bytes left could not make up what is missing even if
        # every one were a space (a large report: a seventh of it, not all of it; the decision is the same).
        need, spaces, at = len(raw) - (MAX_SNAPSHOT_VALUES - 1) // 2, 0, 0
        while spaces < need and at < len(raw) and need - spaces <= len(raw) - at:
            spaces += raw.count(b" ", at, at + _SPACES_PIECE)
            at += _SPACES_PIECE
        quick = 1 + 2 * (len(raw) - spaces)
    if quick > MAX_SNAPSHOT_VALUES:
        quick = 1 + 2 * (len(raw) - len(raw.translate(None, b",[{")))
    if quick <= MAX_SNAPSHOT_VALUES:
        return quick
    loose = bound(raw)
    if loose <= MAX_SNAPSHOT_VALUES or len(raw) > _EXACT_COUNT_BYTES:
        return loose
    return bound(_JSON_STRING.sub(b'""', raw))


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON (envdoctor never writes it)" % name)


#: The most digits of a JSON integer read (Python's own limit for turning text into an int, which the 3.8
#: releases before 3.8.14 lack: there, a million digits took minutes). envdoctor's numbers have at most 20.
MAX_INT_DIGITS = 4300


def _integer(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError("a number of %d digits (envdoctor never writes one of more than 20)" % len(text.lstrip("-")))
    return int(text)


def _loads(text: str) -> Any:
    """``json.loads`` with :func:`_integer`'s limit on integers. Where the interpreter limits the digits it
    turns into an int (3.8.14 and later), the parse runs at C speed with that limit set just under ours, and
    only a document holding a number of MAX_INT_DIGITS or more digits is parsed again with :func:`_integer`
    (a Python call per integer: a tenth of fleet's parse), so what is read or refused, and why, is the same."""
    set_limit = getattr(sys, "set_int_max_str_digits", None)
    if set_limit is None:
        return json.loads(text, parse_constant=_no_constant, parse_int=_integer)
    before = sys.get_int_max_str_digits()  # type: ignore[attr-defined]
    set_limit(MAX_INT_DIGITS - 1 if before == 0 or before >= MAX_INT_DIGITS else before)  # 0: no limit
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
    finally:
        set_limit(before)
    return json.loads(text, parse_constant=_no_constant, parse_int=_integer)


def read_raw(path: str, timeout: float = READ_TIMEOUT, noun: str = "snapshot") -> bytes:
    """The bytes of ``path`` (``-``: standard input), at most MAX_SNAPSHOT_BYTES + 1, a pipe or device waited
    for at most ``timeout``; :class:`SnapshotError` with the reason it cannot be read."""
    if not path:
        raise SnapshotError("no %s file named (an empty path)" % noun)
    try:
        return _read_bytes(path, timeout, noun)
    except OSError as exc:
        raise SnapshotError("cannot read %s %s: %s" % (noun, path, exc.strerror or exc)) from None


def read_document(path: str, timeout: float = READ_TIMEOUT, noun: str = "snapshot",
                  raw: Optional[bytes] = None) -> Dict[str, Any]:
    """The JSON object in ``path`` (``-``: standard input; gzip accepted), read with every guard a file
    from another machine needs (size, pipes that stall, devices, nesting, NaN, numbers of thousands of
    digits); :class:`SnapshotError` with a reason a user can act on, never another exception. ``raw``: the
    file's bytes, already read by :func:`read_raw` (``fleet`` reads its pipes all at once)."""
    if raw is None:
        raw = read_raw(path, timeout, noun)
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError("%s is larger than %d MiB; envdoctor writes snapshots of about 1 MB" % (
            path, MAX_SNAPSHOT_BYTES >> 20))
    if raw.startswith(_GZIP_MAGIC):
        raw = _gunzip(raw, path)
        _check_start(raw[:64], path, noun)
    if not raw or raw.isspace():  # (not raw.strip(), which copied every report)
        raise SnapshotError("%s is empty, not a %s" % (path, noun))
    if len(raw) <= _PARSE_FIRST_BYTES:
        try:
            return _parse(_decoded(raw, path, noun), path, noun)
        except SnapshotError:
            _refuse_many_values(raw, path)  # the refusal a count before the parse would have given
            raise
    _refuse_many_values(raw, path)
    text = _decoded(raw, path, noun)
    del raw  # the text replaces it: the bytes and the text are not held together while parsing
    return _parse(text, path, noun)


def _refuse_many_values(raw: bytes, path: str) -> None:
    values = _count_values(raw)
    if values > MAX_SNAPSHOT_VALUES:
        raise SnapshotError("%s holds up to %d values, more than the %d envdoctor reads (a real machine's "
                            "snapshot or report holds a few thousand): not read" % (path, values, MAX_SNAPSHOT_VALUES))


def _decoded(raw: bytes, path: str, noun: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SnapshotError("%s is not a %s: not UTF-8 text" % (path, noun)) from None


def _parse(text: str, path: str, noun: str) -> Dict[str, Any]:
    """The JSON object in ``text``, or :class:`SnapshotError` saying why not."""
    try:
        doc = _loads(text)
    except RecursionError:
        raise SnapshotError("%s is not a %s: its JSON is nested far deeper than any %s" % (
            path, noun, noun)) from None
    except ValueError as exc:
        hint = " (the file looks truncated)" if "Expecting" in str(exc) and text.rstrip()[-1:] != "}" else ""
        raise SnapshotError("%s is not valid JSON%s: %s" % (path, hint, exc)) from None
    if not isinstance(doc, dict):
        raise SnapshotError("%s is not a valid envdoctor %s: the document must be a JSON object" % (path, noun))
    return doc


#: The sections that hold evidence: envdoctor writes all of them, a hand-made snapshot at least one.
EVIDENCE = ("files", "dirs", "links", "commands", "nvml", "environ", "uname", "python", "elf", "fatbin", "elf_names",
            "elf_symbols", "cuda_init")


def not_a_snapshot(doc: Dict[str, Any]) -> Optional[str]:
    """Why a JSON object is another envdoctor document, not a snapshot (the snapshot schema, all of whose
    sections are optional, lets it pass); None when it is not recognised as one."""
    if isinstance(doc.get("probes"), list):
        return ("is an envdoctor report (diagnose --format json): it holds conclusions, not the evidence to "
                "replay; capture a snapshot with `envdoctor snapshot -o FILE`")
    if is_fleet_comparison(doc):
        return "is an envdoctor fleet comparison, not a snapshot"
    return None


def is_fleet_comparison(doc: Dict[str, Any]) -> bool:
    """Whether ``doc`` is what ``envdoctor fleet --format json`` writes (a previous run's output, often
    kept beside the reports it compared)."""
    return isinstance(doc.get("nodes"), list) and (isinstance(doc.get("facts"), list)
                                                   or isinstance(doc.get("summary"), dict))


def holds_evidence(doc: Dict[str, Any]) -> bool:
    return any(k in doc for k in EVIDENCE)


def load_snapshot(path: str, timeout: float = READ_TIMEOUT, report_option: Optional[str] = None) -> Dict[str, Any]:
    """Read and validate a snapshot file (``-``: standard input; gzip accepted); raise
    :class:`SnapshotError` with a reason a user can act on, never another exception. ``report_option``: the
    option of the same command that takes a report, named when the file is one."""
    doc = read_document(path, timeout)
    if report_option and isinstance(doc.get("probes"), list):
        raise SnapshotError("%s is a report, not a snapshot: use %s" % (path, report_option))
    why = not_a_snapshot(doc)
    if why is not None:
        raise SnapshotError("%s %s" % (path, why))
    validate_document(doc, path)
    if not holds_evidence(doc):
        raise SnapshotError("%s holds no evidence (no files, commands, NVML answers, environment...): not an "
                            "envdoctor snapshot" % path)
    return doc


def validate_document(doc: Any, path: str = "snapshot") -> None:
    """Raise :class:`SnapshotError` unless ``doc`` is valid against ``snapshot.schema.json`` and of a
    schema version this envdoctor reads."""
    global _schema
    from .schema import first_error, load_schema

    if not isinstance(doc, dict):
        raise SnapshotError("%s is not a valid envdoctor snapshot: the document must be a JSON object" % path)
    version = doc.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise SnapshotError("%s has snapshot schema %d, newer than this envdoctor understands (%d); "
                            "upgrade envdoctor to replay it" % (path, version, SCHEMA_VERSION))
    if _schema is None:
        _schema = load_schema("snapshot")
    problem = first_error(doc, _schema)
    if problem is not None:
        raise SnapshotError("%s is not a valid envdoctor snapshot: %s (see envdoctor/schemas/snapshot.schema.json)"
                            % (path, problem))


class SnapshotHost(Host):
    """Replays a snapshot document.  Questions it has no answer to read as absent."""

    reads_wait = False  # every answer is in the document
    late_reason = ("did not finish replaying the snapshot within the time limit (--timeout); the snapshot "
                   "holds more than a machine's evidence, or this machine is very busy")

    def __init__(self, doc: Dict[str, Any], name: str = "snapshot", validated: bool = False) -> None:
        if not validated:  # load_snapshot has (validating twice doubled the time of a large snapshot)
            validate_document(doc, name)
        self.doc = doc
        self.description = "snapshot %s" % name
        self._commands = {tuple(c["argv"]): c for c in doc.get("commands", [])}

    def read_file(self, path: str, limit: int = MAX_FILE_BYTES) -> FileResult:
        entry = self.doc.get("files", {}).get(path)
        if entry is None:
            return FileResult(path, error="ENOENT", message="No such file or directory")
        if entry.get("error") == IN_FLIGHT:
            raise ReadHung(path)
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
        if entry.get("error") == IN_FLIGHT:
            raise ReadHung(path)
        if "entries" in entry:
            return DirResult(path, entries=tuple(sorted(entry["entries"])))
        return DirResult(path, error=entry.get("error") or "EIO", message=entry.get("message", ""))

    def read_link(self, path: str) -> LinkResult:
        entry = self.doc.get("links", {}).get(path)
        if entry is None:
            return LinkResult(path, error="EINVAL", message="not a symbolic link")
        if entry.get("error") == IN_FLIGHT:
            raise ReadHung(path)
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
        if entry.get("error") == IN_FLIGHT:
            raise ReadHung(path)
        if "error" in entry:
            return ElfResult(path, error=entry["error"], message=entry.get("message", ""))
        vn = entry.get("verneed")  # absent from snapshots made before it was recorded: not known
        return ElfResult(path, soname=entry.get("soname"), needed=tuple(entry.get("needed", [])),
                         rpath=tuple(entry.get("rpath", [])), runpath=tuple(entry.get("runpath", [])),
                         verneed=None if vn is None else {str(k): tuple(str(x) for x in v) for k, v in vn.items()},
                         verneed_error=str(entry.get("verneed_error") or ""))

    def fatbin(self, path: str) -> FatbinResult:
        entry = self.doc.get("fatbin", {}).get(path)
        if entry is None:
            if path in self.doc.get("files", {}) or path in self.doc.get("elf", {}) or self.exists(path):
                return FatbinResult(path, error="not_recorded",
                                    message="the snapshot holds no record of its GPU code")
            return FatbinResult(path, error="ENOENT", message="No such file or directory")
        if "error" in entry:
            return FatbinResult(path, error=entry["error"], message=entry.get("message", ""))
        return FatbinResult(path, sass=tuple(str(a) for a in entry.get("sass", [])),
                            ptx=tuple(str(a) for a in entry.get("ptx", [])), section=bool(entry.get("section", True)),
                            complete=bool(entry.get("complete", True)),
                            ptx_isa=str(entry["ptx_isa"]) if isinstance(entry.get("ptx_isa"), str) else None)

    def elf_sonames(self, path: str) -> NamesResult:
        entry = self.doc.get("elf_names", {}).get(path)
        if entry is None:
            if self.exists(path) or path in self.doc.get("elf", {}):
                return NamesResult(path, error="not_recorded", message="the snapshot holds no record of the library "
                                                                       "names it holds")
            return NamesResult(path, error="ENOENT", message="No such file or directory")
        if "error" in entry:
            return NamesResult(path, size=int(entry.get("size") or 0), error=entry["error"],
                               message=entry.get("message", ""))
        return NamesResult(path, sonames=tuple(str(n) for n in entry.get("sonames", [])),
                           size=int(entry.get("size") or 0))

    def elf_unresolved(self, path: str, providers: Sequence[str], names: str = "") -> SymbolsResult:
        key = tuple(providers)
        table = self.__dict__.get("_symbols")
        if table is None:
            table = self.__dict__["_symbols"] = {
                (str(e.get("path")), tuple(e.get("providers") or ()), str(e.get("names") or "")): e
                for e in self.doc.get("elf_symbols", [])}
        entry = table.get((path, key, names))
        if entry is None:
            return SymbolsResult(path, key, error="not_recorded", names=names,
                                 message="the snapshot holds no symbol lookup for it with these libraries")
        if "error" in entry:
            return SymbolsResult(path, key, error=entry["error"], message=entry.get("message", ""), names=names)
        return SymbolsResult(path, key, missing=tuple((str(m[0]), None if m[1] is None else str(m[1]))
                                                      for m in entry.get("missing", [])),
                             checked=int(entry.get("checked") or 0), names=names)

    def environ(self) -> Dict[str, str]:
        env = self.__dict__.get("_environ")
        if env is None:  # one copy, which remembers what the probes read (as a live host's does)
            env = self.__dict__["_environ"] = ReadEnviron(self.doc.get("environ", {}))
        return env

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

    def cuda_init(self) -> CudaInitResult:
        return cuda_init_result(self.doc.get("cuda_init"))

    def python(self) -> PythonInfo:
        p = self.doc.get("python") or {}
        sys_path: List[str] = [str(x) for x in p.get("sys_path", [])]
        chosen: Dict[str, Any] = p["chosen"] if isinstance(p.get("chosen"), dict) else {}
        return PythonInfo(executable=str(p.get("executable", "")), version=str(p.get("version", "")),
                          implementation=str(p.get("implementation", "")), prefix=str(p.get("prefix", "")),
                          base_prefix=str(p.get("base_prefix", "")), sys_path=tuple(sys_path),
                          error=p.get("error"), message=p.get("message", ""), stdlib=str(p.get("stdlib") or ""),
                          rule=str(chosen.get("rule") or ""), reason=str(chosen.get("reason") or ""))

"""The live machine, read safely.

* Commands: argument lists, never a shell; ``LC_ALL=C``; a timeout per command
  and an overall deadline; on time-out the whole process group is killed so a
  grandchild holding the pipes cannot hang us.
* NVML: asked from a child process (:mod:`envdoctor.host.nvml_worker`) so a
  hung or crashing driver costs a "timed out" fact, never the tool.
* Every answer is kept, so the same question gets the same answer within a run
  and a snapshot can be written from exactly what the probes saw.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Optional, Sequence, Tuple

from .base import (
    DEFAULT_TIMEOUT,
    MAX_FILE_BYTES,
    CommandResult,
    DirResult,
    FileResult,
    Host,
    LinkResult,
    NvmlResult,
    PythonInfo,
    errno_name,
)

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvml_worker.py")


def command_env(base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment for child processes: the caller's, with a fixed C locale."""
    env = dict(os.environ if base is None else base)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    env.pop("LANGUAGE", None)
    return env


def run_command(
    argv: Sequence[str], timeout: float, env: Optional[Dict[str, str]] = None, stdin_data: Optional[bytes] = None
) -> CommandResult:
    """Run ``argv`` with a hard timeout.  Never raises for the command's sake."""
    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    if timeout <= 0:
        return CommandResult(argv, error="deadline")
    try:
        proc = subprocess.Popen(  # noqa: S603 - argument list, no shell
            list(argv),
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(env),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return CommandResult(argv, error=errno_name(exc), message=exc.strerror or str(exc),
                             duration=time.monotonic() - start)
    try:
        out, err = proc.communicate(stdin_data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=1.0)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            out, err = b"", b""
        return CommandResult(argv, returncode=proc.returncode, stdout=_decode(out), stderr=_decode(err),
                             timed_out=True, duration=time.monotonic() - start)
    return CommandResult(argv, returncode=proc.returncode, stdout=_decode(out), stderr=_decode(err),
                         duration=time.monotonic() - start)


def _kill_group(proc: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


def _decode(data: Optional[bytes]) -> str:
    if not data:
        return ""
    # Cap what we keep: a runaway command must not fill memory or snapshots.
    return data[: 4 * MAX_FILE_BYTES].decode("utf-8", errors="replace")


class LiveHost(Host):
    """This machine.  ``timeout`` bounds each command; ``deadline`` the whole run."""

    description = "this machine"

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, deadline: Optional[float] = None,
                 python_executable: Optional[str] = None) -> None:
        self.timeout = float(timeout)
        self.deadline = deadline  # time.monotonic() value, or None
        self._python_executable = python_executable
        self._lock = threading.RLock()
        self._inflight: Dict[Tuple[str, Any], threading.Event] = {}
        # Everything answered so far, keyed by question: the snapshot's raw material.
        self.files: Dict[str, FileResult] = {}
        self.dirs: Dict[str, DirResult] = {}
        self.links: Dict[str, LinkResult] = {}
        self.commands: Dict[Tuple[str, ...], CommandResult] = {}
        self._environ: Optional[Dict[str, str]] = None
        self._uname: Optional[Dict[str, str]] = None
        self._nvml_table: Dict[str, NvmlResult] = {}
        self._python: Optional[PythonInfo] = None

    # -- time ----------------------------------------------------------
    def remaining(self, wanted: Optional[float] = None) -> float:
        t = self.timeout if wanted is None else min(float(wanted), self.timeout)
        if self.deadline is not None:
            t = min(t, self.deadline - time.monotonic())
        return t

    def _once(self, table: Dict[Any, Any], key: Any, compute: Any) -> Any:
        """Compute an answer once, even when several probe threads ask together."""
        with self._lock:
            if key in table:
                return table[key]
            event = self._inflight.get((id(table), key))
            owner = event is None
            if owner:
                event = self._inflight[(id(table), key)] = threading.Event()
        if not owner:
            event.wait()
            with self._lock:
                if key in table:
                    return table[key]
            return compute()  # the first asker failed; answer for ourselves
        try:
            value = compute()
            with self._lock:
                table[key] = value
        finally:
            with self._lock:
                self._inflight.pop((id(table), key), None)
            event.set()
        return value

    # -- primitives ----------------------------------------------------
    def read_file(self, path: str, limit: int = MAX_FILE_BYTES) -> FileResult:
        return self._once(self.files, path, lambda: self._read_file(path, limit))

    @staticmethod
    def _read_file(path: str, limit: int) -> FileResult:
        try:
            with open(path, "rb") as fh:
                data = fh.read(limit + 1)
        except OSError as exc:
            return FileResult(path, error=errno_name(exc), message=exc.strerror or str(exc))
        truncated = len(data) > limit
        return FileResult(path, data=data[:limit], truncated=truncated)

    def list_dir(self, path: str) -> DirResult:
        def compute() -> DirResult:
            try:
                return DirResult(path, entries=tuple(sorted(os.listdir(path))))
            except OSError as exc:
                return DirResult(path, error=errno_name(exc), message=exc.strerror or str(exc))

        return self._once(self.dirs, path, compute)

    def read_link(self, path: str) -> LinkResult:
        def compute() -> LinkResult:
            try:
                return LinkResult(path, target=os.readlink(path))
            except OSError as exc:
                return LinkResult(path, error=errno_name(exc), message=exc.strerror or str(exc))

        return self._once(self.links, path, compute)

    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        key = tuple(str(a) for a in argv)
        return self._once(self.commands, key, lambda: run_command(key, self.remaining(timeout)))

    def environ(self) -> Dict[str, str]:
        if self._environ is None:
            self._environ = dict(os.environ)
        return self._environ

    def uname(self) -> Dict[str, str]:
        if self._uname is None:
            u = os.uname()
            self._uname = {"sysname": u.sysname, "release": u.release, "version": u.version,
                           "machine": u.machine}
        return self._uname

    def nodename(self) -> str:
        """The host name: used only to scrub it from reports, never reported."""
        return os.uname().nodename

    def nvml(self) -> NvmlResult:
        return self._once(self._nvml_table, "nvml", self._ask_nvml)

    def _ask_nvml(self) -> NvmlResult:
        budget = self.remaining()
        res = run_command([sys.executable, _WORKER], budget)
        if res.error == "deadline":
            return NvmlResult(error="deadline", message="not asked: the overall time limit was already spent")
        if res.timed_out:
            return NvmlResult(error="timed_out",
                              message="NVML did not answer within %.1fs (driver hung or GPU lost?)" % res.duration,
                              duration=res.duration)
        if res.error:
            return NvmlResult(error="worker_failed", message=res.describe_failure(), duration=res.duration)
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            why = (res.stderr.strip().splitlines() or ["no output"])[-1][:300]
            return NvmlResult(error="worker_failed",
                              message="NVML query process ended with code %s: %s" % (res.returncode, why),
                              duration=res.duration)
        if not isinstance(doc, dict):
            return NvmlResult(error="worker_failed", message="NVML query process gave no object",
                              duration=res.duration)
        if "binding_error" in doc:
            return NvmlResult(error="no_binding", message=str(doc["binding_error"]), duration=res.duration)
        return NvmlResult(data=doc, duration=res.duration)

    def python(self) -> PythonInfo:
        if self._python is None:
            if self._python_executable:
                self._python = _python_info_of(self._python_executable, self.remaining())
            else:
                self._python = PythonInfo(
                    executable=sys.executable,
                    version=platform.python_version(),
                    implementation=sys.implementation.name,
                    prefix=sys.prefix,
                    base_prefix=getattr(sys, "base_prefix", sys.prefix),
                    sys_path=tuple(p for p in sys.path if p),
                )
        return self._python


_PY_INFO_SCRIPT = (
    "import json,sys,platform;"
    "print(json.dumps({'executable':sys.executable,'version':platform.python_version(),"
    "'implementation':sys.implementation.name,'prefix':sys.prefix,"
    "'base_prefix':getattr(sys,'base_prefix',sys.prefix),'sys_path':[p for p in sys.path if p]}))"
)


def _python_info_of(executable: str, timeout: float) -> PythonInfo:
    """Ask another interpreter (``--python``) where its packages live."""
    res = run_command([executable, "-I", "-c", _PY_INFO_SCRIPT], timeout)
    try:
        if not res.ok:
            raise ValueError(res.describe_failure())
        doc = json.loads(res.stdout)
        return PythonInfo(
            executable=str(doc["executable"]), version=str(doc["version"]),
            implementation=str(doc["implementation"]), prefix=str(doc["prefix"]),
            base_prefix=str(doc["base_prefix"]), sys_path=tuple(str(p) for p in doc["sys_path"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        return PythonInfo(executable=executable, version="", implementation="", prefix="", base_prefix="",
                          sys_path=(), error="unusable", message=str(exc))

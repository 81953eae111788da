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
import re
import signal
import subprocess
import sys
import threading
import time
from struct import error as struct_error
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..forked import Forked
from .base import (
    DEFAULT_TIMEOUT,
    KERNEL_LOG_ARGV,
    KERNEL_LOG_TIMEOUT,
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
    SymbolsResult,
    driver_log_lines,
    errno_name,
)

#: The most ``.rodata`` a diagnose reads for library names, per library (the small front libraries: cuDNN's
#: libcudnn.so.9 holds 7 KiB, libcudart 55 KiB; libnvrtc's 13 MiB are left to ``envdoctor libs``).
NAMES_LIMIT = 512 * 1024

def nvml_dirs() -> Tuple[str, ...]:
    """Where dlopen may find the driver's libnvidia-ml.so.1 besides LD_LIBRARY_PATH and the loader cache: every
    distribution's default directories, WSL's, and a container's injected driver (``nvml_worker.library_absent``).
    Read from :mod:`envdoctor.osinfo` when first asked: importing it (and ``distro``) waits until the programs a
    ``diagnose`` launches ahead have started, so they run beside a smaller interpreter."""
    from ..osinfo import CONTAINER_DRIVER_DIRS, LOADER_DIRS, WSL_LIB_DIR

    return LOADER_DIRS + (WSL_LIB_DIR,) + CONTAINER_DRIVER_DIRS


def __getattr__(name: str) -> Any:  # PEP 562: ``NVML_DIRS`` as a constant, computed on first use
    if name == "NVML_DIRS":
        return nvml_dirs()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvml_worker.py")


def _line_encoder() -> Callable[[Any], str]:
    """``json.JSONEncoder(sort_keys=True).encode``, its C encoder made once for every line (the encoder's
    ``encode`` makes one a call: about a third of a 64-GPU query's 4,700 lines' cost); the encoder itself where
    the interpreter has no C encoder."""
    from json import encoder

    plain = json.JSONEncoder(sort_keys=True)
    make = getattr(encoder, "c_make_encoder", None)
    if make is None:
        return plain.encode
    made = make(None, plain.default, encoder.encode_basestring_ascii, None, plain.key_separator,
                plain.item_separator, True, False, True)

    def encode(doc: Any) -> str:
        return "".join(made(doc, 0))

    return encode


def _nvml_in_child(job: Optional[bytes]) -> bytes:
    from .. import forked
    from . import nvml_worker

    encode = _line_encoder()
    stream = forked.stream

    def emit(doc: Any) -> None:
        # the usual lines come as their text already (nvml_worker.ask_line, answer_line), the rest as documents
        stream((doc if type(doc) is str else encode(doc) + "\n").encode("utf-8"))

    nvml_worker.collect(emit)
    return b""


def classify_timeout(state: str, cpu: float, elapsed: float, asking: Optional[str], waiting: float = -1.0,
                     quiet: float = -1.0, queue: Tuple[int, bool] = (0, False)) -> str:
    """Why an NVML query was still running at the deadline: "timed_out" (the driver hung) or "starved"
    (a machine too busy: not the driver's fault).

    ``state`` is the child's (/proc/PID/stat), ``cpu`` the CPU time it used, ``waiting`` the time it spent
    runnable but waiting for a CPU (/proc/PID/schedstat; -1 unknown), ``asking`` the NVML call it was in
    (None: it had not reached NVML yet). Stuck in the kernel (state D) is a hung driver. Otherwise the
    time it spent neither running nor waiting for a CPU is the time it slept: most of its life asleep
    inside an NVML call is a hung driver, most of it waiting for a CPU is a starved machine.

    ``quiet`` is how long the query had been silent at the deadline (-1 unknown). A query past NVML's
    start-up that was still answering in the second half of its time is progressing, only slowly (the
    driver answers one caller at a time: many processes asking at once queue in the kernel, in state D
    too), so it is "starved", not hung: a hung call stops the answers for good. Measured on a real H100
    with 100 simultaneous runs at --timeout 2, such queued calls were reported as hung drivers.

    ``queue`` is what :func:`envdoctor.forked.driver_queue` saw at the deadline: how many other processes were
    stuck in the NVIDIA driver beside the query, and whether the driver let any of them out meanwhile. A query
    stuck in the kernel while the driver keeps answering the callers queued with it is "starved" (a busy
    driver); a hung driver lets nobody out."""
    if asking not in (None, "init") and elapsed > 0 and 0 <= quiet < 0.5 * elapsed:
        return "starved"
    if state == "D":
        return "starved" if queue[1] else "timed_out"
    if asking is None:
        return "starved"  # still starting up (importing the binding): not NVML's doing
    if waiting >= 0 and elapsed > 0:
        asleep = elapsed - cpu - waiting
        if asleep >= 0.5 * elapsed:
            return "timed_out"  # asleep inside an NVML call
        if cpu >= 0.5 * elapsed:
            return "timed_out"  # spinning inside an NVML call, on a CPU it had
        return "starved"
    # No scheduler statistics: judge by the state alone.
    if state in ("S", "?", ""):
        return "timed_out"
    if state == "R" and elapsed > 0 and cpu >= 0.5 * elapsed:
        return "timed_out"
    return "starved"


def command_env(base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment for child processes: the caller's, with a fixed C locale."""
    env = dict(os.environ if base is None else base)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    env.pop("LANGUAGE", None)
    return env


#: The most of each output stream kept from one command: ``ldconfig -p`` on a full workstation
#: prints about 100 KB. A command that prints more is stopped and reported, not read to the end.
MAX_OUTPUT_BYTES = 4 * MAX_FILE_BYTES


def run_command(argv: Sequence[str], timeout: float, env: Optional[Dict[str, str]] = None) -> CommandResult:
    """Run ``argv`` with a hard timeout and bounded output.  Never raises for the command's sake."""
    started = start_command(argv, timeout, env)
    return started if isinstance(started, CommandResult) else started.finish()


class Started:
    """A command started by :func:`start_command`, still to be waited for (:meth:`finish`, once)."""

    def __init__(self, argv: Tuple[str, ...], proc: subprocess.Popen[bytes], start: float, timeout: float) -> None:
        self.argv, self.proc, self.start, self.timeout = argv, proc, start, timeout

    def ended(self) -> bool:
        """Whether the command has exited (it is not reaped: :meth:`finish` does that)."""
        try:
            return os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except (OSError, AttributeError):
            return True

    def finish(self) -> CommandResult:
        """Its output and exit status, read until it ends or its time limit (counted from its start) passes."""
        from .. import forked

        argv, proc, start = self.argv, self.proc, self.start
        try:
            out, err, why = _read_bounded(proc, start + self.timeout)
            if why is not None:
                _kill_group(proc)
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:  # killed but not reaped within a second: report what we have
                pass
        finally:
            forked.running_groups.discard(proc.pid)
        duration = time.monotonic() - start
        if why == "timed_out":
            return CommandResult(argv, returncode=proc.returncode, stdout=_decode(out), stderr=_decode(err),
                                 timed_out=True, duration=duration)
        if why == "output_too_large":
            return CommandResult(argv, returncode=proc.returncode, stdout=_decode(out), stderr=_decode(err),
                                 error=why, message="printed more than %d MiB; stopped" % (MAX_OUTPUT_BYTES >> 20),
                                 duration=duration)
        return CommandResult(argv, returncode=proc.returncode, stdout=_decode(out), stderr=_decode(err),
                             duration=duration)


def start_command(argv: Sequence[str], timeout: float, env: Optional[Dict[str, str]] = None) -> Any:
    """Start ``argv`` (its own session, no shell, ``LC_ALL=C``): a :class:`Started` to finish, or the
    :class:`CommandResult` saying why it could not start."""
    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    if timeout <= 0:
        return CommandResult(argv, error="deadline")
    try:
        proc = subprocess.Popen(  # noqa: S603 - argument list, no shell
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=command_env(env),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return CommandResult(argv, error=errno_name(exc), message=exc.strerror or str(exc),
                             duration=time.monotonic() - start)
    from .. import forked

    forked.running_groups.add(proc.pid)
    return Started(argv, proc, start, timeout)


def _read_bounded(proc: subprocess.Popen[bytes], deadline: float) -> Tuple[bytes, bytes, Optional[str]]:
    """Both output streams until they close: (stdout, stderr, None), or what came before the
    deadline or the size limit with "timed_out" / "output_too_large"."""
    import selectors

    kept: Dict[int, bytearray] = {}
    with selectors.DefaultSelector() as sel:
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            kept[stream.fileno()] = bytearray()
            sel.register(stream.fileno(), selectors.EVENT_READ)
        out_fd = proc.stdout.fileno() if proc.stdout else -1
        why: Optional[str] = None
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timed_out"
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                kept[key.fd] += chunk
                if len(kept[key.fd]) > MAX_OUTPUT_BYTES:
                    why = "output_too_large"
            if why:
                break
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    err_fd = next(fd for fd in kept if fd != out_fd)
    return bytes(kept[out_fd][:MAX_OUTPUT_BYTES]), bytes(kept[err_fd][:MAX_OUTPUT_BYTES]), why


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


def _decode(data: Optional[bytes]) -> str:
    return data.decode("utf-8", errors="replace") if data else ""


#: How much longer than the deadline a second asker waits for the first asker of the same question.
IN_FLIGHT_GRACE = 0.4

#: The longest a command waits for the NVML child to finish before it starts anyway. Two children alive at once
#: cost their memory together (``docker`` alone is about 20 MiB, the NVML child holds what it and envdoctor no
#: longer share): a command starts once the query is answered, which on a healthy driver takes well under this.
#: A query that takes longer (a driver without persistence mode, a hung one) does not hold the commands back
#: past it, and no command's own time limit is spent waiting.
NVML_CHILD_WAIT = 0.5


#: No answer yet (an answer may itself be None).
_UNKNOWN = object()


class LiveHost(Host):
    """This machine.  ``timeout`` bounds each command; ``deadline`` the whole run."""

    description = "this machine"

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, deadline: Optional[float] = None,
                 python_executable: Optional[str] = None) -> None:
        self.timeout = float(timeout)
        self.deadline = deadline  # time.monotonic() value, or None
        self._python_executable = python_executable
        self._lock = threading.RLock()
        self._inflight: Dict[Tuple[int, Any], threading.Event] = {}
        # Everything answered so far, keyed by question: the snapshot's raw material.
        self.files: Dict[str, FileResult] = {}
        self.dirs: Dict[str, DirResult] = {}
        self.links: Dict[str, LinkResult] = {}
        self.commands: Dict[Tuple[str, ...], CommandResult] = {}
        self.elfs: Dict[str, ElfResult] = {}
        self.fatbins: Dict[str, FatbinResult] = {}
        self.names: Dict[str, NamesResult] = {}
        self.symbols: Dict[Tuple[str, Tuple[str, ...], str], SymbolsResult] = {}
        #: The most .rodata searched for library names (``elf_sonames``): diagnose affords a little per library,
        #: ``envdoctor libs`` more.
        self.names_limit = NAMES_LIMIT
        self._symtabs: Dict[str, Any] = {}  # path -> DynamicSymbols or the error opening it (never recorded)
        self._environ: Optional[Dict[str, str]] = None
        self._uname: Optional[Dict[str, str]] = None
        self._nvml_table: Dict[str, NvmlResult] = {}
        #: Commands started ahead of the probe that runs them (:meth:`launch`), by argv as the probe gives it.
        self._launched: Dict[Tuple[str, ...], Any] = {}
        self._nvml_child: Optional[Forked] = None
        #: Set when no NVML child is alive (never started, or read and reaped): commands wait for it a little.
        self._nvml_child_gone = threading.Event()
        self._nvml_child_gone.set()
        self._nvml_library_absent: Optional[bool] = None  # decided once, by _nvml_absent
        self._python: Optional[PythonInfo] = None
        #: The CUDA-initialisation child: a Started, the CommandResult saying why it did not start, False when not
        #: worth asking here, None before :meth:`start_cuda_init`.
        self._cuda_init_child: Any = None
        self._cuda_init_table: Dict[str, CudaInitResult] = {}

    # -- time ----------------------------------------------------------
    def remaining(self, wanted: Optional[float] = None) -> float:
        t = self.timeout if wanted is None else min(float(wanted), self.timeout)
        if self.deadline is not None:
            t = min(t, self.deadline - time.monotonic())
        return t

    def wait_budget(self) -> Optional[float]:
        return max(0.0, self.remaining()) + IN_FLIGHT_GRACE

    def _once(self, table: Dict[Any, Any], key: Any, compute: Any) -> Any:
        """Compute an answer once, even when several probe threads ask together."""
        known = table.get(key, _UNKNOWN)  # answered already (most asks): no lock (a dict read is atomic)
        if known is not _UNKNOWN:
            return known
        with self._lock:
            if key in table:
                return table[key]
            event = self._inflight.get((id(table), key))
            owner = event is None
            if event is None:
                event = self._inflight[(id(table), key)] = threading.Event()
        if not owner:
            # Bounded like everything else: the first asker's read may be stuck in the kernel (a hung
            # mount, a wedged driver), and a second probe must not wait past the run's deadline for it.
            # The first asker is itself bounded by the deadline; a little longer lets it finish cleaning up
            # (killing and reaping a child) and hand over what it got.
            if not event.wait(max(0.0, self.remaining()) + IN_FLIGHT_GRACE):
                return self._in_flight_answer(table, key)
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

    def _in_flight_answer(self, table: Dict[Any, Any], key: Any) -> Any:
        """The answer for a question another thread is still stuck on at the deadline: timed out."""
        message = "still being read when the time limit came (another probe's read of it hung)"
        if table is self.files:
            return FileResult(str(key), error="ETIMEDOUT", message=message)
        if table is self.dirs:
            return DirResult(str(key), error="ETIMEDOUT", message=message)
        if table is self.links:
            return LinkResult(str(key), error="ETIMEDOUT", message=message)
        if table is self.elfs:
            return ElfResult(str(key), error="ETIMEDOUT", message=message)
        if table is self.names:
            return NamesResult(str(key), error="timed_out", message=message)
        if table is self.symbols:
            return SymbolsResult(key[0], key[1], error="timed_out", message=message, names=key[2])
        if table is self.commands:
            return CommandResult(tuple(key), timed_out=True, message=message, duration=self.timeout)
        return NvmlResult(error="timed_out", message="NVML " + message)

    def in_flight(self) -> Dict[str, List[Any]]:
        """Questions asked but not answered yet (a read stuck at the deadline), by table name: a snapshot
        records them as timed out, so its replay sees what the live run saw."""
        names = {id(self.files): "files", id(self.dirs): "dirs", id(self.links): "links",
                 id(self.commands): "commands", id(self.elfs): "elf", id(self._nvml_table): "nvml"}
        out: Dict[str, List[Any]] = {}
        with self._lock:
            for table_id, key in self._inflight:
                out.setdefault(names.get(table_id, "?"), []).append(key)
        return out

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

    def elf(self, path: str) -> ElfResult:
        def compute() -> ElfResult:
            from .elf import ElfError, read_dynamic

            try:
                with open(path, "rb") as fh:
                    d = read_dynamic(fh)
            except OSError as exc:
                return ElfResult(path, error=errno_name(exc), message=exc.strerror or str(exc))
            except ElfError as exc:
                return ElfResult(path, error="not_elf" if "not an ELF" in str(exc) else "bad_elf", message=str(exc))
            except (struct_error, ValueError, IndexError) as exc:
                return ElfResult(path, error="bad_elf", message=str(exc))
            vn = d.get("verneed")
            return ElfResult(path, soname=d["soname"], needed=tuple(d["needed"]),  # type: ignore[arg-type]
                             rpath=tuple(d["rpath"]), runpath=tuple(d["runpath"]),  # type: ignore[arg-type]
                             verneed=None if not isinstance(vn, dict) else {k: tuple(v) for k, v in vn.items()},
                             verneed_error=str(d.get("verneed_error") or ""))

        return self._once(self.elfs, path, compute)

    def fatbin(self, path: str) -> FatbinResult:
        def compute() -> FatbinResult:
            from .elf import ElfError
            from .fatbin import read_archs

            try:
                with open(path, "rb") as fh:
                    d = read_archs(fh)
            except OSError as exc:
                return FatbinResult(path, error=errno_name(exc), message=exc.strerror or str(exc))
            except ElfError as exc:
                return FatbinResult(path, error="not_elf" if "not an ELF" in str(exc) else "bad_elf",
                                    message=str(exc))
            except (struct_error, ValueError, IndexError) as exc:
                return FatbinResult(path, error="bad_elf", message=str(exc))
            return FatbinResult(path, sass=tuple(d["sass"]), ptx=tuple(d["ptx"]),  # type: ignore[arg-type]
                                section=bool(d["section"]), complete=bool(d["complete"]),
                                ptx_isa=str(d["ptx_isa"]) if isinstance(d.get("ptx_isa"), str) else None)

        return self._once(self.fatbins, path, compute)

    def elf_sonames(self, path: str) -> NamesResult:
        def compute() -> NamesResult:
            from .elf import ElfError
            from .elfsym import TooLarge, read_sonames

            try:
                with open(path, "rb") as fh:
                    names, size = read_sonames(fh, self.names_limit)
            except OSError as exc:
                return NamesResult(path, error=errno_name(exc), message=exc.strerror or str(exc))
            except TooLarge as exc:
                return NamesResult(path, size=exc.size, error="too_large", message=str(exc))
            except ElfError as exc:
                return NamesResult(path, error="not_elf" if "not an ELF" in str(exc) else "bad_elf", message=str(exc))
            except (struct_error, ValueError, IndexError) as exc:
                return NamesResult(path, error="bad_elf", message=str(exc))
            return NamesResult(path, sonames=tuple(names), size=size)

        return self._once(self.names, path, compute)

    def _symtab(self, path: str) -> Any:
        """The memory-mapped dynamic symbol table of ``path`` (one per file per run), or an ``(error, message)``."""
        with self._lock:
            if path in self._symtabs:
                return self._symtabs[path]
        from .elf import ElfError
        from .elfsym import DynamicSymbols

        try:
            with open(path, "rb") as fh:
                tab: Any = DynamicSymbols(fh)
        except OSError as exc:
            tab = (errno_name(exc), exc.strerror or str(exc))
        except ElfError as exc:
            tab = ("not_elf" if "not an ELF" in str(exc) else "bad_elf", str(exc))
        except (struct_error, ValueError, IndexError) as exc:
            tab = ("bad_elf", str(exc))
        with self._lock:
            return self._symtabs.setdefault(path, tab)

    def elf_unresolved(self, path: str, providers: Sequence[str], names: str = "") -> SymbolsResult:
        key = (path, tuple(providers), names)

        def compute() -> SymbolsResult:
            from .elfsym import unresolved

            tab = self._symtab(path)
            if isinstance(tab, tuple):
                return SymbolsResult(path, key[1], error=tab[0], message=tab[1], names=names)
            tabs = []
            for p in key[1]:
                t = self._symtab(p)
                if isinstance(t, tuple):
                    return SymbolsResult(path, key[1], error="provider_unreadable", message="%s: %s%s" % (
                        p, t[0], ": " + t[1] if t[1] else ""), names=names)
                tabs.append(t)
            try:
                missing, checked = unresolved(tab, tabs, deadline_left=self.remaining, names=names)
            except (struct_error, ValueError, IndexError, re.error) as exc:
                return SymbolsResult(path, key[1], error="bad_elf", message=str(exc), names=names)
            except TimeoutError as exc:
                return SymbolsResult(path, key[1], error="timed_out", message=str(exc), names=names)
            return SymbolsResult(path, key[1], missing=tuple(missing), checked=checked, names=names)

        return self._once(self.symbols, key, compute)

    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        key = tuple(str(a) for a in argv)

        def compute() -> CommandResult:
            with self._lock:
                launched = self._launched.pop(key, None)
            if launched is not None:  # started ahead (launch): its time limit runs from then
                res = launched if isinstance(launched, CommandResult) else launched.finish()
                return res._replace(argv=key)
            resolved = self._program(key)
            if isinstance(resolved, CommandResult):
                return resolved
            self._after_nvml_child()
            return run_command(resolved, self.remaining(timeout))._replace(argv=key)

        return self._once(self.commands, key, compute)

    def _program(self, key: Tuple[str, ...]) -> Any:
        """The argv to start for ``key``: a bare name resolved from the PATH listings (cached, and recorded for
        snapshots), so a program that is not installed costs no process start at all; else why not."""
        exe = key[0] if key else ""
        if exe and "/" not in exe:
            found = self.which(exe)
            if found is None:
                return CommandResult(key, error="ENOENT", message="not found on PATH")
            return (found,) + key[1:]
        return key

    def launch(self, argv: Sequence[str], timeout: Optional[float] = None) -> None:
        """Start ``argv`` now, in the background; :meth:`run` with the same arguments later takes its result.
        The NVML query waits for what was launched to end before it starts (:meth:`start_nvml`)."""
        key = tuple(str(a) for a in argv)
        with self._lock:
            if key in self.commands or key in self._launched or (id(self.commands), key) in self._inflight:
                return
        resolved = self._program(key)
        started = resolved if isinstance(resolved, CommandResult) else start_command(resolved, self.remaining(timeout))
        with self._lock:
            self._launched[key] = started

    def _wait_launched(self, limit: float) -> None:
        """Wait (at most ``limit`` seconds) until every launched command has exited."""
        end = time.monotonic() + limit
        delay = 0.0005
        while True:
            with self._lock:
                running = [c for c in self._launched.values() if isinstance(c, Started) and not c.ended()]
            if not running or time.monotonic() >= end:
                return
            time.sleep(delay)
            delay = min(delay * 2, 0.005)

    def kernel_log(self) -> CommandResult:
        """``dmesg`` run as :meth:`run` runs a command, but only the driver's lines are kept and recorded."""
        key = KERNEL_LOG_ARGV

        def compute() -> CommandResult:
            found = self.which(key[0])
            if found is None:
                return CommandResult(key, error="ENOENT", message="not found on PATH")
            self._after_nvml_child()
            res = run_command((found,) + key[1:], self.remaining(KERNEL_LOG_TIMEOUT))
            kept = driver_log_lines(res.stdout)
            return res._replace(argv=key, stdout="".join(line + "\n" for line in kept), stderr=res.stderr[-2000:])

        return self._once(self.commands, key, compute)

    def environ(self) -> Dict[str, str]:
        if self._environ is None:
            self._environ = ReadEnviron(os.environ)  # remembers what the probes read (the snapshot keeps it)
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

    def _after_nvml_child(self) -> None:
        """Wait (at most :data:`NVML_CHILD_WAIT`, never past the deadline) until the NVML child is gone, so that a
        command's process and the child are not alive at once."""
        if not self._nvml_child_gone.is_set():
            self._nvml_child_gone.wait(max(0.0, min(NVML_CHILD_WAIT, self.remaining())))

    def start_nvml(self) -> None:
        """Start asking NVML now, in a forked child, so the answer is ready when a probe wants it.

        Forking (no exec) spares a second interpreter start-up; see
        :mod:`envdoctor.forked` for when that is done and what the child may do.
        The child runs :func:`envdoctor.host.nvml_worker.collect` and writes
        JSON; if it hangs it is killed at the time limit, if it crashes only it dies.
        """
        if self._nvml_child is not None or self._nvml_table or self._nvml_absent():
            return
        # A launched command and the child are never alive together (their memory would add up).
        self._wait_launched(max(0.0, min(NVML_CHILD_WAIT, self.remaining())))
        self._nvml_child = Forked.start(_nvml_in_child)
        if self._nvml_child is not None:
            self._nvml_child_gone.clear()

    def nvml_library_present(self) -> bool:
        """Whether dlopen may find the driver's NVML library (``nvml_worker.library_absent``: read from files,
        the library never loaded): a machine with an NVIDIA driver, most likely."""
        return not self._nvml_absent()

    def _nvml_absent(self) -> bool:
        """No libnvidia-ml.so.1 for dlopen to find (most machines without a driver): nothing to ask."""
        if self._nvml_library_absent is None:
            from . import nvml_worker

            self._nvml_library_absent = nvml_worker.library_absent(nvml_dirs())
        return self._nvml_library_absent

    def _read_nvml_child(self) -> NvmlResult:
        assert self._nvml_child is not None
        child, self._nvml_child = self._nvml_child, None
        try:
            answer, why = child.result(time.monotonic() + max(0.0, self.remaining()))
        finally:
            self._nvml_child_gone.set()
        duration = time.monotonic() - child.started
        text = (answer if answer is not None else child.partial).decode("utf-8", "replace")
        if why == "timed_out":
            state, cpu, waiting = child.state_at_deadline
            return self._incomplete(text, "timed_out", duration, state, cpu, waiting, child.quiet_at_deadline,
                                    child.queue_at_deadline)
        from .nvml_worker import parse_stream

        parsed = parse_stream(text)
        if why or not parsed[2]:
            return self._incomplete(text, "crashed (%s)" % (why or "it ended without finishing"), duration)
        return self._parse_worker_output(text, "", 0, duration, parsed)

    @staticmethod
    def _incomplete(text: str, why: str, duration: float, state: str = "", cpu: float = 0.0,
                    waiting: float = -1.0, quiet: float = -1.0, queue: Tuple[int, bool] = (0, False)) -> NvmlResult:
        """What a query that hung or died had answered, and which call it was in."""
        from .nvml_worker import describe_call, parse_stream

        data, asking, done = parse_stream(text)
        if done and why.startswith("crashed"):
            return NvmlResult(data=data, duration=duration)  # it died after answering everything
        reason = "crashed" if why.startswith("crashed") else classify_timeout(state, cpu, duration, asking, waiting,
                                                                               quiet, queue)
        call = describe_call(asking) if asking else "starting the NVML query"
        if asking == "shutdown":
            # Every question was answered; only NVML's own clean-up did not return.
            message = ("NVML answered every question, then did not return from nvmlShutdown within %.1fs: %s" % (
                duration, "it sat in the driver (driver hung or GPU lost?%s)" % (
                    "; stuck in the kernel, state D" if state == "D" else "") if reason == "timed_out" else
                "it was still running, only slowly (the driver busy with other callers, or waiting for a CPU)"
                if reason == "starved" else "the query process %s there" % why))
        elif reason == "timed_out":
            message = "NVML did not answer within %.1fs: hung in %s (driver hung or GPU lost?%s)" % (
                duration, call, "; the query is stuck in the kernel, state D" if state == "D" else "")
        elif reason == "starved" and state == "D" and queue[1]:
            behind = " behind %d other process%s" % (queue[0], "" if queue[0] == 1 else "es") if queue[0] else ""
            message = ("NVML did not answer within %.1fs: the query was waiting in the driver (in %s)%s, and the "
                       "driver was still serving its callers (one got through, or the one inside it was waiting "
                       "for a CPU, or the machine was too loaded even to look): the driver is busy or the machine "
                       "overloaded, not hung" % (duration, call, behind))
        elif reason == "starved" and asking not in (None, "init") and 0 <= quiet < 0.5 * duration:
            message = ("NVML did not finish within %.1fs, but the query was not stuck: it was still answering "
                       "(its last answer came %.2fs before the deadline; it was in %s), only slowly: the driver "
                       "is busy with other callers, not hung" % (duration, quiet, call))
        elif reason == "starved":
            message = ("NVML did not answer within %.1fs, but the query was not stuck: it was waiting for a CPU "
                       "(%s; %.2fs of CPU time used%s): the machine is too busy, not the driver hung" % (
                           duration, call, cpu, ", %.2fs waiting for one" % waiting if waiting >= 0 else ""))
        else:
            message = "the NVML query process %s in %s, inside the NVIDIA library" % (why, call)
        if not data or asking == "init" or "init" not in data:
            return NvmlResult(error="timed_out" if reason == "timed_out" else (
                "starved" if reason == "starved" else "worker_failed"), message=message, duration=duration)
        data["incomplete"] = {"call": asking, "reason": reason, "message": message}
        return NvmlResult(data=data, duration=duration)

    def _ask_nvml(self) -> NvmlResult:
        if self._nvml_child is not None:
            return self._read_nvml_child()
        if self._nvml_absent():
            from . import nvml_worker

            return self._parse_worker_output(json.dumps(nvml_worker.NOT_FOUND), "", 0, 0.0)
        budget = self.remaining()
        res = run_command([sys.executable, _WORKER], budget)
        if res.error == "deadline":
            return NvmlResult(error="deadline", message="not asked: the overall time limit was already spent")
        if res.timed_out:
            return self._incomplete(res.stdout, "timed_out", res.duration)
        if res.error:
            return NvmlResult(error="worker_failed", message=res.describe_failure(), duration=res.duration)
        from .nvml_worker import parse_stream

        if res.returncode != 0 and not parse_stream(res.stdout)[2]:
            return self._incomplete(res.stdout, "crashed (exit code %s)" % res.returncode, res.duration)
        return self._parse_worker_output(res.stdout, res.stderr, res.returncode, res.duration)

    @staticmethod
    def _parse_worker_output(stdout: str, stderr: str, returncode: Optional[int], duration: float,
                             parsed: Optional[Tuple[Any, Optional[str], bool]] = None) -> NvmlResult:
        from .nvml_worker import parse_stream

        try:
            doc, _, done = parsed if parsed is not None else parse_stream(stdout)
            if not done or not doc:
                raise ValueError("no complete answer")
        except ValueError:
            why = (stderr.strip().splitlines() or ["no output"])[-1][:300]
            return NvmlResult(error="worker_failed",
                              message="NVML query process ended with code %s: %s" % (returncode, why),
                              duration=duration)
        if not isinstance(doc, dict):
            return NvmlResult(error="worker_failed", message="NVML query process gave no object", duration=duration)
        if "binding_error" in doc:
            return NvmlResult(error="no_binding", message=str(doc["binding_error"]), duration=duration)
        return NvmlResult(data=doc, duration=duration)

    def start_cuda_init(self) -> None:
        """Start the child that asks whether CUDA initialises (:mod:`envdoctor.host.cudainit`), where CUDA could find
        anything: it then runs beside the probes, and :meth:`cuda_init` reads it. Elsewhere nothing starts."""
        from . import cudainit

        with self._lock:
            if self._cuda_init_child is not None or self._cuda_init_table:
                return
            if not cudainit.worth_asking():
                self._cuda_init_child = False
                return
            self._cuda_init_child = start_command(cudainit.argv(sys.executable),
                                                  self.remaining(cudainit.TIMEOUT), env=dict(os.environ))

    @property
    def cuda_init_asked(self) -> bool:
        return bool(self._cuda_init_table)

    def cuda_init(self) -> CudaInitResult:
        return self._once(self._cuda_init_table, "cuda_init", self._ask_cuda_init)  # type: ignore[no-any-return]

    def _ask_cuda_init(self) -> CudaInitResult:
        from . import cudainit

        self.start_cuda_init()
        child = self._cuda_init_child
        if child is False or child is None:
            return CudaInitResult(error="not_run", message="no NVIDIA GPU, driver device node or CUDA driver library "
                                                           "here for CUDA to find")
        if isinstance(child, CommandResult):
            return cudainit.parse("", None, False, child.duration, 0.0, start_error=child.describe_failure())
        res = child.finish()
        return cudainit.parse(res.stdout, res.returncode, res.timed_out, res.duration, child.timeout,
                              stderr=res.stderr, start_error=res.message if res.error else "")

    def python(self) -> PythonInfo:
        if self._python is None:
            from .interpreter import choose

            chosen = choose(os.environ, sys.prefix, self._python_executable)
            if chosen.executable:
                info = _python_info_of(chosen.executable, self.remaining())
            else:
                import sysconfig

                info = PythonInfo(
                    executable=sys.executable,
                    version="%d.%d.%d" % sys.version_info[:3],
                    implementation=sys.implementation.name,
                    prefix=sys.prefix,
                    base_prefix=getattr(sys, "base_prefix", sys.prefix),
                    sys_path=tuple(p for p in sys.path if p),
                    stdlib=sysconfig.get_path("stdlib") or "",
                )
            self._python = info._replace(rule=chosen.rule, reason=chosen.reason)
        return self._python


_PY_INFO_SCRIPT = (
    "import json,sys,platform,sysconfig;"
    "print(json.dumps({'executable':sys.executable,'version':platform.python_version(),"
    "'implementation':sys.implementation.name,'prefix':sys.prefix,"
    "'base_prefix':getattr(sys,'base_prefix',sys.prefix),'sys_path':[p for p in sys.path if p],"
    "'stdlib':sysconfig.get_path('stdlib') or ''}))"
)


def live_host(timeout: float, python_exe: Optional[str]) -> Tuple[LiveHost, float]:
    """This machine, for one run that ends within ``timeout`` plus a small margin.

    Returns the host and the deadline for the probes (half a second after the
    host's own, which bounds every command and NVML query).  In the command-line
    process the time is counted from the process's start, so the interpreter's
    start-up and envdoctor's imports are inside ``timeout``, not added to it.
    """
    from ..clock import process_started

    deadline = (process_started(timeout) or time.monotonic()) + timeout
    return LiveHost(timeout=timeout, deadline=deadline, python_executable=python_exe), deadline + 0.5


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
            stdlib=str(doc.get("stdlib") or ""),
        )
    except (ValueError, KeyError, TypeError) as exc:
        return PythonInfo(executable=executable, version="", implementation="", prefix="", base_prefix="",
                          sys_path=(), error="unusable", message=str(exc))

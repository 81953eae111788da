"""The one seam between envdoctor and the machine it looks at.

Every probe reads the machine through a :class:`Host`.  There are two
implementations: :class:`~envdoctor.host.live.LiveHost` (this machine) and
:class:`~envdoctor.host.snapshot.SnapshotHost` (a captured snapshot replayed
from a file).  Probes never call ``open``, ``os.*``, ``subprocess`` or
``pynvml`` themselves.

Each primitive returns a small result object that carries either the answer or
the reason there is none (missing file, permission denied, timed out...), so a
probe can turn a failure into an "unknown, because ..." fact instead of an
exception.
"""

from __future__ import annotations

import errno
import functools
import posixpath
import re
import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from .. import lazyre

#: Largest file a probe may read through the seam (bytes).  Version files,
#: /proc entries and JSON manifests are all far smaller; the cap keeps a
#: hostile ``/proc`` or a huge log from ballooning memory or snapshots.
MAX_FILE_BYTES = 1024 * 1024

#: Default timeout for one command or NVML query (seconds).
DEFAULT_TIMEOUT = 10.0


#: How the kernel log is read: util-linux ``dmesg`` without timestamps (nothing made up in fixtures), the
#: error and warning levels only (the NVIDIA driver's failure messages; older drivers print at the default
#: level, warning). Non-root readers get "Operation not permitted" where kernel.dmesg_restrict is set.
KERNEL_LOG_ARGV = ("dmesg", "--notime", "--level=emerg,alert,crit,err,warn")
KERNEL_LOG_TIMEOUT = 3.0
#: What is kept of it: the last lines of the NVIDIA driver (and the PCI core's BAR assignment failures),
#: each cut short, so a huge or hostile log costs neither memory nor snapshot space, and nothing else of the
#: kernel log (host names, addresses, other devices) reaches a report or a snapshot.
KERNEL_LOG_MAX_LINES = 200
KERNEL_LOG_LINE_CHARS = 400
_DRIVER_LOG_LINE = lazyre.compile(r"NVRM|nvidia|NVIDIA|Xid|\bBAR ?\d\b[^\n]{0,200}(?:no space|can't assign|failed)")


def driver_log_lines(text: str) -> List[str]:
    """The NVIDIA driver's lines of kernel-log text (see :data:`KERNEL_LOG_MAX_LINES`), control characters
    escaped."""
    out: List[str] = []
    for line in text.splitlines():
        line = line[:KERNEL_LOG_LINE_CHARS]
        if _DRIVER_LOG_LINE.search(line):
            out.append(_CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), line).rstrip())
            if len(out) > 2 * KERNEL_LOG_MAX_LINES:
                out = out[-KERNEL_LOG_MAX_LINES:]
    return out[-KERNEL_LOG_MAX_LINES:]


_CONTROL = lazyre.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class ReadHung(Exception):
    """Raised by a replayed snapshot for a read that was still hanging when the live run's time ran out
    (recorded with error ``ETIMEDOUT``): the probe asking is then "timed out", as it was live."""


#: The error a snapshot records for a read still in flight at the deadline.
IN_FLIGHT = "ETIMEDOUT"


class FileResult(NamedTuple):
    """Contents of a file, or why it could not be read."""

    path: str
    data: Optional[bytes] = None
    error: Optional[str] = None  # errno name such as "ENOENT", "EACCES", "EISDIR"
    message: str = ""
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.data is not None

    @property
    def missing(self) -> bool:
        return self.error in ("ENOENT", "ENOTDIR")

    @property
    def text(self) -> Optional[str]:
        if self.data is None:
            return None
        return self.data.decode("utf-8", errors="replace")


class DirResult(NamedTuple):
    """Names in a directory (sorted), or why it could not be listed."""

    path: str
    entries: Optional[Tuple[str, ...]] = None
    error: Optional[str] = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.entries is not None

    def names(self) -> Tuple[str, ...]:
        return self.entries or ()


class LinkResult(NamedTuple):
    """Target of a symbolic link (as stored in the link), or why there is none."""

    path: str
    target: Optional[str] = None
    error: Optional[str] = None  # "EINVAL" when the path exists but is no link
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.target is not None


class CommandResult(NamedTuple):
    """Outcome of running one command (argument list, no shell)."""

    argv: Tuple[str, ...]
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    #: Set when the command could not be started at all: "ENOENT" (not
    #: installed), "EACCES" (not executable), or "deadline" (no time left);
    #: or "output_too_large" when it was stopped for printing too much.
    error: Optional[str] = None
    message: str = ""
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.returncode == 0

    @property
    def not_found(self) -> bool:
        return self.error == "ENOENT"

    def describe_failure(self) -> str:
        """One line saying why this command gave no usable answer."""
        cmd = " ".join(self.argv)
        if self.error == "ENOENT":
            return "%s: not installed (not found on PATH)" % self.argv[0]
        if self.error == "deadline":
            return "%s: not run, the overall time limit was already spent" % cmd
        if self.error == "output_too_large":
            return "%s: %s (a runaway or broken program?)" % (cmd, self.message or "printed too much")
        if self.error:
            return "%s: could not run (%s%s)" % (cmd, self.error, ": " + self.message if self.message else "")
        if self.timed_out:
            return "%s: timed out after %.1fs" % (cmd, self.duration)
        if self.returncode != 0:
            tail = (self.stderr or self.stdout).strip().splitlines()
            why = tail[-1][:200] if tail else "no output"
            return "%s: exit code %s (%s)" % (cmd, self.returncode, why)
        return "%s: ok" % cmd


class NvmlResult(NamedTuple):
    """Everything envdoctor asked NVML, as returned by the NVML worker.

    ``data`` maps call names to ``{"value": ...}`` or ``{"error": NAME,
    "code": N}``; see :mod:`envdoctor.host.nvml_worker` for the keys.  When the
    worker itself failed (NVML library absent, worker hung...), ``data`` is
    ``None`` and ``error``/``message`` say why.
    """

    data: Optional[Dict[str, Any]] = None
    error: Optional[str] = None  # "timed_out", "worker_failed", "no_binding"
    message: str = ""
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.data is not None


class CudaInitResult(NamedTuple):
    """Whether CUDA initialises: what ``cuInit(0)`` returned in a child process that loaded ``libcuda.so.1`` with the
    user's environment (see :mod:`envdoctor.host.cudainit`), with the driver's CUDA version and the devices CUDA
    counts; or why that is not known (``error``).

    ``error``: None (``code`` is cuInit's answer); ``"not_recorded"`` (a snapshot from before it was asked, or a host
    that cannot ask); ``"not_run"`` (nothing here for CUDA to find: no NVIDIA GPU on the PCI bus, no device node, no
    driver library the loader finds); ``"no_library"`` (``libcuda.so.1`` did not load); ``"timed_out"`` (no answer
    within the time limit: ``call`` is the call it hung in); ``"crashed"`` (the child died: ``signal`` or exit
    status in ``message``); ``"garbled"`` (its output could not be read)."""

    code: Optional[int] = None  # CUresult of cuInit(0); 0 CUDA_SUCCESS
    name: str = ""  # the driver's name for it (cuGetErrorName)
    driver_version: Optional[int] = None  # cuDriverGetVersion: 12040 for CUDA 12.4
    device_count: Optional[int] = None  # cuDeviceGetCount, after a successful cuInit
    bus_ids: Tuple[str, ...] = ()  # cuDeviceGetPCIBusId of each device, in CUDA's order
    error: Optional[str] = None
    message: str = ""
    call: str = ""  # the call it was in when it hung or died
    duration: float = 0.0

    @property
    def answered(self) -> bool:
        return self.error is None and self.code is not None


class ElfResult(NamedTuple):
    """Dynamic section of a shared object (see :mod:`envdoctor.host.elf`), or why it could not be read."""

    path: str
    soname: Optional[str] = None
    needed: Tuple[str, ...] = ()
    rpath: Tuple[str, ...] = ()
    runpath: Tuple[str, ...] = ()
    error: Optional[str] = None  # "ENOENT", "EACCES", "not_elf", "bad_elf"
    message: str = ""
    #: The version needs: library -> the symbol versions required of it (``{"libc.so.6": ("GLIBC_2.2.5",
    #: "GLIBC_2.27")}``; empty: none). None when not known: malformed (``verneed_error`` says why), or a
    #: snapshot from before they were recorded.
    verneed: Optional[Dict[str, Tuple[str, ...]]] = None
    verneed_error: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


class FatbinResult(NamedTuple):
    """The GPU architectures a shared object carries code for, from its CUDA fat binary (see
    :mod:`envdoctor.host.fatbin`), or why it could not be read."""

    path: str
    sass: Tuple[str, ...] = ()  # "sm_80", "sm_90a", ...
    ptx: Tuple[str, ...] = ()  # "compute_90", ...
    section: bool = False  # the file has a .nv_fatbin section (device code of its own)
    complete: bool = True  # False: a garbled container stopped the walk (what was read is kept)
    error: Optional[str] = None  # "ENOENT", "EACCES", "not_elf", "bad_elf", "not_recorded", "timed_out"
    message: str = ""
    ptx_isa: Optional[str] = None  # the highest PTX ISA version of its PTX ("6.1"); None: no PTX, or not recorded

    @property
    def ok(self) -> bool:
        return self.error is None


class NamesResult(NamedTuple):
    """The library file names written in a shared object's read-only data (the sonames it opens with
    ``dlopen``: see :mod:`envdoctor.host.elfsym`), or why they were not read."""

    path: str
    sonames: Tuple[str, ...] = ()
    size: int = 0  # bytes of .rodata
    error: Optional[str] = None  # "ENOENT", "EACCES", "not_elf", "bad_elf", "too_large", "not_recorded", "timed_out"
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


class SymbolsResult(NamedTuple):
    """The symbols a shared object imports that none of ``providers`` exports (what ``ld.so`` would report as
    "undefined symbol" when the object is loaded with those libraries), or why that could not be told."""

    path: str
    providers: Tuple[str, ...] = ()
    missing: Tuple[Tuple[str, Optional[str]], ...] = ()  # (symbol, version required or None)
    names: str = ""  # the regular expression the imports looked up matched ("": all)
    checked: int = 0  # imports looked up
    error: Optional[str] = None  # "ENOENT", "not_elf", "bad_elf", "not_recorded", "timed_out"
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None


class PythonInfo(NamedTuple):
    """The Python interpreter whose packages are inspected."""

    executable: str
    version: str  # "3.11.7"
    implementation: str  # "cpython"
    prefix: str
    base_prefix: str
    sys_path: Tuple[str, ...]
    error: Optional[str] = None
    message: str = ""
    stdlib: str = ""  # sysconfig's "stdlib" path, where PEP 668's EXTERNALLY-MANAGED marker lives
    rule: str = ""  # why this interpreter was chosen: envdoctor.host.interpreter.Choice.rule
    reason: str = ""  # ... and in words ("the active virtual environment ($VIRTUAL_ENV)")


class Distribution(NamedTuple):
    """One installed Python distribution, found by its metadata directory."""

    name: str  # as in the directory name, e.g. "torch" or "nvidia_cudnn_cu12"
    version: str  # e.g. "2.4.0+cu121"
    metadata_dir: str  # full path of the .dist-info / .egg-info directory
    location: str  # the sys.path entry it was found in

    @property
    def key(self) -> str:
        """Normalised project name (PEP 503), e.g. ``nvidia-cudnn-cu12``."""
        return normalize_name(self.name)


@functools.lru_cache(maxsize=4096)
def normalize_name(name: str) -> str:
    """PEP 503's normal form of a project name (``Nvidia_CUDNN.cu12`` -> ``nvidia-cudnn-cu12``); the same few
    hundred names are asked for many times per run (every Distribution.key, every requirement)."""
    return re.sub(r"[-_.]+", "-", name).lower()


_HEADERS_END = lazyre.compile(r"^\r?$", re.M)


def metadata_headers(text: str) -> List[Tuple[str, str]]:
    """The headers of a core-metadata file (``METADATA``, ``PKG-INFO``): ``(lower-case name, value)`` in order.

    The format is RFC 822's, as :mod:`email` reads it for ``importlib.metadata`` and pip: the headers end at the
    first empty line, and a line that starts with a space or a tab continues the header before it. A continued
    ``License:`` text holds lines of spaces alone (setuptools and hatchling write a license file's blank lines
    that way): they are part of that header, not the end of the headers."""
    out: List[Tuple[str, str]] = []
    end = _HEADERS_END.search(text)  # split only the headers: the description after them can be 100 KB
    for line in (text[:end.start()] if end else text).split("\n"):
        line = line[:-1] if line.endswith("\r") else line
        if not line:
            break  # the headers end here; the description follows
        if line[0] in " \t":
            if out:
                out[-1] = (out[-1][0], out[-1][1] + "\n" + line.strip())
            continue
        key, sep, value = line.partition(":")
        if sep:
            out.append((key.strip().lower(), value.strip()))
    return out


_DIST_DIR = lazyre.compile(r"^(?P<name>.+?)-(?P<version>[^-]+?)(?:-py\d[\d.]*)?(?:-[^-]+)?\.(?:dist-info|egg-info)$")


def parse_dist_dir(dirname: str) -> Optional[Tuple[str, str]]:
    """``torch-2.4.0+cu121.dist-info`` -> ``("torch", "2.4.0+cu121")``."""
    m = _DIST_DIR.match(dirname)
    if not m:
        return None
    return m.group("name"), m.group("version")


class Host:
    """Abstract access to one machine.  Subclasses implement the primitives."""

    #: Human description for reports ("this machine", "snapshot foo.json").
    description = "host"
    #: Why a probe still running at the deadline did not finish ("": a file or command it reads hangs).
    late_reason = ""
    #: Whether a read may wait (on a disk, a program, a file that hangs): the probes then run side by side, so
    #: that one waiting holds up no other. A host whose reads never wait (a replay) answers from memory, and
    #: there side-by-side threads would only take turns at the interpreter (twice the work, measured).
    reads_wait = True

    # -- primitives -----------------------------------------------------
    def read_file(self, path: str, limit: int = MAX_FILE_BYTES) -> FileResult:
        raise NotImplementedError

    def list_dir(self, path: str) -> DirResult:
        raise NotImplementedError

    def read_link(self, path: str) -> LinkResult:
        raise NotImplementedError

    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> CommandResult:
        raise NotImplementedError

    def launch(self, argv: Sequence[str], timeout: Optional[float] = None) -> None:
        """Start ``argv`` ahead of the :meth:`run` that will ask for it (a host that runs nothing: no-op)."""

    def elf(self, path: str) -> ElfResult:
        """SONAME, NEEDED, RPATH and RUNPATH of a shared object (its headers only)."""
        raise NotImplementedError

    def fatbin(self, path: str) -> FatbinResult:
        """The SASS and PTX architectures in a shared object's CUDA fat binary (never imports or runs it)."""
        raise NotImplementedError

    def elf_sonames(self, path: str) -> NamesResult:
        """The library names in a shared object's read-only data, when it holds at most a bounded amount."""
        return NamesResult(path, error="not_recorded", message="this host cannot read library names")

    def elf_unresolved(self, path: str, providers: Sequence[str], names: str = "") -> SymbolsResult:
        """The dynamic symbols ``path`` imports (not weak) that no object of ``providers`` exports, each looked
        up in their hash tables; an import whose symbol version names a library outside ``providers`` is not
        judged; ``names`` (a regular expression): only the imports it matches; ``"@versioned"``: only the imports
        that carry a symbol version."""
        return SymbolsResult(path, tuple(providers), error="not_recorded",
                             message="this host cannot read symbol tables")

    def environ(self) -> Dict[str, str]:
        """Environment variables of the inspected process (a snapshot keeps the values of those a probe read
        and of :func:`~envdoctor.host.snapshot.recorded_variable` names, only the names of the others; secrets
        redacted)."""
        raise NotImplementedError

    def uname(self) -> Dict[str, str]:
        """``sysname``, ``release``, ``version``, ``machine`` (never the node name)."""
        raise NotImplementedError

    def nvml(self) -> NvmlResult:
        raise NotImplementedError

    def python(self) -> PythonInfo:
        raise NotImplementedError

    def start_cuda_init(self) -> None:
        """Start asking whether CUDA initialises, ahead of :meth:`cuda_init` (a host that runs nothing: no-op)."""

    def cuda_init(self) -> CudaInitResult:
        """Whether CUDA initialises on this machine (see :class:`CudaInitResult`)."""
        return CudaInitResult(error="not_recorded", message="not asked on this host")

    def kernel_log(self) -> CommandResult:
        """The NVIDIA driver's lines of the kernel log (:func:`driver_log_lines` of ``dmesg``'s output, one per
        line in ``stdout``), or why it could not be read. A live host records only those lines."""
        res = self.run(KERNEL_LOG_ARGV, timeout=KERNEL_LOG_TIMEOUT)
        return res._replace(stdout="".join(line + "\n" for line in driver_log_lines(res.stdout)))

    # -- helpers built on the primitives (recorded through them) --------
    def once(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, run once per host for ``key``: evidence several probes read (the loader cache) is
        gathered once. Probes racing for it may both compute it; never worse than without the memo."""
        memo: Dict[str, Any] = self.__dict__.setdefault("_once_memo", {})
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def getenv(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self.environ().get(name, default)

    def read_text(self, path: str, limit: int = MAX_FILE_BYTES) -> Optional[str]:
        """File contents as text, or ``None`` when it cannot be read."""
        return self.read_file(path, limit).text

    def exists(self, path: str) -> bool:
        """Whether ``path`` names an entry, judged from its parent's listing."""
        path = posixpath.normpath(path)
        parent, name = posixpath.split(path)
        if not name:
            return self.list_dir(path).ok
        return name in self.list_dir(parent or "/").names()

    def is_dir(self, path: str) -> bool:
        return self.list_dir(path).ok

    def resolve(self, path: str, max_depth: int = 40) -> str:
        """Follow symbolic links in every component of ``path`` (like ``realpath``).

        Stops quietly at a loop or a dangling link and returns what it has. Remembered per host (the links it
        reads are, too): an LD_LIBRARY_PATH that names one directory 100,000 times resolves it once.
        """
        memo: Dict[Tuple[str, int], str] = self.__dict__.setdefault("_resolved", {})
        got = memo.get((path, max_depth))
        if got is None:
            got = memo[(path, max_depth)] = self._resolve(path, max_depth)
        return got

    def _resolve(self, path: str, max_depth: int) -> str:
        parts = [p for p in posixpath.normpath(path).split("/") if p]
        resolved = "/"
        depth = 0
        while parts:
            part = parts.pop(0)
            candidate = posixpath.join(resolved, part)
            link = self.read_link(candidate)
            if link.ok and depth < max_depth:
                depth += 1
                target = link.target or ""
                base = "/" if target.startswith("/") else resolved
                parts = [p for p in posixpath.normpath(posixpath.join(base, target)).split("/") if p] + parts
                resolved = "/"
                continue
            resolved = candidate
        return posixpath.normpath(resolved)

    def glob_dir(self, path: str, pattern: str) -> List[str]:
        """Full paths of the entries of ``path`` whose names match a regex."""
        rx = re.compile(pattern)
        return [posixpath.join(path, n) for n in self.list_dir(path).names() if rx.fullmatch(n)]

    def which(self, program: str) -> Optional[str]:
        """First ``program`` on PATH, judged from directory listings."""
        for d in (self.getenv("PATH") or "").split(":"):
            if d and program in self.list_dir(d).names():
                return posixpath.join(d, program)
        return None

    def distributions(self) -> List[Distribution]:
        """Installed distributions on the inspected interpreter's ``sys.path``.

        Found from directory listings of each path entry, so it needs no
        import of the packages and replays from snapshots.  The first
        occurrence of a name wins, as it does for the import system.
        Worked out once per host, by the first probe that asks, and kept (six probes ask; a scan of a thousand
        distributions holds the interpreter for tens of milliseconds): a probe that asks meanwhile waits for that
        answer, at most :meth:`wait_budget` (a first reader stuck on a hung listing), then works it out itself.
        """
        found = self.__dict__.get("_distributions")
        if found is not None:
            return list(found)
        with _DISTRIBUTIONS_LOCK:
            found = self.__dict__.get("_distributions")
            if found is not None:
                return list(found)
            event = self.__dict__.get("_distributions_read")
            first = event is None
            if first:
                event = self.__dict__["_distributions_read"] = threading.Event()
        assert event is not None
        if not first:
            event.wait(self.wait_budget())
            found = self.__dict__.get("_distributions")
            return list(found if found is not None else self._find_distributions())
        try:
            found = self.__dict__["_distributions"] = self._find_distributions()
        finally:
            event.set()
        return list(found)

    def wait_budget(self) -> Optional[float]:
        """How long a probe waits for another's answer to the same question (None: as long as it takes; a host
        with a deadline bounds it)."""
        return None

    def _find_distributions(self) -> List[Distribution]:
        seen: Dict[str, Distribution] = {}
        for entry in self.python().sys_path:
            if not entry or entry.endswith(".zip"):
                continue
            egg = self._egg_entry(entry)
            if egg is not None:
                seen.setdefault(egg.key, egg)
            for name in self.list_dir(entry).names():
                if not (name.endswith(".dist-info") or name.endswith(".egg-info")):
                    continue
                parsed = parse_dist_dir(name)
                if not parsed and name.endswith(".egg-info") and "-" not in name[:-len(".egg-info")]:
                    # a development install (setup.py develop, pip install -e of a setuptools project) names its
                    # folder without the version: PKG-INFO says it
                    parsed = self._egg_info_version(posixpath.join(entry, name), name[:-len(".egg-info")])
                if not parsed:
                    continue
                dist = Distribution(parsed[0], parsed[1], posixpath.join(entry, name), entry)
                seen.setdefault(dist.key, dist)
        return sorted(seen.values(), key=lambda d: d.key)

    def _egg_entry(self, entry: str) -> Optional[Distribution]:
        """The distribution an ``.egg`` directory on ``sys.path`` is (``easy_install`` and ``setup.py install`` put
        ``<name>-<version>-pyX.Y[-<platform>].egg/`` there through ``easy-install.pth``): its metadata is its own
        ``EGG-INFO/`` and its packages lie at its top, so the entry itself is where they are imported from
        (importlib.metadata's ``Lookup`` and pkg_resources read such an entry's ``EGG-INFO`` the same way)."""
        base = posixpath.basename(posixpath.normpath(entry))
        if not base.endswith(".egg"):
            return None
        parts = base[:-len(".egg")].split("-")
        if len(parts) < 2 or not parts[0] or not parts[1]:
            return None
        info = posixpath.join(entry, "EGG-INFO")
        if not self.is_dir(info):
            return None
        return Distribution(parts[0], parts[1], info, entry)

    def _egg_info_version(self, folder: str, name: str) -> Optional[Tuple[str, str]]:
        """(name, version) of an ``.egg-info`` folder whose name has no version, from its PKG-INFO's headers."""
        text = self.read_text(posixpath.join(folder, "PKG-INFO"), limit=64 * 1024) or ""
        for key, value in metadata_headers(text):
            if key == "version" and value and " " not in value:
                return name, value
        return None


#: Guards the making of each host's one reader of its distributions (Host.distributions).
_DISTRIBUTIONS_LOCK = threading.Lock()


def errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, "EIO") if exc.errno else type(exc).__name__


# -- what a snapshot keeps ---------------------------------------------------------------------------

class ReadEnviron(Dict[str, str]):
    """The environment as a dict that remembers which names were looked up (``get``, ``[]``, ``in``): the
    variables the probes read, whose values a snapshot must keep so its replay gives the live run's report."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read: Set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        self.read.add(name)
        return super().get(name, default)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.read.add(name)
        return super().__contains__(name)


#: What a snapshot keeps of a file's text (by path) or a command's output (by its arguments after the
#: program): the part a probe uses, registered by the probe that reads it (a package database holds every
#: package of the system; the probes look at the CUDA-related ones). Applied when a snapshot is written,
#: never on replay, so old snapshots replay as they are.
FILE_FILTERS: Dict[str, Callable[[str], str]] = {}
COMMAND_FILTERS: Dict[Tuple[str, ...], Callable[[str], str]] = {}
#: The same by the end of the path (``.dist-info/METADATA``: its headers, without the description).
FILE_SUFFIX_FILTERS: Dict[str, Callable[[str], str]] = {}
#: The same by a pattern of the whole path (Docker's image configs: ``.../imagedb/content/sha256/<id>``).
FILE_PATTERN_FILTERS: List[Tuple[re.Pattern[str], Callable[[str], str]]] = []


def file_filter(path: str) -> Optional[Callable[[str], str]]:
    """What a snapshot keeps of the file at ``path`` (None: all of it)."""
    keep = FILE_FILTERS.get(path)
    if keep is None:
        keep = next((f for suffix, f in FILE_SUFFIX_FILTERS.items() if path.endswith(suffix)), None)
    if keep is None:
        keep = next((f for pattern, f in FILE_PATTERN_FILTERS if pattern.search(path)), None)
    return keep

"""The dynamic loader, modelled: which file ``ld.so`` would load for each library a program or shared object
needs, and why, without running anything (``ldd`` executes the program's loader; envdoctor only reads).

One implementation of glibc's rules (``elf/dl-load.c`` ``_dl_map_object``, ld.so(8)), used by every probe that
asks "which file": the framework linkage, the libraries the frameworks dlopen, the loader's choice of each
cuDNN/NCCL/TensorRT soname, and ``envdoctor libs``.

For a name without a slash, requested by an object (its *requester*):

1. an object already loaded whose SONAME (or the name it was loaded under) is that name satisfies it;
2. ``DT_RPATH`` of the requester, then of the object that loaded it, and so on up the chain, then of the main
   program, but only while the requester has no ``DT_RUNPATH`` (an object with ``DT_RUNPATH`` has no
   ``DT_RPATH`` at all: ``elf/get-dynamic-info.h``);
3. ``LD_LIBRARY_PATH``;
4. the requester's own ``DT_RUNPATH`` (never inherited);
5. ``/etc/ld.so.cache`` (:mod:`envdoctor.host.ldcache`; ``ldconfig -p`` when the file cannot be read), unless
   the requester is marked ``DF_1_NODEFLIB``... (not modelled: no CUDA library sets it);
6. the default directories.

In every directory of steps 2-4 and 6, glibc 2.33 and later first look in ``glibc-hwcaps/<level>/`` for each
level the CPU supports, best first (x86-64-v4, v3, v2: ``sysdeps/x86/get-isa-level.h``); in the cache, an entry
for such a subdirectory wins over the plain one. ``$ORIGIN`` in RPATH/RUNPATH is the requester's directory.

Dependencies are loaded breadth first (``_dl_map_object_deps``); libraries opened with ``dlopen`` come after the
initial set, searched from the object that opens them (its RPATH chain and RUNPATH), and a library already in
the process satisfies them by SONAME. ``LD_PRELOAD`` objects are loaded before everything else.

When the loader cache could not be read, a library found before the cache (RPATH, ``LD_LIBRARY_PATH``,
RUNPATH) is found for certain; one found only after it, or not at all, is marked ``certain: False``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from .. import lazyre
from ..facts import Fact, ok, timed_out, unknown
from ..host.base import ElfResult, Host, normalize_name
from ..osinfo import FAMILY_DIRS, LOADER_DIRS, MULTIARCH, family
from .cuda import ld_library_path_dirs

OS_RELEASE_LIMIT = 64 * 1024
LD_SO_CACHE = "/etc/ld.so.cache"
#: The largest loader cache read (real ones: 30 KiB to a few hundred KiB).
LD_CACHE_LIMIT = 16 * 1024 * 1024
CPUINFO_LIMIT = 16 * 1024 * 1024  # as the system probe reads it (one read per run, shared)

#: x86-64 micro-architecture levels, best first, with the /proc/cpuinfo flags each needs beyond the one
#: below it (glibc sysdeps/x86/get-isa-level.h; ``pni`` is SSE3, ``abm`` LZCNT).
X86_LEVELS = (
    ("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")),
    ("x86-64-v3", ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave")),
    ("x86-64-v2", ("cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3")),
)
#: A shared object's file-name ending: ``.so``, ``.so.12``, ``.so.9.1.0``.
SHARED_SUFFIX = r"\.so(?:\.\d+)*"
#: A shared object's file name (or a path to one).
SHARED_OBJECT = lazyre.compile(SHARED_SUFFIX + "$")
#: The C and C++ runtimes: resolved, never descended into (every program needs them; nothing CUDA hides there).
RUNTIME_SONAME = lazyre.compile(r"^(?:libc|libm|libdl|libpthread|librt|libutil|libresolv|libanl|libnsl|libmvec|"
                                r"libstdc\+\+|libgcc_s|libatomic|libgomp|libz|ld-linux(?:-[\w-]+)?)"
                                + SHARED_SUFFIX + "$")
#: Most objects one closure loads (torch with CUDA: about 40).
MAX_OBJECTS = 500

_LDCONFIG_HEADER = lazyre.compile(r"^\s*(\d+) libs found in cache")
_LDCONFIG_LINE = lazyre.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")
_HWCAP_NAMED = lazyre.compile(r'hwcap: "([^"]+)"')

#: (soname, flags as ldconfig -p prints them, path): the loader cache, in its own order.
CacheList = List[Tuple[str, str, str]]


# -- the loader cache ---------------------------------------------------------------------

def ldconfig_argv(host: Host) -> List[str]:
    path = host.which("ldconfig")
    if not path:
        for candidate in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):
            if host.exists(candidate):
                path = candidate
                break
    return [path or "ldconfig", "-p"]


def parse_ldconfig(text: str) -> CacheList:
    """``ldconfig -p`` lines -> ``(soname, flags, path)`` in cache order."""
    out = []
    for line in text.splitlines():
        m = _LDCONFIG_LINE.match(line)
        if m:
            out.append((m.group(1), m.group(2), m.group(3)))
    return out


def read_ld_cache(host: Host) -> Tuple[Optional[CacheList], Fact]:
    """The loader cache and a fact describing it (``None`` when unreadable). Read once per host (the libraries,
    linkage and dlopen probes each ask for it); each caller gets its own list."""
    entries, fact = host.once("ld_cache", lambda: _read_ld_cache(host))
    return (list(entries) if entries is not None else None), fact


def _read_ld_cache(host: Host) -> Tuple[Optional[CacheList], Fact]:
    """``/etc/ld.so.cache`` itself (no process to start); ``ldconfig -p`` when the file cannot be read or parsed
    (a snapshot made before envdoctor read the file holds the command's output instead)."""
    from ..host.ldcache import LdCacheError, flags_text, parse

    label = "Dynamic loader cache"
    res = host.read_file(LD_SO_CACHE, limit=LD_CACHE_LIMIT)
    why_not_file = ""
    if res.ok and not res.truncated:
        try:
            parsed = parse(res.data or b"")
        except LdCacheError as exc:
            why_not_file = "%s: %s" % (LD_SO_CACHE, exc)
        else:
            return ([(e.soname, flags_text(e), e.path) for e in parsed],
                    ok("libraries.ld_cache", {"entries": len(parsed)}, "file:" + LD_SO_CACHE, label))
    elif res.truncated:
        why_not_file = "%s is larger than %d MiB" % (LD_SO_CACHE, LD_CACHE_LIMIT >> 20)
    elif res.error:
        why_not_file = "%s: %s" % (LD_SO_CACHE, res.error)
    argv = ldconfig_argv(host)
    src = "command:" + " ".join(argv)
    r = host.run(argv, timeout=10)
    also = " (and %s)" % why_not_file if why_not_file and not why_not_file.endswith("ENOENT") else ""
    if r.timed_out:
        return None, timed_out("libraries.ld_cache", r.describe_failure() + also, src, label)
    if not r.ok:
        return None, unknown("libraries.ld_cache", r.describe_failure() + also, src, label)
    entries = parse_ldconfig(r.stdout)
    if not entries and r.stdout.strip():
        return None, unknown("libraries.ld_cache", f"unexpected output of ldconfig -p: {r.stdout.strip()[:80]!r}",
                             src, label)
    # glibc prints "N libs found in cache `/etc/ld.so.cache'" before the N entries (elf/cache.c):
    # fewer entries than announced is a cut-off listing, and a missing one would look "not found".
    header = _LDCONFIG_HEADER.match(r.stdout)
    if header and len(entries) < int(header.group(1)):
        return None, unknown("libraries.ld_cache", "ldconfig -p listed %d of the %s entries it announced "
                             "(truncated output)" % (len(entries), header.group(1)), src, label)
    return entries, ok("libraries.ld_cache", {"entries": len(entries)}, src, label)


def hwcaps_of(flags: str) -> Optional[str]:
    """The glibc-hwcaps subdirectory of a cache entry (``libc6,x86-64, hwcap: "x86-64-v3"``), or None."""
    m = _HWCAP_NAMED.search(flags)
    return m.group(1) if m else None


# -- the process's loader configuration ----------------------------------------------------------------------

class LoaderConfig(NamedTuple):
    """What the loader of the inspected process is configured with."""

    ld_library_path: Tuple[str, ...]
    cache: Optional[CacheList]  # None: could not be read
    cache_why: str = ""  # why not, when not
    hwcaps: Tuple[str, ...] = ()  # usable glibc-hwcaps subdirectories, best first
    machine: str = ""  # "x86-64", "AArch64": the cache flags this process accepts
    preload: Tuple[str, ...] = ()
    default_dirs: Tuple[str, ...] = LOADER_DIRS


def cpu_hwcaps(host: Host) -> Tuple[str, ...]:
    """The glibc-hwcaps subdirectories this CPU may use, best first (x86-64 only; none elsewhere or unknown)."""
    if host.uname().get("machine", "") not in ("x86_64", ""):
        return ()
    text = host.read_file("/proc/cpuinfo", limit=CPUINFO_LIMIT).text or ""
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    if not m:
        return ()
    have = set(m.group(1).split())
    usable: List[str] = []
    for level, needs in reversed(X86_LEVELS):  # v2, then v3 (which needs v2), then v4 (which needs v3)
        if not set(needs) <= have:
            break
        usable.append(level)
    return tuple(reversed(usable))


def loader_config(host: Host, ld_library_path: Optional[Sequence[str]] = None,
                  cache: Optional[CacheList] = None, cache_unknown: str = "") -> LoaderConfig:
    """The inspected process's loader configuration (its environment, the cache, the CPU), or one built from
    what the caller gives (``ld_library_path``/``cache``; ``cache_unknown``: the reason the caller could not read
    the cache, which is then not read again)."""
    if ld_library_path is None:
        ld_library_path = ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH"))
    why = cache_unknown
    if cache is None and not cache_unknown:
        cache, fact = read_ld_cache(host)
        why = "" if cache is not None else (fact.reason or "the loader cache could not be read")
    preload = tuple(p for p in re.split(r"[:\s]", host.getenv("LD_PRELOAD") or "") if p)
    machine = {"x86_64": "x86-64", "aarch64": "AArch64"}.get(host.uname().get("machine", ""), "")
    return LoaderConfig(tuple(ld_library_path), cache, why, host.once("cpu_hwcaps", lambda: cpu_hwcaps(host)),
                        machine, preload, host.once("loader_default_dirs", lambda: default_dirs(host)))


def _os_release_ids(host: Host) -> Tuple[str, str]:
    """(ID, ID_LIKE) of the machine's os-release (``/etc/os-release``, else ``/usr/lib/os-release``); empty when
    neither can be read or names none."""
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        text = host.read_file(path, limit=OS_RELEASE_LIMIT).text
        if text is None:
            continue
        fields = {}
        for line in text.splitlines():
            m = re.match(r"^\s*(ID|ID_LIKE)\s*=\s*(.*?)\s*$", line)
            if m:
                fields[m.group(1)] = m.group(2).strip("\"'")
        return fields.get("ID", ""), fields.get("ID_LIKE", "")
    return "", ""


def default_dirs(host: Host) -> Tuple[str, ...]:
    """The directories the machine's glibc searches after the cache: its distribution family's (Debian's multiarch
    directories, Fedora/RHEL's and SUSE's lib64, Arch's /usr/lib), from os-release's ID and ID_LIKE and the machine's
    architecture; the union of them all (:data:`LOADER_DIRS`) when the family or the architecture is not known."""
    triplet = MULTIARCH.get(host.uname().get("machine", ""))
    dirs = FAMILY_DIRS.get(family(*_os_release_ids(host)))
    return dirs(triplet) if dirs is not None and triplet is not None else LOADER_DIRS


# -- one search ---------------------------------------------------------------------------------------------

def expand_origin(entries: Sequence[str], lib_dir: str) -> List[str]:
    """``$ORIGIN``/``${ORIGIN}`` -> the object's directory, each entry normalised (``..`` folded)."""
    out = []
    for e in entries:
        for part in e.split(":"):
            if not part:
                continue
            part = part.replace("${ORIGIN}", lib_dir).replace("$ORIGIN", lib_dir)
            out.append(posixpath.normpath(part))
    return out


def own_search_paths(rpath: Sequence[str], runpath: Sequence[str], lib_dir: str) -> Tuple[List[str], List[str]]:
    """An object's own (DT_RPATH, DT_RUNPATH), ``$ORIGIN`` expanded: DT_RPATH is ignored when DT_RUNPATH exists
    (ld.so(8))."""
    return ([] if runpath else expand_origin(rpath, lib_dir)), expand_origin(runpath, lib_dir)


def names_in(host: Host, d: str) -> Any:
    """The names in directory ``d`` as a set (once per directory and host: a search asks each directory of the
    path for dozens of names, and a library directory holds thousands)."""
    return host.once("dirset:" + d, lambda: frozenset(host.list_dir(d).names()))


def _in_dir(host: Host, d: str, name: str, hwcaps: Sequence[str]) -> List[str]:
    """Files named ``name`` the loader tries in ``d``: its glibc-hwcaps subdirectories first."""
    names = names_in(host, d)
    out = []
    if hwcaps and "glibc-hwcaps" in names:
        for level in hwcaps:
            sub = posixpath.join(d, "glibc-hwcaps", level)
            if name in names_in(host, sub):
                out.append(posixpath.join(sub, name))
    if name in names:
        out.append(d + "/" + name if d != "/" else "/" + name)
    return out


def _cache_hits(config: LoaderConfig, name: str) -> List[str]:
    """The cache's entries for ``name`` in the order ld.so prefers them (``elf/dl-cache.c`` search_cache): a usable
    glibc-hwcaps entry of the best level, then the plain entries whose flags fit this process; entries with a
    legacy hwcap mask (glibc before 2.37) last, since which of them applies depends on the CPU."""
    named: List[Tuple[int, str]] = []
    plain: List[str] = []
    legacy: List[str] = []
    for _soname, flags, path in _cache_index(config.cache).get(name, ()):
        if config.machine and config.machine not in flags and ("x86-64" in flags or "AArch64" in flags):
            continue  # a library of another ABI (an i386 copy on x86-64)
        level = hwcaps_of(flags)
        if level is not None:
            if level in config.hwcaps:
                named.append((config.hwcaps.index(level), path))
        elif "hwcap:" in flags:
            legacy.append(path)
        else:
            plain.append(path)
    return [p for _, p in sorted(named)] + plain + legacy


_INDEXES: Dict[int, Tuple[Any, Dict[str, List[Tuple[str, str, str]]]]] = {}


def _cache_index(cache: Optional[CacheList]) -> Dict[str, List[Tuple[str, str, str]]]:
    """The cache's entries by soname, in the cache's order (built once per cache list: a closure asks it a
    hundred times)."""
    if not cache:
        return {}
    hit = _INDEXES.get(id(cache))
    if hit is not None and hit[0] is cache:
        return hit[1]
    index: Dict[str, List[Tuple[str, str, str]]] = {}
    for entry in cache:
        index.setdefault(entry[0], []).append(entry)
    if len(_INDEXES) > 16:
        _INDEXES.clear()
    _INDEXES[id(cache)] = (cache, index)
    return index


def search(host: Host, config: LoaderConfig, name: str, rpath: Sequence[str] = (),
           runpath: Sequence[str] = ()) -> Dict[str, Any]:
    """Which file the loader opens for ``name`` (no slash) requested by an object whose effective RPATH
    directories (its own and inherited, already expanded: empty when it has RUNPATH) are ``rpath`` and whose
    RUNPATH directories are ``runpath``.

    ``{"soname", "path", "via", "resolved", "version", "others", "certain"}``: ``path`` None when nothing is
    found; ``via`` one of ``RPATH``, ``LD_LIBRARY_PATH``, ``RUNPATH``, ``ldconfig cache``, ``default dir``;
    ``others`` every copy further down the order (the ones that lose); ``certain`` False when the cache could
    not be read and the answer depends on it."""
    hits: List[Tuple[str, str]] = []
    for stage, dirs in (("RPATH", rpath), ("LD_LIBRARY_PATH", config.ld_library_path), ("RUNPATH", runpath)):
        for d in dirs:
            hits += [(p, stage) for p in _in_dir(host, d, name, config.hwcaps)]
    before_cache = len(hits)
    hits += [(p, "ldconfig cache") for p in _cache_hits(config, name)]
    for d in config.default_dirs:
        hits += [(p, "default dir") for p in _in_dir(host, d, name, config.hwcaps)]
    out: Dict[str, Any] = {"soname": name, "path": None, "via": None, "resolved": None, "version": None,
                           "others": [], "certain": config.cache is not None or before_cache > 0}
    seen = set()
    for path, via in hits:
        real = host.resolve(path)
        if real in seen:
            continue
        seen.add(real)
        if out["path"] is None:
            out.update(path=path, via=via, resolved=real, version=version_from_name(posixpath.basename(real)))
        else:
            out["others"].append({"path": path, "via": via, "resolved": real,
                                  "version": version_from_name(posixpath.basename(real))})
    return out


def version_from_name(name: str) -> Optional[str]:
    """``libcudnn.so.9.1.0`` -> ``9.1.0``; ``libnccl.so.2`` -> ``2``."""
    m = re.match(r"^lib[\w+-]+\.so\.(\d+(?:\.\d+)*)$", name)
    return m.group(1) if m else None


def resolve_soname(host: Host, soname: str, runpath: Sequence[str] = (),
                   ld_library_path: Optional[Sequence[str]] = None,
                   cache: Optional[CacheList] = None, rpath: Sequence[str] = ()) -> Dict[str, Any]:
    """Which file ``dlopen(soname)`` would load from an object with these RPATH/RUNPATH directories (see
    :func:`search`). ``ld_library_path`` defaults to the host's environment, ``cache`` to the loader cache."""
    return search(host, loader_config(host, ld_library_path, cache), soname, rpath=rpath, runpath=runpath)


# -- a whole process ------------------------------------------------------------------------------------------

class _Object:
    __slots__ = ("index", "path", "resolved", "elf", "names", "loader", "how", "rpath", "runpath")

    def __init__(self, index: int, path: str, resolved: str, elf: ElfResult, loader: Optional[int], how: str,
                 name: Optional[str] = None):
        self.index, self.path, self.resolved, self.elf, self.loader, self.how = index, path, resolved, elf, loader, how
        # the name it was opened under (ld.so's l_libname; a root's file name too: a framework's libraries are
        # opened by their file names) and its SONAME
        self.names = {name or path} if name else {path, posixpath.basename(path)}
        if elf.ok and elf.soname:
            self.names.add(elf.soname)
        self.rpath, self.runpath = own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(path)) if elf.ok \
            else ([], [])


def conda_program_rpath(host: Host, program: str) -> List[str]:
    """The RPATH of a program in a conda environment's ``bin/`` whose ELF could not be read: conda-build sets every
    binary it packages to ``$ORIGIN``-relative ``DT_RPATH`` directories, ``lib`` by default (``build/rpaths``;
    conda_build/post.py ``mk_relative_linux``: ``patchelf --force-rpath --set-rpath $ORIGIN/../lib``), so the
    environment's ``lib/`` is searched for every library its Python loads. Empty elsewhere."""
    bindir = posixpath.dirname(program)
    prefix = posixpath.dirname(bindir)
    if posixpath.basename(bindir) != "bin" or not prefix or not host.is_dir(posixpath.join(prefix, "conda-meta")):
        return []
    return [posixpath.join(prefix, "lib")]


def load(host: Host, config: LoaderConfig, roots: Sequence[str], dlopens: Optional[Callable[[str, ElfResult],
         Iterable[str]]] = None, main: Optional[str] = None, descend: Optional[Callable[[str], bool]] = None,
         max_objects: int = MAX_OBJECTS, runtime: bool = False) -> Dict[str, Any]:
    """Load ``roots`` as a process would (each opened by ``main``, the program, when given: a Python interpreter's
    RPATH counts, conda's ``$ORIGIN/../lib``), then every library they need, transitively, then what
    ``dlopens(path, elf)`` says each object opens at run time.

    Returns ``{"objects": [{index, path, resolved, soname, how, loaded_by, error}], "links": [{from, soname, how,
    to, path, resolved, via, version, others, certain, expected}]}``: ``expected`` is the first copy in the
    requester's own RPATH/RUNPATH directories (the one it ships with), ``to`` the object index or None.
    ``descend(soname)`` (default: everything but the C/C++ runtime) says whose needs are followed; the C/C++
    runtime itself is searched only with ``runtime`` (otherwise its links say ``via: "not searched"``)."""
    objects: List[_Object] = []
    by_name: Dict[str, int] = {}
    by_file: Dict[str, int] = {}
    links: List[Dict[str, Any]] = []
    follow = descend or (lambda s: not RUNTIME_SONAME.match(s))
    main_obj: Optional[_Object] = None
    if main:
        melf = host.elf(main)
        main_obj = _Object(-1, main, host.resolve(main), melf, None, "main")
        if melf.ok:
            # ld.so takes a program's $ORIGIN from its real path (/proc/self/exe), not a link to it (a venv's python)
            main_obj.rpath, main_obj.runpath = own_search_paths(melf.rpath, melf.runpath,
                                                                posixpath.dirname(main_obj.resolved))
        else:
            main_obj.rpath = conda_program_rpath(host, main_obj.resolved)

    def add(path: str, loader: Optional[int], how: str, name: Optional[str] = None) -> int:
        real = host.resolve(path)
        if real in by_file:
            idx = by_file[real]
            if name:
                by_name.setdefault(name, idx)
            return idx
        idx = len(objects)
        obj = _Object(idx, path, real, host.elf(path), loader, how, name)
        objects.append(obj)
        by_file[real] = idx
        for n in obj.names:
            by_name.setdefault(n, idx)
        return idx

    def rpath_chain(obj: Optional[_Object]) -> List[str]:
        """The RPATH directories searched for ``obj``'s needs: its own, its loaders', the program's."""
        if obj is None:
            return list(main_obj.rpath) if main_obj else []
        if obj.elf.ok and obj.elf.runpath:
            return []
        out: List[str] = []
        seen_main = False
        cur: Optional[_Object] = obj
        hops = 0
        while cur is not None and hops < 64:
            out += [d for d in cur.rpath if d not in out]
            seen_main = seen_main or cur is main_obj
            cur = objects[cur.loader] if cur.loader is not None and cur.loader >= 0 else None
            hops += 1
        if main_obj is not None and not seen_main:
            out += [d for d in main_obj.rpath if d not in out]
        return out

    def resolve(obj: Optional[_Object], name: str, how: str) -> Dict[str, Any]:
        link: Dict[str, Any] = {"from": obj.index if obj is not None else None, "soname": name, "how": how}
        res: Dict[str, Any]
        if "/" in name:
            there = host.exists(name)
            res = {"soname": name, "path": name if there else None, "via": "path", "others": [], "certain": True,
                   "resolved": host.resolve(name) if there else None}
            res["version"] = version_from_name(posixpath.basename(str(res["resolved"] or name)))
        elif not runtime and RUNTIME_SONAME.match(name) and name not in by_name:
            res = {"soname": name, "path": None, "via": "not searched", "resolved": None, "version": None,
                   "others": [], "certain": True}
        elif name in by_name:
            hit = objects[by_name[name]]
            res = {"soname": name, "path": hit.path, "via": "loaded", "resolved": hit.resolved,
                   "version": version_from_name(posixpath.basename(hit.resolved)), "others": [], "certain": True}
        else:
            runpath = obj.runpath if obj is not None else []
            res = search(host, config, name, rpath=rpath_chain(obj), runpath=runpath)
        link.update(res)
        own = (obj.rpath + obj.runpath) if obj is not None else []
        link["expected"] = next((posixpath.join(d, name) for d in own if name in names_in(host, d)), None)
        return link

    queue: List[int] = []
    for p in config.preload:
        link = resolve(main_obj, p, "LD_PRELOAD")
        if link["path"] and len(objects) < max_objects:
            queue.append(add(link["path"], None, "preload", p))
    for r in roots:
        if len(objects) >= max_objects:
            break
        queue.append(add(r, None, "root"))  # opened by the program: only its RPATH is inherited

    def drain() -> None:
        while queue:
            obj = objects[queue.pop(0)]
            if not obj.elf.ok:
                continue
            for name in obj.elf.needed:
                link = resolve(obj, name, "NEEDED")
                if link["path"] and link["via"] != "loaded":
                    before = len(objects)
                    if before >= max_objects:
                        link["to"] = None
                        links.append(link)
                        continue
                    idx = add(link["path"], obj.index, "NEEDED", name)
                    link["to"] = idx
                    if len(objects) > before and follow(name):
                        queue.append(idx)
                else:
                    link["to"] = by_name.get(name) if link["path"] else None
                links.append(link)

    drain()
    if dlopens is not None:
        done = 0
        while done < len(objects):
            obj = objects[done]
            done += 1
            for name in dlopens(obj.path, obj.elf) if obj.elf.ok else ():
                link = resolve(obj, name, "dlopen")
                if link["path"] and link["via"] != "loaded" and len(objects) < max_objects:
                    before = len(objects)
                    idx = add(link["path"], obj.index, "dlopen", name)
                    link["to"] = idx
                    if len(objects) > before and follow(name):
                        queue.append(idx)
                else:
                    link["to"] = by_name.get(name) if link["path"] else None
                links.append(link)
                drain()
    return {
        "objects": [{"index": o.index, "path": o.path, "resolved": o.resolved,
                     "soname": o.elf.soname if o.elf.ok else None, "how": o.how, "loaded_by": o.loader,
                     "error": None if o.elf.ok else "%s%s" % (o.elf.error, ": " + o.elf.message if o.elf.message
                                                              else "")}
                    for o in objects],
        "links": links,
        "truncated": len(objects) >= max_objects,
    }


# -- the CUDA libraries of a closure, judged ------------------------------------------------------------------

#: The libraries of the CUDA toolkit, cuDNN, NCCL and TensorRT (not the driver's libcuda/libnvidia-*: the driver
#: checks judge those). ``.alt`` is NVRTC's alternative build.
CUDA_FAMILY = lazyre.compile(
    r"^lib(?:cudart|cublas(?:Lt)?|cufftw?|curand|cusolver(?:Mg)?|cusparse(?:Lt)?|nvrtc(?:-builtins)?|nvJitLink|"
    r"nvjpeg|npp[a-z]*|nvToolsExt|cupti|nvperf_[a-z]+|cudnn(?:_[a-z0-9_]+)?|nccl|nvinfer(?:_[a-z0-9_]+)?|"
    r"nvonnxparser|nvparsers|cufile(?:_rdma)?|cudss|nvshmem(?:_[a-z0-9_]+)?|nvblas|nvvm|nvptxcompiler|nvfatbin)"
    r"(?:\.alt)?" + SHARED_SUFFIX + "$")
_STEM = lazyre.compile(r"^(lib[A-Za-z0-9_+-]+?)(?:\.alt)?\.so((?:\.\d+)*)$")


def component(soname: str) -> str:
    """``cudnn``, ``nccl``, ``tensorrt`` or ``cuda`` (the CUDA toolkit's libraries)."""
    if soname.startswith("libcudnn"):
        return "cudnn"
    if soname.startswith("libnccl"):
        return "nccl"
    if soname.startswith(("libnvinfer", "libnvonnxparser", "libnvparsers")):
        return "tensorrt"
    return "cuda"


def stem_and_major(soname: str) -> Tuple[str, Optional[str]]:
    """``libcudnn_ops.so.9`` -> (``libcudnn_ops``, ``9``); ``libnvrtc-builtins.so.13.0`` -> (..., ``13``)."""
    m = _STEM.match(soname)
    if not m:
        return soname, None
    nums = [p for p in m.group(2).split(".") if p]
    return m.group(1), nums[0] if nums else None


#: auditwheel's rename of a library it bundles: ``libcudnn.so.8`` -> ``libcudnn-463fd6d5.so.8.9.7``.
_VENDORED = lazyre.compile(r"^(lib[A-Za-z0-9_+]+)-[0-9a-f]{8}(" + SHARED_SUFFIX + ")$")


def unvendored(name: str) -> str:
    """A library file or soname without auditwheel's hash (``libcudnn-463fd6d5.so.8.9.7`` -> ``libcudnn.so.8.9.7``)."""
    m = _VENDORED.match(name)
    return m.group(1) + m.group(2) if m else name


def runtime_loads(path: str, elf: ElfResult) -> List[str]:
    """What the matrix says a library opens at run time (:mod:`envdoctor.matrix.loads`: cuDNN's front library its
    sub-libraries, CTranslate2 cuBLAS and cuDNN's), found by its stem and soname major or its file's version, less
    what it names in NEEDED (a bundled copy under auditwheel's name counts)."""
    from ..matrix import loads

    own = unvendored(elf.soname or posixpath.basename(path))
    stem, major = stem_and_major(own)
    version = version_from_name(unvendored(posixpath.basename(path)))
    linked = {stem_and_major(unvendored(n)) for n in elf.needed}
    have = {(stem, major)} | linked
    out: List[str] = []
    for row in loads.loads_of(stem, major, version):
        for name in row["loads"]:
            n_stem, n_major = stem_and_major(name)
            # a sub-library of a library it links (libcudnn_ops_infer.so.8 of libcudnn.so.8) is that library's to
            # open, from its own search path, and only once it is found
            parent = any(n_stem.startswith(s + "_") and m == n_major for s, m in linked)
            if name not in out and (n_stem, n_major) not in have and not parent:
                out.append(name)
    return out


def dlopen_names(host: Host, path: str, elf: ElfResult) -> List[str]:
    """The CUDA libraries an object opens at run time, read from its own read-only data (:meth:`Host.elf_sonames`):
    ``libnvrtc.so.13`` names ``libnvrtc-builtins.so.13.0``. A name without a version that shares the object's
    stem takes the object's major, as cuDNN does (``libcudnn.so.9`` names ``libcudnn_graph.so`` and opens
    ``libcudnn_graph.so.9``); any other unversioned name is a development link no release opens by default.
    What the matrix knows it opens (:func:`runtime_loads`) is added, whether or not that data could be read."""
    res = host.elf_sonames(path)
    own = unvendored(elf.soname or posixpath.basename(path))
    stem, major = stem_and_major(own)
    family = re.match(r"^lib[a-z]+", stem)
    # itself and what it links (a bundled copy under auditwheel's name included) are loaded already
    have = {(stem, major)} | {stem_and_major(unvendored(n)) for n in elf.needed}
    out: List[str] = []
    for name in (res.sonames if res.ok else ()):
        if name.endswith(".so"):
            if not (major and family and name.startswith(family.group(0))):
                continue
            name = "%s.%s" % (name, major)
        if name in elf.needed or stem_and_major(name) in have or not CUDA_FAMILY.match(name) or name in out:
            continue
        out.append(name)
    return out + [n for n in runtime_loads(path, elf) if n not in out and CUDA_FAMILY.match(n)]


#: Where CUDA libraries are often unpacked without being on any search path.
_ELSEWHERE_FIXED = ("/usr/local/lib", "/usr/local/lib64", "/opt/tensorrt/lib", "/usr/local/tensorrt/lib")


def opened_by_name(host: Host, config: LoaderConfig, soname: str, runpath: Sequence[str] = ()) -> Dict[str, Any]:
    """What code that opens ``soname`` by name at run time (dlopen, ctypes) gets, from an object whose RUNPATH is
    ``runpath``: ``{"soname", "path", "via", "certain", "elsewhere"}``, ``elsewhere`` the copies in
    :func:`elsewhere_dirs` outside that search (None for ``path``: the loader finds none)."""
    res = search(host, config, soname, runpath=runpath)
    searched = set(runpath) | set(config.ld_library_path)
    elsewhere = [posixpath.join(d, soname) for d in elsewhere_dirs(host)
                 if d not in searched and soname in host.list_dir(d).names()]
    return {"soname": soname, "path": res["path"], "via": res["via"], "certain": res["certain"],
            "elsewhere": elsewhere}


def elsewhere_dirs(host: Host, near: Sequence[str] = ()) -> List[str]:
    """Directories that commonly hold CUDA libraries the loader is not told about: the NVIDIA wheels' and
    TensorRT's in every site-packages of the interpreter (and in the one holding each path of ``near``), its
    prefix's lib (conda), every CUDA toolkit's."""
    out: List[str] = []
    py = host.python()
    sites = list(py.sys_path)
    for p in near:
        parts = posixpath.normpath(p).split("/")
        sites += ["/".join(parts[:i + 1]) for i, part in enumerate(parts) if part.endswith("-packages")]
    for entry in sites:
        if not entry.endswith("-packages"):
            continue
        nv = posixpath.join(entry, "nvidia")
        out += [posixpath.join(nv, d, "lib") for d in host.list_dir(nv).names()]
        if "tensorrt_libs" in host.list_dir(entry).names():
            out.append(posixpath.join(entry, "tensorrt_libs"))
    for prefix in (py.prefix, host.getenv("CONDA_PREFIX") or ""):
        if prefix:
            out.append(posixpath.join(prefix, "lib"))
    for name in host.list_dir("/usr/local").names():
        if name == "cuda" or name.startswith("cuda-"):
            out += [posixpath.join("/usr/local", name, "lib64"),
                    posixpath.join("/usr/local", name, "targets", "x86_64-linux", "lib"),
                    posixpath.join("/usr/local", name, "targets", "sbsa-linux", "lib")]
    out += list(_ELSEWHERE_FIXED)
    seen: List[str] = []
    for d in out:
        d = posixpath.normpath(d)
        if d not in seen:
            seen.append(d)
    return seen


#: The NVIDIA wheel that ships a library, by soname stem (``nvidia-<name>[-cuNN]``; CUDA 13's wheels share
#: ``nvidia/cu13/lib``); TensorRT's wheels install ``tensorrt_libs``.
WHEEL_OF_STEM = {"libcublas": "cublas", "libcublasLt": "cublas", "libnvblas": "cublas", "libcudart": "cuda-runtime",
                 "libnvrtc": "cuda-nvrtc", "libnvrtc-builtins": "cuda-nvrtc", "libnvJitLink": "nvjitlink",
                 "libcusparse": "cusparse", "libcufft": "cufft", "libcufftw": "cufft", "libcurand": "curand",
                 "libcusolver": "cusolver", "libcusolverMg": "cusolver", "libcupti": "cuda-cupti",
                 "libnvToolsExt": "nvtx", "libcufile": "cufile", "libcufile_rdma": "cufile", "libnccl": "nccl",
                 "libnvshmem_host": "nvshmem", "libcusparseLt": "cusparselt", "libnvjpeg": "nvjpeg"}


def wheel_version(host: Host, path: Optional[str]) -> Optional[str]:
    """The version of the pip wheel that installed a library file (``.../site-packages/nvidia/cublas/lib/
    libcublas.so.12`` -> nvidia-cublas-cu12's), or None when it is no wheel's."""
    if not path:
        return None
    parts = posixpath.normpath(path).split("/")
    if len(parts) < 4:
        return None
    stem, _ = stem_and_major(parts[-1])
    site = None
    want: Tuple[str, ...] = ()
    if parts[-2] == "lib" and parts[-4] == "nvidia":
        site = "/".join(parts[:-4])
        sub = parts[-3]
        if re.match(r"^cu\d+$", sub):  # CUDA 13+: one directory for every library wheel
            base = WHEEL_OF_STEM.get(stem) or (stem.split("_")[0][3:] if stem.startswith("libcudnn") else None)
            if base is None:
                return None
            want = ("nvidia-%s-%s" % (base, sub), "nvidia-%s" % base)
        else:
            want = ("nvidia-%s" % sub.replace("_", "-"),)
    elif parts[-2] == "tensorrt_libs":
        site = "/".join(parts[:-2])
        want = ("tensorrt-libs", "tensorrt-cu")
    if site is None:
        return None
    for key, version in _site_wheels(host, site):  # the wheels of that site-packages, whichever interpreter it is
        if any(key == w or key.startswith(w + "-cu") or key.startswith(w) for w in want):
            return version
    return None


def _site_wheels(host: Host, site: str) -> List[Tuple[str, str]]:
    """(normalised name, version) of the distributions in one site-packages directory (once per host)."""
    from ..host.base import parse_dist_dir

    def read() -> List[Tuple[str, str]]:
        out = []
        for entry in host.list_dir(site).names():
            parsed = parse_dist_dir(entry) if entry.endswith(".dist-info") else None
            if parsed is not None:
                out.append((normalize_name(parsed[0]), parsed[1]))
        return out

    return host.once("site-wheels:" + site, read)


def other_majors(host: Host, config: LoaderConfig, soname: str, dirs: Sequence[str]) -> List[Dict[str, Any]]:
    """Copies of the same library with another major (``libnvinfer.so.10`` for ``libnvinfer.so.8``), in ``dirs``
    and the loader cache: each ``{soname, path, version}``, one per file."""
    stem, major = stem_and_major(soname)
    if major is None:
        return []
    rx = re.compile(r"^%s\.so\.(\d+)$" % re.escape(stem))
    found: Dict[str, Dict[str, Any]] = {}
    candidates = [(n, posixpath.join(d, n)) for d in dirs for n in host.list_dir(d).names() if rx.match(n)]
    candidates += [(n, p) for n, _f, p in config.cache or () if rx.match(n)]
    for name, path in candidates:
        if rx.match(name).group(1) == major:  # type: ignore[union-attr]
            continue
        real = host.resolve(path)
        if real not in found:
            found[real] = {"soname": name, "path": path,
                           "version": version_from_name(posixpath.basename(real)) or wheel_version(host, path)}
    return list(found.values())


def missing_symbols(host: Host, requester: str, taken: str) -> Optional[List[str]]:
    """The versioned symbols ``requester`` imports from the library it is given at ``taken`` that this copy does not
    export (``__nvJitLinkCreate_12_4`` from an nvJitLink 12.1): what makes an older copy fail to load. None when
    the symbol tables could not be read."""
    from ..host.elfsym import VERSIONED

    res = host.elf_unresolved(requester, [taken], VERSIONED)
    return [m[0] for m in res.missing] if res.ok else None


#: The libraries whose pieces must all come from one release, by component: cuDNN's shim (libcudnn.so) and the
#: sub-libraries it and libcudnn_graph open by soname (cuDNN 8: cudnn_ops_infer ...; cuDNN 9: cudnn_graph, cudnn_ops,
#: cudnn_engines_* ...) check each other's version when loaded, and a piece of another release fails with
#: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH or "undefined symbol" (cuDNN's API reference, cudnnStatus_t).
ONE_RELEASE = ("cudnn",)


def same_release_copy(host: Host, requester: str, soname: str) -> Optional[str]:
    """The copy of ``soname`` that ``requester``'s own release ships beside it (the same directory), when both are
    pieces of a library that must be of one release (:data:`ONE_RELEASE`) and the requester's RPATH/RUNPATH does
    not name it: a cuDNN shim without RUNPATH (cuDNN 8's sub-libraries, the aarch64 cuDNN 9 wheels before
    pytorch/builder#1859) still ships its sub-libraries beside itself, and a copy of another release that the loader
    finds first (LD_LIBRARY_PATH, the ld.so cache) is mixed into it."""
    base = posixpath.basename(soname)
    comp = component(base)
    if comp not in ONE_RELEASE or component(posixpath.basename(requester)) != comp:
        return None
    if stem_and_major(base)[1] != stem_and_major(posixpath.basename(host.resolve(requester)))[1]:
        return None
    sibling = posixpath.join(posixpath.dirname(requester), base)
    return sibling if host.exists(sibling) else None


def cuda_closure(host: Host, config: LoaderConfig, roots: Sequence[str], main: Optional[str] = None,
                 dirs: Optional[Sequence[str]] = None, only_cuda: bool = False) -> Dict[str, Any]:
    """The CUDA libraries ``roots`` load, transitively (NEEDED and what each object names for dlopen), each link
    with what a judge needs: ``component``, the ``version`` of the file taken (its name's, else its wheel's),
    ``expected_version`` (of the copy the requester ships), ``elsewhere`` (copies of that soname the loader
    does not search), ``other_majors``, and ``requester`` (the path of the object that needs it). Links to other
    libraries are dropped (the runtime, the framework's own); objects that could not be read are listed in
    ``unread``."""
    graph = load(host, config, roots, dlopens=lambda p, e: dlopen_names(host, p, e), main=main)
    objects = graph["objects"]
    where = list(dirs) if dirs is not None else elsewhere_dirs(host, roots)
    links: List[Dict[str, Any]] = []
    for link in graph["links"]:
        soname = str(link.get("soname"))
        if not CUDA_FAMILY.match(posixpath.basename(soname)):
            continue
        req = objects[link["from"]] if link.get("from") is not None else None
        out = dict(link)
        out["requester"] = req["path"] if req else main
        out["component"] = component(posixpath.basename(soname))
        if out.get("path"):
            out["version"] = out.get("version") if "." in str(out.get("version") or "") else (
                wheel_version(host, out.get("resolved") or out.get("path")) or out.get("version"))
        if not out.get("expected") and out.get("path") and req is not None:
            sibling = same_release_copy(host, str(req["path"]), soname)
            if sibling:
                out["expected"], out["expected_by"] = sibling, "release"
        if out.get("expected"):
            exp_real = host.resolve(out["expected"])
            out["expected_version"] = version_from_name(posixpath.basename(exp_real)) if "." in str(
                version_from_name(posixpath.basename(exp_real)) or "") else (
                wheel_version(host, exp_real) or version_from_name(posixpath.basename(exp_real)))
            out["shadowed"] = bool(out.get("resolved")) and out["resolved"] != exp_real
            if out["shadowed"] and req is not None:
                out["missing_symbols"] = missing_symbols(host, req["path"], str(out["resolved"]))
        else:
            out["shadowed"] = False
        if not out.get("path"):
            searched = set(config.ld_library_path)
            out["elsewhere"] = [posixpath.join(d, soname) for d in where
                                if d not in searched and soname in host.list_dir(d).names()]
            out["other_majors"] = other_majors(host, config, soname, list(config.ld_library_path) + where
                                               + list(config.default_dirs))
        out.pop("from", None)
        out.pop("to", None)
        links.append(out)
    unread = [{"path": o["path"], "error": o["error"]} for o in objects
              if o.get("error") and (o["how"] == "root" or CUDA_FAMILY.match(posixpath.basename(o["path"])))]
    return {"roots": list(roots), "links": links, "unread": unread, "truncated": graph["truncated"],
            "cache_unknown": config.cache_why if config.cache is None else None}

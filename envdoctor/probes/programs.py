"""GPU code of the programs and libraries outside the Python frameworks: what each carries and what it compiles at
run time, so that they are judged by the rules a framework's own GPU code is judged by.

Three places, each bounded:

* **conda packages' libraries**: the shared objects each package's ``<prefix>/conda-meta/<name>-<version>-<build>
  .json`` lists under ``"files"`` (conda's own record of what it installed), in every conda prefix envdoctor knows
  (``CONDA_PREFIX``, ``~/.conda/environments.txt``) and every prefix whose ``bin`` is on ``PATH``; NVIDIA's own
  library packages (``cudatoolkit``, ``cuda-*``, ``libcu*``, ``libnv*``, cuDNN, NCCL, TensorRT) and the
  frameworks (``pytorch``, ``tensorflow-gpu``) are not read (their own checks judge them);
* **programs on PATH outside the system's directories** (``/opt/<tool>/bin``, an unpacked release's ``bin``),
  with the libraries beside them (``../lib``) and the fat binaries they load from their data folder
  (``../data/*.fatbin``, ``nvcc -fatbin`` output the program hands ``cuModuleLoadFatBinary``);
* **software installed whole under ``/opt/<name>`` or ``/usr/local/<name>``** (a vendor's SDK), on PATH or not: its
  ``bin``, ``tools``, ``lib`` and ``lib64``;
* **packaged applications installed whole**: a snap's current revision (``/snap/<name>/current``) and the
  components of that revision (``/snap/<name>/components/<revision>/<component>``, where snapd puts a strict
  snap's optional parts: a CUDA build of its engine), a Flatpak app's files (``/var/lib/flatpak/app/<id>/current/
  active/files``): their ``bin``, ``lib``, ``lib64`` and ``usr/bin``, ``usr/lib``, ``usr/lib64``;
* **libraries the loader's cache lists outside the distribution's directories** (:func:`cache_libraries`: a C++
  library built from source into ``/usr/local/lib`` or an install prefix named in ``/etc/ld.so.conf.d``), NVIDIA's
  own and the driver's left out, at most :data:`MAX_CACHE_LIBRARIES`;
* **Python extension modules**: the shared objects each installed distribution's ``RECORD`` lists, or for one
  installed without a wheel (an egg, a legacy ``.egg-info``) its own metadata, or for an editable install the source
  tree its ``.pth`` path or setuptools finder names (as :mod:`envdoctor.probes.staticcuda` finds them), of the
  packages that are not frameworks.

A file is kept when it needs a CUDA library or the driver (``libcuda.so.1``) or carries a fat binary. Fact
``programs.gpu_code`` = ``[{kind, owner, version, path, sass, ptx, ptx_isa, nvrtc, cudart, prefix, toolkit}]``:
``cudart`` the CUDA runtime it links dynamically (``libcudart.so.11.0`` in its NEEDED; None: linked statically, or
a fat binary file a program loads through the driver), ``cudart_version`` the release of the CUDA runtime file
found in its own search paths (``libcudart.so.12.9.79`` beside it -> "12.9": the runtime an application bundles is
the toolkit's it was built with), ``nvrtc``
True when it links NVRTC (it compiles its kernels at run time: NVRTC writes PTX of its own release's ISA, which
the driver then JIT-compiles), ``toolkit`` the CUDA release of the NVRTC the loader gives it (the file's own
version, else its conda prefix's ``cudatoolkit``/``cuda-nvrtc``).
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from .. import frameworks, lazyre
from ..facts import Fact, ok
from ..host.base import Host
from . import ProbeContext, register
from .cuda import CONDA_META_FILE, conda_prefixes, user_homes
from .loader import SHARED_OBJECT, SHARED_SUFFIX, own_search_paths

#: The most files opened in one run, and the most bytes of one conda-meta record read.
MAX_FILES = 96
META_LIMIT = 2 * 1024 * 1024
#: The most entries of one PATH directory looked at.
MAX_DIR_ENTRIES = 64
#: Directories of the system and the driver: their programs are the distribution's, judged elsewhere.
SYSTEM_BIN = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/usr/games",
                        "/usr/local/games", "/snap/bin", "/usr/local/nvidia/bin"})
#: NVIDIA's own library packages in conda: the library checks judge them.
_NVIDIA_PACKAGE = lazyre.compile(
    r"^(?:cudatoolkit|cuda-[a-z0-9-]+|libcu[a-z0-9-]*|libnv[a-z0-9-]*|libnpp[a-z0-9-]*|cudnn|nccl|libnccl|"
    r"tensorrt|libcudnn[a-z0-9-]*|python|_libgcc_mutex|_openmp_mutex|libgcc-ng|libstdcxx-ng|libgomp)$")
_LIBCUDA = lazyre.compile(r"^libcuda" + SHARED_SUFFIX + "$")
_NVRTC = lazyre.compile(r"^libnvrtc" + SHARED_SUFFIX + "$")
_CUDART = lazyre.compile(r"^libcudart" + SHARED_SUFFIX + "$")
_NVRTC_FILE = lazyre.compile(r"^libnvrtc\.so\.(\d+\.\d+)\.\d+")
_CUDART_FILE = lazyre.compile(r"^libcudart\.so\.(\d+\.\d+)\.\d+")
#: Why an ELF read says a file holds no code to judge: not there, unreadable, or no ELF file at all (a script).
_NOT_AN_OBJECT = frozenset({"ENOENT", "EACCES", "ENOTDIR", "EISDIR", "not_elf"})


def _framework(name: str) -> bool:
    """A conda package that is a framework (``pytorch``, ``tensorflow-gpu``): its own checks judge it."""
    return frameworks.of_distribution(name) is not None or any(name in f.aliases for f in frameworks.FRAMEWORKS)


def _prefixes(host: Host) -> List[str]:
    """Conda prefixes: those conda names, then each prefix whose ``bin`` is on PATH (its programs are the ones
    that run)."""
    out = [p for p, _how in conda_prefixes(host)]
    for d in (host.getenv("PATH") or "").split(":"):
        d = posixpath.normpath(d) if d.startswith("/") else ""
        if d.endswith("/bin"):
            prefix = d[:-len("/bin")] or "/"
            if prefix not in out and host.is_dir(posixpath.join(prefix, "conda-meta")):
                out.append(prefix)
    return out


def _toolkit_of(names: Iterable[str]) -> Optional[str]:
    """The CUDA release a conda prefix's NVRTC comes from (``cuda-nvrtc``, else ``cudatoolkit``)."""
    found: Dict[str, str] = {}
    for name in names:
        m = CONDA_META_FILE.match(name)
        if m and m.group(1) in ("cuda-nvrtc", "cudatoolkit"):
            found[m.group(1)] = m.group(2)
    version = found.get("cuda-nvrtc") or found.get("cudatoolkit")
    if not version:
        return None
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and all(p.isdigit() for p in parts[:2]) else None


def _bundled_release(host: Host, path: str, elf: Any, prefix: Optional[str], pattern: Any) -> Optional[str]:
    """The release of the CUDA library file ``pattern`` matches in a library's own search paths (its DT_RPATH,
    ignored beside a DT_RUNPATH as ld.so does, then its DT_RUNPATH; then the environment's ``lib``):
    :data:`_NVRTC_FILE`: ``libnvrtc.so.11.7.99`` -> 11.7; :data:`_CUDART_FILE`: ``libcudart.so.12.9.79`` -> 12.9."""
    rpath, runpath = own_search_paths(list(elf.rpath), list(elf.runpath), posixpath.dirname(path))
    dirs = rpath + runpath
    if prefix:
        dirs.append(posixpath.join(prefix, "lib"))
    for d in dirs:
        for name in sorted(host.list_dir(d).names()):
            m = pattern.match(name)
            if m:
                return m.group(1)
    return None


class _Reader:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.opened = 0
        self.seen: Set[str] = set()
        self.complete = True
        self.out: List[Dict[str, Any]] = []

    def read(self, path: str, kind: str, owner: str, version: Optional[str], prefix: Optional[str] = None,
             toolkit: Optional[str] = None) -> None:
        real = posixpath.normpath(path)
        # a library's soname link and its file are one library: read once, under the first name met
        key = self.host.resolve(real)
        if real in self.seen or key in self.seen:
            return
        if self.opened >= MAX_FILES:
            self.complete = False
            return
        self.seen.update((real, key))
        self.opened += 1
        host = self.host
        if real.endswith(".fatbin"):
            fat = host.fatbin(real)
            sass = list(fat.sass) if fat.ok else []
            ptx = list(fat.ptx) if fat.ok else []
            if sass or ptx:
                self.out.append({"kind": kind, "owner": owner, "version": version, "path": real, "sass": sass,
                                 "ptx": ptx, "ptx_isa": fat.ptx_isa if fat.ok else None, "nvrtc": False,
                                 "cudart": None, "cudart_version": None, "prefix": prefix, "toolkit": None})
            return
        # the dynamic section first: a file that is no shared object or program (a script on PATH) is not kept
        # whatever it holds, so its fat binary is never looked for; one whose dynamic section could not be read
        # (garbled, or not recorded) is still an ELF file, and the GPU code its fat binary carries is judged
        elf = host.elf(real)
        if not elf.ok and elf.error in _NOT_AN_OBJECT:
            return
        fat = host.fatbin(real)
        sass = list(fat.sass) if fat.ok else []
        ptx = list(fat.ptx) if fat.ok else []
        if not elf.ok and not (sass or ptx):
            return
        needed = list(elf.needed) if elf.ok else []
        cuda = any(_LIBCUDA.match(n) or n.startswith(("libcudart", "libnvrtc", "libcufft", "libcublas", "libcurand",
                                                      "libcusolver", "libcusparse", "libcudnn", "libnccl"))
                   for n in needed)
        if not (cuda or sass or ptx):
            return
        nvrtc = any(_NVRTC.match(n) for n in needed)
        nvrtc_toolkit = None
        if nvrtc and elf.ok:
            nvrtc_toolkit = _bundled_release(host, real, elf, prefix, _NVRTC_FILE) or toolkit
        cudart = next((n for n in needed if _CUDART.match(n)), None)
        cudart_version = None
        if cudart and ptx and elf.ok:
            cudart_version = _bundled_release(host, real, elf, prefix, _CUDART_FILE)
        self.out.append({"kind": kind, "owner": owner, "version": version, "path": real, "sass": sass, "ptx": ptx,
                         "ptx_isa": fat.ptx_isa if fat.ok else None, "nvrtc": nvrtc, "cudart": cudart,
                         "cudart_version": cudart_version, "prefix": prefix, "toolkit": nvrtc_toolkit})


def conda_libraries(host: Host) -> List[Tuple[str, str, str, List[str]]]:
    """``(prefix, package, version, [library paths])`` of each conda package that is not NVIDIA's own, its shared
    objects as its conda-meta record lists them. Worked out once per host: this probe and the linkage probe both
    ask, and parsing every record's JSON is most of the cost."""
    return list(host.once("programs.conda_libraries", lambda: _conda_libraries(host)))


def _conda_libraries(host: Host) -> List[Tuple[str, str, str, List[str]]]:
    out: List[Tuple[str, str, str, List[str]]] = []
    for prefix in _prefixes(host):
        meta = posixpath.join(prefix, "conda-meta")
        for name in sorted(host.list_dir(meta).names()):
            m = CONDA_META_FILE.match(name)
            if not m or _NVIDIA_PACKAGE.match(m.group(1)) or _framework(m.group(1)):
                continue
            res = host.read_file(posixpath.join(meta, name), limit=META_LIMIT)
            if res.data is None or res.truncated:
                continue
            try:
                record = json.loads(res.data.decode("utf-8", "replace"))
            except ValueError:
                continue
            files = record.get("files") if isinstance(record, dict) else None
            if not isinstance(files, list):
                continue
            libs = [posixpath.join(prefix, f) for f in files if isinstance(f, str) and not f.startswith(("/", ".."))
                    and SHARED_OBJECT.search(f)]
            if libs:
                out.append((prefix, m.group(1), m.group(2), libs))
    return out


def path_programs(host: Host) -> List[Tuple[str, List[str]]]:
    """``(root, [files])`` of each PATH directory outside the system's, not a conda prefix's and not a CUDA
    toolkit's: its programs, the libraries in ``../lib`` and the fat binaries in ``../data``."""
    out: List[Tuple[str, List[str]]] = []
    for d in (host.getenv("PATH") or "").split(":"):
        if not d.startswith("/"):
            continue
        d = posixpath.normpath(d)
        if d in SYSTEM_BIN or not d.endswith("/bin") or d in [o[0] + "/bin" for o in out]:
            continue
        root = posixpath.dirname(d)
        if host.is_dir(posixpath.join(root, "conda-meta")) or host.exists(posixpath.join(d, "nvcc")):
            continue
        files = [posixpath.join(d, n) for n in sorted(host.list_dir(d).names())[:MAX_DIR_ENTRIES]]
        lib = posixpath.join(root, "lib")
        files += [posixpath.join(lib, n) for n in sorted(host.list_dir(lib).names())[:MAX_DIR_ENTRIES]
                  if SHARED_OBJECT.search(n)]
        data = posixpath.join(root, "data")
        files += [posixpath.join(data, n) for n in sorted(host.list_dir(data).names())[:MAX_DIR_ENTRIES]
                  if n.endswith(".fatbin")]
        out.append((root, files))
    return out


#: Where software outside the distribution's packages installs itself whole (a vendor's SDK: ``/usr/local/zed``,
#: ``/opt/<tool>``), and the folders of such a root that hold its programs and libraries.
SOFTWARE_ROOTS = ("/opt", "/usr/local")
SOFTWARE_DIRS = ("bin", "tools", "lib", "lib64")
#: Folders of those places that are no one program's root: the hierarchy's own (hier(7)), the driver's and
#: NVIDIA's (their own checks judge them), conda installs (read by their records) and toolkits (``bin/nvcc``).
_NOT_A_ROOT = lazyre.compile(
    r"^(?:bin|sbin|lib|lib32|lib64|libexec|include|share|etc|games|man|src|var|doc|info|nvidia|cuda(?:-[0-9.]+)?|"
    r"tensorrt.*|cudnn.*|nccl.*|containerd|rh|google)$", re.IGNORECASE)
#: The most roots looked at in one run.
MAX_ROOTS = 24


def software_roots(host: Host) -> List[Tuple[str, List[str]]]:
    """``(root, [files])`` of each folder of ``/opt`` and ``/usr/local`` that is one program's whole install (a
    vendor's SDK), not a conda prefix's, not a CUDA toolkit's: the files of its ``bin``, ``tools``, ``lib`` and
    ``lib64`` (programs there are run from there, whether or not their folder is on PATH)."""
    out: List[Tuple[str, List[str]]] = []
    # a root whose bin is on PATH is read by path_programs
    on_path = {posixpath.dirname(posixpath.normpath(d)) for d in (host.getenv("PATH") or "").split(":")
               if d.startswith("/") and posixpath.normpath(d).endswith("/bin")}
    for top in SOFTWARE_ROOTS:
        for name in sorted(host.list_dir(top).names())[:MAX_DIR_ENTRIES]:
            root = posixpath.join(top, name)
            if (_NOT_A_ROOT.match(name) or root in on_path or len(out) >= MAX_ROOTS
                    or host.is_dir(posixpath.join(root, "conda-meta"))
                    or host.exists(posixpath.join(root, "bin", "nvcc"))):
                continue
            files = _tree_files(host, root, SOFTWARE_DIRS)
            if files:
                out.append((root, files))
    return out


#: Where packaged applications are installed whole: snaps and system-wide Flatpak apps.
SNAP_DIR = "/snap"
FLATPAK_APPS = "/var/lib/flatpak/app"
#: The folders of a packaged application's tree that hold its programs and libraries.
PACKAGED_DIRS = SOFTWARE_DIRS + ("usr/bin", "usr/lib", "usr/lib64")
#: Snaps that are no application: bases, snapd itself, desktop runtimes and themes, the GPU userspace's content
#: snaps (their own checks judge the driver's libraries); ``/snap/bin`` holds only snapd's launchers.
_NOT_AN_APP = lazyre.compile(
    r"^(?:bin|README|core\d*|bare|snapd|snapd-desktop-integration|gnome-[0-9-]+|gtk-common-themes|"
    r"gtk2-common-themes|kf[56]-.*|kde-.*|mesa-.*|gpu-[0-9]+|nvidia-.*|cuda.*)$", re.IGNORECASE)
_REVISION = lazyre.compile(r"^x?\d+$")


def _tree_files(host: Host, root: str, dirs: Iterable[str]) -> List[str]:
    files: List[str] = []
    for sub in dirs:
        d = posixpath.join(root, sub)
        names = sorted(host.list_dir(d).names())[:MAX_DIR_ENTRIES]
        files += [posixpath.join(d, n) for n in names
                  if posixpath.basename(sub) in ("bin", "tools") or SHARED_OBJECT.search(n)]
    return files


def _revision_key(name: str) -> Tuple[int, str]:
    digits = name.lstrip("x")
    return (int(digits) if digits.isdigit() else -1, name)


def packaged_roots(host: Host) -> List[Tuple[str, List[str]]]:
    """``(root, [files])`` of each packaged application installed whole: a snap's current revision, each
    component of that revision (``/snap/<name>/components/<revision>/<component>``: the revision ``current``
    names, else the highest there), each system-wide Flatpak app's active files. At most :data:`MAX_ROOTS`."""
    out: List[Tuple[str, List[str]]] = []
    for name in sorted(host.list_dir(SNAP_DIR).names())[:MAX_DIR_ENTRIES]:
        if _NOT_AN_APP.match(name) or len(out) >= MAX_ROOTS:
            continue
        snap = posixpath.join(SNAP_DIR, name)
        current = posixpath.join(snap, "current")
        link = host.read_link(current)
        revision = posixpath.basename(posixpath.normpath(link.target)) if link.ok and link.target else None
        roots = [current] if host.is_dir(current) else []
        components = posixpath.join(snap, "components")
        revisions = [r for r in host.list_dir(components).names() if _REVISION.match(r)]
        if revision not in revisions:
            revision = max(revisions, key=_revision_key) if revisions else None
        if revision is not None:
            base = posixpath.join(components, revision)
            roots += [posixpath.join(base, c) for c in sorted(host.list_dir(base).names())[:MAX_DIR_ENTRIES]]
        for root in roots:
            files = _tree_files(host, root, PACKAGED_DIRS)
            if files and len(out) < MAX_ROOTS:
                out.append((root, files))
    for app in sorted(host.list_dir(FLATPAK_APPS).names())[:MAX_DIR_ENTRIES]:
        root = posixpath.join(FLATPAK_APPS, app, "current", "active", "files")
        files = _tree_files(host, root, PACKAGED_DIRS) if len(out) < MAX_ROOTS else []
        if files:
            out.append((root, files))
    return out


#: Applications that keep the GPU engine backends they download in a folder of their own, one folder per backend
#: (a llama.cpp release and build variant): (the application's name, the folder below the user's home, how many
#: folder levels below it each backend lies).
#: * Jan (0.7): ``~/.local/share/Jan/data/llamacpp/backends/<llama.cpp release>/<variant>``, the backend it picks
#:   and downloads (its log: 'Determined best available backend: b8892/linux-cuda-13-common_cpus-x64'), whose
#:   libraries (``libggml-cuda.so``...) llama.cpp's server loads (https://github.com/janhq/jan/issues/8145, Jan
#:   0.7.9, checked 2026-12-01).
#: An application that ships several backends and picks one per GPU (Ollama's ``<lib>/ollama/cuda_vNN`` runners)
#: is not listed: the GPU code and the libraries of the runners it does not pick say nothing of the machine.
APP_BACKENDS: Tuple[Tuple[str, str, int], ...] = (("Jan", ".local/share/Jan/data/llamacpp/backends", 2),)
#: How deep below a backend's folder its libraries are looked for (``build/bin``).
BACKEND_DEPTH = 2


def _backend_files(host: Host, root: str) -> List[str]:
    """A backend's shared objects, in its folder and the folders below it up to :data:`BACKEND_DEPTH` deep, and
    every file of a ``bin`` folder (its programs)."""
    files: List[str] = []
    todo = [(root, 0)]
    dirs = 0
    while todo:
        d, depth = todo.pop(0)
        in_bin = posixpath.basename(d) == "bin"
        for name in sorted(host.list_dir(d).names())[:MAX_DIR_ENTRIES]:
            path = posixpath.join(d, name)
            if SHARED_OBJECT.search(name) or in_bin:
                files.append(path)
            elif (depth < BACKEND_DEPTH and dirs < MAX_MODULE_DIRS and not name.startswith(".")
                  and host.is_dir(path)):
                dirs += 1
                todo.append((path, depth + 1))
    return files


def _backend_roots(host: Host) -> List[Tuple[str, str, List[str]]]:
    out: List[Tuple[str, str, List[str]]] = []
    homes = user_homes(host)
    for app, folder, levels in APP_BACKENDS:
        for top in [posixpath.join(h, folder) for h in homes]:
            found = [top] if host.is_dir(top) else []
            for _level in range(levels):
                found = [posixpath.join(d, n) for d in found for n in sorted(host.list_dir(d).names())[:MAX_DIR_ENTRIES]
                         if not n.startswith(".")][:MAX_ROOTS]
            for root in found:
                files = _backend_files(host, root) if len(out) < MAX_ROOTS else []
                if files:
                    out.append((root, "%s's backend %s" % (app, posixpath.relpath(root, top)), files))
    return out


def backend_roots(host: Host) -> List[Tuple[str, str, List[str]]]:
    """``(root, name, [files])`` of each GPU engine backend an application keeps in a folder of its own
    (:data:`APP_BACKENDS`): its libraries are loaded by the application's engine, not alone, and only when it picks
    that backend (the linkage probe reads them; their GPU code is not judged: which backend runs is the
    application's choice). At most :data:`MAX_ROOTS`; worked out once per host."""
    return list(host.once("programs.backend_roots", lambda: _backend_roots(host)))


def root_name(root: str) -> str:
    """The name a program root goes by: a snap's name (``gemma3``; a component's ``gemma3+llamacpp-cuda``, as
    snapd names it), a Flatpak app's id, else the root's folder name (``/opt/<name>``)."""
    parts = root.split("/")
    if root.startswith(SNAP_DIR + "/") and len(parts) > 2:
        if len(parts) == 6 and parts[3] == "components":
            return "%s+%s" % (parts[2], parts[5])
        return parts[2]
    if root.startswith(FLATPAK_APPS + "/") and len(parts) > 5:
        return parts[5]
    return posixpath.basename(root)


def program_roots(host: Host) -> List[Tuple[str, List[str]]]:
    """:func:`path_programs`, :func:`software_roots` then :func:`packaged_roots`, listed once per host: this probe
    and the linkage probe both read them."""
    return list(host.once("programs.roots",
                          lambda: path_programs(host) + software_roots(host) + packaged_roots(host)))


#: The most folders below a software root's ``lib`` looked into for plug-in modules, and how deep.
MAX_MODULE_DIRS = 16
MODULE_DEPTH = 2


def module_libraries(host: Host, root: str) -> List[str]:
    """The shared objects in the folders below a software root's ``lib`` (and ``lib64``), up to
    :data:`MODULE_DEPTH` deep: the modules its programs open at run time from a folder of their own (a Lua
    interpreter's ``lib/lua/5.1/*.so``, a plug-in folder), which the loader loads with their own NEEDED.
    Python's ``site-packages`` are read elsewhere and left out."""
    out: List[str] = []
    todo = [(posixpath.join(root, top), 0) for top in ("lib", "lib64")]
    dirs = 0
    while todo:
        d, depth = todo.pop(0)
        for name in sorted(host.list_dir(d).names())[:MAX_DIR_ENTRIES]:
            path = posixpath.join(d, name)
            if depth and SHARED_OBJECT.search(name):
                out.append(path)
            elif (depth < MODULE_DEPTH and not SHARED_OBJECT.search(name) and dirs < MAX_MODULE_DIRS
                  and not name.startswith(("python", ".")) and name not in ("site-packages", "dist-packages",
                                                                            "pkgconfig", "cmake")
                  and host.is_dir(path)):
                dirs += 1
                todo.append((path, depth + 1))
    return out


#: The most libraries of the loader's cache read in one run.
MAX_CACHE_LIBRARIES = 48
#: The driver's own libraries (its checks judge them), wherever the loader's cache lists them.
_DRIVER_LIBRARY = lazyre.compile(r"^lib(?:cuda\.|cuda_|nvcuvid|nvoptix|nvidia|[A-Za-z0-9]+_nvidia)")


def cache_libraries(host: Host) -> List[Tuple[str, str]]:
    """``(soname, path)`` of each library the loader's cache lists outside the distribution's own directories
    (the system search path's, where packages install, and the driver's): what is built from source and
    installed into ``/usr/local/lib`` or an install prefix named in ``/etc/ld.so.conf.d`` (a C++ library built with
    CUDA, OpenCV's ``libopencv_cudev``, its programs' libraries), which every program on the machine loads by name.
    NVIDIA's own libraries (the CUDA toolkit's, cuDNN, NCCL, TensorRT: :data:`~envdoctor.probes.loader.CUDA_FAMILY`;
    the driver's), a CUDA toolkit's and the driver's folders are left to their own checks. At most
    :data:`MAX_CACHE_LIBRARIES`, in the cache's order."""
    from ..osinfo import CONTAINER_DRIVER_DIRS, LOADER_DIRS
    from .loader import CUDA_FAMILY, default_dirs, read_ld_cache

    entries, _fact = read_ld_cache(host)
    system = set(LOADER_DIRS) | set(default_dirs(host)) | set(CONTAINER_DRIVER_DIRS)
    out: List[Tuple[str, str]] = []
    for soname, _flags, path in entries or []:
        if not path.startswith("/") or len(out) >= MAX_CACHE_LIBRARIES:
            continue
        parts = posixpath.normpath(path).split("/")
        if (posixpath.dirname(path) in system or CUDA_FAMILY.match(soname) or _DRIVER_LIBRARY.match(soname)
                or any(_TOOLKIT_PART.match(p) or p in ("nvidia", "conda-meta") for p in parts[:-1])):
            continue
        out.append((soname, path))
    return out


_TOOLKIT_PART = lazyre.compile(r"^cuda(?:-\d+(?:\.\d+)*)?$")
_LIBRARY_VERSION = lazyre.compile(r"^(lib[A-Za-z0-9_+-]+?)\.so((?:\.\d+)*)$")


def _library_name(host: Host, soname: str, path: str) -> Tuple[str, Optional[str]]:
    """(name, version) a library of the loader's cache goes by: ``libopencv_core.so.4.4`` whose file is
    ``libopencv_core.so.4.4.0`` -> (``libopencv_core``, ``4.4.0``)."""
    m = _LIBRARY_VERSION.match(soname)
    name = m.group(1) if m else soname
    f = _LIBRARY_VERSION.match(posixpath.basename(host.resolve(path)))
    version = (f.group(2) or "").lstrip(".") if f else ""
    return name, version or None


def find_gpu_code(host: Host) -> Dict[str, Any]:
    from .staticcuda import candidates_once

    reader = _Reader(host)
    toolkits: Dict[str, Optional[str]] = {}
    for prefix, package, version, libs in conda_libraries(host):
        if prefix not in toolkits:
            toolkits[prefix] = _toolkit_of(host.list_dir(posixpath.join(prefix, "conda-meta")).names())
        toolkit = toolkits[prefix]
        for lib in libs:
            reader.read(lib, "conda", package, version, prefix, toolkit)
    for root, files in program_roots(host):
        for f in files:
            reader.read(f, "program", root_name(root), None)
    candidates, _unlisted, complete = candidates_once(host)
    for dist, path in candidates:
        reader.read(path, "python", dist.name, dist.version)
    for soname, path in cache_libraries(host):
        lib_name, lib_version = _library_name(host, soname, path)
        reader.read(path, "library", lib_name, lib_version)
    return {"libraries": reader.out, "complete": reader.complete and complete}


@register("programs", "GPU code in programs outside the frameworks", order=96, produces=("programs.gpu_code",))
def probe_programs(ctx: ProbeContext) -> Iterable[Fact]:
    return [ok("programs.gpu_code", find_gpu_code(ctx.host), "derived",
               "GPU code of programs and libraries outside the frameworks")]

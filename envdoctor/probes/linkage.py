"""Framework library linkage: which cuDNN / cuBLAS / CUDA runtime / NCCL / TensorRT file each
installed framework's CUDA library would really load, resolved the way ``ld.so`` does.

For each framework the frameworks probe found, the ELF dynamic section of its main CUDA
library is read (``Host.elf``: NEEDED, RPATH, RUNPATH), ``$ORIGIN`` is expanded to the
library's directory, and every NEEDED CUDA soname is resolved with
:func:`envdoctor.probes.loader.resolve_soname` (the one model of ``ld.so``) in glibc's order (ld.so(8)):

* ``DT_RPATH`` (only when the object has no ``DT_RUNPATH``) *before* ``LD_LIBRARY_PATH``;
* ``LD_LIBRARY_PATH``;
* ``DT_RUNPATH`` *after* it;
* the ``ld.so`` cache, then the default directories.

PyTorch's pip wheels are linked with ``--force-rpath`` (DT_RPATH pointing at
``$ORIGIN/../../nvidia/*/lib``; pytorch/pytorch ``.ci/manywheel/build_cuda.sh``), so
``LD_LIBRARY_PATH`` cannot shadow a copy that is present there; with DT_RUNPATH it can.

Facts: ``linkage.<framework>.elf`` = ``{path, needed, rpath, runpath}`` (or unknown, why),
and ``linkage.<framework>`` = ``[{soname, path, resolved, via, version, expected, shadowed,
how}]``: ``expected`` is the copy the framework ships or pins (first hit in its own
RPATH/RUNPATH dirs), ``shadowed`` is true when another file wins over it, ``path`` is
``None`` when the loader would find nothing ("cannot open shared object file").

``linkage.<framework>.abi``, for every installed framework with compiled code (any build): the C library
its binaries need. The version needs (``DT_VERNEED``) of its main libraries (:data:`ABI_LIBRARIES`) give the
highest ``GLIBC_x.y`` symbol version any of them requires of glibc (``ld.so`` refuses one it lacks: "version
`GLIBC_2.27' not found"), and the highest ``GLIBCXX_``/``CXXABI_`` of libstdc++; the ``Tag:`` lines of its
wheels' ``.dist-info/WHEEL`` give the glibc the wheel was built for (``manylinux_2_28`` -> 2.28,
``manylinux2014`` -> 2.17, ``manylinux2010`` -> 2.12, ``manylinux1`` -> 2.5), even where no library could
be read. ``checks/frameworks.py`` compares both with ``os.glibc``.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from packaging.version import Version

from .. import frameworks, lazyre
from ..facts import Fact, ok, unknown
from ..host.base import Distribution, Host, normalize_name
from . import ProbeContext, register
from .cuda import ld_library_path_dirs
from .libraries import read_ld_cache, resolve_soname
from .loader import SHARED_OBJECT, loader_config, own_search_paths
from .record import read_record
from .staticcuda import unrecorded_modules

#: NEEDED entries worth resolving (the CUDA libraries a framework may get from elsewhere).
CUDA_SONAME = lazyre.compile(r"^lib(cudnn|cublas|cublasLt|cudart|nccl|nvinfer)\.so\.\d+(?:\.\d+)?$")  # libcudart.so.11
#: The whole CUDA math stack (NVRTC, cuFFT, cuRAND, cuSOLVER, cuSPARSE too), for frameworks whose wheels ship
#: none of it and expect every library from the machine's CUDA installation (mxnet-cuNNN); the others get these
#: from the same wheels or directories as their cuBLAS/CUDA runtime, already resolved above.
CUDA_STACK_SONAME = lazyre.compile(r"^lib(cudnn|cublas|cublasLt|cudart|nccl|nvinfer|nvrtc|cufft|curand|cusolver|"
                                   r"cusparse)\.so\.\d+(?:\.\d+)?$")  # libnvrtc.so.11.2
SONAMES_OF = {"mxnet": CUDA_STACK_SONAME}

#: Framework -> candidate paths of its main CUDA library, relative to its site-packages dir (its plug-in's
#: ``cuda_libraries``, in the frameworks' order).
LIBRARIES: Dict[str, Tuple[str, ...]] = {f.name: f.cuda_libraries for f in frameworks.FRAMEWORKS
                                         if f.cuda_libraries}


#: Framework -> its main compiled libraries (relative to site-packages) whose version needs are read, for any
#: build: each group is one library, the first of its candidates that exists (its plug-in's ``abi_libraries``).
ABI_LIBRARIES: Dict[str, Tuple[Tuple[str, ...], ...]] = {f.name: f.abi_libraries for f in frameworks.FRAMEWORKS
                                                         if f.abi_libraries}
#: A library's top directory -> the distribution that installs it, where that is not the framework's own
#: package (``jax_plugins/xla_cuda12`` comes with ``jax-cuda12-plugin``).
_OWNER = ((lazyre.compile(r"^jaxlib/"), "jaxlib"),
          (lazyre.compile(r"^jax_plugins/xla_cuda(\d+)/"), "jax-cuda%s-plugin"))


def owner_of(name: str, rel: str, package: str) -> str:
    for pattern, owner in _OWNER:
        m = pattern.match(rel)
        if m:
            return owner % m.groups() if m.groups() else owner
    return package


#: Framework -> the distributions whose wheels carry its compiled code (besides the framework's own package).
ABI_WHEELS: Dict[str, Tuple[str, ...]] = {"jax": ("jaxlib",)}
ABI_WHEEL_PREFIXES: Dict[str, Tuple[str, ...]] = {"jax": ("jax-cuda",)}  # jax-cuda12-plugin, jax-cuda12-pjrt
WHEEL_LIMIT = 16 * 1024
_MANYLINUX = lazyre.compile(r"^manylinux_(\d+)_(\d+)_\w+$")
_LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
_GLIBC_NAME = lazyre.compile(r"^GLIBC_(\d+(?:\.\d+)+)$")
#: Version names of glibc that mark an ABI feature rather than a release, with the release that brought it
#: (objects linked with ``-z pack-relative-relocs`` need GLIBC_ABI_DT_RELR, glibc 2.36).
_GLIBC_ABI = {"GLIBC_ABI_DT_RELR": "2.36"}


def platform_glibc(platform: str) -> Optional[Tuple[int, int]]:
    """The glibc a wheel's platform tag requires: ``manylinux_2_28_x86_64`` -> (2, 28), ``manylinux2014_x86_64``
    -> (2, 17) (PEP 599/600); None for any other platform (``linux_x86_64`` promises nothing, ``musllinux_*``
    is not glibc)."""
    m = _MANYLINUX.match(platform)
    if m:
        return int(m.group(1)), int(m.group(2))
    legacy = platform.split("_", 1)[0]
    return _LEGACY_MANYLINUX.get(legacy) if legacy in _LEGACY_MANYLINUX and "_" in platform else None


def wheel_tags(text: str) -> List[str]:
    """The ``Tag:`` values of a ``.dist-info/WHEEL`` file (``cp310-cp310-manylinux_2_28_x86_64``)."""
    out = []
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "tag" and value.strip():
            out.append(value.strip()[:200])
    return out[:64]


def wheel_floor(tags: Sequence[str]) -> Optional[Tuple[int, int]]:
    """The lowest glibc any of a wheel's tags runs on (a wheel with several platform tags installs on any of
    them), or None when one of them promises no glibc (``linux_x86_64``, ``any``) or there are none."""
    floors = []
    for tag in tags:
        parts = tag.split("-")
        if len(parts) != 3:
            return None
        for plat in parts[2].split("."):  # compressed tag sets: manylinux_2_17_x86_64.manylinux2014_x86_64
            g = platform_glibc(plat)
            if g is None:
                return None
            floors.append(g)
    return min(floors) if floors else None


def version_key(text: str) -> Version:
    """A GLIBC_/GLIBCXX_/CXXABI_ release number (``2.27``, ``3.4.29``; matched as digits and dots) to compare."""
    return Version(text)


def highest_needed(verneed: Mapping[str, Sequence[str]], prefix: str) -> Optional[Tuple[str, str]]:
    """The highest ``PREFIX_x.y`` version named in ``verneed`` and the library it is required of:
    ``("2.27", "libm.so.6")`` for prefix ``GLIBC``. glibc's libraries (libc, libm, libpthread, libdl, librt,
    ld-linux) all version their symbols ``GLIBC_``; ``GLIBC_PRIVATE`` and the like are not releases. Where several
    libraries are required at that release, the first by name is named, whatever order the file lists them in."""
    best: Optional[Tuple[Version, str, str]] = None
    pattern = _GLIBC_NAME if prefix == "GLIBC" else re.compile(r"^%s_(\d+(?:\.\d+)+)$" % re.escape(prefix))
    for lib, names in verneed.items():
        for name in names:
            m = pattern.match(name)
            release = m.group(1) if m else _GLIBC_ABI.get(name) if prefix == "GLIBC" else None
            if release:
                key = version_key(release)
                if best is None or key > best[0] or (key == best[0] and lib < best[2]):
                    best = (key, release, lib)  # of several libraries at that release, the first by name
    return (best[1], best[2]) if best else None


def abi_fact(host: Host, name: str, value: Dict[str, Any], dists: Sequence[Distribution]) -> Optional[Fact]:
    """``linkage.<name>.abi`` (see the module's doc), or None for a framework with nothing to read."""
    site = value["path"]
    package = value.get("package") or name
    versions = {d.key: d.version for d in dists}
    libs: List[Dict[str, Any]] = []
    unread: List[str] = []
    for group in ABI_LIBRARIES.get(name, ()):
        for rel in group:
            path = posixpath.join(site, rel)
            if "*" in rel:  # an extension module's name carries its interpreter's tag
                found = sorted(host.glob_dir(posixpath.dirname(path), fnmatch.translate(posixpath.basename(rel))))
                if not found:
                    continue
                path = found[0]
            res = host.elf(path)
            if res.error == "ENOENT":
                continue
            if not res.ok:
                unread.append("%s: %s%s" % (path, res.error, ": " + res.message if res.message else ""))
            elif res.verneed is None:
                unread.append("%s: version needs %s" % (
                    path, res.verneed_error or "not recorded (a snapshot made before they were)"))
            else:
                owner = owner_of(name, rel, package)
                entry: Dict[str, Any] = {"path": path, "package": owner, "version": versions.get(owner)}
                for prefix, key in (("GLIBC", "glibc"), ("GLIBCXX", "glibcxx"), ("CXXABI", "cxxabi")):
                    hit = highest_needed(res.verneed, prefix)
                    entry[key] = hit[0] if hit else None
                    if key == "glibc":
                        entry["glibc_from"] = hit[1] if hit else None
                libs.append(entry)
            break
    wanted = {package} | set(ABI_WHEELS.get(name, ()))
    wheels: List[Dict[str, Any]] = []
    for d in dists:
        if not (d.key in wanted or d.key.startswith(ABI_WHEEL_PREFIXES.get(name, ("\0",)))):
            continue
        if not d.metadata_dir.endswith(".dist-info"):
            continue
        path = posixpath.join(d.metadata_dir, "WHEEL")
        text = host.read_text(path, limit=WHEEL_LIMIT)
        if text is None:
            continue
        tags = wheel_tags(text)
        floor = wheel_floor(tags)
        wheels.append({"package": d.key, "version": d.version, "path": path, "tags": tags,
                       "glibc": "%d.%d" % floor if floor else None})
    if not libs and not unread and not wheels:
        return None
    label = "C library %s needs" % name
    if not libs and not wheels:
        return unknown("linkage.%s.abi" % name, "no version needs could be read: %s" % "; ".join(unread),
                       "elf:" + site, label)
    out: Dict[str, Any] = {"libraries": libs, "unread": unread, "wheels": wheels}
    top = max((e for e in libs if e["glibc"]), key=lambda e: version_key(e["glibc"]), default=None)
    out["glibc"] = top["glibc"] if top else None
    out["glibc_library"] = top["path"] if top else None
    out["glibc_from"] = top["glibc_from"] if top else None
    out["glibc_package"] = top["package"] if top else None
    out["glibc_package_version"] = top["version"] if top else None
    for key in ("glibcxx", "cxxabi"):
        out[key] = max((e[key] for e in libs if e[key]), key=version_key, default=None)
    floor_wheel = max((w for w in wheels if w["glibc"]), key=lambda w: version_key(w["glibc"]), default=None)
    out["wheel_glibc"] = floor_wheel["glibc"] if floor_wheel else None
    out["wheel_package"] = floor_wheel["package"] if floor_wheel else None
    out["wheel_package_version"] = floor_wheel["version"] if floor_wheel else None
    out["wheel_tags"] = floor_wheel["tags"] if floor_wheel else []
    src = ("elf:" + top["path"]) if top else ("file:" + floor_wheel["path"]) if floor_wheel else "elf:" + site
    return ok("linkage.%s.abi" % name, out, src, label)


#: Directories whose libraries a framework's Python package loads itself (ctypes) before its compiled module:
#: TensorRT's bindings import the ``tensorrt_libs`` wheel, which opens TensorRT's libraries from its directory
#: (NVIDIA/TensorRT python/packaging/bindings_wheel/tensorrt/__init__.py, libs_wheel), and the wheels that
#: bundle the libraries beside the module open every ``*.so*`` of its own directory.
PRELOADED: Dict[str, Tuple[str, ...]] = {"tensorrt": ("tensorrt_libs", "tensorrt")}


def _preloaded_dirs(host: Host, name: str, value: Mapping[str, Any], module: str) -> List[str]:
    site = str(value.get("path") or "")
    out = []
    for rel in PRELOADED.get(name, ()):
        d = posixpath.join(site, rel)
        if d == posixpath.dirname(module) and not any(n.startswith("lib") and ".so" in n
                                                      for n in host.list_dir(d).names()):
            continue  # the module's own directory holds no library of its own
        if host.is_dir(d):
            out.append(d)
    return out


def _dlopened(name: str, value: Dict[str, Any]) -> List[str]:
    """Sonames a framework opens with dlopen (not in NEEDED): TensorFlow and JAX load cuDNN that way."""
    major = None
    if name in ("tensorflow", "jax"):
        cudnn = value.get("cudnn")
        if isinstance(cudnn, str) and cudnn.split(".")[0].isdigit():
            major = cudnn.split(".")[0]
    return ["libcudnn.so.%s" % major] if major else []


def resolve_linkage(host: Host, lib_path: str, needed: Sequence[str], rpath: Sequence[str],
                    runpath: Sequence[str], ldp: Sequence[str],
                    cache: List[Tuple[str, str, str]], extra: Sequence[str] = (),
                    pattern: re.Pattern[str] = CUDA_SONAME) -> List[Dict[str, Any]]:
    """Resolve each CUDA soname of a library (``needed`` matching ``pattern``, plus ``extra`` dlopened ones)."""
    lib_dir = posixpath.dirname(lib_path)
    rp, rn = own_search_paths(rpath, runpath, lib_dir)
    own = rp + rn
    out = []
    sonames = [(s, "NEEDED") for s in needed if pattern.match(s)]
    sonames += [(s, "dlopen") for s in extra if s not in needed]
    for soname, how in sonames:
        res = resolve_soname(host, soname, runpath=rn, ld_library_path=ldp, cache=cache, rpath=rp)
        expected = None
        for d in own:
            if soname in host.list_dir(d).names():
                expected = posixpath.join(d, soname)
                break
        exp_real = host.resolve(expected) if expected else None
        entry = {
            "soname": soname, "how": how, "path": res["path"], "resolved": res["resolved"], "via": res["via"],
            "version": res["version"], "expected": expected,
            "shadowed": bool(expected and res["resolved"] and res["resolved"] != exp_real),
            "others": res["others"],
        }
        foreign = foreign_cudnn_parts(host, entry, ldp, cache)
        if foreign:
            entry["foreign_parts"] = foreign
        need = glibc_need(host, res["resolved"] or res["path"])
        if need is not None:
            entry["glibc"], entry["glibc_from"] = need
        out.append(entry)
    return out


def glibc_need(host: Host, path: Optional[str]) -> Optional[Tuple[str, str]]:
    """The newest glibc release the library at ``path`` requires a symbol of, and of which glibc library
    (``("2.27", "libm.so.6")``); None when its version needs are not known or name no glibc release."""
    if not path:
        return None
    res = host.elf(path)
    if not res.ok or not res.verneed:
        return None
    return highest_needed(res.verneed, "GLIBC")


#: cuDNN 9 and later: the front library dlopens its sub-libraries (libcudnn_graph, _engines_*, _ops, _cnn,
#: _adv, _heuristic) by bare soname at run time (cuDNN 9 release notes, "cuDNN library organization").
CUDNN_MAIN = lazyre.compile(r"^libcudnn\.so\.(\d+)$")


def foreign_cudnn_parts(host: Host, entry: Mapping[str, Any], ldp: Sequence[str],
                        cache: List[Tuple[str, str, str]]) -> List[Dict[str, Any]]:
    """The cuDNN sub-libraries the framework's own cuDNN (9+) lacks that the loader would take from another
    cuDNN copy: names found beside the other copies, absent from the own copy's directory, resolved from there
    (its RUNPATH ``$ORIGIN`` first, then LD_LIBRARY_PATH, the ld.so cache and the default directories)."""
    m = CUDNN_MAIN.match(str(entry.get("soname") or ""))
    own = entry.get("resolved") if entry.get("resolved") and not entry.get("shadowed") else None
    if m is None or int(m.group(1)) < 9 or not own or not entry.get("others"):
        return []
    part = re.compile(r"^libcudnn_[a-z0-9_]+\.so\.%s$" % m.group(1))
    own_dir = posixpath.dirname(str(entry.get("path") or own))
    have = set(host.list_dir(own_dir).names())
    wanted: set = set()
    for other in entry["others"]:
        if isinstance(other, dict) and other.get("path"):
            wanted.update(n for n in host.list_dir(posixpath.dirname(str(other["path"]))).names() if part.match(n))
    out = []
    for name in sorted(wanted - have):
        res = resolve_soname(host, name, runpath=[own_dir], ld_library_path=list(ldp), cache=cache)
        if res["path"]:
            out.append({"soname": name, "path": res["path"], "resolved": res["resolved"], "via": res["via"],
                        "version": res["version"]})
    return out


#: Each framework's extension packages whose compiled modules are checked wherever they link (its plug-in's
#: ``extension_packages``): framework -> distribution -> (directory relative to site-packages, regex of its modules).
EXTENSION_PACKAGES: Dict[str, Dict[str, Tuple[str, str]]] = {
    f.name: {dist: (rel, rx) for dist, rel, rx in f.extension_packages} for f in frameworks.FRAMEWORKS}
#: A framework's own libraries, which an extension module needs by soname (found because the framework loaded
#: them), the directories (relative to site-packages) that hold them, and the mangled C++ names of its namespaces
#: an extension built against one release imports from it (each plug-in's ``extension_*``).
FRAMEWORK_LIB = {f.name: lazyre.compile(f.extension_libs) for f in frameworks.FRAMEWORKS if f.extension_libs}
FRAMEWORK_DIRS = {f.name: f.extension_dirs for f in frameworks.FRAMEWORKS if f.extension_libs}
FRAMEWORK_SYMBOL = {f.name: lazyre.compile(f.extension_symbols) for f in frameworks.FRAMEWORKS if f.extension_symbols}
#: The most extension modules whose symbols are looked up in one run.
MAX_EXTENSION_FILES = 64


def extension_files(host: Host, site: str, dists: Sequence[Distribution], dependents: Sequence[str],
                    framework: str = "torch") -> List[Tuple[Distribution, str]]:
    """The compiled modules of the packages built on ``framework`` in ``site``: those of :data:`EXTENSION_PACKAGES`
    found where each keeps them, and of every other package that requires the framework (``Requires-Dist``),
    listed by its ``RECORD``."""
    by_key = {d.key: d for d in dists if d.location == site}
    known = EXTENSION_PACKAGES.get(framework, {})
    out: List[Tuple[Distribution, str]] = []
    for key, (rel, pattern) in known.items():
        if key in by_key:
            out += [(by_key[key], p) for p in host.glob_dir(posixpath.normpath(posixpath.join(site, rel)), pattern)]
    for key in dependents:
        d = by_key.get(key)
        if d is None or key in known or not d.metadata_dir.endswith(".dist-info"):
            continue
        out += [(d, posixpath.normpath(posixpath.join(site, entry.path)))
                for entry in read_record(host, d.metadata_dir).shared_objects]
    out += legacy_extension_files(host, site, dists, set(known) | set(dependents))
    seen: Set[str] = set()
    unique: List[Tuple[Distribution, str]] = []
    for d, path in out:
        if path not in seen:
            seen.add(path)
            unique.append((d, path))
    return unique[:MAX_EXTENSION_FILES]


#: The most legacy installs looked at in one run (their compiled modules: :func:`staticcuda.unrecorded_modules`).
MAX_LEGACY_DISTS = 32


def legacy_extension_files(host: Host, site: str, dists: Sequence[Distribution], skip: Iterable[str]
                           ) -> List[Tuple[Distribution, str]]:
    """The compiled modules of packages installed without a wheel's ``RECORD``, which declare no requirement a
    ``pip check`` could read (apex, and any project built with ``python setup.py install``): an ``.egg-info`` folder
    in ``site`` and every ``.egg`` directory beside it (setuptools' ``setup.py install`` puts the package and its
    extension modules in ``<name>-<version>-pyX.Y-<platform>.egg/`` with ``EGG-INFO/``:
    https://setuptools.pypa.io/en/latest/deprecated/python_eggs.html, checked 2026-11-30), each read by
    :func:`staticcuda.unrecorded_modules`. The caller keeps only those that link the framework's libraries."""
    out: List[Tuple[Distribution, str]] = []
    skip = set(skip)
    looked = 0
    for d in dists:
        if d.location != site or d.key in skip or not d.metadata_dir.endswith(".egg-info"):
            continue
        looked += 1
        if looked > MAX_LEGACY_DISTS:
            return out
        out += [(d, p) for p in unrecorded_modules(host, d) or []]
    for name in sorted(host.list_dir(site).names()):
        if not name.endswith(".egg"):
            continue
        egg = posixpath.join(site, name)
        # <name>-<version>-py<X.Y>[-<platform>].egg, hyphens in the name and version escaped to underscores
        parts = name[:-len(".egg")].split("-")
        if len(parts) < 2 or not parts[0] or not parts[1] or normalize_name(parts[0]) in skip:
            continue
        parsed = (parts[0], parts[1])
        looked += 1
        if looked > MAX_LEGACY_DISTS:
            return out
        dist = Distribution(parsed[0], parsed[1], posixpath.join(egg, "EGG-INFO"), egg)
        out += [(dist, p) for p in unrecorded_modules(host, dist) or []]
    return out


#: A CUDA build named in a module's file name or in its directory (``_cuda_cu118.cpython-312-...so``, ``cu128/_C.so``):
#: ``cu`` and the major and minor digits, not part of a longer word or number.
_CUDA_TAG = lazyre.compile(r"(?<![0-9A-Za-z])cu(\d{2})(\d)(?![0-9])|(?<![0-9A-Za-z])cu(\d)(\d)(?![0-9])")


def _cuda_tag(text: str) -> Optional[Tuple[str, str, str]]:
    """(text with the tag blanked, major, minor) of the one CUDA tag in ``text``; None without exactly one.
    ``cu118`` is 11.8, ``cu128`` 12.8, ``cu92`` 9.2 (PyTorch's own naming of its CUDA builds)."""
    found = list(_CUDA_TAG.finditer(text))
    if len(found) != 1:
        return None
    m = found[0]
    major, minor = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return text[:m.start()] + "{cu}" + text[m.end():], str(int(major)), minor


def _variant_of(path: str) -> Optional[Tuple[str, str, str]]:
    """(group key, CUDA major, minor) of a module that is one of a package's per-CUDA variants: the tag in the
    module's name before its first dot (``fussim/_cuda_cu126.cpython-312-x86_64-linux-gnu.so``) or as the name of
    its directory (``pkg/cu128/_C.so``)."""
    d, base = posixpath.split(path)
    module, dot, rest = base.partition(".")
    tag = _cuda_tag(module)
    if tag is not None:
        return posixpath.join(d, tag[0] + dot + rest), tag[1], tag[2]
    parent, leaf = posixpath.split(d)
    tag = _cuda_tag(leaf)
    if tag is not None and tag[0] == "{cu}":
        return posixpath.join(parent, "{cu}", base), tag[1], tag[2]
    return None


def variant_modules_not_loaded(paths: Sequence[str], cuda: Any, broken: Mapping[str, Any]) -> List[str]:
    """Of the modules at ``paths``, the per-CUDA variants that importing their package does not load. A package that
    ships one module per CUDA build beside each other picks one at import: the one for the framework's CUDA
    (fussim 0.3.10's ``_detect_cuda_variant`` takes ``cu{major}{minor}`` of ``torch.version.cuda``), else it tries
    them in turn and keeps the first that imports. So with a variant for the framework's CUDA major.minor only that
    one is judged; without one, the group fails only when every variant fails (``broken``: the paths that cannot
    load), and otherwise none of it is judged. A group is two or more modules whose paths differ only in the tag."""
    want = str(cuda or "").split(".")
    groups: Dict[str, List[Tuple[str, str, str]]] = {}
    for path in paths:
        v = _variant_of(path)
        if v is not None:
            groups.setdefault(v[0], []).append((path, v[1], v[2]))
    out: List[str] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        chosen = [p for p, major, minor in members if want[:2] == [major, minor]]
        if chosen:
            out += [p for p, _, _ in members if p not in chosen]
        elif any(p not in broken for p, _, _ in members):
            out += [p for p, _, _ in members]
    return out


def framework_wheel_sonames(host: Host, site: str) -> List[str]:
    """The CUDA libraries of the nvidia-* wheels beside a CUDA build of PyTorch (``<site>/nvidia/<lib>/lib/``):
    importing torch loads them (torch/__init__.py ``_load_global_deps``, and ``_preload_cuda_deps`` when that
    fails), so a module imported after torch finds them by soname whatever its own search path."""
    from . import loader

    root = posixpath.join(site, "nvidia")
    out: List[str] = []
    for sub in host.list_dir(root).names():
        for name in host.list_dir(posixpath.join(root, sub, "lib")).names():
            if CUDA_SONAME.match(name) or loader.CUDA_FAMILY.match(name):
                out.append(name)
    return sorted(set(out))


def extension_linkage(host: Host, torch: Mapping[str, Any], config: Any, dists: Sequence[Distribution],
                      dependents: Sequence[str], framework: str = "torch"
                      ) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """What a framework's extension modules need that nothing provides, modelled as one process that imported the
    framework first (its libraries then satisfy the extensions' needs by soname, as ld.so matches loaded objects):

    * ``[{package, version, path, soname}]``: a CUDA library, or one of the framework's own libraries that this
      build does not have (``libc10_cuda.so`` in a CPU-only torch: the extension is a CUDA build), which the loader
      cannot find;
    * ``[{package, version, path, missing, checked}]``: C++ symbols of the framework (c10::, at::, torch::;
      tensorflow::) an extension imports and none of the framework's libraries exports: built against another
      release, it fails to import with "undefined symbol"."""
    from . import loader

    site = str(torch.get("path") or "")
    lib_rx = FRAMEWORK_LIB[framework]
    own = [posixpath.join(site, rel, n) for rel in FRAMEWORK_DIRS[framework]
           for n in host.list_dir(posixpath.join(site, rel)).names() if lib_rx.match(n)]
    # the known packages' modules, and of the others those that link the framework's libraries (not the copies of
    # other libraries a wheel vendors)
    # (a legacy install's module that links a CUDA library is kept too: extensions built by torch's cpp_extension
    # before 1.1 link no torch library on Linux, only the CUDA runtime, and such installs declare no requirement)
    files = [(d, p) for d, p in extension_files(host, site, dists, dependents, framework)
             if d.key in EXTENSION_PACKAGES.get(framework, {}) or any(lib_rx.match(n) for n in host.elf(p).needed)
             or (d.metadata_dir.endswith((".egg-info", "EGG-INFO"))
                 and any(CUDA_SONAME.match(n) for n in host.elf(p).needed))]
    files = [(d, p) for d, p in files if p not in own]
    if not files:
        return [], []
    # the framework's libraries and the extensions, their needs resolved (and so in the process), not followed;
    # opened by the interpreter whose site-packages this is (its RPATH counts: conda's python has $ORIGIN/../lib)
    python = host.python()
    prefix = str(python.prefix or "").rstrip("/")
    main = python.executable if python.executable and prefix and site.startswith(prefix + "/") else None
    graph = loader.load(host, config, own + [p for _, p in files], descend=lambda soname: False, main=main)
    objects = graph["objects"]
    index = {o["path"]: o["index"] for o in objects}
    owner = {p: d for d, p in files}
    have_libs = {posixpath.basename(p) for p in own}
    # (a torch that requires nvidia-* wheels: older ones carry their CUDA libraries in torch/lib)
    preloaded = set(framework_wheel_sonames(host, site)) if framework == "torch" and torch.get("build") == "cuda" \
        and torch.get("nvidia_wheels") else set()
    missing_libs: List[Dict[str, Any]] = []
    broken: Dict[str, List[str]] = {}
    where: Optional[List[str]] = None
    for link in graph["links"]:
        req = objects[link["from"]]["path"] if link.get("from") is not None else None
        if req not in owner or link.get("path") or not link.get("certain", True):
            continue
        soname = str(link.get("soname"))
        framework_lib = bool(lib_rx.match(soname))
        if framework_lib and (soname in have_libs or not have_libs):
            continue  # the framework has it (its ELF could not be read to match it): not judged
        if not framework_lib and not (CUDA_SONAME.match(soname) or loader.CUDA_FAMILY.match(soname)):
            continue
        if not framework_lib and soname in preloaded:
            continue  # torch loaded it from its nvidia-* wheel
        d = owner[req]
        broken.setdefault(req, []).append(soname)
        entry = {"package": d.key, "version": d.version, "path": req, "soname": soname,
                 "framework_lib": framework_lib}
        if not framework_lib:
            # copies of that soname where the loader does not look (a toolkit's lib64 left off LD_LIBRARY_PATH)
            if where is None:
                where = loader.elsewhere_dirs(host, [req])
            searched = set(config.ld_library_path)
            copies: Dict[str, str] = {}
            for w in where:
                if w not in searched and soname in host.list_dir(w).names():
                    copies.setdefault(host.resolve(posixpath.join(w, soname)), posixpath.join(w, soname))
            entry["elsewhere"] = list(copies.values())  # one path per real file
        missing_libs.append(entry)
    idle = set(variant_modules_not_loaded([p for _, p in files], torch.get("cuda"), broken))
    missing_libs = [e for e in missing_libs if e["path"] not in idle]
    symbols: List[Dict[str, Any]] = []
    providers = [p for p in own if p in index and not objects[index[p]].get("error")]
    if not providers:
        return missing_libs, symbols
    for d, path in files:
        if path in broken or path in idle or path not in index or objects[index[path]].get("error"):
            continue
        res = host.elf_unresolved(path, providers, FRAMEWORK_SYMBOL[framework].pattern)
        if not res.ok:
            continue
        wanted = list(res.missing)
        if wanted:
            symbols.append({"package": d.key, "version": d.version, "path": path, "checked": res.checked,
                            "missing": [m[0] for m in wanted[:20]], "count": len(wanted)})
    return missing_libs, symbols


#: Packages whose wheels were repaired by auditwheel keep the libraries they vendor in ``<distribution>.libs/``
#: beside the package (https://github.com/pypa/auditwheel, "repair": "copies the external shared libraries into
#: the wheel ... <name>.libs"); the CUDA libraries are not vendored (they are left to the machine), so such a
#: library's CUDA needs are met by whatever the loader finds, or by nothing.
VENDORED_SUFFIX = ".libs"
#: The most ``.libs`` directories and libraries in one of them that are read in one run.
MAX_VENDORED_DIRS = 32
MAX_VENDORED_FILES = 16
#: Distributions judged elsewhere: the frameworks' own libraries (their linkage facts).
FRAMEWORK_DISTS = ("torch", "tensorflow", "tensorflow-gpu", "tensorflow-cpu", "intel-tensorflow", "nvidia-tensorflow",
                   "jaxlib", "onnxruntime", "onnxruntime-gpu", "mxnet", "paddlepaddle", "paddlepaddle-gpu")


def package_libraries(host: Host, config: Any, dists: Sequence[Distribution], skip: Sequence[str]
                      ) -> List[Dict[str, Any]]:
    """``linkage.packages``: for each installed package (not a framework, not one requiring a framework: those run
    with the framework loaded and are judged with it) whose ``<name>.libs/`` libraries need CUDA, cuDNN, NCCL or
    TensorRT libraries, those libraries' CUDA closure as the loader resolves it for a program that imports the
    package: ``[{package, version, roots, links, unread, cache_unknown}]``."""
    from . import loader

    by_site: Dict[str, Dict[str, Distribution]] = {}
    for d in dists:
        if d.key in FRAMEWORK_DISTS or d.key in skip or d.key.startswith("nvidia-"):
            continue
        by_site.setdefault(d.location, {}).setdefault(d.key, d)
    out: List[Dict[str, Any]] = []
    dirs = 0
    for site, keyed in by_site.items():
        for entry in host.list_dir(site).names():
            if not entry.endswith(VENDORED_SUFFIX):
                continue
            owner = keyed.get(normalize_name(entry[:-len(VENDORED_SUFFIX)]))
            if owner is None:
                continue
            dirs += 1
            if dirs > MAX_VENDORED_DIRS:
                return out
            libdir = posixpath.join(site, entry)
            roots = []
            for name in sorted(host.list_dir(libdir).names())[:MAX_VENDORED_FILES]:
                if ".so" not in name:
                    continue
                elf = host.elf(posixpath.join(libdir, name))
                if elf.ok and (any(loader.CUDA_FAMILY.match(loader.unvendored(n)) for n in elf.needed)
                               or loader.runtime_loads(elf.path, elf)):
                    roots.append(elf.path)
            if not roots:
                continue
            c = loader.cuda_closure(host, config, roots, only_cuda=True)
            links = [{k: v for k, v in link.items() if k in (
                "soname", "how", "requester", "component", "path", "via", "resolved", "version", "certain",
                "expected", "expected_version", "expected_by", "shadowed", "elsewhere", "other_majors")}
                for link in c["links"] if link.get("via") != "loaded"]
            out.append({"package": owner.key, "version": owner.version, "roots": roots, "links": links,
                        "unread": c["unread"], "cache_unknown": c["cache_unknown"], "site": site})
    return out


#: The most extension modules of installed distributions read in one run, and of one distribution.
MAX_MODULE_FILES = 256
MAX_MODULES_PER_DIST = 32
#: An extension module Python imports (``custatevec.cpython-38-x86_64-linux-gnu.so``, ``_C.abi3.so``, ``_ext.so``):
#: a shared object whose name ends in ``.so``, not a ``lib*`` library a package opens itself (a wheel that ships
#: one library per CUDA release loads only the one that fits, so those are judged only as a module loads them).
_EXTENSION_MODULE = lazyre.compile(r"^(?!lib)[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)?\.so$")
#: What every program loads: glibc's, the compiler's runtime and the interpreter's own (never a CUDA library's way).
_SYSTEM_LIBRARY = lazyre.compile(r"^(?:libc|libm|libdl|librt|libpthread|libutil|libgcc_s|libstdc\+\+|libgomp|"
                                 r"libpython[0-9.]*m?|ld-linux[a-z0-9_-]*)\.so")


def _needed_closure(host: Host, config: Any, roots: List[str], package: str, version: Any,
                    site: str) -> Dict[str, Any]:
    """A ``linkage.packages`` entry: the CUDA libraries ``roots`` link (NEEDED, transitively) as the loader resolves
    them; what a library may open at run time is optional to most of them and left out."""
    from . import loader

    c = loader.cuda_closure(host, config, roots, only_cuda=True)
    links = [{k: v for k, v in link.items() if k in _LINK_KEYS}
             for link in c["links"] if link.get("via") != "loaded" and link.get("how") == "NEEDED"]
    return {"package": package, "version": version, "roots": roots, "links": links, "unread": c["unread"],
            "cache_unknown": c["cache_unknown"], "site": site}


def _links_framework(needed: Sequence[str]) -> bool:
    """Whether NEEDED names one of a framework's own libraries (its extension modules link them)."""
    return any(rx.match(n) for rx in FRAMEWORK_LIB.values() for n in needed)


def _module_needs_cuda(host: Host, path: str, elf: Any) -> bool:
    """An extension module that needs a CUDA, cuDNN, NCCL or TensorRT library itself, or through a library its own
    RPATH/RUNPATH finds that needs one (cuQuantum's ``custatevec`` module and the ``libcustatevec.so.1`` it links,
    which links cuBLAS)."""
    if _needs_cuda(elf):
        return True
    rp, rn = own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(path))
    for name in elf.needed:
        if _SYSTEM_LIBRARY.match(name):
            continue
        for d in rp + rn:
            if name in host.list_dir(d).names():
                if _needs_cuda(host.elf(posixpath.join(d, name))):
                    return True
                break
    return False


def _framework_key(key: str) -> bool:
    """Whether ``key`` (a distribution's normalised name) is one a framework installs: its pattern matches all of
    it, or all but a final newline (as ``^(?:pattern)$`` matches). Through ``re``'s cache of the patterns
    :func:`envdoctor.frameworks.of_distribution` matches with, not a second, anchored compile of each."""
    keys = (key, key[:-1]) if key.endswith("\n") else (key,)
    return any(re.fullmatch(f.distributions, k) for f in frameworks.FRAMEWORKS if f.distributions for k in keys)


def module_libraries(host: Host, config: Any, dists: Sequence[Distribution], skip: Sequence[str],
                     done: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """``linkage.packages`` entries for installed distributions (not a framework, not one requiring a framework,
    not NVIDIA's library wheels, not one in ``done``) whose extension modules, as their RECORD lists them, need a
    CUDA, cuDNN, NCCL or TensorRT library, themselves or through a library of their own RPATH/RUNPATH: the CUDA
    libraries those modules load (NEEDED, transitively) as the loader resolves them on import. A wheel that takes
    its CUDA libraries from NVIDIA's wheels through ``$ORIGIN`` paths resolves them there; one built for a CUDA
    release the machine lacks resolves nothing (cuquantum's ``libcustatevec.so.1`` needs ``libcublas.so.11``)."""

    out: List[Dict[str, Any]] = []
    read = 0
    seen: Set[str] = set()
    for d in dists:
        if (d.key in FRAMEWORK_DISTS or d.key in skip or d.key in done or d.key.startswith("nvidia-")
                or d.key in seen or _framework_key(d.key) or not d.metadata_dir.endswith(".dist-info")):
            continue
        seen.add(d.key)
        record = read_record(host, d.metadata_dir)
        modules = [e.path for e in record.shared_objects
                   if _EXTENSION_MODULE.match(posixpath.basename(e.path))][:MAX_MODULES_PER_DIST]
        roots = []
        for rel in modules:
            if read >= MAX_MODULE_FILES:
                break
            read += 1
            path = posixpath.join(d.location, rel)
            elf = host.elf(path)
            # a module that links a framework's own libraries (libc10.so, libtorch_cuda.so ...) is that framework's
            # extension, imported after it: the CUDA libraries the framework loaded serve it, and
            # extension_linkage judges it so (sgl-kernel declares no requirement on torch)
            if elf.ok and not _links_framework(elf.needed) and _module_needs_cuda(host, path, elf):
                roots.append(elf.path)
        if not roots:
            continue
        out.append(_needed_closure(host, config, roots, d.key, d.version, d.location))
    return out


#: ONNX Runtime loads an execution provider library (``libonnxruntime_providers_cuda.so``...) with dlopen by its full
#: path, from the directory of the ONNX Runtime library itself (provider_bridge_ort.cc ``ProviderLibrary``:
#: ``Env::Default().GetRuntimePath() + filename``; posix/env.cc ``GetRuntimePath`` is the folder ``dladdr`` names for
#: libonnxruntime.so), whichever package ships the pair; the loader then resolves the provider's NEEDED by its
#: rules. No extension module names the provider among its NEEDED, so a package's module linkage never reaches it.
ORT_BRIDGE_URL = ("https://github.com/microsoft/onnxruntime/blob/v1.17.1/onnxruntime/core/session/"
                  "provider_bridge_ort.cc")
#: The most provider libraries of one distribution read, folders of a package without a RECORD listed, and such
#: folders listed in one run.
MAX_PROVIDER_FILES = 8
MAX_PROVIDER_DIRS = 16
MAX_PROVIDER_DIRS_IN_ALL = 256
#: The release of a bundled ONNX Runtime, from its library's file name (``libonnxruntime.so.1.17.1``).
_ORT_LIBRARY = lazyre.compile(r"^libonnxruntime\.so\.(\d+\.\d+\.\d+)$")


def _provider_files(host: Host, d: Distribution, budget: List[int]) -> List[str]:
    """The ONNX Runtime execution provider libraries a distribution installed: those its RECORD lists (at any
    depth); without a RECORD, those in its package folders (``top_level.txt``'s names, else the one its own name
    names, as the wheel spec escapes it) and their sub-folders one level down (sherpa-onnx's ``sherpa_onnx/lib``)."""
    record = read_record(host, d.metadata_dir) if d.metadata_dir.endswith(".dist-info") else None
    if record is not None and record.ok:
        return [posixpath.join(d.location, e.path) for e in record.shared_objects
                if ORT_PROVIDERS.match(posixpath.basename(e.path))][:MAX_PROVIDER_FILES]
    names = (host.read_text(posixpath.join(d.metadata_dir, "top_level.txt"), limit=64 * 1024) or "").split()
    names = names or [re.sub(r"[-.]+", "_", d.name)]
    out: List[str] = []
    dirs = 0
    # budget[0]: the folders still to be listed in this run (shared by every distribution without a RECORD)
    for name in names[:MAX_PROVIDER_DIRS]:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            continue
        todo = [(posixpath.join(d.location, name), 0)]
        while todo and dirs < MAX_PROVIDER_DIRS and budget[0] > 0:
            folder, depth = todo.pop(0)
            dirs += 1
            budget[0] -= 1
            for n in sorted(host.list_dir(folder).names()):
                path = posixpath.join(folder, n)
                if ORT_PROVIDERS.match(n):
                    out.append(path)
                elif depth < 1 and n != "__pycache__" and "." not in n and host.is_dir(path):
                    todo.append((path, depth + 1))
    return out[:MAX_PROVIDER_FILES]


def ort_provider_libraries(host: Host, config: Any, dists: Sequence[Distribution],
                           requires: Mapping[str, Sequence[str]]) -> List[Dict[str, Any]]:
    """``linkage.packages`` entries for installed distributions other than ONNX Runtime's own packages (and NVIDIA's
    library wheels) that ship ONNX Runtime's execution provider libraries beside a bundled ONNX Runtime (sherpa-onnx's
    ``sherpa_onnx/lib/libonnxruntime_providers_cuda.so``): the CUDA libraries those providers link (NEEDED,
    transitively) as the loader resolves them when ONNX Runtime opens them, as ONNX Runtime's own providers are
    (``linkage.onnxruntime.closure``). ``optional``: the providers other than CUDA's (a session asks for TensorRT's);
    ``dlopened``: every provider (opened only when a session asks for it); ``requires``: the frameworks the
    distribution declares (``requires`` maps a distribution to them); ``label`` names the bundled release."""
    out: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    budget = [MAX_PROVIDER_DIRS_IN_ALL]
    for d in dists:
        if (d.key in FRAMEWORK_DISTS or d.key.startswith("nvidia-") or d.key in seen or _framework_key(d.key)):
            continue
        seen.add(d.key)
        roots = [p for p in _provider_files(host, d, budget) if host.elf(p).ok]
        if not roots:
            continue
        entry = _needed_closure(host, config, roots, d.key, d.version, d.location)
        if not entry["links"]:
            continue
        release = None
        for folder in sorted({posixpath.dirname(p) for p in roots}):
            for n in host.list_dir(folder).names():
                m = _ORT_LIBRARY.match(n)
                if m:
                    release = m.group(1)
        entry.update(
            label="%s %s's ONNX Runtime%s" % (d.key, d.version, " %s" % release if release else ""),
            optional=[p for p in roots if posixpath.basename(p) != "libonnxruntime_providers_cuda.so"],
            dlopened=list(roots), requires=sorted(requires.get(d.key, ())), source=ORT_BRIDGE_URL)
        out.append(entry)
    return out


def _needs_cuda(elf: Any) -> bool:
    """An ELF object (read) that names a CUDA, cuDNN, NCCL or TensorRT library among its NEEDED."""
    from . import loader

    return bool(elf.ok) and any(loader.CUDA_FAMILY.match(loader.unvendored(n)) for n in elf.needed)


def conda_package_libraries(host: Host, config: Any) -> List[Dict[str, Any]]:
    """``linkage.packages`` entries for conda packages that are not NVIDIA's own (OpenMM's CUDA plug-in, a
    conda-built program's libraries): the libraries each package's conda-meta record lists that need a CUDA,
    cuDNN, NCCL or TensorRT library, with their CUDA closure as the loader resolves it (their RPATH/RUNPATH into
    the prefix's ``lib``, LD_LIBRARY_PATH, the cache)."""
    from . import loader
    from .programs import MAX_FILES, conda_libraries

    out: List[Dict[str, Any]] = []
    opened = 0
    for prefix, package, version, libs in conda_libraries(host):
        roots = []
        for path in libs:
            if opened >= MAX_FILES:
                break
            opened += 1
            elf = host.elf(path)
            if _needs_cuda(elf):
                roots.append(elf.path)
        if not roots:
            continue
        c = loader.cuda_closure(host, config, roots, only_cuda=True)
        links = [{k: v for k, v in link.items() if k in (
            "soname", "how", "requester", "component", "path", "via", "resolved", "version", "certain",
            "expected", "expected_version", "expected_by", "shadowed", "elsewhere", "other_majors")}
            for link in c["links"] if link.get("via") != "loaded"]
        out.append({"package": package, "version": version, "roots": roots, "links": links,
                    "unread": c["unread"], "cache_unknown": c["cache_unknown"], "site": prefix})
    return out


_LINK_KEYS = ("soname", "how", "requester", "component", "path", "via", "resolved", "version", "certain",
              "expected", "expected_version", "expected_by", "shadowed", "elsewhere", "other_majors")


def _absent_everywhere(link: Mapping[str, Any], own: Iterable[str]) -> bool:
    """A NEEDED CUDA library no search path of the loader has, of which no copy lies anywhere looked (the usual
    places, the software's own library folders): no program's paths or launcher can supply it."""
    return (link.get("how") == "NEEDED" and not link.get("path") and bool(link.get("certain", True))
            and not link.get("elsewhere") and str(link.get("soname")) not in own)


def program_libraries(host: Host, config: Any) -> List[Dict[str, Any]]:
    """``linkage.packages`` entries for software installed whole outside the distribution's packages (a vendor's
    SDK in ``/opt/<name>`` or ``/usr/local/<name>``, a release unpacked with its ``bin`` on PATH): the programs of
    its ``bin`` and ``tools`` that need a CUDA, cuDNN, NCCL or TensorRT library, with their CUDA closure as the
    loader resolves it for them (their own RPATH/RUNPATH, LD_LIBRARY_PATH, the cache). ``label`` names the folder.

    Its libraries (``lib``, ``lib64`` and the module folders below them: an interpreter's ``lib/lua/5.1/*.so``)
    are loaded by its programs with their paths, or a launcher's, not alone: of their links only a NEEDED CUDA
    library that no copy anywhere can supply is kept (the build links a CUDA release no longer installed), each
    loaded as its program would load it (the program's RPATH counts). An application's engine backend (Jan's
    llama.cpp backends: :func:`envdoctor.probes.programs.backend_roots`; ``backend`` true) is all libraries of that
    kind, its programs included, whichever folder holds them: its engine loads them with the paths it sets."""
    from . import loader
    from .programs import MAX_FILES, backend_roots, module_libraries, program_roots, root_name

    out: List[Dict[str, Any]] = []
    opened = 0
    backends = {root: name for root, name, _files in backend_roots(host)}
    for root, files in program_roots(host) + [(root, files) for root, _name, files in backend_roots(host)]:
        roots: List[str] = []
        main: Optional[str] = None
        backend = backends.get(root)
        for path in [f for f in files if posixpath.basename(posixpath.dirname(f)) in ("bin", "tools")]:
            if opened >= MAX_FILES:
                break
            opened += 1
            elf = host.elf(path)
            if elf.ok and main is None and not elf.soname:
                main = elf.path
            if _needs_cuda(elf) and backend is None:
                roots.append(elf.path)
        libs: List[str] = []
        if backend is not None:
            # an application's engine backend: its libraries are loaded by the application's engine, with the paths
            # it sets (the backend's folder, its own CUDA libraries' folder), not alone
            lib_files = [f for f in files if posixpath.basename(posixpath.dirname(f)) not in ("bin", "tools")
                         or SHARED_OBJECT.search(posixpath.basename(f))]
        else:
            lib_files = [f for f in files if posixpath.basename(posixpath.dirname(f)) in ("lib", "lib64")]
            lib_files += module_libraries(host, root)
        for path in lib_files:
            if opened >= MAX_FILES:
                break
            opened += 1
            elf = host.elf(path)
            if _needs_cuda(elf):
                libs.append(elf.path)
        links: List[Dict[str, Any]] = []
        unread: List[Any] = []
        cache_unknown = None
        if roots:
            c = loader.cuda_closure(host, config, roots, only_cuda=True)
            links = [{k: v for k, v in link.items() if k in _LINK_KEYS}
                     for link in c["links"] if link.get("via") != "loaded"]
            unread, cache_unknown = list(c["unread"]), c["cache_unknown"]
        if libs:
            own = {posixpath.basename(f) for f in lib_files}
            c = loader.cuda_closure(host, config, libs, main=main, only_cuda=True)
            links += [dict({k: v for k, v in link.items() if k in _LINK_KEYS}, built_against=backend is None)
                      for link in c["links"] if link.get("via") != "loaded" and _absent_everywhere(link, own)]
            cache_unknown = cache_unknown or c["cache_unknown"]
        if not links and not roots:
            continue
        out.append({"package": backend or root_name(root), "version": None,
                    "label": "%s in %s" % (backend, root) if backend else "the software in %s" % root,
                    "roots": roots + [p for p in libs if any(link.get("requester") == p for link in links)],
                    "backend": backend is not None,
                    "links": links, "unread": unread, "cache_unknown": cache_unknown, "site": root})
    return out


#: The sonames of TensorRT's main library by major (5 to 10): the loader's copy of each is a TensorRT it reaches.
_NVINFER_SONAMES = tuple("libnvinfer.so.%d" % major for major in range(5, 11))
#: The most TensorRT folders and libraries in one of them read in one run.
MAX_TENSORRT_DIRS = 4
MAX_TENSORRT_FILES = 24


def system_tensorrt(host: Host, config: Any, ldp: Sequence[str], cache: List[Tuple[str, str, str]],
                    sites: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """``linkage.packages`` entries for each TensorRT installed outside Python that the loader reaches (a release
    tarball's ``lib`` on LD_LIBRARY_PATH, the distribution's ``libnvinfer`` packages in the cache): the CUDA, cuDNN
    and TensorRT libraries its libraries link (NEEDED, transitively) as the loader resolves them. Every program
    that uses TensorRT loads its libraries this way (trtexec and the Python bindings open ``libnvinfer_plugin``);
    what TensorRT opens itself at run time (cuBLAS, cuDNN as tactic sources) is optional to it and left out.
    Folders below a Python site directory (the wheels: the framework's checks) and those of ``sites`` (software
    judged whole, with its programs) are left out."""
    from . import loader

    dirs: List[Tuple[str, Any]] = []
    for soname in _NVINFER_SONAMES:
        res = resolve_soname(host, soname, ld_library_path=ldp, cache=cache)
        if not res.get("path"):
            continue
        real = str(res.get("resolved") or res["path"])
        d = posixpath.dirname(str(res["path"]))
        parts = d.split("/")
        if ("site-packages" in parts or "dist-packages" in parts or posixpath.dirname(d) in sites
                or any(d == x for x, _ in dirs)):
            continue
        dirs.append((d, loader.version_from_name(posixpath.basename(real))))
    out: List[Dict[str, Any]] = []
    for d, version in dirs[:MAX_TENSORRT_DIRS]:
        roots: List[str] = []
        reals: Set[str] = set()
        names = [n for n in sorted(host.list_dir(d).names()) if loader.CUDA_FAMILY.match(n)
                 and loader.component(n) == "tensorrt"]
        for name in names[:MAX_TENSORRT_FILES]:
            real = host.resolve(posixpath.join(d, name))
            if real in reals:
                continue
            reals.add(real)
            elf = host.elf(real)
            if _needs_cuda(elf):
                roots.append(elf.path)
        if not roots:
            continue
        entry = _needed_closure(host, config, roots, "tensorrt", version, d)
        label = "TensorRT %s in %s" % (version, d) if version else "the TensorRT in %s" % d
        out.append({"package": "tensorrt", "version": version, "label": label,
                    **{k: v for k, v in entry.items() if k not in ("package", "version")}})
    return out


#: cuTensorNet's and cuTENSOR's release, from their headers' version macros.
_CUTENSORNET_MACROS = ("CUTENSORNET_MAJOR", "CUTENSORNET_MINOR", "CUTENSORNET_PATCH")
_CUTENSOR_MACROS = ("CUTENSOR_MAJOR", "CUTENSOR_MINOR", "CUTENSOR_PATCH")
HEADER_LIMIT = 256 * 1024


def _header_version(host: Host, lib_dir: str, header: str, macros: Sequence[str]) -> Tuple[Optional[str], str]:
    """The release a library's own header names: ``include/<header>`` of the folder holding its ``lib`` (an archive:
    ``<root>/lib/libX.so`` or ``<root>/lib/11/libX.so`` beside ``<root>/include``); (None, "") when none is read."""
    from .libraries import parse_header_version

    d = lib_dir
    for _ in range(3):
        d = posixpath.dirname(d)
        path = posixpath.join(d, "include", header)
        if header in host.list_dir(posixpath.join(d, "include")).names():
            version = parse_header_version(host.read_text(path, limit=HEADER_LIMIT) or "", macros)
            return (version, path) if version else (None, "")
    return None, ""


def cutensornet_installs(host: Host, ldp: Sequence[str], cache: List[Tuple[str, str, str]],
                         dists: Sequence[Distribution]) -> List[Dict[str, Any]]:
    """``linkage.cutensornet``: each cuTensorNet a program here loads (the loader's ``libcutensornet.so.N``, the
    one in ``$CUQUANTUM_ROOT/lib``, a cuquantum wheel's ``cuquantum/lib``) whose release its header names, with the
    cuTENSOR its ``libcutensor.so.N`` resolves to for it (its own RUNPATH, LD_LIBRARY_PATH, the cache) and that
    cuTENSOR's release: ``[{path, version, header, cutensor: {soname, path, resolved, via, version, header}}]``."""
    candidates: List[str] = []
    for soname in ("libcutensornet.so.1", "libcutensornet.so.2"):
        res = resolve_soname(host, soname, ld_library_path=ldp, cache=cache)
        if res.get("path"):
            candidates.append(str(res["path"]))
    root = host.getenv("CUQUANTUM_ROOT")
    dirs = [posixpath.join(root, sub) for sub in ("lib", "lib64")] if root and root.startswith("/") else []
    dirs += [posixpath.join(d.location, "cuquantum", "lib") for d in dists if d.key.startswith("cuquantum")]
    for d in dirs:
        for name in sorted(host.list_dir(d).names()):
            if re.match(r"^libcutensornet\.so\.\d+$", name):
                candidates.append(posixpath.join(d, name))
    out: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    for path in candidates[:8]:
        real = host.resolve(path)
        if real in seen:
            continue
        seen.add(real)
        version, header = _header_version(host, posixpath.dirname(path), "cutensornet.h", _CUTENSORNET_MACROS)
        elf = host.elf(real)
        if not version or not elf.ok:
            continue
        needed = [n for n in elf.needed if re.match(r"^libcutensor\.so\.\d+$", n)]
        if not needed:
            continue
        rp, rn = own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(path))
        res = resolve_soname(host, needed[0], runpath=rn, ld_library_path=ldp, cache=cache, rpath=rp)
        tensor: Dict[str, Any] = {"soname": needed[0], "path": res.get("path"), "resolved": res.get("resolved"),
                                  "via": res.get("via"), "version": None, "header": None}
        if res.get("path"):
            tensor["version"], tensor["header"] = _header_version(
                host, posixpath.dirname(str(res["path"])), "cutensor.h", _CUTENSOR_MACROS)
        out.append({"path": path, "version": version, "header": header, "cutensor": tensor})
    return out


#: The ONNX Runtime execution provider libraries other than CUDA's are optional to it: a session asks for them.
ORT_PROVIDERS = lazyre.compile(r"^libonnxruntime_providers_(?!shared\.)[a-z0-9_]+\.so$")


def closure_fact(host: Host, name: str, value: Mapping[str, Any], main_path: str, config: Any) -> Optional[Fact]:
    """``linkage.<name>.closure``: the CUDA libraries the framework's libraries load beyond their own direct needs
    (those are ``linkage.<name>``): a CUDA library's own dependencies, what each names for dlopen (cuDNN's
    sub-libraries), and, for ONNX Runtime, every execution provider library (``optional``: TensorRT's...)."""
    from . import loader

    site = str(value.get("path") or "")
    roots = [main_path]
    optional: List[str] = []
    if name == "onnxruntime":
        capi = posixpath.dirname(main_path)
        for p in host.glob_dir(capi, ORT_PROVIDERS.pattern):
            if p != main_path:
                roots.append(p)
                optional.append(p)
    c = loader.cuda_closure(host, config, roots, only_cuda=True)
    links = []
    for link in c["links"]:
        if link.get("via") == "loaded":
            continue  # a soname met by a library already loaded: judged where it was loaded
        if link.get("requester") == main_path and link.get("how") == "NEEDED":
            continue  # linkage.<name>
        links.append({k: v for k, v in link.items() if k in (
            "soname", "how", "requester", "component", "path", "via", "resolved", "version", "certain", "expected",
            "expected_version", "expected_by", "shadowed", "elsewhere", "other_majors")})
    if not links and not c["unread"]:
        return None
    return ok("linkage.%s.closure" % name, {"roots": roots, "optional": optional, "links": links,
                                           "unread": c["unread"], "cache_unknown": c["cache_unknown"],
                                           "site": site},
              "elf:" + main_path, "CUDA libraries %s's libraries load in turn" % name)


@register("linkage", "Framework library linkage", order=95,
          produces=("linkage.*", "linkage.*.elf", "linkage.*.abi", "linkage.*.extensions", "linkage.*.closure",
                    "linkage.*.extension_symbols", "linkage.packages", "linkage.cutensornet"),
          needs=("frameworks", "requires"))
def probe_linkage(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    fw = ctx.facts_of("frameworks")
    facts: List[Fact] = []
    abi: List[Fact] = []  # linkage.<framework>.abi: every framework with compiled code, whatever its build
    ldp = ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH"))
    cache: Optional[List[Tuple[str, str, str]]] = None
    cache_why: Optional[str] = None  # why the loader cache could not be read, when it could not
    dists: Optional[List[Distribution]] = None
    for name in ABI_LIBRARIES:
        value = fw.value("framework." + name)
        if isinstance(value, dict) and value.get("path"):
            if dists is None:
                dists = host.distributions()
            fact = abi_fact(host, name, value, dists)
            if fact is not None:
                abi.append(fact)
    for name, rels in LIBRARIES.items():
        value = fw.value("framework." + name)
        if not isinstance(value, dict) or not value.get("path"):
            continue
        if name == "onnxruntime" and not value.get("gpu"):
            continue
        if name not in ("onnxruntime", "tensorrt") and value.get("build") not in ("cuda", "unknown"):
            continue  # (TensorRT has no CPU build)
        label = "%s CUDA library" % name
        candidates = [posixpath.join(value["path"], r) for r in rels]
        elf = None
        for path in candidates:
            res = host.elf(path)
            if res.error == "ENOENT":
                continue
            elf = res
            break
        if elf is None:
            facts.append(unknown("linkage.%s.elf" % name, "none of %s exists" % ", ".join(candidates),
                                 "elf:" + candidates[0], label))
            continue
        if not elf.ok:
            facts.append(unknown("linkage.%s.elf" % name, "cannot read the ELF headers of %s (%s%s)" % (
                elf.path, elf.error, ": " + elf.message if elf.message else ""), "elf:" + elf.path, label))
            continue
        facts.append(ok("linkage.%s.elf" % name, {"path": elf.path, "needed": list(elf.needed),
                                                  "rpath": list(elf.rpath), "runpath": list(elf.runpath)},
                        "elf:" + elf.path, label))
        if cache is None:
            read, cache_fact = read_ld_cache(host)
            cache = read or []
            cache_why = None if read is not None else cache_fact.reason or "the loader cache could not be read"
        rpath, runpath = list(elf.rpath), list(elf.runpath)
        preload = _preloaded_dirs(host, name, value, elf.path)
        if preload:  # libraries the package opens itself before its module: they are loaded, whatever the paths
            if runpath:
                runpath = preload + runpath
            else:
                rpath = preload + rpath
        entries = resolve_linkage(host, elf.path, elf.needed, rpath, runpath, ldp, cache,
                                  _dlopened(name, value), SONAMES_OF.get(name, CUDA_SONAME))
        if cache_why:
            # "not found" without the cache is "not found outside the cache": the checks say so, not "missing"
            for e in entries:
                if isinstance(e, dict) and not e.get("path"):
                    e["cache_unknown"] = cache_why
        facts.append(ok("linkage." + name, entries, "elf:" + elf.path,
                        "CUDA libraries %s would load" % name))
        config = loader_config(host, ldp, None if cache_why else cache, cache_why or "")
        closure = closure_fact(host, name, value, elf.path, config)
        if closure is not None:
            facts.append(closure)

    for name, label in ((f.name, f.display) for f in frameworks.FRAMEWORKS if f.extension_libs):
        value = fw.value("framework." + name)
        if not (isinstance(value, dict) and value.get("path")):
            continue
        # the framework's extension packages, whatever its build (a CUDA torchvision on a CPU-only torch)
        if cache is None:
            read, cache_fact = read_ld_cache(host)
            cache = read or []
            cache_why = None if read is not None else cache_fact.reason or "the loader cache could not be read"
        if dists is None:
            dists = host.distributions()
        reqs = ctx.facts_of("requires").value("python.requirements")
        dependents = (reqs.get("dependents") or {}).get(name, []) if isinstance(reqs, dict) else []
        if not EXTENSION_PACKAGES.get(name) and not dependents:
            continue
        config = loader_config(host, ldp, None if cache_why else cache, cache_why or "")
        ext, symbols = extension_linkage(host, value, config, dists, dependents, name)
        if ext:
            facts.append(ok("linkage.%s.extensions" % name, ext, "elf:" + ext[0]["path"],
                            "Libraries %s extension packages need" % label))
        if symbols:
            facts.append(ok("linkage.%s.extension_symbols" % name, symbols, "elf:" + symbols[0]["path"],
                            "%s symbols extension modules import that it lacks" % label))
    # packages of their own that bundle CUDA-linked libraries (CTranslate2...): what a program importing them loads
    reqs_value = ctx.facts_of("requires").value("python.requirements")
    deps = reqs_value.get("dependents") if isinstance(reqs_value, dict) else None
    on_frameworks = sorted({k for fw_deps in (deps or {}).values() if isinstance(fw_deps, list) for k in fw_deps})
    if dists is None:
        dists = host.distributions()
    if cache is None:
        read, cache_fact = read_ld_cache(host)
        cache = read or []
        cache_why = None if read is not None else cache_fact.reason or "the loader cache could not be read"
    config = loader_config(host, ldp, None if cache_why else cache, cache_why or "")
    packages = package_libraries(host, config, dists, on_frameworks)
    packages += module_libraries(host, config, dists, on_frameworks, [p["package"] for p in packages])
    required_by: Dict[str, List[str]] = {}
    for fw_name, fw_deps in (deps or {}).items():
        for k in fw_deps if isinstance(fw_deps, list) else []:
            required_by.setdefault(str(k), []).append(str(fw_name))
    packages += ort_provider_libraries(host, config, dists, required_by)
    packages += conda_package_libraries(host, config) + program_libraries(host, config)
    packages += system_tensorrt(host, config, ldp, cache, [str(p.get("site")) for p in packages if p.get("links")])
    tensornet = cutensornet_installs(host, ldp, cache, dists)
    if tensornet:
        facts.append(ok("linkage.cutensornet", tensornet, "elf:" + tensornet[0]["path"],
                        "cuTensorNet and the cuTENSOR it loads"))
    if packages:
        facts.append(ok("linkage.packages", packages, "elf:" + packages[0]["roots"][0],
                        "CUDA libraries other packages' bundled libraries load"))
    if not facts:
        # Say why the section is empty rather than print a bare heading.
        facts.append(ok("linkage.scan", "no framework with a CUDA library is installed, so nothing to resolve",
                        "derived", "Frameworks checked"))
    return facts + abi

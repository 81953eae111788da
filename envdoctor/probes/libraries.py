"""cuDNN, NCCL and TensorRT: every copy, its version, how it was found, and which one the loader picks.

Copies come from library file names (``libcudnn.so.9.1.0``), headers
(``cudnn_version.h``, ``nccl.h``, ``NvInferVersion.h``), the loader cache
(``ldconfig -p``), pip wheels (``nvidia-cudnn-cu12`` and their ``lib/`` dirs)
and distro packages (reused from the cuda probe's ``cuda.packages``).

:func:`resolve_soname` (:mod:`envdoctor.probes.loader`, the one model of ``ld.so``) answers "which file
would ``dlopen("libcudnn.so.9")`` load": ``LD_LIBRARY_PATH`` first, then a ``RUNPATH`` (the checks pass a
framework's), then the ``ld.so`` cache, then the default directories.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.version import InvalidVersion, Version

from .. import lazyre
from ..facts import Fact, ok
from ..host.base import Host
from ..osinfo import LOADER_DIRS
from . import ProbeContext, register
from .cuda import ld_library_path_dirs, upstream_version
from .loader import (  # noqa: F401 - the loader's answers, used here and by the other probes through this module
    default_dirs,
    ldconfig_argv,
    parse_ldconfig,
    read_ld_cache,
    resolve_soname,
    version_from_name,
)

#: The driver's video libraries, by the names programs load them (FFmpeg's nv-codec-headers dlopen libnvcuvid.so.1 and
#: libnvidia-encode.so.1, dynlink_loader.h; the Video Codec SDK's samples link them).
VIDEO_SONAMES = ("libnvcuvid.so.1", "libnvidia-encode.so.1")
#: Other places libraries are commonly unpacked to (not searched by the loader unless configured).
EXTRA_DIRS = ("/usr/local/lib", "/usr/local/lib64", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
              "/usr/local/cuda/targets/sbsa-linux/lib", "/opt/tensorrt/lib", "/usr/local/tensorrt/lib")
INCLUDE_DIRS = ("/usr/include", "/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu",
                "/usr/local/include", "/usr/local/cuda/include")

#: name -> (library stem, header files and their version macros, pip wheels, their lib dir, distro package regex)
LIBRARIES: Dict[str, Dict[str, Any]] = {
    "cudnn": {
        "stem": "libcudnn",
        "headers": (("cudnn_version.h", ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL")),
                    ("cudnn.h", ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"))),
        "wheel": lazyre.compile(r"^nvidia-cudnn(-cu\d+)?$"),
        "wheel_dirs": ("nvidia/cudnn/lib",),
        "package": lazyre.compile(r"^(libcudnn\d+(-cuda-\d+)?|cudnn\d*(-cuda-\d+)?)$"),
    },
    "nccl": {
        "stem": "libnccl",
        "headers": (("nccl.h", ("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH")),),
        "wheel": lazyre.compile(r"^nvidia-nccl(-cu\d+)?$"),
        "wheel_dirs": ("nvidia/nccl/lib",),
        "package": lazyre.compile(r"^libnccl\d+$"),
    },
    "tensorrt": {
        "stem": "libnvinfer",
        "headers": (("NvInferVersion.h", ("NV_TENSORRT_MAJOR", "NV_TENSORRT_MINOR", "NV_TENSORRT_PATCH")),),
        "wheel": lazyre.compile(r"^tensorrt(-cu\d+)?(-libs)?$"),
        "wheel_dirs": ("tensorrt_libs", "tensorrt"),
        "package": lazyre.compile(r"^(libnvinfer\d+|tensorrt)$"),
    },
}

#: Environment variables that name an NCCL build or install for programs being built against it, and the
#: directory under each that holds its libraries. They only steer the compiler's link (-L): the program still
#: loads libnccl.so.2 by the loader's rules (NEEDED, no RPATH), so an NCCL named here and not on the loader's
#: path is not the one that runs.
#: NCCL_HOME: nccl-tests' src/Makefile (`NVLDFLAGS += -L$(NCCL_HOME)/lib`, no rpath; its README runs the tests
#: with LD_LIBRARY_PATH set), https://github.com/NVIDIA/nccl-tests/blob/master/src/Makefile, 2026-11-29.
#: NCCL_ROOT, NCCL_ROOT_DIR (a prefix, lib/ under it) and NCCL_LIB_DIR (the library directory itself):
#: PyTorch's cmake/Modules/FindNCCL.cmake, https://github.com/pytorch/pytorch/blob/main/cmake/Modules/FindNCCL.cmake,
#: 2026-11-29.
NCCL_BUILD_VARIABLES: Tuple[Tuple[str, str], ...] = (("NCCL_HOME", "lib"), ("NCCL_ROOT", "lib"),
                                                     ("NCCL_ROOT_DIR", "lib"), ("NCCL_LIB_DIR", ""))


def nccl_build_homes(host: Host) -> List[Dict[str, Any]]:
    """Each NCCL a build variable names (:data:`NCCL_BUILD_VARIABLES`) with the copies of libnccl in its library
    directory (soname, version, the real file)."""
    out: List[Dict[str, Any]] = []
    for name, sub in NCCL_BUILD_VARIABLES:
        value = (host.getenv(name) or "").strip()
        if not value or not value.startswith("/") or "\0" in value or len(value) > 4096:
            continue
        d = posixpath.normpath(posixpath.join(value, sub) if sub else value)
        out.append({"variable": name, "value": value, "dir": d,
                    "copies": _lib_copies(host, LIBRARIES["nccl"]["stem"], d, name)})
    return out


def parse_header_version(text: str, macros: Sequence[str]) -> Optional[str]:
    parts = []
    for macro in macros:
        m = re.search(rf"^\s*#\s*define\s+{re.escape(macro)}\s+(\d+)\b", text, re.M)
        if not m:
            break
        parts.append(m.group(1))
    return ".".join(parts) if len(parts) >= 2 else None


def _valid(v: Optional[str]) -> Optional[Version]:
    try:
        return Version(v) if v else None
    except InvalidVersion:
        return None


# -- the probe ----------------------------------------------------------------------------

def _lib_copies(host: Host, stem: str, d: str, found_by: str) -> List[Dict[str, Any]]:
    """One copy per soname major in directory ``d`` (``libcudnn.so.9`` + ``libcudnn.so.9.1.0`` = one copy)."""
    rx = re.compile(rf"^{re.escape(stem)}\.so\.(\d+)(?:\.\d+)*$")
    by_major: Dict[str, List[str]] = {}
    for name in host.list_dir(d).names():
        m = rx.match(name)
        if m:
            by_major.setdefault(m.group(1), []).append(name)
    copies = []
    for major, names in sorted(by_major.items()):
        soname = f"{stem}.so.{major}"
        path = posixpath.join(d, soname if soname in names else sorted(names)[0])
        versions = [version_from_name(n) or "" for n in names]
        real = host.resolve(path)
        versions.append(version_from_name(posixpath.basename(real)) or "")
        version = max(versions, key=lambda v: len(v.split(".")))
        copies.append({"path": path, "soname": soname, "version": version, "found_by": found_by,
                       "resolved": real})
    return copies


def _rank(copy: Dict[str, Any], ldp: Dict[str, int], cache_paths: Dict[str, int],
          defaults: Tuple[str, ...] = LOADER_DIRS) -> Tuple[int, int]:
    """Loader order: LD_LIBRARY_PATH dirs (``ldp``: directory -> its first place), cache order, the machine's
    default dirs (``defaults``), then places the loader never looks."""
    d = posixpath.dirname(copy.get("path") or "")
    if copy.get("kind") == "library":
        if d in ldp:
            return (0, ldp[d])
        if copy["path"] in cache_paths:
            return (1, cache_paths[copy["path"]])
        if d in defaults:
            return (2, defaults.index(d))
        return (3, 0)
    return (4 if copy.get("kind") == "header" else 5, 0)


#: A CUDA runtime's soname: libcudart.so.<major>[.<minor>] (per minor up to CUDA 10.2, then 11.0, 12, 13).
CUDART_SONAME = lazyre.compile(r"^libcudart\.so\.\d+(?:\.\d+)?$")


def _add_dir(host: Host, stem: str, d: str, how: str, version: Optional[str], copies: List[Dict[str, Any]],
             seen: Tuple[set, set]) -> None:
    """Add the copies of ``stem`` in ``d`` (once per directory and per real file)."""
    d = posixpath.normpath(d)
    if d in seen[0]:
        return
    seen[0].add(d)
    for c in _lib_copies(host, stem, d, how):
        if c["resolved"] in seen[1]:
            continue
        seen[1].add(c["resolved"])
        c["kind"] = "library"
        if version and len(version.split(".")) > len((c["version"] or "").split(".")):
            c["version"] = version  # a wheel's libs carry only the major in their names
        copies.append(c)


@register("libraries", "cuDNN, NCCL, TensorRT", order=60,
          produces=("libraries.*",), needs=("cuda",))
def probe_libraries(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    # The loader cache first: `ldconfig -p` then runs while the cuda probe is still working.
    cache, cache_fact = read_ld_cache(host)
    cuda = ctx.facts_of("cuda")
    toolkits = cuda.value("cuda.toolkits") or []
    packages = cuda.value("cuda.packages") or []
    ldp = ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH"))
    facts.append(cache_fact)
    cache_paths = {p: i for i, (_, _, p) in enumerate(cache or [])}
    ldp_order: Dict[str, int] = {}
    for i, d in enumerate(ldp):
        ldp_order.setdefault(d, i)  # a dict, not list.index: 100,000 entries are not 100,000 scans
    dists = host.distributions()

    lib_dirs: List[Tuple[str, str]] = [(d, "LD_LIBRARY_PATH") for d in ldp]
    lib_dirs += [(posixpath.dirname(p), "ldconfig cache") for _, _, p in (cache or [])]
    defaults = host.once("loader_default_dirs", lambda: default_dirs(host))
    # every distribution's default directories are looked at; those this machine's glibc does not search are
    # places the loader never looks, like the usual ones
    lib_dirs += [(d, "default dir") for d in defaults]
    lib_dirs += [(d, "usual dir") for d in LOADER_DIRS if d not in defaults] + [(d, "usual dir") for d in EXTRA_DIRS]
    inc_dirs = list(INCLUDE_DIRS)
    for tk in toolkits:
        if not isinstance(tk, dict) or not tk.get("path"):
            continue
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"):
            lib_dirs.append((posixpath.join(tk["path"], sub), "CUDA toolkit {}".format(tk["path"])))
        inc_dirs.append(posixpath.join(tk["path"], "include"))
    # The loader cache names hundreds of libraries in a handful of directories: keep each directory
    # once, at its first (highest-priority) place.
    unique: Dict[str, str] = {}
    for d, how in lib_dirs:
        unique.setdefault(posixpath.normpath(d), how)
    lib_dirs = list(unique.items())

    choices: Dict[str, Any] = {}
    for lib, spec in LIBRARIES.items():
        copies: List[Dict[str, Any]] = []
        seen: Tuple[set, set] = (set(), set())  # dirs listed, real files kept

        for d, how in lib_dirs:
            _add_dir(host, spec["stem"], d, how, None, copies, seen)
        for dist in dists:
            if not spec["wheel"].match(dist.key):
                continue
            copies.append({"path": dist.metadata_dir, "version": dist.version, "kind": "pip",
                           "found_by": f"pip wheel {dist.key}"})
            for sub in spec["wheel_dirs"]:
                _add_dir(host, spec["stem"], posixpath.join(dist.location, sub), f"pip wheel {dist.key}",
                         dist.version, copies, seen)
        for d in inc_dirs:
            for header, macros in spec["headers"]:
                path = posixpath.join(d, header)
                if header not in host.list_dir(d).names():
                    continue
                text = host.read_text(path)
                version = parse_header_version(text or "", macros)
                copy = {"path": path, "version": version, "kind": "header", "found_by": "header " + header}
                if version is None:
                    copy["reason"] = (f"cannot read {path}" if text is None else
                                      f"{path} has no {'/'.join(macros)} defines")
                    if header == "cudnn.h":
                        continue  # cuDNN 8+: the version lives in cudnn_version.h
                copies.append(copy)
                break
        for p in packages:
            if isinstance(p, dict) and spec["package"].match(p.get("name", "")):
                how = "{} package {} {}".format(p.get("manager", ""), p["name"], p.get("version"))
                copies.append({"path": None, "version": upstream_version(p.get("version", "")), "kind": "package",
                               "found_by": how})
        copies.sort(key=lambda c: _rank(c, ldp_order, cache_paths, defaults))
        facts.append(ok("libraries." + lib, copies, "derived", {"cudnn": "cuDNN copies", "nccl": "NCCL copies",
                                                                "tensorrt": "TensorRT copies"}[lib]))
        for soname in sorted({c["soname"] for c in copies if c.get("soname")}):
            choices[soname] = resolve_soname(host, soname, ld_library_path=ldp, cache=cache or [])

    # The CUDA runtimes the loader can reach (libcudart.so.10.1, .so.11.0, .so.12 ...): in the cache, on
    # LD_LIBRARY_PATH and in the default directories, so the checks can say which one a build's soname resolves to.
    cudart = {soname for soname, _, _ in cache or [] if CUDART_SONAME.match(soname)}
    for d, how in lib_dirs:
        if how in ("LD_LIBRARY_PATH", "default dir"):
            cudart.update(n for n in host.list_dir(d).names() if CUDART_SONAME.match(n))
    for soname in sorted(cudart - set(choices)):
        choices[soname] = resolve_soname(host, soname, ld_library_path=ldp, cache=cache or [])
    homes = nccl_build_homes(host)
    for home in homes:
        for c in home["copies"]:
            if c["soname"] not in choices:
                choices[c["soname"]] = resolve_soname(host, c["soname"], ld_library_path=ldp, cache=cache or [])
    facts.append(ok("libraries.nccl_build_homes", homes, "env:" + ",".join(n for n, _ in NCCL_BUILD_VARIABLES),
                    "NCCL builds named by NCCL_HOME and the like"))
    facts.append(ok("libraries.loader_choice", choices, "derived", "Library the loader would pick"))
    if cache is not None:
        # The driver's libcuda under both names: libcuda.so.1 (what programs link) and the unversioned libcuda.so
        # that the CUDA runtime and cuDNN's sub-libraries dlopen.
        facts.append(ok("libraries.libcuda", {name: resolve_soname(host, name, ld_library_path=ldp, cache=cache)
                                               for name in ("libcuda.so.1", "libcuda.so")},
                        "derived", "libcuda the loader would pick"))
        # the driver's video libraries (NVDEC's libnvcuvid, NVENC's libnvidia-encode) under the names programs load
        # them by: the Video Codec SDK ships link-time stubs of both (Lib/linux/stubs/<arch>)
        facts.append(ok("libraries.video_libs", {name: resolve_soname(host, name, ld_library_path=ldp, cache=cache)
                                                 for name in VIDEO_SONAMES},
                        "derived", "Video libraries the loader would pick"))
        # the driver libraries the loader would load first: are they loadable at all (a truncated copy, a text
        # file, a library of another architecture fails in dlopen with the loader's own error)
        broken = []
        for name in ("libnvidia-ml.so.1", "libcuda.so.1"):
            res = resolve_soname(host, name, ld_library_path=ldp, cache=cache)
            if res["path"]:
                elf = host.elf(res["path"])
                if elf.error in ("not_elf", "bad_elf"):
                    broken.append({"soname": name, "path": res["path"], "resolved": res["resolved"],
                                   "via": res["via"], "error": elf.error, "message": elf.message})
        if broken:
            facts.append(ok("libraries.driver_libs_unloadable", broken, "elf:" + broken[0]["path"],
                            "Driver libraries the loader cannot load"))
    return facts

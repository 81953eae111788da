"""The CUDA libraries a framework opens at run time with dlopen, resolved the way the loader would.

TensorFlow, ONNX Runtime's CUDA provider and CuPy load the CUDA runtime, cuBLAS/cuBLASLt, cuFFT, cuRAND,
cuSOLVER, cuSPARSE, NVRTC and cuDNN by soname when they first need the GPU ("Could not load dynamic library
'libcudart.so.11.0'", "libcudnn.so.9: cannot open shared object file"), so their NEEDED entries (see
:mod:`envdoctor.probes.linkage`) do not list them.  Which sonames depends on the CUDA major (and minor, before
CUDA 11) the framework was built with (:data:`SONAMES`), and on its cuDNN major.

Each is resolved in the framework's own search order: ``LD_LIBRARY_PATH``, the directories the framework
itself adds (:func:`own_dirs`), the ``ld.so`` cache, the default directories.  Copies found anywhere else
(a conda environment's ``lib``, a ``site-packages/nvidia/*/lib`` wheel, a toolkit's ``lib64``) are listed as
``elsewhere``: they exist but are not found, which names the fix.

Fact ``linkage.<framework>.dlopen`` = ``[{soname, how: "dlopen", path, resolved, via, version, others,
elsewhere, elsewhere_files, expected: None, shadowed: False}]`` (``elsewhere_files``: the same copies, one per real
file, without the one the loader takes), and where known ``file_version`` (the file's release, its wheel's for a
wheel), ``built_cuda`` (the CUDA the build was made with, for the CUDA runtime and NVRTC), ``pinned``,
``pinned_version`` and ``not_pinned_copy`` (the copy in an NVIDIA wheel the framework requires, and whether the
loader takes another); ``version_check`` marks a library resolved only because the framework compares its version
with its build at start-up (jax from 0.4.17: :func:`version_checked`), which the other run-time load checks leave
alone.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.version import InvalidVersion, Version

from .. import frameworks, lazyre, versions
from ..facts import Fact, ok
from ..host.base import Host
from . import ProbeContext, register
from .cuda import ld_library_path_dirs, nvidia_library_wheel
from .libraries import read_ld_cache, resolve_soname
from .loader import missing_symbols, own_search_paths, wheel_version

#: Library -> soname suffix by CUDA release: NVIDIA's sonames (the file names of each CUDA toolkit's lib64 and of
#: the nvidia-*-cuXX wheels: libcudart.so.11.0 for every 11.x, libcublas.so.12, libcufft.so.11 in 12.x ...).
#: Keys are "major" or "major.minor" (the more specific wins).  A framework that opens a math library by the
#: major of the copy its build saw opens that toolkit's soname: TensorFlow's ``third_party/gpus/find_cuda_config.py``
#: (v2.4.0 .. v2.11) takes cuBLAS, cuSOLVER, cuRAND, cuFFT and cuSPARSE's sonames from CUDA 11's own headers
#: (``CUSOLVER_VER_MAJOR`` of ``cusolver_common.h`` ...), and ``dso_loader.cc`` opens ``lib<name>.so.<that major>``.
#: CUDA 11.0 ships cuSOLVER 10.6 (``lib64/libcusolver.so.10.6.0.245``, soname ``libcusolver.so.10``); 11.1 and
#: later ship cuSOLVER 11 (``libcusolver.so.11``), so a build made with 11.0 (TensorFlow 2.4) opens
#: ``libcusolver.so.10``, which no later 11.x toolkit has.
SONAMES: Dict[str, Dict[str, str]] = {
    "cudart": {"6.5": "6.5", "7.0": "7.0", "7.5": "7.5", "8.0": "8.0", "9.0": "9.0", "9.1": "9.1", "9.2": "9.2",
               "10.0": "10.0", "10.1": "10.1", "10.2": "10.2", "11": "11.0", "12": "12", "13": "13"},
    "cublas": {"10.0": "10.0", "10": "10", "11": "11", "12": "12", "13": "13"},
    "cublasLt": {"10.1": "10", "10.2": "10", "11": "11", "12": "12", "13": "13"},
    "cufft": {"10.0": "10.0", "10": "10", "11": "10", "12": "11", "13": "12"},
    "curand": {"10.0": "10.0", "10": "10", "11": "10", "12": "10", "13": "10"},
    "cusolver": {"10.0": "10.0", "10": "10", "11.0": "10", "11": "11", "12": "11", "13": "12"},
    "cusparse": {"10.0": "10.0", "10": "10", "11": "11", "12": "12", "13": "12"},
    "nvrtc": {"10.0": "10.0", "10.1": "10.1", "10.2": "10.2", "11.0": "11.0", "11.1": "11.1", "11": "11.2",
              "12": "12", "13": "13"},
}
#: What each framework dlopens (cuDNN added from its cuDNN major): its plug-in's ``dlopens``, in ``dlopen_order``.
LOADS: Dict[str, Tuple[str, ...]] = {name: frameworks.BY_NAME[name].dlopens
                                     for name in frameworks.ordered_by("dlopen_order")}
#: PaddlePaddle (paddle/phi/backends/dynload/dynamic_loader.cc, paddle/fluid/platform/dynload before 2.3) opens
#: cuDNN as "libcudnn.so" (the development link), through dlopen's own search; from 2.0 it also tries the CUDA
#: toolkit's lib64 it was built against.  3.x builds that use the pip CUDA wheels open libcudnn.so.<major>.
PADDLE_LOADER = "https://github.com/PaddlePaddle/Paddle/blob/develop/paddle/phi/backends/dynload/dynamic_loader.cc"
#: TensorFlow releases that find the nvidia-*-cu12 wheels' libraries on their own ([and-cuda], from 2.14);
#: 2.16 does not (https://github.com/tensorflow/tensorflow/issues/63362, read 2026-11-25: the wheels' lib
#: directories must be put on LD_LIBRARY_PATH), nor do the releases before 2.14
#: (https://github.com/rstudio/tensorflow/issues/569).
TF_FINDS_WHEELS = (("2.14", "2.16"), ("2.17", "999"))


#: TensorFlow releases whose GPU pip packages open cuDNN as "libcudnn.so", the development link (which a cuDNN
#: installed from NVIDIA's runtime package, or an image with only libcudnn.so.<major>, lacks): dso_loader.cc's
#: GetCudnnVersion() returns what ./configure's TF_CUDNN_VERSION wrote into it, empty unless set, and
#: FormatLibraryFileName("cudnn", "") is libcudnn.so. https://github.com/tensorflow/tensorflow/pull/3091 (merged
#: 2016-06-28, after 0.9.0's release, first in 0.10) made configure resolve the version to the SONAME of the
#: installed libcudnn.so link: "When we build our pip packages, we will now build with precisely the version of
#: the SONAME". NVIDIA's maintainer on nvidia-docker#160 and #205: the TensorFlow 0.8.0 image "used to open the
#: unversioned symlink". From 0.8 (the first release whose pip builds ask for the cuDNN version that way).
TF_UNVERSIONED_CUDNN = ("0.8", "0.10")


def _in(value: Dict[str, Any], bounds: Tuple[str, str]) -> bool:
    v = _v(value.get("public") or value.get("version"))
    return v is not None and Version(bounds[0]) <= v < Version(bounds[1])


def soname(lib: str, cuda: Tuple[int, Optional[int]]) -> Optional[str]:
    table = SONAMES.get(lib, {})
    major, minor = cuda
    suffix = table.get("%d.%d" % (major, minor)) if minor is not None else None
    suffix = suffix or table.get(str(major))
    return "lib%s.so.%s" % (lib, suffix) if suffix else None


def _mm(text: Any) -> Optional[Tuple[int, Optional[int]]]:
    parts = str(text or "").split(".")
    if not parts[0].isdigit():
        return None
    return int(parts[0]), int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def _v(text: Any) -> Optional[Version]:
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def _wheel_dirs(host: Host, site: str) -> List[str]:
    base = posixpath.join(site, "nvidia")
    return [posixpath.join(base, d, "lib") for d in host.list_dir(base).names()
            if host.is_dir(posixpath.join(base, d, "lib"))]


def own_dirs(host: Host, name: str, value: Dict[str, Any]) -> List[str]:
    """The directories a framework adds to the search on its own."""
    site = str(value.get("path") or "")
    if name == "onnxruntime":
        return [posixpath.join(site, "onnxruntime", "capi")]  # the provider's RUNPATH $ORIGIN
    if name == "tensorflow":
        v = _v(value.get("public") or value.get("version"))
        if v is not None and any(Version(lo) <= v < Version(hi) for lo, hi in TF_FINDS_WHEELS):
            return _wheel_dirs(host, site)
        # a build that requires NVIDIA's library wheels outright, not through an extra (nvidia-tensorflow), is
        # made to load them: their directories come after LD_LIBRARY_PATH, as a RUNPATH does
        return _required_wheel_dirs(host, site, value)
    if name == "paddle":
        v = _v(value.get("public") or value.get("version"))
        return ["/usr/local/cuda/lib64"] if v is not None and v >= Version("2.0") else []
    if name == "jax":
        # the CUDA plugin's RUNPATH names the nvidia-*-cu* wheels; a conda package's libraries carry an
        # RPATH to their environment's lib (conda-build's default)
        conda = [posixpath.join(host.getenv("CONDA_PREFIX") or host.python().prefix, "lib")] \
            if value.get("conda_build") else []
        return _wheel_dirs(host, site) + conda
    if name == "cupy":  # CUDA_PATH, then /usr/local/cuda, then the nvidia-*-cu* wheels (cupy/_environment.py)
        env = host.environ()
        roots = [env["CUDA_PATH"]] if env.get("CUDA_PATH") else []
        return [posixpath.join(r, "lib64") for r in roots + ["/usr/local/cuda"]] + _wheel_dirs(host, site)
    return []


def _required_wheel_dirs(host: Host, site: str, value: Dict[str, Any]) -> List[str]:
    """The lib directories of the NVIDIA wheels the framework's own metadata requires without an extra."""
    from .frameworks import Metadata, target_environment

    package = str(value.get("package") or "")
    dist = next((d for d in host.distributions() if d.key == package and d.location == site), None)
    if dist is None:
        return []
    names = {r.name.lower().replace("_", "-") for r in Metadata(host, dist).applying(target_environment(host))
             if r.name.lower().startswith("nvidia-")}
    out = []
    for d in _wheel_dirs(host, site):
        owner = posixpath.basename(posixpath.dirname(d)).replace("_", "-")
        if any(n == "nvidia-" + owner or n.startswith("nvidia-%s-cu" % owner) for n in names):
            out.append(d)
    return out


def _elsewhere_dirs(host: Host, value: Dict[str, Any]) -> List[str]:
    """Where copies commonly sit without being on any search path."""
    out: List[str] = []
    py = host.python()
    for prefix in {py.prefix, host.getenv("CONDA_PREFIX") or ""}:
        if prefix:
            out.append(posixpath.join(prefix, "lib"))
    out += _wheel_dirs(host, str(value.get("path") or ""))
    for name in host.list_dir("/usr/local").names():
        if name == "cuda" or name.startswith("cuda-"):
            out += [posixpath.join("/usr/local", name, "lib64"),
                    posixpath.join("/usr/local", name, "targets", "x86_64-linux", "lib")]
    return out


def _cudnn_major(name: str, value: Dict[str, Any]) -> Optional[str]:
    cudnn = value.get("cudnn")
    if isinstance(cudnn, str) and cudnn.split(".")[0].isdigit():
        return cudnn.split(".")[0]
    if name == "jax":
        from ..matrix import builds

        built = builds.jax_cudnn_built(value)
        return built[0].split(".")[0] if built else None
    if name == "onnxruntime":
        from ..matrix import frameworks as fw

        rel = fw.onnxruntime_release(value.get("version"))
        mine, theirs = _mm(value.get("cuda")), _mm(rel.get("cuda")) if rel else None
        if rel and rel.get("cudnn_major") and mine and theirs and mine[0] == theirs[0]:
            return str(rel["cudnn_major"])
    return None


#: The fact fields listing the NVIDIA CUDA wheels a framework requires (its Requires-Dist).
WHEEL_FIELDS = ("nvidia_wheels", "and_cuda_wheels")
_RUNTIME_WHEEL = lazyre.compile(r"^nvidia-cuda-runtime(?:-cu\d+)?$")
_CUDNN_WHEEL = lazyre.compile(r"^nvidia-cudnn(?:-cu\d+)?$")


def required_wheels(value: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The NVIDIA wheels the framework's metadata requires, ``{name: {required, installed, ...}}``."""
    out: Dict[str, Dict[str, Any]] = {}
    for field in WHEEL_FIELDS:
        wheels = value.get(field)
        if isinstance(wheels, dict):
            out.update({str(k): v for k, v in wheels.items() if isinstance(v, dict)})
    return out


def cuda_of_wheels(value: Dict[str, Any]) -> Tuple[Optional[Tuple[int, Optional[int]]], Optional[str]]:
    """A framework's CUDA (major, minor) and cuDNN major from the CUDA runtime and cuDNN wheels its metadata requires
    (installed, else pinned): for builds whose own files do not say (TensorFlow up to 2.2, NVIDIA's
    nvidia-tensorflow, which requires nvidia-cuda-runtime and nvidia-cudnn wheels of its CUDA release)."""
    cuda = cudnn = None
    for name, info in required_wheels(value).items():
        version = info.get("installed") or info.get("required")
        if _RUNTIME_WHEEL.match(name):
            cuda = _mm(version)
        elif _CUDNN_WHEEL.match(name):
            m = _mm(version)
            cudnn = str(m[0]) if m else None
    return cuda, cudnn


def framework_cuda(name: str, value: Dict[str, Any]) -> Tuple[Optional[Tuple[int, Optional[int]]], Optional[str]]:
    """The CUDA (major, minor) a framework build was made for, and a cuDNN major when that is known only from the
    same place: its own build information, else (nvidia-tensorflow) NVIDIA's release notes of its NGC release
    (matrix), else the CUDA runtime wheel its metadata requires."""
    cuda = _mm(value.get("cuda"))
    if cuda is not None:
        return cuda, None
    packages = value.get("packages") or {}
    if name == "tensorflow" and isinstance(packages, dict) and packages.get("nvidia-tensorflow"):
        from ..matrix import builds

        built = builds.nvidia_tensorflow_build(packages["nvidia-tensorflow"])
        if built is not None:
            return _mm(built[0]), None
    if name == "tensorflow" and value.get("build") == "cuda":
        from ..matrix import builds

        wheel = builds.tensorflow_wheel_cuda(value.get("public") or value.get("version"))
        compiled = builds.tensorflow_cudnn_built(value.get("public") or value.get("version"))
        if wheel is not None:  # a wheel without build_info (0.x, 1.0): what its own library links
            return _mm(wheel[0]), compiled[0].split(".")[0] if compiled else None
        if value.get("cuda_linked"):  # no row for the release: the libcudart its Python extension links
            return _mm(value["cuda_linked"]), None
    return cuda_of_wheels(value)


def wanted(name: str, value: Dict[str, Any]) -> List[str]:
    if name == "paddle":
        v = _v(value.get("public") or value.get("version"))
        return ["libcudnn.so"] if v is not None and v < Version("3.0") else []
    cuda, wheel_cudnn = framework_cuda(name, value)
    if cuda is None:
        return []
    if name == "tensorflow" and _in(value, TF_UNVERSIONED_CUDNN):
        return ["libcudnn.so"]  # its CUDA libraries of 7.5 and before have no entry in SONAMES
    out = [s for s in (soname(lib, cuda) for lib in LOADS.get(name, ())) if s]
    out += [s for s in (soname(lib, cuda) for lib in version_checked(name, value)) if s and s not in out]
    major = _cudnn_major(name, value) or wheel_cudnn
    if major:
        out.append("libcudnn.so.%s" % major)
    if name == "tensorflow" and value.get("tensorrt") is not False:
        from ..matrix import builds

        trt = builds.tensorflow_tensorrt_major(value.get("public") or value.get("version"))
        # build_info says whether this is a TensorRT build; where it has no field, the release's pip packages are
        if trt and (value.get("tensorrt") is True or trt[1].get("pip_builds_tensorrt") is True):
            # TF-TRT opens both when it is first used (tf2tensorrt's nvinfer stubs)
            out += ["libnvinfer.so.%s" % trt[0], "libnvinfer_plugin.so.%s" % trt[0]]
    return out


def version_checked(name: str, value: Dict[str, Any]) -> List[str]:
    """The libraries a framework release compares with its build when it starts (jax from 0.4.17: matrix
    jax_cuda_checks), resolved for that comparison only (``version_check`` in their entries)."""
    if name != "jax":
        return []
    from ..matrix import jax_cuda

    row = jax_cuda.checks_for(value.get("version"))
    return [str(lib["library"]) for lib in (row or {}).get("libraries", ()) if lib.get("library") in SONAMES]


def _is_cuda_build(name: str, value: Dict[str, Any]) -> bool:
    if name == "onnxruntime":
        return bool(value.get("gpu")) and value.get("use_cuda") is not False
    return value.get("build") == "cuda"


_DRIVER_LINK = lazyre.compile(r"^lib(?:cuda|nvidia-[a-z0-9-]+)\.so\.\d+$")
_VERSIONED = lazyre.compile(r"\.so\.(\d+\.\d+(?:\.\d+)?)$")


def driver_library_links(host: Host, cache: List[Tuple[str, str, str]]) -> List[Dict[str, Any]]:
    """The driver's soname links (libcuda.so.1, libnvidia-ml.so.1, libnvidia-nvvm.so.4 ...) in the directories the
    loader finds the driver in: each {link, target, version, exists}.  After an update a link may still name the
    previous driver's file (or one that is gone)."""
    dirs: List[str] = []
    for name in ("libnvidia-ml.so.1", "libcuda.so.1"):
        res = resolve_soname(host, name, cache=cache)
        if res["path"] and posixpath.dirname(res["path"]) not in dirs:
            dirs.append(posixpath.dirname(res["path"]))
    out: List[Dict[str, Any]] = []
    for d in dirs:
        names = host.list_dir(d).names()
        for n in sorted(names):
            if not _DRIVER_LINK.match(n):
                continue
            link = host.read_link(posixpath.join(d, n))
            if link.target is None:
                continue
            m = _VERSIONED.search(link.target)
            if not m or not versions.is_driver_version(m.group(1)):
                # a suffix that is not a driver version (WSL2's /usr/lib/wsl/lib/libcuda.so.1.1 from the Windows
                # driver; libnvidia-egl-wayland.so.1.1.13, a library of its own release) is never compared with one
                continue
            target = posixpath.normpath(posixpath.join(d, link.target))
            out.append({"link": posixpath.join(d, n), "target": target, "version": m.group(1),
                        "exists": host.exists(target)})
    return out


#: CUDA libraries the nvidia-*-cuNN wheels link to each other (cuSPARSE -> nvJitLink, cuBLAS -> cuBLASLt, ...).
_WHEEL_DEP = lazyre.compile(r"^lib(nvJitLink|cublasLt|cublas|cudart|cusparse|cufft|curand|cusolver|nvrtc)\.so\.\d+$")
_FILE_VERSION = lazyre.compile(r"\.so\.(\d+\.\d+(?:\.\d+)*)$")


def _version_of_file(host: Host, path: Optional[str]) -> Optional[str]:
    if not path:
        return None
    m = _FILE_VERSION.search(host.resolve(path))
    return m.group(1) if m else None


#: How many artifacts of one Julia depot are looked at (a depot holds one per package build: tens to hundreds).
JULIA_ARTIFACTS_MAX = 500


def julia_artifact_dirs(host: Host) -> List[str]:
    """The lib/ directories of the Julia artifacts (``<depot>/artifacts/<hash>/lib``, where CUDA.jl's
    CUDA_Runtime_jll puts NVIDIA's redistributable libraries) that hold CUDA libraries, in the depots
    JULIA_DEPOT_PATH names (an empty entry stands for the default, ``~/.julia``), or ``~/.julia``."""
    home = host.getenv("HOME") or ""
    default = posixpath.join(home, ".julia") if home.startswith("/") else ""
    raw = host.getenv("JULIA_DEPOT_PATH")
    depots = [d or default for d in raw.split(":")] if raw else [default]
    out: List[str] = []
    for depot in dict.fromkeys(d for d in depots if d.startswith("/")):
        base = posixpath.join(depot, "artifacts")
        for name in sorted(host.list_dir(base).names())[:JULIA_ARTIFACTS_MAX]:
            lib = posixpath.join(base, name, "lib")
            if any(_WHEEL_DEP.match(n) for n in host.list_dir(lib).names()):
                out.append(lib)
    return out


def wheel_links(host: Host, site: str, ldp: Sequence[str],
                cache: Optional[List[Tuple[str, str, str]]],
                lib_dirs: Optional[Sequence[str]] = None, bundle: str = "pip wheel") -> List[Dict[str, Any]]:
    """How the nvidia-*-cuNN wheels' libraries find each other: each CUDA soname a wheel library needs, resolved
    in the loader's order with that library's own RUNPATH ($ORIGIN/../../<other wheel>/lib); ``expected`` is the
    copy its RUNPATH names, ``path`` the one the loader takes (LD_LIBRARY_PATH comes first).

    A library whose dynamic section cannot be read (a snapshot without it) is modelled from its wheel's own
    metadata: it needs the libraries of the NVIDIA wheels its wheel requires (nvidia-cusparse-cu12 requires
    nvidia-nvjitlink-cu12), through the RUNPATH every such wheel carries (``modelled``: True). Without the loader
    cache (``cache`` None) only what the loader finds before it (LD_LIBRARY_PATH, RUNPATH) is judged.

    ``lib_dirs``: other bundles' library directories to judge the same way (a Julia artifact's lib/, whose
    libraries carry RUNPATH $ORIGIN), named ``bundle`` in each entry; only libraries whose dynamic section
    could be read are judged there."""
    from .loader import loader_config, search

    config = loader_config(host, ldp, cache, "" if cache is not None else "the loader cache could not be read")
    dists = [d for d in host.distributions() if d.location == site] if lib_dirs is None else []
    out: List[Dict[str, Any]] = []
    for lib_dir in (_wheel_dirs(host, site) if lib_dirs is None else lib_dirs):
        for name in sorted(host.list_dir(lib_dir).names()):
            if not re.match(r"^lib[A-Za-z]+\.so\.\d+$", name):
                continue
            path = posixpath.join(lib_dir, name)
            elf = host.elf(path)
            if elf.ok:
                needed = [dep for dep in elf.needed if _WHEEL_DEP.match(dep)]
                runpath = [posixpath.normpath(p.replace("${ORIGIN}", lib_dir).replace("$ORIGIN", lib_dir))
                           for e in (elf.runpath or elf.rpath) for p in e.split(":") if p]
                modelled = False
            elif lib_dirs is None and elf.error in ("not_recorded", "EACCES", "ETIMEDOUT"):
                needed, runpath = _modelled_needs(host, site, path, dists)
                modelled = True
            else:
                continue
            for dep in needed:
                res = search(host, config, dep, runpath=runpath)
                expected = next((posixpath.join(d, dep) for d in runpath if dep in host.list_dir(d).names()), None)
                if expected is None or res["path"] is None or not res["certain"]:
                    continue
                wheel = posixpath.basename(posixpath.dirname(posixpath.dirname(expected)))
                exp_version = _version_of_file(host, expected) or next(
                    (d.version for d in dists if d.key.startswith("nvidia-%s-cu" % wheel)
                     or d.key == "nvidia-%s" % wheel), None)
                entry = {"library": path, "soname": dep, "path": res["path"], "resolved": res["resolved"],
                         "via": res["via"], "version": _version_of_file(host, res["path"]),
                         "expected": expected, "expected_version": exp_version,
                         "shadowed": host.resolve(res["path"]) != host.resolve(expected)}
                if bundle != "pip wheel":
                    entry["bundle"] = bundle
                if modelled:
                    entry["modelled"] = True
                elif entry["shadowed"]:
                    entry["missing_symbols"] = missing_symbols(host, path, str(res["resolved"]))
                out.append(entry)
    return out


def _modelled_needs(host: Host, site: str, path: str, dists: Sequence[Any]) -> Tuple[List[str], List[str]]:
    """What a wheel library needs, from its wheel's metadata (when its dynamic section cannot be read): the
    libraries of the NVIDIA wheels that wheel requires, and their directories as its RUNPATH."""
    from .requires import requirements_of

    lib_dir = posixpath.dirname(path)
    owner = posixpath.basename(posixpath.dirname(lib_dir)).replace("_", "-")  # nvidia/<owner>/lib
    dist = next((d for d in dists if d.key.startswith("nvidia-%s-cu" % owner) or d.key == "nvidia-%s" % owner), None)
    if dist is None:
        return [], []
    needed: List[str] = []
    runpath: List[str] = []
    for req in requirements_of(host, dist) or []:
        m = re.match(r"^nvidia-([a-z0-9-]+?)(?:-cu\d+)?$", req.name)
        if not m or req.marker:
            continue
        dep_dir = posixpath.join(site, "nvidia", m.group(1).replace("-", "_"), "lib")
        libs = [n for n in host.list_dir(dep_dir).names() if re.match(r"^lib[A-Za-z]+\.so\.\d+$", n)
                and _WHEEL_DEP.match(n)]
        if libs:
            needed += libs
            runpath.append(dep_dir)
    return needed, runpath


def pinned_copy(host: Host, value: Dict[str, Any], soname_: str) -> Optional[Tuple[str, Optional[str]]]:
    """The copy of ``soname_`` in an NVIDIA wheel the framework's metadata requires (its file and the wheel's
    version), None when none of them ships it."""
    required = required_wheels(value)
    if not required:
        return None
    for lib_dir in _wheel_dirs(host, str(value.get("path") or "")):
        if soname_ not in host.list_dir(lib_dir).names():
            continue
        path = posixpath.join(lib_dir, soname_)
        # a wheel's file carries only the soname (libcudart.so.11.0): the wheel's version is the library's
        version = wheel_version(host, host.resolve(path)) or _version_of_file(host, path)
        owner = posixpath.basename(posixpath.dirname(lib_dir)).replace("_", "-")
        if any(n.startswith("nvidia-%s" % owner) or n.startswith("nvidia-") and owner.startswith("cu")
               for n in required):
            return path, version
    return None


def wheel_families(host: Host) -> List[Dict[str, Any]]:
    """NVIDIA library wheels of the same library for different CUDA majors installed in the same site-packages
    (nvidia-nccl-cu11 next to nvidia-nccl-cu12): both write site-packages/nvidia/<lib>/lib, so the last one
    installed overwrites the other's files."""
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for d in host.distributions():
        wheel = nvidia_library_wheel(d.key)
        if wheel is None:
            continue
        groups.setdefault((d.location, wheel[0]), []).append(
            {"name": d.key, "version": d.version, "cuda": wheel[1] or "13"})
    return [{"location": loc, "lib": lib, "wheels": sorted(ws, key=lambda w: w["name"])}
            for (loc, lib), ws in sorted(groups.items()) if len({w["cuda"] for w in ws}) > 1]


@register("dlopen", "CUDA libraries frameworks load at run time", order=97,
          produces=("driver.library_links", "linkage.*.dlopen", "linkage.*.version_checked", "linkage.nvidia_wheels",
                    "python.nvidia_wheel_conflicts"), needs=("frameworks", "driver"))
def probe_dlopen(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    fw = ctx.facts_of("frameworks")
    facts: List[Fact] = []
    ldp = ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH"))
    cache: Optional[List[Tuple[str, str, str]]] = None
    if ctx.facts_of("driver").value("driver.installed") is True:
        cache = read_ld_cache(host)[0]
        if cache is not None:
            links = driver_library_links(host, cache)
            if links:
                facts.append(ok("driver.library_links", links, "derived", "Driver library links"))
    families = wheel_families(host)
    if families:
        facts.append(ok("python.nvidia_wheel_conflicts", families, "derived",
                        "NVIDIA wheels of one library for several CUDA majors"))
    sites = sorted({str(v.get("path")) for v in (fw.value("framework." + n) for n in ("torch", "jax", "tensorflow",
                                                                                     "cupy", "onnxruntime"))
                    if isinstance(v, dict) and v.get("path")})
    shadowed: List[Dict[str, Any]] = []  # every site's and the Julia artifacts' links: one fact
    for site in sites:
        if not host.is_dir(posixpath.join(site, "nvidia")):
            continue
        if cache is None:
            cache = read_ld_cache(host)[0]
        shadowed += [lk for lk in wheel_links(host, site, ldp, cache) if lk["shadowed"]]
    artifacts = julia_artifact_dirs(host)
    if artifacts:
        if cache is None:
            cache = read_ld_cache(host)[0]
        shadowed += [lk for lk in wheel_links(host, "", ldp, cache, artifacts, "Julia artifact") if lk["shadowed"]]
    if shadowed:
        facts.append(ok("linkage.nvidia_wheels", shadowed, "derived", "NVIDIA wheel libraries' own links"))
    for name in LOADS:
        value = fw.value("framework." + name)
        if not isinstance(value, dict) or not _is_cuda_build(name, value):
            continue
        sonames = wanted(name, value)
        if not sonames:
            continue
        if cache is None:
            read, cache_fact = read_ld_cache(host)
            if read is None:
                return facts  # without the cache "not found" would only mean "not seen"
            cache = read
        own = own_dirs(host, name, value)
        caller_rpath, caller_runpath = _caller_paths(host, name, value)
        own = caller_runpath + [d for d in own if d not in caller_runpath]
        elsewhere_dirs = _elsewhere_dirs(host, value)
        entries: List[Dict[str, Any]] = []
        checked_entries: List[Dict[str, Any]] = []
        cuda = framework_cuda(name, value)[0]
        checked = {soname(lib, cuda) for lib in version_checked(name, value)} - {
            soname(lib, cuda) for lib in LOADS.get(name, ())} if cuda is not None else set()
        for so in sonames:
            res = resolve_soname(host, so, runpath=own, ld_library_path=ldp, cache=cache, rpath=caller_rpath)
            searched = set(ldp) | set(own) | set(caller_rpath)
            elsewhere = [posixpath.join(d, so) for d in elsewhere_dirs
                         if d not in searched and so in host.list_dir(d).names()]
            # the same, one entry per real file and never the one the loader takes (/usr/local/cuda is a link to
            # cuda-X.Y, lib64 to targets/x86_64-linux/lib)
            taken = {res["resolved"]}
            distinct = []
            for path in elsewhere:
                r = host.resolve(path)
                if r not in taken:
                    taken.add(r)
                    distinct.append(path)
            entry = {"soname": so, "how": "dlopen", "path": res["path"], "resolved": res["resolved"],
                     "via": res["via"], "version": res["version"], "others": res["others"],
                     "elsewhere": _unique(elsewhere), "elsewhere_files": distinct, "expected": None,
                     "shadowed": False}
            if res["path"]:  # the file's own release (a wheel's file names only its soname: its wheel's version)
                entry["file_version"] = wheel_version(host, res["resolved"]) or _version_of_file(host, res["path"])
            # TensorFlow's builds are tested with one CUDA release (ONNX Runtime, CuPy and JAX say theirs run on any
            # minor of their major): a runtime older than that release is judged for TensorFlow
            built = framework_cuda(name, value)[0] if name == "tensorflow" else None
            if built is not None and built[1] is not None and re.match(r"^lib(cudart|nvrtc)\.so", so):
                entry["built_cuda"] = "%d.%d" % (built[0], built[1])  # the runtime's version tracks CUDA's
            if so in checked:
                entry["version_check"] = True  # resolved for the framework's own version check only
            pinned = pinned_copy(host, value, so)
            if pinned is not None:  # the copy in the NVIDIA wheel the framework's metadata requires
                entry["pinned"], entry["pinned_version"] = pinned
                entry["not_pinned_copy"] = bool(res["resolved"]) and res["resolved"] != host.resolve(pinned[0])
            (checked_entries if so in checked else entries).append(entry)
        facts.append(ok("linkage.%s.dlopen" % name, entries, "derived",
                        "%s: CUDA libraries it loads at run time" % name))
        if checked_entries:  # a fact of their own: what the framework loads at run time stays as it was
            facts.append(ok("linkage.%s.version_checked" % name, checked_entries, "derived",
                            "%s: CUDA libraries it compares with its build at start-up" % name))
    return facts


def _caller_paths(host: Host, name: str, value: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """The DT_RPATH and DT_RUNPATH of the library that calls dlopen (the framework's CUDA library, e.g. JAX's
    ``xla_cuda_plugin.so``), ``$ORIGIN`` expanded: dlopen searches the caller's DT_RPATH before LD_LIBRARY_PATH
    (when it has no DT_RUNPATH), and its DT_RUNPATH after it (ld.so(8))."""
    fw = frameworks.BY_NAME.get(name)
    site = str(value.get("path") or "")
    if fw is None or not site:
        return [], []
    for rel in fw.cuda_libraries:
        path = posixpath.join(site, rel)
        res = host.elf(path)
        if res.error == "ENOENT":
            continue
        if not res.ok:
            return [], []
        rpath, runpath = own_search_paths(res.rpath, res.runpath, posixpath.dirname(res.path or path))
        return _unique(rpath), _unique(runpath)
    return [], []


def _unique(items: Sequence[str]) -> List[str]:
    seen: List[str] = []
    for i in items:
        if i not in seen:
            seen.append(i)
    return seen

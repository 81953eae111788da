"""Deep-learning frameworks installed in the inspected interpreter, with the CUDA,
cuDNN and NCCL they were built for or depend on.

No framework is ever imported (importing torch costs seconds and can crash on
a broken stack).  Everything is read through the host: the distributions'
``METADATA`` (``Requires-Dist`` with its platform markers), and the small
generated files the wheels ship: ``torch/version.py``,
``tensorflow/python/platform/build_info.py``, ``onnxruntime/capi/build_and_package_info.py``
(``version_info.py`` in older wheels),
``paddle/version/__init__.py``.  Those files are parsed with :mod:`ast`
(never executed); a garbled one yields the package version alone and a
``details_error`` saying why the build details are missing.
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from .. import frameworks as framework_table
from .. import lazyre, versions
from ..facts import Fact, ok, timed_out, unknown
from ..host.base import FILE_PATTERN_FILTERS, Distribution, Host, metadata_headers, normalize_name
from . import ProbeContext, register
from .cuda import nvidia_library_wheel, parse_nvcc_version

# -- generic helpers -------------------------------------------------------------


def split_local(version: str) -> Tuple[str, Optional[str]]:
    """``2.4.0+cu121`` -> ``("2.4.0", "cu121")`` using packaging's own parser."""
    try:
        v = Version(version)
    except InvalidVersion:
        base, _, local = version.partition("+")
        return base, local or None
    return v.public, v.local


def python_literals(text: str) -> Dict[str, Any]:
    """Module-level ``name = <literal>`` assignments of a generated Python file.

    Parsed with :mod:`ast` and :func:`ast.literal_eval`, never executed.
    ``collections.OrderedDict([...])`` (TensorFlow's build_info) is read as a dict.
    Raises ``SyntaxError``/``ValueError`` for a file that is not Python.
    """
    tree = ast.parse(text)
    out: Dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets = [node.target.id]
            value = node.value
        else:
            continue
        if (isinstance(value, ast.Call) and isinstance(value.func, (ast.Attribute, ast.Name))
                and (getattr(value.func, "attr", None) or getattr(value.func, "id", None)) in ("OrderedDict", "dict")
                and len(value.args) == 1 and not value.keywords):
            value = value.args[0]
        try:
            lit = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(lit, list) and all(isinstance(p, tuple) and len(p) == 2 for p in lit):
            lit = dict(lit)
        for t in targets:
            out[t] = lit
    return out


def target_environment(host: Host) -> Dict[str, str]:
    """PEP 508 marker environment of the inspected machine and interpreter."""
    py = host.python()
    ver = py.version or ""
    parts = ver.split(".")
    return {
        "platform_system": "Linux",
        "sys_platform": "linux",
        "os_name": "posix",
        "platform_machine": host.uname().get("machine", "") or "x86_64",
        "python_version": ".".join(parts[:2]) if len(parts) >= 2 else ver,
        "python_full_version": ver,
        "implementation_name": py.implementation or "cpython",
        "platform_python_implementation": "CPython" if (py.implementation or "cpython") == "cpython" else "PyPy",
        "extra": "",
    }


if TYPE_CHECKING:  # packaging.requirements/markers cost ~15 ms to import: only when METADATA is parsed
    from packaging.requirements import Requirement


#: The most of one METADATA file read: the largest on PyPI's deep-learning wheels are a few dozen KiB.
METADATA_LIMIT = 512 * 1024


class Metadata:
    """``Requires-Dist`` of one distribution's METADATA, read through the host."""

    def __init__(self, host: Host, dist: Distribution) -> None:
        name = "METADATA" if dist.metadata_dir.endswith(".dist-info") else "PKG-INFO"
        self.path = posixpath.join(dist.metadata_dir, name)
        res = host.read_file(self.path, limit=METADATA_LIMIT)
        self.error: Optional[str] = None if res.ok else (res.error or "unreadable")
        if res.truncated:  # said once per run, whoever read it (see probe_frameworks)
            cut: List[str] = host.once("metadata_truncated", list)
            if self.path not in cut:
                cut.append(self.path)
        self.requires: List[Requirement] = []
        # Only NVIDIA's wheels matter here; parsing every requirement with packaging would cost
        # more than the rest of this probe (its requirement grammar compiles large regexes).
        lines = [value for key, value in metadata_headers(res.text or "")
                 if key == "requires-dist" and _is_nvidia_requirement(value)]
        if lines:
            from packaging.requirements import InvalidRequirement, Requirement
        for line in lines:
            try:
                self.requires.append(Requirement(line))
            except InvalidRequirement:
                continue
        if dist.metadata_dir.endswith(".egg-info"):
            self._egg_requires(host, dist)

    def _egg_requires(self, host: Host, dist: Distribution) -> None:
        from packaging.requirements import InvalidRequirement, Requirement

        text = host.read_text(posixpath.join(dist.metadata_dir, "requires.txt")) or ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                break  # extras sections follow
            if line and _is_nvidia_requirement(line):
                try:
                    self.requires.append(Requirement(line))
                except InvalidRequirement:
                    continue

    def applying(self, env: Dict[str, str], extra: str = "") -> List[Requirement]:
        """Requirements whose markers hold on the target (for ``extra`` when given)."""
        if not self.requires:
            return []  # nothing to evaluate: spare importing packaging.markers
        from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

        out = []
        for req in self.requires:
            if req.marker is None:
                out.append(req)
                continue
            e = dict(env, extra=extra)
            try:
                if req.marker.evaluate(e):
                    out.append(req)
            except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
                continue
        return out


def pinned(req: Requirement) -> str:
    """``==9.1.0.70`` -> ``9.1.0.70``; any other specifier as written (``>=8.9``)."""
    specs = list(req.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "==="):
        return specs[0].version
    return str(req.specifier) or "any"


#: NVIDIA's meta-package through which torch 2.10+ requires most CUDA 13 wheels (by extras).
CUDA_TOOLKIT_WHEEL = "cuda-toolkit"
_REQ_NAME = lazyre.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _is_nvidia_wheel(key: str) -> bool:
    return nvidia_library_wheel(key) is not None


def _is_nvidia_requirement(text: str) -> bool:
    """Whether a requirement string names an NVIDIA CUDA wheel (judged on its project name alone)."""
    m = _REQ_NAME.match(text)
    if not m:
        return False
    key = normalize_name(m.group(1))
    return key == CUDA_TOOLKIT_WHEEL or _is_nvidia_wheel(key)


def nvidia_wheels(reqs: Iterable[Requirement], installed: Dict[str, Distribution], host: Optional[Host] = None,
                  env: Optional[Dict[str, str]] = None) -> Dict[str, Dict[str, Any]]:
    """NVIDIA CUDA wheel requirements -> ``{name: {"required": .., "installed": ..}}``.

    ``nvidia-*-cuNN`` and CUDA 13's suffix-less ``nvidia-*`` wheels; a
    ``cuda-toolkit[extras]`` requirement is listed and, when that package is
    installed (and ``host`` given), expanded into the wheels its extras require
    (marked ``"via"``).  A framework's own pin wins over the meta-package's.
    """
    out: Dict[str, Dict[str, Any]] = {}
    via: Dict[str, Dict[str, Any]] = {}
    for req in reqs:
        key = normalize_name(req.name)
        d = installed.get(key)
        if key == CUDA_TOOLKIT_WHEEL:
            out[key] = {"required": pinned(req), "specifier": str(req.specifier),
                        "installed": d.version if d else None, "extras": sorted(req.extras)}
            if d is not None and host is not None:
                label = "%s[%s]" % (key, ",".join(sorted(req.extras)))
                meta = Metadata(host, d)
                for extra in sorted(req.extras):
                    for sub in meta.applying(env or {}, extra=extra):
                        sub_key = normalize_name(sub.name)
                        if _is_nvidia_wheel(sub_key) and sub_key not in via:
                            sd = installed.get(sub_key)
                            via[sub_key] = {"required": pinned(sub), "specifier": str(sub.specifier),
                                            "installed": sd.version if sd else None, "via": label}
        elif _is_nvidia_wheel(key):
            out[key] = {"required": pinned(req), "specifier": str(req.specifier),
                        "installed": d.version if d else None}
    for key, info in via.items():
        out.setdefault(key, info)
    return out


def _lib_required(wheels: Dict[str, Dict[str, Any]], lib: str) -> Optional[Dict[str, Any]]:
    for name, info in wheels.items():
        wheel = nvidia_library_wheel(name)
        if wheel and wheel[0] == lib:
            return dict(info, package=name)
    return None


def read_literals(host: Host, path: str) -> Tuple[Dict[str, Any], Optional[str]]:
    """Literals of a generated ``.py`` file, or ``({}, why not)``."""
    res = host.read_file(path, limit=256 * 1024)
    if res.text is None:
        return {}, "{}: {}".format(path, "missing" if res.missing else (res.error or "unreadable"))
    try:
        lits = python_literals(res.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {}, "{} is not valid Python ({}){}".format(path, type(exc).__name__,
                                                        ", truncated?" if res.truncated else "")
    return lits, None


def _version_of(d: Distribution) -> Dict[str, Any]:
    public, local = split_local(d.version)
    return {"version": d.version, "public": public, "local": local, "package": d.key, "path": d.location}


# -- PyTorch ---------------------------------------------------------------------

_SO_MAJOR = lazyre.compile(r"^lib(?P<lib>cudnn|nccl)(?:_[a-z_]+)?(?:-[0-9a-f]{8})?\.so\.(?P<major>\d+)(?:\.[\d.]+)?$")


#: Other distributions that install the torch package: PyTorch's 1.0 preview nightlies were published as
#: torch-nightly (``pip install torch_nightly -f https://download.pytorch.org/whl/nightly/cu92/torch_nightly.html``),
#: which writes the same torch/ folder as the torch wheel (facebookresearch/maskrcnn-benchmark#75's collect_env
#: lists both).
TORCH_OTHER_PACKAGES = ("torch-nightly",)


def torch_fact(host: Host, dists: Dict[str, Distribution], env: Dict[str, str]) -> List[Fact]:
    d = dists["torch"]
    value: Dict[str, Any] = _version_of(d)
    others = [dists[k] for k in TORCH_OTHER_PACKAGES if k in dists and dists[k].location == d.location]
    if others:  # several distributions over one torch/ folder
        value["packages"] = {x.key: x.version for x in [d] + others}
    vpath = posixpath.join(d.location, "torch", "version.py")
    lits, why = read_literals(host, vpath)
    cuda = lits.get("cuda") if isinstance(lits.get("cuda"), str) else None
    hip = lits.get("hip") if isinstance(lits.get("hip"), str) else None
    value.update({"cuda": cuda, "hip": hip, "debug": lits.get("debug"), "git_version": lits.get("git_version")})
    if why:
        value["details_error"] = why
    local = value["local"] or ""
    if hip or local.startswith("rocm"):
        build = "rocm"
    elif cuda or re.match(r"cu\d+", local):
        build = "cuda"
    elif local == "cpu" or (not why and cuda is None and hip is None):
        build = "cpu"
    else:
        build = "unknown"
    value["build"] = build
    if cuda is None and build == "cuda":
        value["cuda"] = versions.cuda_of_tag(local)

    meta = Metadata(host, d)
    wheels = nvidia_wheels(meta.applying(env), dists, host, env)
    value["nvidia_wheels"] = wheels
    lib_dir = posixpath.join(d.location, "torch", "lib")
    value["lib_dir"] = lib_dir
    bundled: Dict[str, List[str]] = {"cudnn": [], "nccl": []}
    for name in host.list_dir(lib_dir).names():
        m = _SO_MAJOR.match(name)
        if m:
            bundled[m.group("lib")].append(name)
    value["bundled_libs"] = sorted(bundled["cudnn"] + bundled["nccl"])
    for lib, key in (("cudnn", "cudnn_required"), ("nccl", "nccl_required")):
        req = _lib_required(wheels, lib)
        if req:
            value[key] = {"version": req["required"], "from": "requires-dist", "package": req["package"],
                          "installed": req["installed"]}
        elif bundled[lib]:
            majors = sorted({_SO_MAJOR.match(n).group("major") for n in bundled[lib]})  # type: ignore[union-attr]
            value[key] = {"version": majors[0] if len(majors) == 1 else ",".join(majors), "from": "bundled",
                          "files": sorted(bundled[lib])}
        else:
            value[key] = None
    if value["cudnn_required"] is None and build == "cuda":
        # the pytorch channel's conda packages: build "py3.11_cuda11.8_cudnn8.7.0_0" names the cuDNN inside
        conda = _conda_build(host, d, "pytorch")
        m = re.search(r"_cudnn(\d+\.\d+(?:\.\d+)*)", conda or "")
        if conda is not None:
            value["conda_build"] = conda
        if m:
            value["cudnn_required"] = {"version": m.group(1), "from": "conda build", "package": "pytorch"}
    facts = [ok("framework.torch", value, "file:" + vpath if not why else "dir:" + d.metadata_dir, "PyTorch")]
    for name, label in (("torchvision", "torchvision"), ("torchaudio", "torchaudio")):
        if name in dists:
            facts.append(ok("framework." + name, _version_of(dists[name]), "dir:" + dists[name].metadata_dir, label))
    return facts


# -- TensorFlow ------------------------------------------------------------------

TF_PACKAGES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tf-nightly-gpu",
               "tf-nightly-cpu", "tensorflow-intel", "tensorflow-rocm", "intel-tensorflow", "tensorflow-aarch64",
               "nvidia-tensorflow")


def _tf_windows_version(v: Any) -> Any:
    """Windows builds record ``'64_112'`` (from cudart64_112.dll) for 11.2."""
    if isinstance(v, str):
        m = re.match(r"^64_(\d+)$", v)
        if m:
            digits = m.group(1)
            return digits if len(digits) == 1 else f"{digits[:-1]}.{digits[-1]}"
    return v


#: TensorFlow's Python extension before build_info.py: 0.x and 1.0 ship tensorflow/python/_pywrap_tensorflow.so (the
#: 0.x wheels' tensorflow/tools/pip_package/setup.py package_data), whose NEEDED names the CUDA runtime it was built
#: with (libcudart.so.7.5, libcudart.so.8.0).
_TF_OLD_EXTENSION = ("tensorflow", "python", "_pywrap_tensorflow.so")


def _tf_linked_cudart(host: Host, site: str) -> Optional[str]:
    """The CUDA X.Y whose libcudart.so.X.Y a TensorFlow from before build_info.py links, or None."""
    res = host.elf(posixpath.join(site, *_TF_OLD_EXTENSION))
    if res.error:
        return None
    return next((v for v in map(versions.cuda_of_cudart, res.needed) if v and v.count(".") == 1), None)


def tensorflow_fact(host: Host, dists: Dict[str, Distribution], env: Dict[str, str]) -> List[Fact]:
    found = [dists[p] for p in TF_PACKAGES if p in dists]
    d = found[0]
    value: Dict[str, Any] = _version_of(d)
    value["packages"] = {x.key: x.version for x in found}
    bpath = posixpath.join(d.location, "tensorflow", "python", "platform", "build_info.py")
    lits, why = read_literals(host, bpath)
    if why:
        # TF 1.15-2.1 and NVIDIA's nvidia-tensorflow keep the real package in tensorflow_core/
        core = posixpath.join(d.location, "tensorflow_core", "python", "platform", "build_info.py")
        core_lits, core_why = read_literals(host, core)
        if core_why is None:
            bpath, lits, why = core, core_lits, None
    info = lits.get("build_info")
    if not isinstance(info, dict):
        info = {}
    # TF < 2.3 wrote plain module variables instead of the dict.
    for old, new in (("is_cuda_build", "is_cuda_build"), ("is_rocm_build", "is_rocm_build"),
                     ("cuda_version_number", "cuda_version"), ("cudnn_version_number", "cudnn_version")):
        if old in lits and new not in info:
            info[new] = lits[old]
    if why:
        value["details_error"] = why
    elif not info:
        value["details_error"] = f"{bpath} holds no build_info"
    value["cuda"] = _tf_windows_version(info.get("cuda_version")) or None
    value["cudnn"] = _tf_windows_version(info.get("cudnn_version")) or None
    value["compute_capabilities"] = info.get("cuda_compute_capabilities")
    value["compiler"] = info.get("cpu_compiler")
    value["tensorrt"] = info.get("is_tensorrt_build")
    if info.get("is_rocm_build"):
        value["build"] = "rocm"
    elif info.get("is_cuda_build"):
        value["build"] = "cuda"
    elif info.get("is_cuda_build") is False or d.key.endswith("-cpu"):
        value["build"] = "cpu"
    elif d.key == "tensorflow-gpu" and why and d.metadata_dir.endswith(".dist-info"):
        # a wheel from before build_info.py (0.x, 1.0): the tensorflow-gpu project publishes CUDA builds only
        value["build"] = "cuda"
    else:
        value["build"] = "unknown"
    if why and value["build"] in ("unknown", "cuda") and not value["cuda"]:
        linked = _tf_linked_cudart(host, d.location)
        if linked:
            # before build_info.py (0.x, 1.0), one "tensorflow" name covers the CPU and the GPU wheels (0.x's GPU
            # wheels came from storage.googleapis.com/tensorflow/linux/gpu/): a Python extension that links
            # libcudart.so.<X.Y> is a CUDA build, made with CUDA X.Y
            value["build"], value["cuda_linked"] = "cuda", linked
    pin = _conda_pin(host, d, TF_CONDA_PACKAGES, "cudnn")
    if pin is not None:  # a conda build names the cuDNN it was built with in its dependency pins
        value["cudnn_conda"] = pin
    meta = Metadata(host, d)
    value["and_cuda_wheels"] = nvidia_wheels(meta.applying(env, extra="and-cuda"), dists, host, env)
    facts = [ok("framework.tensorflow", value, "file:" + bpath if not why else "dir:" + d.metadata_dir,
                "TensorFlow")]
    if len(found) > 1:
        facts.append(ok("framework.tensorflow_conflict", sorted(value["packages"]), "derived",
                        "Several TensorFlow packages installed over each other"))
    return facts


# -- JAX -------------------------------------------------------------------------

_JAX_PLUGIN = lazyre.compile(r"^jax-cuda(?P<cuda>\d+)-(?:plugin|pjrt)$")
_JAXLIB_LOCAL = lazyre.compile(r"^cuda(?P<cuda>\d+)(?:\.cudnn(?P<cudnn>\d+))?")


_NVCC_WHEEL = lazyre.compile(r"^nvidia-cuda-nvcc(?:-cu\d+)?$")


def _ptxas_candidates(host: Host, dists: Dict[str, Distribution]) -> Dict[str, Any]:
    """The ptxas binaries XLA may run: the first on PATH (its toolkit's version is judged by the checks) and the
    one the ``nvidia-cuda-nvcc`` wheel ships (``site-packages/nvidia/cuda_nvcc/bin/ptxas``, the wheel's version)."""
    out: Dict[str, Any] = {"path": None, "wheel": None}
    on_path = host.which("ptxas")
    if on_path:
        out["path"] = {"path": on_path, "resolved": host.resolve(on_path)}
    for key, d in sorted(dists.items()):
        if _NVCC_WHEEL.match(key):
            exe = posixpath.join(d.location, "nvidia", "cuda_nvcc", "bin", "ptxas")
            if host.exists(exe):
                out["wheel"] = {"path": exe, "version": d.version, "package": key}
                break
    return out


_CONDA_CUDA_BUILD = lazyre.compile(r"^cuda(?P<cuda>\d+)")


def _conda_build(host: Host, d: Distribution, package: str = "") -> Optional[str]:
    """The conda build string of the package (``package``, else the distribution's own name) that installed ``d``
    (``<prefix>/conda-meta/<name>-<version>-<build>.json`` of the environment whose ``lib/pythonX.Y/site-packages``
    holds it), or None outside conda."""
    prefix = posixpath.dirname(posixpath.dirname(posixpath.dirname(d.location.rstrip("/"))))
    head = "%s-%s-" % (package or d.key, d.version)
    for name in host.list_dir(posixpath.join(prefix, "conda-meta")).names():
        if name.startswith(head) and name.endswith(".json"):
            return name[len(head):-len(".json")]
    return None


#: The conda packages that carry TensorFlow's compiled part and its pins (Anaconda's ``tensorflow-gpu-base`` up to
#: 1.8, then ``tensorflow-base``; conda-forge's ``tensorflow-base``/``tensorflow``), most specific first.
TF_CONDA_PACKAGES = ("tensorflow-gpu-base", "tensorflow-base", "tensorflow-gpu", "tensorflow")
_CONDA_META = lazyre.compile(r"/conda-meta/[^/]+\.json$")


def keep_conda_record(text: str) -> str:
    """What a snapshot keeps of a conda-meta record: the package's name, version, build and dependency pins (not
    its file list)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return ""
    if not isinstance(doc, dict):
        return ""
    return json.dumps({k: doc[k] for k in ("name", "version", "build", "depends") if k in doc})


FILE_PATTERN_FILTERS.append((_CONDA_META, keep_conda_record))


def _conda_pin(host: Host, d: Distribution, packages: Tuple[str, ...], dependency: str) -> Optional[Dict[str, str]]:
    """The pin on ``dependency`` (``cudnn 7.0.*``) in the conda-meta record of the first of ``packages`` installed
    at ``d``'s version in ``d``'s environment: {"package", "spec"}, or None (not conda, no such pin)."""
    prefix = posixpath.dirname(posixpath.dirname(posixpath.dirname(d.location.rstrip("/"))))
    meta = posixpath.join(prefix, "conda-meta")
    names = host.list_dir(meta).names()
    for package in packages:
        head = "%s-%s-" % (package, d.version)
        for name in names:
            if not (name.startswith(head) and name.endswith(".json")):
                continue
            try:
                doc = json.loads(host.read_text(posixpath.join(meta, name)) or "")
            except ValueError:
                continue
            depends = doc.get("depends") if isinstance(doc, dict) else None
            for dep in depends if isinstance(depends, list) else ():
                parts = str(dep).split()
                if len(parts) >= 2 and parts[0] == dependency:
                    return {"package": "%s %s (%s)" % (package, d.version, name[len(head):-len(".json")]),
                            "spec": parts[1]}
    return None


def jax_fact(host: Host, dists: Dict[str, Distribution]) -> List[Fact]:
    jax = dists.get("jax")
    jaxlib = dists.get("jaxlib")
    main = jax or jaxlib
    assert main is not None
    value: Dict[str, Any] = _version_of(main)
    value["jaxlib"] = jaxlib.version if jaxlib else None
    if jax:
        # jax refuses an older jaxlib at import ("jaxlib is version X, but this version of jax requires Y")
        lits, _why = read_literals(host, posixpath.join(jax.location, "jax", "version.py"))
        minimum = lits.get("_minimum_jaxlib_version")
        if isinstance(minimum, str):
            value["jaxlib_minimum"] = minimum
    plugins = {k: d.version for k, d in dists.items() if _JAX_PLUGIN.match(k)}
    value["plugins"] = plugins
    cuda = None
    cudnn = None
    if jaxlib:
        m = _JAXLIB_LOCAL.match(split_local(jaxlib.version)[1] or "")
        if m:
            # "cuda11" is a CUDA major (the local-CUDA wheels); "cuda112" is CUDA 11.2, "cuda101" 10.1
            digits = m.group("cuda")
            cuda = "%s.%s" % (digits[:-1], digits[-1]) if len(digits) >= 3 else digits
            if m.group("cudnn"):
                c = m.group("cudnn")
                # "cudnn86" is 8.6, "cudnn805" 8.0.5 (jaxlib 0.3.x's CUDA 11.1 wheels)
                cudnn = ".".join([c[0], c[1], c[2:]]) if len(c) == 3 else f"{c[0]}.{c[1:]}" if len(c) > 1 else c
    if jaxlib and cuda is None:
        conda = _conda_build(host, jaxlib)
        if conda is not None:
            value["conda_build"] = conda
            m = _CONDA_CUDA_BUILD.match(conda)
            if m:  # conda-forge's CUDA jaxlib: build "cuda120py312h..." is CUDA 12.0 (its version has no +cuda tag)
                digits = m.group("cuda")
                cuda = "%s.%s" % (digits[:-1], digits[-1]) if len(digits) >= 3 else digits
    for name in plugins:
        cuda = cuda or _JAX_PLUGIN.match(name).group("cuda")  # type: ignore[union-attr]
    value["cuda"] = cuda
    value["cudnn"] = cudnn
    value["build"] = "cuda" if cuda else "cpu"
    mismatched = []
    if jaxlib:
        lib_v = split_local(jaxlib.version)[0]
        for name, v in plugins.items():
            try:
                if Version(split_local(v)[0]) != Version(lib_v):
                    mismatched.append(f"{name} {v}")
            except InvalidVersion:
                mismatched.append(f"{name} {v}")
    value["plugins_match_jaxlib"] = not mismatched if plugins else None
    value["mismatched_plugins"] = mismatched
    if plugins:
        wheels: Dict[str, Dict[str, Any]] = {}
        env = target_environment(host)
        for name in plugins:
            wheels.update(nvidia_wheels(Metadata(host, dists[name]).applying(env, extra="with-cuda"), dists,
                                        host, env))
        value["nvidia_wheels"] = wheels
    facts = [ok("framework.jax", value, "dir:" + main.metadata_dir, "JAX")]
    if value["build"] == "cuda":
        facts.append(ok("framework.jax.ptxas", _ptxas_candidates(host, dists), "env:PATH",
                        "ptxas XLA may run (first on PATH; the nvidia-cuda-nvcc wheel's)"))
    return facts


# -- Triton (torch.compile's kernel compiler) --------------------------------------

#: (torchtriton: the name of PyTorch's own Triton builds its nightlies pinned in late 2022, pytorch-triton since)
TRITON_PACKAGES = ("triton", "pytorch-triton", "torchtriton")
#: The C compiler's own include folders (GCC's on Debian/Ubuntu and Red Hat x86-64 and aarch64) and the variables that
#: add to them: a header there needs no -I.
CC_INCLUDE_DIRS = ("/usr/local/include", "/usr/include", "/usr/include/x86_64-linux-gnu",
                   "/usr/include/aarch64-linux-gnu")
CC_INCLUDE_VARS = ("CPATH", "C_INCLUDE_PATH")


def _launcher_cuda_h(host: Host, d: Distribution, environ: Dict[str, str]) -> Optional[Dict[str, Any]]:
    """Where this Triton's launcher build finds cuda.h (the matrix's ``launcher_include``): ``{found, searched,
    cuda_home, bundled}``; None when the release's rule is not known, or its bundled CUDA folder (which every wheel of
    these releases has, holding ptxas) is not there: the install's layout is then not what the rule reads."""
    from ..matrix import hardware

    row = hardware.triton_release(d.version)
    inc = row.get("launcher_include") if row else None
    if not isinstance(inc, dict):
        return None
    bundled = posixpath.join(d.location, inc["bundled"])
    if not host.is_dir(posixpath.dirname(bundled)):
        return None
    searched: List[str] = []
    home, how = None, None
    chain = list(inc.get("cuda_home") or [])
    for name in chain[:-1]:
        if environ.get(name):
            home, how = environ[name], name
            break
    if chain and home is None:
        home, how = chain[-1], "default"
    if home:
        searched.append(posixpath.join(home, "include"))
    searched.append(bundled)
    for var in CC_INCLUDE_VARS:
        searched += [p for p in (environ.get(var) or "").split(":") if p.startswith("/") and p not in searched]
    searched += [p for p in CC_INCLUDE_DIRS if p not in searched]
    found = next((p for p in searched if host.exists(posixpath.join(p, "cuda.h"))), None)
    return {"found": posixpath.join(found, "cuda.h") if found else None, "searched": searched,
            "cuda_home": home, "cuda_home_from": how, "bundled": bundled}



def _triton_search(version: str) -> Tuple[List[str], Optional[str]]:
    """Where this Triton release looks for ptxas, in order, and the variable that must be set before it runs one
    (the matrix's ``triton`` rows); a release no row holds is searched as the newest rows search."""
    from ..matrix import hardware, load

    row = hardware.triton_release(version)
    if row is not None:
        return list(row["ptxas_search"]), row.get("ptxas_gate")
    places: List[str] = []
    for r in reversed(load("triton")):
        places += [p for p in r["ptxas_search"] if p != "PATH" and p not in places]
    return places, None


def triton_fact(host: Host, dists: Dict[str, Distribution]) -> Fact:
    """framework.torch.triton: the Triton package torch.compile uses and the ptxas it runs (path, where it comes
    from: TRITON_PTXAS_PATH, bundled with it, or the first on PATH for the releases that search it; its CUDA
    release from ``ptxas --version``)."""
    d = next(dists[p] for p in TRITON_PACKAGES if p in dists)
    label = "Triton's ptxas (torch.compile)"
    value: Dict[str, Any] = {"package": d.key, "version": d.version, "ptxas": None, "from": None,
                             "release": None, "ptxas_version": None}
    environ = host.environ()
    launcher = _launcher_cuda_h(host, d, environ)
    if launcher is not None:
        value["launcher_cuda_h"] = launcher
    places, gate = _triton_search(d.version)
    path, how = "", ""
    if gate and not environ.get(gate):
        places = []  # without that variable the release hands its PTX to the driver and runs no ptxas
    for place in places:
        if place == "TRITON_PTXAS_PATH":
            path, how = environ.get("TRITON_PTXAS_PATH", ""), "TRITON_PTXAS_PATH"
        elif place == "PATH":
            path, how = host.which("ptxas") or "", "PATH"
        else:
            rel = place.split(":", 1)[1]
            path = posixpath.join(d.location, rel) if host.exists(posixpath.join(d.location, rel)) else ""
            how = "bundled"
        if path:
            break
    if not path:
        return ok("framework.torch.triton", value, "dir:" + d.metadata_dir, label)
    value.update({"ptxas": path, "from": how})
    if how == "PATH":
        value["resolved"] = host.resolve(path)
    argv = [path, "--version"]
    src = "command:" + " ".join(argv)
    r = host.run(argv, timeout=15)
    if r.timed_out:
        return timed_out("framework.torch.triton", "%s --version hung (no answer within %.1fs)" % (path, r.duration),
                         src, label)
    parsed = parse_nvcc_version(r.stdout) if r.ok else None
    if parsed:
        value.update({"release": parsed[0], "ptxas_version": parsed[1]})
        return ok("framework.torch.triton", value, src, label)
    why = r.describe_failure() if not r.ok else "unexpected output of %s --version: %r" % (
        path, r.stdout.strip()[-80:])
    if how == "PATH":
        # a toolkit's ptxas: the checks read its release from the toolkit it lies in
        value["version_error"] = why
        return ok("framework.torch.triton", value, src, label)
    return unknown("framework.torch.triton", why, src, label)


# -- ONNX Runtime ----------------------------------------------------------------

ORT_PACKAGES = ("onnxruntime-gpu", "onnxruntime", "onnxruntime-training", "onnxruntime-directml",
                "onnxruntime-openvino", "onnxruntime-rocm", "ort-nightly-gpu", "ort-nightly")


def onnxruntime_fact(host: Host, dists: Dict[str, Distribution]) -> List[Fact]:
    found = [dists[p] for p in ORT_PACKAGES if p in dists]
    d = found[0]  # the GPU package first: it is the one whose CUDA matters
    value: Dict[str, Any] = _version_of(d)
    value["packages"] = {x.key: x.version for x in found}
    value["gpu"] = any(x.key.endswith("-gpu") for x in found)
    # Both wheels write the same onnxruntime/ directory: the last one installed
    # wins file by file, and the CUDA provider may silently be missing.
    value["conflict"] = len(found) > 1
    # ORT's own validation (onnxruntime/capi/onnxruntime_validation.py) reads build_and_package_info.py:
    # package_name and __version__ always, cuda_version only in CUDA builds.  Older wheels wrote
    # version_info.py (use_cuda, cuda_version, cudnn_version) instead.
    capi = posixpath.join(d.location, "onnxruntime", "capi")
    vpath = posixpath.join(capi, "build_and_package_info.py")
    lits, why = read_literals(host, vpath)
    if why:
        old_lits, old_why = read_literals(host, posixpath.join(capi, "version_info.py"))
        if not old_why:
            vpath, lits, why = posixpath.join(capi, "version_info.py"), old_lits, None
    elif "use_cuda" not in lits:
        lits = dict(lits, use_cuda=bool(lits.get("cuda_version")))
    if lits.get("package_name"):
        value["build_package"] = lits["package_name"]
    value["cuda"] = lits.get("cuda_version") or None
    value["cudnn"] = lits.get("cudnn_version") or None
    value["use_cuda"] = lits.get("use_cuda")
    if why and value["gpu"]:
        value["details_error"] = why
    facts = [ok("framework.onnxruntime", value, "file:" + vpath if not why else "dir:" + d.metadata_dir,
                "ONNX Runtime")]
    if value["conflict"]:
        facts.append(ok("framework.onnxruntime_conflict", sorted(value["packages"]), "derived",
                        "Several ONNX Runtime packages installed over each other"))
    return facts


# -- PaddlePaddle ----------------------------------------------------------------


def paddle_fact(host: Host, dists: Dict[str, Distribution]) -> List[Fact]:
    found = [dists[p] for p in ("paddlepaddle-gpu", "paddlepaddle") if p in dists]
    d = found[0]
    value: Dict[str, Any] = _version_of(d)
    value["packages"] = {x.key: x.version for x in found}
    vpath = posixpath.join(d.location, "paddle", "version", "__init__.py")
    lits, why = read_literals(host, vpath)
    if why:  # Paddle before 2.x: a module paddle/version.py with the same variables
        old_path = posixpath.join(d.location, "paddle", "version.py")
        old_lits, old_why = read_literals(host, old_path)
        if not old_why:
            vpath, lits, why = old_path, old_lits, None
    cuda = lits.get("cuda_version")
    cudnn = lits.get("cudnn_version")
    # CPU builds write the string 'False' for both.
    value["cuda"] = cuda if isinstance(cuda, str) and cuda not in ("False", "") else None
    value["cudnn"] = cudnn if isinstance(cudnn, str) and cudnn not in ("False", "") else None
    value["full_version"] = lits.get("full_version")
    value["commit"] = lits.get("commit")
    with_gpu = lits.get("with_gpu")
    if isinstance(with_gpu, str):
        with_gpu = with_gpu.upper() == "ON"
    # paddlepaddle-gpu is a GPU build even when its version file names no CUDA (1.x wrote none)
    gpu_package = d.key == "paddlepaddle-gpu" and with_gpu is not False
    value["build"] = "cuda" if (value["cuda"] or with_gpu is True or gpu_package) else (
        "cpu" if not why else "unknown")
    if why:
        value["details_error"] = why
    return [ok("framework.paddle", value, "file:" + vpath if not why else "dir:" + d.metadata_dir, "PaddlePaddle")]


# -- CuPy, TensorRT, MXNet, Keras ------------------------------------------------

_CUPY = lazyre.compile(r"^cupy(?:-cuda(?P<cuda>\d+x|\d+))?$")
_MXNET = lazyre.compile(r"^mxnet(?:-cu(?P<cuda>\d+))?(?P<flavor>mkl)?$")
#: TensorRT's pip packages: the metapackage, the runtime of a CUDA major and its parts, of the full runtime and of
#: the lean and dispatch runtimes (``matrix/data/tensorrt_wheels.json``)
_TRT = lazyre.compile(r"^tensorrt(?:-(?:lean|dispatch))?(?:-cu(?P<cuda>\d+))?(?:[-_](?:libs|bindings))?$")


def _cuda_from_suffix(s: str) -> str:
    """``12x`` -> ``12``; ``112`` -> ``11.2``; ``102`` -> ``10.2``; ``12`` -> ``12``."""
    if s.endswith("x"):
        return s[:-1]
    if len(s) >= 3:
        return f"{s[:-1]}.{s[-1]}"
    return s


def cupy_fact(dists: Dict[str, Distribution]) -> List[Fact]:
    found = [(k, d, _CUPY.match(k)) for k, d in dists.items() if _CUPY.match(k)]
    _, d, m = found[0]
    value: Dict[str, Any] = _version_of(d)
    value["packages"] = {k: x.version for k, x, _ in found}
    cuda = m.group("cuda") if m else None
    value["cuda"] = _cuda_from_suffix(cuda) if cuda else None
    value["build"] = "cuda" if cuda else "source"
    value["conflict"] = len(found) > 1
    return [ok("framework.cupy", value, "dir:" + d.metadata_dir, "CuPy")]


def tensorrt_fact(dists: Dict[str, Distribution]) -> List[Fact]:
    found = [(k, d, _TRT.match(k)) for k, d in sorted(dists.items()) if _TRT.match(k)]
    main = next((x for x in found if x[0] == "tensorrt"), found[0])
    _, d, _ = main
    value: Dict[str, Any] = _version_of(d)
    value["packages"] = {k: x.version for k, x, _ in found}
    cudas = sorted({m.group("cuda") for _, _, m in found if m and m.group("cuda")})
    value["cuda"] = cudas[0] if len(cudas) == 1 else (cudas or None)
    return [ok("framework.tensorrt", value, "dir:" + d.metadata_dir, "TensorRT (Python)")]




def mxnet_fact(dists: Dict[str, Distribution], host: Optional[Host] = None) -> List[Fact]:
    """framework.mxnet: the CUDA build named by its package (``mxnet-cu101``); for the plain ``mxnet`` package, which
    is both PyPI's CPU build and the name a source build installs under (``setup.py install``), the NEEDED entries of
    the ``libmxnet.so`` it holds decide: one built with USE_CUDA=1 links the CUDA runtime and the driver."""
    found = [(k, d, _MXNET.match(k)) for k, d in sorted(dists.items()) if _MXNET.match(k)]
    _, d, m = found[0]
    value: Dict[str, Any] = _version_of(d)
    value["packages"] = {k: x.version for k, x, _ in found}
    cuda = m.group("cuda") if m else None
    value["cuda"] = _cuda_from_suffix(cuda) if cuda else None
    value["build"] = "cuda" if cuda else "cpu"
    if not cuda and host is not None:
        elf = host.elf(posixpath.join(d.location, "mxnet", "libmxnet.so"))
        # one built with USE_CUDA=1 links the CUDA runtime (libcudart.so.7.5) and the driver
        cudart = next((v for v in map(versions.cuda_of_cudart, elf.needed) if v), None) if elf.ok else None
        if elf.ok and (cudart or "libcuda.so.1" in elf.needed):
            value["build"] = "cuda"
            value["cuda"] = cudart
    value["legacy"] = True  # retired to the Apache Attic in 2023
    return [ok("framework.mxnet", value, "dir:" + d.metadata_dir, "MXNet")]


#: A CUDA build of TVM links the CUDA runtime and driver into its runtime library (cmake/modules/CUDA.cmake appends
#: CUDA_CUDART_LIBRARY and CUDA_CUDA_LIBRARY to TVM_RUNTIME_LINKER_LIBS when USE_CUDA is on); the NVRTC library too.
_TVM_CUDA = lazyre.compile(r"^lib(?:cudart|cuda|nvrtc)\.so(?:\.|$)")
#: Where an installed TVM keeps its libraries (the wheel: tvm/; some builds: tvm/lib/ or build/).
_TVM_LIBS = ("tvm/libtvm_runtime.so", "tvm/libtvm.so", "tvm/lib/libtvm_runtime.so", "tvm/lib/libtvm.so")


def tvm_fact(host: Host, dists: Dict[str, Distribution]) -> List[Fact]:
    """framework.tvm: its version, and ``build`` ("cuda" or "cpu") from the NEEDED entries of the libraries it
    ships (None, with ``build_unknown`` saying why, when none could be read)."""
    d = dists["apache-tvm"]
    value: Dict[str, Any] = _version_of(d)
    read, why = [], "no libtvm_runtime.so or libtvm.so beside the package"
    for rel in _TVM_LIBS:
        path = posixpath.join(d.location, rel)
        if not host.exists(path):
            continue
        elf = host.elf(path)
        if not elf.ok:
            why = "%s cannot be read (%s)" % (path, elf.error)
            continue
        read.append((path, [n for n in elf.needed if _TVM_CUDA.match(n)]))
    cuda = sorted({n for _, names in read for n in names})
    value["build"] = ("cuda" if cuda else "cpu") if read else None
    value["cuda_libraries"] = cuda
    value["libraries"] = [p for p, _ in read]
    if not read:
        value["build_unknown"] = why
    return [ok("framework.tvm", value, "elf:" + read[0][0] if read else "dir:" + d.metadata_dir, "Apache TVM")]


#: What counts as "a framework is installed" (the framework plug-ins, envdoctor/frameworks/).
FRAMEWORK_NAMES = framework_table.PROBED
#: The frameworks read by a reader of their own above (the others: :func:`plugin_facts`).
OWN_READERS = ("torch", "tensorflow", "jax", "onnxruntime", "paddle", "cupy", "tensorrt", "mxnet", "keras", "tvm")


def plugin_facts(dists: Dict[str, Distribution]) -> List[Fact]:
    """A framework plug-in with no reader of its own: the version of the first of its distributions installed
    (its ``distributions`` pattern), labelled with its display name. Companions are shown on their framework's
    line, never alone."""
    facts: List[Fact] = []
    for fw in framework_table.FRAMEWORKS:
        if fw.name in OWN_READERS or fw.companion_of or not fw.distributions:
            continue
        found = sorted(k for k in dists if re.fullmatch(fw.distributions, k))
        if found:
            d = dists[found[0]]
            value = _version_of(d)
            value["packages"] = {k: dists[k].version for k in found}
            facts.append(ok("framework." + fw.name, value, "dir:" + d.metadata_dir, fw.display))
    return facts


def _torch_without_metadata(host: Host, sys_path: Iterable[str]) -> Optional[Distribution]:
    """torch importable from ``sys_path`` without a .dist-info/.egg-info (some conda packages, copied trees,
    ``setup.py develop`` checkouts): its own ``torch/version.py`` names the version, as ``import torch`` would."""
    for entry in sys_path:
        if not entry or entry.endswith(".zip"):
            continue
        path = posixpath.join(entry, "torch", "version.py")
        if not host.exists(path):
            continue
        lits, why = read_literals(host, path)
        version = lits.get("__version__")
        if why is None and isinstance(version, str) and version:
            return Distribution("torch", version, posixpath.join(entry, "torch"), entry)
        return None  # the first torch on sys.path is the one imported
    return None


@register("frameworks", "Python frameworks", order=90,
          produces=("framework.*", "framework.jax.ptxas", "framework.torch.triton"))
def probe_frameworks(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    py = host.python()
    if py.error or not py.sys_path:
        why = ("cannot inspect the interpreter {} ({}{})".format(py.executable or "?", py.error,
                                                              ": " + py.message if py.message else "")
               if py.error else "the interpreter reports an empty sys.path")
        return [unknown("framework.scan", why, "command:%s" % (py.executable or "python"), "Frameworks")]
    dists = {d.key: d for d in host.distributions()}
    if "torch" not in dists:
        unlisted = _torch_without_metadata(host, py.sys_path)
        if unlisted is not None:
            dists["torch"] = unlisted
    env = target_environment(host)
    facts: List[Fact] = []
    if "torch" in dists:
        facts += torch_fact(host, dists, env)
        if any(p in dists for p in TRITON_PACKAGES):
            facts.append(triton_fact(host, dists))
    if any(p in dists for p in TF_PACKAGES):
        facts += tensorflow_fact(host, dists, env)
    if "jax" in dists or "jaxlib" in dists:
        facts += jax_fact(host, dists)
    if any(p in dists for p in ORT_PACKAGES):
        facts += onnxruntime_fact(host, dists)
    if "paddlepaddle" in dists or "paddlepaddle-gpu" in dists:
        facts += paddle_fact(host, dists)
    if any(_CUPY.match(k) for k in dists):
        facts += cupy_fact(dists)
    if any(_TRT.match(k) for k in dists):
        facts += tensorrt_fact(dists)
    if any(_MXNET.match(k) for k in dists):
        facts += mxnet_fact(dists, host)
    if "apache-tvm" in dists:
        facts += tvm_fact(host, dists)
    if "keras" in dists:
        facts.append(ok("framework.keras", _version_of(dists["keras"]), "dir:" + dists["keras"].metadata_dir,
                        "Keras"))
    facts += plugin_facts(dists)
    cut = host.once("metadata_truncated", list)
    if cut:
        facts.append(ok("framework.metadata_truncated",
                        ["%s is larger than %d KiB and was read only that far: the NVIDIA libraries it requires "
                         "past that point are not seen" % (path, METADATA_LIMIT // 1024) for path in sorted(cut)],
                        "derived", "Package metadata cut short"))
    if not any(f.key.split(".")[1] in FRAMEWORK_NAMES for f in facts):
        facts.append(ok("framework.none",
                        "no deep-learning framework (PyTorch, TensorFlow, JAX, ONNX Runtime, PaddlePaddle, CuPy, "
                        "TensorRT, MXNet, Keras, Apache TVM) is installed for %s" % (py.executable or "this Python"),
                        "dir:" + ":".join(py.sys_path), "Frameworks"))
    return facts

"""Checks on the CUDA libraries frameworks load: what the questions (one topic per module) share.

* :mod:`.linkage`: a library the framework links (ELF) or opens at run time (dlopen) that the loader cannot find,
  or a system copy shadowing the one the framework ships;
* :mod:`.cudnn_build`: the cuDNN loaded against the one the framework was built with;
* :mod:`.cudnn_gpu`: the cuDNN loaded against the GPUs' architecture;
* :mod:`.wheels`: NVIDIA's pip wheels (files overwritten, links to another copy, versions the framework's
  requirements exclude) and ONNX Runtime's packaging.

They read the ``linkage.<framework>`` facts (each NEEDED soname resolved the way ``ld.so``
does, see :mod:`envdoctor.probes.linkage`), the framework facts, ``libraries.cudnn`` and
``libraries.loader_choice``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from ... import frameworks, matrix, versions
from ...facts import Facts
from ...findings import Fix
from ...matrix import builds
from ...matrix import frameworks as fwm
from .. import CodeDoc, Message, group
from ..suggest import install_line

CHECKED = "2026-11-22"
#: torch's own rule (torch/backends/cudnn/__init__.py, _init): different majors are always
#: incompatible; from cuDNN 7 a runtime minor >= the compile-time minor is accepted.
TORCH_CUDNN_RULE = {"rule": "cuDNN runtime must have the build's major and a minor >= the build's "
                            "(torch/backends/cudnn/__init__.py)",
                    "url": "https://github.com/pytorch/pytorch/blob/main/torch/backends/cudnn/__init__.py",
                    "checked": CHECKED}
LDSO_RULE = {"rule": "ld.so search order: DT_RPATH (without DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, "
                     "/etc/ld.so.cache, default dirs",
             "url": "https://man7.org/linux/man-pages/man8/ld.so.8.html", "checked": CHECKED}

#: Framework -> how users know it (the framework plug-ins, envdoctor/frameworks/).
NAMES = {f.name: f.display for f in frameworks.FRAMEWORKS}
#: soname stem -> component
STEMS = (("libcudnn", "cudnn"), ("libnccl", "nccl"), ("libnvinfer", "tensorrt"), ("libcublas", "cuda"),
         ("libcudart", "cuda"))


def component_of(soname: str) -> str:
    for stem, comp in STEMS:
        if soname.startswith((stem + ".", stem + "Lt.", stem + "_")):  # libnvinfer_plugin, libcudnn_ops_infer
            return comp
    return "cuda"


_v = versions.parse


def _evidence(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def _fw_version(facts: Facts, name: str) -> str:
    v = facts.mapping("framework." + name)
    text = "%s %s" % (name, v.get("version", "?"))
    if name == "jax" and v.get("jaxlib") and str(v["jaxlib"]).split("+")[0] != str(v.get("version")):
        text += " (jaxlib %s)" % v["jaxlib"]  # the CUDA build is jaxlib's
    return text


def _pip_fix_for(facts: Facts, fw: str, soname: str) -> Fix:
    value = facts.mapping("framework." + fw)
    comp = component_of(soname)
    if fw == "torch" and comp == "cudnn" and (value.get("cudnn_required") or {}).get("from") == "requires-dist":
        req = value["cudnn_required"]
        return Fix(text="Install the cuDNN wheel %s pins, so it loads its own copy." % _fw_version(facts, fw),
                   commands=["pip install '%s==%s'" % (req["package"], req["version"])])
    if fw == "tensorrt" and comp == "tensorrt":
        # the bindings are TensorRT's own: its libraries of the same release are what they need
        ver = str(value.get("public") or value.get("version") or "")
        trt_major = ver.split(".")[0] if ver[:1].isdigit() else ""
        return Fix(text="TensorRT's Python bindings %s link %s by name, without an RPATH: put the lib/ directory of "
                        "the TensorRT %s they came with (the tar file's TensorRT-%s/lib) on LD_LIBRARY_PATH, or "
                        "install TensorRT %s's libraries where the loader finds them." % (
                            ver, soname, ver or "release", ver or "<version>", trt_major or ver),
                   commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % d for d in sorted({
                       posixpath.dirname(str(c.get("path"))) for c in facts.items("libraries.tensorrt")
                       if isinstance(c, dict) and c.get("kind") == "library" and c.get("soname") == soname})][:1])
    tf_version = _v(value.get("public") or value.get("version")) if fw == "tensorflow" else None
    if fw == "tensorflow" and tf_version is not None and tf_version >= Version("2.14"):
        return Fix(text="Install TensorFlow with its CUDA wheels, which bring the cuDNN it was built with.",
                   commands=["pip install 'tensorflow[and-cuda]==%s'" % value.get("public", value.get("version"))])
    if fw == "tensorflow":
        # the [and-cuda] extra exists from TensorFlow 2.14 on; older releases take the CUDA and cuDNN of their
        # tested configuration from the system (or conda)
        row = dict(fwm.tensorflow_release(value.get("public") or value.get("version")) or {})
        wheel = builds.tensorflow_cudnn_built(value.get("public") or value.get("version"))
        built = _v(wheel[0]) if wheel else None
        if built is not None:  # the cuDNN the wheel was compiled with, which its check holds the loaded one to
            row["cudnn"] = "%d.%d" % (built.major, built.minor)
        linked = re.search(r"\.so\.(\d{1,2}\.\d)$", soname) if comp == "cuda" else None
        if not row.get("cuda") and linked:
            # a release outside the tested-configuration table (0.x): its CUDA is the one the soname it links names
            # (CUDA 7.5-10.x name their libraries' sonames <major>.<minor>: libcudart.so.8.0)
            return Fix(text="TensorFlow %s was built for CUDA %s (it links %s): install CUDA %s beside the one you "
                            "have, where the loader finds it (the driver decides which CUDA releases it runs), or "
                            "install a TensorFlow release built for your CUDA." % (
                                value.get("version"), linked.group(1), soname, linked.group(1)),
                       install=install_line(facts, "cuda", linked.group(1)))
        return Fix(text="TensorFlow %s has no [and-cuda] extra (it exists from 2.14): install CUDA %s and cuDNN %s "
                        "(%s) where the loader finds them, or upgrade TensorFlow to 2.14 or newer and use "
                        "tensorflow[and-cuda]." % (value.get("version"), row.get("cuda", "?"), row.get("cudnn", "?"),
                                                   "the one its wheel was compiled with" if built is not None
                                                   else "its tested configuration"),
                   commands=["conda install -c conda-forge 'cudatoolkit=%s' 'cudnn=%s'" % (row["cuda"], row["cudnn"])]
                   if row.get("cuda") and row.get("cudnn") else [])
    major = _soname_major(soname) or _soname_major("x.so.%s" % str(value.get("cudnn") or "").split(".")[0])
    cuda = str(value.get("cuda") or "12").split(".")[0]
    if comp == "cudnn" and major is not None and value.get("conda_build"):
        req = _required_cudnn(facts, fw) or {}
        want = _v(req.get("version"))
        floor = "%d.%d" % (want.major, want.minor) if want is not None and want.major == int(major) else major
        return Fix(text="%s is a conda package: install cuDNN %s from conda-forge into its environment (or a %s "
                        "release built for the cuDNN you have)." % (_fw_version(facts, fw), floor, NAMES[fw]),
                   commands=["conda install -c conda-forge 'cudnn>=%s,<%d'" % (floor, int(major) + 1)])
    if comp == "cudnn" and major is not None and fw == "jax":
        req = _required_cudnn(facts, fw) or {}
        want = _v(req.get("version"))
        floor = "%d.%d" % (want.major, want.minor) if want is not None and want.major == int(major) else major
        if not value.get("plugins"):
            # the monolithic jaxlib CUDA wheels load cuDNN from the system: the nvidia-cudnn wheels are not searched
            return Fix(text="This jaxlib loads cuDNN from LD_LIBRARY_PATH or the system: install cuDNN %s or a newer "
                            "%s.x there (NVIDIA's archive or package for CUDA %s), or install a jaxlib built for the "
                            "cuDNN you have." % (floor, major, value.get("cuda")),
                       install=install_line(facts, "cudnn", floor))
        return Fix(text="Install cuDNN %s or a newer %s.x wheel, which the CUDA plugin finds on its own." % (
                        floor, major),
                   commands=["pip install '%s>=%s,<%d'" % (versions.cu_wheel("nvidia-cudnn", cuda), floor,
                                                           int(major) + 1)])
    if comp == "cudnn" and major is not None:
        return Fix(text="Install cuDNN %s for CUDA %s (pip wheel, or the system package)." % (major, cuda),
                   commands=["pip install '%s>=%s,<%d'" % (versions.cu_wheel("nvidia-cudnn", cuda), major,
                                                       int(major) + 1)],
                   install=install_line(facts, "cudnn", major))
    if comp == "cudnn":
        return Fix(text="Install cuDNN for CUDA %s (pip wheel, or the system package) and make %s loadable: the "
                        "unversioned name is the development link to libcudnn.so.<major>." % (cuda, soname))
    return Fix(text="Install the library that provides %s for CUDA %s, or put its directory on the loader "
                    "path." % (soname, cuda))


def torch_variant(value: Dict[str, Any]) -> str:
    """The download.pytorch.org index of an installed torch: its local version tag (``+cpu``, ``+cu121``), else
    (PyPI's builds carry none) the CUDA it was built for (``cuda: '13.0'`` -> ``cu130``), else ``cpu``."""
    local = str(value.get("version") or "").partition("+")[2]
    if local == "cpu" or versions.cuda_of_tag(local) or re.match(r"^rocm[\d.]+$", local):
        return local
    return versions.cuda_tag(value.get("cuda")) or "cpu"


def _soname_major(soname: str) -> Optional[str]:
    """The major version a soname carries (``libcudnn.so.8`` and ``libcudnn.so.8.9.7`` -> "8"), or None for an
    unversioned name (``libcudnn.so``: the development link some frameworks dlopen) or a garbled one."""
    m = re.search(r"\.so\.(\d{1,4})(?:\.|$)", soname)
    return m.group(1) if m else None


def _version_at(facts: Facts, comp: str, resolved: Any) -> Optional[str]:
    """The version libraries.<comp> knows for a real file (wheel versions included), else its file name's."""
    for copy in facts.items("libraries." + comp) if comp in ("cudnn", "nccl", "tensorrt") else ():
        if isinstance(copy, dict) and resolved and copy.get("resolved") == resolved and copy.get("version"):
            return str(copy["version"])
    m = re.search(r"\.so\.(\d+(?:\.\d+)+)$", str(resolved or ""))
    return m.group(1) if m else None


def _cudnn_full_version(facts: Facts, entry: Dict[str, Any]) -> Optional[str]:
    """The cuDNN version of the file the loader resolved (libraries.cudnn knows wheel versions)."""
    for copy in facts.items("libraries.cudnn"):
        if isinstance(copy, dict) and copy.get("resolved") and copy.get("resolved") == entry.get("resolved"):
            if copy.get("version"):
                return str(copy["version"])
    return entry.get("version")


_FRAMEWORK_LINKAGE_DOCS = (
    CodeDoc("cudnn.framework_cannot_load", "error", "A framework needs a cuDNN soname the loader cannot find.",
            "linkage.<framework>", "Importing or first using the GPU fails with 'libcudnn.so.N: cannot open "
            "shared object file'.", LDSO_RULE["url"]),
    CodeDoc("cuda.framework_cannot_load", "error", "A framework needs a CUDA library (cuBLAS, cudart) the loader "
            "cannot find.", "linkage.<framework>", "The framework fails to load its CUDA part.", LDSO_RULE["url"]),
    CodeDoc("nccl.framework_cannot_load", "error", "A framework needs an NCCL soname the loader cannot find.",
            "linkage.<framework>", "Distributed training cannot start.", LDSO_RULE["url"]),
    CodeDoc("tensorrt.framework_cannot_load", "error", "A framework needs a TensorRT soname the loader cannot "
            "find.", "linkage.<framework>", "The TensorRT path of the framework fails to load.", LDSO_RULE["url"]),
    CodeDoc("cudnn.shadowed", "warning", "Another cuDNN file wins over the copy the framework ships.",
            "linkage.<framework>", "The framework runs with a cuDNN it was not built and tested with.",
            LDSO_RULE["url"]),
    CodeDoc("cuda.shadowed", "warning", "Another cuBLAS/cudart file wins over the framework's copy.",
            "linkage.<framework>", "Mixed CUDA library versions cause symbol errors or wrong kernels.",
            LDSO_RULE["url"],
        messages=(Message("undefined symbol: __nvJitLink*",
                "https://github.com/pytorch/pytorch/issues/111469"),)),
    CodeDoc("nccl.shadowed", "warning", "Another NCCL file wins over the framework's copy.",
            "linkage.<framework>", "NCCL versions differ across ranks or from what the framework expects.",
            LDSO_RULE["url"]),
    CodeDoc("tensorrt.shadowed", "warning", "Another TensorRT file wins over the framework's copy.",
            "linkage.<framework>", "TensorRT engines are tied to the exact TensorRT version.", LDSO_RULE["url"]),
)


def _tested_cudnn(fw: str, v: Dict[str, Any]) -> Optional[Tuple[str, str, Dict[str, Any]]]:
    """The cuDNN the matrix says a TensorFlow release / a JAX CUDA variant was built with: (version, where from,
    source). For TensorFlow, the cuDNN its pip wheel was compiled with (read from the wheel, framework_builds) wins
    over the tested-build table's, which may name another."""
    if fw == "tensorflow":
        wheel = builds.tensorflow_cudnn_built(v.get("public") or v.get("version"))
        if wheel is not None:
            compiled, brow = wheel
            return (compiled, "the TensorFlow %s pip wheel, compiled with cuDNN %s (its cuDNN check's source "
                              "version)" % (v.get("public") or v.get("version"), compiled),
                    {"rule": "TensorFlow %s was compiled with cuDNN %s; a runtime of the same major and an older "
                             "minor is refused ('Loaded runtime CuDNN library: ... but source was compiled with: "
                             "...')" % (v.get("public") or v.get("version"), compiled),
                     "url": brow.get("source", {}).get("url"), "checked": brow.get("source", {}).get("checked"),
                     "verified": not matrix.unverified(brow)})
        row = fwm.tensorflow_release(v.get("public") or v.get("version"))
        if row and row.get("cudnn"):
            return (str(row["cudnn"]), "TensorFlow %s's tested build configuration" % row["version"],
                    {"rule": "TensorFlow %s is built with cuDNN %s; a runtime of the same major and an older "
                             "minor is refused" % (row["version"], row["cudnn"]),
                     "url": row.get("source", {}).get("url"), "checked": row.get("source", {}).get("checked")})
    if fw == "jax":
        built = builds.jax_cudnn_built(v)
        if built:
            cudnn, row = built
            what = "jaxlib %s" % v.get("jaxlib") if row.get("framework") == "jaxlib" else "jax %s" % v.get("version")
            return (cudnn, "%s's CUDA %s build (matrix)" % (what, v.get("cuda")),
                    {"rule": "%s's CUDA build requires cuDNN %s or a newer minor of that major; XLA refuses an "
                             "older minor ('CuDNN library needs to have matching major version and equal or "
                             "higher minor version')" % (what, cudnn),
                     "url": row.get("source", {}).get("url"), "checked": row.get("source", {}).get("checked"),
                     "verified": not matrix.unverified(row) if row else False})
    return None


def _conda_pin_floor(spec: Any) -> Optional[str]:
    """The lowest version a conda pin admits, which the package was built with (``7.0.*`` -> ``7.0``,
    ``>=7.1.2,<8.0a0`` -> ``7.1.2``, ``7.0.5`` -> ``7.0.5``), or None without a major.minor."""
    for clause in str(spec or "").split(","):
        clause = clause.strip()
        if clause.startswith((">=", "==")):
            clause = clause[2:]
        elif clause[:1] in ("<", ">", "!", "~"):
            continue
        clause = re.sub(r"\.\*$", "", clause)
        if re.match(r"^\d+\.\d+(\.\d+)*$", clause):
            return clause
    return None


def _required_cudnn(facts: Facts, fw: str) -> Optional[Dict[str, Any]]:
    """What cuDNN the framework was built for: {version, from, source, verified}."""
    v = facts.mapping("framework." + fw)
    pin = v.get("cudnn_conda")
    floor = _conda_pin_floor(pin.get("spec")) if fw == "tensorflow" and isinstance(pin, dict) else None
    if floor is not None and isinstance(pin, dict):
        # a conda build: its record pins the cuDNN it was built with (more exact than a major in build info)
        return {"version": floor, "from": "the conda package %s, which depends on cudnn %s" % (
                    pin.get("package"), pin.get("spec")),
                "source": dict(TORCH_CUDNN_RULE, rule="cuDNN runtime must have the build's major (and a minor the "
                                                      "release accepts: see its row in framework_builds)")}
    if fw == "torch":
        req = v.get("cudnn_required")
        if not isinstance(req, dict) or not req.get("version") or "," in str(req["version"]):
            return None
        src = dict(TORCH_CUDNN_RULE)
        var = fwm.torch_variant(v.get("version")) or fwm.torch_variant_for_cuda(v.get("version"), v.get("cuda"))
        version, origin = str(req["version"]), "%s (%s)" % (req.get("package") or "bundled", req.get("from"))
        if var is not None:
            row = fwm.torch_release(v.get("version")) or {}
            src.update(url=row.get("source", {}).get("url", src["url"]),
                       checked=row.get("source", {}).get("checked", CHECKED))
            built = _v(var.get("cudnn"))
            # a bundled copy named only by its major: the matrix knows which cuDNN that wheel ships
            if "." not in version and built is not None and str(built.release[0]) == version:
                version, origin = str(var["cudnn"]), "the cuDNN torch %s %s wheels ship (matrix)" % (
                    row.get("version"), var.get("tag"))
        return {"version": version, "from": origin, "source": src}
    if fw in ("tensorflow", "jax") and v.get("cudnn"):
        version, origin = str(v["cudnn"]), "build info"
        src = dict(TORCH_CUDNN_RULE, rule="cuDNN runtime must have the build's major (and a minor >= the build's)")
        tested = _tested_cudnn(fw, v)
        if tested is not None and "." not in version and tested[0].split(".")[0] == version:
            version, origin, src = tested[0], tested[1], dict(tested[2])
            src.pop("verified", None)
        return {"version": version, "from": origin, "source": src}
    if fw in ("tensorflow", "jax") and v.get("build") == "cuda":
        # no build information names the cuDNN (old jaxlib, conda builds): the matrix does
        tested = _tested_cudnn(fw, v)
        if tested is None:
            return None
        src = dict(tested[2])
        return {"version": tested[0], "from": tested[1], "verified": src.pop("verified", True), "source": src}
    if fw == "onnxruntime" and v.get("gpu"):
        rel = fwm.onnxruntime_release(v.get("version"))
        if rel is None:
            return None
        src = {"rule": "onnxruntime-gpu %s is built for cuDNN %s" % (rel["version"], rel["cudnn_major"]),
               "url": rel["source"].get("url"), "checked": rel["source"].get("checked")}
        built = v.get("cudnn")
        return {"version": str(built) if built else rel["cudnn_major"], "from": "matrix",
                "source": src, "verified": not matrix.unverified({"source": rel["source"]})}
    return None


#: Why the loader takes a copy, by how it was found (ld.so(8)'s order).
WHY = {
    "RPATH": "the framework's own DT_RPATH, searched before everything else",
    "LD_LIBRARY_PATH": "LD_LIBRARY_PATH, searched before a library's RUNPATH, the ld.so cache and the default "
                       "directories",
    "RUNPATH": "the framework's own RUNPATH (nothing on LD_LIBRARY_PATH has it)",
    "ldconfig cache": "the ld.so cache (nothing on LD_LIBRARY_PATH or in the framework's own directories has it)",
    "default dir": "a default directory (nothing earlier in the search has it)",
}


def _copies_of(facts: Facts, comp: str) -> List[Dict[str, Any]]:
    """Every library file of a component (cudnn, nccl, tensorrt) on the machine, one per real file."""
    out: List[Dict[str, Any]] = []
    seen = set()
    for copy in facts.items("libraries." + comp) if comp in ("cudnn", "nccl", "tensorrt") else ():
        real = copy.get("resolved") or copy.get("path") if isinstance(copy, dict) else None
        if not real or copy.get("kind") != "library" or real in seen:
            continue
        seen.add(real)
        out.append({"version": str(copy.get("version") or "?"), "path": str(copy.get("path")),
                    "resolved": str(real), "found_by": str(copy.get("found_by") or "?")})
    return out


def _why(via: Any) -> str:
    return WHY.get(str(via), "the loader's search (%s)" % via)


def _cudnn_copies(facts: Facts) -> List[Dict[str, Any]]:
    """Every cuDNN library file on the machine (one per real file): {version, path, resolved, found_by}."""
    return _copies_of(facts, "cudnn")


def _drop_ldp_entry(directory: str) -> str:
    """The shell line that removes one directory from LD_LIBRARY_PATH and keeps the others."""
    return ('export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s | paste -sd:)"'
            % directory)


#: Each question over every framework at once.
framework_linkage = group("framework-linkage")
cudnn_version = group("cudnn-version")

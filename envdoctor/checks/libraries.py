"""Checks on the CUDA libraries frameworks load: cuDNN too old or of another major than the
framework was built with, a system copy shadowing the one the framework ships, a library the
loader cannot find, and ONNX Runtime packaging (CPU and GPU wheels together, cuDNN major).

They read the ``linkage.<framework>`` facts (each NEEDED soname resolved the way ``ld.so``
does, see :mod:`envdoctor.probes.linkage`), the framework facts, ``libraries.cudnn`` and
``libraries.loader_choice``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from packaging.version import Version

from .. import matrix, versions
from ..facts import Facts
from ..findings import Finding, Fix
from ..matrix import builds
from ..matrix import frameworks as fwm
from . import CheckContext, CodeDoc, check, group
from .suggest import INSTALL_LINE_READS, install_line

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

FRAMEWORKS = ("torch", "tensorflow", "jax", "onnxruntime")
NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX", "onnxruntime": "ONNX Runtime",
         "cupy": "CuPy", "paddle": "PaddlePaddle", "mxnet": "MXNet"}
#: soname stem -> component
STEMS = (("libcudnn", "cudnn"), ("libnccl", "nccl"), ("libnvinfer", "tensorrt"), ("libcublas", "cuda"),
         ("libcudart", "cuda"))


def per_framework(question: Callable[[Facts, str], Iterable[Finding]], name: str, fw: str,
                  codes: Sequence[CodeDoc], requires: Sequence[str], reads: Sequence[str],
                  layers: Sequence[str]) -> None:
    """Register ``question`` for one framework as the check ``name.fw``."""
    def run(ctx: CheckContext) -> Iterable[Finding]:
        return question(ctx.facts, fw)
    check("%s.%s" % (name, fw), codes=codes, requires=requires, reads=reads, layers=layers)(run)


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
    tf_version = _v(value.get("public") or value.get("version")) if fw == "tensorflow" else None
    if fw == "tensorflow" and tf_version is not None and tf_version >= Version("2.14"):
        return Fix(text="Install TensorFlow with its CUDA wheels, which bring the cuDNN it was built with.",
                   commands=["pip install 'tensorflow[and-cuda]==%s'" % value.get("public", value.get("version"))])
    if fw == "tensorflow":
        # the [and-cuda] extra exists from TensorFlow 2.14 on; older releases take the CUDA and cuDNN of their
        # tested configuration from the system (or conda)
        row = fwm.tensorflow_release(value.get("public") or value.get("version")) or {}
        return Fix(text="TensorFlow %s has no [and-cuda] extra (it exists from 2.14): install CUDA %s and cuDNN %s "
                        "(its tested configuration) where the loader finds them, or upgrade TensorFlow to 2.14 or "
                        "newer and use tensorflow[and-cuda]." % (value.get("version"), row.get("cuda", "?"),
                                                                 row.get("cudnn", "?")),
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
                   commands=["pip install 'nvidia-cudnn-cu%s>=%s,<%d'" % (cuda, floor, int(major) + 1)])
    if comp == "cudnn" and major is not None:
        return Fix(text="Install cuDNN %s for CUDA %s (pip wheel, or the system package)." % (major, cuda),
                   commands=["pip install 'nvidia-cudnn-cu%s>=%s,<%d'" % (cuda, major, int(major) + 1)],
                   install=install_line(facts, "cudnn", major))
    if comp == "cudnn":
        return Fix(text="Install cuDNN for CUDA %s (pip wheel, or the system package) and make %s loadable: the "
                        "unversioned name is the development link to libcudnn.so.<major>." % (cuda, soname))
    return Fix(text="Install the library that provides %s for CUDA %s, or put its directory on the loader "
                    "path." % (soname, cuda))


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
            LDSO_RULE["url"]),
    CodeDoc("nccl.shadowed", "warning", "Another NCCL file wins over the framework's copy.",
            "linkage.<framework>", "NCCL versions differ across ranks or from what the framework expects.",
            LDSO_RULE["url"]),
    CodeDoc("tensorrt.shadowed", "warning", "Another TensorRT file wins over the framework's copy.",
            "linkage.<framework>", "TensorRT engines are tied to the exact TensorRT version.", LDSO_RULE["url"]),
)


def _framework_linkage(facts: Facts, fw: str) -> Iterable[Finding]:
    yield from _extension_cannot_load(facts, fw)
    entries = facts.value("linkage." + fw)
    if not isinstance(entries, list):
        return
    for e in entries:
        if not isinstance(e, dict):
            continue
        soname = e.get("soname", "")
        comp = component_of(soname)
        comps = [comp, fw] if comp != "cuda" else ["cuda", fw]
        ev = _evidence(facts, "linkage." + fw, "linkage.%s.elf" % fw)
        yield from _foreign_cudnn_parts(facts, fw, e, ev)
        if not e.get("path") and e.get("cache_unknown"):
            # Not found outside the ld.so cache, and the cache itself could not be read: maybe it is there.
            yield Finding(
                code="%s.framework_cannot_load" % comp, severity="warning", components=comps,
                title="%s needs %s, which is not in its RPATH/RUNPATH, LD_LIBRARY_PATH or the default "
                      "directories; the ld.so cache could not be read to tell" % (_fw_version(facts, fw), soname),
                detail="%s (%s) fails with '%s: cannot open shared object file' unless the ld.so cache lists "
                       "it, and envdoctor could not read the cache: %s." % (
                           NAMES[fw], e.get("how", "NEEDED"), soname, e["cache_unknown"]),
                evidence=_evidence(facts, "linkage." + fw, "linkage.%s.elf" % fw, "libraries.ld_cache"),
                source=dict(LDSO_RULE), fix=Fix(
                    text="Check whether the cache lists it; if not, install it as below.",
                    commands=["ldconfig -p | grep -F '%s'" % soname] + _pip_fix_for(facts, fw, soname).commands))
        elif not e.get("path"):
            yield Finding(
                code="%s.framework_cannot_load" % comp, severity="error", components=comps,
                title="%s needs %s, but the loader finds no such file" % (_fw_version(facts, fw), soname),
                detail="%s (%s) would fail with '%s: cannot open shared object file: No such file or "
                       "directory': it is not in the library's own RPATH/RUNPATH, LD_LIBRARY_PATH, the "
                       "ld.so cache or the default directories.%s" % (
                           NAMES[fw], e.get("how", "NEEDED"), soname, _installed_text(facts, comp)),
                evidence=ev, source=dict(LDSO_RULE), fix=_pip_fix_for(facts, fw, soname))
        elif e.get("shadowed"):
            # torch's own cuDNN rule decides whether the winner is merely different or too old:
            # that case is reported by cudnn-version (an error) instead.
            winner_version = _version_at(facts, comp, e.get("resolved"))
            yield Finding(
                code="%s.shadowed" % comp, severity="warning", components=comps,
                title="%s loads %s %sfrom %s (via %s), not the copy it ships at %s" % (
                    _fw_version(facts, fw), soname, "%s " % winner_version if winner_version else "",
                    e.get("resolved") or e.get("path"), e.get("via"), e.get("expected")),
                detail="The dynamic loader finds %s through %s before reaching the framework's own copy; the "
                       "framework then runs with a library it was not built and tested with.%s" % (
                           soname, _why(e.get("via")), _installed_text(facts, comp, e.get("resolved"))),
                evidence=ev, source=dict(LDSO_RULE),
                fix=Fix(text="Remove the directory holding %s from LD_LIBRARY_PATH (or drop its ld.so.conf "
                             "entry and run ldconfig) so the framework's own copy is used." % (
                                 e.get("resolved") or e.get("path")),
                        commands=[_drop_ldp_entry(posixpath.dirname(str(e.get("path") or e.get("resolved"))))
                                  if e.get("via") == "LD_LIBRARY_PATH" else "sudo ldconfig"]))


def _extension_cannot_load(facts: Facts, fw: str) -> Iterable[Finding]:
    """A PyTorch extension package (vLLM, flash-attn, ...) whose compiled module needs a CUDA library that neither
    the loader nor the framework provides: built for another CUDA than the framework's, it cannot be imported."""
    ext = facts.value("linkage.%s.extensions" % fw)
    if not isinstance(ext, list):
        return
    have = facts.mapping("framework." + fw)
    yield from _extension_for_other_build(facts, fw, [e for e in ext if isinstance(e, dict) and e.get("framework_lib")])
    if not _gpu_present(facts):
        return
    for e in ext:
        if not isinstance(e, dict) or not e.get("soname") or e.get("framework_lib"):
            continue
        soname, comp = str(e["soname"]), component_of(str(e["soname"]))
        want = re.match(r"^lib\w+?\.so\.(\d+)", soname)
        major = want.group(1) if want else "?"
        other = str(have.get("cuda") or "").split(".")[0] not in ("", major)
        yield Finding(
            code="%s.framework_cannot_load" % comp, severity="error", components=[comp, fw],
            title="%s %s needs %s, which neither the loader nor %s provides" % (
                e.get("package"), e.get("version"), soname, _fw_version(facts, fw)),
            detail="Its compiled module %s links %s; %s (CUDA %s) brings no such library, and it is not on "
                   "LD_LIBRARY_PATH, in the ld.so cache or the default directories, so importing %s fails with "
                   "'%s: cannot open shared object file'.%s" % (
                       e.get("path"), soname, _fw_version(facts, fw), have.get("cuda") or "?", e.get("package"),
                       soname, " The package was built for CUDA %s, the framework for CUDA %s." % (
                           major, have.get("cuda")) if other else ""),
            evidence=_evidence(facts, "linkage.%s.extensions" % fw, "framework." + fw),
            source=dict(LDSO_RULE),
            fix=Fix(text=("Install the %s build made for %s's CUDA %s, or the %s build for the CUDA %s.x the "
                          "package needs (pip install with that CUDA's index URL), so both use one CUDA runtime." % (
                              e.get("package"), NAMES.get(fw, fw), have.get("cuda"), NAMES.get(fw, fw), major))
                    if other else "Install the CUDA %s.x runtime the package links (the nvidia-cuda-runtime-cu%s "
                                  "wheel, or the CUDA toolkit's libraries on the loader path)." % (major, major)))


def _extension_for_other_build(facts: Facts, fw: str, entries: List[Dict[str, Any]]) -> Iterable[Finding]:
    """An extension package whose modules link libraries of the framework that this build of it does not have
    (``libc10_cuda.so``, ``libtorch_cuda.so``: a CUDA build of torchvision beside a CPU-only torch): its modules
    cannot be imported, on any machine. One finding per package."""
    have = facts.mapping("framework." + fw)
    by_package: Dict[str, List[Dict[str, Any]]] = {}
    for e in entries:
        by_package.setdefault(str(e.get("package")), []).append(e)
    for package, es in sorted(by_package.items()):
        libs = sorted({str(e.get("soname")) for e in es})
        files = sorted({posixpath.basename(str(e.get("path"))) for e in es})
        cuda = any("cuda" in lib for lib in libs)
        yield Finding(
            code="cuda.framework_cannot_load", severity="error", components=[fw, "cuda"] if cuda else [fw],
            title="%s %s needs %s, which %s does not have%s" % (
                package, es[0].get("version"), ", ".join(libs), _fw_version(facts, fw),
                " (a CUDA build of %s beside a %s build of %s)" % (package, have.get("build") or "CPU-only",
                                                                    NAMES.get(fw, fw)) if cuda else ""),
            detail="Its compiled module%s %s link%s %s; %s ships no such librar%s, so importing %s fails with "
                   "'%s: cannot open shared object file' (torchvision then reports its operators as missing: "
                   "'operator torchvision::nms does not exist')." % (
                       "s" if len(files) > 1 else "", ", ".join(files), "" if len(files) > 1 else "s",
                       ", ".join(libs), _fw_version(facts, fw), "ies" if len(libs) > 1 else "y", package, libs[0]),
            evidence=_evidence(facts, "linkage.%s.extensions" % fw, "framework." + fw),
            source=dict(LDSO_RULE),
            fix=Fix(text="Install the %s build that matches %s %s (from the same index: pip then picks the %s "
                         "release made for it), or %s's %s build to go with it." % (
                             package, NAMES.get(fw, fw), have.get("version"), package, NAMES.get(fw, fw),
                             "CUDA" if cuda else "other"),
                    commands=["pip install 'torch==%s' '%s' --index-url https://download.pytorch.org/whl/%s" % (
                        str(have.get("version") or "").partition("+")[0], package, torch_variant(have))]
                    if fw == "torch" and package in ("torchvision", "torchaudio") else []))


def torch_variant(value: Dict[str, Any]) -> str:
    """The download.pytorch.org index of an installed torch: its local version tag (``+cpu``, ``+cu121``), else
    (PyPI's builds carry none) the CUDA it was built for (``cuda: '13.0'`` -> ``cu130``), else ``cpu``."""
    local = str(value.get("version") or "").partition("+")[2]
    if re.match(r"^(cpu|cu\d+|rocm[\d.]+)$", local):
        return local
    cuda = re.match(r"^(\d+)\.(\d+)", str(value.get("cuda") or ""))
    return "cu%s%s" % cuda.groups() if cuda else "cpu"


def _foreign_cudnn_parts(facts: Facts, fw: str, e: Dict[str, Any], ev: Any) -> Iterable[Finding]:
    """cuDNN sub-libraries the framework's own cuDNN (9+) lacks, which the loader takes from another cuDNN copy
    of another version: cuDNN refuses the mix at the first operation that needs them."""
    parts = [p for p in e.get("foreign_parts") or [] if isinstance(p, dict)]
    own = _version_at(facts, "cudnn", e.get("resolved"))
    mixed = [p for p in parts if not (own and p.get("version") and (str(p["version"]).startswith(str(own)) or
                                                                 str(own).startswith(str(p["version"]))))]
    if not mixed:
        return
    names = ", ".join("%s %s" % (p["soname"], p.get("version") or "(version unknown)") for p in mixed)
    where = sorted({posixpath.dirname(str(p.get("path"))) for p in mixed})
    yield Finding(
        code="cudnn.shadowed", severity="error", components=["cudnn", fw],
        title="%s's cuDNN %sat %s lacks %s, which the loader takes from another cuDNN (%s)" % (
            _fw_version(facts, fw), "%s " % own if own else "", posixpath.dirname(str(e.get("resolved"))),
            ", ".join(p["soname"] for p in mixed), ", ".join(where)),
        detail="cuDNN 9 opens its sub-libraries (engines, ops, cnn, adv, graph, heuristic) with dlopen by bare "
               "soname; one missing beside the framework's copy is found through %s instead: %s. A sub-library "
               "of another version than the core is refused when first used (cudnnFinalize: "
               "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH), e.g. at the first convolution." % (
                   ", ".join(sorted({_why(p.get("via")) for p in mixed})), names),
        evidence=ev, source=dict(LDSO_RULE),
        fix=Fix(text="Make the other cuDNN unreachable for this process (take %s off LD_LIBRARY_PATH, or remove that "
                     "cuDNN), or install a cuDNN for the framework that ships every sub-library (a newer "
                     "nvidia-cudnn wheel of the same major). Disabling cuDNN (torch.backends.cudnn.enabled = False) "
                     "avoids the crash at a speed cost." % ", ".join(where),
                commands=[_drop_ldp_entry(d) for d in where if any(
                    p.get("via") == "LD_LIBRARY_PATH" for p in mixed)]))


for _fw in FRAMEWORKS + ("mxnet",):  # one check per framework: a crash on one hides no other's verdict
    per_framework(_framework_linkage, "framework-linkage", _fw, _FRAMEWORK_LINKAGE_DOCS if _fw == FRAMEWORKS[0] else (),
                  ("framework." + _fw, "linkage.*"),
                  ("framework.*", "libraries.*", "linkage.*.elf", "linkage.*.extensions", "gpu.count",
                   "driver.nvidia_pci_gpus") + INSTALL_LINE_READS,
                  ("cuda", "libraries", "frameworks"))  # an extension built for another build of it: its layer


def _tested_cudnn(fw: str, v: Dict[str, Any]) -> Optional[Tuple[str, str, Dict[str, Any]]]:
    """The cuDNN major.minor the matrix says a TensorFlow release / a JAX CUDA variant was built with:
    (version, where from, source)."""
    if fw == "tensorflow":
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


def _required_cudnn(facts: Facts, fw: str) -> Optional[Dict[str, Any]]:
    """What cuDNN the framework was built for: {version, from, source, verified}."""
    v = facts.mapping("framework." + fw)
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


_CUDNN_VERSION_DOCS = (
    CodeDoc("cudnn.major_mismatch", "error", "The cuDNN a framework loads has another major than it was built "
            "with.", "linkage.<framework>, framework.<name>, libraries.cudnn", "cuDNN majors are not "
            "interchangeable: the framework fails to load or refuses cuDNN.", TORCH_CUDNN_RULE["url"]),
    CodeDoc("cudnn.too_old_for_framework", "error", "The cuDNN a framework loads is older than the one it was "
            "built with.", "linkage.<framework>, framework.<name>, libraries.cudnn",
            "torch raises 'cuDNN version incompatibility: PyTorch was compiled against ... but found runtime "
            "version ...'.", TORCH_CUDNN_RULE["url"]),
)


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


def _installed_text(facts: Facts, comp: str, exclude: Any = None) -> str:
    """' cuDNN copies present: 8.9.7 at /x (how it was found); ...' for a finding's detail ('' when none is known)."""
    others = [c for c in _copies_of(facts, comp) if c["resolved"] != exclude]
    if not others:
        return ""
    return " %s copies present: %s." % (
        {"cudnn": "cuDNN", "nccl": "NCCL", "tensorrt": "TensorRT"}[comp],
        "; ".join("%s at %s (%s)" % (c["version"], c["path"], c["found_by"]) for c in others))


def _why(via: Any) -> str:
    return WHY.get(str(via), "the loader's search (%s)" % via)


def _cudnn_copies(facts: Facts) -> List[Dict[str, Any]]:
    """Every cuDNN library file on the machine (one per real file): {version, path, resolved, found_by}."""
    return _copies_of(facts, "cudnn")


def _lead(facts: Facts, fw: str, e: Dict[str, Any], winner: Any) -> str:
    """The first sentences of a cuDNN version finding: which copy the loader takes and why, and every other copy,
    which it never reaches (the loader stops at the first file with the soname)."""
    others = [c for c in _cudnn_copies(facts) if c["resolved"] != winner]
    text = "The loader takes %s from %s" % (e.get("soname"), _why(e.get("via")))
    if others:
        text += ", so %s %s never reached" % ("; ".join("cuDNN %s at %s (%s)" % (c["version"], c["path"], c["found_by"])
                                                       for c in others), "is" if len(others) == 1 else "are")
    text += "." if others else "; no other cuDNN is installed."
    if e.get("modelled"):
        text += (" %s's libraries could not be read to tell DT_RPATH (searched before LD_LIBRARY_PATH) from RUNPATH: "
                 "this is the order with RUNPATH." % NAMES[fw])
    return text


def _torch_modelled(facts: Facts) -> List[Dict[str, Any]]:
    """torch's cuDNN when its library's dynamic section could not be read: its wheel copy is reached through
    the library's RPATH/RUNPATH ($ORIGIN/../../nvidia/cudnn/lib), which LD_LIBRARY_PATH precedes unless the
    library carries DT_RPATH."""
    v = facts.mapping("framework.torch")
    req = v.get("cudnn_required")
    if isinstance(facts.value("linkage.torch"), list) or v.get("build") != "cuda" or not isinstance(req, dict):
        return []
    major = str(req.get("version") or "").split(".")[0]
    if not major.isdigit():
        return []
    soname = "libcudnn.so." + major
    site = str(v.get("path") or "")
    wheel = next((c for c in facts.items("libraries.cudnn") if isinstance(c, dict) and c.get("kind") == "library"
                  and str(c.get("found_by", "")).startswith("pip wheel") and site
                  and str(c.get("path", "")).startswith(site + "/")), None)
    choice = (facts.value("libraries.loader_choice") or {}).get(soname) if isinstance(
        facts.value("libraries.loader_choice"), dict) else None
    if isinstance(choice, dict) and choice.get("path") and choice.get("via") == "LD_LIBRARY_PATH":
        if wheel is None or (wheel.get("resolved") or wheel.get("path")) != choice.get("resolved"):
            return [dict(choice, how="NEEDED", modelled=True, expected=wheel.get("path") if wheel else None)]
    return []


def _cudnn_version(facts: Facts, fw: str) -> Iterable[Finding]:
    req = _required_cudnn(facts, fw)
    entries = [e for key in ("linkage." + fw, "linkage.%s.dlopen" % fw) for e in facts.items(key)]
    if fw == "torch" and not entries:
        entries = _torch_modelled(facts)
    if req is None or not entries:
        return
    want = _v(req["version"])
    if want is None:
        return
    severity = "error" if req.get("verified", True) else "warning"
    ev = _evidence(facts, "framework." + fw, "linkage." + fw, "linkage.%s.dlopen" % fw, "libraries.cudnn",
                   "libraries.loader_choice")
    fix = _pip_fix_for(facts, fw, "libcudnn.so.%d" % want.major)
    seen = set()
    for e in entries:
        if not isinstance(e, dict) or component_of(e.get("soname", "")) != "cudnn":
            continue
        key = (e.get("soname"), e.get("resolved"))
        if key in seen:
            continue
        seen.add(key)
        if not e.get("path"):
            # the soname of the build's major is nowhere the loader looks; copies of another major do not count
            wrong = [c for c in _cudnn_copies(facts) if _v(c["version"]) is not None
                     and _v(c["version"]).major != want.major]  # type: ignore[union-attr]
            if not wrong or e.get("soname") != "libcudnn.so.%d" % want.major:
                continue
            # the soname named by the framework's own build information certainly fails to load
            certain = "error" if str(facts.mapping("framework." + fw).get("cudnn") or "").split(".")[0] == str(
                want.major) else severity
            yield Finding(
                code="cudnn.major_mismatch", severity=certain, components=["cudnn", fw],
                title="%s needs cuDNN %s (%s), but only cuDNN %s is installed" % (
                    _fw_version(facts, fw), req["version"], e.get("soname"),
                    ", ".join("%s (%s)" % (c["version"], c["path"]) for c in wrong)),
                detail="%s opens %s, a file only cuDNN %d provides; %s provide%s another soname, which the "
                       "loader never substitutes, so %s's cuDNN calls fail ('DNN library is not found' or "
                       "'cannot open shared object file'). The requirement comes from %s." % (
                           NAMES[fw], e.get("soname"), want.major,
                           ", ".join("cuDNN %s at %s (%s)" % (c["version"], c["path"], c["found_by"]) for c in wrong),
                           "" if len(wrong) > 1 else "s", NAMES[fw], req["from"]),
                evidence=ev, source=req["source"], fix=fix)
            continue
        got_text = _cudnn_full_version(facts, e)
        got = _v(got_text)
        if got is None:
            continue
        winner = e.get("resolved") or e.get("path")
        lead = _lead(facts, fw, e, winner)
        if got.major != want.major:
            yield Finding(
                code="cudnn.major_mismatch", severity=severity, components=["cudnn", fw],
                title="%s was built for cuDNN %s, but the loader gives it cuDNN %s (%s, via %s)" % (
                    _fw_version(facts, fw), req["version"], got_text, winner, e.get("via")),
                detail="%s cuDNN %d and %d are not interchangeable; %s's requirement comes from %s." % (
                    lead, want.major, got.major, NAMES[fw], req["from"]),
                evidence=ev, source=req["source"], fix=fix)
        elif len(got.release) >= 2 and len(want.release) >= 2 and got.release[:2] < want.release[:2]:
            yield Finding(
                code="cudnn.too_old_for_framework", severity=severity, components=["cudnn", fw],
                title="%s needs cuDNN >= %s, but loads cuDNN %s from %s (via %s)" % (
                    _fw_version(facts, fw), req["version"], got_text, winner, e.get("via")),
                detail="%s The requirement comes from %s; a cuDNN minor older than the build's is refused "
                       "(torch: 'cuDNN version incompatibility: PyTorch was compiled against ... but found runtime "
                       "version ...'; XLA: 'CuDNN library needs to have matching major version and equal or "
                       "higher minor version')." % (lead, req["from"]),
                evidence=ev, source=req["source"], fix=_older_cudnn_fix(facts, fw, e, fix))


def _older_cudnn_fix(facts: Facts, fw: str, e: Dict[str, Any], fix: Fix) -> Fix:
    """An older cuDNN found through LD_LIBRARY_PATH while the framework's own copy is present: drop that entry."""
    if e.get("via") == "LD_LIBRARY_PATH" and e.get("expected"):
        where = posixpath.dirname(str(e.get("path")))
        return Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so %s loads its own copy at %s." % (
                       where, NAMES[fw], e.get("expected")),
                   commands=[_drop_ldp_entry(where)])
    return fix


for _fw in FRAMEWORKS:  # one check per framework: a crash on one hides no other's verdict
    per_framework(_cudnn_version, "cudnn-version", _fw, _CUDNN_VERSION_DOCS if _fw == FRAMEWORKS[0] else (),
                  ("framework." + _fw, "linkage.*", "libraries.cudnn"),
                  ("framework.*", "libraries.*", "linkage.*.dlopen") + INSTALL_LINE_READS, ("libraries",))



def _drop_ldp_entry(directory: str) -> str:
    """The shell line that removes one directory from LD_LIBRARY_PATH and keeps the others."""
    return ('export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s | paste -sd:)"'
            % directory)


def _gpu_present(facts: Facts) -> bool:
    count = facts.value("gpu.count")
    return (isinstance(count, int) and count > 0) or bool(facts.value("driver.nvidia_pci_gpus"))


def _dlopen_linkage(facts: Facts, fw: str) -> Iterable[Finding]:
    """The CUDA libraries the framework dlopens at run time that the loader cannot find (on a GPU machine: on a
    CPU-only one a CUDA build falls back to the CPU, as intended)."""
    entries = facts.value("linkage.%s.dlopen" % fw)
    if not isinstance(entries, list) or not _gpu_present(facts):
        return
    if facts.mapping("framework." + fw).get("conflict"):
        return  # several packages share the module: which build's files are in place (and what they open) is
        # unknown; framework.cupy_packages_conflict says so
    needed = {e.get("soname") for e in facts.items("linkage." + fw) if isinstance(e, dict)}
    for e in entries:
        if isinstance(e, dict) and e.get("path") and e.get("not_pinned_copy") and e.get("soname") not in needed:
            yield from _dlopen_not_the_pinned_copy(facts, fw, e)
        elif isinstance(e, dict) and e.get("path") and e.get("built_cuda") and e.get("soname") not in needed:
            yield from _runtime_older_than_build(facts, fw, e)
        if not isinstance(e, dict) or e.get("path") or e.get("soname") in needed:
            continue
        soname = str(e.get("soname", ""))
        comp = component_of(soname)
        if comp == "cudnn" and _other_major_cudnn(facts, fw):
            continue  # cudnn-version names the cuDNN of the wrong major that is there instead
        if comp == "tensorrt":
            yield from _tensorrt_missing(facts, fw, e)
            continue
        elsewhere = [str(p) for p in (e.get("elsewhere_files") if isinstance(e.get("elsewhere_files"), list)
                                      else e.get("elsewhere")) or []]
        if elsewhere:
            where = posixpath.dirname(elsewhere[0])
            fix = Fix(text="A copy is at %s, where the loader does not look: put its directory on "
                           "LD_LIBRARY_PATH for %s." % (elsewhere[0], NAMES[fw]),
                      commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % where])
        elif soname.endswith(".so") and _copies_of(facts, comp):
            # the unversioned name is the development link (libcudnn8-dev, cudnn-devel); the runtime copy is here
            real = _copies_of(facts, comp)[0]
            link = posixpath.join(posixpath.dirname(real["resolved"]), soname)
            fix = Fix(text="%s is the development link, which the runtime package does not install; %s %s is at %s. "
                           "Install the distribution's cuDNN development package, or make the link." % (
                               soname, comp if comp != "cudnn" else "cuDNN", real["version"], real["path"]),
                      commands=["sudo ln -s %s %s" % (real["resolved"], link), "sudo ldconfig"])
        else:
            fix = _pip_fix_for(facts, fw, soname)
        yield Finding(
            code="%s.framework_cannot_load" % comp, severity="error", components=[comp, fw],
            title="%s loads %s at run time, but the loader finds no such file%s" % (
                _fw_version(facts, fw), soname, " (a copy is at %s, which is not searched)" % elsewhere[0]
                if elsewhere else ""),
            detail="%s opens %s with dlopen when it first uses the GPU; it is not on LD_LIBRARY_PATH, in the "
                   "directories %s adds itself, the ld.so cache or the default directories, so %s falls back to "
                   "the CPU or fails ('%s: cannot open shared object file').%s" % (
                       NAMES[fw], soname, NAMES[fw], NAMES[fw], soname,
                       (" Copies that exist but are not searched: %s." % ", ".join(elsewhere) if elsewhere else "")
                       + _installed_text(facts, comp)),
            evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "cuda.ld_library_path"),
            source=dict(LDSO_RULE), fix=fix)


RUNTIME_DOC = CodeDoc(
    "cuda.runtime_older_than_framework", "warning", "A framework opens a CUDA runtime (or NVRTC) of an older minor "
    "than the CUDA it was built with.", "linkage.<framework>.dlopen",
    "Functions the build calls are missing from the older runtime: it fails when it first uses them, or refuses to "
    "start ('CUDA driver version is insufficient for CUDA runtime version' is the other way round).",
    "https://docs.nvidia.com/deploy/cuda-compatibility/")


def _runtime_older_than_build(facts: Facts, fw: str, e: Dict[str, Any]) -> Iterable[Finding]:
    """The CUDA runtime or NVRTC the framework dlopens is of an older minor than its build's CUDA (a system CUDA 11.2
    on LD_LIBRARY_PATH for nvidia-tensorflow built with CUDA 11.8): the file's version is the CUDA release's."""
    got, built = _v(e.get("file_version")), _v(e.get("built_cuda"))
    if got is None or built is None or len(got.release) < 3:
        return  # a soname's own suffix (libcudart.so.11.0) is no release: the file's full version is needed
    if got.release[:1] != built.release[:1] or got.release[:2] >= built.release[:2]:
        return
    where = posixpath.dirname(str(e.get("path")))
    yield Finding(
        code="cuda.runtime_older_than_framework", severity="warning", components=["cuda", fw],
        title="%s loads %s %s from %s (via %s), older than its build's CUDA %s" % (
            _fw_version(facts, fw), e.get("soname"), e.get("file_version"), e.get("resolved") or e.get("path"),
            e.get("via"), e.get("built_cuda")),
        detail="%s opens the CUDA runtime with dlopen and takes the first %s the loader finds, through %s; a runtime "
               "older than the build's CUDA lacks functions the build calls.%s" % (
                   NAMES[fw], e.get("soname"), _why(e.get("via")), (" Copies not searched: %s." % ", ".join(
                       str(p) for p in e.get("elsewhere_files") or [])) if e.get("elsewhere_files") else ""),
        evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "cuda.ld_library_path"),
        source={"rule": "a CUDA application needs a runtime of its own CUDA minor or newer",
                "url": RUNTIME_DOC.source, "checked": "2026-11-29"},
        fix=Fix(text="Take %s off LD_LIBRARY_PATH, or put a CUDA %s runtime first (the toolkit's lib64, or the "
                     "nvidia-cuda-runtime wheel's lib)." % (where, e.get("built_cuda")),
                commands=[_drop_ldp_entry(where)]) if e.get("via") == "LD_LIBRARY_PATH" else Fix(
            text="Install the CUDA %s runtime where the loader finds it first." % e.get("built_cuda")))


def _dlopen_not_the_pinned_copy(facts: Facts, fw: str, e: Dict[str, Any]) -> Iterable[Finding]:
    """A library the framework opens at run time is taken from another copy than the one in the NVIDIA wheel its
    metadata requires (LD_LIBRARY_PATH naming a system CUDA first, a framework that does not search the wheels): an
    older one is an error (the build calls functions it lacks), another a warning. cuDNN is judged by its own
    version checks."""
    soname = str(e.get("soname"))
    comp = component_of(soname)
    if comp == "cudnn":
        return
    got, want = _v(e.get("file_version")), _v(e.get("pinned_version"))
    older = got is not None and want is not None and got.release[:1] == want.release[:1] and \
        got.release[:2] < want.release[:2]
    where = posixpath.dirname(str(e.get("path")))
    yield Finding(
        code="%s.shadowed" % comp, severity="error" if older else "warning", components=[comp, fw],
        title="%s loads %s %sfrom %s (via %s), not the %s%s its package requires" % (
            _fw_version(facts, fw), soname, "%s " % e["file_version"] if e.get("file_version") else "",
            e.get("resolved") or e.get("path"), e.get("via"), e.get("pinned"),
            " (%s)" % e["pinned_version"] if e.get("pinned_version") else ""),
        detail="%s opens %s with dlopen, which searches %s before the pip wheel %s requires.%s" % (
            NAMES[fw], soname, _why(e.get("via")), NAMES[fw],
            " That copy is older than the one the build was made with: functions it calls are missing ('undefined "
            "symbol', or a CUDA error at run time)." if older else " The framework then runs with a library it was "
                                                                    "not built and tested with."),
        evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "cuda.ld_library_path"),
        source=dict(LDSO_RULE),
        fix=Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so the wheel's copy is found%s." % (
                    where, "" if fw != "tensorflow" else ", or put the wheels' lib directories before it"),
                commands=[_drop_ldp_entry(where)]) if e.get("via") == "LD_LIBRARY_PATH" else Fix(
            text="Make the wheel's copy the one the loader finds first (LD_LIBRARY_PATH), or remove the other copy "
                 "from the loader's path.",
            commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % posixpath.dirname(
                str(e.get("pinned")))]))


def _other_major_cudnn(facts: Facts, fw: str) -> bool:
    req = _required_cudnn(facts, fw)
    want = _v(req["version"]) if req else None
    return want is not None and any(
        _v(c["version"]) is not None and _v(c["version"]).major != want.major  # type: ignore[union-attr]
        for c in _cudnn_copies(facts))


def _tensorrt_copies(facts: Facts) -> List[Dict[str, Any]]:
    return _copies_of(facts, "tensorrt")


def _tensorrt_missing(facts: Facts, fw: str, e: Dict[str, Any]) -> Iterable[Finding]:
    """The TensorRT soname a framework's TensorRT path opens is missing. Without any TensorRT that is the normal
    state of a machine that does not use it (TensorFlow only logs 'TF-TRT Warning: Could not find TensorRT');
    with a TensorRT of another major installed, the user's TensorRT cannot be used: a warning naming both."""
    copies = _tensorrt_copies(facts)
    soname = str(e.get("soname"))
    major = soname.rsplit(".", 1)[-1]
    if soname.startswith("libnvinfer_plugin.") and any(
            isinstance(o, dict) and o.get("soname") == "libnvinfer.so." + major and not o.get("path")
            for o in facts.items("linkage.%s.dlopen" % fw)):
        return  # one finding for the TensorRT major: the main library's
    wrong = [c for c in copies if str(c["version"]).split(".")[0] != major]
    right = [c for c in copies if c not in wrong]
    if not copies:
        return
    v = facts.mapping("framework." + fw)
    if right:  # the right major is installed, but not where the framework's dlopen looks
        where = posixpath.dirname(right[0]["path"])
        yield Finding(
            code="tensorrt.framework_cannot_load", severity="warning", components=["tensorrt", fw],
            title="%s's TensorRT support loads %s, but TensorRT %s at %s is not where the loader looks" % (
                _fw_version(facts, fw), soname, right[0]["version"], right[0]["path"]),
            detail="%s opens %s with dlopen when TensorRT is first used; that directory is not on "
                   "LD_LIBRARY_PATH or in the ld.so cache, so the TensorRT path is unavailable.%s" % (
                       NAMES[fw], soname, _installed_text(facts, "tensorrt", right[0]["resolved"])),
            evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "libraries.tensorrt"),
            source=dict(LDSO_RULE),
            fix=Fix(text="Put %s on LD_LIBRARY_PATH for %s." % (where, NAMES[fw]),
                    commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % where]))
        return
    trt = builds.tensorflow_tensorrt_major(v.get("public") or v.get("version")) if fw == "tensorflow" else None
    row = trt[1] if trt else {}
    src = {"rule": "%s %s's TensorRT build opens %s (TensorRT %s); a TensorRT of another major has other sonames "
                   "and is never used" % (NAMES[fw], v.get("version"), soname, major),
           "url": row.get("source", {}).get("url", LDSO_RULE["url"]),
           "checked": row.get("source", {}).get("checked", CHECKED)}
    have = ", ".join("TensorRT %s at %s (%s)" % (c["version"], c["path"], c["found_by"]) for c in wrong)
    yield Finding(
        code="tensorrt.framework_cannot_load", severity="warning", components=["tensorrt", fw],
        title="%s's TensorRT support loads %s (TensorRT %s), but only %s is installed" % (
            _fw_version(facts, fw), soname, major, have),
        detail="%s opens %s with dlopen when TensorRT is first used; TensorRT majors have different sonames, so "
               "the installed %s is never loaded and the TensorRT path (TF-TRT) is unavailable ('Could not load "
               "dynamic library '%s''); the rest of %s works." % (NAMES[fw], soname, have, soname, NAMES[fw]),
        evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "libraries.tensorrt"),
        source=src,
        fix=Fix(text="Use a %s release built for the TensorRT you have, or install TensorRT %s's libraries "
                     "(%s) where the loader finds them." % (NAMES[fw], major, soname),
                commands=["pip install --upgrade '%s'" % (v.get("package") or fw)]))


for _fw in ("tensorflow", "onnxruntime", "cupy", "paddle", "jax"):
    per_framework(_dlopen_linkage, "framework-dlopen", _fw, (RUNTIME_DOC,) if _fw == "tensorflow" else (),
                  ("linkage.*.dlopen",),
                  ("cuda.*", "framework.*", "libraries.*", "linkage.*", "driver.nvidia_pci_gpus") + INSTALL_LINE_READS,
                  ("cuda", "libraries"))


WHEEL_FILES_RULE = {"rule": "pip installs files of different projects to the same path without conflict checks: "
                            "the last one installed wins", "url": "https://github.com/pypa/pip/issues/4625",
                    "checked": "2026-11-25"}


@check("nvidia-wheel-conflicts", requires=("python.nvidia_wheel_conflicts",), reads=("framework.*",),
       layers=("frameworks", "python"), codes=(
    CodeDoc("framework.nvidia_wheels_conflict", "error",
            "NVIDIA wheels of the same library for two CUDA majors (nvidia-nccl-cu11 and nvidia-nccl-cu12) are "
            "installed in one environment: both write site-packages/nvidia/<lib>/lib, the last installed wins.",
            "python.nvidia_wheel_conflicts, framework.<name> (nvidia_wheels)",
            "The framework loads the other major's library: undefined symbols at import ('undefined symbol: "
            "ncclMemFree') or the wrong CUDA runtime.", WHEEL_FILES_RULE["url"]),
))
def nvidia_wheel_conflicts(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    needed: Dict[str, List[str]] = {}  # wheel -> frameworks that require it
    for fw in FRAMEWORKS + ("cupy", "paddle"):
        for name in (facts.mapping("framework." + fw).get("nvidia_wheels") or {}):
            needed.setdefault(str(name), []).append(fw)
    for c in facts.items("python.nvidia_wheel_conflicts"):
        if not isinstance(c, dict):
            continue
        wheels = [w for w in c.get("wheels") or [] if isinstance(w, dict)]
        names = ", ".join("%s %s" % (w.get("name"), w.get("version")) for w in wheels)
        wanted = [w for w in wheels if w.get("name") in needed]
        unwanted = [w for w in wheels if w.get("name") not in needed]
        if wanted and unwanted:
            fix = Fix(text="Remove the wheel nothing installed requires (%s), then reinstall the one %s needs, whose "
                           "files it overwrote." % (", ".join(str(w["name"]) for w in unwanted),
                                                    ", ".join(needed[str(wanted[0]["name"])])),
                      commands=["pip uninstall -y %s" % " ".join(str(w["name"]) for w in unwanted),
                                "pip install --force-reinstall --no-deps '%s==%s'" % (wanted[0]["name"],
                                                                                     wanted[0]["version"])])
        else:
            fix = Fix(text="Frameworks here need %s for different CUDA majors: they cannot share one environment; "
                           "give each its own virtual environment." % names,
                      commands=["python -m venv ~/venv-cu%s" % wheels[0].get("cuda")])
        yield Finding(
            code="framework.nvidia_wheels_conflict", severity="error",
            components=sorted({fw for w in wanted for fw in needed[str(w["name"])]}) or ["python"],
            title="%s are installed together in %s: both install nvidia/%s/lib, so one overwrote the other" % (
                names, c.get("location"), c.get("lib")),
            detail="pip lets wheels of one NVIDIA library for two CUDA majors coexist, but they write the same "
                   "files; the framework then loads whichever was installed last%s." % (
                       " (%s needs %s)" % (", ".join(needed[str(wanted[0]["name"])]), wanted[0]["name"])
                       if wanted else ""),
            evidence=_evidence(facts, "python.nvidia_wheel_conflicts"),
            source=dict(WHEEL_FILES_RULE), fix=fix)


@check("nvidia-wheel-links", codes=(), requires=("linkage.nvidia_wheels", "cuda.ld_library_path"), reads=(),
       layers=("cuda", "libraries"))
def nvidia_wheel_links(ctx: CheckContext) -> Iterable[Finding]:
    """A wheel library (cuSPARSE, cuBLAS ...) that the loader links to another copy of its dependency than the one
    its RUNPATH names: an older minor of the same major is an error (cuSPARSE needs an nvJitLink of its own CUDA
    minor or newer: 'undefined symbol: __nvJitLinkCreate_12_x'), any other copy a warning."""
    facts = ctx.facts
    for lk in facts.items("linkage.nvidia_wheels"):
        if not isinstance(lk, dict) or not lk.get("shadowed"):
            continue
        got, want = _v(lk.get("version")), _v(lk.get("expected_version"))
        symbols = lk.get("missing_symbols")
        # the symbols it imports from that library, when they could be read, decide; else the versions
        older = bool(symbols) if isinstance(symbols, list) else (
            got is not None and want is not None and got.release[:2] < want.release[:2])
        lib, dep = posixpath.basename(str(lk.get("library"))), str(lk.get("soname"))
        comp = component_of(dep)
        yield Finding(
            code="%s.shadowed" % comp, severity="error" if older else "warning", components=[comp],
            title="%s (pip wheel) loads %s from %s (%s, via %s), not its wheel's %s (%s)" % (
                lib, dep, lk.get("path"), lk.get("version") or "version unknown", lk.get("via"), lk.get("expected"),
                lk.get("expected_version") or "version unknown"),
            detail="The wheel's RUNPATH names its own copy, but the loader searches %s first.%s" % (
                lk.get("via"), (" That copy lacks %s, which %s calls: loading fails with 'undefined symbol: %s'." % (
                    ", ".join(symbols[:3]), lib, symbols[0]) if symbols else
                    " A CUDA library needs its dependencies of its own CUDA minor or newer: this older one lacks the "
                    "symbols it calls, so it fails to load ('undefined symbol').") if older else ""),
            evidence=_evidence(facts, "linkage.nvidia_wheels", "cuda.ld_library_path"),
            source=dict(LDSO_RULE),
            fix=Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so the wheel's own copy is used." %
                         posixpath.dirname(str(lk.get("path"))),
                    commands=[_drop_ldp_entry(posixpath.dirname(str(lk.get("path"))))]
                    if lk.get("via") == "LD_LIBRARY_PATH" else ["sudo ldconfig"]))

#: Each question over every framework at once.
framework_linkage = group("framework-linkage")
cudnn_version = group("cudnn-version")

CUDNN_GPU_URL = "https://docs.nvidia.com/deeplearning/cudnn/backend/latest/reference/support-matrix.html"
#: frameworks whose GPU builds load cuDNN (for the wheel copies they would pick up)
_CUDNN_USERS = FRAMEWORKS + ("paddle", "cupy")


def _cudnn_in_use(facts: Facts) -> List[Dict[str, Any]]:
    """Each cuDNN file something will load: ``{version, path, users, keys}``.

    A framework's resolved linkage says exactly which file it loads. Without linkage facts
    (the ELF could not be read), the cuDNN wheel copies in the environment stand for the
    framework's (they are what its RPATH or preload finds). The file the system loader would
    pick for ``libcudnn.so.N`` counts too: C++ programs and frameworks built against the
    system copy use it.
    """
    copies = {}  # type: Dict[str, Dict[str, Any]]

    def add(path: Any, version: Any, user: str, key: str) -> None:
        if not path or _v(version) is None:
            return
        entry = copies.setdefault(str(path), {"version": str(version), "path": str(path), "users": [], "keys": []})
        if user not in entry["users"]:
            entry["users"].append(user)
        if key not in entry["keys"]:
            entry["keys"].append(key)

    unlinked = []
    for fw in _CUDNN_USERS:
        value = facts.mapping("framework." + fw)
        if not (value.get("cuda") or value.get("gpu")):
            continue
        entries = facts.value("linkage." + fw)
        if not isinstance(entries, list):
            unlinked.append(fw)
            continue
        for e in entries:
            if isinstance(e, dict) and component_of(e.get("soname", "")) == "cudnn" and e.get("path"):
                add(e.get("resolved") or e.get("path"), _cudnn_full_version(facts, e), _fw_version(facts, fw),
                    "linkage." + fw)
    for copy in facts.items("libraries.cudnn"):
        if (isinstance(copy, dict) and copy.get("kind") == "library"
                and str(copy.get("found_by", "")).startswith("pip wheel")):
            for fw in unlinked:
                add(copy.get("resolved") or copy.get("path"), copy.get("version"), _fw_version(facts, fw),
                    "framework." + fw)
    choice = facts.value("libraries.loader_choice")
    for soname, r in sorted(choice.items()) if isinstance(choice, dict) else ():
        if soname.startswith("libcudnn.so.") and isinstance(r, dict) and r.get("path"):
            add(r.get("resolved") or r.get("path"), _cudnn_full_version(facts, r), "the system loader (%s)" % soname,
                "libraries.loader_choice")
    for entry in copies.values():
        entry["keys"].append("libraries.cudnn")
    return sorted(copies.values(), key=lambda c: c["path"])


def _cudnn_cc_fix(facts: Facts, cc: str, version: Version, path: str) -> Fix:
    from ..matrix import hardware as hw

    found = hw.cudnn_last_for_cc(cc, version.major)
    cu = "cu12"
    for copy in facts.items("libraries.cudnn"):
        if isinstance(copy, dict) and copy.get("resolved") == path and "nvidia-cudnn-cu" in str(copy.get("found_by")):
            cu = str(copy["found_by"]).rsplit("-", 1)[-1]
    if found is None:
        return Fix(text="No cuDNN %d release supports compute capability %s; use a framework build for an older "
                        "cuDNN major." % (version.major, cc))
    last, first_without = found
    bound = Version(first_without["version"]) if first_without else None
    spec = "<%d.%d" % (bound.major, bound.minor) if bound else ">=%s" % last["version"]
    if cu == "cu13":
        return Fix(text="cuDNN for CUDA 13 has no build for compute capability %s (CUDA 13 itself targets 7.5 and "
                        "newer). Use the framework's CUDA 12 build with cuDNN %s (the last in envdoctor's matrix "
                        "for this GPU)." % (cc, last["version"]),
                   commands=["pip install 'nvidia-cudnn-cu12%s'" % spec])
    return Fix(text="Install cuDNN %s or another %d.x release before %s, the last that still supports compute "
                    "capability %s (pin it, since frameworks pull newer cuDNN wheels in on upgrade)." % (
                        last["version"], version.major, first_without["version"] if first_without else "?", cc),
               commands=["pip install 'nvidia-cudnn-%s%s'" % (cu, spec)])


@check("cudnn-gpu", requires=("gpu.N.compute_capability", "libraries.cudnn", "linkage.*"),
       reads=("framework.*", "gpu.*", "gpu.*.*", "libraries.*"), layers=("libraries",), codes=(
    CodeDoc("cudnn.gpu_unsupported", "error", "The cuDNN something loads has dropped a GPU's compute capability.",
            "libraries.cudnn, linkage.<framework>, libraries.loader_choice, gpu.N.compute_capability",
            "cuDNN calls (convolutions, attention, RNNs) fail on that GPU at run time, although the framework "
            "imports and sees the GPU; e.g. cuDNN 9.11 and later have no kernels for Maxwell, Pascal or Volta.",
            CUDNN_GPU_URL),
))
def cudnn_gpu(ctx: CheckContext) -> Iterable[Finding]:
    from ..matrix import hardware as hw
    from .compat import gpu_ccs

    facts = ctx.facts
    gpus = gpu_ccs(facts)
    if not gpus:
        return
    for copy in _cudnn_in_use(facts):
        version = Version(copy["version"])
        row = hw.cudnn_support_row(copy["version"])
        if row is None:
            continue
        for cc, name, cc_fact in gpus:
            if Version(cc) >= Version(row["cc_min"]):
                continue
            users = ", ".join(copy["users"])
            ev = _evidence(facts, *copy["keys"]) + [cc_fact.to_dict()]
            yield Finding(
                code="cudnn.gpu_unsupported",
                severity="warning" if matrix.unverified(row, "cc_min") else "error",
                components=["cudnn", "gpu"],
                title="cuDNN %s (%s, used by %s) does not support %s (compute capability %s); it needs %s or "
                      "newer" % (copy["version"], copy["path"], users, name, cc, row["cc_min"]),
                detail="cuDNN %s has no kernels for compute capability %s: %s imports and sees the GPU, but every "
                       "cuDNN call (convolutions, attention, RNNs) fails on it at run time." % (
                           row["version"], cc, users),
                evidence=ev,
                source={"rule": "cuDNN %s supports compute capability %s and newer" % (row["version"], row["cc_min"]),
                        "url": row["source"].get("url"), "checked": row["source"].get("checked")},
                fix=_cudnn_cc_fix(facts, cc, version, copy["path"]))


@check("onnxruntime-packaging", requires=("framework.onnxruntime",),
       reads=("libraries.*", "linkage.*") + INSTALL_LINE_READS, layers=("frameworks",), codes=(
    CodeDoc("onnxruntime.cpu_and_gpu_installed", "error", "onnxruntime and onnxruntime-gpu are installed "
            "together.", "framework.onnxruntime", "Both write the same onnxruntime/ package; the last one "
            "installed wins file by file and the CUDA provider silently disappears.",
            "https://onnxruntime.ai/docs/install/"),
    CodeDoc("onnxruntime.cudnn_major_mismatch", "error", "onnxruntime-gpu is built for another cuDNN major than "
            "the loader can find.", "framework.onnxruntime, libraries.loader_choice",
            "The CUDA execution provider fails to load and ONNX Runtime falls back to the CPU.",
            "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements"),
))
def onnxruntime_packaging(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    v = facts.value("framework.onnxruntime")
    if not isinstance(v, dict):
        return
    pkgs = v.get("packages") or {}
    gpu = [p for p in pkgs if p.endswith("-gpu")]
    cpu = [p for p in pkgs if p in ("onnxruntime", "ort-nightly")]
    if gpu and cpu:
        g = gpu[0]
        yield Finding(
            code="onnxruntime.cpu_and_gpu_installed", severity="error", components=["onnxruntime"],
            title="%s %s and %s %s are both installed; they provide the same onnxruntime module" % (
                cpu[0], pkgs[cpu[0]], g, pkgs[g]),
            detail="Both wheels write the onnxruntime/ directory; the one installed last wins file by file, so "
                   "the CUDA execution provider can silently disappear (get_available_providers() shows only "
                   "CPUExecutionProvider). Uninstalling either one breaks the other's files.%s" % (
                       " Its build information now says %s: the %s files are in place." % (
                           v["build_package"], v["build_package"]) if v.get("build_package") else ""),
            evidence=_evidence(facts, "framework.onnxruntime", "framework.onnxruntime_conflict"),
            source={"rule": "install only one onnxruntime package per environment",
                    "url": "https://onnxruntime.ai/docs/install/", "checked": CHECKED},
            fix=Fix(text="Remove both, then reinstall only the GPU package.",
                    commands=["pip uninstall -y %s %s" % (cpu[0], g),
                              "pip install '%s==%s'" % (g, pkgs[g])]))
    if not v.get("gpu") or isinstance(facts.value("linkage.onnxruntime"), list):
        return  # the linkage checks judge the provider library itself when it could be read
    rel = fwm.onnxruntime_release(v.get("version"))
    choice = facts.value("libraries.loader_choice")
    if rel is None or not isinstance(choice, dict):
        return
    major = str(v.get("cudnn") or rel["cudnn_major"]).split(".")[0]
    want = "libcudnn.so." + major
    if (choice.get(want) or {}).get("path"):
        return
    found = sorted(s for s, r in choice.items() if s.startswith("libcudnn.so.") and (r or {}).get("path"))
    if not found:
        return  # no cuDNN at all: the cuDNN checks say so
    verified = not matrix.unverified({"source": rel["source"]})
    cache = facts.get("libraries.ld_cache")
    cache_read = cache is not None and cache.known  # without it, "not found" may only mean "not seen"
    got = ", ".join("%s (cuDNN %s, %s%s)" % (
        s, _version_at(facts, "cudnn", choice[s].get("resolved")) or choice[s].get("version") or "version unknown",
        choice[s].get("resolved"), ", via %s" % choice[s]["via"] if choice[s].get("via") else "") for s in found)
    yield Finding(
        code="onnxruntime.cudnn_major_mismatch", severity="error" if verified and cache_read else "warning",
        components=["onnxruntime", "cudnn"],
        title="onnxruntime-gpu %s needs cuDNN %s, but the loader only finds %s" % (v.get("version"), major, got),
        detail="ONNX Runtime's CUDA provider (libonnxruntime_providers_cuda.so) links %s; without it "
               "InferenceSession falls back to CPUExecutionProvider with a 'Failed to load library' error." % want,
        evidence=_evidence(facts, "framework.onnxruntime", "libraries.loader_choice"),
        source={"rule": "onnxruntime-gpu %s is built for cuDNN %s" % (rel["version"], rel["cudnn_major"]),
                "url": rel["source"].get("url"), "checked": rel["source"].get("checked")},
        fix=Fix(text="Install cuDNN %s (the pip wheel is enough), or the onnxruntime-gpu build for the cuDNN you "
                     "have." % major,
                commands=["pip install 'nvidia-cudnn-cu%s>=%s,<%d'" % (rel["cuda_major"], major, int(major) + 1)],
                install=install_line(facts, "cudnn", major)))


PIP_SPEC_RULE = {"rule": "an installed distribution must satisfy every Requires-Dist specifier of the packages that "
                         "depend on it (what `pip check` verifies)",
                 "url": "https://packaging.python.org/en/latest/specifications/version-specifiers/",
                 "checked": CHECKED}
#: framework -> the fact field listing the NVIDIA wheels it requires
_WHEEL_FIELDS = (("torch", "nvidia_wheels"), ("jax", "nvidia_wheels"), ("tensorflow", "and_cuda_wheels"))


@check("nvidia-wheels", requires=("framework.*",), reads=(), layers=("frameworks",), codes=(
    CodeDoc("framework.nvidia_wheel_mismatch", "warning", "An installed NVIDIA CUDA wheel does not satisfy the "
            "version the framework requires.", "framework.<name> (nvidia_wheels)",
            "The framework was built and tested against other CUDA library versions; a different cuBLAS, cuDNN "
            "or NCCL can fail with undefined symbols, refuse to load, or compute differently. pip's resolver "
            "would not have installed this combination (`pip check` reports it).", PIP_SPEC_RULE["url"]),
))
def nvidia_wheels_match(ctx: CheckContext) -> Iterable[Finding]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    facts = ctx.facts
    for fw, field in _WHEEL_FIELDS:
        wheels = facts.mapping("framework." + fw).get(field)
        if not isinstance(wheels, dict):
            continue
        for name, info in sorted(wheels.items()):
            if not isinstance(info, dict) or not isinstance(info.get("installed"), str):
                continue
            spec_text = info.get("specifier")
            installed = _v(info["installed"])
            if not isinstance(spec_text, str) or not spec_text or installed is None:
                continue
            try:
                spec = SpecifierSet(spec_text)
            except InvalidSpecifier:
                continue
            if spec.contains(installed, prereleases=True):
                continue
            via = " (through %s)" % info["via"] if info.get("via") else ""
            yield Finding(
                code="framework.nvidia_wheel_mismatch", severity="warning", components=[fw, "cuda"],
                title="%s requires %s%s%s, but %s is installed" % (
                    _fw_version(facts, fw), name, spec_text, via, info["installed"]),
                detail="%s was built against %s %s; the installed %s was probably pulled in by another package "
                       "or installed by hand. Mismatched CUDA library wheels cause undefined-symbol errors at "
                       "import or first use." % (NAMES.get(fw, fw), name, spec_text, info["installed"]),
                evidence=_evidence(facts, "framework." + fw),
                source=dict(PIP_SPEC_RULE),
                fix=Fix(text="Install the version %s asks for (or reinstall %s so pip resolves its dependencies "
                             "again)." % (fw, fw),
                        commands=["pip install '%s%s'" % (name, spec_text)]))


NCCL_RELEASES = "https://github.com/NVIDIA/nccl/releases"


def _nccl_candidates(facts: Facts) -> List[Dict[str, Any]]:
    """The NCCL copies a multi-GPU job may load: the loader's choice of libnccl.so.2 when it resolves one with a
    version, else every NCCL found (system packages, pip wheels, toolkits), one entry per version."""
    choice = facts.mapping("libraries.loader_choice").get("libnccl.so.2")
    if isinstance(choice, dict) and choice.get("version") and choice.get("path"):
        return [{"version": str(choice["version"]), "path": str(choice.get("resolved") or choice["path"]),
                 "key": "libraries.loader_choice"}]
    out: Dict[str, Dict[str, Any]] = {}
    for entry in facts.items("libraries.nccl"):
        if isinstance(entry, dict) and versions.parse(entry.get("version")) is not None:
            out.setdefault(str(entry["version"]), {"version": str(entry["version"]), "path": str(entry.get("path")),
                                                   "key": "libraries.nccl"})
    return list(out.values())


@check("nccl-gpu", requires=("gpu.N.compute_capability", "libraries.nccl"),
       reads=("gpu.*", "gpu.*.*", "libraries.*"), layers=("libraries",), codes=(
    CodeDoc("nccl.too_old_for_gpu", "error",
            "The NCCL a multi-GPU job loads predates support for the GPUs' architecture: an error where NCCL "
            "fails on it (before 2.26.2 on compute capability 12.0, RTX 50-series), a warning where the release "
            "only added it (Hopper 2.15.1, Blackwell sm_100 2.25.1).",
            "libraries.loader_choice (libnccl.so.2), libraries.nccl, gpu.N.compute_capability, gpu.count",
            "Collectives fail at start-up ('ncclMaxSharedMem ... exceeds device/fn maxSharedMem', 'unhandled cuda "
            "error') or run on untuned, JIT-compiled kernels.",
            "nccl_arch.json (NCCL's release notes per tag); " + NCCL_RELEASES),
))
def nccl_gpu(ctx: CheckContext) -> Iterable[Finding]:
    from ..matrix import nccl_env
    from .compat import gpu_ccs

    facts = ctx.facts
    gpus = gpu_ccs(facts)
    count = facts.value("gpu.count")
    if not gpus or not isinstance(count, int) or count < 2:
        return  # NCCL's kernels run between GPUs: one GPU never launches them
    copies = _nccl_candidates(facts)
    if not copies:
        return
    said = set()
    for cc, name, cc_fact in gpus:
        row = nccl_env.first_release_for(cc)
        if row is None or cc in said:
            continue
        need = Version(row["nccl_min"])
        old = [c for c in copies if Version(c["version"]) < need]
        if len(old) != len(copies):
            continue  # a copy new enough is there, and which one the job loads is not known
        said.add(cc)
        fails = row["kind"] == "fails_before"
        severity = "warning" if not fails or matrix.unverified(row) else "error"
        listed = ", ".join("%s (%s)" % (c["version"], c["path"]) for c in old)
        yield Finding(
            code="nccl.too_old_for_gpu", severity=severity, components=["nccl", "gpu"],
            title="NCCL %s is older than %s, the first NCCL for %s (compute capability %s)" % (
                listed, row["nccl_min"], name, cc),
            detail="%s%s." % (row["why"][0].upper() + row["why"][1:], "" if fails else
                              "; multi-GPU jobs may run, slowly, or fail"),
            evidence=_evidence(facts, *sorted({c["key"] for c in old})) + [cc_fact.to_dict()],
            source={"rule": "NCCL %s is the first release for compute capability %s" % (row["nccl_min"], cc),
                    "url": row["source"]["url"], "checked": row["source"]["checked"]},
            fix=Fix(text="Use NCCL %s or newer: upgrade the framework (its wheel pins an NCCL) or the NCCL wheel "
                         "or package it loads." % row["nccl_min"],
                    commands=["pip install -U 'nvidia-nccl-cu12>=%s'" % row["nccl_min"]]))


# -- packages that bundle CUDA-linked libraries of their own (CTranslate2 ...) ------------------------------------


def _loaded_by_framework(facts: Facts, soname: str) -> List[str]:
    """The frameworks that load ``soname`` from a copy of their own (a program importing them first has it)."""
    out = []
    for fw in FRAMEWORKS:
        for e in facts.value("linkage." + fw) or []:
            if isinstance(e, dict) and e.get("soname") == soname and e.get("path"):
                out.append(NAMES.get(fw, fw))
    return out


@check("package-libraries", requires=("linkage.packages",), reads=("linkage.*",), layers=("libraries", "cuda"),
       codes=tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code.endswith(".framework_cannot_load")))
def package_libraries(ctx: CheckContext) -> Iterable[Finding]:
    """A package's own bundled libraries (auditwheel's ``<name>.libs``) need a CUDA, cuDNN, NCCL or TensorRT
    library the loader cannot find, or only another major of it: importing the package fails as a framework's
    import would. Judged by the closure rules every library set is judged by (:func:`closure.judge`)."""
    from .closure import judge

    facts = ctx.facts
    fact = facts.get("linkage.packages")
    ev = [fact.to_dict()] if fact is not None else []
    for pkg in facts.value("linkage.packages") or []:
        if not isinstance(pkg, dict):
            continue
        subject = "%s %s" % (pkg.get("package"), pkg.get("version"))
        for f in judge(pkg, subject, evidence=ev):
            if f.severity != "error" or f.code not in ("linkage.missing", "linkage.wrong_major"):
                continue
            comp = f.components[0] if f.components else "cuda"
            f.code = "%s.framework_cannot_load" % comp
            sonames = {str(link.get("soname")) for link in pkg.get("links") or [] if isinstance(link, dict)
                       and link.get("soname") and str(link.get("soname")) in f.title}
            with_fw = sorted({n for s in sonames for n in _loaded_by_framework(facts, s)})
            if with_fw:
                f.detail += (" A program that imports %s first has that library loaded from %s's own copy and "
                             "does not fail there; one that imports only %s does." % (
                                 " or ".join(with_fw), with_fw[0], pkg.get("package")))
            yield f

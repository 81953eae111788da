"""Framework library linkage: which cuDNN / cuBLAS / CUDA runtime / NCCL / TensorRT file each
installed framework's CUDA library would really load, resolved the way ``ld.so`` does.

For each framework the frameworks probe found, the ELF dynamic section of its main CUDA
library is read (``Host.elf``: NEEDED, RPATH, RUNPATH), ``$ORIGIN`` is expanded to the
library's directory, and every NEEDED CUDA soname is resolved with
:func:`envdoctor.probes.libraries.resolve_soname` in glibc's order (ld.so(8)):

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
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..facts import Fact, ok, unknown
from ..host.base import Host
from . import ProbeContext, register
from .cuda import ld_library_path_dirs
from .libraries import read_ld_cache, resolve_soname

#: NEEDED entries worth resolving (the CUDA libraries a framework may get from elsewhere).
CUDA_SONAME = re.compile(r"^lib(cudnn|cublas|cublasLt|cudart|nccl|nvinfer)\.so\.\d+(?:\.\d+)?$")  # libcudart.so.11.0
#: The whole CUDA math stack (NVRTC, cuFFT, cuRAND, cuSOLVER, cuSPARSE too), for frameworks whose wheels ship
#: none of it and expect every library from the machine's CUDA installation (mxnet-cuNNN); the others get these
#: from the same wheels or directories as their cuBLAS/CUDA runtime, already resolved above.
CUDA_STACK_SONAME = re.compile(r"^lib(cudnn|cublas|cublasLt|cudart|nccl|nvinfer|nvrtc|cufft|curand|cusolver|"
                               r"cusparse)\.so\.\d+(?:\.\d+)?$")  # libnvrtc.so.11.2
SONAMES_OF = {"mxnet": CUDA_STACK_SONAME}

#: Framework -> candidate paths of its main CUDA library, relative to its site-packages dir.
LIBRARIES: Dict[str, Tuple[str, ...]] = {
    "torch": ("torch/lib/libtorch_cuda.so",),
    # TF 1.15-2.1 and NVIDIA's nvidia-tensorflow keep the real package in tensorflow_core/; TF 1.x is .so.1
    "tensorflow": ("tensorflow/libtensorflow_framework.so.2", "tensorflow_core/libtensorflow_framework.so.2",
                   "tensorflow_core/libtensorflow_framework.so.1", "tensorflow/libtensorflow_framework.so.1"),
    "jax": ("jax_plugins/xla_cuda12/xla_cuda_plugin.so", "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
            "jaxlib/cuda/_versions.so"),
    "onnxruntime": ("onnxruntime/capi/libonnxruntime_providers_cuda.so",),
    # the mxnet-cuNNN wheels link the CUDA libraries of their CUDA release (NEEDED, no RPATH) and expect them
    # installed on the machine (apache/mxnet#20279)
    "mxnet": ("mxnet/libmxnet.so",),
}


def expand_origin(entries: Sequence[str], lib_dir: str) -> List[str]:
    """``$ORIGIN``/``${ORIGIN}`` -> the library's directory, normalised (``..`` folded)."""
    out = []
    for e in entries:
        for part in e.split(":"):
            if not part:
                continue
            part = part.replace("${ORIGIN}", lib_dir).replace("$ORIGIN", lib_dir)
            out.append(posixpath.normpath(part))
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
    rp = expand_origin(rpath, lib_dir) if not runpath else []  # DT_RPATH is ignored when DT_RUNPATH exists
    rn = expand_origin(runpath, lib_dir)
    own = rp + rn
    out = []
    sonames = [(s, "NEEDED") for s in needed if pattern.match(s)]
    sonames += [(s, "dlopen") for s in extra if s not in needed]
    for soname, how in sonames:
        # RPATH dirs go in front of LD_LIBRARY_PATH; resolve_soname puts RUNPATH after it.
        res = resolve_soname(host, soname, runpath=rn, ld_library_path=list(rp) + list(ldp), cache=cache)
        if res["path"] and posixpath.dirname(res["path"]) in rp:
            res["via"] = "RPATH"
        expected = None
        for d in own:
            if soname in host.list_dir(d).names():
                expected = posixpath.join(d, soname)
                break
        exp_real = host.resolve(expected) if expected else None
        out.append({
            "soname": soname, "how": how, "path": res["path"], "resolved": res["resolved"], "via": res["via"],
            "version": res["version"], "expected": expected,
            "shadowed": bool(expected and res["resolved"] and res["resolved"] != exp_real),
            "others": res["others"],
        })
    return out


@register("linkage", "Framework library linkage", order=95,
          produces=("linkage.*", "linkage.*.elf"), needs=("frameworks",))
def probe_linkage(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    fw = ctx.facts_of("frameworks")
    facts: List[Fact] = []
    ldp = ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH"))
    cache: Optional[List[Tuple[str, str, str]]] = None
    cache_why: Optional[str] = None  # why the loader cache could not be read, when it could not
    for name, rels in LIBRARIES.items():
        value = fw.value("framework." + name)
        if not isinstance(value, dict) or not value.get("path"):
            continue
        if name == "onnxruntime" and not value.get("gpu"):
            continue
        if name != "onnxruntime" and value.get("build") not in ("cuda", "unknown"):
            continue
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
        entries = resolve_linkage(host, elf.path, elf.needed, elf.rpath, elf.runpath, ldp, cache,
                                  _dlopened(name, value), SONAMES_OF.get(name, CUDA_SONAME))
        if cache_why:
            # "not found" without the cache is "not found outside the cache": the checks say so, not "missing"
            for e in entries:
                if isinstance(e, dict) and not e.get("path"):
                    e["cache_unknown"] = cache_why
        facts.append(ok("linkage." + name, entries, "elf:" + elf.path,
                        "CUDA libraries %s would load" % name))
    if not facts:
        # Say why the section is empty rather than print a bare heading.
        facts.append(ok("linkage.scan", "no framework with a CUDA library is installed, so nothing to resolve",
                        "derived", "Frameworks checked"))
    return facts

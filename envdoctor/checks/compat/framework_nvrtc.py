"""Can the NVRTC a framework compiles its kernels with target the GPUs?

A framework that compiles its kernels at run time (the plug-in's ``runtime_compiled``: CuPy) does so with the NVRTC
the loader gives it (``linkage.<name>.dlopen``: the ``nvidia-cuda-nvrtc-cu12`` wheel, a toolkit's lib64, a conda
prefix). NVRTC of a CUDA release targets the architectures that release targets (NVRTC's
``nvrtcGetSupportedArchs``; ``cuda.json`` ``cc_min``/``cc_max`` per release, proved from NVIDIA's nvcc wheels). A
GPU newer than that range cannot get a kernel: CuPy asks NVRTC for a cubin of the device's architecture and fails
(cupy/cupy#9121: CuPy 13.4.1 with CUDA 12.6's NVRTC on a Blackwell GPU; "Blackwell support requires CUDA 12.8",
cupy/cupy#9106), so it is an error. Programs outside the frameworks are judged by ``compat.program-nvrtc``.
"""

from __future__ import annotations

import posixpath
from typing import List

from packaging.version import Version

from ... import versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...frameworks import BY_NAME
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from . import DOCS, RUNTIME_COMPILED, _ev, _severity, _source, _v, gpu_ccs

_NVRTC_WHEEL = "nvidia-cuda-nvrtc"  # NVIDIA's wheel of NVRTC, its name without the CUDA major

NVRTC_URL = "https://docs.nvidia.com/cuda/nvrtc/index.html"


def _release(entry: dict) -> str:
    """The CUDA release (``12.6``) of the NVRTC file a link took: its wheel's or its file name's version."""
    for key in ("file_version", "version"):
        v = _v(str(entry.get(key) or ""))
        if v is not None and len(v.release) >= 2:
            return "%d.%d" % v.release[:2]
    return ""


def _framework_nvrtc(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    gpus = gpu_ccs(facts)
    if not gpus:
        return out
    for name in RUNTIME_COMPILED:
        fw = facts.mapping("framework." + name)
        if fw.get("build") != "cuda":
            continue
        links = facts.get("linkage.%s.dlopen" % name)
        for e in facts.items("linkage.%s.dlopen" % name):
            if not isinstance(e, dict) or not str(e.get("soname", "")).startswith("libnvrtc.so") or not e.get("path"):
                continue
            release = _release(e)
            row = hw.cuda_release(release) if release else None
            if row is None or not row.get("cc_max"):
                continue
            label = "%s %s" % (BY_NAME[name].display if name in BY_NAME else name, fw.get("version", "?"))
            for cc, gpu, cc_fact in gpus:
                if _v(cc) is None or Version(cc) <= Version(str(row["cc_max"])):
                    continue
                sm = "sm_" + cc.replace(".", "")
                newer = hw.cuda_for_cc(cc)
                first = newer[0] if newer else None
                where = posixpath.dirname(str(e.get("path")))
                wheel = versions.cu_wheel(_NVRTC_WHEEL, first or release)
                out.append(Finding(
                    code="cuda.toolkit_cannot_target_gpu", severity=_severity(row, ["cc_max"]),
                    components=["cuda", "gpu", name],
                    title="%s compiles its kernels at run time with NVRTC %s (%s), which cannot target %s (%s, "
                          "compute capability %s): CUDA %s targets up to %s" % (
                              label, e.get("file_version") or release, e.get("path"), gpu, sm, cc, release,
                              row["cc_max"]),
                    detail="NVRTC knows the architectures of its own CUDA release; %s asks it for code of the GPU "
                           "it runs on, so every kernel it compiles fails on this GPU (CUDA_ERROR_NO_BINARY_FOR_GPU "
                           "or an invalid-architecture error, whatever the driver supports). The first CUDA whose "
                           "NVRTC targets %s is %s." % (label, sm, first or "not in envdoctor's matrix"),
                    evidence=_ev(cc_fact, links),
                    source=_source("CUDA %s (its NVRTC as its nvcc) targets compute capability %s..%s" % (
                        row["version"], row["cc_min"], row["cc_max"]), row),
                    fix=Fix(text="Give %s the NVRTC of CUDA %s or newer (pip: %s>=%s), ahead of "
                                 "%s on the loader's path." % (
                                     label, first or "a newer release", wheel, first or release, where),
                            commands=["pip install '%s>=%s'" % (wheel, first)] if first else [])))
    return out


@check("compat.framework-nvrtc", requires=("gpu.N.compute_capability",), reads=("framework.*", "linkage.*.dlopen"),
       layers=("cuda", "frameworks"), codes=docs_for(DOCS, "cuda.toolkit_cannot_target_gpu"))
def framework_nvrtc(ctx: CheckContext) -> List[Finding]:
    return _framework_nvrtc(ctx.facts)

"""Can the NVRTC a framework compiles its kernels with target the GPUs?

A framework that compiles its kernels at run time (the plug-in's ``runtime_compiled``: CuPy) does so with the NVRTC
the loader gives it (``linkage.<name>.dlopen``: the ``nvidia-cuda-nvrtc-cu12`` wheel, a toolkit's lib64, a conda
prefix). NVRTC of a CUDA release targets the architectures that release targets (NVRTC's
``nvrtcGetSupportedArchs``; ``cuda.json`` ``cc_min``/``cc_max`` per release, proved from NVIDIA's nvcc wheels). A
GPU newer than that range cannot get a kernel: CuPy asks NVRTC for a cubin of the device's architecture and fails
(cupy/cupy#9121: CuPy 13.4.1 with CUDA 12.6's NVRTC on a Blackwell GPU; "Blackwell support requires CUDA 12.8",
cupy/cupy#9106), so it is an error. Programs outside the frameworks are judged by ``compat.program-nvrtc``.

PyTorch's JIT fusers (the TorchScript fuser of ``torch.jit.script``/``trace`` code, later the jiterator) compile
their kernels at run time too, with the NVRTC of the CUDA torch was built with (the wheel's bundled copy, conda's
``cudatoolkit`` of that release), asking it for the GPU's own architecture, clamped to the newest one torch's
table knows that NVRTC to target (``codegenOutputQuery``, torch/csrc/jit/codegen/fuser/cuda/fused_kernel.cpp and
aten/src/ATen/native/cuda/jit_utils.cpp). For an NVRTC the table of that torch release does not cover, nothing is
clamped: on a GPU newer than the NVRTC targets, every fused kernel fails with "nvrtc: error: invalid value for
--gpu-architecture (-arch)" while eager code runs (a warning). :data:`TORCH_NVRTC_CLAMPS` says from which release
each NVRTC is clamped.
"""

from __future__ import annotations

import posixpath
from typing import List, Optional, Tuple

from packaging.version import Version

from ... import versions
from ...facts import Fact, Facts
from ...findings import Finding, Fix
from ...frameworks import BY_NAME
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from . import DOCS, RUNTIME_COMPILED, _ev, _severity, _source, _v, gpu_ccs

_NVRTC_WHEEL = "nvidia-cuda-nvrtc"  # NVIDIA's wheel of NVRTC, its name without the CUDA major

NVRTC_URL = "https://docs.nvidia.com/cuda/nvrtc/index.html"


#: (first torch release whose fusers clamp the architecture asked of it, lowest and highest NVRTC release covered):
#: NVRTC 10.x and older were clamped before CUDA 11 builds existed; NVRTC 11.0 from 1.7.1 (pytorch/pytorch#48309,
#: "[Release/1.7.1] Add max supported SM for nvrtc-11.0", the cherry-pick of #48151: "the regression when nvrtc from
#: CUDA-11.0 is used on the system with RTX3080"); NVRTC 11.1-11.7 (clamped to 8.6) from 1.13 (pytorch/pytorch
#: #87611, cherry-picked as #87618 into release/1.13). Newer NVRTC releases are not judged (no table verified).
TORCH_NVRTC_CLAMPS = (("0", "1.0", "10.2"), ("1.7.1", "11.0", "11.0"), ("1.13.0", "11.1", "11.7"))
TORCH_NVRTC_URL = "https://github.com/pytorch/pytorch/pull/48309"


def _first_clamping(nvrtc: str) -> Optional[str]:
    """The first torch release whose fusers clamp the architecture they ask NVRTC ``nvrtc`` (``11.0``) for; None
    when no verified table covers that NVRTC."""
    n = _v(nvrtc)
    return next((first for first, lo, hi in TORCH_NVRTC_CLAMPS if n is not None and Version(lo) <= n <= Version(hi)),
                None)


def _torch_fuser_nvrtc(facts: Facts, gpus: List[Tuple[str, str, Fact]]) -> List[Finding]:
    """PyTorch's fusers asking the NVRTC of torch's own CUDA for a GPU it cannot target (see the module's doc)."""
    fw = facts.mapping("framework.torch")
    if fw.get("build") != "cuda" or not fw.get("version"):
        return []
    cuda = _v(str(fw.get("cuda") or ""))
    if cuda is None or len(cuda.release) < 2:
        return []
    release = "%d.%d" % cuda.release[:2]
    row = hw.cuda_release(release)
    fixed = _first_clamping(release)
    torch = _v(str(fw["version"]))
    if row is None or not row.get("cc_max") or fixed is None or torch is None or \
            Version(torch.base_version) >= Version(fixed):
        return []  # no table for this NVRTC, or this torch clamps what it asks of it
    out: List[Finding] = []
    for cc, gpu, cc_fact in gpus:
        if _v(cc) is None or Version(cc) <= Version(str(row["cc_max"])):
            continue
        sm = "sm_" + cc.replace(".", "")
        newer = hw.cuda_for_cc(cc)
        out.append(Finding(
            code="cuda.toolkit_cannot_target_gpu", severity="warning", components=["cuda", "gpu", "torch"],
            title="torch %s compiles fused kernels at run time with NVRTC %s, which cannot target %s (%s, compute "
                  "capability %s): CUDA %s targets up to %s, and this torch asks NVRTC for the GPU's own architecture "
                  "unclamped" % (fw["version"], release, gpu, sm, cc, release, row["cc_max"]),
            detail="PyTorch's JIT fusers (TorchScript: torch.jit.script or trace) compile their kernels with the "
                   "NVRTC of its CUDA %s and ask it for the GPU's own architecture; torch %s knows no limit for "
                   "NVRTC %s, so every fused kernel fails with 'nvrtc: error: invalid value for --gpu-architecture "
                   "(-arch)', while eager code, which runs the build's own kernels, works. torch %s and newer clamp "
                   "the request to what NVRTC %s targets." % (release, fw["version"], release, fixed, release),
            evidence=_ev(cc_fact, facts.get("framework.torch")),
            source=_source("torch's fusers clamp the architecture asked of NVRTC %s from torch %s; CUDA %s targets "
                           "compute capability %s..%s" % (release, fixed, release, row["cc_min"], row["cc_max"]),
                           url=TORCH_NVRTC_URL, checked="2026-11-30"),
            fix=Fix(text="Install torch %s or newer of the same CUDA, or a torch built with CUDA %s or newer (whose "
                         "NVRTC targets %s); or turn the fuser off (torch._C._jit_override_can_fuse_on_gpu(False))." % (
                             fixed, newer[0] if newer else "a newer release", sm))))
    return out


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
    out += _torch_fuser_nvrtc(facts, gpus)
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

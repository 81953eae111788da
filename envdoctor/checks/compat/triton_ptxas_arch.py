"""Can the ptxas Triton assembles its kernels with target the GPUs?

Triton compiles every kernel to PTX and assembles it with a ptxas for the compute capability of the GPU it runs on
(``compile_ptx_to_cubin(ptx, ptxas, compute_capability)``, the device's own capability; ``triton.json``
``ptxas_target``). Which ptxas it runs depends on its release (``triton.json`` ``ptxas_search``: TRITON_PTXAS_PATH, the
one its wheel bundles, the first on PATH), and the probe reads that ptxas's CUDA release (``ptxas --version``). A ptxas
targets the architectures of its own CUDA release (``cuda.json`` ``cc_min``/``cc_max``): Triton 2.0.0's wheel bundles
the ptxas of CUDA 11.7, which knows no sm_89, so on an RTX 4090 every Triton kernel fails to assemble ("ptxas fatal :
Value 'sm_89' is not defined for option 'gpu-name'"). Triton 1.x without a ptxas hands its PTX to the driver and is
not judged here."""

from __future__ import annotations

import posixpath
from typing import List

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import hardware as hw
from ...matrix import unverified
from .. import CheckContext, check, docs_for
from . import DOCS, _ev, _severity, _source, _v, gpu_ccs


def _triton_ptxas_arch(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    triton = facts.value("framework.torch.triton")
    gpus = gpu_ccs(facts)
    if not isinstance(triton, dict) or not isinstance(triton.get("ptxas"), str) or not gpus:
        return out
    row = hw.triton_release(str(triton.get("version") or ""))
    release = str(triton.get("release") or "")
    cuda = hw.cuda_release(release) if release else None
    if row is None or row.get("ptxas_target") != "gpu" or cuda is None:
        return out
    low, high = _v(str(cuda.get("cc_min") or "")), _v(str(cuda.get("cc_max") or ""))
    how = {"TRITON_PTXAS_PATH": "named by TRITON_PTXAS_PATH", "PATH": "the first on PATH"}.get(
        str(triton.get("from")), "bundled with it")
    label = "%s %s" % (triton.get("package") or "triton", triton.get("version"))
    for cc, gpu, cc_fact in gpus:
        want = _v(cc)
        if want is None or (high is None or want <= high) and (low is None or want >= low):
            continue
        sm = "sm_" + cc.replace(".", "")
        newer = [c for c in hw.cuda_for_cc(cc) if Version(c) > Version(cuda["version"])] if high and want > high \
            else []
        severity = _severity(cuda, ["cc_max" if high is not None and want > high else "cc_min"])
        if unverified(row):
            severity = "warning"
        out.append(Finding(
            code="cuda.toolkit_cannot_target_gpu", severity=severity, components=["cuda", "gpu", "torch"],
            title="%s assembles its kernels for %s (%s, compute capability %s) with the ptxas %s (CUDA %s), which "
                  "cannot target %s: CUDA %s targets compute capability %s to %s" % (
                      label, gpu, sm, cc, how, triton.get("ptxas_version") or release, sm, cuda["version"],
                      cuda.get("cc_min"), cuda.get("cc_max")),
            detail="Triton compiles each kernel to PTX and runs ptxas for the GPU's own architecture; the ptxas of "
                   "CUDA %s does not know %s, so every Triton kernel (torch.compile, Inductor, Triton code) fails "
                   "to assemble: \"ptxas fatal : Value '%s' is not defined for option 'gpu-name'\". PyTorch's own "
                   "CUDA kernels are not affected.%s" % (
                       cuda["version"], sm, sm,
                       " The first CUDA whose ptxas targets %s is %s." % (sm, newer[0]) if newer else ""),
            evidence=_ev(cc_fact, facts.get("framework.torch.triton")),
            source=_source("Triton %s runs ptxas for the GPU's compute capability; CUDA %s targets %s..%s" % (
                row.get("releases"), cuda["version"], cuda.get("cc_min"), cuda.get("cc_max")), cuda),
            fix=_fix(facts, row, sm, want)))
    return out


def _fix(facts: Facts, row: dict, sm: str, want: Version) -> Fix:
    """Point Triton at the active toolkit's ptxas when that one targets the GPU (through TRITON_PTXAS_PATH where the
    release reads it, else PATH), else upgrade Triton."""
    nvcc = facts.mapping("cuda.nvcc")
    tk = hw.cuda_release(str(nvcc.get("release") or "")) if isinstance(nvcc.get("path"), str) else None
    high = _v(str(tk.get("cc_max") or "")) if tk else None
    text = ("Upgrade Triton (with the torch release made for it) to one whose ptxas targets %s, or point it at the "
            "ptxas of a CUDA toolkit that does." % sm)
    if tk is None or high is None or want > high:
        return Fix(text=text)
    ptxas = posixpath.join(posixpath.dirname(str(nvcc["path"])), "ptxas")
    if "TRITON_PTXAS_PATH" in (row.get("ptxas_search") or []):
        return Fix(text=text, commands=["export TRITON_PTXAS_PATH=%s" % ptxas])
    return Fix(text=text, commands=["export PATH=%s:$PATH" % posixpath.dirname(ptxas)])


@check("compat.triton-ptxas-arch", requires=("gpu.N.compute_capability", "framework.torch.triton"),
       reads=("cuda.nvcc",),
       layers=("cuda", "frameworks", "gpu"), codes=docs_for(DOCS, "cuda.toolkit_cannot_target_gpu"))
def triton_ptxas_arch(ctx: CheckContext) -> List[Finding]:
    return _triton_ptxas_arch(ctx.facts)

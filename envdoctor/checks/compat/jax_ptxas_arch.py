"""Can the ptxas JAX (XLA) compiles its kernels with target the GPUs?

XLA compiles every GPU kernel to PTX for the device's own compute capability and assembles it with a ptxas it
finds on the machine (``frameworks.jax-ptxas`` models which: the first on PATH, else the ``nvidia-cuda-nvcc``
wheel's). A jaxlib built for a local CUDA (jaxlib 0.1.x+cudaNNN, the wheels before the CUDA plugin wheels) ships no
ptxas, so in an image built on an old CUDA it is that toolkit's ptxas. A ptxas targets the architectures of its own
CUDA release (``cuda.json`` ``cc_min``/``cc_max``): CUDA 11.0's knows no sm_86, so on a GA10x GPU XLA's ptxas run
fails ("ptxas fatal : Value 'sm_86' is not defined for option 'gpu-name'"). XLA then either stops or, where its
release has the fallback, logs that ptxas is too old and hands the PTX to the driver to compile (XLA's
asm_compiler: "ptxas too old. Falling back to the driver to compile."), so this is a warning, never an error.
Where the active toolkit's nvcc (compat.toolkit-vs-gpu) already cannot target the GPU, that finding says it.
"""

from __future__ import annotations

import posixpath
from typing import List, Optional, Tuple

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from . import DOCS, _ev, _source, _v, gpu_ccs

#: XLA's CompileGpuAsmUsingPtxAs: on "ptxas fatal   : Value 'sm_XX' is not defined for option 'gpu-name'" it
#: logs that ptxas is too old and returns "ptxas too old. Falling back to the driver to compile."
XLA_PTXAS = "https://github.com/openxla/xla/blob/main/xla/stream_executor/cuda/cuda_asm_compiler.cc"


def _runs(facts: Facts) -> Optional[Tuple[str, str, str]]:
    """(CUDA release, ptxas path, how it is found) of the ptxas XLA runs: the first on PATH (its toolkit's
    release), else the nvidia-cuda-nvcc wheel's."""
    ptxas = facts.value("framework.jax.ptxas")
    if not isinstance(ptxas, dict):
        return None
    on_path, wheel = ptxas.get("path"), ptxas.get("wheel")
    if isinstance(on_path, dict) and isinstance(on_path.get("resolved"), str):
        resolved = on_path["resolved"]
        for tk in facts.value("cuda.toolkits") or []:
            if not isinstance(tk, dict) or not isinstance(tk.get("path"), str) or \
                    not isinstance(tk.get("version"), str):
                continue
            if resolved.startswith(tk["path"].rstrip("/") + "/"):
                return tk["version"], str(on_path.get("path") or resolved), "the first on PATH"
        nvcc = facts.mapping("cuda.nvcc")
        if isinstance(nvcc.get("resolved"), str) and \
                posixpath.dirname(nvcc["resolved"]) == posixpath.dirname(resolved):
            ver = nvcc.get("version") or nvcc.get("release")
            if isinstance(ver, str):
                return ver, str(on_path.get("path") or resolved), "the first on PATH"
        return None
    if isinstance(wheel, dict) and isinstance(wheel.get("version"), str):
        return wheel["version"], str(wheel.get("path") or "nvidia-cuda-nvcc"), "the nvidia-cuda-nvcc wheel's"
    return None


def _jax_ptxas_arch(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    jax = facts.value("framework.jax")
    if not isinstance(jax, dict) or jax.get("build") != "cuda":
        return out
    runs = _runs(facts)
    row = hw.cuda_release(runs[0]) if runs else None
    if runs is None or row is None:
        return out
    low, high = _v(str(row.get("cc_min") or "")), _v(str(row.get("cc_max") or ""))
    label = "jaxlib %s" % (jax.get("jaxlib") or jax.get("version"))
    for cc, gpu, cc_fact in gpu_ccs(facts):
        want = _v(cc)
        if want is None or (high is None or want <= high) and (low is None or want >= low):
            continue
        sm = "sm_" + cc.replace(".", "")
        too_new = high is not None and want > high
        newer = [c for c in hw.cuda_for_cc(cc) if Version(c) > Version(row["version"])] if too_new else []
        first = newer[0] if newer else None
        out.append(Finding(
            code="cuda.gpu_newer_than_toolkit" if too_new else "cuda.toolkit_cannot_target_gpu",
            severity="warning", components=["cuda", "gpu", "jax"],
            title="JAX (%s) compiles its kernels for %s (%s, compute capability %s) with ptxas %s (CUDA %s, %s), "
                  "which cannot target %s: CUDA %s targets compute capability %s to %s" % (
                      label, gpu, sm, cc, runs[1], runs[0], runs[2], sm, row["version"], row.get("cc_min"),
                      row.get("cc_max")),
            detail="XLA compiles every kernel to PTX for the GPU's own architecture and assembles it with ptxas; "
                   "the ptxas of CUDA %s does not know %s (\"ptxas fatal : Value '%s' is not defined for option "
                   "'gpu-name'\"), so JAX either fails to compile its kernels or, where XLA falls back, leaves them "
                   "to the driver's JIT with a 'ptxas too old' warning.%s" % (
                       row["version"], sm, sm,
                       " The first CUDA whose ptxas targets %s is %s." % (sm, first) if first else ""),
            evidence=_ev(cc_fact, facts.get("framework.jax"), facts.get("framework.jax.ptxas")),
            source=_source("XLA runs ptxas for the GPU's compute capability; CUDA %s targets %s..%s" % (
                row["version"], row.get("cc_min"), row.get("cc_max")), row),
            fix=Fix(text="Give JAX a ptxas of CUDA %s or newer: put that toolkit's bin first on PATH (in a "
                         "container, rebuild the image on a CUDA %s or newer base), or install a jax release whose "
                         "CUDA wheels bring their own ptxas." % (first or "a newer", first or "newer")
                    if too_new else "Use a CUDA toolkit (and jaxlib) that still targets %s." % sm)))
    return out


@check("compat.jax-ptxas-arch", requires=("gpu.N.compute_capability", "framework.jax.ptxas"),
       reads=("cuda.toolkits", "cuda.nvcc", "framework.jax"),
       layers=("cuda", "frameworks", "gpu"),
       codes=docs_for(DOCS, "cuda.toolkit_cannot_target_gpu", "cuda.gpu_newer_than_toolkit"),
       yields={"*": ("compat.toolkit-vs-gpu:cuda.toolkit_cannot_target_gpu",
                     "compat.toolkit-vs-gpu:cuda.gpu_newer_than_toolkit")})
def jax_ptxas_arch(ctx: CheckContext) -> List[Finding]:
    return _jax_ptxas_arch(ctx.facts)

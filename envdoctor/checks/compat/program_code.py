"""The GPU code of programs and libraries outside the Python frameworks (``programs.gpu_code``: conda packages'
libraries, programs on PATH with the libraries and fat binaries beside them, Python extension modules), judged by
the rules a framework's own GPU code is judged by:

* the architectures a fat binary carries against each GPU: a cubin for X.y runs on X.z (z >= y) only, PTX on any
  capability at or above its own (CUDA C++ Programming Guide); none of either: "no kernel image is available for
  execution on the device" (``gpu.arch_not_in_build``);
* a library that compiles its kernels at run time with NVRTC: NVRTC writes PTX of its own release's ISA (its
  default output, for its default virtual architecture), which the driver must JIT. A driver of an older CUDA
  cannot ("the provided PTX was compiled with an unsupported toolchain"): CUDA minor-version compatibility does
  not cover PTX (NVIDIA's CUDA compatibility guide), so a driver below that NVRTC's CUDA is an error, not the
  minor-version info (``driver.too_old_for_toolkit``); and an NVRTC whose CUDA no longer targets the GPU's
  architecture (``cuda.json`` ``cc_min``) cannot compile for it at all (``cuda.toolkit_cannot_target_gpu``).
"""

from __future__ import annotations

from typing import Any, Dict, List

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from . import DOCS, Driver, _ev, _mm_str, _severity, _source, _v, gpu_ccs
from .arch_vs_builds import _binary_runs_on

COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
NVRTC_URL = "https://docs.nvidia.com/cuda/nvrtc/index.html"
PROG_GUIDE_URL = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility"
CHECKED = "2026-11-30"


def _entries(facts: Facts) -> List[Dict[str, Any]]:
    value = facts.value("programs.gpu_code")
    libs = value.get("libraries") if isinstance(value, dict) else None
    return [e for e in libs or [] if isinstance(e, dict) and e.get("path")]


def _label(e: Dict[str, Any]) -> str:
    owner = str(e.get("owner") or "")
    kind = {"conda": "conda package", "program": "program", "python": "Python package"}.get(str(e.get("kind")), "")
    return ("%s %s %s" % (kind, owner, e.get("version") or "")).strip()


def _program_arch(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    fact = facts.get("programs.gpu_code")
    gpus = gpu_ccs(facts)
    if fact is None or not fact.known or not gpus:
        return out
    for e in _entries(facts):
        sass, ptx = list(e.get("sass") or []), list(e.get("ptx") or [])
        if not sass and not ptx:
            continue
        for cc, gpu, cc_fact in gpus:
            has_sass, has_ptx = _binary_runs_on(sass, ptx, cc)
            if has_sass or has_ptx or _v(cc) is None:
                continue
            sm = "sm_" + cc.replace(".", "")
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu"],
                title="%s (%s, compute capability %s) has no GPU code in %s (%s): it carries %s" % (
                    gpu, sm, cc, e["path"], _label(e), ", ".join(sass + ptx)),
                detail="%s's CUDA fat binary holds cubins for %s%s and no PTX a %s GPU can JIT-compile: a cubin "
                       "runs only on its own major at an equal or higher minor, PTX on capabilities at or above its "
                       "own. Its kernels fail on this GPU with 'no kernel image is available for execution on the "
                       "device' (or the program's own refusal of the GPU)." % (
                           e["path"], ", ".join(sass) or "no architecture",
                           " and PTX for %s" % ", ".join(ptx) if ptx else "", sm),
                evidence=_ev(cc_fact, fact),
                source=_source("a cubin for X.y runs on X.z (z >= y); PTX on any capability at or above its own",
                               url=PROG_GUIDE_URL, checked=CHECKED),
                fix=Fix(text="Install a release of %s built for %s (compute capability %s), or rebuild it with "
                             "-gencode arch=compute_%s,code=sm_%s (TORCH_CUDA_ARCH_LIST=\"%s\" for a torch "
                             "extension)." % (e.get("owner"), sm, cc, cc.replace(".", ""), cc.replace(".", ""),
                                              cc))))
    return out


def _program_nvrtc(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    fact = facts.get("programs.gpu_code")
    if fact is None or not fact.known:
        return out
    drv = Driver(facts)
    seen = set()
    for e in _entries(facts):
        toolkit = e.get("toolkit")
        row = hw.cuda_release(str(toolkit)) if e.get("nvrtc") and toolkit else None
        if row is None or (e["path"], toolkit) in seen:
            continue
        seen.add((e["path"], toolkit))
        label = _label(e)
        if drv.known and drv.cuda is not None:
            need = (int(row["version"].split(".")[0]), int(row["version"].split(".")[1]))
            verdict = drv.verdict(need)
            if verdict in ("minor_compat", "too_old"):
                out.append(Finding(
                    code="driver.too_old_for_toolkit", severity="error", components=["driver", "cuda"],
                    title="%s (%s) compiles its kernels at run time with NVRTC %s, whose PTX (ISA %s) driver %s "
                          "cannot JIT: it supports CUDA up to %s" % (
                              e["path"], label, row["version"], row.get("ptx_isa") or "?", drv.version,
                              _mm_str(drv.cuda)),
                    detail="NVRTC %s writes PTX of its own ISA version (%s); the driver JIT-compiles that PTX to "
                           "the GPU and knows no ISA newer than its own CUDA's. CUDA minor-version compatibility "
                           "does not cover PTX, so every kernel fails to load with CUDA_ERROR_UNSUPPORTED_PTX_VERSION "
                           "('the provided PTX was compiled with an unsupported toolchain') although the runtime "
                           "itself starts." % (row["version"], row.get("ptx_isa") or "?"),
                    evidence=_ev(drv.version_fact, drv.cuda_fact, fact),
                    source=_source("PTX from NVRTC %s needs a driver of CUDA %s or newer (driver >= %s); minor-"
                                   "version compatibility excludes PTX JIT" % (
                                       row["version"], row["version"], row.get("min_driver_linux")),
                                   url=COMPAT_URL, checked=CHECKED),
                    fix=Fix(text="Install NVIDIA driver %s or newer (CUDA %s), or give the program the NVRTC of "
                                 "the driver's CUDA %s (in conda: cudatoolkit=%s or cuda-version=%s)." % (
                                     row.get("min_driver_linux"), row["version"], _mm_str(drv.cuda),
                                     _mm_str(drv.cuda), _mm_str(drv.cuda)))))
        cc_min = row.get("cc_min")
        for cc, gpu, cc_fact in gpu_ccs(facts):
            if not cc_min or _v(cc) is None or Version(cc) >= Version(str(cc_min)):
                continue
            sm = "sm_" + cc.replace(".", "")
            older = [v for v in hw.cuda_for_cc(cc)]
            out.append(Finding(
                code="cuda.toolkit_cannot_target_gpu", severity=_severity(row, ["cc_min"]),
                components=["cuda", "gpu"],
                title="%s (%s) compiles its kernels at run time with NVRTC %s, which cannot compile for %s (%s, "
                      "compute capability %s): CUDA %s targets %s and newer" % (
                          e["path"], label, row["version"], gpu, sm, cc, row["version"], cc_min),
                detail="NVRTC %s rejects that architecture as nvcc %s does (support for it was removed), so the "
                       "program cannot build a single kernel for this GPU. The last CUDA that targets it is %s." % (
                           row["version"], row["version"], older[-1] if older else "?"),
                evidence=_ev(cc_fact, fact),
                source=_source("CUDA %s targets compute capability %s and newer" % (row["version"], cc_min), row),
                fix=Fix(text="Use a release of %s with an NVRTC that still targets %s (CUDA %s or older), or a GPU "
                             "of compute capability %s or newer." % (
                                 e.get("owner"), sm, older[-1] if older else "older", cc_min))))
    return out


@check("compat.program-arch", requires=("gpu.N.compute_capability", "programs.gpu_code"), reads=(),
       layers=("gpu",), codes=docs_for(DOCS, "gpu.arch_not_in_build"))
def program_arch(ctx: CheckContext) -> List[Finding]:
    return _program_arch(ctx.facts)


@check("compat.program-nvrtc", requires=("programs.gpu_code",), reads=("driver.*", "gpu.*", "os.wsl"),
       layers=("cuda", "driver"), codes=docs_for(DOCS, "driver.too_old_for_toolkit", "cuda.toolkit_cannot_target_gpu"))
def program_nvrtc(ctx: CheckContext) -> List[Finding]:
    return _program_nvrtc(ctx.facts)

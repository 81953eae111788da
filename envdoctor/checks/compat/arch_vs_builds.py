"""Do the framework builds carry code (SASS, or PTX the driver can JIT) for every GPU's architecture?"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.version import Version

from ... import frameworks, matrix
from ...facts import Fact, Facts
from ...findings import Finding, Fix
from ...matrix import builds
from ...matrix import frameworks as fw
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line
from . import (
    DOCS,
    PROG_GUIDE,
    RULES_CHECKED,
    RUNTIME_COMPILED,
    Driver,
    _ev,
    _framework_cuda,
    _mm,
    _mm_str,
    _pip_command,
    _sass_for,
    _severity,
    _source,
    _torch_fix,
    _v,
    gpu_ccs,
    suggest_build,
    suggest_torch,
)


def _ptx_for(ptx: Sequence[str], cc: str) -> bool:
    """PTX runs on any compute capability at or above its own (JIT by the driver)."""
    want = _v(cc)
    return want is not None and any((_v(p) or Version("999")) <= want for p in ptx)


#: Frameworks whose precompiled kernels decide whether the GPU runs at all; JAX (XLA) and CuPy (NVRTC)
#: compile most kernels at run time for the GPU present, so only their precompiled ones are at stake.
ARCH_FRAMEWORKS = frameworks.having("arch_lists")


def _arch_vs_builds(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    gpus = gpu_ccs(facts)
    if not gpus:
        return out
    drv = Driver(facts)
    for name in ARCH_FRAMEWORKS:
        fact = facts.get("framework." + name)
        if fact is None or not fact.known or not isinstance(fact.value, dict) or fact.value.get("build") != "cuda":
            continue
        label = "%s %s" % (name, fact.value.get("version"))
        code = facts.get("framework.%s.gpu_code" % name)
        if code is not None and code.known and isinstance(code.value, dict) and code.value.get("sass") is not None:
            out.extend(_binary_arch_findings(facts, drv, name, label, fact, code, gpus))
            continue
        listed = _listed_archs(name, fact)
        if listed is not None:
            archs, ptx, source, row = listed
            out.extend(_arch_findings(facts, drv, name, label, archs, ptx, gpus, fact, source, row))
            continue
        if name not in RUNTIME_COMPILED:
            out.extend(_arch_from_cuda(name, label, fact, code, gpus, facts, drv))
    return out


def _listed_archs(name: str, fact: Fact) -> Optional[Tuple[List[str], List[str], Dict[str, Any],
                                                          Optional[Dict[str, Any]]]]:
    """The architectures a build carries according to the matrix (torch wheels) or its own build_info
    (TensorFlow): (SASS "X.Y" list, PTX list, source, matrix row), or None when neither says."""
    value = fact.value
    if name == "torch":
        version = value.get("version")
        var = fw.torch_variant(version) or fw.torch_variant_for_cuda(version, value.get("cuda"))
        row = fw.torch_release(version)
        if var is None or row is None or not var.get("arch_list"):
            return None
        archs, ptx = list(var.get("arch_list") or []), [var["ptx"]] if var.get("ptx") else []
        return archs, ptx, _source("torch %s %s wheels carry SASS for %s%s" % (
            row["version"], var["tag"], ", ".join(archs), " and PTX %s" % ptx[0] if ptx else ""), row), row
    if name == "tensorflow":
        caps = value.get("compute_capabilities")
        if not (isinstance(caps, list) and caps):
            return None
        sass = [c for c in (_cc_text(c) for c in caps if str(c).startswith("sm_")) if c]
        ptx = [c for c in (_cc_text(c) for c in caps if str(c).startswith("compute_")) if c]
        return sass, ptx, _source("build_info cuda_compute_capabilities %s; SASS runs within a major at >= its "
                                  "minor, PTX at >= its capability" % caps, url=PROG_GUIDE), None
    return None


def _arch_cc(arch: str) -> Tuple[Optional[Version], str]:
    """"sm_90a" -> (Version("9.0"), "a"); "compute_120" -> (Version("12.0"), "")."""
    body = arch.split("_", 1)[-1]
    suffix = body[-1] if body[-1:] in ("a", "f") else ""
    digits = body[:-1] if suffix else body
    if not digits.isdigit() or len(digits) < 2:
        return None, suffix
    return _v("%s.%s" % (digits[:-1], digits[-1])), suffix


def _binary_runs_on(sass: Sequence[str], ptx: Sequence[str], cc: str) -> Tuple[bool, bool]:
    """(SASS for ``cc``, PTX that JITs to ``cc``) among a fat binary's entries.  A cubin for X.y runs on X.z,
    z >= y; an arch-specific one ("a") only on X.y itself; a family one ("f") on X.z, z >= y.  PTX runs on any
    capability at or above its own, arch-specific PTX only on its own (CUDA C++ Programming Guide)."""
    want = _v(cc)
    if want is None:
        return False, False
    has_sass = has_ptx = False
    for a in sass:
        v, suffix = _arch_cc(a)
        if v is not None and v.release[0] == want.release[0] and (v == want if suffix == "a" else v <= want):
            has_sass = True
    for p in ptx:
        v, suffix = _arch_cc(p)
        if v is not None and (v == want if suffix == "a" else v <= want):
            has_ptx = True
    return has_sass, has_ptx


def _arch_fix(facts: Facts, drv: Driver, name: str, cc: str, sass: Sequence[str] = ()) -> Fix:
    sm = "sm_" + cc.replace(".", "")
    text = "Install a %s build compiled for %s." % (name, sm)
    if name == "torch":
        return _torch_fix(text, suggest_torch(facts, drv, [cc]), facts, [cc])
    lows = [v for v in (_arch_cc(a)[0] for a in sass) if v is not None]
    want = _v(cc)
    older = bool(lows and want is not None and want < min(lows))
    if name == "paddle":
        return Fix(text=text + " PaddlePaddle's wheels for each CUDA version carry their own list of architectures "
                               "(the library names it at start-up: \"Paddle installation with arch: ...\"): pick the "
                               "wheel whose list has %s on the official install page (%s), or build from source with "
                               "-DCUDA_ARCH_NAME=Manual -DCUDA_ARCH_BIN=%s." % (
                                   sm, "builds for an older CUDA carry older GPUs" if older else
                                   "newer releases add newer GPUs", cc.replace(".", "")))
    if name == "tensorflow":
        if older:
            return Fix(text=text + " Older TensorFlow releases (and source builds) carry older architectures.")
        return _tensorflow_newer(facts, drv, cc, text + " Newer TensorFlow releases add newer architectures.")
    return Fix(text=text + (" Releases built for an older CUDA carry older architectures." if older
                            else " Newer releases add newer architectures."))


def _tensorflow_newer(facts: Facts, drv: Driver, cc: str, text: str) -> Fix:
    """The TensorFlow release advise picks for this machine (its driver, GPU, platform, Python), offered when it
    is newer than the installed one; never an unpinned upgrade to a release the driver cannot run."""
    installed = facts.mapping("framework.tensorflow")
    have = _v(installed.get("public") or installed.get("version"))
    sug = suggest_build("tensorflow", facts, drv if drv.known else None, [cc])
    if sug is None or (have is not None and len(have.release) >= 2 and
                       Version(sug[0].release) <= Version("%d.%d" % have.release[:2])):
        return Fix(text=text + " No newer TensorFlow release in envdoctor's matrix runs on this driver, GPU and "
                               "Python.")
    return Fix(text=text + " The newest this machine runs is TensorFlow %s." % sug[0].release,
               commands=[_pip_command(sug)], install=install_line(facts, "tensorflow", sug[0].release, "pip"))


def _ptx_across_generations(fact: Fact, cc: str) -> Optional[Dict[str, Any]]:
    """The CUDA table row of the framework's own CUDA when that release knows no GPU of ``cc``'s major
    generation (its newest architecture, cc_max, has a lower major): PTX JIT is then the only path, and the
    framework's CUDA libraries of that release (cuBLAS, cuDNN) carry nothing for the generation either.
    None when the framework's CUDA or the GPU's generation is within reach, or unknown."""
    value = fact.value if isinstance(fact.value, dict) else {}
    row = hw.cuda_release(str(value.get("cuda") or "")) if value.get("cuda") else None
    want, top = _v(cc), _v(row["cc_max"]) if row else None
    if row is None or want is None or top is None or want.release[0] <= top.release[0]:
        return None
    return row


def _jit_severity_detail(fact: Fact, cc: str, sm: str, label: str) -> Tuple[str, str]:
    """Severity and the extra sentence of a PTX-JIT-only finding: a warning, or an error when the build's CUDA
    predates the GPU's whole generation (TensorFlow 2.3's CUDA 10.1 build on Ampere fails at start-up with
    'device kernel image is invalid')."""
    row = _ptx_across_generations(fact, cc)
    if row is None:
        return "warning", ""
    return "error", (" %s is built with CUDA %s, which targets compute capability %s at most: %s's generation "
                     "came later, so the CUDA libraries of that release it runs with (cuBLAS, cuDNN) have no code "
                     "for it either, and such builds fail at GPU initialization ('device kernel image is "
                     "invalid') or at the first library call." % (label, row["version"], row["cc_max"], sm))


def _binary_arch_findings(facts: Facts, drv: Driver, name: str, label: str, fact: Fact, code: Fact,
                          gpus: Sequence[Tuple[str, str, Fact]]) -> List[Finding]:
    """Judge the GPUs against the architectures the framework's own binaries carry."""
    out: List[Finding] = []
    sass, ptx = list(code.value.get("sass") or []), list(code.value.get("ptx") or [])
    libs = [posixpath.basename(str(lib.get("path", ""))) for lib in code.value.get("libraries") or []
            if isinstance(lib, dict)]
    where = ", ".join(libs) or "its libraries"
    built = ", ".join(sass) + (" + PTX " + ", ".join(ptx) if ptx else "") if (sass or ptx) else "no GPU code"
    complete = code.value.get("complete", True) is not False
    source = {"rule": "the CUDA fat binary of %s carries SASS for %s and PTX for %s (read from the file); a cubin "
                      "runs on its own major at an equal or higher minor, PTX at or above its capability" % (
                          where, ", ".join(sass) or "nothing", ", ".join(ptx) or "nothing"),
              "url": PROG_GUIDE, "checked": RULES_CHECKED}
    runtime = name in RUNTIME_COMPILED
    for cc, gpu, cc_fact in gpus:
        has_sass, has_ptx = _binary_runs_on(sass, ptx, cc)
        if has_sass:
            continue
        sm = "sm_" + cc.replace(".", "")
        if has_ptx:
            severity, gap = _jit_severity_detail(fact, cc, sm, label)
            out.append(Finding(
                code="gpu.arch_ptx_jit_only", severity=severity, components=["gpu", name],
                title="%s (%s, compute capability %s) is reached by %s only through PTX JIT (%s carries %s)" % (
                    gpu, sm, cc, label, where, built),
                detail="No SASS for %s in the binary: the driver JIT-compiles the embedded PTX at first use. The "
                       "first start takes minutes and fills the JIT cache (~/.nv/ComputeCache; raise "
                       "CUDA_CACHE_MAXSIZE so it is kept), kernels may be slower, and under CUDA minor-version "
                       "compatibility the JIT fails.%s" % (sm, gap),
                evidence=_ev(cc_fact, code, fact), source=source, fix=_arch_fix(facts, drv, name, cc, sass)))
            continue
        if runtime:
            severity, consequence = "warning", (
                "%s compiles most kernels at run time for the GPU present, but its precompiled ones (sorting, "
                "random numbers, linear-algebra helpers) fail with 'no kernel image is available for execution "
                "on the device'." % ("XLA" if name == "jax" else "CuPy"))
        else:
            severity, consequence = ("error" if complete else "warning"), (
                "Every kernel launch fails with 'no kernel image is available for execution on the device'.")
        out.append(Finding(
            code="gpu.arch_not_in_build", severity=severity, components=["gpu", name],
            title="%s (%s, compute capability %s) is not supported by %s (%s carries %s)" % (
                gpu, sm, cc, label, where, built),
            detail="Neither SASS for %s (a cubin runs only on its own major at an equal or higher minor) nor PTX "
                   "at or below %s is in the binary. %s%s" % (
                       sm, cc, consequence, "" if complete else " (Part of the binary could not be read.)"),
            evidence=_ev(cc_fact, code, fact), source=source, fix=_arch_fix(facts, drv, name, cc, sass)))
    return out


def _torch_cuda_wheels_no_ptx(cuda: str) -> List[str]:
    """The torch releases whose wheels for exactly CUDA ``cuda`` the matrix lists, when none of them embeds PTX
    (empty when none is listed or one does): PyTorch builds every release's wheels for a CUDA the same way."""
    releases, with_ptx = [], False
    for row in matrix.load("torch"):
        for var in row.get("variants") or []:
            if _mm(var.get("cuda")) == _mm(cuda):
                releases.append(row["version"])
                with_ptx = with_ptx or bool(var.get("ptx"))
    return [] if with_ptx else releases


def _arch_fix_for(name: str, cc: str) -> Fix:
    return Fix(text="Install a %s build made with a CUDA that targets sm_%s." % (name, cc.replace(".", "")))


PADDLE_CUDA_CMAKE = "https://github.com/PaddlePaddle/Paddle/blob/develop/cmake/cuda.cmake"


def _tested_build_ptx(name: str, fact: Fact, cuda: Optional[Tuple[int, Optional[int]]]) -> Optional[Dict[str, Any]]:
    """The framework_builds row saying that this release's GPU build, made with the CUDA ``cuda`` it names, embeds
    PTX of every architecture it compiles for (TensorFlow 1.1-1.4, whose build_info names neither); None when no row
    says so or the build's CUDA is another."""
    if name != "tensorflow" or cuda is None:
        return None
    value = fact.value if isinstance(fact.value, dict) else {}
    if value.get("cuda") or value.get("cuda_linked") or "nvidia-tensorflow" in (value.get("packages") or {}):
        return None
    tested = builds.tensorflow_tested_cuda(value.get("public") or value.get("version"))
    if tested is None or not tested[1].get("ptx_each_arch") or _mm(tested[0]) != cuda:
        return None
    return tested[1]


def _arch_from_cuda(name: str, label: str, fact: Fact, code: Optional[Fact],
                    gpus: Sequence[Tuple[str, str, Fact]], facts: Facts, drv: Driver) -> List[Finding]:
    """No binary could be read and no table lists the build: what its CUDA version could target at all
    (cuda.json cc_min/cc_max: the architectures that release's nvcc emits), else say it is unknown."""
    out: List[Finding] = []
    cuda = _framework_cuda(name, fact.value)
    row = hw.cuda_release(_mm_str(cuda)) if cuda is not None and cuda[1] is not None else None
    why = code.reason if code is not None and code.reason else "no GPU code was read from its libraries"
    tested_ptx = _tested_build_ptx(name, fact, cuda)
    for cc, gpu, cc_fact in gpus:
        sm = "sm_" + cc.replace(".", "")
        want = _v(cc)
        if row is None or want is None:
            out.append(Finding(
                code="gpu.arch_support_unknown", severity="info", components=["gpu", name],
                title="Whether %s has kernels for %s (%s) is unknown" % (label, gpu, sm),
                detail="Its libraries' GPU code could not be read (%s), no table lists this build, and the CUDA "
                       "version it was built with is %s." % (why, "unknown" if cuda is None else
                                                              "not in the matrix (%s)" % _mm_str(cuda)),
                evidence=_ev(cc_fact, fact, code), source=_source("the build's GPU code or CUDA version"),
                fix=Fix(text="Check on the machine: python -c \"import %s\" and run one GPU operation." % name)))
            continue
        lo, hi = _v(row["cc_min"]), _v(row["cc_max"])
        if lo is not None and want < lo:
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu", name],
                title="%s (%s, compute capability %s) is not supported by %s: built with CUDA %s, which "
                      "targets compute capability %s and newer only" % (gpu, sm, cc, label, row["version"],
                                                                       row["cc_min"]),
                detail="CUDA %s's nvcc cannot emit code for %s, so no build made with it carries kernels for this "
                       "GPU (its libraries' GPU code could not be read: %s)." % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code), source=_source("cuda.json cc_min of CUDA %s" % row["version"],
                                                                  row),
                fix=Fix(text="Install a %s build made with an older CUDA that still targets %s." % (name, sm))))
        elif hi is not None and want.release[0] > hi.release[0] and name == "torch" and _torch_cuda_wheels_no_ptx(
                row["version"]):
            releases = _torch_cuda_wheels_no_ptx(row["version"])
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu", name],
                title="%s (%s, compute capability %s) is not supported by %s: CUDA %s compiles for compute capability "
                      "%s at most, and PyTorch's CUDA %s wheels carry no PTX" % (
                          gpu, sm, cc, label, row["version"], row["cc_max"], row["version"]),
                detail="No build made with CUDA %s has SASS for %s, and the PyTorch wheels for CUDA %s that the "
                       "matrix lists (torch %s) embed no PTX to JIT from: every kernel launch fails with 'no kernel "
                       "image is available for execution on the device'. (Its own libraries' GPU code could not be "
                       "read: %s.)" % (row["version"], sm, row["version"], ", ".join(releases), why),
                evidence=_ev(cc_fact, fact, code),
                source=_source("cuda.json cc_max of CUDA %s; torch.json variants for CUDA %s (no ptx)" % (
                    row["version"], row["version"]), row),
                fix=_arch_fix_for(name, cc)))
        elif hi is not None and want.release[0] > hi.release[0] and name == "paddle":
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu", name],
                title="%s (%s, compute capability %s) is not supported by %s: built with CUDA %s, which compiles "
                      "for compute capability %s at most, and PaddlePaddle's release builds carry no PTX" % (
                          gpu, sm, cc, label, row["version"], row["cc_max"]),
                detail="No build made with CUDA %s has SASS for %s, and PaddlePaddle's release builds "
                       "(CUDA_ARCH_NAME=All) embed SASS only, no PTX to JIT from: every kernel launch fails with "
                       "'no kernel image is available for execution on the device'. (Its own libraries' GPU code "
                       "could not be read: %s.)" % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code),
                source=_source("cuda.json cc_max of CUDA %s; PaddlePaddle's cmake/cuda.cmake (%s) emits PTX only "
                               "for CUDA_ARCH_NAME=Manual with CUDA_ARCH_PTX" % (row["version"], PADDLE_CUDA_CMAKE),
                               row),
                fix=_arch_fix_for(name, cc)))
        elif hi is not None and want.release[0] > hi.release[0] and tested_ptx is not None:
            out.append(Finding(
                code="gpu.arch_ptx_jit_only", severity="warning", components=["gpu", name],
                title="%s (%s, compute capability %s) is reached by %s only through PTX JIT, according to the "
                      "release's build configuration (CUDA %s, which compiles for compute capability %s at most)" % (
                          gpu, sm, cc, label, row["version"], row["cc_max"]),
                detail="The release's GPU build is made with CUDA %s (tensorflow.org's tested build "
                       "configurations), whose nvcc cannot emit SASS for %s; TensorFlow's nvcc builds embed PTX of "
                       "every architecture they compile for, and the driver JIT-compiles it at first use. The first "
                       "start takes minutes and fills the JIT cache (~/.nv/ComputeCache; raise CUDA_CACHE_MAXSIZE "
                       "so it is kept), kernels may be slower, and under CUDA minor-version compatibility the JIT "
                       "fails. This follows from the release's build configuration; its libraries' GPU code was not "
                       "read (%s)." % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code),
                source=_source("framework_builds.json tested_cuda and ptx_each_arch of %s; cuda.json cc_max of CUDA "
                               "%s" % (label, row["version"]), tested_ptx),
                fix=_arch_fix(facts, drv, name, cc)))
        elif hi is not None and want.release[0] > hi.release[0]:
            out.append(Finding(
                code="gpu.arch_support_unknown", severity="warning", components=["gpu", name],
                title="%s (%s) is newer than anything CUDA %s can compile for (up to compute capability %s): %s "
                      "runs on it only if it embedded PTX" % (gpu, sm, row["version"], row["cc_max"], label),
                detail="A build made with CUDA %s carries no SASS for %s; it runs only through PTX JIT, and only "
                       "if it embedded PTX, which could not be read (%s)." % (row["version"], sm, why),
                evidence=_ev(cc_fact, fact, code), source=_source("cuda.json cc_max of CUDA %s" % row["version"],
                                                                  row),
                fix=Fix(text="Install a %s build made with a CUDA that targets %s." % (name, sm))))
    return out


def _cc_text(cap: Any) -> Optional[str]:
    v = hw._cc(str(cap))
    return "%d.%d" % (v.release[0], v.release[1] if len(v.release) > 1 else 0) if v is not None else None


def _arch_findings(facts: Facts, drv: Driver, component: str, label: str, archs: Sequence[str],
                   ptx: Sequence[str], gpus: Sequence[Tuple[str, str, Fact]], fw_fact: Fact,
                   source: Dict[str, Any], row: Optional[Dict[str, Any]]) -> List[Finding]:
    out: List[Finding] = []
    built = ", ".join("sm_%s" % a.replace(".", "") for a in archs) + (
        "" if not ptx else " + PTX " + ", ".join("compute_%s" % p.replace(".", "") for p in ptx))
    for cc, name, cc_fact in gpus:
        if _sass_for(archs, cc):
            continue
        sm = "sm_" + cc.replace(".", "")
        fix_text = "Install a %s build compiled for %s." % (component, sm)
        if component == "torch":
            fix = _torch_fix(fix_text, suggest_torch(facts, drv, [cc]), facts, [cc])
        else:
            fix = _tensorflow_newer(facts, drv, cc, fix_text + " Newer TensorFlow releases add newer architectures.")
        if _ptx_for(ptx, cc):
            severity, gap = _jit_severity_detail(fw_fact, cc, sm, label)
            out.append(Finding(
                code="gpu.arch_ptx_jit_only", severity=severity, components=["gpu", component],
                title="%s (%s, compute capability %s) is reached by %s (%s) only through PTX JIT" % (
                    name, sm, cc, label, built),
                detail="No SASS for %s: the driver JIT-compiles the embedded PTX at first use. The first start "
                       "takes minutes and fills the JIT cache (~/.nv/ComputeCache; raise CUDA_CACHE_MAXSIZE so it "
                       "is kept), kernels may be slower, and under CUDA minor-version compatibility the JIT "
                       "fails.%s" % (sm, gap),
                evidence=_ev(cc_fact, fw_fact), source=source, fix=fix))
        else:
            out.append(Finding(
                code="gpu.arch_not_in_build", severity=_severity(row, ["variants"]) if row is not None else "error",
                components=["gpu", component],
                title="%s (%s, compute capability %s) is not supported by %s (built for %s)" % (
                    name, sm, cc, label, built),
                detail="Neither SASS for %s (a cubin runs only on the same major at an equal or higher minor) nor "
                       "PTX at or below %s is in this build: every kernel launch fails with 'no kernel image is "
                       "available for execution on the device'." % (sm, cc),
                evidence=_ev(cc_fact, fw_fact), source=source, fix=fix))
    return out


@check("compat.arch-vs-builds", requires=("gpu.N.compute_capability", "framework.*"),
       reads=("framework.*.gpu_code",) + INSTALL_LINE_READS, layers=("gpu",),
       codes=docs_for(DOCS, "gpu.arch_not_in_build", "gpu.arch_ptx_jit_only", "gpu.arch_support_unknown"))
def arch_vs_builds(ctx: CheckContext) -> List[Finding]:
    return _arch_vs_builds(ctx.facts)

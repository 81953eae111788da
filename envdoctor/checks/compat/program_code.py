"""The GPU code of programs and libraries outside the Python frameworks (``programs.gpu_code``: conda packages'
libraries, programs on PATH with the libraries and fat binaries beside them, Python extension modules), judged by
the rules a framework's own GPU code is judged by:

* the architectures a fat binary carries against each GPU: a cubin for X.y runs on X.z (z >= y) only, PTX on any
  capability at or above its own (CUDA C++ Programming Guide); none of either: "no kernel image is available for
  execution on the device" (``gpu.arch_not_in_build``); only PTX: the driver JIT-compiles it at the first call
  (minutes for a large library, a program seems to hang; ``gpu.arch_ptx_jit_only``, a warning, once per package and
  GPU, and not where the driver cannot JIT that PTX at all: the rule below names the driver it needs);
* a library that compiles its kernels at run time with NVRTC: NVRTC writes PTX of its own release's ISA (its
  default output, for its default virtual architecture), which the driver must JIT. A driver of an older CUDA
  cannot ("the provided PTX was compiled with an unsupported toolchain"): CUDA minor-version compatibility does
  not cover PTX (NVIDIA's CUDA compatibility guide), so a driver below that NVRTC's CUDA is an error, not the
  minor-version info (``driver.too_old_for_toolkit``); and an NVRTC whose CUDA no longer targets the GPU's
  architecture (``cuda.json`` ``cc_min``) cannot compile for it at all (``cuda.toolkit_cannot_target_gpu``), and
  one whose CUDA predates it (``cc_max``: NVRTC 10.2 knows no compute_86) rejects its architecture, so the kernels
  either fail to build or run only as an older architecture's PTX (``cuda.gpu_newer_than_toolkit``, a warning);
* a fat binary that reaches a GPU only through its PTX (no cubin runs there): the driver JIT-compiles that PTX and
  knows no PTX ISA newer than its own CUDA's (NVIDIA's PTX ISA release history, ``cuda.json`` ``ptx_isa``: ISA 7.8
  is CUDA 11.8's). Minor-version compatibility does not cover PTX JIT, so a driver below the CUDA that introduced
  the file's PTX ISA fails at the first kernel launch with CUDA_ERROR_UNSUPPORTED_PTX_VERSION ("the provided PTX
  was compiled with an unsupported toolchain"), whatever CUDA runtime the file loads (``libcudart.so.11.0`` from a
  wheel, a toolkit or conda): ``driver.too_old_for_framework``. A Python extension that carries its own CUDA
  runtime (``python.static_cuda``) is judged by ``compat.driver-vs-cuda`` with the same rule, so its files are
  passed over here (one root cause, one finding); a forward-compatibility libcuda the loader takes brings the
  JIT compiler of its own CUDA (``libnvidia-ptxjitcompiler``, part of the cuda-compat package). When the PTX ISA
  version was not read, a CUDA runtime the file bundles (``libcudart.so.12.9.79`` in its own search paths: the
  toolkit release it was built with, whose nvcc writes that release's PTX ISA) stands for it, as a warning: the
  runtime itself starts under minor-version compatibility, which excludes PTX JIT. A Python extension module
  that bundles no runtime but links one of the same CUDA major as the toolkit builds on this machine use (nvcc on
  PATH, CUDA_HOME: ``libcudart.so.11.0`` and nvcc 11.8, as pip builds an sdist's extension with it) is judged as
  that toolkit's PTX, also a warning worded as presumed.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Optional, Set, Tuple

from packaging.version import Version

from ... import versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...host.base import normalize_name
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line
from . import DOCS, Driver, _ev, _mm, _mm_str, _severity, _source, _v, active_toolkit, gpu_ccs
from .arch_vs_builds import _binary_runs_on
from .driver_vs_cuda import _branch, _forward_compat
from .package_arch import below_floor

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
    kind = {"conda": "conda package", "program": "program", "python": "Python package",
            "library": "library"}.get(str(e.get("kind")), "")
    return ("%s %s %s" % (kind, owner, e.get("version") or "")).strip()


def _program_arch(facts: Facts) -> List[Finding]:
    out: List[Any] = []  # findings, and in their place the builds whose one finding is written once all are seen
    fact = facts.get("programs.gpu_code")
    gpus = gpu_ccs(facts)
    if fact is None or not fact.known or not gpus:
        return []
    # a file whose PTX this driver cannot JIT: compat.program-ptx (or, for one carrying its own CUDA runtime,
    # compat.driver-vs-cuda) names the driver it needs (one root cause, one finding)
    unjittable: Set[str] = {path for path, _f in _program_ptx_by_path(facts, leave_static=False)}
    jit_said: Set[Tuple[str, str]] = set()
    # a Python package whose published builds carry no code for a GPU: compat.package-arch reports it once
    floors = below_floor(facts)
    Build = Tuple[str, str, Tuple[str, ...], Tuple[str, ...], str, str]  # folder, kind, SASS, PTX, the GPU's cc, name
    builds: Dict[Build, List[Dict[str, Any]]] = {}
    cc_fact_of: Dict[Build, Any] = {}
    for e in _entries(facts):
        sass, ptx = list(e.get("sass") or []), list(e.get("ptx") or [])
        if not sass and not ptx:
            continue
        for cc, gpu, cc_fact in gpus:
            has_sass, has_ptx = _binary_runs_on(sass, ptx, cc)
            if has_sass or _v(cc) is None:
                continue
            if e.get("kind") == "python" and (normalize_name(str(e.get("owner") or "")), cc) in floors:
                continue
            sm = "sm_" + cc.replace(".", "")
            if has_ptx:
                # one finding per package and GPU model (faiss ships the same code in two modules)
                if e["path"] in unjittable or (_label(e), cc) in jit_said:
                    continue
                jit_said.add((_label(e), cc))
                out.append(Finding(
                    code="gpu.arch_ptx_jit_only", severity="warning", components=["gpu"],
                    title="%s (%s, compute capability %s) is reached by %s only through PTX JIT (%s carries %s)" % (
                        gpu, sm, cc, _label(e), e["path"], ", ".join(sass + ptx)),
                    detail="%s's CUDA fat binary holds cubins for %s and PTX for %s: no cubin runs on %s (a cubin "
                           "runs only on its own major at an equal or higher minor), so the driver JIT-compiles "
                           "the PTX at its first use. That first call takes minutes for a large library (a program "
                           "seems to hang) and fills the JIT cache (~/.nv/ComputeCache; raise CUDA_CACHE_MAXSIZE so "
                           "it is kept), kernels may be slower, and under CUDA minor-version compatibility the JIT "
                           "fails." % (e["path"], ", ".join(sass) or "no architecture", ", ".join(ptx), sm),
                    evidence=_ev(cc_fact, fact),
                    source=_source("a cubin for X.y runs on X.z (z >= y); PTX on any capability at or above its own, "
                                   "JIT-compiled by the driver", url=PROG_GUIDE_URL, checked=CHECKED),
                    fix=Fix(text=_rebuild(e, sm, cc))))
                continue
            # the files of one build (one folder, one kind, one architecture list: OpenCV's libopencv_* in
            # /usr/local/lib) are one finding, said where its first file comes: one root cause, one fix
            build = (posixpath.dirname(str(e["path"])), str(e.get("kind")), tuple(sass), tuple(ptx), cc, gpu)
            if build not in builds:
                builds[build] = []
                out.append(build)
                cc_fact_of[build] = cc_fact
            builds[build].append(e)
    return [_not_in_build(builds[x], x, cc_fact_of[x], fact) if isinstance(x, tuple) else x for x in out]


def _not_in_build(files: List[Dict[str, Any]], build: Tuple[Any, ...], cc_fact: Any, fact: Any) -> Finding:
    """``gpu.arch_not_in_build`` for the files of one build: one file, or several a library built from source
    installs from one architecture list (libopencv_core, libopencv_cudev, libopencv_dnn...)."""
    folder, _kind, sass, ptx, cc, gpu = build
    e = files[0]
    sm = "sm_" + cc.replace(".", "")
    arches = ", ".join(list(sass) + list(ptx))
    if len(files) == 1:
        where = "%s (%s): it carries %s" % (e["path"], _label(e), arches)
        holds, fail = "%s's CUDA fat binary holds" % e["path"], "Its kernels fail"
    else:
        where = "%d files of one build in %s (%s): they carry %s" % (
            len(files), folder, ", ".join(posixpath.basename(str(f["path"])) for f in files), arches)
        holds = "Each of these files' CUDA fat binaries (%s) holds" % ", ".join(_label(f) for f in files)
        fail = "Their kernels fail"
    return Finding(
        code="gpu.arch_not_in_build", severity="error", components=["gpu"],
        title="%s (%s, compute capability %s) has no GPU code in %s" % (gpu, sm, cc, where),
        detail="%s cubins for %s%s and no PTX a %s GPU can JIT-compile: a cubin runs only on its own major at an "
               "equal or higher minor, PTX on capabilities at or above its own. %s on this GPU with 'no kernel "
               "image is available for execution on the device' (or the program's own refusal of the GPU)." % (
                   holds, ", ".join(sass) or "no architecture", " and PTX for %s" % ", ".join(ptx) if ptx else "",
                   sm, fail),
        evidence=_ev(cc_fact, fact),
        source=_source("a cubin for X.y runs on X.z (z >= y); PTX on any capability at or above its own",
                       url=PROG_GUIDE_URL, checked=CHECKED),
        fix=Fix(text=_rebuild(e, sm, cc)))


def _rebuild(e: Dict[str, Any], sm: str, cc: str) -> str:
    """How to get code for the GPU into ``e``: a release built for it, or a rebuild naming its architecture in
    the build's own terms (a Python package's extension: torch's TORCH_CUDA_ARCH_LIST, which
    ``torch.utils.cpp_extension`` ignores when the extension's own nvcc flags already name an architecture
    (``_get_cuda_arch_flags`` in https://github.com/pytorch/pytorch/blob/v2.3.0/torch/utils/cpp_extension.py,
    checked 2026-12-01): those flags are where the GPU's goes; a library or program: CMake's
    CMAKE_CUDA_ARCHITECTURES, CMake 3.18 and later)."""
    arch = cc.replace(".", "")
    knob = ('TORCH_CUDA_ARCH_LIST="%s" for a torch extension; one whose setup.py passes its own -gencode flags '
            '(extra_compile_args["nvcc"]) ignores that list, so add this -gencode there' % cc
            if e.get("kind") == "python" else "CMAKE_CUDA_ARCHITECTURES=%s for a CMake build" % arch)
    return ("Install a release of %s built for %s (compute capability %s), or rebuild it with -gencode "
            "arch=compute_%s,code=sm_%s (%s)." % (e.get("owner"), sm, cc, arch, arch, knob))


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
        cc_min, cc_max = row.get("cc_min"), row.get("cc_max")
        for cc, gpu, cc_fact in gpu_ccs(facts):
            if cc_max and _v(cc) is not None and Version(cc) > Version(str(cc_max)):
                out.append(_nvrtc_too_old(e, row, cc, gpu, cc_fact, fact))
                continue
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


def _nvrtc_too_old(e: Dict[str, Any], row: Dict[str, Any], cc: str, gpu: str, cc_fact: Any, fact: Any) -> Finding:
    """A library compiling its kernels with an NVRTC whose CUDA predates the GPU's architecture (``cuda.json``
    ``cc_max``): NVRTC rejects ``--gpu-architecture=compute_XY`` for it as nvcc rejects ``-arch``."""
    sm = "sm_" + cc.replace(".", "")
    newer = hw.cuda_for_cc(cc)
    first = newer[0] if newer else None
    return Finding(
        code="cuda.gpu_newer_than_toolkit", severity="warning", components=["cuda", "gpu"],
        title="%s (%s) compiles its kernels at run time with NVRTC %s, which cannot target %s (%s, compute "
              "capability %s): CUDA %s targets up to %s" % (
                  e["path"], _label(e), row["version"], gpu, sm, cc, row["version"], row["cc_max"]),
        detail="NVRTC %s does not know compute_%s: a program asking it for this GPU's architecture gets "
               "'nvrtc: error: invalid value for --gpu-architecture (-arch)' and builds no kernel; one that falls "
               "back to an older architecture's PTX (at most compute_%s) runs it only through the driver's JIT. "
               "The first CUDA whose NVRTC targets it is %s." % (
                   row["version"], cc.replace(".", ""), str(row["cc_max"]).replace(".", ""),
                   first or "not in envdoctor's matrix"),
        evidence=_ev(cc_fact, fact),
        source=_source("CUDA %s targets compute capability %s..%s" % (row["version"], row["cc_min"], row["cc_max"]),
                       row),
        fix=Fix(text="Give %s the NVRTC of CUDA %s or newer (in conda: a build of it for cudatoolkit=%s or "
                     "cuda-version=%s), which the driver must also support." % (
                         e.get("owner") or "it", first or "a newer release", first or "<newer>",
                         first or "<newer>")))


def _static_paths(facts: Facts) -> List[str]:
    """The files ``python.static_cuda`` lists (extensions carrying their own CUDA runtime): compat.driver-vs-cuda
    judges their PTX."""
    value = facts.value("python.static_cuda")
    libs = value.get("libraries") if isinstance(value, dict) else None
    return [str(lib.get("path")) for lib in libs or [] if isinstance(lib, dict) and lib.get("path")]


def _builder(facts: Facts, e: Dict[str, Any]) -> Optional[Tuple[Tuple[int, int], str, str]]:
    """((major, minor), how it is chosen, its version) of the toolkit builds on this machine use, when Python
    extension module ``e`` links a CUDA runtime of that toolkit's major (``libcudart.so.11.0`` and nvcc 11.8): the
    CUDA that presumably compiled it. None otherwise (a file that bundles no runtime of its own, a program, another
    major, no toolkit)."""
    linked = versions.cuda_of_cudart(e.get("cudart"))  # libcudart.so.11.0 -> 11.0: its soname names the major
    tk = active_toolkit(facts) if e.get("kind") == "python" and linked else None
    mm = _mm(tk[0]) if tk is not None else None
    if tk is None or linked is None or mm is None or mm[1] is None or str(mm[0]) != linked.split(".")[0]:
        return None
    if hw.cuda_release(_mm_str(mm)) is None or hw.ptx_isa_for_cuda(_mm_str(mm)) is None:
        return None
    return (mm[0], mm[1]), tk[1], tk[0]


def _program_ptx(facts: Facts) -> List[Finding]:
    return [f for _path, f in _program_ptx_by_path(facts)]


def _program_ptx_by_path(facts: Facts, leave_static: bool = True) -> List[Tuple[str, Finding]]:
    """(path, finding) of each file whose only code for a GPU is PTX this driver cannot JIT; with ``leave_static``
    False, also the files that carry their own CUDA runtime (``compat.driver-vs-cuda`` reports those)."""
    out: List[Tuple[str, Finding]] = []
    fact = facts.get("programs.gpu_code")
    gpus = gpu_ccs(facts)
    drv = Driver(facts)
    if fact is None or not fact.known or not gpus or not drv.known or drv.cuda is None:
        return out
    static = set(_static_paths(facts)) if leave_static else set()
    compat = _forward_compat(facts, drv)
    for e in _entries(facts):
        isa = str(e.get("ptx_isa") or "")
        cuda = _mm(hw.cuda_for_ptx_isa(isa)) if isa and e.get("ptx") else None
        # its PTX ISA not read: the CUDA runtime it bundles (beside it, in its own search paths) is the release of
        # the toolkit that built it, whose nvcc writes PTX of that release's ISA
        bundled = not isa and bool(e.get("ptx")) and bool(e.get("cudart_version"))
        if bundled:
            cuda = _mm(e.get("cudart_version"))
            isa = str(hw.ptx_isa_for_cuda(_mm_str(cuda)) or "") if cuda is not None and cuda[1] is not None else ""
            cuda = cuda if isa else None
        # neither read nor bundled: a Python extension module linking a CUDA runtime of the same major as the
        # toolkit builds on this machine use (nvcc on PATH, CUDA_HOME) was presumably compiled by that toolkit
        # (pip builds an sdist's extension with it: torch.utils.cpp_extension, setuptools' nvcc), whose nvcc writes
        # PTX of that release's ISA
        builder = _builder(facts, e) if cuda is None and not isa and e.get("ptx") else None
        if builder is not None:
            cuda, isa = builder[0], str(hw.ptx_isa_for_cuda(_mm_str(builder[0])))
        row = hw.cuda_release(_mm_str(cuda)) if cuda is not None and cuda[1] is not None else None
        verdict = drv.verdict(cuda) if cuda is not None and row is not None else "ok"
        if e["path"] in static or cuda is None or row is None or verdict == "ok":
            continue
        if compat is not None and cuda <= compat[1]:
            continue  # the forward-compatibility libcuda the loader takes JIT-compiles its own CUDA's PTX
        nvrtc = hw.cuda_release(str(e.get("toolkit"))) if e.get("nvrtc") and e.get("toolkit") else None
        if nvrtc is not None and _v(nvrtc["version"]) is not None and Version(nvrtc["version"]) >= Version(
                _mm_str(cuda)):
            continue  # its NVRTC's PTX is as new: compat.program-nvrtc names the driver it needs
        sass, ptx = [str(a) for a in e.get("sass") or []], [str(a) for a in e.get("ptx") or []]
        jit = [(cc, gpu, cc_fact) for cc, gpu, cc_fact in gpus if _binary_runs_on(sass, ptx, cc) == (False, True)]
        if not jit:
            continue  # a cubin runs on every GPU (or nothing does: compat.program-arch)
        exact = str(row["min_driver_linux"])
        ccs = ", ".join(cc for cc, _, _ in jit)
        names = ", ".join(sorted({gpu for _, gpu, _ in jit}))
        sms = ", ".join("sm_" + cc.replace(".", "") for cc, _, _ in jit)
        fails = ("its first kernel launch on that GPU fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION ('the provided "
                 "PTX was compiled with an unsupported toolchain')")
        if verdict == "minor_compat":
            runtime = "CUDA minor-version compatibility does not cover PTX JIT: %s" % (
                "its CUDA runtime (%s) starts, but %s" % (e["cudart"], fails) if e.get("cudart") else fails)
        else:
            runtime = ("The driver is also below CUDA %d.x's minor-version-compatibility floor: %s (if its CUDA "
                       "runtime does not refuse the driver first)" % (cuda[0], fails))
        if builder is not None:
            of_isa = ("not read from the file; it links %s, and if it was compiled by this machine's CUDA %s toolkit "
                      "(%s %s, the one builds here use), that PTX is ISA %s" % (
                          e["cudart"], _mm_str(cuda), builder[1], builder[2], isa))
            title_isa = "PTX presumably built with this machine's CUDA %s toolkit (ISA %s)" % (_mm_str(cuda), isa)
        elif bundled:
            of_isa = ("built with CUDA %s (the CUDA runtime it bundles, %s %s), so presumably of PTX ISA %s" % (
                _mm_str(cuda), e["cudart"], e["cudart_version"], isa))
            title_isa = "PTX built with CUDA %s (ISA %s)" % (_mm_str(cuda), isa)
        else:
            of_isa = "of PTX ISA %s (CUDA %s's)" % (isa, _mm_str(cuda))
            title_isa = "PTX ISA %s" % isa
        out.append((e["path"], Finding(
            code="driver.too_old_for_framework",
            severity="warning" if bundled or builder is not None else _severity(row, ["min_driver_linux", "ptx_isa"]),
            components=["driver", "python" if e.get("kind") == "python" else "cuda"],
            title="%s supports CUDA up to %s, but %s (%s) reaches %s (compute capability %s) only through %s, "
                  "which needs CUDA %s's driver (>= %s)" % (
                      "Driver %s" % drv.version if drv.version else "The driver", _mm_str(drv.cuda), e["path"],
                      _label(e), names, ccs, title_isa, _mm_str(cuda), exact),
            detail="%s's fat binary holds cubins for %s and PTX for %s, %s. No cubin runs on compute capability "
                   "%s, so the driver must JIT-compile that PTX, and it knows no PTX ISA newer than its own CUDA "
                   "%s. %s." % (
                       e["path"], ", ".join(sass) or "no architecture", ", ".join(ptx), of_isa, ccs,
                       _mm_str(drv.cuda), runtime) + (
                " (Built elsewhere with CUDA %s or older, its PTX would JIT here.)" % _mm_str(drv.cuda)
                if builder is not None else ""),
            evidence=_ev(drv.version_fact, drv.cuda_fact, jit[0][2], fact),
            source=_source("PTX ISA %s is CUDA %s's; a driver JIT-compiles no PTX newer than its own CUDA, and "
                           "minor-version compatibility excludes PTX JIT (%s); CUDA %s's own driver is %s" % (
                               isa, _mm_str(cuda), COMPAT_URL, _mm_str(cuda), exact), row),
            fix=Fix(text="Update the NVIDIA driver to %s or newer (CUDA %s's own driver, which JIT-compiles PTX ISA "
                         "%s), or install a build of %s with a cubin for %s (-gencode arch=compute_%s,code=sm_%s)." % (
                             exact, _mm_str(cuda), isa, e.get("owner") or "it", sms,
                             jit[0][0].replace(".", ""), jit[0][0].replace(".", "")),
                    install=install_line(facts, "driver", _branch(exact), floor=True)))))
    return out


@check("compat.program-arch", requires=("gpu.N.compute_capability", "programs.gpu_code"),
       reads=("driver.*", "gpu.*", "os.wsl", "cuda.forward_compat", "cuda.ld_library_path", "cuda.nvcc", "cuda.home",
              "cuda.default_symlink", "env.ld_library_path_resolved", "libraries.libcuda",
              "python.gpu_packages") + INSTALL_LINE_READS,
       layers=("gpu",), codes=docs_for(DOCS, "gpu.arch_not_in_build", "gpu.arch_ptx_jit_only"))
def program_arch(ctx: CheckContext) -> List[Finding]:
    return _program_arch(ctx.facts)


@check("compat.program-nvrtc", requires=("programs.gpu_code",), reads=("driver.*", "gpu.*", "os.wsl"),
       layers=("cuda", "driver"), codes=docs_for(DOCS, "driver.too_old_for_toolkit", "cuda.toolkit_cannot_target_gpu",
                                                 "cuda.gpu_newer_than_toolkit"))
def program_nvrtc(ctx: CheckContext) -> List[Finding]:
    return _program_nvrtc(ctx.facts)


@check("compat.program-ptx", requires=("programs.gpu_code", "driver.version"),
       reads=("driver.*", "gpu.*", "os.wsl", "python.static_cuda", "cuda.forward_compat", "cuda.ld_library_path",
              "cuda.nvcc", "cuda.home", "cuda.default_symlink", "env.ld_library_path_resolved",
              "libraries.libcuda") + INSTALL_LINE_READS,
       layers=("driver",), codes=docs_for(DOCS, "driver.too_old_for_framework"))
def program_ptx(ctx: CheckContext) -> List[Finding]:
    return _program_ptx(ctx.facts)

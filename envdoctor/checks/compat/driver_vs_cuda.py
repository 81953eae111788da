"""Can the driver run the CUDA the frameworks and the toolkit were built for (natively, or through minor-version
compatibility)?
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from packaging.version import Version

from ... import matrix, versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import frameworks as fw
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from ..driver_health import _compat_libcuda_in_use
from ..suggest import INSTALL_LINE_READS, install_line, rpm_tool
from . import (
    DOCS,
    FRAMEWORKS,
    RUNTIME_COMPILED,
    Driver,
    Need,
    _ev,
    _mm,
    _mm_str,
    _sass_for,
    _severity,
    _source,
    _torch_pip,
    _v,
    bundle_needs,
    framework_needs,
    gpu_ccs,
    package_needs,
    static_needs,
    suggest_torch,
    toolkit_needs,
)


def _branch(driver: Optional[str]) -> Optional[str]:
    v = _v(driver)
    return str(v.release[0]) if v is not None else None


def _major_rows(major: int) -> List[Dict[str, Any]]:
    return [r for r in hw.cuda_releases() if Version(r["version"]).release[0] == major]


def _rule_row(need: Tuple[int, Optional[int]]) -> Optional[Dict[str, Any]]:
    """The cuda row behind "CUDA X.Y needs driver D": the release itself, or (major only) the major's first."""
    if need[1] is not None:
        return hw.cuda_release(_mm_str(need))
    rows = _major_rows(need[0])
    return rows[0] if rows else None


def _floor_row(major: int) -> Optional[Dict[str, Any]]:
    """A row of this major whose minor-compatibility floor was verified (the floor is the same for the major)."""
    rows = _major_rows(major)
    for r in rows:
        if r.get("minor_compat_min_driver") and not matrix.unverified(r, "minor_compat_min_driver"):
            return r
    return rows[0] if rows else None


def _driver_vs_cuda(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    fneeds = framework_needs(facts)
    installed = facts.get("driver.installed")
    if installed is not None and installed.known and installed.value is False:
        pci = facts.get("driver.nvidia_pci_gpus")
        if fneeds and pci is not None and pci.known and pci.value:
            need = max(fneeds, key=lambda n: (n.cuda[0], n.cuda[1] or 0))
            row = _rule_row(need.cuda)
            exact = row["min_driver_linux"] if row else None
            names = ", ".join(n.label for n in fneeds)
            out.append(Finding(
                code="driver.missing_for_framework", severity="error", components=["driver", need.component],
                title="No NVIDIA driver is installed, but %s needs CUDA %s (driver >= %s) and an NVIDIA GPU is on "
                      "the PCI bus (%s)" % (names, _mm_str(need.cuda), exact or "?", ", ".join(pci.value)),
                detail="The framework build expects the NVIDIA driver's libcuda.so.1; without it the GPU is unused "
                       "('Found no NVIDIA driver on your system'). Install a driver of branch %s or newer." % (
                           _branch(exact) or "a current"),
                evidence=_ev(installed, pci, *[n.fact for n in fneeds]),
                source=_source("CUDA %s needs Linux driver >= %s" % (_mm_str(need.cuda), exact), row),
                fix=Fix(text="Install the NVIDIA driver, then reboot (or load the module).",
                        commands=["sudo ubuntu-drivers install" if facts.value("os.id") == "ubuntu"
                                  else "sudo %s install nvidia-driver" % rpm_tool(facts)
                                  if facts.value("os.family") == "rhel"
                                  else "see https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"],
                        install=install_line(facts, "driver", _branch(exact), floor=True)),
            ))
        return out
    drv = Driver(facts)
    if not drv.known:
        return out  # NVML and nvidia-smi gave no answer: cannot judge
    ccs = [cc for cc, _, _ in gpu_ccs(facts)]
    compat = _forward_compat(facts, drv)
    for need in fneeds + package_needs(facts) + toolkit_needs(facts) + static_needs(facts) + bundle_needs(facts):
        verdict = drv.verdict(need.cuda, need.update)
        if verdict != "ok" and compat is not None and need.cuda <= compat[1]:
            # the cuda-compat libcuda the loader takes runs this CUDA on the older driver where NVIDIA's table lists
            # the pair (the GPU's side, Data Center only, is driver.forward_compat_unsupported_gpu's)
            runs = hw.forward_compat_runs(drv.version, need.cuda_text)
            if runs is True:
                continue
            if runs is False:
                row = hw.cuda_release(_mm_str(need.cuda))
                exact = hw.min_driver_for_cuda(need.cuda_text)
                branch = hw.forward_compat_row(drv.version) or {}
                if row is not None and exact is not None:
                    out.append(_too_old(facts, drv, need, exact, row, ["min_driver_linux"], ccs, exact=exact, why=(
                        "the forward-compatibility libcuda %s is loaded, but NVIDIA lists only CUDA %s for the R%s "
                        "branch through the forward compatible upgrade, and says the branch is not "
                        "forward-compatible with CUDA %s and later" % (
                            compat[0], ", ".join(branch.get("forward_compat_cuda") or []), branch.get("branch"),
                            branch.get("forward_compat_ends")))))
                    continue
        if verdict == "ok":
            # JAX states its own driver floor per CUDA wheel (jax.json min_driver)
            if need.min_driver and drv.version and not drv.wsl and _v(drv.version) is not None \
                    and _v(drv.version) < Version(need.min_driver):  # type: ignore[operator]
                out.append(_too_old(facts, drv, need, need.min_driver, need.min_driver_row, [need.min_driver_field],
                                    ccs))
            continue
        users = _toolkit_users(facts, need) if need.kind != "framework" else []
        # an update release whose driver (Table 3) is newer than this one, of a minor the driver knows: its PTX is
        # the minor's, which this driver JITs, so only the update's driver-dependent features are missing
        update_only = verdict == "minor_compat" and drv.cuda is not None and drv.cuda >= need.cuda
        if verdict == "minor_compat" and "jax" in users:
            # JAX compiles its kernels at run time with this toolkit and requires the toolkit's own driver
            row = hw.cuda_release(_mm_str(need.cuda))
            exact = hw.min_driver_for_cuda(need.cuda_text)
            if row is not None and exact is not None:
                out.append(_too_old(facts, drv, need, exact, row, ["min_driver_linux", "driver_by_update"], ccs,
                                    exact=exact, why=JAX_TOOLKIT_DRIVER_WHY % (need.cuda_text, exact)))
                continue
        if update_only:
            out.append(_minor_compat(drv, need, ccs, facts, runtime_users=users))
            continue
        if verdict == "minor_compat" and need.sass is not None:
            # its own CUDA runtime runs under minor-version compatibility, but a GPU with no cubin here reaches
            # the code only through its PTX, newer than this driver can JIT (cudaErrorUnsupportedPtxVersion)
            row = hw.cuda_release(_mm_str(need.cuda))
            jit = [cc for cc in ccs if not any(_cubin_runs(a, cc) for a in need.sass)
                   and any(_ptx_runs(a, cc) for a in need.ptx or [])]
            if jit and row is not None:
                out.append(_static_ptx(facts, drv, need, row, jit))
                continue
            if any(not any(_cubin_runs(a, cc) for a in need.sass) for cc in ccs):
                continue  # a GPU it has neither a cubin nor PTX for: no driver runs it there, nothing to say of one
        if verdict == "minor_compat" and (need.kind == "framework" and need.component == "cupy" or "cupy" in users):
            # CuPy compiles its kernels with NVRTC into PTX of its own CUDA minor, which the driver must JIT:
            # minor-version compatibility does not cover it (cudaErrorUnsupportedPtxVersion), so the driver
            # of that exact minor is needed
            row = hw.cuda_release(_mm_str(need.cuda))
            if row is not None:
                out.append(_too_old(facts, drv, need, row["min_driver_linux"], row, ["min_driver_linux"], ccs))
                continue
        extensions = _framework_extensions(facts)
        if verdict == "minor_compat" and need.kind == "toolkit" and "nvcc" in need.label \
                and (not extensions or _framework_beyond_driver(facts, drv)):
            uncovered = [cc for cc in ccs if not _default_sass_runs(need.cuda[0], cc)]
            row = hw.cuda_release(_mm_str(need.cuda))
            if uncovered and row is not None:
                out.append(_ptx_default(facts, drv, need, row, uncovered, extensions=extensions))
                if not users:
                    continue  # (a framework compiling with this toolkit at run time is told apart, below)
        if verdict == "minor_compat":
            out.append(_minor_compat(drv, need, ccs, facts, runtime_users=users))
            continue
        row = _floor_row(need.cuda[0])
        floor = hw.min_driver_for_cuda(_mm_str(need.cuda) if need.cuda[1] is not None
                                       else (row["version"] if row else ""), minor_compat=True)
        if floor is None or row is None:
            continue  # the matrix does not know this CUDA: no rule to apply
        out.append(_too_old(facts, drv, need, floor, row, ["min_driver_linux", "minor_compat_min_driver"], ccs))
    return out


def _forward_compat(facts: Facts, drv: Driver) -> Optional[Tuple[str, Tuple[int, int]]]:
    """(version, CUDA) of the newest forward-compatibility libcuda the loader takes that is newer than the running
    driver (:func:`envdoctor.checks.driver_health._compat_libcuda_in_use`), or None."""
    running = _v(drv.version) if drv.version else None
    best: Optional[Tuple[str, Tuple[int, int]]] = None
    for c in _compat_libcuda_in_use(facts):
        version = str(c.get("driver_version") or "")
        mine = _v(version)
        cuda = hw.driver_cuda(version, None)
        if running is None or mine is None or cuda is None or mine <= running:
            continue
        if best is None or cuda > best[1]:
            best = (version, cuda)
    return best


def _arch_cc(arch: str) -> Tuple[Optional[Version], bool]:
    """"sm_61" -> (6.1, False), "compute_90a" -> (9.0, True: arch-specific), "sm_120" -> (12.0, False)."""
    tail = arch.split("_", 1)[-1]
    digits = "".join(c for c in tail if c.isdigit())
    cc = _v("%s.%s" % (digits[:-1], digits[-1])) if len(digits) >= 2 else None
    return cc, tail.endswith("a")


def _cubin_runs(arch: str, cc: str) -> bool:
    """A cubin for X.y runs on X.z with z >= y, never across majors; an arch-specific one (sm_90a) on X.y only
    (CUDA C++ Programming Guide, "Binary Compatibility")."""
    have, specific, want = _arch_cc(arch) + (_v(cc),)
    if have is None or want is None:
        return False
    return have == want if specific else have.release[0] == want.release[0] and have <= want


def _ptx_runs(arch: str, cc: str) -> bool:
    """PTX for compute_XY is JIT-compiled for any GPU of compute capability X.Y or higher; arch-specific PTX
    (compute_90a) for X.Y only."""
    have, specific, want = _arch_cc(arch) + (_v(cc),)
    if have is None or want is None:
        return False
    return have == want if specific else have <= want


def _static_ptx(facts: Facts, drv: Driver, need: Need, row: Dict[str, Any], jit: Sequence[str]) -> Finding:
    """A library carrying its own CUDA runtime, under minor-version compatibility, on a GPU for which it has no
    cubin: its runtime starts, but its kernels reach that GPU only through PTX newer than this driver can JIT."""
    exact = row["min_driver_linux"]
    gpus = ", ".join(sorted(set(jit), key=versions.sort_key))
    floor = hw.min_driver_for_cuda(_mm_str(need.cuda), minor_compat=True) or "?"
    return Finding(
        code="driver.too_old_for_framework", severity="error", components=["driver", need.component],
        title="%s, but %s has no cubin for compute capability %s, only PTX this driver cannot JIT (driver >= %s "
              "needed)" % (drv.describe(), need.label, gpus, exact),
        detail="Built with CUDA %s, it runs on this driver through CUDA %d.x minor-version compatibility (driver "
               ">= %s), which does not cover PTX: it has no cubin for compute capability %s, so its kernels reach "
               "that GPU only by JIT-compiling its PTX (ISA %s), newer than the driver's CUDA %s knows. Expect "
               "cudaErrorUnsupportedPtxVersion ('the provided PTX was compiled with an unsupported toolchain') "
               "when it loads its kernels on that GPU." % (_mm_str(need.cuda), need.cuda[0], floor, gpus, need.ptx_isa,
                                                        _mm_str(drv.cuda) if drv.cuda else "?"),
        evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source=_source("PTX ISA %s is CUDA %s's; a driver JIT-compiles no PTX newer than its own CUDA; CUDA %s's "
                       "own driver is %s" % (need.ptx_isa, _mm_str(need.cuda), _mm_str(need.cuda), exact), row),
        fix=Fix(text="Update the NVIDIA driver to branch %s or newer (>= %s, CUDA %s's own driver, JIT-compiles its "
                     "PTX), or install a build of %s with a cubin for compute capability %s."
                     % (_branch(exact), exact, _mm_str(need.cuda), need.package or "it", gpus),
                commands=["sudo ubuntu-drivers install nvidia:%s" % _branch(exact)]
                if facts.value("os.id") == "ubuntu" else [],
                install=install_line(facts, "driver", _branch(exact), floor=True)),
    )


#: JAX's installation guide (its README up to 2022, for the "local CUDA" jaxlib wheels): "You must use an NVidia
#: driver version that is at least as new as your CUDA toolkit's corresponding driver version. For example, if you
#: have CUDA 11.4 update 4 installed, you must use NVidia driver 470.82.01 or newer if on Linux. This is a strict
#: requirement that exists because JAX relies on JIT-compiling code; older drivers may lead to failures."
JAX_TOOLKIT_DRIVER_URL = "https://github.com/google/jax/blob/jaxlib-v0.3.2/README.md#pip-installation-gpu-cuda"
JAX_TOOLKIT_DRIVER_WHY = ("jaxlib JIT-compiles its kernels with this toolkit, and JAX requires a driver at least as "
                          "new as the toolkit's corresponding driver (CUDA %s: %s, NVIDIA's Table 3; " +
                          JAX_TOOLKIT_DRIVER_URL + "); minor-version compatibility is not enough for it")


def _too_old(facts: Facts, drv: Driver, need: Need, floor: str, row: Optional[Dict[str, Any]],
             fields: Sequence[str], ccs: Sequence[str], exact: Optional[str] = None,
             why: Optional[str] = None) -> Finding:
    if exact is None:
        exact_row = _rule_row(need.cuda)
        exact = exact_row["min_driver_linux"] if exact_row else floor
    branch = _branch(exact) or _branch(floor)
    code = "driver.too_old_for_framework" if need.kind == "framework" else "driver.too_old_for_toolkit"
    # CUDA minor-version compatibility begins with CUDA 11: before it, each minor needs its own driver
    has_compat = need.cuda[0] >= 11
    if why is not None:
        text = ("Update the NVIDIA driver to %s or newer (CUDA %s's corresponding driver), or, where the driver "
                "cannot be updated, install NVIDIA's CUDA forward compatibility package for CUDA %s."
                % (exact, need.cuda_text, _mm_str(need.cuda)))
    elif has_compat:
        text = ("Update the NVIDIA driver to branch %s or newer (any driver >= %s runs every CUDA %d.x minor "
                "through minor-version compatibility; >= %s runs CUDA %s fully)." % (branch, floor, need.cuda[0],
                                                                                      exact, _mm_str(need.cuda)))
    else:
        text = "Update the NVIDIA driver to branch %s or newer (>= %s runs CUDA %s)." % (branch, exact,
                                                                                         _mm_str(need.cuda))
    commands = ["sudo ubuntu-drivers install nvidia:%s" % branch] if facts.value("os.id") == "ubuntu" else []
    if why is not None:
        pass
    elif drv.cuda is not None and drv.cuda[0] == need.cuda[0]:
        why = ("CUDA %d.x has no minor-version compatibility (it begins with CUDA 11), so each minor needs a driver "
               "that supports it" % need.cuda[0] if not has_compat else
               "the driver is below CUDA %d.x's minor-version compatibility floor (%s)" % (need.cuda[0], floor))
    else:
        why = "a newer major, and minor-version compatibility never crosses majors"
    detail = ("The driver's 'CUDA Version' (%s) is the newest CUDA runtime it can run; %s was built for CUDA %s: "
              "%s. Expect 'CUDA driver version is insufficient for CUDA runtime version'." % (
                  _mm_str(drv.cuda) if drv.cuda else "?", need.label, need.cuda_text, why))
    if need.kind == "framework" and need.component == "torch":
        alt = suggest_torch(facts, drv, ccs, prefer=need.fact.value.get("version"))
        if alt is not None:
            text += (" Or keep this driver and install torch %s for CUDA %s: `pip install --force-reinstall "
                     "'torch==%s.*' %s`." % (alt[0], alt[1]["cuda"], alt[0], _torch_pip(alt[0], alt[1])))
    return Finding(
        code=code, severity=_severity(row, fields), components=["driver", need.component],
        title="%s, but %s needs CUDA %s (driver >= %s)" % (drv.describe(), need.label, need.cuda_text, floor),
        detail=detail, evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source=_source("CUDA %d.x needs Linux driver >= %s (minor-version compatibility floor); CUDA %s's own "
                       "driver is %s" % (need.cuda[0], floor, _mm_str(need.cuda), exact), row),
        fix=Fix(text=text, commands=commands, install=install_line(facts, "driver", branch, floor=True)),
    )


#: The SASS target nvcc builds when no -arch/-gencode is given, per CUDA major (nvcc adds the PTX of the same
#: virtual architecture): read from ``nvcc --dryrun -c`` of NVIDIA's nvcc 11.8.89 and 12.4.131 (Debian's
#: nvidia-cuda-toolkit packages: -arch=sm_52, compute_52) and 13.0.88 (PyPI nvidia-cuda-nvcc: sm_75, compute_75).
NVCC_DEFAULT_SASS = {11: "5.2", 12: "5.2", 13: "7.5"}
NVCC_DOC = "https://docs.nvidia.com/cuda/cuda-compiler-driver-nvcc/index.html#gpu-architecture-arch"


def _framework_extensions(facts: Facts) -> bool:
    """Whether a CUDA build of PyTorch is installed: what nvcc builds next to it is mostly its extensions, which
    torch.utils.cpp_extension compiles with -gencode for the visible GPUs' own SASS (its _get_cuda_arch_flags),
    not nvcc's default target."""
    torch = facts.mapping("framework.torch")
    return bool(torch.get("cuda"))


def _framework_beyond_driver(facts: Facts, drv: Driver) -> bool:
    """Whether the CUDA the installed PyTorch was built with is newer than the driver supports (torch itself runs
    through minor-version compatibility): the toolkit its extensions are built with (of torch's CUDA, as
    torch.utils.cpp_extension expects) then writes PTX this driver cannot JIT, whichever one is used."""
    built = _mm(facts.mapping("framework.torch").get("cuda"))
    have = drv.cuda
    if built is None or built[1] is None or have is None or have[1] is None:
        return False
    return (built[0], built[1]) > (have[0], have[1])


def _default_sass_runs(major: int, cc: str) -> bool:
    """Whether nvcc's default SASS (of CUDA ``major``) runs on a GPU of ``cc`` (same major, not older); unknown
    majors count as covered (nothing is claimed)."""
    default = NVCC_DEFAULT_SASS.get(major)
    want, have = _v(cc), _v(default) if default else None
    if want is None or have is None:
        return True
    return want.release[0] == have.release[0] and want >= have


def _ptx_default(facts: Facts, drv: Driver, need: Need, row: Dict[str, Any], uncovered: Sequence[str],
                 extensions: bool = False) -> Finding:
    """nvcc's default build reaches these GPUs only through PTX, newer than this driver can JIT: a certain
    failure (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) for every program built without -arch. With a CUDA build of
    PyTorch installed (``extensions``), what this nvcc builds is mostly torch extensions, which
    torch.utils.cpp_extension compiles with the visible GPUs' own SASS unless TORCH_CUDA_ARCH_LIST or the
    project's own -gencode/-arch flags say otherwise: a warning, not a certain failure, and said only where torch's
    own CUDA is beyond the driver too (:func:`_framework_beyond_driver`)."""
    exact = row["min_driver_linux"]
    default = NVCC_DEFAULT_SASS[need.cuda[0]]
    sm = default.replace(".", "")
    gpus = ", ".join(sorted(set(uncovered), key=versions.sort_key))
    torch = facts.mapping("framework.torch") if extensions else {}
    extra = (" Extensions torch.utils.cpp_extension builds for torch %s with this nvcc get SASS for the GPUs "
             "visible at build time and run; an extension built with its own -gencode/-arch flags or "
             "TORCH_CUDA_ARCH_LIST without this GPU's SASS, or built where the GPU was not visible, reaches it only "
             "through that PTX and fails the same way." % (torch.get("version") or "") if extensions else "")
    return Finding(
        code="driver.too_old_for_toolkit", severity="warning" if extensions else "error",
        components=["driver", need.component],
        title="%s, but %s builds by default PTX this driver cannot JIT for compute capability %s (driver >= %s "
              "needed)" % (drv.describe(), need.label, gpus, exact),
        detail="Without -arch, nvcc %s builds SASS for sm_%s and PTX for compute_%s only; a GPU of compute "
               "capability %s runs such a program only by JIT-compiling that PTX, and PTX of CUDA %s is newer "
               "than this driver (CUDA %s) knows: every such program fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION "
               "('the provided PTX was compiled with an unsupported toolchain'). Minor-version compatibility "
               "does not cover PTX.%s" % (_mm_str(need.cuda), sm, sm, gpus, _mm_str(need.cuda),
                                          _mm_str(drv.cuda) if drv.cuda else "?", extra),
        evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source={"rule": "nvcc's default target is sm_%s + compute_%s (CUDA %d.x); PTX needs a driver of its CUDA "
                        "release to JIT; CUDA %s's driver is %s" % (sm, sm, need.cuda[0], _mm_str(need.cuda), exact),
                "url": NVCC_DOC, "checked": "2026-11-29"},
        fix=Fix(text="Update the NVIDIA driver to %s or newer (CUDA %s's own driver), or build with SASS for the "
                     "GPU (nvcc -arch=native, or -gencode arch=compute_XY,code=sm_XY for its compute "
                     "capability)." % (exact, _mm_str(need.cuda)),
                install=install_line(facts, "driver", _branch(exact), floor=True)),
    )


def _toolkit_users(facts: Facts, need: Optional[Need] = None) -> List[str]:
    """Frameworks that compile their GPU code at run time with the machine's own CUDA toolkit: CuPy built from
    source (against the local toolkit), jaxlib's "local CUDA" wheels (+cudaNN without a minor, using the ptxas
    and libraries of the installed toolkit) when the ptxas XLA runs is this toolkit's (:func:`_jax_uses_toolkit`)."""
    out = []
    cupy = facts.mapping("framework.cupy")
    if cupy.get("build") == "source":
        out.append("cupy")
    jax = facts.mapping("framework.jax")
    cuda = _mm(jax.get("cuda"))
    if jax.get("build") == "cuda" and cuda is not None and cuda[1] is None and _jax_uses_toolkit(facts, need):
        out.append("jax")
    return out


def _toolkit_roots(need: Optional[Need]) -> List[str]:
    """The directories of the toolkit a need names (nvcc's toolkit, CUDA_HOME, /usr/local/cuda and its target)."""
    value = need.fact.value if need is not None and need.fact.known and isinstance(need.fact.value, dict) else {}
    roots = [str(value[k]).rstrip("/") for k in ("toolkit", "path", "resolved") if value.get(k)]
    return [r[:-len("/bin/nvcc")] if r.endswith("/bin/nvcc") else r for r in roots]


def _jax_uses_toolkit(facts: Facts, need: Optional[Need]) -> bool:
    """Whether XLA compiles with this toolkit's ptxas (``framework.jax.ptxas``: the first on PATH, else the
    nvidia-cuda-nvcc wheel's; with neither, XLA looks in the CUDA directory, the toolkit). JAX's pip CUDA wheels
    (jax[cudaNN], the plugin's with-cuda extra) ship their own ptxas: a toolkit elsewhere on the machine, with no
    ptxas on PATH, is not what JAX compiles with, and NVIDIA's minor-version compatibility judges it as any
    toolkit."""
    ptxas = facts.value("framework.jax.ptxas")
    if not isinstance(ptxas, dict):
        return True  # not recorded: as before, the local-CUDA wheels' toolkit
    on_path, wheel = ptxas.get("path"), ptxas.get("wheel")
    if isinstance(on_path, dict) and on_path.get("path"):
        roots = _toolkit_roots(need)
        where = [str(on_path.get(k)) for k in ("resolved", "path") if on_path.get(k)]
        return not roots or any(w.startswith(r + "/") for w in where for r in roots)
    return not (isinstance(wheel, dict) and wheel.get("path"))


def _minor_compat(drv: Driver, need: Need, ccs: Sequence[str], facts: Facts,
                  runtime_users: Sequence[str] = ()) -> Finding:
    row = hw.cuda_release(_mm_str(need.cuda))
    floor = hw.min_driver_for_cuda(_mm_str(need.cuda), minor_compat=True)
    exact = (hw.min_driver_for_cuda(need.update) if need.update else None) or (
        row["min_driver_linux"] if row else "?")
    jit = False
    if need.component == "torch":
        var = fw.torch_variant(need.fact.value.get("version")) or fw.torch_variant_for_cuda(
            need.fact.value.get("version"), need.fact.value.get("cuda"))
        if var:
            jit = any(not _sass_for(var.get("arch_list") or [], cc) for cc in ccs)
    # A toolkit is only a possibility of trouble (code built PTX-only, e.g. nvcc's default target, fails to JIT;
    # code built with SASS for the GPU runs): info. A framework that reaches the GPU only through PTX: warning.
    # JAX compiles its kernels at run time (XLA, with the ptxas/nvJitLink of its CUDA): under minor-version
    # compatibility what needs the driver's JIT fails, so it is a warning like a PTX-only build
    runtime = (need.kind == "framework" and need.component in RUNTIME_COMPILED) or bool(runtime_users)
    severity = "warning" if (need.kind == "framework" and jit) or runtime else "info"
    return Finding(
        code="driver.minor_version_compat", severity=severity, components=["driver", need.component],
        title="%s; %s needs CUDA %s (driver >= %s), so it runs through CUDA minor-version compatibility "
              "(floor %s)" % (drv.describe(), need.label, need.cuda_text, exact, floor),
        detail="Within CUDA %d.x a driver at or above %s runs newer minors, except what needs the driver to "
               "JIT-compile PTX newer than it knows: such code fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION "
               "('the provided PTX was compiled with an unsupported toolchain').%s" % (
                   need.cuda[0], floor,
                   " Here that matters: %s." % (
                       "%s compiles its kernels at run time with it" % ", ".join(runtime_users) if runtime_users
                       else "it compiles its kernels at run time" if runtime else
                                                 "this build reaches the GPU only through PTX")
                   if severity == "warning"
                   else " Code nvcc builds with SASS for the GPU (-arch=native, or -gencode for its sm_XY) runs "
                   "normally; code built for PTX only (nvcc's default target) does not." if need.kind != "framework"
                   else " This build ships SASS for the GPU, so it runs normally."),
        evidence=_ev(drv.version_fact, drv.cuda_fact, need.fact),
        source=_source("CUDA %d.x minor-version compatibility floor %s; CUDA %s's own driver %s" % (
            need.cuda[0], floor, _mm_str(need.cuda), exact), row),
        fix=Fix(text="Nothing is required. To lift the PTX limit, update the driver to %s or newer." % exact,
                install=install_line(facts, "driver", _branch(exact), floor=True)),
    )


@check("compat.driver-vs-cuda", requires=("driver.version",), reads=("cuda.nvcc", "cuda.home", "cuda.default_symlink",
       "cuda.conda", "driver.nvidia_pci_gpus", "framework.*", "python.static_cuda", "cuda.forward_compat",
       "cuda.ld_library_path", "env.ld_library_path_resolved", "libraries.libcuda", "driver.userspace.libraries",
       "driver.nvml.status", "linkage.packages", "cuda.bundled_cudart")
       + tuple("framework." + name for name, _ in FRAMEWORKS)
       + INSTALL_LINE_READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.too_old_for_framework", "driver.too_old_for_toolkit",
                      "driver.minor_version_compat", "driver.missing_for_framework",
                      "driver.cuda_version_is_a_ceiling"))
def driver_vs_cuda(ctx: CheckContext) -> List[Finding]:
    return _driver_vs_cuda(ctx.facts)

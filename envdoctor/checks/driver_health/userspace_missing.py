"""A kernel module without its user-space half (libnvidia-ml, libcuda), or that half where the loader does not look
(NixOS, the GPU Operator)."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Sequence

from ... import frameworks
from ...facts import Facts
from ...findings import Finding, Fix
from ...osinfo import GPU_OPERATOR_ROOT
from .. import CheckContext, check, docs_for
from ..suggest import install_line, rpm_tool
from . import DOCS, READS, _branch, _evidence, _family, _installed, _nvml_status, _source
from .container_gpus import without_gpus


def _userspace_missing(facts: Facts) -> List[Finding]:
    if facts.value("os.wsl") == "WSL2":
        return []
    if facts.value("driver.kernel_module.loaded") is not True:
        return []
    elsewhere = facts.mapping("driver.userspace.elsewhere")
    if _nvml_status(facts) != "NVML_ERROR_LIBRARY_NOT_FOUND":
        # envdoctor itself reached the driver (nix-ld, a wrapper); the inspected environment's programs may not
        if elsewhere.get("path") and elsewhere.get("layout") == "nixos":
            blind = _blind_consumers(facts, str(elsewhere["path"]))
            if blind:
                return [_userspace_elsewhere(facts, elsewhere, blind)]
        return _libcuda_missing(facts)
    if elsewhere.get("path"):
        return [_userspace_elsewhere(facts, elsewhere)]
    if without_gpus(facts):
        return []  # a container started without GPUs: driver.device_nodes_missing says so (one root cause)
    if _has_libcuda(facts):
        return [_nvml_missing(facts)]
    kver = facts.value("driver.kernel_module.version")
    flavor = facts.value("driver.kernel_module.flavor")
    branch = _branch(kver)
    cmds = _userspace_commands(facts, branch)
    return [Finding(
        code="driver.userspace_missing", severity="error", components=["driver"],
        title="The %skernel module %s is loaded, but no user-space driver library (libnvidia-ml, libcuda) "
              "is installed" % ("%s " % flavor if flavor in ("open", "proprietary") else "",
                                kver or "(version unknown)"),
        detail="The kernel half of the driver is running, but libnvidia-ml.so.1 and libcuda.so.1 (the user-space "
               "half, which CUDA applications and nvidia-smi load) are missing. Install the user-space packages "
               "of the same driver version %s." % (kver or ""),
        evidence=_evidence(facts, "driver.kernel_module.version", "driver.kernel_module.flavor",
                           "driver.nvml.status", "driver.userspace.version"),
        source=_source("nvml"),
        fix=Fix(text="Install the user-space libraries of driver %s (the same version as the loaded module)."
                     % (kver or "?"), commands=cmds,
                install=install_line(facts, "driver", branch)),
    )]


def _userspace_commands(facts: Facts, branch: Any) -> List[str]:
    family = _family(facts)
    if family == "debian" and branch:
        return ["sudo apt-get install -y libnvidia-compute-%s nvidia-utils-%s" % (branch, branch)]
    if family in ("rhel", "fedora"):
        return ["sudo %s install -y nvidia-driver-cuda nvidia-driver-cuda-libs" % rpm_tool(facts)]
    return []


def _has_libcuda(facts: Facts) -> bool:
    """A libcuda.so.<version> of the driver is where the loader looks, and no libnvidia-ml.so.<version> is (one
    there that NVML could not load is not a package left out: the error below stands)."""
    names = [posixpath.basename(p) for p in facts.strings("driver.userspace.libraries")]
    return any(n.startswith("libcuda.so.") for n in names) and not any(n.startswith("libnvidia-ml.so.")
                                                                         for n in names)


def _nvml_missing(facts: Facts) -> Finding:
    """NVML's library is not found but the driver's libcuda is: CUDA programs start (they load libcuda.so.1 only),
    nvidia-smi and NVML-based tools see nothing. In a container this is how a distribution's CUDA-only package
    lays out the driver (Ubuntu's libcuda1-<branch> carries libcuda, not libnvidia-ml or nvidia-smi, which belong to
    nvidia-<branch>): information. On a host it is a partly installed driver: a warning."""
    kver = facts.value("driver.kernel_module.version") or facts.value("driver.userspace.version")
    branch = _branch(kver)
    container = facts.value("os.container")
    libs = [p for p in facts.strings("driver.userspace.libraries") if posixpath.basename(p).startswith("libcuda.so.")]
    cmds = _userspace_commands(facts, branch)
    return Finding(
        code="driver.userspace_missing", severity="info" if container else "warning", components=["driver"],
        title="Driver %s's libcuda is installed but its NVML library (libnvidia-ml) is not: CUDA programs run, "
              "nvidia-smi and NVML-based tools do not" % (kver or "(version unknown)"),
        detail="The driver's CUDA library is where the loader looks (%s), so CUDA programs start; libnvidia-ml.so.1 "
               "(NVML: nvidia-smi, nvitop, gpustat, DCGM, monitoring agents) is not installed, so those see no "
               "GPU and this report cannot read the GPUs' state through NVML.%s" % (
                   ", ".join(libs),
                   " Inside a container (%s) that is what a CUDA-only driver package gives; install the driver's "
                   "NVML library only where such tools are wanted." % container if container else
                   " On a host the driver's user-space half is only partly installed."),
        evidence=_evidence(facts, "driver.userspace.libraries", "driver.kernel_module.version", "driver.nvml.status",
                           "os.container"),
        source=_source("nvml"),
        fix=Fix(text="Install the NVML library and nvidia-smi of driver %s (the same version as the loaded module) "
                     "where NVML-based tools are wanted." % (kver or "?"), commands=cmds),
    )


def _libcuda_missing(facts: Facts) -> List[Finding]:
    """NVML answers (libnvidia-ml is installed) but no libcuda.so.<version> is where the loader looks: the driver's
    CUDA library was left out (Ubuntu's nvidia-384 without libcuda1-384; a compute package not installed), so
    nvidia-smi works and every CUDA program fails at cuInit. Not in a container: there the NVIDIA Container Toolkit
    injects the driver's libraries by the container's capabilities and devices, which other checks judge."""
    if _nvml_status(facts) != "ok":
        return []
    libs = facts.strings("driver.userspace.libraries")
    names = [posixpath.basename(p) for p in libs]
    if not any(n.startswith("libnvidia-ml.so.") for n in names) or any(n.startswith("libcuda.so.") for n in names):
        return []
    if facts.value("os.container"):
        return []  # a container's driver libraries are what the toolkit injected for its capabilities and devices
    kver = facts.value("driver.kernel_module.version") or facts.value("driver.userspace.version")
    branch = _branch(kver)
    family = _family(facts)
    if facts.value("os.id") == "ubuntu" and branch:
        # Ubuntu's packages before 18.04 (nvidia-384: libcuda1-384), then libnvidia-compute-<branch>
        release = str(facts.value("os.version") or "")
        old = release[:2].isdigit() and int(release[:2]) < 18
        cmds = ["sudo apt-get install -y %s" % ("libcuda1-%s" % branch if old else "libnvidia-compute-%s" % branch)]
    elif family == "debian":
        cmds = ["sudo apt-get install -y libcuda1"]  # Debian's non-free driver packages
    elif family in ("rhel", "fedora"):
        cmds = ["sudo %s install -y nvidia-driver-cuda-libs" % rpm_tool(facts)]
    else:
        cmds = []
    where = sorted({posixpath.dirname(p) for p in libs})
    return [Finding(
        code="driver.userspace_missing", severity="error", components=["driver"],
        title="Driver %s's libnvidia-ml is installed but its CUDA library libcuda is not: nvidia-smi works, CUDA "
              "programs cannot start" % (kver or "(version unknown)"),
        detail="The driver's user-space half is only partly installed: libnvidia-ml (what nvidia-smi and NVML use) "
               "is in %s, but no libcuda.so.%s (the CUDA driver API every CUDA program loads as libcuda.so.1) is "
               "anywhere the loader looks, so CUDA initialisation fails ('CUDA driver version is insufficient for "
               "CUDA runtime version', 'no CUDA-capable device is detected' or 'libcuda.so.1: cannot open shared "
               "object file')." % (", ".join(where), kver or "<version>"),
        evidence=_evidence(facts, "driver.userspace.libraries", "driver.kernel_module.version", "driver.nvml.status"),
        source=_source("nvml"),
        fix=Fix(text="Install the driver's CUDA library package of the same version as the loaded module (%s)."
                     % (kver or "?"), commands=cmds, install=install_line(facts, "driver", branch)),
    )]


#: Where Nix keeps what it builds: a program or library there was linked by Nix (its RUNPATH names the driver's
#: directory when it needs it); anything else on a NixOS machine (pip wheels, downloads) was not.
NIX_STORE = "/nix/store/"


def _blind_consumers(facts: Facts, where: str) -> List[str]:
    """The CUDA builds of frameworks that the dynamic loader, as this environment sets it up, gives no path to the
    driver's libraries in ``where``: ``where`` is not on LD_LIBRARY_PATH (else the probe finds the libraries
    there, and there is no ``driver.userspace.elsewhere``) and the build lies outside the Nix store (a pip wheel,
    whose libraries carry no RUNPATH to it). Read from the frameworks' facts alone, so that ``--only driver`` needs
    no linkage probe."""
    want = posixpath.normpath(where)
    ldp = facts.value("cuda.ld_library_path")
    if isinstance(ldp, list) and want in {posixpath.normpath(str(d)) for d in ldp}:
        return []
    out = []
    for name in frameworks.COMPONENTS:
        value = facts.value("framework." + name)
        if not isinstance(value, dict) or not (value.get("build") == "cuda" or value.get("gpu") is True):
            continue
        if str(value.get("path") or "").startswith(NIX_STORE):
            continue  # built by Nix: its libraries' RUNPATH is Nix's (addDriverRunpath names the driver's directory)
        out.append("%s %s" % (value.get("package") or name, value.get("version") or ""))
    return [c.strip() for c in out]


def _userspace_elsewhere(facts: Facts, where: Dict[str, Any], blind: Sequence[str] = ()) -> Finding:
    """The driver's libraries are installed, in a layout the loader does not search (NixOS, the GPU Operator);
    ``blind``: the frameworks that cannot reach them (envdoctor itself did)."""
    path, version = str(where.get("path")), where.get("version") or "?"
    ev = _evidence(facts, "driver.userspace.elsewhere", "driver.kernel_module.version", "driver.nvml.status",
                   *(("cuda.ld_library_path",) if blind else ()))
    if where.get("layout") == "gpu-operator":
        return Finding(
            code="driver.gpu_operator_driver_root", severity="info", components=["driver"],
            title="The NVIDIA GPU Operator's driver container provides driver %s (its root: %s)"
                  % (version, GPU_OPERATOR_ROOT),
            detail="The user-space driver is in the driver container's root (%s), not in the host's loader path: "
                   "containers get it from the NVIDIA Container Toolkit, and on the host itself its tools run "
                   "inside that root." % path,
            evidence=ev, source=_source("gpu_operator"),
            fix=Fix(text="Run the driver's tools inside its root; run CUDA work in containers.",
                    commands=["sudo chroot %s nvidia-smi" % GPU_OPERATOR_ROOT]))
    return Finding(
        code="driver.userspace_outside_loader_path", severity="warning", components=["driver", "os"],
        title=("The driver's libraries (%s) are in %s, which neither LD_LIBRARY_PATH nor %s searches: it finds "
               "no libcuda.so.1" % (version, path, ", ".join(blind)) if blind else
               "The driver's libraries (%s) are in %s, where programs not built by Nix do not look"
               % (version, path)),
        detail="NixOS links the running system's driver libraries at /run/opengl-driver/lib; programs built by Nix "
               "find them through their RUNPATH, but pip wheels (PyTorch, JAX, TensorFlow, ONNX Runtime) and other "
               "programs built elsewhere look only where the dynamic loader does, so they find no libcuda.so.1 and "
               "see no GPU in this environment.%s" % (
                   " Here LD_LIBRARY_PATH does not name %s (since NixOS 20.03 the system no longer puts it there) "
                   "and %s names it in no RUNPATH." % (path, ", ".join(blind)) if blind else ""),
        evidence=ev, source=_source("nixos"),
        fix=Fix(text="Give such programs the driver's directory (in the shell or the dev shell that runs them), or "
                     "enable programs.nix-ld with the driver's libraries.",
                commands=["export LD_LIBRARY_PATH=/run/opengl-driver/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"]))


@check("driver-health.userspace-missing", requires=("driver.installed",),
       reads=READS + ("framework.*", "cuda.ld_library_path"), layers=("driver",),
       codes=docs_for(DOCS, "driver.userspace_missing", "driver.gpu_operator_driver_root",
                      "driver.userspace_outside_loader_path"))
def userspace_missing(ctx: CheckContext) -> List[Finding]:
    return _userspace_missing(ctx.facts) if _installed(ctx.facts) else []

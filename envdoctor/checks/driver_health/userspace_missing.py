"""A kernel module without its user-space half (libnvidia-ml, libcuda), or that half where the loader does not look
(NixOS, the GPU Operator)."""

from __future__ import annotations

from typing import Any, Dict, List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import install_line, rpm_tool
from . import DOCS, READS, _branch, _evidence, _family, _installed, _nvml_status, _source


def _userspace_missing(facts: Facts) -> List[Finding]:
    if facts.value("os.wsl") == "WSL2":
        return []
    if facts.value("driver.kernel_module.loaded") is not True:
        return []
    if _nvml_status(facts) != "NVML_ERROR_LIBRARY_NOT_FOUND":
        return []
    elsewhere = facts.mapping("driver.userspace.elsewhere")
    if elsewhere.get("path"):
        return [_userspace_elsewhere(facts, elsewhere)]
    kver = facts.value("driver.kernel_module.version")
    flavor = facts.value("driver.kernel_module.flavor")
    branch = _branch(kver)
    family = _family(facts)
    if family == "debian" and branch:
        cmds = ["sudo apt-get install -y libnvidia-compute-%s nvidia-utils-%s" % (branch, branch)]
    elif family in ("rhel", "fedora"):
        cmds = ["sudo %s install -y nvidia-driver-cuda nvidia-driver-cuda-libs" % rpm_tool(facts)]
    else:
        cmds = []
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


def _userspace_elsewhere(facts: Facts, where: Dict[str, Any]) -> Finding:
    """The driver's libraries are installed, in a layout the loader does not search (NixOS, the GPU Operator)."""
    path, version = str(where.get("path")), where.get("version") or "?"
    ev = _evidence(facts, "driver.userspace.elsewhere", "driver.kernel_module.version", "driver.nvml.status")
    if where.get("layout") == "gpu-operator":
        return Finding(
            code="driver.gpu_operator_driver_root", severity="info", components=["driver"],
            title="The NVIDIA GPU Operator's driver container provides driver %s (its root: /run/nvidia/driver)"
                  % version,
            detail="The user-space driver is in the driver container's root (%s), not in the host's loader path: "
                   "containers get it from the NVIDIA Container Toolkit, and on the host itself its tools run "
                   "inside that root." % path,
            evidence=ev, source=_source("gpu_operator"),
            fix=Fix(text="Run the driver's tools inside its root; run CUDA work in containers.",
                    commands=["sudo chroot /run/nvidia/driver nvidia-smi"]))
    return Finding(
        code="driver.userspace_outside_loader_path", severity="warning", components=["driver", "os"],
        title="The driver's libraries (%s) are in %s, where programs not built by Nix do not look" % (version, path),
        detail="NixOS links the running system's driver libraries at /run/opengl-driver/lib; programs built by Nix "
               "find them through their RUNPATH, but pip wheels (PyTorch, JAX, ONNX Runtime) and other programs "
               "built elsewhere look only where the dynamic loader does, so they find no libcuda.so.1 and see no "
               "GPU in this environment.",
        evidence=ev, source=_source("nixos"),
        fix=Fix(text="Give such programs the driver's directory (in the shell or the dev shell that runs them), or "
                     "enable programs.nix-ld with the driver's libraries.",
                commands=["export LD_LIBRARY_PATH=/run/opengl-driver/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"]))


@check("driver-health.userspace-missing", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.userspace_missing", "driver.gpu_operator_driver_root",
                      "driver.userspace_outside_loader_path"))
def userspace_missing(ctx: CheckContext) -> List[Finding]:
    return _userspace_missing(ctx.facts) if _installed(ctx.facts) else []

"""A kernel module without its user-space half (libnvidia-ml, libcuda)."""

from __future__ import annotations

from typing import List

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


@check("driver-health.userspace-missing", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.userspace_missing"))
def userspace_missing(ctx: CheckContext) -> List[Finding]:
    return _userspace_missing(ctx.facts) if _installed(ctx.facts) else []

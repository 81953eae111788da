"""The loaded kernel module and the user-space library are different driver versions ("Failed to initialize
NVML: Driver/library version mismatch"), or the module on disk differs from the user-space driver.
"""

from __future__ import annotations

from typing import List, Optional

from packaging.version import InvalidVersion, Version

from ...facts import Facts
from ...findings import AnyOf, Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import rpm_tool
from . import DOCS, READS, RELOAD, _evidence, _family, _installed, _nvml_status, _source, _v


def _mismatch(facts: Facts) -> List[Finding]:
    status = _nvml_status(facts)
    kver = facts.text("driver.kernel_module.version")
    uver = facts.text("driver.userspace.version")
    if facts.value("os.wsl") == "WSL2":
        return []
    differ = False
    if kver and uver:
        try:
            differ = Version(kver) != Version(uver)
        except InvalidVersion:
            differ = False
    if status != "NVML_ERROR_LIB_RM_VERSION_MISMATCH" and not (differ and status not in ("ok", None)):
        return []
    k = kver or "version unreadable"
    u = uver or "version unreadable"
    if kver and uver:
        halves = "Loaded kernel module is driver %s, but the user-space library is driver %s" % (kver, uver)
    elif kver or uver:
        halves = ("Loaded kernel module is driver %s, but the user-space library is another release" % kver if kver
                  else "User-space library is driver %s, but the loaded kernel module is another release" % uver)
    else:  # a version left unread is said once, not as "driver unknown ... driver unknown"
        halves = "Loaded kernel module and user-space library come from different driver releases"
    return [Finding(
        code="driver.library_mismatch", severity="error", components=["driver", "kernel"],
        title=halves + " (Failed to initialize NVML: Driver/library version mismatch)",
        detail="The NVIDIA kernel module in memory (%s, from /proc/driver/nvidia/version) and the user-space "
               "libraries on disk (libnvidia-ml/libcuda %s) come from different driver releases. This happens "
               "when the driver packages are upgraded (often by unattended upgrades) and the machine is not "
               "rebooted: the old module stays loaded. NVML, nvidia-smi and CUDA all refuse to start until both "
               "halves are the same version." % (k, u),
        evidence=_evidence(facts, "driver.nvml.status", "driver.kernel_module.version", "driver.userspace.version",
                           "driver.userspace.libraries"),
        source=_source("nvml"),
        fix=Fix(text="Reboot, which loads the new module. Without a reboot: stop everything using the GPU "
                     "(display manager, nvidia-persistenced, containers, jobs), then unload and reload the "
                     "modules.",
                commands=[AnyOf("sudo reboot", RELOAD)]) if not _on_disk_differs(facts, uver) else
        Fix(text="A reboot would load the same old module again: the module installed for this kernel is %s. "
                 "Finish or repair the driver upgrade so the %s kernel module is built and installed, then "
                 "reboot." % (_on_disk(facts), u), commands=_module_repair(facts)),
    )] + _on_disk_mismatch(facts, uver)


def _on_disk(facts: Facts) -> Optional[str]:
    """The nvidia module version installed for the running kernel: modinfo, else DKMS's installed build."""
    text = facts.text("driver.module_on_disk.version")
    if text:
        return text
    release = facts.text("kernel.release")
    for e in facts.items("driver.dkms.status"):
        if isinstance(e, dict) and e.get("state") == "installed" and e.get("kernel") == release \
                and str(e.get("module", "")).startswith("nvidia"):
            return str(e.get("version"))
    return None


def _on_disk_differs(facts: Facts, uver: Optional[str]) -> bool:
    disk = _v(_on_disk(facts))
    user = _v(uver)
    return disk is not None and user is not None and disk != user


def _module_repair(facts: Facts) -> List[str]:
    family = _family(facts)
    if family == "debian":
        return ["sudo apt-get install --fix-broken", "sudo dkms status", "sudo reboot"]
    if family in ("rhel", "fedora"):
        return ["sudo %s distro-sync 'nvidia*' 'kmod-nvidia*'" % rpm_tool(facts), "sudo dkms status", "sudo reboot"]
    return ["sudo dkms status", "sudo dkms autoinstall", "sudo reboot"]


def _on_disk_mismatch(facts: Facts, uver: Optional[str]) -> List[Finding]:
    if not _on_disk_differs(facts, uver):
        return []
    disk = _on_disk(facts)
    return [Finding(
        code="driver.module_on_disk_mismatch", severity="error", components=["driver", "kernel"],
        title="The nvidia module installed for kernel %s is %s, but the user-space driver is %s: a reboot will "
              "not fix the mismatch" % (facts.text("kernel.release") or "(running)", disk, uver),
        detail="The kernel module on disk (what the next boot loads) was not upgraded with the user-space "
               "libraries, typically a half-finished package upgrade or a DKMS build that failed for the new "
               "version. Until a %s module is built and installed, NVML and CUDA keep failing with 'Driver/library "
               "version mismatch'." % uver,
        evidence=_evidence(facts, "driver.module_on_disk.version", "driver.dkms.status", "driver.userspace.version",
                           "kernel.release"),
        source=_source("nvml"),
        fix=Fix(text="Repair the driver packages so the %s kernel module is built for this kernel, then reboot."
                     % uver, commands=_module_repair(facts)),
    )]


@check("driver-health.library-mismatch", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.library_mismatch", "driver.module_on_disk_mismatch"))
def library_mismatch(ctx: CheckContext) -> List[Finding]:
    return _mismatch(ctx.facts) if _installed(ctx.facts) else []

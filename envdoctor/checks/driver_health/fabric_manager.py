"""NVSwitch systems without a running fabric manager."""

from __future__ import annotations

from typing import List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import rpm_tool
from . import DOCS, READS, _branch, _driver_label, _evidence, _family, _installed, _source


def _fabric_manager(facts: Facts) -> List[Finding]:
    if facts.value("driver.nvswitch.present") is not True:
        return []
    state_fact = facts.get("driver.fabric_manager.state")
    if state_fact is None or not state_fact.known or state_fact.value == "active":
        return []
    state = state_fact.value
    version = facts.value("driver.version") or facts.value("driver.kernel_module.version")
    branch = _branch(version)
    family = _family(facts)
    if family == "debian":
        pkg = "sudo apt-get install -y nvidia-fabricmanager-%s=%s-*" % (branch or "<branch>", version or "<version>")
    elif family in ("rhel", "fedora"):
        pkg = "sudo %s install -y nvidia-fabric-manager-%s" % (rpm_tool(facts), version or "<version>")
    else:
        pkg = "# install nvidia-fabricmanager of exactly driver version %s" % (version or "<version>")
    fm_version = facts.text("driver.fabric_manager.version")
    other = bool(fm_version and version and fm_version != str(version))
    return [Finding(
        code="driver.fabric_manager_not_running", severity="error", components=["fabric-manager", "driver"],
        title=("NVSwitch system with %s, but the fabric manager service is %s: the installed nvidia-fabricmanager "
               "is %s, not the driver's %s" % (_driver_label(facts), state, fm_version, version)) if other else
              "NVSwitch system with %s, but the fabric manager service is %s (needs nvidia-fabricmanager %s)" % (
                  _driver_label(facts), state, version or "of the driver's exact version"),
        detail="This machine has NVSwitches. Until NVIDIA Fabric Manager has configured the NVLink fabric, CUDA "
               "initialisation fails with cudaErrorSystemNotReady (error 802, \"system not yet initialized\"). "
               "The fabric manager package must be exactly the driver's version (%s); after a driver upgrade an "
               "old fabric manager refuses to start (see `journalctl -u nvidia-fabricmanager`)." % (version or "?"),
        evidence=_evidence(facts, "driver.nvswitch.present", "driver.fabric_manager.state", "driver.version",
                           "driver.fabric_manager.version"),
        source=_source("fabric_manager"),
        fix=Fix(text="Install the fabric manager of exactly driver version %s (if missing or of another version) "
                     "and start it at boot." % (version or "?"),
                commands=[pkg, "sudo systemctl enable --now nvidia-fabricmanager",
                          "journalctl -u nvidia-fabricmanager -b --no-pager | tail -n 20"]),
    )]


@check("driver-health.fabric-manager", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.fabric_manager_not_running"))
def fabric_manager(ctx: CheckContext) -> List[Finding]:
    return _fabric_manager(ctx.facts) if _installed(ctx.facts) else []

"""nvidia_uvm not loaded on a host and nothing that can load it for a user's CUDA program: the running kernel's
uvm module installed only under a driver package's renamed name (Ubuntu's nvidia_NNN_uvm.ko) with no alias for
`modprobe nvidia-uvm`, or no setuid nvidia-modprobe to load it on demand."""

from __future__ import annotations

from typing import Dict, List

import pytest

from envdoctor.checks import CheckContext
from envdoctor.findings import Finding
from tests.conftest import corpus_snapshot, probe_facts, snapshot_findings
from tests.test_probe_driver import UBUNTU, healthy_550

AFTER_BOOT = ["null", "nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "zero"]
DKMS = "/lib/modules/%s/updates/dkms/" % UBUNTU
HELPER = {"/usr/bin/nvidia-modprobe": ""}
#: Ubuntu's versioned packages: DKMS installs the renamed module (nvidia_346_uvm.ko into updates/dkms) and the
#: package's modprobe.d file resolves the plain name ("alias nvidia-uvm nvidia_340-uvm").
UBUNTU_ALIASES = "blacklist nouveau\nalias nvidia nvidia_331_updates\nalias nvidia-uvm nvidia_331_updates-uvm\n"


def _findings(files: Dict[str, str], dev: List[str] = AFTER_BOOT) -> List[Finding]:
    from envdoctor.checks.driver_health import driver_health

    host = healthy_550(files=files, dirs={"/dev": dev})
    return [f for f in driver_health(CheckContext(probe_facts(host), [])) if f.code == "driver.device_nodes_missing"]


@pytest.mark.parametrize("files", [
    {DKMS + "nvidia_331_updates_uvm.ko": ""},                                   # no alias at all
    {DKMS + "nvidia-331-updates-uvm.ko": "", "/etc/modprobe.d/bumblebee.conf": "blacklist nvidia-331-updates\n"},
    dict({DKMS + "nvidia_331_updates_uvm.ko": ""}, **HELPER),                   # the helper runs the same modprobe
])
def test_renamed_uvm_module_without_an_alias_is_said(files: Dict[str, str]) -> None:
    found = _findings(files)
    assert [f.severity for f in found] == ["warning"]
    f = found[0]
    assert "nvidia-uvm" in f.title and "/dev/nvidia-uvm" in f.title and "CUDA" in f.title
    assert "nvidia_331_updates_uvm" in f.detail and "modprobe nvidia-uvm" in f.detail
    assert f.fix is not None and any("alias nvidia-uvm nvidia_331_updates_uvm" in c for c in f.fix.commands)


def test_an_alias_to_a_module_not_installed_for_this_kernel_is_said() -> None:
    found = _findings({DKMS + "nvidia_375_uvm.ko": "",
                       "/etc/modprobe.d/bumblebee.conf": "alias nvidia-uvm nvidia_340_uvm\n"})
    assert [f.severity for f in found] == ["warning"]
    assert "nvidia_340_uvm" in found[0].detail and "not installed" in found[0].detail


def test_uvm_module_without_nvidia_modprobe_is_said() -> None:
    found = _findings({DKMS + "nvidia-uvm.ko": ""})
    assert [f.severity for f in found] == ["warning"]
    f = found[0]
    assert "nvidia-modprobe" in f.title and "nvidia-uvm" in f.title
    assert f.fix is not None and "sudo modprobe nvidia-uvm" in f.fix.commands


@pytest.mark.parametrize("files,dev", [
    (dict({DKMS + "nvidia-uvm.ko.zst": ""}, **HELPER), AFTER_BOOT),         # CUDA loads it on first use
    (dict({DKMS + "nvidia_331_updates_uvm.ko": "",                          # the package's alias resolves it
           "/etc/modprobe.d/nvidia-graphics-drivers.conf": UBUNTU_ALIASES}, **HELPER), AFTER_BOOT),
    ({DKMS + "nvidia-uvm.ko": ""}, AFTER_BOOT + ["nvidia-uvm", "nvidia-uvm-tools"]),  # loaded: its node is there
    ({}, AFTER_BOOT),                                   # the module's files not seen: nothing says it cannot load
])
def test_quiet_where_the_uvm_module_loads_or_is_loaded(files: Dict[str, str], dev: List[str]) -> None:
    assert _findings(files, dev) == []


def test_loaded_uvm_module_is_not_judged_by_its_files() -> None:
    from envdoctor.checks.driver_health import driver_health

    host = healthy_550(files={DKMS + "nvidia_331_updates_uvm.ko": ""},
                       dirs={"/dev": AFTER_BOOT, "/sys/module/nvidia_uvm": ["version"]})
    facts = probe_facts(host)
    assert facts.value("driver.uvm_module")["loaded"] is True
    assert [f for f in driver_health(CheckContext(facts, [])) if f.code == "driver.device_nodes_missing"] == []


def test_hostile_modprobe_configuration_never_crashes() -> None:
    junk = "alias nvidia-uvm\nalias nvidia-uvm \x00\xff nvidia\nalias\tnvidia_uvm\t" + "x" * 5000 + "\n"
    found = _findings({DKMS + "nvidia_390_uvm.ko.xz": "", "/etc/modprobe.d/junk.conf": junk})
    assert [f.severity for f in found] == ["warning"]  # no alias names an installed module: still said, no crash


def test_the_bumblebee_machine_with_its_module_files_shown() -> None:
    """The B78 Ubuntu 14.04 laptop as the thread describes it, the files its record leaves out added: Ubuntu's
    renamed uvm module for the running kernel and bumblebee's modprobe file without the alias."""
    doc = corpus_snapshot("b78-ubuntu1404-optimus-gtx765m-bumblebee-nvidia-331-updates-33113-uvm-module-name-not-found")
    assert [f for f in snapshot_findings(doc) if f.code == "driver.device_nodes_missing"] == []  # as recorded
    base = "/lib/modules/3.13.0-43-generic"
    doc["files"][base + "/updates/dkms/nvidia_331_updates_uvm.ko"] = {"text": ""}
    doc["files"]["/etc/modprobe.d/bumblebee.conf"] = {"text": "blacklist nvidia-331-updates\nalias nvidia "
                                                               "nvidia-331-updates\n"}
    for parent, child in ((base + "/updates", "dkms"), (base, "updates"), ("/lib/modules", "3.13.0-43-generic"),
                          ("/lib", "modules"), (base + "/updates/dkms", "nvidia_331_updates_uvm.ko"),
                          ("/etc/modprobe.d", "bumblebee.conf"), ("/etc", "modprobe.d")):
        entries = doc["dirs"].setdefault(parent, {"entries": []})["entries"]
        if child not in entries:
            entries.append(child)
    found = [f for f in snapshot_findings(doc) if f.code == "driver.device_nodes_missing"]
    assert [f.severity for f in found] == ["warning"] and "nvidia-uvm" in found[0].title

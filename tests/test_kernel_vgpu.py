"""A vGPU that did not start (Xid 78, VGPU_START_ERROR): the kernel log's reason, read against NVIDIA's catalog.

The lines are the open kernel modules' own (595.45.04): gpu.c logs Xid 78 with "Guest driver is incompatible with
host driver" when the host's vGPU manager refuses the guest driver's version (NV_ERR_LIB_RM_VERSION_MISMATCH),
rpc.c with "vGPU type is not supported"; NVIDIA's Xid catalog names both texts as Xid 78's reasons.
"""

from __future__ import annotations

from typing import Any, Dict

from envdoctor import matrix
from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok
from tests.test_kernel_catalog import _host_facts

BUS = "0002:00:00.0"
A10 = "10de:2236"
INCOMPATIBLE = ["NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08  Release Build  "
                "(dvs-builder@U16-I3-B03-4-3)",
                "NVRM: Xid (PCI:0002:00:00): 78, Guest driver is incompatible with host driver"]


def _found(facts: Facts) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(facts, []))}


def test_xid_78_is_a_vgpu_that_did_not_start_not_an_applications_error() -> None:
    xid = next(r for r in matrix.load("kernel_messages") if r.get("xid") == 78)
    assert xid["mnemonic"] == "VGPU_START_ERROR" and xid["code"] == "gpu.init_failed"
    assert xid["class"] == "failure" and xid["severity"] == "error"


def test_a_guest_driver_the_host_refuses_is_named_with_its_version() -> None:
    found = _found(_host_facts(BUS, A10, INCOMPATIBLE, count=0, version="535.161.08"))
    f = found["driver.vgpu_guest_incompatible_with_host"]
    assert f.severity == "error" and BUS in f.title and "535.161.08" in f.title
    assert "vGPU" in f.title and "guest driver of the host's NVIDIA vGPU software release" in f.fix.text
    # one root cause, one finding: no missing GPU, no generic init failure, no "application's error"
    assert not {"gpu.missing", "gpu.init_failed", "gpu.xid_application_error"} & set(found)


def test_a_refused_guest_driver_is_history_once_the_vgpu_answers() -> None:
    facts = _host_facts(BUS, A10, INCOMPATIBLE, count=1, version="570.172.08",
                        **{"gpu.0.pci_bus_id": "00000002:00:00.0"})
    found = _found(facts)
    assert not {"driver.vgpu_guest_incompatible_with_host", "gpu.init_failed", "gpu.missing",
                "gpu.xid_application_error"} & set(found)


def test_an_unsupported_vgpu_type_is_a_failed_initialisation_with_its_reason() -> None:
    log = ["NVRM: Xid (PCI:0002:00:00): 78, vGPU type is not supported"]
    found = _found(_host_facts(BUS, A10, log, count=0, version="570.172.08"))
    f = found["gpu.init_failed"]
    assert f.severity == "error" and "vGPU type is not supported" in f.title
    assert "vGPU type" in f.fix.text and "driver.vgpu_guest_incompatible_with_host" not in found


def test_an_xid_78_with_another_text_says_the_vgpu_did_not_start() -> None:
    log = ["NVRM: Xid (PCI:0002:00:00): 78, pid=1234, name=nvidia-smi, VGPU_START_ERROR"]
    found = _found(_host_facts(BUS, A10, log, count=0, version="570.172.08"))
    f = found["gpu.init_failed"]
    assert "vGPU did not start" in f.detail and "Above 4G" not in f.fix.text


def test_an_ordinary_gpu_without_the_line_is_not_called_a_vgpu() -> None:
    log = ["NVRM: Xid (PCI:0000:01:00): 13, pid=1896, name=python3, Graphics Exception: ESR 0x504648=0x2000"]
    facts = Facts([ok("gpu.count", 1, "nvml:device_count"), ok("driver.kernel_log", log, "command:dmesg"),
                   ok("driver.kernel_module.loaded", True, "file:/proc"),
                   ok("gpu.pci_devices", [{"bus_id": "0000:01:00.0", "driver": "nvidia"}], "dir:/sys"),
                   ok("gpu.0.pci_bus_id", "00000000:01:00.0", "nvml:device.0.pci_bus_id")])
    assert "driver.vgpu_guest_incompatible_with_host" not in _found(facts)

"""The GPU probe on miniature machines: NVML answers as the worker writes them, and the PCI bus and
/proc/driver/nvidia files as the kernel writes them."""

from __future__ import annotations

import pytest

from envdoctor.probes import ProbeContext
from envdoctor.probes.gpu import architecture_of, bandwidth_gbps, clock_event_reason_names, probe_gpu

from .conftest import make_host

PCI = "/sys/bus/pci/devices"

# /proc/driver/nvidia/gpus/0000:01:00.0/information of an RTX 3090 (driver 590), quoted as a real block
# in a gpu_dashboard test (tests for proc_deep_state, found with the code search).
INFO_3090 = """Model: \t\t NVIDIA GeForce RTX 3090
IRQ:   \t\t 77
GPU UUID: \t GPU-eaf23aa1-4d3d-596c-da66-b86b0e5db584
Video BIOS: \t 94.02.26.40.81
Bus Type: \t PCI
DMA Size: \t 47 bits
DMA Mask: \t 0x7fffffffffff
Bus Location: \t 0000:01:00.0
Device Minor: \t 0
GPU Firmware: \t 590.48.01
GPU Excluded:\t No
"""

# The same file when the kernel driver cannot talk to the GPU (GT 1030 passed to a Kata VM):
# https://github.com/kata-containers/runtime/issues/2546
INFO_UNKNOWN = """Model: \t\t Unknown
IRQ:   \t\t 35
GPU UUID: \t ??????????????????????????????????????
Video BIOS: \t ??.??.??.??.??
Bus Type: \t PCIe
DMA Size: \t 47 bits
DMA Mask: \t 0x7fffffffffff
Bus Location: \t 0000:00:08.0
Device Minor: \t 0
Blacklisted:\t No
"""


def pci_files(bus, device, cls="0x030000", vendor="0x10de"):
    # sysfs writes these one value per line, e.g. vendor "0x10de\n", class "0x030000\n" (VGA) or
    # "0x030200\n" (3D controller); the driver link target as in
    # https://github.com/nokyan/resources/issues/488 ("driver -> ../../../../bus/pci/drivers/nouveau").
    base = f"{PCI}/{bus}/"
    return {base + "vendor": vendor + "\n", base + "class": cls + "\n", base + "device": device + "\n"}


def driver_link(bus, driver):
    return {f"{PCI}/{bus}/driver": f"../../../../bus/pci/drivers/{driver}"}


def facts_of(host):
    return {f.key: f for f in probe_gpu(ProbeContext(host))}


NO_LIB = {"data": {"init": {"error": "NVML_ERROR_LIBRARY_NOT_FOUND", "code": 12}}}


def test_no_nvidia_gpu_is_one_clear_fact_not_a_wall_of_unknowns():
    # An Intel iGPU (vendor 0x8086) only.
    host = make_host(files=pci_files("0000:00:02.0", "0x9a49", vendor="0x8086"), nvml=NO_LIB)
    facts = facts_of(host)
    assert facts["gpu.count"].value == 0
    assert facts["gpu.status"].value == "no NVIDIA GPU found"
    assert facts["gpu.pci_devices"].value == []
    assert not [f for f in facts.values() if f.status != "ok"]


def test_gpu_held_by_nouveau_is_reported_with_model_and_bus_when_nvml_is_missing():
    files = pci_files("0000:01:00.0", "0x2204")  # GA102, RTX 3090
    # The card's HDMI audio function is no GPU.
    files.update(pci_files("0000:01:00.1", "0x1aef", cls="0x040300"))
    host = make_host(files=files, links=driver_link("0000:01:00.0", "nouveau"), nvml=NO_LIB)
    facts = facts_of(host)
    assert facts["gpu.pci_devices"].value == [{"bus_id": "0000:01:00.0", "device_id": "10de:2204",
                                               "driver": "nouveau"}]
    assert facts["gpu.count"].value == 1
    assert facts["gpu.0.driver"].value == "nouveau"
    assert facts["gpu.status"].status == "unknown"
    assert "driver not working" in facts["gpu.status"].reason and "not found" in facts["gpu.status"].reason


def test_driver_mismatch_falls_back_to_proc_information():
    files = pci_files("0000:01:00.0", "0x2204")
    files["/proc/driver/nvidia/gpus/0000:01:00.0/information"] = INFO_3090
    nvml = {"data": {"init": {"error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "code": 18}}}
    host = make_host(files=files, links=driver_link("0000:01:00.0", "nvidia"), nvml=nvml)
    facts = facts_of(host)
    assert facts["gpu.0.name"].value == "NVIDIA GeForce RTX 3090"
    assert facts["gpu.0.uuid"].value == "GPU-eaf23aa1-4d3d-596c-da66-b86b0e5db584"
    assert facts["gpu.0.pci_bus_id"].value == "0000:01:00.0"
    assert "reboot" in facts["gpu.status"].reason


def test_kernel_driver_that_cannot_talk_to_the_gpu():
    files = pci_files("0000:00:08.0", "0x1d01")
    files["/proc/driver/nvidia/gpus/0000:00:08.0/information"] = INFO_UNKNOWN
    nvml = {"data": {"init": {"error": "NVML_ERROR_UNKNOWN", "code": 999}}}
    facts = facts_of(make_host(files=files, links=driver_link("0000:00:08.0", "nvidia"), nvml=nvml))
    assert facts["gpu.0.name"].status == "unknown" and "Unknown" in facts["gpu.0.name"].reason
    assert "gpu.0.uuid" not in facts  # "????..." is no UUID


def test_nvml_timeout_is_a_timed_out_status():
    files = pci_files("0000:18:00.0", "0x2330", cls="0x030200")
    nvml = {"error": "timed_out", "message": "NVML did not answer within 10.0s (driver hung or GPU lost?)"}
    facts = facts_of(make_host(files=files, links=driver_link("0000:18:00.0", "nvidia"), nvml=nvml))
    assert facts["gpu.status"].status == "timed_out"
    assert facts["gpu.count"].value == 1


def h100_nvml(**over):
    # Keys and value shapes as envdoctor/host/nvml_worker.py writes them; values of an H100 SXM
    # (see tests/fakenvml/h100.json for the sources).
    data = {
        "init": {"value": True}, "device_count": {"value": 1}, "device.0.handle": {"value": True},
        "device.0.name": {"value": "NVIDIA H100 80GB HBM3"},
        "device.0.pci": {"value": {"busIdLegacy": "0000:18:00.0", "domain": 0, "bus": 24, "device": 0,
                                   "pciDeviceId": 0x233010DE, "pciSubSystemId": 0, "busId": "00000000:18:00.0"}},
        "device.0.compute_capability": {"value": [9, 0]},
        "device.0.memory_bus_width": {"value": 5120}, "device.0.max_clock_mem": {"value": 2619},
        "device.0.attributes": {"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3},
        "device.0.clock_event_reasons": {"value": 0x1 | 0x4},
        "device.0.power_limit": {"value": 700000},
        "device.0.temperature": {"error": "NVML_ERROR_GPU_IS_LOST", "code": 15},
    }
    data.update(over)
    return {"data": data}


def test_nvml_fields_become_typed_facts_and_errors_keep_their_names():
    facts = facts_of(make_host(nvml=h100_nvml()))
    assert facts["gpu.0.pci_device_id"].value == "10de:2330"
    assert facts["gpu.0.architecture"].value == "Hopper"
    assert facts["gpu.0.memory_bandwidth_gbps"].value == 3352.3
    assert facts["gpu.0.power_limit_watts"].value == 700.0
    assert facts["gpu.0.clock_event_reasons"].value == ["GPU idle", "SW power cap"]
    assert facts["gpu.0.sm_count"].status == "not_supported"
    assert facts["gpu.0.temperature_celsius"].status == "unknown"
    assert "GPU_IS_LOST" in facts["gpu.0.temperature_celsius"].reason


def test_garbled_nvml_answers_are_unknown_never_a_crash():
    nvml = h100_nvml(**{"device.0.compute_capability": {"value": "9.0"},
                        "device.0.memory_bus_width": {"value": -1},
                        "device.0.name": {"value": ""},
                        "device.0.architecture": {"value": 9}})
    facts = facts_of(make_host(nvml=nvml))
    assert facts["gpu.0.compute_capability"].status == "unknown"
    assert facts["gpu.0.architecture"].value == "Hopper"  # from NVML's enum instead
    assert facts["gpu.0.memory_bandwidth_gbps"].status == "unknown"
    assert facts["gpu.0.name"].status == "unknown"


def test_gpu_count_error_and_lost_handle():
    facts = facts_of(make_host(nvml={"data": {"init": {"value": True},
                                              "device_count": {"error": "NVML_ERROR_UNKNOWN", "code": 999}}}))
    assert facts["gpu.count"].status == "unknown" and "NVML_ERROR_UNKNOWN" in facts["gpu.count"].reason
    nvml = h100_nvml(**{"device.0.handle": {"error": "NVML_ERROR_GPU_IS_LOST", "code": 15}})
    facts = facts_of(make_host(nvml=nvml))
    assert facts["gpu.0.name"].status == "unknown" and "reset" in facts["gpu.0.name"].reason


def test_an_absurd_gpu_count_is_garbled_not_a_machine():
    # nvmlDeviceGetCount cannot exceed the driver's NV_MAX_DEVICES (32); a snapshot saying 10**12 was
    # damaged or made up, and its number must not size anything downstream.
    facts = facts_of(make_host(nvml=h100_nvml(device_count={"value": 10**12})))
    assert facts["gpu.count"].status == "unknown"
    assert "1000000000000 GPUs" in facts["gpu.count"].reason and "garbled" in facts["gpu.count"].reason
    assert facts["gpu.status"].status == "unknown"
    assert not any(k.startswith("gpu.0.") for k in facts)
    facts = facts_of(make_host(nvml=h100_nvml(device_count={"value": 32})))  # the driver's own limit is fine
    assert facts["gpu.count"].value == 32


@pytest.mark.parametrize("bus_bits,clock_mhz,spec_gbps", [
    (5120, 2619, 3350),   # H100 SXM5 HBM3, NVIDIA: 3.35 TB/s; clock: NVIDIA/DCGM#120
    (384, 10501, 1008),   # RTX 4090 GDDR6X, NVIDIA: 1008 GB/s; clock: NVIDIA/nvbench#207
    (5120, 1215, 1555),   # A100-SXM4-40GB HBM2, NVIDIA: 1555 GB/s; clock: NVIDIA/nvidia-docker#1648
    (4096, 715, 732),     # Tesla P100 HBM2, NVIDIA: 732 GB/s; clock: NVIDIA/nvidia-docker#1316
])
def test_bandwidth_formula_matches_nvidia_spec_sheets(bus_bits, clock_mhz, spec_gbps):
    assert bandwidth_gbps(bus_bits, clock_mhz) == pytest.approx(spec_gbps, rel=0.01)


@pytest.mark.parametrize("cc,arch", [("3.7", "Kepler"), ("6.0", "Pascal"), ("7.0", "Volta"), ("7.5", "Turing"),
                                     ("8.6", "Ampere"), ("8.9", "Ada Lovelace"), ("9.0", "Hopper"),
                                     ("10.0", "Blackwell"), ("11.0", "Blackwell"), ("12.0", "Blackwell"),
                                     ("7.1", None), ("garbage", None)])
def test_architecture_from_compute_capability(cc, arch):
    assert architecture_of(cc) == arch


def test_clock_event_reasons_decode_all_bits():
    assert clock_event_reason_names(0) == []
    assert clock_event_reason_names(0x8 | 0x40) == ["HW slowdown", "HW thermal slowdown"]
    assert clock_event_reason_names(0x1000) == ["unknown reason bits 0x1000"]

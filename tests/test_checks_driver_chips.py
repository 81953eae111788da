"""A GPU's generation from its PCI ID when NVML cannot say, and Xids as symptoms of a GPU the driver cannot drive.

The chip table (envdoctor/matrix/data/gpu_chips.json) holds NVIDIA's own device-ID ranges (gpu-admin-tools'
GPU_DEVID_CHIPS, the open modules' detect-self-hosted.h). The kernel-log lines below are built from the catalog's
samples (the format strings of NVIDIA's driver, kernel_messages.json) with the machines' own addresses; the facts
are those the driver probe records from /proc/driver/nvidia/version, modinfo and dpkg (no GPU runs here).
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from envdoctor import matrix
from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Fact, Facts, ok
from envdoctor.matrix import hardware as hw
from envdoctor.matrix import kernel


def _sample(row_id: str, bus: str) -> str:
    row = next(r for r in matrix.load("kernel_messages") if r["id"] == row_id)
    return str(row["sample"]).replace("0000:01:00.0", bus).replace("PCI:0000:01:00", "PCI:" + bus[:-2])


def _init_failed_then_xid(bus: str, xid: int = 169) -> List[str]:
    return [_sample("rm_init_adapter_failed", bus), _sample("xid_%d" % xid, bus)]


def _facts(bus: str, device: str, log: Any, flavor: str = "proprietary", loaded: bool = True,
           packages: Any = None) -> Facts:
    facts = [ok("driver.installed", True, "file:/proc/driver/nvidia/version"),
             ok("driver.kernel_module.loaded", loaded, "file:/proc/driver/nvidia/version"),
             ok("gpu.pci_devices", [{"bus_id": bus, "driver": "nvidia" if loaded else None, "device_id": device}],
                "dir:/sys/bus/pci/devices")]
    if loaded:
        facts += [ok("driver.kernel_module.version", "580.173.02", "file:/proc/driver/nvidia/version"),
                  ok("driver.kernel_module.flavor", flavor, "file:/proc/driver/nvidia/version"),
                  Fact("driver.nvml.status", "NVML_ERROR_UNKNOWN", "nvml:init", "ok", "no device"),
                  ok("gpu.count", 0, "nvml:device_count")]
    else:
        facts += [Fact("driver.nvml.status", "NVML_ERROR_DRIVER_NOT_LOADED", "nvml:init", "ok", "not loaded"),
                  ok("driver.module_on_disk.version", "580.173.02", "command:modinfo -F version nvidia")]
    if packages is not None:
        facts.append(ok("cuda.packages", packages, "file:/var/lib/dpkg/status"))
    if isinstance(log, list):
        facts.append(ok("driver.kernel_log", log, "command:dmesg"))
    return Facts(facts)


def _found(facts: Facts) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(facts, []))}


GB10 = ("000f:01:00.0", "10de:2e12")  # DGX Spark: NVML names no GPU while the proprietary module refuses it


def test_gb10_on_the_proprietary_module_is_told_to_install_the_open_one_not_to_reset_it() -> None:
    found = _found(_facts(*GB10, _init_failed_then_xid(GB10[0])))
    f = found["driver.open_modules_required"]
    assert f.severity == "error" and "GB10" in f.title and "Blackwell" in f.title and "proprietary" in f.title
    assert "open" in f.fix.text and "nvidia-driver-XXX-open" in f.fix.text
    # the Xid 169 is a symptom of the refused GPU: no reset is prescribed
    assert "gpu.reset_required" not in found


def test_the_xid_yields_also_when_the_kernel_names_the_cause_itself() -> None:
    log = [_sample("open_modules_required", GB10[0])] + _init_failed_then_xid(GB10[0])
    found = _found(_facts(*GB10, log))
    assert found["driver.open_modules_required"].severity == "error" and "gpu.reset_required" not in found


@pytest.mark.parametrize("xid,code", [(169, "gpu.reset_required"), (119, "gpu.reset_required")])
def test_blackwell_on_the_open_module_keeps_its_xid(xid: int, code: str) -> None:
    # the open flavour drives Blackwell: an init failure with an Xid is not a flavour problem, the Xid stands
    found = _found(_facts(*GB10, _init_failed_then_xid(GB10[0], xid), flavor="open"))
    assert "driver.open_modules_required" not in found and found[code].severity == "error"


@pytest.mark.parametrize("device", ["10de:2330", "10de:2342", "10de:2684"])  # H100 SXM, GH200, RTX 4090
def test_hopper_and_ada_on_the_proprietary_module_stay_quiet_and_keep_their_xid(device: str) -> None:
    found = _found(_facts("0000:01:00.0", device, _init_failed_then_xid("0000:01:00.0")))
    assert "driver.open_modules_required" not in found
    assert found["gpu.reset_required"].severity == "error"


def test_a_blackwell_known_only_by_its_device_id_range_with_the_module_never_loaded() -> None:
    # RTX 5090 D (10de:2b87): its name matches no product row; NVIDIA's GB202 range (0x2B80-0x2BFF) says Blackwell;
    # the module never loaded and the proprietary flavour is read from the installed package
    pkgs = [{"name": "nvidia-dkms-580", "version": "580.95.05-0ubuntu1"},
            {"name": "nvidia-driver-580", "version": "580.95.05-0ubuntu1"}]
    found = _found(_facts("0000:01:00.0", "10de:2b87", None, loaded=False, packages=pkgs))
    f = found["driver.open_modules_required"]
    assert f.severity == "error" and "nvidia-dkms-580" in f.title and "GB202" in f.detail
    pkgs = [{"name": "nvidia-dkms-580-open", "version": "580.95.05-0ubuntu1"}]
    assert "driver.open_modules_required" not in _found(_facts("0000:01:00.0", "10de:2b87", None, loaded=False,
                                                                packages=pkgs))


H100 = ("0000:01:00.0", "10de:2330")  # H100 80GB HBM3: the proprietary module drives it
RTX5090 = ("0000:41:00.0", "10de:2b85")  # GeForce RTX 5090 (Blackwell): the proprietary module refuses it


def _mixed(log: List[str], h100_driven: bool) -> Facts:
    """An H100 and an RTX 5090 under the proprietary 580 module: NVML answers for the H100 only (it drives it), or,
    failing to start, for neither."""
    facts = [ok("driver.installed", True, "file:/proc/driver/nvidia/version"),
             ok("driver.kernel_module.loaded", True, "file:/proc/driver/nvidia/version"),
             ok("driver.kernel_module.version", "580.173.02", "file:/proc/driver/nvidia/version"),
             ok("driver.kernel_module.flavor", "proprietary", "file:/proc/driver/nvidia/version"),
             ok("gpu.pci_devices", [{"bus_id": bus, "driver": "nvidia", "device_id": device}
                                    for bus, device in (H100, RTX5090)], "dir:/sys/bus/pci/devices"),
             ok("driver.kernel_log", log, "command:dmesg")]
    if h100_driven:
        facts += [ok("gpu.count", 1, "nvml:device_count"),
                  ok("gpu.0.pci_bus_id", "00000000:01:00.0", "nvml:nvmlDeviceGetPciInfo"),
                  ok("gpu.0.name", "NVIDIA H100 80GB HBM3", "nvml:nvmlDeviceGetName"),
                  ok("gpu.0.compute_capability", "9.0", "nvml:nvmlDeviceGetCudaComputeCapability")]
    else:
        facts += [Fact("driver.nvml.status", "NVML_ERROR_UNKNOWN", "nvml:init", "ok", "no device"),
                  ok("gpu.count", 0, "nvml:device_count")]
    return Facts(facts)


def _refusal(bus: str, device: str) -> List[str]:
    """The proprietary module's refusal of a Blackwell GPU as the driver prints it (two lines, the first naming the
    GPU: the form tests/test_kernel_catalog.py's BLACKWELL_PROPRIETARY quotes from a real machine)."""
    return ["NVRM: The NVIDIA GPU %s (PCI ID: %s)" % (bus, device),
            "               " + _sample("open_modules_required", bus)]


@pytest.mark.parametrize("named", [False, True], ids=["cause-from-what-is-installed", "cause-in-the-kernel-log"])
@pytest.mark.parametrize("xid,code", [(94, "gpu.xid_memory_error"), (74, "gpu.xid_interconnect_error")])
def test_a_refused_blackwell_beside_a_driven_h100_keeps_the_h100s_xid(named: bool, xid: int, code: str) -> None:
    # the RTX 5090's Xid 169 is a symptom of the proprietary module refusing it; the H100's Xid is its own fault
    log = (_refusal(*RTX5090) if named else []) + [_sample("xid_%d" % xid, H100[0])]
    found = run_checks(CheckContext(_mixed(log + _init_failed_then_xid(RTX5090[0]), h100_driven=True), []))
    cause = [f for f in found if f.code == "driver.open_modules_required"]
    assert len(cause) == 1 and RTX5090[0] in cause[0].title and cause[0].severity == "error"
    xids = [f for f in found if f.code == code]
    assert len(xids) == 1 and H100[0] in xids[0].title and "Xid %d" % xid in xids[0].title
    assert xids[0].severity == "warning" and RTX5090[0][5:] not in xids[0].detail  # history: the H100 answers now
    assert not [f for f in found if f.code == "gpu.reset_required"]  # nothing prescribes resetting the RTX 5090


@pytest.mark.parametrize("named", [False, True], ids=["cause-from-what-is-installed", "cause-in-the-kernel-log"])
def test_a_refused_blackwell_beside_a_failing_h100_keeps_the_h100s_reset(named: bool) -> None:
    # NVML answers for neither: the H100's GSP timeout (Xid 119) needs a reset now; the RTX 5090's Xid 169 does not
    log = (_refusal(*RTX5090) if named else []) + [_sample("xid_119", H100[0])]
    found = run_checks(CheckContext(_mixed(log + _init_failed_then_xid(RTX5090[0]), h100_driven=False), []))
    cause = [f for f in found if f.code == "driver.open_modules_required"]
    assert len(cause) == 1 and RTX5090[0] in cause[0].title
    resets = [f for f in found if f.code == "gpu.reset_required"]
    assert len(resets) == 1 and resets[0].severity == "error" and H100[0] in resets[0].title
    assert "Xid 119" in resets[0].title and "169" not in resets[0].title


def test_every_chip_range_agrees_with_the_product_names_nvidias_lists_give_its_devices() -> None:
    # the walk: each device of the open modules' list that a chip range covers and whose name is a known product
    # is of the range's architecture (the two NVIDIA sources never disagree), and each range covers a listed GPU
    from envdoctor.matrix.gpu_support import cc_of_name as _cc_of_name

    opened = next(r for r in matrix.load("gpu_pci_ids") if r["list"] == "open")["devices"]
    covered = set()
    for dev, name in opened.items():
        chip = kernel.chip_of(dev)
        if chip is None:
            continue
        covered.add(chip.chip)
        cc = _cc_of_name(name)
        if cc is not None:
            assert hw.arch_for_cc(cc)["arch"] == chip.arch, (dev, name, chip)
    assert {r["chip"] for r in matrix.load("gpu_chips")} - covered <= {"GB102", "GB112"}  # no listed GPU yet
    assert kernel.chip_of("10de:1b80") is None  # a Pascal: no range, never guessed


def test_the_chip_validator_rejects_overlapping_and_malformed_ranges() -> None:
    src = {"url": "https://example.invalid"}
    rows = [{"first": "2b80", "last": "2bff", "chip": "A", "arch": "Blackwell", "source": src},
            {"first": "2b00", "last": "2b90", "chip": "B", "arch": "Blackwell", "source": src},
            {"first": "2B80", "last": "2bff", "chip": "C", "arch": "Blackwell", "source": src}]
    problems = kernel.validate_gpu_chips(rows)
    assert any("overlaps" in p for p in problems) and any("hex" in p for p in problems)
    assert kernel.validate_gpu_chips(matrix.load("gpu_chips")) == []

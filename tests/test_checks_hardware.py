"""GPU hardware checks, on miniature machines whose NVML answers have the shapes the NVML worker records."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.hardware import gpu_health

from .conftest import make_host, probe_facts
from .test_probe_gpu import h100_nvml

GIB = 1024 ** 3


def findings(**over):
    facts = probe_facts(make_host(nvml=h100_nvml(**over)))
    return {f.code: f for f in gpu_health(CheckContext(facts, []))}


def busy(percent=97):
    # nvmlDeviceGetUtilizationRates -> {"gpu": %, "memory": %}; no "GPU idle" bit when busy.
    return {"device.0.utilization": {"value": {"gpu": percent, "memory": 40}},
            "device.0.clock_event_reasons": {"value": 0x0}}


def pcie(gen, gmax, width=16, wmax=16):
    return {"device.0.pcie_gen_current": {"value": gen}, "device.0.pcie_gen_max": {"value": gmax},
            "device.0.pcie_width_current": {"value": width}, "device.0.pcie_width_max": {"value": wmax}}


def test_busy_gpu_on_a_slow_link_is_flagged():
    f = findings(**busy(), **pcie(3, 5, 8, 16))["gpu.pcie_link_degraded"]
    assert f.severity == "warning" and "Gen3 x8" in f.title and "Gen5 x16" in f.title
    assert "lspci" in " ".join(f.fix.commands)


def test_idle_gpu_lowering_its_link_is_quiet():
    # NVML idle state: utilization 0 and the GPU-idle reason bit (0x1): Gen1 is power saving.
    idle = {"device.0.utilization": {"value": {"gpu": 0, "memory": 0}}, "device.0.clock_event_reasons": {"value": 1}}
    assert "gpu.pcie_link_degraded" not in findings(**idle, **pcie(1, 5))
    assert "gpu.pcie_link_degraded" not in findings(**busy(), **pcie(5, 5))


def test_small_display_gpu_is_noted_and_big_or_headless_is_quiet():
    small = {"device.0.display_active": {"value": 1}, "device.0.memory": {"value": {"total": 6 * GIB}}}
    f = findings(**small)["gpu.display_small_memory"]
    assert f.severity == "info" and "6.0 GiB" in f.title
    assert "gpu.display_small_memory" not in findings(**dict(small, **{"device.0.display_active": {"value": 0}}))
    big = dict(small, **{"device.0.memory": {"value": {"total": 80 * GIB}}})
    assert "gpu.display_small_memory" not in findings(**big)


def test_uncorrectable_ecc_is_an_error_and_zero_is_quiet():
    f = findings(**{"device.0.ecc_volatile_uncorrected": {"value": 2}})["gpu.ecc_uncorrectable"]
    assert f.severity == "error" and "sudo nvidia-smi -r -i 0" in f.fix.commands
    assert "gpu.ecc_uncorrectable" not in findings(**{"device.0.ecc_volatile_uncorrected": {"value": 0}})


def test_thermal_slowdown_warns_power_cap_informs_idle_is_quiet():
    hot = findings(**{"device.0.utilization": {"value": {"gpu": 99, "memory": 50}},
                      "device.0.clock_event_reasons": {"value": 0x40 | 0x8}})
    assert hot["gpu.throttled"].severity == "warning" and "HW thermal slowdown" in hot["gpu.throttled"].title
    capped = findings(**{"device.0.utilization": {"value": {"gpu": 99, "memory": 50}},
                         "device.0.clock_event_reasons": {"value": 0x4}})
    assert capped["gpu.power_capped"].severity == "info" and "gpu.throttled" not in capped
    # h100_nvml's default: GPU idle + SW power cap -> nothing.
    quiet = findings()
    assert "gpu.power_capped" not in quiet and "gpu.throttled" not in quiet

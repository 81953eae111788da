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


# -- GPU memory repair and MIG ---------------------------------------------------------------------------
# The healthy answers are the real H100's (tests/live/h100-ubuntu2404-container/vendor-tools.txt,
# `nvidia-smi -q`): Remapped Rows 0 / 0 / Pending No / Remapping Failure Occurred No, Retired Pages N/A
# (an H100 remaps rows instead: NVML answers NOT_SUPPORTED), MIG Disabled.
H100_MEMORY = {"device.0.remapped_rows": {"value": [0, 0, 0, 0]},
               "device.0.retired_pages_pending": {"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3},
               "device.0.retired_pages_sbe": {"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3},
               "device.0.retired_pages_dbe": {"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3},
               "device.0.mig_mode": {"value": [0, 0]}}
MEMORY_CODES = {"gpu.row_remap_pending", "gpu.row_remap_failed", "gpu.retired_pages_pending",
                "gpu.retired_pages_limit", "gpu.mig_no_instances", "gpu.mig_mode_pending"}


def memory(**over):
    return findings(**dict(H100_MEMORY, **over))


def test_the_healthy_h100_has_no_memory_or_mig_finding():
    assert not MEMORY_CODES & set(memory())
    # a snapshot from before these questions, and a GPU that answers none of them (GeForce), are quiet too
    assert not MEMORY_CODES & set(findings())
    na = {"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3}
    assert not MEMORY_CODES & set(findings(**{k: na for k in H100_MEMORY}))


def test_rows_waiting_for_a_reset_warn_and_say_how_many():
    # The A100 of leptonai/gpud#80: "Uncorrectable Error : 4 / Pending : Yes".
    f = memory(**{"device.0.remapped_rows": {"value": [0, 4, 1, 0]}})
    assert "gpu.row_remap_failed" not in f
    pending = f["gpu.row_remap_pending"]
    assert pending.severity == "warning" and "reset" in pending.title and "4 row(s)" in pending.title
    assert "sudo nvidia-smi -r -i 0" in pending.fix.commands
    assert "nvidia-smi -q -d ROW_REMAPPER -i 0" in pending.fix.commands


def test_rows_pending_after_correctable_errors_alone_are_info_not_a_warning():
    # NVIDIA's "Error Recovery and Response Flags" page: with the pending flag set, "unaffected applications can
    # continue running without affecting accuracy and performance, and new workloads can be launched". One row
    # remapped for a correctable error, none for uncorrectable ones, no uncorrected error counted: a reset when
    # convenient, not a fault.
    f = memory(**{"device.0.remapped_rows": {"value": [1, 0, 1, 0]}})
    pending = f["gpu.row_remap_pending"]
    assert pending.severity == "info" and "when convenient" in pending.title and "1 for correctable" in pending.title
    assert "sudo nvidia-smi -r -i 0" in pending.fix.commands
    # the same pending row with an uncorrectable remap beside it (the failing HBM of wtdcode/vllm-backport#62),
    # or counters that do not say the cause: still a warning
    assert memory(**{"device.0.remapped_rows": {"value": [1, 1, 1, 0]}})["gpu.row_remap_pending"].severity == "warning"
    assert memory(**{"device.0.remapped_rows": {"value": [0, 0, 1, 0]}})["gpu.row_remap_pending"].severity == "warning"


def test_a_failed_row_remapping_is_an_error_that_names_the_rma():
    f = memory(**{"device.0.remapped_rows": {"value": [1, 8, 0, 1]}})["gpu.row_remap_failed"]
    assert f.severity == "error" and "RMA" in f.detail and "RMA" in f.fix.text
    assert any(e["key"] == "gpu.0.remapped_rows_failure" and e["value"] is True for e in f.evidence)


def test_retired_pages_pending_a_reboot_warn_and_64_pages_are_an_error():
    pend = {"device.0.retired_pages_pending": {"value": 1},
            "device.0.retired_pages_sbe": {"value": [0x1000, 0x2000]},
            "device.0.retired_pages_dbe": {"value": [0x3000]}}
    f = memory(**pend)
    assert f["gpu.retired_pages_pending"].severity == "warning" and "reboot" in f["gpu.retired_pages_pending"].title
    assert "1 page(s) retired for double-bit and 2 for repeated single-bit" in f["gpu.retired_pages_pending"].title
    assert "gpu.retired_pages_limit" not in f
    full = {"device.0.retired_pages_pending": {"value": 0},
            "device.0.retired_pages_sbe": {"value": list(range(60))},
            "device.0.retired_pages_dbe": {"value": [1, 2, 3, 4]}}
    f = memory(**full)
    assert f["gpu.retired_pages_limit"].severity == "error" and "64" in f["gpu.retired_pages_limit"].title
    assert "gpu.retired_pages_pending" not in f
    assert "gpu.retired_pages_limit" not in memory(**dict(full, **{"device.0.retired_pages_sbe": {"value": [1]}}))


def test_mig_on_without_a_mig_device_is_an_error_with_the_commands_to_create_one():
    on = {"device.0.mig_mode": {"value": [1, 1]}}
    f = memory(**on, **{"device.0.mig_devices": {"value": {"max": 7, "present": 0}}})["gpu.mig_no_instances"]
    assert f.severity == "error" and "no CUDA-capable device" in f.detail
    assert any("nvidia-smi mig -cgi" in c and " -C" in c for c in f.fix.commands)
    assert "gpu.mig_no_instances" not in memory(**on, **{"device.0.mig_devices": {"value": {"max": 7, "present": 3}}})
    # MIG on, but a snapshot from before the question: not judged
    assert "gpu.mig_no_instances" not in memory(**on)


def test_a_mig_mode_change_waiting_for_a_reset_warns():
    f = memory(**{"device.0.mig_mode": {"value": [0, 1]}})["gpu.mig_mode_pending"]
    assert f.severity == "warning" and "off to on" in f.title and "sudo nvidia-smi -r -i 0" in f.fix.commands
    assert "gpu.mig_mode_pending" not in memory(**{"device.0.mig_mode": {"value": [1, 1]},
                                                   "device.0.mig_devices": {"value": {"max": 7, "present": 1}}})


def test_a_garbled_memory_answer_is_unknown_not_a_finding():
    facts = probe_facts(make_host(nvml=h100_nvml(**dict(H100_MEMORY, **{"device.0.remapped_rows": {"value": [1, 2]},
                                                                    "device.0.retired_pages_sbe": {"value": 7}}))))
    assert facts.get("gpu.0.remapped_rows_pending").status == "unknown"
    assert facts.get("gpu.0.retired_pages_sbe").status == "unknown"
    assert not MEMORY_CODES & {f.code for f in gpu_health(CheckContext(facts, []))}


def test_a_binding_older_than_the_call_is_not_supported_not_unknown():
    # nvidia-ml-py 11.450 (the oldest pyproject allows) may lack a call: the worker records the AttributeError
    old = {"error": "EXCEPTION", "message": "AttributeError: nvidia-ml-py has no nvmlDeviceGetRemappedRows"}
    facts = probe_facts(make_host(nvml=h100_nvml(**dict(H100_MEMORY, **{"device.0.remapped_rows": old}))))
    fact = facts.get("gpu.0.remapped_rows_pending")
    assert fact.status == "not_supported" and "nvidia-ml-py has no" in fact.reason
    # any other failure of the binding stays unknown, with its message
    broken = {"error": "EXCEPTION", "message": "ArgumentError: argument 2: wrong type"}
    facts = probe_facts(make_host(nvml=h100_nvml(**dict(H100_MEMORY, **{"device.0.remapped_rows": broken}))))
    assert facts.get("gpu.0.remapped_rows_pending").status == "unknown"


# -- BAR1 and GPUDirect RDMA ---------------------------------------------------------------------------------

T4_RESOURCE = ("0x00000000b4000000 0x00000000b4ffffff 0x0000000000040200\n"
               "0x0000381ff0000000 0x0000381fffffffff 0x000000000014220c\n"
               "0x0000381fee000000 0x0000381fefffffff 0x000000000014220c\n")


def rdma_findings(modules=("nv_peer_mem",), devices=("mlx5_0",), nvml_bar1=None, resource=T4_RESOURCE,
                  memory=16 * GIB, pci_in_nvml=True):
    over = {"device.0.memory": {"value": {"total": memory, "free": memory, "used": 0}}}
    if nvml_bar1 is not None:
        over["device.0.bar1"] = {"value": {"bar1Total": nvml_bar1, "bar1Free": nvml_bar1, "bar1Used": 0}}
    data = h100_nvml(**over)
    if not pci_in_nvml:
        del data["data"]["device.0.pci"]
    files = {"/sys/bus/pci/devices/0000:18:00.0/vendor": "0x10de\n",
             "/sys/bus/pci/devices/0000:18:00.0/class": "0x030200\n",
             "/sys/bus/pci/devices/0000:18:00.0/device": "0x1eb8\n"}
    if resource is not None:
        files["/sys/bus/pci/devices/0000:18:00.0/resource"] = resource
    for m in modules:
        files["/sys/module/%s/initstate" % m] = "live\n"
    for d in devices:
        files["/sys/class/infiniband/%s/node_type" % d] = "1: CA\n"
    facts = probe_facts(make_host(files=files, nvml=data))
    return facts, {f.code: f for f in gpu_health(CheckContext(facts, []))}


def test_small_bar1_on_a_gpu_set_up_for_gpudirect_rdma_warns_with_its_size():
    facts, out = rdma_findings()
    assert facts.value("gpu.0.bar1_total_bytes") == 256 * 1024 ** 2  # BAR 1 of the sysfs resource file
    f = out["gpu.bar1_limits_gpudirect_rdma"]
    assert f.severity == "warning"
    assert "256 MiB BAR1" in f.title and "nv_peer_mem" in f.title and "mlx5_0" in f.title
    assert "ibv_reg_mr" in f.detail and "220 MiB" in f.detail
    # NVIDIA's own module, NVML's BAR1 answer, and a snapshot whose NVML answers lack the bus id: the same
    _, out = rdma_findings(modules=("nvidia_peermem",), nvml_bar1=256 * 1024 ** 2, resource=None)
    assert "nvidia_peermem" in out["gpu.bar1_limits_gpudirect_rdma"].title
    facts, out = rdma_findings(pci_in_nvml=False)
    assert facts.get("gpu.0.bar1_total_bytes").source.startswith("file:/sys/bus/pci/devices/0000:18:00.0")
    assert "gpu.bar1_limits_gpudirect_rdma" in out


def test_bar1_is_quiet_without_gpudirect_rdma_or_with_a_large_bar1():
    assert "gpu.bar1_limits_gpudirect_rdma" not in rdma_findings(modules=())[1]  # no peer-memory module
    assert "gpu.bar1_limits_gpudirect_rdma" not in rdma_findings(devices=())[1]  # no RDMA device
    # BAR1 as large as the memory (an A100's 64 GiB BAR1 for 40 GiB), from NVML
    assert "gpu.bar1_limits_gpudirect_rdma" not in rdma_findings(nvml_bar1=64 * GIB, memory=40 * GIB)[1]
    # BAR1 not known: nothing said
    facts, out = rdma_findings(resource="garbled\n")
    assert facts.get("gpu.0.bar1_total_bytes") is None and "gpu.bar1_limits_gpudirect_rdma" not in out

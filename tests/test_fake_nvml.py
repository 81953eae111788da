"""End to end through the real nvidia-ml-py binding and envdoctor's NVML worker, against a fake
libnvidia-ml.so.1 (tests/fakenvml/fake_nvml.c) compiled here and answering from JSON files whose
values come from real machines (sources inside each file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from .fakenvml.build import build, fake_env, load_answers, write_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



@pytest.fixture(scope="session")
def old_fake_lib(tmp_path_factory):
    try:
        return build(str(tmp_path_factory.mktemp("fakenvml_old")), old=True)
    except RuntimeError as exc:
        pytest.skip(f"cannot build the fake NVML library: {exc}")


def envdoctor(lib_dir, answers, tmp_path, *args, timeout=60):
    path = write_answers(answers, str(tmp_path / "answers.txt"))
    return subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), env=fake_env(lib_dir, path),
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def gpu_facts(stdout):
    report = json.loads(stdout)
    return {f["key"]: f for p in report["probes"] if p["name"] == "gpu" for f in p["facts"]}


def test_h100_is_described_fully(fake_lib, tmp_path):
    r = envdoctor(fake_lib, load_answers("h100.json"), tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    value = {k: f["value"] for k, f in facts.items()}
    assert value["gpu.count"] == 1
    assert value["gpu.0.name"] == "NVIDIA H100 80GB HBM3"
    assert value["gpu.0.pci_bus_id"] == "00000000:18:00.0"
    assert value["gpu.0.pci_device_id"] == "10de:2330"
    assert value["gpu.0.compute_capability"] == "9.0"
    assert value["gpu.0.architecture"] == "Hopper"
    assert value["gpu.0.memory_total_bytes"] == 81559 * 1024 * 1024
    # NVIDIA's datasheet: 3.35 TB/s for H100 SXM5.
    assert value["gpu.0.memory_bandwidth_gbps"] == pytest.approx(3350, rel=0.01)
    assert value["gpu.0.sm_count"] == 132 and value["gpu.0.cuda_cores"] == 16896
    assert value["gpu.0.power_limit_watts"] == 700.0
    assert value["gpu.0.ecc_mode_current"] is True and value["gpu.0.mig_mode_current"] is False
    assert value["gpu.0.clock_event_reasons"] == ["GPU idle"]
    assert (value["gpu.0.pcie_gen_current"], value["gpu.0.pcie_width_current"]) == (5, 16)
    assert facts["gpu.0.name"]["source"] == "nvml:device.0.name"
    # No VBIOS answer in the file: the fake says NOT_SUPPORTED, which is no error.
    assert facts["gpu.0.vbios_version"]["status"] == "not_supported"


def test_two_consumer_gpus_and_an_unsupported_field(fake_lib, tmp_path):
    r = envdoctor(fake_lib, load_answers("two_rtx4090.json"), tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    assert facts["gpu.count"]["value"] == 2
    for i in (0, 1):
        assert facts[f"gpu.{i}.architecture"]["value"] == "Ada Lovelace"
        # NVIDIA's spec: 1008 GB/s for the RTX 4090.
        assert facts[f"gpu.{i}.memory_bandwidth_gbps"]["value"] == pytest.approx(1008, rel=0.005)
        # GeForce: NVML answers NOT_SUPPORTED for the SM count and MIG; reported as such, not as errors.
        assert facts[f"gpu.{i}.sm_count"]["status"] == "not_supported"
        assert facts[f"gpu.{i}.mig_mode_current"]["status"] == "not_supported"
    assert facts["gpu.0.display_active"]["value"] is True
    assert facts["gpu.1.pcie_width_current"]["value"] == 8
    assert facts["gpu.1.clock_event_reasons"]["value"] == ["SW power cap"]
    assert facts["gpu.0.utilization_gpu_percent"]["value"] == 0  # idle: the gen-1 link is a power saving


def test_version_mismatch_at_init_is_reported_not_raised(fake_lib, tmp_path):
    r = envdoctor(fake_lib, {"init": {"error": 18}}, tmp_path, "diagnose", "--format", "json")
    report = json.loads(r.stdout)
    gpu = [p for p in report["probes"] if p["name"] == "gpu"][0]
    assert gpu["status"] == "ok"
    facts = {f["key"]: f for f in gpu["facts"]}
    # This machine has no NVIDIA GPU on its PCI bus, so the verdict is "none", with NVML's reason kept.
    assert facts["gpu.status"]["value"] == "no NVIDIA GPU found"
    assert "Driver/library version mismatch" in facts["gpu.status"]["reason"]


def test_hung_nvml_is_cut_off_by_the_timeout(fake_lib, tmp_path):
    start = time.monotonic()
    r = envdoctor(fake_lib, {"init": {"hang_seconds": 60}}, tmp_path, "diagnose", "--format", "json",
                  "--timeout", "2")
    elapsed = time.monotonic() - start
    # --timeout 2 plus about a second, plus Python's own start-up in this subprocess.
    assert elapsed < 6, elapsed
    facts = gpu_facts(r.stdout)
    assert facts["gpu.status"]["status"] == "timed_out"
    assert "did not answer" in facts["gpu.status"]["reason"]


def test_functions_an_old_driver_lacks_are_unknown_with_the_reason(old_fake_lib, tmp_path):
    r = envdoctor(old_fake_lib, load_answers("h100.json"), tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    assert facts["gpu.0.name"]["value"] == "NVIDIA H100 80GB HBM3"
    for key in ("gpu.0.cuda_cores", "gpu.0.pcie_gen_gpu_max"):
        assert facts[key]["status"] == "unknown"
        assert "FUNCTION_NOT_FOUND" in facts[key]["reason"]


def test_throttle_reasons_are_read_from_a_driver_before_r535(old_fake_lib, fake_lib, tmp_path):
    # Drivers before R535 have only nvmlDeviceGetCurrentClocksThrottleReasons (R535 renamed it
    # ...ClocksEventReasons): a GPU held down by heat on such a driver must still be seen, and the
    # same answers on a newer driver give the same facts.
    answers = dict(load_answers("h100.json"))
    answers["system.driver_version"] = "525.147.05"  # the R525 production branch, before the rename
    answers["device.0.clock_event_reasons"] = 0x40 | 0x20  # HW and SW thermal slowdown
    answers["device.0.temperature"] = 91
    for lib in (old_fake_lib, fake_lib):
        r = envdoctor(lib, answers, tmp_path, "diagnose", "--format", "json")
        facts = gpu_facts(r.stdout)
        assert facts["gpu.0.clock_event_reasons"]["value"] == ["SW thermal slowdown", "HW thermal slowdown"], lib
        codes = {f["code"]: f for f in json.loads(r.stdout)["findings"]}
        assert "gpu.throttled" in codes and "HW thermal slowdown" in codes["gpu.throttled"]["title"]


def test_snapshot_replay_gives_the_same_gpu_facts(fake_lib, tmp_path):
    snap = str(tmp_path / "snap.json")
    answers = load_answers("two_rtx4090.json")
    r = envdoctor(fake_lib, answers, tmp_path, "snapshot", "-o", snap)
    assert r.returncode == 0, r.stderr
    live = gpu_facts(envdoctor(fake_lib, answers, tmp_path, "diagnose", "--format", "json").stdout)
    replay = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--snapshot", snap, "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert gpu_facts(replay.stdout) == live
    assert live["gpu.count"]["value"] == 2


def test_redact_ids_hides_the_serial_and_uuid_nvml_gave(fake_lib, tmp_path):
    # The NVML query runs in a forked child; with --redact-ids the UUID and the serial it read must
    # be hidden everywhere in the live report.
    answers = dict(load_answers("h100.json"))
    answers["device.0.serial"] = "1321721009876"  # a made-up board serial (13 digits, as NVIDIA prints them)
    path = write_answers(answers, str(tmp_path / "answers.txt"))
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json", "--redact-ids"],
                       env=fake_env(fake_lib, path), capture_output=True, text=True, cwd=ROOT, timeout=60)
    doc = json.loads(r.stdout)
    # This VM's CUDA 13.0 toolkit needs a newer driver than the H100 answers' 550: an error, and
    # the exit code says so (the console script's fast exit keeps it).
    assert doc["summary"]["error"] >= 1 and r.returncode == 1, r.stderr
    assert "1321721009876" not in r.stdout and "8ca5630b" not in r.stdout
    reports = [doc]
    value = {f["key"]: f["value"] for p in reports[0]["probes"] for f in p["facts"]}
    assert value["gpu.0.name"] == "NVIDIA H100 80GB HBM3" and value["gpu.0.uuid"].startswith("GPU-redacted")


MEMORY_CODES = {"gpu.row_remap_pending", "gpu.row_remap_failed", "gpu.retired_pages_pending",
                "gpu.retired_pages_limit", "gpu.mig_no_instances", "gpu.mig_mode_pending"}


def test_the_healthy_h100_answers_its_memory_health(fake_lib, tmp_path):
    r = envdoctor(fake_lib, load_answers("h100.json"), tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    # what the real H100's nvidia-smi -q printed: Remapped Rows 0 / 0 / Pending No / Failure No
    assert [facts["gpu.0.remapped_rows_%s" % k]["value"] for k in ("correctable", "uncorrectable", "pending",
                                                                   "failure")] == [0, 0, False, False]
    # Retired Pages N/A on an H100 (row remapping replaces page retirement): not supported, not an error
    assert facts["gpu.0.retired_pages_pending"]["status"] == "not_supported"
    assert "gpu.0.mig_devices" not in facts  # MIG is off: not asked
    assert not MEMORY_CODES & {f["code"] for f in json.loads(r.stdout)["findings"]}


def test_rows_pending_and_mig_without_instances_are_seen_through_nvml(fake_lib, tmp_path):
    answers = dict(load_answers("h100.json"))
    answers["device.0.remapped_rows"] = [0, 4, 1, 0]  # leptonai/gpud#80: Uncorrectable Error 4, Pending Yes
    answers["device.0.mig_mode"] = [1, 1]
    answers["device.0.mig_devices"] = {"max": 7, "present": 0}  # `nvidia-smi -mig 1`, no instance created
    r = envdoctor(fake_lib, answers, tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    assert facts["gpu.0.remapped_rows_pending"]["value"] is True
    assert (facts["gpu.0.mig_devices"]["value"], facts["gpu.0.mig_devices_max"]["value"]) == (0, 7)
    codes = {f["code"]: f for f in json.loads(r.stdout)["findings"]}
    assert codes["gpu.row_remap_pending"]["severity"] == "warning"
    assert codes["gpu.mig_no_instances"]["severity"] == "error"
    # two MIG devices made: the GPU is usable, and the table says how many
    answers["device.0.mig_devices"] = {"max": 7, "present": 2}
    r = envdoctor(fake_lib, answers, tmp_path, "diagnose", "--format", "json")
    assert gpu_facts(r.stdout)["gpu.0.mig_devices"]["value"] == 2
    assert "gpu.mig_no_instances" not in {f["code"] for f in json.loads(r.stdout)["findings"]}
    text = envdoctor(fake_lib, answers, tmp_path, "diagnose").stdout
    assert "on, 2 devices" in text


def test_retired_pages_of_a_pre_ampere_gpu_are_counted(fake_lib, tmp_path):
    answers = dict(load_answers("h100.json"))
    answers["device.0.retired_pages_pending"] = 1
    answers["device.0.retired_pages_sbe"] = 2
    answers["device.0.retired_pages_dbe"] = 1
    r = envdoctor(fake_lib, answers, tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    assert (facts["gpu.0.retired_pages_sbe"]["value"], facts["gpu.0.retired_pages_dbe"]["value"]) == (2, 1)
    f = {f["code"]: f for f in json.loads(r.stdout)["findings"]}["gpu.retired_pages_pending"]
    assert "reboot" in f["title"] and "nvidia-smi -q -d PAGE_RETIREMENT -i 0" in f["fix"]["commands"]


def test_a_driver_without_row_remapping_or_mig_calls_is_not_an_error(old_fake_lib, tmp_path):
    answers = dict(load_answers("h100.json"))
    answers["device.0.mig_mode"] = [1, 1]
    answers["device.0.mig_devices"] = {"max": 7, "present": 0}
    r = envdoctor(old_fake_lib, answers, tmp_path, "diagnose", "--format", "json")
    facts = gpu_facts(r.stdout)
    for key in ("gpu.0.remapped_rows_pending", "gpu.0.mig_devices"):
        assert facts[key]["status"] == "not_supported" and "FUNCTION_NOT_FOUND" in facts[key]["reason"], key
    findings = json.loads(r.stdout)["findings"]
    assert not MEMORY_CODES & {f["code"] for f in findings}
    assert not [f for f in findings if f["code"].startswith("gpu.nvml")]


def test_a_hang_in_the_mig_query_is_named():
    from envdoctor.host.nvml_worker import describe_call

    assert describe_call("device.3.mig_devices") == "nvmlDeviceGetMigDeviceHandleByIndex for GPU 3"
    assert describe_call("device.0.remapped_rows") == "nvmlDeviceGetRemappedRows for GPU 0"


def test_a_mig_query_that_fails_is_unknown_with_the_error_not_a_verdict(fake_lib, tmp_path):
    answers = dict(load_answers("h100.json"))
    answers["device.0.mig_mode"] = [1, 1]
    answers["device.0.mig_devices"] = {"max": 7, "present": 0, "error": 4}  # NVML_ERROR_NO_PERMISSION
    r = envdoctor(fake_lib, answers, tmp_path, "diagnose", "--format", "json")
    fact = gpu_facts(r.stdout)["gpu.0.mig_devices"]
    assert fact["status"] == "unknown" and "NO_PERMISSION" in fact["reason"]
    assert "gpu.mig_no_instances" not in {f["code"] for f in json.loads(r.stdout)["findings"]}

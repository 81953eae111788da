"""Does CUDA itself start? The CUresult catalog read from cuda.h, the child that runs cuInit
(envdoctor/host/cuinit_child.py, against the stand-in libcuda of tests/fakecuda where a C compiler is at hand), how
its output is read (hostile output included), the snapshot seam, and the check's verdicts as a user reads them."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

import pytest

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.driver_health import driver_health
from envdoctor.findings import Finding
from envdoctor.host import cudainit
from envdoctor.host.base import CudaInitResult
from envdoctor.host.live import LiveHost, start_command
from envdoctor.host.snapshot import SnapshotHost, validate_document
from envdoctor.matrix import cuda_results
from tests.conftest import probe_facts
from tests.fakenvml.build import compiler
from tests.test_checks_driver_health import with_devices
from tests.test_probe_driver import healthy_550, nvml_ok

needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler to build the stand-in libcuda")


# -- the catalog ------------------------------------------------------------------------------------------------

def test_catalog_walks_every_entry():
    doc = matrix.read_document("cuda_results")
    assert matrix.problems_of("cuda_results", doc) == []
    rows = doc["rows"]
    assert len(rows) > 90  # cuda.h 12.6 names 97
    codes = [r["code"] for r in rows]
    assert len(codes) == len(set(codes))
    for r in rows:
        assert r["name"] == "CUDA_SUCCESS" or r["name"].startswith("CUDA_ERROR_"), r
        assert r["description"].strip(), r
        assert r["source"]["url"].startswith("https://docs.nvidia.com/") and r["source"]["verified"] is True
        assert ("zspace/system.cuda-12.6/blob/b3d92c837713411301ae5df45b0c7758df7d931e/include/cuda.h"
                in r["source"]["note"])


@pytest.mark.parametrize("code,name", [
    (0, "CUDA_SUCCESS"), (3, "CUDA_ERROR_NOT_INITIALIZED"), (34, "CUDA_ERROR_STUB_LIBRARY"),
    (46, "CUDA_ERROR_DEVICE_UNAVAILABLE"), (100, "CUDA_ERROR_NO_DEVICE"), (802, "CUDA_ERROR_SYSTEM_NOT_READY"),
    (803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"), (804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"),
    (999, "CUDA_ERROR_UNKNOWN")])
def test_catalog_has_the_results_the_check_names(code, name):
    assert cuda_results.name_of(code) == name
    assert cuda_results.summary(code).endswith(".")


def test_catalog_validator_refuses_bad_rows():
    bad = [{"name": "CUDA_ERROR_X", "code": 1, "description": "a"}, {"name": "CUDA_ERROR_Y", "code": 1,
                                                                      "description": ""},
           {"name": "cudaErrorZ", "code": 2, "description": "b"}]
    problems = cuda_results.validate(bad)
    assert any("code 1 is already" in p for p in problems)
    assert any("no description" in p for p in problems)
    assert any("cudaErrorZ" in p for p in problems)


def test_generator_reads_the_enum_from_header_text():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    try:
        import make_cuda_results
    finally:
        sys.path.pop(0)
    header = ("typedef enum cudaError_enum {\n    /**\n     * The API call returned with no errors.\n     */\n"
              "    CUDA_SUCCESS = 0,\n    /**\n"
              "     * This indicates that the CUDA driver has not been initialized with\n"
              "     * ::cuInit() or that initialization has failed.\n     */\n    CUDA_ERROR_NOT_INITIALIZED = 3,\n"
              "} CUresult;\n")
    assert make_cuda_results.parse(header) == [
        ("CUDA_SUCCESS", 0, "The API call returned with no errors."),
        ("CUDA_ERROR_NOT_INITIALIZED", 3, "This indicates that the CUDA driver has not been initialized with cuInit() "
                                          "or that initialization has failed.")]


# -- reading the child's output (hostile input: never an exception) --------------------------------------------

def lines(*docs: Dict[str, Any]) -> str:
    return "".join(json.dumps(d) + "\n" for d in docs)


def test_parse_success():
    out = lines({"event": "start"}, {"event": "init", "code": 0, "name": "CUDA_SUCCESS"},
                {"event": "version", "value": 12040}, {"event": "count", "value": 2},
                {"event": "device", "index": 0, "bus_id": "0000:18:00.0"},
                {"event": "device", "index": 1, "bus_id": "0000:3B:00.0"}, {"event": "done"})
    r = cudainit.parse(out, 0, False, 0.3, 20.0)
    assert r.answered and r.code == 0 and r.device_count == 2 and r.driver_version == 12040
    assert r.bus_ids == ("0000:18:00.0", "0000:3B:00.0")


@pytest.mark.parametrize("stdout,rc,timed_out,error,words", [
    ("", 0, False, "garbled", "could not be read"),
    ("\x00\xff garbage {not json\n[1,2]\n", 0, False, "garbled", "could not be read"),
    ('{"event": "start"}\n{"event": "init", "code": "three"}\n{"event": "done"}\n', 0, False, "garbled", ""),
    ('{"event": "start"}\n{"event": "doing", "call": "cuInit"}\n', None, True, "timed_out",
     "CUDA did not answer within 20 s (it was in cuInit)"),
    ('{"event": "start"}\n{"event": "doing", "call": "cuInit"}\n', -11, False, "crashed", "died of SIGSEGV in cuInit"),
    ('{"event": "start"}\n{"event": "init", "code": 0, "name": "CUDA_SUCCESS"}\n{"event": "doing", "call": '
     '"cuDeviceGetCount"}\n', 1, False, "crashed", "ended (exit status 1)"),
    ('{"event": "start"}\n{"event": "no_library", "message": "libcuda.so.1: cannot open shared object file"}\n', 0,
     False, "no_library", "cannot open shared object file"),
])
def test_parse_hostile_output(stdout, rc, timed_out, error, words):
    r = cudainit.parse(stdout, rc, timed_out, 20.0, 20.0)
    assert r.error == error and not r.answered
    assert words in r.message


def test_parse_truncated_mid_line_keeps_what_came_before():
    out = lines({"event": "start"}, {"event": "init", "code": 3, "name": "CUDA_ERROR_NOT_INITIALIZED"}) + '{"ev'
    r = cudainit.parse(out, -9, False, 1.0, 20.0)
    assert r.error == "crashed" and r.code == 3 and "SIGKILL" in r.message


# -- when it is worth asking -----------------------------------------------------------------------------------

def driver_tree(tmp_path, minors=(0,), nodes=("nvidiactl", "nvidia-uvm", "nvidia0"), loaded=True):
    """A /dev and /proc/driver/nvidia as the NVIDIA module leaves them: its version file, one folder per GPU with
    its ``Device Minor``, and the device nodes named."""
    dev, proc = tmp_path / "dev", tmp_path / "proc"
    dev.mkdir(parents=True, exist_ok=True)
    (proc / "gpus").mkdir(parents=True, exist_ok=True)
    if loaded:
        (proc / "version").write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.133.20\n")
    for i, minor in enumerate(minors):
        gpu = proc / "gpus" / ("0000:%02x:00.0" % (i + 1))
        gpu.mkdir()
        (gpu / "information").write_text("Model: \t\t NVIDIA A100 80GB PCIe\nDevice Minor: \t %d\n" % minor)
    for n in nodes:
        (dev / n).write_text("")
    return dict(dev=str(dev), proc_version=str(proc / "version"), proc_gpus=str(proc / "gpus"),
                wsl_lib=str(tmp_path / "wsl"))


def test_asked_where_the_module_is_loaded_and_every_node_exists(tmp_path):
    assert cudainit.worth_asking(**driver_tree(tmp_path)) is True


def test_not_asked_where_libcuda_would_create_nodes_or_load_modules(tmp_path):
    # libcuda run as root creates missing /dev/nvidia* nodes and runs nvidia-modprobe for nvidia_uvm: asking there
    # would change the machine and hide what the device-node checks report
    for i, kw in enumerate([dict(nodes=("nvidia-uvm", "nvidia0")), dict(nodes=("nvidiactl", "nvidia0")),
                              dict(nodes=("nvidiactl", "nvidia-uvm")), dict(loaded=False),
                              dict(minors=(0, 1))]):
        assert cudainit.worth_asking(**driver_tree(tmp_path / str(i), **kw)) is False, kw


def test_not_asked_on_a_machine_without_the_driver(tmp_path):
    (tmp_path / "dev").mkdir()
    assert cudainit.worth_asking(dev=str(tmp_path / "dev"), proc_version=str(tmp_path / "none"),
                                 proc_gpus=str(tmp_path / "none"), wsl_lib=str(tmp_path / "wsl")) is False


def test_wsl_is_asked_where_the_windows_driver_is_mounted(tmp_path):
    kw = driver_tree(tmp_path, minors=(), nodes=("dxg",), loaded=False)
    assert cudainit.worth_asking(**kw) is False
    (tmp_path / "wsl").mkdir()
    (tmp_path / "wsl" / "libcuda.so.1").write_text("")
    assert cudainit.worth_asking(**kw) is True


def test_this_machine_without_gpu_starts_nothing(monkeypatch):
    if cudainit.worth_asking():
        pytest.skip("this machine has an NVIDIA GPU, device node or libcuda")
    host = LiveHost(timeout=5.0)
    host.start_cuda_init()
    assert host._cuda_init_child is False
    r = host.cuda_init()
    assert r.error == "not_run" and host.cuda_init_asked


# -- the child, against the stand-in libcuda --------------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_lib(tmp_path_factory):
    if compiler() is None:
        pytest.skip("no C compiler")
    from tests.fakecuda.build import build

    return build(str(tmp_path_factory.mktemp("fakecuda")))


def live(monkeypatch, tmp_path, lib_dir: str, config: Dict[str, Any], timeout: float = 20.0) -> CudaInitResult:
    from tests.fakecuda.build import write_config

    conf = write_config(config, str(tmp_path / "cuda.conf"))
    monkeypatch.setenv("LD_LIBRARY_PATH", lib_dir)
    monkeypatch.setenv("FAKE_CUDA_CONFIG", conf)
    monkeypatch.setattr(cudainit, "TIMEOUT", timeout)
    # no driver here: the stand-in answers for it (when the child may start is tested above)
    monkeypatch.setattr(cudainit, "worth_asking", lambda *a, **k: True)
    host = LiveHost(timeout=30.0)
    host.start_cuda_init()
    assert host._cuda_init_child not in (None, False)
    return host.cuda_init()


@needs_cc
def test_child_counts_the_devices(monkeypatch, tmp_path, fake_lib):
    r = live(monkeypatch, tmp_path, fake_lib, {"device_count": 2, "device": {"0": {"bus_id": "0000:18:00.0"},
                                                                             "1": {"bus_id": "0000:3b:00.0"}}})
    assert r.answered and r.code == 0 and r.device_count == 2
    assert r.bus_ids == ("0000:18:00.0", "0000:3b:00.0") and r.driver_version == 12040


@needs_cc
def test_child_reports_cuinit_failure_by_name(monkeypatch, tmp_path, fake_lib):
    r = live(monkeypatch, tmp_path, fake_lib, {"init": {"error": 3}})
    assert r.answered and r.code == 3 and r.name == "CUDA_ERROR_NOT_INITIALIZED" and r.device_count is None


@needs_cc
def test_child_that_hangs_is_a_timed_out_answer(monkeypatch, tmp_path, fake_lib):
    r = live(monkeypatch, tmp_path, fake_lib, {"cuInit": {"hang_seconds": 30}}, timeout=1.5)
    assert r.error == "timed_out" and r.call == "cuInit"
    assert r.message.startswith("CUDA did not answer within 2 s")


@needs_cc
def test_child_that_dies_by_a_signal(monkeypatch, tmp_path, fake_lib):
    r = live(monkeypatch, tmp_path, fake_lib, {"cuInit": {"crash": "segv"}})
    assert r.error == "crashed" and "SIGSEGV" in r.message and "cuInit" in r.message


def test_child_without_libcuda(monkeypatch, tmp_path):
    started = start_command(cudainit.argv(sys.executable), 20.0, env={"LD_LIBRARY_PATH": str(tmp_path),
                                                                        "PATH": os.environ.get("PATH", "")})
    if not hasattr(started, "finish"):
        pytest.skip("cannot start the interpreter")
    res = started.finish()
    r = cudainit.parse(res.stdout, res.returncode, res.timed_out, res.duration, 20.0, stderr=res.stderr)
    if r.answered:
        pytest.skip("this machine has a libcuda.so.1 the loader finds")
    assert r.error == "no_library" and "libcuda.so.1 could not be loaded" in r.message


# -- the snapshot seam -------------------------------------------------------------------------------------------

def test_entry_round_trip_and_schema():
    r = CudaInitResult(code=0, name="CUDA_SUCCESS", driver_version=12080, device_count=1,
                       bus_ids=("0000:01:00.0",), duration=0.41234)
    entry = cudainit.to_entry(r)
    assert cudainit.from_entry(entry) == r._replace(duration=0.4123)
    validate_document({"schema_version": 1, "cuda_init": entry})
    validate_document({"schema_version": 1, "cuda_init": cudainit.to_entry(
        CudaInitResult(error="timed_out", call="cuInit", message="CUDA did not answer within 20 s"))})


def test_old_snapshot_replays_not_recorded_and_adds_no_fact():
    host = healthy_550(nvml=with_devices(nvml_ok("550.54.15", 12040), ["NVIDIA A100-SXM4-80GB"]))
    assert "cuda_init" not in host.doc
    assert host.cuda_init().error == "not_recorded"
    facts = probe_facts(host)
    assert not [f for f in facts if f.key.startswith("driver.cuda_init") or f.key == "driver.uvm_disable_hmm"]


def test_snapshot_records_what_the_live_host_was_asked(monkeypatch):
    from envdoctor.host.privacy import Scrubber
    from envdoctor.host.snapshot import document_from_host

    host = LiveHost(timeout=5.0)
    monkeypatch.setattr(host, "_ask_cuda_init", lambda: CudaInitResult(code=802, name="CUDA_ERROR_SYSTEM_NOT_READY"))
    doc = document_from_host(host, Scrubber(include_host=True), "test")
    assert "cuda_init" not in doc  # not asked: not recorded
    host.cuda_init()
    doc = document_from_host(host, Scrubber(include_host=True), "test")
    assert doc["cuda_init"] == {"code": 802, "name": "CUDA_ERROR_SYSTEM_NOT_READY", "duration": 0.0}
    assert SnapshotHost(doc).cuda_init().code == 802


# -- the check: what a user reads --------------------------------------------------------------------------------

def gpu_machine(cuda_init: Optional[Dict[str, Any]], gpus: int = 1, **extra: Any):
    host = healthy_550(nvml=with_devices(nvml_ok("550.54.15", 12040), ["NVIDIA RTX A6000"] * gpus), **extra)
    for i in range(gpus):
        host.doc["nvml"]["data"]["device.%d.pci" % i] = {"value": {"busId": "00000000:%02X:00.0" % (i + 1)}}
    if cuda_init is not None:
        host.doc["cuda_init"] = cuda_init
    return host


def found(host) -> List[Finding]:
    return list(driver_health(CheckContext(probe_facts(host), [])))


def one(host, code: str) -> Finding:
    fs = [f for f in found(host) if f.code.startswith(("driver.cuda", "driver.uvm_hmm"))]
    assert [f.code for f in fs] == [code], [(f.code, f.title) for f in fs]
    return fs[0]


def quiet(host) -> None:
    assert not [f for f in found(host) if f.code.startswith(("driver.cuda", "driver.uvm_hmm"))]


HMM_ON = {"/sys/module/nvidia_uvm/parameters/uvm_disable_hmm": "N\n"}
HMM_OFF = {"/sys/module/nvidia_uvm/parameters/uvm_disable_hmm": "Y\n"}


def test_healthy_cuda_init_is_quiet():
    quiet(gpu_machine({"code": 0, "name": "CUDA_SUCCESS", "device_count": 1, "bus_ids": ["0000:01:00.0"]}))


def test_not_initialized_with_hmm_on_names_uvm_disable_hmm():
    f = one(gpu_machine({"code": 3, "name": "CUDA_ERROR_NOT_INITIALIZED"}, files=HMM_ON),
            "driver.uvm_hmm_breaks_cuinit")
    assert f.severity == "error"
    assert "CUDA_ERROR_NOT_INITIALIZED, 3" in f.title and "uvm_disable_hmm=1" in f.title
    assert "has not been initialized with cuInit()" in f.detail
    assert "options nvidia_uvm uvm_disable_hmm=1" in f.fix.commands[0]
    assert "uvm_hmm.c" in f.source["url"]


def test_not_initialized_with_hmm_off_is_unexplained():
    f = one(gpu_machine({"code": 3}, files=HMM_OFF), "driver.cuda_init_failed")
    assert f.severity == "error" and "CUDA_ERROR_NOT_INITIALIZED (3)" in f.title
    assert "nothing else recorded here explains" in f.detail and "uvm_disable_hmm" not in f.fix.text


def test_no_device_while_nvml_lists_gpus_and_cuda_visible_devices_set():
    host = gpu_machine({"code": 100}, files=HMM_ON)
    host.doc["environ"]["CUDA_VISIBLE_DEVICES"] = "0"
    f = one(host, "driver.cuda_init_failed")
    assert "CUDA_ERROR_NO_DEVICE (100)" in f.title and "CUDA_VISIBLE_DEVICES='0'" in f.detail
    assert f.fix.commands == ["unset CUDA_VISIBLE_DEVICES"]


def test_no_device_with_hmm_off_points_at_device_access():
    f = one(gpu_machine({"code": 100}, files=HMM_OFF), "driver.cuda_init_failed")
    assert "device nodes" in f.detail and "ls -l /dev/nvidia*" in f.fix.commands


def test_unknown_without_uvm_node_names_the_uvm_module():
    host = gpu_machine({"code": 999})
    host.doc["dirs"]["/dev"]["entries"] = [n for n in host.doc["dirs"]["/dev"]["entries"] if n != "nvidia-uvm"]
    fs = [f for f in found(host) if f.code in ("driver.cuda_init_failed", "driver.device_nodes_missing")]
    # one finding per cause: the device-node question names it, so this one yields
    assert [f.code for f in fs] == ["driver.device_nodes_missing"] or (
        [f.code for f in fs] == ["driver.cuda_init_failed"] and "sudo modprobe nvidia-uvm" in fs[0].fix.commands)


def nvswitch_machine(state: str):
    host = gpu_machine({"code": 802}, commands=[{"argv": ["systemctl", "is-active", "nvidia-fabricmanager"],
                                                 "stdout": state + "\n", "returncode": 0 if state == "active" else 3}])
    host.doc["dirs"]["/dev"]["entries"] = host.doc["dirs"]["/dev"]["entries"] + ["nvidia-nvswitchctl",
                                                                                   "nvidia-nvswitch0"]
    return host


def test_system_not_ready_on_nvswitch_yields_to_the_fabric_manager():
    codes = [f.code for f in found(nvswitch_machine("inactive"))]
    assert "driver.fabric_manager_not_running" in codes and "driver.cuda_init_failed" not in codes


def test_system_not_ready_on_nvswitch_with_the_service_up_names_the_fabric():
    f = one(nvswitch_machine("active"), "driver.cuda_init_failed")
    assert "CUDA_ERROR_SYSTEM_NOT_READY (802)" in f.title and "Fabric Manager" in f.detail
    assert "sudo systemctl enable --now nvidia-fabricmanager" in f.fix.commands


def test_stub_and_other_codes_name_nvidias_description():
    f = one(gpu_machine({"code": 34}), "driver.cuda_init_failed")
    assert "CUDA_ERROR_STUB_LIBRARY (34)" in f.title and "stub library" in f.detail
    assert "stubs" in f.fix.text
    f = one(gpu_machine({"code": 46}), "driver.cuda_init_failed")
    assert "exclusive-process" in f.detail
    f = one(gpu_machine({"code": 101}), "driver.cuda_init_failed")
    assert "CUDA_ERROR_INVALID_DEVICE (101)" in f.title and "nothing else recorded here explains" in f.detail


def test_failure_without_a_gpu_is_quiet():
    host = healthy_550(nvml=nvml_ok("550.54.15", 12040, count=0))
    host.doc["cuda_init"] = {"code": 100}
    quiet(host)


def test_hang_is_a_finding_and_garbled_is_not():
    f = one(gpu_machine({"error": "timed_out", "call": "cuInit",
                         "message": "CUDA did not answer within 20 s (it was in cuInit)"}), "driver.cuda_init_hung")
    assert f.severity == "error" and f.title == "CUDA did not answer within 20 s (it was in cuInit)"
    f = one(gpu_machine({"error": "crashed", "call": "cuInit",
                         "message": "the process asking CUDA died of SIGSEGV in cuInit"}), "driver.cuda_init_hung")
    assert "crashed" in f.title and "SIGSEGV" in f.title
    quiet(gpu_machine({"error": "garbled", "message": "the answer could not be read (exit status 0)"}))
    quiet(gpu_machine({"error": "no_library", "message": "libcuda.so.1 could not be loaded: nope"}))


def test_fewer_cuda_devices_than_nvml_names_the_missing_gpu():
    f = one(gpu_machine({"code": 0, "device_count": 1, "bus_ids": ["0000:01:00.0"]}, gpus=2),
            "driver.cuda_devices_hidden")
    assert f.severity == "warning" and "0000:02:00.0" in f.title and "CUDA counts 1 GPU(s), NVML lists 2" in f.title
    assert "0000:01:00.0" not in f.title


def test_fewer_cuda_devices_with_cuda_visible_devices_is_quiet():
    host = gpu_machine({"code": 0, "device_count": 1, "bus_ids": ["0000:01:00.0"]}, gpus=2)
    host.doc["environ"]["CUDA_VISIBLE_DEVICES"] = "0"
    quiet(host)


def test_explain_documents_the_codes():
    from envdoctor.checks import code_docs

    docs = code_docs()
    for code in ("driver.cuda_init_failed", "driver.uvm_hmm_breaks_cuinit", "driver.cuda_init_hung",
                 "driver.cuda_devices_hidden"):
        assert code in docs and docs[code].summary

"""Finding codes whose firing case the per-module tests did not cover.

The library cases run the real probes (frameworks, libraries, linkage) on the torch 2.4.0+cu121 wheel
layout of tests/test_checks_libraries.py; the others use facts as the probes write them.
"""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.driver_health import driver_health
from envdoctor.checks.libraries import cudnn_version, framework_linkage
from envdoctor.checks.libraries.wheels import onnxruntime_packaging
from envdoctor.checks.meta import probe_health
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeResult

from .conftest import probe_facts
from .test_checks_libraries import LIB, SITE, torch_host


def _codes(findings):
    return {f.code: f for f in findings}


def test_an_older_cudnn_symlinked_under_the_newer_soname_is_a_major_mismatch():
    # A common "fix" seen in forums: ln -s libcudnn.so.8.9.7 libcudnn.so.9. The loader follows it.
    host = torch_host(cudnn_wheel=False, ldp="/usr/local/cuda/lib64",
                      system_cudnn=("/usr/local/cuda/lib64", "libcudnn.so.8.9.7"))
    f = _codes(cudnn_version(CheckContext(probe_facts(host), [])))["cudnn.major_mismatch"]
    assert f.severity == "error" and "9.1.0.70" in f.title and "8.9.7" in f.title
    assert f.fix.commands == ["pip install 'nvidia-cudnn-cu12==9.1.0.70'"]


def test_missing_nccl_wheel_means_nccl_cannot_be_loaded():
    host = torch_host()
    del host.doc["files"][SITE + "/nvidia/nccl/lib/libnccl.so.2"]
    host.doc["dirs"][SITE + "/nvidia/nccl/lib"]["entries"].remove("libnccl.so.2")
    f = _codes(framework_linkage(CheckContext(probe_facts(host), [])))["nccl.framework_cannot_load"]
    assert f.severity == "error" and "libnccl.so.2" in f.title and f.components == ["nccl", "torch"]


def test_a_runpath_library_is_shadowed_through_ld_library_path():
    # With DT_RUNPATH (a source build; TensorFlow and ONNX Runtime wheels link this way) LD_LIBRARY_PATH
    # is searched first, so a system cuDNN 9 wins over the wheel's own copy.
    host = torch_host(ldp="/opt/cudnn/lib", system_cudnn=("/opt/cudnn/lib", "libcudnn.so.9.1.0"))
    elf = host.doc["elf"][LIB + "/libtorch_cuda.so"]
    elf["runpath"], elf["rpath"] = elf["rpath"], []
    found = _codes(framework_linkage(CheckContext(probe_facts(host), [])))
    f = found["cudnn.shadowed"]
    assert f.severity == "warning" and "/opt/cudnn/lib" in f.title and "LD_LIBRARY_PATH" in f.title
    # the fix removes the one offending entry, not the whole variable (issue 11, "Fixes that work")
    assert f.fix.commands == ['export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | '
                              'grep -vx /opt/cudnn/lib | paste -sd:)"']
    # ...and with RPATH (the PyPI wheel as shipped) the same machine is quiet.
    assert "cudnn.shadowed" not in _codes(framework_linkage(CheckContext(probe_facts(torch_host(
        ldp="/opt/cudnn/lib", system_cudnn=("/opt/cudnn/lib", "libcudnn.so.9.1.0"))), [])))


def test_onnxruntime_gpu_without_its_cudnn_major():
    # onnxruntime-gpu 1.19.2 from PyPI is built for CUDA 12 and cuDNN 9 (onnxruntime.json); only a
    # cuDNN 8 is on the loader path.
    facts = Facts([
        ok("framework.onnxruntime", {"version": "1.19.2", "packages": {"onnxruntime-gpu": "1.19.2"}, "gpu": True,
                                     "cuda": None, "cudnn": None}, "test"),
        ok("libraries.loader_choice", {"libcudnn.so.8": {"path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
                                                          "resolved": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7"}},
           "test"),
        ok("os.id", "ubuntu", "file:/etc/os-release"), ok("os.version", "22.04", "file:/etc/os-release"),
    ])
    f = _codes(onnxruntime_packaging(CheckContext(facts, [])))["onnxruntime.cudnn_major_mismatch"]
    assert "cuDNN 9" in f.title and "libcudnn.so.8" in f.title
    # both sides: the copy the loader has (its version from the file name, and where it is)
    assert "cuDNN 8.9.7" in f.title and "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7" in f.title
    assert f.fix.install == "envdoctor install cudnn --version 9"


def test_other_nvml_failures_are_reported():
    facts = Facts([ok("driver.installed", True, "test"), ok("driver.kernel_module.loaded", True, "test"),
                   ok("driver.kernel_module.version", "550.54.15", "test"),
                   ok("driver.nvml.status", "NVML_ERROR_UNKNOWN", "nvml:init"), ok("gpu.count", 1, "test")])
    f = _codes(driver_health(CheckContext(facts, [])))["driver.nvml_failed"]
    # The nvidia module is loaded: a node with an NVIDIA device whose NVML fails is not passed.
    assert f.severity == "error" and "NVML_ERROR_UNKNOWN" in f.title and "internal driver error" in f.title
    # Without any NVIDIA device seen (no module, nothing on the bus) the same failure is a warning.
    facts = Facts([ok("driver.installed", True, "test"), ok("driver.kernel_module.loaded", False, "test"),
                   ok("gpu.pci_devices", [], "test"), ok("gpu.proc_devices", [], "test"),
                   ok("driver.nvml.status", "NVML_ERROR_UNKNOWN", "nvml:init")])
    assert _codes(driver_health(CheckContext(facts, [])))["driver.nvml_failed"].severity == "warning"


def test_a_crashed_or_hung_probe_becomes_a_finding_asking_for_a_report():
    probes = [ProbeResult("gpu", "GPUs", status="crashed", error="ValueError: garbled (at gpu.py:12)"),
              ProbeResult("containers", "Containers", status="timed_out", error="did not finish")]
    found = _codes(probe_health(CheckContext(Facts(), probes)))
    assert "ValueError: garbled" in found["envdoctor.probe_crashed"].title
    assert "snapshot" in found["envdoctor.probe_crashed"].fix.text
    assert found["envdoctor.probe_timed_out"].severity == "warning"
    assert list(probe_health(CheckContext(Facts(), [ProbeResult("os", "OS")]))) == []

"""Verdicts that follow the consequence (issue 11, section 2): each with a machine where it fires and one where
it must stay quiet.  Facts are written in the shapes the probes produce (see envdoctor/probes/cuda.py and
driver.py); the corpus cases named in each test are the real-world machines the rule was generalised from.
"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Fact, Facts, ok

CUDA116 = {"path": "/usr/local/cuda-11.6", "version": "11.6.55", "release": "11.6", "kind": "system",
           "source": "dir:/usr/local/cuda-11.6 (libcudart.so.11.6.55)", "cudart": "11.6.55", "compat": [],
           "found_by": "dir:/usr/local"}


def run(facts: List[Fact]) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(Facts(facts), []))}


def rtx5090() -> List[Fact]:
    return [ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", "NVIDIA GeForce RTX 5090", "nvml:device.0.name"),
            ok("gpu.0.compute_capability", "12.0", "nvml:device.0.compute_capability")]


def toolkit_via_symlink(with_nvcc: bool) -> List[Fact]:
    return [ok("cuda.default_symlink", {"target": "cuda-11.6", "resolved": "/usr/local/cuda-11.6",
                                        "version": "11.6.55", "dangling": False}, "link:/usr/local/cuda"),
            ok("cuda.toolkits", [dict(CUDA116, nvcc=with_nvcc)], "derived")]


def test_a_runtime_only_toolkit_is_not_judged_as_a_compiler() -> None:
    # corpus: healthy-container-cuda116-on-newer-driver (a CUDA 11.6 base image on an RTX 5090 host)
    assert "cuda.gpu_newer_than_toolkit" not in run(rtx5090() + toolkit_via_symlink(with_nvcc=False))
    f = run(rtx5090() + toolkit_via_symlink(with_nvcc=True))["cuda.gpu_newer_than_toolkit"]
    assert "11.6" in f.title and "sm_120" in f.title


def driver_460_with_libcuda(libcuda_version: str) -> List[Fact]:
    return [ok("driver.installed", True, "file:/usr/lib/x86_64-linux-gnu"),
            ok("driver.nvml.status", "ok", "nvml:init"), ok("driver.version", "460.80", "nvml:system.driver_version"),
            ok("driver.userspace.libraries", ["/usr/lib/x86_64-linux-gnu/libcuda.so.%s" % libcuda_version,
                                              "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.460.80"], "derived"),
            ok("gpu.count", 1, "nvml:device_count"),
            ok("gpu.0.name", "NVIDIA GeForce RTX 3090", "nvml:device.0.name"),
            ok("gpu.0.compute_capability", "8.6", "nvml:device.0.compute_capability")]


def test_compat_libcuda_copied_into_a_loader_directory_is_an_error_on_geforce() -> None:
    # corpus: container-cuda-compat-injected-geforce-804 (NVIDIA/nvidia-docker#1515)
    f = run(driver_460_with_libcuda("465.19.01"))["driver.forward_compat_unsupported_gpu"]
    assert f.severity == "error" and "465.19.01" in f.title and "804" in f.title
    assert "cuda-compat" in f.fix.text and f.fix.install is None
    # the driver's own libcuda: nothing to say
    assert "driver.forward_compat_unsupported_gpu" not in run(driver_460_with_libcuda("460.80"))

"""Old stacks: a driver whose NVML cannot say its CUDA level (R340 has no nvmlSystemGetCudaDriverVersion) gets it
from its version and the CUDA release notes' driver table (cuda.json, now from CUDA 6.5)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat import Driver, compat
from envdoctor.facts import Fact, Facts, ok


def _facts(driver: str) -> Facts:
    return Facts([ok("driver.version", driver, "nvml:system.driver_version"),
                  Fact("driver.cuda_version", None, "nvml:system.cuda_driver_version", "unknown",
                       "NVML did not report the CUDA driver version (NVML_ERROR_FUNCTION_NOT_FOUND)"),
                  ok("gpu.count", 1, "nvml:device_count"),
                  ok("gpu.0.compute_capability", "3.5", "nvml:device.0.compute_capability")])


def test_r340_driver_runs_cuda_65_by_its_version() -> None:
    drv = Driver(_facts("340.108"))
    assert drv.known and drv.describe() == "Driver 340.108 supports CUDA up to 6.5"
    assert Driver(_facts("352.79")).describe() == "Driver 352.79 supports CUDA up to 7.5"


def test_a_cuda_8_framework_on_r340_is_too_old() -> None:
    # torch 0.3.1 for CUDA 8.0 (pip's cu80 wheel) on the last R340 driver
    facts = Facts(list(_facts("340.108")) + [ok("framework.torch", {
        "version": "0.3.1", "public": "0.3.1", "cuda": "8.0", "build": "cuda", "path": "/site", "package": "torch"},
        "file:/site/torch/version.py")])
    found = {f.code: f for f in compat(CheckContext(facts, []))}
    f = found["driver.too_old_for_framework"]
    assert f.severity in ("error", "warning") and "340.108" in f.title and "6.5" in f.title and "8.0" in f.title

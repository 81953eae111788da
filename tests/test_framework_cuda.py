"""A framework's CUDA when the package does not say: TensorFlow up to 2.2 writes no CUDA version into build_info.py on
Linux (only is_cuda_build), so the release's tested configuration answers; NVIDIA's own builds (nvidia-tensorflow
1.15.x+nvYY.MM) were built from the NGC release YY.MM, whose TensorFlow release notes name its CUDA."""

from __future__ import annotations

from typing import Any, Dict

from envdoctor.checks import CheckContext
from envdoctor.checks.compat import compat, tensorflow_build_cuda
from envdoctor.facts import Facts, ok
from envdoctor.matrix import builds


def _tf(version: str, packages: Dict[str, str]) -> Dict[str, Any]:
    # what the probe makes of a Linux TF <= 2.2 build_info.py: is_cuda_build = True and nothing else
    return {"version": version, "public": version, "cuda": None, "cudnn": None, "build": "cuda",
            "packages": packages, "path": "/site"}


def test_tensorflow_up_to_22_takes_its_release_tables_cuda() -> None:
    assert tensorflow_build_cuda(_tf("2.2.0", {"tensorflow": "2.2.0"})) == "10.1"
    assert tensorflow_build_cuda(_tf("1.15.5", {"tensorflow-gpu": "1.15.5"})) == "10.0"


def test_nvidia_tensorflow_takes_its_ngc_releases_cuda() -> None:
    assert tensorflow_build_cuda(_tf("1.15.5", {"nvidia-tensorflow": "1.15.5+nv22.10"})) == "11.8.0"
    assert tensorflow_build_cuda(_tf("1.15.4", {"nvidia-tensorflow": "1.15.4+nv20.10"})) == "11.1.0"
    # between two listed releases of one CUDA minor (21.04 and 21.06: 11.3): that minor
    assert builds.nvidia_tensorflow_build("1.15.5+nv21.5")[0] == "11.3.0"  # type: ignore[index]
    # a release the notes here do not cover: unknown, never the upstream 1.15's CUDA 10.0
    assert tensorflow_build_cuda(_tf("1.15.5", {"nvidia-tensorflow": "1.15.5+nv21.08"})) is None


def test_nvidia_tensorflow_on_a_driver_for_cuda_112_is_judged_by_its_own_cuda() -> None:
    facts = Facts([ok("driver.version", "460.91.03", "nvml:system.driver_version"),
                   ok("driver.cuda_version", "11.2", "nvml:system.cuda_driver_version"),
                   ok("framework.tensorflow", _tf("1.15.5", {"nvidia-tensorflow": "1.15.5+nv22.10"}),
                      "file:/site/tensorflow_core/python/platform/build_info.py")])
    found = {f.code: f for f in compat(CheckContext(facts, []))}
    f = found["driver.minor_version_compat"]  # 11.8 on a driver for 11.2: minor-version compatibility
    assert "11.8" in f.title and "460.91.03" in f.title

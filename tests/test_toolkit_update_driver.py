"""A CUDA toolkit's update release against the driver NVIDIA's Table 3 ("CUDA Toolkit and Corresponding Driver
Versions") gives that update: CUDA 11.4.0 GA needs 470.42.01, 11.4 Update 1/2 470.57.02, Update 3/4 470.82.01.

The machine is the B16 corpus case of JAX's installation guide (jaxlib 0.3.2+cuda11.cudnn82 using the CUDA 11.4
Update 4 toolkit, whose version.json says 11.4.4 and whose nvcc says V11.4.152, on driver 470.57.02); the variants
edit its version.json or its virtual environment.
"""

from __future__ import annotations

import json
from typing import Any, Dict

from envdoctor.matrix import hardware as hw

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b16-ubuntu2004-jaxlib032-cuda11-cuda1144-toolkit-on-driver47057-needs-47082"
VERSION_JSON = "/usr/local/cuda-11.4/version.json"


def _codes(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {f.code: f for f in snapshot_findings(doc)}


def _toolkit(doc: Dict[str, Any], version: str) -> Dict[str, Any]:
    text = json.loads(doc["files"][VERSION_JSON]["text"])
    text["cuda"]["version"] = version
    doc["files"][VERSION_JSON]["text"] = json.dumps(text)
    return doc


def _without_jax(doc: Dict[str, Any]) -> Dict[str, Any]:
    site = "/home/user/jaxenv/lib/python3.8/site-packages"
    doc["dirs"][site]["entries"] = [e for e in doc["dirs"][site]["entries"] if not e.startswith("jax")]
    return doc


def test_table_3_rows_of_each_11_4_update() -> None:
    assert [hw.min_driver_for_cuda(v) for v in ("11.4.0", "11.4.1", "11.4.2", "11.4.3", "11.4.4")] == [
        "470.42.01", "470.57.02", "470.57.02", "470.82.01", "470.82.01"]
    assert hw.driver_runs("11.4.4", "470.57.02", "11.4") == "minor_compat"
    assert hw.driver_runs("11.4.4", "470.82.01", "11.4") == "ok"
    assert hw.driver_runs("11.4.0", "470.57.02", "11.4") == "ok"


def test_jax_with_the_11_4_update_4_toolkit_on_470_57_needs_470_82() -> None:
    f = _codes(corpus_snapshot(CASE))["driver.too_old_for_toolkit"]
    assert f.severity in ("warning", "error")
    assert "470.57.02" in f.title and "470.82.01" in f.title and "needs CUDA 11.4.4" in f.title
    assert "470.82.01" in f.fix.text


def test_the_ga_toolkit_on_the_same_driver_is_quiet() -> None:
    found = _codes(_toolkit(corpus_snapshot(CASE), "11.4.0"))
    assert "driver.too_old_for_toolkit" not in found and "driver.minor_version_compat" not in found


def test_update_4_without_a_runtime_compiling_user_is_minor_version_compatibility_at_info() -> None:
    # the same policy as a newer minor: a toolkit alone runs under minor-version compatibility (its PTX is 11.4's,
    # which the driver JITs), so it is told at info with the update's own driver
    found = _codes(_without_jax(corpus_snapshot(CASE)))
    assert "driver.too_old_for_toolkit" not in found
    f = found["driver.minor_version_compat"]
    assert f.severity == "info" and "470.82.01" in f.title and "needs CUDA 11.4.4" in f.title

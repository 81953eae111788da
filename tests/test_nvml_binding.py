"""nvml.binding_needs_missing_function: an NVML binding's versioned functions against the driver release's NVML.

nvidia-ml-py 12.535.77's pynvml.py (PyPI's nvidia_ml_py-12.535.77-py3-none-any.whl, as in the corpus case
b84d-...-nvitop120-nvidia-ml-py1253577-process-info-v3-removed-no-process-list) hands its process queries to the _v3
functions only. NVIDIA/nvidia-settings src/nvml.h: _v3 declared from 510.39.01 on, dropped in 535.98, declared again
in 535.104.05; never in 470.x or 495.x."""

from typing import Any, Dict, List, Optional

import pytest

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.nvml_binding import lacks, nvml_binding
from envdoctor.facts import Facts, ok
from envdoctor.findings import Finding

V3 = {"nvmlDeviceGetComputeRunningProcesses": "nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetGraphicsRunningProcesses": "nvmlDeviceGetGraphicsRunningProcesses_v3",
      "nvmlDeviceGetMPSComputeRunningProcesses": "nvmlDeviceGetMPSComputeRunningProcesses_v3",
      "nvmlDeviceGetPciInfo": "nvmlDeviceGetPciInfo_v3"}
V2 = {k: v.replace("_v3", "_v2") for k, v in V3.items()}


def _judge(driver: Optional[str], calls: Optional[Dict[str, str]] = None) -> List[Finding]:
    entry: Dict[str, Any] = {"package": "nvidia-ml-py", "version": "12.535.77", "file": "/venv/pynvml.py",
                             "calls": V3 if calls is None else calls}
    facts = [ok("python.nvml_bindings", [entry], "file:/venv/pynvml.py")]
    if driver:
        facts.append(ok("driver.version", driver, "nvml:system.driver_version"))
    return list(nvml_binding(CheckContext(Facts(facts), [])))


def test_the_rows_are_valid_and_read_from_the_headers() -> None:
    doc = matrix.read_document("nvml_functions")
    assert matrix.problems_of("nvml_functions", doc) == []
    assert all("nvidia-settings" in r["source"]["url"] for r in doc["rows"])


def test_v3_process_queries_on_535_98_warn_naming_the_release_that_has_them_again() -> None:
    found = _judge("535.98")
    assert [f.code for f in found] == ["nvml.binding_needs_missing_function"]
    f = found[0]
    assert f.severity == "warning"
    assert "535.98" in f.title and "535.104.05" in f.title and "nvidia-ml-py 12.535.77" in f.title
    assert "nvmlDeviceGetComputeRunningProcesses_v3" in f.title and "PciInfo" not in f.title
    assert "NVML_ERROR_FUNCTION_NOT_FOUND" in f.detail and "nvitop" in f.detail
    assert "535.104.05" in f.fix.text
    assert f.source["url"].startswith("https://github.com/NVIDIA/nvidia-settings/")


def test_a_driver_of_an_older_branch_is_told_the_first_release_that_has_them() -> None:
    f = _judge("470.256.02")[0]
    assert "470.256.02" in f.title and "510.39.01" in f.fix.text


@pytest.mark.parametrize("driver", ["535.104.05", "535.86.05", "510.39.01", "550.54.15", "580.95.05"])
def test_quiet_where_the_driver_has_them(driver: str) -> None:
    assert _judge(driver) == []


def test_quiet_for_a_binding_on_the_v2_functions_an_unread_one_or_no_driver_version() -> None:
    assert _judge("535.98", V2) == []
    assert _judge("535.98", {}) == []
    assert _judge(None) == []
    facts = Facts([ok("python.nvml_bindings", [{"package": "nvidia-ml-py", "version": "12.535.77",
                                                "unread": "cannot be read"}], "file:/venv/pynvml.py"),
                   ok("driver.version", "535.98", "nvml")])
    assert list(nvml_binding(CheckContext(facts, []))) == []


def test_lacks_reads_first_release_branch_and_gaps() -> None:
    row = {"first": "510.39.01", "missing_in": [{"release": "535.98", "restored_in": "535.104.05"}]}
    assert lacks(row, "535.98") == (True, "535.104.05")
    assert lacks(row, "495.46") == (True, None) and lacks(row, "470.256.02") == (True, None)
    assert lacks(row, "510.47.03") == (False, None) and lacks(row, "garbage") == (False, None)


def test_the_probe_reads_which_versioned_function_each_query_hands_over_to() -> None:
    from envdoctor.probes import run_probes

    from .conftest import make_host

    site = "/home/user/venv/lib/python3.10/site-packages"
    module = ("def nvmlDeviceGetComputeRunningProcesses_v3(handle):\n"
              "    fn = _nvmlGetFunctionPointer(\"nvmlDeviceGetComputeRunningProcesses_v3\")\n\n"
              "def nvmlDeviceGetComputeRunningProcesses(handle):\n"
              "    return nvmlDeviceGetComputeRunningProcesses_v3(handle);\n\n"
              "def nvmlDeviceGetGraphicsRunningProcesses(handle):\n"
              "    try:\n        return nvmlDeviceGetGraphicsRunningProcesses_v3(handle)\n"
              "    except NVMLError_FunctionNotFound:\n"
              "        return nvmlDeviceGetGraphicsRunningProcesses_v2(handle)\n")
    def bindings(text: str) -> Any:
        host = make_host(files={site + "/nvidia_ml_py-12.535.77.dist-info/METADATA":
                                "Metadata-Version: 2.1\nName: nvidia-ml-py\nVersion: 12.535.77\n",
                                site + "/pynvml.py": text},
                         python={"executable": "/home/user/venv/bin/python", "version": "3.10.12",
                                 "implementation": "cpython", "prefix": "/home/user/venv", "base_prefix": "/usr",
                                 "sys_path": [site]})
        return Facts(f for r in run_probes(host, parallel=False, only=("python", "nvmlbindings"))
                     for f in r.facts).value("python.nvml_bindings")

    [entry] = bindings(module)
    assert entry["package"] == "nvidia-ml-py" and entry["version"] == "12.535.77"
    # a query that falls back to the older function is not a hand-over to one function
    assert entry["calls"] == {"nvmlDeviceGetComputeRunningProcesses": "nvmlDeviceGetComputeRunningProcesses_v3"}
    # a snapshot keeps only the hand-overs of the module, and its replay reads the same
    from envdoctor.host.base import file_filter

    keep = file_filter(site + "/pynvml.py")
    assert keep is not None
    kept = keep(module)
    assert kept == ("def nvmlDeviceGetComputeRunningProcesses(handle):\n"
                    "    return nvmlDeviceGetComputeRunningProcesses_v3(handle);\n")
    assert bindings(kept)[0]["calls"] == entry["calls"]

"""`envdoctor diagnose` on the machine running the tests (no GPU here; CI is the same kind).

Invariants only: the output is schema-valid, every probe finishes, this machine's pip-assembled
CUDA 13.0 toolkit at /usr/local/cuda-13.0 is found (when the machine has it), and the absence of
a GPU is reported cleanly rather than as a pile of errors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def live_report():
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    assert "Traceback" not in r.stderr
    return json.loads(r.stdout)


def _facts(report):
    return {f["key"]: f for p in report["probes"] for f in p["facts"]}


def test_schema_valid_and_every_probe_finished(live_report):
    with open(os.path.join(ROOT, "envdoctor", "schemas", "report.schema.json")) as fh:
        jsonschema.validate(live_report, json.load(fh))
    assert [p["name"] for p in live_report["probes"] if p["status"] != "ok"] == []
    assert {"os", "cpu", "driver", "gpu", "cuda", "libraries", "compilers", "python", "frameworks",
            "containers"} <= {p["name"] for p in live_report["probes"]}


def test_os_facts_match_this_machine(live_report):
    import distro

    facts = _facts(live_report)
    assert facts["os.id"]["value"] == distro.id()
    assert facts["kernel.release"]["value"] == os.uname().release


@pytest.mark.skipif(not os.path.isdir("/usr/local/cuda-13.0"), reason="this machine has no /usr/local/cuda-13.0")
def test_finds_this_machines_cuda_13_toolkit(live_report):
    toolkits = _facts(live_report)["cuda.toolkits"]["value"]
    assert any(t["path"] == "/usr/local/cuda-13.0" and str(t["version"]).startswith("13.0") for t in toolkits), \
        toolkits


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="this machine has an NVIDIA GPU")
def test_no_gpu_is_reported_cleanly(live_report):
    facts = _facts(live_report)
    assert facts["gpu.count"]["value"] == 0
    assert not [f for f in live_report["findings"] if f["severity"] == "error"]
    gpu_probe = next(p for p in live_report["probes"] if p["name"] == "gpu")
    # A laptop without a GPU is a valid user: a few plain facts, not a wall of unknowns.
    assert sum(1 for f in gpu_probe["facts"] if f["status"] != "ok") <= 1

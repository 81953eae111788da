"""Live captures from real GPU machines (tests/live/*): replay equals the live run, and the facts
agree with what NVIDIA's and the frameworks' own tools printed on that machine.

tests/live/README.md says how each file was made. These are the only fixtures that were not
rebuilt by hand: a regression here means envdoctor now reads a real, working GPU machine
differently from how it read it live.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import pytest

LIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "live")
CAPTURES = sorted(n for n in os.listdir(LIVE) if os.path.isfile(os.path.join(LIVE, n, "snapshot.json.gz")))


def _replay(name: str) -> Dict[str, Any]:
    snap = os.path.join(LIVE, name, "snapshot.json.gz")
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--snapshot", snap, "--format", "json"],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ, NO_COLOR="1"))
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _facts(report: Dict[str, Any]) -> Dict[str, Any]:
    return {f["key"]: f.get("value") for p in report["probes"] for f in p["facts"]}


def _findings(report: Dict[str, Any]) -> List[Tuple[str, str]]:
    return sorted((f["code"], f["severity"]) for f in report["findings"])


@pytest.fixture(scope="module", params=CAPTURES)
def capture(request):
    name = request.param
    with open(os.path.join(LIVE, name, "live-diagnose.json"), encoding="utf-8") as fh:
        live = json.load(fh)
    vendor_path = os.path.join(LIVE, name, "vendor-tools.txt")
    vendor = ""
    if os.path.isfile(vendor_path):
        with open(vendor_path, encoding="utf-8", errors="replace") as fh:
            vendor = fh.read()
    return name, live, _replay(name), vendor


def test_there_is_a_live_capture():
    assert CAPTURES, "tests/live holds no capture"


def test_the_working_machine_gets_no_error(capture):
    # The verdict may legitimately change when the checks improve; what it must not do is raise an
    # error on this machine, which worked (torch and JAX ran on its GPU).
    _, _, replay, _ = capture
    assert not [f for f in replay["findings"] if f["severity"] == "error"], replay["findings"]
    assert replay["summary"]["error"] == 0


#: Fields of a live run's facts a later probe corrected on purpose: (fact key, field, live value, replayed value) ->
#: why. The same file is found either way; only how it is named changed.
CORRECTED = {
    ("linkage.jax.dlopen", "via", repr("RUNPATH"), repr("RPATH")):
        "JAX's CUDA plugin opens cuDNN itself and carries a DT_RPATH ($ORIGIN/../../nvidia/cudnn/lib), which ld.so "
        "searches before LD_LIBRARY_PATH; the live run named the wheel directory a RUNPATH (same file resolved)",
}


#: A GPU's readings of the moment: the snapshot and the live run were taken a few seconds apart, so they may read
#: another temperature, load, memory use, link speed or reason for the clocks (idle, then not).
VOLATILE = re.compile(r"^gpu\.\d+\.(?:temperature_celsius|clock_event_reasons|utilization_\w+"
                      r"|memory_(?:used|free)_bytes|pcie_(?:gen|width)_current)$")


def test_replay_reads_the_same_facts_as_the_live_run(capture):
    _, live, replay, _ = capture
    live_facts, replay_facts = _facts(live), _facts(replay)
    # Facts can be added by newer probes; every fact the live run reported must replay unchanged -- except that
    # one the live run could not learn (None) may be learned now from the same evidence (issue 11: the user-space
    # driver version of this container, whose libraries live in /usr/local/nvidia/lib64 on LD_LIBRARY_PATH).
    def same(old: Any, new: Any, key: str = "") -> bool:  # a newer probe may add keys to a fact's value, never
        if isinstance(old, dict) and isinstance(new, dict):  # change one (but a field corrected on purpose below)
            return all(k in new and (same(v, new[k], key) or (key, k, repr(v), repr(new[k])) in CORRECTED)
                       for k, v in old.items())
        if isinstance(old, list) and isinstance(new, list):  # ...nor to the entries of a list
            return len(old) == len(new) and all(same(o, n, key) for o, n in zip(old, new))
        return bool(old == new)

    changed = {k: (v, replay_facts.get(k)) for k, v in live_facts.items()
               if not same(v, replay_facts.get(k, object()), k) and v is not None and not VOLATILE.search(k)}
    assert not changed
    learned = {k: replay_facts.get(k) for k, v in live_facts.items() if v is None and replay_facts.get(k) is not None}
    assert learned.get("driver.userspace.version", "580.159.04") == "580.159.04"  # what nvidia-smi printed


def _torch_answer(vendor: str) -> Any:
    """(torch version, its CUDA, GPU 0's compute capability) as torch printed them, or None: the first capture's
    one line ("<version> <cuda> <cudnn> [arch list] True (major, minor)"), or scripts/device_capture.sh's lines
    ("torch 2.11.0+cu130 cuda 13.0 ..." and "0 NVIDIA H200 (9, 0) _CudaDeviceProperties(...)")."""
    one = re.search(r"^(\d+\.\d+\.\d+)(?:\+cu\d+)? (\d+\.\d+) \d+ \[.*\] True \((\d+), (\d+)\)$", vendor, re.M)
    if one:
        return one.group(1), one.group(2), "%s.%s" % (one.group(3), one.group(4))
    head = re.search(r"^torch (\d+\.\d+\.\d+)(?:\+cu\d+)? cuda (\d+\.\d+) ", vendor, re.M)
    cc = re.search(r"^0 .+? \((\d+), (\d+)\) _CudaDeviceProperties", vendor, re.M)
    if head and cc:
        return head.group(1), head.group(2), "%s.%s" % (cc.group(1), cc.group(2))
    return None


def test_facts_agree_with_the_vendor_tools(capture):
    name, _, replay, vendor = capture
    if not vendor:
        pytest.skip("%s has no vendor-tools.txt (tests/live/README.md says why)" % name)
    facts = _facts(replay)
    smi = re.search(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)", vendor)
    assert smi, "vendor-tools.txt lacks nvidia-smi's header"
    assert facts["driver.version"] == smi.group(1)
    assert facts["driver.cuda_version"] == smi.group(2)
    names = re.findall(r"Product Name\s*:\s*(.+)", vendor)
    assert facts["gpu.count"] == len(names)
    for i, name in enumerate(names):
        assert facts[f"gpu.{i}.name"] == name.strip()
    torch = _torch_answer(vendor)
    if torch:
        version, cuda, cc = torch
        assert facts["framework.torch"]["version"] == version
        assert facts["framework.torch"]["cuda"] == cuda
        assert facts["gpu.0.compute_capability"] == cc
    nvcc = re.search(r"Cuda compilation tools, release (\d+\.\d+), V(\S+)", vendor)
    if nvcc:
        assert facts["cuda.nvcc"]["version"] == nvcc.group(2)

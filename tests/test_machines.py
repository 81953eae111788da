"""The captured machines (tests/machines/*): the real probes replayed on each.

Each machine folder holds a miniature root filesystem and a machine.json built
from real published files and command outputs (tests/machines/README.md and
each machine.json's "sources" say where every piece came from).  The facts a
user would check on that machine are kept in machine.json under "expect":

* ``"os.id": "ubuntu"`` -- the fact's value;
* ``"framework.torch:version": "2.4.0+cu121"`` -- one field of a fact whose
  value is a mapping;
* ``"cuda.toolkits:version": ["11.8.0"]`` -- that field of every item of a
  fact whose value is a list of mappings;
* ``None`` -- the fact exists and is known, whatever its value.

Only facts whose probe module is implemented are asserted; a key whose layer
has no probe yet is skipped (the lead extends the expectations as probes land).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict

import pytest

from envdoctor.facts import Facts
from envdoctor.host.snapshot import validate_document
from envdoctor.probes import run_probes
from envdoctor.report import diagnose

from .conftest import MACHINES, load_machine, machine_names

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = machine_names()

#: The issue's coverage list: each entry must be represented by some machine.
REQUIRED = {
    "Ubuntu 20.04": ("os.id", "ubuntu", "os.version", "20.04"),
    "Ubuntu 22.04": ("os.id", "ubuntu", "os.version", "22.04"),
    "Ubuntu 24.04": ("os.id", "ubuntu", "os.version", "24.04"),
    "CentOS 7": ("os.id", "centos", "os.version", "7"),
    "Rocky 8": ("os.id", "rocky", "os.version", "8.9"),
    "Rocky 9": ("os.id", "rocky", "os.version", "9.3"),
    "Debian 12": ("os.id", "debian", "os.version", "12"),
}


def _meta(name: str) -> Dict[str, Any]:
    with open(os.path.join(MACHINES, name, "machine.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _facts(name: str) -> Facts:
    return Facts(f for r in run_probes(load_machine(name)) for f in r.facts)


def _fact_map(name: str) -> Dict[str, Any]:
    return {f.key: f for f in _facts(name)}


def _lookup(facts: Dict[str, Any], key: str):
    """(found, value) for an "expect" key, following the ``:field`` convention."""
    base, _, field = key.partition(":")
    fact = facts.get(base)
    if fact is None:
        return False, None
    value = fact.value
    if not field:
        return True, value
    if isinstance(value, dict):
        return True, value.get(field)
    if isinstance(value, list):
        return True, [item.get(field) if isinstance(item, dict) else None for item in value]
    return True, None


def test_at_least_twelve_machines():
    assert len(NAMES) >= 12, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_snapshot_validates(name):
    with open(os.path.join(MACHINES, name, "snapshot.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    validate_document(doc, name)
    assert doc["files"], "a machine with no files replays as an empty box"


@pytest.mark.parametrize("name", NAMES)
def test_machine_says_where_everything_came_from(name):
    meta = _meta(name)
    assert meta.get("description")
    assert meta.get("sources") and all(isinstance(v, str) and v for v in meta["sources"].values())
    readme = open(os.path.join(MACHINES, "README.md"), encoding="utf-8").read()
    assert name in readme, "tests/machines/README.md has no row for %s" % name


def test_committed_snapshots_are_up_to_date():
    """The machines' snapshots, checked as the script is run (those of tests/corpus, which ``--check`` with no names
    also checks, are held to the same by tests/test_corpus.py, spread over the test workers)."""
    built = sorted(n for n in os.listdir(MACHINES) if os.path.isfile(os.path.join(MACHINES, n, "machine.json")))
    assert built
    r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "make_fixture.py"), "--check"] + built,
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", NAMES)
def test_no_probe_crashes_or_times_out(name):
    results = run_probes(load_machine(name))
    broken = ["%s: %s %s" % (r.name, r.status, r.error) for r in results if r.status != "ok"]
    assert not broken, broken


@pytest.mark.parametrize("name", NAMES)
def test_diagnose_runs(name):
    report = diagnose(load_machine(name))
    assert report is not None


@pytest.mark.parametrize("name", NAMES)
def test_expected_facts(name):
    facts = _fact_map(name)
    expect = _meta(name).get("expect", {})
    assert expect, "%s has no expectations" % name
    probed_layers = {k.split(".")[0] for k in facts}
    checked = 0
    for key, want in sorted(expect.items()):
        found, value = _lookup(facts, key)
        if not found and key.split(".")[0] not in probed_layers:
            continue  # that layer's probe is not written yet
        assert found, "%s: no fact %s" % (name, key.split(":")[0])
        fact = facts[key.split(":")[0]]
        if want is None:
            assert fact.status == "ok", "%s: %s is %s (%s)" % (name, key, fact.status, fact.reason)
        else:
            assert value == want, "%s: %s is %r, expected %r" % (name, key, value, want)
        checked += 1
    assert checked >= 3, "%s: only %d expectations could be checked" % (name, checked)


def test_issue_coverage():
    """Every platform the issue lists is represented by a machine the OS probe recognises."""
    seen = []
    for name in NAMES:
        facts = _fact_map(name)
        seen.append((name, facts["os.id"].value, facts.get("os.version") and facts["os.version"].value))
    for what, (_, os_id, _, version) in REQUIRED.items():
        assert any(i == os_id and v == version for _, i, v in seen), "no %s machine: %s" % (what, seen)
    wsl = [n for n in NAMES if _fact_map(n)["os.wsl"].value == "WSL2"]
    assert wsl, "no WSL2 machine"


def test_eight_gpu_server_lists_every_gpu():
    facts = _fact_map("centosstream9-8xh100")
    assert facts["gpu.count"].value == 8
    assert [facts["gpu.%d.name" % i].value for i in range(8)] == ["NVIDIA H100"] * 8


def test_broken_driver_is_reported_not_guessed():
    """Kernel module and user-space disagree: the driver version is unknown, both sides are shown."""
    facts = _fact_map("ubuntu2404-driver-mismatch")
    assert facts["driver.kernel_module.version"].value == "580.173.02"
    assert facts["driver.userspace.version"].value == "580.178.04"
    assert facts["driver.version"].status != "ok"


def test_laptop_without_gpu_has_no_driver_or_cuda():
    facts = _fact_map("debian12-nogpu")
    assert facts["gpu.count"].value == 0
    assert facts["driver.installed"].value is False
    assert facts["cuda.toolkits"].value == []


@pytest.mark.parametrize("name", NAMES)
def test_expected_findings(name):
    """The finding codes diagnose() gives on each machine, compared EXACTLY with machine.json's
    "expect_findings" once the machine's list is reviewed ("findings_reviewed": true) or when
    ENVDOCTOR_CHECK_FINDINGS=1 asks for every machine."""
    meta = _meta(name)
    assert isinstance(meta.get("expect_findings"), list), "%s: machine.json needs an \"expect_findings\" list" % name
    if not (meta.get("findings_reviewed") is True or os.environ.get("ENVDOCTOR_CHECK_FINDINGS") == "1"):
        pytest.skip("expect_findings not reviewed yet (set ENVDOCTOR_CHECK_FINDINGS=1 to compare)")
    got = sorted({f.code for f in diagnose(load_machine(name)).findings})
    assert got == sorted(set(meta["expect_findings"])), "%s: finding codes %r, expected %r" % (
        name, got, sorted(set(meta["expect_findings"])))


def test_hostile_machine_says_unknown_or_timed_out_with_reasons():
    """Truncated /proc file, garbled taint and daemon.json, hung NVML/nvidia-smi/dkms/nvcc, corrupt
    ldconfig output: every affected fact says unknown or timed_out and why; nothing crashes."""
    name = "ubuntu2204-hostile-broken"
    results = run_probes(load_machine(name))
    assert all(r.status == "ok" for r in results), [(r.name, r.status, r.error) for r in results]
    facts = {f.key: f for r in results for f in r.facts}
    want = {
        "driver.kernel_module.version": ("unknown", "unexpected contents of /proc/driver/nvidia/version"),
        "driver.kernel_module.flavor": ("unknown", "cannot tell open from proprietary"),
        "driver.version": ("timed_out", "timed out"),
        "driver.cuda_version": ("timed_out", "timed out"),
        "driver.dkms.status": ("timed_out", "timed out"),
        "gpu.status": ("timed_out", "driver not working"),
        "gpu.0.name": ("unknown", "the driver gave no answer"),
        "cuda.nvcc": ("timed_out", "hung"),
        "compiler.gcc": ("unknown", "unexpected output"),
        "libraries.ld_cache": ("unknown", "unexpected output of ldconfig -p"),
        "container.daemon_json": ("unknown", "not valid JSON"),
    }
    for key, (status, why) in want.items():
        fact = facts.get(key)
        assert fact is not None, "no fact %s" % key
        assert fact.status == status, "%s is %s (%s), expected %s" % (key, fact.status, fact.reason, status)
        assert fact.value is None, "%s guessed a value: %r" % (key, fact.value)
        assert fact.reason and why in fact.reason, "%s: reason %r lacks %r" % (key, fact.reason, why)
    # NVML's status is itself known: it timed out; the PCI bus still shows the GPU
    assert facts["driver.nvml.status"].value == "timed_out"
    assert facts["gpu.count"].value == 1
    assert facts["gpu.0.pci_device_id"].value == "10de:20b2"
    assert diagnose(load_machine(name)) is not None


def test_enriched_machines_show_their_driver_from_every_side():
    """PCI bus, /proc, taint, user-space libraries and the loader cache agree on a healthy machine."""
    facts = _fact_map("centosstream9-8xh100")
    assert [d["device_id"] for d in facts["gpu.pci_devices"].value] == ["10de:2330"] * 8
    assert facts["driver.kernel_module.flavor"].value == "proprietary"
    assert facts["driver.userspace.version"].value == facts["driver.version"].value == "535.154.05"
    assert sorted(c["version"] for c in facts["libraries.cudnn"].value if c.get("version")) == ["8.8.0", "9.6.0"]

"""`envdoctor fleet`: many nodes' reports and snapshots compared, as a cluster admin uses it.

The nodes are the captured machines of tests/machines (as snapshots, and as the reports
`diagnose --format json` writes from them); a node made to differ is one of them with a single
fact changed, the way one node of a fleet ends up on another driver.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest

from envdoctor.fleet import compare, load_node, unique_names
from envdoctor.host.privacy import Scrubber
from envdoctor.report import diagnose

from .conftest import load_machine, machine_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEALTHY = "pipwheels-ubuntu2204-a100"  # A100, driver 565.57.01, torch 2.5.1+cu124 wheels: no errors


def _report(machine: str) -> dict:
    return diagnose(load_machine(machine), scrubber=Scrubber(include_host=True)).to_dict()


def _set_fact(report: dict, key: str, value) -> dict:
    for probe in report["probes"]:
        for fact in probe["facts"]:
            if fact["key"] == key:
                fact["value"] = value
    return report


def _fleet(args, timeout=120):
    r = subprocess.run([sys.executable, "-m", "envdoctor", "fleet"] + args, capture_output=True, text=True,
                       timeout=timeout)
    assert "Traceback" not in r.stderr, r.stderr
    return r


@pytest.fixture
def cluster(tmp_path):
    """Four reports of the same healthy machine; node04 is on another driver."""
    d = tmp_path / "reports"
    d.mkdir()
    for i in range(1, 5):
        report = _report(HEALTHY)
        if i == 4:
            _set_fact(report, "driver.version", "550.54.15")
        (d / ("node%02d.json" % i)).write_text(json.dumps(report))
    return d


def test_the_odd_node_is_named(cluster):
    r = _fleet([str(cluster), "--format", "json"])
    assert r.returncode == 0  # no errors anywhere; a second driver alone is not a failure...
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.load(open(os.path.join(ROOT, "envdoctor", "schemas", "fleet.schema.json"))))
    driver = next(f for f in doc["facts"] if f["label"] == "NVIDIA driver")
    assert driver["uniform"] is False
    assert driver["values"] == [{"value": "565.57.01", "nodes": ["node01", "node02", "node03"]},
                                {"value": "550.54.15", "nodes": ["node04"]}]
    assert doc["summary"]["differing_facts"] == 1
    assert _fleet([str(cluster), "--uniform"]).returncode == 1  # ...unless the fleet must be identical
    text = _fleet([str(cluster)]).stdout
    assert "Facts that differ between nodes" in text and "550.54.15: node04" in text


def test_every_node_against_a_baseline(cluster):
    r = _fleet([str(cluster), "--baseline", str(cluster / "node01.json"), "--format", "json"])
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["baseline"]["deviations"] == [{"node": "node04", "label": "NVIDIA driver", "expected": "565.57.01",
                                              "found": "550.54.15"}]
    bad = _fleet([str(cluster), "--baseline", str(cluster / "nope.json")])
    assert bad.returncode == 2 and "the baseline cannot be used" in bad.stderr


def test_findings_are_rolled_up_with_their_nodes(tmp_path):
    for name in (HEALTHY, "ubuntu2404-driver-mismatch", "rocky9-h100-old-torch"):
        shutil.copy(machine_path(name), tmp_path / (name + ".json"))
    r = _fleet([str(tmp_path), "--format", "json"])
    assert r.returncode == 1  # two nodes have errors
    doc = json.loads(r.stdout)
    codes = {f["code"]: f for f in doc["findings"]}
    assert codes["driver.library_mismatch"]["nodes"] == ["ubuntu2404-driver-mismatch"]
    assert codes["gpu.arch_not_in_build"]["severity"] == "error"
    assert doc["findings"][0]["severity"] == "error"  # worst first
    assert {n["name"]: n["kind"] for n in doc["nodes"]} == {
        HEALTHY: "snapshot", "ubuntu2404-driver-mismatch": "snapshot", "rocky9-h100-old-torch": "snapshot"}
    assert doc["summary"]["with_errors"] == 2


def test_a_snapshot_and_the_report_made_from_it_are_the_same_node(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_report(HEALTHY)))
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(open(machine_path(HEALTHY), "rb").read()))
    doc = json.loads(_fleet([str(tmp_path), "--format", "json", "--uniform"]).stdout)
    assert doc["summary"]["differing_facts"] == 0 and [n["kind"] for n in doc["nodes"]] == ["report", "snapshot"]


def test_an_unreadable_file_is_a_node_with_the_reason_not_the_end(cluster):
    (cluster / "node05.json").write_text('{"schema_version": 1, "probes": [')
    (cluster / "node06.json").write_text('{"hello": "world"}')
    r = _fleet([str(cluster), "--format", "json"])
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    unreadable = {n["name"]: n.get("unreadable", "") for n in doc["nodes"] if n.get("unreadable")}
    assert "looks truncated" in unreadable["node05"]
    assert "node06" in unreadable  # neither a report nor a snapshot
    assert doc["summary"]["nodes"] == 6 and doc["summary"]["unreadable"] == 2
    only_bad = _fleet([str(cluster / "node05.json")])
    assert only_bad.returncode == 2 and "none of the 1 file(s) could be read" in only_bad.stderr
    assert _fleet([]).returncode == 2


def test_node_names_come_from_the_files_and_stay_unique():
    assert unique_names(["r/node1.json", "r/node2.json.gz"]) == ["node1", "node2"]
    assert unique_names(["a/snapshot.json", "b/snapshot.json"]) == ["a", "b"]
    assert unique_names(["x/a/report.json", "y/a/report.json"]) == ["x/a", "y/a"]
    assert unique_names(["d/one.json", "e/one.json", "e/two.json"]) == ["d/one", "e/one", "two"]


def test_garbled_reports_do_not_crash_the_comparison(tmp_path):
    """A report whose facts have the wrong shapes (a hand-edited or damaged file) still compares."""
    report = _report(HEALTHY)
    for probe in report["probes"]:
        for fact in probe["facts"]:
            fact["value"] = {"garbled": [1, 2]} if fact["key"].startswith(("gpu.", "container.")) else 7
    report["findings"] = [{"code": 5}, "junk", {"code": "x.y", "severity": "fatal"}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(report))
    node = load_node(str(path), 5)
    assert not node.unreadable and node.findings == []
    fleet = compare([node, load_node(machine_path(HEALTHY), 5)])
    assert fleet.exit_code == 0 and any(not f.uniform for f in fleet.facts)



def _junk_strategy():
    from hypothesis import strategies as st

    return st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=6),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                            ["key", "value", "status", "facts", "code", "severity", "x"]), c, max_size=3),
                        max_leaves=6)


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


_REPORTS = {name: _report(name) for name in (HEALTHY, "ubuntu2404-driver-mismatch", "debian12-nogpu")}


def test_any_damage_to_a_report_leaves_the_fleet_comparable(tmp_path_factory):
    """Found by the second audit: a report whose "findings" or a probe's "facts" was a number crashed
    `fleet` with a traceback. Any value anywhere replaced by junk: the node loads (or is unreadable
    with a reason) and the comparison renders."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from envdoctor.cli.fleet import render_text
    from envdoctor.render.style import Style

    tmp = tmp_path_factory.mktemp("garbled")
    healthy = load_node(machine_path(HEALTHY), 5)

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(name=st.sampled_from(sorted(_REPORTS)), data=st.data())
    def run(name, data):
        doc = json.loads(json.dumps(_REPORTS[name]))
        for _ in range(data.draw(st.integers(1, 3))):
            path = data.draw(st.sampled_from([p for p in _paths(doc) if p]))
            parent = doc
            for step in path[:-1]:
                parent = parent[step]
            parent[path[-1]] = data.draw(_junk_strategy())
        f = tmp / "node.json"
        f.write_text(json.dumps(doc))
        node = load_node(str(f), 5)
        assert "a bug in envdoctor" not in node.unreadable
        fleet = compare([node, healthy])
        render_text(fleet, Style(color=False))
        json.dumps(fleet.to_dict("test", "now"))

    run()

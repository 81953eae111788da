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

from envdoctor.fleet import compare, gather, load_node, natural_sorted, unique_names
from envdoctor.host.privacy import Scrubber
from envdoctor.report import diagnose

from .conftest import garbled_copy, load_machine, machine_path

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


def _fleet(args, timeout=120, **kwargs):
    kwargs.setdefault("stdout", subprocess.PIPE)
    r = subprocess.run([sys.executable, "-m", "envdoctor", "fleet"] + args, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, **kwargs)
    assert "Traceback" not in r.stderr, r.stderr
    return r


SCHEMA = json.load(open(os.path.join(ROOT, "envdoctor", "schemas", "fleet.schema.json")))


def _json(args, **kwargs):
    """The fleet comparison as JSON, checked against its schema."""
    r = _fleet(args + ["--format", "json"], **kwargs)
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc, r


def _drop_fact(report: dict, key: str) -> dict:
    for probe in report["probes"]:
        probe["facts"] = [f for f in probe["facts"] if f["key"] != key]
    return report


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
    # one file that cannot be read: its reason is the one line (several: one line each, then the count)
    assert only_bad.returncode == 2 and "looks truncated" in only_bad.stderr
    assert len(only_bad.stderr.strip().splitlines()) == 1, only_bad.stderr
    both = _fleet([str(cluster / "node05.json"), str(cluster / "node06.json")])
    assert both.returncode == 2 and "none of the 2 files could be read" in both.stderr
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
    # Junk findings are skipped; one of a severity this envdoctor does not know is kept, as an error (a
    # node whose findings cannot be judged is not passed).
    assert not node.unreadable and [(f["code"], f["severity"]) for f in node.findings] == [("x.y", "error")]
    fleet = compare([node, load_node(machine_path(HEALTHY), 5)])
    assert fleet.exit_code == 1 and any(not f.uniform for f in fleet.facts)



def _junk_strategy():
    from hypothesis import strategies as st

    return st.recursive(st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=6),
                        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                            ["key", "value", "status", "facts", "code", "severity", "x"]), c, max_size=3),
                        max_leaves=6)


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
        doc = garbled_copy(_REPORTS[name], data, _junk_strategy())
        f = tmp / "node.json"
        f.write_text(json.dumps(doc))
        node = load_node(str(f), 5)
        assert "a bug in envdoctor" not in node.unreadable
        fleet = compare([node, healthy])
        render_text(fleet, Style(color=False))
        json.dumps(fleet.to_dict("test", "now"))

    run()


# ---------------------------------------------------------------- found by the third audit


def test_the_same_file_named_twice_is_one_node(cluster, tmp_path):
    """`fleet X X other` counted X twice ("3 nodes") while findings said 1 node, and both copies were
    named alike; a link to a file, and a file also inside a directory named, are the same file too."""
    one, two = str(cluster / "node01.json"), str(cluster / "node02.json")
    os.symlink(one, str(tmp_path / "alias.json"))
    for args in ([one, one, two], [one, str(tmp_path / "alias.json"), two], [str(cluster), one, str(cluster)]):
        doc, _ = _json(args)
        names = [n["name"] for n in doc["nodes"]]
        assert len(names) == len(set(names)) == doc["summary"]["nodes"], args
        assert doc["summary"]["nodes"] == (4 if str(cluster) in args else 2), args
    assert "2 nodes (2 reports)" in _fleet([one, one, two]).stdout


def test_files_the_directories_cannot_tell_apart_keep_their_suffixes(tmp_path):
    """`dir/node.json` beside `dir/node.json.gz` were two nodes both named `node`."""
    report = json.dumps(_report(HEALTHY))
    (tmp_path / "node.json").write_text(report)
    (tmp_path / "node.json.gz").write_bytes(gzip.compress(report.encode()))
    doc, _ = _json([str(tmp_path)])
    assert [n["name"] for n in doc["nodes"]] == ["node.json", "node.json.gz"]
    assert unique_names(["d/node.json", "d/node.json.gz", "d/node"]) == ["node.json", "node.json.gz", "node"]
    assert unique_names(["a/x.json", "a/x.json"]) == ["x", "x#2"]  # only the last resort is left
    assert unique_names(["x.json", "x.json", "x#2.json"]) == ["x", "x#3", "x#2"]


def test_node_names_are_unique_for_any_paths():
    from hypothesis import example, given, settings
    from hypothesis import strategies as st

    part = st.sampled_from(["a", "b", "n1", "n10", "node.json", "node.json.gz", "node", "x.snapshot.json",
                            ".json", "report.json", "#2", "node#2.json", ".", ".."])
    path = st.builds(lambda lead, parts: lead + "/".join(parts), st.sampled_from(["", "/", "./"]),
                     st.lists(part, min_size=1, max_size=4))

    @settings(max_examples=500, deadline=None, database=None)
    @given(st.lists(path, max_size=8))
    @example(["/a/..", "/.."])  # found at 20000 examples: "the directory is the name" left "" for "/.."
    def run(paths):
        names = unique_names(paths)
        assert len(names) == len(paths) and len(set(names)) == len(names), (paths, names)
        assert all(names), (paths, names)

    run()


def _raw(args):
    """stdout and stderr as written (text=True would turn a \\r into a \\n), and the exit status."""
    r = subprocess.run([sys.executable, "-m", "envdoctor", "fleet"] + args, capture_output=True, timeout=120)
    return r.stdout.decode("utf-8"), r.stderr.decode("utf-8"), r.returncode


def _lines(text):
    """The text's lines as any reader splits them (str.splitlines also breaks at \\r, U+2028, U+0085...)."""
    lines = text.splitlines()
    assert len(lines) == text.count("\n"), text  # no line break but the output's own
    return lines


def test_a_line_break_in_a_value_a_title_or_a_name_forges_no_line(tmp_path):
    """A fact value or finding title holding a newline forged lines of the text output (a fake
    "Summary: 0 nodes" line)."""
    breaks = ["\n", "\r", "\u2028", "\u2029", "\x85", "\r\n"]
    for i, br in enumerate(breaks):
        report = _report("ubuntu2404-driver-mismatch")
        _set_fact(report, "os.name", "Ubuntu%sSummary: 0 nodes, 0 with errors" % br)
        _set_fact(report, "driver.cuda_version", "12.%d%sFacts every node shares" % (i, br))
        for f in report["findings"]:
            f["title"] = "a title%sSummary: 0 nodes" % br
            f["code"] = "x.y\nINFO z"  # on every node: its title is one node's
        report["envdoctor_version"] = "0.0.%d%sSummary: 0 nodes" % (i, br)
        (tmp_path / ("n%d.json" % i)).write_text(json.dumps(report))
    (tmp_path / "evil\nSummary: 0 nodes.json").write_text(json.dumps(_report(HEALTHY)))
    for args in ([str(tmp_path)], [str(tmp_path), "--baseline", str(tmp_path / "n0.json")]):
        out, err, _ = _raw(args)
        lines = _lines(out)
        assert [x for x in lines if x.startswith("Summary:")] == [lines[-1]]
        assert lines[-1].startswith("Summary: %d nodes" % (len(breaks) + 1))
        for shown in ("\\n", "\\r", "\\u2028", "\\u2029", "\\x85", "\\r\\n"):
            assert "Ubuntu%sSummary: 0 nodes" % shown in out, shown
        assert "e.g. on n0: a title\\nSummary" in out and "x.y\\nINFO z" in out and "evil\\nSummary: 0 nodes" in out
    # the names on standard error (no node could be read, or the baseline cannot be) are one line each too
    bad = tmp_path / "bad\nenvdoctor: fake.json"
    bad.write_text("{")
    for args in ([str(bad)], [str(tmp_path), "--baseline", str(bad)]):
        out, err, status = _raw(args)
        assert status == 2 and not any(x.startswith("envdoctor: fake") for x in _lines(err)), err


def test_timeout_is_the_wait_for_each_pipe_and_says_so(tmp_path):
    """--timeout came from the shared option, whose help promised "the whole run finishes within it plus
    about a second", while fleet waits that long for each pipe in turn (and never less than 1 s)."""
    help_text = " ".join(_fleet(["--help"]).stdout.split())
    assert "whole run" not in help_text and "pipe or a device" in help_text and "read whole" in help_text
    fifos = [str(tmp_path / ("f%d.json" % i)) for i in range(2)]
    for f in fifos:
        os.mkfifo(f)
    (tmp_path / "ok.json").write_text(json.dumps(_report(HEALTHY)))
    doc, r = _json([str(tmp_path), "--read-timeout", "0.3"])
    unreadable = [n["unreadable"] for n in doc["nodes"] if n.get("unreadable")]
    assert len(unreadable) == 2 and all("nothing arrived within 0.3s" in u for u in unreadable), unreadable
    # Its variable is ENVDOCTOR_READ_TIMEOUT; ENVDOCTOR_TIMEOUT is the probe budget of diagnose and check.
    env = dict(os.environ, ENVDOCTOR_READ_TIMEOUT="0.2", ENVDOCTOR_TIMEOUT="0.4")
    doc, _ = _json([fifos[0], str(tmp_path / "ok.json")], env=env)
    assert "within 0.2s" in doc["nodes"][0]["unreadable"]


def test_read_timeout_is_one_option_in_fleet_and_policy_init(tmp_path):
    """issue 20: fleet --read-timeout read ENVDOCTOR_TIMEOUT (the probe budget), policy init --read-timeout read
    nothing, with different defaults. One option: the same help, variable and default; both honour it."""
    import click

    from envdoctor.cli import cli

    ctx = click.Context(cli)
    opts = []
    for path in (["fleet"], ["policy", "init"]):
        cmd = cli.get_command(ctx, path[0])
        if len(path) > 1:
            cmd = cmd.get_command(ctx, path[1])
        opt = next(p for p in cmd.params if "--read-timeout" in getattr(p, "opts", ()))
        opts.append((opt.help, opt.envvar, opt.default, opt.type.min, opt.type.max))
    assert opts[0] == opts[1] and opts[0][1] == "ENVDOCTOR_READ_TIMEOUT" and opts[0][2] == 10.0
    fifo = str(tmp_path / "golden.json")
    os.mkfifo(fifo)
    env = dict(os.environ, ENVDOCTOR_READ_TIMEOUT="0.2", ENVDOCTOR_TIMEOUT="30")
    r = subprocess.run([sys.executable, "-m", "envdoctor", "policy", "init", "--from", fifo], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "0.2" in r.stderr, r.stderr


@pytest.fixture
def older(tmp_path):
    """node01 by this envdoctor; old1 and old2 by an older one, which did not record driver.cuda_version."""
    d = tmp_path / "mixed"
    d.mkdir()
    (d / "node01.json").write_text(json.dumps(_report(HEALTHY)))
    for name in ("old2", "old1"):
        report = _drop_fact(_report(HEALTHY), "driver.cuda_version")
        report["envdoctor_version"] = "0.0.9"
        (d / (name + ".json")).write_text(json.dumps(report))
    return d


def test_a_fact_a_report_does_not_hold_is_no_difference_nor_deviation(older):
    """50 older reports without driver.cuda_version made the fact "differ", failed --uniform, and gave
    50 deviations "Driver's CUDA: - (baseline: 12.2)"."""
    doc, r = _json([str(older), "--uniform", "--baseline", str(older / "node01.json")])
    assert r.returncode == 0, r.stdout
    cuda = next(f for f in doc["facts"] if f["label"] == "Driver's CUDA")
    assert cuda["uniform"] is True
    assert cuda["values"][-1] == {"value": "-", "nodes": ["old1", "old2"], "absent": True}
    assert [v["nodes"] for v in cuda["values"][:-1]] == [["node01"]]
    assert doc["summary"]["differing_facts"] == 0 and doc["baseline"]["deviations"] == []
    assert doc["baseline"]["not_compared"] == [{"label": "Driver's CUDA", "nodes": ["old1", "old2"],
                                                "baseline_lacks_it": False}]
    text = _fleet([str(older), "--baseline", str(older / "node01.json")]).stdout
    assert "not in the reports of: old1, old2" in text and "(baseline:" not in text
    assert "0 facts differ, 0 deviations from the baseline" in text
    # the other way round: the baseline is the older report
    doc, r = _json([str(older), "--baseline", str(older / "old1.json")])
    assert r.returncode == 0 and doc["baseline"]["deviations"] == []
    assert doc["baseline"]["not_compared"] == [{"label": "Driver's CUDA", "nodes": ["node01"],
                                                "baseline_lacks_it": True}]
    # a fact that differs among the nodes holding it still differs
    report = _drop_fact(_report(HEALTHY), "driver.cuda_version")
    _set_fact(report, "driver.version", "550.54.15")
    (older / "odd.json").write_text(json.dumps(report))
    doc, r = _json([str(older), "--uniform"])
    assert r.returncode == 1 and doc["summary"]["differing_facts"] == 1
    assert next(f for f in doc["facts"] if f["label"] == "Driver's CUDA")["uniform"] is True


def test_mixed_envdoctor_versions_are_said(older):
    text = _fleet([str(older)]).stdout
    versions = [x for x in text.splitlines() if "envdoctor versions" in x]
    assert len(versions) == 1 and "0.0.9 (2 nodes)" in versions[0] and "(1 node)" in versions[0]
    doc, _ = _json([str(older)])
    assert doc["summary"]["envdoctor_versions"][0] == {"version": "0.0.9", "nodes": 2}
    one = _fleet([str(older / "old1.json"), str(older / "old2.json")]).stdout
    assert "envdoctor versions" not in one


def test_a_title_says_which_node_it_is_from(tmp_path):
    """A finding's title came from the first node (naming its driver) with no word of which."""
    for name, driver in (("n1", "580.1"), ("n2", "575.2")):
        report = _report("ubuntu2404-driver-mismatch")
        for f in report["findings"]:
            f["title"] = "Driver %s is the odd one" % driver
        (tmp_path / (name + ".json")).write_text(json.dumps(report))
    doc, _ = _json([str(tmp_path / "n2.json"), str(tmp_path / "n1.json")])
    finding = doc["findings"][0]
    assert finding["nodes"] == ["n1", "n2"]
    assert finding["title_from"] == "n2" and finding["title"] == "Driver 575.2 is the odd one"
    text = _fleet([str(tmp_path / "n2.json"), str(tmp_path / "n1.json")]).stdout
    assert "e.g. on n2: Driver 575.2 is the odd one" in text


def test_nodes_are_in_natural_order(tmp_path):
    for i in (10, 2, 1):
        (tmp_path / ("n%d.json" % i)).write_text(json.dumps(_report(HEALTHY)))
    doc, _ = _json([str(tmp_path)])
    assert [n["name"] for n in doc["nodes"]] == ["n1", "n2", "n10"]
    doc, _ = _json([str(tmp_path / "n10.json"), str(tmp_path / "n2.json")])
    assert [n["name"] for n in doc["nodes"]] == ["n10", "n2"]  # files named: as named...
    assert doc["facts"][0]["values"][0]["nodes"] == ["n2", "n10"]  # ...lists of nodes: natural
    assert natural_sorted(["n10", "N2", "n2", "n1b", "n01"]) == ["n01", "n1b", "N2", "n2", "n10"]
    assert gather([str(tmp_path)]).files == [str(tmp_path / n) for n in ("n1.json", "n2.json", "n10.json")]


def test_a_directory_without_reports_is_named(tmp_path):
    """`fleet emptydir/` said "name report or snapshot files...", as if none had been named."""
    empty, subs = tmp_path / "empty", tmp_path / "only-subdirs"
    empty.mkdir()
    (subs / "a.json").mkdir(parents=True)
    (empty / "notes.txt").write_text("x")
    r = _fleet([str(empty), str(subs)])
    assert r.returncode == 2
    assert "no *.json or *.json.gz files in %s, %s" % (empty, subs) in r.stderr
    (tmp_path / "n1.json").write_text(json.dumps(_report(HEALTHY)))
    r = _fleet([str(empty), str(tmp_path / "n1.json")])
    assert r.returncode == 0 and "no *.json or *.json.gz files in %s" % empty in r.stderr
    assert "name report or snapshot files" in _fleet([]).stderr


def test_a_fleet_comparison_or_an_empty_document_is_no_node(cluster):
    """`fleet dir --format json > dir/fleet.json` read its own output back as a node (empty, or the last
    run's comparison), and any JSON object with "schema_version": 1 was replayed as an empty machine."""
    previous, _ = _json([str(cluster)])
    (cluster / "fleet-monday.json").write_text(json.dumps(previous))
    (cluster / "nothing.json").write_text('{"schema_version": 1}')
    (cluster / "blank.json").write_text("")
    doc, r = _json([str(cluster)])
    why = {n["name"]: n.get("unreadable", "") for n in doc["nodes"]}
    assert "is an envdoctor fleet comparison, not a report or snapshot" in why["fleet-monday"]
    assert "holds neither probes (a report) nor evidence (a snapshot" in why["nothing"]
    assert "is empty" in why["blank"]
    assert r.returncode == 1 and doc["summary"]["unreadable"] == 3
    for name in ("fleet-monday.json", "nothing.json", "blank.json"):
        os.unlink(str(cluster / name))
    # the file this run writes is not read, whether it is new or a previous run's
    for _ in range(2):
        with open(str(cluster / "fleet.json"), "w") as out:
            r = _fleet([str(cluster), "--format", "json"], stdout=out)
        assert r.returncode == 0, r.stderr
        doc = json.load(open(str(cluster / "fleet.json")))
        assert [n["name"] for n in doc["nodes"]] == ["node01", "node02", "node03", "node04"]


def test_a_format_only_another_command_has_in_the_environment_is_the_default(cluster):
    """ENVDOCTOR_FORMAT is shared by every command: markdown (diagnose's) means text here."""
    r = _fleet([str(cluster)], env=dict(os.environ, ENVDOCTOR_FORMAT="markdown"))
    assert r.returncode == 0 and r.stdout.startswith("envdoctor fleet: 4 nodes")
    assert _fleet([str(cluster), "--format", "markdown"]).returncode == 2

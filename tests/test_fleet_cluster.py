"""`envdoctor fleet` at cluster scale: --policy, --format junit|prometheus, parallel readers.

The fleet is written by scripts/make_fleet_reports.py from the real H100 report in tests/live (see
that script for how the 8-GPU nodes are made and which nodes drift how).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from envdoctor import fleet as logic
from envdoctor.policy import parse_policy

from .engines import ROOT, envdoctor_env

POLICY = """\
schema_version = 1
[require]
"driver.version" = ">=570"
"driver.cuda_version" = ">=13.0"
"gpu.count" = 8
"gpu.*.pcie_width_current" = 16
"gpu.*.ecc_mode_current" = true
[findings]
ignore = ["framework.cpu_only_build"]
"""
COUNT = 120


def expected_failing(count: int):
    """The generator's drift: older driver every 50th, a x8 link every 37th, ECC off every 101st node."""
    return {"node%05d" % i for i in range(1, count + 1) if i % 50 == 0 or i % 37 == 0 or i % 101 == 0}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("fleet")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_fleet_reports.py"), str(COUNT), str(d)],
                   check=True, capture_output=True, env=envdoctor_env(), timeout=300)
    policy = d.parent / ("policy-%s.toml" % d.name)
    policy.write_text(POLICY)
    return str(d), str(policy)


def fleet(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", "fleet"] + list(args), capture_output=True,
                          text=True, env=envdoctor_env(), timeout=300, cwd=ROOT)


def test_fleet_policy_names_exactly_the_failing_nodes(reports):
    directory, policy = reports
    r = fleet(directory, "--policy", policy, "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    failing = {f["node"] for f in doc["policy"]["failing"]}
    assert failing == expected_failing(COUNT)
    assert doc["policy"]["passing"] == COUNT - len(failing) and doc["summary"]["failing_policy"] == len(failing)
    # worst first: nodes 50 and 100 have an old driver (two requirements fail), then by name
    assert [f["node"] for f in doc["policy"]["failing"][:3]] == ["node00050", "node00100", "node00037"]
    first = doc["policy"]["failing"][0]
    assert {q["name"] for q in first["requirements"]} == {"driver.version", "driver.cuda_version"}
    link = doc["policy"]["failing"][2]["requirements"][0]
    assert link["name"] == "gpu.*.pcie_width_current" and link["found"] == "3:8 (others 16)" and link["want"] == "16"


def test_fleet_policy_json_validates(reports):
    jsonschema = pytest.importorskip("jsonschema")
    directory, policy = reports
    doc = json.loads(fleet(directory, "--policy", policy, "--format", "json").stdout)
    with open(os.path.join(ROOT, "envdoctor", "schemas", "fleet.schema.json")) as fh:
        jsonschema.validate(doc, json.load(fh))


def test_fleet_policy_text_lists_the_worst_first(reports):
    directory, policy = reports
    r = fleet(directory, "--policy", policy)
    assert r.returncode == 1
    assert "Against the policy %s: %d of %d nodes fail it" % (policy, len(expected_failing(COUNT)), COUNT) in r.stdout
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("  node")]
    assert lines[0].split()[0] == "node00050"
    assert "driver.version 550.54.15 (want >=570); driver.cuda_version 12.4 (want >=13.0)" in lines[0]


def test_a_fleet_that_meets_the_policy_exits_0(reports):
    directory, _ = reports
    ok = os.path.join(os.path.dirname(directory), "ok.toml")
    with open(ok, "w") as fh:
        fh.write('schema_version = 1\n[require]\n"gpu.count" = 8\n[findings]\nfail_on = "error"\n')
    assert fleet(directory, "--policy", ok).returncode == 0


def test_fleet_junit(reports):
    junitparser = pytest.importorskip("junitparser")
    directory, policy = reports
    r = fleet(directory, "--policy", policy, "--format", "junit")
    path = os.path.join(os.path.dirname(directory), "fleet.xml")
    with open(path, "w") as fh:
        fh.write(r.stdout)
    suites = list(junitparser.JUnitXml.fromfile(path))
    assert len(suites) == COUNT
    failed = {s.name for s in suites if s.failures}
    assert failed == expected_failing(COUNT)


def test_fleet_prometheus(reports):
    pytest.importorskip("prometheus_client")
    from prometheus_client.parser import text_string_to_metric_families

    directory, policy = reports
    r = fleet(directory, "--policy", policy, "--format", "prometheus")
    families = {f.name: f for f in text_string_to_metric_families(r.stdout)}
    not_ready = {s.labels["node"] for s in families["envdoctor_node_ready"].samples if s.value == 0}
    assert not_ready == expected_failing(COUNT)
    sick_gpu = {(s.labels["node"], s.labels["gpu"]) for s in families["envdoctor_gpu_healthy"].samples if s.value == 0}
    assert ("node00037", "3") in sick_gpu and ("node00101", "5") in sick_gpu and ("node00050", "0") not in sick_gpu


def test_parallel_readers_give_the_same_nodes(reports):
    directory, policy_path = reports
    with open(policy_path) as fh:
        policy = parse_policy(fh.read())
    files = logic.gather([directory]).files
    names = logic.unique_names(files)
    one = logic.load_nodes(files, names, 10, policy, True, workers=1)
    two = logic.load_nodes(files, names, 10, policy, True, workers=2)
    assert [n.name for n in one] == [n.name for n in two]
    assert [n.values for n in one] == [n.values for n in two]
    assert [(n.summary.ready, n.summary.results) for n in one] == [(n.summary.ready, n.summary.results) for n in two]
    assert all(not n.facts for n in two)  # only the extract is kept


def test_fleet_with_a_bad_policy_is_exit_2(reports):
    directory, _ = reports
    bad = os.path.join(os.path.dirname(directory), "bad.toml")
    with open(bad, "w") as fh:
        fh.write('schema_version = 1\n[require]\n"gpu.cont" = 8\n')
    r = fleet(directory, "--policy", bad)
    assert r.returncode == 2 and "gpu.cont" in r.stderr and "unknown key" in r.stderr and "Traceback" not in r.stderr


def test_an_unreadable_node_fails_in_junit_and_prometheus(reports, tmp_path):
    junitparser = pytest.importorskip("junitparser")
    directory, policy = reports
    bad = tmp_path / "node99999.json"
    bad.write_text('{"probes": [')
    r = fleet(directory, str(bad), "--policy", policy, "--format", "junit")
    path = tmp_path / "fleet.xml"
    path.write_text(r.stdout)
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(path))}
    assert len(suites) == COUNT + 1 and suites["node99999"].failures == 1
    r = fleet(directory, str(bad), "--format", "prometheus")
    assert 'envdoctor_node_ready{node="node99999"} 0' in r.stdout


def test_parallel_readers_end_when_fleet_has_its_signal_handlers(reports):
    """fleet installs TERM/INT/HUP handlers before it reads; readers that inherited them ignored the pool's
    SIGTERM while waiting for work, and about one fleet in ten on Python 3.8 then hung for ever. Twenty reads
    in a row, each with the handlers installed, must all end."""
    directory, policy_path = reports
    script = """
import sys
from envdoctor import fleet
from envdoctor.forked import install_signal_handlers
from envdoctor.policy import parse_policy
install_signal_handlers()
policy = parse_policy(open(sys.argv[2]).read())
files = fleet.gather([sys.argv[1]]).files
names = fleet.unique_names(files)
for _ in range(20):
    assert len(fleet.load_nodes(files, names, 10, policy, True, workers=4)) == len(files)
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", script, directory, policy_path], capture_output=True, text=True,
                       env=envdoctor_env(), timeout=90, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_a_damaged_fact_costs_only_itself(reports, tmp_path):
    """Facts are indexed at C speed when every fact is a record with a text key; one that is not (a
    hand-edited or truncated report) must not cost the node its other facts, in its probe or any other."""
    directory, _ = reports
    first = sorted(os.listdir(directory))[0]
    with open(os.path.join(directory, first)) as fh:
        report = json.load(fh)
    whole = logic.load_node(os.path.join(directory, first), 10)
    gpu = next(p for p in report["probes"] if p["name"] == "gpu")
    damaged = [f for f in gpu["facts"] if f["key"] != "gpu.count"]
    gpu["facts"] = damaged[:5] + [{"key": 7, "value": 1, "status": "ok"}, "junk", {"value": 2}, None] + damaged[5:]
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(report))
    node = logic.load_node(str(path), 10)
    assert not node.unreadable
    assert "gpu.count" not in node.facts and all(type(k) is str for k in node.facts)
    assert set(node.facts) == set(whole.facts) - {"gpu.count"}
    assert node.values["NVIDIA driver"] == whole.values["NVIDIA driver"]
    assert node.values["PyTorch"] == whole.values["PyTorch"]


def test_fleet_json_is_written_as_every_other_json_output(reports):
    """fleet writes its document in pieces with the fast encoder every JSON output uses (never one 14 MB
    string): the text is the json module's (jsontext.reference_dumps), character for character, for the real
    document and any other."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from envdoctor.jsontext import reference_dumps as dumps

    directory, policy = reports
    doc = json.loads(fleet(directory, "--policy", policy, "--format", "json").stdout)
    assert logic.dumps(doc) == dumps(doc)
    big = {"nodes": [{"name": "node%05d" % i, "summary": {"error": 0}} for i in range(10000)]}
    pieces = list(logic.json_chunks(big))
    assert len(pieces) > 1 and "".join(pieces) == dumps(big)

    text = st.text(alphabet=st.characters(blacklist_categories=()), max_size=8) | st.sampled_from(
        ["\u2028", "\x85", "\x7f", "\ud800", "\x1b[31m", "\u202e"])
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | text
    keys = text | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
    values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.tuples(c, c)
                          | st.dictionaries(keys, c, max_size=4), max_leaves=12)

    @settings(max_examples=300, deadline=None, database=None)
    @given(values)
    def same(value):
        assert logic.dumps(value) == dumps(value)

    same()
    for unwritable in ({"a": object()}, {(1, 2): 1}, [{1, 2}]):
        with pytest.raises(TypeError):
            logic.dumps(unwritable)


def test_nodes_alike_share_their_extract_and_keep_their_own_values(reports):
    """Ten thousand nodes hold a few dozen distinct extracts: the readers' copies are held once, and a node
    that differs keeps what is its own."""
    directory, policy_path = reports
    with open(policy_path) as fh:
        policy = parse_policy(fh.read())
    files = logic.gather([directory]).files
    nodes = logic.load_nodes(files, logic.unique_names(files), 10, policy, workers=2)
    alike = [n for n in nodes if n.name in ("node00001", "node00002")]
    assert alike[0].values is alike[1].values and alike[0].summary.results[0] is alike[1].summary.results[0]
    old = next(n for n in nodes if n.name == "node00050")
    assert old.values["NVIDIA driver"] == "550.54.15" and alike[0].values["NVIDIA driver"] != "550.54.15"
    assert len({id(n.values) for n in nodes}) < 10


@pytest.mark.parametrize("change", [
    "as written", "one GPU differs", "True beside 1", "-0.0 beside 0.0", "a GPU without the fact", "one unknown",
    "a record without its status", "records in another key order", "a float width", "one GPU only",
])
def test_the_per_gpu_rows_show_alike_values_as_one_by_one(change: str) -> None:
    """The rows made from one fact per GPU take a short cut when every GPU's fact is ok and of one value; what they
    show is what looking at each GPU gives, also when the values only look alike (True and 1, -0.0 and 0.0)."""
    import copy

    from envdoctor.policy import gpu_keys

    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from make_fleet_reports import BASE, eight_gpus
    finally:
        sys.path.pop(0)
    with open(BASE, encoding="utf-8") as fh:
        report = eight_gpus(json.load(fh))
    facts = {f["key"]: f for p in report["probes"] for f in p["facts"]}
    facts = copy.deepcopy(facts)
    fields = ("name", "ecc_mode_current", "mig_mode_current", "persistence_mode", "pcie_gen_current",
              "pcie_width_current", "nvlink_active")
    for name in fields:  # nvlink_active is not in the captured report: every GPU gets it here
        for key in gpu_keys(name, 8):
            facts.setdefault(key, {"key": key, "value": 18, "status": "ok"})
    last = facts["gpu.7.ecc_mode_current"]
    if change == "one GPU differs":
        facts["gpu.5.pcie_width_current"]["value"] = 8
    elif change == "True beside 1":
        last["value"] = 1
    elif change == "-0.0 beside 0.0":
        for key in gpu_keys("pcie_gen_current", 8):
            facts[key]["value"] = 0.0
        facts["gpu.3.pcie_gen_current"]["value"] = -0.0
    elif change == "a GPU without the fact":
        del facts["gpu.2.persistence_mode"]
    elif change == "one unknown":
        facts["gpu.4.name"].update(status="unknown", value=None)
    elif change == "a record without its status":
        del facts["gpu.6.mig_mode_current"]["status"]
    elif change == "records in another key order":
        for i, key in enumerate(gpu_keys("nvlink_active", 8)):
            facts[key]["value"] = {"a": 1, "b": 2} if i % 2 else {"b": 2, "a": 1}
    elif change == "a float width":
        facts["gpu.1.pcie_width_current"]["value"] = 16.0
    elif change == "one GPU only":
        facts["gpu.count"]["value"] = 1
    rows = [(label, how) for label, reads, how in logic.FLEET_FACTS if reads.startswith("gpu.")]
    fast = [how(facts) for _, how in rows]
    original = logic._alike
    logic._alike = lambda facts, keys: False  # type: ignore[assignment]
    try:
        slow = [how(facts) for _, how in rows]
    finally:
        logic._alike = original
    assert fast == slow
    if change == "as written":
        assert fast == ["8 x NVIDIA H100 80GB HBM3", "yes", "no", "yes", "gen5 x16", "18"]

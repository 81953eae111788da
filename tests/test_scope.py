"""``diagnose --only/--skip`` examines only what the chosen layers depend on, and finds what a full run finds there.

Checks declare the facts they look at besides those they require (``reads=``) and the report layers of their
findings (``layers=``), probes the probes they wait for (``needs=``); ``envdoctor.scope`` runs just the probes
and checks the chosen layers need. The declarations are held to what the checks and probes really do on every
captured machine (tests/machines, tests/corpus, tests/live), and the scoped reports to the full ones.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re
from typing import Any, Dict, List, Set

import pytest
from click.testing import CliRunner

from envdoctor.checks import CheckContext, all_checks
from envdoctor.cli import cli
from envdoctor.facts import Facts
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.layers import LAYER_NAMES, row_of_finding
from envdoctor.probes import ProbeContext, all_probes, probes_reading, producers_of, run_probes
from envdoctor.report import diagnose
from envdoctor.scope import chosen, plan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MACHINES = sorted(glob.glob(os.path.join(ROOT, "tests", "machines", "*", "snapshot.json"))
                  + glob.glob(os.path.join(ROOT, "tests", "live", "*", "snapshot.json.gz")))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "*", "snapshot.json")))
#: --skip combinations a user would type: the slow or optional layers, and the base of the stack.
SKIPS = (("containers",), ("frameworks", "containers"), ("python", "frameworks"), ("os", "cpu"), ("envdoctor",))


def _name(path: str) -> str:
    return os.path.basename(os.path.dirname(path))


_DOCS: Dict[str, Dict[str, Any]] = {}


def _host(path: str) -> SnapshotHost:
    if path not in _DOCS:
        _DOCS[path] = load_snapshot(path)
    # load_snapshot validated it; a replay never changes its document (test_a_replay_leaves_its_document_unchanged),
    # so every run of one machine shares it
    return SnapshotHost(_DOCS[path], _name(path), validated=True)


def _run(path: str, layers=None):
    return diagnose(_host(path), scrubber=Scrubber(include_host=True), layers=layers)


def _about_a_probe_not_run(finding, ran: Set[str]) -> bool:
    """A finding of the envdoctor layer about a probe this run did not start (a scoped run reports the probes it
    ran: one left out is listed as not examined, not as crashed or timed out)."""
    m = re.match(r"The (\S+) probe (crashed|did not finish in time)", finding.title)
    return finding.code in ("envdoctor.probe_crashed", "envdoctor.probe_timed_out") and bool(m) and (
        m.group(1) not in ran)


def _same_as_full(path: str, full, layers: List[str]) -> None:
    scoped = _run(path, layers)
    ran = {p.name for p in scoped.probes}
    assert ran == set(plan(layers).probes)
    want = [f.to_dict() for f in full.findings
            if row_of_finding(f) in layers and not _about_a_probe_not_run(f, ran)]
    assert [f.to_dict() for f in scoped.findings] == want, (_name(path), layers)
    assert scoped.exit_code == (1 if any(f["severity"] == "error" for f in want) else 0)
    assert list(scoped.layers) == layers and set(scoped.not_examined) == set(LAYER_NAMES) - set(layers)


@pytest.mark.parametrize("path", MACHINES, ids=_name)
def test_each_layer_alone_finds_what_the_full_run_finds_there(path):
    full = _run(path)
    for layer in LAYER_NAMES:
        _same_as_full(path, full, [layer])
    _same_as_full(path, full, ["driver", "gpu"])
    for skip in SKIPS:
        _same_as_full(path, full, chosen(skip=skip))


@pytest.mark.parametrize("path", (MACHINES + CORPUS)[::25], ids=_name)
def test_a_replay_leaves_its_document_unchanged(path):
    """What lets the runs of one machine above share its document: a full and a scoped replay change nothing in
    it (nothing is added to its tables, nothing rewritten)."""
    before = json.dumps(_host(path).doc, sort_keys=True, default=str)
    _run(path)
    _run(path, ["driver", "gpu"])
    assert json.dumps(_host(path).doc, sort_keys=True, default=str) == before


def test_there_are_corpus_machines():
    assert len(CORPUS) > 50


@pytest.mark.parametrize("path", CORPUS, ids=_name)
def test_the_corpus_machines_too(path):
    """The machines of tests/corpus (problems reported upstream, rebuilt): each layer alone; one case per machine,
    so that they are spread over the test workers."""
    full = _run(path)
    for layer in LAYER_NAMES:
        _same_as_full(path, full, [layer])
    _same_as_full(path, full, chosen(skip=("containers",)))


def test_every_family_of_facts_is_looked_through_for_hung_programs_under_one_layer():
    from envdoctor.checks.tools import HUNG_PREFIXES

    for spec in all_probes():
        for pattern in spec.produces:
            family = pattern.split(".")[0] + "."
            # driver., gpu. and topology. facts time out only when NVML does (driver.nvml_hung names the call);
            # the topology probe runs no program
            assert family in ("driver.", "gpu.", "topology.") or family in HUNG_PREFIXES, (
                "%s returns %s: add its family to envdoctor.checks.tools._HUNG_LAYERS" % (spec.name, pattern))


def test_only_driver_and_gpu_leaves_out_what_no_driver_or_gpu_verdict_depends_on():
    probes = set(plan(["driver", "gpu"]).probes)
    assert {"driver", "gpu"} <= probes
    assert not probes & {"cpu", "compilers", "containers"}
    # A driver too old for a wheel's own CUDA build (CTranslate2's, from the libraries its wheel bundles) and for the
    # PTX a program's NVRTC emits is a driver finding too: the packages' linkage and the programs are read for it.
    assert {"linkage", "programs"} <= probes
    # A driver too old for the installed torch is a driver finding: the frameworks are read for it.
    assert "frameworks" in probes
    assert set(plan(["cpu"]).probes) == {"cpu"}
    assert "containers" not in plan(chosen(skip=("containers",))).probes


def test_a_scoped_run_does_not_report_the_timeout_of_a_probe_it_did_not_start():
    # The hostile machine with /etc/docker/daemon.json hanging: the full run's containers probe times out, and
    # the envdoctor layer says so. With --skip containers that probe never starts (no other layer depends on
    # it): the envdoctor layer, examined, speaks of the probes that ran.
    doc = load_snapshot(os.path.join(ROOT, "tests", "machines", "ubuntu2204-hostile-broken", "snapshot.json"))
    doc["files"]["/etc/docker/daemon.json"] = {"error": "ETIMEDOUT", "message": "still being read at the time limit"}
    full = diagnose(SnapshotHost(copy.deepcopy(doc), "m"), scrubber=Scrubber(include_host=True))
    assert {p.name: p.status for p in full.probes}["containers"] == "timed_out"
    late = [f for f in full.findings if f.code == "envdoctor.probe_timed_out"]
    assert [f.title for f in late] == ["The containers probe did not finish in time"]
    scoped = diagnose(SnapshotHost(copy.deepcopy(doc), "m"), scrubber=Scrubber(include_host=True),
                      layers=chosen(skip=("containers",)))
    assert "containers" not in {p.name for p in scoped.probes} and scoped.not_examined == ("containers",)
    assert [f.to_dict() for f in scoped.findings] == [f.to_dict() for f in full.findings
                                                      if row_of_finding(f) != "containers" and f not in late]


# ------------------------------------------------------------------ the declarations


class _Recording(Facts):
    """Facts that note every key asked for (``*`` when all of them are walked)."""

    def __init__(self, facts, log: Set[str]) -> None:
        super().__init__(facts)
        self.log = log

    def get(self, key):
        self.log.add(key)
        return super().get(key)

    def value(self, key, default=None):
        self.log.add(key)
        return super().value(key, default)

    def with_prefix(self, prefix):
        self.log.update(f.key for f in super().with_prefix(prefix))
        return super().with_prefix(prefix)

    def __iter__(self):
        self.log.add("*")
        return super().__iter__()

    def __contains__(self, key):
        self.log.add(key)
        return super().__contains__(key)


def _general(key: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".N", key)


#: The tests that read ``observed`` run on one test worker (``--dist loadgroup``): it replays every machine once.
OBSERVED = pytest.mark.xdist_group("scope-observed")


@pytest.fixture(scope="module")
def observed():
    """What each check looked at and where its findings were shown, and which probes each probe waited for,
    on every captured machine."""
    looked: Dict[str, Set[str]] = {}
    shown: Dict[str, Set[str]] = {}
    waited: Dict[str, Set[str]] = {}
    real = ProbeContext.facts_of

    def facts_of(self, name):
        import threading

        waited.setdefault(threading.current_thread().name, set()).add(name)
        return real(self, name)

    ProbeContext.facts_of = facts_of  # type: ignore[method-assign]
    try:
        for path in MACHINES + CORPUS:
            probes = run_probes(_host(path), parallel=True)
            for spec in all_checks():
                log: Set[str] = set()
                try:
                    found = list(spec.fn(CheckContext(_Recording((f for p in probes for f in p.facts), log), probes)))
                except Exception:  # noqa: BLE001 - a crash is test_check_requires' and the hostile tests' business
                    found = []
                looked.setdefault(spec.name, set()).update(_general(k) for k in log)
                shown.setdefault(spec.name, set()).update(row_of_finding(f) for f in found)
    finally:
        ProbeContext.facts_of = real  # type: ignore[method-assign]
    return looked, shown, {k[len("probe-"):]: v for k, v in waited.items() if k.startswith("probe-")}


def test_every_check_declares_what_it_reads_and_where_its_findings_go():
    for spec in all_checks():
        assert spec.reads is not None and spec.layers, "%s: declare reads= and layers=" % spec.name
        assert set(spec.layers) <= set(LAYER_NAMES), (spec.name, spec.layers)
        for key in spec.reads:
            assert probes_reading(key), "%s reads %s, which no probe returns" % (spec.name, key)


@OBSERVED
def test_every_fact_a_check_looks_at_comes_from_a_probe_it_declares(observed):
    looked, _shown, _waited = observed
    for spec in all_checks():
        declared = {p for key in (spec.requires or ()) + (spec.reads or ()) for p in probes_reading(key)}
        for key in looked[spec.name]:
            if key == "*":
                assert spec.reads == ("*",), "%s walks every fact: reads=('*',)" % spec.name
                continue
            behind = set(producers_of(key))
            assert behind <= declared, "%s looks at %s (from %s): not in its requires= or reads=" % (
                spec.name, key, sorted(behind))


@OBSERVED
def test_every_finding_is_shown_under_a_layer_its_check_declares(observed):
    _looked, shown, _waited = observed
    for spec in all_checks():
        assert shown[spec.name] <= set(spec.layers or ()), (spec.name, shown[spec.name])


@OBSERVED
def test_every_probe_a_probe_waits_for_is_in_its_needs(observed):
    _looked, _shown, waited = observed
    needs = {s.name: set(s.needs) for s in all_probes()}
    assert waited, "no probe waited for another: the recording is broken"
    for name, asked in waited.items():
        assert asked <= needs[name], "%s waits for %s: declare needs=" % (name, sorted(asked - needs[name]))


# ------------------------------------------------------------------ what the user sees


SNAP = os.path.join(ROOT, "tests", "machines", "ubuntu2404-driver-mismatch", "snapshot.json")


def _cli(*args: str):
    return CliRunner().invoke(cli, ["diagnose", "--snapshot", SNAP, *args], env={"NO_COLOR": "1"})


def test_json_lists_the_layers_examined_and_left_out_and_only_their_probes():
    r = _cli("--only", "driver,gpu", "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    assert doc["layers"] == {"examined": ["driver", "gpu"],
                             "not_examined": [n for n in LAYER_NAMES if n not in ("driver", "gpu")]}
    assert [p["name"] for p in doc["probes"]] == ["driver", "gpu"]
    assert "containers" not in doc["timings"]
    full = json.loads(_cli("--format", "json").output)
    assert full["layers"] == {"examined": list(LAYER_NAMES), "not_examined": []}


def test_text_and_markdown_say_which_layers_were_not_examined():
    flat = " ".join(_cli("--only", "driver,gpu").output.split())  # as read, whatever the wrapping
    assert ("Not examined (left out by --only/--skip: not verified): Operating system, CPU and memory, GPU topology, "
            "CUDA, Libraries, Compilers, Python, Frameworks, Containers, envdoctor itself") in flat
    assert "Not examined" not in _cli().output
    healthy = CliRunner().invoke(cli, ["diagnose", "--snapshot", os.path.join(
        ROOT, "tests", "machines", "centosstream9-8xh100", "snapshot.json"), "--skip", "containers"])
    assert healthy.exit_code == 0 and healthy.output.startswith("✓ No problems found in the layers examined")
    assert "Not examined (left out by --only/--skip: not verified): Containers" in healthy.output
    md = _cli("--skip", "containers,frameworks", "--format", "markdown").output
    assert "**Not examined:** Frameworks, Containers" in md
    assert "Not examined" not in _cli("--format", "markdown").output


def test_only_and_skip_that_leave_nothing_are_refused():
    r = _cli("--only", "gpu", "--skip", "gpu")
    assert r.exit_code == 2 and "no layer to examine" in r.output

"""Checks as units: each declared the one way (``@check``), with every code it emits, found without a list,
run in the order of the stack, and yielding to another's finding instead of running it.

The machines are the captured ones (tests/machines, tests/live, tests/corpus: real files and command outputs,
see their READMEs) and the sick variants of real GPU nodes (tests/sick_variants.py)."""

from __future__ import annotations

import glob
import os
import sys
import textwrap
from typing import Dict, Iterator, Set, Tuple

import pytest

import envdoctor.checks as checks
from envdoctor.checks import CheckContext, all_checks, code_docs, findings_by_check, run_checks
from envdoctor.facts import Facts
from envdoctor.findings import sort_key
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.layers import LAYER_NAMES
from envdoctor.probes import run_probes

from . import sick_variants
from .conftest import HERE, snapshot_facts


def _snapshots() -> Iterator[Tuple[str, Facts]]:
    """(where, its facts) for every captured machine and sick variant (a captured file's probed once per process)."""
    for pattern in ("machines/*/snapshot.json", "live/*/snapshot.json*", "corpus/*/snapshot.json"):
        for path in sorted(glob.glob(os.path.join(HERE, pattern))):
            yield os.path.relpath(path, HERE), snapshot_facts(path)
    for variant in sick_variants.variants():
        yield "sick/" + variant.name, _facts(SnapshotHost(variant.doc, variant.name))


def _facts(host: SnapshotHost) -> Facts:
    return Facts(f for r in run_probes(host) for f in r.facts)


def test_every_check_declares_the_codes_it_may_emit():
    for spec in all_checks():
        assert spec.codes, "%s declares no finding code" % spec.name
        for doc in spec.codes:
            assert doc.code.count(".") >= 1 and doc.severity in ("error", "warning", "info"), (spec.name, doc)
    with pytest.raises(TypeError):
        checks.check("test.no-codes", codes=())(lambda ctx: [])


def test_no_check_emits_a_code_it_does_not_declare():
    """Every check, on every captured machine and sick variant, before any finding yields: each code it says is
    one it declares (``envdoctor explain`` documents it, ``--only`` and the skipped-checks notice name it)."""
    undeclared: Dict[str, Set[str]] = {}
    spoken: Set[str] = set()
    specs = all_checks()
    for where, facts in _snapshots():
        ctx = CheckContext(facts, [])
        for spec in specs:
            declared = {d.code for d in spec.codes}
            for finding in spec.fn(ctx):
                spoken.add(spec.name)
                if finding.code not in declared:
                    undeclared.setdefault("%s: %s" % (spec.name, finding.code), set()).add(where)
    assert not undeclared, {k: sorted(v)[:3] for k, v in undeclared.items()}
    assert len(spoken) >= 40  # the property is worth something: most checks speak on some machine


def test_a_code_declared_by_two_checks_means_one_thing():
    seen: Dict[str, object] = {}
    for spec in all_checks():
        for doc in spec.codes:
            assert seen.setdefault(doc.code, doc) == doc, "%s is documented twice, differently" % doc.code
    assert set(seen) <= set(code_docs())


def test_the_checks_run_in_the_order_of_the_stack():
    ranks = [LAYER_NAMES.index(s.layers[0]) if s.layers else len(LAYER_NAMES) for s in all_checks()]
    assert ranks == sorted(ranks)
    first = all_checks()[0]
    assert first.layers and first.layers[0] == "os"
    assert all_checks()[-1].name == "probe-health"  # envdoctor's own verdict on the run comes last


def test_yields_name_what_other_checks_say_and_never_loop():
    specs = all_checks()
    for spec in specs:
        mine = {d.code for d in spec.codes}
        for code, targets in spec.yields:
            assert code == "*" or code in mine, (spec.name, code)
            for target in targets:
                assert [s.name for s in specs if s.name != spec.name and checks.may_say(target, s)], (spec.name,
                                                                                                     target)

    def reaches(start: str, name: str, seen: Tuple[str, ...]) -> bool:
        spec = checks.find_check(name)
        assert spec is not None
        for _, targets in spec.yields:
            for other in specs:
                if other.name == name or other.name in seen or not any(checks.may_say(t, other) for t in targets):
                    continue
                if other.name == start or reaches(start, other.name, seen + (name,)):
                    return True
        return False

    assert not [s.name for s in specs if reaches(s.name, s.name, ())]


def test_a_finding_that_yields_is_dropped_in_a_run_and_only_then():
    """The real case: a driver whose kernel module and user-space library differ (tests/machines/
    ubuntu2404-driver-mismatch) has its device nodes judged too; that verdict yields to the mismatch."""
    from .conftest import load_machine

    facts = _facts(load_machine("ubuntu2404-driver-mismatch"))
    ctx = CheckContext(facts, [])
    device_nodes = checks.find_check("driver-health.device-nodes")
    mismatch = checks.find_check("driver-health.library-mismatch")
    assert device_nodes is not None and mismatch is not None
    raw = {f.code for f in device_nodes.fn(ctx)}
    said = findings_by_check(ctx, [mismatch, device_nodes])
    assert "driver.library_mismatch" in {f.code for f in said[mismatch.name]}
    if raw:  # the question, asked alone, has something to say; in a run it is not said twice
        assert said[device_nodes.name] == []
    alone = findings_by_check(ctx, [device_nodes])  # nothing to yield to: it speaks
    assert {f.code for f in alone[device_nodes.name]} == raw


def test_a_new_check_module_is_found_without_a_list(tmp_path, monkeypatch):
    """A module dropped into the checks package is imported and its checks run: nothing else to edit."""
    folder = tmp_path / "more_checks"
    folder.mkdir()
    (folder / "zz_new_question.py").write_text(textwrap.dedent('''\
        from envdoctor.checks import CodeDoc, check
        from envdoctor.findings import Finding

        @check("zz-new-question", requires=(), reads=("os.id",), layers=("os",),
               codes=[CodeDoc("os.zz_new", "info", "A new question.", "os.id", "A test of discovery.")])
        def new_question(ctx):
            return [Finding(code="os.zz_new", severity="info", components=["os"], title="asked")]
        '''))
    monkeypatch.setattr(checks, "__path__", list(checks.__path__) + [str(folder)])
    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))
    monkeypatch.delitem(sys.modules, "envdoctor.checks.zz_new_question", raising=False)
    try:
        assert "zz-new-question" in [s.name for s in all_checks()]
        assert "os.zz_new" in code_docs()
        assert "os.zz_new" in [f.code for f in run_checks(CheckContext(Facts(), []))]
    finally:
        sys.modules.pop("envdoctor.checks.zz_new_question", None)


#: Where a check still asks another's question. None: what the kernel log and the installed module explain, per GPU,
#: is a conclusion worked out once per run and read by both (``checks.Conclusion``).
STILL_ASKING: set = set()


def test_no_check_runs_another():
    """One root cause, one finding is declared (``yields``), never found out by calling another check's question."""
    folder = os.path.dirname(checks.__file__)
    asking = set()
    for path in glob.glob(os.path.join(folder, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        assert "_earlier(" not in text, path
        if "quietly(" in text or "def quietly" in text:
            asking.add(os.path.relpath(path, folder))
    assert asking <= STILL_ASKING, asking - STILL_ASKING


@pytest.mark.parametrize("machine", ["ubuntu2404-driver-mismatch", "ubuntu2204-a100-mig", "centos7-a100-cuda115",
                                     "rocky9-h100-old-torch"])
def test_diagnose_check_name_says_what_that_check_says_in_a_whole_run(machine):
    """``diagnose --check NAME`` runs that check (and those it yields to) on just the facts it reads: its findings
    are the whole run's findings of that check."""
    from envdoctor.report import diagnose

    from .conftest import load_machine

    host = load_machine(machine)
    whole = findings_by_check(CheckContext(_facts(host), []), all_checks())
    spoke = [name for name, found in whole.items() if found]
    assert spoke
    for name in spoke + ["probe-health"]:
        report = diagnose(load_machine(machine), checks=[name])
        assert [(f.code, f.title) for f in report.findings] == [
            (f.code, f.title) for f in sorted(whole[name], key=sort_key)], name
        assert len(report.probes) < 12 or name == "probe-health"  # just the probes it reads


def test_diagnose_check_refuses_an_unknown_name_and_names_the_close_ones():
    from click.testing import CliRunner

    from envdoctor.cli import cli

    from .conftest import machine_path

    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", machine_path("ubuntu2204-a100-mig"),
                                 "--check", "driver-health.device-node"])
    assert r.exit_code == 2 and "did you mean driver-health.device-nodes" in r.output
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", machine_path("ubuntu2404-driver-mismatch"),
                                 "--check", "driver-health.library-mismatch", "--format", "json"])
    assert r.exit_code == 1 and '"driver.library_mismatch"' in r.output


def test_a_conclusion_is_worked_out_once_and_a_crash_is_its_owners(monkeypatch):
    """What the kernel log explains is worked out once per run, for kernel-log's findings and driver-support's
    reading of them; when working it out raises, kernel-log reports the crash and driver-support still answers
    (as if the kernel log explained nothing). The machine's kernel log names the cause (a corpus case: the open
    modules on a GPU without GSP)."""
    from envdoctor.checks import kernel_log

    from .conftest import CORPUS

    path = os.path.join(CORPUS, "b3-fedora40-negativo17-560-open-module-on-gt1030-without-gsp", "snapshot.json")
    facts = _facts(SnapshotHost(load_snapshot(path), "case", validated=True))
    real = kernel_log.findings.work
    calls = []

    def counted(f):
        calls.append(1)
        return real(f)

    monkeypatch.setattr(kernel_log.findings, "work", counted)
    said = findings_by_check(CheckContext(facts, []), all_checks())
    assert len(calls) == 1 and said.get("kernel-log")

    def broken(f):
        raise RuntimeError("a kernel line nobody expected")

    monkeypatch.setattr(kernel_log.findings, "work", broken)
    found = run_checks(CheckContext(_facts(SnapshotHost(load_snapshot(path), "case", validated=True)), []))
    crashed = [f for f in found if f.code == "envdoctor.check_crashed"]
    assert len(crashed) == 1 and "kernel-log" in crashed[0].title  # driver-support, its reader, did not crash

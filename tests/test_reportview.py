"""One view of a report's derived facts (envdoctor/reportview.py): the CUDA toolkit's version, the cuDNN and NCCL the
loader picks, whether a framework is installed and the GPU count are read in one place, and ``check``'s policy,
``fleet``'s rows and the engine outputs (through envdoctor/view.py) say the same thing about the same report.

The reports are those of the captured machines (tests/machines: real snapshots replayed); the damaged ones are
those reports with facts taken out or their status changed, as an older envdoctor or a failed probe leaves them."""

from __future__ import annotations

import copy
from typing import Any, Dict, Optional

import pytest

from envdoctor import fleet, frameworks, policy, view
from envdoctor.reportview import ReportView, report_facts

from .conftest import load_machine, machine_names, run_report

ROW = {label: how for label, _what, how in fleet.FLEET_FACTS}


def _report(name: str) -> Dict[str, Any]:
    return run_report(load_machine(name)).to_dict()


@pytest.mark.parametrize("name", machine_names())
def test_policy_fleet_and_the_engine_outputs_agree_on_every_captured_machine(name):
    report = _report(name)
    facts = report_facts(report)
    v = ReportView(facts)
    stack = view.stack(report)

    toolkit = v.toolkit()
    assert policy.resolve(facts, "cuda.toolkit.version").shown() == toolkit.shown()
    assert stack["toolkit"] == (str(toolkit.value) if toolkit.known and toolkit.value is not None else None)
    shown = ROW["CUDA toolkit"](facts)
    if toolkit.known and toolkit.value:
        assert shown in ("nvcc %s" % toolkit.value, "/usr/local/cuda %s" % toolkit.value)
    elif toolkit.known:
        assert shown == "none"

    for prefix, what, label in (("libcudnn.so.", "cuDNN", "cuDNN (loader picks)"),
                                ("libnccl.so.", "NCCL", "NCCL (loader picks)")):
        picks, version = v.loader_picks(prefix), v.loader_version(prefix, what)
        assert policy.resolve(facts, what.lower() + ".version").shown() == version.shown()
        if picks.known and picks.value:
            assert ROW[label](facts).endswith("%s %s" % (picks.value[-1][0], picks.value[-1][1] or "?"))
            assert version.value == picks.value[-1][1] or not version.known
        elif picks.known:
            assert ROW[label](facts) == "none" and version.value is None

    for fw in view.FRAMEWORKS:
        got = v.framework(fw)
        installed = policy.resolve(facts, "framework.%s.installed" % fw)
        assert installed.known == got.known
        if got.known:
            assert installed.value is isinstance(got.value, dict)
            row = ROW[frameworks.BY_NAME[fw].display](facts)
            assert row == (str(got.value.get("version") or "installed") if isinstance(got.value, dict)
                           else "not installed")
            assert stack[fw] == (str(got.value["version"]) if isinstance(got.value, dict) and got.value.get("version")
                                 else None)

    count = v.gpu_count()
    assert policy.gpu_count(facts).shown() == count.shown()
    assert stack["gpus"] == (str(count.value) if count.known else None)


def _facts_of(report: Dict[str, Any], drop: Any = (), status: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    report = copy.deepcopy(report)
    for probe in report["probes"]:
        probe["facts"] = [f for f in probe["facts"] if f["key"] not in drop]
        for f in probe["facts"]:
            if f["key"] in (status or {}):
                f.update(status=status[f["key"]], value=None, reason="it took longer than 10 s")
    return report_facts(report)


def test_what_a_damaged_report_does_not_say_is_unknown_alike_for_every_reader():
    report = _report(machine_names()[0])
    # the toolkit: nvcc's fact timed out and the /usr/local/cuda link's is not in the report
    facts = _facts_of(report, drop=("cuda.default_symlink",), status={"cuda.nvcc": "timed_out"})
    assert not ReportView(facts).toolkit().known
    assert policy.resolve(facts, "cuda.toolkit.version").shown() == "unknown (timed out: it took longer than 10 s)"
    assert ROW["CUDA toolkit"](facts) == "timed out" and view.stack({"probes": []}, facts)["toolkit"] is None
    # the loader's choice absent (an older envdoctor): unknown to the policy, absent from fleet's row
    facts = _facts_of(report, drop=("libraries.loader_choice",))
    assert not ReportView(facts).loader_picks("libcudnn.so.").known
    assert policy.resolve(facts, "cudnn.version").shown() == "unknown (not in the report)"
    assert ROW["cuDNN (loader picks)"](facts) is None
    # no framework fact at all: the frameworks probe did not run there, which is not "not installed"
    facts = _facts_of(report, drop=[k for k in report_facts(report) if k.startswith("framework.")])
    assert not ReportView(facts).framework("torch").known
    assert policy.resolve(facts, "framework.torch.installed").shown() == "unknown (not in the report)"
    assert ROW["PyTorch"](facts) is None and view.stack({"probes": []}, facts)["torch"] is None
    # the interpreter could not be asked: its reason, for every reader
    facts = _facts_of(report, drop=[k for k in report_facts(report) if k.startswith("framework.")])
    facts["framework.scan"] = {"key": "framework.scan", "status": "timed_out", "value": None,
                               "reason": "python -c took longer than 10 s"}
    assert ReportView(facts).framework("torch").key == "framework.scan"
    assert policy.resolve(facts, "framework.torch.version").shown() == (
        "unknown (timed out: python -c took longer than 10 s)")
    assert ROW["PyTorch"](facts) == "timed out"
    # a GPU count that is no count
    facts = _facts_of(report)
    facts["gpu.count"] = dict(facts["gpu.count"], value=-3)
    assert ReportView(facts).gpu_count().shown() == policy.gpu_count(facts).shown() == "unknown (not a GPU count)"

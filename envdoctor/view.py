"""What the engine outputs need of a node's report: whether it is ready, its severity counts, the versions a
job cares about, which GPUs are unhealthy (:class:`NodeSummary`), shared by ``envdoctor check`` (one node)
and ``envdoctor fleet`` (many, built in its readers) and written by :mod:`envdoctor.render.engines`."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from . import frameworks
from .policy import SEVERITIES, Verdict, resolve
from .reportview import ReportView, report_facts


def node_ready(report: Dict[str, Any], verdict: Optional[Verdict]) -> bool:
    if verdict is not None:
        return verdict.passed
    summary = report.get("summary")
    return isinstance(summary, dict) and summary.get("error") == 0


def _findings(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    found = report.get("findings")
    return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []


def _severity_counts(report: Dict[str, Any]) -> Dict[str, int]:
    counts = {s: 0 for s in SEVERITIES}
    for f in _findings(report):
        if f.get("severity") in counts:
            counts[f["severity"]] += 1
    return counts


_GPU_EVIDENCE = re.compile(r"^gpu\.([0-9]{1,4})\.")


def unhealthy_gpus(report: Dict[str, Any], verdict: Optional[Verdict]) -> Dict[int, List[str]]:
    """GPU index -> why it is not healthy: a ``gpu.*`` requirement it fails, or a failing finding
    (error, or at the policy's ``fail_on``) whose evidence names it."""
    out: Dict[int, List[str]] = {}
    failing = verdict.failing_findings if verdict is not None else [
        f for f in _findings(report) if f.get("severity") == "error"]
    for f in failing:
        for ev in f.get("evidence") or []:
            m = _GPU_EVIDENCE.match(str(ev.get("key", ""))) if isinstance(ev, dict) else None
            if m:
                out.setdefault(int(m.group(1)), []).append(str(f.get("code")))
    if verdict is not None:
        for r in verdict.blocking():
            for i in r.failing_gpus():
                out.setdefault(i, []).append(r.name)
    return out


def _value(facts: Dict[str, Dict[str, Any]], key: str) -> Optional[str]:
    found = resolve(facts, key)
    if not found.known or found.value is None or isinstance(found.value, (bool, dict, list)):
        return None
    return str(found.value)


def stack(report: Dict[str, Any], facts: Optional[Dict[str, Dict[str, Any]]] = None) -> Dict[str, Optional[str]]:
    """The versions a job cares about, as the report holds them (None: not known or not installed)."""
    facts = report_facts(report) if facts is None else facts
    out: Dict[str, Optional[str]] = {
        "driver": _value(facts, "driver.version") or _value(facts, "driver.kernel_module.version"),
        "driver_cuda": _value(facts, "driver.cuda_version"),
        "toolkit": _value(facts, "cuda.toolkit.version"),
    }
    for fw in FRAMEWORKS:
        out[fw] = _value(facts, "framework.%s.version" % fw)
        out[fw + "_cuda"] = _value(facts, "framework.%s.cuda" % fw)
    count = ReportView(facts).gpu_count()
    out["gpus"] = str(count.value) if count.known else None
    return out


#: The frameworks whose version and CUDA the engine outputs name (envdoctor/frameworks/: ``engine_stack``).
FRAMEWORKS = frameworks.having("engine_stack")


class NodeSummary:
    """What the engine outputs need of one node, in plain data (small, and picklable for fleet's readers)."""

    __slots__ = ("name", "ready", "counts", "stack", "gpus", "results", "has_policy", "on_unknown", "fail_on",
                 "failing")

    def __init__(self, name: str, ready: bool, counts: Dict[str, int], stack: Dict[str, Optional[str]],
                 gpus: Optional[List[Tuple[int, str, bool]]], results: List[Tuple[str, str, str, str, str]],
                 has_policy: bool, on_unknown: str, fail_on: str, failing: List[Dict[str, str]]) -> None:
        self.name = name
        self.ready = ready
        self.counts = counts
        self.stack = stack
        self.gpus = gpus  # (index, name, healthy); None when the GPU count is unknown
        self.results = results  # (requirement, status, want as written, found, source)
        self.has_policy = has_policy
        self.on_unknown = on_unknown
        self.fail_on = fail_on
        self.failing = failing  # the findings that fail the node: code, severity, title, detail

    def blocking(self) -> List[Tuple[str, str, str, str, str]]:
        """The requirements that fail the node, failed ones first."""
        return [r for r in self.results if r[1] == "fail"] + (
            [r for r in self.results if r[1] == "unknown"] if self.on_unknown == "fail" else [])


def _finding_brief(f: Dict[str, Any]) -> Dict[str, str]:
    return {"code": str(f.get("code")), "severity": str(f.get("severity")), "title": str(f.get("title") or ""),
            "detail": str(f.get("detail") or "")}


def unreadable_summary(name: str, why: str, fail_on: str = "error") -> NodeSummary:
    """A node whose file could not be used: not ready, with the reason as its one failing finding."""
    empty: Dict[str, Optional[str]] = {"driver": None, "driver_cuda": None, "toolkit": None}
    for fw in FRAMEWORKS:
        empty[fw] = empty[fw + "_cuda"] = None
    return NodeSummary(name, False, {s: 0 for s in SEVERITIES}, empty, None, [], False, "fail", fail_on,
                       [{"code": "envdoctor.unreadable", "severity": "error", "title": why, "detail": why}])


def summarize(name: str, report: Dict[str, Any], verdict: Optional[Verdict],
              facts: Optional[Dict[str, Dict[str, Any]]] = None, light: bool = False) -> NodeSummary:
    """``facts``: the report's facts by key, when the caller has them already (``report`` then needs only
    its findings).  ``light``: only the verdict (no versions, no GPUs), for fleet's text and JSON."""
    facts = report_facts(report) if facts is None else facts
    count = ReportView(facts).gpu_count()
    gpus: Optional[List[Tuple[int, str, bool]]] = None
    if light:
        ready = verdict.passed if verdict is not None else not _severity_counts(report)["error"]
        results = [(r.name, r.status, r.requirement.shown, r.found, r.source) for r in verdict.results] if (
            verdict is not None) else []
        failing = [_finding_brief(f) for f in verdict.failing_findings] if verdict is not None else []
        return NodeSummary(name, ready, {}, {}, None, results, verdict is not None,
                           verdict.policy.on_unknown if verdict is not None else "fail",
                           verdict.policy.fail_on if verdict is not None else "error", failing)
    if count.known:
        bad = unhealthy_gpus(report, verdict)
        gpus = [(i, _value(facts, "gpu.%d.name" % i) or "", i not in bad) for i in range(count.value)]
    if verdict is not None:
        results = [(r.name, r.status, r.requirement.shown, r.found, r.source) for r in verdict.results]
        failing = [_finding_brief(f) for f in verdict.failing_findings]
        return NodeSummary(name, verdict.passed, _severity_counts(report), stack(report, facts), gpus, results, True,
                           verdict.policy.on_unknown, verdict.policy.fail_on, failing)
    failing = [_finding_brief(f) for f in _findings(report) if f.get("severity") == "error"]
    return NodeSummary(name, not _severity_counts(report)["error"], _severity_counts(report), stack(report, facts),
                       gpus, [], False,
                       "fail", "error", failing)

"""Build the report: probes -> facts -> checks -> findings, in one versioned envelope."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import __version__
from .checks import CheckContext, run_checks
from .facts import Facts
from .findings import Finding, pin_interpreter, summarize
from .host.base import Host
from .host.privacy import Scrubber
from .probes import ProbeResult, run_probes
from .scope import Scope, is_whole, plan, plan_checks

REPORT_SCHEMA_VERSION = 1

#: Findings that say the run could not see the driver or GPU state of a machine with an NVIDIA device:
#: the human report says so in its first line (a pre-flight never passes such a node).
UNSEEN_CODES = ("gpu.unverified", "driver.nvml_hung")


class Report:
    """Everything one diagnose run produced (rendered by envdoctor.render)."""

    def __init__(self, probes: List[ProbeResult], findings: List[Finding], source: Dict[str, str],
                 duration: float, generated: Optional[str] = None, layers: Optional[Sequence[str]] = None) -> None:
        from .layers import LAYER_NAMES

        self.probes = probes
        #: The report layers examined (``diagnose --only/--skip``: the others were not looked at at all).
        self.layers: Tuple[str, ...] = tuple(n for n in LAYER_NAMES if layers is None or n in layers)
        self.not_examined: Tuple[str, ...] = tuple(n for n in LAYER_NAMES if n not in self.layers)
        self.findings = findings
        self.source = source
        self.duration = duration
        # datetime.now(timezone.utc).replace(microsecond=0).isoformat(), without importing datetime
        self.generated = generated or time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())

    @property
    def facts(self) -> Facts:
        return Facts(f for p in self.probes for f in p.facts)

    @property
    def summary(self) -> Dict[str, int]:
        return summarize(self.findings)

    @property
    def unseen(self) -> Optional[Finding]:
        """The first finding saying the driver/GPU state could not be established, if any."""
        return next((f for f in self.findings if f.code in UNSEEN_CODES and f.severity == "error"), None)

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["error"] else 0

    def narrowed(self, only: Sequence[str] = (), skip: Sequence[str] = ()) -> Report:
        """The report ``diagnose --only/--skip --format json`` writes: the findings of the layers shown and the
        probes of the layers examined (others ran only for their facts; the findings carry them). Itself when
        neither is given."""
        if not only and not skip:
            return self
        from .layers import row_of_probe, select

        shown, findings = select(self, only, skip)
        return Report([p for p in self.probes if row_of_probe(p.name) in shown], findings, self.source,
                      self.duration, self.generated, layers=self.layers)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "schema_version": REPORT_SCHEMA_VERSION,
            "envdoctor_version": __version__,
            "generated": self.generated,
            "source": dict(self.source),
            "probes": [p.to_dict() for p in self.probes],
            "findings": [f.to_dict() for f in self.findings],
            "summary": self.summary,
            "timings": {"total": round(self.duration, 4), **{p.name: round(p.duration, 4) for p in self.probes}},
            "layers": {"examined": list(self.layers), "not_examined": list(self.not_examined)},
        }


def report_schema() -> Dict[str, Any]:
    """The report's JSON schema (``envdoctor/schemas/report.schema.json``) with the findings' components as this
    envdoctor knows them (the stack and the framework plug-ins, :data:`envdoctor.findings.LAYERS`); the shipped
    file lists the same (``tests/test_framework_plugins.py``)."""
    import json
    import os

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas", "report.schema.json"),
              encoding="utf-8") as fh:
        schema: Dict[str, Any] = json.load(fh)
    from .findings import LAYERS

    schema["$defs"]["finding"]["properties"]["components"]["items"]["enum"] = list(LAYERS)
    return schema


def nvml_serials(host: Host) -> List[str]:
    """Board serial numbers NVML reported on ``host`` (asked already by the probes: from the cache)."""
    return [ans["value"] for key, ans in (host.nvml().data or {}).items()
            if key.endswith(".serial") and isinstance(ans, dict) and isinstance(ans.get("value"), str)]


def scrub(probes: List[ProbeResult], scrubber: Scrubber, serials: Sequence[str] = ()) -> None:
    """Apply ``scrubber`` to every fact (and the serials to hide, with --redact-ids), in place."""
    if scrubber.redact_ids:
        for serial in serials:
            scrubber.add_serial(serial)
    if scrubber.active:
        for p in probes:
            for f in p.facts:
                f.value = scrubber(f.value)
                f.source = scrubber(f.source)
                f.reason = scrubber(f.reason)
            p.error = scrubber(p.error)


def load_checks(host: Optional[Host] = None) -> None:
    """Import every check (and what it imports): done while the probes wait on programs and files, it is not
    on the run's critical path. On a machine with an NVIDIA driver (its NVML library present), also the install
    planner and the driver's recipe, which the checks' fixes plan an install line with (``checks.suggest``)."""
    from .checks import all_checks

    all_checks()
    present = getattr(host, "nvml_library_present", None)
    if present is not None and present():
        from .checks.suggest import preload_planner

        preload_planner()


def gather(host: Host, deadline: Optional[float] = None, scrubber: Optional[Scrubber] = None,
           only: Optional[Sequence[str]] = None, meanwhile: Optional[Callable[[], Any]] = None) -> List[ProbeResult]:
    """Run the probes on ``host`` (``only`` these, by name) and scrub what they found (the half of diagnose
    that reads the machine). ``meanwhile``: work to do while the probes run (:func:`load_checks`)."""
    probes = run_probes(host, deadline=deadline, only=only, meanwhile=meanwhile)
    if scrubber is not None:
        # NVML is asked only if a probe asked it already (its answer cached): a run without the driver and GPU
        # probes has no serial numbers to hide and must not start the query now.
        from .probes import all_probes

        nvml = {s.name for s in all_probes() if s.uses_nvml}
        asked = only is None or any(p.name in nvml for p in probes)
        scrub(probes, scrubber, nvml_serials(host) if scrubber.redact_ids and asked else ())
    return probes


def judge(probes: List[ProbeResult], source: Dict[str, str], started: float,
          scope: Optional[Scope] = None) -> Report:
    """Check the probes' facts and wrap everything in a report (the other half). With ``scope``
    (``diagnose --only/--skip``), only its checks run and only the findings of its layers are kept."""
    facts = Facts(f for p in probes for f in p.facts)
    findings = run_checks(CheckContext(facts, probes), None if scope is None else scope.checks,
                          () if scope is None else scope.keep)
    if scope is not None:
        from .layers import row_of_finding

        findings = [f for f in findings if row_of_finding(f) in scope.layers]
    pin_interpreter(findings, facts.text("python.executable"))  # every pip fix names the interpreter inspected
    return Report(probes, findings, source, time.monotonic() - started,
                  layers=None if scope is None else scope.layers)


def _scope(layers: Optional[Sequence[str]], checks: Sequence[str] = ()) -> Optional[Scope]:
    if checks:
        return plan_checks(checks)
    return None if layers is None or is_whole(layers) else plan(layers)


def diagnose(host: Host, deadline: Optional[float] = None, scrubber: Optional[Scrubber] = None,
             source: Optional[Dict[str, str]] = None, layers: Optional[Sequence[str]] = None,
             checks: Sequence[str] = ()) -> Report:
    """The report of ``host``: every layer, or only ``layers`` (``diagnose --only/--skip``: only the probes and
    checks those depend on run; see :mod:`envdoctor.scope`), or only the checks named in ``checks``
    (``diagnose --check``)."""
    start = time.monotonic()
    scope = _scope(layers, checks)
    probes = gather(host, deadline, scrubber, None if scope is None else scope.probes,
                    meanwhile=lambda: load_checks(host))
    return judge(probes, source or {"kind": "live", "description": host.description}, start, scope)


def _holds_a_fact(probes: List[Any]) -> bool:
    """Whether a report's probes hold at least one fact (a record with a text key), as every report
    envdoctor writes does."""
    for probe in probes:
        facts = probe.get("facts") if isinstance(probe, dict) else None
        if isinstance(facts, list) and any(isinstance(f, dict) and isinstance(f.get("key"), str) for f in facts):
            return True
    return False


def report_from_file(path: str, timeout: float, want: Optional[str] = None, raw: Optional[bytes] = None,
                     replay_timeout: Optional[float] = None) -> Tuple[str, Dict[str, Any]]:
    """The envdoctor report a file holds: ``("report", it)`` for a report (``diagnose --format json``),
    ``("snapshot", the report its replay gives)`` for a snapshot. ``want`` ("report" or "snapshot") refuses the
    other kind before anything is replayed. Anything else (a fleet comparison, a document with neither probes
    nor evidence, an invalid snapshot) raises :class:`~envdoctor.host.snapshot.SnapshotError` naming the file
    and the problem. ``timeout`` bounds the wait for a pipe's data; ``replay_timeout`` (default: ``timeout``)
    the replay's probes, as ``--timeout`` bounds a live run's; ``raw``: the file's bytes, already read.
    ``check``, ``policy init`` and ``fleet`` read their inputs through here."""
    from .host.snapshot import (
        SnapshotError,
        SnapshotHost,
        holds_evidence,
        is_fleet_comparison,
        read_document,
        validate_document,
    )

    doc = read_document(path, timeout, noun="report or snapshot", raw=raw)
    if isinstance(doc.get("probes"), list):
        if want == "snapshot":
            raise SnapshotError("%s is a report, not a snapshot: use --report" % path)
        if not _holds_a_fact(doc["probes"]):
            # judged, it would pass no requirement and pin none (policy init wrote an empty policy)
            raise SnapshotError("%s holds no facts: not an envdoctor report" % path)
        return "report", doc
    if is_fleet_comparison(doc):
        raise SnapshotError("%s is an envdoctor fleet comparison, not a report or snapshot" % path)
    if not holds_evidence(doc):
        # The snapshot schema, all of whose sections are optional, lets {"schema_version": 1} pass:
        # replayed, it would be a machine with nothing on it.
        raise SnapshotError("%s holds neither probes (a report) nor evidence (a snapshot: files, commands, "
                            "NVML answers, environment...): not an envdoctor report or snapshot" % path)
    if want == "report":
        raise SnapshotError("%s is a snapshot, not a report: use --snapshot" % path)
    validate_document(doc, path)
    host = SnapshotHost(doc, path, validated=True)
    # The replay's probes get ``timeout`` too: a crafted snapshot cannot keep them busy for ever.
    budget = timeout if replay_timeout is None else replay_timeout
    report = diagnose(host, deadline=time.monotonic() + budget, scrubber=Scrubber(include_host=True), source={
        "kind": "snapshot", "description": host.description, "captured": str(doc.get("created", ""))})
    return "snapshot", report.to_dict()

"""Build the report: probes -> facts -> checks -> findings, in one versioned envelope."""

from __future__ import annotations

import datetime
import time
from typing import Any, Dict, List, Optional

from . import __version__
from .checks import CheckContext, run_checks
from .facts import Facts
from .findings import Finding, summarize
from .host.base import Host
from .host.privacy import Scrubber
from .probes import ProbeResult, run_probes

REPORT_SCHEMA_VERSION = 1


class Report:
    """Everything one diagnose run produced (rendered by envdoctor.render)."""

    def __init__(self, probes: List[ProbeResult], findings: List[Finding], source: Dict[str, str],
                 duration: float, generated: Optional[str] = None) -> None:
        self.probes = probes
        self.findings = findings
        self.source = source
        self.duration = duration
        self.generated = generated or datetime.datetime.now(datetime.timezone.utc).replace(
            microsecond=0).isoformat()

    @property
    def facts(self) -> Facts:
        return Facts(f for p in self.probes for f in p.facts)

    @property
    def summary(self) -> Dict[str, int]:
        return summarize(self.findings)

    @property
    def exit_code(self) -> int:
        return 1 if self.summary["error"] else 0

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
        }


def diagnose(host: Host, deadline: Optional[float] = None, scrubber: Optional[Scrubber] = None,
             source: Optional[Dict[str, str]] = None) -> Report:
    start = time.monotonic()
    probes = run_probes(host, deadline=deadline)
    if scrubber is not None and scrubber.redact_ids:
        nvml = host.nvml()  # already asked by the probes: answered from the cache
        for key, ans in (nvml.data or {}).items():
            if key.endswith(".serial") and isinstance(ans, dict) and isinstance(ans.get("value"), str):
                scrubber.add_serial(ans["value"])
    if scrubber is not None and scrubber.active:
        for p in probes:
            for f in p.facts:
                f.value = scrubber(f.value)
                f.source = scrubber(f.source)
                f.reason = scrubber(f.reason)
            p.error = scrubber(p.error)
    facts = Facts(f for p in probes for f in p.facts)
    findings = run_checks(CheckContext(facts, probes))
    return Report(probes, findings, source or {"kind": "live", "description": host.description},
                  time.monotonic() - start)

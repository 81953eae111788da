"""Findings about envdoctor's own run: probes that crashed or timed out."""

from __future__ import annotations

from typing import Iterable, List

from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

REPORT_HINT = ("Please report it at the envdoctor issue tracker with a snapshot attached "
               "(`envdoctor snapshot -o snap.json --redact-ids`); the rest of the report is unaffected.")


def _not_checked(codes: List[str], most: int = 5) -> str:
    """The verdicts the runner skipped for want of a probe's facts, as a sentence (the first ``most`` codes)."""
    if not codes:
        return ""
    more = " and %d more" % (len(codes) - most) if len(codes) > most else ""
    return " Not checked without them (%d verdicts): %s%s." % (len(codes), ", ".join(codes[:most]), more)


# It reads the probe records, no fact; it speaks of the probes that ran (diagnose --only runs fewer).
@check("probe-health", requires=(), reads=(), layers=("envdoctor",), codes=(
    CodeDoc("envdoctor.probe_crashed", "warning", "A probe raised an exception while reading the machine.",
            "the status of every probe", "That layer's facts are missing from the report; it is a bug in "
            "envdoctor, worth reporting with a snapshot."),
    CodeDoc("envdoctor.probe_timed_out", "warning", "A probe did not finish before the time limit.",
            "the status of every probe", "Something it reads hung (a stuck driver, a hung network mount); "
            "its facts are missing. A hung driver is itself worth investigating."),
))
def probe_health(ctx: CheckContext) -> Iterable[Finding]:
    skipped = getattr(ctx, "skipped", {})
    for res in ctx.probes:
        status = getattr(res, "status", "ok")
        missing = skipped.get(res.name)
        not_checked = _not_checked(missing or [])
        if status == "crashed":
            yield Finding(
                code="envdoctor.probe_crashed", severity="warning", components=["envdoctor"],
                title="The %s probe crashed: %s" % (res.name, res.error),
                detail="envdoctor could not read this part of the machine; this is a bug in envdoctor." + not_checked,
                fix=Fix(text=REPORT_HINT),
            )
        elif status == "timed_out":
            yield Finding(
                code="envdoctor.probe_timed_out", severity="warning", components=["envdoctor"],
                title="The %s probe did not finish in time" % res.name,
                detail="Something it reads hung (a stuck driver, a hung network mount). Its facts are missing "
                       "from this report. Raise the limit with --timeout, or look for processes in state D."
                       + not_checked,
                fix=Fix(text="Re-run with a longer --timeout; if it still hangs, the driver or a mount is stuck."),
            )

"""Findings about envdoctor's own run: probes that crashed or timed out."""

from __future__ import annotations

from typing import Iterable

from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

REPORT_HINT = ("Please report it at the envdoctor issue tracker with a snapshot attached "
               "(`envdoctor snapshot -o snap.json --redact-ids`); the rest of the report is unaffected.")


@check("probe-health", codes=(
    CodeDoc("envdoctor.probe_crashed", "warning", "A probe raised an exception while reading the machine.",
            "the status of every probe", "That layer's facts are missing from the report; it is a bug in "
            "envdoctor, worth reporting with a snapshot."),
    CodeDoc("envdoctor.probe_timed_out", "warning", "A probe did not finish before the time limit.",
            "the status of every probe", "Something it reads hung (a stuck driver, a hung network mount); "
            "its facts are missing. A hung driver is itself worth investigating."),
))
def probe_health(ctx: CheckContext) -> Iterable[Finding]:
    for res in ctx.probes:
        status = getattr(res, "status", "ok")
        if status == "crashed":
            yield Finding(
                code="envdoctor.probe_crashed", severity="warning", components=["envdoctor"],
                title="The %s probe crashed: %s" % (res.name, res.error),
                detail="envdoctor could not read this part of the machine; this is a bug in envdoctor.",
                fix=Fix(text=REPORT_HINT),
            )
        elif status == "timed_out":
            yield Finding(
                code="envdoctor.probe_timed_out", severity="warning", components=["envdoctor"],
                title="The %s probe did not finish in time" % res.name,
                detail="Something it reads hung (a stuck driver, a hung network mount). Its facts are missing "
                       "from this report. Raise the limit with --timeout, or look for processes in state D.",
                fix=Fix(text="Re-run with a longer --timeout; if it still hangs, the driver or a mount is stuck."),
            )

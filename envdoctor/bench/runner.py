"""Start the measuring child (:mod:`envdoctor.bench.child`) and read what it says until the deadline.

The child is a fresh interpreter (``python child.py JOB``): nothing initialised CUDA in it before, and a driver
that hangs or crashes there costs the bench its answer, never envdoctor. It runs like every command envdoctor
runs (``host.live.run_command``: an argument list, its own process group killed at the deadline, bounded
output, ``LC_ALL=C``); every line it wrote before a hang or a crash is kept, and the copy it was in is named.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")


class Outcome:
    """What the child said (its events, in order) and how it ended."""

    def __init__(self, events: List[Dict[str, Any]], ended: str, duration: float, message: str = "") -> None:
        self.events = events
        #: "done" (it finished), "timed_out" (killed at the deadline), "crashed" (a signal or an exit code before
        #: it finished), "not_started"
        self.ended = ended
        self.duration = duration
        self.message = message

    @property
    def during(self) -> str:
        """The last thing the child said it was doing (where it hung or crashed)."""
        for e in reversed(self.events):
            if e.get("event") == "doing":
                return str(e.get("what", ""))
        return "starting"


def parse(text: str) -> List[Dict[str, Any]]:
    events = []
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue  # a line cut off by the deadline or a crash
        if isinstance(doc, dict) and isinstance(doc.get("event"), str):
            events.append(doc)
    return events


def child_env() -> Dict[str, str]:
    """The caller's environment, with the caller's import path (the NVML binding where the caller found it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isabs(p))
    env.pop("PYTHONSTARTUP", None)
    return env


def run(job: Dict[str, Any], deadline: float) -> Outcome:
    """Run the child on ``job`` until it finishes or ``deadline`` (a ``time.monotonic()`` value) passes."""
    from ..host.live import run_command

    started = time.monotonic()
    budget = deadline - started
    if budget <= 0:
        return Outcome([], "not_started", 0.0, "the time limit was spent before the copies could start")
    res = run_command([sys.executable, CHILD, json.dumps(job, sort_keys=True)], budget, env=child_env())
    duration = time.monotonic() - started
    if res.error and res.error != "output_too_large":
        return Outcome([], "not_started", duration, res.message or res.error)
    events = parse(res.stdout)
    finished = any(e.get("event") == "done" for e in events)
    if res.timed_out:
        return Outcome(events, "timed_out", duration, "stopped at the time limit (%.1f s)" % budget)
    if not finished:
        rc = res.returncode
        how = "signal %d" % -rc if isinstance(rc, int) and rc < 0 else "exit code %s" % rc
        tail = (res.stderr.strip().splitlines() or [""])[-1][:300]
        return Outcome(events, "crashed", duration, how + (": " + tail if tail else ""))
    return Outcome(events, "done", duration)


def summary(outcome: Outcome) -> Optional[str]:
    """One line for a child that did not finish, None when it did."""
    if outcome.ended == "done":
        return None
    return "%s during %s (%s)" % (outcome.ended.replace("_", " "), outcome.during, outcome.message)

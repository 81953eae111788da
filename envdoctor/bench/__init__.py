"""``envdoctor bench``: is the bus the bottleneck? Measured copies, judged against the link and the memory.

Never part of ``diagnose`` (it measures, and takes the GPU for a few seconds). The stages:

1. :func:`gather`: the probes that say what the GPUs are (``driver``, ``gpu``, and ``topology`` where that
   layer exists), through the host seam like every command, within the deadline;
2. :mod:`.plan`: the GPUs to measure, the CPUs and NUMA node each is local to, the job;
3. :mod:`.runner`: the job runs in a child process (:mod:`.child`, the CUDA driver API through ``ctypes``,
   :mod:`envdoctor.host.driver_api`) that the deadline kills; what it said before a hang or a crash is kept;
4. :mod:`.judge`: pure verdicts (results against the link's rate and the memory's bandwidth, findings, and
   ``bench.*`` facts that policies and fleets read like any other).

:func:`run` does all four and returns the document ``--format json`` prints
(``envdoctor/schemas/bench.schema.json``); it holds a ``probes`` list with the ``bench`` facts, so
``check --report`` and ``fleet`` read a bench document as they read a report.
"""

from __future__ import annotations

import datetime
import time
from typing import Any, Dict, List, Optional, Sequence

from .plan import TESTS, BenchError

__all__ = ["run", "BenchError", "TESTS", "Options", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
#: Default bytes per copy: long enough for the copy engines to reach their rate (a few milliseconds over
#: PCIe, a hundred microseconds within HBM), short enough for a whole 8-GPU run in seconds.
DEFAULT_SIZE = 256 << 20
#: Peer copies are read back and compared after each one: a smaller buffer keeps that within the time.
P2P_MAX = 64 << 20
DEFAULT_TRIALS = 5


class Options:
    def __init__(self, tests: Sequence[str] = TESTS, gpu: Optional[int] = None, size: int = DEFAULT_SIZE,
                 trials: int = DEFAULT_TRIALS, force: bool = False, timeout: float = 30.0) -> None:
        self.tests = [t for t in TESTS if t in tests]
        self.gpu = gpu
        self.size = size
        self.trials = trials
        self.force = force
        self.timeout = timeout

    def to_dict(self) -> Dict[str, Any]:
        return {"tests": list(self.tests), "gpu": self.gpu, "size_bytes": self.size,
                "p2p_size_bytes": min(self.size, P2P_MAX), "trials": self.trials, "force": self.force,
                "timeout": self.timeout}


def probe_names() -> List[str]:
    """The probes the bench reads (the topology layer's too, where this envdoctor has it), with what they wait for."""
    from ..probes import all_probes, with_needs

    known = {s.name for s in all_probes()}
    return with_needs([n for n in ("driver", "gpu", "topology") if n in known])


def gather(timeout: float) -> Any:
    """(host, deadline, facts) of this machine, read within ``timeout``."""
    from ..facts import Facts
    from ..host.live import live_host
    from ..probes import run_probes

    host, deadline = live_host(timeout, None)
    results = run_probes(host, deadline=deadline, only=probe_names())
    return host, deadline, Facts(f for r in results for f in r.facts)


def run(options: Options, facts: Any = None, host: Any = None, deadline: Optional[float] = None) -> Dict[str, Any]:
    """Measure and judge; the document. :class:`BenchError` when it cannot run as asked (no usable GPU, another
    process on the GPU without ``force``, no CUDA driver)."""
    from . import judge as judging
    from . import plan, runner

    started = time.monotonic()
    if facts is None or host is None:
        host, deadline, facts = gather(options.timeout)
    if deadline is None:
        deadline = started + options.timeout
    found = plan.targets(facts, host, options.gpu)
    job = plan.job(found, options.tests, options.size, min(options.size, P2P_MAX), options.trials, options.force)
    outcome = runner.run(job, deadline)
    if outcome.ended == "not_started":
        raise BenchError("the copies could not start: %s" % outcome.message)
    judged = judging.judge(found, facts, outcome.events, outcome.ended, outcome.during, outcome.message)
    if judged.fatal is not None:
        raise BenchError(_fatal(judged.fatal))
    if judged.refused:
        busy = [g for g in judged.gpus if g["index"] in judged.refused]
        raise BenchError("%s in use by other processes (%s): measuring now would give their share, not the "
                         "machine's; stop them, or give --force to measure anyway" % (
                             ", ".join("GPU%d" % g["index"] for g in busy),
                             "; ".join("GPU%d: pid %s" % (g["index"], ", ".join(str(p.get("pid")) for p in g["busy"]))
                                       for g in busy)))
    notes = []
    if "p2p" in options.tests and len(found) < 2:
        notes.append("peer copies need two GPUs: %s" % ("--gpu names one" if options.gpu is not None else
                                                         "this machine has one"))
    nvml = next((e for e in outcome.events if e.get("event") == "nvml"), None)
    if nvml is not None and not nvml.get("ok"):
        notes.append("NVML could not be asked from the bench's process (%s): other processes on the GPU, the link "
                     "under load and the replay counter are not known" % nvml.get("message"))
    return document(options, judged, outcome, time.monotonic() - started, notes)


def _fatal(event: Dict[str, Any]) -> str:
    if event.get("what") == "no_driver":
        return ("no usable NVIDIA GPU: the CUDA driver library libcuda.so.1 cannot be loaded (%s)" %
                event.get("message"))
    if event.get("what") == "init":
        return "no usable NVIDIA GPU: %s" % event.get("message")
    return "the bench could not start: %s" % event.get("message")


def document(options: Options, judged: Any, outcome: Any, duration: float, notes: Sequence[str] = ()
             ) -> Dict[str, Any]:
    from .. import __version__
    from ..findings import sort_key, summarize

    findings = sorted(judged.findings, key=sort_key)
    status = {"done": "ok", "timed_out": "timed_out", "crashed": "crashed"}.get(outcome.ended, "crashed")
    doc: Dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "envdoctor_version": __version__,
        "generated": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "source": {"kind": "live", "description": "this machine"},
        "options": options.to_dict(),
        "gpus": judged.gpus,
        "results": judged.results,
        "probes": [{"name": "bench", "title": "Measured copies", "status": status, "duration": round(duration, 4),
                    "facts": [f.to_dict() for f in judged.facts]}],
        "findings": [f.to_dict() for f in findings],
        "summary": summarize(findings),
        "timings": {"total": round(duration, 4), "copies": round(outcome.duration, 4)},
        "notes": list(notes),
    }
    if outcome.ended != "done":
        doc["incomplete"] = {"reason": outcome.ended, "during": outcome.during, "message": outcome.message}
    return doc

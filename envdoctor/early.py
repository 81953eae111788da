"""Start reading the machine before the command line has loaded: ``diagnose`` on two cores.

A live ``diagnose`` is two chains of single-threaded Python work: loading the
command line (click) and parsing the options, then loading the probes (and
distro, packaging) and running them.  Run one after the other they take one
core; most machines have more.  So when the arguments plainly ask for a live
``diagnose``, the launcher (:mod:`envdoctor.launcher`) forks a worker before
it imports click.  The worker loads the probes and waits.  Once ``diagnose``
has parsed its options it sends the worker the job (time limit, interpreter,
privacy settings), loads the checks itself in the meantime, and gets back the
scrubbed probe results as JSON.  The worker is the same code as the
in-process path (:func:`envdoctor.report.gather` on a
:class:`~envdoctor.host.live.LiveHost`), so the report is the same either way;
a test holds them equal.

Never a worse report for it:

* not used for any other command, a ``--snapshot`` replay, ``--help``, on a
  system without ``fork`` (or one with threads already running), or when
  ``ENVDOCTOR_NO_PREFORK=1`` is set; an unused worker is killed at once;
* if the worker dies or answers garbage, ``diagnose`` probes in-process, as
  it would have without one;
* if the worker is still busy at the run's deadline it is killed and its
  probes are reported timed out, as they would have been in-process; the
  run still ends within its time limit plus about a second.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from .forked import Forked

if TYPE_CHECKING:
    from .probes import ProbeResult

#: Bumped when the job or answer format changes (a worker and its parent are always the same
#: code, so this is a sanity check against a garbled pipe rather than a compatibility promise).
PROTOCOL = 1
DISABLE_VAR = "ENVDOCTOR_NO_PREFORK"

_pending: Optional[Forked] = None


def wants_worker(args: Sequence[str], environ: Optional[dict] = None) -> bool:
    """Do these command-line arguments ask for a live ``diagnose``?

    Deliberately conservative: a wrong "no" only costs speed, a wrong "yes"
    only a fork that is killed unused.
    """
    env = os.environ if environ is None else environ
    if env.get(DISABLE_VAR, "") not in ("", "0"):
        return False
    if not args or args[0] not in ("diagnose", "check"):
        return False
    for a in args[1:]:
        if a in ("-h", "--help") or a in ("--snapshot", "--report") or a.startswith(("--snapshot=", "--report=")):
            return False
    return True


def start(args: Sequence[str]) -> None:
    """Fork the worker if ``args`` ask for a live diagnose (called before click is imported)."""
    global _pending
    if _pending is None and wants_worker(args):
        _pending = Forked.start(_run_job, takes_job=True, prepare=_warm_up)


def take() -> Optional[Forked]:
    """The waiting worker, for the command that uses it (None if there is none)."""
    global _pending
    worker, _pending = _pending, None
    return worker


def discard() -> None:
    """Kill a worker nobody took (the command was --help, failed to parse, ...)."""
    worker = take()
    if worker is not None:
        worker.cancel()


# -- in the worker ------------------------------------------------------------

#: The probes the worker runs: those that ask NVML (its query is forked from the process that
#: needs it), distro's and the CUDA/library scans, which are the heaviest.  The parent runs the
#: rest once click is loaded.  Each side keeps the probes another of its probes waits for
#: (libraries waits for cuda, linkage for frameworks).  Measured split on a 2-core VM: the two
#: halves finish within a few milliseconds of each other (scripts/bench_diagnose.py).
WORKER_MODULES = (
    "envdoctor.probes.system",
    "envdoctor.probes.driver",
    "envdoctor.probes.gpu",
    "envdoctor.probes.cuda",
    "envdoctor.probes.libraries",
)


def parent_modules() -> List[str]:
    from .probes import PROBE_MODULES

    return [m for m in PROBE_MODULES if m not in WORKER_MODULES]


def _warm_up() -> None:
    """What the worker loads while the parent loads click: everything its probes need."""
    # The worker never prints.  Off the inherited stdout/stderr, it cannot keep a caller's pipe
    # (``$(envdoctor diagnose)``, a fleet runner capturing output) open after the parent is gone.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    from .host import live  # noqa: F401 - imported for its side effect of loading
    from .probes import probes_in

    probes_in(WORKER_MODULES)


def _run_job(job_bytes: Optional[bytes]) -> bytes:
    from .host.live import LiveHost
    from .probes import probes_in, run_probes
    from .report import nvml_serials

    job = json.loads((job_bytes or b"{}").decode("utf-8"))
    if job.get("protocol") != PROTOCOL:
        raise ValueError("unknown job")
    host = LiveHost(timeout=job["timeout"], deadline=job["host_deadline"], python_executable=job["python"])
    probes = run_probes(host, deadline=job["deadline"], modules=WORKER_MODULES)
    return json.dumps({
        "protocol": PROTOCOL,
        "probes": [p.to_dict() for p in probes],
        "order": {s.name: s.order for s in probes_in(WORKER_MODULES)},
        "serials": nvml_serials(host) if job["redact_ids"] else [],
    }).encode("utf-8")


# -- in diagnose --------------------------------------------------------------

class LiveProbes:
    """The probe results of a live run, read with the early worker's help when there is one.

    Create it as soon as the options are known (the worker starts on its job
    at once), then call :meth:`results`: it runs the other probes here and
    merges.  Without a worker, or if the worker fails, everything runs here.
    """

    def __init__(self, timeout: float, python_exe: Optional[str], include_host: bool, redact_ids: bool) -> None:
        from .host.live import live_host

        self.started = time.monotonic()
        self.host, self.deadline = live_host(timeout, python_exe)
        self.include_host = include_host
        self.redact_ids = redact_ids
        self.worker = take()
        if self.worker is not None:
            job = {"protocol": PROTOCOL, "timeout": self.host.timeout, "host_deadline": self.host.deadline,
                   "deadline": self.deadline, "python": python_exe, "redact_ids": redact_ids}
            if not self.worker.send(json.dumps(job).encode("utf-8")):
                self.worker.cancel()
                self.worker = None

    def results(self, meanwhile: Optional[Callable[[], None]] = None) -> List[ProbeResult]:
        """All probe results, scrubbed, in report order.  ``meanwhile`` runs while the worker works."""
        from .host.privacy import scrubber_for
        from .probes import probes_in, run_probes, timed_out_result
        from .report import gather, nvml_serials, scrub

        scrubber = scrubber_for(self.host, self.include_host, self.redact_ids)
        if self.worker is None:
            if meanwhile is not None:
                meanwhile()
            return gather(self.host, self.deadline, scrubber)
        worker, self.worker = self.worker, None
        local = run_probes(self.host, deadline=self.deadline, modules=parent_modules())
        if meanwhile is not None:
            meanwhile()
        # The worker's probes give up at ``deadline``; half a second more for it to answer.
        answer, why = worker.result(self.deadline + 0.5)
        decoded = decode_answer(answer) if answer is not None else None
        order = {s.name: s.order for s in probes_in(parent_modules())}
        if decoded is not None:
            remote, remote_order, serials = decoded
            order.update(remote_order)
        elif why == "timed_out":
            specs = probes_in(WORKER_MODULES)
            remote = [timed_out_result(s, "did not finish before the time limit (the probe worker was still "
                                          "busy: a file or command it reads hangs)") for s in specs]
            order.update((s.name, s.order) for s in specs)
            serials = []
        else:  # the worker crashed or answered garbage: probe here instead
            remote = run_probes(self.host, deadline=self.deadline, modules=WORKER_MODULES)
            order.update((s.name, s.order) for s in probes_in(WORKER_MODULES))
            serials = nvml_serials(self.host) if self.redact_ids else []
        probes = sorted(local + remote, key=lambda p: (order.get(p.name, 0), p.name))
        scrub(probes, scrubber, serials)
        return probes


def decode_answer(answer: bytes) -> Optional[Tuple[List[ProbeResult], Dict[str, int], List[str]]]:
    """The worker's (probe results, their report order, GPU serials), or None if the answer is not well-formed."""
    from .probes import ProbeResult

    try:
        doc: Any = json.loads(answer.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("protocol") != PROTOCOL:
            return None
        probes = [ProbeResult.from_dict(p) for p in doc["probes"]]
        order = {str(k): int(v) for k, v in doc["order"].items()}
        serials = [str(x) for x in doc["serials"]]
        return probes, order, serials
    except (ValueError, KeyError, TypeError, AttributeError):
        return None

"""What a command answers for, taken one way by every command (:func:`subject`), and a snapshot opened for it
(:func:`open_snapshot`). No click here: a plain ``diagnose`` (:mod:`envdoctor.cli.fastpath`) takes its subject
without it; ``envdoctor.cli.common`` offers the same names to the commands."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..host.base import DEFAULT_TIMEOUT
from ..host.live import live_host
from ..host.privacy import scrubber_for


def open_snapshot(path: str, timeout: float, report_option: Optional[str] = None) -> Any:
    """The :class:`~envdoctor.host.snapshot.SnapshotHost` replaying ``path`` (``-``: standard input),
    or exit 2 with the reason it cannot be replayed (a report, when the command takes one with
    ``report_option``, is pointed there); reading a pipe waits at most ``timeout``."""
    from ..host.snapshot import SnapshotError, SnapshotHost, load_snapshot
    from . import EXIT_USAGE, fail

    try:
        return SnapshotHost(load_snapshot(path, timeout=max(timeout, 1.0), report_option=report_option), path,
                            validated=True)
    except SnapshotError as exc:
        raise fail(str(exc), EXIT_USAGE) from None


class Subject:
    """What a command answers for, taken one way by every command (:func:`subject`): this machine, a snapshot, a
    report, or only the values given on the command line. Its :attr:`target` is the one
    :class:`~envdoctor.target.Target` (the machine's values read by :func:`envdoctor.advise.target_from_facts`,
    the given ones over them); :meth:`report` is its ``diagnose`` report; :attr:`host` the seam a command reads
    files through. What is not asked for is not read: a command that needs only files (``libs``) runs no probe."""

    def __init__(self, kind: str, path: Optional[str] = None, host: Any = None, deadline: Optional[float] = None,
                 given: Optional[Dict[str, Any]] = None, timeout: float = DEFAULT_TIMEOUT,
                 document: Optional[Dict[str, Any]] = None,
                 pause: Optional[Callable[[], Any]] = None, resume: Optional[Callable[[], Any]] = None,
                 probes: Sequence[str] = ()) -> None:
        self.kind = kind  # "machine", "snapshot", "report" or "given"
        self.path = path  # the snapshot's or report's file
        self.host = host  # the seam to the machine or snapshot (None for a report or values alone)
        self.deadline = deadline  # the probes' deadline on this machine (a snapshot's starts when it is probed)
        self.given: Dict[str, Any] = dict(given or {})
        self.timeout = timeout
        self.document = document  # a report file's document
        self._pause, self._resume = pause, resume
        self._facts: Any = None
        self._target: Any = None
        self._more_probes = tuple(probes)
        #: The records of :attr:`probes` once probed.
        self.probe_results: List[Any] = []

    @property
    def probes(self) -> Tuple[str, ...]:
        """The probes its facts come from: :data:`~envdoctor.target.PLANNING_PROBES` and those the command's
        judgement needs besides (``install``'s pre-flight). (``envdoctor.target``, with ``dataclasses``, is imported
        when first needed: a ``diagnose`` launches its programs ahead beside a smaller interpreter.)"""
        from ..target import PLANNING_PROBES

        return tuple(PLANNING_PROBES) + tuple(p for p in self._more_probes if p not in PLANNING_PROBES)

    @property
    def snapshot(self) -> bool:
        return self.kind == "snapshot"

    @property
    def whence(self) -> str:
        """The subject in a sentence: "this machine", "the snapshot", "the report", "the values given"."""
        return {"machine": "this machine", "snapshot": "the snapshot", "report": "the report"}.get(
            self.kind, "the values given")

    @property
    def facts(self) -> Any:
        """The facts a plan or an answer is made from (:data:`PLANNING_PROBES`, probed once, on first use; a
        report's own facts); None when only values were given."""
        if self._facts is None and self.kind != "given":
            from ..facts import Fact, Facts

            if self.kind == "report":
                from ..reportview import report_facts

                self._facts = Facts(Fact.from_dict(f) for f in report_facts(self.document or {}).values())
            else:
                from ..probes import run_probes

                deadline = self.deadline if self.kind == "machine" else None
                if self._pause is not None:
                    self._pause()
                self.probe_results = run_probes(self.host, deadline=deadline, only=self.probes)
                self._facts = Facts(f for r in self.probe_results for f in r.facts)
                if self._resume is not None:
                    self._resume()
        return self._facts

    @property
    def target(self) -> Any:
        """The one Target: the machine's values (:func:`envdoctor.advise.target_from_facts`), the given over them."""
        if self._target is None:
            from ..advise import Target, target_from_facts

            facts = self.facts
            self._target = (target_from_facts(facts) if facts is not None else Target()).merged(**self.given)
        return self._target

    def report(self, layers: Optional[Any] = None, checks: Any = (), include_host: bool = False,
               redact_ids: bool = False) -> Any:
        """The subject's ``diagnose`` report (:class:`envdoctor.report.Report`; ``layers``/``checks`` as
        ``diagnose --only/--check``): this machine's within the run's deadline, a snapshot's replay within
        ``timeout`` from now (host names kept: they are the snapshot's own). A report file is its document
        (:meth:`report_document`)."""
        import time

        if self.kind == "machine" and layers is None and not checks:
            # every probe runs: its programs started before the rest of the run is imported
            from ..probes import launch_ahead

            launch_ahead(self.host, self.deadline)
        from ..report import diagnose

        if self.kind == "machine":
            return diagnose(self.host, deadline=self.deadline, scrubber=scrubber_for(self.host, include_host,
                                                                                     redact_ids),
                            layers=layers, checks=checks)
        from ..host.privacy import Scrubber

        return diagnose(self.host, deadline=time.monotonic() + self.timeout + 0.5,
                        scrubber=Scrubber(redact_ids=redact_ids, include_host=True),
                        source={"kind": "snapshot", "description": self.host.description,
                                "captured": str(self.host.doc.get("created", ""))}, layers=layers, checks=checks)

    def report_document(self) -> Dict[str, Any]:
        """The report as JSON data: a report file's document, else :meth:`report`'s."""
        if self.kind == "report":
            return self.document or {}
        out: Dict[str, Any] = self.report().to_dict()
        return out


def subject(snapshot: Optional[str] = None, given: Optional[Dict[str, Optional[str]]] = None,
            timeout: float = DEFAULT_TIMEOUT, python_exe: Optional[str] = None,
            pause: Optional[Callable[[], Any]] = None, resume: Optional[Callable[[], Any]] = None,
            report: Optional[str] = None, enough: Any = ("driver", "cc"), reports: bool = False,
            probes: Sequence[str] = ()) -> Subject:
    """The one way a command takes its subject (``--snapshot``, ``--report``, this machine, or values given):
    a report file (``--report``, read whole; a pipe waited for ``timeout``), else a snapshot (exit 2 with the
    reason it cannot be replayed), else, when the values given (``--driver`` and ``--cc``/``--gpu``, ``--os``,
    ``--python-version``) include every one of ``enough``, those alone, else this machine (its interpreter
    ``python_exe`` when given, else the one ``envdoctor.host.interpreter.choose`` picks), its probes finished
    within ``timeout``. Given values replace the machine's in the :attr:`Subject.target`. ``pause``/``resume``
    bracket the probes (a progress line that must not write over them). Nothing is probed until asked for.
    ``reports``: the command takes ``--report`` too (a report given as a snapshot is pointed there). ``probes``:
    the probes its facts need besides :data:`PLANNING_PROBES` (``install``'s pre-flight)."""
    from . import EXIT_USAGE, fail

    given = dict(given or {})
    if report is not None and snapshot is not None:
        raise fail("give --snapshot or --report, not both", EXIT_USAGE)
    if report is not None:
        from ..host.snapshot import SnapshotError
        from ..report import report_from_file

        try:
            document = report_from_file(report, max(timeout, 1.0), "report")[1]
        except SnapshotError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        return Subject("report", report, given=given, timeout=timeout, document=document)
    if snapshot is not None:
        return Subject("snapshot", snapshot, open_snapshot(snapshot, timeout, "--report" if reports else None),
                       given=given, timeout=timeout, pause=pause, resume=resume, probes=probes)
    if enough and all(given.get(k) for k in enough):
        return Subject("given", given=given, timeout=timeout)
    host, deadline = live_host(timeout, python_exe)
    return Subject("machine", host=host, deadline=deadline, given=given, timeout=timeout, pause=pause,
                   resume=resume, probes=probes)

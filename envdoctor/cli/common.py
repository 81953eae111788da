"""Options shared by the commands that look at a machine."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import click

from ..host.base import DEFAULT_TIMEOUT
from ..host.live import live_host
from ..host.privacy import scrubber_for
from ..target import PLANNING_PROBES

__all__ = ["live_host", "scrubber_for", "privacy_options", "python_option", "timeout_option", "open_snapshot",
           "read_timeout_option", "READ_TIMEOUT_DEFAULT", "os_option",
           "echo_output", "planning_facts", "PLANNING_PROBES", "format_option", "renamed_option", "takes_renamed",
           "deprecated", "Finite", "Seconds", "output_deadline", "write_to", "write_bytes", "Subject", "subject",
           "subject_options", "snapshot_option", "gpu_option", "replay_options"]



class Finite(click.FloatRange):
    """A number in a range; NaN (which compares false with both bounds, so a plain FloatRange lets it
    through) is refused like any value out of range. Every float option takes this type, not FloatRange."""

    #: What the number is, for the message ("a number", "a number of seconds").
    what = "a number"

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        import math

        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail("%r is not %s in the range %s<=x<=%s" % (str(value), self.what, self.min, self.max),
                      param, ctx)
        return number


class Seconds(Finite):
    """A number of seconds in a range (NaN would make every wait time out at once)."""

    what = "a number of seconds"


def timeout_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--timeout", type=Seconds(0.1, 3600), default=DEFAULT_TIMEOUT, show_default=True,
        envvar="ENVDOCTOR_TIMEOUT", metavar="SECONDS",
        help="Longest any one command or NVML query may take; the whole run finishes within it plus about "
             "a second. [env: ENVDOCTOR_TIMEOUT]")(fn)


#: How long a command that reads reports or snapshots waits for one that comes through a pipe or a device.
READ_TIMEOUT_DEFAULT = 10.0


def read_timeout_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--read-timeout``: one option, one meaning, one variable and one default wherever an input may be a pipe
    (``fleet``, ``policy init``); ``--timeout`` stays the probe budget (``ENVDOCTOR_TIMEOUT``)."""
    return click.option(
        "--read-timeout", "timeout", type=Seconds(0.1, 3600), default=READ_TIMEOUT_DEFAULT, show_default=True,
        envvar="ENVDOCTOR_READ_TIMEOUT", metavar="SECONDS", callback=takes_renamed,
        help="Longest wait for the data of any one input that is a pipe or a device (several such inputs are "
             "read at the same time, each allowed this long); regular files are read whole, however long that "
             "takes. A snapshot's replay gets the probe budget, ENVDOCTOR_TIMEOUT. [env: ENVDOCTOR_READ_TIMEOUT]")(fn)


def os_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--os``: the same option in ``advise`` and ``install``, one grammar and one list (``osinfo.system``)."""
    from ..osinfo import SYSTEMS

    return click.option("--os", "os_name", metavar="SYSTEM",
                        help="Plan for this system instead of this machine: %s (also spelled ubuntu-22.04; append "
                             "-aarch64 for Arm servers)." % ", ".join(SYSTEMS))(fn)


def privacy_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option("--include-host", is_flag=True, envvar="ENVDOCTOR_INCLUDE_HOST",
                      help="Keep the host name, user name and home path (hidden by default so output can be "
                           "pasted publicly).")(fn)
    fn = click.option("--redact-ids", is_flag=True, envvar="ENVDOCTOR_REDACT_IDS",
                      help="Replace GPU UUIDs and board serial numbers with placeholders.")(fn)
    return fn


def _interpreter(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """--python names an interpreter or a virtual environment's directory (its bin/python, as pip --python
    takes); anything else is a bad argument (exit 2), not a report of unknowns. ``install`` also takes a path
    that does not exist here, for the machine it plans for."""
    import os
    import re

    from ..host.interpreter import resolve_given

    if value is None:
        return None
    if ctx.info_name == "advise" and re.fullmatch(r"\d+(\.\d+){0,2}", value.strip()):
        # advise's old meaning of --python (a version), kept for one release
        deprecated("advise --python %s" % value.strip(), "--python-version %s" % value.strip())
        ctx.meta["envdoctor.python_version"] = value.strip()
        return None
    exe, why = resolve_given(value)
    if exe is None and ctx.info_name == "install" and not os.path.exists(value):
        return value  # a plan for another machine (--os, --snapshot): its first step checks the interpreter runs
    if exe is None:
        raise click.BadParameter("%r: %s; give a Python interpreter or a virtual environment, e.g. ~/venv/bin/python "
                                 "or ~/venv" % (value, why))
    return exe


def python_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--python``: one option, one help text and one variable in every command that inspects or installs for
    an interpreter; the rule for the default is ``envdoctor.host.interpreter``."""
    from ..host.interpreter import ENV_VAR, HELP

    return click.option("--python", "python_exe", metavar="PATH", envvar=ENV_VAR, callback=_interpreter,
                        help=HELP)(fn)


def replay_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--snapshot FILE`` (replay a snapshot instead of this machine) and ``--color/--no-color``: the two options
    of the commands that report on a machine, ``diagnose`` and ``topo``, with one help text each."""
    fn = click.option("--color/--no-color", default=None, help="Force colour on or off (default: on a terminal, "
                                                               "unless NO_COLOR is set).")(fn)
    return snapshot_option()(fn)


def echo_output(text: str, color: Optional[bool] = None, deadline: Optional[float] = None) -> None:
    """Write a command's output to stdout; a reader that went away (`| head`) ends the output quietly,
    an output that cannot be written (a full disk) is exit 2 with the reason, never a traceback.
    ``color`` True keeps ANSI styling even into a pipe (``--color``); click strips it otherwise.
    With ``deadline`` (``time.monotonic()``), output into a pipe waits for its reader at most until then:
    a reader that reads only after envdoctor exits (a script that waits first) gets what the pipe holds,
    and envdoctor ends with exit 2 instead of waiting for ever."""
    import sys

    from . import EXIT_USAGE, fail, silence_stdout

    try:
        if deadline is not None and _is_pipe(sys.stdout):
            from ..output import write_all

            if color is not True:
                text = click.unstyle(text)  # what click.echo does into a pipe
            sys.stdout.flush()
            encoding = sys.stdout.encoding or "utf-8"
            try:
                data = text.encode(encoding, sys.stdout.errors or "strict")
            except UnicodeEncodeError:  # an ASCII-only locale: escapes, as printable() shows what cannot be
                data = text.encode(encoding, "backslashreplace")
            write_all(sys.stdout.fileno(), data, deadline, "standard output")
            return
        click.echo(text, nl=False, color=color)
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()  # the command still exits with its own code (diagnose | head in a script)
    except OSError as exc:
        raise fail("cannot write the output: %s" % (exc.strerror or exc), EXIT_USAGE) from None


def _is_pipe(stream: Any) -> bool:
    import os
    import stat

    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def output_deadline(run_deadline: Optional[float] = None, timeout: float = DEFAULT_TIMEOUT) -> float:
    """How long writing the output may wait for a slow reader (a pipe, a FIFO, a device): until the run's own
    deadline (``--timeout`` from its start), and at least a second from now."""
    import time

    now = time.monotonic()
    return max(run_deadline if run_deadline is not None else now + timeout, now + 1.0)


def write_to(path: Optional[str], text: str, deadline: float, color: Optional[bool] = None) -> None:
    """A command's output, to ``path`` (``-o``; None or ``-``: standard output) by
    :func:`envdoctor.output.write_output`; exit 2 with one line when it cannot be written."""
    if path is None or path == "-":
        echo_output(text, color=color, deadline=deadline)
        return
    write_bytes(path, text.encode("utf-8"), deadline)


def write_bytes(path: str, data: bytes, deadline: float) -> None:
    """``data`` to the file ``path`` (see :mod:`envdoctor.output`); exit 2 with one line when it cannot be."""
    from ..output import write_output
    from . import EXIT_USAGE, fail

    try:
        write_output(path, data, deadline)
    except OSError as exc:
        raise fail("cannot write %s: %s" % (path, exc.strerror or exc), EXIT_USAGE) from None


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


def planning_facts(snapshot: Optional[str], timeout: float, python_exe: Optional[str] = None) -> Any:
    """The facts a plan or an answer is made from (:data:`PLANNING_PROBES`), of a snapshot or this machine
    (whose interpreter is ``python_exe`` when given, else the one ``envdoctor.host.interpreter.choose`` picks):
    :attr:`Subject.facts` of :func:`subject`."""
    return subject(snapshot, None, timeout, python_exe, enough=()).facts


#: The help of each option that names a command's subject: one text wherever the option means the same.
SNAPSHOT_HELP = "Replay a snapshot written by `envdoctor snapshot` instead of looking at this machine."
REPORT_HELP = "Judge an existing `diagnose --format json` report instead of this machine."
DRIVER_HELP = "NVIDIA driver version instead of the machine's, e.g. 535.104.05."
GPU_HELP = 'A GPU product instead of the machine\'s, e.g. "RTX 4090" (see `envdoctor matrix gpu`).'
CC_HELP = "GPU compute capability instead of the machine's, e.g. 8.9 (overrides --gpu's)."


def snapshot_option(note: str = "") -> Callable[[Callable[..., Any]], Any]:
    """``--snapshot FILE`` (parameter ``snapshot_path``): one name and help text in every command that takes its
    subject (:func:`subject`); ``note`` adds what it means for this command alone."""
    return click.option("--snapshot", "snapshot_path", metavar="FILE",
                        help=SNAPSHOT_HELP + (" " + note if note else ""))


def gpu_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--gpu NAME`` (parameter ``gpu``): a product of ``envdoctor matrix gpu`` instead of the machine's GPU."""
    return click.option("--gpu", metavar="NAME", help=GPU_HELP)(fn)


def subject_options(report: bool = False, values: bool = False,
                    note: str = "") -> Callable[[Callable[..., Any]], Any]:
    """The options that name a command's subject, one spelling and help text each: ``--snapshot FILE``, with
    ``report`` ``--report FILE``, with ``values`` ``--driver``, ``--gpu`` and ``--cc`` (the values given over the
    machine's). The command hands them to :func:`subject`."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        if values:
            fn = click.option("--cc", metavar="X.Y", help=CC_HELP)(fn)
            fn = gpu_option(fn)
            fn = click.option("--driver", metavar="VERSION", help=DRIVER_HELP)(fn)
        if report:
            fn = click.option("--report", "report_path", metavar="FILE", help=REPORT_HELP)(fn)
        return snapshot_option(note)(fn)

    return decorate


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
        #: The probes its facts come from: :data:`PLANNING_PROBES` and ``probes`` (those the command's judgement
        #: needs besides: ``install``'s pre-flight); their records once probed (:attr:`probe_results`).
        self.probes: Tuple[str, ...] = tuple(PLANNING_PROBES) + tuple(p for p in probes if p not in PLANNING_PROBES)
        self.probe_results: List[Any] = []

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


def env_timeout() -> float:
    """``ENVDOCTOR_TIMEOUT`` (what ``diagnose --timeout`` defaults to), for commands whose own --timeout
    means something else; the default when unset. A value that is not a number of seconds in 0.1..3600
    (NaN and infinity included) is refused with exit 2, as ``diagnose`` refuses it."""
    import math
    import os

    from . import EXIT_USAGE, fail

    text = os.environ.get("ENVDOCTOR_TIMEOUT", "")
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0.1 <= value <= 3600):
        raise fail("ENVDOCTOR_TIMEOUT=%r is not a number of seconds in the range 0.1<=x<=3600" % text[:40],
                   EXIT_USAGE)
    return value


def format_option(*choices: str, help_text: str = "Output format.") -> Callable[[Callable[..., Any]], Any]:
    """``--format`` with these choices, also read from ENVDOCTOR_FORMAT. That variable is shared by every
    command, so a value this command does not offer (``markdown`` is only diagnose's) means its default
    here, while the same value typed on the command line is an error."""
    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value in choices:
            return value
        if ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.ENVIRONMENT:
            return choices[0]
        raise click.BadParameter("%r is not one of %s" % (value, ", ".join(choices)))

    return click.option("--format", "fmt", type=str, default=choices[0], show_default=True,
                        envvar="ENVDOCTOR_FORMAT", callback=check,
                        metavar="[%s]" % "|".join(choices),
                        help="%s [env: ENVDOCTOR_FORMAT]" % help_text)


def deprecated(old: str, new: str) -> None:
    """The one line an old spelling prints (on stderr, so output and scripts reading it are unchanged)."""
    click.echo("envdoctor: %s is deprecated and goes away in the next release; use %s" % (old, new), err=True)


def renamed_option(old: str, new: str, dest: str, **kw: Any) -> Callable[[Callable[..., Any]], Any]:
    """``old``, an option renamed to ``new``: hidden, still accepted for one release with a deprecation
    line; its value goes to ``new``'s parameter ``dest`` unless ``new`` is given too (``new`` must use
    :func:`takes_renamed` as its callback)."""
    def record(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            deprecated(old, new)
            ctx.meta["envdoctor.renamed." + dest] = value
        return value

    return click.option(old, "renamed_" + dest, hidden=True, expose_value=False, callback=record, default=None,
                        **kw)


def takes_renamed(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Callback of an option that has an old spelling (:func:`renamed_option`): the new spelling on the
    command line wins; otherwise the old one's value, if it was given, beats the default and the variable."""
    src = ctx.get_parameter_source(param.name or "")
    if src != click.core.ParameterSource.COMMANDLINE and "envdoctor.renamed.%s" % param.name in ctx.meta:
        return ctx.meta["envdoctor.renamed.%s" % param.name]
    return value

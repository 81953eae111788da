"""Options shared by the commands that look at a machine."""

from __future__ import annotations

from typing import Any, Callable, Optional

import click

from ..host.base import DEFAULT_TIMEOUT
from ..host.live import live_host
from ..host.privacy import scrubber_for
from ..target import PLANNING_PROBES
from .emit import echo_output, output_deadline
from .subjects import Subject, open_snapshot, subject

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

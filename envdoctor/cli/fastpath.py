"""``envdoctor diagnose`` of this machine with plain options, without click.

Parsing a command line with click costs a run of ``diagnose`` about a quarter of its instructions (click and the
standard library it brings: ``typing``, ``inspect``, ``gettext``...) and a few MiB. The console script's live
``diagnose`` (``envdoctor.launcher``) first offers its command line to :func:`parse`, which takes it only when it
understands all of it and every value is one click would accept the same way: ``--format`` (and
``ENVDOCTOR_FORMAT``), ``-v``/``--verbose``/``--facts``, ``-q``/``--quiet``, ``--color``/``--no-color``,
``--timeout`` (and ``ENVDOCTOR_TIMEOUT``), ``--include-host``, ``--redact-ids``. Anything else (``--help``, a value
out of range, an unknown option, ``--only``, ``--python``, one of the other variables set...) goes to click as
always, so every help text and every error is click's own. :func:`report` is the rest of the command, which
``envdoctor.cli.diagnose`` runs after click's parse too: the two paths cannot drift apart.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..host.base import DEFAULT_TIMEOUT
from .emit import echo_output, output_deadline

#: diagnose's --format choices, the default first (``cli/diagnose.py``).
FORMATS = ("text", "json", "markdown")
#: Flags without a value, and the option each sets.
FLAGS: Dict[str, Tuple[str, bool]] = {
    "-v": ("verbose", True), "--verbose": ("verbose", True), "--facts": ("verbose", True),
    "-q": ("quiet", True), "--quiet": ("quiet", True), "--color": ("color", True), "--no-color": ("color", False),
    "--include-host": ("include_host", True), "--redact-ids": ("redact_ids", True)}
#: Variables behind options this path leaves to click when they are set (their values' grammar is click's), and
#: click's own shell-completion variable.
CLICK_VARIABLES = ("ENVDOCTOR_INCLUDE_HOST", "ENVDOCTOR_REDACT_IDS", "ENVDOCTOR_PYTHON", "_ENVDOCTOR_COMPLETE")


def _seconds(text: str) -> Optional[float]:
    """``--timeout``'s value as click's ``Seconds(0.1, 3600)`` reads it, or None where click would refuse it."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and 0.1 <= value <= 3600 else None


def parse(args: Sequence[str]) -> Optional[Dict[str, Any]]:
    """The options of ``diagnose ARGS`` when this path takes the command line, else None (click's turn)."""
    if not args or args[0] != "diagnose" or any(os.environ.get(name) for name in CLICK_VARIABLES):
        return None
    opts: Dict[str, Any] = {"fmt": None, "verbose": False, "quiet": False, "color": None, "timeout": None,
                            "include_host": False, "redact_ids": False}
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        if arg in FLAGS:
            flag, on = FLAGS[arg]
            opts[flag] = on
            continue
        name, eq, value = arg.partition("=")
        if name not in ("--format", "--timeout"):
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if name == "--format":
            if value not in FORMATS:
                return None
            opts["fmt"] = value
        else:
            seconds = _seconds(value)
            if seconds is None:
                return None
            opts["timeout"] = seconds
    if opts["fmt"] is None:
        # The variable every command shares: a value diagnose does not offer means its default (cli.common).
        env = os.environ.get("ENVDOCTOR_FORMAT")
        opts["fmt"] = env if env in FORMATS else FORMATS[0]
    if opts["timeout"] is None:
        env = os.environ.get("ENVDOCTOR_TIMEOUT")
        if env:
            opts["timeout"] = _seconds(env)
            if opts["timeout"] is None:
                return None  # click says why
        else:
            opts["timeout"] = DEFAULT_TIMEOUT
    return opts


def run(opts: Dict[str, Any]) -> Any:
    """The command ``parse`` took, as click's group would run it: a closed pipe on stdout is exit 0 (the group's
    ``invoke``), an ``Exit`` raised by :func:`envdoctor.cli.fail` ends with its code."""
    import errno

    from . import EXIT_OK, silence_stdout

    try:
        report(time.monotonic(), opts["fmt"], opts["verbose"], opts["quiet"], (), (), (), None, opts["color"],
               opts["timeout"], None, opts["include_host"], opts["redact_ids"], None)
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        silence_stdout()
        sys.exit(EXIT_OK)
    except Exception as exc:
        click = sys.modules.get("click")  # an Exit can only come from click, imported by whoever raised it
        if click is not None and isinstance(exc, click.exceptions.Exit):
            sys.exit(exc.exit_code)
        raise


def report(started: float, fmt: str, verbose: bool, quiet: bool, only: Tuple[str, ...], skip: Tuple[str, ...],
           check_names: Tuple[str, ...], snapshot_path: Optional[str], color: Optional[bool], timeout: float,
           python_exe: Optional[str], include_host: bool, redact_ids: bool, layers: Optional[List[str]]) -> None:
    """``diagnose`` once its options are known: examine the machine (or replay the snapshot), write the report,
    exit 1 when an error is shown, else 0."""
    from .subjects import subject

    subj = subject(snapshot_path, None, timeout, python_exe)
    deadline = started + timeout if subj.kind == "machine" else time.monotonic() + timeout  # the output's
    result = subj.report(layers=layers, checks=check_names, include_host=include_host, redact_ids=redact_ids)
    from ..layers import select  # after the programs launched ahead have started (a smaller interpreter beside them)

    written_by = output_deadline(deadline + 1.0)
    if check_names:
        only = result.layers  # shown as --only those layers would show them
    shown, findings = select(result, only, skip)
    if fmt != "text":
        result = result.narrowed(only, skip)
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(result.to_dict()), deadline=written_by)
    elif fmt == "markdown":
        from ..render.markdown import render as render_markdown

        echo_output(render_markdown(result), deadline=written_by)
    else:
        from ..render.layout import terminal_width
        from ..render.style import Style
        from ..render.text import render

        style = Style(sys.stdout, color)
        echo_output(render(result, style, verbose=verbose, width=terminal_width(sys.stdout), quiet=quiet,
                           only=only, skip=skip), color=style.color, deadline=written_by)
    sys.exit(1 if any(f.severity == "error" for f in findings) else 0)

"""Writing a command's output to standard output (no click needed for a text that holds no terminal escape: a plain
``diagnose`` runs without it, :mod:`envdoctor.cli.fastpath`)."""

from __future__ import annotations

from typing import Any, Optional

from ..host.base import DEFAULT_TIMEOUT


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

            if color is not True and "\x1b" in text:
                import click

                text = click.unstyle(text)  # what click.echo does into a pipe
            sys.stdout.flush()
            encoding = sys.stdout.encoding or "utf-8"
            try:
                data = text.encode(encoding, sys.stdout.errors or "strict")
            except UnicodeEncodeError:  # an ASCII-only locale: escapes, as printable() shows what cannot be
                data = text.encode(encoding, "backslashreplace")
            write_all(sys.stdout.fileno(), data, deadline, "standard output")
            return
        if "\x1b" in text or not _utf8(sys.stdout):
            import click

            click.echo(text, nl=False, color=color)
        else:  # what click.echo does with a text that holds no terminal escape, into a UTF-8 stream
            sys.stdout.write(text)
            sys.stdout.flush()
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


def _utf8(stream: Any) -> bool:
    """Whether ``stream`` writes UTF-8 (click.echo writes into any other through a writer of its own)."""
    import codecs

    try:
        return codecs.lookup(stream.encoding).name == "utf-8"
    except (AttributeError, LookupError, TypeError):
        return False

"""The click command group of ``envdoctor`` (imported when a command line goes through click: every one but a
plain ``diagnose`` of this machine, see :mod:`envdoctor.cli.fastpath`)."""

from __future__ import annotations

import importlib
from typing import Any, List, Optional

import click

from .. import __version__
from . import COMMANDS, EPILOG, EXIT_OK, silence_stdout


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    # A reader that went away (`envdoctor explain | head -1`) is not an error: click's own handler would exit 1
    # before main() below sees it, so the pipe is caught here, where every command (and --help) writes.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except OSError as exc:
            raise _reader_gone(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            raise _reader_gone(exc) from None


def _reader_gone(exc: OSError) -> BaseException:
    """A closed pipe on stdout: exit 0 quietly (README, Guarantees); any other error as it was."""
    import errno

    if exc.errno != errno.EPIPE:
        return exc
    silence_stdout()
    return click.exceptions.Exit(EXIT_OK)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="envdoctor", message="%(prog)s %(version)s")
def cli() -> None:
    """envdoctor: get a GPU deep-learning machine from "fresh" to "works".

    Probes the OS, NVIDIA driver, GPUs, CUDA toolkits, cuDNN/NCCL, compilers,
    Python frameworks and container runtime; checks them against a sourced
    compatibility matrix; and prints or runs the fix.
    """

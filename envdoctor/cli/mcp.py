"""``envdoctor mcp``: serve the read-only commands to a coding agent over the Model Context Protocol (stdio)."""

from __future__ import annotations

import sys
from typing import Tuple

import click

from . import EXIT_USAGE, fail
from .common import Seconds, timeout_option

#: The one line ``envdoctor mcp`` prints when the MCP SDK is not installed (exit 2).
INSTALL_LINE = ("envdoctor mcp needs the MCP Python SDK (Python 3.10 or later): install it with "
                "pip install 'envdoctor[mcp]'")


@click.command("mcp", epilog="""\b
Examples:
  envdoctor mcp                                  # tools over standard input/output
  envdoctor mcp --allow-path ~/snapshots         # also read snapshots from there
  claude mcp add envdoctor -- envdoctor mcp      # register it with Claude Code
\b
Tools: diagnose, topo, explain, triage, advise, matrix, check_policy,
dockerfile_lint, install_plan (a plan only, never run), fit; bench with
--allow-bench, after the user agrees. Nothing is installed, changed or
downloaded. Answers are redacted (home, user and host names, GPU UUIDs and
serials, credentials), whatever the options.
\b
Exit codes: 0 the client closed the connection; 2 could not start (the MCP SDK
is missing: pip install 'envdoctor[mcp]'; a bad option).""")
@click.option("--allow-path", "allow_paths", multiple=True, metavar="DIR",
              help="A directory whose files (snapshots, model directories) the tools may read; repeatable. Paths "
                   "are resolved (symbolic links followed) before the check. Default: none.")
@click.option("--allow-bench", is_flag=True,
              help="Offer the bench tool (timed copies on the GPUs); each call still asks the user first.")
@click.option("--deadline", type=Seconds(1, 3600), default=60.0, show_default=True, metavar="SECONDS",
              help="Longest one tool call may take, all in.")
@click.option("--max-output", type=click.IntRange(4096, 256 * 1024 * 1024), default=4 * 1024 * 1024,
              show_default=True, metavar="BYTES", help="Largest answer one call returns (its JSON).")
@timeout_option
def mcp(allow_paths: Tuple[str, ...], allow_bench: bool, deadline: float, max_output: int, timeout: float) -> None:
    """Serve envdoctor's read-only commands to a coding agent (Model Context Protocol over stdio).

    Needs the optional extra: pip install 'envdoctor[mcp]' (Python 3.10 or later).
    """
    if sys.version_info < (3, 10):
        raise fail(INSTALL_LINE + " (this is Python %d.%d)" % sys.version_info[:2], EXIT_USAGE)
    try:
        from ..mcp import server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] == "envdoctor":
            raise
        raise fail(INSTALL_LINE, EXIT_USAGE) from None
    from ..mcp.tools import Settings

    try:
        settings = Settings(allow_paths, timeout=timeout, deadline=deadline, max_output=max_output,
                            allow_bench=allow_bench)
    except ValueError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    server.serve(settings)

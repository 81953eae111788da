"""``envdoctor diagnose``."""

from __future__ import annotations

import sys
from typing import Optional

import click

from . import EXIT_USAGE, fail
from .common import live_host, privacy_options, python_option, scrubber_for, timeout_option


@click.command("diagnose", epilog="""\b
Examples:
  envdoctor diagnose                      # this machine, human report
  envdoctor diagnose -v                   # with each fact's evidence and probe timings
  envdoctor diagnose --format json        # for scripts and fleets
  envdoctor diagnose --snapshot node.json # replay a captured machine
\b
Exit codes: 0 no errors found; 1 errors found; 2 could not run (bad snapshot, bad option).""")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              envvar="ENVDOCTOR_FORMAT", help="Output format. [env: ENVDOCTOR_FORMAT]")
@click.option("-v", "--verbose", is_flag=True, help="Show where each fact came from, and probe timings.")
@click.option("--snapshot", "snapshot_path", metavar="FILE",
              help="Replay a snapshot written by `envdoctor snapshot` instead of looking at this machine.")
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: on a terminal, "
                                                       "unless NO_COLOR is set).")
@timeout_option
@python_option
@privacy_options
def diagnose(fmt: str, verbose: bool, snapshot_path: Optional[str], color: Optional[bool], timeout: float,
             python_exe: Optional[str], include_host: bool, redact_ids: bool) -> None:
    """Look at the whole GPU stack of this machine (or a snapshot) and judge it.

    Reads the OS, driver, GPUs, CUDA toolkits, libraries, compilers, Python
    frameworks and container runtime without importing any framework and
    without touching the network.
    """
    from ..host.privacy import Scrubber
    from ..report import diagnose as run_diagnose

    if snapshot_path:
        from ..host.snapshot import SnapshotError, SnapshotHost, load_snapshot

        try:
            doc = load_snapshot(snapshot_path)
        except SnapshotError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        host = SnapshotHost(doc, snapshot_path)
        scrubber = Scrubber(redact_ids=redact_ids, include_host=True)
        report = run_diagnose(host, scrubber=scrubber,
                              source={"kind": "snapshot", "description": host.description,
                                      "captured": str(doc.get("created", ""))})
    else:
        host, deadline = live_host(timeout, python_exe)
        report = run_diagnose(host, deadline=deadline, scrubber=scrubber_for(host, include_host, redact_ids))
    if fmt == "json":
        from ..render.json_out import dumps

        click.echo(dumps(report.to_dict()), nl=False)
    else:
        from ..render.style import Style
        from ..render.text import render

        click.echo(render(report, Style(sys.stdout, color), verbose=verbose), nl=False)
    sys.exit(report.exit_code)

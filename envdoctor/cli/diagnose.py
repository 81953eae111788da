"""``envdoctor diagnose``."""

from __future__ import annotations

import sys
from typing import Optional

import click

from .common import echo_output, format_option, open_snapshot, privacy_options, python_option, timeout_option


@click.command("diagnose", epilog="""\b
Examples:
  envdoctor diagnose                      # this machine, human report
  envdoctor diagnose -v                   # with each fact's evidence and probe timings
  envdoctor diagnose --format json        # for scripts and fleets
  envdoctor diagnose --format markdown    # to paste into a GitHub/GitLab issue
  envdoctor diagnose --snapshot node.json # replay a captured machine
\b
Exit codes: 0 no errors found; 1 errors found; 2 could not run (bad snapshot, bad option).""")
@format_option("text", "json", "markdown", help_text="Output format: text, json, or markdown (to paste into an "
                                                      "issue).")
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

    if snapshot_path is not None:
        from ..report import diagnose as run_diagnose

        host = open_snapshot(snapshot_path, timeout)
        scrubber = Scrubber(redact_ids=redact_ids, include_host=True)
        report = run_diagnose(host, scrubber=scrubber,
                              source={"kind": "snapshot", "description": host.description,
                                      "captured": str(host.doc.get("created", ""))})
    else:
        from ..early import LiveProbes
        from ..report import judge, load_checks

        live = LiveProbes(timeout, python_exe, include_host, redact_ids)  # the early worker starts now
        probes = live.results(meanwhile=load_checks)
        report = judge(probes, {"kind": "live", "description": live.host.description}, live.started)
    if fmt == "json":
        from ..render.json_out import dumps

        echo_output(dumps(report.to_dict()))
    elif fmt == "markdown":
        from ..render.markdown import render as render_markdown

        echo_output(render_markdown(report))
    else:
        from ..render.style import Style
        from ..render.text import render

        style = Style(sys.stdout, color)
        echo_output(render(report, style, verbose=verbose), color=style.color)
    sys.exit(report.exit_code)

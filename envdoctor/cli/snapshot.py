"""``envdoctor snapshot``."""

from __future__ import annotations

from typing import Optional

import click

from .. import __version__
from .common import (
    echo_output,
    live_host,
    output_deadline,
    privacy_options,
    python_option,
    scrubber_for,
    timeout_option,
    write_bytes,
)


@click.command("snapshot", epilog="""\b
Examples:
  envdoctor snapshot -o node17.json               # attach to a bug report
  envdoctor snapshot -o - --redact-ids | gzip > node17.json.gz
  envdoctor diagnose --snapshot node17.json       # replay it anywhere
\b
Exit codes: 0 written; 2 could not write it.""")
@click.option("-o", "--output", required=True, metavar="FILE", help="Where to write the snapshot ('-' for stdout).")
@timeout_option
@python_option
@privacy_options
def snapshot(output: str, timeout: float, python_exe: Optional[str], include_host: bool, redact_ids: bool) -> None:
    """Capture the raw evidence envdoctor reads from this machine into one JSON file.

    The snapshot holds file contents, directory listings, command outputs,
    NVML answers and environment variables (secrets always redacted; host
    name, user and home path hidden unless --include-host), so anyone can
    replay it with `envdoctor diagnose --snapshot FILE` and get the same report.
    """
    from ..host.snapshot import document_from_host, snapshot_bytes, snapshot_text
    from ..probes import run_probes

    host, deadline = live_host(timeout, python_exe)
    run_probes(host, deadline=deadline)  # the probes' questions are what gets recorded
    doc = document_from_host(host, scrubber_for(host, include_host, redact_ids), __version__)
    if output == "-":
        echo_output(snapshot_text(doc), deadline=output_deadline(deadline + 0.5))
    else:
        write_bytes(output, snapshot_bytes(doc, output), output_deadline(deadline + 0.5))
        click.echo("envdoctor: snapshot written to %s (%d files, %d commands)" % (
            output, len(doc["files"]), len(doc["commands"])), err=True)

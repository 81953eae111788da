"""``envdoctor topo``: the GPUs' interconnect, judged (a view of the topology layer of ``diagnose``)."""

from __future__ import annotations

import sys
from typing import Optional

import click

from .common import (
    echo_output,
    format_option,
    privacy_options,
    python_option,
    replay_options,
    subject,
    timeout_option,
)


@click.command("topo", epilog="""\b
Examples:
  envdoctor topo                       # the matrix, NCCL's transport per pair, the findings
  envdoctor topo --format json         # topology.gpus, topology.pairs, topology.fabric...
  envdoctor topo --snapshot node.json  # a captured machine
\b
The matrix speaks nvidia-smi topo -m's legend (X, NV#, PIX, PXB, PHB, NODE,
SYS). Reading a PCIe bridge's ACS setting needs root; without it ACS is
reported unknown.
\b
Exit codes: 0 no errors found; 1 errors found; 2 could not run (bad snapshot, bad option).""")
@format_option("text", "json", help_text="Output format: text or json.")
@click.option("-v", "--verbose", is_flag=True, help="Every finding in full, with its evidence and the rule's source.")
@replay_options
@timeout_option
@python_option
@privacy_options
def topo(fmt: str, verbose: bool, snapshot_path: Optional[str], color: Optional[bool], timeout: float,
         python_exe: Optional[str], include_host: bool, redact_ids: bool) -> None:
    """Show how the GPUs are connected and what NCCL will use between them.

    Per pair of GPUs: the path (NVLink or PCIe), peer-to-peer status and the
    transport NCCL picks (P2P/NVLink, P2P/PCIe, SHM, NET, or abort), judged with
    NCCL's own rules for the NCCL release installed; then what is wrong on the
    paths (ACS, IOMMU, NVLink down, fabric not ready, NCCL variables...).
    """
    report = subject(snapshot_path, None, timeout, python_exe).report(
        layers=["topology"], include_host=include_host, redact_ids=redact_ids)
    from ..render.topology import document, render

    doc = document(report)
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(doc))
    else:
        from ..render.layout import terminal_width
        from ..render.style import Style

        style = Style(sys.stdout, color)
        echo_output(render(report, style, width=terminal_width(sys.stdout), verbose=verbose), color=style.color)
    sys.exit(1 if doc["summary"].get("error") else 0)

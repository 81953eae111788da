"""``envdoctor topo``: the topology layer of a report as ``nvidia-smi topo -m`` draws it, judged.

A view of the topology probe's facts and the topology checks' findings (the same objects ``diagnose``
reports), never a second reading of the machine: the matrix in nvidia-smi's legend with each GPU's CPU
affinity and NUMA node, NCCL's transport per pair, the fabric, IOMMU and ACS, then the findings.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List, Sequence

from .. import __version__
from ..facts import Facts
from ..findings import Finding, summarize
from .layout import wrap
from .style import Style, printable

TOPO_SCHEMA_VERSION = 1

LEGEND = ("X = self, NV# = # bonded NVLinks, PIX = at most one PCIe bridge, PXB = several PCIe bridges (no host "
          "bridge), PHB = a PCIe host bridge (the CPU), NODE = PCIe host bridges within a NUMA node, SYS = the "
          "interconnect between NUMA nodes (QPI/UPI)")

#: Fact keys whose values ``topo --format json`` shows under ``topology`` (the name there: the key's tail).
SHOWN = ("topology.status", "topology.pairs", "topology.fabric", "topology.fabric.state", "topology.nccl",
         "topology.min_nccl_transport", "topology.iommu_mode", "topology.kernel_parameters", "topology.acs",
         "topology.acs_redirect")


def _gpus(facts: Facts) -> List[Dict[str, Any]]:
    """``topology.gpus`` with each GPU's PCIe link as the GPU probe read it (its one home: ``gpu.N.pcie_*``)."""
    out = []
    for g in facts.items("topology.gpus"):
        if not isinstance(g, dict):
            continue
        g = dict(g)
        i = g.get("index")
        g["pcie"] = {k: facts.value("gpu.%s.pcie_%s" % (i, k)) for k in ("gen_current", "gen_max", "width_current",
                                                                        "width_max")}
        out.append(g)
    return out


def document(report: Any) -> Dict[str, Any]:
    """The ``topo --format json`` document: the topology facts (value, or ``{"status", "reason"}`` when not
    known) and the topology layer's findings."""
    facts: Facts = report.facts
    topo: Dict[str, Any] = {}
    for key in SHOWN:
        f = facts.get(key)
        name = key[len("topology."):]
        if f is None:
            continue
        topo[name] = f.value if f.known else {"status": f.status, "reason": f.reason}
    if facts.get("topology.gpus") is not None:
        topo["gpus"] = _gpus(facts)
    findings = [fd for fd in report.findings if fd.components and fd.components[0] == "topology"
                or fd.code == "gpu.pcie_bridge_degraded"]
    return {
        "schema_version": TOPO_SCHEMA_VERSION,
        "envdoctor_version": __version__,
        "generated": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "source": dict(report.source),
        "topology": topo,
        "findings": [fd.to_dict() for fd in findings],
        "summary": summarize(findings),
    }


def matrix_rows(facts: Facts) -> List[List[str]]:
    """The matrix as ``nvidia-smi topo -m`` prints it: a header row, then per GPU its cells, CPU affinity and
    NUMA node (``N/A`` where not known)."""
    gpus = [g for g in facts.items("topology.gpus") if isinstance(g, dict)]
    n = len(gpus)
    cells = {(p.get("a"), p.get("b")): str(p.get("path") or "?") for p in facts.items("topology.pairs")
             if isinstance(p, dict)}
    rows = [[""] + ["GPU%d" % i for i in range(n)] + ["CPU Affinity", "NUMA Affinity"]]
    for a in range(n):
        row = ["GPU%d" % a]
        for b in range(n):
            row.append("X" if a == b else cells.get((min(a, b), max(a, b)), "?"))
        g = gpus[a]
        numa = g.get("numa_node")
        row += [str(g.get("cpulist") or "N/A"), str(numa) if isinstance(numa, int) and numa >= 0 else "N/A"]
        rows.append(row)
    return rows


def _groups(pairs: Sequence[Dict[str, Any]], key: str) -> Dict[str, List[str]]:
    out: Dict[str, List[str]] = {}
    for p in pairs:
        out.setdefault(str(p.get(key)), []).append("%s-%s" % (p.get("a"), p.get("b")))
    return out


def _pair_text(names: List[str], every: bool) -> str:
    if every:
        return "every pair"
    return ", ".join(names[:12]) + (" and %d more" % (len(names) - 12) if len(names) > 12 else "")


def render(report: Any, style: Style, width: int = 80, verbose: bool = False) -> str:
    from .text import _finding_lines

    facts: Facts = report.facts
    status = facts.get("topology.status")
    out: List[str] = []
    findings: List[Finding] = [fd for fd in report.findings if fd.components and fd.components[0] == "topology"
                               or fd.code == "gpu.pcie_bridge_degraded"]
    pairs = [p for p in facts.items("topology.pairs") if isinstance(p, dict)]
    if status is None or not status.known or not pairs:
        # nothing to draw: one line (no GPU, one GPU, not recorded, NVML unavailable)
        if status is None:
            line = "GPU topology: not examined"
        elif not status.known:
            line = "GPU topology %s: %s" % ("unknown" if status.status != "timed_out" else "timed out", status.reason)
        else:
            gpus = [g for g in facts.items("topology.gpus") if isinstance(g, dict)]
            name = gpus[0].get("name") if gpus else None
            line = "%s%s" % (status.value, " (%s)" % name if name else "")
        out += wrap(printable(line), width)
        for fd in findings:
            out.append("")
            out.extend(_finding_lines(fd, style, verbose, width))
        return "\n".join(out) + "\n"
    rows = matrix_rows(facts)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        text = "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
        out.append(style(text, "bold") if r is rows[0] else text)
    out.append("")
    out += [style(ln, "dim") for ln in wrap("Legend: " + LEGEND, width)]
    out.append("")
    info = facts.mapping("topology.nccl")
    nccl = facts.get("topology.nccl")
    if info:
        rules = str(info.get("rules", "")).replace("NCCL ", "")
        if info.get("version"):
            head = "NCCL %s (%s), rules of %s; P2P level %s (%s)" % (
                info["version"], info.get("from"), rules, info.get("p2p_level"), info.get("why"))
        else:
            head = "NCCL: none found here, judged with the rules of %s; P2P level %s (%s)" % (
                rules, info.get("p2p_level"), info.get("why"))
        out += wrap(printable(head + ":"), width)
        by = _groups(pairs, "nccl")
        for transport in ("P2P/NVLink", "P2P/PCIe", "SHM", "NET", "abort", "None"):
            if transport in by:
                out += wrap(printable("%s: %s" % (transport if transport != "None" else "unknown",
                                                  _pair_text(by[transport], len(by) == 1))), width, "  ", "    ")
        if info.get("note") and info.get("version"):
            out += [style(ln, "dim") for ln in wrap(printable(str(info["note"])), width, "  ", "    ")]
    elif nccl is not None and not nccl.known:
        out += wrap(printable("NCCL: %s" % nccl.reason), width)
    fabric = facts.get("topology.fabric.state")
    if fabric is not None and fabric.known and fabric.value is not None:
        out += wrap("Fabric: %s" % printable(str(fabric.value)), width)
    iommu = facts.get("topology.iommu_mode")
    acs = facts.get("topology.acs_redirect")
    parts = []
    if iommu is not None:
        parts.append("IOMMU %s" % (iommu.value if iommu.known else "unknown (%s)" % iommu.reason))
    if acs is not None:
        parts.append("ACS redirect on PCIe P2P paths: %s" % (
            ("yes" if acs.value else "no") if acs.known else "unknown (%s)" % acs.reason))
    if parts:
        out += wrap(printable("; ".join(parts)), width)
    if findings:
        for fd in findings:
            out.append("")
            out.extend(_finding_lines(fd, style, verbose, width))
    else:
        out += ["", style("No problems found on the paths between the GPUs.", "green")]
    return "\n".join(out) + "\n"

"""The text of ``envdoctor bench``: one line per measured copy against what it should reach, where the copies
ran (CPUs, NUMA node), the link as NVML saw it idle and under load, then the findings. 80 columns into a pipe.

A result line reads ``GPU0 H2D pinned 25.9 GB/s = 0.82 × PCIe 4.0 x16 ✓``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .layout import wrap, wrap_command
from .style import Style, printable

MARKS = {"ok": "ok", "warning": "warning", "error": "error"}


def _mib(n: Any) -> str:
    if not isinstance(n, int) or n <= 0:
        return "?"
    return "%d MiB" % (n >> 20) if n % (1 << 20) == 0 else "%d bytes" % n


def _rate(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return "%.0f" % x if x >= 1000 else "%.1f" % x


def line(r: Dict[str, Any], style: Style) -> str:
    """``GPU0 H2D pinned 25.9 GB/s = 0.82 × PCIe 4.0 x16 ✓`` (the text of one result)."""
    from ..bench.judge import describe

    times = "×" if style.unicode else "x"
    head = "%s %s GB/s" % (describe(r), _rate(r.get("gbps")))
    ref = r.get("reference")
    if r.get("gbps") is None:
        return "%s  %s" % (describe(r) + " -", style("no valid timing", "dim"))
    if ref and r.get("ratio") is not None:
        head += " = %.2f %s %s" % (r["ratio"], times, printable(str(ref.get("label"))))
    verdict = r.get("verdict")
    if r.get("corrupt_copies"):
        return head + " " + style.mark("error") + " " + style("data corrupt in %d of %d copies" % (
            r["corrupt_copies"], r.get("verified_copies") or 0), "red")
    if verdict in MARKS:
        tail = style.mark(MARKS[verdict])
        if r["test"] == "p2p" and r.get("verified_copies"):
            tail += style("  data verified (%d copies)" % r["verified_copies"], "dim")
        return head + " " + tail
    why = r.get("why") or "not judged"
    if r.get("of_local") is not None:
        why = "%.2f of the local node's rate" % r["of_local"]
    return head + " " + style("· " + printable(why), "dim")


def _binding(g: Dict[str, Any]) -> str:
    b = g.get("binding") or {}
    parts = []
    if b.get("cpus"):
        parts.append("CPUs %s" % b["cpus"])
    elif b.get("cpus_bound"):
        parts.append("%d local CPUs" % b["cpus_bound"])
    else:
        parts.append("CPUs not bound (%s)" % (b.get("cpus_why") or "unknown"))
    if b.get("memory") and b.get("numa_node") is not None:
        parts.append("memory on NUMA node %s (%s)" % (b["numa_node"], b["memory"]))
    elif b.get("memory_why"):
        parts.append("memory not bound (%s)" % b["memory_why"])
    elif b.get("numa_node") is None:
        parts.append("memory not bound (the GPU's NUMA node is not known)")
    return "; ".join(parts)


def _link(g: Dict[str, Any]) -> Optional[str]:
    link = g.get("link") or {}
    if not link.get("gen_max"):
        return None
    text = "PCIe link: up to %s.0 x%s" % (link.get("gen_max"), link.get("width_max") or "?")
    if link.get("gen_idle"):
        text += ", idle %s.0 x%s" % (link["gen_idle"], link.get("width_idle") or "?")
    if link.get("gen_loaded"):
        text += ", under load %s.0 x%s" % (link["gen_loaded"], link.get("width_loaded") or "?")
        idle_down = link.get("gen_idle") and link["gen_idle"] < link["gen_max"]
        if idle_down and link["gen_loaded"] >= link["gen_max"]:
            text += " (an idle link saves power: not a fault)"
    elif link.get("gen_max"):
        text += ", not sampled under load"
    rep = g.get("replays") or {}
    if isinstance(rep.get("before"), int) and isinstance(rep.get("after"), int):
        text += "; replays %d" % (rep["after"] - rep["before"])
    return text


def _finding(f: Dict[str, Any], style: Style, verbose: bool, width: int) -> List[str]:
    indent = " " * 8
    lines = wrap(printable(f["title"]), width, "x ERROR ", indent)
    lines[0] = style.mark(f["severity"]) + " " + style.severity_label(f["severity"]) + " " + lines[0][8:]
    detail = f.get("detail") or ""
    if not verbose and ". " in detail:
        detail = detail.split(". ", 1)[0] + "."
    if detail:
        lines += [style(ln, "dim") for ln in wrap(printable(detail), width, indent)]
    fix = f.get("fix") or {}
    if fix.get("text"):
        lines += wrap("fix: " + printable(fix["text"]), width, indent, indent + "     ")
    for cmd in fix.get("commands") or []:
        lines += wrap_command(printable(cmd), width, indent + "$ ", indent + "    ")
    if verbose:
        lines.append(indent + style(printable(f["code"]), "dim"))
    return lines


def render(doc: Dict[str, Any], style: Style, width: int, verbose: bool = False) -> str:
    o = doc["options"]
    gpus = doc.get("gpus") or []
    out: List[str] = []
    errors, warnings = doc["summary"].get("error", 0), doc["summary"].get("warning", 0)
    mark = "error" if errors else "warning" if warnings else "ok"
    verdict = ("%d error%s" % (errors, "" if errors == 1 else "s")) if errors else (
        "%d warning%s" % (warnings, "" if warnings == 1 else "s")) if warnings else "as fast as its links"
    out.append("%s envdoctor bench: %d GPU%s, %s per copy, median of %d trials: %s" % (
        style.mark(mark), len(gpus), "" if len(gpus) == 1 else "s", _mib(o.get("size_bytes")), o.get("trials"),
        verdict))
    inc = doc.get("incomplete")
    if inc:
        out += wrap(printable("NOT FINISHED: %s during %s (%s)" % (inc["reason"].replace("_", " "), inc["during"],
                                                                   inc["message"])), width, "  ", "    ")
    for g in gpus:
        out += wrap(printable("GPU%d %s: %s" % (g["index"], g.get("name") or "", _binding(g))), width, "  ", "    ")
    for note in doc.get("notes") or []:
        out += [style(ln, "dim") for ln in wrap(printable("note: " + note), width, "  ", "    ")]
    out.append("")
    for r in doc.get("results") or []:
        out += wrap(line(r, style), width + 20, "  ", "    ")  # the colour codes are not columns
    for g in gpus:
        link = _link(g)
        if link:
            out += [style(ln, "dim") for ln in wrap(printable("GPU%d %s" % (g["index"], link)), width, "  ", "    ")]
    findings = doc.get("findings") or []
    if findings:
        out.append("")
        for f in findings:
            out += _finding(f, style, verbose, width)
    if verbose:
        out.append("")
        out.append(style("Each result is the median of its trials in GB/s (10^9 bytes/s); device-to-device "
                         "copies count bytes read and written.", "dim"))
    return "\n".join(out) + "\n"

"""Human report: facts grouped by layer, then findings worst first, then the next step."""

from __future__ import annotations

from typing import Any, List

from ..facts import NOT_SUPPORTED_DEFAULT, Fact
from ..findings import LAYER_TITLES, SEVERITY_RANK, Finding, layer_of
from ..report import Report
from .style import Style, printable

LABEL_WIDTH = 34
FRAMEWORK_LAYERS = ("torch", "tensorflow", "jax", "onnxruntime", "paddle", "cupy", "mxnet")


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%.0f %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return str(n)  # pragma: no cover


#: Fields of a structured fact shown without -v, in this order (the rest need -v).
HEADLINE = ("summary", "version", "release", "name", "target", "path", "client", "server", "state", "kind",
            "error", "message")
_PLAIN = ("summary", "version", "release", "name", "target", "path")


def format_value(key: str, value: Any, verbose: bool = False) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and key.endswith("_bytes"):
        return human_bytes(value)
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, dict):
        return _format_item(value, verbose) or "-"
    if isinstance(value, list):
        if not value:
            return "none"
        if all(isinstance(v, dict) for v in value):
            return "\n".join(_format_item(v, verbose) for v in value)
        return ", ".join(format_value(key, v, verbose) for v in value)
    return str(value)


def _format_item(item: dict, verbose: bool = False) -> str:
    """A structured fact (a toolkit, a library copy, Docker...): headline fields, all of them with -v."""
    def shown(v: Any) -> bool:
        return v not in (None, "", [], {}) and (verbose or v is not False)

    head = [str(item[k]) for k in _PLAIN if k in item and shown(item[k]) and not isinstance(item[k], (dict, list))]
    extra_keys = [k for k in HEADLINE if k not in _PLAIN] if not verbose else [
        k for k in item if k not in _PLAIN and k != "source"]
    rest = ["%s: %s" % (k.replace("_", " "), format_value(k, item[k], verbose)) for k in extra_keys
            if k in item and shown(item[k])]
    if not head and not rest and not verbose:
        return _format_item(item, verbose=True)  # nothing headline-worthy: show what there is
    line = "  ".join(head)
    if rest:
        line = (line + "  (" + "; ".join(rest) + ")") if line else "; ".join(rest)
    return line


def _fact_lines(f: Fact, style: Style, verbose: bool) -> List[str]:
    label = printable(f.label or f.key).ljust(LABEL_WIDTH)
    if f.status == "ok":
        text = printable(format_value(f.key, f.value, verbose))
        mark = "  "
    else:
        text = style({"not_supported": "not supported"}.get(f.status, f.status.replace("_", " ")),
                     "yellow" if f.status != "not_supported" else "dim")
        # The generic "not supported by this GPU or driver" is noise; a specific reason (WSL2: the
        # driver runs on Windows) is worth a line.
        if f.reason and (f.status != "not_supported" or verbose or f.reason != NOT_SUPPORTED_DEFAULT):
            text += style(": " + printable(f.reason), "dim")
        mark = style.mark(f.status) + " "
    first, *more = text.split("\n")
    lines = ["  %s%s %s" % (mark, label, first)]
    pad = " " * (4 + LABEL_WIDTH + 1)
    lines += [pad + m for m in more]
    if verbose and f.source:
        lines.append(pad + style("from " + printable(f.source), "dim"))
    return lines


def _finding_lines(fd: Finding, style: Style, verbose: bool) -> List[str]:
    lines = ["  %s %s %s" % (style.mark(fd.severity), style.severity_label(fd.severity), printable(fd.title)),
             "          " + style(printable(fd.code), "dim")]
    if fd.detail:
        lines += ["          " + ln for ln in printable(fd.detail).splitlines()]
    if fd.fix.text:
        lines.append("          " + style("fix: ", "bold") + printable(fd.fix.text))
    if fd.fix.install:
        # The recipe does the whole fix (and verifies it); the commands are the same by hand.
        lines.append("            $ " + printable(fd.fix.install))
        if fd.fix.commands:
            lines.append("          " + style("or by hand:", "dim"))
    for cmd in fd.fix.commands:
        lines.append("            $ " + printable(cmd))
    if verbose:
        for ev in fd.evidence:
            lines.append("          " + style(printable("evidence: %s = %s (%s)" % (
                ev.get("key"), ev.get("value"), ev.get("source"))), "dim"))
        if fd.source.get("url"):
            lines.append("          " + style(printable("rule source: %s" % fd.source["url"]), "dim"))
    return lines


def render(report: Report, style: Style, verbose: bool = False) -> str:
    out: List[str] = []
    src = report.source
    unseen = report.unseen
    if unseen is not None:
        out.append(style("NOT VERIFIED: could not establish the driver/GPU state of this node (%s)" % printable(
            unseen.title), "red"))
    out.append(style("envdoctor", "bold") + " report for %s  (%.2fs)" % (printable(str(src.get("description", "?"))),
                                                                       report.duration))
    for p in report.probes:
        head = style(p.title, "bold")
        if p.status != "ok":
            head += "  " + style.mark(p.status) + " " + style(p.status.replace("_", " ") + ": " + printable(p.error),
                                                              "yellow")
        elif verbose:
            head += style("  (%.0f ms)" % (p.duration * 1000), "dim")
        out.append("")
        out.append(head)
        for f in p.facts:
            out.extend(_fact_lines(f, style, verbose))
    out.append("")
    s = report.summary
    if report.findings:
        out.append(style("Findings", "bold") + style("  (worst first, grouped by layer)", "dim"))
        # Layers in the order of their worst finding; within a layer, worst first (report order).
        groups: dict = {}
        for fd in report.findings:
            layer = fd.components[0] if fd.components else layer_of(fd)  # its primary component
            title = LAYER_TITLES.get(layer, "Frameworks" if layer in FRAMEWORK_LAYERS else layer)
            groups.setdefault(title, []).append(fd)
        for title, items in sorted(groups.items(), key=lambda kv: min(SEVERITY_RANK[f.severity] for f in kv[1])):
            out.append("  " + style(title, "bold"))
            for fd in items:
                out.extend(_finding_lines(fd, style, verbose))
        out.append("")
    out.append("Summary: %d error%s, %d warning%s, %d info" % (
        s["error"], "" if s["error"] == 1 else "s", s["warning"], "" if s["warning"] == 1 else "s", s["info"]))
    top = next((f for f in report.findings if f.severity != "info"), None)
    if top is not None:
        step = top.fix.install or (top.fix.commands[0] if top.fix.commands else top.fix.text)
        out.append(style("Next step: ", "bold") + step)
    return "\n".join(out) + "\n"

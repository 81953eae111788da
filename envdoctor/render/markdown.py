"""``--format markdown``: the report as it pastes into a GitHub or GitLab issue.

Findings first (what a maintainer reads), then every fact in a folded ``<details>`` table per layer,
so the issue stays short but complete. Everything that came from the machine is escaped for both
Markdown and the HTML issue trackers allow: a ``|`` cannot break a table, a ``<`` cannot open a tag,
a backtick cannot end a code span, and control characters show as escapes.
"""

from __future__ import annotations

import re
from typing import List

from .. import __version__
from ..findings import AnyOf, Finding
from ..layers import NOT_EXAMINED, titles
from ..report import Report
from .style import printable
from .text import format_value

_SEVERITY = {"error": "**ERROR**", "warning": "**WARNING**", "info": "info"}
_STATUS = {"ok": "", "unknown": "unknown", "not_supported": "not supported", "timed_out": "timed out"}
#: What can start markup inside a paragraph, list item or table cell (< and > become entities first).
_MARKDOWN = re.compile(r"([\\`*_\[\]|~#])")
_URL = re.compile(r"^https?://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+$")


def text(s: object) -> str:
    """Plain text safe inside a Markdown paragraph or table cell (no markup, no HTML, one line)."""
    out = printable(str(s)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", out).replace("\r", "").replace("\n", "<br>")


def code(s: object, in_table: bool = False) -> str:
    """An inline code span that no backtick in ``s`` can close early (CommonMark: a longer fence). In a
    table cell a ``|`` must be ``\\|`` even inside the span (GFM splits cells before reading spans)."""
    body = printable(str(s)).replace("\n", " ")
    if in_table:
        body = body.replace("|", "\\|")
    fence = "`" * (max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return "%s%s%s%s%s" % (fence, pad, body, pad, fence)


def url(s: object) -> str:
    """A link for a well-formed http(s) URL (no escapes inside an autolink), else plain text."""
    u = str(s)
    return "<%s>" % u if _URL.match(u) else text(u)


def _finding(fd: Finding) -> List[str]:
    lines = ["- %s %s %s" % (_SEVERITY[fd.severity], code(fd.code), text(fd.title))]
    if fd.detail:
        lines.append("  - " + text(fd.detail))
    if fd.fix.text:
        lines.append("  - Fix: " + text(fd.fix.text))
    if fd.fix.install:
        lines.append("    - " + code(fd.fix.install))
    for step in fd.fix.steps:  # in order; alternatives as a list of ways, any one of which does it
        if isinstance(step, AnyOf):
            lines.append("    - one of:")
            lines += ["      - " + ", then ".join(code(c) for c in option) for option in step.options]
        else:
            lines.append("    - " + code(step))
    if fd.source.get("url"):
        lines.append("  - Rule: " + text(fd.source.get("rule") or "") + " (" + url(fd.source["url"]) + ")")
    return lines


def render(report: Report) -> str:
    s = report.summary
    out: List[str] = [
        "### envdoctor report",
        "",
        "%s, envdoctor %s, %s: **%d error%s, %d warning%s, %d info**" % (
            text(report.source.get("description", "?")), text(__version__), text(report.generated),
            s["error"], "" if s["error"] == 1 else "s", s["warning"], "" if s["warning"] == 1 else "s", s["info"]),
        "",
    ]
    if report.not_examined:  # a layer not looked at is not a layer that passed
        out[4:4] = ["**Not examined:** %s (%s)" % (text(", ".join(titles(report.not_examined))), text(NOT_EXAMINED)),
                    ""]
    if report.unseen is not None:
        out[0:0] = ["**NOT VERIFIED: could not establish the driver/GPU state of this node (%s)**" % text(
            report.unseen.title), ""]
    if report.findings:
        out.append("#### Findings (worst first)")
        out.append("")
        for fd in report.findings:
            out.extend(_finding(fd))
        out.append("")
    out.append("<details><summary>Facts (%d, by layer)</summary>" % sum(len(p.facts) for p in report.probes))
    out.append("")
    for p in report.probes:
        head = "**%s**" % text(p.title)
        if p.status != "ok":
            head += " (%s: %s)" % (text(p.status.replace("_", " ")), text(p.error))
        out.append(head)
        out.append("")
        if not p.facts:
            continue
        out.append("| fact | value | from |")
        out.append("|---|---|---|")
        for f in p.facts:
            if f.status == "ok":
                value = text(format_value(f.key, f.value))
            else:
                value = "_%s_" % text(_STATUS.get(f.status, f.status)) + (": " + text(f.reason) if f.reason else "")
            out.append("| %s | %s | %s |" % (text(f.label or f.key), value,
                                              code(f.source, in_table=True) if f.source else ""))
        out.append("")
    out.append("</details>")
    out.append("")
    out.append("<sub>`envdoctor snapshot -o snap.json --redact-ids` captures the raw evidence; "
               "`envdoctor diagnose --snapshot snap.json` replays it.</sub>")
    return "\n".join(out) + "\n"

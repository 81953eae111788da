"""``envdoctor fleet``: compare many nodes' reports or snapshots."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import click

from . import EXIT_USAGE, fail
from .common import echo_output, timeout_option

#: Node names shown per line in the text output (all of them in JSON).
SHOWN = 8


@click.command("fleet", epilog="""\b
Examples:
  for n in $(cat nodes); do ssh $n envdoctor diagnose --format json > reports/$n.json; done
  envdoctor fleet reports/                       # what differs, what is wrong where
  envdoctor fleet reports/ --baseline reports/node01.json   # every node against a known-good one
  envdoctor fleet snaps/*.json.gz --uniform --format json   # CI gate: one value per fact, no errors
\b
Inputs: `envdoctor diagnose --format json` reports, or `envdoctor snapshot` files
(replayed by this envdoctor), plain or gzip; a directory stands for its *.json
and *.json.gz files. Nodes are named after their files.
\b
Exit codes: 0 every node read and none has errors (nor deviates, with --baseline;
nor differs, with --uniform); 1 otherwise; 2 could not run (no file could be read,
bad baseline, bad option).""")
@click.argument("files", nargs=-1, metavar="FILE|DIR...")
@click.option("--baseline", metavar="FILE", help="A known-good node's report or snapshot: list every node's "
                                                 "differences from it (and exit 1 if there are any).")
@click.option("--uniform", is_flag=True, help="Exit 1 when any fact differs across the nodes (a fleet meant to be "
                                              "identical).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              envvar="ENVDOCTOR_FORMAT", help="Output format. [env: ENVDOCTOR_FORMAT]")
@timeout_option
def fleet(files: Tuple[str, ...], baseline: Optional[str], uniform: bool, fmt: str, timeout: float) -> None:
    """Compare the reports (or snapshots) of many machines: the facts that differ
    between them and which nodes hold the odd values, every finding with the
    nodes it was found on, and each node's deviations from a baseline.
    """
    from .. import fleet as logic

    paths = logic.expand(files)
    if not paths:
        raise fail("name report or snapshot files, or directories holding them (see envdoctor fleet --help)",
                   EXIT_USAGE)
    read_timeout = max(timeout, 1.0)
    nodes = [logic.load_node(p, read_timeout, name) for p, name in zip(paths, logic.unique_names(paths))]
    base = None
    if baseline is not None:
        base = logic.load_node(baseline, read_timeout)
        if base.unreadable:
            raise fail("the baseline cannot be used: " + base.unreadable, EXIT_USAGE)
    result = logic.compare(nodes, base, uniform)
    if not result.readable:
        for n in nodes:
            click.echo("envdoctor: " + n.unreadable, err=True)
        raise fail("none of the %d file(s) could be read" % len(nodes), EXIT_USAGE)
    if fmt == "json":
        import datetime

        from .. import __version__
        from ..render.json_out import dumps

        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
        echo_output(dumps(result.to_dict(__version__, now)))
    else:
        import sys

        from ..render.style import Style

        style = Style(sys.stdout)
        echo_output(render_text(result, style), color=style.color)
    raise click.exceptions.Exit(result.exit_code)


def _names(names: List[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (" and %d more" % (len(names) - SHOWN) if len(names) > SHOWN else "")


def render_text(result: Any, style: Any) -> str:
    from ..render.style import printable

    out: List[str] = []
    kinds = {}  # type: dict
    for n in result.readable:
        kinds[n.kind] = kinds.get(n.kind, 0) + 1
    s = result.summary()
    out.append(style("envdoctor fleet", "bold") + ": %d node%s (%s)%s" % (
        s["nodes"], "" if s["nodes"] == 1 else "s",
        ", ".join("%d %s%s" % (c, k, "" if c == 1 else "s") for k, c in sorted(kinds.items())),
        ", %d unreadable" % s["unreadable"] if s["unreadable"] else ""))
    width = max((len(f.label) for f in result.facts), default=10) + 2
    differ = [f for f in result.facts if not f.uniform]
    same = [f for f in result.facts if f.uniform and f.values]
    if differ:
        out.append("")
        out.append(style("Facts that differ between nodes", "bold") + style("  (most common first)", "dim"))
        for f in differ:
            (top, top_nodes), rest = f.values[0], f.values[1:]
            out.append("  %s%s" % (f.label.ljust(width), printable("%s (%d)" % (top, len(top_nodes)))))
            for value, names in rest:
                out.append("  %s%s %s" % (" " * width, style(printable("%s:" % value), "yellow"),
                                          printable(_names(names))))
    if same:
        out.append("")
        out.append(style("Facts every node shares", "bold"))
        for f in same:
            out.append("  %s%s" % (f.label.ljust(width), printable(f.values[0][0])))
    if result.findings:
        out.append("")
        out.append(style("Findings", "bold") + style("  (worst first, with the nodes they were found on)", "dim"))
        for fd in result.findings:
            sev = {"error": "ERROR", "warning": "WARN", "info": "INFO"}[fd.severity]
            colour = {"error": "red", "warning": "yellow", "info": "blue"}[fd.severity]
            out.append("  %s %s  %d node%s: %s" % (style(sev.ljust(5), colour, "bold"), printable(fd.code),
                                                  len(fd.nodes), "" if len(fd.nodes) == 1 else "s",
                                                  printable(_names(fd.nodes))))
            out.append("        " + style(printable(fd.title), "dim"))
    unreadable = [n for n in result.nodes if n.unreadable]
    if unreadable:
        out.append("")
        out.append(style("Unreadable", "bold"))
        for n in unreadable:
            out.append("  %s: %s" % (printable(n.name), printable(n.unreadable)))
    if result.baseline is not None:
        out.append("")
        out.append(style("Against the baseline %s" % printable(result.baseline.name), "bold") +
                   ": %d deviation%s" % (len(result.deviations), "" if len(result.deviations) == 1 else "s"))
        for d in result.deviations:
            out.append("  %s  %s: %s (baseline: %s)" % (printable(d.node), d.label, printable(d.found),
                                                      printable(d.expected)))
    out.append("")
    parts = ["%d node%s" % (s["nodes"], "" if s["nodes"] == 1 else "s"),
             "%d with errors" % s["with_errors"], "%d with warnings" % s["with_warnings"]]
    if s["unreadable"]:
        parts.append("%d unreadable" % s["unreadable"])
    parts.append("%d fact%s differ%s" % (s["differing_facts"], "" if s["differing_facts"] == 1 else "s",
                                         "s" if s["differing_facts"] == 1 else ""))
    if result.baseline is not None:
        parts.append("%d deviation%s from the baseline" % (s["deviations"], "" if s["deviations"] == 1 else "s"))
    out.append("Summary: " + ", ".join(parts))
    return "\n".join(out) + "\n"

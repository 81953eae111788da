"""``envdoctor fleet``: compare many nodes' reports or snapshots."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import click

from ..render.style import one_line as line
from . import EXIT_USAGE, fail
from .common import Seconds, echo_output, env_timeout, format_option, read_timeout_option, renamed_option

#: Node names shown per line in the text output (all of them in JSON).
SHOWN = 8
#: Nodes failing the policy listed in the text output (all of them in JSON).
SHOWN_POLICY = 50


@click.command("fleet", epilog="""\b
Examples:
  for n in $(cat nodes); do ssh $n envdoctor diagnose --format json > reports/$n.json; done
  envdoctor fleet reports/                       # what differs, what is wrong where
  envdoctor fleet reports/ --baseline reports/node01.json   # every node against a known-good one
  envdoctor fleet snaps/*.json.gz --uniform --format json   # CI gate: one value per fact, no errors
  envdoctor fleet reports/ --policy policy.toml --format junit > fleet.xml
\b
Inputs: `envdoctor diagnose --format json` reports, or `envdoctor snapshot` files
(replayed by this envdoctor), plain or gzip; a directory stands for its *.json
and *.json.gz files. Nodes are named after their files; a file named twice is
one node. A fact a report does not hold (an older envdoctor wrote it) is listed
apart, never counted as a difference or a deviation.
\b
Exit codes: 0 every node read and none has errors (nor deviates, with --baseline;
nor differs, with --uniform; nor fails the policy, with --policy); 1 otherwise; 2 could not run (no file could be read,
bad baseline, bad option).""")
@click.argument("files", nargs=-1, metavar="FILE|DIR...")
@click.option("--baseline", metavar="FILE", help="A known-good node's report or snapshot: list every node's "
                                                 "differences from it (and exit 1 if there are any).")
@click.option("--uniform", is_flag=True, help="Exit 1 when any fact differs across the nodes (a fleet meant to be "
                                              "identical).")
@click.option("--policy", "policy_path", metavar="FILE",
              help="Judge every node against this policy (as `envdoctor check` does): list the nodes that fail it, "
                   "worst first, and exit 1 if any does.")
@format_option("text", "json", "junit", "prometheus",
               help_text="Output format: text, json, junit (one testsuite per node) or prometheus (one series set "
                         "per node, labelled node=...).")
@read_timeout_option
@renamed_option("--timeout", "--read-timeout", "timeout", type=Seconds(0.1, 3600), metavar="SECONDS")
def fleet(files: Tuple[str, ...], baseline: Optional[str], uniform: bool, policy_path: Optional[str], fmt: str,
          timeout: float) -> None:
    """Compare the reports (or snapshots) of many machines: the facts that differ
    between them and which nodes hold the odd values, every finding with the
    nodes it was found on, and each node's deviations from a baseline.
    """
    from .. import fleet as logic

    policy_obj = None
    if policy_path is not None:
        from ..policy import PolicyError, load_policy

        try:
            policy_obj = load_policy(policy_path)
        except PolicyError as exc:
            raise fail("bad policy: %s" % exc, EXIT_USAGE) from None
        for warning in policy_obj.warnings:
            click.echo("envdoctor: policy %s: %s" % (policy_path, warning), err=True)
    inputs = logic.gather(files, _stdout_file())
    for why in inputs.unlistable:
        click.echo("envdoctor: cannot list the directory " + line(why), err=True)
    empty = ", ".join(line(d) for d in inputs.empty_dirs)
    if not inputs.files:
        if inputs.empty_dirs or inputs.unlistable:
            raise fail("no report or snapshot files to compare%s" % (
                ": no *.json or *.json.gz files in " + empty if empty else ""), EXIT_USAGE)
        if inputs.skipped:
            raise fail("no report or snapshot files to compare besides this run's output, " + line(
                inputs.skipped[0]), EXIT_USAGE)
        raise fail("name report or snapshot files, or directories holding them (see envdoctor fleet --help)",
                   EXIT_USAGE)
    if empty:
        click.echo("envdoctor: no *.json or *.json.gz files in " + empty, err=True)
    replay = env_timeout()  # a snapshot's replay gets the probe budget (ENVDOCTOR_TIMEOUT), as a live run does
    nodes = logic.load_nodes(inputs.files, logic.unique_names(inputs.files), timeout, policy_obj,
                             summary=fmt in ("junit", "prometheus"), replay=replay, regular=inputs.regular)
    base = None
    if baseline is not None:
        base = logic.load_node(baseline, timeout, keep_facts=False, replay=replay)
        if base.unreadable:
            raise fail("the baseline cannot be used: " + line(base.unreadable), EXIT_USAGE)
    result = logic.compare(nodes, base, uniform, policy_path)
    if not result.readable:
        if len(nodes) == 1:
            raise fail(line(nodes[0].unreadable), EXIT_USAGE)  # one file: its reason is the one line
        for n in nodes:
            click.echo("envdoctor: " + line(n.unreadable), err=True)
        raise fail("none of the %d files could be read" % len(nodes), EXIT_USAGE)
    if fmt in ("junit", "prometheus"):
        from ..render import engines
        from ..view import unreadable_summary

        # an unreadable node is a failing one here too (its reason as the failure)
        summaries = [n.summary if not n.unreadable else unreadable_summary(n.name, line(n.unreadable))
                     for n in result.nodes if n.summary is not None or n.unreadable]
        echo_output(engines.junit(summaries) if fmt == "junit" else engines.prometheus_fleet(summaries))
    elif fmt == "json":
        import datetime

        from .. import __version__

        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
        for chunk in logic.json_chunks(result.to_dict(__version__, now)):  # 10,000 nodes: 14 MB, never one string
            echo_output(chunk)
    else:
        import sys

        from ..render.style import Style

        style = Style(sys.stdout)
        echo_output(render_text(result, style), color=style.color)
    raise click.exceptions.Exit(result.exit_code)


def _stdout_file() -> Optional[Tuple[int, int]]:
    """(device, inode) of the regular file standard output is written to (``> dir/fleet.json``), which
    is no input even when it lies in a directory compared; None for a terminal or a pipe."""
    import os
    import stat
    import sys

    try:
        st = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def _names(names: List[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return line(shown + (" and %d more" % (len(names) - SHOWN) if len(names) > SHOWN else ""))


def render_text(result: Any, style: Any) -> str:
    out: List[str] = []
    kinds = {}  # type: dict
    for n in result.readable:
        kinds[n.kind] = kinds.get(n.kind, 0) + 1
    s = result.summary()
    out.append(style("envdoctor fleet", "bold") + ": %d node%s (%s)%s" % (
        s["nodes"], "" if s["nodes"] == 1 else "s",
        ", ".join("%d %s%s" % (c, k, "" if c == 1 else "s") for k, c in sorted(kinds.items())),
        ", %d unreadable" % s["unreadable"] if s["unreadable"] else ""))
    versions = result.versions()
    if len(versions) > 1:
        out.append(style("The reports come from %d envdoctor versions: " % len(versions), "yellow") + line(", ".join(
            "%s (%d node%s)" % (v or "unknown", c, "" if c == 1 else "s") for v, c in versions)) +
            style("; a report from an older version may lack facts", "dim"))
    width = max((len(f.label) for f in result.facts), default=10) + 2
    differ = [f for f in result.facts if not f.uniform]
    same = [f for f in result.facts if f.uniform and f.values]

    def absent(f: Any) -> None:
        if f.absent:
            out.append("  %s%s %s" % (" " * width, style("not in the reports of:", "dim"), _names(f.absent)))

    if differ:
        out.append("")
        out.append(style("Facts that differ between nodes", "bold") + style("  (most common first)", "dim"))
        for f in differ:
            (top, top_nodes), rest = f.values[0], f.values[1:]
            out.append("  %s%s" % (f.label.ljust(width), line("%s (%d)" % (top, len(top_nodes)))))
            for value, names in rest:
                out.append("  %s%s %s" % (" " * width, style(line("%s:" % value), "yellow"), _names(names)))
            absent(f)
    if same:
        out.append("")
        out.append(style("Facts every node shares", "bold") + (
            style("  (among the nodes whose reports hold them)", "dim") if any(f.absent for f in same) else ""))
        for f in same:
            out.append("  %s%s" % (f.label.ljust(width), line(f.values[0][0])))
            absent(f)
    if result.findings:
        out.append("")
        out.append(style("Findings", "bold") + style("  (worst first, with the nodes they were found on)", "dim"))
        for fd in result.findings:
            out.append("  %s %s  %d node%s: %s" % (style.severity_label(fd.severity), line(fd.code),
                                                  len(fd.nodes), "" if len(fd.nodes) == 1 else "s",
                                                  _names(fd.nodes)))
            # The title is one node's (it names that node's driver, paths...): say whose.
            title = line(fd.title) if len(fd.nodes) == 1 else "e.g. on %s: %s" % (line(fd.title_from), line(fd.title))
            out.append("        " + style(title, "dim"))
    if result.policy is not None:
        failing = result.policy_failures()
        out.append("")
        out.append(style("Against the policy %s" % line(result.policy), "bold") + ": %d of %d node%s fail%s it" % (
            len(failing), len(result.readable), "" if len(result.readable) == 1 else "s",
            "s" if len(failing) == 1 else "") + style("  (worst first)", "dim") * bool(failing))
        node_width = max((len(line(n.name)) for n in failing[:SHOWN_POLICY]), default=0)
        for n in failing[:SHOWN_POLICY]:
            why = ["%s %s (want %s)" % (r[0], r[3], r[2]) for r in n.summary.blocking()]
            why += [f["code"] for f in n.summary.failing]
            out.append("  %s  %s" % (line(n.name).ljust(node_width), line("; ".join(why))))
        if len(failing) > SHOWN_POLICY:
            out.append("  " + style("and %d more nodes (all of them in --format json)" % (
                len(failing) - SHOWN_POLICY), "dim"))
    unreadable = [n for n in result.nodes if n.unreadable]
    if unreadable:
        out.append("")
        out.append(style("Unreadable", "bold"))
        for n in unreadable:
            out.append("  %s: %s" % (line(n.name), line(n.unreadable)))
    if result.baseline is not None:
        out.append("")
        out.append(style("Against the baseline %s" % line(result.baseline.name), "bold") +
                   ": %d deviation%s" % (len(result.deviations), "" if len(result.deviations) == 1 else "s"))
        node_width = max((len(line(d.node)) for d in result.deviations), default=0)
        for d in result.deviations:
            out.append("  %s  %s: %s (baseline: %s)" % (line(d.node).ljust(node_width), d.label, line(d.found),
                                                      line(d.expected)))
        for c in result.not_compared:
            out.append("  " + style("%s: not compared %s" % (c.label, (
                "(not in the baseline's report)" if c.baseline_lacks_it else
                "on %s (not in their reports)" % _names(c.nodes))), "dim"))
    out.append("")
    parts = ["%d node%s" % (s["nodes"], "" if s["nodes"] == 1 else "s"),
             "%d with errors" % s["with_errors"], "%d with warnings" % s["with_warnings"]]
    if s["unreadable"]:
        parts.append("%d unreadable" % s["unreadable"])
    parts.append("%d fact%s differ%s" % (s["differing_facts"], "" if s["differing_facts"] == 1 else "s",
                                         "s" if s["differing_facts"] == 1 else ""))
    if result.policy is not None:
        parts.append("%d failing the policy" % s["failing_policy"])
    if result.baseline is not None:
        parts.append("%d deviation%s from the baseline" % (s["deviations"], "" if s["deviations"] == 1 else "s"))
    out.append("Summary: " + ", ".join(parts))
    return "\n".join(out) + "\n"

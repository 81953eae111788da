"""``envdoctor check --policy``: the node gate, and ``envdoctor policy``: write and list policies."""

from __future__ import annotations

import sys
import time
from typing import Any, Dict, Optional, Tuple

import click

from . import EXIT_USAGE, fail
from .common import (
    Seconds,
    echo_output,
    format_option,
    output_deadline,
    python_option,
    read_timeout_option,
    subject,
    subject_options,
    timeout_option,
    write_to,
)

FORMATS = ("text", "json", "junit", "prometheus", "nhc", "nfd")


@click.command("check", epilog="""\b
Examples:
  envdoctor check --policy /etc/envdoctor/policy.toml
  envdoctor check --policy p.toml --format nhc          # one line for NHC's die
  envdoctor check --policy p.toml --format prometheus \\
      -o /var/lib/prometheus/node-exporter/envdoctor.prom
  envdoctor check --policy p.toml --format nfd \\
      -o /etc/kubernetes/node-feature-discovery/features.d/envdoctor
  envdoctor check --policy p.toml --report node17.json --format junit
\b
Exit codes: 0 every requirement met and no finding at or above fail_on;
1 a requirement failed or could not be established (unless on_unknown =
"pass"), or such a finding; 2 bad policy, bad input or cannot run.""")
@click.option("--policy", "policy_path", required=True, metavar="FILE",
              help="The policy (TOML): what this cluster requires of a node.")
@subject_options(report=True)
@format_option(*FORMATS, help_text="text, json (the report with a policy section), junit, prometheus "
                                    "(node_exporter textfile), nhc (one line), nfd (a Node Feature Discovery "
                                    "feature file).")
@click.option("-o", "--output", metavar="FILE", help="Write here instead of standard output ('-' for standard "
                                                    "output): a regular file atomically (a temporary file renamed "
                                                    "into place, keeping its permissions), a device or pipe by "
                                                    "writing into it.")
@click.option("--node", metavar="NAME", help="The node's name in junit output (default: the input file's name, or "
                                             "'localhost').")
@click.option("--nfd-ttl", type=Seconds(60, 366 * 86400), default=3600, show_default=True, metavar="SECONDS",
              help="How long NFD keeps the labels if they are not written again.")
@click.option("--fail-on", type=click.Choice(("error", "warning", "info", "never")), default=None,
              help="Override the policy's [findings] fail_on.")
@timeout_option
@python_option
def check(policy_path: str, snapshot_path: Optional[str], report_path: Optional[str], fmt: str,
          output: Optional[str], node: Optional[str], nfd_ttl: float, fail_on: Optional[str], timeout: float,
          python_exe: Optional[str]) -> None:
    """Judge this machine (or a snapshot or report) against a cluster's policy."""
    started = time.monotonic()
    from ..policy import PolicyError, load_policy

    if snapshot_path is not None and report_path is not None:
        raise fail("give --snapshot or --report, not both")
    try:
        policy = load_policy(policy_path)
    except PolicyError as exc:
        raise fail("bad policy: %s" % exc) from None
    for warning in policy.warnings:
        click.echo("envdoctor: policy %s: %s" % (policy_path, warning), err=True)
    if fail_on is not None:
        policy.fail_on = fail_on
    subj = subject(snapshot_path, None, timeout, python_exe, report=report_path, reports=True)
    report = subj.report_document()
    if subj.kind == "machine" and any(r.name.startswith("bench.") for r in policy.requirements):
        report = with_bench(report, timeout)
    verdict = policy.evaluate(report)
    name = node or (_node_name(report_path or snapshot_path) if (report_path or snapshot_path) else "localhost")
    from ..render.style import Style

    # into a file: plain text; to standard output: coloured as a terminal (or NO_COLOR...) wants
    style = Style(sys.stdout, False if output not in (None, "-") else None)
    text = render(fmt, report, verdict, name, time.monotonic() - started, nfd_ttl, style)
    write_to(output, text, output_deadline(started + timeout + 1.0), color=style.color if fmt == "text" else None)
    sys.exit(verdict.exit_code)


def with_bench(report: Dict[str, Any], timeout: float) -> Dict[str, Any]:
    """``report`` with the bench's facts and findings (a policy that requires a ``bench.*`` key asks for the
    measurement); a bench that cannot run leaves those facts unknown, with the reason."""
    from .. import bench as benchmod
    from ..findings import SEVERITIES

    try:
        doc = benchmod.run(benchmod.Options(timeout=timeout))
    except benchmod.BenchError as exc:
        facts = [{"key": key, "value": None, "status": "unknown", "source": "bench", "reason": str(exc)}
                 for key in ("bench.h2d_ratio", "bench.d2h_ratio", "bench.d2d_ratio", "bench.p2p_ratio")]
        doc = {"probes": [{"name": "bench", "title": "Measured copies", "status": "crashed", "duration": 0.0,
                           "error": str(exc), "facts": facts}], "findings": []}
    out = dict(report)
    out["probes"] = list(report.get("probes") or []) + doc["probes"]
    out["findings"] = list(report.get("findings") or []) + doc["findings"]
    out["summary"] = {s: sum(1 for f in out["findings"] if f.get("severity") == s) for s in SEVERITIES}
    return out


def render(fmt: str, report: Dict[str, Any], verdict: Any, name: str, duration: float, nfd_ttl: float,
           style: Any = None) -> str:
    from ..render import engines

    if fmt == "json":
        from ..jsontext import dumps

        doc = dict(report)
        doc["policy"] = verdict.to_dict()
        return dumps(doc)
    if fmt == "junit":
        from ..view import summarize

        return engines.junit([summarize(name, report, verdict)])
    if fmt == "prometheus":
        return engines.prometheus(report, verdict, duration)
    if fmt == "nhc":
        line = engines.nhc_line(verdict)
        return line + "\n" if line else ""
    if fmt == "nfd":
        return engines.nfd(report, verdict, nfd_ttl)
    from ..render.style import Style

    return engines.check_text(verdict, style or Style(sys.stdout))


def _node_name(path: Optional[str]) -> str:
    from ..fleet import node_name

    return node_name(path or "") or "localhost"


def load_report(path: str, timeout: float, reports_only: bool = False, snapshots_only: bool = False,
                read_timeout: bool = False) -> Dict[str, Any]:
    """A report as a dict, from a report file or by replaying a snapshot; exit 2 when it is neither. A pipe is
    waited for ``timeout`` (``--read-timeout``'s value when ``read_timeout``; the probe budget, at least 1 s,
    otherwise)."""
    from ..host.snapshot import SnapshotError
    from ..report import report_from_file
    from .common import env_timeout

    want = "report" if reports_only else "snapshot" if snapshots_only else None
    try:
        # a replay's probes get the probe budget: --timeout, or for policy init ENVDOCTOR_TIMEOUT's
        return report_from_file(path, timeout if read_timeout else max(timeout, 1.0), want,
                                replay_timeout=env_timeout() if read_timeout else max(timeout, 1.0))[1]
    except SnapshotError as exc:
        raise fail(str(exc), EXIT_USAGE) from None


@click.group("policy")
def policy() -> None:
    """Write a policy from a known-good node, or list the keys a policy may require."""


@policy.command("init", epilog="""\b
Example:
  envdoctor diagnose --format json > golden.json     # on a known-good node
  envdoctor policy init --from golden.json -o policy.toml
  envdoctor check --policy policy.toml               # on every other node""")
@click.option("--from", "source", required=True, metavar="REPORT_OR_SNAPSHOT",
              help="A known-good node's report or snapshot.")
@click.option("-o", "--output", metavar="FILE", help="Write the policy here (a regular file atomically) instead of "
                                                    "standard output ('-' for standard output).")
@read_timeout_option
def policy_init(source: str, output: Optional[str], timeout: float) -> None:
    """Write a policy pinned to a golden node (like NHC's nhc-genconf): its driver, GPUs, CUDA toolkit,
    libraries and framework versions; a policy made from a node always passes on that node."""
    from ..policy import init_policy

    report = load_report(source, timeout, read_timeout=True)
    text = init_policy(report, _node_name(source))
    write_to(output, text, output_deadline(timeout=timeout))


@policy.command("keys")
def policy_keys() -> None:
    """List every key a policy may require, with its kind."""
    from ..policy import describe_keys

    rows: Tuple[Tuple[str, str, str], ...] = tuple(describe_keys())
    width = max(len(k) for k, _, _ in rows) + 2
    echo_output("".join("%s%s %s\n" % (k.ljust(width), kind.ljust(8), what) for k, kind, what in rows))

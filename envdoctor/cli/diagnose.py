"""``envdoctor diagnose``."""

from __future__ import annotations

import time
from typing import Any, List, Optional, Tuple

import click

from ..layers import LAYER_NAMES
from .common import format_option, privacy_options, python_option, replay_options, timeout_option


def _layers(ctx: click.Context, param: click.Parameter, value: Tuple[str, ...]) -> Tuple[str, ...]:
    """--only/--skip: names separated by commas or given several times, each one a known layer."""
    names = tuple(n.strip().lower() for v in value for n in v.split(",") if n.strip())
    bad = [n for n in names if n not in LAYER_NAMES]
    if bad:
        raise click.BadParameter("%s: not a layer; choose from %s" % (", ".join(bad), ", ".join(LAYER_NAMES)))
    return names


def _complete_layers(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[Any]:
    """Shell completion for --only/--skip: the layer names, after any already typed before a comma."""
    from click.shell_completion import CompletionItem

    done, _, last = incomplete.rpartition(",")
    prefix = done + "," if done else ""
    return [CompletionItem(prefix + n) for n in LAYER_NAMES if n.startswith(last)]


def _checks(ctx: click.Context, param: click.Parameter, value: Tuple[str, ...]) -> Tuple[str, ...]:
    """--check: names separated by commas or given several times, each one a known check."""
    names = tuple(n.strip() for v in value for n in v.split(",") if n.strip())
    if not names:
        return names
    from ..checks import all_checks

    known = [s.name for s in all_checks()]
    bad = [n for n in names if n not in known]
    if bad:
        import difflib

        close = sorted({m for n in bad for m in difflib.get_close_matches(n, known, 3, 0.6)})
        raise click.BadParameter("%s: not a check%s; the checks are: %s" % (
            ", ".join(bad), " (did you mean %s?)" % ", ".join(close) if close else "", ", ".join(sorted(known))))
    return names


def _complete_checks(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[Any]:
    from click.shell_completion import CompletionItem

    from ..checks import all_checks

    return [CompletionItem(s.name) for s in all_checks() if s.name.startswith(incomplete)]


@click.command("diagnose", epilog="""\b
Examples:
  envdoctor diagnose                      # this machine: verdict, findings, one line per layer
  envdoctor diagnose -v                   # also every fact, where it came from, probe timings
  envdoctor diagnose -q                   # errors and warnings only
  envdoctor diagnose --only driver,gpu    # examine just these layers (and what they depend on)
  envdoctor diagnose --check driver-health.secure-boot   # ask one check (names: see the error for a bad one)
  envdoctor diagnose --format json        # for scripts and fleets
  envdoctor diagnose --format markdown    # to paste into a GitHub/GitLab issue
  envdoctor diagnose --snapshot node.json # replay a captured machine
\b
Colour: on a terminal; NO_COLOR=1 turns it off, FORCE_COLOR=1 or CLICOLOR_FORCE=1
turns it on into a pipe, --color/--no-color overrides both. The text is wrapped to
the terminal's width (80 columns into a pipe or a file).
\b
Exit codes: 0 no errors found; 1 errors found; 2 could not run (bad snapshot, bad option).""")
@format_option("text", "json", "markdown", help_text="Output format: text, json, or markdown (to paste into an "
                                                      "issue).")
@click.option("-v", "--verbose", "--facts", "verbose", is_flag=True,
              help="Also list every fact with where it came from, the notes, and probe timings.")
@click.option("-q", "--quiet", is_flag=True, help="Print the errors and warnings only (nothing when there are none).")
@click.option("--only", "only", metavar="LAYER[,LAYER]", multiple=True, callback=_layers,
              shell_complete=_complete_layers,
              help="Examine these layers only: %s. Just the probes their verdicts depend on run (a layer's "
                   "checks may need another layer's facts: --only frameworks still reads the driver); their "
                   "findings are those a full run reports for them, the other layers are reported as not "
                   "examined, and the exit code counts the errors shown." % ", ".join(LAYER_NAMES))
@click.option("--skip", "skip", metavar="LAYER[,LAYER]", multiple=True, callback=_layers,
              shell_complete=_complete_layers,
              help="Do not examine these layers (same names as --only); they are reported as not examined.")
@click.option("--check", "check_names", metavar="NAME[,NAME]", multiple=True, callback=_checks,
              shell_complete=_complete_checks,
              help="Ask only these checks (e.g. driver-health.secure-boot, compat.driver-vs-cuda): just the probes "
                   "they read run, and only their findings are reported (a finding that another check's would "
                   "explain still yields to it, as in a whole run).")
@replay_options
@timeout_option
@python_option
@privacy_options
def diagnose(fmt: str, verbose: bool, quiet: bool, only: Tuple[str, ...], skip: Tuple[str, ...],
             check_names: Tuple[str, ...], snapshot_path: Optional[str], color: Optional[bool], timeout: float,
             python_exe: Optional[str], include_host: bool, redact_ids: bool) -> None:
    """Look at the whole GPU stack of this machine (or a snapshot) and judge it.

    Reads the OS, driver, GPUs, CUDA toolkits, libraries, compilers, Python
    frameworks and container runtime without importing any framework and
    without touching the network.
    """
    from ..scope import chosen
    from .fastpath import report

    started = time.monotonic()
    layers = chosen(only, skip) if only or skip else None
    if layers == []:
        raise click.UsageError("--only and --skip leave no layer to examine")
    if check_names and (only or skip):
        raise click.UsageError("--check asks particular checks: it does not go with --only or --skip")
    report(started, fmt, verbose, quiet, only, skip, check_names, snapshot_path, color, timeout, python_exe,
           include_host, redact_ids, layers)

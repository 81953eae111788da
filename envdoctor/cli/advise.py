"""``envdoctor advise``: the newest CUDA this driver/GPU runs and the install command per framework."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import click

from . import EXIT_USAGE, fail
from .common import echo_output, format_option, planning_facts, timeout_option

#: How many passed-over releases the text output lists per framework (JSON has them all).
SHOWN_PASSED_OVER = 4


@click.command("advise", epilog="""\b
Examples:
  envdoctor advise                                  # this machine
  envdoctor advise --snapshot node17.json           # a captured machine
  envdoctor advise --driver 470.82.01 --gpu "Tesla K80"
  envdoctor advise --driver 535.104.05 --cc 6.1 --python 3.11 --os ubuntu22.04
  envdoctor advise --framework torch --format json
\b
Values given on the command line override the machine's. With --driver and
--gpu/--cc both given, the machine is not looked at (a what-if question).
\b
Exit codes: 0 answered; 2 could not answer as asked (bad value, unknown GPU, bad snapshot).""")
@format_option("text", "json")
@click.option("--snapshot", "snapshot_path", metavar="FILE", help="Advise for a snapshot written by "
              "`envdoctor snapshot` instead of this machine.")
@click.option("--driver", metavar="VERSION", help="NVIDIA driver version, e.g. 535.104.05.")
@click.option("--gpu", metavar="NAME", help='GPU product, e.g. "RTX 4090" (see `envdoctor matrix gpu`).')
@click.option("--cc", metavar="X.Y", help="GPU compute capability, e.g. 8.9 (overrides --gpu's).")
@click.option("--os", "os_name", metavar="DISTRO", help="Distribution and version, e.g. ubuntu22.04, rhel9.")
@click.option("--python", "python_version", metavar="X.Y", help="Python version to install for, e.g. 3.11.")
@click.option("--framework", "frameworks", multiple=True, metavar="NAME",
              type=click.Choice(["torch", "tensorflow", "jax", "onnxruntime", "cupy", "paddle"]),
              help="Only these frameworks (repeatable; default: all).")
@timeout_option
def advise(fmt: str, snapshot_path: Optional[str], driver: Optional[str], gpu: Optional[str], cc: Optional[str],
           os_name: Optional[str], python_version: Optional[str], frameworks: Tuple[str, ...],
           timeout: float) -> None:
    """Say the newest CUDA this driver and GPU can run, and for each framework
    (torch, tensorflow, jax, onnxruntime, cupy, paddle) the exact install
    command, with why newer builds were passed over.
    """
    from .. import advise as logic

    try:
        given = {"driver": logic.parse_driver(driver) if driver else None,
                 "python": logic.parse_python(python_version) if python_version else None}
        gpu_name = cc_value = None
        if gpu:
            gpu_name, cc_value = logic.gpu_cc(gpu)
        if cc:
            cc_value = logic.parse_cc(cc)
        if os_name:
            given["os_id"], given["os_version"] = logic.parse_os(os_name)
    except logic.AdviseError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    given["cc"], given["gpu"] = cc_value, gpu_name

    if snapshot_path is not None:
        target = logic.target_from_facts(planning_facts(snapshot_path, timeout))
    elif driver and cc_value:
        target = logic.Target()
    else:
        target = logic.target_from_facts(planning_facts(None, timeout))
    if cc_value and not gpu_name:
        given["gpu"] = ""  # the machine's GPU name no longer describes the capability asked about
    target = target.merged(**given)
    answer = logic.advise(target, frameworks or logic.FRAMEWORKS)
    if fmt == "json":
        from ..render.json_out import dumps

        echo_output(dumps(answer.to_dict()))
    else:
        from ..render.style import printable

        echo_output(printable(render_text(answer)))  # GPU names and versions can come from a snapshot


def _value(target: Any, name: str, shown: Optional[str]) -> str:
    if not shown:
        # A machine known to have no NVIDIA GPU has neither: "unknown" would send the reader looking.
        return "none (no NVIDIA GPU on this machine)" if target.gpu_present is False and name in (
            "driver", "cc") else "unknown"
    origin = target.origin_of(name)
    return f"{shown}  ({'given' if origin.startswith('--') else 'from ' + origin})" if origin else shown


def render_text(answer: Any) -> str:
    """The human answer (the JSON output holds the same objects)."""
    t, c = answer.target, answer.cuda
    out: List[str] = ["For:"]
    gpu = f"compute capability {t.cc}" + (f" ({t.gpu})" if t.gpu else "") if t.cc else None
    os_text = f"{t.os_id} {t.os_version}" if t.os_id and t.os_version else t.os_id
    out.append("  Driver   " + _value(t, "driver", t.driver))
    out.append("  GPU      " + _value(t, "cc", gpu))
    out.append("  OS       " + _value(t, "os_id", os_text) + ("" if t.platform == "linux-x86_64" else
                                                             f"  [{t.platform}]"))
    out.append("  Python   " + _value(t, "python", t.python))
    out.append("")
    if answer.cpu_builds is not None:
        out.append("No NVIDIA GPU on this machine (none through NVML, none on the PCI bus): use the CPU builds.")
        out.append("(To plan for a GPU machine instead, give --driver and --gpu or --cc.)")
        for b in answer.cpu_builds:
            out.append("")
            out.append("%s:" % b["framework"])
            if b["command"]:
                out.append("  " + b["command"])
            out.append("  - " + b["why"])
        return "\n".join(out) + "\n"
    out.append("CUDA:")
    if c.newest_native:
        out.append(f"  newest CUDA the driver runs:                       {c.newest_native}")
    if c.newest_minor_compat:
        out.append(f"  ... with CUDA minor-version compatibility:         {c.newest_minor_compat}")
    if c.gpu_range:
        out.append(f"  CUDA releases that target this GPU:                {c.gpu_range[0]} .. {c.gpu_range[1]}")
    if t.cc and t.driver:
        out.append(f"  newest CUDA for this driver and GPU:               {c.newest_for_gpu or 'none'}"
                   + (f" ({c.newest_for_gpu_minor_compat} with minor-version compatibility)"
                      if c.newest_for_gpu_minor_compat and c.newest_for_gpu_minor_compat != c.newest_for_gpu
                      else ""))
    for note in c.notes:
        out.append("  - " + note)
    for src in c.sources:
        mark = "" if src["verified"] else "  [unverified row]"
        out.append(f"  source (CUDA {src['cuda']}): {src['url']} (checked {src['checked']}){mark}")
    for f in answer.frameworks:
        out.append("")
        if f.command:
            how = "" if f.native else ", via minor-version compatibility"
            out.append(f"{f.framework} {f.release} ({f.variant}{how}):")
            out.append("  " + f.command)
        else:
            out.append(f"{f.framework}: no build fits")
        for note in f.notes:
            out.append("  - " + note)
        out.extend(_passed_over_lines(f.passed_over))
        if f.source:
            mark = "" if f.source["verified"] else "  [unverified row]"
            out.append(f"  source: {f.source['url']} (checked {f.source['checked']}){mark}")
    return "\n".join(out) + "\n"


def _passed_over_lines(passed: List[Any]) -> List[str]:
    if not passed:
        return []
    releases: List[str] = []
    for p in passed:
        if p["release"] not in releases:
            releases.append(p["release"])
    lines = ["  newer builds passed over:"]
    for rel in releases[:SHOWN_PASSED_OVER]:
        parts = [f"{p['variant']}: {'; '.join(p['reasons'])}" for p in passed if p["release"] == rel]
        lines.append(f"    {rel}  " + " | ".join(parts))
    if len(releases) > SHOWN_PASSED_OVER:
        lines.append(f"    ... and {len(releases) - SHOWN_PASSED_OVER} more releases (see --format json)")
    return lines

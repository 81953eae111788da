"""``envdoctor advise``: the newest CUDA this driver/GPU runs and the install command per framework."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import click

from ..frameworks import ADVISED
from . import EXIT_USAGE, fail
from .common import echo_output, format_option, os_option, python_option, subject, subject_options, timeout_option


@click.command("advise", epilog="""\b
Examples:
  envdoctor advise                                  # this machine
  envdoctor advise --snapshot node17.json           # a captured machine
  envdoctor advise --driver 470.82.01 --gpu "Tesla K80"
  envdoctor advise --driver 535.104.05 --cc 6.1 --python-version 3.11 --os ubuntu22.04
  envdoctor advise --python ~/venvs/train/bin/python   # for that environment
  envdoctor advise --framework torch --format json
\b
Values given on the command line override the machine's. With --driver and
--gpu/--cc both given, the machine is not looked at (a what-if question).
\b
Exit codes: 0 answered; 2 could not answer as asked (bad value, unknown GPU, bad snapshot).""")
@format_option("text", "json")
@subject_options(values=True)
@os_option
@click.option("--python-version", "python_version", metavar="X.Y",
              help="Python version to install for, e.g. 3.11 (default: the inspected interpreter's).")
@python_option
@click.option("--framework", "frameworks", multiple=True, metavar="NAME",
              type=click.Choice(list(ADVISED)),
              help="Only these frameworks (repeatable; default: all).")
@click.option("-v", "--verbose", is_flag=True, help="Also every note, source and passed-over build.")
@timeout_option
def advise(fmt: str, snapshot_path: Optional[str], driver: Optional[str], gpu: Optional[str], cc: Optional[str],
           os_name: Optional[str], python_version: Optional[str], python_exe: Optional[str],
           frameworks: Tuple[str, ...], verbose: bool, timeout: float) -> None:
    """Say the newest CUDA this driver and GPU can run, and for each framework
    (torch, tensorflow, jax, onnxruntime, cupy, paddle) the exact install
    command, with why newer builds were passed over.
    """
    from .. import advise as logic

    # --python X.Y, the old spelling of --python-version (one release, with a deprecation line)
    python_version = python_version or click.get_current_context().meta.get("envdoctor.python_version")
    try:
        given = logic.given_values(driver, gpu, cc, os_name, python_version)
    except logic.AdviseError as exc:
        raise fail(str(exc), EXIT_USAGE) from None

    from .. import preflight

    # the machine's own values, none given over them: its builds are judged by install's pre-flight too, on the
    # facts install probes for it (what advise recommends, install accepts)
    judged = not any(given.values())
    subj = subject(snapshot_path, given, timeout, python_exe, probes=preflight.build_probes() if judged else ())
    target, facts = subj.target, subj.facts
    accept = preflight.build_judge(facts, subj.probe_results) if judged and facts is not None else None
    pip_python = None  # the interpreter the pip commands name
    chosen: Any = None  # and why it was chosen (envdoctor.host.interpreter)
    if facts is not None and not python_version:  # the pip commands install into the interpreter inspected
        pip_python = facts.text("python.executable")
        chosen = facts.value("python.chosen") if isinstance(facts.value("python.chosen"), dict) else None
    answer = logic.advise(target, frameworks or logic.FRAMEWORKS, accept)
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(logic.answer_document(answer, pip_python, chosen)))
    else:
        import sys

        from ..render.layout import terminal_width
        from ..render.style import printable

        text = render_text(answer, terminal_width(sys.stdout), pip_python, subj.whence,
                           str(chosen.get("reason") or "") if chosen else "")
        if verbose:
            text += "\n" + render_details(answer, terminal_width(sys.stdout))
        echo_output(printable(text))  # GPU names and versions can come from a snapshot


def _value(target: Any, name: str, shown: Optional[str]) -> str:
    if not shown:
        # A machine known to have no NVIDIA GPU has neither: "unknown" would send the reader looking.
        return "none (no NVIDIA GPU on this machine)" if target.gpu_present is False and name in (
            "driver", "cc") else "unknown"
    origin = target.origin_of(name)
    return f"{shown}  ({'given' if origin.startswith('--') else 'from ' + origin})" if origin else shown


def render_text(answer: Any, width: int = 80, python_exe: Optional[str] = None, subject: str = "this machine",
                python_why: str = "") -> str:
    """The human answer: what it is for, the newest CUDA, then the chosen build per framework, one line
    each (in the order asked), then what was passed over, one line per framework and reason. ``-v``
    (:func:`render_details`) shows every note, source and passed-over build."""
    from ..findings import pip_for
    from ..render.layout import wrap, wrap_command

    t, c = answer.target, answer.cuda
    out: List[str] = []
    gpu = (f"{t.gpu} (compute capability {t.cc})" if t.gpu else f"compute capability {t.cc}") if t.cc else None
    os_text = f"{t.os_id} {t.os_version}" if t.os_id and t.os_version else t.os_id
    py = ("Python " + t.python + (" at %s" % python_exe if python_exe else "")
          + (" (%s)" % python_why if python_exe and python_why else "")) if t.python else None
    facts = [("driver " + t.driver) if t.driver else None, gpu, os_text, py]
    origins = {t.origin_of(n) for n in ("driver", "cc", "os_id", "python")} - {""}
    whence = "the values given" if origins and all(o.startswith("--") for o in origins) else (
        subject + ", with values given" if any(o.startswith("--") for o in origins) else subject)
    out += wrap("For %s: %s" % (whence, ", ".join(f for f in facts if f) or "nothing known"), width, "", "  ")
    if answer.cpu_builds is not None:
        out += wrap("No NVIDIA GPU on this machine (none through NVML, none on the PCI bus): the CPU builds. "
                    "To plan for a GPU machine instead, give --driver and --gpu or --cc.", width)
        out.append("")
        for b in answer.cpu_builds:
            name = "%-12s " % b["framework"]
            if b["command"]:
                out += wrap_command(pip_for(b["command"], python_exe), width, name, " " * 15)
                name = " " * 13
            out += wrap(b["why"], width, name, " " * 13)
        return "\n".join(out) + "\n"
    cuda = c.newest_for_gpu if (t.cc and t.driver) else c.newest_native
    compat = c.newest_for_gpu_minor_compat if (t.cc and t.driver) else c.newest_minor_compat
    if cuda or compat:
        out += wrap("Newest CUDA: %s%s" % (cuda or "none natively", " (%s with minor-version compatibility)" % compat
                                          if compat and compat != cuda else ""), width, "", "  ")
    elif c.notes:
        out += wrap(c.notes[0], width, "", "  ")
    out.append("")
    for f in answer.frameworks:
        name = "%-12s " % f.framework
        if f.command:
            how = "" if f.native else ", minor-version compat"
            out += wrap_command(pip_for(f.command, python_exe), width,
                                "%s%s (%s%s): " % (name, f.release, f.variant, how), " " * 15)
        else:
            out += wrap("no build fits (below)" if f.passed_over else "no build fits", width, name, " " * 13)
    folded = _passed_over_folded(answer.frameworks)
    if folded:
        out.append("")
        out.append("Passed over (newer builds, one line per reason; all of them with -v):")
        for line in folded:
            out += wrap(line, width, "  ", "    ")
    return "\n".join(out) + "\n"


def _reason_kind(reason: str) -> Tuple[str, str]:
    """(group, summary) of one passed-over reason: builds that fail for the same kind of reason fold."""
    import re

    from packaging.version import InvalidVersion, Version

    if reason.startswith("install refuses it:"):
        # the pre-flight's verdict (envdoctor.preflight.build_judge): one line per finding code; -v names each title
        code = reason.split(" report ", 1)[-1].split(" ", 1)[0]
        return "preflight:" + code, "install refuses them: `envdoctor diagnose` would then report " + code
    if reason.startswith("needs Python"):
        m = re.search(r"not (\S+)$", reason)
        return "python", "need another Python than %s" % (m.group(1) if m else "this one")
    if reason.startswith("pulls cuDNN"):
        # The wheels have code for the GPU, the cuDNN pip brings with them has not: say so, it is the one part a
        # reader could change (a cuDNN pinned by hand), and not the framework's own architectures.
        m = re.match(r"pulls cuDNN (\S+) from pip", reason)
        return "cudnn:" + (m.group(1) if m else ""), "pull " + reason[len("pulls "):]
    if reason.startswith("needs driver"):
        m = re.search(r"driver (\S+) is older", reason)
        floors = []
        for v in re.findall(r">= ([0-9][0-9.]*[0-9])", reason):
            try:
                floors.append((Version(v), v))
            except InvalidVersion:
                continue
        floor = (" (the oldest wanted is %s)" % min(floors)[1]) if floors else ""
        return "driver", "need a newer driver than %s%s" % (m.group(1) if m else "this one", floor)
    # No code for the GPU, whichever part lacks it (the wheels, the CUDA they are built with, the cuDNN pip
    # brings): one line, "no code for compute capability 3.7"; -v names each build's architectures.
    m = re.search(r"(?:has no code for|has only PTX for|, not) (?:compute capability )?(\d+\.\d+)\b", reason)
    if m and "compute capability" in reason:
        if reason.startswith("has only PTX"):
            return "ptx", "have only PTX for compute capability %s (compiled at start-up)" % m.group(1)
        return "architecture", "have no code for compute capability %s" % m.group(1)
    return reason, reason


def _passed_over_folded(frameworks: List[Any]) -> List[str]:
    """One line per framework and kind of reason: "torch 2.14 to 2.0 (30 builds): need a newer driver ..."."""
    lines: List[str] = []
    for f in frameworks:
        groups: dict = {}
        for p in f.passed_over:
            for r in p["reasons"]:
                key, summary = _reason_kind(r)
                g = groups.setdefault(key, {"summaries": [], "releases": [], "builds": 0, "chosen": []})
                g["builds"] += 1
                if f.command and p["release"] == f.release:
                    # Other builds of the release chosen above: named by build, or the line would say the
                    # chosen release itself does not fit.
                    g["chosen"].append(p["variant"])
                    g["summaries"].append(summary)
                    continue
                label = _release_label(p["release"])
                if label not in g["releases"]:
                    g["releases"].append(label)
                g["summaries"].append(summary)
        for g in groups.values():
            rels = g["releases"]
            span = "" if not rels else rels[0] if len(rels) == 1 else "%s to %s" % (rels[0], rels[-1])
            if g["chosen"]:
                span += ("%s%s's %s" % (" and " if span else "", _release_label(f.release), ", ".join(g["chosen"])))
            # The driver floor differs per build: say the lowest any of them wants.
            summary = min(g["summaries"], key=len) if not g["summaries"][0].startswith("need a newer driver") else \
                _lowest_floor(g["summaries"])
            lines.append("%s %s (%d build%s): %s" % (f.framework, span, g["builds"], "" if g["builds"] == 1 else "s",
                                                     summary))
    return lines


def _release_label(release: str) -> str:
    """A release as a reader names it: JAX's table rows are version ranges (``>=0.4.7,<0.4.14``), named by
    their first release (``0.4.7``); anything else as it is."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not release or release[0].isdigit():
        return release
    try:
        low = [s.version for s in SpecifierSet(release) if s.operator in (">=", "==", "~=")]
    except InvalidSpecifier:
        return release
    return low[0].rstrip(".*") if low else release


def _lowest_floor(summaries: List[str]) -> str:
    import re

    from packaging.version import Version

    def floor(s: str) -> Version:
        m = re.search(r"oldest wanted is ([0-9.]+)\)", s)
        return Version(m.group(1)) if m else Version("9999")

    return min(summaries, key=floor)


def render_details(answer: Any, width: int = 80) -> str:
    """Every note, source and passed-over build (``advise -v``; the JSON output holds the same objects), each
    line wrapped to ``width`` (a word longer than the line, a URL, stays whole)."""
    from ..render.layout import wrap, wrap_command

    t, c = answer.target, answer.cuda
    out: List[str] = ["For:"]
    gpu = f"compute capability {t.cc}" + (f" ({t.gpu})" if t.gpu else "") if t.cc else None
    os_text = f"{t.os_id} {t.os_version}" if t.os_id and t.os_version else t.os_id
    out += wrap(_value(t, "driver", t.driver), width, "  Driver   ")
    out += wrap(_value(t, "cc", gpu), width, "  GPU      ")
    out += wrap(_value(t, "os_id", os_text) + ("" if t.platform == "linux-x86_64" else f"  [{t.platform}]"), width,
                "  OS       ")
    out += wrap(_value(t, "python", t.python), width, "  Python   ")
    out.append("")
    if answer.cpu_builds is not None:
        out += wrap("No NVIDIA GPU on this machine (none through NVML, none on the PCI bus): use the CPU builds. "
                    "(To plan for a GPU machine instead, give --driver and --gpu or --cc.)", width)
        for b in answer.cpu_builds:
            out.append("")
            out.append("%s:" % b["framework"])
            if b["command"]:
                out += wrap_command(b["command"], width, "  ", "    ")
            out += wrap(b["why"], width, "  - ", "    ")
        return "\n".join(out) + "\n"
    out.append("CUDA:")
    if c.newest_native:
        out += wrap(f"newest CUDA the driver runs: {c.newest_native}", width, "  ", "    ")
    if c.newest_minor_compat:
        out += wrap(f"... with CUDA minor-version compatibility: {c.newest_minor_compat}", width, "  ", "    ")
    if c.gpu_range:
        out += wrap(f"CUDA releases that target this GPU: {c.gpu_range[0]} .. {c.gpu_range[1]}", width, "  ", "    ")
    if t.cc and t.driver:
        out += wrap(f"newest CUDA for this driver and GPU: {c.newest_for_gpu or 'none'}"
                    + (f" ({c.newest_for_gpu_minor_compat} with minor-version compatibility)"
                       if c.newest_for_gpu_minor_compat and c.newest_for_gpu_minor_compat != c.newest_for_gpu
                       else ""), width, "  ", "    ")
    for note in c.notes:
        out += wrap(note, width, "  - ", "    ")
    for src in c.sources:
        mark = "" if src["verified"] else "  [unverified row]"
        out += wrap(f"source (CUDA {src['cuda']}): {src['url']} (checked {src['checked']}){mark}", width, "  ",
                    "    ")
    for f in answer.frameworks:
        out.append("")
        if f.command:
            how = "" if f.native else ", via minor-version compatibility"
            out.append(f"{f.framework} {f.release} ({f.variant}{how}):")
            out += wrap_command(f.command, width, "  ", "    ")
        else:
            out.append(f"{f.framework}: no build fits")
        for note in f.notes:
            out += wrap(note, width, "  - ", "    ")
        out.extend(_passed_over_lines(f.passed_over, width))
        if f.source:
            mark = "" if f.source["verified"] else "  [unverified row]"
            out += wrap(f"source: {f.source['url']} (checked {f.source['checked']}){mark}", width, "  ", "    ")
    return "\n".join(out) + "\n"


def _passed_over_lines(passed: List[Any], width: int = 80) -> List[str]:
    """Every newer build passed over, one per build with all its reasons (what the README promises of -v)."""
    from ..render.layout import wrap

    if not passed:
        return []
    lines = ["  newer builds passed over:"]
    for p in passed:
        lines += wrap("%s %s: %s" % (_release_label(p["release"]), p["variant"], "; ".join(p["reasons"])), width,
                      "    ", "      ")
    return lines

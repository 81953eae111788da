"""``envdoctor dockerfile``: judge a Dockerfile's GPU set-up before it is built."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

import click

from . import EXIT_USAGE, fail
from .common import echo_output, format_option, subject, subject_options, timeout_option


@click.command("dockerfile", epilog="""\b
Examples:
  envdoctor dockerfile                               # ./Dockerfile, for this machine's driver and GPUs
  envdoctor dockerfile docker/train.Dockerfile --build-arg CUDA=12.4.1
  envdoctor dockerfile --driver 535.104.05 --gpu A100   # for another host
  envdoctor dockerfile --snapshot node17.json --format json
\b
The host is this machine unless --snapshot or --driver with --gpu/--cc are given;
without a driver, only what does not depend on one is judged. Nothing is built,
pulled or downloaded.
\b
--timeout also bounds envdoctor's own work: reading the Dockerfile (a pipe
such as <(...) is read until its writer closes it) and the build context's
files, parsing and judging.
\b
Exit codes: 0 no errors found; 1 errors found; 2 could not run as asked
(unreadable file or context, bad value, not finished within --timeout).""")
@click.argument("path", default="Dockerfile", metavar="[FILE|-]")
@click.option("--build-arg", "build_args", multiple=True, metavar="KEY=VALUE",
              help="A build argument, as `docker build --build-arg` (repeatable).")
@click.option("--context", "context_dir", metavar="DIR", help="The build context, where -r requirements files, "
              "pyproject.toml and uv.lock are read (default: the Dockerfile's directory); it must exist.")
@subject_options(values=True, note="The host is that machine.")
@click.option("-v", "--verbose", is_flag=True, help="Every finding in full, with its evidence and the rule's source.")
@format_option("text", "json")
@timeout_option
def dockerfile(path: str, build_args: Tuple[str, ...], context_dir: Optional[str], snapshot_path: Optional[str],
               driver: Optional[str], gpu: Optional[str], cc: Optional[str], verbose: bool, fmt: str,
               timeout: float) -> None:
    """Judge a Dockerfile before it is built: nvidia/cuda tags that do not exist or that the host's driver
    cannot start, CUDA compilation on images without nvcc, framework builds the host's driver or GPU cannot
    run or the image's Python cannot install, pip into an externally managed Python, pip without Python,
    CPU-only builds in GPU images.
    """
    import os

    from .. import advise as logic
    from .. import dockerfile as lint

    work = lint.Deadline(timeout)  # reading, parsing and judging; probing the host has its own deadline
    args: Dict[str, str] = {}
    for item in build_args:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not key.strip().replace("_", "").isalnum():
            raise fail("--build-arg %r is not KEY=VALUE" % item, EXIT_USAGE)
        args[key.strip()] = value
    if context_dir is not None and not os.path.isdir(context_dir):
        raise fail("--context %s: %s" % (context_dir, "not a directory" if os.path.exists(context_dir)
                                          else "no such directory"), EXIT_USAGE)
    try:
        text = lint.read(path, work)
        name = "standard input" if path == "-" else path
        df = lint.parse(text, name, args, work)
        given: Dict[str, Any] = {"driver": logic.parse_driver(driver) if driver else None}
        gpu_name = cc_value = None
        if gpu:
            gpu_name, cc_value = logic.gpu_cc(gpu)
        if cc:
            cc_value = logic.parse_cc(cc)
    except (lint.DockerfileError, logic.AdviseError) as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    given["cc"], given["gpu"] = cc_value, gpu_name
    subj = subject(snapshot_path, given, timeout, pause=work.pause, resume=work.resume)
    target = subj.target
    host = "the values given" if subj.facts is None else "the snapshot's machine" if subj.snapshot else "this machine"
    if driver or cc_value:
        host = "the values given" if driver and cc_value else host + ", with values given"
    ctx = context_dir or (os.path.dirname(os.path.abspath(path)) if path != "-" else None)
    try:
        findings = lint.lint(df, target, ctx, work)
    except lint.DockerfileError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(lint.document(name, df, target, host, findings)))
    else:
        echo_output(render(name, df, target, host, findings, verbose))
    sys.exit(1 if any(f.severity == "error" for f in findings) else 0)


def render(name: str, df: Any, t: Any, whence: str, findings: List[Any], verbose: bool) -> str:
    from ..findings import sort_key
    from ..render.layout import terminal_width, wrap
    from ..render.style import Style, printable
    from ..render.text import _finding_lines

    style = Style(sys.stdout)
    width = terminal_width(sys.stdout)
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    if errors:
        head = style.mark("error") + " %s: %d error%s, %d warning%s" % (
            name, errors, "" if errors == 1 else "s", warnings, "" if warnings == 1 else "s")
    elif warnings:
        head = style.mark("warning") + " %s: %d warning%s" % (name, warnings, "" if warnings == 1 else "s")
    else:
        head = style.mark("ok") + " %s: no problems found" % name
    out = wrap(printable(head), width, "", "  ")
    gpu = ("%s (compute capability %s)" % (t.gpu, t.cc) if t.gpu else "compute capability %s" % t.cc) if t.cc else None
    if t.driver:
        drv = "driver " + t.driver
    elif t.gpu_present is False:
        drv = "no NVIDIA GPU (nothing judged against a driver: give --driver and --gpu for the host that runs it)"
    else:
        drv = "driver unknown (nothing judged against a driver: give --driver and --gpu)"
    facts = [drv, gpu]
    out += wrap(printable("for %s: %s" % (whence, ", ".join(f for f in facts if f))), width, "  ", "    ")
    stages = ["%s (line %d)" % (s.image.reference, s.line) for s in df.stages]
    if stages:
        out += wrap(printable("FROM " + ", ".join(stages)), width, "  ", "    ")
    for f in sorted(findings, key=lambda f: (sort_key(f), _line(f))):
        out.append("")
        out += _finding_lines(f, style, verbose, width)
    return "\n".join(out) + "\n"


def _line(finding: Any) -> int:
    """The Dockerfile line a finding is on (0: the command line's --build-arg)."""
    return next((e["value"] for e in finding.evidence if e.get("key") == "dockerfile.line"), 0)

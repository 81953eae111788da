"""``envdoctor bench [h2d|d2h|d2d|p2p|all]``: measured copies, judged against the link and the memory."""

from __future__ import annotations

import re
import sys
from typing import Any, Optional, Tuple

import click

from . import EXIT_USAGE, fail
from .common import Seconds, echo_output, format_option, output_deadline

EPILOG = """\b
Examples:
  envdoctor bench                      # every GPU: H2D, D2H, D2D, and peer copies
  envdoctor bench h2d --gpu 0          # one direction, one GPU
  envdoctor bench --size 1G --trials 9
  envdoctor bench --format json > bench.json
  envdoctor check --policy p.toml --report bench.json
\b
A result reads "GPU0 H2D pinned 25.9 GB/s = 0.82 × PCIe 4.0 x16 ✓": the
median of the trials against the link's rate after its encoding (8b/10b for
PCIe 1-2, 128b/130b for 3-5, 1b/1b for 6), device-to-device copies (bytes
read and written) against the GPU's memory bandwidth, peer copies against
the path between the GPUs (NVLink, PCIe). 0.75 or more passes, below 0.75 is
a warning, below 0.5 an error. Pageable copies are shown, not judged. Every
peer copy is read back and compared. The copies run in a child process bound
to the GPU's local CPUs and NUMA node, killed at --timeout.
\b
The bench takes the GPU for a few seconds: it refuses while another process
uses it (--force measures anyway, with a warning). It is never part of
`envdoctor diagnose`. Its facts (bench.h2d_ratio, bench.d2d_ratio...) are
policy keys: `envdoctor policy keys`.
\b
Exit codes: 0 no errors; 1 errors found (a slow link, corrupt peer copies,
a copy that hung); 2 could not run (no usable NVIDIA GPU, a busy GPU
without --force, bad option)."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
MIN_SIZE, MAX_SIZE = 1 << 20, 64 << 30


class Size(click.ParamType):
    """A size in bytes: ``268435456``, ``256M``, ``256MiB``, ``1G`` (powers of 1024)."""

    name = "size"

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Optional[click.Context]) -> Any:
        if isinstance(value, int):
            return value
        m = _SIZE.match(str(value))
        if not m:
            self.fail("%r is not a size (256M, 1G, 268435456)" % str(value), param, ctx)
        n = int(float(m.group(1)) * (1 << (10 * " kmgt".index(m.group(2).lower() or " "))))
        if not MIN_SIZE <= n <= MAX_SIZE:
            self.fail("%s is outside 1 MiB..64 GiB (smaller copies time the call, not the link)" % value, param, ctx)
        return n


def _tests(ctx: click.Context, param: click.Parameter, value: Tuple[str, ...]) -> Tuple[str, ...]:
    from ..bench import TESTS

    if not value or "all" in value:
        return TESTS
    return tuple(t for t in TESTS if t in value)


@click.command("bench", epilog=EPILOG)
@click.argument("tests", nargs=-1, type=click.Choice(["h2d", "d2h", "d2d", "p2p", "all"]), callback=_tests)
@click.option("--gpu", type=click.IntRange(0, 1023), metavar="N", help="Measure this GPU only (NVML's index; "
              "peer copies need two).")
@click.option("--size", type=Size(), default="256M", show_default=True, metavar="SIZE",
              help="Bytes per copy (256M, 1G); peer copies use at most 64 MiB, each read back and compared.")
@click.option("--trials", type=click.IntRange(1, 100), default=5, show_default=True, metavar="N",
              help="Timed copies per result (after one warm-up); the median is reported.")
@click.option("--force", is_flag=True, help="Measure even while other processes use the GPU (a warning says so).")
@click.option("-v", "--verbose", is_flag=True, help="Every finding in full, with its code.")
@format_option("text", "json", help_text="Output format: text, or json (schema: envdoctor/schemas/bench.schema.json).")
@click.option("--timeout", type=Seconds(0.1, 3600), default=30.0, show_default=True, envvar="ENVDOCTOR_TIMEOUT",
              metavar="SECONDS", help="The whole run, NVML, the driver's start-up and every copy included, "
              "finishes within it plus about a second; a copy still running then is reported as hung. "
              "[env: ENVDOCTOR_TIMEOUT]")
def bench(tests: Tuple[str, ...], gpu: Optional[int], size: int, trials: int, force: bool, verbose: bool, fmt: str,
          timeout: float) -> None:
    """Measure host<->device, device memory and peer copies, and judge each against the link it crosses."""
    import time

    from .. import bench as benchmod

    started = time.monotonic()
    options = benchmod.Options(tests, gpu, size, trials, force, timeout)
    try:
        doc = benchmod.run(options)
    except benchmod.BenchError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(doc), deadline=output_deadline(started + timeout + 1.0))
    else:
        from ..render.bench import render
        from ..render.layout import terminal_width
        from ..render.style import Style

        style = Style(sys.stdout)
        echo_output(render(doc, style, terminal_width(sys.stdout), verbose), color=style.color,
                    deadline=output_deadline(started + timeout + 1.0))
    sys.exit(1 if doc["summary"].get("error") else 0)

#!/usr/bin/env python3
"""Regenerate (or, with --check, verify) the sample outputs in README.md from the real H100 capture.

Each sample sits between ``<!-- sample: ARGS -->`` and ``<!-- /sample -->`` in README.md; ARGS is an
envdoctor command line, run here with ``--snapshot`` on tests/live/h100-ubuntu2404-container (a real
machine: driver 580.159.04, H100, torch 2.11.0), without colour, at 80 columns. So every sample a
reader sees is what envdoctor prints for that machine today.

    python scripts/readme_samples.py          # rewrite README.md
    python scripts/readme_samples.py --check  # exit 1 when a sample is out of date (the suite runs this)
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
CAPTURE = "tests/live/h100-ubuntu2404-container/snapshot.json.gz"
BLOCK = re.compile(r"(<!-- sample: (?P<args>[^>]*?) -->\n```text\n)(?P<body>.*?)(```\n<!-- /sample -->)", re.S)


def run(args: str) -> str:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="80")
    for var in ("FORCE_COLOR", "CLICOLOR_FORCE", "ENVDOCTOR_FORMAT", "ENVDOCTOR_PYTHON"):
        env.pop(var, None)
    argv = [sys.executable, "-m", "envdoctor"] + shlex.split(args) + ["--snapshot", CAPTURE]
    res = subprocess.run(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=120, check=False)
    return res.stdout


def main() -> int:
    with open(README, encoding="utf-8") as fh:
        text = fh.read()
    new = BLOCK.sub(lambda m: m.group(1) + run(m.group("args")) + m.group(4), text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print("README.md samples are out of date: run python scripts/readme_samples.py")
            return 1
        return 0
    if new != text:
        with open(README, "w", encoding="utf-8") as fh:
            fh.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

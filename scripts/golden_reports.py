#!/usr/bin/env python3
"""Render every captured machine through every command that reads one, into a folder, to compare two
versions of envdoctor byte for byte (a refactoring must leave them identical).

    python scripts/golden_reports.py /tmp/before          # on the old commit
    python scripts/golden_reports.py /tmp/after           # on the new one
    diff -r /tmp/before /tmp/after                        # nothing: the behaviour did not change

Each captured machine (tests/machines, tests/live, tests/corpus) is replayed by ``diagnose`` (json, text,
markdown, quiet), ``advise`` (text, json), ``check`` against the policy below (every format), ``install``
dry runs and ``topo`` (text, json); all of them together by ``fleet`` (every format). What changes from run to run
(the time a report was generated, probe timings, temporary paths) is blanked. Each file ends with the exit code.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import tempfile
from typing import List, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _this_checkouts_recipes() -> None:
    """Import ``envdoctor.recipes`` from this checkout's ``recipes/`` even when the interpreter's editable
    install maps it to another checkout (the script runs on an old commit with the new one's venv)."""
    import importlib.util

    import envdoctor

    folder = os.path.join(ROOT, "recipes")
    if os.path.isdir(os.path.join(ROOT, "envdoctor", "recipes")) or not os.path.isdir(folder):
        return
    spec = importlib.util.spec_from_file_location("envdoctor.recipes", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["envdoctor.recipes"] = module
    envdoctor.recipes = module  # type: ignore[attr-defined]
    spec.loader.exec_module(module)

#: Requirements on every kind of fact the engine outputs derive (versions, libraries the loader picks,
#: frameworks, per-GPU values, services), so that a change to how they are read shows.
POLICY = """\
schema_version = 1
[require]
"driver.version" = ">=535"
"cuda.toolkit.version" = ">=12.0"
"cudnn.version" = ">=8.9"
"nccl.version" = ">=2.18"
"framework.torch.version" = ">=2.1"
"framework.torch.cuda" = "12.1"
"framework.jax.version" = ">=0.4"
"python.version" = ">=3.9"
"gpu.count" = ">=1"
"gpu.*.compute_capability" = ">=7.0"
"gpu.*.ecc_mode_current" = true
"container.toolkit.installed" = true
"driver.fabric_manager.state" = "running"
[findings]
fail_on = "warning"
ignore = ["container-toolkit.missing", "framework.cpu_only_build"]
"""

#: ``--install``: (component, version or None for the recipe's own choice, further options)
INSTALLS = [
    ("pytorch", None, ()), ("pytorch", "2.15", ()), ("pytorch", "2.4", ()), ("pytorch", "1.13", ()),
    ("pytorch", "1.8", ()), ("pytorch", "2.4", ("--method", "docker")), ("pytorch", "2.15", ("--with-driver",)),
    ("tensorflow", None, ()), ("tensorflow", "2.15", ()), ("tensorflow", "2.4", ()),
    ("tensorflow", "2.18", ("--method", "docker")),
    ("jax", None, ()), ("jax", "0.4.14", ()), ("jax", "0.6", ()), ("jax", "0.7.2", ("--option", "cuda=13")),
    ("driver", None, ()), ("driver", "470", ()), ("driver", "580", ()),
    ("cudnn", None, ()), ("cudnn", "8.9.7", ()), ("cudnn", "9.0.0", ()), ("cudnn", "7.6.5", ()),
    ("nccl", None, ()), ("nccl", "2.18.3", ()), ("nccl", "2.28.9", ()),
]

_GENERATED = re.compile(r'"generated": "[^"]*"')
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00|Z)?")
_PROM_TIME = re.compile(r"^(envdoctor_(?:last_run_timestamp|run_duration)_seconds(?:\{[^}]*\})?) \S+$", re.M)


def snapshots() -> List[str]:
    found = []
    for pattern in ("tests/machines/*/snapshot.json", "tests/live/*/snapshot.json*", "tests/corpus/*/snapshot.json"):
        found += sorted(glob.glob(os.path.join(ROOT, pattern)))
    return found


def normalize(text: str, tmp: str) -> str:
    """Blank what differs between two runs of the same version."""
    text = text.replace(tmp, "<TMP>").replace(ROOT, "<ROOT>")
    text = _GENERATED.sub('"generated": "<T>"', text)
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            pass
        else:
            _blank_timings(doc)
            return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    return _PROM_TIME.sub(r"\1 <T>", _STAMP.sub("<T>", text))


def _blank_timings(doc: object) -> None:
    if isinstance(doc, dict):
        for key in list(doc):
            if key in ("timings", "duration", "duration_s", "generated", "elapsed"):
                doc[key] = "<T>"
            else:
                _blank_timings(doc[key])
    elif isinstance(doc, list):
        for item in doc:
            _blank_timings(item)


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="folder to write (created; its files are overwritten)")
    parser.add_argument("-k", help="only the machines whose path contains this")
    parser.add_argument("--install", action="store_true",
                        help="only install dry runs: every framework and library recipe at a few versions")
    args = parser.parse_args(list(argv) or None)
    args.out = os.path.abspath(args.out)
    os.environ.update({"NO_COLOR": "1", "COLUMNS": "80", "ENVDOCTOR_FORMAT": "", "ENVDOCTOR_TIMEOUT": ""})
    for var in ("ENVDOCTOR_FORMAT", "ENVDOCTOR_TIMEOUT"):
        os.environ.pop(var, None)
    _this_checkouts_recipes()
    from click.testing import CliRunner

    from envdoctor.cli import cli

    runner = CliRunner()
    tmp = tempfile.mkdtemp(prefix="golden-")
    policy = os.path.join(tmp, "policy.toml")
    with open(policy, "w") as f:
        f.write(POLICY)
    os.makedirs(args.out, exist_ok=True)

    def run(name: str, argv: List[str]) -> str:
        result = runner.invoke(cli, argv, catch_exceptions=True)
        text = result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            text += "\n<EXCEPTION %s: %s>" % (type(result.exception).__name__, result.exception)
        text = normalize(text, tmp) + "<exit %s>\n" % result.exit_code
        with open(os.path.join(args.out, name), "w") as f:
            f.write(text)
        return text

    count = 0
    os.chdir(ROOT)  # machines named by their paths in the checkout, the same whichever checkout runs this
    paths = [os.path.relpath(p, ROOT) for p in snapshots() if not args.k or args.k in p]
    for path in paths:
        rel = path.replace(os.sep, "_")
        rel = re.sub(r"_snapshot\.json(\.gz)?$", "", rel)
        commands: List[tuple] = [
            ("diagnose.json", ["diagnose", "--snapshot", path, "--format", "json"]),
            ("diagnose.txt", ["diagnose", "--snapshot", path]),
            ("diagnose-q.txt", ["diagnose", "--snapshot", path, "-q"]),
            ("diagnose.md", ["diagnose", "--snapshot", path, "--format", "markdown"]),
            ("diagnose-only.json", ["diagnose", "--snapshot", path, "--only", "driver,frameworks", "--format",
                                    "json"]),
            ("advise.txt", ["advise", "--snapshot", path]),
            ("advise.json", ["advise", "--snapshot", path, "--format", "json"]),
            ("install-pytorch.sh", ["install", "pytorch", "--snapshot", path, "--dry-run"]),
            ("install-cuda.sh", ["install", "cuda", "--snapshot", path, "--dry-run"]),
            ("topo.txt", ["topo", "--snapshot", path]),
            ("topo.json", ["topo", "--snapshot", path, "--format", "json"]),
        ]
        if args.install:
            # the options in the name too: the same release with --method docker or --with-driver is another output
            commands = [("install-%s-%s%s.sh" % (component, version or "default",
                                                 "".join("_" + x.strip("-").replace("=", "-") for x in extra)),
                         ["install", component, "--snapshot", path, "--dry-run"]
                         + (["--version", version] if version else []) + list(extra))
                        for component, version, extra in INSTALLS]
        for fmt in ("text", "json", "junit", "prometheus", "nhc", "nfd") if not args.install else ():
            commands.append(("check.%s" % fmt, ["check", "--policy", policy, "--snapshot", path, "--format", fmt,
                                                "--node", "n"]))
        for suffix, argv in commands:
            run("%s.%s" % (rel, suffix), argv)
            count += 1
    if not args.k and not args.install:
        listing = run("explain.txt", ["explain"])
        run("explain.json", ["explain", "--format", "json"])
        codes = sorted({line.split()[0] for line in listing.splitlines()
                        if re.match(r"^\s*[a-z][a-z0-9_-]*\.[a-z0-9_.]+\s", line)})
        with open(os.path.join(args.out, "explain-each.txt"), "w") as f:
            for code in codes:
                f.write(run("explain-one.txt", ["explain", code]))
            os.remove(os.path.join(args.out, "explain-one.txt"))
        count += 3
        for fmt in ("text", "json", "junit", "prometheus"):
            machines = [p for p in paths if p.startswith(("tests/machines/", "tests/live/"))]
            run("fleet.%s" % fmt, ["fleet", "--format", fmt] + machines)
            run("fleet-policy.%s" % fmt, ["fleet", "--format", fmt, "--policy", policy] + machines)
            count += 2
    print("%d outputs of %d machines in %s" % (count, len(paths), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Control characters from the machine never reach a reader raw, in any output of any command.

Every command output, file text, environment value and NVML string of a few machines (from tests/machines
and tests/corpus, with findings in several layers) gets hostile text appended to each line: escape
sequences that retitle a terminal or hide text, an 8-bit CSI, a carriage return, NUL, a C1 next-line,
DEL, a right-to-left override, a bidi isolate and a line separator (what a garbled ``nvidia-smi``, a
hostile ``os-release`` or a package's metadata can carry).  Then every output a user or an engine reads
(``diagnose`` text, colour, markdown and JSON; ``advise``; ``policy init``; ``install --dry-run``;
``check`` in every format; ``fleet`` in every format, with a node whose file name carries the same
characters) must show them escaped (or drop them where a grammar allows no escape): never raw.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from typing import Any, Dict, List

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINES = ["machines/ubuntu2004-rtx3060-cuda118", "corpus/laptop-gpu-fallen-off-bus-xid79",
            "corpus/debian12-mismatch-module-package-not-upgraded", "corpus/torch251-cu121-rtx5090-driver590",
            "corpus/docker-gpus-no-container-toolkit"]
EVIL = "\x1b]0;pwn\x07\x1b[8mhid\x9b2J\r\x08\x00\x85\x7f\u202eexe\u2066\u2028"
#: What must never be written raw: C0 controls but tab and newline, DEL, C1, bidi marks, overrides and
#: isolates, the line and paragraph separators.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: envdoctor's own colours (--color), which are not the machine's: red, green... bold, dim, reset.
OWN_SGR = re.compile(r"\x1b\[(?:3[1-6]|[012])(?:;(?:3[1-6]|[012]))*m")


def _spoil(text: str) -> str:
    return "\n".join(line + EVIL if line else line for line in text.split("\n"))


def _hostile(doc: Dict[str, Any]) -> Dict[str, Any]:
    out = json.loads(json.dumps(doc))
    for c in out.get("commands", []):
        for k in ("stdout", "stderr"):
            if isinstance(c.get(k), str) and c[k]:
                c[k] = _spoil(c[k])
    for f in out.get("files", {}).values():
        if isinstance(f, dict) and isinstance(f.get("text"), str):
            f["text"] = _spoil(f["text"])
    out["environ"] = {k: _spoil(v) if isinstance(v, str) else v for k, v in out.get("environ", {}).items()}
    answers = out.get("nvml", {}).get("data", {}) if isinstance(out.get("nvml"), dict) else {}
    for a in answers.values():
        if isinstance(a, dict) and isinstance(a.get("value"), str):
            a["value"] = _spoil(a["value"])
    return out


@pytest.fixture(scope="module")
def hostile_fleet(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    fleet = root / "fleet"
    fleet.mkdir()
    made = []
    for rel in MACHINES:
        src = os.path.join(HERE, rel, "snapshot.json")
        name = os.path.basename(rel)
        snap = fleet / (name + ".json")
        with open(src, encoding="utf-8") as fh:
            snap.write_text(json.dumps(_hostile(json.load(fh))), encoding="utf-8")
        policy = root / (name + ".toml")
        r = CliRunner().invoke(cli, ["policy", "init", "--from", src, "-o", str(policy)])
        assert r.exit_code == 0, r.output
        made.append((name, str(snap), str(policy)))
    # A node named after a file whose name carries the same characters (fleet names nodes after files).
    shutil.copy(made[0][1], os.path.join(str(fleet), "node" + EVIL.replace("\x00", "") + ".json"))
    return str(fleet), made


def _runs(fleet: str, made: List[Any]) -> List[List[str]]:
    runs = []
    for _, snap, policy in made:
        runs += [["diagnose", "--snapshot", snap] + a for a in (
            [], ["-v"], ["--color", "-v"], ["--facts"], ["-q"], ["--format", "markdown", "-v"], ["--format", "json"])]
        runs += [["advise", "--snapshot", snap], ["advise", "--snapshot", snap, "--format", "json"],
                 ["policy", "init", "--from", snap]]
        runs += [["install", c, "--dry-run", "--snapshot", snap] for c in ("driver", "cuda", "pytorch")]
        runs += [["check", "--policy", policy, "--snapshot", snap, "--format", f]
                 for f in ("text", "json", "junit", "prometheus", "nhc", "nfd")]
    snap, policy = made[-1][1], made[-1][2]
    runs += [["fleet", fleet] + a for a in (
        [], ["--format", "json"], ["--format", "junit"], ["--format", "prometheus"], ["--baseline", snap],
        ["--uniform"], ["--policy", policy], ["--policy", policy, "--format", "junit"],
        ["--policy", policy, "--format", "prometheus"])]
    return runs


def test_no_output_of_any_command_carries_a_control_character_raw(hostile_fleet):
    fleet, made = hostile_fleet
    bad, shown = [], set()
    for args in _runs(fleet, made):
        r = CliRunner().invoke(cli, args)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
        # click 8.1 (the newest for Python 3.8/3.9) mixes stderr into stdout and leaves stderr_bytes None
        for stream in (r.stdout_bytes, r.stderr_bytes or b""):
            text = stream.decode("utf-8")
            if "--color" in args:
                text = OWN_SGR.sub("", text)
            raw = sorted({m.group() for m in RAW.finditer(text)})
            if raw:
                line = next(ln for ln in text.splitlines() if RAW.search(ln))
                bad.append("%s: %r in %r" % (" ".join(args[:1] + args[2:]), raw, line[:160]))
            if "pwn" in text:
                shown.add(args[0] if args[0] != "check" else "check " + args[-1])
    assert not bad, "\n".join(bad)
    # The hostile text did reach the outputs (shown as escapes), so the test looked at it.
    assert {"diagnose", "fleet", "check text", "check json", "check junit", "check prometheus"} <= shown, shown


def test_a_policy_made_from_a_hostile_node_escapes_its_values_and_still_passes_it(hostile_fleet, tmp_path):
    _, made = hostile_fleet
    _, snap, _ = made[0]
    policy = str(tmp_path / "golden.toml")
    r = CliRunner().invoke(cli, ["policy", "init", "--from", snap, "-o", policy])
    assert r.exit_code == 0, r.output
    text = open(policy, encoding="utf-8").read()
    assert "pwn" in text and not RAW.search(text)
    r = CliRunner().invoke(cli, ["check", "--policy", policy, "--snapshot", snap, "--format", "json"])
    reqs = json.loads(r.stdout)["policy"]["requirements"]
    assert reqs and all(q["status"] == "pass" for q in reqs), reqs


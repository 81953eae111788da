"""`diagnose --format markdown`: pastes into an issue as findings plus folded facts, whatever the
machine put in its files (a `|` in a value, HTML, backticks, escape sequences)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from envdoctor.render.markdown import code, text

from .conftest import machine_path

MISMATCH = machine_path("ubuntu2404-driver-mismatch")


def _md(snapshot):
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "markdown", "--snapshot",
                        snapshot], capture_output=True, text=True, timeout=60)
    return r


def _cells(row):
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_findings_first_then_folded_facts_and_the_same_exit_code():
    r = _md(MISMATCH)
    assert r.returncode == 1  # as the text and JSON outputs: an error was found
    out = r.stdout
    assert out.index("#### Findings") < out.index("<details>") < out.index("</details>")
    assert "- **ERROR** `driver.library_mismatch`" in out
    assert "    - `sudo reboot`" in out
    assert "(<https://docs.nvidia.com/" in out  # the rule's source as a link
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and not ln.startswith("| fact |")]
    assert rows and all(len(_cells(ln)) == 3 for ln in rows)


def test_hostile_values_cannot_break_the_table_or_inject_markup(tmp_path):
    doc = json.load(open(machine_path("ubuntu2204-a100-mig")))
    evil = 'Evil | col <script>alert(1)</script> `tick` **bold** [x](http://e) \x1b]0;t\x07 \u202e'
    doc["files"]["/etc/os-release"] = {"text": 'NAME="%s"\nPRETTY_NAME="%s"\nID=ubuntu\nVERSION_ID="22.04"\n'
                                              % (evil, evil)}
    snap = tmp_path / "evil.json"
    snap.write_text(json.dumps(doc))
    out = _md(str(snap)).stdout
    row = next(ln for ln in out.splitlines() if ln.startswith("| Distribution |"))
    assert len(_cells(row)) == 3
    assert "<script>" not in out and "&lt;script&gt;" in row
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b" in row
    assert "**bold**" not in row and "[x](http://e)" not in row


def test_code_spans_survive_backticks_and_text_stays_one_line():
    assert code("a `b` c") == "``a `b` c``"  # a longer fence than any run inside (CommonMark)
    assert code("`x`") == "`` `x` ``"  # padded when the content starts or ends with a backtick
    assert code("sudo reboot") == "`sudo reboot`"
    assert text("one\ntwo|three") == "one<br>two\\|three"


def test_a_pipe_in_a_code_span_in_a_table_cell_is_escaped(tmp_path):
    """Found by the second audit: GFM splits table cells at `|` even inside a code span, so an interpreter
    path with a `|` cut the "from" cell (markdown-it rendered half of it)."""
    doc = json.load(open(machine_path("ubuntu2204-a100-mig")))
    doc["python"]["executable"] = "/opt/py|th`on/bin/python3"
    snap = tmp_path / "pipe.json"
    snap.write_text(json.dumps(doc))
    rows = [ln for ln in _md(str(snap)).stdout.splitlines() if ln.startswith("| ") and "py" in ln and "th" in ln]
    assert rows and all(len(_cells(r)) == 3 for r in rows), rows
    assert code("a|b", in_table=True) == "`a\\|b`" and code("a|b") == "`a|b`"

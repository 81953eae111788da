"""Shipped data says what is known about the vendors' facts and where they come from, never how a fact was
gathered: no notes about search tools, indexes, passes or sessions (issue 20: 36 such notes in gpus.json, 2 in
mxnet.json, 1 in cupy.json, and more in cudnn.json, gpu_arch.json, jax.json... shipped in the wheel).
"""

from __future__ import annotations

import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: How a note gives away the way it was gathered (tools, passes, sessions, memory), not what it knows.
INTERNAL = re.compile(
    r"search tool|find_string|code index|the tool\b|came back from|came back\b|returned by search|"
    r"not returned\b|(?:re-?)?searched\b|via search|from search|by search|\(search\)|this pass|this session|"
    r"second pass|third pass|earlier note|stored (?:version|copy|copies|page)|(?:page|table|copy) as stored|"
    r"as recalled|recalled from|file id \d|fetch tool|freshness reviewed", re.I)


def _shipped():
    """Every file the wheel carries besides code: envdoctor/'s and recipes/' data and documents."""
    for top in ("envdoctor", "recipes"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            if "__pycache__" in dirpath:
                continue
            for name in files:
                if not name.endswith((".py", ".pyc", ".typed")):
                    yield os.path.join(dirpath, name)


def _strings(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)
    elif isinstance(node, str):
        yield node


def test_no_shipped_file_carries_internal_provenance_notes():
    files = list(_shipped())
    assert any(f.endswith("gpus.json") for f in files) and len(files) > 15
    bad = []
    for path in files:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        texts = list(_strings(json.loads(text))) if path.endswith(".json") else [text]
        for s in texts:
            for m in INTERNAL.finditer(s):
                bad.append("%s: ...%s..." % (os.path.relpath(path, ROOT), s[max(0, m.start() - 60):m.end() + 40]))
    assert not bad, "\n".join(bad[:20]) + "\n(%d in all)" % len(bad)


def test_the_notes_keep_their_sources():
    """Cleaning the notes kept every matrix row's vendor source: a URL, the date it was checked, the flag."""
    data = os.path.join(ROOT, "envdoctor", "matrix", "data")
    for name in sorted(os.listdir(data)):
        with open(os.path.join(data, name), encoding="utf-8") as fh:
            doc = json.load(fh)
        for row in doc.get("rows", []):
            src = row.get("source") or {}
            assert str(src.get("url", "")).startswith("http") and src.get("checked") and "verified" in src, (
                name, row.get("version") or row.get("name") or row.get("cc"))

"""JSON text that is safe to show: what ``json.dumps`` writes, with the characters that could steer a
terminal or an editor written as escapes.  The one home of that rule, for every JSON envdoctor writes
(reports, snapshots, fleet documents)."""

from __future__ import annotations

import json
import re
from typing import Any

# json.dumps escapes C0 controls itself; these it would write raw with ensure_ascii=False (C1
# controls, 0x9b being an 8-bit CSI, and the bidirectional overrides), so `cat report.json` on a
# terminal could still be steered by a hostile machine.
#: C1 controls, bidi overrides and line separators (which reorder or break what a terminal or editor
#: shows) and lone surrogates (undecodable bytes of file names and the environment, kept by Python's
#: surrogateescape: not encodable as UTF-8): written as JSON escapes, which decode back to the same text.
_RAW = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def escape_raw(text: str) -> str:
    """JSON text with the characters of :data:`_RAW` written as ``\\uXXXX`` escapes (valid only inside
    JSON strings, where json.dumps puts every such character)."""
    return _RAW.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def dumps(doc: Any) -> str:
    """``doc`` as indented JSON text (UTF-8 kept, see :func:`escape_raw`), with a final newline."""
    text = json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)
    return escape_raw(text) + "\n"

"""``--format json``: the versioned report envelope (schema in envdoctor/schemas/report.schema.json)."""

from __future__ import annotations

import json
import re
from typing import Any, Dict

# json.dumps escapes C0 controls itself; these it would write raw with ensure_ascii=False (C1
# controls, 0x9b being an 8-bit CSI, and the bidirectional overrides), so `cat report.json` on a
# terminal could still be steered by a hostile machine.
_RAW = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def dumps(doc: Dict[str, Any]) -> str:
    text = json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False)
    return _RAW.sub(lambda m: "\\u%04x" % ord(m.group()), text) + "\n"

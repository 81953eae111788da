"""``--format json``: the versioned report envelope (schema in envdoctor/schemas/report.schema.json)."""

from __future__ import annotations

import json
from typing import Any, Dict


def dumps(doc: Dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n"

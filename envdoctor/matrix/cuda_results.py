"""Every ``CUresult`` of NVIDIA's ``cuda.h`` (area ``cuda_results``): its name, its number and NVIDIA's own
description, read from the header's text by ``scripts/make_cuda_results.py``. The CUDA-initialisation check names a
failure with it (``CUDA_ERROR_SYSTEM_NOT_READY (802): This error indicates that ...``)."""

from __future__ import annotations

import functools
import re
from typing import Dict, List, Optional

from .. import lazyre
from . import DERIVED_CACHES, Row, load

AREA = "cuda_results"
_NAME = lazyre.compile(r"^CUDA_(?:SUCCESS|ERROR_[A-Z0-9_]+)$")


@functools.lru_cache(maxsize=1)
def _by_code() -> Dict[int, Row]:
    return {int(r["code"]): r for r in load(AREA)}


DERIVED_CACHES.append(_by_code.cache_clear)


def result(code: int) -> Optional[Row]:
    """The catalog's row of a CUresult number, or None when cuda.h names no such result."""
    return _by_code().get(code)


def name_of(code: int) -> str:
    row = result(code)
    return str(row["name"]) if row else "CUresult %d" % code


def summary(code: int) -> str:
    """NVIDIA's description of ``code``, its first sentence ("" when the catalog has none)."""
    row = result(code)
    text = str(row.get("description") or "") if row else ""
    first = re.split(r"(?<=[a-z)])\.\s+(?=[A-Z])", text, maxsplit=1)[0]
    return first.rstrip(".") + "." if first else ""


def validate(table: List[Row]) -> List[str]:
    problems: List[str] = []
    seen_codes: Dict[int, str] = {}
    seen_names = set()
    for i, r in enumerate(table):
        name, code, text = r.get("name"), r.get("code"), r.get("description")
        if not isinstance(name, str) or not _NAME.match(name):
            problems.append("row %d: name %r is not CUDA_SUCCESS or CUDA_ERROR_*" % (i, name))
        if not isinstance(code, int) or isinstance(code, bool) or code < 0:
            problems.append("row %d (%s): code %r is not a non-negative integer" % (i, name, code))
        elif code in seen_codes:
            problems.append("row %d (%s): code %d is already %s" % (i, name, code, seen_codes[code]))
        else:
            seen_codes[code] = str(name)
        if name in seen_names:
            problems.append("row %d: name %s twice" % (i, name))
        seen_names.add(name)
        if not isinstance(text, str) or not text.strip():
            problems.append("row %d (%s): no description" % (i, name))
    return problems


VALIDATORS = {AREA: validate}

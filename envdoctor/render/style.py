"""Terminal styling: colour only on a terminal, never with NO_COLOR; ASCII when UTF-8 is unavailable."""

from __future__ import annotations

import os
import sys
from typing import IO, Optional

_CODES = {"red": "31", "yellow": "33", "green": "32", "blue": "34", "cyan": "36", "dim": "2", "bold": "1"}


class Style:
    def __init__(self, stream: Optional[IO[str]] = None, color: Optional[bool] = None) -> None:
        stream = stream or sys.stdout
        if color is None:
            color = (hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ
                     and os.environ.get("TERM") != "dumb")
        self.color = bool(color)
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        self.unicode = enc in ("utf8", "utf_8")

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        return "\033[%sm%s\033[0m" % (";".join(_CODES[s] for s in styles), text)

    def mark(self, kind: str) -> str:
        uni = {"ok": "✓", "error": "✗", "warning": "!", "info": "i", "unknown": "?", "not_supported": "-",
               "timed_out": "⏱", "crashed": "✗"}
        asc = {"ok": "+", "error": "x", "warning": "!", "info": "i", "unknown": "?", "not_supported": "-",
               "timed_out": "T", "crashed": "x"}
        colour = {"ok": "green", "error": "red", "crashed": "red", "warning": "yellow", "timed_out": "yellow",
                  "unknown": "yellow", "info": "blue", "not_supported": "dim"}
        sym = (uni if self.unicode else asc).get(kind, "?")
        return self(sym, colour.get(kind, "dim"))

"""Terminal styling: colour only on a terminal, never with NO_COLOR; ASCII when UTF-8 is unavailable.

Also :func:`printable`: every string that came from the machine (a file, a command's output, a
snapshot someone attached to a bug report) passes through it before reaching a terminal, so an
escape sequence in an ``os-release`` or an ``nvcc`` banner cannot retitle the window, hide text,
write the clipboard or reorder what the reader sees.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Optional

# C0 controls but tab and newline, DEL, C1 controls (0x9b is an 8-bit CSI, 0x85 a next-line), the
# Unicode line and paragraph separators, and the bidirectional overrides and isolates that can make
# text read differently from what it is.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")  # lone surrogates: undecodable bytes of a name or variable


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``), so it prints as what it is."""
    return _UNPRINTABLE.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 0x100
                            else "\\u%04x" % ord(m.group()), text)


#: What would break a line of one-line output, and how it is shown instead.
_BREAKS = {"\n": "\\n", "\r": "\\r", "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_BREAK = re.compile("[%s]" % "".join(_BREAKS))


def one_line(text: str) -> str:
    """``text`` from a report, shown on one line: line breaks as escapes (``\\n``), and every other
    control character as :func:`printable` shows it.  A newline in a fact's value must not forge a line of
    the output (a fake ``Summary: 0 nodes...`` in ``fleet``, a fake requirement in ``check``)."""
    return printable(_BREAK.sub(lambda m: _BREAKS[m.group()], text))


_CODES = {"red": "31", "yellow": "33", "green": "32", "blue": "34", "cyan": "36", "dim": "2", "bold": "1"}


def color_wanted(stream: IO[str]) -> bool:
    """Whether to colour ``stream`` when neither --color nor --no-color was given.

    ``NO_COLOR`` (https://no-color.org) set to a non-empty value turns colour off and wins over
    everything else; ``FORCE_COLOR`` (https://force-color.org, non-empty) or ``CLICOLOR_FORCE``
    (https://bixense.com/clicolors/, anything but ``0``) turn it on even into a pipe (a CI log);
    otherwise colour goes to a terminal only, never to ``TERM=dumb``."""
    env = os.environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR") or env.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        return True
    try:
        tty = hasattr(stream, "isatty") and stream.isatty()
    except (OSError, ValueError):
        tty = False
    return bool(tty) and env.get("TERM") != "dumb"


class Style:
    def __init__(self, stream: Optional[IO[str]] = None, color: Optional[bool] = None) -> None:
        stream = stream or sys.stdout
        if color is None:
            color = color_wanted(stream)
        self.color = bool(color)
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        self.unicode = enc in ("utf8", "utf_8")

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        return "\033[%sm%s\033[0m" % (";".join(_CODES[s] for s in styles), text)

    def severity_label(self, severity: str) -> str:
        """``ERROR``, ``WARN`` or ``INFO``, padded to one width and coloured (every renderer of findings)."""
        label = {"error": "ERROR", "warning": "WARN", "info": "INFO"}[severity]
        colour = {"error": "red", "warning": "yellow", "info": "blue"}[severity]
        return self(label.ljust(5), colour, "bold")

    def mark(self, kind: str) -> str:
        uni = {"ok": "✓", "error": "✗", "warning": "!", "info": "i", "unknown": "?", "not_supported": "-",
               "timed_out": "⏱", "crashed": "✗"}
        asc = {"ok": "+", "error": "x", "warning": "!", "info": "i", "unknown": "?", "not_supported": "-",
               "timed_out": "T", "crashed": "x"}
        colour = {"ok": "green", "error": "red", "crashed": "red", "warning": "yellow", "timed_out": "yellow",
                  "unknown": "yellow", "info": "blue", "not_supported": "dim"}
        sym = (uni if self.unicode else asc).get(kind, "?")
        return self(sym, colour.get(kind, "dim"))

"""Fitting text to a terminal: the width to use, prose wrapped at spaces with a hanging indent, shell
commands wrapped where a copy-paste still runs them.

Every function works on plain text; colour is applied afterwards to a prefix of known width, so an
escape sequence never counts towards a line's length.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import IO, List, Optional

#: The width when the output is not a terminal (a pipe, a file, an issue comment).
DEFAULT_WIDTH = 80
#: Narrower than this and hanging indents leave no room for text.
MIN_WIDTH = 40


def terminal_width(stream: Optional[IO[str]] = None) -> int:
    """The terminal's width when ``stream`` is one (``COLUMNS`` wins, as in every shell tool), else 80."""
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        tty = False
    if not tty:
        return DEFAULT_WIDTH
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def wrap(text: str, width: int, first: str = "", rest: Optional[str] = None) -> List[str]:
    """``text`` wrapped to ``width`` at spaces only (never mid-word: a word longer than the line stays
    whole), the first line after ``first``, the others after ``rest`` (default: spaces as wide as
    ``first``, the hanging indent). Newlines in ``text`` start new paragraphs with the same indent."""
    hang = " " * len(first) if rest is None else rest
    out: List[str] = []
    for i, para in enumerate(text.split("\n") or [""]):
        lines = textwrap.wrap(para, width=max(width, len(hang) + 10), initial_indent=first if i == 0 else hang,
                              subsequent_indent=hang, break_long_words=False, break_on_hyphens=False)
        out.extend(lines or [(first if i == 0 else hang).rstrip()])
    return out


def shell_words(command: str) -> List[str]:
    """``command`` split at the spaces a shell splits at (not inside quotes), each word kept as written."""
    words: List[str] = []
    cur: List[str] = []
    quote = ""
    escaped = False
    for ch in command:
        if escaped:
            cur.append(ch)
            escaped = False
        elif ch == "\\" and quote != "'":
            cur.append(ch)
            escaped = True
        elif quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            cur.append(ch)
            quote = ch
        elif ch in " \t":
            if cur:
                words.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        words.append("".join(cur))
    return words


def wrap_command(command: str, width: int, first: str, rest: Optional[str] = None) -> List[str]:
    """A shell command on as many lines as it needs, broken only between words (never inside quotes),
    each broken line ending in `` \\`` so the whole still pastes and runs as one command."""
    hang = (" " * len(first) + "  ") if rest is None else rest
    words = shell_words(command)
    if not words or len(first) + len(command) <= width:
        return [first + command]
    lines: List[str] = []
    line = first + words[0]
    for w in words[1:]:
        if len(line) + 1 + len(w) + 2 <= width:  # room for the word and a trailing " \"
            line += " " + w
        else:
            lines.append(line + " \\")
            line = hang + w
    lines.append(line)
    return lines

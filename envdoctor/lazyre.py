"""Regular expressions compiled on first use.

A module's patterns used to be compiled when it was imported; a run imports far more patterns than it uses (a
probe's patterns for output it never gets, a check's for facts the machine lacks), and compiling them all cost every
``diagnose`` several milliseconds before its first probe. ``compile`` gives an object that stands for the pattern:
its first use compiles it (through ``re``'s own cache) and keeps the compiled pattern's attribute, so later uses
(``NAME.search(...)``) cost what they did. It types as ``re.Pattern``; pass ``NAME.pattern`` or the object's methods,
never the object itself, to code that checks for a compiled pattern (``re.sub(NAME, ...)``).
"""

from __future__ import annotations

import re
from typing import Any, cast


class _Pattern:
    """A pattern compiled on first use; each attribute asked of it is kept (bound methods included)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # search, match, sub, finditer, pattern... of the compiled pattern
        if name.startswith("__"):  # copy, pickle and friends: no compiled pattern for them
            raise AttributeError(name)
        value = getattr(re.compile(*self._args), name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return "lazyre.compile(%r, %r)" % self._args


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:  # noqa: A001 - as re.compile
    """``re.compile(pattern, flags)``, done on the pattern's first use."""
    return cast("re.Pattern[str]", _Pattern(pattern, flags))

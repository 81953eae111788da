"""When this run began: the clock a live run's ``--timeout`` counts from.

In the command-line process (the console script, ``python -m envdoctor``) a run's budget includes the
interpreter's start-up and envdoctor's imports, so the time is counted from the process's start
(:func:`started_by_command_line`, called by ``envdoctor.launcher.main``); elsewhere (tests, library use)
the caller counts from its call.  Imported first by the launcher, so :data:`_IMPORTED` is a moment after the
interpreter started.
"""

from __future__ import annotations

import os
import time
from typing import Optional

#: When this module was first imported: in the command-line process (the launcher imports it first), a
#: moment after the interpreter started (before click, the probes and the checks are imported).
_IMPORTED = time.monotonic()
#: When the kernel started this process (fork), on the ``time.monotonic()`` clock, once
#: ``envdoctor.launcher.main`` runs as the process's own entry point (the console script, ``python -m
#: envdoctor``); None when envdoctor is called as a library.
_FORKED: Optional[float] = None


def _fork_time() -> float:
    """When this process began, on the ``time.monotonic()`` clock: the kernel's start time of the process
    (``/proc/self/stat`` field 22, clock ticks since boot); the import of this module where that is unknown."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            stat = fh.read()
        ticks = int(stat[stat.rindex(b")") + 2:].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux, no /proc
        return _IMPORTED
    return min(time.monotonic() - age, _IMPORTED)


def process_started(timeout: float) -> Optional[float]:
    """The monotonic time from which this command-line process counts a live run's ``timeout``: its start,
    so the interpreter's start-up and envdoctor's imports are inside the budget.  A process forked long
    before envdoctor was exec'd in it (a wrapper script that set up a venv first, then ``exec envdoctor``)
    counts from the import of this module instead: what came before the interpreter may take up at most
    half the budget (at least 1.5 s, so a slow start-up on a loaded node is still counted).  None outside
    the command line (tests, library use): the caller counts from its call."""
    if _FORKED is None:
        return None
    return _FORKED if _IMPORTED - _FORKED <= max(1.5, min(5.0, timeout / 2.0)) else _IMPORTED


def started_by_command_line() -> None:
    """This process is the command line's own: count a live run's budget from the process's start."""
    global _FORKED
    _FORKED = _fork_time()

"""The ``envdoctor`` console script and ``python -m envdoctor``.

For a live ``diagnose`` (the command a fleet runs on every node) two costs that buy nothing are
skipped: the cyclic garbage collector, and the interpreter's teardown after the report is written.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional, Sequence


def live_diagnose(args: Sequence[str]) -> bool:
    """Do these arguments ask for a live ``diagnose`` or ``check`` (not a replay, not --help)?"""
    if not args or args[0] not in ("diagnose", "check"):
        return False
    return not any(a in ("-h", "--help") or a in ("--snapshot", "--report")
                   or a.startswith(("--snapshot=", "--report=")) for a in args[1:])


def main(argv: Optional[List[str]] = None) -> Any:
    """Run the command line.  ``argv`` None means: this process is ours (the console script)."""
    args = list(sys.argv[1:] if argv is None else argv)
    fast = argv is None and live_diagnose(args)
    if fast:
        # A live diagnose allocates a few MiB and exits within a second or its --timeout: the
        # cyclic garbage collector would only spend time (about 3%) walking objects that all die
        # together at exit.
        import gc

        gc.disable()
    try:
        from .cli import main as cli_main

        return cli_main(args)
    except SystemExit as exc:
        if fast:
            _exit_now(exc.code)
        raise


def _exit_now(code: Any) -> None:
    """Leave without the interpreter's teardown, which has nothing left to do after a diagnose.

    Tearing down a process that has loaded click, the probes and the checks costs 10-20 ms on a
    small VM, a tenth of the run; a live ``diagnose`` holds no file, lock or temporary directory
    at this point (its probes clean up as they go), and its output only needs flushing.
    """
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write("%s\n" % code)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more to say
            pass
    os._exit(status)

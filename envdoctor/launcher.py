"""The ``envdoctor`` console script and ``python -m envdoctor``.

Kept free of click so that, for a live ``diagnose``, the early probe worker
(:mod:`envdoctor.early`) is forked before the command line is loaded.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional


def main(argv: Optional[List[str]] = None) -> Any:
    """Run the command line.  ``argv`` None means: this process is ours (the console script)."""
    args = list(sys.argv[1:] if argv is None else argv)
    from . import early

    early.start(args)
    if argv is None and early.wants_worker(args):
        # A live diagnose allocates a few MiB and exits within a second or its --timeout: the
        # cyclic garbage collector would only spend time (about 3%) walking objects that all die
        # together at exit.
        import gc

        gc.disable()
    try:
        from .cli import main as cli_main

        return cli_main(args)
    except SystemExit as exc:
        if argv is None and early.wants_worker(args):
            early.discard()
            _exit_now(exc.code)
        raise
    finally:
        early.discard()


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

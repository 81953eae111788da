"""The ``envdoctor`` console script and ``python -m envdoctor``.

For a live ``diagnose`` (the command a fleet runs on every node) two costs that buy nothing are
skipped: the cyclic garbage collector, and the interpreter's teardown after the report is written.
"""

from __future__ import annotations

import os
import sys
from typing import Any, List, Optional, Sequence

from . import clock


def live_diagnose(args: Sequence[str]) -> bool:
    """Do these arguments ask for a live ``diagnose`` or ``check`` (not a replay, not --help)?"""
    if not args or args[0] not in ("diagnose", "check"):
        return False
    return not any(a in ("-h", "--help") or a in ("--snapshot", "--report")
                   or a.startswith(("--snapshot=", "--report=")) for a in args[1:])


def main(argv: Optional[List[str]] = None) -> Any:
    """Run the command line.  ``argv`` None means: this process is ours (the console script)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:
        clock.started_by_command_line()
    fast = argv is None and live_diagnose(args)
    if fast:
        # A live diagnose allocates a few MiB and exits within a second or its --timeout: the
        # cyclic garbage collector would only spend time (about 3%) walking objects that all die
        # together at exit.
        import gc

        gc.disable()
    try:
        from .cli import main as cli_main

        return cli_main(args, quick=fast)
    except SystemExit as exc:
        if fast:
            _exit_now(exc.code)
        raise
    except ImportError as exc:
        line = broken_install(exc)
        if line is None:
            raise
        try:
            sys.stderr.write(line + "\n")
        except (OSError, ValueError, AttributeError):  # no stderr to say it on
            pass
        if fast:
            _exit_now(EXIT_BROKEN_INSTALL)
        sys.exit(EXIT_BROKEN_INSTALL)


#: Exit status when a package envdoctor needs cannot be imported: 2, "could not run as asked" (README, Exit codes).
EXIT_BROKEN_INSTALL = 2

#: The modules envdoctor imports from its runtime dependencies (pyproject.toml), and those ``requests`` brings,
#: with the distribution that provides each.  ``pynvml`` is asked for in the NVML child only, which reports
#: its absence as a finding (``no_binding``); it is here for a command that may import it directly one day.
DEPENDENCIES = {
    "click": "click", "distro": "distro", "packaging": "packaging", "pynvml": "nvidia-ml-py",
    "requests": "requests", "tomli": "tomli", "urllib3": "urllib3", "idna": "idna", "certifi": "certifi",
    "charset_normalizer": "charset-normalizer", "chardet": "chardet",
}


def broken_install(exc: ImportError) -> Optional[str]:
    """The one line that says which package of a broken install could not be imported, and how to repair it;
    None when the failed import is none of envdoctor's nor its dependencies' (a bug, left to its traceback).

    The module is the one the import named (``No module named 'distro'``, ``cannot import name 'x' from
    'distro'``); for an ImportError raised while a dependency itself was being imported (a half-removed
    package, a missing shared library), the innermost frame of a module outside envdoctor and importlib."""
    name = exc.name or ""
    top = name.split(".")[0]
    if top not in DEPENDENCIES and top != "envdoctor":
        tb = exc.__traceback__
        while tb is not None:
            module = str(tb.tb_frame.f_globals.get("__name__") or "").split(".")[0]
            if module in DEPENDENCIES:
                top = module
            tb = tb.tb_next
    if top not in DEPENDENCIES and top != "envdoctor":
        return None
    why = " ".join(str(exc).split()) or type(exc).__name__
    pip = "%s -m pip" % (sys.executable or "python3")
    if top == "envdoctor":
        return ("envdoctor: this installation of envdoctor is incomplete (%s); repair it with: "
                "%s install --force-reinstall envdoctor" % (why, pip))
    return ("envdoctor: cannot run: the Python package %s, which envdoctor needs, cannot be imported (%s); repair "
            "the installation with: %s install --force-reinstall envdoctor (or only that package: %s install "
            "--force-reinstall %s)" % (DEPENDENCIES[top], why, pip, pip, DEPENDENCIES[top]))


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
        except (OSError, ValueError, AttributeError):  # a closed pipe (`| head`); None: started with it closed
            pass
    os._exit(status)

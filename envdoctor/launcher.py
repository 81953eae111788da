"""The ``envdoctor`` console script and ``python -m envdoctor``.

Kept free of click so that, for a live ``diagnose``, the early probe worker
(:mod:`envdoctor.early`) is forked before the command line is loaded.
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional


def main(argv: Optional[List[str]] = None) -> Any:
    args = list(sys.argv[1:] if argv is None else argv)
    from . import early

    early.start(args)
    try:
        from .cli import main as cli_main

        return cli_main(args)
    finally:
        early.discard()

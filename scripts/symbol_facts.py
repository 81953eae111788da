#!/usr/bin/env python3
"""Print the "elf" entries of machine.json for real shared objects, with their symbol facts.

A machine built by hand (tests/machines/<name>/, tests/corpus/<case>/) holds its libraries as empty markers;
the symbol lookups the probes make (does the installed framework export every symbol an extension imports?)
are answered from facts read here from the REAL objects (a wheel unpacked, a library copied from the machine):

* an object given with ``--imports``: its dynamic section and ``"imports"``, every symbol it needs from
  others (undefined in ``.dynsym``, not weak): ``[name, null]`` or ``[name, version, library the version is
  required of]``;
* a library given with ``--exports``: its dynamic section and ``"exports"``, those of the importers' symbols
  it defines: ``[name, version or null]`` (every symbol the importers need that it does not list, it does
  not define).

Usage::

    python scripts/symbol_facts.py \\
        --imports /usr/lib/python3/dist-packages/pkg/_C.so=/tmp/wheel/pkg/_C.so \\
        --exports /usr/lib/python3/dist-packages/torch/lib/libc10.so=/tmp/torch/torch/lib/libc10.so ...

Each argument is MACHINE_PATH=REAL_FILE. The output (JSON) is what machine.json's "elf" map takes for those
paths; `scripts/make_fixture.py` answers the probes' lookups from it (tests/machines/README.md).

Exit codes: 0 printed; 2 an argument or a file is unusable (the message says why).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from envdoctor.host.elf import ElfError  # noqa: E402  (the repository's own envdoctor)
from envdoctor.host.elfsym import DynamicSymbols  # noqa: E402
from envdoctor.host.live import LiveHost  # noqa: E402


class FactsError(Exception):
    """An argument or a file cannot be read; the message says why."""


def _pair(arg: str) -> Tuple[str, str]:
    machine, sep, real = arg.partition("=")
    if not sep or not machine.startswith("/") or not real:
        raise FactsError("%r: expected MACHINE_PATH=REAL_FILE (MACHINE_PATH absolute)" % arg)
    return machine, real


def _table(real: str) -> DynamicSymbols:
    try:
        with open(real, "rb") as fh:
            return DynamicSymbols(fh)
    except OSError as exc:
        raise FactsError("%s: %s" % (real, exc.strerror or exc)) from None
    except (ElfError, ValueError, IndexError) as exc:
        raise FactsError("%s: %s" % (real, exc)) from None


def _section(real: str) -> Dict[str, Any]:
    """The dynamic section as machine.json's "elf" entries hold it."""
    r = LiveHost().elf(real)
    if not r.ok:
        raise FactsError("%s: %s %s" % (real, r.error, r.message))
    out: Dict[str, Any] = {"soname": r.soname, "needed": list(r.needed), "rpath": list(r.rpath),
                           "runpath": list(r.runpath)}
    if r.verneed is not None:
        out["verneed"] = {lib: list(v) for lib, v in r.verneed.items()}
    return out


def facts(importers: List[Tuple[str, str]], providers: List[Tuple[str, str]]) -> Dict[str, Any]:
    """machine path -> its "elf" entry with "imports" (importers) or "exports" (providers)."""
    out: Dict[str, Any] = {}
    wanted: Set[str] = set()
    for machine, real in importers:
        entry = _section(real)
        imports: List[List[Optional[str]]] = []
        for name, ver, lib, weak in _table(real).imports():
            if weak:
                continue  # a weak import left unbound is no error
            imports.append([name, None] if ver is None else [name, ver, lib])
            wanted.add(name)
        entry["imports"] = imports
        out[machine] = entry
    for machine, real in providers:
        entry = dict(out.get(machine) or _section(real))
        tab = _table(real)
        exports: List[List[Optional[str]]] = []
        for name in sorted(wanted):
            for ver in tab.defines(name) or []:
                ver = ver.lstrip("!")
                exports.append([name, ver or None])
        entry["exports"] = exports
        out[machine] = entry
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--imports", action="append", default=[], metavar="MACHINE_PATH=REAL_FILE",
                    help="an object whose imports are recorded (an extension module)")
    ap.add_argument("--exports", action="append", default=[], metavar="MACHINE_PATH=REAL_FILE",
                    help="a library it is loaded with, whose exports of those symbols are recorded")
    args = ap.parse_args(argv)
    try:
        doc = facts([_pair(a) for a in args.imports], [_pair(a) for a in args.exports])
    except FactsError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

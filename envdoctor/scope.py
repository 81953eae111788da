"""What ``diagnose --only/--skip`` examines: the probes and checks that the chosen report layers depend on.

A layer's verdict needs the probes whose facts the layer shows, the checks whose findings are shown under it
(``layers=`` of :func:`~envdoctor.checks.check`) with those they yield to (``yields=``), and the probes behind
every fact those checks need or look at (``requires=`` and ``reads=``), with the probes those wait for
(``needs=`` of :func:`~envdoctor.probes.register`). Findings of the chosen layers are then exactly those of a
full run (``tests/test_scope.py`` holds every captured machine to that), except that the envdoctor layer speaks
only of the probes and checks that ran.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, List, NamedTuple, Sequence, Set, Tuple

if TYPE_CHECKING:
    from .checks import CheckSpec
    from .probes import ProbeSpec

#: Facts the report itself reads after the checks: every pip command in a fix is aimed at the inspected
#: interpreter (:func:`envdoctor.findings.pin_interpreter`).
REPORT_READS = ("python.executable",)


class Scope(NamedTuple):
    layers: Tuple[str, ...]  # the report layers examined, in report order
    probes: Tuple[str, ...]  # the probes to run, in report order
    checks: Tuple[CheckSpec, ...]  # the checks to run
    #: ``diagnose --check``: the checks whose findings are reported (the others ran only to be yielded to)
    keep: Tuple[str, ...] = ()


def chosen(only: Sequence[str] = (), skip: Sequence[str] = ()) -> List[str]:
    """The layers that ``--only``/``--skip`` leave, in report order."""
    from .layers import LAYER_NAMES

    return [n for n in LAYER_NAMES if (not only or n in only) and n not in skip]


def is_whole(layers: Sequence[str]) -> bool:
    from .layers import LAYER_NAMES

    return set(LAYER_NAMES) <= set(layers)


def plan(layers: Sequence[str]) -> Scope:
    """The probes and checks that ``layers`` (``--only`` names) depend on."""
    from .checks import all_checks
    from .layers import LAYER_NAMES

    wanted = [n for n in LAYER_NAMES if n in layers]
    return _plan(wanted, [c for c in all_checks() if c.layers is None or set(c.layers) & set(wanted)], True)


def plan_checks(names: Sequence[str]) -> Scope:
    """The probes that the checks ``names`` (``diagnose --check``) depend on, and the layers their findings are
    shown under (and envdoctor's own, which says what was not gathered). KeyError names an unknown check."""
    from .checks import find_check
    from .layers import LAYER_NAMES

    specs = []
    for name in names:
        spec = find_check(name)
        if spec is None:
            raise KeyError(name)
        specs.append(spec)
    shown = {layer for s in specs for layer in (s.layers or LAYER_NAMES)} | {"envdoctor"}
    scope = _plan([n for n in LAYER_NAMES if n in shown], specs, False)
    return scope._replace(keep=tuple(s.name for s in specs))


def _plan(wanted: List[str], chosen: List[CheckSpec], layer_probes: bool) -> Scope:
    """The scope of ``chosen`` checks (and, with ``layer_probes``, every probe of the ``wanted`` layers), kept
    while the same checks and probes are registered: it depends on nothing else."""
    from .checks import memo
    from .probes import all_probes

    specs = all_probes()
    known = memo()
    key = ("scope", tuple(wanted), tuple(c.name for c in chosen), layer_probes)
    kept = known.get(key)
    if kept is None or len(kept[0]) != len(specs) or not all(map(operator.is_, kept[0], specs)):
        kept = known[key] = (tuple(specs), _plan_of(wanted, chosen, layer_probes, specs))
    return kept[1]


def _plan_of(wanted: List[str], chosen: List[CheckSpec], layer_probes: bool, specs: List[ProbeSpec]) -> Scope:
    from .checks import yielded_to
    from .layers import row_of_probe
    from .probes import probes_reading, with_needs

    every = [s.name for s in specs]
    names: Set[str] = {s.name for s in specs if row_of_probe(s.name) in wanted} if layer_probes else set()
    # with the checks they yield to: a finding is dropped when theirs tells its root cause, as in a whole run; the
    # probes behind a key are those of every probe (specs), kept by producers_of from one run to the next
    checks = tuple(yielded_to(chosen))
    for c in checks:
        if c.requires is None or c.reads is None:
            names.update(every)  # undeclared: it may look at anything
            continue
        for key in c.requires + c.reads:
            names.update(probes_reading(key))
    if checks:
        for key in REPORT_READS:
            names.update(probes_reading(key))
    return Scope(tuple(wanted), tuple(with_needs(names, specs)), checks)

"""``install``'s pre-flight: the checks' own units judge the machine as it would be after the plan.

A recipe says what its plan adds to the machine (:attr:`envdoctor.install.plan.Plan.provides`: the toolkit whose
nvcc will be on PATH, the driver it installs first...). The "facts after the plan" are the machine's facts with
those over them (:func:`after_plan`); the checks that judge them are chosen from the check registry by the facts
they name (:func:`checks_for`: a provided key in a check's ``requires=``, or named in its ``reads=`` by more than
its whole area, ``cuda.*``), and run, through the same runner as ``diagnose`` (:func:`envdoctor.checks.run_checks`,
with the checks they yield to whose facts the plan provides: :func:`run_for`), on the facts before and after the
plan. What the plan brings is what is found after it
and not before (a finding the machine already has, the same code and title, is not the plan's doing, and
installing may be its fix): an
error refuses the plan (exit 2, as every refusal), with the finding's code and title as ``diagnose`` would show
them once the plan ran; a warning is added to the plan's notes.
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from .checks import CheckContext, CheckSpec, all_checks, memo, run_checks, yielded_to
from .checks.suggest import INSTALL_LINE_READS
from .facts import Fact, Facts
from .findings import Finding

#: Where a fact after the plan comes from (its ``source``): not read from the machine, planned.
SOURCE = "plan"


def _covers(entry: str, key: str) -> bool:
    """Whether a ``requires=``/``reads=`` entry (``*`` or ``N`` for any one part) names the fact ``key``."""
    want, have = entry.split("."), key.split(".")
    return len(want) == len(have) and all(w in ("*", "N") or w == h for w, h in zip(want, have))


def _judges(spec: CheckSpec, keys: Iterable[str]) -> bool:
    """Whether ``spec`` judges one of the facts ``keys``: a key it requires, or one its ``reads=`` names by more
    than its whole area (``cuda.*``, ``*``) and not only for the install line of a fix."""
    named = tuple(spec.requires or ()) + tuple(
        r for r in (spec.reads or ()) if r != "*" and r not in INSTALL_LINE_READS
        and not (r.count(".") == 1 and r.endswith(".*")))
    return any(_covers(entry, key) for entry in named for key in keys)


def checks_for(keys: Iterable[str]) -> List[CheckSpec]:
    """The checks that judge the facts ``keys`` (a plan's :attr:`provides`), in the order they run."""
    wanted = tuple(keys)
    known = memo()
    names = known.get(("checks_for", wanted))
    if names is None:
        names = known[("checks_for", wanted)] = frozenset(
            spec.name for spec in all_checks() if _judges(spec, wanted))
    return [spec for spec in all_checks() if spec.name in names]


def _may_change(spec: CheckSpec, keys: Sequence[str]) -> bool:
    """Whether what ``spec`` says may differ after a plan that provides the facts ``keys``: it requires or reads
    one of them, by any name (``driver.*`` and ``*`` too)."""
    if spec.requires is None or spec.reads is None:
        return True
    return any(entry == "*" or _covers(entry, key) for entry in spec.requires + spec.reads for key in keys)


def run_for(keys: Iterable[str]) -> List[CheckSpec]:
    """The checks a plan that provides the facts ``keys`` runs, in the order they run: :func:`checks_for` ``keys``,
    and the checks they yield to (and theirs) whose findings the plan may change (:func:`_may_change`). One whose
    facts the plan leaves alone says the same before and after it: the subject is not probed for it (a plan of
    NCCL's libraries does not read every program's GPU code for the driver checks NCCL's check yields to)."""
    wanted = list(keys)
    specs = checks_for(wanted)
    mine = {s.name for s in specs}
    return [s for s in yielded_to(specs) if s.name in mine or _may_change(s, wanted)]


def probes_for(keys: Iterable[str]) -> List[str]:
    """The probes whose facts the checks :func:`run_for` ``keys`` require or read, with those they wait for: what
    the subject must have probed for the pre-flight to judge as ``diagnose`` would."""
    from .probes import all_probes, probes_reading, with_needs

    wanted = tuple(keys)
    specs = all_probes()
    known = memo()
    had = known.get(("probes_for", wanted))
    if had is not None and len(had[0]) == len(specs) and all(map(operator.is_, had[0], specs)):
        return list(had[1])
    names: Set[str] = set()
    for check in run_for(wanted):
        if check.requires is None or check.reads is None:
            names.update(s.name for s in specs)
            continue
        for entry in check.requires + check.reads:
            names.update(probes_reading(entry))
    found = with_needs(names, specs)
    known[("probes_for", wanted)] = (tuple(specs), tuple(found))
    return found


def _stale(key: str, provides: Dict[str, Any]) -> bool:
    """Whether the machine's fact ``key`` describes what a plan that ``provides`` these facts replaces. A new CUDA
    toolkit's nvcc runs the gcc on PATH: the machine's nvcc's own host compiler (``compiler.nvcc_gcc``, from its
    nvcc.profile) is not the new one's. A planned driver ends the machine's "no driver". A framework build
    planned (``framework.<name>``) replaces the installed one: what was read of that one (its facts under its key,
    its libraries' ``linkage.<name>``) is not the new build's."""
    if key == "compiler.nvcc_gcc":
        return "cuda.nvcc" in provides
    if key == "driver.installed":
        # a plan that installs a driver (``driver.version``) ends "no driver is installed"; the module and the rest
        # of the driver's health are what the install and the reboot after it make, not planned facts
        return "driver.version" in provides
    parts = key.split(".")
    if len(parts) > 2 and parts[0] == "framework" or len(parts) > 1 and parts[0] == "linkage":
        return "framework." + parts[1] in provides and key not in provides
    return False


def after_plan(facts: Facts, provides: Dict[str, Any]) -> Facts:
    """The facts after a plan: ``facts`` with each provided one over the machine's (a list adds its entries to
    the machine's list of that fact), without those that describe what the plan replaces (:func:`_stale`)."""
    out = Facts(f for f in facts if not _stale(f.key, provides))
    for key, value in provides.items():
        before = facts.get(key)
        if isinstance(value, list) and before is not None and before.known and isinstance(before.value, list):
            value = list(before.value) + [v for v in value if v not in before.value]
        label = before.label if before is not None else ""
        out.add(Fact(key, value, SOURCE, label=label))
    return out


class Verdict(NamedTuple):
    """What a plan brings, as the checks judge the facts after it."""

    errors: List[Finding]  # refuse the plan
    warnings: List[Finding]  # said in the plan's notes


def _said(findings: Sequence[Finding]) -> Set[Tuple[str, str]]:
    return {(f.code, f.title) for f in findings}


def judge(facts: Optional[Facts], provides: Dict[str, Any], probes: Sequence[Any] = (),
          before: Optional[Dict[Tuple[str, ...], Set[Tuple[str, str]]]] = None) -> Verdict:
    """The findings a plan that ``provides`` these facts brings to a machine of ``facts`` (its probe records
    ``probes``: a check whose required facts' probe did not finish is skipped, as ``diagnose`` skips it).
    ``before``: what the checks said of the machine as it is, kept by the checks run (several plans judged on
    one machine: :func:`build_judge`)."""
    if facts is None or not provides or not len(facts):
        return Verdict([], [])
    specs = checks_for(provides)
    if not specs:
        return Verdict([], [])
    run = run_for(provides)
    keep = [s.name for s in specs]
    ran = tuple(s.name for s in run) + ("|",) + tuple(keep)
    had = before.get(ran) if before is not None else None
    if had is None:
        had = _said(run_checks(CheckContext(facts, list(probes)), run, keep=keep))
        if before is not None:
            before[ran] = had
    after = run_checks(CheckContext(after_plan(facts, provides), list(probes)), run, keep=keep)
    new = [f for f in after if (f.code, f.title) not in had and not f.code.startswith("envdoctor.")]
    return Verdict([f for f in new if f.severity == "error"], [f for f in new if f.severity == "warning"])


def build_probes() -> List[str]:
    """The probes :func:`build_judge` needs the machine's facts from (:func:`probes_for` the facts a plan of every
    framework ``install`` installs provides)."""
    from . import frameworks
    from .recipes.framework import provides_keys

    return probes_for([key for name in frameworks.RECIPES.values() for key in provides_keys(name)])


def build_judge(facts: Optional[Facts], probes: Sequence[Any] = ()) -> Callable[[str, Any], List[str]]:
    """The pre-flight as a judge of advise's candidate builds (:data:`envdoctor.advise.Accept`): for a build of a
    framework ``install`` installs, the errors the checks would report after installing it on the machine of
    ``facts`` (:func:`judge` of the facts the framework's recipe provides for it; on a machine with no driver, but
    those about the driver), each a reason it is refused; none for the others (no plan of theirs is judged).
    ``advise`` and ``install`` pass it to :func:`envdoctor.advise.choose_build`, so that what advise recommends,
    install accepts."""
    from . import frameworks
    from .recipes.framework import build_provides

    installed = set(frameworks.RECIPES.values())
    before: Dict[Tuple[str, ...], Set[Tuple[str, str]]] = {}
    # A machine without a driver: advise answers for the driver to come (it says the driver was not judged), and
    # install names the ways to bring it (--with-driver, or the driver first): its driver findings choose nothing.
    driverless = facts is not None and not facts.text("driver.version")

    def accept(name: str, candidate: Any) -> List[str]:
        if name not in installed:
            return []
        errors = judge(facts, build_provides(name, candidate), probes, before).errors
        return [f"install refuses it: `envdoctor diagnose` would then report {f.code} ({f.title})" for f in errors
                if not (driverless and "driver" in f.components)]

    return accept


def refusal(title: str, errors: Sequence[Finding]) -> str:
    """The refusal of the plan ``title`` (``install CUDA 12.4.1 (repo) on ...``): each error ``diagnose`` would
    report after it, with its code and title (as ``diagnose`` shows them) and its fix."""
    lines = [f"refusing to {title}: after it, `envdoctor diagnose` would report"]
    for f in errors:
        lines.append(f"  ERROR {f.code}: {f.title}")
        if f.fix is not None and f.fix.text:
            lines.append(f"    fix: {f.fix.text}")
    return "\n".join(lines)


def notes(warnings: Sequence[Finding]) -> List[str]:
    """The plan's notes for the warnings it brings."""
    return [f"After this, `envdoctor diagnose` would warn: {f.code}: {f.title}" for f in warnings]


def check(plan: Any, facts: Optional[Facts], probes: Sequence[Any] = (), module: Any = None) -> None:
    """Judge the machine as it would be after ``plan`` (:func:`judge`): RecipeError (``install`` exits 2) naming
    each error ``diagnose`` would then report, with the recipe ``module``'s ``alternatives`` when the driver is the
    cause; the warnings are added to the plan's notes."""
    from .recipes import RecipeError

    verdict = judge(facts, plan.provides, probes)
    if verdict.errors:
        alts: List[str] = []
        hook = getattr(module, "alternatives", None)
        if hook is not None and any("driver" in f.components for f in verdict.errors):
            alts = hook(plan.version, facts, installs_driver=plan.method in ("repo", "runfile"))
        raise RecipeError(refusal(plan.title, verdict.errors), alts)
    plan.notes.extend(notes(verdict.warnings))

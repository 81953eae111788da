"""Checks: small named, pure functions of the facts returning findings.

A check is registered with :func:`check` and receives a :class:`CheckContext`
(the facts, the probe results, the matrix).  It returns zero or more
:class:`~envdoctor.findings.Finding`.  A check that raises is contained: it
becomes an ``envdoctor.check_crashed`` finding asking the user to report it
(a warning: it never lowers the exit code the other checks' errors produce).
One registered check asks one question, so a crash costs that question's
verdict only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..facts import Facts
from ..findings import Finding, Fix, sort_key

if TYPE_CHECKING:
    from ..probes import ProbeResult

CheckFn = Callable[["CheckContext"], Iterable[Finding]]


class CodeDoc(NamedTuple):
    """Documentation of one finding code, served by ``envdoctor explain CODE``."""

    code: str
    severity: str  # the usual severity (a finding may be milder in context)
    summary: str  # one line: what it means
    looks_at: str  # which facts the check reads
    why: str  # why it matters to the user
    source: str = ""  # where the rule comes from (vendor table URL), when it is a matrix rule


class CheckSpec(NamedTuple):
    name: str
    fn: CheckFn
    codes: Sequence[CodeDoc]  # the finding codes this check may emit
    #: The facts it cannot judge without (keys; ``N`` for a GPU's index, ``*`` for any one part, e.g.
    #: ``framework.*``). ``()``: it judges whatever is there (a check about missing facts). None: undeclared.
    requires: Optional[Tuple[str, ...]] = None
    #: The other facts it looks at when they are there (its verdict or wording may change with them): keys or
    #: patterns as in ``requires`` (``gpu.*.*``: any per-GPU fact), or ``*`` (every fact). ``diagnose --only``
    #: runs the probes behind ``requires`` and ``reads``. None: undeclared (every fact).
    reads: Optional[Tuple[str, ...]] = None
    #: The report layers (``diagnose --only`` names) its findings are shown under. None: undeclared (any).
    layers: Optional[Tuple[str, ...]] = None


_REGISTRY: Dict[str, CheckSpec] = {}

#: Modules that define checks.
CHECK_MODULES = (
    "envdoctor.checks.meta",
    "envdoctor.checks.environment",
    "envdoctor.checks.jax",
    "envdoctor.checks.frameworks",
    "envdoctor.checks.driver_health",
    "envdoctor.checks.compat",
    "envdoctor.checks.libraries",
    "envdoctor.checks.requires",
    "envdoctor.checks.closure",
    "envdoctor.checks.containers",
    "envdoctor.checks.hardware",
    "envdoctor.checks.topology",
    "envdoctor.checks.gpu_verdict",
    "envdoctor.checks.tools",
    "envdoctor.checks.driver_branch",
    "envdoctor.checks.kernel_log",
    "envdoctor.checks.driver_support",
    "envdoctor.checks.driven",
)


def check(name: str, codes: Sequence[CodeDoc], requires: Optional[Sequence[str]] = None,
          reads: Optional[Sequence[str]] = None,
          layers: Optional[Sequence[str]] = None) -> Callable[[CheckFn], CheckFn]:
    """Register ``fn`` as the check ``name``. ``requires`` names the facts it needs: when the probe behind one
    of them did not finish (crashed, timed out) or did not run, the runner skips the check and the report says
    which verdicts are missing, instead of the check passing on an empty layer. ``reads`` names the other facts
    it looks at and ``layers`` the report layers of its findings (see :class:`CheckSpec`): with them
    ``diagnose --only`` examines just what the chosen layers' verdicts depend on."""
    def deco(fn: CheckFn) -> CheckFn:
        _REGISTRY[name] = CheckSpec(name, fn, tuple(codes), None if requires is None else tuple(requires),
                                    None if reads is None else tuple(reads), None if layers is None else tuple(layers))
        return fn

    return deco


def docs_for(docs: Sequence[CodeDoc], *codes: str) -> Tuple[CodeDoc, ...]:
    """The entries of ``docs`` for ``codes`` (a check declares only the codes its own question emits)."""
    wanted = set(codes)
    picked = tuple(d for d in docs if d.code in wanted)
    missing = wanted - {d.code for d in picked}
    if missing:
        raise KeyError("undocumented finding codes: %s" % ", ".join(sorted(missing)))
    return picked


def quietly(question: Callable[..., Iterable[Finding]], *args: Any) -> List[Finding]:
    """What another check's ``question`` concludes, for a check whose verdict depends on it (one root cause,
    one finding).  A crash there is that check's own, reported by it: here it counts as no finding."""
    try:
        return list(question(*args))
    except Exception:  # noqa: BLE001 - reported by the check that owns the question
        return []


def group(prefix: str) -> CheckFn:
    """All the checks named ``prefix`` or ``prefix.*``, as one function (in the order they were registered),
    for callers that want one area's verdicts at once; nothing is contained here (``run_checks`` does that)."""
    def run(ctx: CheckContext) -> List[Finding]:
        out: List[Finding] = []
        for spec in list(_REGISTRY.values()):
            if spec.name == prefix or spec.name.startswith(prefix + "."):
                out.extend(spec.fn(ctx))
        return out
    return run


def code_docs() -> Dict[str, CodeDoc]:
    """Every documented finding code, from every check."""
    out: Dict[str, CodeDoc] = {}
    for spec in all_checks():
        for doc in spec.codes:
            out[doc.code] = doc
    out.setdefault("envdoctor.checks_skipped", CodeDoc(
        "envdoctor.checks_skipped", "info", "Some checks were skipped: the facts they need were not gathered.",
        "which probes ran", "Their verdicts are missing from this report: it cannot say those parts are fine."))
    out.setdefault("envdoctor.check_crashed", CodeDoc(
        "envdoctor.check_crashed", "warning", "One of envdoctor's checks raised an exception.",
        "envdoctor itself", "The other checks still ran; this one's verdict is missing. Please report it."))
    return out


def all_checks() -> List[CheckSpec]:
    for mod in CHECK_MODULES:
        importlib.import_module(mod)
    return sorted(_REGISTRY.values(), key=lambda s: s.name)


class CheckContext:
    def __init__(self, facts: Facts, probes: Sequence[ProbeResult]) -> None:
        self.facts = facts
        self.probes = probes
        #: probe name -> the finding codes of the checks skipped because that probe did not finish
        #: (filled by :func:`run_checks` before any check runs; ``probe-health`` names them)
        self.skipped: Dict[str, List[str]] = {}


def blocked_by(spec: CheckSpec, probes: Sequence[ProbeResult]) -> List[str]:
    """The probes behind ``spec``'s required facts that did not finish (crashed, timed out) or did not run,
    in ``probes`` (the run's probe records). Facts handed in without probe records (``probes`` empty: a test,
    a saved report's facts) are taken as they are."""
    if not probes or not spec.requires:
        return []
    from ..probes import producer_of

    status = {p.name: p.status for p in probes}
    out: List[str] = []
    for key in spec.requires:
        name = producer_of(key)
        if name is not None and status.get(name) != "ok" and name not in out:
            out.append(name)
    return out


def run_checks(ctx: CheckContext, specs: Optional[Sequence[CheckSpec]] = None) -> List[Finding]:
    """The findings of every check (or of ``specs`` only: ``diagnose --only``), sorted worst first."""
    findings: List[Finding] = []
    runnable: List[CheckSpec] = []
    not_run: Dict[str, List[str]] = {}
    ran = {p.name for p in ctx.probes}
    for spec in all_checks() if specs is None else specs:
        blocked = blocked_by(spec, ctx.probes)
        if not blocked:
            runnable.append(spec)
            continue
        for name in blocked:
            target = ctx.skipped if name in ran else not_run
            codes = target.setdefault(name, [])
            codes.extend(d.code for d in spec.codes if d.code not in codes)
    for name, codes in sorted(not_run.items()):  # a probe left out of this run: no probe-health entry says so
        findings.append(Finding(
            code="envdoctor.checks_skipped", severity="info", components=["envdoctor"],
            title="Not checked: the %s facts were not gathered in this run" % name,
            detail="The checks that need them were skipped%s." % (
                (" (" + ", ".join(codes) + ")") if codes else "")))
    for spec in runnable:
        try:
            for finding in spec.fn(ctx):  # what a check said before it raised still counts
                findings.append(finding)
        except Exception as exc:  # noqa: BLE001 - contained, reported as a finding
            findings.append(Finding(
                code="envdoctor.check_crashed", severity="warning", components=["envdoctor"],
                title="envdoctor's check %r crashed: %s: %s" % (spec.name, type(exc).__name__, exc),
                detail="This is a bug in envdoctor, not in your machine; the other checks still ran.",
                fix=Fix(text="Please report it with a snapshot attached: "
                             "`envdoctor snapshot -o snap.json --redact-ids`."),
            ))
    from .driven import settle

    findings = settle(findings, ctx.facts)  # a GPU the driver does not drive is never "Works"
    findings.sort(key=sort_key)
    return findings

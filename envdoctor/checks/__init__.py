"""Checks: small named, pure functions of the facts returning findings.

A check is registered with :func:`check` and receives a :class:`CheckContext`
(the facts, the probe results, the matrix).  It returns zero or more
:class:`~envdoctor.findings.Finding`.  A check that raises is contained: it
becomes an ``envdoctor.check_crashed`` finding asking the user to report it
(a warning: it never lowers the exit code the other checks' errors produce).
One registered check asks one question, so a crash costs that question's
verdict only.

Every module of this package is found and imported (:func:`discover`): a new check is a function with
:func:`check` in a module here, nothing else.  Checks run in the order of the stack, and when two say the
same thing from two sides, the one that ``yields`` is dropped (one root cause, one finding): no check runs
another to find out.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import operator
import pkgutil
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..facts import Facts
from ..findings import Finding, Fix, sort_key

if TYPE_CHECKING:
    from ..probes import ProbeResult

CheckFn = Callable[["CheckContext"], Iterable[Finding]]


class Message(NamedTuple):
    """An error message users meet (printed by a library, a framework, a tool or the kernel) that a finding code
    explains: what ``envdoctor explain`` lists with the code and what the MCP server's ``triage`` matches a pasted
    error against."""

    #: The message as the program prints it; ``*`` stands for a part that varies (a version, a path, a name).
    text: str
    #: Where the text comes from: the vendor's documentation or source that prints it.
    source: str


class CodeDoc(NamedTuple):
    """Documentation of one finding code, served by ``envdoctor explain CODE``."""

    code: str
    severity: str  # the usual severity (a finding may be milder in context)
    summary: str  # one line: what it means
    looks_at: str  # which facts the check reads
    why: str  # why it matters to the user
    source: str = ""  # where the rule comes from (vendor table URL), when it is a matrix rule
    #: Error messages this code can be the cause of (see :class:`Message`).
    messages: Tuple[Message, ...] = ()

    def to_dict(self) -> Dict[str, Any]:
        """``envdoctor explain --format json`` (``envdoctor/schemas/explain.schema.json``)."""
        out: Dict[str, Any] = {k: v for k, v in self._asdict().items() if k != "messages"}
        out["messages"] = [m._asdict() for m in self.messages]
        return out


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
    #: One root cause, one finding: (a code of this check, or ``*`` for any, what it yields to). A finding of this
    #: check is dropped when another check found one of those (see :func:`yields_match`, :func:`run_checks`).
    yields: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    #: Where it was declared: (module, place in that module), for an order that does not depend on imports.
    origin: Tuple[str, int] = ("", 0)

    def yields_to(self, code: str) -> Tuple[str, ...]:
        """The codes a finding ``code`` of this check yields to."""
        return tuple(t for mine, targets in self.yields if mine in (code, "*") for t in targets)


_REGISTRY: Dict[str, CheckSpec] = {}
_DECLARED: Dict[str, int] = {}  # module -> checks declared in it so far


def check(name: str, codes: Sequence[CodeDoc], requires: Optional[Sequence[str]] = None,
          reads: Optional[Sequence[str]] = None, layers: Optional[Sequence[str]] = None,
          yields: Optional[Dict[str, Sequence[str]]] = None,
          each: Optional[Sequence[str]] = None) -> Callable[[Callable[..., Iterable[Finding]]], Any]:
    """Register the decorated function as the check ``name``: the one way a check is declared.

    ``codes`` documents every finding code it may emit (``tests/test_check_units.py`` fails on one emitted
    undeclared). ``requires`` names the facts it needs: when the probe behind one of them did not finish
    (crashed, timed out) or did not run, the runner skips the check and the report says which verdicts are
    missing, instead of the check passing on an empty layer. ``reads`` names the other facts it looks at and
    ``layers`` the report layers of its findings (see :class:`CheckSpec`): with them ``diagnose --only``
    examines just what the chosen layers' verdicts depend on. ``yields`` maps a code of this check (``*``:
    any) to what tells the same root cause: other checks' codes (``driver.library_mismatch``), or a check's
    findings (``kernel-log:*``), either at a lowest severity (``>=error``); when one of those is found, this
    check's finding is dropped. ``each``: one check per item (``name``, ``requires`` and ``reads`` hold ``{}`` for it;
    the function takes the item as ``item=``), so that a crash on one item hides no other's verdict."""
    if not codes:
        raise TypeError("check %r declares no finding codes" % name)
    declared = tuple(sorted((code, tuple(targets)) for code, targets in (yields or {}).items()))

    def deco(fn: Callable[..., Iterable[Finding]]) -> Any:
        module = getattr(fn, "__module__", "") or ""
        for item in each if each is not None else (None,):
            run: CheckFn = fn if item is None else functools.partial(fn, item=item)
            full = name if item is None else name.format(item)
            place = _DECLARED.get(module, 0)
            _DECLARED[module] = place + 1
            _REGISTRY[full] = CheckSpec(full, run, tuple(codes), _each(requires, item), _each(reads, item),
                                        None if layers is None else tuple(layers), declared, (module, place))
        return fn

    return deco


_SEVERITIES = ("info", "warning", "error")


def _target(target: str) -> Tuple[str, str, str]:
    """(check glob, code glob, lowest severity) of a ``yields`` target: ``CODE`` or ``CHECK:CODE``, either with
    ``>=warning`` or ``>=error`` (``driver.library_mismatch``, ``kernel-log:*>=error``)."""
    target, _, least = target.partition(">=")
    check_glob, _, code = target.rpartition(":")
    return check_glob or "*", code or "*", least or "info"


def yields_match(target: str, check_name: str, finding: Finding) -> bool:
    """Whether ``finding``, said by the check ``check_name``, is one a ``yields`` target names."""
    check_glob, code, least = _target(target)
    return (fnmatch.fnmatchcase(check_name, check_glob) and fnmatch.fnmatchcase(finding.code, code)
            and _SEVERITIES.index(finding.severity) >= _SEVERITIES.index(least))


def may_say(target: str, spec: CheckSpec) -> bool:
    """Whether the check ``spec`` can say a finding the ``yields`` target names (by its name and declared codes)."""
    check_glob, code, _ = _target(target)
    return fnmatch.fnmatchcase(spec.name, check_glob) and any(fnmatch.fnmatchcase(d.code, code) for d in spec.codes)


def _each(keys: Optional[Sequence[str]], item: Optional[str]) -> Optional[Tuple[str, ...]]:
    if keys is None:
        return None
    return tuple(k.format(item) if item is not None and "{}" in k else k for k in keys)


def docs_for(docs: Sequence[CodeDoc], *codes: str) -> Tuple[CodeDoc, ...]:
    """The entries of ``docs`` for ``codes`` (a check declares only the codes its own question emits)."""
    wanted = set(codes)
    picked = tuple(d for d in docs if d.code in wanted)
    missing = wanted - {d.code for d in picked}
    if missing:
        raise KeyError("undocumented finding codes: %s" % ", ".join(sorted(missing)))
    return picked


class Conclusion:
    """What one check concludes from the facts, worked out once per run (:meth:`envdoctor.facts.Facts.derived`)
    and read both by the check that owns it (its findings) and by the checks that must know what it explains
    (which GPUs the kernel log or the installed module account for): no check runs another, both read one
    conclusion. The owner calls it (a failure raises there, reported as that check's crash); a reader calls
    :meth:`read`, for which a conclusion that could not be worked out explains nothing."""

    def __init__(self, name: str, work: Callable[[Facts], Iterable[Finding]]) -> None:
        self.name = name
        self.work = work

    def _worked_out(self, facts: Facts) -> Tuple[Optional[List[Finding]], Optional[BaseException]]:
        def work(f: Facts) -> Tuple[Optional[List[Finding]], Optional[BaseException]]:
            try:
                return list(self.work(f)), None
            except Exception as exc:  # noqa: BLE001 - kept, and raised again for the owner
                return None, exc

        out: Tuple[Optional[List[Finding]], Optional[BaseException]] = facts.derived("conclusion:" + self.name, work)
        return out

    def __call__(self, facts: Facts) -> List[Finding]:
        found, failure = self._worked_out(facts)
        if failure is not None:
            raise failure
        return list(found or [])

    def read(self, facts: Facts) -> List[Finding]:
        return list(self._worked_out(facts)[0] or [])


def group(prefix: str) -> CheckFn:
    """All the checks named ``prefix`` or ``prefix.*``, as one function (in the order they run, each finding
    yielding as in a whole run), for callers that want one area's verdicts at once; a crash is not contained
    here (``run_checks`` does that)."""
    def run(ctx: CheckContext) -> List[Finding]:
        specs = [s for s in all_checks() if s.name == prefix or s.name.startswith(prefix + ".")]
        said = findings_by_check(ctx, specs, contain=False)
        return [f for spec in specs for f in said.get(spec.name, [])]
    return run


def code_docs() -> Dict[str, CodeDoc]:
    """Every documented finding code, from every check. A code several checks may emit (``gpu.lost``: NVML's
    answer, the kernel log) keeps the last check's text and every check's error messages."""
    out: Dict[str, CodeDoc] = {}
    for spec in all_checks():
        for doc in spec.codes:
            before = out.get(doc.code)
            if before is not None and before.messages:
                doc = doc._replace(messages=before.messages + tuple(m for m in doc.messages
                                                                    if m not in before.messages))
            out[doc.code] = doc
    out.setdefault("envdoctor.checks_skipped", CodeDoc(
        "envdoctor.checks_skipped", "info", "Some checks were skipped: the facts they need were not gathered.",
        "which probes ran", "Their verdicts are missing from this report: it cannot say those parts are fine."))
    out.setdefault("envdoctor.check_crashed", CodeDoc(
        "envdoctor.check_crashed", "warning", "One of envdoctor's checks raised an exception.",
        "envdoctor itself", "The other checks still ran; this one's verdict is missing. Please report it."))
    return out


_FOUND: Dict[Tuple[str, ...], Tuple[str, ...]] = {}
#: The package paths whose modules are all imported (every check of them registered).
_IMPORTED: Set[Tuple[str, ...]] = set()


def discover() -> None:
    """Import every module of this package and of its sub-packages: a module that declares checks is found
    where it lies, with no list to keep. Once per process for the package's path (the checks of a module register
    when it is imported; a path with a folder added is walked again)."""
    key = tuple(__path__)
    if key in _IMPORTED:
        return
    names = _FOUND.get(key)
    if names is None:
        names = _FOUND[key] = tuple(info.name for info in pkgutil.walk_packages(__path__, __name__ + "."))
    for name in names:
        importlib.import_module(name)
    _IMPORTED.add(key)


#: Answers that depend on nothing but the registered checks (their order, what a set of them yields to, which of
#: them judge some facts), kept while the registry holds the very same checks (:func:`memo`).
_MEMO: Dict[Any, Any] = {}
_MEMO_OF: List[Any] = [None, ()]  # the registry and its checks the answers in _MEMO are of


def memo() -> Dict[Any, Any]:
    """A store for answers computed from the registered checks alone (one run asks the same ones hundreds of
    times), emptied when the registry changes: a check registered, or one swapped in or out (a test's
    monkeypatch, which bypasses :func:`check`)."""
    discover()
    specs = tuple(_REGISTRY.values())
    registry, had = _MEMO_OF
    if registry is not _REGISTRY or len(had) != len(specs) or not all(map(operator.is_, had, specs)):
        _MEMO.clear()
        _MEMO_OF[:] = [_REGISTRY, specs]
    return _MEMO


def clear_memo() -> None:
    """Forget every answer :func:`memo` holds and what :func:`discover` imported (tests)."""
    _MEMO.clear()
    _MEMO_OF[:] = [None, ()]
    _IMPORTED.clear()


def _stack_rank(spec: CheckSpec) -> int:
    from ..layers import LAYER_NAMES

    layer = spec.layers[0] if spec.layers else "envdoctor"
    return LAYER_NAMES.index(layer) if layer in LAYER_NAMES else len(LAYER_NAMES)


def all_checks() -> List[CheckSpec]:
    """Every check, in the order of the stack (the first layer its findings are shown under, bottom up: OS,
    CPU, driver, GPU, CUDA, libraries ... envdoctor itself), then where it was declared."""
    known = memo()
    ordered = known.get("all_checks")
    if ordered is None:
        ordered = known["all_checks"] = tuple(sorted(_REGISTRY.values(), key=lambda s: (_stack_rank(s), s.origin)))
    return list(ordered)


def find_check(name: str) -> Optional[CheckSpec]:
    """The check called ``name`` (``diagnose --check NAME``), or None."""
    discover()
    return _REGISTRY.get(name)


def yielded_to(specs: Sequence[CheckSpec]) -> List[CheckSpec]:
    """The checks whose findings ``specs`` yield to (and theirs, and so on), besides ``specs``: what must run with
    them for their findings to be those of a whole run (``diagnose --only``, ``--check``)."""
    known = memo()
    key = ("yielded_to",) + tuple((s.name, s.yields) for s in specs)
    names = known.get(key)
    if names is None:
        names = known[key] = frozenset(_yielded_to(specs))
    return [s for s in all_checks() if s.name in names]


def _yielded_to(specs: Sequence[CheckSpec]) -> Set[str]:
    every = all_checks()
    wanted: Set[str] = {s.name for s in specs}
    todo = list(specs)
    while todo:
        spec = todo.pop()
        targets = {t for _, ts in spec.yields for t in ts}
        for other in every:
            if other.name not in wanted and other.name != spec.name and any(may_say(t, other) for t in targets):
                wanted.add(other.name)
                todo.append(other)
    return wanted


class CheckContext:
    def __init__(self, facts: Facts, probes: Sequence[ProbeResult]) -> None:
        self.facts = facts
        self.probes = probes
        #: probe name -> the finding codes of the checks skipped because that probe did not finish
        #: (filled by :func:`run_checks` before any check runs; ``probe-health`` names them)
        self.skipped: Dict[str, List[str]] = {}


def blocked_by(spec: CheckSpec, probes: Sequence[ProbeResult],
               status: Optional[Dict[str, str]] = None) -> List[str]:
    """The probes behind ``spec``'s required facts that did not finish (crashed, timed out) or did not run,
    in ``probes`` (the run's probe records; ``status``, each one's status by name, when the caller has it).
    Facts handed in without probe records (``probes`` empty: a test, a saved report's facts) are taken as they
    are."""
    if not probes or not spec.requires:
        return []
    from ..probes import producer_of

    if status is None:
        status = {p.name: p.status for p in probes}
    out: List[str] = []
    for key in spec.requires:
        name = producer_of(key)
        if name is not None and status.get(name) != "ok" and name not in out:
            out.append(name)
    return out


def _crashed(spec: CheckSpec, exc: Exception) -> Finding:
    return Finding(
        code="envdoctor.check_crashed", severity="warning", components=["envdoctor"],
        title="envdoctor's check %r crashed: %s: %s" % (spec.name, type(exc).__name__, exc),
        detail="This is a bug in envdoctor, not in your machine; the other checks still ran.",
        fix=Fix(text="Please report it with a snapshot attached: `envdoctor snapshot -o snap.json --redact-ids`."))


def findings_by_check(ctx: CheckContext, specs: Sequence[CheckSpec], contain: bool = True) -> Dict[str, List[Finding]]:
    """What each of ``specs`` says on ``ctx``, after yielding: check name -> its findings (a crash, with
    ``contain``, as its ``envdoctor.check_crashed`` finding).

    A finding of check C with code X is dropped when C declares that X yields to a code Y and another check
    found Y (kept itself: a check is settled after the checks it yields to)."""
    said: Dict[str, List[Finding]] = {}
    for spec in specs:
        out: List[Finding] = []
        try:
            for finding in spec.fn(ctx):  # what a check said before it raised still counts
                out.append(finding)
        except Exception as exc:  # noqa: BLE001 - contained, reported as a finding
            if not contain:
                raise
            out.append(_crashed(spec, exc))
        said[spec.name] = out
    by_name = {s.name: s for s in specs}
    settled: Dict[str, List[Finding]] = {}

    def settle(name: str, path: Tuple[str, ...]) -> List[Finding]:
        if name in settled:
            return settled[name]
        spec = by_name[name]
        kept = []
        for f in said[name]:
            targets = spec.yields_to(f.code)
            if targets and any(other != name and other not in path and
                               any(yields_match(t, other, g) for t in targets for g in settle(other, path + (name,)))
                               for other in said if any(may_say(t, by_name[other]) for t in targets)):
                continue
            kept.append(f)
        settled[name] = kept
        return kept

    for spec in specs:
        settle(spec.name, ())
    return settled


def run_checks(ctx: CheckContext, specs: Optional[Sequence[CheckSpec]] = None,
               keep: Sequence[str] = ()) -> List[Finding]:
    """The findings of every check (or of ``specs`` only: ``diagnose --only``), sorted worst first; with ``keep``
    (``diagnose --check``), only those of the checks named there (the others ran to be yielded to)."""
    findings: List[Finding] = []
    runnable: List[CheckSpec] = []
    not_run: Dict[str, List[str]] = {}
    ran = {p.name for p in ctx.probes}
    chosen = all_checks() if specs is None else list(specs)
    status = {p.name: p.status for p in ctx.probes}
    blocked = {spec.name: blocked_by(spec, ctx.probes, status) for spec in chosen}
    for spec in sorted(chosen, key=lambda s: s.name):  # the skipped codes are named in the checks' name order
        for name in blocked[spec.name]:
            target = ctx.skipped if name in ran else not_run
            codes = target.setdefault(name, [])
            codes.extend(d.code for d in spec.codes if d.code not in codes)
    runnable = [spec for spec in chosen if not blocked[spec.name]]
    for name, codes in sorted(not_run.items()):  # a probe left out of this run: no probe-health entry says so
        findings.append(Finding(
            code="envdoctor.checks_skipped", severity="info", components=["envdoctor"],
            title="Not checked: the %s facts were not gathered in this run" % name,
            detail="The checks that need them were skipped%s." % (
                (" (" + ", ".join(codes) + ")") if codes else "")))
    said = findings_by_check(ctx, runnable)
    for spec in runnable:
        if not keep or spec.name in keep:
            findings.extend(said[spec.name])
    from .driven import settle

    findings = settle(findings, ctx.facts)  # a GPU the driver does not drive is never "Works"
    findings.sort(key=sort_key)
    return findings

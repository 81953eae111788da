"""Probes: one small collector per layer of the stack, each turning raw evidence
read through the :class:`~envdoctor.host.base.Host` into :class:`~envdoctor.facts.Fact` s.

A probe is a function ``probe(ctx) -> iterable of Fact`` registered with
:func:`register`.  Probes run concurrently (each in its own thread, so a slow
command in one does not hold up the others) and are reported in a fixed
order.  A probe may wait for another's facts with ``ctx.facts_of(name)``.

A probe that raises becomes a "crashed" entry that asks the user to report
it; a probe still running at the deadline becomes a "timed out" entry.  The
user never sees a traceback.
"""

from __future__ import annotations

import importlib
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..facts import Fact, Facts
from ..host.base import Host, ReadHung

ProbeFn = Callable[["ProbeContext"], Iterable[Fact]]


class ProbeSpec(NamedTuple):
    name: str
    title: str
    fn: ProbeFn
    order: int
    uses_nvml: bool = False  # asks ``host.nvml()``: the query is started before the probes run
    #: The fact keys it returns, as patterns: ``*`` stands for one dot-separated part (``gpu.*.name``).
    #: A check's ``requires=`` names facts; :func:`producer_of` finds the probe behind each.
    produces: Tuple[str, ...] = ()
    #: The probes whose facts it waits for (``ctx.facts_of(name)``): a run of some probes runs these too.
    needs: Tuple[str, ...] = ()
    #: ``launch(host)`` starts, ahead of the probes, the program the probe will run first (``host.launch``), from
    #: the same reads the probe decides by: it runs while this process is small, and ends before the NVML query
    #: starts, so that their memory does not add up.
    launch: Optional[Callable[[Host], None]] = None
    #: asks ``host.cuda_init()``: the child that asks is started before the probes run, beside them
    uses_cuda_init: bool = False


class ProbeResult:
    """What one probe found: its facts, or why it has none (crashed, timed out)."""

    __slots__ = ("name", "title", "facts", "status", "error", "duration")

    def __init__(self, name: str, title: str, facts: Optional[List[Fact]] = None, status: str = "ok",
                 error: str = "", duration: float = 0.0) -> None:
        self.name = name
        self.title = title
        self.facts: List[Fact] = list(facts) if facts is not None else []
        self.status = status  # ok | crashed | timed_out
        self.error = error
        self.duration = duration

    def __repr__(self) -> str:
        return "ProbeResult(%r, status=%r, %d facts)" % (self.name, self.status, len(self.facts))

    def to_dict(self) -> Dict[str, object]:
        d: Dict[str, object] = {"name": self.name, "title": self.title, "status": self.status,
                                "duration": round(self.duration, 4), "facts": [f.to_dict() for f in self.facts]}
        if self.error:
            d["error"] = self.error
        return d

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> ProbeResult:
        """The inverse of :meth:`to_dict` (a saved report read back)."""
        return cls(d["name"], d["title"], [Fact.from_dict(f) for f in d["facts"]], status=d["status"],
                   error=d.get("error", ""), duration=float(d["duration"]))


_REGISTRY: Dict[str, ProbeSpec] = {}

#: Modules that define probes, in report order.
PROBE_MODULES = (
    "envdoctor.probes.system",
    "envdoctor.probes.driver",
    "envdoctor.probes.gpu",
    "envdoctor.probes.cuda",
    "envdoctor.probes.libraries",
    "envdoctor.probes.compilers",
    "envdoctor.probes.python_env",
    "envdoctor.probes.frameworks",
    "envdoctor.probes.requires",
    "envdoctor.probes.linkage",
    "envdoctor.probes.gpucode",
    "envdoctor.probes.staticcuda",
    "envdoctor.probes.programs",
    "envdoctor.probes.libtorch",
    "envdoctor.probes.apps",
    "envdoctor.probes.lua",
    "envdoctor.probes.gpupackages",
    "envdoctor.probes.dlopen",
    "envdoctor.probes.topology",
    "envdoctor.probes.environment",
    "envdoctor.probes.containers",
)


#: producers_of's answers over every probe, by key (a run's checks ask the same keys again and again).
_PRODUCERS: Dict[Tuple[str, Tuple[str, ...]], List[str]] = {}


def register(name: str, title: str, order: int, uses_nvml: bool = False,
             produces: Sequence[str] = (), needs: Sequence[str] = (),
             launch: Optional[Callable[[Host], None]] = None,
             uses_cuda_init: bool = False) -> Callable[[ProbeFn], ProbeFn]:
    def deco(fn: ProbeFn) -> ProbeFn:
        _REGISTRY[name] = ProbeSpec(name, title, fn, order, uses_nvml, tuple(produces), tuple(needs), launch,
                                    uses_cuda_init)
        _PRODUCERS.clear()
        _IN_MODULES.clear()
        return fn

    return deco


def _matches(pattern: str, key: str) -> Optional[int]:
    """How specifically the probe's key ``pattern`` covers ``key`` (its number of literal parts), or None.
    A ``*`` in the pattern stands for any one part; a ``*`` in ``key`` (a check needing "any framework")
    is covered only by a ``*`` there, and ``N`` (a GPU's index in ``requires=``) by a ``*``."""
    want, have = pattern.split("."), key.split(".")
    if len(want) != len(have):
        return None
    literal = 0
    for w, h in zip(want, have):
        if w == "*":
            continue
        if w != h:
            return None
        literal += 1
    return literal


def producers_of(key: str, specs: Optional[Sequence[ProbeSpec]] = None) -> List[str]:
    """The probes whose declared ``produces`` cover ``key`` most specifically (one, unless two probes claim
    the same key: ``tests/test_registries.py`` refuses that)."""
    if specs is None:
        every = all_probes()  # imports the probe modules (registering them) before the cache is read
        cached = (key, tuple(PROBE_MODULES))
        if cached not in _PRODUCERS:
            _PRODUCERS[cached] = producers_of(key, every)
        return list(_PRODUCERS[cached])
    best: Dict[str, int] = {}
    for spec in specs:
        scores = [s for s in (_matches(p, key) for p in spec.produces) if s is not None]
        if scores:
            best[spec.name] = max(scores)
    top = max(best.values(), default=None)
    return [name for name, score in best.items() if score == top]


def probes_reading(entry: str, specs: Optional[Sequence[ProbeSpec]] = None) -> List[str]:
    """The probes behind one entry of a check's ``reads=``: ``*`` (every fact: every probe), else a key or
    pattern as in ``requires=`` (:func:`producers_of`: ``driver.*`` is any two-part driver fact)."""
    if entry == "*":
        return [s.name for s in (specs if specs is not None else all_probes())]
    return producers_of(entry, specs)


def with_needs(names: Iterable[str], specs: Optional[Sequence[ProbeSpec]] = None) -> List[str]:
    """``names`` and, transitively, the probes they wait for (``needs=``), in report order."""
    by_name = {s.name: s for s in (specs if specs is not None else all_probes())}
    todo, out = list(names), set()
    while todo:
        name = todo.pop()
        if name in out or name not in by_name:
            continue
        out.add(name)
        todo.extend(by_name[name].needs)
    return [n for n in by_name if n in out]


def producer_of(key: str) -> Optional[str]:
    """The probe that produces the fact ``key`` (a key or a ``requires=`` pattern), None when none does."""
    names = producers_of(key)
    return names[0] if names else None


def all_probes() -> List[ProbeSpec]:
    return probes_in(PROBE_MODULES)


#: probes_in's answers, by the modules asked (the checks of one run ask for every probe a few hundred times);
#: emptied when a probe registers.
_IN_MODULES: Dict[Tuple[str, ...], List[ProbeSpec]] = {}


def probes_in(modules: Sequence[str]) -> List[ProbeSpec]:
    """The probes defined in ``modules`` (importing them), in report order."""
    key = tuple(modules)
    known = _IN_MODULES.get(key)
    if known is not None:
        return list(known)
    for mod in modules:
        importlib.import_module(mod)
    found = sorted((s for s in _REGISTRY.values() if getattr(s.fn, "__module__", None) in modules),
                   key=lambda s: (s.order, s.name))
    _IN_MODULES[key] = found
    return list(found)


class ProbeContext:
    """What a probe gets: the host, and the facts of the probes it depends on."""

    def __init__(self, host: Host, runner: Optional[_Runner] = None) -> None:
        self.host = host
        self._runner = runner

    def facts_of(self, name: str) -> Facts:
        """Facts of probe ``name`` (waits for it; empty if it crashed or timed out)."""
        if self._runner is None:
            raise RuntimeError("facts_of() needs a runner")
        return self._runner.wait(name)


class _Runner:
    def __init__(self, host: Host, specs: Sequence[ProbeSpec], deadline: Optional[float]) -> None:
        self.host = host
        self.specs = {s.name: s for s in specs}
        self.deadline = deadline
        self.results: Dict[str, ProbeResult] = {}
        self.done: Dict[str, threading.Event] = {s.name: threading.Event() for s in specs}
        self.lock = threading.Lock()

    def wait(self, name: str) -> Facts:
        ev = self.done.get(name)
        if ev is None:
            return Facts()
        timeout = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        ev.wait(timeout)
        with self.lock:
            res = self.results.get(name)
        return Facts(res.facts if res else ())

    def run_one(self, spec: ProbeSpec) -> None:
        start = time.monotonic()
        try:
            facts = list(spec.fn(ProbeContext(self.host, self)))
            res = ProbeResult(spec.name, spec.title, facts, duration=time.monotonic() - start)
        except ReadHung as exc:  # a replayed snapshot: this read hung in the live run
            res = timed_out_result(spec, "did not finish before the time limit (reading %s hung)" % exc)
            res.duration = time.monotonic() - start
        except Exception as exc:  # noqa: BLE001 - contained and reported, never a traceback
            import traceback

            tb = traceback.extract_tb(exc.__traceback__)
            lineno = tb[-1].lineno if tb else None  # None on 3.11+ for code without line information
            where = ("%s:%s" % (tb[-1].filename.rsplit("/", 1)[-1], "?" if lineno is None else lineno)) if tb else "?"
            res = ProbeResult(spec.name, spec.title, status="crashed", duration=time.monotonic() - start,
                              error="%s: %s (at %s)" % (type(exc).__name__, exc, where))
        with self.lock:
            self.results.setdefault(spec.name, res)
        self.done[spec.name].set()


def _needs_first(specs: Sequence[ProbeSpec]) -> List[ProbeSpec]:
    """``specs`` in report order, except that each comes after the probes among them it waits for."""
    by_name = {s.name: s for s in specs}
    out: List[ProbeSpec] = []
    placed: Set[str] = set()

    def place(spec: ProbeSpec, path: Tuple[str, ...]) -> None:
        if spec.name in placed or spec.name in path:  # a loop of needs would wait out the deadline either way
            return
        for name in spec.needs:
            if name in by_name:
                place(by_name[name], path + (spec.name,))
        placed.add(spec.name)
        out.append(spec)

    for spec in specs:
        place(spec, ())
    return out


def _run_in_order(runner: _Runner, specs: Sequence[ProbeSpec]) -> None:
    lane = threading.current_thread()
    for spec in specs:
        lane.name = "probe-" + spec.name  # as a probe's own thread is named: what a stack dump shows
        runner.run_one(spec)


def timed_out_result(spec: ProbeSpec, why: str = "") -> ProbeResult:
    return ProbeResult(spec.name, spec.title, status="timed_out",
                       error=why or "did not finish before the time limit (a file or command it reads hangs)")


#: Probes whose answers wait on programs they run (docker, nvcc, the compilers, getconf): their threads start
#: first, so those programs run while the other probes work (starting order changes no result).
LAUNCH_FIRST = ("containers", "compilers", "cuda", "os")


def _meanwhile(work: Optional[Callable[[], Any]]) -> None:
    """The caller's preparation; a failure of it is the caller's to meet again when it does the work itself."""
    if work is None:
        return
    try:
        work()
    except Exception:  # noqa: BLE001,S110 - e.g. a check module that does not import: judge() says so
        pass


#: The longest the probes wait for the ``launch=`` hooks to decide and start their programs.
LAUNCH_WAIT = 0.5


def _launch(host: Host, specs: Sequence[ProbeSpec]) -> None:
    for spec in specs:
        assert spec.launch is not None
        try:
            spec.launch(host)
        except Exception:  # noqa: BLE001,S110 - the probe decides again, and reports what goes wrong
            pass


#: The modules whose probes have ``launch=`` hooks (tests/test_launch_ahead.py holds it to the registry), so
#: that :func:`launch_ahead` imports only them.
LAUNCH_MODULES = ("envdoctor.probes.containers",)
#: The hosts whose ``launch=`` hooks have been run (by :func:`launch_ahead` or :func:`run_probes`): at most once.
_LAUNCHED: weakref.WeakSet[Host] = weakref.WeakSet()


def _launch_once(host: Host, specs: Sequence[ProbeSpec], deadline: Optional[float]) -> None:
    """Run the ``launch=`` hooks of ``specs`` for ``host`` unless they ran for it already, in a thread of its own
    waited for a little: the reads that decide what to launch may hang (a home directory on a hung NFS mount).
    Still running then, it is left (and the NVML query, which forks only a process of one thread, is asked by a
    program instead)."""
    launching = [s for s in specs if s.launch is not None]
    if not launching or host in _LAUNCHED:
        return
    _LAUNCHED.add(host)
    launcher = threading.Thread(target=_launch, args=(host, launching), name="probe-launch", daemon=True)
    launcher.start()
    launcher.join(LAUNCH_WAIT if deadline is None else max(0.0, min(LAUNCH_WAIT, deadline - time.monotonic())))


def launch_ahead(host: Host, deadline: Optional[float] = None) -> None:
    """Start the programs of every probe's ``launch=`` hook now, before the rest of a run is imported (a whole
    ``diagnose`` of this machine): docker (about 20 MiB) then runs beside a smaller interpreter and is over
    sooner. :func:`run_probes` does not launch them again."""
    _launch_once(host, probes_in(LAUNCH_MODULES), deadline)


def run_probes(host: Host, deadline: Optional[float] = None, only: Optional[Sequence[str]] = None,
               parallel: bool = True, modules: Optional[Sequence[str]] = None,
               meanwhile: Optional[Callable[[], Any]] = None) -> List[ProbeResult]:
    """Run the probes against ``host`` and return their results in report order.

    ``deadline`` is a ``time.monotonic()`` value: probes still running then are
    reported as timed out (their threads are daemons and are abandoned).
    ``only`` picks probes by name (an empty ``only``: none), ``modules`` by the module defining them
    (default: all of :data:`PROBE_MODULES`). ``meanwhile`` is called once the probes run (the caller's own
    preparation, such as loading the checks, done while the probes wait on programs and files).
    """
    modules = modules or PROBE_MODULES
    specs = [s for s in probes_in(modules) if only is None or s.name in only]
    _launch_once(host, specs, deadline)
    start_nvml = getattr(host, "start_nvml", None)
    if start_nvml is not None and any(s.uses_nvml for s in specs):
        # Before any probe thread exists (the query is forked); after the programs launched ahead have ended.
        start_nvml()
    start_cuda_init = getattr(host, "start_cuda_init", None)
    if start_cuda_init is not None and any(s.uses_cuda_init for s in specs):
        # A program of its own (a fresh interpreter that loads libcuda): it runs beside the probes; a machine where
        # CUDA could find nothing starts nothing.
        start_cuda_init()
    runner = _Runner(host, specs, deadline)
    if parallel:
        if not getattr(host, "reads_wait", True):
            # Nothing to wait on: one thread runs them all, each after the probes it waits for; the caller keeps
            # the deadline (a probe still running then is reported as timed out, as below).
            threading.Thread(target=_run_in_order, args=(runner, _needs_first(specs)), name="probes",
                             daemon=True).start()
        else:
            first = [s for name in LAUNCH_FIRST for s in specs if s.name == name]
            for spec in first + [s for s in specs if s not in first]:
                threading.Thread(target=runner.run_one, args=(spec,), name="probe-" + spec.name,
                                 daemon=True).start()
        _meanwhile(meanwhile)
        for spec in specs:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            runner.done[spec.name].wait(remaining)
    else:
        for spec in specs:
            runner.run_one(spec)
        _meanwhile(meanwhile)
    out = []
    for spec in specs:
        with runner.lock:
            res = runner.results.get(spec.name)
            if res is None:
                res = timed_out_result(spec, getattr(host, "late_reason", ""))
                runner.results[spec.name] = res
        out.append(res)
    return out

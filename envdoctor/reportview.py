"""The facts of one report, read once, and the facts derived from several of them (:class:`ReportView`).

A report (``diagnose --format json``, or one rebuilt from a snapshot) holds each fact as a record: key, status,
value, source. Some questions about a node take more than one fact, and every reader of reports asks them:
``check``'s policy, ``fleet``'s comparison and the engine outputs (Prometheus, NFD, NHC, Slurm) through
:mod:`envdoctor.view`. They are answered here, once:

* the CUDA toolkit's version (``nvcc`` on PATH, else the ``/usr/local/cuda`` link's);
* the libraries the dynamic loader picks for a soname (cuDNN, NCCL: ``libraries.loader_choice``);
* whether a framework is installed (the frameworks probe lists only what is installed; a report without any of
  its facts was written where the probe did not run, which is not "not installed");
* the GPU count.

Each answer is a :class:`Found`: a value (None: the node has none, with why), or unknown with the reason, and
the fact it was read from (``key``, ``status``) for a reader that shows the record itself. Nothing here reads
a machine or a file; a damaged report gives unknowns, never an exception.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

FactMap = Dict[str, Dict[str, Any]]  # fact key -> the fact as a report holds it

_GPU_KEYS: Dict[str, List[str]] = {}
#: The most fact names whose per-GPU keys are kept.
_GPU_KEYS_KEPT = 4096


def gpu_keys(name: str, count: int) -> List[str]:
    """``gpu.0.NAME`` ... ``gpu.<count-1>.NAME``, made once (a fleet asks for them on every node; here, not in
    :mod:`envdoctor.policy`, so that a fleet without a policy does not import what a policy needs)."""
    keys = _GPU_KEYS.get(name)
    if keys is None or len(keys) < count:
        keys = ["gpu.%d.%s" % (i, name) for i in range(max(count, 64))]
        if len(_GPU_KEYS) < _GPU_KEYS_KEPT:
            _GPU_KEYS[name] = keys
    return keys[:count]


class Found:
    """What the report says about one question: a value (None: the node has none, ``why`` says so), or unknown
    with the reason. ``key`` is the fact it was read from ("" when none) and ``status`` that fact's status ("" when
    the report does not hold it)."""

    __slots__ = ("known", "value", "source", "why", "key", "status")

    def __init__(self, known: bool, value: Any = None, source: str = "", why: str = "", key: str = "",
                 status: str = "") -> None:
        self.known = known
        self.value = value
        self.source = source
        self.why = why
        self.key = key
        self.status = status

    def shown(self) -> str:
        if not self.known:
            return "unknown (%s)" % self.why if self.why else "unknown"
        if self.value is None:
            return self.why or "none"
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return str(self.value)


class FactIndex(dict):  # type: ignore[type-arg]
    """A report's facts by key, remembering whether the frameworks probe left any fact (asked per
    framework key, and a scan of a 400-fact report each time adds up over a fleet)."""

    _frameworks: Optional[bool] = None

    def has_frameworks(self) -> bool:
        if self._frameworks is None:
            self._frameworks = any(k.startswith("framework.") for k in self)
        return self._frameworks


def has_frameworks(facts: FactMap) -> bool:
    """Did the frameworks probe leave any fact in ``facts`` (it lists only what is installed)?"""
    if isinstance(facts, FactIndex):
        return facts.has_frameworks()
    return any(k.startswith("framework.") for k in facts)


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def report_facts(report: Dict[str, Any]) -> FactMap:
    """A report's facts by key (the records that are records, with a text key)."""
    facts: FactMap = FactIndex()
    for probe in _list(report.get("probes")):
        for fact in _list(probe.get("facts")) if isinstance(probe, dict) else []:
            if isinstance(fact, dict) and isinstance(fact.get("key"), str):
                facts[fact["key"]] = fact
    return facts


def fact(facts: FactMap, key: str) -> Found:
    """One fact as the report holds it: its value when its status is ok, else unknown with the status and reason."""
    f = facts.get(key)
    if not isinstance(f, dict):
        return Found(False, why="not in the report", key=key)
    source = f.get("source")
    source = source if type(source) is str else str(source) if isinstance(source, str) else ""
    status = f.get("status")
    if status != "ok":
        shown = str(status or "unknown").replace("_", " ")
        reason = str(f["reason"]) if isinstance(f.get("reason"), str) else ""
        return Found(False, source=source, why=("%s: %s" % (shown, reason[:120])) if reason else shown, key=key,
                     status=status if isinstance(status, str) else "unknown")
    return Found(True, f.get("value"), source, key=key, status="ok")


def field(found: Found, name: str) -> Found:
    """One field of a record fact."""
    if not found.known or found.value is None:
        return found
    if not isinstance(found.value, dict):
        return Found(False, source=found.source, why="not a record in the report", key=found.key,
                     status=found.status)
    return Found(True, found.value.get(name), found.source, key=found.key, status=found.status)


class ReportView:
    """The derived facts of one report's facts (see the module's documentation)."""

    __slots__ = ("facts",)

    def __init__(self, facts: FactMap) -> None:
        self.facts = facts

    @classmethod
    def of_report(cls, report: Dict[str, Any]) -> ReportView:
        return cls(report_facts(report))

    def fact(self, key: str) -> Found:
        return fact(self.facts, key)

    def has_frameworks(self) -> bool:
        return has_frameworks(self.facts)

    def toolkit(self) -> Found:
        """The CUDA toolkit's version: ``nvcc`` on PATH, else ``/usr/local/cuda``'s (``key`` says which); None
        when both say there is none."""
        nvcc, link = self.fact("cuda.nvcc"), self.fact("cuda.default_symlink")
        for f in (nvcc, link):
            if f.known and isinstance(f.value, dict) and f.value.get("version"):
                return Found(True, f.value["version"], f.source, key=f.key, status="ok")
        if nvcc.known and link.known:
            return Found(True, None, nvcc.source, "no CUDA toolkit", key=nvcc.key, status="ok")
        return nvcc if not nvcc.known else link

    def loader_picks(self, prefix: str) -> Found:
        """The files the dynamic loader takes for the sonames starting with ``prefix`` (``libcudnn.so.``): a list of
        (soname, version or None), by soname; empty when it finds none."""
        f = self.fact("libraries.loader_choice")
        if not f.known:
            return f
        if not isinstance(f.value, dict):
            return Found(False, source=f.source, why="not a record in the report", key=f.key, status=f.status)
        picked: List[Tuple[str, Optional[str]]] = [
            (s, str(r["version"]) if r.get("version") else None) for s, r in sorted(f.value.items())
            if isinstance(s, str) and s.startswith(prefix) and isinstance(r, dict) and r.get("path")]
        return Found(True, picked, f.source, key=f.key, status=f.status)

    def loader_version(self, prefix: str, what: str) -> Found:
        """The version of the library the loader takes for ``prefix`` (its highest soname's): ``what`` names it."""
        f = self.loader_picks(prefix)
        if not f.known:
            return f
        if not f.value:
            return Found(True, None, f.source, "no %s the loader finds" % what, key=f.key, status=f.status)
        version = f.value[-1][1]
        if not version:
            return Found(False, source=f.source, why="%s found, its version not" % what, key=f.key, status=f.status)
        return Found(True, version, f.source, key=f.key, status=f.status)

    def framework(self, name: str) -> Found:
        """The framework's record when it is installed; None ("not installed") when the frameworks probe ran and
        did not list it; unknown when its fact failed, the interpreter could not be asked, or the probe did not
        run (``key`` is the fact that says which)."""
        key = "framework." + name
        f = self.fact(key)
        if f.known or key in self.facts:
            return f
        scan = self.fact("framework.scan")
        if "framework.scan" in self.facts and not scan.known:
            return scan
        if self.has_frameworks():
            # the frameworks probe ran and lists what is installed: this one is not
            return Found(True, None, "derived", "not installed")
        return Found(False, why="not in the report")

    def gpu_count(self) -> Found:
        f = self.fact("gpu.count")
        if f.known and not (isinstance(f.value, int) and not isinstance(f.value, bool) and 0 <= f.value <= 1024):
            return Found(False, source=f.source, why="not a GPU count", key=f.key, status=f.status)
        return f

"""Many machines at once: which nodes differ from the rest, and what is wrong where.

A cluster admin collects one file per node (``envdoctor diagnose --format json > node17.json``, or
``envdoctor snapshot -o node17.json.gz``) and asks ``envdoctor fleet reports/``:

* for each fact that decides whether a job runs (driver, GPUs, CUDA, cuDNN, frameworks, Docker...),
  the values across the fleet and which nodes hold the minority ones;
* each finding code, worst first, with the nodes it was found on;
* with ``baseline``: every node's deviations from a known-good node.

Nodes are named after their files (``node17.json`` -> ``node17``), since reports carry no host
name; the same file named twice is one node, and no two nodes share a name.  A report is read as it
is; a snapshot is replayed by this envdoctor (newer checks apply).  A file that cannot be read is a
node with the reason, never the end of the run.

A fact a report does not hold (written by an older envdoctor, or its probe failed) is *absent*: it is
shown apart from the values and is neither a difference between nodes nor a deviation from the
baseline.
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Callable, Collection, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from . import frameworks
from .reportview import FactIndex, Found, ReportView, gpu_keys

FLEET_SCHEMA_VERSION = 1
SEVERITIES = ("error", "warning", "info")
_SUFFIXES = re.compile(r"(\.snapshot)?(\.json)?(\.gz)?$")
_DIGITS = re.compile(r"([0-9]+)")
_KEY = itemgetter("key")
_STATUS = itemgetter("status")
_VALUE = itemgetter("value")
#: The values that show alike when they are equal and of one type (equal floats may not: 0.0 and -0.0; nor
#: equal records: their keys' order).
_ALIKE_TYPES = (str, int, bool, type(None))

Facts = Dict[str, Dict[str, Any]]  # fact key -> the fact as a report holds it ({"value", "status", ...})


@dataclass
class Node:
    """One node as fleet keeps it: not its report (a 100 kB document) but the report's extract, the
    values of :data:`FLEET_FACTS`' rows, its findings' codes and titles, and (when asked) its
    :class:`~envdoctor.view.NodeSummary` for a policy or an engine's output.  ``facts`` is
    only filled while the extract is made (``keep_facts`` keeps it, for callers that want it)."""

    name: str
    path: str
    kind: str = ""  # "report" or "snapshot"; "" when unreadable
    facts: Facts = field(default_factory=dict)
    findings: List[Dict[str, Any]] = field(default_factory=list)
    envdoctor_version: str = ""
    unreadable: str = ""  # why the file could not be used
    values: Dict[str, Optional[str]] = field(default_factory=dict)  # FLEET_FACTS label -> value (None: absent)
    summary: Any = None  # view.NodeSummary, when a policy or an engine's format asked for it

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.get("severity") == severity)

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name, "path": self.path, "kind": self.kind or None,
                               "envdoctor_version": self.envdoctor_version or None,
                               "summary": {s: self.count(s) for s in SEVERITIES}}
        if self.unreadable:
            out["unreadable"] = self.unreadable
        return out


def node_name(path: str) -> str:
    return _SUFFIXES.sub("", os.path.basename(path.rstrip("/"))) or path


def natural_key(text: str) -> Tuple[Tuple[Tuple[int, str], ...], str]:
    """Sort key putting ``n2`` before ``n10`` (then case-blind, then exact, so the order is total)."""
    chunks = _DIGITS.split(text)
    return tuple((int(c), "") if i % 2 else (0, c.casefold()) for i, c in enumerate(chunks)), text


def natural_sorted(names: Iterable[str]) -> List[str]:
    return sorted(names, key=natural_key)


def unique_names(paths: Sequence[str]) -> List[str]:
    """Each file's node name, never the same for two files.

    A name is the file's name without its suffixes, lengthened by parent directories until no two
    nodes share one (``a/snapshot.json``, ``b/snapshot.json`` -> ``a/snapshot``, ``b/snapshot``).
    When directories cannot tell nodes apart, the file name keeps its suffixes (``node.json``,
    ``node.json.gz``); as a last resort a later node gets ``#2``, ``#3``...
    """
    count = len(paths)
    parts = [[p for p in os.path.normpath(path).split(os.sep) if p] or [path] for path in paths]
    depth = [1] * count
    keep_suffix = [False] * count

    def name(i: int) -> str:
        tail = parts[i][-depth[i]:]
        return "/".join(tail[:-1] + [tail[-1] if keep_suffix[i] else node_name(tail[-1])])

    def settle() -> List[str]:
        """Lengthen the clashing names until none clashes or none can grow."""
        while True:
            names = [name(i) for i in range(count)]
            seen = Counter(names)
            grew = False
            for i, n in enumerate(names):
                if seen[n] > 1 and depth[i] < len(parts[i]):
                    depth[i] += 1
                    grew = True
            if not grew:
                return names

    names = settle()
    seen = Counter(names)
    if len(seen) < count:  # the directories cannot tell some apart: their full file names may
        for i, n in enumerate(names):
            if seen[n] > 1:
                keep_suffix[i], depth[i] = True, 1
        names = settle()
    if len(set(names)) == count:
        # nodes/node17/report.json, nodes/node18/report.json...: the directory is the name
        last = {n.rsplit("/", 1)[-1] for n in names}
        if count > 1 and len(last) == 1 and all("/" in n for n in names):
            trimmed = [n.rsplit("/", 1)[0] for n in names]
            if len(set(trimmed)) == count and all(trimmed):  # "/..": no directory to name it by
                return trimmed
        return names
    # The same path twice (or paths alike but for a leading / or ./): the file's short name, numbered.
    seen = Counter(names)
    clashing = [i for i, n in enumerate(names) if seen[n] > 1]
    used = {n for n in names if seen[n] == 1}
    for i in clashing:
        base = node_name(parts[i][-1])
        n, k = base, 1
        while n in used:
            k += 1
            n = "%s#%d" % (base, k)
        used.add(n)
        names[i] = n
    return names


@dataclass
class Inputs:
    """The files to compare, from the files and directories named on the command line."""

    files: List[str] = field(default_factory=list)
    empty_dirs: List[str] = field(default_factory=list)  # held no *.json or *.json.gz file
    unlistable: List[str] = field(default_factory=list)  # "DIR: why it could not be listed"
    skipped: List[str] = field(default_factory=list)  # the file this run writes its output to
    regular: Set[str] = field(default_factory=set)  # the files that were regular files when gathered


def _stat(path: str) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def gather(paths: Sequence[str], output: Optional[Tuple[int, int]] = None) -> Inputs:
    """The files named, with each directory replaced by its ``*.json`` and ``*.json.gz`` files (in
    natural order: ``n2`` before ``n10``), each file once: the same file named twice (or through a
    link) is one node.  ``output``, the (device, inode) of the file standard output goes to, is left
    out: ``envdoctor fleet dir/ --format json > dir/fleet.json`` does not read its own output."""
    found = Inputs()
    seen_real: Set[str] = set()
    seen_ids: Set[Tuple[int, int]] = set()

    def add(path: str, st: Optional[os.stat_result]) -> bool:
        ident = None if st is None else (st.st_dev, st.st_ino)
        if output is not None and ident == output:
            found.skipped.append(path)
            return False
        if ident is not None:  # the file itself: its links and other names have the same identity
            if ident in seen_ids:
                return True
            seen_ids.add(ident)
        else:  # nothing there (yet): the same path however it is spelt
            real = os.path.realpath(path)
            if real in seen_real:
                return True
            seen_real.add(real)
        found.files.append(path)
        if st is not None and path != "-" and stat.S_ISREG(st.st_mode):  # "-": standard input
            found.regular.add(path)
        return True

    for p in paths:
        if p != "-" and os.path.isdir(p):
            try:
                entries = os.listdir(p)
            except OSError as exc:
                found.unlistable.append("%s: %s" % (p, exc.strerror or exc))
                continue
            files = [os.path.join(p, n) for n in natural_sorted(entries)
                     if n.endswith((".json", ".json.gz")) and not n.startswith(".")]
            added = []
            for f in files:  # one look at each file: a directory? which file? a regular one?
                st = _stat(f)
                if not (st is not None and stat.S_ISDIR(st.st_mode)) and add(f, st):
                    added.append(f)
            if not added:
                found.empty_dirs.append(p)
        else:
            add(p, _stat(p))
    return found


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def load_node(path: str, timeout: float, name: Optional[str] = None, policy: Any = None,
              summary: bool = False, keep_facts: bool = True, raw: Any = None,
              replay: Optional[float] = None) -> Node:
    """One node from a report or a snapshot file; never raises for the file's sake.  ``policy`` (a
    :class:`~envdoctor.policy.Policy`) or ``summary`` also make the node's engine summary; without
    ``keep_facts`` only the extract stays (what a fleet of thousands of nodes can afford). ``raw``: the
    file's bytes (or why they could not be read), when they were read already (:func:`read_pipes`); ``replay``:
    the probe budget of a snapshot's replay (default: ``timeout``)."""
    node = Node(name or node_name(path), path)
    try:
        _load(node, timeout, raw, replay)
        if not node.unreadable:
            extract(node, policy, summary)
    except Exception as exc:  # noqa: BLE001 - one strange file must not end a fleet's comparison
        node.unreadable = "%s could not be used: %s: %s (a bug in envdoctor; please report it)" % (
            path, type(exc).__name__, exc)
    if not keep_facts:
        node.facts = {}
    return node


def extract(node: Node, policy: Any = None, summary: bool = False) -> None:
    """Fill the node's extract from its facts: FLEET_FACTS' values, its findings' code, severity and title
    (and the GPUs their evidence names), and the engine summary when a policy or an engine's format asks
    (without ``summary``, only what the policy's verdict needs)."""
    node.values = {label: how(node.facts) for label, _, how in FLEET_FACTS}
    if policy is not None or summary:
        from .view import summarize

        verdict = policy.evaluate_facts(node.facts, node.findings) if policy is not None else None
        node.summary = summarize(node.name, {"findings": node.findings}, verdict, node.facts, light=not summary)
    node.findings = [{"code": f["code"], "severity": f["severity"], "title": str(f.get("title") or ""),
                      "evidence": [{"key": e["key"]} for e in _list(f.get("evidence")) if isinstance(e, dict)
                                   and isinstance(e.get("key"), str) and e["key"].startswith("gpu.")]}
                     for f in node.findings]


def _interned(nodes: Iterable[Node]) -> Iterable[Node]:
    """The nodes, what they have in common held once: each reader's copy of "2.11.0", of a finding, of a
    requirement's row or of a whole extract arrives as an object of its own, and ten thousand nodes hold a
    few dozen distinct ones between them.  Shared objects are read-only (nothing changes a node's extract
    once it is made)."""
    texts: Dict[str, str] = {}
    extracts: Dict[Any, Any] = {}
    findings: Dict[Any, Dict[str, Any]] = {}
    rows: Dict[Any, Any] = {}

    def text(value: Any) -> Any:
        return texts.setdefault(value, value) if type(value) is str else value

    def finding(f: Dict[str, Any]) -> Dict[str, Any]:
        try:
            key = tuple((k, v if type(v) is not list else tuple(tuple(e.items()) for e in v)) for k, v in f.items())
            got = findings.get(key)
        except (TypeError, AttributeError):  # not what extract() makes: kept as it is
            return f
        if got is None:
            got = findings[key] = {k: text(v) for k, v in f.items()}
        return got

    def extract(values: Dict[str, Any]) -> Dict[str, Any]:
        key = tuple(values.items())
        got = extracts.get(key)
        if got is None:
            got = extracts[key] = {k: text(v) for k, v in values.items()}
        return got

    def row(r: Any) -> Any:
        got = rows.get(r)
        if got is None:
            got = rows[r] = tuple(text(x) for x in r)
        return got

    for n in nodes:
        n.kind, n.envdoctor_version = text(n.kind), text(n.envdoctor_version)
        n.values = extract(n.values)
        n.findings = [finding(f) for f in n.findings]
        s = n.summary
        if s is not None:
            s.results = [row(r) for r in s.results]
            s.failing = [finding(f) for f in s.failing]
            s.counts, s.stack = extract(s.counts), extract(s.stack)
            if s.gpus is not None:
                s.gpus = [row(g) for g in s.gpus]
        yield n


#: The most files a reader is handed at a time (each hand-over costs fleet a few thread switches).
_CHUNK = 64
#: What the parallel readers share (set before they fork): timeout, policy, summary.
_JOB: Tuple[float, Any, bool, Optional[float]] = (10.0, None, False, None)


def _load_job(job: Tuple[str, str]) -> Node:
    timeout, policy, summary, replay = _JOB
    return load_node(job[0], timeout, job[1], policy, summary, keep_facts=False, replay=replay)


#: The most pipes (or devices, or standard input) read at the same time.
MAX_PIPES_AT_ONCE = 256


def _regular(path: str) -> bool:
    try:
        return path != "-" and stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # not there, or not reachable: reading it says why, at once


def read_pipes(paths: Sequence[str], timeout: float) -> Dict[str, Any]:
    """The bytes of each input that is not a regular file (a pipe, a device, standard input), or the
    :class:`~envdoctor.host.snapshot.SnapshotError` saying why not, read at the same time (up to
    :data:`MAX_PIPES_AT_ONCE` at once), each allowed ``timeout``: forty stalled pipes cost one time-out,
    not forty."""
    pipes = [p for p in dict.fromkeys(paths) if not _regular(p)]
    if not pipes:
        return {}
    from concurrent.futures import ThreadPoolExecutor

    from .host.snapshot import SnapshotError, read_raw

    def read(path: str) -> Any:
        try:
            return read_raw(path, timeout, "report or snapshot")
        except SnapshotError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(len(pipes), MAX_PIPES_AT_ONCE)) as pool:
        return dict(zip(pipes, pool.map(read, pipes)))


def readers(paths: Sequence[str], regular: Collection[str] = ()) -> int:
    """How many processes read the files: one per CPU (at most 8) for 64 or more regular files, else one
    (a pipe or standard input is read by fleet itself, within --read-timeout). ``regular``: paths known to be
    regular files already (:attr:`Inputs.regular`), not looked at again."""
    if len(paths) < 64 or not hasattr(os, "fork"):
        return 1
    try:
        if not all(p in regular or (p != "-" and stat.S_ISREG(os.stat(p).st_mode)) for p in paths):
            return 1
    except OSError:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cpus, 8))


def load_nodes(paths: Sequence[str], names: Sequence[str], timeout: float, policy: Any = None,
               summary: bool = False, workers: Optional[int] = None, replay: Optional[float] = None,
               regular: Collection[str] = ()) -> List[Node]:
    """Every file's node, in order, keeping only extracts; read by :func:`readers` processes in parallel
    (each parses whole reports, the parent keeps what comes back). ``timeout`` bounds the wait for a pipe,
    ``replay`` (default: ``timeout``) the probes of a snapshot's replay; ``regular``: the paths known to be regular
    files (:attr:`Inputs.regular`)."""
    global _JOB
    jobs = list(zip(paths, names))
    count = readers(paths, regular) if workers is None else workers
    if count <= 1:
        piped = read_pipes(paths, timeout)
        return list(_interned(load_node(p, timeout, n, policy, summary, keep_facts=False, raw=piped.get(p),
                                        replay=replay) for p, n in jobs))
    import codecs
    import multiprocessing

    from . import report  # noqa: F401 - what every reader imports to read a report (and the codec of its
    from .forked import reset_signals  # text), imported once here, before the readers fork, not once in each
    from .host import snapshot  # noqa: F401

    codecs.lookup("utf-8-sig")
    _JOB = (timeout, policy, summary, replay)
    try:
        # The readers take the default signal actions: fleet's own handlers (end the children and
        # commands, raise) would make a reader ignore the pool's SIGTERM while it waits for work, and the
        # pool would wait for it forever. On success the pool is closed and joined (each reader reads its
        # end-of-work marker and leaves), not terminated.
        pool = multiprocessing.get_context("fork").Pool(count, initializer=reset_signals)
        try:
            chunk = max(1, min(_CHUNK, len(jobs) // (4 * count)))  # fewer, larger hand-overs; no reader idle long
            nodes = list(_interned(pool.imap(_load_job, jobs, chunksize=chunk)))
            pool.close()
            return nodes
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    except (OSError, ImportError):  # no fork here after all (a sandbox): read them one by one
        return list(_interned(load_node(p, timeout, n, policy, summary, keep_facts=False, replay=replay)
                              for p, n in jobs))
    finally:
        _JOB = (10.0, None, False, None)


def _load(node: Node, timeout: float, raw: Any = None, replay: Optional[float] = None) -> Node:
    from .host.snapshot import SnapshotError
    from .report import report_from_file

    try:
        if isinstance(raw, SnapshotError):
            raise raw
        node.kind, doc = report_from_file(node.path, timeout, raw=raw, replay_timeout=replay)
    except SnapshotError as exc:
        node.unreadable = str(exc)
        return node
    version = doc.get("envdoctor_version")
    node.envdoctor_version = version if isinstance(version, str) else ""
    facts = node.facts = FactIndex()
    probes = [p for p in _list(doc.get("probes")) if isinstance(p, dict)]
    lists = [p.get("facts") for p in probes]
    try:  # the common case, at C speed: every fact a record (only a dict has a "key" item) with a text key
        for listed in lists:
            if type(listed) is list:
                facts.update(zip(map(_KEY, listed), listed))
        "".join(facts)  # every key a text (TypeError otherwise), at half the cost of gathering their types
    except (TypeError, KeyError):  # a damaged report: take the facts that are facts, one by one
        facts.clear()
        for listed in lists:
            for fact in _list(listed):
                if type(fact) is dict:
                    key = fact.get("key")
                    if type(key) is str:
                        facts[key] = fact
    for probe, listed in zip(probes, lists):
        first = listed[0] if type(listed) is list and listed else None
        if probe.get("name") == "frameworks" and type(first) is dict and str(first.get("key")).startswith("framework."):
            facts._frameworks = True  # known without a scan of every fact (see FactIndex)
    node.findings = []
    for f in _list(doc.get("findings")):
        if not isinstance(f, dict) or not isinstance(f.get("code"), str):
            continue
        if f.get("severity") not in SEVERITIES:
            # A severity this envdoctor does not know (a newer one wrote it, or the file was edited): kept and
            # counted as an error, since a node whose findings cannot be judged is not passed.
            f = dict(f, severity="error", title="(severity %r, unknown to this envdoctor) %s" % (
                str(f.get("severity"))[:40], f.get("title", "")))
        node.findings.append(f)
    newer = _newer_schema(doc, node.kind)
    if newer:
        node.findings.append({"code": "envdoctor.newer_schema", "severity": "warning", "components": ["envdoctor"],
                              "title": newer})
    return node


def _newer_schema(doc: Dict[str, Any], kind: str) -> str:
    """Why ``doc`` was written in a newer format than this envdoctor reads ("" when it was not)."""
    from .report import REPORT_SCHEMA_VERSION

    version = doc.get("schema_version")
    if kind == "report" and isinstance(version, int) and not isinstance(version, bool) \
            and version > REPORT_SCHEMA_VERSION:
        return ("written by a newer envdoctor (%s, report schema %d; this one reads %d): facts and findings it "
                "added are not shown" % (doc.get("envdoctor_version") or "unknown version", version,
                                         REPORT_SCHEMA_VERSION))
    return ""


# ------------------------------------------------------------------------------------------ facts
#
# Each row's function gives the node's value as shown, or None when the report does not hold the
# facts the row is made from (an older envdoctor wrote it, or its probe failed): absent, not a value.

def _value(facts: Facts, key: str) -> Any:
    f = facts.get(key)
    return f.get("value") if isinstance(f, dict) and f.get("status") == "ok" else None


def _status(facts: Facts, key: str) -> Optional[str]:
    """None when the fact is absent, else its status (a report's unknown is worth showing as such)."""
    f = facts.get(key)
    if not isinstance(f, dict):
        return None
    status = f.get("status")
    return status if isinstance(status, str) else "unknown"  # a damaged report's status is no status


def _plain(facts: Facts, key: str, field_: Optional[str] = None) -> Optional[str]:
    f = facts.get(key)
    if not isinstance(f, dict):
        return None
    status = f.get("status")
    if status != "ok":
        return status.replace("_", " ") if isinstance(status, str) else "unknown"
    v = f.get("value")
    if field_ is not None:
        v = v.get(field_) if isinstance(v, dict) else None
    if v is None:
        return "none"
    if v is True or v is False:
        return "yes" if v else "no"
    return v if type(v) is str else str(v)


def _or(value: Optional[str], instead: str) -> str:
    return instead if value is None else value


def _gpu_count(facts: Facts) -> int:
    n = _value(facts, "gpu.count")
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 64 else 0


def _alike(facts: Facts, keys: List[str]) -> bool:
    """Whether the facts ``keys`` name are all there, all ok, and of one value that shows alike (see
    :data:`_ALIKE_TYPES`): then each shows as the first does. The common case (eight GPUs with ECC on), asked at C
    speed; anything else (a GPU without the fact, a damaged record) is for the caller to look at one by one."""
    records: List[Any] = list(map(facts.get, keys))  # None where a GPU lacks the fact
    try:
        if list(map(_STATUS, records)).count("ok") != len(records):
            return False
        values = list(map(_VALUE, records))
    except (KeyError, TypeError):  # a fact absent (None), or a record without a status or value
        return False
    first = values[0]
    return type(first) in _ALIKE_TYPES and values.count(first) == len(values) and (
        type(first) is str or len(set(map(type, values))) == 1)  # True == 1 == 1.0, shown yes, 1, 1.0


def _per_gpu(facts: Facts, name: str, show: Optional[Callable[[Facts, int], Optional[str]]] = None) -> Optional[str]:
    """One value per GPU, shown once when all GPUs agree (``yes``), else per GPU (``0:yes 1:no``)."""
    n = _gpu_count(facts)
    if not n:
        return "no GPU" if _status(facts, "gpu.count") == "ok" else _plain(facts, "gpu.count")
    if show is None and _alike(facts, gpu_keys(name, n)):
        return _plain(facts, "gpu.0." + name)
    if show is _pcie and _alike(facts, gpu_keys("pcie_gen_current", n)) \
            and _alike(facts, gpu_keys("pcie_width_current", n)):
        return _pcie(facts, 0)
    if show is None:
        got = [_plain(facts, key) for key in gpu_keys(name, n)]
    else:
        got = [show(facts, i) for i in range(n)]
    first = got[0]
    if first is not None and got.count(first) == n:
        return first  # the common case: every GPU the same
    if all(v is None for v in got):
        return None  # the report records no GPU's value: an envdoctor older than the fact
    values = [_or(v, "not recorded") for v in got]
    return values[0] if len(set(values)) == 1 else " ".join("%d:%s" % (i, v) for i, v in enumerate(values))


def _pcie(facts: Facts, i: int) -> Optional[str]:
    gen_key = "gpu.%d.pcie_gen_current" % i
    gen, width = _value(facts, gen_key), _value(facts, "gpu.%d.pcie_width_current" % i)
    if isinstance(gen, int) and isinstance(width, int):
        return "gen%d x%d" % (gen, width)
    return _plain(facts, gen_key)


def _gpus(facts: Facts) -> Optional[str]:
    n = _gpu_count(facts)
    if not n:
        return "none" if _status(facts, "gpu.count") == "ok" else _plain(facts, "gpu.count")
    keys = gpu_keys("name", n)
    if _alike(facts, keys):
        return "%d x %s" % (n, _plain(facts, keys[0]))
    names = Counter(_or(_plain(facts, key), "?") for key in keys)
    return ", ".join("%d x %s" % (c, name) for name, c in sorted(names.items()))


def _driver(facts: Facts) -> Optional[str]:
    if _value(facts, "driver.installed") is False:
        return "not installed"
    for key in ("driver.version", "driver.kernel_module.version"):
        if isinstance(_value(facts, key), str):
            return _value(facts, key)
    for key in ("driver.version", "driver.installed", "driver.kernel_module.version"):
        if _status(facts, key) is not None:
            return _plain(facts, key)
    return None


def _shown(facts: Facts, found: Found) -> Optional[str]:
    """An unknown derived fact as fleet shows it: the status of the fact that said so, None when the report does
    not hold it."""
    return _plain(facts, found.key) if found.key else None


def _toolkit(facts: Facts) -> Optional[str]:
    got = ReportView(facts).toolkit()
    if got.known and got.value:
        return ("nvcc %s" if got.key == "cuda.nvcc" else "/usr/local/cuda %s") % got.value
    return "none" if got.known else _shown(facts, got)


def _loader(facts: Facts, prefix: str) -> Optional[str]:
    """The versions of the libraries the dynamic loader picks for ``prefix`` (``libcudnn.so.``)."""
    got = ReportView(facts).loader_picks(prefix)
    if not got.known:
        return _plain(facts, "libraries.loader_choice")
    return ", ".join("%s %s" % (soname, version or "?") for soname, version in got.value) or "none"


def _framework(name: str) -> Callable[[Facts], Optional[str]]:
    def get(facts: Facts) -> Optional[str]:
        got = ReportView(facts).framework(name)
        if got.known and isinstance(got.value, dict):
            return str(got.value.get("version") or "installed")
        if got.known and not got.key:
            return "not installed"  # the frameworks probe ran and did not list it
        return _shown(facts, got)
    return get


def _docker(facts: Facts) -> Optional[str]:
    v = _value(facts, "container.docker")
    if not isinstance(v, dict):
        return _plain(facts, "container.docker")
    if not v.get("installed"):
        return "not installed"
    daemon = v.get("server") or {"daemon_not_running": "not running", "not_contacted": "not contacted",
                                 "permission_denied": "no permission"}.get(str(v.get("error")), v.get("error") or "?")
    return "client %s, daemon %s" % (v.get("client") or "?", daemon)


def _toolkit_ctk(facts: Facts) -> Optional[str]:
    v = _value(facts, "container.toolkit")
    if not isinstance(v, dict):
        return _plain(facts, "container.toolkit")
    return (v.get("version") or "installed") if v.get("installed") else "not installed"


def _fact(key: str, field_: Optional[str] = None) -> Callable[[Facts], Optional[str]]:
    return lambda f: _plain(f, key, field_)


def _ratio(key: str) -> Callable[[Facts], Optional[str]]:
    """A bench ratio to one decimal (0.82 and 0.84 are the same health; 0.4 stands out), or why it is unknown."""
    def get(f: Facts) -> Optional[str]:
        v = _value(f, key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return "%.1f" % v
        return _plain(f, key)
    return get


#: (label, what it reads, how): the facts that decide whether a job runs on a node, in stack order.
FLEET_FACTS: List[Tuple[str, str, Callable[[Facts], Optional[str]]]] = [
    ("OS", "os.name", _fact("os.name")),
    ("Kernel", "kernel.release", _fact("kernel.release")),
    ("glibc", "os.glibc", _fact("os.glibc")),
    ("NVIDIA driver", "driver.version", _driver),
    ("Driver's CUDA", "driver.cuda_version", _fact("driver.cuda_version")),
    ("Kernel module", "driver.kernel_module.flavor", _fact("driver.kernel_module.flavor")),
    ("Fabric manager", "driver.fabric_manager.state", _fact("driver.fabric_manager.state")),
    ("GPUs", "gpu.count, gpu.N.name", _gpus),
    ("ECC", "gpu.N.ecc_mode_current", lambda f: _per_gpu(f, "ecc_mode_current")),
    ("MIG", "gpu.N.mig_mode_current", lambda f: _per_gpu(f, "mig_mode_current")),
    ("Persistence mode", "gpu.N.persistence_mode", lambda f: _per_gpu(f, "persistence_mode")),
    ("PCIe link (now)", "gpu.N.pcie_gen_current, pcie_width_current", lambda f: _per_gpu(f, "", _pcie)),
    ("NVLinks active", "gpu.N.nvlink_active", lambda f: _per_gpu(f, "nvlink_active")),
    ("GPU fabric", "topology.fabric.state", _fact("topology.fabric.state")),
    ("NCCL's slowest transport", "topology.min_nccl_transport", _fact("topology.min_nccl_transport")),
    ("IOMMU (GPUs)", "topology.iommu_mode", _fact("topology.iommu_mode")),
    ("ACS redirect on P2P paths", "topology.acs_redirect", _fact("topology.acs_redirect")),
    ("Bench: H2D / PCIe link", "bench.h2d_ratio", _ratio("bench.h2d_ratio")),
    ("Bench: D2H / PCIe link", "bench.d2h_ratio", _ratio("bench.d2h_ratio")),
    ("Bench: D2D / memory", "bench.d2d_ratio", _ratio("bench.d2d_ratio")),
    ("Bench: peer / path", "bench.p2p_ratio", _ratio("bench.p2p_ratio")),
    ("CUDA toolkit", "cuda.nvcc, cuda.default_symlink", _toolkit),
    ("cuDNN (loader picks)", "libraries.loader_choice", lambda f: _loader(f, "libcudnn.so.")),
    ("NCCL (loader picks)", "libraries.loader_choice", lambda f: _loader(f, "libnccl.so.")),
    ("gcc", "compiler.gcc", _fact("compiler.gcc", "version")),
    ("Python", "python.version", _fact("python.version")),
] + [(fw.display, "framework." + fw.name, _framework(fw.name)) for fw in frameworks.FRAMEWORKS if fw.fleet] + [
    ("Docker", "container.docker", _docker),
    ("NVIDIA Container Toolkit", "container.toolkit", _toolkit_ctk),
    ("nvidia runtime in Docker", "container.nvidia_runtime_configured",
     _fact("container.nvidia_runtime_configured")),
]

#: How an absent fact's entry is written among a fact's values in JSON (with ``"absent": true``).
ABSENT = "-"
#: Values that say a fleet has no such thing: a fact every node shares with one of them is left out.
_NOTHING = ("not installed", "none")


# ------------------------------------------------------------------------------------------ comparison

@dataclass
class FactSpread:
    label: str
    reads: str
    values: List[Tuple[str, List[str]]]  # (value, nodes), most common first
    absent: List[str] = field(default_factory=list)  # the nodes whose reports do not hold the fact

    @property
    def uniform(self) -> bool:
        """One value across the nodes that hold the fact (a node without it is no difference)."""
        return len(self.values) <= 1

    def to_dict(self) -> Dict[str, Any]:
        values: List[Dict[str, Any]] = [{"value": v, "nodes": n} for v, n in self.values]
        if self.absent:
            values.append({"value": ABSENT, "nodes": self.absent, "absent": True})
        return {"label": self.label, "reads": self.reads, "uniform": self.uniform, "values": values}


@dataclass
class FindingSpread:
    code: str
    severity: str
    title: str  # as found on title_from
    title_from: str  # the first node found with the worst severity
    nodes: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "title": self.title, "title_from": self.title_from,
                "nodes": self.nodes}


@dataclass
class Deviation:
    node: str
    label: str
    expected: str
    found: str

    def to_dict(self) -> Dict[str, Any]:
        return {"node": self.node, "label": self.label, "expected": self.expected, "found": self.found}


@dataclass
class NotCompared:
    """A fact a node could not be held against the baseline for: one of the two reports lacks it."""

    label: str
    nodes: List[str]
    baseline_lacks_it: bool  # True: the baseline's report does not hold it (nodes: those whose reports do)

    def to_dict(self) -> Dict[str, Any]:
        return {"label": self.label, "nodes": self.nodes, "baseline_lacks_it": self.baseline_lacks_it}


@dataclass
class Fleet:
    nodes: List[Node]
    facts: List[FactSpread]
    findings: List[FindingSpread]
    baseline: Optional[Node] = None
    deviations: List[Deviation] = field(default_factory=list)
    uniform_required: bool = False
    not_compared: List[NotCompared] = field(default_factory=list)
    policy: Optional[str] = None  # the policy's path, when the nodes were judged against one
    _failures: Optional[List[Node]] = field(default=None, init=False, repr=False, compare=False)

    def policy_failures(self) -> List[Node]:
        """The readable nodes that do not meet the policy, most failing requirements and findings first
        (sorted once: the summary, the exit code and each output ask for them)."""
        if self.policy is None:
            return []
        if self._failures is None:
            bad = [(len(n.summary.blocking()) + len(n.summary.failing), natural_key(n.name), n)
                   for n in self.readable if n.summary is not None and not n.summary.ready]
            bad.sort(key=lambda cn: (-cn[0], cn[1]))
            self._failures = [n for _, _, n in bad]
        return list(self._failures)

    def policy_dict(self) -> Optional[Dict[str, Any]]:
        if self.policy is None:
            return None
        failing = self.policy_failures()
        return {"path": self.policy, "passing": len(self.readable) - len(failing), "failing": [
            {"node": n.name,
             "requirements": [{"name": r[0], "status": r[1], "want": r[2], "found": r[3]}
                              for r in n.summary.blocking()],
             "findings": [f["code"] for f in n.summary.failing]} for n in failing]}

    @property
    def readable(self) -> List[Node]:
        return [n for n in self.nodes if not n.unreadable]

    def versions(self) -> List[Tuple[str, int]]:
        """(envdoctor version, how many readable nodes' reports it wrote), most nodes first; "" unknown."""
        seen = Counter(n.envdoctor_version for n in self.readable)
        return sorted(seen.items(), key=lambda vc: (-vc[1], natural_key(vc[0])))

    def summary(self) -> Dict[str, int]:
        return {"nodes": len(self.nodes), "unreadable": len(self.nodes) - len(self.readable),
                "with_errors": sum(1 for n in self.readable if n.count("error")),
                "with_warnings": sum(1 for n in self.readable if n.count("warning")),
                "differing_facts": sum(1 for f in self.facts if not f.uniform),
                "deviations": len(self.deviations),
                **({"failing_policy": len(self.policy_failures())} if self.policy is not None else {})}

    @property
    def exit_code(self) -> int:
        """0: every node read, none with errors (nor, when asked, off the baseline or the fleet's one
        value); 1: otherwise; 2: no node could be read at all."""
        s = self.summary()
        if not self.readable:
            return 2
        failed = s["unreadable"] or s["with_errors"] or s["deviations"] or s.get("failing_policy") or (
            self.uniform_required and s["differing_facts"])
        return 1 if failed else 0

    def to_dict(self, envdoctor_version: str, generated: str) -> Dict[str, Any]:
        summary: Dict[str, Any] = dict(self.summary())
        summary["envdoctor_versions"] = [{"version": v or None, "nodes": c} for v, c in self.versions()]
        return {
            "schema_version": FLEET_SCHEMA_VERSION, "envdoctor_version": envdoctor_version, "generated": generated,
            "nodes": [n.to_dict() for n in self.nodes],
            "facts": [f.to_dict() for f in self.facts],
            "findings": [f.to_dict() for f in self.findings],
            "baseline": None if self.baseline is None else {
                "name": self.baseline.name, "path": self.baseline.path,
                "deviations": [d.to_dict() for d in self.deviations],
                "not_compared": [c.to_dict() for c in self.not_compared]},
            "summary": summary,
            **({"policy": self.policy_dict()} if self.policy is not None else {}),
        }


def _spread(label: str, reads: str, nodes: Sequence[Node], how: Callable[[Facts], Optional[str]]) -> FactSpread:
    """``nodes`` in natural order, so each value's nodes come out in it too."""
    by_value: Dict[str, List[str]] = {}
    absent: List[str] = []
    for n in nodes:
        value = n.values[label] if label in n.values else how(n.facts)
        if value is None:
            absent.append(n.name)
        else:
            by_value.setdefault(value, []).append(n.name)
    values = sorted(by_value.items(), key=lambda kv: (-len(kv[1]), natural_key(kv[0])))
    return FactSpread(label, reads, values, absent)


def compare(nodes: List[Node], baseline: Optional[Node] = None, uniform: bool = False,
            policy: Optional[str] = None) -> Fleet:
    readable = [n for n in nodes if not n.unreadable]
    ordered = sorted(readable, key=lambda n: natural_key(n.name))  # once: every list below follows it
    facts = [_spread(label, reads, ordered, how) for label, reads, how in FLEET_FACTS]
    # a fact no node has (a fleet without Docker) is noise: kept only when it differs
    facts = [f for f in facts if not (f.uniform and (not f.values or f.values[0][0] in _NOTHING))]
    seen: Dict[str, FindingSpread] = {}
    seen_on: Dict[str, Set[str]] = {}
    for n in readable:
        for f in n.findings:
            title = str(f.get("title") or "")
            spread = seen.setdefault(f["code"], FindingSpread(f["code"], f["severity"], title, n.name, []))
            if SEVERITIES.index(f["severity"]) < SEVERITIES.index(spread.severity):
                spread.severity, spread.title, spread.title_from = f["severity"], title, n.name
    for n in ordered:
        for f in n.findings:
            names = seen_on.setdefault(f["code"], set())
            if n.name not in names:
                names.add(n.name)
                seen[f["code"]].nodes.append(n.name)
    findings = sorted(seen.values(), key=lambda s: (SEVERITIES.index(s.severity), -len(s.nodes), s.code))
    deviations: List[Deviation] = []
    not_compared: List[NotCompared] = []
    if baseline is not None and not baseline.unreadable:
        for label, _, how in FLEET_FACTS:
            want = baseline.values[label] if label in baseline.values else how(baseline.facts)
            got = [(n.name, n.values[label] if label in n.values else how(n.facts)) for n in ordered]
            if want is None:
                if any(v is not None for _, v in got):
                    not_compared.append(NotCompared(label, [name for name, v in got if v is not None], True))
                continue
            lacking = [name for name, v in got if v is None]
            if lacking:
                not_compared.append(NotCompared(label, lacking, False))
            deviations += [Deviation(name, label, want, v) for name, v in got if v is not None and v != want]
    return Fleet(nodes, facts, findings, baseline, deviations, uniform, not_compared, policy)


# ------------------------------------------------------------------------------------------ JSON output


def json_chunks(doc: Any) -> Iterator[str]:
    """``doc`` as :func:`envdoctor.jsontext.dumps` writes it, in pieces (10,000 nodes: 14 MB of JSON, never one
    string): :func:`envdoctor.jsontext.chunks`."""
    from .jsontext import chunks

    return chunks(doc)


def dumps(doc: Any) -> str:
    """:func:`json_chunks` joined: ``doc`` as :func:`envdoctor.jsontext.dumps` writes it."""
    return "".join(json_chunks(doc))

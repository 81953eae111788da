"""Many machines at once: which nodes differ from the rest, and what is wrong where.

A cluster admin collects one file per node (``envdoctor diagnose --format json > node17.json``, or
``envdoctor snapshot -o node17.json.gz``) and asks ``envdoctor fleet reports/``:

* for each fact that decides whether a job runs (driver, GPUs, CUDA, cuDNN, frameworks, Docker...),
  the values across the fleet and which nodes hold the minority ones;
* each finding code, worst first, with the nodes it was found on;
* with ``baseline``: every node's deviations from a known-good node.

Nodes are named after their files (``node17.json`` -> ``node17``), since reports carry no host
name.  A report is read as it is; a snapshot is replayed by this envdoctor (newer checks apply).
A file that cannot be read is a node with the reason, never the end of the run.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

FLEET_SCHEMA_VERSION = 1
SEVERITIES = ("error", "warning", "info")
_SUFFIXES = re.compile(r"(\.snapshot)?(\.json)?(\.gz)?$")

Facts = Dict[str, Dict[str, Any]]  # fact key -> the fact as a report holds it ({"value", "status", ...})


@dataclass
class Node:
    name: str
    path: str
    kind: str = ""  # "report" or "snapshot"; "" when unreadable
    facts: Facts = field(default_factory=dict)
    findings: List[Dict[str, Any]] = field(default_factory=list)
    envdoctor_version: str = ""
    unreadable: str = ""  # why the file could not be used

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


def unique_names(paths: Sequence[str]) -> List[str]:
    """Each file's node name, lengthened by its parent directories until no two nodes share one
    (``a/snapshot.json``, ``b/snapshot.json`` -> ``a/snapshot``, ``b/snapshot``)."""
    parts = [[p for p in os.path.normpath(path).split(os.sep) if p] for path in paths]
    depth = [1] * len(paths)

    def name(i: int) -> str:
        tail = parts[i][-depth[i]:] if parts[i] else [paths[i]]
        tail[-1] = node_name(tail[-1])
        return "/".join(tail)

    for _ in range(max((len(p) for p in parts), default=0)):
        names = [name(i) for i in range(len(paths))]
        clash = {n for n, c in Counter(names).items() if c > 1}
        if not clash:
            break
        for i, n in enumerate(names):
            if n in clash and depth[i] < len(parts[i]):
                depth[i] += 1
    names = [name(i) for i in range(len(paths))]
    # nodes/node17/report.json, nodes/node18/report.json...: the directory is the name
    last = {n.rsplit("/", 1)[-1] for n in names}
    if len(names) > 1 and len(last) == 1 and all("/" in n for n in names):
        trimmed = [n.rsplit("/", 1)[0] for n in names]
        if len(set(trimmed)) == len(trimmed):
            return trimmed
    return names


def expand(paths: Sequence[str]) -> List[str]:
    """The files named, with each directory replaced by its ``*.json`` and ``*.json.gz`` files (sorted)."""
    out: List[str] = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, n) for n in os.listdir(p)
                          if n.endswith((".json", ".json.gz")) and not n.startswith("."))
        else:
            out.append(p)
    return out


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def load_node(path: str, timeout: float, name: Optional[str] = None) -> Node:
    """One node from a report or a snapshot file; never raises for the file's sake."""
    node = Node(name or node_name(path), path)
    try:
        return _load(node, timeout)
    except Exception as exc:  # noqa: BLE001 - one strange file must not end a fleet's comparison
        node.unreadable = "%s could not be used: %s: %s (a bug in envdoctor; please report it)" % (
            path, type(exc).__name__, exc)
        return node


def _load(node: Node, timeout: float) -> Node:
    from .host.snapshot import SnapshotError, SnapshotHost, read_document, validate_document

    path = node.path
    try:
        doc = read_document(path, timeout, noun="report or snapshot")
        if isinstance(doc.get("probes"), list):
            node.kind = "report"
        else:
            validate_document(doc, path)
            from .host.privacy import Scrubber
            from .report import diagnose

            report = diagnose(SnapshotHost(doc, path), scrubber=Scrubber(include_host=True))
            doc = report.to_dict()
            node.kind = "snapshot"
    except SnapshotError as exc:
        node.unreadable = str(exc)
        return node
    version = doc.get("envdoctor_version")
    node.envdoctor_version = version if isinstance(version, str) else ""
    for probe in _list(doc.get("probes")):
        for fact in _list(probe.get("facts")) if isinstance(probe, dict) else []:
            if isinstance(fact, dict) and isinstance(fact.get("key"), str):
                node.facts[fact["key"]] = fact
    node.findings = [f for f in _list(doc.get("findings")) if isinstance(f, dict)
                     and isinstance(f.get("code"), str) and f.get("severity") in SEVERITIES]
    if not node.facts and node.kind == "report":
        node.unreadable = "%s holds no facts: not an envdoctor report" % path
    return node


# ------------------------------------------------------------------------------------------ facts

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


def _plain(facts: Facts, key: str, field_: Optional[str] = None, absent: str = "-") -> str:
    status = _status(facts, key)
    if status is None:
        return absent
    if status != "ok":
        return status.replace("_", " ")
    v = _value(facts, key)
    if field_ is not None:
        v = v.get(field_) if isinstance(v, dict) else None
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _gpu_count(facts: Facts) -> int:
    n = _value(facts, "gpu.count")
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 64 else 0


def _per_gpu(facts: Facts, name: str, show: Optional[Callable[[Facts, int], str]] = None) -> str:
    """One value per GPU, shown once when all GPUs agree (``yes``), else per GPU (``0:yes 1:no``)."""
    n = _gpu_count(facts)
    if not n:
        return "no GPU" if _status(facts, "gpu.count") == "ok" else _plain(facts, "gpu.count")
    values = [show(facts, i) if show else _plain(facts, "gpu.%d.%s" % (i, name), absent="not recorded")
              for i in range(n)]
    return values[0] if len(set(values)) == 1 else " ".join("%d:%s" % (i, v) for i, v in enumerate(values))


def _pcie(facts: Facts, i: int) -> str:
    gen, width = _value(facts, "gpu.%d.pcie_gen_current" % i), _value(facts, "gpu.%d.pcie_width_current" % i)
    if isinstance(gen, int) and isinstance(width, int):
        return "gen%d x%d" % (gen, width)
    return _plain(facts, "gpu.%d.pcie_gen_current" % i, absent="not recorded")


def _gpus(facts: Facts) -> str:
    n = _gpu_count(facts)
    if not n:
        return "none" if _status(facts, "gpu.count") == "ok" else _plain(facts, "gpu.count")
    names = Counter(_plain(facts, "gpu.%d.name" % i, absent="?") for i in range(n))
    return ", ".join("%d x %s" % (c, name) for name, c in sorted(names.items()))


def _driver(facts: Facts) -> str:
    if _value(facts, "driver.installed") is False:
        return "not installed"
    for key in ("driver.version", "driver.kernel_module.version"):
        if isinstance(_value(facts, key), str):
            return _value(facts, key)
    return _plain(facts, "driver.version")


def _toolkit(facts: Facts) -> str:
    nvcc = _value(facts, "cuda.nvcc")
    if isinstance(nvcc, dict) and nvcc.get("version"):
        return "nvcc %s" % nvcc["version"]
    link = _value(facts, "cuda.default_symlink")
    if isinstance(link, dict) and link.get("version"):
        return "/usr/local/cuda %s" % link["version"]
    status = _status(facts, "cuda.nvcc")
    return "none" if status == "ok" else (status or "-").replace("_", " ")


def _loader(facts: Facts, prefix: str) -> str:
    """The version of the library the dynamic loader picks for ``prefix`` (``libcudnn.so.``)."""
    choice = _value(facts, "libraries.loader_choice")
    if not isinstance(choice, dict):
        return _plain(facts, "libraries.loader_choice")
    picked = sorted("%s %s" % (s, (r or {}).get("version") or "?") for s, r in choice.items()
                    if s.startswith(prefix) and isinstance(r, dict) and r.get("path"))
    return ", ".join(picked) or "none"


def _framework(name: str) -> Callable[[Facts], str]:
    def get(facts: Facts) -> str:
        v = _value(facts, "framework." + name)
        if isinstance(v, dict):
            return str(v.get("version") or "installed")
        return "not installed" if _status(facts, "framework." + name) in (None, "ok") else _plain(
            facts, "framework." + name)
    return get


def _docker(facts: Facts) -> str:
    v = _value(facts, "container.docker")
    if not isinstance(v, dict):
        return _plain(facts, "container.docker")
    if not v.get("installed"):
        return "not installed"
    daemon = v.get("server") or {"daemon_not_running": "not running", "not_contacted": "not contacted",
                                 "permission_denied": "no permission"}.get(str(v.get("error")), v.get("error") or "?")
    return "client %s, daemon %s" % (v.get("client") or "?", daemon)


def _toolkit_ctk(facts: Facts) -> str:
    v = _value(facts, "container.toolkit")
    if not isinstance(v, dict):
        return _plain(facts, "container.toolkit")
    return (v.get("version") or "installed") if v.get("installed") else "not installed"


#: (label, what it reads, how): the facts that decide whether a job runs on a node, in stack order.
FLEET_FACTS: List[Tuple[str, str, Callable[[Facts], str]]] = [
    ("OS", "os.name", lambda f: _plain(f, "os.name")),
    ("Kernel", "kernel.release", lambda f: _plain(f, "kernel.release")),
    ("glibc", "os.glibc", lambda f: _plain(f, "os.glibc")),
    ("NVIDIA driver", "driver.version", _driver),
    ("Driver's CUDA", "driver.cuda_version", lambda f: _plain(f, "driver.cuda_version")),
    ("Kernel module", "driver.kernel_module.flavor", lambda f: _plain(f, "driver.kernel_module.flavor")),
    ("Fabric manager", "driver.fabric_manager.state", lambda f: _plain(f, "driver.fabric_manager.state")),
    ("GPUs", "gpu.count, gpu.N.name", _gpus),
    ("ECC", "gpu.N.ecc_mode_current", lambda f: _per_gpu(f, "ecc_mode_current")),
    ("MIG", "gpu.N.mig_mode_current", lambda f: _per_gpu(f, "mig_mode_current")),
    ("Persistence mode", "gpu.N.persistence_mode", lambda f: _per_gpu(f, "persistence_mode")),
    ("PCIe link (now)", "gpu.N.pcie_gen_current, pcie_width_current", lambda f: _per_gpu(f, "", _pcie)),
    ("CUDA toolkit", "cuda.nvcc, cuda.default_symlink", _toolkit),
    ("cuDNN (loader picks)", "libraries.loader_choice", lambda f: _loader(f, "libcudnn.so.")),
    ("NCCL (loader picks)", "libraries.loader_choice", lambda f: _loader(f, "libnccl.so.")),
    ("gcc", "compiler.gcc", lambda f: _plain(f, "compiler.gcc", "version")),
    ("Python", "python.version", lambda f: _plain(f, "python.version")),
    ("PyTorch", "framework.torch", _framework("torch")),
    ("TensorFlow", "framework.tensorflow", _framework("tensorflow")),
    ("JAX", "framework.jax", _framework("jax")),
    ("ONNX Runtime", "framework.onnxruntime", _framework("onnxruntime")),
    ("Docker", "container.docker", _docker),
    ("NVIDIA Container Toolkit", "container.toolkit", _toolkit_ctk),
    ("nvidia runtime in Docker", "container.nvidia_runtime_configured",
     lambda f: _plain(f, "container.nvidia_runtime_configured")),
]


# ------------------------------------------------------------------------------------------ comparison

@dataclass
class FactSpread:
    label: str
    reads: str
    values: List[Tuple[str, List[str]]]  # (value, nodes), most common first

    @property
    def uniform(self) -> bool:
        return len(self.values) <= 1

    def to_dict(self) -> Dict[str, Any]:
        return {"label": self.label, "reads": self.reads, "uniform": self.uniform,
                "values": [{"value": v, "nodes": n} for v, n in self.values]}


@dataclass
class FindingSpread:
    code: str
    severity: str
    title: str  # from the first node it was found on
    nodes: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "title": self.title, "nodes": self.nodes}


@dataclass
class Deviation:
    node: str
    label: str
    expected: str
    found: str

    def to_dict(self) -> Dict[str, Any]:
        return {"node": self.node, "label": self.label, "expected": self.expected, "found": self.found}


@dataclass
class Fleet:
    nodes: List[Node]
    facts: List[FactSpread]
    findings: List[FindingSpread]
    baseline: Optional[Node] = None
    deviations: List[Deviation] = field(default_factory=list)
    uniform_required: bool = False

    @property
    def readable(self) -> List[Node]:
        return [n for n in self.nodes if not n.unreadable]

    def summary(self) -> Dict[str, int]:
        return {"nodes": len(self.nodes), "unreadable": len(self.nodes) - len(self.readable),
                "with_errors": sum(1 for n in self.readable if n.count("error")),
                "with_warnings": sum(1 for n in self.readable if n.count("warning")),
                "differing_facts": sum(1 for f in self.facts if not f.uniform),
                "deviations": len(self.deviations)}

    @property
    def exit_code(self) -> int:
        """0: every node read, none with errors (nor, when asked, off the baseline or the fleet's one
        value); 1: otherwise; 2: no node could be read at all."""
        s = self.summary()
        if not self.readable:
            return 2
        failed = s["unreadable"] or s["with_errors"] or s["deviations"] or (
            self.uniform_required and s["differing_facts"])
        return 1 if failed else 0

    def to_dict(self, envdoctor_version: str, generated: str) -> Dict[str, Any]:
        return {
            "schema_version": FLEET_SCHEMA_VERSION, "envdoctor_version": envdoctor_version, "generated": generated,
            "nodes": [n.to_dict() for n in self.nodes],
            "facts": [f.to_dict() for f in self.facts],
            "findings": [f.to_dict() for f in self.findings],
            "baseline": None if self.baseline is None else {
                "name": self.baseline.name, "path": self.baseline.path,
                "deviations": [d.to_dict() for d in self.deviations]},
            "summary": self.summary(),
        }


def _spread(nodes: Sequence[Node], how: Callable[[Facts], str]) -> List[Tuple[str, List[str]]]:
    by_value: Dict[str, List[str]] = {}
    for n in nodes:
        by_value.setdefault(how(n.facts), []).append(n.name)
    return sorted(by_value.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def compare(nodes: List[Node], baseline: Optional[Node] = None, uniform: bool = False) -> Fleet:
    readable = [n for n in nodes if not n.unreadable]
    facts = [FactSpread(label, reads, _spread(readable, how)) for label, reads, how in FLEET_FACTS]
    # a fact no node has (a fleet without Docker) is noise: kept only when it differs
    facts = [f for f in facts if not (f.uniform and f.values and f.values[0][0] in ("-", "not installed", "none"))]
    seen: Dict[str, FindingSpread] = {}
    for n in readable:
        for f in n.findings:
            spread = seen.setdefault(f["code"], FindingSpread(f["code"], f["severity"], str(f.get("title") or ""), []))
            if SEVERITIES.index(f["severity"]) < SEVERITIES.index(spread.severity):
                spread.severity, spread.title = f["severity"], str(f.get("title") or "")
            if n.name not in spread.nodes:
                spread.nodes.append(n.name)
    findings = sorted(seen.values(), key=lambda s: (SEVERITIES.index(s.severity), -len(s.nodes), s.code))
    deviations: List[Deviation] = []
    if baseline is not None and not baseline.unreadable:
        for label, _, how in FLEET_FACTS:
            want = how(baseline.facts)
            for n in readable:
                got = how(n.facts)
                if got != want:
                    deviations.append(Deviation(n.name, label, want, got))
    return Fleet(nodes, facts, findings, baseline, deviations, uniform)

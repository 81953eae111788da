"""What to measure, and what to judge it against: the GPUs' facts turned into the child's job.

From the facts of the probes (``gpu.N.*``: name, PCI address, PCIe generation and width; the topology layer's
``topology.gpus`` and ``topology.pairs`` when it ran) and, for each GPU, where it sits: the CPUs and NUMA node
the kernel lists as local to it (``/sys/bus/pci/devices/BDF/local_cpulist`` and ``numa_node``, read through
the host), and a NUMA node with memory that is not its own (``/sys/devices/system/node/has_memory``), for the
remote-memory copy.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..facts import Facts
from ..host.base import Host

TESTS = ("h2d", "d2h", "d2d", "p2p")
PCI_DEVICES = "/sys/bus/pci/devices"
NODES_WITH_MEMORY = "/sys/devices/system/node/has_memory"
#: A CPU list longer than this is not a machine's (a garbled file must not size a list).
MOST_CPUS = 8192


class BenchError(Exception):
    """The bench cannot run as asked (no usable GPU, a GPU that does not exist): said to the user, exit 2."""


class Target:
    """One GPU to measure: what the facts say of it."""

    def __init__(self, index: int, facts: Facts) -> None:
        pre = "gpu.%d." % index
        self.index = index
        self.name = facts.text(pre + "name") or "GPU %d" % index
        self.bus_id = canonical_bdf(facts.text(pre + "pci_bus_id"))
        self.cc = facts.text(pre + "compute_capability")
        self.architecture = facts.text(pre + "architecture")
        self.gen_max = _count(facts, pre + "pcie_gen_max", 16)
        self.width_max = _count(facts, pre + "pcie_width_max", 64)
        self.gen_idle = _count(facts, pre + "pcie_gen_current", 16)
        self.width_idle = _count(facts, pre + "pcie_width_current", 64)
        bw = facts.value(pre + "memory_bandwidth_gbps")
        self.nvml_bandwidth = float(bw) if isinstance(bw, (int, float)) and not isinstance(bw, bool) and bw > 0 \
            else None
        self.cpus: Optional[List[int]] = None
        self.cpus_text: Optional[str] = None
        self.numa_node: Optional[int] = None
        self.remote_node: Optional[int] = None
        self.c2c = False

    def job(self) -> Dict[str, Any]:
        return {"index": self.index, "bus_id": self.bus_id, "cpus": self.cpus, "numa_node": self.numa_node,
                "remote_node": self.remote_node}


def _count(facts: Facts, key: str, most: int) -> Optional[int]:
    v = facts.count(key, most)
    return v if v else None


def canonical_bdf(bus_id: Any) -> Optional[str]:
    """``00000000:18:00.0`` (NVML) or ``0000:18:00.0`` -> ``0000:18:00.0`` (sysfs); None for anything else."""
    m = re.match(r"^\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*$", str(bus_id or ""))
    if not m:
        return None
    return "%04x:%02x:%02x.%x" % tuple(int(g, 16) for g in m.groups())


def parse_cpulist(text: Optional[str]) -> Optional[List[int]]:
    """``0-15,32-47`` -> the CPU numbers; None for anything that is not such a list (or an absurd one)."""
    if not text or not re.match(r"^\s*\d+(-\d+)?(,\d+(-\d+)?)*\s*$", text):
        return None
    out: List[int] = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        a, b = int(lo), int(hi or lo)
        if b < a or b - a > MOST_CPUS or len(out) + b - a > MOST_CPUS:
            return None
        out.extend(range(a, b + 1))
    return out


def gpu_indices(facts: Facts) -> List[int]:
    """The GPUs NVML answered for (their index fact is there)."""
    count = facts.count("gpu.count", 1024) or 0
    return [i for i in range(count) if facts.get("gpu.%d.index" % i) is not None and facts.value(
        "gpu.%d.index" % i) is not None]


def usable(facts: Facts) -> Optional[str]:
    """Why this machine cannot be benched (no driver, no GPU...), None when it can."""
    if facts.value("gpu.count") == 0:
        return "no NVIDIA GPU on this machine (NVML counts none)"
    status = facts.get("gpu.count")
    if status is None or not status.known:
        why = (status.reason if status is not None else "") or facts.text("driver.nvml.status") or \
            "the NVIDIA driver did not answer"
        return "no usable NVIDIA GPU: %s" % why
    if not gpu_indices(facts):
        return "no usable NVIDIA GPU: NVML answered for none of the %s GPUs" % facts.value("gpu.count")
    return None


def targets(facts: Facts, host: Host, gpu: Optional[int] = None) -> List[Target]:
    """The GPUs to measure (all, or ``gpu``), with where each sits; :class:`BenchError` when there is none."""
    why = usable(facts)
    if why is not None:
        raise BenchError(why)
    indices = gpu_indices(facts)
    if gpu is not None:
        if gpu not in indices:
            raise BenchError("there is no GPU %d here (NVML lists %s)" % (gpu, ", ".join(str(i) for i in indices)))
        indices = [gpu]
    mig = [i for i in indices if facts.value("gpu.%d.mig_mode_current" % i) is True]
    if mig:
        raise BenchError("GPU %s in MIG mode: copies run on a MIG instance, not the whole GPU; bench a GPU "
                         "without MIG" % ", ".join(str(i) for i in mig))
    out = [Target(i, facts) for i in indices]
    missing = [t.index for t in out if t.bus_id is None]
    if missing:
        raise BenchError("NVML gave no PCI address for GPU %s: the copies cannot be matched to CUDA's devices" %
                         ", ".join(str(i) for i in missing))
    topo = {g.get("index"): g for g in facts.items("topology.gpus") if isinstance(g, dict)}
    with_memory = parse_cpulist(_read(host, NODES_WITH_MEMORY)) or []
    for t in out:
        seen = topo.get(t.index) or {}
        cpulist = seen.get("cpulist") if "cpulist" in seen else _read(host, "%s/%s/local_cpulist" % (
            PCI_DEVICES, t.bus_id))
        node: Any = seen.get("numa_node") if "numa_node" in seen else _node(_read(host, "%s/%s/numa_node" % (
            PCI_DEVICES, t.bus_id)))
        t.cpus = parse_cpulist(cpulist if isinstance(cpulist, str) else None)
        t.cpus_text = cpulist.strip() if t.cpus and isinstance(cpulist, str) else None
        t.numa_node = node if isinstance(node, int) and not isinstance(node, bool) and node >= 0 else None
        far = [n for n in with_memory if n != t.numa_node]
        t.remote_node = far[0] if t.numa_node is not None and far else None
        t.c2c = seen.get("c2c") is True
    return out


def _read(host: Host, path: str) -> Optional[str]:
    text = host.read_text(path, limit=65536)
    return text.strip() if text is not None else None


def _node(text: Optional[str]) -> Optional[int]:
    return int(text) if text and re.match(r"^-?\d+$", text) else None


def pairs(found: Sequence[Target]) -> List[Tuple[int, int]]:
    """Every ordered pair of the GPUs (each direction is its own copy engine and path)."""
    return [(a.index, b.index) for a in found for b in found if a.index != b.index]


def peer_path(facts: Facts, a: int, b: int) -> Optional[Dict[str, Any]]:
    """The topology layer's record of the pair (``topology.pairs``: ``path`` in nvidia-smi's legend, ``nvlinks``,
    ``p2p`` statuses), or None when that layer did not run (then peer copies are measured, verified and shown,
    but not judged against a path)."""
    lo, hi = min(a, b), max(a, b)
    for p in facts.items("topology.pairs"):
        if isinstance(p, dict) and p.get("a") == lo and p.get("b") == hi:
            return p
    return None


def job(found: Sequence[Target], tests: Sequence[str], size: int, p2p_size: int, trials: int, force: bool
        ) -> Dict[str, Any]:
    """The child's job (see :mod:`envdoctor.bench.child`)."""
    return {"size": size, "p2p_size": p2p_size, "trials": trials, "tests": list(tests), "force": force,
            "gpus": [t.job() for t in found],
            "pairs": [list(p) for p in pairs(found)] if "p2p" in tests and len(found) > 1 else []}

"""The GPU a model must fit: this machine's (NVML's total and free memory, through the GPU probe's facts),
a snapshot's, or a product named with ``--gpu`` (``envdoctor/matrix/data/gpus.json``: its nominal memory)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ..matrix import hardware as hw

GiB = 1 << 30


class GpuError(Exception):
    """No GPU to judge against (the message says why and what to give instead)."""


class Gpu:
    """One GPU's memory and compute capability, and where they came from."""

    def __init__(self, name: str, total: int, cc: Optional[str], where: str, free: Optional[int] = None,
                 index: Optional[int] = None, nominal: bool = False, count: int = 1,
                 source: Optional[Dict[str, Any]] = None) -> None:
        self.name = name
        self.total = total
        self.cc = cc
        self.where = where
        self.free = free
        self.index = index
        self.nominal = nominal
        self.count = count
        self.source = source

    @property
    def cc_tuple(self) -> Optional[tuple]:
        try:
            major, minor = (self.cc or "").split(".")
            return int(major), int(minor)
        except ValueError:
            return None

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "index": self.index, "count": self.count, "compute_capability": self.cc,
                "memory_total_bytes": self.total, "memory_free_bytes": self.free, "nominal": self.nominal,
                "from": self.where}


def from_product(name: str, count: int = 1) -> Gpu:
    """A GPU product from the matrix (``--gpu NAME``)."""
    row = hw.gpu_product(name)
    if row is None:
        from ..matrix import load

        hits = [r for r in load("gpus") if name.strip().lower() in r["name"].lower()]
        if len(hits) == 1:
            row = hits[0]
        elif hits:
            raise GpuError("--gpu %r matches several products: %s; give one of them" % (
                name, ", ".join(r["name"] for r in hits)))
    if row is None:
        raise GpuError("GPU %r is not in envdoctor's GPU table (envdoctor matrix gpu lists what is)" % name)
    mem = row.get("memory_gb")
    if not isinstance(mem, (int, float)) or mem <= 0:
        raise GpuError("the GPU table gives no memory size for %s" % row["name"])
    return Gpu(row["name"], int(mem * GiB), row.get("cc"), "the product table (%s GB, nominal)" % mem,
               nominal=True, count=count, source=row.get("source"))


def from_facts(facts: Any, what: str) -> List[Gpu]:
    """Every GPU the facts describe that has a known memory size; ``what`` names the machine."""
    count = facts.value("gpu.count")
    out: List[Gpu] = []
    if not isinstance(count, int):
        return out
    for i in range(min(count, 64)):
        total = facts.value("gpu.%d.memory_total_bytes" % i)
        if not isinstance(total, int) or total <= 0:
            continue
        free = facts.value("gpu.%d.memory_free_bytes" % i)
        name = facts.value("gpu.%d.name" % i) or "GPU %d" % i
        cc = facts.value("gpu.%d.compute_capability" % i)
        out.append(Gpu(str(name), total, cc if isinstance(cc, str) else None, "%s, GPU %d (NVML)" % (what, i),
                       free=free if isinstance(free, int) and 0 <= free <= total else None, index=i))
    return out


def pick(gpus: List[Gpu], tp: int, index: Optional[int] = None) -> Gpu:
    """The GPU to judge: ``index`` when given, else the first; ``count`` the identical GPUs there are."""
    if not gpus:
        raise GpuError("no NVIDIA GPU with a known memory size here: give --gpu NAME (and --gpus N), or "
                       "--snapshot FILE of the machine that will run it")
    if index is not None:
        chosen = [g for g in gpus if g.index == index]
        if not chosen:
            raise GpuError("there is no GPU %d here (GPUs: %s)" % (index, ", ".join(str(g.index) for g in gpus)))
        g = chosen[0]
    else:
        # With several GPUs and tensor parallelism, the one with the least free memory is the one that limits.
        same = [x for x in gpus if x.name == gpus[0].name and x.total == gpus[0].total]
        g = min(same[:max(tp, 1)], key=lambda x: x.free if x.free is not None else x.total)
    g.count = sum(1 for x in gpus if x.name == g.name and x.total == g.total)
    return g

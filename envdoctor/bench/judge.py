"""The bench's verdicts: measured copies against the link and the GPU's memory (pure: no machine here).

Each result is the median of its trials, in GB/s (10^9 bytes a second); a device-to-device copy counts the
bytes read and the bytes written (2 x bytes, as NVIDIA's bandwidthTest does), so it compares with the memory's
bandwidth. The references:

* host <-> device: the PCIe link at the generation and width it can train to (``gpu.N.pcie_gen_max`` and
  ``pcie_width_max``: the lower of the GPU's and the slot's), after the line encoding (``links.json``);
* device <-> device: the product's memory bandwidth (``gpus.json``), else the one NVML's bus width and clock
  give (``gpu.N.memory_bandwidth_gbps``);
* peer copies: the path the topology layer reports (``topology.pairs``): NVLink (per-link rate x bonded links
  of the GPU's NVLink generation) or PCIe (the slower of the two GPUs' links). Where that layer did not run, the
  child asks NVML for the pair's common PCIe ancestor and P2P-over-NVLink status: a PCIe path is judged the same
  way, an NVLink one is shown without a verdict (only the topology layer counts the links).

A ratio of 0.75 or more passes, below 0.75 is a warning, below 0.5 an error (a warning when the reference is
not verified against the vendor's table). Pageable copies are shown against the link but not judged: they
pass through a staging buffer in host memory, and their rate says more about the CPU than about the bus.
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..checks import CodeDoc
from ..facts import Fact, ok, unknown
from ..findings import Finding, Fix
from ..matrix import hardware as hw
from .plan import Target, peer_path

WARN_BELOW = 0.75
ERROR_BELOW = 0.5
#: A remote-NUMA copy this much slower than the local one is worth saying.
NUMA_PENALTY = 0.10

BANDWIDTH_TEST = ("https://github.com/NVIDIA/cuda-samples/blob/master/Samples/1_Utilities/bandwidthTest/"
                  "bandwidthTest.cu")
LINKS = "envdoctor/matrix/data/links.json (PCIe: the kernel's PCIE_SPEED2MBS_ENC; NVLink: NVIDIA's pages)"
PCIE_QUERY = ("nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
              "pcie.link.width.current,pcie.link.width.max --format=csv")

CODES: Tuple[CodeDoc, ...] = (
    CodeDoc("bench.host_link_slow", "warning",
            "Pinned host-to-device or device-to-host copies run well below the PCIe link's rate.",
            "bench: median of the timed copies; gpu.N.pcie_gen_max, gpu.N.pcie_width_max; links.json",
            "Every batch a framework feeds the GPU crosses this link: a card in a slot wired for fewer lanes, a "
            "riser or a BIOS setting that holds the link back makes data loading the bottleneck. Below 0.75 of "
            "the link's rate is a warning, below 0.5 an error.", LINKS),
    CodeDoc("bench.memory_slow", "warning",
            "Device-to-device copies run well below the GPU's memory bandwidth.",
            "bench: median of the timed copies (bytes read + written); gpus.json memory_bandwidth_gbs, else "
            "gpu.N.memory_bandwidth_gbps",
            "Memory-bound kernels (most of inference) run at the memory's speed: a GPU held at low memory clocks "
            "(power or thermal limits, an application clock setting) or a faulty board is slow at everything.",
            BANDWIDTH_TEST),
    CodeDoc("bench.peer_slow", "warning",
            "Copies between two GPUs run well below the path between them (NVLink or PCIe).",
            "bench: median of the timed peer copies; topology.pairs (path, NVLinks); links.json",
            "Tensor and pipeline parallelism and NCCL's all-reduce move data between GPUs over this path: a "
            "degraded NVLink or a PCIe path through the CPUs makes every step wait.", LINKS),
    CodeDoc("bench.p2p_corrupt", "error",
            "A copy between two GPUs delivered different data from what was sent.",
            "bench: every peer copy read back and compared byte for byte",
            "Corrupted peer traffic (a bad riser or PCIe switch, a broken IOMMU/ACS set-up) silently corrupts "
            "training: NCCL's collectives give wrong sums, not errors."),
    CodeDoc("bench.link_trained_down", "warning",
            "Under load, the PCIe link ran below the generation or width it can train to.",
            "NVML's current PCIe generation and width sampled while the copies ran; gpu.N.pcie_gen_max, "
            "gpu.N.pcie_width_max",
            "An idle link drops to a lower generation to save power, which is normal; a link still down while data "
            "flows has trained down (signal integrity, a riser, a slot or BIOS setting) and caps every copy."),
    CodeDoc("bench.pcie_replays", "warning",
            "The GPU's PCIe replay counter grew while the copies ran.",
            "NVML's PCIe replay counter (nvmlDeviceGetPcieReplayCounter) before and after the copies",
            "A replay is a packet the link had to send again after an error: a growing count under load is a "
            "link with signal-integrity trouble, slower than it should be and close to failing."),
    CodeDoc("bench.remote_numa", "info",
            "Host memory on another NUMA node copies to the GPU more slowly than memory on the GPU's own node.",
            "bench: pinned host-to-device copies from the GPU's NUMA node and from another node",
            "A data loader whose memory sits on the far socket feeds the GPU at the remote rate: bind it to the "
            "GPU's node (numactl --cpunodebind=N --membind=N, or the launcher's NUMA options)."),
    CodeDoc("bench.gpu_busy", "warning",
            "Other processes were using the GPU while it was measured (bench --force).",
            "NVML's running processes on the GPU",
            "Copies share the link and the memory with the other work: the figures are lower than the machine's "
            "own, and the verdicts may be wrong."),
    CodeDoc("bench.cuda_error", "error",
            "A CUDA driver call of the bench failed.",
            "the CUDA driver's return code",
            "The driver refused a plain allocation or copy: the GPU is in a bad state (an Xid, an ECC error, "
            "a lost GPU), out of memory, or the driver is broken."),
    CodeDoc("bench.timed_out", "error",
            "A copy did not finish within the time limit: the driver or the GPU hung.",
            "the bench's child process, killed at --timeout",
            "A copy of a few hundred MiB takes milliseconds; one that never finishes is a hung GPU or driver "
            "(look for Xid errors in the kernel log), or a time limit too short for the GPUs' start-up."),
    CodeDoc("bench.crashed", "error",
            "The process that runs the copies died inside the CUDA driver.",
            "the bench's child process (a signal or an exit code)",
            "The driver crashed on a plain copy: a broken driver installation or a GPU in a bad state."),
)
CODE_DOCS: Dict[str, CodeDoc] = {c.code: c for c in CODES}

Ref = Dict[str, Any]


def gbps(nbytes: int, ms: float, weight: float = 1.0) -> Optional[float]:
    """GB/s (10^9 bytes a second) of ``weight`` x ``nbytes`` moved in ``ms`` milliseconds."""
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or ms <= 0 or nbytes <= 0:
        return None
    return weight * nbytes / (ms / 1e3) / 1e9


def verdict(ratio: Optional[float], verified: bool) -> str:
    """ok, warning or error for a ratio of the reference (an unverified reference never errs)."""
    if ratio is None:
        return "not_judged"
    if ratio >= WARN_BELOW:
        return "ok"
    if ratio >= ERROR_BELOW or not verified:
        return "warning"
    return "error"


def pcie_label(gen: Optional[int], width: Optional[int]) -> str:
    return "PCIe %s.0 x%s" % (gen if gen else "?", width if width else "?")


def pcie_reference(gen: Optional[int], width: Optional[int]) -> Optional[Ref]:
    got = hw.pcie_rate(gen, width)
    if got is None:
        return None
    rate, row = got
    return {"kind": "pcie", "label": pcie_label(gen, width), "gbps": round(rate, 3),
            "verified": bool(row["source"].get("verified")), "source": row["source"]["url"],
            "encoding": row["encoding"]}


def memory_reference(t: Target) -> Optional[Ref]:
    row = hw.gpu_product(t.name)
    if row is not None:
        verified = bool(row["source"].get("verified")) and "memory_bandwidth_gbs" not in row["source"].get(
            "unverified_fields", [])
        return {"kind": "memory", "label": "%g GB/s memory (%s)" % (row["memory_bandwidth_gbs"], row["name"]),
                "gbps": float(row["memory_bandwidth_gbs"]), "verified": verified, "source": row["source"]["url"]}
    if t.nvml_bandwidth:
        return {"kind": "memory", "label": "%g GB/s memory (NVML: bus width x clock)" % round(t.nvml_bandwidth),
                "gbps": t.nvml_bandwidth, "verified": False, "source": "nvml:device.N.memory_bus_width,max_clock_mem"}
    return None


#: nvmlGpuTopologyLevel_t (nvml.h) -> nvidia-smi topo's legend (INTERNAL: two GPUs on one board).
NVML_LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


def pair_from_nvml(event: Dict[str, Any]) -> Dict[str, Any]:
    """The record of a pair from what the bench's child asked NVML (the common ancestor, P2P over NVLink), for a
    run without the topology layer's ``topology.pairs``: a PCIe path in nvidia-smi's legend, or NVLink without
    the number of links (which only the topology layer counts)."""
    if event.get("p2p_nvlink") == 0:
        return {"a": event.get("a"), "b": event.get("b"), "path": "NVLink", "nvlinks": None,
                "unknown": "the number of NVLinks between the GPUs needs the topology layer"}
    ancestor = event.get("ancestor")
    level = NVML_LEVELS.get(ancestor) if isinstance(ancestor, int) else None
    if level is None:
        return {"a": event.get("a"), "b": event.get("b"), "path": None,
                "unknown": "NVML did not say how the GPUs are connected"}
    return {"a": event.get("a"), "b": event.get("b"), "path": level, "pcie": level}


def peer_reference(pair: Optional[Dict[str, Any]], a: Target, b: Target) -> Tuple[Optional[Ref], str]:
    """(the reference of a peer copy from ``a`` to ``b``, why there is none)."""
    if pair is None:
        return None, "the path between the GPUs is not known (the topology layer did not run)"
    if (pair.get("unknown") and not pair.get("path")) or pair.get("path") == "NVLink":
        return None, str(pair.get("unknown") or "the path between the GPUs is not known")
    path = str(pair.get("path") or "")
    links = pair.get("nvlinks")
    if isinstance(links, int) and not isinstance(links, bool) and links > 0:
        got = hw.nvlink_rate(a.architecture, links)
        if got is None:
            return None, "%s: no NVLink rate for %s GPUs in links.json" % (path, a.architecture or "these")
        rate, row = got
        return {"kind": "nvlink", "label": "%s (NVLink %s x %d)" % (path, row["generation"], links),
                "gbps": float(rate), "verified": bool(row["source"].get("verified")),
                "source": row["source"]["url"]}, ""
    refs = [r for r in (pcie_reference(a.gen_max, a.width_max), pcie_reference(b.gen_max, b.width_max)) if r]
    if len(refs) < 2:
        return None, "the GPUs' PCIe links are not known"
    slow = min(refs, key=lambda r: r["gbps"])
    return dict(slow, label="%s over %s" % (path or "PCIe", slow["label"])), ""


class Judged:
    """Everything the bench concluded: the results (one line each), per-GPU notes, the facts and findings."""

    def __init__(self) -> None:
        self.results: List[Dict[str, Any]] = []
        self.gpus: List[Dict[str, Any]] = []
        self.facts: List[Fact] = []
        self.findings: List[Finding] = []
        self.refused: List[int] = []
        self.fatal: Optional[Dict[str, Any]] = None


def _finding(code: str, severity: str, title: str, detail: str, evidence: List[Dict[str, Any]],
             fix: str = "", commands: Optional[List[str]] = None, components: Sequence[str] = ("gpu",),
             source: Optional[Dict[str, Any]] = None) -> Finding:
    doc = CODE_DOCS[code]
    return Finding(code, severity, list(components), title, detail, evidence,
                   source or {"rule": doc.summary, "url": doc.source, "checked": "2026-11-29"},
                   Fix(fix, commands or []))


def _ev(key: str, value: Any, source: str = "bench") -> Dict[str, Any]:
    return {"key": key, "value": value, "status": "ok", "source": source}


def judge(found: Sequence[Target], facts: Any, events: Sequence[Dict[str, Any]], ended: str = "done",
          during: str = "", message: str = "") -> Judged:
    """The results, facts and findings of the child's ``events`` (see :mod:`envdoctor.bench.child`)."""
    out = Judged()
    by_index = {t.index: t for t in found}
    asked = {(e.get("a"), e.get("b")): pair_from_nvml(e) for e in events if e.get("event") == "pair"}
    notes: Dict[int, Dict[str, Any]] = {t.index: {"index": t.index, "name": t.name, "pci_bus_id": t.bus_id,
                                                  "link": {"gen_max": t.gen_max, "width_max": t.width_max,
                                                           "gen_idle": t.gen_idle, "width_idle": t.width_idle,
                                                           "loaded": []},
                                                  "binding": None, "replays": None, "busy": None}
                                        for t in found}
    for e in events:
        kind, gpu = e.get("event"), e.get("gpu")
        note = notes.get(gpu) if isinstance(gpu, int) else None
        if kind == "refused":
            out.refused = [g for g in e.get("gpus") or [] if isinstance(g, int)]
        elif kind == "fatal":
            out.fatal = e
        elif kind == "processes" and note is not None:
            note["busy"] = e.get("others")
        elif kind == "bind" and note is not None and isinstance(gpu, int) and not e.get("remote"):
            note["binding"] = {"cpus": by_index[gpu].cpus_text if e.get("cpus") else None,
                               "cpus_bound": len(e["cpus"]) if isinstance(e.get("cpus"), list) else 0,
                               "cpus_why": e.get("cpus_why") or "", "numa_node": e.get("node"),
                               "memory": e.get("memory_how") or "", "memory_why": e.get("memory_why") or ""}
        elif kind == "link" and note is not None:
            if e.get("phase") == "idle" and isinstance(e.get("gen"), list):
                note["link"]["gen_idle"], note["link"]["width_idle"] = e["gen"][0], (e.get("width") or [None])[0]
            elif e.get("phase") == "loaded" and e.get("samples"):
                note["link"]["loaded"].append({"test": e.get("test"), "gen": e.get("gen"), "width": e.get("width"),
                                               "samples": e.get("samples")})
        elif kind == "replays" and note is not None:
            note["replays"] = {"before": e.get("before"), "after": e.get("after")}
        elif kind == "result" and gpu in by_index:
            out.results.append(_host_result(by_index[gpu], e))
        elif kind == "p2p" and e.get("src") in by_index and e.get("dst") in by_index:
            out.results.append(_peer_result(by_index[e["src"]], by_index[e["dst"]], facts, e, out, asked))
        elif kind == "error":
            out.findings.append(_cuda_error(e))
    out.gpus = [notes[t.index] for t in found]
    for t in found:
        _link_findings(t, notes[t.index], out)
        busy = notes[t.index]["busy"]
        if busy and not out.refused:
            out.findings.append(_finding(
                "bench.gpu_busy", "warning", "GPU%d was in use by %d other process%s while it was measured" % (
                    t.index, len(busy), "" if len(busy) == 1 else "es"),
                "The copies shared the link and memory with that work: the figures are lower than this machine's "
                "own.", [_ev("bench.%d.other_processes" % t.index, [p.get("pid") for p in busy], "nvml:processes")],
                "Measure again when the GPU is idle.",
                ["nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"]))
    _numa_findings(out)
    for r in out.results:
        f = _slow_finding(r, by_index)
        if f is not None:
            out.findings.append(f)
    if ended in ("timed_out", "crashed"):
        code = "bench.timed_out" if ended == "timed_out" else "bench.crashed"
        title = ("The bench stopped at the time limit during %s" % during if ended == "timed_out"
                 else "The bench's copies crashed during %s (%s)" % (during, message))
        out.findings.append(_finding(
            code, "error", title,
            "Nothing measured after that point; what finished before is shown. " + (
                "A copy of this size takes milliseconds: the GPU or its driver hung, or --timeout is too short "
                "for the GPUs to start." if ended == "timed_out" else "The CUDA driver died on a plain copy."),
            [_ev("bench.during", during)], "Look for Xid errors in the kernel log; run again with a longer "
            "--timeout to tell a slow start from a hang.", ["sudo dmesg | grep -i xid", "nvidia-smi"],
            components=("gpu", "driver")))
    out.facts = _facts(out, found, ended, during)
    return out


def _median(nbytes: int, times: Sequence[Any], weight: float) -> Tuple[List[float], Optional[float]]:
    each = [g for g in (gbps(nbytes, ms, weight) for ms in times) if g is not None]
    return [round(g, 3) for g in each], (statistics.median(each) if each else None)


def _host_result(t: Target, e: Dict[str, Any]) -> Dict[str, Any]:
    test, memory = str(e.get("test")), str(e.get("memory"))
    nbytes = int(e.get("bytes") or 0)
    weight = 2.0 if test == "d2d" else 1.0
    trials, med = _median(nbytes, e.get("ms") or [], weight)
    ref = memory_reference(t) if test == "d2d" else (None if t.c2c else pcie_reference(t.gen_max, t.width_max))
    ratio = round(med / ref["gbps"], 3) if med is not None and ref else None
    judged = memory != "pageable"
    why = ""
    if t.c2c and test != "d2d":
        why = "the GPU reaches host memory over NVLink-C2C, not PCIe"
    elif ref is None:
        why = "the GPU's memory bandwidth is not known" if test == "d2d" else "the PCIe link is not known"
    elif not judged:
        why = "pageable: not judged"
    elif e.get("numa") == "remote":
        why = "memory on the far NUMA node: compared with the local copy"
    remote = e.get("numa") == "remote"
    return {"gpu": t.index, "peer": None, "test": test, "memory": memory, "numa": e.get("numa", "local"),
            "node": e.get("node"), "bytes": nbytes, "trials_gbps": trials,
            "gbps": round(med, 3) if med is not None else None, "reference": ref, "ratio": ratio,
            "verdict": verdict(ratio, bool(ref and ref["verified"])) if judged and not remote else "not_judged",
            "why": why}


def _peer_result(a: Target, b: Target, facts: Any, e: Dict[str, Any], out: Judged,
                 asked: Dict[Any, Dict[str, Any]]) -> Dict[str, Any]:
    nbytes = int(e.get("bytes") or 0)
    trials, med = _median(nbytes, e.get("ms") or [], 1.0)
    # the topology layer's record of the path; without that layer, what the child asked NVML
    pair = peer_path(facts, a.index, b.index) or asked.get((min(a.index, b.index), max(a.index, b.index)))
    ref, why = peer_reference(pair, a, b)
    access = bool(e.get("access"))
    if not access:
        ref, why = None, "no peer access between these GPUs: the copies went through host memory"
    ratio = round(med / ref["gbps"], 3) if med is not None and ref else None
    corrupt = int(e.get("corrupt") or 0)
    verified = int(e.get("verified") or 0)
    if corrupt:
        out.findings.append(_finding(
            "bench.p2p_corrupt", "error",
            "Copies from GPU%d to GPU%d delivered wrong data (%d of %d copies)" % (a.index, b.index, corrupt,
                                                                                  verified),
            "Each peer copy was read back and compared with what was sent; %d differed (first difference at byte "
            "%s). Collectives over this path (NCCL) compute on corrupted data without an error." % (
                corrupt, e.get("first_bad")),
            [_ev("bench.p2p.%d.%d.corrupt" % (a.index, b.index), corrupt)],
            "Stop using peer-to-peer between these GPUs until the path is repaired (NCCL_P2P_DISABLE=1 for "
            "NCCL); look for PCIe errors (AER) in the kernel log, reseat or replace the risers or cables on the "
            "path, check ACS and the IOMMU settings (envdoctor topo).",
            ["sudo dmesg | grep -i -E 'AER|pcieport|Xid'", "envdoctor topo"]))
    return {"gpu": a.index, "peer": b.index, "test": "p2p", "memory": "device", "numa": None, "node": None,
            "bytes": nbytes, "trials_gbps": trials, "gbps": round(med, 3) if med is not None else None,
            "reference": ref, "ratio": ratio, "access": access, "path": (pair or {}).get("path"),
            "verified_copies": verified, "corrupt_copies": corrupt,
            "verdict": "error" if corrupt else verdict(ratio, bool(ref and ref["verified"])), "why": why}


def _cuda_error(e: Dict[str, Any]) -> Finding:
    where = ("GPU%s" % e.get("gpu")) if e.get("gpu") is not None else "the peer copies"
    if e.get("peer") is not None:
        where = "GPU%s -> GPU%s" % (e.get("gpu"), e.get("peer"))
    return _finding("bench.cuda_error", "error", "%s: %s failed with %s" % (where, e.get("call"), e.get("name")),
                    "The CUDA driver refused a plain allocation or copy (%s); what depended on it was not "
                    "measured." % e.get("message"),
                    [_ev("bench.cuda_error", {"call": e.get("call"), "code": e.get("code"), "name": e.get("name")})],
                    "Look for Xid errors in the kernel log; check that no other process holds the GPU's memory.",
                    ["sudo dmesg | grep -i xid", "nvidia-smi"], components=("gpu", "driver"))


def _link_findings(t: Target, note: Dict[str, Any], out: Judged) -> None:
    link = note["link"]
    loaded = link["loaded"]
    gens = [x["gen"][0] for x in loaded if isinstance(x.get("gen"), list)]
    widths = [x["width"][0] for x in loaded if isinstance(x.get("width"), list)]
    low_gen = min(gens) if gens else None
    low_width = min(widths) if widths else None
    link["gen_loaded"], link["width_loaded"] = low_gen, low_width
    down = (t.gen_max and low_gen is not None and low_gen < t.gen_max) or (
        t.width_max and low_width is not None and low_width < t.width_max)
    if down:
        out.findings.append(_finding(
            "bench.link_trained_down", "warning",
            "GPU%d's PCIe link ran at %s while data flowed; it can train to %s" % (
                t.index, pcie_label(low_gen, low_width), pcie_label(t.gen_max, t.width_max)),
            "An idle link saves power at a lower generation, which is normal; this one stayed down under load, "
            "so every copy is capped at the lower rate.",
            [_ev("bench.%d.pcie_loaded" % t.index, pcie_label(low_gen, low_width), "nvml:pcie_link (sampled)"),
             _ev("gpu.%d.pcie_gen_max" % t.index, t.gen_max, "nvml"),
             _ev("gpu.%d.pcie_width_max" % t.index, t.width_max, "nvml")],
            "Reseat the card, or move it to a slot wired for x%s to the CPU; check the BIOS's PCIe speed "
            "setting and any riser or retimer on the way." % (t.width_max or 16), [PCIE_QUERY]))
    replays = note["replays"]
    if isinstance(replays, dict) and isinstance(replays.get("before"), int) and isinstance(replays.get("after"), int):
        grown = replays["after"] - replays["before"]
        if grown > 0:
            out.findings.append(_finding(
                "bench.pcie_replays", "warning",
                "GPU%d's PCIe link replayed %d packet%s during the copies" % (t.index, grown, "" if grown == 1 else
                                                                            "s"),
                "Each replay is a packet the link sent again after an error: the link has signal-integrity "
                "trouble (a riser, a slot, a cable).",
                [_ev("bench.%d.pcie_replays" % t.index, grown, "nvml:nvmlDeviceGetPcieReplayCounter")],
                "Reseat the card and any riser or cable; look for PCIe errors (AER) in the kernel log.",
                ["sudo dmesg | grep -i -E 'AER|pcieport'", PCIE_QUERY]))


def _numa_findings(out: Judged) -> None:
    for r in out.results:
        if r["test"] != "h2d" or r["numa"] != "remote" or r["gbps"] is None:
            continue
        local = next((x for x in out.results if x["gpu"] == r["gpu"] and x["test"] == "h2d" and x["memory"] ==
                      "pinned" and x["numa"] == "local" and x["gbps"]), None)
        if local is None:
            continue
        share = r["gbps"] / local["gbps"]
        r["of_local"] = round(share, 3)
        if share < 1 - NUMA_PENALTY:
            node = next((g["binding"] or {}).get("numa_node") for g in out.gpus if g["index"] == r["gpu"])
            out.findings.append(_finding(
                "bench.remote_numa", "info",
                "Host memory on NUMA node %s reaches GPU%d at %.2f of the rate from its own node %s (%.1f against "
                "%.1f GB/s)" % (r["node"], r["gpu"], share, node, r["gbps"], local["gbps"]),
                "Data loaders and pinned buffers on the far socket feed this GPU at the remote rate.",
                [_ev("bench.%d.h2d_remote_numa_gbps" % r["gpu"], r["gbps"]),
                 _ev("bench.%d.h2d_pinned_gbps" % r["gpu"], local["gbps"])],
                "Run the processes that feed GPU%d on NUMA node %s." % (r["gpu"], node),
                ["numactl --cpunodebind=%s --membind=%s -- YOUR_COMMAND" % (node, node)], components=("cpu", "gpu")))


def _slow_finding(r: Dict[str, Any], by_index: Dict[int, Target]) -> Optional[Finding]:
    if r["verdict"] not in ("warning", "error") or r.get("corrupt_copies"):
        return None
    ref = r["reference"] or {}
    what = describe(r)
    title = "%s: %.1f GB/s, %.2f of %s" % (what, r["gbps"], r["ratio"], ref.get("label"))
    unverified = "" if ref.get("verified") else " (the reference is not verified against the vendor's table, " \
                                                 "so this is at most a warning)"
    ev = [_ev("bench.%s" % r["test"], {"gbps": r["gbps"], "trials_gbps": r["trials_gbps"], "bytes": r["bytes"]}),
          {"key": "reference", "value": ref.get("label"), "status": "ok", "source": ref.get("source", "")}]
    src = {"rule": "below %.2f of the reference is a warning, below %.2f an error" % (WARN_BELOW, ERROR_BELOW),
           "url": ref.get("source", ""),
        "checked": "2026-11-29", "verified": bool(ref.get("verified"))}
    if r["test"] in ("h2d", "d2h"):
        return _finding("bench.host_link_slow", r["verdict"], title,
                        "Pinned copies reach 0.8 to 0.9 of a healthy link's rate; this one is held back (a slot "
                        "wired for fewer lanes, a riser, a BIOS setting, a link trained down)%s." % unverified, ev,
                        "Compare the link the GPU trained to with what it can do, and move the card to a x16 slot "
                        "wired to the CPU if it is not in one.", [PCIE_QUERY], source=src)
    if r["test"] == "d2d":
        return _finding("bench.memory_slow", r["verdict"], title,
                        "A healthy GPU copies within its memory at 0.75 to 0.9 of the memory's bandwidth; this one "
                        "is held back (low memory clocks from power or thermal limits, an application clock "
                        "setting, a faulty board)%s." % unverified, ev,
                        "Check the memory clock and the clock event reasons while it runs.",
                        ["nvidia-smi -q -d CLOCK,PERFORMANCE -i %d" % r["gpu"]], source=src)
    return _finding("bench.peer_slow", r["verdict"], title,
                    "Peer copies are held back on this path (NVLinks down, a PCIe path through the CPUs' "
                    "interconnect, ACS redirecting peer traffic)%s." % unverified, ev,
                    "Look at the path and what is wrong on it.", ["envdoctor topo", "nvidia-smi nvlink --status"],
                    source=src)


def describe(r: Dict[str, Any]) -> str:
    """``GPU0 H2D pinned``, ``GPU0 D2D``, ``GPU0 -> GPU1 peer``, ``GPU0 H2D pinned (NUMA node 1)``."""
    if r["test"] == "p2p":
        return "GPU%d -> GPU%d peer" % (r["gpu"], r["peer"])
    if r["test"] == "d2d":
        return "GPU%d D2D" % r["gpu"]
    text = "GPU%d %s %s" % (r["gpu"], r["test"].upper(), r["memory"])
    return text + (" (NUMA node %s)" % r["node"] if r["numa"] == "remote" else "")


#: (test, memory, numa) -> the per-GPU fact key's part; the fleet-wide ratio keys below.
FACT_NAMES = {("h2d", "pinned", "local"): "h2d_pinned", ("h2d", "pageable", "local"): "h2d_pageable",
              ("d2h", "pinned", "local"): "d2h_pinned", ("d2h", "pageable", "local"): "d2h_pageable",
              ("d2d", "device", "local"): "d2d", ("h2d", "pinned", "remote"): "h2d_remote_numa"}
RATIO_KEYS = (("bench.h2d_ratio", "h2d", "pinned"), ("bench.d2h_ratio", "d2h", "pinned"),
              ("bench.d2d_ratio", "d2d", "device"), ("bench.p2p_ratio", "p2p", "device"))


def _facts(out: Judged, found: Sequence[Target], ended: str, during: str) -> List[Fact]:
    facts: List[Fact] = []
    for r in out.results:
        if r["test"] == "p2p":
            continue
        name = FACT_NAMES.get((r["test"], r["memory"], r["numa"]))
        if name is None or r["gbps"] is None:
            continue
        facts.append(ok("bench.%d.%s_gbps" % (r["gpu"], name), r["gbps"], "bench:median of %d" % len(
            r["trials_gbps"]), "%s (GB/s)" % describe(r)))
        if r["ratio"] is not None and r["numa"] == "local" and r["memory"] != "pageable":
            facts.append(ok("bench.%d.%s_ratio" % (r["gpu"], r["test"]), r["ratio"], "bench:%s" % (
                r["reference"] or {}).get("label"), "%s / %s" % (describe(r), (r["reference"] or {}).get("label"))))
    peers = [{"a": r["gpu"], "b": r["peer"], "gbps": r["gbps"], "ratio": r["ratio"], "path": r.get("path"),
              "corrupt_copies": r.get("corrupt_copies")} for r in out.results if r["test"] == "p2p"]
    if peers:
        facts.append(ok("bench.pairs", peers, "bench:cuMemcpyPeer", "Peer copies"))
        facts.append(ok("bench.p2p_data_ok", not any(p["corrupt_copies"] for p in peers), "bench:read back",
                        "Every peer copy delivered what was sent"))
    for key, test, memory in RATIO_KEYS:
        rows = [r for r in out.results if r["test"] == test and r["memory"] == memory and r.get("numa") in (
            "local", None)]
        ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
        if ratios:
            worst = min(rows, key=lambda r: r["ratio"] if r["ratio"] is not None else 9.0)
            facts.append(ok(key, min(ratios), "bench:%s" % describe(worst), "Lowest %s ratio to its reference" %
                            test.upper()))
        elif rows:
            facts.append(unknown(key, rows[0]["why"] or "not judged", "bench", "Lowest %s ratio" % test.upper()))
        elif ended != "done":
            facts.append(unknown(key, "not measured: the bench %s during %s" % (ended.replace("_", " "), during),
                                 "bench"))
    return facts

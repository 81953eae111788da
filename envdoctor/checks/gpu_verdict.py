"""The pre-flight verdict on the GPUs: a node whose GPUs cannot all be seen and answered for never passes.

A scheduler's pre-flight check exists to keep a broken node from taking jobs, so what could not be seen
on a machine with an NVIDIA device is an error, never a pass:

* ``gpu.lost``: a GPU whose handle or any call answered ``NVML_ERROR_GPU_IS_LOST``, named by NVML
  index, PCI address and serial;
* ``gpu.nvml_call_failed``: another NVML failure that means trouble (reset required, corrupted
  InfoROM, insufficient power, interrupt issue, unknown error...) for one GPU, with the code's meaning
  and its fix; the benign answers (NOT_SUPPORTED, an old driver's FUNCTION_NOT_FOUND...) are not;
* ``gpu.count_failed``: ``nvmlDeviceGetCount`` itself failed;
* ``gpu.missing``: NVML answers for fewer GPUs than the PCI bus has bound to the ``nvidia`` driver,
  naming the missing bus addresses;
* ``gpu.unverified``: the driver or GPU layer could not be seen at all (its probe timed out or
  crashed, NVML gave no answer) on a machine that has an NVIDIA device;
* ``gpu.presence_unknown``: neither the PCI bus nor NVML could say whether there is a GPU (a warning:
  unknown is never "no GPU");
* ``gpu.pcie_width_degraded``: a link narrower than it can be, idle or not (x1: error).

The meaning and fix of every NVML return code is :data:`envdoctor.checks.gpus.NVML_CODES`, from NVIDIA's
``nvmlReturn_t`` documentation (also used by :mod:`envdoctor.checks.driver_health` for failures at
initialisation).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import matrix
from ..facts import Facts
from ..findings import AnyOf, Finding, Fix, Step
from ..matrix import kernel
from . import CheckContext, CodeDoc, check
from .gpus import (
    BUG,
    GPU_LOST,
    KLOG,
    NVML_CODES,
    NvmlCode,
    _bound,
    _bus,
    describe,
    has_nvidia_device,
    init_failures,
    lost_in_log,
    nvidia_seen,
    nvml_bus_ids,
    pci_gpus,
    refused,
)

CHECKED = "2026-11-25"
NVML_RETURN_URL = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"
XID_URL = "https://docs.nvidia.com/deploy/xid-errors/index.html"
PCIE_URL = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
#: Where the driver's initialisation messages and their causes are discussed (RmInitAdapter failed with
#: Resizable BAR / Above 4G Decoding off: an RTX 5090 on 575.64.03).
KERNEL_INIT_URL = "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862"


def short(error: str) -> str:
    return error[len("NVML_ERROR_"):] if error.startswith("NVML_ERROR_") else error


def _src(rule: str, url: str = NVML_RETURN_URL) -> Dict[str, Any]:
    return {"rule": rule, "url": url, "checked": CHECKED}


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


# -- what the machine shows -----------------------------------------------------------------


def _failures(facts: Facts) -> List[Dict[str, Any]]:
    value = facts.value("gpu.nvml_failures")
    return [f for f in value if isinstance(f, dict)] if isinstance(value, list) else []


def _gpu_label(facts: Facts, i: int, entries: Sequence[Dict[str, Any]]) -> Tuple[str, str, str]:
    """(PCI address, how it is known, ", serial S" or "" when NVML could not read it) of NVML GPU ``i``."""
    known = nvml_bus_ids(facts)
    bus = next((str(_bus(e.get("pci_bus_id"))) for e in entries if _bus(e.get("pci_bus_id"))), None) or known.get(i)
    how = ""
    if bus is None:
        # NVML numbers the GPUs in PCI bus order: the i-th bound GPU not named by another index.
        free = [b for b in _bound(facts) if b not in known.values()]
        unnamed = sorted(j for j in range(len(_bound(facts))) if j not in known)
        if i in unnamed and len(free) == len(unnamed):
            bus, how = free[unnamed.index(i)], " (by PCI bus order; NVML could not name it)"
    serial = next((str(e["serial"]) for e in entries if e.get("serial")), None)
    if serial is None:
        s = facts.value("gpu.%d.serial" % i)
        serial = str(s) if isinstance(s, str) else None
    return bus or "unknown", how, ", serial %s" % serial if serial else ""


def _fix_commands(row: NvmlCode, gpu: Any) -> List[Step]:
    def fill(c: str) -> str:
        return c.format(gpu=gpu if gpu is not None else 0)

    return [c.map(fill) if isinstance(c, AnyOf) else fill(c) for c in row.commands]


@check("gpu-nvml-verdict", requires=("gpu.count",), reads=("gpu.*", "gpu.*.*", "driver.kernel_log"), layers=("gpu",),
       codes=(
    GPU_LOST,
    CodeDoc("gpu.nvml_call_failed", "error", "NVML answered a GPU's query with an error that means trouble "
            "(reset required, corrupted InfoROM, insufficient power, interrupt issue, unknown error...).",
            "gpu.nvml_failures", "The GPU is not fit for jobs until the cause is fixed; the finding gives the "
            "code's meaning and fix.", NVML_RETURN_URL),
    CodeDoc("gpu.count_failed", "error", "NVML could not count the GPUs (nvmlDeviceGetCount failed).",
            "gpu.count, gpu.nvml_failures", "No GPU of this node can be vouched for.", NVML_RETURN_URL),
))
def gpu_nvml_verdict(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    per_gpu: Dict[Any, List[Dict[str, Any]]] = {}
    for entry in _failures(facts):
        per_gpu.setdefault(entry.get("gpu"), []).append(entry)
    for gpu, entries in sorted(per_gpu.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)):
        if gpu is None:
            for e in entries:
                row = describe(str(e.get("error")), e.get("code"))
                yield Finding(
                    code="gpu.count_failed", severity="error", components=["gpu", "driver"],
                    title="NVML could not count the GPUs: %s (%s)" % (short(str(e.get("error"))), row.meaning),
                    detail="nvmlDeviceGetCount failed, so no GPU of this node can be vouched for. %s" % row.fix,
                    evidence=_ev(facts, "gpu.count", "gpu.nvml_failures", "gpu.pci_devices"),
                    source=_src("nvmlReturn_t: %s" % row.meaning),
                    fix=Fix(text=row.fix, commands=_fix_commands(row, None)))
            continue
        lost = [e for e in entries if e.get("error") == "NVML_ERROR_GPU_IS_LOST"]
        handle = [e for e in entries if e.get("call") == "handle"]
        bus, how, serial = _gpu_label(facts, int(gpu), entries)
        logged = lost_in_log(facts, bus, single=len(per_gpu) == 1)
        if logged and not lost:
            row = NVML_CODES["NVML_ERROR_GPU_IS_LOST"]
            yield Finding(
                code="gpu.lost", severity="error", components=["gpu", "driver"],
                title="GPU %s (PCI %s%s%s) has fallen off the bus (Xid 79): %s" % (
                    gpu, bus, how, serial, _message(next((x for x in logged if "Xid" in x), logged[-1]))),
                detail="The kernel log says the driver lost contact with this GPU (Xid 79); NVML's calls for it fail "
                       "(%s). Nothing can use it until it is reset. The kernel log says:\n%s" % (
                           ", ".join("%s: %s" % (e.get("call"), short(str(e.get("error")))) for e in entries[:4]),
                           "\n".join(logged[-4:])),
                evidence=_ev(facts, "gpu.nvml_failures", "driver.kernel_log", "gpu.%s.name" % gpu),
                source=_src("Xid 79: GPU has fallen off the bus", XID_URL),
                fix=Fix(text=row.fix, commands=_fix_commands(row, gpu)))
            continue
        if lost:
            row = NVML_CODES["NVML_ERROR_GPU_IS_LOST"]
            calls = ", ".join(sorted({str(e.get("call")) for e in lost}))
            yield Finding(
                code="gpu.lost", severity="error", components=["gpu", "driver"],
                title="GPU %s (PCI %s%s%s) is lost: NVML answered GPU_IS_LOST" % (gpu, bus, how, serial),
                detail="The driver lost contact with this GPU (%s; asked: %s). Nothing can use it until it is "
                       "reset; the kernel log shows \"Xid 79, GPU has fallen off the bus\"." % (row.meaning, calls),
                evidence=_ev(facts, "gpu.nvml_failures", "gpu.%s.name" % gpu, "gpu.pci_devices"),
                source=_src("nvmlReturn_t NVML_ERROR_GPU_IS_LOST; Xid 79", XID_URL),
                fix=Fix(text=row.fix, commands=_fix_commands(row, gpu)))
            continue
        trouble = [e for e in entries if e in handle or describe(str(e.get("error")), e.get("code")).trouble]
        if not trouble:
            continue
        first = trouble[0]
        row = describe(str(first.get("error")), first.get("code"))
        what = ", ".join("%s: %s" % (e.get("call"), short(str(e.get("error")))) for e in trouble[:8])
        if len(trouble) > 8:
            what += " and %d more" % (len(trouble) - 8)
        yield Finding(
            code="gpu.nvml_call_failed", severity="error", components=["gpu", "driver"],
            title="GPU %s (PCI %s%s%s): NVML %s (%s)" % (
                gpu, bus, how, serial, "cannot open it" if handle else "queries failed", what),
            detail="%s means %s. %s" % (short(str(first.get("error"))), row.meaning, row.fix),
            evidence=_ev(facts, "gpu.nvml_failures", "gpu.%s.name" % gpu),
            source=_src("nvmlReturn_t: %s" % row.meaning),
            fix=Fix(text=row.fix, commands=_fix_commands(row, gpu)))


@check("gpu-missing", requires=("gpu.count", "driver.device_nodes"),
       reads=("gpu.*", "gpu.*.*", "driver.*", "os.container", "cuda.packages"), layers=("gpu",), codes=(
    CodeDoc("gpu.missing", "error", "NVML answers for fewer GPUs than the PCI bus has bound to the nvidia driver.",
            "gpu.count, gpu.pci_devices, gpu.proc_devices, gpu.N.pci_bus_id, os.container, "
            "driver.device_nodes, gpu.scheduler_allocation",
            "The missing GPUs are dead to CUDA (fallen off the bus, failed initialisation); jobs expecting all "
            "of them fail. (In a container or a scheduler's job, only the GPUs given to it count.)",
            NVML_RETURN_URL),
))
def gpu_missing(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    count = facts.get("gpu.count")
    if count is None or not count.known or not isinstance(count.value, int) or not str(count.source).startswith(
            "nvml:"):
        return
    expected = _bound(facts)
    if facts.value("os.container"):
        # A container sees every GPU of the host on the PCI bus, but only the device nodes it was given.
        nodes = [n for n in facts.strings("driver.device_nodes") if re.match(r"^nvidia\d+$", n)]
        if len(nodes) < len(expected):
            expected = []
            if count.value < len(nodes):
                yield _missing(facts, count.value, ["(%d device nodes /dev/nvidiaN given to this container)"
                                                    % len(nodes)], len(nodes))
            return
    if not expected or count.value >= len(expected):
        return
    seen = set(nvml_bus_ids(facts).values())
    if len(seen) == count.value:
        missing = [b for b in expected if b not in seen]
        explained = set(init_failures(facts))  # gpu.init_failed names those, with the reason
        from .driver_support import verdicts  # (imported here: it builds on this module)

        # the module's flavour or branch (driver-support's conclusion, worked out once per run)
        explained.update(b for b in (kernel.line_bus(f.title) for f in verdicts.read(facts)) if b)
        missing = [b for b in missing if b not in explained]
        if not missing:
            return
    else:
        missing = ["which of %s is not known (NVML did not give every GPU's bus id)" % ", ".join(expected)]
    severity = "warning" if facts.value("gpu.scheduler_allocation") else "error"
    yield _missing(facts, count.value, missing, len(expected), severity)


# -- the kernel driver's own word: why a GPU it is bound to did not come up ------------------------


def _message(line: str) -> str:
    """The driver's words of a kernel line: from "NVRM: " on, without the repeated GPU address."""
    text = line[line.find("NVRM:"):] if "NVRM:" in line else line
    return re.sub(r"^NVRM:\s*(?:GPU [0-9a-fA-F:.]+:\s*)?", "", text).strip()


#: What the checklist says when the kernel's lines name no cause (the catalog's generic failure row).
def _generic_failure() -> Dict[str, Any]:
    return next(r for r in matrix.load("kernel_messages") if r.get("id") == "rm_init_adapter_failed")


@check("gpu-init-failed", requires=("driver.kernel_log", "gpu.count"),
       reads=("gpu.*", "gpu.*.*", "driver.*", "os.container"), layers=("gpu",), codes=(
    CodeDoc("gpu.init_failed", "error", "The kernel driver is bound to a GPU but failed to initialise it "
            "(RmInitAdapter failed, its BARs unassigned, no auxiliary power, a driver that does not support it).",
            "driver.kernel_log, gpu.count, gpu.pci_devices, gpu.proc_devices, gpu.N.pci_bus_id",
            "NVML and CUDA do not see the GPU (\"No devices were found\"); the driver's message says why and "
            "the fix follows from it.", KERNEL_INIT_URL),
))
def gpu_init_failed(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    unbound = set(refused(facts))
    for bus, (said, cause) in sorted(init_failures(facts).items()):
        if cause is not None and cause.row.get("code") != "gpu.init_failed":
            continue  # a cause of its own finding (the wrong module flavour or branch, a lost GPU): kernel-log
        failing = [x for x in said if kernel.failed(kernel.classify(x))]
        # no cause named: the failure of its own kind (an Xid 78, a vGPU that did not start) says more than the
        # generic checklist of a bare-metal GPU
        own = next((m.row for x in failing for m in kernel.classify(x)
                    if m.row.get("kind") == "xid" and m.row.get("class") == "failure"), None)
        row = cause.row if cause is not None else own if own is not None else _generic_failure()
        first = cause.line if cause is not None else next(
            (x for x in failing if "RmInitAdapter failed" in x), failing[0])
        shown = said[-8:]
        why = ("Cause: %s." % row["meaning"]) if cause is not None else (
            "What failed: %s." % row["meaning"] if own is not None else "The kernel's messages name no cause.")
        how = ("was refused by the nvidia driver's probe (it is left without a driver)" if bus in unbound else
               "is bound to the nvidia driver, but the driver failed to initialise it")
        yield Finding(
            code="gpu.init_failed", severity="error", components=["gpu", "driver"],
            title="GPU %s %s: %s" % (bus, how, _message(first)),
            detail="NVML and CUDA do not see this GPU (nvidia-smi: \"No devices were found\" when it is the only "
                   "one). %s The kernel log says:\n%s" % (why, "\n".join(shown)),
            evidence=_ev(facts, "driver.kernel_log", "gpu.count", "gpu.pci_devices", "gpu.proc_devices"),
            source=_src("the NVIDIA driver's kernel message: %s" % row.get("format", row["id"]),
                        row["source"]["url"]),
            fix=Fix(text=row["fix"] + " (The driver's messages: `%s`.)" % KLOG))


def _missing(facts: Facts, have: int, missing: List[str], want: int, severity: str = "error") -> Finding:
    return Finding(
        code="gpu.missing", severity=severity, components=["gpu", "driver"],
        title="NVML answers for %d of the %d NVIDIA GPUs bound to the driver; missing: %s" % (
            have, want, ", ".join(missing)),
        detail="The PCI bus (and the driver's /proc/driver/nvidia/gpus) show %d GPUs bound to the nvidia driver, "
               "but NVML answers for %d: the others failed to initialise or fell off the bus, and CUDA cannot use "
               "them.%s" % (want, have, " This run is inside a scheduler's job, which may see only the GPUs it "
                                        "was given." if severity == "warning" else ""),
        evidence=_ev(facts, "gpu.count", "gpu.pci_devices", "gpu.proc_devices", "gpu.scheduler_allocation"),
        source=_src("nvmlDeviceGetCount counts the GPUs the driver initialised", NVML_RETURN_URL),
        fix=Fix(text="Read the kernel log for the missing bus addresses (Xid 79, RmInitAdapter failed); reset "
                     "or reboot; if they stay missing, reseat the boards, check power, and replace them (RMA).",
                commands=[KLOG, "nvidia-smi -L", "sudo reboot", BUG]))


def _layer_problem(ctx: CheckContext) -> Optional[str]:
    """Why the driver or GPU state could not be established (and no NVML verdict says why), or None."""
    for res in ctx.probes:
        if getattr(res, "name", "") in ("driver", "gpu") and getattr(res, "status", "ok") != "ok":
            return "the %s probe %s" % (res.name, "did not finish in time" if res.status == "timed_out"
                                        else "crashed (%s)" % (getattr(res, "error", "") or "error"))
    facts = ctx.facts
    status = facts.get("gpu.status")
    if status is None:
        return None  # the gpu probe did not run: its status (above) says why, when it was asked to
    nvml = facts.value("driver.nvml.status")
    if status.status == "timed_out":
        if nvml == "timed_out" and facts.value("driver.installed") is True:
            return None  # driver.nvml_hung says it
        return status.reason or "NVML did not answer in time"
    if status.status != "unknown":
        return None
    if isinstance(nvml, str) and nvml.startswith("NVML_ERROR_"):
        return None  # NVML failed to start with a code: judged with its meaning (driver-health)
    if any(e.get("call") == "device_count" for e in _failures(facts)):
        return None  # gpu.count_failed
    if facts.get("gpu.count") is not None and isinstance(facts.value("gpu.count"), int):
        return None  # NVML counted, the bus shows more: gpu.missing
    return status.reason or "the GPU state is unknown"


@check("gpu-unverified", requires=(), reads=("gpu.*", "gpu.*.*", "driver.*", "driver.*.*"), layers=("gpu",), codes=(
    CodeDoc("gpu.unverified", "error", "The driver or GPU state could not be established on a machine with an "
            "NVIDIA device (a layer timed out, crashed or was unreadable).",
            "the driver and gpu probes' status, gpu.status, gpu.pci_devices, gpu.proc_devices",
            "A pre-flight check must not pass a GPU node it could not see.", NVML_RETURN_URL),
    CodeDoc("gpu.presence_unknown", "warning", "Neither the PCI bus nor NVML could say whether an NVIDIA GPU "
            "is present.", "gpu.pci_devices, driver.nvidia_pci_gpus, gpu.status",
            "Unknown is not \"no GPU\": the node is not vouched for.", NVML_RETURN_URL),
))
def gpu_unverified(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    why = _layer_problem(ctx)
    if why is None:
        return
    seen = nvidia_seen(facts)
    if has_nvidia_device(facts) or facts.value("driver.installed") is True:
        yield Finding(
            code="gpu.unverified", severity="error", components=["gpu", "driver"],
            title="Could not establish the GPU state of this NVIDIA node: %s" % why,
            detail="This machine has an NVIDIA device (%s) but the run could not see whether its driver and "
                   "GPUs work: %s. A node that could not be seen is not passed." % (
                       ", ".join(seen) if seen else "the NVIDIA driver is installed", why),
            evidence=_ev(facts, "gpu.status", "gpu.pci_devices", "gpu.proc_devices", "driver.nvml.status"),
            source=_src("a pre-flight check passes only what it has seen"),
            fix=Fix(text="Look for processes stuck in the driver (state D) and the kernel log; re-run with a "
                         "longer --timeout; reboot if the driver is hung.",
                    commands=["ps -eo pid,stat,wchan:32,cmd | awk '$2 ~ /D/'", KLOG,
                              "envdoctor diagnose --timeout 60"]))
    elif pci_gpus(facts) is None:
        yield Finding(
            code="gpu.presence_unknown", severity="warning", components=["gpu"],
            title="Cannot tell whether an NVIDIA GPU is present: %s" % why,
            detail="The PCI bus could not be listed and NVML gave no answer, so this is not a verdict of "
                   "\"no GPU\".",
            evidence=_ev(facts, "gpu.status", "gpu.pci_devices", "driver.nvidia_pci_gpus"),
            source=_src("unknown is not absent"),
            fix=Fix(text="Run where /sys/bus/pci is readable (on the host, not in a restricted container).",
                    commands=["ls /sys/bus/pci/devices"]))


@check("gpu-pcie-width", requires=("gpu.N.pcie_width_current",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",), codes=(
    CodeDoc("gpu.pcie_width_degraded", "warning", "A GPU's PCIe link is narrower than the GPU and slot support "
            "(error at x1), idle or not.", "gpu.N.pcie_width_current, gpu.N.pcie_width_max",
            "Idle lowers a link's generation, never its width: a narrow link is a bad slot, riser or "
            "seating, and copies run at a fraction of the bandwidth.", PCIE_URL),
))
def gpu_pcie_width(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for f in facts.named("gpu.", "pcie_width_current"):
        m = re.match(r"^gpu\.(\d+)\.pcie_width_current$", f.key)
        if not m:
            continue
        i = int(m.group(1))
        wid, wmax = f.value, facts.value("gpu.%d.pcie_width_max" % i)
        if not (isinstance(wid, int) and isinstance(wmax, int) and 0 < wid < wmax):
            continue
        bus = facts.value("gpu.%d.pci_bus_id" % i) or "<bus id>"
        yield Finding(
            code="gpu.pcie_width_degraded", severity="error" if wid == 1 else "warning", components=["gpu"],
            title="GPU %d (%s, PCI %s) links at PCIe x%d, but the link supports x%d" % (
                i, facts.value("gpu.%d.name" % i) or "unknown model", bus, wid, wmax),
            detail="A GPU lowers its link generation when idle, never its width: x%d of x%d means a bad slot, "
                   "riser or cable, a board not fully seated, or a failing link; host-device copies run at "
                   "about %d%% of the bandwidth." % (wid, wmax, 100 * wid // wmax),
            evidence=_ev(facts, "gpu.%d.pcie_width_current" % i, "gpu.%d.pcie_width_max" % i,
                         "gpu.%d.pcie_gen_current" % i, "gpu.%d.pci_bus_id" % i),
            source=_src("nvmlDeviceGetCurrPcieLinkWidth below nvmlDeviceGetMaxPcieLinkWidth", PCIE_URL),
            fix=Fix(text="Drain the node, reseat the board (or move it to a CPU-attached x16 slot), check the "
                         "riser and the BIOS slot bifurcation setting.",
                    commands=["nvidia-smi -q -d PCIE -i %d" % i,
                              "sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'" % bus]))

"""Checks on the GPUs themselves: a PCIe link running below its capability under load, a small
GPU also driving a display, uncorrectable ECC errors, thermal/power throttling, the memory's own repair
(row remapping pending or failed, retired pages pending or at their limit), and MIG (on with no MIG device
to run on, or a mode change waiting for a reset)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from ..facts import Facts
from ..findings import AnyOf, Finding, Fix
from . import CheckContext, CodeDoc, Message, check, docs_for, group

CHECKED = "2026-11-22"
NVML_REASONS = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"
NVML_PCIE = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
ECC_DOC = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
#: "Row-remapping pending flag ... Even with the flag set, unaffected applications can continue running without
#: affecting accuracy and performance, and new workloads can be launched."
REMAP_FLAGS_DOC = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html"
XID_DOC = "https://docs.nvidia.com/deploy/xid-errors/index.html"
DPR_DOC = "https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"
MIG_DOC = "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html"
PCIE_SYSFS = "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci"
NVML_MIG = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlMultiInstanceGPU.html"
#: Pages a GPU can retire (64 pages of 64 KiB: NVIDIA's dynamic page retirement documentation); at the limit
#: no more bad memory can be retired and NVIDIA's guidance is to consider the board for RMA.
RETIRED_PAGE_LIMIT = 64
#: utilization (%) from which a GPU counts as busy
BUSY_PERCENT = 50
SMALL_DISPLAY_GPU = 8 * 1024 ** 3
SLOWDOWNS = ("HW slowdown", "HW thermal slowdown", "SW thermal slowdown", "HW power brake slowdown")


def gpu_indexes(facts: Facts) -> List[int]:
    return list(facts.derived("gpu_indexes", _gpu_indexes))


def _gpu_indexes(facts: Facts) -> List[int]:
    out = set()
    for f in facts.with_prefix("gpu."):
        parts = f.key.split(".", 2)  # what ^gpu\.(\d+)\. matches: a second part of digits, a dot after it
        if len(parts) == 3 and parts[1].isdecimal():
            out.add(int(parts[1]))
    return sorted(out)


def _ev(facts: Facts, i: int, *names: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get("gpu.%d.%s" % (i, n)) for n in names) if f is not None]


def _name(facts: Facts, i: int) -> str:
    return "GPU %d (%s)" % (i, facts.value("gpu.%d.name" % i) or "unknown model")


def _temp(facts: Facts, i: int) -> str:
    """' (83 C)' when NVML gave the temperature, else nothing (never a placeholder in a title)."""
    t = facts.value("gpu.%d.temperature_celsius" % i)
    return " (%s C)" % t if isinstance(t, int) else ""


def _busy(facts: Facts, i: int) -> bool:
    util = facts.value("gpu.%d.utilization_gpu_percent" % i)
    reasons = facts.strings("gpu.%d.clock_event_reasons" % i)
    return isinstance(util, int) and util >= BUSY_PERCENT and "GPU idle" not in reasons


#: The codes of the GPU health questions, each declared by the question that asks it.
DOCS = (
    CodeDoc("gpu.pcie_link_degraded", "warning", "A busy GPU's PCIe link runs below the generation "
            "the GPU and slot support.", "gpu.N.pcie_gen_current/max, pcie_width_current/max, utilization",
            "Host-device copies and multi-GPU traffic run at a fraction of the bandwidth (bad riser, slot, "
            "BIOS setting). An idle GPU lowering its link generation is normal power saving.", NVML_PCIE),
    CodeDoc("gpu.display_small_memory", "info", "A GPU with little memory also drives a display.",
            "gpu.N.display_active, gpu.N.memory_total_bytes", "The desktop takes part of its memory; training "
            "runs out of memory sooner.", NVML_PCIE),
    CodeDoc("gpu.ecc_uncorrectable", "error", "A GPU reports uncorrectable ECC errors since boot.",
            "gpu.N.ecc_errors_volatile_uncorrected", "Jobs on it can crash or compute wrong results; the GPU "
            "needs a reset (and row remapping) before more work.", ECC_DOC,
        messages=(Message("uncorrectable ECC error encountered",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
    CodeDoc("gpu.throttled", "warning", "A GPU's clocks are held down by thermal or hardware power slowdown.",
            "gpu.N.clock_event_reasons", "The GPU runs at a fraction of its speed: cooling, airflow or power "
            "delivery problem.", NVML_REASONS),
    CodeDoc("gpu.power_capped", "info", "A busy GPU's clocks are limited by its software power cap.",
            "gpu.N.clock_event_reasons, gpu.N.power_limit_watts", "Normal at full load, but a power limit set "
            "below the default costs speed.", NVML_REASONS),
)


@check("gpu-health.pcie", requires=("gpu.N.pcie_gen_current",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",),
       codes=docs_for(DOCS, "gpu.pcie_link_degraded"))
def gpu_pcie(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        name = _name(facts, i)
        gen, gmax = facts.value(k + "pcie_gen_current"), facts.value(k + "pcie_gen_max")
        wid, wmax = facts.value(k + "pcie_width_current"), facts.value(k + "pcie_width_max")
        low_gen = isinstance(gen, int) and isinstance(gmax, int) and 0 < gen < gmax
        # A narrower link is judged idle or not (gpu.pcie_width_degraded, checks/gpu_verdict.py); here only
        # the generation, which an idle GPU lowers to save power.
        if low_gen and _busy(facts, i):
            yield Finding(
                code="gpu.pcie_link_degraded", severity="warning", components=["gpu"],
                title="%s runs PCIe Gen%s x%s while %s%% busy, but link supports Gen%s x%s" % (
                    name, gen, wid, facts.value(k + "utilization_gpu_percent"), gmax, wmax),
                detail="Under load the link should train to its maximum; a lower generation or width under load "
                       "points at the slot, a riser, the BIOS PCIe setting or a failing link.",
                evidence=_ev(facts, i, "pcie_gen_current", "pcie_gen_max", "pcie_width_current", "pcie_width_max",
                             "utilization_gpu_percent", "clock_event_reasons", "pci_bus_id"),
                source={"rule": "nvmlDeviceGetCurrPcieLinkGeneration/Width below the Max ones under load",
                        "url": NVML_PCIE, "checked": CHECKED},
                fix=Fix(text="Check the link under load; reseat the card or move it to a CPU-attached x16 slot, "
                             "and check the BIOS PCIe generation setting.",
                        commands=["nvidia-smi -q -d PCIE -i %d" % i,
                                  "sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'" % (
                                      facts.value(k + "pci_bus_id") or "<bus id>")]))


@check("gpu-health.display-memory", requires=("gpu.N.display_active",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",),
       codes=docs_for(DOCS, "gpu.display_small_memory"))
def gpu_display(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        name = _name(facts, i)
        mem = facts.value(k + "memory_total_bytes")
        if facts.value(k + "display_active") is True and isinstance(mem, int) and 0 < mem < SMALL_DISPLAY_GPU:
            yield Finding(
                code="gpu.display_small_memory", severity="info", components=["gpu"],
                title="%s drives a display and has only %.1f GiB of memory (< 8 GiB)" % (name, mem / 1024.0 ** 3),
                detail="The desktop (X/Wayland compositor, browser) keeps part of the memory; training runs out "
                       "of memory sooner than the card's size suggests.",
                evidence=_ev(facts, i, "display_active", "memory_total_bytes"),
                source={"rule": "nvmlDeviceGetDisplayActive and memory size", "url": NVML_PCIE,
                        "checked": CHECKED},
                fix=Fix(text="Drive the display from the integrated GPU, or train from a text console.",
                        commands=["nvidia-smi --query-compute-apps=pid,used_memory --format=csv",
                                  "nvidia-smi --query-gpu=memory.used,memory.total --format=csv"]))


@check("gpu-health.ecc", codes=docs_for(DOCS, "gpu.ecc_uncorrectable"), requires=("gpu.N.ecc_mode_current",),
       reads=("gpu.*", "gpu.*.*"), layers=("gpu",))
def gpu_ecc(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        name = _name(facts, i)
        ecc = facts.value(k + "ecc_errors_volatile_uncorrected")
        if isinstance(ecc, int) and ecc > 0:
            yield Finding(
                code="gpu.ecc_uncorrectable", severity="error", components=["gpu"],
                title="%s has %d uncorrectable ECC error(s) since boot (expected 0)" % (name, ecc),
                detail="Uncorrectable memory errors kill the contexts that hit them (Xid 48/63/64/94/95) and can "
                       "corrupt results; on A100/H100 the row is remapped at the next GPU reset.",
                evidence=_ev(facts, i, "ecc_errors_volatile_uncorrected", "ecc_errors_aggregate_uncorrected",
                             "pci_bus_id"),
                source={"rule": "volatile uncorrected ECC count must be 0", "url": ECC_DOC, "checked": CHECKED},
                fix=Fix(text="Drain the node, reset the GPU, then check row remapping and the Xid errors in the "
                             "kernel log; replace the GPU if remapping failed or errors recur (see %s)." % XID_DOC,
                        commands=["sudo dmesg | grep -i xid", "nvidia-smi -q -d ROW_REMAPPER -i %d" % i,
                                  "sudo nvidia-smi -r -i %d" % i]))


@check("gpu-health.clocks", requires=("gpu.N.clock_event_reasons",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",),
       codes=docs_for(DOCS, "gpu.throttled", "gpu.power_capped"))
def gpu_clocks(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        name = _name(facts, i)
        reasons = facts.value(k + "clock_event_reasons")
        if not isinstance(reasons, list) or "GPU idle" in reasons:
            continue
        slow = [r for r in reasons if r in SLOWDOWNS]
        if slow:
            yield Finding(
                code="gpu.throttled", severity="warning", components=["gpu"],
                title="%s clocks are held down by %s%s" % (name, ", ".join(slow), _temp(facts, i)),
                detail="HW slowdown, thermal slowdown and power brake cut the clocks by half or more: cooling, "
                       "airflow or the power supply is failing the GPU.",
                evidence=_ev(facts, i, "clock_event_reasons", "temperature_celsius", "utilization_gpu_percent"),
                source={"rule": "nvmlClocksEventReason HW/thermal/power-brake slowdown bits", "url": NVML_REASONS,
                        "checked": CHECKED},
                fix=Fix(text="Check fans, airflow and inlet temperature, and the PSU/power cabling.",
                        commands=["nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i %d" % i]))
        elif "SW power cap" in reasons and _busy(facts, i):
            lim, dflt = facts.value(k + "power_limit_watts"), facts.value(k + "power_limit_default_watts")
            limits = " %s W (default %s W)" % (lim, dflt) if lim is not None and dflt is not None else (
                " %s W" % lim if lim is not None else "")
            yield Finding(
                code="gpu.power_capped", severity="info", components=["gpu"],
                title="%s is %s%% busy and held at its power limit%s" % (
                    name, facts.value(k + "utilization_gpu_percent"), limits),
                detail="The software power cap keeps the GPU within its power limit; normal at full load, but a "
                       "limit set below the default costs speed.",
                evidence=_ev(facts, i, "clock_event_reasons", "power_limit_watts", "power_limit_default_watts",
                             "utilization_gpu_percent"),
                source={"rule": "nvmlClocksEventReasonSwPowerCap", "url": NVML_REASONS, "checked": CHECKED},
                fix=Fix(text="If the limit is below the default, restore it.",
                        commands=["sudo nvidia-smi -pl %s -i %d" % (dflt or "<watts>", i)]))


def _correctable_only(facts: Facts, k: str) -> bool:
    """Whether a GPU's remapped rows are known to come from correctable errors alone: no row remapped for an
    uncorrectable error and no uncorrected error counted since the driver loaded (an unknown count is not 0)."""
    corr, unc = facts.value(k + "remapped_rows_correctable"), facts.value(k + "remapped_rows_uncorrectable")
    volatile = facts.value(k + "ecc_errors_volatile_uncorrected")
    return (isinstance(corr, int) and isinstance(unc, int) and unc == 0 and corr > 0
            and (volatile is None or volatile == 0))


@check("gpu-health.memory", requires=("gpu.N.remapped_rows_pending",), reads=("gpu.*", "gpu.*.*"),
       layers=("gpu",), codes=(
    CodeDoc("gpu.row_remap_pending", "warning", "A GPU has memory rows marked for remapping that take effect "
            "only at the next GPU reset: a warning when uncorrectable errors caused remappings (or the cause is "
            "not known), info when only correctable errors did.",
            "gpu.N.remapped_rows_pending, remapped_rows_(un)correctable, ecc_errors_volatile_uncorrected",
            "Until the reset the bad rows stay in the memory map; NVIDIA: 'Even with the flag set, unaffected "
            "applications can continue running without affecting accuracy and performance, and new workloads "
            "can be launched.' A row remapped after correctable errors is preventive (reset when convenient); "
            "uncorrectable errors have already killed work, and errors that recur after resets mean the memory "
            "is degrading.", REMAP_FLAGS_DOC),
    CodeDoc("gpu.row_remap_failed", "error", "A GPU's row remapping failed: its memory has no spare rows "
            "left for the failing bank.", "gpu.N.remapped_rows_failure",
            "New memory errors can no longer be repaired; NVIDIA counts a remapping failure as a reason to "
            "run its field diagnostics and return the board (RMA).", ECC_DOC),
    CodeDoc("gpu.retired_pages_pending", "warning", "A GPU has memory pages waiting to be retired at the "
            "next reboot (dynamic page retirement, pre-Ampere datacenter GPUs).",
            "gpu.N.retired_pages_pending, retired_pages_sbe/dbe",
            "The bad pages stay in use until the driver reloads; a job that lands on them can crash or read "
            "corrupt data. A reboot retires them.", DPR_DOC),
    CodeDoc("gpu.retired_pages_limit", "error", "A GPU has retired as many memory pages as it can (64).",
            "gpu.N.retired_pages_sbe, gpu.N.retired_pages_dbe",
            "No further bad page can be retired; NVIDIA's guidance is to consider the board for RMA.",
            DPR_DOC),
))
def gpu_memory(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        name = _name(facts, i)
        bus = facts.value(k + "pci_bus_id")
        corr, unc = facts.value(k + "remapped_rows_correctable"), facts.value(k + "remapped_rows_uncorrectable")
        rows = ("%s row(s) remapped for uncorrectable and %s for correctable errors" % (unc, corr)
                if isinstance(unc, int) and isinstance(corr, int) else "")
        remap_ev = ("remapped_rows_pending", "remapped_rows_failure", "remapped_rows_uncorrectable",
                    "remapped_rows_correctable", "ecc_errors_volatile_uncorrected", "pci_bus_id")
        if facts.value(k + "remapped_rows_failure") is True:
            yield Finding(
                code="gpu.row_remap_failed", severity="error", components=["gpu"],
                title="%s: row remapping failed, its memory cannot repair new errors" % name,
                detail="NVML reports that a row remapping failed (the bank has no spare row left%s). NVIDIA "
                       "treats this as a reason to run the field diagnostics and return the GPU (RMA); until "
                       "then jobs on it can crash on memory errors." % ("; " + rows if rows else ""),
                evidence=_ev(facts, i, *remap_ev),
                source={"rule": "nvmlDeviceGetRemappedRows failureOccurred must be 0", "url": ECC_DOC,
                        "checked": CHECKED},
                fix=Fix(text="Drain the node and take this GPU out of service; run NVIDIA's field diagnostics "
                             "and open an RMA with the vendor, quoting the serial number.",
                        commands=["nvidia-smi -q -d ROW_REMAPPER -i %d" % i,
                                  "nvidia-smi --query-gpu=serial,pci.bus_id --format=csv -i %d" % i,
                                  "sudo dmesg | grep -i xid"]))
        if facts.value(k + "remapped_rows_pending") is True:
            preventive = _correctable_only(facts, k)
            yield Finding(
                code="gpu.row_remap_pending", severity="info" if preventive else "warning", components=["gpu"],
                title="%s has memory rows waiting to be remapped: reset the GPU%s%s" % (
                    name, " when convenient" if preventive else "", " (%s)" % rows if rows else ""),
                detail=("Rows that produced correctable memory errors are remapped to spares at the next GPU "
                        "reset. Nothing was lost: unaffected work keeps running without loss of accuracy or "
                        "performance and new work can start (NVIDIA's row-remapping pending flag); reset the "
                        "GPU at the next idle moment (or reboot), and watch whether errors come back."
                        if preventive else
                        "Rows that produced memory errors are remapped to spares only at the next GPU reset. "
                        "Running work is protected by error containment, but the bad rows stay in the memory "
                        "map until then; reset the GPU when it is idle (or reboot). Errors that come back "
                        "after resets mean the memory is degrading."),
                evidence=_ev(facts, i, *remap_ev),
                source={"rule": "nvmlDeviceGetRemappedRows isPending: a reset is required to remap the row; the "
                                "pending flag alone does not stop unaffected work",
                        "url": REMAP_FLAGS_DOC, "checked": "2026-11-29"},
                fix=Fix(text="Stop the processes on this GPU, then reset it (or reboot the node).",
                        commands=["nvidia-smi -q -d ROW_REMAPPER -i %d" % i,
                                  "nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv",
                                  AnyOf("sudo nvidia-smi -r -i %d" % i, "sudo reboot")]))
        sbe, dbe = facts.value(k + "retired_pages_sbe"), facts.value(k + "retired_pages_dbe")
        pages = ("%s page(s) retired for double-bit and %s for repeated single-bit errors" % (dbe, sbe)
                 if isinstance(sbe, int) and isinstance(dbe, int) else "")
        page_ev = ("retired_pages_pending", "retired_pages_dbe", "retired_pages_sbe",
                   "ecc_errors_volatile_uncorrected", "pci_bus_id")
        total = (sbe if isinstance(sbe, int) else 0) + (dbe if isinstance(dbe, int) else 0)
        if total >= RETIRED_PAGE_LIMIT:
            yield Finding(
                code="gpu.retired_pages_limit", severity="error", components=["gpu"],
                title="%s has retired %d memory pages, the most it can (%d)" % (name, total, RETIRED_PAGE_LIMIT),
                detail="Dynamic page retirement has used all its room (%s); further bad memory cannot be "
                       "retired. NVIDIA's guidance is to consider the board for RMA." % pages,
                evidence=_ev(facts, i, *page_ev),
                source={"rule": "at most %d retired pages per GPU" % RETIRED_PAGE_LIMIT, "url": DPR_DOC,
                        "checked": CHECKED},
                fix=Fix(text="Take this GPU out of service and contact the vendor for an RMA, quoting the "
                             "serial number.",
                        commands=["nvidia-smi -q -d PAGE_RETIREMENT -i %d" % i,
                                  "nvidia-smi --query-gpu=serial,pci.bus_id --format=csv -i %d" % i]))
        if facts.value(k + "retired_pages_pending") is True:
            yield Finding(
                code="gpu.retired_pages_pending", severity="warning", components=["gpu"],
                title="%s has memory pages waiting to be retired: reboot%s" % (name, " (%s)" % pages if pages
                                                                               else ""),
                detail="Pages that produced a double-bit error or repeated single-bit errors are retired "
                       "(blacklisted) only when the driver reloads; until then a job that lands on them can "
                       "crash or read corrupt data. This is fixed by a reboot, not by replacing the GPU%s." % (
                           "" if not bus else " (at %s)" % bus),
                evidence=_ev(facts, i, *page_ev),
                source={"rule": "nvmlDeviceGetRetiredPagesPendingStatus: pages retire at the next driver "
                                "reload", "url": DPR_DOC, "checked": CHECKED},
                fix=Fix(text="Drain the node and reboot it (a GPU reset with no process on the GPU also reloads "
                             "it).",
                        commands=["nvidia-smi -q -d PAGE_RETIREMENT -i %d" % i, "sudo nvidia-smi -r -i %d" % i,
                                  "sudo reboot"]))


@check("gpu-health.mig", requires=("gpu.N.mig_mode_current",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",),
       codes=(
    CodeDoc("gpu.mig_no_instances", "error", "A GPU is in MIG mode but has no MIG device (no GPU instance "
            "with a compute instance) to run on.", "gpu.N.mig_mode_current, gpu.N.mig_devices",
            "CUDA cannot use a MIG-mode GPU as a whole: with no MIG device created, programs see no GPU there "
            "(\"no CUDA-capable device is detected\", torch.cuda.is_available() False).", MIG_DOC),
    CodeDoc("gpu.mig_mode_pending", "warning", "A GPU's MIG mode was changed but the change waits for a GPU "
            "reset.", "gpu.N.mig_mode_current, gpu.N.mig_mode_pending",
            "Until the reset the GPU keeps its old mode: MIG devices cannot be created (or the whole GPU is "
            "not usable) as the change intended.", MIG_DOC),
))
def gpu_mig(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        name = _name(facts, i)
        cur, pending = facts.value(k + "mig_mode_current"), facts.value(k + "mig_mode_pending")
        present = facts.value(k + "mig_devices")
        if cur is True and present == 0:
            yield Finding(
                code="gpu.mig_no_instances", severity="error", components=["gpu"],
                title="%s is in MIG mode with no MIG device created: CUDA sees no GPU there" % name,
                detail="A GPU in MIG mode runs work only inside MIG devices (a GPU instance with a compute "
                       "instance); with none created, CUDA programs find no device on it (\"no CUDA-capable "
                       "device is detected\"). Create the instances, or turn MIG off if it was not meant to "
                       "be on.",
                evidence=_ev(facts, i, "mig_mode_current", "mig_mode_pending", "mig_devices", "mig_devices_max"),
                source={"rule": "MIG mode on and nvmlDeviceGetMigDeviceHandleByIndex finds no MIG device",
                        "url": NVML_MIG, "checked": CHECKED},
                fix=Fix(text="List the GPU instance profiles, then create GPU instances with their compute "
                             "instances (-C); or disable MIG and reset the GPU.",
                        commands=[AnyOf(["sudo nvidia-smi mig -lgip -i %d" % i,
                                         "sudo nvidia-smi mig -cgi <profile ids, e.g. 9,9> -C -i %d" % i,
                                         "nvidia-smi -L"],
                                        "sudo nvidia-smi -mig 0 -i %d && sudo nvidia-smi -r -i %d" % (i, i))]))
        if isinstance(cur, bool) and isinstance(pending, bool) and cur != pending:
            yield Finding(
                code="gpu.mig_mode_pending", severity="warning", components=["gpu"],
                title="%s: MIG mode changes from %s to %s only after a GPU reset" % (
                    name, "on" if cur else "off", "on" if pending else "off"),
                detail="The MIG mode was changed but the GPU still runs in the old mode until it is reset "
                       "(on some systems only a reboot resets it); %s" % (
                           "MIG devices cannot be created until then." if pending else
                           "the whole GPU stays split into MIG devices until then."),
                evidence=_ev(facts, i, "mig_mode_current", "mig_mode_pending", "mig_devices"),
                source={"rule": "nvmlDeviceGetMigMode current != pending", "url": MIG_DOC, "checked": CHECKED},
                fix=Fix(text="Stop the processes on this GPU (and nvidia-persistenced/DCGM if they hold it), then "
                             "reset it, or reboot.",
                        commands=["nvidia-smi --query-gpu=mig.mode.current,mig.mode.pending --format=csv -i %d" % i,
                                  AnyOf("sudo nvidia-smi -r -i %d" % i, "sudo reboot")]))


@check("gpu-health.pcie-bridges", requires=("topology.gpus",), reads=("gpu.*", "gpu.*.*", "topology.gpus"),
       layers=("topology",), codes=(
    CodeDoc("gpu.pcie_bridge_degraded", "warning", "A PCIe link between the bridges above a GPU (root port, "
            "switch) runs narrower than both ends support, or slower while the GPU below is busy.",
            "topology.gpus (bridges: current/max link speed and width from sysfs), gpu.N.utilization",
            "Everything below that link (the GPU, its peers behind the same switch) shares the reduced bandwidth; "
            "a lower speed only while idle is normal power saving.", PCIE_SYSFS),
))
def gpu_pcie_bridges(ctx: CheckContext) -> Iterable[Finding]:
    """The same question as ``gpu-health.pcie`` (a link trained below what it supports, idle downshift quiet),
    asked of the links between the bridges above each GPU."""
    return _bridge_links(ctx.facts)


def _bridge_links(facts: Facts) -> Iterable[Finding]:
    """The PCIe links above each GPU (sysfs, the topology probe): a link is two devices of the GPU's path that
    report the same current speed and width (its two ends); it should run at the lower of their maxima. Width
    is judged always, speed only while a GPU below is busy (idle links slow down to save power). A link shared
    by several GPUs is reported once."""
    seen = set()
    for g in facts.items("topology.gpus"):
        if not isinstance(g, dict) or not isinstance(g.get("bridges"), list):
            continue
        i = g.get("index")
        if not isinstance(i, int):
            continue
        chain = [b for b in g["bridges"] if isinstance(b, dict)]
        for up, down in zip(chain, chain[1:]):
            gen_now, width_now = down.get("gen_current"), down.get("width_current")
            if not isinstance(gen_now, int) or not isinstance(width_now, int) or (gen_now, width_now) != (
                    up.get("gen_current"), up.get("width_current")):
                continue  # not the two ends of one link (a switch's internal hop), or not known
            cur = (gen_now, width_now)
            gmax = [x for x in (up.get("gen_max"), down.get("gen_max")) if isinstance(x, int)]
            wmax = [x for x in (up.get("width_max"), down.get("width_max")) if isinstance(x, int)]
            want_gen, want_width = (min(gmax) if gmax else None), (min(wmax) if wmax else None)
            narrow = want_width is not None and cur[1] < want_width
            slow = want_gen is not None and cur[0] < want_gen and _busy(facts, i)
            key = (up.get("bdf"), down.get("bdf"))
            if not (narrow or slow) or key in seen:
                continue
            seen.add(key)
            yield Finding(
                code="gpu.pcie_bridge_degraded", severity="warning", components=["topology", "gpu"],
                title="PCIe link %s -> %s above %s runs Gen%s x%s, but both ends support Gen%s x%s" % (
                    up.get("bdf"), down.get("bdf"), _name(facts, i), cur[0], cur[1], want_gen, want_width),
                detail="Every GPU behind this link shares its bandwidth%s; a link that trained %s points at the "
                       "slot, a riser or cable, or the firmware's PCIe setting." % (
                           " (the GPU below is busy, so this is not power saving)" if slow else "",
                           "narrower than both ends support" if narrow else "slower under load"),
                evidence=[f.to_dict() for f in (facts.get("topology.gpus"),
                                                facts.get("gpu.%s.utilization_gpu_percent" % i)) if f is not None],
                source={"rule": "sysfs current_link_speed/width below the lower max_link_speed/width of the link's "
                                "two ends", "url": PCIE_SYSFS, "checked": CHECKED},
                fix=Fix(text="Check the link's status as the kernel sees it; reseat the card, riser or cable, and "
                             "check the firmware's PCIe link settings for that slot.",
                        commands=["sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'" % down.get("bdf"),
                                  "sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'" % up.get("bdf")]))


#: Every GPU-health question at once.
gpu_health = group("gpu-health")


# -- BAR1 and GPUDirect RDMA -------------------------------------------------------------------------------

#: NVIDIA's resource manager maps GPU memory registered by a third party (GPUDirect RDMA: nvidia_p2p_get_pages,
#: called by nvidia-peermem / nv_peer_mem when an RDMA adapter registers GPU memory with ibv_reg_mr) through the
#: GPU's BAR1, and refuses a registration when BAR1 less what is already mapped and a 36 MiB reserve is smaller
#: than it ("no space for BAR1 mappings", NV_ERR_INSUFFICIENT_RESOURCES: -ENOMEM to the caller):
#: _isSpaceAvailableForBar1P2PMapping and RmThirdPartyP2PBAR1GetPages; CLI_THIRD_PARTY_P2P_BAR1_RESERVE (36 << 20)
#: in src/nvidia/generated/g_third_party_p2p_nvoc.h.
BAR1_P2P_SOURCE = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/595.45.04/"
                   "src/nvidia/src/kernel/gpu/bus/p2p.c#L994-L1038")
BAR1_P2P_RESERVE = 36 << 20


@check("gpu-health.bar1-gpudirect-rdma", requires=("gpu.gpudirect_rdma",), reads=("gpu.*", "gpu.*.*"),
       layers=("gpu",), codes=(
    CodeDoc("gpu.bar1_limits_gpudirect_rdma", "warning", "A GPU set up for GPUDirect RDMA (a peer-memory module, "
            "nvidia-peermem or nv_peer_mem, loaded beside an RDMA device) has a BAR1 aperture smaller than its "
            "memory.", "gpu.gpudirect_rdma, gpu.N.bar1_total_bytes, gpu.N.memory_total_bytes",
            "The driver maps GPU memory an RDMA adapter registers (ibv_reg_mr) through BAR1: GPU memory registered "
            "at one time is limited to BAR1 less a reserve (36 MiB in NVIDIA's open kernel modules), and larger "
            "registrations fail (ibv_reg_mr returns NULL).", BAR1_P2P_SOURCE),
))
def gpu_bar1_gpudirect_rdma(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    rdma = facts.mapping("gpu.gpudirect_rdma")
    modules = [str(m) for m in rdma.get("peer_memory_modules") or [] if isinstance(m, str)]
    devices = [str(d) for d in rdma.get("rdma_devices") or [] if isinstance(d, str)]
    if not modules or not devices:
        return
    for i in gpu_indexes(facts):
        k = "gpu.%d." % i
        bar1, mem = facts.value(k + "bar1_total_bytes"), facts.value(k + "memory_total_bytes")
        if not isinstance(bar1, int) or not isinstance(mem, int) or isinstance(bar1, bool) or not 0 < bar1 < mem:
            continue
        usable = max(bar1 - BAR1_P2P_RESERVE, 0)
        yield Finding(
            code="gpu.bar1_limits_gpudirect_rdma", severity="warning", components=["gpu", "topology"],
            title="%s has a %d MiB BAR1 for %d MiB of memory, and GPUDirect RDMA is set up (%s, %s): GPU memory "
                  "registered for RDMA at one time is limited to BAR1" % (
                      _name(facts, i), bar1 >> 20, mem >> 20, ", ".join(modules), ", ".join(devices[:4])),
            detail="An RDMA adapter reaches GPU memory through the GPU's BAR1 aperture: the driver maps every "
                   "registered buffer (ibv_reg_mr on GPU memory) into BAR1 and refuses a registration once BAR1, "
                   "less a reserve the driver keeps (36 MiB in NVIDIA's open kernel modules), is used up (about %d "
                   "MiB here). Registering more GPU memory at once fails: ibv_reg_mr returns NULL." % (usable >> 20),
            evidence=_ev(facts, i, "bar1_total_bytes", "memory_total_bytes")
            + [f.to_dict() for f in (facts.get("gpu.gpudirect_rdma"),) if f is not None],
            source={"rule": "RmThirdPartyP2PBAR1GetPages: a third-party (GPUDirect RDMA) mapping needs BAR1 space "
                            "beyond what is mapped plus a 36 MiB reserve", "url": BAR1_P2P_SOURCE,
                    "checked": CHECKED},
            fix=Fix(text="Register at most the BAR1 size at a time (smaller buffers, reused), or use a GPU with a "
                         "large BAR1 (datacenter GPUs with a BAR1 as large as their memory; Resizable BAR / Above 4G "
                         "Decoding on in the firmware where the board supports it).",
                    commands=["nvidia-smi -q -d MEMORY -i %d | grep -A 3 BAR1" % i,
                              "sudo dmesg | grep -i 'BAR1'"]))

"""Checks on the GPUs themselves: a PCIe link running below its capability under load, a small
GPU also driving a display, uncorrectable ECC errors, and thermal/power throttling."""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check, group

CHECKED = "2026-11-22"
NVML_REASONS = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"
NVML_PCIE = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
ECC_DOC = "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"
XID_DOC = "https://docs.nvidia.com/deploy/xid-errors/index.html"
#: utilization (%) from which a GPU counts as busy
BUSY_PERCENT = 50
SMALL_DISPLAY_GPU = 8 * 1024 ** 3
SLOWDOWNS = ("HW slowdown", "HW thermal slowdown", "SW thermal slowdown", "HW power brake slowdown")


def gpu_indexes(facts: Facts) -> List[int]:
    out = set()
    for f in facts.with_prefix("gpu."):
        m = re.match(r"^gpu\.(\d+)\.", f.key)
        if m:
            out.add(int(m.group(1)))
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


@check("gpu-health.pcie", requires=("gpu.N.pcie_gen_current",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",), codes=(
    CodeDoc("gpu.pcie_link_degraded", "warning", "A busy GPU's PCIe link runs below the generation "
            "the GPU and slot support.", "gpu.N.pcie_gen_current/max, pcie_width_current/max, utilization",
            "Host-device copies and multi-GPU traffic run at a fraction of the bandwidth (bad riser, slot, "
            "BIOS setting). An idle GPU lowering its link generation is normal power saving.", NVML_PCIE),
    CodeDoc("gpu.display_small_memory", "info", "A GPU with little memory also drives a display.",
            "gpu.N.display_active, gpu.N.memory_total_bytes", "The desktop takes part of its memory; training "
            "runs out of memory sooner.", NVML_PCIE),
    CodeDoc("gpu.ecc_uncorrectable", "error", "A GPU reports uncorrectable ECC errors since boot.",
            "gpu.N.ecc_errors_volatile_uncorrected", "Jobs on it can crash or compute wrong results; the GPU "
            "needs a reset (and row remapping) before more work.", ECC_DOC),
    CodeDoc("gpu.throttled", "warning", "A GPU's clocks are held down by thermal or hardware power slowdown.",
            "gpu.N.clock_event_reasons", "The GPU runs at a fraction of its speed: cooling, airflow or power "
            "delivery problem.", NVML_REASONS),
    CodeDoc("gpu.power_capped", "info", "A busy GPU's clocks are limited by its software power cap.",
            "gpu.N.clock_event_reasons, gpu.N.power_limit_watts", "Normal at full load, but a power limit set "
            "below the default costs speed.", NVML_REASONS),
))
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


@check("gpu-health.display-memory", codes=(), requires=("gpu.N.display_active",), reads=("gpu.*", "gpu.*.*"),
       layers=("gpu",))
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


@check("gpu-health.ecc", codes=(), requires=("gpu.N.ecc_mode_current",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",))
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


@check("gpu-health.clocks", codes=(), requires=("gpu.N.clock_event_reasons",), reads=("gpu.*", "gpu.*.*"),
       layers=("gpu",))
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


#: Every GPU-health question at once.
gpu_health = group("gpu-health")

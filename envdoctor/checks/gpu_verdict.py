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

The meaning and fix of every NVML return code is :data:`NVML_CODES`, from NVIDIA's ``nvmlReturn_t``
documentation (also used by :mod:`envdoctor.checks.driver_health` for failures at initialisation).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from ..facts import Facts
from ..findings import AnyOf, Finding, Fix, Step
from . import CheckContext, CodeDoc, check

CHECKED = "2026-11-25"
NVML_RETURN_URL = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"
XID_URL = "https://docs.nvidia.com/deploy/xid-errors/index.html"
PCIE_URL = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"
#: Where the driver's initialisation messages and their causes are discussed (RmInitAdapter failed with
#: Resizable BAR / Above 4G Decoding off: an RTX 5090 on 575.64.03).
KERNEL_INIT_URL = "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/862"

RESET = "sudo nvidia-smi --gpu-reset -i {gpu}   # nothing may be using the GPU"
KLOG = "sudo dmesg -T | grep -i -E 'xid|nvrm' | tail -n 30"
BUG = "sudo nvidia-bug-report.sh"


class NvmlCode(NamedTuple):
    code: int
    meaning: str  # NVIDIA's description of the return code
    trouble: bool  # for one call of one GPU: does it mean the GPU or driver is in trouble?
    fix: str  # what to do
    commands: Tuple[Step, ...] = ()  # in order; an AnyOf is a choice of ways


#: ``nvmlReturn_t`` (nvml.h; the meanings are NVIDIA's, from NVML_RETURN_URL). ``trouble`` False marks the
#: answers that say a question does not apply or could not be put this way (the board lacks the feature,
#: the driver predates the call): they make a fact unknown, not the node broken. At initialisation, for
#: the GPU count and for a GPU's handle every failure is trouble.
NVML_CODES: Dict[str, NvmlCode] = {
    "NVML_ERROR_UNINITIALIZED": NvmlCode(
        1, "NVML was not initialised (the library lost its connection to the driver)", True,
        "Reboot if it recurs; the driver is in a bad state.", (KLOG, "sudo reboot")),
    "NVML_ERROR_INVALID_ARGUMENT": NvmlCode(
        2, "a supplied argument is invalid", False, "Nothing on the machine; report it to envdoctor."),
    "NVML_ERROR_NOT_SUPPORTED": NvmlCode(
        3, "the requested operation is not available on this device", False, "Nothing to fix."),
    "NVML_ERROR_NO_PERMISSION": NvmlCode(
        4, "the current user does not have permission for the operation", False,
        "Give the user access to /dev/nvidia* (mode 0666 is the driver's default).", ("ls -l /dev/nvidia*",)),
    "NVML_ERROR_ALREADY_INITIALIZED": NvmlCode(
        5, "deprecated: NVML was already initialised", True, "Reboot if it recurs.", ("sudo reboot",)),
    "NVML_ERROR_NOT_FOUND": NvmlCode(
        6, "a query to find an object was unsuccessful", False, "Nothing to fix."),
    "NVML_ERROR_INSUFFICIENT_SIZE": NvmlCode(
        7, "an input argument is not large enough", False, "Nothing on the machine; report it to envdoctor."),
    "NVML_ERROR_INSUFFICIENT_POWER": NvmlCode(
        8, "a device's external power cables are not properly attached", True,
        "Power the node off and check the GPU's auxiliary power cables and the power supply; reseat the "
        "board. Replace the board (RMA) if it persists.", (KLOG, "nvidia-smi -q -d POWER -i {gpu}")),
    "NVML_ERROR_DRIVER_NOT_LOADED": NvmlCode(
        9, "the NVIDIA driver is not loaded", True, "Load the nvidia kernel module and read why it fails.",
        ("sudo modprobe nvidia", KLOG)),
    "NVML_ERROR_TIMEOUT": NvmlCode(
        10, "the driver timed out answering", True,
        "Reset the GPU; if it recurs, reboot and read the kernel log for Xid errors.",
        (KLOG, AnyOf(RESET, "sudo reboot"))),
    "NVML_ERROR_IRQ_ISSUE": NvmlCode(
        11, "the NVIDIA kernel driver detected an interrupt issue with a GPU", True,
        "Read the kernel log, reboot; if it recurs, reseat the board and check the slot and the BIOS "
        "interrupt (MSI) settings.", (KLOG, "sudo reboot")),
    "NVML_ERROR_LIBRARY_NOT_FOUND": NvmlCode(
        12, "the NVML shared library (libnvidia-ml.so.1) could not be found or loaded", True,
        "Install the NVIDIA driver's user-space libraries (the version of the loaded module).",
        ("ldconfig -p | grep libnvidia-ml",)),
    "NVML_ERROR_FUNCTION_NOT_FOUND": NvmlCode(
        13, "this driver's NVML does not implement the function (an older driver)", False, "Nothing to fix."),
    "NVML_ERROR_CORRUPTED_INFOROM": NvmlCode(
        14, "the GPU's InfoROM is corrupted", True,
        "Drain the node; the board needs its InfoROM restored by the vendor or replacing (RMA).",
        ("nvidia-smi -q -d INFOROM -i {gpu}", BUG)),
    "NVML_ERROR_GPU_IS_LOST": NvmlCode(
        15, "the GPU has fallen off the bus or has otherwise become inaccessible (Xid 79)", True,
        "Reset the GPU or reboot; if it recurs, check power, cooling, the slot or riser, reseat the board, "
        "and replace it (RMA) if it keeps falling off.", (KLOG, AnyOf(RESET, "sudo reboot"), BUG)),
    "NVML_ERROR_RESET_REQUIRED": NvmlCode(
        16, "the GPU requires a reset before it can be used again", True,
        "Reset the GPU (or reboot the node).", (AnyOf(RESET, "sudo reboot"),)),
    "NVML_ERROR_OPERATING_SYSTEM": NvmlCode(
        17, "the GPU control device has been blocked by the operating system or cgroups", True,
        "Check the device cgroup rules of this session or container and the permissions of /dev/nvidia*.",
        ("ls -l /dev/nvidia*", "cat /proc/self/cgroup")),
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": NvmlCode(
        18, "the driver library and the loaded kernel module are different versions", True,
        "Reboot (or unload and reload the nvidia modules).", ("sudo reboot",)),
    "NVML_ERROR_IN_USE": NvmlCode(
        19, "the operation cannot be performed because the GPU is currently in use", False, "Nothing to fix."),
    "NVML_ERROR_MEMORY": NvmlCode(
        20, "insufficient memory", True, "Free host memory or reboot the node.", ("free -h", "sudo reboot")),
    "NVML_ERROR_NO_DATA": NvmlCode(21, "no data", False, "Nothing to fix."),
    "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED": NvmlCode(
        22, "the vGPU operation is not available because ECC is enabled", False, "Nothing to fix."),
    "NVML_ERROR_INSUFFICIENT_RESOURCES": NvmlCode(
        23, "the driver ran out of critical resources other than memory", True, "Reboot the node.",
        (KLOG, "sudo reboot")),
    "NVML_ERROR_FREQ_NOT_SUPPORTED": NvmlCode(24, "the frequency is not supported", False, "Nothing to fix."),
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH": NvmlCode(
        25, "the structure version passed is not supported by this driver", False, "Nothing to fix."),
    "NVML_ERROR_DEPRECATED": NvmlCode(26, "the requested functionality is deprecated", False, "Nothing to fix."),
    "NVML_ERROR_NOT_READY": NvmlCode(
        27, "the system is not ready for the request", True,
        "Wait for the driver to finish initialising (persistence daemon, Fabric Manager on NVSwitch systems); "
        "reboot if it stays so.", ("systemctl status nvidia-persistenced nvidia-fabricmanager", "sudo reboot")),
    "NVML_ERROR_GPU_NOT_FOUND": NvmlCode(
        28, "no GPU was found", True, "Read the kernel log; reseat the board or reboot.", (KLOG, "sudo reboot")),
    "NVML_ERROR_INVALID_STATE": NvmlCode(
        29, "a resource is not in the correct state for the operation", True, "Reset the GPU or reboot.",
        (AnyOf(RESET, "sudo reboot"),)),
    "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED": NvmlCode(
        30, "the reset type is not supported", False, "Nothing to fix."),
    "NVML_ERROR_UNKNOWN": NvmlCode(
        999, "an internal driver error occurred", True,
        "Read the kernel log for Xid errors, reset the GPU or reboot; collect NVIDIA's bug report if it "
        "recurs.", (KLOG, AnyOf(RESET, "sudo reboot"), BUG)),
}

_BY_NUMBER = {c.code: name for name, c in NVML_CODES.items()}


def describe(error: str, code: Any = None) -> NvmlCode:
    """The table row for an NVML error name (or number); an unknown one means trouble."""
    if error in NVML_CODES:
        return NVML_CODES[error]
    if isinstance(code, int) and code in _BY_NUMBER:
        return NVML_CODES[_BY_NUMBER[code]]
    if error == "EXCEPTION":
        return NvmlCode(-1, "the NVML binding failed", False, "Nothing on the machine; report it to envdoctor.")
    return NvmlCode(code if isinstance(code, int) else -1, "an error code this envdoctor does not know", True,
                    "Read the kernel log; reset the GPU or reboot.", (KLOG, "sudo reboot"))


def short(error: str) -> str:
    return error[len("NVML_ERROR_"):] if error.startswith("NVML_ERROR_") else error


def _src(rule: str, url: str = NVML_RETURN_URL) -> Dict[str, Any]:
    return {"rule": rule, "url": url, "checked": CHECKED}


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def _bus(text: Any) -> Optional[str]:
    """``00000000:18:00.0`` or ``0000:18:00.0`` -> ``0000:18:00.0``."""
    m = re.match(r"^\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*$", str(text or ""))
    if not m:
        return None
    return "{:04x}:{:02x}:{:02x}.{:x}".format(*(int(g, 16) for g in m.groups()))


# -- what the machine shows -----------------------------------------------------------------

def pci_gpus(facts: Facts) -> Optional[List[Dict[str, Any]]]:
    """NVIDIA GPUs on the PCI bus ({bus_id, driver}), or None when the bus could not be listed."""
    pci = facts.get("gpu.pci_devices")
    if pci is not None and pci.known and isinstance(pci.value, list):
        return [{"bus_id": _bus(d.get("bus_id")) or str(d.get("bus_id")), "driver": d.get("driver")}
                for d in pci.value if isinstance(d, dict)]
    listed = facts.get("driver.nvidia_pci_gpus")
    if listed is not None and listed.known and isinstance(listed.value, list):
        return [{"bus_id": _bus(b) or str(b), "driver": None} for b in listed.value]
    return None


def proc_gpus(facts: Facts) -> List[str]:
    value = facts.value("gpu.proc_devices")
    return sorted(b for b in (_bus(x) for x in value) if b) if isinstance(value, list) else []


def nvidia_seen(facts: Facts) -> List[str]:
    """Bus addresses of NVIDIA GPUs the bus or the kernel driver shows (empty: none seen)."""
    seen: Set[str] = {str(d["bus_id"]) for d in pci_gpus(facts) or []}
    seen.update(proc_gpus(facts))
    return sorted(seen)


def has_nvidia_device(facts: Facts) -> bool:
    return bool(nvidia_seen(facts)) or facts.value("driver.kernel_module.loaded") is True


def _bound(facts: Facts) -> List[str]:
    """Bus addresses bound to the nvidia driver (PCI bus), or known to it (/proc/driver/nvidia/gpus)."""
    out = {str(d["bus_id"]) for d in pci_gpus(facts) or [] if d.get("driver") == "nvidia"}
    out.update(proc_gpus(facts))
    return sorted(out)


def nvml_bus_ids(facts: Facts) -> Dict[int, str]:
    out = {}
    for f in facts.with_prefix("gpu."):
        m = re.match(r"^gpu\.(\d+)\.pci_bus_id$", f.key)
        if m and f.known and _bus(f.value) and str(f.source).startswith("nvml:"):
            out[int(m.group(1))] = str(_bus(f.value))
    return out


def _failures(facts: Facts) -> List[Dict[str, Any]]:
    value = facts.value("gpu.nvml_failures")
    return [f for f in value if isinstance(f, dict)] if isinstance(value, list) else []


def _gpu_label(facts: Facts, i: int, entries: Sequence[Dict[str, Any]]) -> Tuple[str, str, str]:
    """(PCI address, how it is known, serial) of NVML GPU ``i``."""
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
    return bus or "unknown", how, serial or "unknown (NVML could not read it)"


def _fix_commands(row: NvmlCode, gpu: Any) -> List[Step]:
    def fill(c: str) -> str:
        return c.format(gpu=gpu if gpu is not None else 0)

    return [c.map(fill) if isinstance(c, AnyOf) else fill(c) for c in row.commands]


@check("gpu-nvml-verdict", requires=("gpu.count",), reads=("gpu.*", "gpu.*.*"), layers=("gpu",), codes=(
    CodeDoc("gpu.lost", "error", "A GPU has fallen off the bus or become inaccessible (NVML: GPU_IS_LOST, Xid 79).",
            "gpu.nvml_failures (per GPU: handle and every call), driver.nvml.status",
            "Nothing can use it until it is reset; a recurrence points at power, cooling, the slot or the board "
            "(RMA).", XID_URL),
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
        if lost:
            row = NVML_CODES["NVML_ERROR_GPU_IS_LOST"]
            calls = ", ".join(sorted({str(e.get("call")) for e in lost}))
            yield Finding(
                code="gpu.lost", severity="error", components=["gpu", "driver"],
                title="GPU %s (PCI %s%s, serial %s) is lost: NVML answered GPU_IS_LOST" % (gpu, bus, how, serial),
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
            title="GPU %s (PCI %s%s, serial %s): NVML %s (%s)" % (
                gpu, bus, how, serial, "cannot open it" if handle else "queries failed", what),
            detail="%s means %s. %s" % (short(str(first.get("error"))), row.meaning, row.fix),
            evidence=_ev(facts, "gpu.nvml_failures", "gpu.%s.name" % gpu),
            source=_src("nvmlReturn_t: %s" % row.meaning),
            fix=Fix(text=row.fix, commands=_fix_commands(row, gpu)))


@check("gpu-missing", requires=("gpu.count", "driver.device_nodes"),
       reads=("gpu.*", "gpu.*.*", "driver.*", "os.container"), layers=("gpu",), codes=(
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
        explained = init_failures(facts)
        missing = [b for b in missing if b not in explained]  # gpu.init_failed names those, with the reason
        if not missing:
            return
    else:
        missing = ["which of %s is not known (NVML did not give every GPU's bus id)" % ", ".join(expected)]
    severity = "warning" if facts.value("gpu.scheduler_allocation") else "error"
    yield _missing(facts, count.value, missing, len(expected), severity)


#: NVML start-up failures that say nothing about the GPUs themselves.
NOT_THE_GPUS = ("NVML_ERROR_LIBRARY_NOT_FOUND", "NVML_ERROR_DRIVER_NOT_LOADED", "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
                "NVML_ERROR_NO_PERMISSION", "NVML_ERROR_FUNCTION_NOT_FOUND")


def unanswered(facts: Facts) -> List[str]:
    """Bus addresses bound to the nvidia driver that NVML does not answer for (on a host; empty when NVML did
    not count, or when which ones are missing cannot be told)."""
    if facts.value("os.container"):
        return []
    count = facts.get("gpu.count")
    if count is None or not count.known or not isinstance(count.value, int) or not str(count.source).startswith(
            "nvml:"):
        # NVML failed to start for a reason of the GPUs' own (not a missing library, module or permission):
        # none of the bound GPUs answers
        nvml = facts.value("driver.nvml.status")
        if isinstance(nvml, str) and nvml.startswith("NVML_ERROR_") and nvml not in NOT_THE_GPUS:
            return _bound(facts)
        return []
    expected = _bound(facts)
    if count.value >= len(expected):
        return []
    seen = set(nvml_bus_ids(facts).values())
    return [b for b in expected if b not in seen] if len(seen) == count.value else []


# -- the kernel driver's own word: why a GPU it is bound to did not come up ------------------------

KERNEL_BUS = re.compile(r"\b([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})(?:\.([0-7]))?\b")
#: Lines of the NVIDIA driver saying a GPU failed to come up (RmInitAdapter is the resource manager's
#: initialisation of one GPU; the probe routine runs when the module binds it).
INIT_FAILED = re.compile(r"RmInitAdapter failed|rm_init_adapter failed|Cannot initialize GSP|probe routine failed|"
                         r"failed to allocate memory for BAR|PCI I/O region assigned to your NVIDIA device is invalid|"
                         r"not supported by the NVIDIA|necessary power cables|fallen off the bus|"
                         r"BAR ?\d[^\n]{0,200}(?:no space|can't assign|failed)", re.IGNORECASE)


class InitCause(NamedTuple):
    name: str
    pattern: str  # in the kernel's lines about the GPU
    cause: str
    fix: str


#: What the kernel's lines say about the cause, most specific first; the fix for each. The last one is what
#: to check when the lines name no cause.
INIT_CAUSES = (
    InitCause("bar", r"PCI I/O region assigned to your NVIDIA device is invalid|BAR ?\d ?is 0M|"
                     r"failed to allocate memory for BAR|BAR ?\d[^\n]{0,200}(?:no space|can't assign|failed)",
              "the firmware gave the GPU no (or too small a) memory window: its BARs could not be assigned",
              "Enable \"Above 4G Decoding\" and \"Resizable BAR\" in the BIOS/UEFI (and turn CSM off), then "
              "reboot; on servers and VMs, give the GPU a 64-bit MMIO window large enough for its memory."),
    InitCause("power", r"power cables|insufficient power",
              "the GPU's auxiliary power is not connected or not enough",
              "Power the machine off, connect every auxiliary power cable of the board (and check the supply's "
              "rating), reseat the board, and boot again."),
    InitCause("unsupported", r"not supported by the NVIDIA",
              "this driver release does not support the GPU",
              "Install a driver branch that supports this GPU (newer GPUs need newer branches; Blackwell needs the "
              "open kernel modules), then reboot."),
    InitCause("gsp", r"GSP",
              "the GPU System Processor firmware failed to start",
              "Power-cycle the machine (a cold boot resets the GPU); update the driver; if it persists with the "
              "proprietary modules, the GSP firmware can be turned off (NVreg_EnableGpuFirmware=0, not possible "
              "with the open modules or on Blackwell)."),
    InitCause("lost", r"fallen off the bus",
              "the GPU fell off the bus (Xid 79)",
              "Power-cycle; check power, cooling and the slot or riser, reseat the board; replace it (RMA) if it "
              "keeps falling off."),
    InitCause("unknown", r"",
              "the kernel's messages name no cause",
              "Check, most common first: \"Above 4G Decoding\" and \"Resizable BAR\" enabled in the BIOS/UEFI "
              "(GPUs with a large memory window: GeForce RTX 30/40/50, data-centre boards); every auxiliary "
              "power cable connected; the board fully seated (no loose riser); a driver branch that supports the "
              "GPU. Power-cycle after each change."),
)


def _log_bus(line: str) -> Optional[str]:
    m = KERNEL_BUS.search(line)
    if not m:
        return None
    return _bus("%s:%s:%s.%s" % (m.group(1), m.group(2), m.group(3), m.group(4) or "0"))


def init_failures(facts: Facts) -> Dict[str, Tuple[List[str], InitCause]]:
    """Bound GPUs NVML does not answer for whose initialisation failure the kernel log records: bus address ->
    (the driver's lines about it, the cause they point at). A line naming no GPU (older drivers: "RmInitAdapter
    failed! (0x26:0xffff:1227)") belongs to the GPU when exactly one is missing."""
    lines = facts.value("driver.kernel_log")
    missing = unanswered(facts)
    if not isinstance(lines, list) or not missing:
        return {}
    about: Dict[str, List[str]] = {b: [] for b in missing}
    unnamed: List[str] = []
    for raw in lines:
        line = str(raw)
        bus = _log_bus(line)
        if bus is None:
            unnamed.append(line)
        elif bus in about:
            about[bus].append(line)
    if len(missing) == 1:
        about[missing[0]] = [x for x in lines if str(x) in unnamed or str(x) in about[missing[0]]]
    out: Dict[str, Tuple[List[str], InitCause]] = {}
    for bus, said in about.items():
        if not any(INIT_FAILED.search(x) for x in said):
            continue
        text = "\n".join(said)
        cause = next(c for c in INIT_CAUSES if not c.pattern or re.search(c.pattern, text, re.IGNORECASE))
        out[bus] = (said, cause)
    return out


def _message(line: str) -> str:
    """The driver's words of a kernel line: from "NVRM: " on, without the repeated GPU address."""
    text = line[line.find("NVRM:"):] if "NVRM:" in line else line
    return re.sub(r"^NVRM:\s*(?:GPU [0-9a-fA-F:.]+:\s*)?", "", text).strip()


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
    for bus, (said, cause) in sorted(init_failures(facts).items()):
        failing = [x for x in said if INIT_FAILED.search(x)]
        first = next((x for x in failing if cause.pattern and re.search(cause.pattern, x, re.IGNORECASE)),
                     next((x for x in failing if "RmInitAdapter failed" in x), failing[0]))
        shown = said[-8:]
        yield Finding(
            code="gpu.init_failed", severity="error", components=["gpu", "driver"],
            title="GPU %s is bound to the nvidia driver, but the driver failed to initialise it: %s" % (
                bus, _message(first)),
            detail="NVML and CUDA do not see this GPU (nvidia-smi: \"No devices were found\" when it is the only "
                   "one). Cause: %s. The kernel log says:\n%s" % (cause.cause, "\n".join(shown)),
            evidence=_ev(facts, "driver.kernel_log", "gpu.count", "gpu.pci_devices", "gpu.proc_devices"),
            source=_src("the NVIDIA driver's kernel messages at GPU initialisation (RmInitAdapter)",
                        KERNEL_INIT_URL),
            fix=Fix(text=cause.fix + " (The driver's messages: `%s`.)" % KLOG))


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
    for f in facts.with_prefix("gpu."):
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

"""What the facts say about the machine's NVIDIA GPUs, shared by the checks that judge them (gpu-*, kernel-log,
driver-support, gpu-not-driven, driver-health): which GPUs the PCI bus, /proc and NVML show, which the driver does
not drive, which of those the installed driver cannot drive (its module flavour and branch, read from what is
installed, against the rule of :mod:`envdoctor.matrix.gpu_support`), what NVML's error codes mean, the kernel log's
lines about a GPU. Not a check: the checks import it."""

from __future__ import annotations

import re
from typing import Any, Dict, List, NamedTuple, Optional, Set, Tuple

from .. import lazyre, versions
from ..facts import Facts
from ..findings import AnyOf, Step
from ..matrix import gpu_support, kernel
from ..matrix.packages import is_driver_package
from . import CodeDoc, Message

XID_CATALOG_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


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


def _bus(text: Any) -> Optional[str]:
    """``00000000:18:00.0`` or ``0000:18:00.0`` -> ``0000:18:00.0``."""
    m = re.match(r"^\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*$", str(text or ""))
    if not m:
        return None
    return "{:04x}:{:02x}:{:02x}.{:x}".format(*(int(g, 16) for g in m.groups()))


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
    for f in facts.named("gpu.", "pci_bus_id"):
        m = re.match(r"^gpu\.(\d+)\.pci_bus_id$", f.key)
        if m and f.known and _bus(f.value) and str(f.source).startswith("nvml:"):
            out[int(m.group(1))] = str(_bus(f.value))
    return out


def lost_in_log(facts: Facts, bus: Optional[str], single: bool = False) -> List[str]:
    """The kernel's lines saying the GPU at ``bus`` fell off the bus (Xid 79, "GPU has fallen off the bus"); a
    line naming no GPU counts where ``single`` (the only GPU in question)."""
    lines = facts.value("driver.kernel_log")
    if not isinstance(lines, list):
        return []
    out = []
    for text, at in zip(lines, kernel.line_buses(lines)):
        if any(m.row.get("cause") == "lost" for m in kernel.classify(str(text))) and (
                (at is not None and at == bus) or (at is None and single)):
            out.append(str(text))
    return out


#: A lost GPU, whether NVML says so of one GPU (here), of the driver as a whole (driver-health.nvml-errors) or the
#: kernel's log does (kernel-log): one code, one meaning.
GPU_LOST = CodeDoc("gpu.lost", "error", "A GPU has fallen off the bus (Xid 79; a warning when it answers again now).",
                   "driver.kernel_log, driver.nvml.status", "The GPU is unusable until reset or reboot; recurrence "
                   "points at power, cooling, the slot or the board.", XID_CATALOG_URL,
                   messages=(Message("GPU has fallen off the bus", "https://docs.nvidia.com/deploy/xid-errors/index.html"),))


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


#: NVML start-up failures after which the GPUs may still be driven (this user cannot see them, or the
#: user-space half is broken): the kernel side is not judged from them.
NOT_THE_KERNEL = ("NVML_ERROR_NO_PERMISSION", "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVML_ERROR_LIBRARY_NOT_FOUND",
                  "NVML_ERROR_FUNCTION_NOT_FOUND")


def not_driven(facts: Facts) -> List[str]:
    """Bus addresses of the NVIDIA GPUs the kernel driver does not drive now, on a host: all of them where the
    nvidia module is not loaded or NVML failed to start for the GPUs' sake; else those bound to the nvidia driver
    that NVML does not answer for, and those left without a driver while the module is loaded (it refused
    them, :func:`registered`: neither the driver's procfs entry nor NVML has it). A GPU given to another driver
    on purpose (vfio-pci) is not counted."""
    if facts.value("os.container") or facts.value("os.wsl") == "WSL2":
        return []
    seen = nvidia_seen(facts)
    if not seen:
        return []
    nvml = facts.value("driver.nvml.status")
    if facts.value("driver.kernel_module.loaded") is False or nvml == "NVML_ERROR_DRIVER_NOT_LOADED":
        return seen
    out = set(unanswered(facts))
    if isinstance(nvml, str) and nvml.startswith("NVML_ERROR_") and nvml not in NOT_THE_KERNEL:
        out.update(_bound(facts))
    out.update(refused(facts))
    return sorted(out)


def refused(facts: Facts) -> List[str]:
    """GPUs the loaded nvidia module left without a driver (its probe refused them: no sysfs driver link, no
    procfs entry, no NVML answer)."""
    pci = facts.value("gpu.pci_devices")  # (the bus listing itself: an unbound GPU has no driver link)
    if facts.value("driver.kernel_module.loaded") is not True or not isinstance(pci, list):
        return []
    known = registered(facts)
    return sorted({b for b in (str(_bus(d.get("bus_id")) or d.get("bus_id")) for d in pci
                               if isinstance(d, dict) and d.get("bus_id") and not d.get("driver"))
                   if b not in known})


def registered(facts: Facts) -> Set[str]:
    """Bus addresses the nvidia driver itself records as its own: its per-GPU /proc/driver/nvidia/gpus entry, NVML's
    bus ids; all the bus shows where NVML counts at least as many GPUs. A GPU the module refused has neither
    entry nor answer; a sysfs driver link that is missing or unreadable (a container, a restricted or partial
    /sys) is no evidence against them."""
    out = set(proc_gpus(facts)) | set(nvml_bus_ids(facts).values())
    count = facts.get("gpu.count")
    seen = nvidia_seen(facts)
    if count is not None and count.known and isinstance(count.value, int) and not isinstance(count.value, bool) \
            and str(count.source).startswith("nvml:") and seen and count.value >= len(seen):
        out.update(seen)
    return out


def init_failures(facts: Facts) -> Dict[str, Tuple[List[str], Optional[kernel.Match]]]:
    """Bound GPUs NVML does not answer for, and GPUs the loaded module's probe refused (left unbound: :func:`refused`),
    whose initialisation failure the kernel log records: bus address ->
    (the driver's lines about it, the catalogued line naming the cause, None when they name none). A line naming
    no GPU (older drivers: "RmInitAdapter failed! (0x26:0xffff:1227)") belongs to the GPU when exactly one is
    missing (:func:`envdoctor.matrix.kernel.attribute`)."""
    lines = facts.value("driver.kernel_log")
    missing = unanswered(facts)
    if not facts.value("os.container") and facts.value("os.wsl") != "WSL2":
        # a GPU the module's probe refused (its BARs unassigned, no power): never bound, its lines name it
        missing = missing + [b for b in refused(facts) if b not in missing]
    if not isinstance(lines, list) or not missing:
        return {}
    out: Dict[str, Tuple[List[str], Optional[kernel.Match]]] = {}
    for bus, said in kernel.attribute(lines, missing).items():
        matches = [m for _, ms in said for m in ms]
        if kernel.failed(matches):
            out[bus] = ([text for text, _ in said], kernel.cause_of(matches))
    return out


#: Where the running or installed driver's version is read, best first.
VERSION_KEYS = ("driver.kernel_module.version", "driver.module_on_disk.version", "driver.version",
                "driver.userspace.version")


def installed_branch(facts: Facts) -> Tuple[Optional[int], Optional[str]]:
    """The driver's branch and version: the module's or libraries' own, else the installed driver packages'
    (rpm's or dpkg's record: xorg-x11-drv-nvidia 177.80-1.fc9, nvidia-driver 550.163.01-2)."""
    texts = [facts.text(key) for key in VERSION_KEYS]
    texts += [_upstream(str(p.get("version") or "")) for p in facts.items("cuda.packages")
              if isinstance(p, dict) and is_driver_package(str(p.get("name")))]
    for text in texts:
        v = versions.parse(text) if text else None
        if v is not None and v.release and v.release[0] >= 100:
            return v.release[0], text
    return None, None


def _upstream(pkg_version: str) -> str:
    """``3:177.80-1.fc9`` -> ``177.80``; ``550.163.01-2`` -> ``550.163.01`` (epoch and package release dropped)."""
    v = pkg_version.split(":", 1)[-1]
    return v.rsplit("-", 1)[0] if "-" in v else v


def installed_flavor(facts: Facts) -> Tuple[Optional[str], str]:
    """(open|proprietary, where it was read) of the module in effect: the loaded one, else the one installed."""
    if facts.value("driver.kernel_module.loaded") is True and facts.text("driver.kernel_module.flavor"):
        return facts.text("driver.kernel_module.flavor"), "the loaded nvidia module"
    flavor = facts.text("driver.module_on_disk.flavor")
    if flavor:
        return flavor, "the nvidia module installed for this kernel"
    return _package_flavor(facts)


#: A driver package's name says the flavour of the kernel module it installs.
_OPEN_PKG = lazyre.compile(r"^(nvidia-driver-\d+(-server)?-open|nvidia-dkms-\d+(-server)?-open|nvidia-kernel-open-\d+|"
                           r"linux-modules-nvidia-\d+(-server)?-open-.+|nvidia-open(-\d+)?|kmod-nvidia-open-dkms|"
                           r"nvidia-open-kernel-dkms)$")
_PROPRIETARY_PKG = lazyre.compile(r"^(nvidia-dkms-\d+(-server)?|linux-modules-nvidia-\d+(-server)?-(?!open-).+|"
                                  r"kmod-nvidia-latest-dkms|nvidia-kernel-dkms)$")


def _package_flavor(facts: Facts) -> Tuple[Optional[str], str]:
    """The flavour the installed driver packages give the module (one flavour only; both: unknown)."""
    names = [str(p.get("name")) for p in facts.items("cuda.packages") if isinstance(p, dict)]
    opened = [n for n in names if _OPEN_PKG.match(n)]
    proprietary = [n for n in names if _PROPRIETARY_PKG.match(n)]
    if opened and not proprietary:
        return "open", "the installed package %s" % opened[0]
    if proprietary and not opened:
        return "proprietary", "the installed package %s" % proprietary[0]
    return None, ""


def refusals(facts: Facts) -> List[Tuple[gpu_support.Gpu, gpu_support.Unsupported]]:
    """Each GPU the driver does not drive now (:func:`not_driven`) that the installed driver cannot drive, with why
    (its module flavour or branch against the GPU, :func:`envdoctor.matrix.gpu_support.support`), in the machine's
    order: the GPUs ``driver-support`` judges, read from what is installed (the loaded or installed module, the driver
    packages)."""
    buses = not_driven(facts)
    if not buses or facts.value("driver.installed") is not True:
        return []
    flavor, _ = installed_flavor(facts)
    branch, _ = installed_branch(facts)
    out: List[Tuple[gpu_support.Gpu, gpu_support.Unsupported]] = []
    for gpu in gpu_support.machine_gpus(facts, buses):
        said = gpu_support.support(gpu, branch, flavor)
        if said is not None:
            out.append((gpu, said))
    return out


def cannot_drive(facts: Facts) -> Dict[str, gpu_support.Unsupported]:
    """Bus address -> why the installed driver cannot drive that GPU (:func:`refusals`)."""
    return {gpu.bus: said for gpu, said in refusals(facts)}

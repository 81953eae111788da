"""What the NVIDIA driver's kernel messages say, read against NVIDIA's own catalog of them.

The driver probe keeps the NVIDIA driver's lines of the kernel log (``driver.kernel_log``); the catalog
(``envdoctor/matrix/data/kernel_messages.json``, generated from the driver's sources by
``scripts/build_kernel_catalog.py``) says what each line means. This check reports:

* the causes the driver names for a GPU it does not drive now: the open modules required (Blackwell) or
  refused (no GSP, before Turing), a GPU this branch does not support or leaves to a legacy branch, the GSP
  firmware file missing, another driver owning the GPU, a module built for another kernel, nvidia-uvm failing;
* a GPU that fell off the bus (Xid 79) and the Xid errors since boot, by NVIDIA's classes (a reset needed,
  memory and interconnect errors as warnings, an application's errors as information).

Causes a GPU's initialisation failure shares with the firmware and the board (BARs, power, GSP start-up) are
``gpu.init_failed``'s (:mod:`envdoctor.checks.gpu_verdict`), with the same catalog. A line about a GPU the
driver drives now is history: a cause is then not reported (the GPU works), an Xid is.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..facts import Facts
from ..findings import Finding, Fix
from ..matrix import kernel
from . import CheckContext, CodeDoc, Conclusion, check
from .gpus import GPU_LOST, KLOG, cannot_drive, installed_branch, not_driven, nvidia_seen, nvml_bus_ids

CATALOG = "https://github.com/NVIDIA/open-gpu-kernel-modules"
XID_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

#: Codes whose kernel-log evidence other checks own: a GPU's failed initialisation for a reason of the board or
#: firmware (gpu-init-failed), a user-space library of another version (driver-health, from NVML's answer).
OWNED_ELSEWHERE = ("gpu.init_failed", "driver.library_mismatch", "")

#: What each code is about, for the title: (component first, short statement).
CODES: Dict[str, Tuple[List[str], str]] = {
    "driver.open_modules_required": (["driver", "gpu"], "needs NVIDIA's open kernel modules, but the proprietary "
                                                          "module is installed"),
    "driver.open_modules_unsupported_gpu": (["driver", "gpu"], "cannot be driven by the open kernel modules "
                                                                 "(it has no GSP)"),
    "driver.gpu_needs_legacy_branch": (["driver", "gpu"], "is supported only by a legacy driver branch"),
    "driver.gpu_not_supported_by_branch": (["driver", "gpu"], "is not supported by this driver release"),
    "driver.gsp_firmware_missing": (["driver"], "cannot start: the GSP firmware file is missing"),
    "driver.gpu_owned_by_other_driver": (["driver", "kernel"], "is owned by another kernel driver"),
    "driver.module_built_for_other_kernel": (["driver", "kernel"], "module was built for another kernel"),
    "driver.uvm_init_failed": (["driver"], "nvidia-uvm failed to start"),
    "driver.vgpu_guest_incompatible_with_host": (["driver", "gpu"], "is a vGPU the host refused: the guest driver "
                                                                      "is incompatible with the host's vGPU manager"),
    "gpu.lost": (["gpu", "driver"], "has fallen off the bus"),
    "gpu.reset_required": (["gpu", "driver"], "needs a reset"),
    "gpu.xid_memory_error": (["gpu"], "reported memory errors"),
    "gpu.xid_interconnect_error": (["gpu"], "reported NVLink errors"),
    "gpu.xid_application_error": (["gpu"], "reported errors of an application's GPU work"),
}


#: The causes that say the installed driver cannot drive a GPU at all (module flavour or branch against the GPU's
#: generation), which this check or driver-support reports (from the kernel's words or from what is installed).
CANNOT_DRIVE = ("driver.open_modules_required", "driver.open_modules_unsupported_gpu",
                "driver.gpu_needs_legacy_branch", "driver.gpu_not_supported_by_branch")

#: The Xid classes that, logged about a GPU the driver cannot drive, are symptoms of that cause: the GPU never
#: initialised, so a reset (or a memory or link diagnosis) is not what it needs.
XID_SYMPTOMS = ("gpu.reset_required", "gpu.xid_memory_error", "gpu.xid_interconnect_error")


def _lines(facts: Facts) -> Optional[List[str]]:
    value = facts.value("driver.kernel_log")
    return [str(x) for x in value] if isinstance(value, list) else None


def _nvml_lost(facts: Facts) -> bool:
    """NVML itself said a GPU is lost (the NVML verdicts report it)."""
    if facts.value("driver.nvml.status") == "NVML_ERROR_GPU_IS_LOST":
        return True
    failures = facts.value("gpu.nvml_failures")
    return isinstance(failures, list) and any(isinstance(e, dict) and e.get("error") == "NVML_ERROR_GPU_IS_LOST"
                                              for e in failures)


def _gpu_name(facts: Facts, lines: List[str], bus: Optional[str]) -> str:
    """A GPU's address and, where NVIDIA's lists know its PCI ID, its product name."""
    if bus is None:
        return "The NVIDIA GPU"
    device = kernel.line_device(lines, bus)
    if device is None:
        for d in facts.items("gpu.pci_devices"):
            if isinstance(d, dict) and kernel.line_bus(str(d.get("bus_id"))) == bus and d.get("device_id"):
                device = str(d["device_id"])
    known = kernel.pci_device(device) if device else None
    name = known.name if known is not None else None
    return "GPU %s%s" % (bus, " (%s%s)" % (name, ", PCI ID " + device if device else "") if name else
                         " (PCI ID %s)" % device if device else "")


class _Hit:
    """The lines of one (code, GPU) and the row that named them."""

    def __init__(self, code: str, bus: Optional[str], match: kernel.Match, current: bool) -> None:
        self.code, self.bus, self.match, self.current = code, bus, match, current
        self.lines: List[str] = []
        self.xids: List[int] = []
        self.unconfirmed = False  # a cause for a GPU whose state NVML cannot tell now


def _findings(facts: Facts) -> List[Finding]:
    """What the kernel log says, as findings (the check's verdict; other checks read what it explains)."""
    lines = _lines(facts)
    if not lines:
        return []
    failing = not_driven(facts)
    driven = set(nvml_bus_ids(facts).values())
    nvml_lost = _nvml_lost(facts)
    hits: Dict[Tuple[str, Optional[str]], _Hit] = {}
    for text, bus in zip(lines, kernel.line_buses(lines)):
        for m in kernel.classify(text):
            row = m.row
            code = row.get("code") or ""
            if code in OWNED_ELSEWHERE:
                continue
            at = bus if bus is not None else (failing[0] if len(failing) == 1 else None)
            current = at in failing if at is not None else bool(failing)
            unconfirmed = False
            if code == "driver.gsp_firmware_missing":
                firmware = _firmware_state(facts, m)
                if firmware == "history":
                    continue  # another version's file, or the loaded version's is there now
                # NVML cannot say whether the GPU is driven (another user-space version...): the module loaded now
                # misses its own firmware, a cause of its own that outlives the other one
                unconfirmed = not current and firmware == "loaded" and at not in driven
            if row.get("class") == "cause" and row["kind"] == "message" and not current and not unconfirmed:
                continue  # a cause for a GPU that works now (or for none): history
            if code == "gpu.lost" and (nvml_lost or (at in driven and not current)):
                continue  # NVML's own answer says it (gpu-nvml-verdict, driver-health)
            if row["kind"] == "message" and row.get("class") != "cause":
                continue  # a failure naming no cause is gpu-init-failed's or driver-support's to tell
            key = (code, at if code != "gpu.xid_application_error" else None)
            hit = hits.setdefault(key, _Hit(code, key[1], m, current))
            hit.current = hit.current or current
            hit.unconfirmed = hit.unconfirmed or unconfirmed
            if text not in hit.lines:
                hit.lines.append(text)
            if row["kind"] == "xid" and int(row["xid"]) not in hit.xids:
                hit.xids.append(int(row["xid"]))
    # an Xid the driver logs about a GPU it cannot drive (the wrong module flavour or branch) is a symptom of that
    # cause, not a fault of its own (Xid 169 SEC2_HALT_ERROR after "RmInitAdapter failed" on a Blackwell GPU under
    # the proprietary module): the cause is said (here, from the kernel's words, or by driver-support, from what is
    # installed), the Xid is not; per GPU, so that another GPU's genuine Xid stands
    refused = {bus for (code, bus) in hits if code in CANNOT_DRIVE}
    refused.update(cannot_drive(facts))
    kept = [hit for hit in hits.values() if not (hit.code in XID_SYMPTOMS and hit.current and
                                                 (hit.bus in refused or None in refused))]
    seen = nvidia_seen(facts)
    return [_finding(facts, lines, hit, seen) for hit in kept]


def _firmware_state(facts: Facts, m: kernel.Match) -> str:
    """What a firmware-load failure line says now: ``history`` when the file is another driver version's than the
    module loaded now, or when the loaded version's GSP firmware is there now (``driver.gsp_firmware``); ``loaded``
    when it is the loaded module's own file and it is not known to be there; ``unknown`` when the line or the loaded
    module names no version."""
    named = kernel.firmware_version(m.groups.get("file", ""))
    loaded = facts.value("driver.kernel_module.version")
    if not named or not isinstance(loaded, str) or not loaded:
        return "unknown"
    if named != loaded:
        return "history"
    found = facts.value("driver.gsp_firmware")
    if isinstance(found, dict) and found.get("version") == loaded and found.get("files"):
        return "history"
    return "loaded"


#: The kernel log's conclusion, worked out once per run: the kernel-log check's findings, and what
#: :func:`explains` tells driver-support.
findings = Conclusion("kernel-log", _findings)


def _finding(facts: Facts, lines: List[str], hit: _Hit, seen: List[str]) -> Finding:
    row = hit.match.row
    components, what = CODES.get(hit.code, (["driver"], "is named in the kernel log"))
    gpu = _gpu_name(facts, lines, hit.bus)
    if hit.bus is None and hit.code.startswith("driver.") and len(seen) > 1:
        gpu = "The NVIDIA GPUs"
    severity = row["severity"]
    groups = hit.match.groups
    if row["kind"] == "xid":
        codes = ", ".join("Xid %d (%s)" % (x, _mnemonic(x)) for x in hit.xids)
        if not hit.current and severity == "error":
            severity = "warning"  # it happened since boot; the GPU answers now
        title = "%s %s: %s" % (gpu if hit.code != "gpu.xid_application_error" else "The GPUs", what, codes)
        detail = "%s%s The kernel log says:\n%s" % (
            row["meaning"][0].upper() + row["meaning"][1:] + ".",
            "" if hit.current or hit.code == "gpu.xid_application_error" else
            " It happened earlier in this boot; the GPU answers now.", "\n".join(hit.lines[-6:]))
        source = {"rule": "NVIDIA's Xid catalog: %s" % codes, "url": XID_URL, "checked": row["source"]["checked"]}
        return Finding(hit.code, severity, components, title, detail, evidence=_ev(facts), source=source,
                       fix=Fix(text=row["fix"], commands=[KLOG]))
    extra = ""
    if hit.code in ("driver.gpu_needs_legacy_branch",) and groups.get("branch"):
        extra = " The driver names the %s legacy branch." % groups["branch"]
    elif hit.code == "driver.gpu_not_supported_by_branch" and groups.get("version"):
        extra = " The loaded driver is %s." % groups["version"]
    title = "%s %s" % (gpu, what)
    if hit.code == "driver.vgpu_guest_incompatible_with_host":
        guest = installed_branch(facts)[1]
        if guest:
            title += " (the guest driver is %s)" % guest
            extra = (" This VM's guest driver is %s; a guest driver works only with a host vGPU manager of a "
                     "release that accepts it, so install the guest driver of the host's vGPU release." % guest)
    if hit.code == "driver.gpu_needs_legacy_branch" and groups.get("branch"):
        title += ": NVIDIA %s, the legacy branch that still drives it" % groups["branch"]
    if hit.unconfirmed and not hit.current:
        # the GPU's state is not known now (NVML does not answer for the GPUs' sake): the cause stands for the
        # module loaded now, and for any boot into it
        severity = "warning" if severity == "error" else severity
        named = kernel.firmware_version(groups.get("file", ""))
        extra += (" The module loaded now is %s, and it cannot start the GPU until %s is installed; whatever else "
                  "is wrong, a reload or a reboot into driver %s still fails for this reason (NVML cannot say now "
                  "whether the GPU is driven)." % (named, groups.get("file", "its firmware file"), named))
    detail = "%s.%s The kernel log says:\n%s" % (row["meaning"][0].upper() + row["meaning"][1:], extra,
                                                "\n".join(hit.lines[-6:]))
    source = {"rule": "the NVIDIA driver's kernel message: %s" % row.get("format", row["id"]),
              "url": row["source"]["url"], "checked": row["source"]["checked"]}
    return Finding(hit.code, severity, components, title, detail, evidence=_ev(facts), source=source,
                   fix=Fix(text=row["fix"], commands=_commands(hit.code)))


def _mnemonic(xid: int) -> str:
    row = next((r for r in _xid_rows() if r["xid"] == xid), None)
    return str(row["mnemonic"]) if row is not None else "unknown"


def _xid_rows() -> List[Dict[str, Any]]:
    from .. import matrix

    return [r for r in matrix.load("kernel_messages") if r["kind"] == "xid"]


def _commands(code: str) -> List[str]:
    if code in ("driver.open_modules_required", "driver.open_modules_unsupported_gpu"):
        return ["modinfo -F license nvidia   # 'Dual MIT/GPL': open, 'NVIDIA': proprietary", KLOG]
    if code == "driver.module_built_for_other_kernel":
        return ["uname -r", "modinfo -F vermagic nvidia", "sudo dkms autoinstall", "sudo modprobe nvidia"]
    if code == "driver.gsp_firmware_missing":
        return ["ls /lib/firmware/nvidia/", "modinfo -F version nvidia"]
    if code == "driver.gpu_owned_by_other_driver":
        return ["lspci -nnk -d 10de:"]
    if code == "driver.vgpu_guest_incompatible_with_host":
        return ["cat /proc/driver/nvidia/version   # the guest driver", KLOG]
    return [KLOG]


def _ev(facts: Facts) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in ("driver.kernel_log", "gpu.pci_devices", "gpu.count",
                                                         "driver.kernel_module.flavor", "driver.kernel_module.version",
                                                         "driver.gsp_firmware")) if f is not None]


def explains(facts: Facts) -> List[Tuple[str, Optional[str]]]:
    """(code, GPU address) of the causes this check reports (other checks stay quiet about them)."""
    out: List[Tuple[str, Optional[str]]] = []
    for f in findings.read(facts):
        out.append((f.code, kernel.line_bus(f.title)))
    return out


#: Every code the kernel's messages may give (the driver's own words); driver-support declares the four it shares.
DOCS = (
    CodeDoc("driver.open_modules_required", "error", "The GPU works only with NVIDIA's open kernel modules "
            "(Blackwell), and the proprietary module is installed.",
            "driver.kernel_log, driver.kernel_module.flavor, driver.module_on_disk.flavor, gpu.pci_devices",
            "The driver refuses the GPU: nvidia-smi finds no devices until the open flavour is installed.",
            CATALOG),
    CodeDoc("driver.open_modules_unsupported_gpu", "error", "The open kernel modules are installed for a GPU "
            "without a GSP (before Turing), which only the proprietary modules drive.",
            "driver.kernel_log, driver.kernel_module.flavor, driver.module_on_disk.flavor, gpu.pci_devices",
            "The module refuses the GPU (and fails to load when it is the only one).", CATALOG),
    CodeDoc("driver.gpu_needs_legacy_branch", "error", "The installed driver no longer supports the GPU; a "
            "legacy branch (named) does.", "driver.kernel_log, gpu.pci_devices, the driver's version",
            "The driver ignores the GPU; only the legacy branch drives it.", CATALOG),
    CodeDoc("driver.gpu_not_supported_by_branch", "error", "The installed driver release does not support the GPU "
            "(too new for it).", "driver.kernel_log, gpu.pci_devices, the driver's version",
            "The driver refuses the GPU until a branch that lists it is installed.", CATALOG),
    CodeDoc("driver.gsp_firmware_missing", "error", "The GSP firmware file of the loaded driver's version is missing "
            "(a warning when NVML cannot say whether the GPU is driven, e.g. beside a library mismatch).",
            "driver.kernel_log, driver.kernel_module.version, driver.gsp_firmware",
            "The module cannot start the GPU without it, whatever else is fixed (a reboot into that version "
            "fails the same way).", CATALOG),
    CodeDoc("driver.gpu_owned_by_other_driver", "error", "Another kernel driver took the GPU before the nvidia "
            "module.", "driver.kernel_log", "The nvidia module cannot drive a GPU another driver owns.", CATALOG),
    CodeDoc("driver.module_built_for_other_kernel", "error", "The nvidia module's symbols do not match the running "
            "kernel (built for another kernel).", "driver.kernel_log", "The module cannot load.", CATALOG),
    CodeDoc("driver.uvm_init_failed", "error", "The nvidia-uvm module failed to start.", "driver.kernel_log",
            "CUDA needs nvidia-uvm: cuInit fails without it.", CATALOG),
    CodeDoc("driver.vgpu_guest_incompatible_with_host", "error", "The GPU is an NVIDIA vGPU and the host's vGPU "
            "manager refused the VM's guest driver (Xid 78, 'Guest driver is incompatible with host driver'): the "
            "guest driver is of a release the host's vGPU software does not accept.",
            "driver.kernel_log, driver.kernel_module.version",
            "The vGPU does not start: nvidia-smi finds no devices and CUDA no GPU until the guest driver of the "
            "host's vGPU release is installed.", CATALOG),
    GPU_LOST,
    CodeDoc("gpu.reset_required", "error", "A GPU reported an Xid after which NVIDIA says to reset it (GSP timeout "
            "or error, an uncontained error...; a warning when the GPU answers now; not said when the driver "
            "cannot drive the GPU at all: the wrong module flavour or branch is said instead).", "driver.kernel_log",
            "Work on the GPU fails or hangs until it is reset.", XID_URL),
    CodeDoc("gpu.xid_memory_error", "warning", "A GPU reported memory errors since boot (ECC, page retirement, row "
            "remapping).", "driver.kernel_log", "Repeated memory errors point at a failing board.", XID_URL),
    CodeDoc("gpu.xid_interconnect_error", "warning", "A GPU reported NVLink errors since boot.", "driver.kernel_log",
            "Multi-GPU work slows down or fails over a bad link.", XID_URL),
    CodeDoc("gpu.xid_application_error", "info", "Applications' GPU work failed since boot (Xid errors the driver "
            "contained: bad kernels, illegal addresses).", "driver.kernel_log",
            "Not a machine fault; worth knowing when a job crashed.", XID_URL),
)


@check("kernel-log", requires=("driver.kernel_log",),
       reads=("driver.*", "driver.*.*", "gpu.*", "gpu.*.*", "os.*", "cuda.packages"),
       layers=("driver", "gpu"), codes=DOCS)
def kernel_log(ctx: CheckContext) -> Iterable[Finding]:
    return findings(ctx.facts)

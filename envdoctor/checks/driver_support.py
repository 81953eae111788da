"""Does the installed driver support the GPUs it does not drive? Module flavour and branch against the GPU.

Decided from what is installed, also when the module never loaded: the GPU's PCI device ID read against
NVIDIA's own lists (``gpu_pci_ids``: the open modules' "Compatible GPUs", the proprietary README's current and
legacy lists), its architecture (NVML's compute capability, else the product name's, else its chip's by NVIDIA's
device-ID ranges, ``gpu_chips``), the module's flavour
(loaded: /proc/driver/nvidia/version; installed: ``modinfo -F license``) and branch. For each NVIDIA GPU the
driver does not drive now (:func:`envdoctor.checks.gpus.not_driven`):

* the open modules installed for a GPU without a GSP (before Turing; not in the open modules' list);
* the proprietary modules installed for a Blackwell GPU, which needs the open ones;
* a branch newer than the last that supports the GPU (its legacy branch in NVIDIA's list; Kepler R470,
  Maxwell/Pascal/Volta R580), or older than the first that knows its architecture (never inferred from the GPU's
  absence from a README's list, which does not claim to be complete).

What the kernel log already names (:mod:`envdoctor.checks.kernel_log`) is said there, with the driver's own
words; a GPU the driver drives is never judged here (it works). Where nothing explains a module that found no GPU
("No NVIDIA devices probed"), ``driver.module_found_no_gpu`` says so.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from .. import matrix
from ..facts import Facts
from ..findings import Finding, Fix
from ..matrix import gpu_support, kernel
from ..matrix import hardware as hw
from . import CheckContext, CodeDoc, Conclusion, check, docs_for, kernel_log
from .gpus import KLOG, installed_branch, installed_flavor, not_driven, refusals
from .kernel_log import explains

MODULES_URL = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html"
OPEN_ONLY_URL = "https://forums.developer.nvidia.com/t/unix-graphics-feature-deprecation-schedule/60588"

#: A GPU as the rule knows it (its device ID against NVIDIA's lists, its architecture): matrix.gpu_support's.
_Gpu = gpu_support.Gpu


def _verdicts(facts: Facts) -> List[Finding]:
    """The module flavour and branch against each GPU the driver does not drive (the check's findings)."""
    buses = not_driven(facts)
    if not buses or facts.value("driver.installed") is not True:
        return []
    said = set(explains(facts))
    _, where = installed_flavor(facts)
    branch, version = installed_branch(facts)
    out: List[Finding] = []
    for gpu, why in refusals(facts):  # the one answer to "can this driver drive this GPU" (gpus.cannot_drive's)
        found = _judge(facts, gpu, why, where, branch, version)
        for f in found:
            if (f.code, gpu.bus) in said or (f.code, None) in said:
                continue  # the kernel's own message says it (kernel-log)
            out.append(f)
    if not out and not any(code.startswith("driver.") or code in ("gpu.lost", "gpu.reset_required")
                           for code, _ in said):
        out.extend(_found_no_gpu(facts, buses))
    return out


#: The module's conclusion, worked out once per run: driver-support's findings, and the GPUs they account for
#: (which gpu-missing reads).
verdicts = Conclusion("driver-support", _verdicts)


def _judge(facts: Facts, gpu: _Gpu, said: Optional[gpu_support.Unsupported], where: str, branch: Optional[int],
           version: Optional[str]) -> List[Finding]:
    """The finding for a GPU the installed driver cannot drive, and why (:func:`envdoctor.checks.gpus.refusals`: the
    branch's reason first, then the module flavour's); none where nothing refuses it (``said`` None)."""
    if said is None:
        return []
    listed = gpu.listed
    label = gpu.label()
    ev = _ev(facts)
    if branch is not None:
        # 1. the branch: a legacy GPU (NVIDIA's list), past its architecture's last branch, or too new for the branch
        # (the rule the driver recipe asks too: matrix.gpu_support)
        arch = hw.arch_for_cc(gpu.cc) if gpu.cc else None
        if said.code == gpu_support.LEGACY:
            last, why, unverified = said.branch, said.why, said.unverified
            return [Finding(
                "driver.gpu_needs_legacy_branch", "warning" if unverified else "error", ["driver", "gpu"],
                "%s is not supported by driver %s: install the R%s legacy branch" % (label, version, last),
                "%s; driver %s (R%d) no longer drives it.%s" % (
                    why, version, branch, " (Not confirmed from NVIDIA's tables; treat as a hint.)" if unverified
                    else ""),
                evidence=ev, source={"rule": why, "checked": "2026-11-29",
                                     "url": listed.source["source"]["url"] if listed and listed.legacy_branch
                                     else OPEN_ONLY_URL},
                fix=Fix(text="Install the R%s driver branch (the last one that supports this GPU; its proprietary "
                             "flavour where the GPU predates Turing) and a CUDA release that branch runs, then "
                             "reboot." % last, commands=[KLOG]))]
        if said.code == gpu_support.TOO_NEW and arch is not None:
            unverified = said.unverified
            return [Finding(
                "driver.gpu_not_supported_by_branch", "warning" if unverified else "error", ["driver", "gpu"],
                "%s is too new for driver %s: the R%d branch does not support it" % (label, version, branch),
                "%s; driver %s (R%d) predates them.%s" % (
                    said.why, version, branch,
                    " (Not confirmed from NVIDIA's tables; treat as a hint.)" if unverified else ""),
                evidence=ev, source={"rule": "a driver older than the first branch that knows a GPU architecture "
                                             "cannot drive it", "url": arch["source"]["url"],
                                     "checked": "2026-11-29"},
                fix=Fix(text=_row_fix("unsupported_by_release"), commands=[KLOG]))]
    # 2. the module's flavour
    if said.code == gpu_support.OPEN_UNSUPPORTED:
        src = listed.source["source"] if listed is not None else None
        return [Finding(
            "driver.open_modules_unsupported_gpu", "error", ["driver", "gpu"],
            "%s cannot be driven by the open kernel modules (%s is the open flavour): it has no GSP" % (
                label, where),
            "The open kernel modules drive Turing and later GPUs only (they need the GPU System Processor); "
            "this GPU %s. The module refuses it%s." % (
                said.why, " and fails to load when it is the only GPU"
                if facts.value("driver.kernel_module.loaded") is False else ""),
            evidence=ev, source={"rule": "NVIDIA: the open GPU kernel modules are only for Turing and newer; "
                                         "Maxwell, Pascal and Volta need the proprietary flavour",
                                 "url": MODULES_URL, "checked": "2026-11-29",
                                 **({"list": src["url"]} if src else {})},
            fix=Fix(text=_row_fix("open_unsupported"), commands=["modinfo -F license nvidia", KLOG]))]
    if said.code == gpu_support.OPEN_REQUIRED:
        hint = ""
        if not gpu.cc and gpu.chip is not None:
            hint = " The GPU's generation is read from its PCI ID (%s, a %s chip)%s." % (
                gpu.device_id, gpu.chip.chip,
                "; that ID's chip is not confirmed from NVIDIA's tables, but the driver does not drive the GPU"
                if matrix.unverified(gpu.chip.source) else "")
        return [Finding(
            "driver.open_modules_required", "error", ["driver", "gpu"],
            "%s needs NVIDIA's open kernel modules, but %s is the proprietary flavour" % (label, where),
            "Blackwell GPUs are driven by the open kernel modules only; the proprietary module refuses them "
            "(kernel log: \"requires use of the NVIDIA open kernel modules\", then \"RmInitAdapter failed\"); "
            "what the driver logs about the GPU after that (Xid errors) follows from it.%s" % hint,
            evidence=ev, source={"rule": "NVIDIA: Grace Hopper and Blackwell platforms must use the open GPU kernel "
                                         "modules; some GPUs are only supported with the open flavor",
                                 "url": OPEN_ONLY_URL, "checked": "2026-11-29"},
            fix=Fix(text=_row_fix("open_required"), commands=["modinfo -F license nvidia", KLOG]))]
    return []


def _row_fix(cause: str) -> str:
    row = next((r for r in matrix.load("kernel_messages") if r.get("cause") == cause and r["kind"] == "message"),
               None)
    return str(row["fix"]) if row is not None else ""


def _found_no_gpu(facts: Facts, buses: List[str]) -> List[Finding]:
    """The module refused to load for want of a GPU it could drive ("No NVIDIA devices probed"), and nothing
    above says why."""
    lines = facts.value("driver.kernel_log")
    if not isinstance(lines, list) or facts.value("driver.kernel_module.loaded") is not False:
        return []
    said = [str(x) for x in lines if any(m.row.get("cause") == "no_gpu" for m in kernel.classify(str(x)))]
    if not said:
        return []
    row = next(m.row for m in kernel.classify(said[-1]))
    return [Finding(
        "driver.module_found_no_gpu", "error", ["driver", "gpu"],
        "The nvidia module found no GPU it could drive and did not load (GPU %s on the PCI bus)" % ", ".join(buses),
        "%s. The kernel log says:\n%s" % (row["meaning"][0].upper() + row["meaning"][1:], "\n".join(said[-4:])),
        evidence=_ev(facts), source={"rule": "the NVIDIA driver's kernel message: %s" % row.get("format"),
                                     "url": row["source"]["url"], "checked": row["source"]["checked"]},
        fix=Fix(text=row["fix"], commands=["lspci -nnk -d 10de:", KLOG]))]


def _ev(facts: Facts) -> List[Dict[str, Any]]:
    keys = ("gpu.pci_devices", "driver.kernel_module.flavor", "driver.module_on_disk.flavor",
            "driver.kernel_module.version", "driver.module_on_disk.version", "driver.kernel_module.loaded")
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


@check("driver-support", requires=("driver.installed",),
       reads=("driver.*", "driver.*.*", "gpu.*", "gpu.*.*", "os.*", "cuda.packages"), layers=("driver", "gpu"),
       codes=docs_for(kernel_log.DOCS, "driver.open_modules_unsupported_gpu", "driver.open_modules_required",
                      "driver.gpu_needs_legacy_branch", "driver.gpu_not_supported_by_branch") + (
    CodeDoc("driver.module_found_no_gpu", "error", "The nvidia module found no GPU it could drive and did not load, "
            "for a reason nothing else names.", "driver.kernel_log, driver.kernel_module.loaded, gpu.pci_devices",
            "No CUDA without the module.", MODULES_URL),
))
def driver_support(ctx: CheckContext) -> Iterable[Finding]:
    return verdicts(ctx.facts)

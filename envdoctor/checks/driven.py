"""An NVIDIA GPU the driver cannot drive is never "Works".

Whatever check explains why (Secure Boot refusing the module, the wrong module flavour or branch, nouveau
holding the GPU, a failed initialisation...), a machine with an NVIDIA GPU that its driver does not drive
(:func:`envdoctor.checks.gpus.not_driven`) is not ready: nothing can use that GPU. The check
``gpu-not-driven`` says so (``gpu.not_driven``, an error) where no other check explains it (it yields to their
errors and warnings); :func:`settle`,
applied to every run's findings, makes the explaining finding about the driver an error where the check that
wrote it could only call its cause likely (a warning).
"""

from __future__ import annotations

from typing import Iterable, List, Sequence

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check
from .gpus import KLOG, not_driven

CODE = "gpu.not_driven"
#: Findings that can explain a GPU the driver does not drive: about the driver or the kernel it runs on.
EXPLAINING = ("driver", "kernel")
URL = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"


#: The checks whose error or warning says why the driver does not drive a GPU: the driver's health questions (not its
#: library links), the kernel log, the installed module against the GPU, the GPU verdicts.
EXPLAINED_BY = tuple("%s:*>=warning" % name for name in (
    "driver-health", "driver-health.library-mismatch", "driver-health.userspace-missing", "driver-health.wsl",
    "driver-health.in-kernel-conflict", "driver-health.module-for-kernel", "driver-health.secure-boot",
    "driver-health.device-nodes", "driver-health.fabric-manager", "driver-health.forward-compat",
    "driver-health.nvml-errors", "kernel-log", "driver-support", "gpu-init-failed", "gpu-missing",
    "gpu-nvml-verdict"))


@check("gpu-not-driven", requires=("driver.installed",),
       reads=("driver.*", "driver.*.*", "gpu.*", "gpu.*.*", "os.*", "kernel.release", "kernel.headers", "cuda.*",
              "env.*", "libraries.*"),
       layers=("driver",), yields={CODE: EXPLAINED_BY}, codes=(
    CodeDoc(CODE, "error", "An NVIDIA GPU is on the PCI bus but the NVIDIA driver does not drive it, and nothing "
            "else in the report says why.", "gpu.pci_devices, driver.kernel_module.loaded, driver.nvml.status, "
            "gpu.count", "Nothing can use the GPU; a machine in this state is never reported as working.", URL),
))
def gpu_not_driven(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    if facts.value("driver.installed") is not True:
        return []  # driver.not_installed says it
    buses = not_driven(facts)
    if not buses:
        return []  # (where another check says why, this finding yields to it: EXPLAINED_BY)
    return [Finding(
        CODE, "error", ["driver", "gpu"],
        "NVIDIA GPU %s is not driven by the NVIDIA driver" % ", ".join(buses),
        "The GPU is on the PCI bus, but %s: nothing can use it." % _state(facts),
        evidence=[f.to_dict() for f in (facts.get(k) for k in ("gpu.pci_devices", "driver.kernel_module.loaded",
                                                                 "driver.nvml.status", "gpu.count")) if f is not None],
        source={"rule": "CUDA needs the NVIDIA kernel module to own and initialise the GPU", "url": URL,
                "checked": "2026-11-29"},
        fix=Fix(text="Load the module and read the kernel's messages about the GPU.",
                commands=["sudo modprobe nvidia", KLOG, "lspci -nnk -d 10de:"]))]


def _state(facts: Facts) -> str:
    if facts.value("driver.kernel_module.loaded") is False:
        return "the nvidia kernel module is not loaded"
    if facts.value("driver.nvml.status") not in (None, "ok"):
        return "the driver does not answer for it (NVML: %s)" % facts.value("driver.nvml.status")
    return "the nvidia module does not answer for it"


def settle(findings: Sequence[Finding], facts: Facts) -> List[Finding]:
    """Where the driver does not drive an NVIDIA GPU and no finding about the driver is an error, the first warning
    about the driver (the check could only call its cause likely) is one: nothing can use the GPU until it is
    fixed. (Decided from the driver's own findings and the facts, so a run of some layers agrees with a full one.)"""
    out = list(findings)
    driver = [f for f in out if f.components and f.components[0] == "driver" and f.code != CODE]
    if any(f.severity == "error" for f in driver) or not not_driven(facts):
        return out
    first = next((f for f in driver if f.severity == "warning"), None)
    if first is not None:
        first.severity = "error"
        first.detail = (first.detail.rstrip() + " " if first.detail else "") + (
            "This is why the NVIDIA GPU (%s) is not driven: nothing can use it until this is fixed."
            % ", ".join(not_driven(facts)))
    return out

"""An NVIDIA GPU the driver cannot drive is never "Works".

Whatever check explains why (Secure Boot refusing the module, the wrong module flavour or branch, nouveau
holding the GPU, a failed initialisation...), a machine with an NVIDIA GPU that its driver does not drive
(:func:`envdoctor.checks.gpu_verdict.not_driven`) is not ready: nothing can use that GPU. The check
``gpu-not-driven`` says so (``gpu.not_driven``, an error); :func:`settle`, applied to every run's findings,
keeps that one only where no other finding explains it, and makes the explaining finding an error where the
check that wrote it could only call it likely (a warning).
"""

from __future__ import annotations

from typing import Iterable, List, Sequence

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check
from .gpu_verdict import KLOG, not_driven

CODE = "gpu.not_driven"
#: Findings that can explain a GPU the driver does not drive: about the driver or the kernel it runs on.
EXPLAINING = ("driver", "kernel")
URL = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"


@check("gpu-not-driven", requires=("driver.installed",), reads=("driver.*", "driver.*.*", "gpu.*", "gpu.*.*",
                                                                 "os.*"),
       layers=("gpu",), codes=(
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
        return []
    return [Finding(
        CODE, "error", ["gpu", "driver"],
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


def settle(findings: Sequence[Finding]) -> List[Finding]:
    """``gpu.not_driven`` only where nothing else explains it: an error about the driver or kernel explains it
    (``gpu.not_driven`` is dropped); else a warning about them does, and becomes an error (a GPU nothing can use
    is a certain failure); else ``gpu.not_driven`` stays."""
    mine = [f for f in findings if f.code == CODE]
    if not mine:
        return list(findings)
    others = [f for f in findings if f.code != CODE]
    explaining = [f for f in others if f.components and f.components[0] in EXPLAINING
                  and f.severity in ("error", "warning") and not f.code.startswith("envdoctor.")]
    if any(f.severity == "error" for f in explaining) or any(
            f.severity == "error" and f.components and f.components[0] == "gpu" for f in others):
        return others
    if explaining:
        first = explaining[0]
        first.severity = "error"
        first.detail = (first.detail.rstrip() + " " if first.detail else "") + (
            "This is why the NVIDIA GPU (%s) is not driven: nothing can use it until this is fixed."
            % mine[0].title.split("NVIDIA GPU ", 1)[-1].split(" is not driven", 1)[0])
        return others
    return list(findings)

"""Does a driver branch, with modules of a flavour, support this GPU? The one rule ``diagnose`` and ``install`` ask.

A GPU is known by its PCI device ID (read against NVIDIA's own per-GPU lists, ``gpu_pci_ids``: the open kernel
modules' "Compatible GPUs", the proprietary README's current list and its legacy lists) and its architecture (NVML's
compute capability, else its product name's, ``gpus.json``, else its chip's by NVIDIA's device-ID ranges,
``gpu_chips``). The lists decide where they name the GPU (its legacy
branch, whether the open modules drive it); the architecture where they do not (the first branch that knows it, the
last that supports it, the flavours that drive it: :mod:`envdoctor.matrix.hardware`). ``driver-support``
(:mod:`envdoctor.checks.driver_support`) judges the installed driver by it and the driver recipe the one it plans,
with the same words (:attr:`Unsupported.why`).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from .. import lazyre
from . import hardware as hw
from . import kernel, unverified

#: Words of a notebook or embedded part's name: it is of its desktop namesake's architecture ("GeForce RTX 5090
#: Laptop GPU" is a Blackwell like the "GeForce RTX 5090").
_MOBILE = lazyre.compile(r"\s+(?:Laptop GPU|Embedded GPU|Generation Laptop GPU|Max-Q|Mobile|with Max-Q Design)\b.*$",
                         re.I)

LEGACY = "driver.gpu_needs_legacy_branch"
TOO_NEW = "driver.gpu_not_supported_by_branch"
OPEN_UNSUPPORTED = "driver.open_modules_unsupported_gpu"
OPEN_REQUIRED = "driver.open_modules_required"


def cc_of_name(name: str) -> Optional[str]:
    """The compute capability of a product name (gpus.json), trying a notebook part's desktop namesake."""
    for candidate in (name, _MOBILE.sub("", name)):
        product = hw.gpu_product(candidate)
        if product is not None:
            return str(product.get("cc")) if product.get("cc") else None
    return None


class Gpu:
    """One GPU as the rule knows it: its PCI address, device ID (and NVIDIA's lists' entry for it), compute
    capability and name (NVML's, else the lists' name and that name's architecture)."""

    def __init__(self, bus: str, device_id: Optional[str], cc: Optional[str], name: Optional[str]) -> None:
        self.bus, self.device_id, self.cc, self.name = bus, device_id, cc, name
        self.reported_cc = cc  # NVML's (None: the GPU is not driven, its architecture is its listed name's)
        self.listed = kernel.pci_device(device_id) if device_id else None
        if self.name is None and self.listed is not None:
            self.name = self.listed.name
        if self.cc is None and self.name:
            self.cc = cc_of_name(self.name)
        # the chip by NVIDIA's device-ID ranges: the generation when neither NVML nor the name says it
        self.chip = kernel.chip_of(device_id) if self.cc is None and device_id else None

    def arch(self) -> Optional[str]:
        """The GPU's architecture: its compute capability's, else its chip's (from its PCI ID)."""
        row = hw.arch_for_cc(self.cc) if self.cc else None
        if row is not None:
            return str(row["arch"])
        return self.chip.arch if self.chip is not None else None

    def needs_open(self) -> Optional[bool]:
        """Whether only the open kernel modules drive the GPU (Blackwell on), from its compute capability or, when
        that is unknown, its chip's architecture; None when neither is known."""
        if self.cc:
            drives = hw.proprietary_modules_drive(self.cc)
        else:
            drives = hw.proprietary_modules_drive_arch(self.chip.arch) if self.chip is not None else None
        return None if drives is None else not drives

    def label(self) -> str:
        bits = [b for b in (self.name, self.arch(), "PCI ID " + self.device_id if self.device_id else None) if b]
        return "GPU %s%s" % (self.bus, " (%s)" % ", ".join(bits) if bits else "")


def machine_gpus(facts: Any, buses: Optional[List[str]] = None) -> List[Gpu]:
    """The NVIDIA GPUs of a machine's facts, each PCI device (``gpu.pci_devices``: its device ID) with NVML's compute
    capability and name of the same address (``gpu.N.pci_bus_id``); only those at ``buses`` when given (in that
    order), else every PCI device, then every GPU NVML answers for that the PCI listing lacks."""
    by_bus: Dict[str, Dict[str, Any]] = {}
    for d in facts.items("gpu.pci_devices"):
        if isinstance(d, dict) and d.get("bus_id"):
            by_bus[kernel.line_bus(str(d["bus_id"])) or str(d["bus_id"])] = d
    nvml: Dict[str, Tuple[Optional[str], Optional[str]]] = {}
    for f in facts.named("gpu.", "pci_bus_id"):
        parts = f.key.split(".")
        if len(parts) == 3 and parts[2] == "pci_bus_id" and f.known:
            i = parts[1]
            cc = facts.value("gpu.%s.compute_capability" % i)
            name = facts.value("gpu.%s.name" % i)
            nvml[kernel.line_bus(str(f.value)) or str(f.value)] = (cc if isinstance(cc, str) else None,
                                                                   name if isinstance(name, str) else None)
    if buses is None:
        buses = list(by_bus) + [b for b in nvml if b not in by_bus]
    out = []
    for bus in buses:
        d = by_bus.get(bus, {})
        cc, name = nvml.get(bus, (None, None))
        out.append(Gpu(bus, str(d["device_id"]) if d.get("device_id") else None, cc, name))
    return out


class Unsupported(NamedTuple):
    """Why a driver does not support a GPU: the finding code ``diagnose`` says it with, the reason in the words
    both commands use, and what to install instead."""

    code: str  # LEGACY, TOO_NEW, OPEN_UNSUPPORTED or OPEN_REQUIRED
    why: str  # "NVIDIA's README lists it under the 470.xx legacy driver"
    branch: Optional[str] = None  # LEGACY: the last branch that supports it; TOO_NEW: the first that knows it
    cuda: Optional[str] = None  # TOO_NEW: the first CUDA release for the architecture
    unverified: bool = False  # from a matrix row not confirmed against NVIDIA's tables (a hint)
    listed: bool = False  # decided by NVIDIA's per-GPU list (not by the architecture)


def branch_support(gpu: Gpu, branch: int) -> Optional[Unsupported]:
    """Whether driver branch ``branch`` supports ``gpu``: None when it does (or it is unknown), else why not. A GPU
    NVIDIA's README lists under a legacy driver is supported up to that branch; else up to its architecture's last
    (:func:`~envdoctor.matrix.hardware.past_last_branch`); and from the first branch that knows its architecture
    (:func:`~envdoctor.matrix.hardware.min_driver_for_cc`; never inferred from the GPU's absence from a README's
    list, which does not claim to be complete)."""
    listed = gpu.listed
    legacy = listed.legacy_branch if listed is not None else None
    arch = hw.arch_for_cc(gpu.cc) if gpu.cc else None
    if legacy is not None and branch > int(legacy.split(".")[0]):
        return Unsupported(LEGACY, "NVIDIA's README lists it under the %s.xx legacy driver" % legacy,
                           legacy.split(".")[0], listed=True)
    last = hw.past_last_branch(branch, gpu.cc) if gpu.cc else None
    if last is not None:
        return Unsupported(LEGACY, "R%s is the last driver branch for %s GPUs" % (
            last, arch["arch"] if arch is not None else "these"), last,
            unverified=arch is not None and unverified(arch, "last_driver_branch"))
    first = hw.min_driver_for_cc(gpu.cc) if gpu.cc else None
    if first is not None and arch is not None and branch < int(first[0].split(".")[0]):
        return Unsupported(TOO_NEW, "%s GPUs are known to drivers from %s on (the driver of CUDA %s, the first CUDA "
                                    "release for them)" % (arch["arch"], first[0], first[1]), first[0], first[1],
                           unverified=unverified(arch, "first_cuda"))
    return None


def flavor_support(gpu: Gpu, flavor: Optional[str]) -> Optional[Unsupported]:
    """Whether kernel modules of ``flavor`` (``open``, ``proprietary``) drive ``gpu``: None when they do (or it is
    unknown), else why not. The open ones drive the GPUs of their own list (a GPU it does not name, none), an unlisted
    GPU from Turing on (:func:`~envdoctor.matrix.hardware.open_modules_drive`); the proprietary ones no Blackwell
    (:meth:`Gpu.needs_open`: by its compute capability, else its chip's architecture from its PCI ID)."""
    listed = gpu.listed
    if flavor == "open":
        if listed is not None and not listed.open:
            return Unsupported(OPEN_UNSUPPORTED, "is not in NVIDIA's list of GPUs the open modules drive",
                               listed=True)
        if listed is None and hw.open_modules_drive(gpu.cc) is False:
            return Unsupported(OPEN_UNSUPPORTED, "is of an architecture before Turing")
    if flavor == "proprietary" and gpu.needs_open():
        return Unsupported(OPEN_REQUIRED, "Blackwell GPUs are driven by the open kernel modules only")
    return None


def support(gpu: Gpu, branch: Optional[int], flavor: Optional[str]) -> Optional[Unsupported]:
    """The first reason a driver of ``branch`` with modules of ``flavor`` does not support ``gpu`` (the branch's,
    then the flavour's), or None."""
    return (branch_support(gpu, branch) if branch is not None else None) or flavor_support(gpu, flavor)

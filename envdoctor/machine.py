"""The machine's own :class:`~envdoctor.target.Target`, read from probe facts: its driver, its GPUs' compute
capabilities, OS, Python and platform.

``advise`` answers for it and the install recipes plan for it; both read it here, so they never disagree about the
machine. Apart from the rest of :mod:`envdoctor.advise` (its tables of builds and its answers): ``diagnose`` plans
its fixes' install lines with the machine's target, and needs none of that.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from . import matrix, osinfo
from .facts import Facts
from .host.nvml_worker import MAX_GPUS
from .target import Target

#: Where the driver version is read from, best first: NVML; the kernel module when NVML cannot answer
#: (a driver/library mismatch, no user-space driver); the user-space library's file name.
DRIVER_KEYS = ("driver.version", "driver.kernel_module.version", "driver.userspace.version")


def machine_driver(facts: Facts) -> Tuple[Optional[str], Optional[str]]:
    """(driver version, the fact it came from) of the machine the facts describe, or (None, None).
    advise and the install recipes both read it here, so they never disagree about the driver."""
    for key in DRIVER_KEYS:
        value = facts.value(key)
        if isinstance(value, str) and matrix.parse_version(value) is not None:
            return value, key
    return None, None


def target_from_facts(facts: Facts) -> Target:
    """The machine's driver, lowest GPU compute capability, OS, Python and platform from probe facts."""
    origin: Dict[str, str] = {}
    driver, key = machine_driver(facts)
    if key:
        origin["driver"] = key
    cc = gpu = None
    cc_version = None  # type: Optional[Version]
    ccs: List[str] = []
    count = facts.count("gpu.count", MAX_GPUS)
    for i in range(count or 0):
        c = facts.value(f"gpu.{i}.compute_capability")
        version = matrix.parse_version(c)  # made once per distinct text: every GPU of a board has the same few
        if version is not None:
            ccs.append(c)
            if cc_version is None or version < cc_version:
                cc_version = version
                cc, gpu, origin["cc"] = c, facts.value(f"gpu.{i}.name"), f"gpu.{i}.compute_capability"
    if gpu:
        origin["gpu"] = origin["cc"].rsplit(".", 1)[0] + ".name"
    os_id, os_version = facts.value("os.id"), facts.value("os.version")
    if os_id:
        origin["os_id"] = "os.id"
    if os_version:
        origin["os_version"] = "os.version"
    python = facts.text("python.version")
    if python:
        origin["python"] = "python.version"
    arch = facts.value("os.arch") or "x86_64"
    platform = "wsl2" if facts.value("os.wsl") == "WSL2" else (
        "linux-aarch64" if arch in ("aarch64", "arm64") else "linux-x86_64")
    return Target(os_id=str(os_id or ""), version=str(os_version or ""), family=osinfo.family(str(os_id or "")),
                  arch="aarch64" if arch in ("aarch64", "arm64") else str(arch), driver=driver, cc=cc, gpu=gpu,
                  python=python, platform=platform, origin=tuple(sorted(origin.items())),
                  gpu_present=gpu_present(facts), ccs=tuple(sorted(set(ccs), key=Version)))


def gpu_present(facts: Facts) -> Optional[bool]:
    """Does the machine the facts describe have an NVIDIA GPU?  True when NVML counts one; False only when
    that is known (NVML counts none and the PCI bus shows none, outside WSL2, whose GPU is not on its PCI
    bus); None when the facts cannot tell (a snapshot without them, planning for another machine)."""
    count = facts.count("gpu.count", MAX_GPUS)
    if count:
        return True
    if count == 0 and facts.value("gpu.pci_devices") == [] and facts.value("os.wsl") != "WSL2":
        return False
    return None


def compute_capabilities(facts: Any) -> List[str]:
    """Every GPU's compute capability (``gpu.N.compute_capability``), in GPU order."""
    if facts is None:
        return []
    out = []
    named = getattr(facts, "named", None)  # envdoctor.facts.Facts: the one field of every GPU, not all 44
    for f in named("gpu.", "compute_capability") if named is not None else facts.with_prefix("gpu."):
        parts = f.key.split(".")
        if len(parts) == 3 and parts[2] == "compute_capability" and parts[1].isdigit() and f.known:
            out.append((int(parts[1]), str(f.value)))
    return [cc for _, cc in sorted(out)]

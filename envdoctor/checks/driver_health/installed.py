"""Is an NVIDIA driver installed at all (and where none is, is there a GPU that needs one)?"""

from __future__ import annotations

from typing import Iterable, List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import install_line
from . import DOCS, READS, _evidence, _family, _pci_gpus, _source, _wsl_libcuda_missing


def _no_driver(facts: Facts) -> List[Finding]:
    if facts.value("driver.installed") is not False:
        return []
    gpus = _pci_gpus(facts)
    if not gpus and facts.value("os.wsl") == "WSL2":
        # WSL2 shows no PCI GPU (it is paravirtualised); the Windows driver's libraries are simply absent.
        return [_wsl_libcuda_missing(facts, "warning")]
    pci_known = isinstance(facts.value("gpu.pci_devices"), list) or isinstance(facts.value("driver.nvidia_pci_gpus"),
                                                                                list)
    if not gpus and not pci_known:
        return []  # no driver, and the PCI bus could not be read: whether a GPU is there is unknown
    if not gpus:
        return [Finding(
            code="gpu.none", severity="info", components=["gpu", "driver"],
            title="No NVIDIA GPU and no NVIDIA driver: CPU-only frameworks are fine",
            detail="No NVIDIA display or 3D controller is on the PCI bus and no NVIDIA driver is installed. "
                   "Nothing is wrong: install the CPU builds of the frameworks (e.g. "
                   "`pip install torch --index-url https://download.pytorch.org/whl/cpu`). CUDA builds would "
                   "only add gigabytes of unused libraries.",
            evidence=_evidence(facts, "driver.installed", "driver.nvidia_pci_gpus", "gpu.count"),
            source=_source("no_gpu"),
            fix=Fix(text="Nothing to fix. For GPU work, use a machine with an NVIDIA GPU."),
        )]
    family = _family(facts)
    nouveau = facts.strings("driver.nouveau.bound")
    detail = ("An NVIDIA GPU is on the PCI bus (%s) but no NVIDIA driver is installed (no kernel module, no "
              "libnvidia-ml, no libcuda), so CUDA cannot use it." % ", ".join(gpus))
    if nouveau:
        detail += (" The open-source nouveau driver currently holds it (%s); the NVIDIA packages blacklist "
                   "nouveau, and a reboot after installing hands the GPU over." % ", ".join(nouveau))
    if facts.value("driver.secure_boot") is True:
        detail += (" Secure Boot is on: the installer will ask you to enrol a Machine Owner Key (MOK) so the "
                   "kernel accepts the module; finish that enrolment at the next boot.")
    if family == "debian":
        cmds = ["sudo ubuntu-drivers list   # Ubuntu: the driver packages for this GPU",
                "sudo apt-get install -y nvidia-driver-550   # or the branch ubuntu-drivers recommends",
                "sudo reboot"]
    elif family in ("rhel", "fedora"):
        cmds = ["sudo dnf module install -y nvidia-driver:latest-dkms   # from NVIDIA's CUDA repository",
                "sudo reboot"]
    else:
        cmds = ["sudo reboot   # after installing your distribution's NVIDIA driver package"]
    return [Finding(
        code="driver.not_installed", severity="error", components=["driver", "gpu"],
        title="NVIDIA GPU on the PCI bus (%s), but no NVIDIA driver is installed" % ", ".join(gpus),
        detail=detail,
        evidence=_evidence(facts, "driver.installed", "driver.nvidia_pci_gpus", "driver.nouveau.bound",
                           "driver.secure_boot", "os.family"),
        source=_source("install"),
        fix=Fix(text="Install the NVIDIA driver for this GPU and reboot.", commands=cmds,
                install=install_line(facts, "driver")),
    )]


@check("driver-health", requires=("driver.installed",), reads=READS, layers=("driver", "gpu"),
       # a driver whose module never built for the running kernel (its DKMS tree is there) is said there
       yields={"driver.not_installed": ("driver.nouveau_conflict", "driver.nova_conflict",
                                        "driver.no_module_for_kernel")},
       codes=docs_for(DOCS, "driver.not_installed", "gpu.none", "driver.wsl_libcuda_missing"))
def driver_installed(ctx: CheckContext) -> Iterable[Finding]:
    """Is a driver installed at all?  The other questions are their own checks (declared below)."""
    if ctx.facts.get("driver.installed") is None:
        return []  # the driver probe did not run (crashed or timed out: reported by probe-health)
    return _no_driver(ctx.facts)

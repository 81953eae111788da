#!/usr/bin/env python3
"""Generate the NVIDIA driver's kernel-message catalog and its PCI-ID tables from NVIDIA's own artifacts.

    python scripts/build_kernel_catalog.py \\
        --open-gpu GITDIR [--rev 595.45.04] \\
        --proprietary DIR [--proprietary DIR ...] \\
        --linux DIR [--linux DIR ...]
    python scripts/build_kernel_catalog.py ... --check   # regenerate in memory, exit 1 when the files differ

Writes (nobody edits them by hand):

* ``envdoctor/matrix/data/kernel_messages.json``: one row per message the NVIDIA kernel modules (nvidia,
  nvidia-uvm, nvidia-drm, nvidia-modeset) or the kernel itself print about them, and one row per Xid code.
  Each message row holds the format string as the source prints it, a regular expression made from it, a
  sample line made from it, where it was read (file, line, revision) and what it means for the user (the
  cause, the finding code, its severity and the fix: the ``CAUSES`` below, the only hand-written part).
  Xid rows come from ``nverror.h`` (code and mnemonic), their class from the mnemonic (``XID_CLASSES``).
* ``envdoctor/matrix/data/gpu_pci_ids.json``: the PCI device IDs of NVIDIA GPUs with their product names,
  from the open modules' README ("Compatible GPUs": Turing and later, which the open modules drive) and
  from the proprietary driver's README (Appendix A: the GPUs the release supports and, per legacy branch,
  those it leaves to a legacy driver).

Inputs, all NVIDIA's (or the kernel's) own files:

* ``--open-gpu``: a clone (or bare git directory) of https://github.com/NVIDIA/open-gpu-kernel-modules;
  ``--rev`` the tag or commit read (``git show REV:PATH``).
* ``--proprietary``: an unpacked proprietary kernel-module package, e.g. Debian's ``nvidia-kernel-dkms``
  (``dpkg-deb -x nvidia-kernel-dkms_555.58.02-4_amd64.deb DIR``): the messages only the closed resource
  manager prints (legacy GPUs) are read from its ``nv-kernel.o_binary`` and the GPU lists from its
  ``README.txt.gz``. Several may be given (oldest first); the newest README gives the lists.
* ``--linux``: an unpacked kernel source tree (Debian's ``linux-source-6.1``, ``linux-source-5.10``): the
  kernel's own messages about a module it refuses or a firmware file it cannot find.

A message that no artifact available here holds (the proprietary driver's "requires use of the NVIDIA open
kernel modules", 570 and later) is listed in ``REPORTED`` with where it was seen and marked unverified.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import gzip
import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "envdoctor", "matrix", "data")
OPEN_REPO = "https://github.com/NVIDIA/open-gpu-kernel-modules"
XID_DOC = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
#: NVIDIA's own download folder of a driver release (the files Debian's packages carry unchanged).
NVIDIA_RELEASE = "https://download.nvidia.com/XFree86/Linux-x86_64/%s/"
#: A file of the Linux kernel's stable tree at a release.
LINUX_FILE = "https://git.kernel.org/pub/scm/linux/kernel/git/stable/linux.git/tree/%s?h=v%s#n%d"

# -- what each message means for the user (the hand-written part) -----------------------------------------

#: cause -> the finding code, its severity, what the message means and the fix. ``kind``: "cause" names why a
#: GPU or module failed (a finding says it); "failure" says that something failed without saying why (the
#: finding looks for a cause among the other lines); "consequence" follows from another failure (never a
#: finding of its own); "info" is worth knowing, never a fault.
CAUSES: Dict[str, Dict[str, str]] = {
    "open_required": {
        "kind": "cause", "code": "driver.open_modules_required", "severity": "error",
        "meaning": "this GPU works only with NVIDIA's open kernel modules, and the proprietary module is loaded",
        "fix": "Install the open flavour of the same driver branch (Ubuntu: nvidia-driver-XXX-open or "
               "nvidia-dkms-XXX-open; NVIDIA's repositories: nvidia-open / kmod-nvidia-open-dkms; the .run "
               "installer: --kernel-module-type=open), remove the proprietary module package, and reboot."},
    "open_unsupported": {
        "kind": "cause", "code": "driver.open_modules_unsupported_gpu", "severity": "error",
        "meaning": "the open kernel modules need the GPU System Processor (GSP) of Turing and later GPUs; this "
                   "GPU has none",
        "fix": "Install the proprietary flavour of the driver (Ubuntu: nvidia-driver-XXX without -open; "
               "NVIDIA's repositories: cuda-drivers / nvidia-driver:XXX-dkms; the .run installer: "
               "--kernel-module-type=proprietary) of a branch that still supports this GPU (Maxwell, Pascal "
               "and Volta: 580 at the newest), remove the open module package, and reboot."},
    "legacy": {
        "kind": "cause", "code": "driver.gpu_needs_legacy_branch", "severity": "error",
        "meaning": "this driver no longer supports the GPU; a legacy driver branch does",
        "fix": "Install the legacy driver branch the kernel message names (and a CUDA release that branch "
               "supports), then reboot."},
    "unsupported_by_release": {
        "kind": "cause", "code": "driver.gpu_not_supported_by_branch", "severity": "error",
        "meaning": "this driver release does not support the GPU (too new for it, or dropped)",
        "fix": "Install a driver branch whose supported-GPU list has this GPU (newer GPUs need newer "
               "branches; Blackwell needs the open kernel modules), then reboot."},
    "lost": {
        "kind": "cause", "code": "gpu.lost", "severity": "error",
        "meaning": "the GPU fell off the bus: the driver lost contact with it (Xid 79)",
        "fix": "Reset the GPU or power-cycle the machine; if it recurs, check power, cooling and the slot or "
               "riser, reseat the board, and replace it (RMA) if it keeps falling off."},
    "bar": {
        "kind": "cause", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the firmware gave the GPU no (or too small a) memory window: its BARs could not be assigned",
        "fix": "Enable \"Above 4G Decoding\" and \"Resizable BAR\" in the BIOS/UEFI (and turn CSM off), then "
               "reboot; on servers and VMs, give the GPU a 64-bit MMIO window large enough for its memory."},
    "power": {
        "kind": "cause", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the GPU's auxiliary power is not connected or not enough",
        "fix": "Power the machine off, connect every auxiliary power cable of the board (and check the "
               "supply's rating), reseat the board, and boot again."},
    "gsp": {
        "kind": "cause", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the GPU System Processor firmware failed to start",
        "fix": "Power-cycle the machine (a cold boot resets the GPU); install the GSP firmware files of the "
               "driver's exact version and update the driver; if it persists with the proprietary modules, "
               "the GSP firmware can be turned off (NVreg_EnableGpuFirmware=0; not possible with the open "
               "modules or on Blackwell)."},
    "gfw_boot": {
        "kind": "cause", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the GPU's own firmware (VBIOS) did not finish booting: a power, seating or board problem",
        "fix": "Power the machine off completely (not a reboot), check the auxiliary power cables and the "
               "slot or riser, reseat the board; replace it (RMA) if it persists."},
    "gsp_firmware_missing": {
        "kind": "cause", "code": "driver.gsp_firmware_missing", "severity": "error",
        "meaning": "the GSP firmware file of this driver version is not installed, so the module cannot start "
                   "the GPU",
        "fix": "Install the firmware package of the driver's exact version (Debian: firmware-nvidia-gsp; "
               "Ubuntu: the nvidia-firmware-XXX package of the branch; Fedora/RHEL: the driver's kmod or "
               "nvidia-kmod-common package), so /lib/firmware/nvidia/<version>/gsp_*.bin exists, then "
               "reboot."},
    "other_driver": {
        "kind": "cause", "code": "driver.gpu_owned_by_other_driver", "severity": "error",
        "meaning": "another kernel driver (nouveau, vfio-pci, an fbdev driver) took the GPU before the nvidia "
                   "module",
        "fix": "Find the driver bound to the GPU (lspci -nnk), blacklist it (nouveau: blacklist nouveau, "
               "options nouveau modeset=0), rebuild the initramfs and reboot."},
    "no_gpu": {
        "kind": "failure", "code": "driver.module_found_no_gpu", "severity": "error",
        "meaning": "the nvidia module found no GPU it could drive and refused to load",
        "fix": "Read the lines before it: a GPU this branch does not support, one another driver owns, or one "
               "that is not on the PCI bus (lspci -nn | grep -i nvidia)."},
    "init_failed": {
        "kind": "failure", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the driver failed to initialise the GPU",
        "fix": "Check, most common first: \"Above 4G Decoding\" and \"Resizable BAR\" enabled in the "
               "BIOS/UEFI (GPUs with a large memory window: GeForce RTX 30/40/50, data-centre boards); every "
               "auxiliary power cable connected; the board fully seated (no loose riser); a driver branch "
               "and module flavour that support the GPU. Power-cycle after each change."},
    "api_mismatch": {
        "kind": "cause", "code": "driver.library_mismatch", "severity": "error",
        "meaning": "a program's driver libraries are another version than the loaded kernel module",
        "fix": "Reboot after a driver update (or unload and reload the nvidia modules); inside a container, "
               "use the host's driver libraries the container toolkit injects, not libraries baked into the "
               "image."},
    "module_other_kernel": {
        "kind": "cause", "code": "driver.module_built_for_other_kernel", "severity": "error",
        "meaning": "the nvidia module was built for another kernel (its symbols do not match the running one)",
        "fix": "Rebuild the module for the running kernel (its headers installed: sudo dkms autoinstall) or "
               "reinstall the driver's module package for this kernel, then load it."},
    "uvm": {
        "kind": "cause", "code": "driver.uvm_init_failed", "severity": "error",
        "meaning": "the nvidia-uvm module failed to start; CUDA needs it (cuInit fails without it)",
        "fix": "Reload it (sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm) and read the lines before "
               "this one; reboot if it keeps failing."},
    "gsp_hang": {
        "kind": "cause", "code": "gpu.reset_required", "severity": "error",
        "meaning": "the GPU's firmware stopped answering the driver (GSP RPC errors): the GPU needs a reset",
        "fix": "Reset the GPU (nothing may be using it) or reboot; update the driver if it recurs."},
    "vgpu_guest_incompatible": {
        "kind": "cause", "code": "driver.vgpu_guest_incompatible_with_host", "severity": "error",
        "meaning": "the GPU is an NVIDIA vGPU, and the host's vGPU manager refused this VM's guest driver: the "
                   "guest driver is of a release the host's vGPU software does not accept, so the vGPU did not "
                   "start (Xid 78, vGPU Start Error)",
        "fix": "Install the guest driver of the host's NVIDIA vGPU software release (NVIDIA's vGPU release notes "
               "pair each vGPU manager release with its guest drivers; on a cloud VM, the provider's GRID guest "
               "driver for the VM size's current host release), remove the old one, and reboot the VM."},
    "vgpu_type_unsupported": {
        "kind": "cause", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the GPU is an NVIDIA vGPU of a type the host does not support for this VM (its guest OS or "
                   "the physical GPU), so the vGPU did not start (Xid 78, vGPU Start Error)",
        "fix": "Give the VM a vGPU type (profile) that the physical GPU and the guest OS support (NVIDIA's vGPU "
               "documentation lists them per GPU), then restart the VM."},
    "consequence": {
        "kind": "consequence", "code": "", "severity": "info",
        "meaning": "follows from a failure the other lines name",
        "fix": ""},
    "unsigned_loaded": {
        "kind": "info", "code": "", "severity": "info",
        "meaning": "the kernel loaded an unsigned module (signatures are not enforced on this kernel)",
        "fix": ""},
}

#: Xid classes: mnemonic patterns (nverror.h) -> cause. The first that matches wins; the meanings follow
#: NVIDIA's Xid catalog (XID_DOC): 79 the GPU fell off the bus; ECC, row-remapping and memory errors;
#: NVLink errors; the GSP firmware's RPC timeouts and errors; 78 a vGPU that did not start (the catalog: "basic
#: issues will keep vGPU functionality from being able to operate", the guest driver incompatible with the host
#: driver or the vGPU type not supported); the rest are errors of one application's work (a bad kernel, a page
#: fault) that the driver contained.
XID_CLASSES: Sequence[Tuple[str, str]] = (
    (r"^ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS$", "lost"),
    (r"^(?:GSP_RPC_TIMEOUT|GSP_ERROR|PMU_HALT_ERROR|SEC2_HALT_ERROR|GPU_FATAL_TIMEOUT|PCIE_FATAL_TIMEOUT|"
     r"GPU_INIT_ERROR|ROBUST_CHANNEL_UNCONTAINED_ERROR|GPU_RECOVERY_ACTION_CHANGED)$", "xid_reset"),
    (r"ECC|INFOROM|RETIREMENT|DRAM|SRAM|MEMORY|SBE|LTC|ROW_REMAP|UNCONTAINED|CONTAINED", "xid_memory"),
    (r"NVLINK|C2C|ALI_TRAINING", "xid_interconnect"),
    (r"^VGPU_START_ERROR$", "xid_vgpu_start"),
    (r"", "xid_application"),
)

XID_CAUSES: Dict[str, Dict[str, str]] = {
    "xid_reset": {
        "kind": "cause", "code": "gpu.reset_required", "severity": "error",
        "meaning": "a GPU or firmware fault after which NVIDIA's Xid catalog says to reset the GPU",
        "fix": "Drain the GPU, reset it (nvidia-smi --gpu-reset) or reboot; collect nvidia-bug-report.sh if it "
               "recurs."},
    "xid_memory": {
        "kind": "cause", "code": "gpu.xid_memory_error", "severity": "warning",
        "meaning": "a GPU memory error (ECC, page retirement or row remapping)",
        "fix": "Check the GPU's ECC and row-remapping state (nvidia-smi -q -d ECC,ROW_REMAPPER); reset the GPU "
               "to apply pending remaps; replace the board (RMA) if uncorrectable errors recur."},
    "xid_interconnect": {
        "kind": "cause", "code": "gpu.xid_interconnect_error", "severity": "warning",
        "meaning": "an NVLink (or chip-to-chip link) error",
        "fix": "Check the links (nvidia-smi nvlink -s, nvidia-smi nvlink -e); reset the GPUs; on NVSwitch "
               "systems check the Fabric Manager's log."},
    "xid_vgpu_start": {
        "kind": "failure", "code": "gpu.init_failed", "severity": "error",
        "meaning": "the vGPU did not start (Xid 78, vGPU Start Error): the host refused it, which NVIDIA's Xid "
                   "catalog says keeps vGPU from working until resolved (the line's text names why: a guest "
                   "driver incompatible with the host driver, or a vGPU type not supported)",
        "fix": "Read the Xid line's text: 'Guest driver is incompatible with host driver' needs the guest driver "
               "of the host's vGPU software release; 'vGPU type is not supported' needs a vGPU type the GPU and "
               "guest OS support. Then restart the VM."},
    "xid_application": {
        "kind": "info", "code": "gpu.xid_application_error", "severity": "info",
        "meaning": "an error in one application's GPU work (a bad kernel, an illegal address, a timeout) that "
                   "the driver contained; the GPU itself is fine",
        "fix": "Debug the application that ran then (compute-sanitizer); nothing to fix on the machine."},
}

# -- where each message is read --------------------------------------------------------------------------

#: How the printing macro prefixes a message (the regex includes a prefix only where it is part of what
#: identifies the line).
PREFIX_SAMPLE = {"none": "", "dev": "NVRM: GPU 0000:01:00.0: ", "rm": "NVRM: RmInitAdapter: ",
                 "module": "", "uvm": "nvidia-uvm: uvm_init(): ", "drm": "[drm:nv_drm_load [nvidia_drm]] *ERROR* "
                 "[nvidia-drm] [GPU ID 0x00000100] ", "pci": "nvidia 0000:01:00.0: ",
                 "pcicore": "pci 0000:01:00.0: "}
PREFIX_REGEX = {"dev": r"NVRM: GPU [0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]: "}

#: (id, source, path, anchor, line_anchor, prefix, cause, captures) — ``anchor`` finds the printing call in
#: the file, ``line_anchor`` the one line of its (possibly several-line) text that identifies the message;
#: ``captures`` names the line's printf conversions in order (None: unnamed), a name may carry its own regex
#: ("module=nvidia[\\w-]*") where the conversion must be narrowed.
OPEN_MESSAGES = (
    ("gpu_lost_at_probe", "src/nvidia/arch/nvalloc/unix/src/osapi.c",
     "fallen off the bus and is not responding to commands", "fallen off the bus and is not responding",
     "none", "lost", ()),
    ("gpu_fallen_off_bus", "src/nvidia/arch/nvalloc/unix/src/osinit.c",
     "NV_DEV_PRINTF(NV_DBG_ERRORS, nv, \"GPU has fallen off the bus.", "GPU has fallen off the bus.",
     "dev", "lost", ()),
    ("open_modules_no_gsp", "src/nvidia/arch/nvalloc/unix/src/osapi.c",
     "NVRM: nvidia.ko because it does not include the required GPU", "does not include the required GPU",
     "none", "open_unsupported", ()),
    ("not_supported_by_release", "src/nvidia/arch/nvalloc/unix/src/osapi.c",
     "NVRM: NVIDIA %s driver release.", "driver release.", "none", "unsupported_by_release", ("version",)),
    ("rm_init_adapter_failed", "src/nvidia/arch/nvalloc/unix/src/osinit.c",
     "\"RmInitAdapter failed! (0x%x:0x%x:%d)", "RmInitAdapter failed!", "dev", "init_failed", ()),
    ("rm_init_adapter_failed_minor", "kernel-open/nvidia/nv.c",
     "\"rm_init_adapter failed, device minor number %d", "rm_init_adapter failed", "dev", "init_failed", ()),
    ("gsp_init_failed", "src/nvidia/arch/nvalloc/unix/src/osinit.c",
     "\"Cannot initialize GSP firmware RM", "Cannot initialize GSP firmware RM", "rm", "gsp", ()),
    ("gfw_boot_timeout", "src/nvidia/src/kernel/gpu/gsp/arch/turing/kernel_gsp_tu102.c",
     "\"failed to wait for GFW boot complete", "failed to wait for GFW boot complete", "rm", "gfw_boot", ()),
    ("power_cables", "src/nvidia/arch/nvalloc/unix/src/osinit.c",
     "\"GPU does not have the necessary power cables connected.", "power cables", "dev", "power", ()),
    ("bar_invalid", "kernel-open/nvidia/nv-pci.c",
     "\"NVRM: This PCI I/O region assigned to your NVIDIA device is invalid", "PCI I/O region assigned",
     "none", "bar", ()),
    ("bar_size", "kernel-open/nvidia/nv-pci.c", "\"NVRM: BAR%d is %\"", "NVRM: BAR", "none", "bar",
     ("bar", "size", "address", None, None, None, None)),
    ("no_gpu_found", "kernel-open/nvidia/nv.c", "\"NVRM: No NVIDIA GPU found.", "No NVIDIA GPU found",
     "none", "no_gpu", ()),
    ("no_devices_probed", "kernel-open/nvidia/nv.c", "\"NVRM: No NVIDIA devices probed.",
     "No NVIDIA devices probed", "none", "no_gpu", ()),
    ("probe_not_called", "kernel-open/nvidia/nv.c", "\"NVRM: This can occur when another driver was loaded and",
     "This can occur when another driver was loaded", "none", "other_driver", ()),
    ("probe_failed", "kernel-open/nvidia/nv.c", "\"NVRM: The NVIDIA probe routine failed for %d device(s).",
     "probe routine failed", "none", "init_failed", ("count",)),
    ("legacy_gpu_ignored", "kernel-open/nvidia/nv-pci.c", "\"NVRM: ignoring the legacy GPU",
     "ignoring the legacy GPU", "none", "legacy", ()),
    ("api_mismatch_client", "src/nvidia/arch/nvalloc/unix/src/osapi.c", "\"NVRM: API mismatch: the client '%s'",
     "API mismatch: the client '", "none", "api_mismatch", ("client", "pid")),
    ("uvm_init_failed", "kernel-open/nvidia-uvm/uvm.c", "UVM_ERR_PRINT(\"uvm init failed: %d",
     "uvm init failed", "uvm", "uvm", ("err",)),
    ("uvm_global_init_failed", "kernel-open/nvidia-uvm/uvm.c", "UVM_ERR_PRINT(\"uvm_global_init() failed: %s",
     "uvm_global_init() failed", "uvm", "uvm", ("status",)),
    ("drm_kapi_device_failed", "kernel-open/nvidia-drm/nvidia-drm-drv.c",
     "\"Failed to allocate NvKmsKapiDevice", "Failed to allocate NvKmsKapiDevice", "drm", "consequence", ()),
    ("gpu_crash_dump", "src/nvidia/arch/nvalloc/unix/src/osapi.c", "\"NVRM: A GPU crash dump has been created",
     "A GPU crash dump has been created", "none", "consequence", ()),
    # a vGPU guest's reasons for Xid 78 (VGPU_START_ERROR), printed as the Xid line's text (nvErrorLog_va)
    ("vgpu_guest_incompatible", "src/nvidia/src/kernel/gpu/gpu.c", "\"Guest driver is incompatible with host driver",
     "Guest driver is incompatible with host driver", "none", "vgpu_guest_incompatible", ()),
    ("vgpu_type_unsupported", "src/nvidia/src/kernel/vgpu/rpc.c",
     "nvErrorLog_va(pGpu, VGPU_START_ERROR, \"vGPU type is not supported", "vGPU type is not supported", "none",
     "vgpu_type_unsupported", ()),
)

#: Messages only the proprietary resource manager prints (read from nv-kernel.o_binary's strings):
#: (id, anchor, cause, captures).
PROPRIETARY_MESSAGES = (
    ("legacy_branch", "supported through the NVIDIA %s Legacy drivers.", "legacy", ("branch",)),
    # the 390 branch's forms, printed without the GPU's address
    ("rm_init_adapter_failed_nobus", "NVRM: RmInitAdapter failed! (0x%x:0x%x:%d)", "init_failed", ()),
    ("gpu_fallen_off_bus_at", "NVRM: GPU at %04x:%02x:%02x.0 has fallen off the bus.", "lost", ()),
    ("legacy_branch_unknown_gpu", "driver. You can try the NVIDIA %s Legacy drivers.", "legacy", ("branch",)),
    ("api_mismatch_version", "API mismatch: the client has the version %s, but", "api_mismatch", ("client",)),
)

#: Messages of the proprietary driver's kernel interface layer (shipped as source in its package) that the
#: open modules no longer print: (id, file, anchor, line anchor, cause, captures).
PROPRIETARY_SOURCE_MESSAGES = (
    ("rm_init_adapter_failed_minor_old", "nvidia/nv.c", "\"NVRM: rm_init_adapter failed \"",
     "rm_init_adapter failed for device", "init_failed", ("minor",)),
)

#: The kernel's own messages about a module (read from the kernel source): (id, path glob, anchor, line
#: anchor, prefix, cause, captures).
LINUX_MESSAGES = (
    ("module_symbol_version", "kernel/module/version.c", "disagrees about version of symbol",
     "disagrees about version of symbol", "module", "module_other_kernel", (r"module=nvidia[\w-]*", "symbol")),
    ("module_unknown_symbol", "kernel/module/main.c", "Unknown symbol %s (err %d)", "Unknown symbol",
     "module", "module_other_kernel", (r"module=nvidia[\w-]*", "symbol", "err")),
    ("module_unsigned_loaded", "kernel/module/main.c", "module verification failed: signature",
     "module verification failed", "module", "unsigned_loaded", (r"module=nvidia[\w-]*",)),
    ("gsp_firmware_not_found", "drivers/base/firmware_loader/main.c", "Direct firmware load for %s failed",
     "Direct firmware load for", "pci", "gsp_firmware_missing", (r"file=nvidia/[\w.]+/gsp_\w+\.bin", "err")),
    ("pci_bar_no_space", "drivers/pci/setup-res.c", "can't assign; no space", "can't assign; no space",
     "pcicore", "bar", (r"resource=BAR ?\d+", "range")),
    ("pci_bar_no_space_old", "drivers/pci/setup-res.c", "BAR %d: no space for %pR", "no space for",
     "pcicore", "bar", ("bar", "range")),
    ("pci_bar_failed_assign_old", "drivers/pci/setup-res.c", "BAR %d: failed to assign %pR", "failed to assign",
     "pcicore", "bar", ("bar", "range")),
)

#: Seen in the proprietary driver's output (570 and later) but in no artifact this script can read: the
#: line, where it was seen, and the NVIDIA statement behind its meaning.
REPORTED = (
    {"id": "open_modules_required", "cause": "open_required",
     "line": "NVRM: installed in this system requires use of the NVIDIA open kernel modules.",
     "url": "https://forums.developer.nvidia.com/t/unix-graphics-feature-deprecation-schedule/60588",
     "note": "The proprietary resource manager of driver 570 and later prints this line (after \"NVRM: The NVIDIA "
             "GPU <bus> (PCI ID: <id>)\") for a GPU it cannot drive, as quoted from kernel logs of Blackwell "
             "GPUs with the proprietary 575/580 modules (NVIDIA/open-gpu-kernel-modules issues); that binary "
             "is in no package read here. NVIDIA's deprecation schedule: 'in the future, some GPUs may only be "
             "supported with the open flavor'; NVIDIA's blog 'NVIDIA Transitions Fully Towards Open-Source GPU "
             "Kernel Modules' (2024-07-17): Grace Hopper and Blackwell must use the open modules."},
)

# -- reading the sources ---------------------------------------------------------------------------------

_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
#: Macros the sources splice into format strings.
_MACROS = {"NvU64_fmtu": "llu", "NvU64_fmtx": "llx", "NvU64_fmtX": "llX", "NV_PCI_DEV_FMT": "%04x:%02x:%02x.%x"}
#: A printf conversion; the kernel's %pR (a resource) and its kin carry a letter after the "p".
_CONV = re.compile(r"%(?P<flags>[-+ #0]*)(?P<width>\d+|\*)?(?:\.(?P<prec>\d+))?(?P<len>hh|h|ll|l|z|j|t)?"
                   r"(?:(?P<conv>[diouxXsc%])|(?P<ptr>p)(?P<kext>[RSsBbMmIi]?))")


class Source:
    """A file tree to read: a git directory at a revision, or a plain directory."""

    def __init__(self, path: str, rev: Optional[str] = None) -> None:
        self.path, self.rev = path, rev
        self.commit = ""
        if rev:
            self.commit = self._git("rev-parse", rev + "^{commit}").strip()

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", self._gitdir()] + list(args), check=True,
                              stdout=subprocess.PIPE, text=True).stdout

    def _gitdir(self) -> str:
        dot = os.path.join(self.path, ".git")
        return dot if os.path.exists(dot) else self.path

    def read(self, path: str) -> str:
        if self.rev:
            return self._git("show", "%s:%s" % (self.commit, path))
        with open(os.path.join(self.path, path), encoding="utf-8", errors="replace") as fh:
            return fh.read()


def _unescape(text: str) -> str:
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


def call_text(source: str, anchor: str) -> Tuple[str, int]:
    """The string of the printing call that contains ``anchor``, its literals joined (and its macros
    expanded), and the 1-based line of the anchor."""
    lines = source.splitlines()
    hits = [i for i, ln in enumerate(lines) if anchor in ln]
    if len(hits) != 1:
        raise SystemExit("anchor %r found %d times" % (anchor, len(hits)))
    at = hits[0]
    start = at
    while start > 0 and not re.search(r"\b\w*(?:printf|PRINTF|PRINT|pr_\w+|dev_\w+|pci_\w+|LOG_ERR)\s*\(",
                                      lines[start]):
        start -= 1
    end = at
    while end < len(lines) - 1 and ");" not in lines[end]:
        end += 1
    text = "\n".join(lines[start:end + 1])
    for macro, value in _MACROS.items():
        text = re.sub(r'"\s*%s\s*"' % macro, value, text)
        text = re.sub(r'\b%s\b\s*"' % macro, '"' + value, text)
    return "".join(_unescape(m.group(1)) for m in _LITERAL.finditer(text)), at + 1


def message_line(fmt: str, line_anchor: str) -> str:
    """The one line of a several-line message that ``line_anchor`` identifies (without its newline)."""
    picked = [ln for ln in fmt.split("\n") if line_anchor in ln]
    if len(picked) != 1:
        raise SystemExit("line anchor %r picks %d lines of %r" % (line_anchor, len(picked), fmt))
    return picked[0].rstrip()


def continues(fmt: str, line: str) -> bool:
    """Whether ``line`` continues a message begun on an earlier line of ``fmt``."""
    return not fmt.startswith(line)


def line_regex(text: str, captures: Sequence[Optional[str]], continuation: bool) -> str:
    """The regex of one message line; a continuation line's "NVRM: " may also be a space (a log that joined
    the message's lines)."""
    body, _ = to_regex(text, captures)
    if continuation and text.startswith("NVRM: "):
        body = r"(?:NVRM:\s+|\s)" + to_regex(text[len("NVRM: "):], captures)[0]
    return body


def to_regex(fmt: str, captures: Sequence[Optional[str]] = ()) -> Tuple[str, List[Tuple[str, Optional[str]]]]:
    """A regular expression for a printf format line, and its conversions ((conv, name))."""
    out: List[str] = []
    convs: List[Tuple[str, Optional[str]]] = []
    pos = 0
    n = 0
    for m in _CONV.finditer(fmt):
        out.append(re.escape(fmt[pos:m.start()]))
        pos = m.end()
        conv = m.group("conv") or "p"
        if conv == "%":
            out.append("%")
            continue
        spec = captures[n] if n < len(captures) else None
        n += 1
        name, own = (spec.split("=", 1) + [None])[:2] if spec else (None, None)
        if conv in "diu":
            body = r"-?\d+"
        elif conv in "xX":
            body = r"[0-9a-fA-F]+"
        elif conv == "p" and m.group("kext") == "R":
            body = r"\[[^\]]*\]"
        elif conv == "p":
            body = r"\S+"
        elif conv == "c":
            body = "."
        else:
            body = r".+?" if m.end() < len(fmt) else r".+"
        if own:
            body = own
        out.append("(?P<%s>%s)" % (name, body) if name else "(?:%s)" % body)
        convs.append((conv + (m.group("kext") or ""), name))
    out.append(re.escape(fmt[pos:]))
    return "".join(out), convs


#: Sample values per conversion (and per capture name), so a sample reads like a real line.
_SAMPLE = {"version": "535.183.01", "branch": "470.xx", "client": "535.183.01", "module": "nvidia",
           "symbol": "drm_gem_object_free", "file": "nvidia/550.54.14/gsp_ga10x.bin", "resource": "BAR 1",
           "range": "[mem size 0x800000000 64bit pref]", "bar": "1", "size": "0", "address": "0",
           "status": "NV_ERR_NO_MEMORY", "count": "1", "pid": "1234", "err": "-2", "minor": "0"}


def sample_of(fmt: str, captures: Sequence[Optional[str]] = ()) -> str:
    n = [0]

    def sub(m: re.Match[str]) -> str:
        conv = m.group("conv") or "p"
        if conv == "%":
            return "%"
        spec = captures[n[0]] if n[0] < len(captures) else None
        n[0] += 1
        name = spec.split("=", 1)[0] if spec else None
        if name in _SAMPLE:
            return _SAMPLE[name]
        if conv in "diu":
            return "0"
        if conv in "xX":
            width = int(m.group("width")) if (m.group("width") or "").isdigit() else 1
            return "0" * width if width != 2 else "01"
        if conv == "p" and m.group("kext") == "R":
            return "[mem 0x00000000-0x0fffffff 64bit pref]"
        return "Example"
    return _CONV.sub(sub, fmt)


def _row(rid: str, cause: str, module: str, fmt: str, pattern: str, sample: str, source: Dict[str, Any],
         causes: Dict[str, Dict[str, str]] = CAUSES) -> Dict[str, Any]:
    c = causes[cause]
    row: Dict[str, Any] = {"id": rid, "kind": "message", "module": module, "format": fmt, "pattern": pattern,
                           "sample": sample, "cause": cause, "class": c["kind"], "code": c["code"],
                           "severity": c["severity"], "meaning": c["meaning"], "fix": c["fix"]}
    row["source"] = source
    return row


def _module_of(path: str) -> str:
    for name in ("nvidia-uvm", "nvidia-drm", "nvidia-modeset"):
        if "/%s/" % name in path:
            return name
    return "nvidia"


def open_rows(src: Source, rev: str, checked: str) -> List[Dict[str, Any]]:
    rows = []
    for rid, path, anchor, line_anchor, prefix, cause, captures in OPEN_MESSAGES:
        fmt, line = call_text(src.read(path), anchor)
        if prefix == "dev":
            fmt = fmt.replace("NVRM: GPU %04x:%02x:%02x.%x: ", "")
        text = message_line(fmt, line_anchor)
        body = line_regex(text, captures, continues(fmt, text))
        pattern = PREFIX_REGEX.get(prefix, "") + body
        sample = PREFIX_SAMPLE[prefix] + sample_of(text, captures)
        rows.append(_row(rid, cause, _module_of(path), text, pattern, sample, {
            "url": "%s/blob/%s/%s#L%d" % (OPEN_REPO, src.commit, path, line), "checked": checked, "verified": True,
            "note": "Format string read from %s line %d of the open kernel modules %s." % (path, line, rev)}))
    return rows


def _binary_strings(path: str) -> List[str]:
    with open(path, "rb") as fh:
        data = fh.read()
    return [m.group().decode("latin-1") for m in re.finditer(rb"[\x20-\x7e]{6,}", data)]


def _binaries(dirs: Sequence[str]) -> List[Tuple[str, str, List[str]]]:
    """(directory, driver version, strings of nv-kernel*.o_binary) of each proprietary package, newest first."""
    out = []
    for d in reversed(dirs):
        for binary in sorted(glob.glob(os.path.join(d, "usr/src/*/nvidia/nv-kernel*.o_binary"))):
            version = re.search(r"(\d+\.\d+(?:\.\d+)?)", binary.split("/usr/src/")[1]).group(1)
            out.append((d, version, _binary_strings(binary)))
    return out


def proprietary_rows(dirs: Sequence[str], checked: str) -> List[Dict[str, Any]]:
    rows = []
    binaries = _binaries(dirs)
    for rid, anchor, cause, captures in PROPRIETARY_MESSAGES:
        for entry in binaries:  # the newest driver that prints it (its version is cited)
            found = [s for s in entry[2] if anchor in s]
            if len(found) == 1:
                version = entry[1]
                break
        else:
            raise SystemExit("proprietary anchor %r not found once in any driver" % anchor)
        text = re.sub(r"^NVRM:\s+", "", found[0]).rstrip()
        body, _ = to_regex(text, captures)
        if re.match(r"^NVRM: \S", found[0]):
            body = "NVRM: " + body  # a line of its own (not the continuation of a longer message)
        rows.append(_row(rid, cause, "nvidia", text, body, "NVRM: " + ("" if body.startswith("NVRM: ") else " ")
                         + sample_of(text, captures), {
            "url": NVIDIA_RELEASE % version, "checked": checked, "verified": True,
            "note": "String of NVIDIA's proprietary resource manager (nv-kernel.o_binary) of driver %s, read "
                    "from Debian's package of that version, which carries NVIDIA's file unchanged." % version}))
    for rid, path, anchor, line_anchor, cause, captures in PROPRIETARY_SOURCE_MESSAGES:
        for d in dirs:  # the oldest driver that prints it
            files = glob.glob(os.path.join(d, "usr/src/*", path))
            text = open(files[0], encoding="utf-8", errors="replace").read() if files else ""
            if anchor in text:
                break
        else:
            raise SystemExit("proprietary source anchor %r not found" % anchor)
        fmt, line = call_text(text, anchor)
        line_text = message_line(fmt, line_anchor)
        body, _ = to_regex(line_text, captures)
        version = re.search(r"(\d+\.\d+(?:\.\d+)?)", files[0].split("/usr/src/")[1]).group(1)
        rows.append(_row(rid, cause, "nvidia", line_text, body, sample_of(line_text, captures), {
            "url": NVIDIA_RELEASE % version, "checked": checked, "verified": True,
            "note": "Format string read from %s line %d of NVIDIA's kernel interface layer of driver %s "
                    "(Debian's package of that version)." % (path, line, version)}))
    return rows


def linux_rows(trees: Sequence[str], checked: str) -> List[Dict[str, Any]]:
    rows = []
    for rid, path, anchor, line_anchor, prefix, cause, captures in LINUX_MESSAGES:
        found = None
        for tree in trees:
            for candidate in (path, "kernel/module.c" if path.startswith("kernel/module/") else path):
                full = os.path.join(tree, candidate)
                if os.path.exists(full):
                    with open(full, encoding="utf-8", errors="replace") as fh:
                        text = fh.read()
                    if anchor in text:
                        found = (tree, candidate, text)
                        break
            if found:
                break
        if not found:
            raise SystemExit("kernel message %r not found in %s" % (anchor, ", ".join(trees)))
        tree, candidate, text = found
        fmt, line = call_text(text, anchor)
        line_text = message_line(fmt, line_anchor)
        body, _ = to_regex(line_text, captures)
        with open(os.path.join(tree, "Makefile"), encoding="utf-8") as fh:
            mk = fh.read()
        kver = ".".join(re.search(r"^%s = (\d+)" % k, mk, re.M).group(1) for k in ("VERSION", "PATCHLEVEL",
                                                                                 "SUBLEVEL"))
        module = "kernel"
        rows.append(_row(rid, cause, module, line_text, body, PREFIX_SAMPLE[prefix] + sample_of(line_text, captures),
                         {"url": LINUX_FILE % (candidate, kver, line), "checked": checked, "verified": True,
                          "note": "Format string read from %s line %d of Linux %s (Debian's linux-source "
                                  "package)." % (candidate, line, kver)}))
    return rows


def reported_rows(checked: str) -> List[Dict[str, Any]]:
    rows = []
    for rep in REPORTED:
        text = re.sub(r"^NVRM:\s+", "", rep["line"])
        rows.append(_row(rep["id"], rep["cause"], "nvidia", text, re.escape(text), rep["line"], {
            "url": rep["url"], "checked": checked, "verified": False, "note": rep["note"]}))
    return rows


def xid_rows(src: Source, rev: str, checked: str) -> List[Dict[str, Any]]:
    path = "src/common/sdk/nvidia/inc/nverror.h"
    text = src.read(path)
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        m = re.match(r"^#define\s+(\w+)\s+\((\d+)\)", line)
        if not m or m.group(1).endswith("LAST_ERROR"):
            continue
        mnemonic, code = m.group(1), int(m.group(2))
        cause = next(c for pat, c in XID_CLASSES if re.search(pat, mnemonic))
        c = XID_CAUSES.get(cause) or CAUSES[cause]
        rows.append({
            "id": "xid_%d" % code, "kind": "xid", "module": "nvidia", "xid": code, "mnemonic": mnemonic,
            "sample": "NVRM: Xid (PCI:0000:01:00): %d, pid=1234, name=python3, %s" % (code, mnemonic),
            "cause": cause, "class": c["kind"], "code": c["code"], "severity": c["severity"],
            "meaning": c["meaning"], "fix": c["fix"],
            "source": {"url": "%s/blob/%s/%s#L%d" % (OPEN_REPO, src.commit, path, n), "checked": checked,
                       "verified": True,
                       "note": "Xid %d is %s in nverror.h of the open kernel modules %s; its class follows "
                               "NVIDIA's Xid catalog (%s)." % (code, mnemonic, rev, XID_DOC)}})
    return rows


def xid_line_row(src: Source, rev: str, checked: str) -> Dict[str, Any]:
    """How an Xid line is printed (kernel_rc.c), as the pattern every Xid row is found by."""
    path = "src/nvidia/src/kernel/gpu/rc/kernel_rc.c"
    fmt, line = call_text(src.read(path), 'portDbgPrintf("NVRM: Xid (" attr "): %d, %s%s')
    return {"id": "xid_line", "kind": "xid_line", "module": "nvidia",
            # "NVRM: Xid (PCI:0000:01:00): 79, ..." (older drivers: no "PCI:"; MIG: " GPU-I:NN")
            "pattern": r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): "
                       r"(?P<xid>\d+),",
            "format": "NVRM: Xid (PCI:%04x:%02x:%02x): %d, %s%s",
            "source": {"url": "%s/blob/%s/%s#L%d" % (OPEN_REPO, src.commit, path, line), "checked": checked,
                       "verified": True, "note": "How the open kernel modules %s print an Xid (the PCI address, "
                                                 "the code, the message)." % rev}}


# -- the GPU lists -----------------------------------------------------------------------------------------

_ID_ROW = re.compile(r"^\s*\|?\s*(?P<name>\S.*?\S)\s*\|?\s+(?P<id>[0-9A-F]{4})(?:\s+[0-9A-F]{4}\s+[0-9A-F]{4})?\s*"
                     r"(?:\|\s*)?(?:[A-K]\s*)?$")


def open_pci_ids(src: Source) -> Dict[str, str]:
    text = src.read("README.md")
    part = text.split("## Compatible GPUs", 1)[1]
    out: Dict[str, str] = {}
    for line in part.splitlines():
        m = re.match(r"^\|\s*(?P<name>[^|]+?)\s*\|\s*(?P<id>[0-9A-F]{4})(?:\s+[0-9A-F]{4}\s+[0-9A-F]{4})?\s*\|",
                     line)
        if m:
            out.setdefault(m.group("id").lower(), m.group("name"))
    return out


def readme_lists(readme: str) -> Tuple[Dict[str, str], Dict[str, Dict[str, str]]]:
    """(current GPUs, {legacy branch: GPUs}) of a proprietary driver README's Appendix A."""
    app = readme.split("A1. CURRENT NVIDIA GPUS", 1)[1].split("Appendix B.", 1)[0]
    current_part, _, legacy_part = app.partition("Below are the legacy GPUs")
    current = _id_table(current_part)
    legacy: Dict[str, Dict[str, str]] = {}
    for m in re.finditer(r"The (\d+(?:\.\d+)*)\.xx driver supports the following set of GPUs:(.*?)(?=The \d+"
                         r"(?:\.\d+)*\.xx driver supports|\Z)", legacy_part, re.S):
        legacy[m.group(1)] = _id_table(m.group(2))
    return current, legacy


def _id_table(text: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s(?P<name>\S.*?\S)\s{2,}(?P<id>[0-9A-F]{4})(?:\s[0-9A-F]{4}\s[0-9A-F]{4})?\s", line + " ")
        if m and not m.group("name").startswith("-"):
            out.setdefault(m.group("id").lower(), m.group("name"))
    return out


def pci_doc(src: Source, rev: str, dirs: Sequence[str], checked: str) -> Dict[str, Any]:
    newest = dirs[-1]
    readme_path = sorted(glob.glob(os.path.join(newest, "usr/share/doc/*/README.txt.gz")))[0]
    with gzip.open(readme_path, "rt", encoding="utf-8", errors="replace") as fh:
        readme = fh.read()
    version = re.search(r"the\s+(\d+\.\d+\.\d+)\s+driver", readme).group(1)
    current, legacy = readme_lists(readme)
    opened = open_pci_ids(src)
    rows: List[Dict[str, Any]] = [
        {"list": "open", "branch": rev.split(".")[0], "description": "GPUs the open kernel modules drive "
         "(Turing and later)", "devices": dict(sorted(opened.items())),
         "source": {"url": "%s/blob/%s/README.md" % (OPEN_REPO, src.commit), "checked": checked, "verified": True,
                    "note": "The 'Compatible GPUs' table of the open kernel modules' README at %s." % rev}},
        {"list": "current", "branch": version.split(".")[0], "description": "GPUs the proprietary driver %s "
         "supports" % version, "devices": dict(sorted(current.items())),
         "source": {"url": NVIDIA_RELEASE % version + "README/supportedchips.html", "checked": checked,
                    "verified": True,
                    "note": "Appendix A, 'A1. Current NVIDIA GPUs', of NVIDIA's README of driver %s (its README.txt "
                            "as Debian's nvidia-kernel-dkms package carries it)." % version}},
    ]
    for branch, devices in sorted(legacy.items(), key=lambda kv: [int(p) for p in kv[0].split(".")],
                                  reverse=True):
        rows.append({"list": "legacy", "branch": branch, "description": "GPUs supported only by the %s.xx "
                     "legacy driver branch (and older)" % branch, "devices": dict(sorted(devices.items())),
                     "source": {"url": NVIDIA_RELEASE % version + "README/supportedchips.html",
                                "checked": checked, "verified": True,
                                "note": "Appendix A of NVIDIA's README of driver %s: 'The %s.xx driver "
                                        "supports the following set of GPUs'." % (version, branch)}})
    return {"area": "gpu_pci_ids",
            "description": "NVIDIA GPUs by PCI device ID (vendor 10de), in NVIDIA's own lists: 'open' the GPUs "
                           "the open kernel modules drive (Turing and later), 'current' those the proprietary "
                           "driver of that branch supports, 'legacy' per legacy branch those only it (or an "
                           "older legacy branch) drives. Generated by scripts/build_kernel_catalog.py.",
            "rows": rows}


# -- main --------------------------------------------------------------------------------------------------

def build(args: argparse.Namespace) -> Dict[str, Dict[str, Any]]:
    checked = args.checked or datetime.date.today().isoformat()
    src = Source(args.open_gpu, args.rev)
    rows = (open_rows(src, args.rev, checked) + proprietary_rows(args.proprietary, checked)
            + linux_rows(args.linux, checked) + reported_rows(checked))
    rows.append(xid_line_row(src, args.rev, checked))
    rows += xid_rows(src, args.rev, checked)
    messages = {"area": "kernel_messages",
                "description": "What the NVIDIA kernel modules (and the kernel about them) print, and what it "
                               "means: message rows (a regular expression made from the source's format "
                               "string, a sample line, the cause, the finding code and severity, the fix), the "
                               "Xid line's pattern and one row per Xid code (nverror.h). Generated by "
                               "scripts/build_kernel_catalog.py from the sources named in each row.",
                "rows": rows}
    return {"kernel_messages": messages, "gpu_pci_ids": pci_doc(src, args.rev, args.proprietary, checked)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--open-gpu", required=True, help="NVIDIA/open-gpu-kernel-modules clone or git directory")
    parser.add_argument("--rev", default="595.45.04", help="its tag or commit to read")
    parser.add_argument("--proprietary", action="append", required=True,
                        help="an unpacked proprietary kernel-module package (oldest first; repeatable)")
    parser.add_argument("--linux", action="append", required=True, help="an unpacked Linux source tree")
    parser.add_argument("--checked", help="the date written as 'checked' (default: today)")
    parser.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = parser.parse_args(argv)
    docs = build(args)
    differ = 0
    for area, doc in docs.items():
        path = os.path.join(DATA, area + ".json")
        text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
        if args.check:
            with open(path, encoding="utf-8") as fh:
                old = json.load(fh)
            for d in (old, doc):  # the dates differ from run to run
                for r in d["rows"]:
                    r["source"].pop("checked", None)
            if old != doc:
                print("%s differs from what the sources give" % path)
                differ = 1
            continue
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        print("wrote %s (%d rows)" % (path, len(doc["rows"])))
    return differ


if __name__ == "__main__":
    sys.exit(main())

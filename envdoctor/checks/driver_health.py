"""Driver health: is the NVIDIA driver installed, loaded, whole, and the only driver of the GPU?

One check, ``driver-health``, reads the driver probe's facts (and a few of the
os, gpu and cuda probes') and says what stops CUDA from starting:

* the kernel module and the user-space library are different versions
  ("Failed to initialize NVML: Driver/library version mismatch");
* no driver although an NVIDIA GPU is on the PCI bus, or a kernel module
  without its user-space half;
* nouveau / nova holding the GPU;
* no module built for the running kernel (DKMS built for another one);
* Secure Boot refusing an unsigned module;
* ``/dev/nvidia*`` nodes missing while the module is loaded;
* NVSwitch systems without a running fabric manager;
* forward-compatibility ``libcuda`` on the loader path of a GPU that does not
  support it;
* WSL2 specifics (a Linux driver installed inside WSL; the Windows driver's
  libraries not reachable);
* NVML errors in general (no permission, GPU lost, module not loaded, hung).

The findings are ordered so one root cause gives one finding: a module that
is not loaded *because* it was never built for this kernel, or because
Secure Boot rejects it, or because nouveau holds the GPU, is reported as that
cause, not also as "module not loaded".

Rules here are vendor statements, not version tables: each finding's
``source`` names the NVIDIA (or kernel/distribution) document it comes from,
in :data:`RULES`.  The only matrix rows used are ``gpus.json`` products (for
the forward-compatibility GPU segment); those rows are unverified today, so
that finding is a warning at most.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Set

from packaging.version import InvalidVersion, Version

from .. import versions
from ..facts import Facts
from ..findings import AnyOf, Finding, Fix
from ..host.nvml_worker import MAX_GPUS
from ..matrix import unverified
from ..matrix.hardware import gpu_product
from . import CheckContext, CodeDoc, check, group, quietly
from .suggest import INSTALL_LINE_READS, install_line, rpm_tool

CHECKED = "2026-11-22"
#: What the driver's questions look at besides driver.installed (each later one asks the earlier ones, so they
#: share one list): the driver's facts but not its library links (the dlopen probe's, a check of their own).
READS = ("driver.*", "driver.*.*", "kernel.release", "kernel.headers", "cuda.*", "env.*", "libraries.libcuda",
         "os.*") + INSTALL_LINE_READS
#: The report layers each question's findings are shown under.
_LAYERS = {"library-mismatch": ("driver",), "userspace-missing": ("driver",), "wsl": ("driver",),
           "in-kernel-conflict": ("driver",), "module-for-kernel": ("driver", "os"), "secure-boot": ("driver",),
           "device-nodes": ("driver",), "fabric-manager": ("driver",), "forward-compat": ("cuda",)}

#: The documents each rule comes from (checked on CHECKED).
RULES: Dict[str, Dict[str, str]] = {
    "nvml": {"url": "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html",
             "rule": "nvmlReturn_t: what each NVML initialisation error means"},
    "install": {"url": "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
                "rule": "CUDA Installation Guide for Linux: driver, kernel headers, nouveau, device nodes"},
    "nouveau": {"url": "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html#disabling-nouveau",
                "rule": "The nouveau driver must be disabled (blacklisted, initramfs regenerated) before the "
                        "NVIDIA driver can own the GPU"},
    "headers": {"url": "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"
                       "#verify-the-system-has-the-correct-kernel-headers-and-development-packages-installed",
                "rule": "The kernel module is built (DKMS) against the headers of the running kernel"},
    "secure_boot": {"url": "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/index.html",
                    "rule": "With UEFI Secure Boot on, the kernel loads only modules signed by an enrolled key "
                            "(Machine Owner Key)"},
    "device_nodes": {"url": "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"
                            "#device-node-verification",
                     "rule": "CUDA needs /dev/nvidiactl and /dev/nvidiaN; nvidia-modprobe or udev create them"},
    "uvm_boot": {"url": "https://github.com/NVIDIA/enroot/issues/106",
                 "rule": "nvidia_uvm is not loaded at boot: CUDA loads it through the setuid nvidia-modprobe, "
                         "nvidia-container-cli through --load-kmods; unprivileged runtimes (enroot) cannot, so it "
                         "must be loaded at boot (NVIDIA's enroot maintainers)"},
    "fabric_manager": {"url": "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html",
                       "rule": "NVSwitch systems need a running Fabric Manager of exactly the driver's version; "
                               "without it CUDA initialisation fails with cudaErrorSystemNotReady (802)"},
    "forward_compat": {"url": "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
                       "rule": "Forward Compatibility is applicable only to NVIDIA Data Center GPUs, select NGC "
                               "Server Ready SKUs of RTX cards and Jetson boards; elsewhere CUDA fails with "
                               "cudaErrorCompatNotSupportedOnDevice (804)"},
    "forward_compat_older": {
        "url": "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html",
        "rule": "The CUDA forward-compatibility package (cuda-compat-<major>-<minor>, built from the driver of that "
                "CUDA release) lets applications built with a newer CUDA run on an older driver; a compat libcuda "
                "older than the running driver mismatches it: cudaErrorSystemDriverMismatch (803), 'a mismatch "
                "between the versions of the display driver and the CUDA driver' (CUDA runtime API error codes)",
        "checked": "2026-11-27"},
    "wsl": {"url": "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
            "rule": "On WSL 2 the Windows NVIDIA driver provides libcuda in /usr/lib/wsl/lib; no Linux NVIDIA "
                    "driver may be installed inside WSL 2"},
    "xid": {"url": "https://docs.nvidia.com/deploy/xid-errors/index.html",
            "rule": "Xid 79: GPU has fallen off the bus; reset or reboot, then look at power, thermals, PCIe"},
    "no_gpu": {"url": "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"
                      "#verify-you-have-a-cuda-capable-gpu",
               "rule": "CUDA needs an NVIDIA GPU; without one, CPU builds of the frameworks are the right choice"},
}

#: The modules to unload, users first (nvidia_uvm, nvidia_drm and nvidia_modeset depend on nvidia).
RELOAD = "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"

NOUVEAU_CONF = "/etc/modprobe.d/blacklist-nouveau.conf"
NOUVEAU_TEXT = "blacklist nouveau\noptions nouveau modeset=0\n"
NOVA_CONF = "/etc/modprobe.d/blacklist-nova.conf"
NOVA_TEXT = "blacklist nova_drm\nblacklist nova_core\n"

WSL_LIB = "/usr/lib/wsl/lib"

_GPU_NODE = re.compile(r"^nvidia\d+$")


def _source(rule: str, **extra: Any) -> Dict[str, Any]:
    r = RULES[rule]
    out: Dict[str, Any] = {"rule": r["rule"], "url": r["url"], "checked": r.get("checked", CHECKED)}
    out.update(extra)
    return out


def _evidence(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    out = []
    for k in keys:
        f = facts.get(k)
        if f is not None:
            out.append(f.to_dict())
    return out


def _family(facts: Facts) -> str:
    fam = facts.value("os.family")
    return fam if isinstance(fam, str) else "other"


_branch = versions.branch


def _initramfs(family: str) -> List[str]:
    if family == "debian":
        return ["sudo update-initramfs -u"]
    if family in ("rhel", "fedora", "suse"):
        return ["sudo dracut --force"]
    return ["sudo update-initramfs -u   # Debian/Ubuntu", "sudo dracut --force   # RHEL/Fedora/SUSE"]


def _headers(family: str, tool: str = "dnf") -> List[str]:
    if family == "debian":
        return ['sudo apt-get install -y "linux-headers-$(uname -r)"']
    if family in ("rhel", "fedora"):
        return ['sudo %s install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)"' % tool]
    if family == "suse":
        return ["sudo zypper install -y kernel-default-devel"]
    return ['sudo apt-get install -y "linux-headers-$(uname -r)"   # Debian/Ubuntu',
            'sudo dnf install -y "kernel-devel-$(uname -r)"   # RHEL/Fedora']


def _driver_label(facts: Facts) -> str:
    v = (facts.value("driver.version") or facts.value("driver.kernel_module.version")
         or facts.value("driver.userspace.version"))
    return "driver %s" % v if v else "the NVIDIA driver"


def _gpu_names(facts: Facts) -> List[str]:
    names = []
    for f in facts.with_prefix("gpu."):
        if f.key.endswith(".name") and f.known and isinstance(f.value, str):
            names.append(f.value)
    return names


def _pci_gpus(facts: Facts) -> List[str]:
    gpus = facts.value("driver.nvidia_pci_gpus")
    if isinstance(gpus, list) and gpus:
        return [str(g) for g in gpus]
    pci = facts.value("gpu.pci_devices")
    out = []
    if isinstance(pci, list):
        for d in pci:
            if isinstance(d, dict) and d.get("bus_id"):
                out.append(str(d["bus_id"]))
            elif isinstance(d, str):
                out.append(d)
    return out


def _nvml_status(facts: Facts) -> Optional[str]:
    f = facts.get("driver.nvml.status")
    return f.value if f is not None and isinstance(f.value, str) else None


def _sentence(text: str) -> str:
    """``text`` as the start of a sentence, without a closing full stop (the caller adds one)."""
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:]


def _nvml_reason(facts: Facts) -> str:
    f = facts.get("driver.nvml.status")
    return f.reason if f is not None else ""


# -- the situations -----------------------------------------------------------------

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


def _mismatch(facts: Facts) -> List[Finding]:
    status = _nvml_status(facts)
    kver = facts.text("driver.kernel_module.version")
    uver = facts.text("driver.userspace.version")
    if facts.value("os.wsl") == "WSL2":
        return []
    differ = False
    if kver and uver:
        try:
            differ = Version(kver) != Version(uver)
        except InvalidVersion:
            differ = False
    if status != "NVML_ERROR_LIB_RM_VERSION_MISMATCH" and not (differ and status not in ("ok", None)):
        return []
    k = kver or "version unreadable"
    u = uver or "version unreadable"
    if kver and uver:
        halves = "Loaded kernel module is driver %s, but the user-space library is driver %s" % (kver, uver)
    elif kver or uver:
        halves = ("Loaded kernel module is driver %s, but the user-space library is another release" % kver if kver
                  else "User-space library is driver %s, but the loaded kernel module is another release" % uver)
    else:  # a version left unread is said once, not as "driver unknown ... driver unknown"
        halves = "Loaded kernel module and user-space library come from different driver releases"
    return [Finding(
        code="driver.library_mismatch", severity="error", components=["driver", "kernel"],
        title=halves + " (Failed to initialize NVML: Driver/library version mismatch)",
        detail="The NVIDIA kernel module in memory (%s, from /proc/driver/nvidia/version) and the user-space "
               "libraries on disk (libnvidia-ml/libcuda %s) come from different driver releases. This happens "
               "when the driver packages are upgraded (often by unattended upgrades) and the machine is not "
               "rebooted: the old module stays loaded. NVML, nvidia-smi and CUDA all refuse to start until both "
               "halves are the same version." % (k, u),
        evidence=_evidence(facts, "driver.nvml.status", "driver.kernel_module.version", "driver.userspace.version",
                           "driver.userspace.libraries"),
        source=_source("nvml"),
        fix=Fix(text="Reboot, which loads the new module. Without a reboot: stop everything using the GPU "
                     "(display manager, nvidia-persistenced, containers, jobs), then unload and reload the "
                     "modules.",
                commands=[AnyOf("sudo reboot", RELOAD)]) if not _on_disk_differs(facts, uver) else
        Fix(text="A reboot would load the same old module again: the module installed for this kernel is %s. "
                 "Finish or repair the driver upgrade so the %s kernel module is built and installed, then "
                 "reboot." % (_on_disk(facts), u), commands=_module_repair(facts)),
    )] + _on_disk_mismatch(facts, uver)


def _on_disk(facts: Facts) -> Optional[str]:
    """The nvidia module version installed for the running kernel: modinfo, else DKMS's installed build."""
    text = facts.text("driver.module_on_disk.version")
    if text:
        return text
    release = facts.text("kernel.release")
    for e in facts.items("driver.dkms.status"):
        if isinstance(e, dict) and e.get("state") == "installed" and e.get("kernel") == release \
                and str(e.get("module", "")).startswith("nvidia"):
            return str(e.get("version"))
    return None


def _on_disk_differs(facts: Facts, uver: Optional[str]) -> bool:
    disk = _v(_on_disk(facts))
    user = _v(uver)
    return disk is not None and user is not None and disk != user


def _module_repair(facts: Facts) -> List[str]:
    family = _family(facts)
    if family == "debian":
        return ["sudo apt-get install --fix-broken", "sudo dkms status", "sudo reboot"]
    if family in ("rhel", "fedora"):
        return ["sudo %s distro-sync 'nvidia*' 'kmod-nvidia*'" % rpm_tool(facts), "sudo dkms status", "sudo reboot"]
    return ["sudo dkms status", "sudo dkms autoinstall", "sudo reboot"]


def _on_disk_mismatch(facts: Facts, uver: Optional[str]) -> List[Finding]:
    if not _on_disk_differs(facts, uver):
        return []
    disk = _on_disk(facts)
    return [Finding(
        code="driver.module_on_disk_mismatch", severity="error", components=["driver", "kernel"],
        title="The nvidia module installed for kernel %s is %s, but the user-space driver is %s: a reboot will "
              "not fix the mismatch" % (facts.text("kernel.release") or "(running)", disk, uver),
        detail="The kernel module on disk (what the next boot loads) was not upgraded with the user-space "
               "libraries, typically a half-finished package upgrade or a DKMS build that failed for the new "
               "version. Until a %s module is built and installed, NVML and CUDA keep failing with 'Driver/library "
               "version mismatch'." % uver,
        evidence=_evidence(facts, "driver.module_on_disk.version", "driver.dkms.status", "driver.userspace.version",
                           "kernel.release"),
        source=_source("nvml"),
        fix=Fix(text="Repair the driver packages so the %s kernel module is built for this kernel, then reboot."
                     % uver, commands=_module_repair(facts)),
    )]


def _userspace_missing(facts: Facts) -> List[Finding]:
    if facts.value("os.wsl") == "WSL2":
        return []
    if facts.value("driver.kernel_module.loaded") is not True:
        return []
    if _nvml_status(facts) != "NVML_ERROR_LIBRARY_NOT_FOUND":
        return []
    kver = facts.value("driver.kernel_module.version")
    flavor = facts.value("driver.kernel_module.flavor")
    branch = _branch(kver)
    family = _family(facts)
    if family == "debian" and branch:
        cmds = ["sudo apt-get install -y libnvidia-compute-%s nvidia-utils-%s" % (branch, branch)]
    elif family in ("rhel", "fedora"):
        cmds = ["sudo %s install -y nvidia-driver-cuda nvidia-driver-cuda-libs" % rpm_tool(facts)]
    else:
        cmds = []
    return [Finding(
        code="driver.userspace_missing", severity="error", components=["driver"],
        title="The %skernel module %s is loaded, but no user-space driver library (libnvidia-ml, libcuda) "
              "is installed" % ("%s " % flavor if flavor in ("open", "proprietary") else "",
                                kver or "(version unknown)"),
        detail="The kernel half of the driver is running, but libnvidia-ml.so.1 and libcuda.so.1 (the user-space "
               "half, which CUDA applications and nvidia-smi load) are missing. Install the user-space packages "
               "of the same driver version %s." % (kver or ""),
        evidence=_evidence(facts, "driver.kernel_module.version", "driver.kernel_module.flavor",
                           "driver.nvml.status", "driver.userspace.version"),
        source=_source("nvml"),
        fix=Fix(text="Install the user-space libraries of driver %s (the same version as the loaded module)."
                     % (kver or "?"), commands=cmds,
                install=install_line(facts, "driver", branch)),
    )]


def _in_kernel_conflict(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    if facts.value("driver.installed") is not True:
        return out  # reported inside driver.not_installed
    family = _family(facts)
    nvidia_loaded = facts.value("driver.kernel_module.loaded") is True
    for name, conf, text, modules in (
        ("nouveau", NOUVEAU_CONF, NOUVEAU_TEXT, "nouveau"),
        ("nova", NOVA_CONF, NOVA_TEXT, "nova_drm nova_core"),
    ):
        loaded = facts.value("driver.%s.loaded" % name) is True
        bound = facts.strings("driver.%s.bound" % name)
        if not loaded and not bound:
            continue
        severe = bool(bound) or not nvidia_loaded
        blacklisted = name == "nouveau" and facts.value("driver.modprobe_blacklist_nouveau") is True
        if bound:
            what = "%s drives the NVIDIA GPU %s" % (name, ", ".join(bound))
        else:
            what = "the %s kernel module is loaded" % name
        detail = ("%s, so the NVIDIA driver cannot own it%s. The in-kernel %s driver and NVIDIA's driver "
                  "cannot share a GPU." % (what[0].upper() + what[1:],
                                           "" if nvidia_loaded else " (the nvidia module is not loaded)", name))
        if blacklisted:
            # the blacklist in /etc/modprobe.d only reaches early boot once the initramfs is rebuilt: name the
            # distribution's command, the step install guides leave out
            detail += (" A blacklist file exists already, but the initramfs still loads %s at boot: regenerate "
                       "the initramfs (%s) and reboot." % (
                           name, " or ".join("`%s`" % c.split("   #")[0].strip() for c in _initramfs(family))))
        cmds = []
        if not blacklisted:
            cmds.append("printf '%s' | sudo tee %s" % (text.replace("\n", "\\n"), conf))
        cmds += _initramfs(family) + ["sudo reboot"]
        out.append(Finding(
            code="driver.%s_conflict" % name, severity="error" if severe else "warning",
            components=["driver", "kernel"],
            title="%s is active next to %s (%s)" % (
                "nouveau" if name == "nouveau" else "nova (nova-core)", _driver_label(facts),
                "GPU %s" % ", ".join(bound) if bound else "module loaded"),
            detail=detail,
            evidence=_evidence(facts, "driver.%s.loaded" % name, "driver.%s.bound" % name,
                               "driver.modprobe_blacklist_nouveau", "driver.kernel_module.loaded", "os.family"),
            source=_source("nouveau"),
            fix=Fix(text="Blacklist %s (%s with: %s), rebuild the initramfs so it is not loaded at boot, and "
                         "reboot." % (name, conf, text.strip().replace("\n", "; ")) if not blacklisted else
                         "Rebuild the initramfs so the blacklist applies at boot, and reboot (modules: %s)." % modules,
                    commands=cmds),
        ))
    return out


def _no_module_for_kernel(facts: Facts) -> List[Finding]:
    if facts.value("driver.installed") is not True or facts.value("driver.kernel_module.loaded") is True:
        return []
    fact = facts.get("driver.module_for_running_kernel")
    if fact is None or not fact.known or fact.value is not False:
        return []
    release = facts.value("kernel.release") or "the running kernel"
    dkms = facts.items("driver.dkms.status")
    others = sorted({e.get("kernel", "") for e in dkms if isinstance(e, dict) and
                     str(e.get("state", "")).startswith("installed")} - {release})
    versions = sorted({e.get("version", "") for e in dkms if isinstance(e, dict) and e.get("version")})
    family = _family(facts)
    title = "No nvidia kernel module is built for the running kernel %s" % release
    if others:
        title += " (DKMS built nvidia %s only for %s)" % (", ".join(versions) or "?", ", ".join(others))
    cmds = _headers(family, rpm_tool(facts)) + ["sudo dkms autoinstall", "sudo modprobe nvidia"]
    headers = facts.mapping("kernel.headers")
    missing_headers = [] if headers.get("present") is not False else [Finding(
        code="driver.kernel_headers_missing", severity="error", components=["kernel", "driver"],
        title="The headers of the running kernel %s are not installed, so DKMS cannot build the nvidia module for "
              "it" % release,
        detail="DKMS compiles the nvidia module against /lib/modules/%s/build; without the kernel's headers "
               "package the build is skipped after a kernel update, and the new kernel boots without the module."
               % release,
        evidence=_evidence(facts, "kernel.headers", "kernel.release", "driver.dkms.status"),
        source=_source("headers"),
        fix=Fix(text="Install the headers of kernel %s; DKMS then builds the module." % release, commands=cmds))]
    return missing_headers + [Finding(
        code="driver.no_module_for_kernel", severity="error", components=["driver", "kernel"],
        title=title,
        detail="The machine booted kernel %s, but /lib/modules/%s holds no nvidia.ko and DKMS has not built one "
               "for it (usually a kernel update whose headers were not installed, so DKMS could not rebuild the "
               "module). Until it is built, the module cannot load and CUDA sees no GPU." % (release, release),
        evidence=_evidence(facts, "driver.module_for_running_kernel", "driver.dkms.status", "kernel.release",
                           "driver.kernel_module.loaded"),
        source=_source("headers"),
        fix=Fix(text="Install the headers of the running kernel and let DKMS build the module for it (or boot "
                     "the kernel it was built for).", commands=cmds),
    )]


def _secure_boot(facts: Facts) -> List[Finding]:
    if facts.value("driver.secure_boot") is not True:
        return []
    signed = facts.get("driver.module_signed")
    if signed is not None and signed.known and signed.value is True:
        return _key_not_enrolled(facts)
    if signed is None or not signed.known or signed.value is not False:
        return []
    loaded = facts.value("driver.kernel_module.loaded") is True
    return [Finding(
        code="driver.module_unsigned_secure_boot", severity="warning" if loaded else "error",
        components=["driver", "kernel"],
        title="Secure Boot is on, but the nvidia module of %s is not signed" % _driver_label(facts),
        detail=("With UEFI Secure Boot on, the kernel refuses modules not signed by an enrolled key "
                "(\"Key was rejected by service\" from modprobe)." +
                (" The module is loaded now (signature enforcement is off or it was loaded another way), but "
                 "it will be refused when enforcement applies." if loaded else
                 " That is why the module is not loaded.")),
        evidence=_evidence(facts, "driver.secure_boot", "driver.module_signed", "driver.kernel_module.loaded"),
        source=_source("secure_boot"),
        fix=Fix(text="Sign the module with a Machine Owner Key and enrol that key: mokutil asks for a one-time "
                     "password; at the next boot choose \"Enroll MOK\" in the blue MokManager screen and enter it. "
                     "Then rebuild (DKMS signs with the enrolled key). Or turn Secure Boot off in the firmware.",
                commands=["sudo mokutil --import /var/lib/dkms/mok.pub", "sudo reboot",
                          "sudo dkms autoinstall", "sudo modprobe nvidia"]),
    )]


def _key_not_enrolled(facts: Facts) -> List[Finding]:
    """Secure Boot on, the module signed, built for this kernel, and still not loaded: its signing key is not
    enrolled (certain when ``mokutil --test-key`` says so for the key DKMS signs with)."""
    if facts.value("driver.kernel_module.loaded") is not False or facts.value("driver.module_for_running_kernel") \
            is not True:
        return []
    keys = [k for k in facts.items("driver.mok_keys") if isinstance(k, dict)]
    if any(k.get("enrolled") is True for k in keys) and not any(k.get("enrolled") is False for k in keys):
        return []  # the key is enrolled: something else keeps the module out
    missing = [k for k in keys if k.get("enrolled") is False]
    key = str(missing[0]["path"]) if missing else "/var/lib/shim-signed/mok/MOK.der"
    signer = facts.value("driver.module_signer") or "a Machine Owner Key"
    ubuntu_like = _family(facts) == "debian"
    enrol = (["sudo update-secureboot-policy --enroll-key"] if ubuntu_like and key.startswith("/var/lib/shim-signed")
             else ["sudo mokutil --import %s" % key])
    return [Finding(
        code="driver.module_key_not_enrolled", severity="error" if missing else "warning",
        components=["driver", "kernel"],
        title="Secure Boot is on and the nvidia module of %s is signed (by %s), but %s: the kernel refuses it" % (
            _driver_label(facts), signer, "the signing key %s is not enrolled" % key if missing else
            "it is not loaded, so its signing key is most likely not enrolled"),
        detail="Under Secure Boot the kernel loads only modules signed by a key in the firmware's or shim's "
               "database; modprobe says \"Key was rejected by service\". DKMS signed the module with the machine's "
               "own key (MOK), which has to be enrolled once, at the next boot, in the blue MokManager screen.",
        evidence=_evidence(facts, "driver.secure_boot", "driver.module_signed", "driver.module_signer",
                           "driver.mok_keys", "driver.kernel_module.loaded", "driver.module_for_running_kernel"),
        source=_source("secure_boot"),
        fix=Fix(text="Enrol the signing key: the command asks for a one-time password; reboot, choose \"Enroll MOK\" "
                     "in MokManager, confirm and enter that password; the module then loads. (Or turn Secure Boot "
                     "off in the firmware.)",
                commands=enrol + ["sudo reboot", "mokutil --test-key %s" % key, "sudo modprobe nvidia"]),
    )]


def _device_nodes(facts: Facts) -> List[Finding]:
    if facts.value("driver.kernel_module.loaded") is not True:
        return []
    if not isinstance(facts.value("driver.device_nodes"), list):
        return []
    nodes = facts.strings("driver.device_nodes")
    count = facts.count("gpu.count", MAX_GPUS)
    gpu_nodes = [n for n in nodes if _GPU_NODE.match(n)]
    missing = []
    if "nvidiactl" not in nodes:
        missing.append("/dev/nvidiactl")
    if count is not None and count > len(gpu_nodes):
        have = {int(n[len("nvidia"):]) for n in gpu_nodes}
        missing += ["/dev/nvidia%d" % i for i in range(count) if i not in have]
    container = facts.value("os.container")
    if not missing:
        return _uvm_node(facts, nodes, bool(container))
    if container:
        fix = Fix(text="Inside a container the device nodes come from the container runtime: start the container "
                       "with the GPUs passed in (NVIDIA Container Toolkit).",
                  commands=["docker run --gpus all ...", "podman run --device nvidia.com/gpu=all ..."])
    else:
        fix = Fix(text="Create the nodes (nvidia-modprobe ships with the driver) and keep them: run the persistence "
                       "daemon, or check the udev rules of the driver package.",
                  commands=["sudo nvidia-modprobe -c 0 -u", "sudo systemctl enable --now nvidia-persistenced",
                            "ls -l /dev/nvidia*"])
    return [Finding(
        code="driver.device_nodes_missing", severity="error", components=["driver"] + (
            ["container-toolkit"] if container else []),
        title="The nvidia module of %s is loaded, but %s %s missing" % (
            _driver_label(facts), ", ".join(missing), "is" if len(missing) == 1 else "are"),
        detail="CUDA and NVML open /dev/nvidiactl and one /dev/nvidiaN per GPU. The kernel module does not create "
               "them itself: nvidia-modprobe (setuid, called by libcuda), nvidia-persistenced or udev rules do%s."
               % (" — or, in a container, the container runtime" if container else ""),
        evidence=_evidence(facts, "driver.device_nodes", "driver.kernel_module.loaded", "gpu.count", "os.container"),
        source=_source("device_nodes"),
        fix=fix,
    )]


def _uvm_node(facts: Facts, nodes: List[str], container: bool) -> List[Finding]:
    """/dev/nvidia-uvm: CUDA's unified-memory node (nvidia_uvm module). Without it cuInit fails (999/"unknown
    error"). On a host libcuda loads the module through the setuid nvidia-modprobe on first use (absent until
    then: not judged), unless the host runs GPU containers without root (enroot, Apptainer), which cannot;
    inside a container nothing can create it."""
    if "nvidia-uvm" in nodes:
        return []
    if not container:
        return _uvm_node_host(facts, nodes)
    return [Finding(
        code="driver.device_nodes_missing", severity="error", components=["driver"],
        title="The nvidia module of %s is loaded, but /dev/nvidia-uvm is missing (nvidia_uvm is not loaded)" % (
            _driver_label(facts)),
        detail="CUDA opens /dev/nvidia-uvm (the nvidia_uvm module) at initialisation; without it every CUDA program "
               "fails with 'unknown error' (999). Inside a container the node comes from the host (the container "
               "runtime passes it in when it exists there): load nvidia_uvm on the host, at boot, and restart the "
               "container.",
        evidence=_evidence(facts, "driver.device_nodes", "driver.kernel_module.loaded", "os.container"),
        source=_source("device_nodes"),
        fix=Fix(text="On the host: load nvidia_uvm and create its node now, and at every boot.",
                commands=["sudo nvidia-modprobe -u -c 0",
                          "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf", "ls -l /dev/nvidia-uvm"]),
    )]


def _uvm_node_host(facts: Facts, nodes: List[str]) -> List[Finding]:
    """On a host: nothing loads nvidia_uvm at boot, and the unprivileged container runtimes installed here
    cannot load it on demand, so their GPU jobs fail until something privileged has run CUDA once."""
    runtimes = facts.strings("driver.unprivileged_runtimes")
    if not runtimes:
        return []  # CUDA itself loads it on first use (nvidia-modprobe is setuid root)
    missing = ["/dev/nvidia-uvm"] + (["/dev/nvidia-uvm-tools"] if "nvidia-uvm-tools" not in nodes else [])
    names = " and ".join(r.capitalize() if r != "enroot" else r for r in runtimes)
    return [Finding(
        code="driver.device_nodes_missing", severity="warning", components=["driver", "kernel"],
        title="The nvidia module of %s is loaded, but %s %s missing (nvidia_uvm is not loaded): GPU containers "
              "started by %s fail" % (_driver_label(facts), " and ".join(missing),
                                      "is" if len(missing) == 1 else "are", names),
        detail="CUDA needs /dev/nvidia-uvm (the nvidia_uvm module). Nothing loads that module at boot: a CUDA "
               "program run on the host loads it through the setuid nvidia-modprobe, Docker's NVIDIA toolkit "
               "through nvidia-container-cli --load-kmods, but %s start%s containers without root and cannot, so "
               "after every reboot their GPU jobs fail (cuInit: 'unknown error') until something privileged has "
               "used CUDA once." % (names, "s" if len(runtimes) == 1 else ""),
        evidence=_evidence(facts, "driver.device_nodes", "driver.kernel_module.loaded",
                           "driver.unprivileged_runtimes"),
        source=_source("uvm_boot"),
        fix=Fix(text="Load nvidia_uvm and create its nodes now and at every boot (a systemd unit or "
                     "modules-load.d entry), before jobs start; `nvidia-modprobe -m` does the same for "
                     "/dev/nvidia-modeset.",
                commands=["sudo nvidia-modprobe -u -c=0", "sudo nvidia-modprobe -m",
                          "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf",
                          "ls -l /dev/nvidia-uvm /dev/nvidia-uvm-tools"]),
    )]


def _fabric_manager(facts: Facts) -> List[Finding]:
    if facts.value("driver.nvswitch.present") is not True:
        return []
    state_fact = facts.get("driver.fabric_manager.state")
    if state_fact is None or not state_fact.known or state_fact.value == "active":
        return []
    state = state_fact.value
    version = facts.value("driver.version") or facts.value("driver.kernel_module.version")
    branch = _branch(version)
    family = _family(facts)
    if family == "debian":
        pkg = "sudo apt-get install -y nvidia-fabricmanager-%s=%s-*" % (branch or "<branch>", version or "<version>")
    elif family in ("rhel", "fedora"):
        pkg = "sudo %s install -y nvidia-fabric-manager-%s" % (rpm_tool(facts), version or "<version>")
    else:
        pkg = "# install nvidia-fabricmanager of exactly driver version %s" % (version or "<version>")
    fm_version = facts.text("driver.fabric_manager.version")
    other = bool(fm_version and version and fm_version != str(version))
    return [Finding(
        code="driver.fabric_manager_not_running", severity="error", components=["fabric-manager", "driver"],
        title=("NVSwitch system with %s, but the fabric manager service is %s: the installed nvidia-fabricmanager "
               "is %s, not the driver's %s" % (_driver_label(facts), state, fm_version, version)) if other else
              "NVSwitch system with %s, but the fabric manager service is %s (needs nvidia-fabricmanager %s)" % (
                  _driver_label(facts), state, version or "of the driver's exact version"),
        detail="This machine has NVSwitches. Until NVIDIA Fabric Manager has configured the NVLink fabric, CUDA "
               "initialisation fails with cudaErrorSystemNotReady (error 802, \"system not yet initialized\"). "
               "The fabric manager package must be exactly the driver's version (%s); after a driver upgrade an "
               "old fabric manager refuses to start (see `journalctl -u nvidia-fabricmanager`)." % (version or "?"),
        evidence=_evidence(facts, "driver.nvswitch.present", "driver.fabric_manager.state", "driver.version",
                           "driver.fabric_manager.version"),
        source=_source("fabric_manager"),
        fix=Fix(text="Install the fabric manager of exactly driver version %s (if missing or of another version) "
                     "and start it at boot." % (version or "?"),
                commands=[pkg, "sudo systemctl enable --now nvidia-fabricmanager",
                          "journalctl -u nvidia-fabricmanager -b --no-pager | tail -n 20"]),
    )]


def _compat_dirs(facts: Facts) -> Set[str]:
    """Directories holding a cuda-compat forward-compatibility libcuda, under every name the loader reaches them
    by: the toolkit's own compat/ directory and the LD_LIBRARY_PATH entries and loader choices that resolve to it
    (/usr/local/cuda/compat is /usr/local/cuda-12.4/compat)."""
    real = {posixpath.dirname(str(c.get("path") or "")) for c in facts.items("cuda.forward_compat")
            if isinstance(c, dict) and c.get("path")}
    out = set(real)
    for e in facts.items("env.ld_library_path_resolved"):
        if isinstance(e, dict) and str(e.get("resolved") or "").rstrip("/") in real and e.get("entry"):
            out.add(str(e["entry"]).rstrip("/"))
    for res in facts.mapping("libraries.libcuda").values():
        for r in [res] + (list(res.get("others") or []) if isinstance(res, dict) else []):
            if isinstance(r, dict) and r.get("path") and posixpath.dirname(str(r.get("resolved") or "")) in real:
                out.add(posixpath.dirname(str(r["path"])))
    return out


def _compat_libcuda_in_use(facts: Facts) -> List[Dict[str, Any]]:
    """Forward-compatibility libcuda the loader would pick: a cuda-compat directory on LD_LIBRARY_PATH, or a
    libcuda newer than the running driver copied into a loader directory (container runtimes inject the
    image's compat libraries there).  Each: {path, driver_version, via}."""
    in_use: List[Dict[str, Any]] = []
    # compared after resolving links: LD_LIBRARY_PATH=/usr/local/cuda/compat reaches /usr/local/cuda-12.9/compat
    entries = {p.rstrip("/"): p.rstrip("/") for p in facts.strings("cuda.ld_library_path")}
    for e in facts.items("env.ld_library_path_resolved"):
        if isinstance(e, dict) and e.get("resolved") and e.get("entry"):
            entries.setdefault(str(e["resolved"]).rstrip("/"), str(e["entry"]).rstrip("/"))
    for c in facts.items("cuda.forward_compat"):
        d = str(c.get("path") or "").rsplit("/", 1)[0].rstrip("/") if isinstance(c, dict) else ""
        if d and d in entries:
            in_use.append(dict(c, via="LD_LIBRARY_PATH", entry=entries[d]))
    # the loader cache (an /etc/ld.so.conf.d entry for the compat directory, as cuda-compat packages add) can make
    # the compat libcuda the one programs load even without LD_LIBRARY_PATH
    chosen = facts.mapping("libraries.libcuda").get("libcuda.so.1")
    if isinstance(chosen, dict) and chosen.get("path"):
        for c in facts.items("cuda.forward_compat"):
            if (isinstance(c, dict) and c.get("path") and chosen.get("resolved") == c["path"]
                    and not any(x["path"] == c["path"] for x in in_use)):
                in_use.append(dict(c, via=str(chosen.get("via") or "the loader"),
                                   entry=posixpath.dirname(str(chosen["path"]))))
    running = _v(facts.value("driver.version")) if _nvml_status(facts) == "ok" else None
    if running is not None:
        for lib in facts.strings("driver.userspace.libraries"):
            m = re.search(r"/libcuda\.so\.(\d+\.\d+(?:\.\d+)?)$", lib)
            newer = _v(m.group(1)) if m else None
            if m and newer is not None and newer > running and not any(c["path"] == lib for c in in_use):
                in_use.append({"path": lib, "driver_version": m.group(1), "via": "the loader's directories"})
    return in_use


def _v(text: Any) -> Optional[Version]:
    try:
        return Version(str(text)) if text else None
    except InvalidVersion:
        return None


def _running_driver(facts: Facts) -> Optional[Version]:
    """The driver the kernel runs: NVML's answer (the host's, inside a container), else the loaded module's."""
    if _nvml_status(facts) == "ok":
        return _v(facts.value("driver.version"))
    return _v(facts.text("driver.kernel_module.version"))


def _forward_compat(facts: Facts) -> List[Finding]:
    in_use = _compat_libcuda_in_use(facts)
    if not in_use:
        return []
    running = _running_driver(facts)
    out: List[Finding] = []
    older: List[Dict[str, Any]] = []
    if running is not None:
        for c in in_use:
            version = _v(c.get("driver_version"))
            if version is not None and version < running:
                older.append(c)
        if older:
            out.append(_forward_compat_older(facts, older[0], running))
    in_use = [c for c in in_use if c not in older]
    if not in_use:
        return out
    return out + _forward_compat_gpu(facts, in_use)


def _forward_compat_older(facts: Facts, lib: Dict[str, Any], running: Version) -> Finding:
    compat_dir = str(lib.get("entry") or posixpath.dirname(str(lib["path"])))
    via = str(lib.get("via") or "the loader")
    cmds = ["grep -rl compat /etc/ld.so.conf.d/ && sudo ldconfig", "ls -l %s" % compat_dir]
    if via == "LD_LIBRARY_PATH":
        cmds.insert(0, 'export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s | '
                       'paste -sd:)"' % compat_dir)
    return Finding(
        code="driver.forward_compat_older_than_driver", severity="error", components=["cuda", "driver"],
        title="Forward-compatibility libcuda %s (%s, via %s) is what CUDA loads, but the running driver is newer "
              "(%s): CUDA fails with error 803 (driver/CUDA mismatch)" % (
                  lib.get("driver_version") or "?", compat_dir, via, running),
        detail="The cuda-compat package's libcuda is built from the driver of its CUDA release (%s) and only "
               "bridges a newer CUDA to an older driver. Driver %s is newer, so this libcuda does not match it and "
               "CUDA initialisation fails (cudaErrorSystemDriverMismatch, 803) — typically a container image that "
               "puts its compat directory first, run on a host (or a cloud service) whose driver was upgraded. The "
               "driver's own libcuda already supports that CUDA: take the compat directory off the loader path." % (
                   lib.get("driver_version") or "?", running),
        evidence=_evidence(facts, "cuda.forward_compat", "cuda.ld_library_path", "libraries.libcuda",
                           "driver.version"),
        source=_source("forward_compat_older"),
        fix=Fix(text="Remove %s from LD_LIBRARY_PATH and from /etc/ld.so.conf.d (then run ldconfig), or delete the "
                     "cuda-compat package from the image, so the driver's libcuda %s is loaded." % (
                         compat_dir, running),
                commands=cmds),
    )


def _forward_compat_gpu(facts: Facts, in_use: List[Dict[str, Any]]) -> List[Finding]:
    names = sorted(set(_gpu_names(facts)))
    bad = []
    error = False
    rows = []
    for n in names:
        row = gpu_product(n)
        if row is not None:
            if row.get("segment") in ("geforce", "workstation"):
                bad.append(n)
                rows.append(row)
                # NVIDIA names its consumer boards "GeForce": that name alone settles it, verified row or not
                if row.get("segment") == "geforce" and (not unverified(row, "segment") or "geforce" in n.lower()):
                    error = True
        elif "geforce" in n.lower():  # NVIDIA names its consumer boards "GeForce": never Data Center
            bad.append(n)
            error = True
    if not bad:
        return []
    lib = in_use[0]
    libver = lib.get("driver_version") or "?"
    row_src = [{"product": r["name"], "segment": r["segment"], "url": r["source"]["url"],
                "checked": r["source"]["checked"], "verified": r["source"].get("verified", False)} for r in rows]
    compat_dir = str(lib.get("entry") or str(lib["path"]).rsplit("/", 1)[0])  # the LD_LIBRARY_PATH entry itself
    return [Finding(
        code="driver.forward_compat_unsupported_gpu", severity="error" if error else "warning",
        components=["cuda", "driver", "gpu"],
        title="Forward-compatibility libcuda %s (%s, via %s) is what CUDA loads, but %s does not support forward "
              "compatibility (%s): CUDA fails with error 804" % (libver, lib["path"], lib.get("via"), ", ".join(bad),
                                                                  _driver_label(facts)),
        detail="The CUDA forward-compatibility package (cuda-compat) lets a newer CUDA run on an older driver only "
               "on NVIDIA Data Center GPUs, select NGC Server Ready RTX SKUs and Jetson. On other GPUs CUDA fails to "
               "initialise (cudaErrorCompatNotSupportedOnDevice, error 804) while this libcuda is picked first. "
               "Take the compat directory off the loader path and upgrade the driver instead.",
        evidence=_evidence(facts, "cuda.forward_compat", "cuda.ld_library_path") + [
            f.to_dict() for f in facts.with_prefix("gpu.") if f.key.endswith(".name")],
        source=_source("forward_compat", gpu_rows=row_src),
        fix=Fix(text="Remove %s from LD_LIBRARY_PATH (and from /etc/ld.so.conf.d if listed there); to run a newer "
                     "CUDA, upgrade the driver." % compat_dir,
                commands=['export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s '
                          '| paste -sd:)"' % compat_dir, "grep -rl compat /etc/ld.so.conf.d/ && sudo ldconfig"],
                install=install_line(facts, "driver")) if lib.get("via") == "LD_LIBRARY_PATH" else
        Fix(text="This libcuda %s is newer than the running driver %s: a cuda-compat package's copy placed where the "
                 "loader looks (a container runtime injects the host's or the image's compat libraries). Remove "
                 "the cuda-compat package (on the host for an injected copy) so the driver's own libcuda is used; "
                 "to run a newer CUDA, upgrade the driver." % (libver, facts.value("driver.version")),
            commands=["ls -l %s" % lib["path"], "dpkg -l 'cuda-compat*' || rpm -qa 'cuda-compat*'"]),
    )]


def _wsl_libcuda_missing(facts: Facts, severity: str) -> Finding:
    return Finding(
        code="driver.wsl_libcuda_missing", severity=severity, components=["driver", "os"],
        title="WSL2 without the Windows NVIDIA driver's libcuda: %s has no libcuda.so.1" % WSL_LIB,
        detail="WSL2 gets CUDA from the Windows NVIDIA driver, which WSL mounts in %s. It is empty or missing: "
               "the Windows driver is missing or too old for WSL GPU support, or GPU support is off for this WSL "
               "instance. (If this Windows machine has no NVIDIA GPU, nothing is wrong: use CPU builds.)" % WSL_LIB,
        evidence=_evidence(facts, "os.wsl", "driver.wsl_libcuda", "driver.installed", "driver.nvml.status"),
        source=_source("wsl"),
        fix=Fix(text="Install or update the NVIDIA driver on Windows (never inside WSL), update WSL from a Windows "
                     "terminal, and restart it.",
                commands=["wsl.exe --update", "wsl.exe --shutdown"]),
    )


def _wsl(facts: Facts) -> List[Finding]:
    if facts.value("os.wsl") != "WSL2":
        return []
    out: List[Finding] = []
    libs = facts.items("driver.userspace.libraries")
    linux_libs = [p for p in libs if isinstance(p, str) and not p.startswith(WSL_LIB + "/")]
    module = facts.value("driver.kernel_module.loaded") is True
    family = _family(facts)
    if linux_libs or module:
        if family in ("rhel", "fedora"):
            remove = ["sudo %s remove -y 'nvidia-driver*' 'kmod-nvidia*'" % rpm_tool(facts)]
        else:
            remove = ["sudo apt-get purge -y 'nvidia-driver-*' 'libnvidia-compute-*' 'nvidia-utils-*'"]
        remove += ["sudo ldconfig", "wsl.exe --shutdown   # then reopen the WSL terminal"]
        uver = facts.value("driver.userspace.version")
        out.append(Finding(
            code="driver.linux_driver_in_wsl", severity="error", components=["driver", "os"],
            title="A Linux NVIDIA driver%s is installed inside WSL2, shadowing the Windows driver %s" % (
                " %s" % uver if uver else "", facts.value("driver.version") or "in " + WSL_LIB),
            detail="On WSL2 the GPU is driven by the Windows NVIDIA driver, whose libcuda and libnvidia-ml WSL "
                   "mounts in %s. A Linux driver installed inside WSL (%s) is found first and breaks CUDA: "
                   "NVIDIA's WSL guide says never to install a Linux NVIDIA driver in WSL 2 (install only the "
                   "CUDA toolkit, e.g. the cuda-toolkit-12-x package of the WSL-Ubuntu repository)."
                   % (WSL_LIB, ", ".join(linux_libs) or "nvidia kernel module"),
            evidence=_evidence(facts, "os.wsl", "driver.userspace.libraries", "driver.kernel_module.loaded",
                               "driver.wsl_libcuda"),
            source=_source("wsl"),
            fix=Fix(text="Remove the Linux driver packages from the WSL distribution (keep the Windows driver), "
                         "refresh the loader cache and restart WSL.", commands=remove),
        ))
    if not facts.value("driver.wsl_libcuda"):
        out.append(_wsl_libcuda_missing(facts, "error"))
    elif _unversioned_libcuda_unreachable(facts) and not linux_libs:
        out.append(Finding(
            code="driver.wsl_libcuda_unversioned_unreachable", severity="warning", components=["driver", "os"],
            title="WSL2: libcuda.so.1 loads, but the unversioned libcuda.so in %s is not where the loader looks "
                  "(not in the ld.so cache, %s not on LD_LIBRARY_PATH)" % (WSL_LIB, WSL_LIB),
            detail="In %s the libcuda files are copies, not symbolic links, so ldconfig caches only the soname "
                   "libcuda.so.1. Libraries that dlopen(\"libcuda.so\") (cuDNN's sub-libraries, some CUDA "
                   "runtime builds, Triton) fail with 'libcuda.so: cannot open shared object file'." % WSL_LIB,
            evidence=_evidence(facts, "os.wsl", "driver.wsl_libcuda", "libraries.libcuda", "cuda.ld_library_path"),
            source=_source("wsl"),
            fix=Fix(text="Put %s on LD_LIBRARY_PATH (in your shell profile) so the unversioned name is found."
                         % WSL_LIB,
                    commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % WSL_LIB]),
        ))
    elif _nvml_status(facts) == "NVML_ERROR_LIBRARY_NOT_FOUND" and not linux_libs:
        out.append(Finding(
            code="driver.wsl_lib_not_in_loader_path", severity="error", components=["driver", "os"],
            title="WSL2: the Windows driver's libraries are in %s, but the loader does not find libnvidia-ml.so.1 "
                  "there" % WSL_LIB,
            detail="%s holds the Windows driver's libcuda and libnvidia-ml, but the dynamic loader's search path "
                   "does not include it (WSL normally lists it in /etc/ld.so.conf.d/ld.wsl.conf), so CUDA and NVML "
                   "cannot load." % WSL_LIB,
            evidence=_evidence(facts, "os.wsl", "driver.wsl_libcuda", "driver.nvml.status"),
            source=_source("wsl"),
            fix=Fix(text="Put %s back on the loader path and rebuild the loader cache." % WSL_LIB,
                    commands=["echo %s | sudo tee /etc/ld.so.conf.d/ld.wsl.conf" % WSL_LIB, "sudo ldconfig"]),
        ))
    return out


def _unversioned_libcuda_unreachable(facts: Facts) -> bool:
    """WSL's /usr/lib/wsl/lib has libcuda.so, libcuda.so.1 loads, and a dlopen of libcuda.so finds nothing."""
    if WSL_LIB + "/libcuda.so" not in facts.strings("driver.wsl_libcuda"):
        return False
    libcuda = facts.mapping("libraries.libcuda")
    one, bare = libcuda.get("libcuda.so.1"), libcuda.get("libcuda.so")
    return isinstance(one, dict) and bool(one.get("path")) and isinstance(bare, dict) and not bare.get("path")


def _nvml_errors(facts: Facts, already: List[Finding]) -> List[Finding]:
    """NVML failures that no more specific finding explains."""
    status = _nvml_status(facts)
    # "starved" and "deadline": NVML was not asked in time because the machine was busy or the time was
    # spent; not the driver's fault (the unseen layer is gpu.unverified).
    if status in (None, "ok", "no_binding", "starved", "deadline", "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
                  "NVML_ERROR_LIBRARY_NOT_FOUND"):
        return []
    from .gpu_verdict import describe, has_nvidia_device

    codes = {f.code for f in already}
    # Where no NVIDIA device is seen (nothing on the PCI bus or in /proc/driver/nvidia, no module loaded),
    # an NVML failure cannot stop a GPU job: a warning. Where one is, an error: the node is not passed.
    severe = "error" if has_nvidia_device(facts) else "warning"
    wsl = facts.value("os.wsl") == "WSL2"
    container = facts.value("os.container")
    ev = _evidence(facts, "driver.nvml.status", "driver.kernel_module.version", "driver.device_nodes",
                   "os.container", "gpu.count")
    label = _driver_label(facts)
    reason = _nvml_reason(facts)
    if status == "NVML_ERROR_NO_PERMISSION":
        if container:
            fix = Fix(text="Inside a container, pass the GPUs in with the NVIDIA Container Toolkit instead of "
                           "mounting /dev/nvidia* by hand.",
                      commands=[AnyOf("docker run --gpus all ...", "podman run --device nvidia.com/gpu=all ...")])
        else:
            fix = Fix(text="The device files should be readable and writable by the users running CUDA "
                           "(mode 0666, the driver's default NVreg_DeviceFileMode); check who changed them "
                           "(udev rules, NVreg_DeviceFileUID/GID/Mode in /etc/modprobe.d).",
                      commands=["ls -l /dev/nvidia*", "grep -r NVreg_DeviceFile /etc/modprobe.d/",
                                "sudo chmod 0666 /dev/nvidia*   # until the next boot"])
        return [Finding(
            code="driver.nvml_no_permission", severity=severe, components=["driver"] + (
                ["container-toolkit"] if container else []),
            title="%s is installed, but this user may not open /dev/nvidia* (NVML: NO_PERMISSION)" % label.capitalize(),
            detail="NVML (and so CUDA) could not open the NVIDIA device files: %s." % reason,
            evidence=ev, source=_source("nvml"), fix=fix)]
    if status == "NVML_ERROR_GPU_IS_LOST":
        return [Finding(
            code="gpu.lost", severity=severe, components=["gpu", "driver"],
            title="A GPU has fallen off the bus (NVML: GPU_IS_LOST, Xid 79) with %s" % label,
            detail="The driver lost contact with a GPU (kernel log: \"NVRM: Xid ... 79, GPU has fallen off the "
                   "bus\"). Nothing can use it until it is reset; a recurrence points at power, cooling, the PCIe "
                   "slot or riser, or a failing board.",
            evidence=ev, source=_source("xid"),
            fix=Fix(text="Confirm in the kernel log, reset the GPU (nothing may be using it) or reboot; collect a "
                         "bug report if it happens again.",
                    commands=["sudo dmesg -T | grep -i xid",
                              AnyOf("sudo nvidia-smi --gpu-reset -i 0", "sudo reboot"),
                              "sudo nvidia-bug-report.sh"])),
        ]
    if status == "NVML_ERROR_DRIVER_NOT_LOADED":
        if wsl or codes & {"driver.no_module_for_kernel", "driver.module_unsigned_secure_boot",
                           "driver.module_key_not_enrolled",
                           "driver.nouveau_conflict", "driver.nova_conflict", "driver.linux_driver_in_wsl"}:
            return []
        gpus = _pci_gpus(facts)
        return [Finding(
            code="driver.not_loaded", severity=severe, components=["driver", "kernel"],
            title="The NVIDIA user-space driver %s is installed, but the nvidia kernel module is not loaded%s" % (
                facts.value("driver.userspace.version") or "", " (GPU %s on the PCI bus)" % ", ".join(gpus)
                if gpus else ""),
            detail="libnvidia-ml is present but /dev/nvidiactl is missing or the module failed to load (%s). "
                   "`sudo modprobe nvidia` either loads it or prints why not (e.g. \"Key was rejected by "
                   "service\": Secure Boot; \"Module nvidia not found\": not built for this kernel)." % reason,
            evidence=ev + _evidence(facts, "driver.kernel_module.loaded", "driver.module_for_running_kernel"),
            source=_source("nvml"),
            fix=Fix(text="Load the module and read the kernel log if it fails.",
                    commands=["sudo modprobe nvidia", "sudo dmesg -T | grep -i -E 'nvidia|nvrm' | tail -n 20"]),
        )]
    if status == "timed_out":
        from ..host.nvml_worker import describe_call

        src = facts.get("driver.nvml.status")
        where = str(src.source)[len("nvml:"):] if src is not None and str(src.source).startswith("nvml:") else ""
        return [Finding(
            code="driver.nvml_hung", severity="error", components=["driver", "gpu"],
            title="Asking the driver (NVML, %s) timed out: the driver or a GPU is hung%s" % (
                label, " (in %s)" % describe_call(where) if where and where != "init" else ""),
            detail="%s. A wedged GPU or driver makes every CUDA program and nvidia-smi hang, often leaving "
                   "processes in uninterruptible sleep (state D)." % _sentence(
                       reason or "The driver did not answer in time"),
            evidence=ev, source=_source("nvml"),
            fix=Fix(text="Find the stuck processes, collect NVIDIA's bug report, then reboot (a hung driver "
                         "rarely recovers).",
                    commands=["ps -eo pid,stat,cmd | awk '$2 ~ /D/'", "sudo dmesg -T | grep -i -E 'xid|nvrm'",
                              "sudo nvidia-bug-report.sh", "sudo reboot"]),
        )]
    # Any other failure: an error where the PCI bus, /proc/driver/nvidia or a loaded module shows an NVIDIA
    # device (a pre-flight must not pass it), with the code's meaning and fix; a warning where none is seen.
    if status == "worker_failed":
        meaning, fix_text = ("the NVML query process died inside the NVIDIA library",
                             "Read the kernel log for Xid errors; reset the GPUs or reboot.")
        commands: List[Any] = ["sudo dmesg -T | grep -i -E 'xid|nvrm' | tail -n 30", "nvidia-smi", "sudo reboot"]
    else:
        row = describe(status)
        meaning, fix_text = row.meaning, row.fix
        commands = [c.map(lambda x: x.format(gpu=0)) if isinstance(c, AnyOf) else c.format(gpu=0)
                    for c in row.commands] or ["nvidia-smi"]
    return [Finding(
        code="driver.nvml_failed", severity=severe,
        components=["driver"],
        title="NVML could not start with %s: %s (%s)" % (label, status, meaning),
        detail="NVML failed to initialise (%s): %s; CUDA fails the same way. %s" % (
            reason or status, meaning, fix_text),
        evidence=ev + _evidence(facts, "gpu.pci_devices", "gpu.proc_devices"), source=_source("nvml"),
        fix=Fix(text=fix_text, commands=commands),
    )]


@check("driver-health", requires=("driver.installed",), reads=READS, layers=("driver", "gpu"), codes=(
    CodeDoc("driver.library_mismatch", "error",
            "The loaded NVIDIA kernel module and the user-space library are different driver versions.",
            "driver.nvml.status, driver.kernel_module.version, driver.userspace.version",
            "NVML, nvidia-smi and CUDA refuse to start (\"Driver/library version mismatch\"); a reboot after a "
            "driver upgrade fixes it.", RULES["nvml"]["url"]),
    CodeDoc("driver.kernel_headers_missing", "error",
            "No nvidia module is built for the running kernel and its headers are not installed, so DKMS cannot "
            "build one.", "kernel.headers, kernel.release, driver.module_for_running_kernel, driver.dkms.status",
            "After a kernel update the new kernel boots without the nvidia module: no GPU until the headers are "
            "installed and DKMS builds it.", RULES["headers"]["url"]),
    CodeDoc("driver.module_on_disk_mismatch", "error",
            "The nvidia module installed for the running kernel is another version than the user-space driver: a "
            "reboot loads the same mismatching module again.", "driver.module_on_disk.version, driver.dkms.status, "
            "driver.userspace.version, kernel.release",
            "NVML and CUDA keep failing with 'Driver/library version mismatch' after every reboot until the module "
            "package is repaired or rebuilt.", RULES["nvml"]["url"]),
    CodeDoc("driver.not_installed", "error", "An NVIDIA GPU is on the PCI bus but no NVIDIA driver is installed.",
            "driver.installed, driver.nvidia_pci_gpus", "Without the driver CUDA cannot use the GPU.",
            RULES["install"]["url"]),
    CodeDoc("gpu.none", "info", "No NVIDIA GPU and no NVIDIA driver: a CPU-only machine.",
            "driver.installed, driver.nvidia_pci_gpus, gpu.count",
            "Nothing is wrong; CPU builds of the frameworks are the right choice.", RULES["no_gpu"]["url"]),
    CodeDoc("driver.userspace_missing", "error",
            "The nvidia kernel module is loaded but libnvidia-ml/libcuda are not installed.",
            "driver.kernel_module.loaded, driver.nvml.status", "CUDA programs cannot load libcuda.so.1.",
            RULES["nvml"]["url"]),
    CodeDoc("driver.nouveau_conflict", "error", "The in-kernel nouveau driver is loaded or drives the NVIDIA GPU.",
            "driver.nouveau.loaded, driver.nouveau.bound, driver.modprobe_blacklist_nouveau",
            "The NVIDIA driver cannot own a GPU nouveau holds.", RULES["nouveau"]["url"]),
    CodeDoc("driver.nova_conflict", "error", "The in-kernel nova (nova-core) driver is loaded or drives the GPU.",
            "driver.nova.loaded, driver.nova.bound", "The NVIDIA driver cannot own a GPU nova holds.",
            RULES["nouveau"]["url"]),
    CodeDoc("driver.no_module_for_kernel", "error", "No nvidia kernel module is built for the running kernel.",
            "driver.module_for_running_kernel, driver.dkms.status, kernel.release",
            "After a kernel update without headers DKMS cannot rebuild the module; the GPU is unusable.",
            RULES["headers"]["url"]),
    CodeDoc("driver.module_unsigned_secure_boot", "error",
            "Secure Boot is on and the nvidia module is not signed (error when it is therefore not loaded).",
            "driver.secure_boot, driver.module_signed, driver.kernel_module.loaded",
            "The kernel refuses unsigned modules under Secure Boot.", RULES["secure_boot"]["url"]),
    CodeDoc("driver.module_key_not_enrolled", "error",
            "Secure Boot is on and the nvidia module is signed, but by a Machine Owner Key that is not enrolled: "
            "the kernel refuses it (a warning when that is only inferred from the module not loading).",
            "driver.secure_boot, driver.module_signed, driver.module_signer, driver.mok_keys (mokutil --test-key), "
            "driver.kernel_module.loaded, driver.module_for_running_kernel",
            "modprobe fails with 'Key was rejected by service'; the GPU is unusable until the key is enrolled in "
            "MokManager at boot.", RULES["secure_boot"]["url"]),
    CodeDoc("driver.device_nodes_missing", "error", "The nvidia module is loaded but /dev/nvidia* nodes are missing "
            "(/dev/nvidia-uvm: in a container, or on a host whose unprivileged container runtime cannot load "
            "nvidia_uvm, a warning there).",
            "driver.kernel_module.loaded, driver.device_nodes, gpu.count, os.container, driver.unprivileged_runtimes",
            "CUDA opens /dev/nvidiactl, /dev/nvidiaN and /dev/nvidia-uvm; without them it sees no GPU or cuInit "
            "fails.",
            RULES["device_nodes"]["url"]),
    CodeDoc("driver.fabric_manager_not_running", "error",
            "An NVSwitch system whose nvidia-fabricmanager service is not active.",
            "driver.nvswitch.present, driver.fabric_manager.state, driver.version",
            "CUDA initialisation fails with cudaErrorSystemNotReady (802) until the fabric is configured.",
            RULES["fabric_manager"]["url"]),
    CodeDoc("driver.forward_compat_unsupported_gpu", "error",
            "Forward-compatibility libcuda (cuda-compat) is on the loader path (LD_LIBRARY_PATH, or copied into a "
            "loader directory, as container runtimes do) of a GPU that does not support it.",
            "cuda.forward_compat, cuda.ld_library_path, gpu.N.name (gpus matrix segment)",
            "CUDA fails with cudaErrorCompatNotSupportedOnDevice (804) on GeForce and most workstation GPUs.",
            RULES["forward_compat"]["url"]),
    CodeDoc("driver.forward_compat_older_than_driver", "error",
            "The forward-compatibility libcuda (cuda-compat) CUDA loads (LD_LIBRARY_PATH or the ld.so cache) is "
            "older than the running driver.",
            "cuda.forward_compat, cuda.ld_library_path, libraries.libcuda, driver.version",
            "CUDA fails with cudaErrorSystemDriverMismatch (803) although the driver's own libcuda would work.",
            RULES["forward_compat_older"]["url"]),
    CodeDoc("driver.linux_driver_in_wsl", "error", "A Linux NVIDIA driver is installed inside WSL2.",
            "os.wsl, driver.userspace.libraries, driver.kernel_module.loaded",
            "It shadows the Windows driver's libcuda in /usr/lib/wsl/lib and breaks CUDA.", RULES["wsl"]["url"]),
    CodeDoc("driver.wsl_libcuda_missing", "error", "WSL2 without /usr/lib/wsl/lib/libcuda.so.1 (a warning when "
            "no driver is seen at all: the Windows machine may have no NVIDIA GPU).",
            "os.wsl, driver.wsl_libcuda", "The Windows driver is missing, too old, or GPU support is off.",
            RULES["wsl"]["url"]),
    CodeDoc("driver.wsl_lib_not_in_loader_path", "error",
            "WSL2: /usr/lib/wsl/lib has the driver libraries but the loader does not find them.",
            "os.wsl, driver.wsl_libcuda, driver.nvml.status", "CUDA and NVML cannot load libcuda/libnvidia-ml.",
            RULES["wsl"]["url"]),
    CodeDoc("driver.wsl_libcuda_unversioned_unreachable", "warning",
            "WSL2: libcuda.so.1 loads, but the unversioned libcuda.so in /usr/lib/wsl/lib is neither in the ld.so "
            "cache nor on LD_LIBRARY_PATH.", "os.wsl, driver.wsl_libcuda, libraries.libcuda, cuda.ld_library_path",
            "Libraries that dlopen(\"libcuda.so\") (cuDNN's sub-libraries, Triton) fail to find the driver.",
            RULES["wsl"]["url"]),
    CodeDoc("driver.nvml_no_permission", "error", "NVML: no permission to open /dev/nvidia*.",
            "driver.nvml.status, driver.device_nodes, os.container",
            "CUDA cannot open the GPU as this user (or the container was started without --gpus).",
            RULES["nvml"]["url"]),
    CodeDoc("gpu.lost", "error", "NVML: a GPU has fallen off the bus (Xid 79).", "driver.nvml.status",
            "The GPU is unusable until reset or reboot; recurrence points at hardware.", RULES["xid"]["url"]),
    CodeDoc("driver.not_loaded", "error", "The user-space driver is installed but the kernel module is not loaded.",
            "driver.nvml.status, driver.kernel_module.loaded", "CUDA sees no GPU until `modprobe nvidia` succeeds.",
            RULES["nvml"]["url"]),
    CodeDoc("driver.nvml_hung", "error", "Asking NVML timed out: the driver or a GPU is hung.",
            "driver.nvml.status", "Every CUDA program and nvidia-smi will hang too.", RULES["nvml"]["url"]),
    CodeDoc("driver.nvml_failed", "error", "NVML failed to initialise with another error (a warning only where "
            "no NVIDIA device is seen on the PCI bus or in /proc/driver/nvidia).",
            "driver.nvml.status, gpu.pci_devices, gpu.proc_devices",
            "CUDA fails the same way; the finding gives the code's meaning and fix.", RULES["nvml"]["url"]),
))
def driver_installed(ctx: CheckContext) -> Iterable[Finding]:
    """Is a driver installed at all?  The other questions are their own checks (registered below)."""
    if ctx.facts.get("driver.installed") is None:
        return []  # the driver probe did not run (crashed or timed out: reported by probe-health)
    return _no_driver(ctx.facts)


#: The questions asked of an installed driver, in the order one root cause is told once: a later question
#: (device nodes, NVML errors) stays quiet about what an earlier one explains.
_QUESTIONS = (
    ("library-mismatch", _mismatch), ("userspace-missing", _userspace_missing), ("wsl", _wsl),
    ("in-kernel-conflict", _in_kernel_conflict), ("module-for-kernel", _no_module_for_kernel),
    ("secure-boot", _secure_boot), ("device-nodes", _device_nodes), ("fabric-manager", _fabric_manager),
    ("forward-compat", _forward_compat),
)


def _installed(facts: Facts) -> bool:
    return facts.value("driver.installed") is True


def _earlier(facts: Facts, upto: str) -> List[Finding]:
    """What the questions before ``upto`` conclude (each one's crash is reported by its own check)."""
    found = quietly(_no_driver, facts)
    for name, fn in _QUESTIONS:
        if name == upto:
            break
        if name == "device-nodes" and any(f.code in ("driver.library_mismatch", "driver.userspace_missing")
                                          for f in found):
            continue
        found += quietly(fn, facts)
    return found


def _ask(name: str, fn: Callable[[Facts], List[Finding]]) -> None:
    def run(ctx: CheckContext) -> List[Finding]:
        if not _installed(ctx.facts):
            return []
        if name == "device-nodes" and any(f.code in ("driver.library_mismatch", "driver.userspace_missing")
                                          for f in _earlier(ctx.facts, name)):
            return []
        return fn(ctx.facts)
    check("driver-health." + name, codes=(), requires=("driver.installed",), reads=READS, layers=_LAYERS[name])(run)


for _name, _fn in _QUESTIONS:
    _ask(_name, _fn)


def _library_links(facts: Facts) -> List[Finding]:
    """Driver library links naming another driver version's file, or a file that is gone (left by an update)."""
    # a cuda-compat package's own links, and a compat libcuda copied where the loader looks (container runtimes), are
    # not links an update left behind: the forward-compat question tells that root cause
    compat = _compat_dirs(facts)
    compat_libs = {str(c.get("path")) for c in _compat_libcuda_in_use(facts)}
    links = [lk for lk in facts.items("driver.library_links")
             if isinstance(lk, dict) and all(isinstance(lk.get(k), str) for k in ("link", "target", "version"))
             and posixpath.dirname(str(lk["link"])) not in compat and str(lk["target"]) not in compat_libs]
    if not links:
        return []
    running = facts.text("driver.kernel_module.version") or facts.text("driver.version")
    if running is None:
        versions = [str(lk.get("version")) for lk in links if lk.get("exists")]
        running = max(set(versions), key=versions.count) if versions else None
    out: List[Finding] = []
    stale = [lk for lk in links if not lk.get("exists") or (running and lk.get("version") != running)]
    core = [lk for lk in stale if posixpath.basename(str(lk["link"])) in ("libnvidia-ml.so.1", "libcuda.so.1")]
    reported = {f.code for f in quietly(_mismatch, facts)}
    if core and running and "driver.library_mismatch" not in reported:
        lk = core[0]
        out.append(Finding(
            code="driver.library_mismatch", severity="error", components=["driver", "kernel"],
            title="The loaded kernel module is driver %s, but %s still links to driver %s (%s): a stale link left "
                  "by an update" % (running, posixpath.basename(str(lk["link"])), lk["version"], lk["target"]),
            detail="The loader gives programs %s, which points at the previous driver's library; it cannot talk to "
                   "the %s kernel module (NVML: 'Function Not Found' or 'Driver/library version mismatch'). A "
                   "reboot does not fix a link." % (lk["link"], running),
            evidence=_evidence(facts, "driver.library_links", "driver.kernel_module.version", "driver.nvml.status"),
            source=_source("nvml"),
            fix=Fix(text="ldconfig re-points each soname link at the newest library that carries the soname; if "
                         "the %s libraries are missing, reinstall the driver packages first." % running,
                    commands=["ls -l %s/lib*.so.1" % posixpath.dirname(str(lk["link"])), "sudo ldconfig",
                              "ls -l %s" % lk["link"]])))
    for lk in stale:
        if lk in core:
            continue
        out.append(Finding(
            code="driver.stale_library_link", severity="error", components=["driver"],
            title="%s points to %s (driver %s%s), not to driver %s" % (
                lk["link"], lk["target"], lk["version"], ", which no longer exists" if not lk.get("exists") else "",
                running or "?"),
            detail="A driver update left this link naming the previous driver's file. Whatever loads it (the "
                   "NVIDIA Container Toolkit injects every driver library into containers; CUDA's NVVM loads "
                   "libnvidia-nvvm) fails to load it or gets a library of the wrong version.",
            evidence=_evidence(facts, "driver.library_links", "driver.kernel_module.version", "driver.version"),
            source=_source("nvml"),
            fix=Fix(text="ldconfig re-points the link at the newest library carrying its soname; if that is not the "
                         "%s one, reinstall the driver packages of that version." % (running or "running driver's"),
                    commands=["sudo ldconfig", "ls -l %s" % lk["link"]])))
    return out


@check("driver-health.library-links", requires=("driver.installed", "driver.library_links"), reads=READS,
       layers=("driver",), codes=(
    CodeDoc("driver.stale_library_link", "error",
            "A driver library link (libnvidia-*.so.N) points to another driver version's file, or to one that no "
            "longer exists, left by an update.", "driver.library_links, driver.kernel_module.version",
            "Containers (the toolkit injects every driver library) and programs that load it fail.",
            RULES["nvml"]["url"]),
))
def library_links(ctx: CheckContext) -> List[Finding]:
    return _library_links(ctx.facts) if _installed(ctx.facts) else []


@check("driver-health.nvml-errors", codes=(), requires=("driver.installed",), reads=READS, layers=("driver", "gpu"))
def nvml_errors(ctx: CheckContext) -> List[Finding]:
    """NVML failures that no more specific finding (of the questions above) explains."""
    if not _installed(ctx.facts):
        return []
    return _nvml_errors(ctx.facts, _earlier(ctx.facts, "nvml-errors"))


#: Every driver-health question at once (tests, and callers that want this area only).
driver_health = group("driver-health")

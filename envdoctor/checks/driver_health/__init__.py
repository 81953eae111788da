"""Driver health: is the NVIDIA driver installed, loaded, whole, and the only driver of the GPU? What the questions
(one module each) share.

The questions read the driver probe's facts (and a few of the os, gpu and cuda probes') and say what stops CUDA
from starting, one root cause once: a module that is not loaded *because* it was never built for this kernel, or
because Secure Boot rejects it, or because nouveau holds the GPU, is reported as that cause, not also as "module
not loaded" (those findings ``yield`` to the cause's).

Rules here are vendor statements, not version tables: each finding's ``source`` names the NVIDIA (or
kernel/distribution) document it comes from, in :data:`RULES`.  The only matrix rows used are ``gpus.json``
products (for the forward-compatibility GPU segment); those rows are unverified today, so that finding is a
warning at most.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Optional, Set, Tuple

from packaging.version import InvalidVersion, Version

from ... import lazyre, versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...osinfo import WSL_LIB_DIR
from .. import CodeDoc, Message, group
from ..gpus import GPU_LOST
from ..suggest import INSTALL_LINE_READS

CHECKED = "2026-11-22"
#: What the driver's questions look at besides driver.installed (one list for all of them): the driver's facts but
#: not its library links (the dlopen probe's, a check of their own).
READS = ("driver.*", "driver.*.*", "kernel.release", "kernel.headers", "cuda.*", "env.*", "libraries.libcuda",
         "libraries.cudnn",
         "os.*") + INSTALL_LINE_READS

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
    "dkms_kernel": {"url": "https://github.com/dell/dkms",
                    "rule": "DKMS builds a registered module for each kernel as it is installed; a kernel it could "
                            "not build for boots without that module (a failed build leaves "
                            "/var/lib/dkms/<module>/<version>/build/make.log)"},
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
    "wsl1": {"url": "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
             "rule": "CUDA on WSL is for WSL 2 only (GPU paravirtualisation through the Windows NVIDIA driver); "
                     "WSL 1 has no Linux kernel and no GPU, and a Linux NVIDIA driver must not be installed in WSL",
             "checked": "2026-11-30"},
    "wsl_gpu": {"url": "https://docs.nvidia.com/cuda/wsl-user-guide/index.html",
                "rule": "On WSL 2 the Windows NVIDIA driver (WDDM, a WSL-capable release) reaches the GPU through "
                        "/dev/dxg; the Windows build, the WSL kernel and the Windows driver must all support it "
                        "(GPUs in TCC mode are not available to WSL)",
                "checked": "2026-11-30"},
    "mps": {"url": "https://docs.nvidia.com/deploy/mps/",
            "rule": "The MPS control daemon launches an MPS server with the uid of the client that asks; a client "
                    "of another uid than the running server's waits until that server's clients are done and it "
                    "has exited (nvidia-cuda-mps-control man page): MPS servers of different users do not run "
                    "at the same time", "checked": "2026-11-30"},
    "xid": {"url": "https://docs.nvidia.com/deploy/xid-errors/index.html",
            "rule": "Xid 79: GPU has fallen off the bus; reset or reboot, then look at power, thermals, PCIe"},
    "driver_container": {"url": "https://github.com/NVIDIA/gpu-driver-container/blob/main/ubuntu22.04/nvidia-driver",
                         "rule": "The GPU Operator's driver container loads the driver with modprobe nvidia "
                                 "(_load_driver) and blacklists no in-kernel driver: nouveau must be disabled on the "
                                 "host (CUDA Installation Guide, Disabling Nouveau)", "checked": "2026-11-29"},
    "gpu_operator": {"url": "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/index.html",
                     "rule": "The GPU Operator's driver container installs the driver and mounts its root at "
                             "/run/nvidia/driver on the host; workloads get the driver's libraries through the "
                             "NVIDIA Container Toolkit", "checked": "2026-11-29"},
    "nixos": {"url": "https://nixos.org/manual/nixos/stable/#sec-gpu-accel",
              "rule": "NixOS exposes the running system's graphics and compute driver libraries at "
                      "/run/opengl-driver/lib (hardware.graphics / hardware.nvidia)", "checked": "2026-11-29"},
    "no_gpu": {"url": "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html"
                      "#verify-you-have-a-cuda-capable-gpu",
               "rule": "CUDA needs an NVIDIA GPU; without one, CPU builds of the frameworks are the right choice"},
}

#: The modules to unload, users first (nvidia_uvm, nvidia_drm and nvidia_modeset depend on nvidia).
RELOAD = "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"

#: Ubuntu's driver packages: its compute libraries, and its graphics libraries (OpenGL, EGL, Vulkan, OptiX).
_APT_COMPUTE = lazyre.compile(r"^libnvidia-compute-(\d{3}(?:-server)?)$")
_APT_GL = lazyre.compile(r"^libnvidia-gl-(\d{3}(?:-server)?)$")


def driver_apt_flavours(facts: Facts) -> Tuple[List[str], Set[str]]:
    """The flavours (``535``, ``535-server``) of Ubuntu's driver packages installed: those of its compute libraries
    (libnvidia-compute-<flavour>, sorted) and those of its graphics libraries (libnvidia-gl-<flavour>, where OpenGL,
    EGL, Vulkan and OptiX ship). The one reader of these package names for the graphics-part checks."""
    names = {str(p.get("name")) for p in facts.items("cuda.packages") if isinstance(p, dict)}
    compute = sorted(m.group(1) for m in (_APT_COMPUTE.match(n) for n in names) if m)
    return compute, {m.group(1) for m in (_APT_GL.match(n) for n in names) if m}


def caps_without_graphics(facts: Facts) -> Optional[str]:
    """NVIDIA_DRIVER_CAPABILITIES when it is set without ``graphics`` (or ``all``): the NVIDIA Container Toolkit then
    mounts none of the driver's graphics libraries (OpenGL, EGL, Vulkan, OptiX) into the container."""
    caps = facts.value("env.nvidia_driver_capabilities")
    if isinstance(caps, str) and not ({"graphics", "all"} & {c.strip() for c in caps.split(",")}):
        return caps
    return None


#: Where WSL2 maps the Windows driver's libraries (its one home: :data:`envdoctor.osinfo.WSL_LIB_DIR`).
WSL_LIB = WSL_LIB_DIR


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


def _driver_label(facts: Facts) -> str:
    v = (facts.value("driver.version") or facts.value("driver.kernel_module.version")
         or facts.value("driver.userspace.version"))
    return "driver %s" % v if v else "the NVIDIA driver"


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
        if not isinstance(c, dict):
            continue
        # the directory as scanned and as it really is (compat/lib -> compat/lib.real in NGC images)
        dirs = [str(c.get(k) or "").rsplit("/", 1)[0].rstrip("/") for k in ("path", "real")]
        hit = next((d for d in dirs if d and d in entries), None)
        if hit is not None and not any(x.get("real") == c.get("real") and c.get("real") for x in in_use):
            in_use.append(dict(c, via="LD_LIBRARY_PATH", entry=entries[hit]))
    # the loader cache (an /etc/ld.so.conf.d entry for the compat directory, as cuda-compat packages add) can make
    # the compat libcuda the one programs load even without LD_LIBRARY_PATH
    chosen = facts.mapping("libraries.libcuda").get("libcuda.so.1")
    if isinstance(chosen, dict) and chosen.get("path"):
        for c in facts.items("cuda.forward_compat"):
            if (isinstance(c, dict) and c.get("path") and chosen.get("resolved") in (c["path"], c.get("real"))
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


#: Every code the driver's questions may emit, each declared by the question that emits it.
DOCS = (
    CodeDoc("driver.library_mismatch", "error",
            "The loaded NVIDIA kernel module and the user-space library are different driver versions.",
            "driver.nvml.status, driver.kernel_module.version, driver.userspace.version",
            "NVML, nvidia-smi and CUDA refuse to start (\"Driver/library version mismatch\"); a reboot after a "
            "driver upgrade fixes it.", RULES["nvml"]["url"],
        messages=(Message("Failed to initialize NVML: Driver/library version mismatch",
                "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"),)),
    CodeDoc("driver.kernel_headers_missing", "error",
            "No nvidia module is built for the running kernel and its headers are not installed, so DKMS cannot "
            "build one.", "kernel.headers, kernel.release, driver.module_for_running_kernel, driver.dkms.status",
            "After a kernel update the new kernel boots without the nvidia module: no GPU until the headers are "
            "installed and DKMS builds it.", RULES["headers"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),)),
    CodeDoc("driver.module_on_disk_mismatch", "error",
            "The nvidia module installed for the running kernel is another version than the user-space driver: a "
            "reboot loads the same mismatching module again.", "driver.module_on_disk.version, driver.dkms.status, "
            "driver.userspace.version, kernel.release",
            "NVML and CUDA keep failing with 'Driver/library version mismatch' after every reboot until the module "
            "package is repaired or rebuilt.", RULES["nvml"]["url"],
        messages=(Message("Failed to initialize NVML: Driver/library version mismatch",
                "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"),)),
    CodeDoc("driver.not_installed", "error", "An NVIDIA GPU is on the PCI bus but no NVIDIA driver is installed.",
            "driver.installed, driver.nvidia_pci_gpus", "Without the driver CUDA cannot use the GPU.",
            RULES["install"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),
                  Message("Found no NVIDIA driver on your system",
                "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/detail/CUDAHooks.cpp"),)),
    CodeDoc("gpu.none", "info", "No NVIDIA GPU and no NVIDIA driver: a CPU-only machine.",
            "driver.installed, driver.nvidia_pci_gpus, gpu.count",
            "Nothing is wrong; CPU builds of the frameworks are the right choice.", RULES["no_gpu"]["url"]),
    CodeDoc("driver.userspace_missing", "error",
            "The nvidia kernel module is loaded but libnvidia-ml/libcuda are not installed.",
            "driver.kernel_module.loaded, driver.nvml.status", "CUDA programs cannot load libcuda.so.1.",
            RULES["nvml"]["url"]),
    CodeDoc("driver.gpu_operator_driver_root", "info", "The NVIDIA GPU Operator's driver container provides the "
            "driver (/run/nvidia/driver); the host's own loader does not see its libraries.",
            "driver.userspace.elsewhere, driver.nvml.status", "Not a fault: the host's own tools run inside that "
            "root, workloads in containers.", RULES["gpu_operator"]["url"]),
    CodeDoc("driver.userspace_outside_loader_path", "warning", "NixOS: the driver's libraries are in "
            "/run/opengl-driver/lib, where programs not built by Nix (pip wheels) do not look.",
            "driver.userspace.elsewhere, driver.nvml.status", "PyTorch, JAX and other wheels find no libcuda.so.1 and "
            "see no GPU unless given that directory.", RULES["nixos"]["url"]),
    CodeDoc("driver.nouveau_conflict", "error", "The in-kernel nouveau driver is loaded or drives the NVIDIA GPU.",
            "driver.nouveau.loaded, driver.nouveau.bound, driver.modprobe_blacklist_nouveau",
            "The NVIDIA driver cannot own a GPU nouveau holds.", RULES["nouveau"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),)),
    CodeDoc("driver.nova_conflict", "error", "The in-kernel nova (nova-core) driver is loaded or drives the GPU.",
            "driver.nova.loaded, driver.nova.bound", "The NVIDIA driver cannot own a GPU nova holds.",
            RULES["nouveau"]["url"]),
    CodeDoc("driver.no_module_for_kernel", "error", "No nvidia kernel module is built for the running kernel "
            "(also where the driver's libraries were never installed but DKMS holds the driver: its build for this "
            "kernel failed, the reason read from DKMS's make.log where it is there).",
            "driver.module_for_running_kernel, driver.dkms.status, driver.dkms.failure, kernel.release",
            "After a kernel update without headers DKMS cannot rebuild the module; the GPU is unusable.",
            RULES["headers"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),)),
    CodeDoc("driver.no_module_for_installed_kernel", "warning", "A kernel newer than the running one is installed "
            "(the one boot loaders start next by default) and DKMS, which manages the nvidia module here, has not "
            "built the module for it (its build failed: the reason read from DKMS's make.log where it is there).",
            "driver.newer_kernels, driver.dkms.status, kernel.release, driver.module_for_running_kernel",
            "The machine works now; after the next reboot into that kernel the nvidia module is missing and CUDA "
            "sees no GPU.", RULES["dkms_kernel"]["url"]),
    CodeDoc("driver.module_unsigned_secure_boot", "error",
            "Secure Boot is on and the nvidia module is not signed (error when it is therefore not loaded).",
            "driver.secure_boot, driver.module_signed, driver.kernel_module.loaded",
            "The kernel refuses unsigned modules under Secure Boot.", RULES["secure_boot"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),)),
    CodeDoc("driver.module_key_not_enrolled", "error",
            "Secure Boot is on and the nvidia module is signed, but by a key that is not enrolled: the machine's "
            "own Machine Owner Key (DKMS, akmods), or, for a module a package brought prebuilt and signed (NVIDIA's "
            "precompiled kmod-nvidia for RHEL), its vendor's key, its signer not among the enrolled keys: the "
            "kernel refuses it (a warning when that is only inferred from the module not loading).",
            "driver.secure_boot, driver.module_signed, driver.module_signer, driver.mok_keys (mokutil --test-key), "
            "driver.mok_enrolled (mokutil --list-enrolled), driver.kernel_module.loaded, "
            "driver.module_for_running_kernel, driver.dkms.status",
            "modprobe fails with 'Key was rejected by service'; the GPU is unusable until the key is enrolled in "
            "MokManager at boot.", RULES["secure_boot"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),)),
    CodeDoc("driver.device_nodes_missing", "error", "The nvidia module is loaded but /dev/nvidia* nodes are missing "
            "(/dev/nvidia-uvm: in a container, or on a host whose unprivileged container runtime cannot load "
            "nvidia_uvm, a warning there, as where nvidia_uvm is not loaded and a user's CUDA program cannot load "
            "it: its module installed only under a driver package's renamed name, such as Ubuntu's "
            "nvidia_NNN_uvm.ko, that no `alias nvidia-uvm` resolves, or no setuid nvidia-modprobe); in a container "
            "with neither GPU nodes nor driver libraries, the "
            "container was started without GPUs (no --gpus, nvidia runtime, CDI device or nvidia.com/gpu).",
            "driver.kernel_module.loaded, driver.device_nodes, gpu.count, os.container, driver.unprivileged_runtimes, "
            "driver.uvm_module, "
            "driver.nvml.status, libraries.libcuda",
            "CUDA opens /dev/nvidiactl, /dev/nvidiaN and /dev/nvidia-uvm; without them it sees no GPU or cuInit "
            "fails.",
            RULES["device_nodes"]["url"],
        messages=(Message("no CUDA-capable device is detected",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
    CodeDoc("driver.fabric_manager_not_running", "error",
            "An NVSwitch system whose nvidia-fabricmanager service is not active.",
            "driver.nvswitch.present, driver.fabric_manager.state, driver.version",
            "CUDA initialisation fails with cudaErrorSystemNotReady (802) until the fabric is configured.",
            RULES["fabric_manager"]["url"]),
    CodeDoc("mps.server_owned_by_other_user", "warning",
            "An MPS control daemon serves this user's CUDA programs, but its running MPS server belongs to another "
            "user (e.g. root, for a container started without -u).",
            "driver.mps.control_daemon, driver.mps.servers, driver.mps.user",
            "MPS runs one user's server at a time: this user's CUDA programs are queued, and hang, until that "
            "server exits.", RULES["mps"]["url"]),
    CodeDoc("driver.forward_compat_unsupported_gpu", "error",
            "Forward-compatibility libcuda (cuda-compat) is on the loader path (LD_LIBRARY_PATH, or copied into a "
            "loader directory, as container runtimes do) of a GPU that does not support it.",
            "cuda.forward_compat, cuda.ld_library_path, gpu.N.name (gpus matrix segment)",
            "CUDA fails with cudaErrorCompatNotSupportedOnDevice (804) on GeForce and most workstation GPUs.",
            RULES["forward_compat"]["url"],
        messages=(Message("forward compatibility was attempted on non supported HW",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
    CodeDoc("driver.forward_compat_older_than_driver", "error",
            "The forward-compatibility libcuda (cuda-compat) CUDA loads (LD_LIBRARY_PATH or the ld.so cache) is "
            "older than the running driver.",
            "cuda.forward_compat, cuda.ld_library_path, libraries.libcuda, driver.version",
            "CUDA fails with cudaErrorSystemDriverMismatch (803) although the driver's own libcuda would work.",
            RULES["forward_compat_older"]["url"],
        messages=(Message("system has unsupported display driver / cuda driver combination",
                "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"),)),
    CodeDoc("driver.linux_driver_in_wsl", "error", "A Linux NVIDIA driver is installed inside WSL2.",
            "os.wsl, driver.userspace.libraries, driver.kernel_module.loaded",
            "It shadows the Windows driver's libcuda in /usr/lib/wsl/lib and breaks CUDA.", RULES["wsl"]["url"]),
    CodeDoc("driver.wsl1_no_gpu", "error",
            "The Linux distribution runs under WSL 1, which gives Linux no GPU, and a Linux NVIDIA driver is "
            "installed in it (a warning where only CUDA toolkits or CUDA wheels are: building works, running finds "
            "no GPU).", "os.wsl, driver.installed, driver.userspace.version, cuda.toolkits, cuda.pip_wheels",
            "No driver installed inside WSL 1 can reach the GPU: nvidia-smi cannot communicate with the driver and "
            "CUDA finds no device until the distribution is converted to WSL 2.", RULES["wsl1"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),)),
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
            "cache nor on LD_LIBRARY_PATH (an error where cuDNN 8 is installed: it opens libcuda.so).",
            "os.wsl, driver.wsl_libcuda, libraries.libcuda, cuda.ld_library_path, libraries.cudnn",
            "Libraries that dlopen(\"libcuda.so\") (cuDNN's sub-libraries, Triton) fail to find the driver.",
            RULES["wsl"]["url"]),
    CodeDoc("driver.nvml_no_permission", "error", "NVML: no permission to open /dev/nvidia*.",
            "driver.nvml.status, driver.device_nodes, os.container",
            "CUDA cannot open the GPU as this user (or the container was started without --gpus).",
            RULES["nvml"]["url"],
        messages=(Message("Failed to initialize NVML: Insufficient Permissions",
                "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"),)),
    GPU_LOST,
    CodeDoc("driver.not_loaded", "error", "The user-space driver is installed but the kernel module is not loaded.",
            "driver.nvml.status, driver.kernel_module.loaded", "CUDA sees no GPU until `modprobe nvidia` succeeds.",
            RULES["nvml"]["url"],
        messages=(Message("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
                "https://docs.nvidia.com/deploy/nvidia-smi/index.html"),
                  Message("Found no NVIDIA driver on your system",
                "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/detail/CUDAHooks.cpp"),)),
    CodeDoc("driver.nvml_hung", "error", "Asking NVML timed out: the driver or a GPU is hung.",
            "driver.nvml.status", "Every CUDA program and nvidia-smi will hang too.", RULES["nvml"]["url"]),
    CodeDoc("driver.nvml_failed", "error", "NVML failed to initialise with another error (a warning only where "
            "no NVIDIA device is seen on the PCI bus or in /proc/driver/nvidia); on WSL2, the Windows driver's "
            "libraries in /usr/lib/wsl/lib load but reach no GPU (Windows driver, Windows build, /dev/dxg).",
            "driver.nvml.status, gpu.pci_devices, gpu.proc_devices, os.wsl, driver.wsl_libcuda, driver.wsl_dxg",
            "CUDA fails the same way; the finding gives the code's meaning and fix.", RULES["nvml"]["url"],
        messages=(Message("Failed to initialize NVML: Unknown Error",
                "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html"),)),
    CodeDoc("driver.stale_library_link", "error",
            "A driver library link (libnvidia-*.so.N) points to another driver version's file, or to one that no "
            "longer exists, left by an update.", "driver.library_links, driver.kernel_module.version",
            "Containers (the toolkit injects every driver library) and programs that load it fail.",
            RULES["nvml"]["url"]),
)


def _installed(facts: Facts) -> bool:
    return facts.value("driver.installed") is True


#: Every driver-health question at once (tests, and callers that want this area only).
driver_health = group("driver-health")

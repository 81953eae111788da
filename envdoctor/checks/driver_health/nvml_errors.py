"""NVML errors that no more specific question explains: no permission, GPU lost, module not loaded, hung."""

from __future__ import annotations

from typing import Any, List

from ...facts import Facts
from ...findings import AnyOf, Finding, Fix
from .. import CheckContext, check, docs_for
from . import DOCS, READS, WSL_LIB, _driver_label, _evidence, _installed, _nvml_status, _pci_gpus, _source


def _sentence(text: str) -> str:
    """``text`` as the start of a sentence, without a closing full stop (the caller adds one)."""
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:]


def _nvml_reason(facts: Facts) -> str:
    f = facts.get("driver.nvml.status")
    return f.reason if f is not None else ""


def _nvml_errors(facts: Facts) -> List[Finding]:
    """NVML failures that no more specific finding explains."""
    status = _nvml_status(facts)
    # "starved" and "deadline": NVML was not asked in time because the machine was busy or the time was
    # spent; not the driver's fault (the unseen layer is gpu.unverified).
    if status in (None, "ok", "no_binding", "starved", "deadline", "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
                  "NVML_ERROR_LIBRARY_NOT_FOUND"):
        return []
    from ..gpus import describe, has_nvidia_device

    # Where no NVIDIA device is seen (nothing on the PCI bus or in /proc/driver/nvidia, no module loaded),
    # an NVML failure cannot stop a GPU job: a warning. Where one is, an error: the node is not passed.
    wsl = facts.value("os.wsl") == "WSL2"
    # On WSL2 the GPU is never on Linux's PCI bus: the Windows driver's libraries mapped in /usr/lib/wsl/lib say
    # that Windows has an NVIDIA driver (and so a GPU) that Linux programs expect to use.
    severe = "error" if has_nvidia_device(facts) or (wsl and facts.value("driver.wsl_libcuda")) else "warning"
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
    if wsl and status not in ("NVML_ERROR_NO_PERMISSION", "NVML_ERROR_GPU_IS_LOST", "timed_out", "worker_failed"):
        # (a Linux driver installed inside WSL, or no Windows libcuda at all, is the WSL question's: it yields)
        return [_wsl_unreachable(facts, status, severe, ev)]
    if status == "NVML_ERROR_DRIVER_NOT_LOADED":
        # (where a module, Secure Boot or nouveau question explains it: the check yields to that)
        gpus = _pci_gpus(facts)
        version = facts.value("driver.userspace.version")
        return [Finding(
            code="driver.not_loaded", severity=severe, components=["driver", "kernel"],
            title="The NVIDIA user-space driver%s is installed, but the nvidia kernel module is not loaded%s" % (
                " %s" % version if version else "", " (GPU %s on the PCI bus)" % ", ".join(gpus) if gpus else ""),
            detail="libnvidia-ml is present but /dev/nvidiactl is missing or the module failed to load (%s). "
                   "`sudo modprobe nvidia` either loads it or prints why not (e.g. \"Key was rejected by "
                   "service\": Secure Boot; \"Module nvidia not found\": not built for this kernel)." % reason,
            evidence=ev + _evidence(facts, "driver.kernel_module.loaded", "driver.module_for_running_kernel"),
            source=_source("nvml"),
            fix=Fix(text="Load the module and read the kernel log if it fails.",
                    commands=["sudo modprobe nvidia", "sudo dmesg -T | grep -i -E 'nvidia|nvrm' | tail -n 20"]),
        )]
    if status == "timed_out":
        from ...host.nvml_worker import describe_call

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


def _wsl_unreachable(facts: Facts, status: str, severity: str, ev: List[Any]) -> Finding:
    """WSL2: the Windows driver's libraries load but NVML cannot reach a GPU through them."""
    from ..gpus import describe

    dxg = facts.value("driver.wsl_dxg")
    winver = facts.value("driver.version")
    short = status[len("NVML_ERROR_"):] if status.startswith("NVML_ERROR_") else status
    if dxg is False:
        why = ("/dev/dxg, WSL 2's GPU device, is missing: this Windows build or WSL kernel offers Linux no GPU "
               "paravirtualisation (GPU support off, or a WSL too old for it)")
    else:
        why = ("/dev/dxg is there, so the failure is on the Windows side: a Windows driver without WSL support or "
               "older than WSL needs, a Windows build whose WSL GPU support is broken (Insider builds have had "
               "such regressions), the GPU disabled or in TCC mode on Windows (WSL needs WDDM), or a Windows "
               "update that has not been followed by a WSL restart")
    return Finding(
        code="driver.nvml_failed", severity=severity, components=["driver", "os"],
        title="WSL2: the Windows NVIDIA driver%s gives this WSL instance no GPU (NVML: %s)" % (
            " %s" % winver if winver else "", short),
        detail="NVML could not reach a GPU through the Windows driver's libraries in %s (%s: %s), so nvidia-smi "
               "cannot communicate with the driver and CUDA finds no device (\"no CUDA-capable device is "
               "detected\"); %s. No Linux kernel module is involved on WSL2: do not install a Linux NVIDIA driver "
               "inside WSL to fix this." % (WSL_LIB, short, describe(status).meaning, why),
        evidence=ev + _evidence(facts, "os.wsl", "driver.wsl_libcuda", "driver.wsl_dxg", "kernel.release"),
        source=_source("wsl_gpu"),
        fix=Fix(text="Check that the GPU works on Windows and which Windows build runs (both from here, through WSL "
                     "interop); update the NVIDIA driver on Windows and WSL itself (or leave a Windows build with "
                     "a known WSL GPU regression); then restart WSL.",
                commands=["nvidia-smi.exe", "cmd.exe /c ver", "ls -l /dev/dxg", "wsl.exe --update",
                          "wsl.exe --shutdown   # then reopen the WSL terminal"]),
    )


#: The kernel's messages, or the installed module against the GPUs, name why the driver drives no GPU: their error
#: says it (one root cause, one finding); a hung driver and a permission problem are told regardless.
KERNEL_SAYS_WHY = ("kernel-log:*>=error", "driver-support:*>=error")


@check("driver-health.nvml-errors", requires=("driver.installed",), reads=READS, layers=("driver", "gpu"),
       codes=docs_for(DOCS, "driver.nvml_no_permission", "gpu.lost", "driver.not_loaded", "driver.nvml_hung",
                      "driver.nvml_failed"),
       yields={"driver.not_loaded": ("driver.no_module_for_kernel", "driver.module_unsigned_secure_boot",
                                     "driver.module_key_not_enrolled", "driver.nouveau_conflict",
                                     "driver.nova_conflict", "driver.linux_driver_in_wsl",
                                     "driver.wsl1_no_gpu") + KERNEL_SAYS_WHY,
               "gpu.lost": KERNEL_SAYS_WHY,
               "driver.nvml_failed": ("driver.linux_driver_in_wsl", "driver.wsl_libcuda_missing",
                                      "driver.wsl_lib_not_in_loader_path", "driver.wsl1_no_gpu") + KERNEL_SAYS_WHY})
def nvml_errors(ctx: CheckContext) -> List[Finding]:
    """NVML failures that no more specific finding (of the questions above) explains."""
    return _nvml_errors(ctx.facts) if _installed(ctx.facts) else []

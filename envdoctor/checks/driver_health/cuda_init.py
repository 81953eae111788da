"""Does CUDA itself start? What ``cuInit(0)`` returned in a child that loaded ``libcuda.so.1`` with the inspected
environment (``driver.cuda_init``), judged with NVIDIA's own description of each ``CUresult``
(``matrix/data/cuda_results.json``, read from cuda.h) and, where other facts explain it, the cause and its fix.

One finding per cause: where another question already names the cause of the failure (the fabric manager, the
forward-compatibility package, a stub libcuda, CUDA_VISIBLE_DEVICES, missing device nodes, nvidia-uvm failing
in the kernel log), this finding yields to it. Snapshots made before the question was asked hold no
``driver.cuda_init``: every rule here stays silent on them.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix.cuda_results import name_of, summary
from .. import CheckContext, CodeDoc, Message, check
from . import CHECKED, READS, _driver_label, _evidence, _installed

#: Where each rule comes from.
#: NVIDIA's page of the CUresult enum (cuda.h's doc comments; the catalog, matrix/data/cuda_results.json, holds them).
CUDA_H = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"
CUDART = "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html"
CUINIT_DOC = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html"
UVM_HMM = ("https://github.com/NVIDIA/open-gpu-kernel-modules/blob/df1c9a3de2be4b130f4fc7680f7198193d8ac6ad/"
           "kernel-open/nvidia-uvm/uvm_hmm.c")
FABRIC = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html"
COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"
ENV_DOC = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars"
EXCLUSIVE = "https://docs.nvidia.com/deploy/nvidia-smi/index.html"

#: CUresult numbers the rules name (cuda.h).
NOT_INITIALIZED, STUB_LIBRARY, DEVICE_UNAVAILABLE, NO_DEVICE = 3, 34, 46, 100
SYSTEM_NOT_READY, SYSTEM_DRIVER_MISMATCH, COMPAT_NOT_SUPPORTED, UNKNOWN = 802, 803, 804, 999

HMM_FIX = ["echo 'options nvidia_uvm uvm_disable_hmm=1' | sudo tee /etc/modprobe.d/nvidia-uvm-hmm.conf",
           "sudo modprobe -r nvidia_uvm && sudo modprobe nvidia_uvm   # or reboot"]

CODES = (
    CodeDoc("driver.cuda_init_failed", "error",
            "CUDA does not initialise: cuInit fails on a machine with an NVIDIA GPU (the finding names the "
            "CUresult, NVIDIA's description of it and, where the recorded facts explain it, the cause and fix).",
            "driver.cuda_init, driver.cuda_init.code, driver.nvml.status, gpu.count, driver.nvswitch.present, "
            "driver.fabric_manager.state, driver.device_nodes, env.cuda_visible_devices, cuda.forward_compat",
            "Every CUDA program fails at its first CUDA call (PyTorch: torch.cuda.is_available() is False) even "
            "where nvidia-smi, which does not use CUDA, shows the GPUs.", CUDA_H,
        messages=(Message("CUDA driver initialization failed, you might not have a CUDA gpu",
                          "https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDAFunctions.cpp"),
                  Message("cuInit(0) failed -> CUDA_ERROR_NOT_INITIALIZED", CUDA_H),
                  Message("system not yet initialized", CUDART))),
    CodeDoc("driver.uvm_hmm_breaks_cuinit", "error",
            "cuInit fails (CUDA_ERROR_NOT_INITIALIZED, or no device while NVML lists GPUs) while nvidia_uvm runs "
            "with HMM enabled (uvm_disable_hmm not set, its default on x86_64): the known failure of nvidia_uvm's "
            "HMM support on some kernels; `options nvidia_uvm uvm_disable_hmm=1` is the workaround.",
            "driver.cuda_init.code, driver.uvm_disable_hmm, driver.nvml.status, gpu.count, env.cuda_visible_devices",
            "nvidia-smi and NVML work, but every CUDA program's initialisation fails until nvidia_uvm is reloaded "
            "with HMM disabled.", UVM_HMM,
        messages=(Message("CUDA_ERROR_NOT_INITIALIZED: initialization", CUDA_H),)),
    CodeDoc("driver.cuda_init_hung", "error",
            "CUDA did not answer: cuInit (or a call right after it) did not return within the time limit, or the "
            "process asking died in it.", "driver.cuda_init, driver.cuda_init.failure",
            "Every CUDA program hangs (or dies) at start the same way.", CUINIT_DOC),
    CodeDoc("driver.cuda_devices_hidden", "warning",
            "CUDA counts fewer GPUs than NVML lists, with no CUDA_VISIBLE_DEVICES set: the GPUs CUDA does not see "
            "are named by PCI bus id.",
            "driver.cuda_init.device_count, driver.cuda_init.bus_ids, gpu.count, gpu.N.pci_bus_id, "
            "env.cuda_visible_devices",
            "Programs get fewer GPUs than the machine has (a GPU in a bad state, a cgroup or device-node restriction, "
            "a GPU CUDA does not support).", CUINIT_DOC),
)


def _nvml_gpus(facts: Facts) -> int:
    return facts.count("gpu.count", 4096) or 0


def _gpu_present(facts: Facts) -> bool:
    if _nvml_gpus(facts) > 0:
        return True
    pci = facts.value("driver.nvidia_pci_gpus")
    return isinstance(pci, list) and bool(pci)


def _bus(text: Any) -> Optional[str]:
    """A PCI bus id in one spelling (NVML's ``00000000:01:00.0``, CUDA's ``0000:01:00.0``): ``0000:01:00.0``."""
    m = re.match(r"^\s*([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\s*$", str(text or ""))
    if m is None:
        return None
    return "%04x:%s:%s.%s" % (int(m.group(1), 16) & 0xFFFF, m.group(2).lower(), m.group(3).lower(), m.group(4))


def _described(code: int) -> str:
    text = summary(code).rstrip(".")
    return "%s (%d)%s" % (name_of(code), code, ": \"%s\"" % text if text else "")


def _source(url: str, rule: str) -> Dict[str, Any]:
    return {"rule": rule, "url": url, "checked": CHECKED}


def _uvm_node_missing(facts: Facts) -> bool:
    nodes = facts.value("driver.device_nodes")
    return isinstance(nodes, list) and "nvidia-uvm" not in nodes


def _cause(facts: Facts, code: int) -> Optional[Dict[str, Any]]:
    """What the recorded facts say caused ``code``: {"why", "fix", "commands", "url"}, or None."""
    cvd = facts.value("env.cuda_visible_devices")
    if code == SYSTEM_NOT_READY and facts.value("driver.nvswitch.present") is True:
        state = facts.value("driver.fabric_manager.state") or "not known"
        return {"why": "This machine has NVSwitches: CUDA is not ready until NVIDIA Fabric Manager has configured "
                       "the NVLink fabric (the nvidia-fabricmanager service is %s)." % state,
                "fix": "Start the fabric manager (the nvidia-fabricmanager package of exactly the driver's version) "
                       "and enable it at boot.",
                "commands": ["sudo systemctl enable --now nvidia-fabricmanager",
                             "journalctl -u nvidia-fabricmanager -b --no-pager | tail -n 20"], "url": FABRIC}
    if code == UNKNOWN and _uvm_node_missing(facts):
        return {"why": "/dev/nvidia-uvm does not exist: the nvidia_uvm module, which CUDA needs, is not loaded (or "
                       "its device node was not created).",
                "fix": "Load nvidia_uvm and create its device node (and load it at boot).",
                "commands": ["sudo modprobe nvidia-uvm", "sudo nvidia-modprobe -u -c=0"], "url": CUINIT_DOC}
    if code in (NOT_INITIALIZED, NO_DEVICE) and facts.value("driver.uvm_disable_hmm") is False \
            and _nvml_gpus(facts) > 0 and cvd is None:
        return {"hmm": True}
    if code == NO_DEVICE and _nvml_gpus(facts) > 0:
        if cvd is not None:
            return {"why": "CUDA_VISIBLE_DEVICES=%r is set: CUDA shows only the GPUs it names, while NVML lists %d."
                           % (cvd, _nvml_gpus(facts)),
                    "fix": "Unset CUDA_VISIBLE_DEVICES, or name GPUs that exist.",
                    "commands": ["unset CUDA_VISIBLE_DEVICES"], "url": ENV_DOC}
        return {"why": "NVML lists %d GPU(s) but CUDA finds none: this process may not open the GPUs' device "
                       "nodes (/dev/nvidia*: their permissions, a container or cgroup device rule) that NVML's "
                       "process could." % _nvml_gpus(facts),
                "fix": "Check that this user may open /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidiaN (the video "
                       "or render group, the container's device list, the job's cgroup).",
                "commands": ["ls -l /dev/nvidia*", "id"], "url": CUINIT_DOC}
    if code == COMPAT_NOT_SUPPORTED:
        return {"why": "A forward-compatibility libcuda (the cuda-compat package) is loaded, and this GPU does "
                       "not support forward compatibility (Data Center GPUs and a few others only).",
                "fix": "Take the cuda-compat directory off LD_LIBRARY_PATH (or out of the loader's configuration) so "
                       "the driver's own libcuda is loaded.",
                "commands": ["echo $LD_LIBRARY_PATH", "ldconfig -p | grep libcuda.so.1"], "url": COMPAT}
    if code == SYSTEM_DRIVER_MISMATCH:
        return {"why": "The libcuda CUDA loaded does not belong to the running kernel module: a forward-"
                       "compatibility libcuda older than the driver, or a driver upgraded without a reboot.",
                "fix": "Load the driver's own libcuda (take cuda-compat off the loader path), or reboot after a "
                       "driver upgrade.", "commands": ["cat /proc/driver/nvidia/version", "ldconfig -p | grep libcuda"],
                "url": COMPAT}
    if code == STUB_LIBRARY:
        return {"why": "The libcuda.so.1 loaded is the CUDA toolkit's stub (lib64/stubs), meant only for linking: "
                       "a stubs directory is ahead of the driver's library on the loader path.",
                "fix": "Remove the stubs directory from LD_LIBRARY_PATH (and from /etc/ld.so.conf.d).",
                "commands": ["echo $LD_LIBRARY_PATH"], "url": CUDA_H}
    if code == DEVICE_UNAVAILABLE:
        return {"why": "The GPUs are in exclusive-process (or prohibited) compute mode and held by other "
                       "processes.",
                "fix": "Wait for, or stop, the processes using the GPUs, or set the default compute mode.",
                "commands": ["nvidia-smi --query-gpu=index,compute_mode --format=csv",
                             "nvidia-smi --query-compute-apps=pid,process_name,gpu_bus_id --format=csv"],
                "url": EXCLUSIVE}
    return None


def _failed(facts: Facts) -> List[Finding]:
    code = facts.value("driver.cuda_init.code")
    if not isinstance(code, int) or code == 0 or not _gpu_present(facts):
        return []
    described = _described(code)
    evidence = _evidence(facts, "driver.cuda_init", "driver.cuda_init.code", "driver.cuda_init.driver_version",
                         "gpu.count", "driver.nvidia_pci_gpus", "driver.uvm_disable_hmm", "driver.nvswitch.present",
                         "driver.fabric_manager.state", "driver.device_nodes", "env.cuda_visible_devices",
                         "driver.kernel_module.flavor")
    cause = _cause(facts, code)
    gpus = _nvml_gpus(facts)
    seen = ("NVML lists %d GPU(s)" % gpus) if gpus else "an NVIDIA GPU is on the PCI bus"
    if cause is not None and cause.get("hmm"):
        return [Finding(
            code="driver.uvm_hmm_breaks_cuinit", severity="error", components=["driver", "cuda"],
            title="CUDA does not initialise (cuInit: %s, %d) while NVML lists the GPUs: nvidia_uvm runs with HMM "
                  "enabled (uvm_disable_hmm=N); set `options nvidia_uvm uvm_disable_hmm=1`" % (name_of(code), code),
            detail="cuInit returns %s. %s, so the driver itself is up; nvidia_uvm's HMM (heterogeneous memory "
                   "management) support is on (uvm_disable_hmm is N, the default on x86_64), and on some kernels it "
                   "makes CUDA's initialisation fail. Disabling it with the nvidia_uvm option uvm_disable_hmm=1 and "
                   "reloading nvidia_uvm lets CUDA start (CUDA then runs without HMM's system-allocated memory)."
                   % (described, seen),
            evidence=evidence,
            source=_source(UVM_HMM, "nvidia_uvm: module_param(uvm_disable_hmm, bool, 0444), default false on x86_64 "
                                    "(HMM enabled if possible), true elsewhere"),
            fix=Fix(text="Disable nvidia_uvm's HMM and reload nvidia_uvm (or reboot).", commands=list(HMM_FIX)))]
    if cause is not None:
        detail = "cuInit returns %s. %s %s" % (described, seen[0].upper() + seen[1:] + ".", cause["why"])
        title = "CUDA does not initialise on %s: cuInit returns %s (%d)" % (_driver_label(facts), name_of(code), code)
        return [Finding(code="driver.cuda_init_failed", severity="error", components=["driver", "cuda"], title=title,
                        detail=detail, evidence=evidence,
                        source=_source(cause["url"], "cuInit's CUresult, as cuda.h describes it"),
                        fix=Fix(text=cause["fix"], commands=list(cause["commands"])))]
    return [Finding(
        code="driver.cuda_init_failed", severity="error", components=["driver", "cuda"],
        title="CUDA does not initialise on %s: cuInit returns %s (%d)" % (_driver_label(facts), name_of(code), code),
        detail="cuInit returns %s. %s; nothing else recorded here explains the failure." % (
            described, seen[0].upper() + seen[1:]),
        evidence=evidence, source=_source(CUDA_H, "cuInit's CUresult, as cuda.h describes it"),
        fix=Fix(text="Look at the kernel log for the driver's messages around the failure, and at what CUDA "
                     "programs print with CUDA_LOG_FILE or strace.",
                commands=["sudo dmesg | grep -iE 'nvrm|nvidia' | tail -n 20"]))]


def _no_answer(facts: Facts) -> List[Finding]:
    failure = facts.value("driver.cuda_init.failure")
    if not isinstance(failure, dict) or failure.get("kind") not in ("timed_out", "crashed"):
        return []
    fact = facts.get("driver.cuda_init")
    if fact is None or not _gpu_present(facts):
        return []
    message = str(failure.get("message") or "")
    if failure.get("kind") == "crashed" and "died of" not in message:
        return []  # an exit without a signal: unverified, not a verdict
    hung = failure.get("kind") == "timed_out"
    return [Finding(
        code="driver.cuda_init_hung", severity="error", components=["driver", "cuda"],
        title=(message if message.startswith("CUDA did not answer") else "CUDA did not answer: %s" % message) if hung
        else "CUDA's initialisation crashed: %s" % message,
        detail="Asking CUDA to initialise (cuInit, then the device count) %s; every CUDA program will %s at start "
               "the same way. A driver that hangs here is often a GPU in a bad state (see the kernel log for Xid "
               "messages) or a busy driver without persistence mode on a large machine." % (
                   "did not finish" if hung else "killed the process asking", "hang" if hung else "die"),
        evidence=_evidence(facts, "driver.cuda_init", "driver.cuda_init.failure", "gpu.count"),
        source=_source(CUINIT_DOC, "cuInit initialises the driver API; it must return before any CUDA call"),
        fix=Fix(text="Look at the kernel log for Xid errors, and retry with persistence mode on.",
                commands=["sudo dmesg | grep -iE 'xid|nvrm' | tail -n 20", "sudo nvidia-smi -pm 1"]))]


def _hidden(facts: Facts) -> List[Finding]:
    count = facts.value("driver.cuda_init.device_count")
    gpus = _nvml_gpus(facts)
    if facts.value("driver.cuda_init.code") != 0 or not isinstance(count, int) or count >= gpus:
        return []
    if facts.get("env.cuda_visible_devices") is not None:
        return []  # the variable chooses; environment.cuda-visible-devices judges it
    if any(facts.value("gpu.%d.mig_mode_current" % i) is True for i in range(gpus)):
        return []  # MIG: CUDA counts instances, not GPUs
    cuda_buses = {_bus(b) for b in facts.items("driver.cuda_init.bus_ids")} - {None}
    nvml_buses = [_bus(facts.value("gpu.%d.pci_bus_id" % i)) for i in range(gpus)]
    unseen = [b for b in nvml_buses if b and b not in cuda_buses]
    named = ", ".join(unseen) if unseen else "not known which"
    return [Finding(
        code="driver.cuda_devices_hidden", severity="warning", components=["driver", "gpu", "cuda"],
        title="CUDA counts %d GPU(s), NVML lists %d: CUDA does not see %s" % (count, gpus, named),
        detail="With no CUDA_VISIBLE_DEVICES set, CUDA should count every GPU NVML lists. The GPUs it does not see "
               "(by PCI bus id: %s) are in a state CUDA refuses (look at the kernel log for Xid errors), not "
               "supported by this driver's CUDA, or their device nodes are not open to this process (a cgroup or "
               "container device rule)." % named,
        evidence=_evidence(facts, "driver.cuda_init.device_count", "driver.cuda_init.bus_ids", "gpu.count"),
        source=_source(CUINIT_DOC, "cuDeviceGetCount counts the devices CUDA can use"),
        fix=Fix(text="Look at the GPUs CUDA does not see: their state, the kernel log, this process's device access.",
                commands=["nvidia-smi -q -d PERFORMANCE,ECC | head -n 60", "sudo dmesg | grep -i xid | tail",
                          "ls -l /dev/nvidia*"]))]


#: The questions that name a cause of cuInit's failure themselves: when one of them speaks, this one does not.
CAUSES = ("driver.fabric_manager_not_running", "driver.forward_compat_unsupported_gpu",
          "driver.forward_compat_older_than_driver", "driver.libcuda_stub_on_loader_path",
          "driver.device_nodes_missing", "gpu.cuda_visible_devices_hides_all", "driver.uvm_init_failed",
          "driver.not_loaded", "driver.library_mismatch", "driver.nvml_failed", "driver.nvml_no_permission", "gpu.lost")


@check("driver-health.cuda-init", requires=("driver.installed",), reads=READS + ("gpu.*", "gpu.*.*"),
       layers=("driver",), codes=CODES,
       yields={"driver.cuda_init_failed": CAUSES, "driver.cuda_init_hung": ("driver.nvml_hung", "gpu.lost")})
def cuda_init(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    if not _installed(facts) or facts.get("driver.cuda_init") is None:
        return []
    return _failed(facts) + _no_answer(facts) + _hidden(facts)

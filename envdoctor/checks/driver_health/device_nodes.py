"""/dev/nvidia* nodes missing while the module is loaded."""

from __future__ import annotations

from typing import Any, Dict, List

from ... import lazyre
from ...facts import Facts
from ...findings import Finding, Fix
from ...host.nvml_worker import MAX_GPUS
from ...probes.driver import NVIDIA_MODPROBE, module_name
from .. import CheckContext, check, docs_for
from . import DOCS, READS, _driver_label, _evidence, _installed, _source
from .container_gpus import without_gpus

_GPU_NODE = lazyre.compile(r"^nvidia\d+$")


def _device_nodes(facts: Facts) -> List[Finding]:
    if facts.value("driver.kernel_module.loaded") is not True:
        return []
    started_without = without_gpus(facts)
    if started_without:
        return started_without
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
    uvm = facts.value("driver.uvm_module")
    if isinstance(uvm, dict) and uvm.get("loaded") is False:
        unloadable = _uvm_unloadable(facts, uvm)
        if unloadable:
            return unloadable
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


def _ko_name(path: str) -> str:
    """nvidia_331_updates_uvm from /lib/modules/<release>/updates/dkms/nvidia-331-updates-uvm.ko(.xz)."""
    return module_name(path.rsplit("/", 1)[-1].split(".ko", 1)[0])


def _uvm_unloadable(facts: Facts, uvm: Dict[str, Any]) -> List[Finding]:
    """nvidia_uvm is not loaded and no user's CUDA program can load it: the running kernel's uvm module is
    installed only under a packager's name (nvidia_331_updates_uvm.ko) that no ``alias nvidia-uvm`` line
    resolves, so `modprobe nvidia-uvm`, which nvidia-modprobe runs for libcuda, finds no module; or the module is
    there but the setuid nvidia-modprobe through which libcuda loads it for a user is not. Judged only where the
    module's files are seen (without them nothing says the module could not load on demand)."""
    files = [f for f in uvm.get("files") or [] if isinstance(f, str)]
    if not files:
        return []
    names = sorted({_ko_name(f) for f in files})
    aliases = [a for a in uvm.get("aliases") or [] if isinstance(a, dict) and isinstance(a.get("target"), str)]
    resolved = "nvidia_uvm" in names or any(module_name(str(a["target"])) in names for a in aliases)
    evidence = _evidence(facts, "driver.device_nodes", "driver.kernel_module.loaded", "driver.uvm_module")
    if not resolved:
        alias = "alias nvidia-uvm %s" % names[0]
        wrong = ", ".join(sorted({str(a["target"])[:80] for a in aliases})[:5])
        return [Finding(
            code="driver.device_nodes_missing", severity="warning", components=["driver", "kernel"],
            title="The nvidia module of %s is loaded, but nvidia-uvm is not and cannot be loaded by that name: "
                  "/dev/nvidia-uvm is missing, so CUDA programs fail" % _driver_label(facts),
            detail="CUDA needs /dev/nvidia-uvm (the nvidia-uvm module); for a user's program libcuda loads it "
                   "through nvidia-modprobe, which runs `modprobe nvidia-uvm`. This kernel's uvm module is "
                   "installed as %s (%s), a driver package's renamed copy, and %s, so that modprobe finds no "
                   "module ('Module nvidia-uvm not found') and cuInit fails. Packages that rename the module "
                   "ship the alias in their own modprobe.d file; a configuration that replaces it (a hybrid-"
                   "graphics switcher such as bumblebee's bumblebee.conf) must carry it too."
                   % (", ".join(names), ", ".join(files),
                      "the aliases there name %s, which is not installed for this kernel" % wrong if aliases
                      else "no `alias nvidia-uvm` line in modprobe's configuration names it"),
            evidence=evidence,
            source=_source("device_nodes"),
            fix=Fix(text="Let `modprobe nvidia-uvm` find the module (an alias to its installed name), then load it "
                         "and create its node.",
                    commands=["echo '%s' | sudo tee /etc/modprobe.d/nvidia-uvm-alias.conf" % alias,
                              "sudo modprobe nvidia-uvm", "sudo nvidia-modprobe -u -c=0",
                              "ls -l /dev/nvidia-uvm"]),
        )]
    if uvm.get("modprobe_helper"):
        return []  # CUDA loads it on first use through the setuid helper
    return [Finding(
        code="driver.device_nodes_missing", severity="warning", components=["driver", "kernel"],
        title="The nvidia module of %s is loaded, but nvidia-uvm is not, /dev/nvidia-uvm is missing and no "
              "nvidia-modprobe is installed to load it: CUDA programs of users fail" % _driver_label(facts),
        detail="CUDA needs /dev/nvidia-uvm (the nvidia-uvm module, installed here as %s). It is not loaded, and "
               "a user's CUDA program can load it only through the setuid nvidia-modprobe, which is not installed "
               "(%s is missing), so cuInit fails ('unknown error', 999) until root loads the module."
               % (", ".join(files), NVIDIA_MODPROBE),
        evidence=evidence,
        source=_source("device_nodes"),
        fix=Fix(text="Load nvidia-uvm now and at every boot (or install nvidia-modprobe, which loads it on "
                     "demand).",
                commands=["sudo modprobe nvidia-uvm",
                          "echo nvidia-uvm | sudo tee /etc/modules-load.d/nvidia-uvm.conf",
                          "ls -l /dev/nvidia-uvm"]),
    )]


@check("driver-health.device-nodes", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.device_nodes_missing"),
       yields={"*": ("driver.library_mismatch", "driver.userspace_missing")})
def device_nodes(ctx: CheckContext) -> List[Finding]:
    """Missing device nodes are no news where the user-space half is missing or of another version."""
    return _device_nodes(ctx.facts) if _installed(ctx.facts) else []

"""A container started without GPUs: the host's driver is visible, nothing of it was passed in (said as
driver.device_nodes_missing, by the device-nodes check; driver.userspace_missing stays quiet: one root cause).

A container shares the host's kernel, so /proc/driver/nvidia and the GPUs' /sys entries show through, but the device
nodes (/dev/nvidia*) and the driver's user-space libraries (libcuda, libnvidia-ml) and nvidia-smi reach it only
when the NVIDIA Container Toolkit injects them, which it does for a container that asks for GPUs (``docker run
--gpus``, the ``nvidia`` runtime with NVIDIA_VISIBLE_DEVICES, a CDI device, a Kubernetes ``nvidia.com/gpu``
resource). Without that request the toolkit behaves like runc: neither GPUs nor driver capabilities are exposed.
Installing a driver in the image (what "no user-space driver" would suggest on a host) is the wrong fix there.
"""

from __future__ import annotations

from typing import List

from ... import lazyre
from ...facts import Facts
from ...findings import Finding, Fix
from . import _driver_label, _evidence, _nvml_status

#: NVIDIA Container Toolkit's own documents (checked on CHECKED).
SPECIALIZED_DOC = ("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
                   "docker-specialized.html")
CDI_DOC = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html"
K8S_PLUGIN_DOC = "https://github.com/NVIDIA/k8s-device-plugin#running-gpu-jobs"
CHECKED = "2026-11-30"

#: The nodes a GPU request brings: /dev/nvidiactl and /dev/nvidiaN (nvidia-uvm and nvidia-modeset follow them).
_GPU_NODE = lazyre.compile(r"^nvidia(ctl|\d+)$")

#: How each container engine asks for GPUs (the toolkit's and the device plugin's docs), by os.container's value.
_REQUESTS = {
    "docker": ("docker run --gpus all ...",
               "docker run --runtime=nvidia -e NVIDIA_VISIBLE_DEVICES=all ...  # Docker before 19.03"),
    "podman": ("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
               "podman run --device nvidia.com/gpu=all ..."),
}
_K8S = ("In Kubernetes, request the GPUs in the pod's container spec (resources: limits: nvidia.com/gpu: 1) on a node "
        "running the NVIDIA device plugin.")


def _libcuda_resolves(facts: Facts) -> bool:
    chosen = facts.mapping("libraries.libcuda").get("libcuda.so.1")
    return isinstance(chosen, dict) and bool(chosen.get("path"))


def without_gpus(facts: Facts) -> List[Finding]:
    """Fires on what the toolkit injects into every GPU container: libnvidia-ml (the ``utility`` capability, part
    of the default ``utility,compute``) and libcuda (``compute``) with /dev/nvidiactl and /dev/nvidiaN. None of
    them here means no GPU was requested. Where /dev could not be listed, the libraries alone decide (a container
    given GPUs through the toolkit has them); where a GPU node is there, the GPU was passed in and what else is
    missing is another finding's."""
    container = facts.value("os.container")
    if not container or facts.value("os.wsl") == "WSL2":
        return []
    if facts.value("driver.kernel_module.loaded") is not True:
        return []  # the host's module shows through /proc/driver/nvidia; without it this is the host's problem
    nodes = facts.value("driver.device_nodes")
    listed = isinstance(nodes, list)
    if listed and any(_GPU_NODE.match(n) for n in facts.strings("driver.device_nodes")):
        return []  # a GPU was passed in (what else is missing is driver.device_nodes_missing's)
    if _nvml_status(facts) != "NVML_ERROR_LIBRARY_NOT_FOUND" or facts.mapping("driver.userspace.elsewhere"):
        return []  # the driver's libraries are there (in the image, or injected): not this class
    if _libcuda_resolves(facts):
        return []  # libcuda without libnvidia-ml: capabilities without utility, not a container without GPUs
    kind = str(container)
    commands = list(_REQUESTS.get(kind) or _REQUESTS["docker"] + _REQUESTS["podman"])
    missing = ("no /dev/nvidia* device node and no driver library (libcuda, libnvidia-ml, nvidia-smi) was passed in"
               if listed else "no driver library (libcuda, libnvidia-ml, nvidia-smi) was passed in, which a GPU "
               "request brings with the /dev/nvidia* device nodes")
    return [Finding(
        code="driver.device_nodes_missing", severity="error", components=["driver"],
        title="This %s container was started without GPUs: the host's %s is loaded, but %s" % (
            kind, _driver_label(facts), missing),
        detail="A container sees the host's kernel module (/proc/driver/nvidia) but gets the GPUs' device nodes "
               "(/dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm) and the driver's user-space libraries only from "
               "the NVIDIA Container Toolkit, which injects them into a container that asks for GPUs; without the "
               "request it behaves like runc (neither GPUs nor driver capabilities are exposed). Restart the "
               "container with the GPUs requested; do not install a driver inside the image (it must be the "
               "host's version, and the toolkit provides it).%s" % (
                   "" if listed else " (/dev could not be listed here.)"),
        evidence=_evidence(facts, "os.container", "driver.kernel_module.version", "driver.device_nodes",
                           "driver.nvml.status", "libraries.libcuda"),
        source={"rule": "GPUs and driver libraries are injected only into containers that request them "
                        "(--gpus, NVIDIA_VISIBLE_DEVICES with the nvidia runtime, CDI, nvidia.com/gpu); "
                        "unset NVIDIA_VISIBLE_DEVICES behaves like runc",
                "url": SPECIALIZED_DOC, "also": [CDI_DOC, K8S_PLUGIN_DOC], "checked": CHECKED},
        fix=Fix(text="Start the container again with the GPUs requested (the host needs the NVIDIA Container "
                     "Toolkit configured for this engine).%s" % ("" if kind in _REQUESTS else " " + _K8S),
                commands=[] if kind == "kubernetes" else commands),
    )]

"""Checks on running GPU containers: Docker without the NVIDIA Container Toolkit or its runtime,
and Docker installed from snap (whose confinement the NVIDIA runtime does not support)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

CHECKED = "2026-11-22"
INSTALL_GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
SNAP_ISSUE = "https://github.com/NVIDIA/nvidia-container-toolkit/issues/522"
CONFIGURE = ["sudo nvidia-ctk runtime configure --runtime=docker", "sudo systemctl restart docker"]


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def _has_gpu(facts: Facts) -> bool:
    count = facts.value("gpu.count")
    return isinstance(count, int) and count > 0


@check("container-toolkit", codes=(
    CodeDoc("container-toolkit.missing", "warning", "Docker is installed on a GPU machine without the NVIDIA "
            "Container Toolkit.", "container.docker, container.toolkit, gpu.count",
            "`docker run --gpus all` fails with 'could not select device driver \"\" with capabilities: [[gpu]]'.",
            INSTALL_GUIDE),
    CodeDoc("container-toolkit.runtime_not_configured", "warning", "The NVIDIA Container Toolkit is installed but "
            "Docker has no nvidia runtime registered.", "container.toolkit, container.nvidia_runtime_configured",
            "`docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia'.", INSTALL_GUIDE),
    CodeDoc("docker.snap", "warning", "Docker is installed from snap.", "container.docker_snap",
            "The snap's confinement does not see the host's NVIDIA libraries: GPU containers fail with "
            "'nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1'.", SNAP_ISSUE),
))
def container_toolkit(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    docker = facts.value("container.docker")
    if not isinstance(docker, dict) or not docker.get("installed"):
        return
    dver = docker.get("server") or docker.get("client") or "?"
    if facts.value("container.docker_snap") is True:
        yield Finding(
            code="docker.snap", severity="warning", components=["docker", "container-toolkit"],
            title="Docker %s is the snap package; the NVIDIA Container Toolkit does not support snap Docker" % dver,
            detail="The snap runs dockerd confined, with its own daemon.json under /var/snap/docker; the NVIDIA "
                   "runtime hook cannot load the host's libnvidia-ml.so.1 from inside it (canonical/docker-snap#148), "
                   "and NVIDIA's toolkit tracks snap support as an open request (NVIDIA/nvidia-container-toolkit#522).",
            evidence=_ev(facts, "container.docker_snap", "container.docker"),
            source={"rule": "the NVIDIA Container Toolkit supports Docker from Docker's or the distribution's "
                            "packages, not the snap", "url": SNAP_ISSUE, "checked": CHECKED},
            fix=Fix(text="Replace the snap with Docker Engine from Docker's apt repository, then install and "
                         "configure the toolkit.",
                    commands=["sudo snap remove --purge docker",
                              "curl -fsSL https://get.docker.com | sh"] + CONFIGURE,
                    install="envdoctor install container-toolkit"))
    if not _has_gpu(facts):
        return
    tk = facts.value("container.toolkit")
    if isinstance(tk, dict) and tk.get("installed") is False:
        yield Finding(
            code="container-toolkit.missing", severity="warning", components=["container-toolkit", "docker"],
            title="Docker %s is installed on a machine with %s NVIDIA GPU(s), but the NVIDIA Container Toolkit "
                  "is not" % (dver, facts.value("gpu.count")),
            detail="Without nvidia-container-toolkit, `docker run --gpus all ...` fails with 'could not select "
                   "device driver \"\" with capabilities: [[gpu]]'.",
            evidence=_ev(facts, "container.docker", "container.toolkit", "gpu.count"),
            source={"rule": "GPU containers under Docker need the NVIDIA Container Toolkit", "url": INSTALL_GUIDE,
                    "checked": CHECKED},
            fix=Fix(text="Install the NVIDIA Container Toolkit and register its runtime with Docker.",
                    commands=CONFIGURE, install="envdoctor install container-toolkit"))
        return
    if isinstance(tk, dict) and tk.get("installed") and facts.value("container.nvidia_runtime_configured") is False:
        yield Finding(
            code="container-toolkit.runtime_not_configured", severity="warning",
            components=["container-toolkit", "docker"],
            title="NVIDIA Container Toolkit %s is installed, but Docker %s has no nvidia runtime registered" % (
                tk.get("version"), dver),
            detail="`docker run --runtime=nvidia` fails with 'unknown or invalid runtime name: nvidia' until the "
                   "runtime is added to /etc/docker/daemon.json and dockerd is restarted.",
            evidence=_ev(facts, "container.toolkit", "container.nvidia_runtime_configured",
                         "container.daemon_json"),
            source={"rule": "configure Docker with nvidia-ctk runtime configure --runtime=docker",
                    "url": INSTALL_GUIDE + "#configuring-docker", "checked": CHECKED},
            fix=Fix(text="Register the nvidia runtime with Docker and restart it.", commands=CONFIGURE,
                    install="envdoctor install container-toolkit"))

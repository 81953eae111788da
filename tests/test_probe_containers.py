"""The containers probe: Docker client/daemon, daemon.json, NVIDIA Container Toolkit, CDI, Podman.

Command outputs are real; each comment says where it was captured or published.
"""

from __future__ import annotations

from envdoctor.facts import Facts
from envdoctor.probes import ProbeContext
from envdoctor.probes.containers import DOCKER_RUNTIMES, DOCKER_VERSION, probe_containers

from .conftest import make_host

PATH_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

# `docker version --format '{{json .}}'` with a reachable daemon (Docker 20.10.8), as logged by a public
# Pulumi docker-image deployment (the Client part's Platform/CloudIntegration fields come from Docker Desktop).
DOCKER_UP_JSON = (
    '{"Client":{"Platform":{"Name":""},"CloudIntegration":"1.0.17","Version":"20.10.8","ApiVersion":"1.41",'
    '"DefaultAPIVersion":"1.41","GitCommit":"3967b7d","GoVersion":"go1.16.6","Os":"darwin","Arch":"amd64",'
    '"BuildTime":"Fri Jul 30 19:55:20 2021","Context":"default","Experimental":true},'
    '"Server":{"Platform":{"Name":"Docker Engine - Community"},"Components":[{"Name":"Engine","Version":"20.10.8",'
    '"Details":{"ApiVersion":"1.41","Arch":"amd64","BuildTime":"Fri Jul 30 19:52:10 2021","Experimental":"false",'
    '"GitCommit":"75249d8","GoVersion":"go1.16.6","KernelVersion":"5.10.47-linuxkit","MinAPIVersion":"1.12",'
    '"Os":"linux"}},{"Name":"containerd","Version":"1.4.9","Details":{"GitCommit":'
    '"e25210fe30a0a703442421b0f60afac609f950a3"}},{"Name":"runc","Version":"1.0.1","Details":{"GitCommit":'
    '"v1.0.1-0-g4144b63"}},{"Name":"docker-init","Version":"0.19.0","Details":{"GitCommit":"de40ad0"}}],'
    '"Version":"20.10.8","ApiVersion":"1.41","MinAPIVersion":"1.12","GitCommit":"75249d8","GoVersion":"go1.16.6",'
    '"Os":"linux","Arch":"amd64","KernelVersion":"5.10.47-linuxkit",'
    '"BuildTime":"2021-07-30T19:52:10.000000000+00:00"}}\n'
)

# `docker info --format '{{json .Runtimes}}'` after `nvidia-ctk runtime configure --runtime=docker`
# (the exact line appears in many public GPU-host setup guides and test fixtures).
RUNTIMES_WITH_NVIDIA = ('{"io.containerd.runc.v2":{"path":"runc"},"nvidia":{"path":"nvidia-container-runtime"},'
                        '"runc":{"path":"runc"}}\n')

# Captured on the envdoctor development container (Docker CLI 28.2.2, no daemon), 2026-11-22:
# stdout, stderr and exit code 1 of `docker version --format '{{json .}}'`.
DOCKER_DOWN_STDOUT = ('{"Client":{"Version":"28.2.2","ApiVersion":"1.50","DefaultAPIVersion":"1.50",'
                      '"GitCommit":"e6534b4","GoVersion":"go1.24.3","Os":"linux","Arch":"amd64",'
                      '"BuildTime":"Fri May 30 12:07:14 2025","Context":"default"},"Server":null}\n')
DOCKER_DOWN_STDERR = ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                      "Is the docker daemon running?\n")

# The error every docker command prints for a user outside the docker group (quoted verbatim in minikube's
# PROVIDER_DOCKER_NEWGRP message, which links https://docs.docker.com/engine/install/linux-postinstall/).
DOCKER_EACCES_STDERR = ('permission denied while trying to connect to the Docker daemon socket at '
                        'unix:///var/run/docker.sock: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.24/version": '
                        'dial unix /var/run/docker.sock: connect: permission denied\n')

# /etc/docker/daemon.json as written by `nvidia-ctk runtime configure --runtime=docker` (NVIDIA Container
# Toolkit install guide, https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html).
DAEMON_JSON_NVIDIA = """{
    "runtimes": {
        "nvidia": {
            "args": [],
            "path": "nvidia-container-runtime"
        }
    }
}
"""

# `nvidia-ctk --version` (1.17.8), as shown in a public podman + CDI setup note.
NVIDIA_CTK_VERSION = "NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d\n"


def docker_host(version_out="", version_err="", version_rc=0, runtimes=None, files=None, extra_cmds=(),
                timed_out=False):
    cmds = [{"argv": DOCKER_VERSION, "stdout": version_out, "stderr": version_err, "returncode": version_rc,
             "timed_out": timed_out}]
    if runtimes is not None:
        cmds.append({"argv": DOCKER_RUNTIMES, "stdout": runtimes})
    cmds.extend(extra_cmds)
    return make_host(files=dict({"/usr/bin/docker": ""}, **(files or {})), commands=cmds, environ=PATH_ENV)


def facts_of(host) -> Facts:
    return Facts(probe_containers(ProbeContext(host)))


def test_docker_with_nvidia_runtime_and_toolkit():
    host = docker_host(DOCKER_UP_JSON, runtimes=RUNTIMES_WITH_NVIDIA,
                       files={"/etc/docker/daemon.json": DAEMON_JSON_NVIDIA,
                              "/etc/nvidia-container-runtime/config.toml": "#accept-nvidia-visible-devices\n",
                              "/usr/bin/nvidia-container-runtime": ""},
                       extra_cmds=[{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}])
    f = facts_of(host)
    d = f.value("container.docker")
    assert (d["client"], d["server"], d["error"]) == ("20.10.8", "20.10.8", None)
    nv = f.get("container.nvidia_runtime_configured")
    assert nv.value is True and nv.source.startswith("command:docker info")
    dj = f.value("container.daemon_json")
    assert dj["runtimes"] == ["nvidia"] and dj["nvidia_runtime_path"] == "nvidia-container-runtime"
    tk = f.value("container.toolkit")
    assert tk["version"] == "1.17.8" and tk["config_toml"] is True
    assert tk["runtime_path"] == "/usr/bin/nvidia-container-runtime"


def test_docker_daemon_down_is_reported_as_down_not_as_missing():
    host = docker_host(DOCKER_DOWN_STDOUT, DOCKER_DOWN_STDERR, 1)
    f = facts_of(host)
    d = f.value("container.docker")
    assert d["installed"] is True and d["client"] == "28.2.2" and d["server"] is None
    assert d["error"] == "daemon_not_running" and "Is the docker daemon running?" in d["message"]
    # No daemon and no daemon.json: nothing registers the nvidia runtime.
    assert f.value("container.nvidia_runtime_configured") is False


def test_daemon_down_falls_back_to_daemon_json_for_the_runtime():
    host = docker_host(DOCKER_DOWN_STDOUT, DOCKER_DOWN_STDERR, 1,
                       files={"/etc/docker/daemon.json": DAEMON_JSON_NVIDIA})
    nv = facts_of(host).get("container.nvidia_runtime_configured")
    assert nv.value is True and nv.source == "file:/etc/docker/daemon.json"


def test_docker_permission_denied_names_the_problem():
    host = docker_host(DOCKER_DOWN_STDOUT, DOCKER_EACCES_STDERR, 1)
    d = facts_of(host).value("container.docker")
    assert d["error"] == "permission_denied" and "docker.sock" in d["message"]


def test_hung_docker_is_timed_out():
    host = docker_host(timed_out=True, version_rc=None)
    f = facts_of(host).get("container.docker")
    assert f.status == "timed_out"


def test_garbled_daemon_json_is_unknown_with_the_reason():
    host = docker_host(DOCKER_DOWN_STDOUT, DOCKER_DOWN_STDERR, 1,
                       files={"/etc/docker/daemon.json": DAEMON_JSON_NVIDIA[:40]})
    f = facts_of(host)
    dj = f.get("container.daemon_json")
    assert dj.status == "unknown" and "not valid JSON" in dj.reason
    assert f.get("container.nvidia_runtime_configured").status == "unknown"


def test_no_docker_at_all():
    host = make_host(environ=PATH_ENV)
    f = facts_of(host)
    assert f.value("container.docker")["installed"] is False
    assert f.value("container.docker_snap") is False
    assert f.value("container.toolkit")["installed"] is False
    assert f.value("container.podman")["installed"] is False
    assert f.value("container.cdi_specs") == {"specs": [], "nvidia": False}


def test_snap_docker_is_noticed():
    host = make_host(files={"/snap/bin/docker": ""}, environ=PATH_ENV,
                     commands=[{"argv": ["/snap/bin/docker"] + DOCKER_VERSION[1:], "stdout": DOCKER_DOWN_STDOUT,
                                "stderr": DOCKER_DOWN_STDERR, "returncode": 1}])
    f = facts_of(host)
    assert f.value("container.docker_snap") is True
    # /snap/bin is not on this PATH: the probe still runs the snap's docker by its full path.
    d = f.value("container.docker")
    assert d["path"] == "/snap/bin/docker" and d["client"] == "28.2.2" and d["error"] == "daemon_not_running"


def test_reachable_docker_without_the_nvidia_runtime():
    # `docker info --format '{{json .Runtimes}}'` of a stock Docker Engine (runc only).
    host = docker_host(DOCKER_UP_JSON, runtimes='{"io.containerd.runc.v2":{"path":"runc"},"runc":{"path":"runc"}}\n',
                       files={"/etc/docker/daemon.json": '{"data-root": "/data/docker"}\n'})
    f = facts_of(host)
    assert f.value("container.nvidia_runtime_configured") is False
    assert f.value("container.daemon_json") == {"present": True, "runtimes": [], "default_runtime": None,
                                                "nvidia_runtime_path": None}


def test_cdi_spec_generated_by_nvidia_ctk():
    # Head of /etc/cdi/nvidia.yaml as written by `nvidia-ctk cdi generate` (NVIDIA CDI support docs,
    # https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html).
    spec = ("---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidia-modeset\n"
            "devices:\n- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  name: \"0\"\n"
            "- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  name: all\nkind: nvidia.com/gpu\n")
    host = make_host(files={"/etc/cdi/nvidia.yaml": spec}, environ=PATH_ENV)
    v = facts_of(host).value("container.cdi_specs")
    assert v["nvidia"] is True and v["specs"][0]["path"] == "/etc/cdi/nvidia.yaml"
    assert v["specs"][0]["cdi_version"] == "0.5.0"


def test_podman_version():
    # `podman --version` of Ubuntu 24.04's podman 4.9.3, as recorded in public setup notes.
    host = make_host(environ=PATH_ENV, commands=[{"argv": ["podman", "--version"], "stdout": "podman version 4.9.3\n"}])
    assert facts_of(host).value("container.podman") == {"installed": True, "version": "4.9.3"}


def test_toolkit_from_nvidia_container_cli_when_ctk_is_absent():
    # `nvidia-container-cli --version` of libnvidia-container 1.17.4, as pasted in a public GPU-host setup
    # note that verifies the NVIDIA install guide's steps (first five lines, verbatim).
    out = ("cli-version: 1.17.4\nlib-version: 1.17.4\nbuild date: 2025-01-23T10:53+00:00\n"
           "build revision: f23e5e55ea27b3680aef363436d4bcf7659e0bfc\n"
           "build compiler: x86_64-linux-gnu-gcc-7 7.5.0\n")
    host = make_host(environ=PATH_ENV, commands=[{"argv": ["nvidia-container-cli", "--version"], "stdout": out}])
    tk = facts_of(host).value("container.toolkit")
    assert tk["version"] == "1.17.4" and tk["ctk_version"] is None

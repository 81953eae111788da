"""Container checks, on miniature machines made of the real docker / nvidia-ctk outputs used by the
containers probe tests (sources cited there)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.containers import container_toolkit

from .conftest import probe_facts
from .test_checks_driver_health import OS_UBUNTU
from .test_probe_containers import (
    DAEMON_JSON_NVIDIA,
    DOCKER_UP_JSON,
    NVIDIA_CTK_VERSION,
    docker_host,
    docker_machine,
)
from .test_probe_gpu import h100_nvml

NO_NVIDIA_RUNTIME = '{"io.containerd.runc.v2":{"path":"runc"},"runc":{"path":"runc"}}'
CTK = [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}]


def codes(host, gpu=True):
    if gpu:
        host.doc["nvml"] = h100_nvml()
    return {f.code: f for f in container_toolkit(CheckContext(probe_facts(host), []))}


def test_docker_without_toolkit_on_a_gpu_machine_warns_with_install_line():
    host = docker_host(DOCKER_UP_JSON, runtimes=NO_NVIDIA_RUNTIME)
    # the install line is planned by the recipe for this machine's OS: Ubuntu 20.04 (a real os-release)
    host.doc["files"]["/etc/os-release"] = {"text": OS_UBUNTU}
    host.doc["dirs"].setdefault("/etc", {"entries": []})["entries"].append("os-release")
    f = codes(type(host)(host.doc))["container-toolkit.missing"]
    assert f.severity == "warning" and f.fix.install == "envdoctor install container-toolkit"
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in f.fix.commands


def test_no_gpu_means_no_toolkit_finding():
    assert codes(docker_host(DOCKER_UP_JSON, runtimes=NO_NVIDIA_RUNTIME), gpu=False) == {}


def test_toolkit_without_runtime_registered_warns():
    f = codes(docker_host(DOCKER_UP_JSON, runtimes=NO_NVIDIA_RUNTIME, extra_cmds=CTK))
    assert set(f) == {"container-toolkit.runtime_not_configured"}
    assert "1.17.8" in f["container-toolkit.runtime_not_configured"].title


def test_configured_toolkit_is_quiet():
    host = docker_host(DOCKER_UP_JSON, runtimes='{"nvidia":{"path":"nvidia-container-runtime"},"runc":{}}',
                       files={"/etc/docker/daemon.json": DAEMON_JSON_NVIDIA}, extra_cmds=CTK)
    assert codes(host) == {}


def test_snap_docker_warns():
    host = docker_host(DOCKER_UP_JSON, runtimes='{"nvidia":{"path":"nvidia-container-runtime"},"runc":{}}',
                       files={"/snap/bin/docker": ""}, extra_cmds=CTK)
    f = codes(host)["docker.snap"]
    assert f.severity == "warning" and "snap" in f.title and f.source["url"].startswith("https://github.com/NVIDIA")


def test_remote_daemon_gives_one_info_instead_of_toolkit_warnings():
    # No toolkit on this GPU machine, but docker talks to a daemon elsewhere: the toolkit that matters
    # is that machine's, which envdoctor did not contact (no network).
    host = docker_machine({"DOCKER_HOST": "tcp://192.0.2.1:2375"})
    found = codes(host)
    assert set(found) == {"docker.daemon_not_contacted"}
    f = found["docker.daemon_not_contacted"]
    assert f.severity == "info" and "28.2.2" in f.title and "tcp://192.0.2.1:2375" in f.title
    assert "not contacted" in f.detail and "daemon not running" not in f.detail.lower()
    assert f.fix.commands == ["DOCKER_HOST=unix:///var/run/docker.sock envdoctor diagnose"]


def test_remote_daemon_on_a_machine_without_gpu_says_nothing():
    assert codes(docker_machine({"DOCKER_HOST": "ssh://alice@192.0.2.1"}), gpu=False) == {}


def test_local_socket_in_docker_host_still_gets_the_toolkit_warning():
    found = codes(docker_machine({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"}))
    assert set(found) == {"container-toolkit.missing"}


def test_snap_docker_with_a_remote_daemon_keeps_the_snap_warning():
    host = docker_machine({"DOCKER_HOST": "tcp://192.0.2.1:2375"}, files={"/snap/bin/docker": ""})
    assert set(codes(host)) == {"docker.snap", "docker.daemon_not_contacted"}

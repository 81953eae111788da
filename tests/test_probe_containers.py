"""The containers probe: Docker client/daemon, daemon.json, NVIDIA Container Toolkit, CDI, Podman.

Command outputs are real; each comment says where it was captured or published.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from envdoctor.facts import Facts
from envdoctor.probes import ProbeContext
from envdoctor.probes.containers import DOCKER_CLIENT_VERSION, DOCKER_RUNTIMES, DOCKER_VERSION, probe_containers

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


# -- which daemon docker would contact: only a local unix socket is ever asked -------------------

# `docker --version` of the development container's Docker CLI 28.2.2 (the same build as DOCKER_DOWN_STDOUT).
DOCKER_CLIENT_ONLY = "Docker version 28.2.2, build e6534b4\n"
HOME_ENV = dict(PATH_ENV, HOME="/home/alice")
STORE = "/home/alice/.docker/contexts/meta"
# Context metadata exactly as Docker CLI 28.2.2 writes it (`docker context create remote --docker
# host=ssh://alice@192.0.2.1`, `docker context create rootless --description "Rootless mode" --docker
# host=unix:///run/user/1000/docker.sock`), under the sha256 of the context's name.
REMOTE_DIR = "b71199ebd070b36beab7317920c2c2f1d777df8d05e5527d8458fda57cb17a7a"
REMOTE_META = ('{"Name":"remote","Metadata":{},"Endpoints":{"docker":{"Host":"ssh://alice@192.0.2.1",'
               '"SkipTLSVerify":false}}}')
ROOTLESS_DIR = "12b961af5feb3e9d39f93b2cefb9a1a944f18d02cca0cac2f04f5a982240605f"
ROOTLESS_META = ('{"Name":"rootless","Metadata":{"Description":"Rootless mode"},"Endpoints":{"docker":{"Host":'
                 '"unix:///run/user/1000/docker.sock","SkipTLSVerify":false}}}')
# ~/.docker/config.json after `docker login` (no credential helper) and `docker context use remote`:
# registry credentials come first, which is why envdoctor never reads this file (snapshots keep what
# probes read).
CONFIG_WITH_AUTH = ('{\n\t"auths": {\n\t\t"https://index.docker.io/v1/": {\n\t\t\t"auth": "YWxpY2U6aHVudGVyMg=="\n'
                    '\t\t}\n\t},\n\t"currentContext": "remote"\n}')
EVERY_DOCKER_CMD = [{"argv": DOCKER_VERSION, "stdout": DOCKER_UP_JSON},
                    {"argv": DOCKER_RUNTIMES, "stdout": RUNTIMES_WITH_NVIDIA},
                    {"argv": DOCKER_CLIENT_VERSION, "stdout": DOCKER_CLIENT_ONLY}]


def recording(host):
    """Lists that fill with every command ``host`` is asked to run and every file it is asked to read."""
    asked, read = [], []
    run, read_file = host.run, host.read_file

    def run_and_note(argv, timeout=None):
        asked.append(list(argv))
        return run(argv, timeout)

    def read_and_note(path, *args, **kwargs):
        read.append(path)
        return read_file(path, *args, **kwargs)

    host.run, host.read_file = run_and_note, read_and_note
    return asked, read


def docker_machine(environ, files=None):
    """Docker installed, a daemon that would answer every question, the nvidia runtime in daemon.json."""
    return make_host(files=dict({"/usr/bin/docker": "", "/etc/docker/daemon.json": DAEMON_JSON_NVIDIA},
                                **(files or {})), commands=EVERY_DOCKER_CMD, environ=dict(PATH_ENV, **environ))


def docker_asked(asked):
    return [a for a in asked if a[0].endswith("docker")]


def test_docker_host_tcp_is_not_contacted_and_says_why():
    host = docker_machine({"DOCKER_HOST": "tcp://192.0.2.1:2375"})
    asked, _ = recording(host)
    f = facts_of(host)
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION]  # the client's version only: no API call
    d = f.value("container.docker")
    assert (d["client"], d["server"], d["error"]) == ("28.2.2", None, "not_contacted")
    assert d["message"] == ("daemon at tcp://192.0.2.1:2375 (DOCKER_HOST) not contacted: envdoctor diagnose "
                            "opens no network connection")
    assert d["endpoint"] == "tcp://192.0.2.1:2375" and d["endpoint_source"] == "env:DOCKER_HOST"
    # This machine's daemon.json registers nvidia, but it says nothing about the daemon docker talks to.
    nv = f.get("container.nvidia_runtime_configured")
    assert nv.status == "unknown" and "not contacted" in nv.reason


def test_credentials_in_docker_host_never_reach_the_report():
    host = docker_machine({"DOCKER_HOST": "tcp://admin:s3cret@192.0.2.1:2376"})
    d = facts_of(host).value("container.docker")
    assert "s3cret" not in json.dumps(d) and "192.0.2.1:2376" in d["message"] and d["error"] == "not_contacted"


@pytest.mark.parametrize("url", ["ssh://alice@192.0.2.1", "https://192.0.2.1:2376", "192.0.2.1:2375",
                                 "tcp://127.0.0.1:2375", "fd://", "npipe:////./pipe/docker_engine"])
def test_every_endpoint_but_a_unix_socket_is_left_alone(url):
    host = docker_machine({"DOCKER_HOST": url})
    asked, _ = recording(host)
    assert facts_of(host).value("container.docker")["error"] == "not_contacted"
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION]


def test_docker_host_on_a_local_socket_is_contacted():
    host = docker_machine({"DOCKER_HOST": "unix:///run/user/1000/docker.sock"})
    asked, _ = recording(host)
    f = facts_of(host)
    assert docker_asked(asked) == [DOCKER_VERSION, DOCKER_RUNTIMES]
    d = f.value("container.docker")
    assert (d["server"], d["error"], d["endpoint"]) == ("20.10.8", None, "unix:///run/user/1000/docker.sock")
    assert f.value("container.nvidia_runtime_configured") is True


def test_default_machine_asks_what_it_always_asked_and_reads_no_docker_config():
    host = docker_machine({"HOME": "/home/alice"}, files={"/home/alice/.docker/config.json": CONFIG_WITH_AUTH})
    asked, read = recording(host)
    f = facts_of(host)
    assert docker_asked(asked) == [DOCKER_VERSION, DOCKER_RUNTIMES]  # no extra process on the common path
    d = f.value("container.docker")
    assert (d["server"], d["endpoint"], d["endpoint_source"]) == ("20.10.8", "unix:///var/run/docker.sock", "default")
    assert not any(p.endswith("config.json") for p in read)


def test_a_remote_context_that_may_be_current_is_not_contacted():
    # `docker context use remote` on this machine: config.json names it, the store holds it.
    host = docker_machine({"HOME": "/home/alice"}, files={
        "/home/alice/.docker/config.json": CONFIG_WITH_AUTH,
        f"{STORE}/{REMOTE_DIR}/meta.json": REMOTE_META, f"{STORE}/{ROOTLESS_DIR}/meta.json": ROOTLESS_META})
    asked, read = recording(host)
    d = facts_of(host).value("container.docker")
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION]
    assert d["error"] == "not_contacted" and d["client"] == "28.2.2"
    assert "ssh://" in d["message"] and "192.0.2.1" in d["message"] and "'remote'" in d["message"]
    assert "DOCKER_CONTEXT" in d["message"]  # how to have a local context checked anyway
    assert "alice@" not in d["message"]
    assert not any(p.endswith("config.json") for p in read)  # registry credentials stay unread


def test_docker_context_env_names_the_context():
    files = {f"{STORE}/{REMOTE_DIR}/meta.json": REMOTE_META, f"{STORE}/{ROOTLESS_DIR}/meta.json": ROOTLESS_META}
    remote = docker_machine({"HOME": "/home/alice", "DOCKER_CONTEXT": "remote"}, files=files)
    asked, _ = recording(remote)
    d = facts_of(remote).value("container.docker")
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION] and d["error"] == "not_contacted"
    assert d["endpoint_source"] == f"file:{STORE}/{REMOTE_DIR}/meta.json"
    # The local context is asked even with a remote one beside it.
    local = docker_machine({"HOME": "/home/alice", "DOCKER_CONTEXT": "rootless"}, files=files)
    asked, _ = recording(local)
    d = facts_of(local).value("container.docker")
    assert docker_asked(asked) == [DOCKER_VERSION, DOCKER_RUNTIMES]
    assert d["endpoint"] == "unix:///run/user/1000/docker.sock" and d["server"] == "20.10.8"
    assert hashlib.sha256(b"remote").hexdigest() == REMOTE_DIR  # the store's naming, as docker 28.2.2 wrote it


def test_docker_host_wins_over_docker_context():
    files = {f"{STORE}/{REMOTE_DIR}/meta.json": REMOTE_META}
    host = docker_machine({"HOME": "/home/alice", "DOCKER_CONTEXT": "remote",
                           "DOCKER_HOST": "unix:///var/run/docker.sock"}, files=files)
    asked, _ = recording(host)
    assert facts_of(host).value("container.docker")["endpoint_source"] == "env:DOCKER_HOST"
    assert docker_asked(asked) == [DOCKER_VERSION, DOCKER_RUNTIMES]


def test_only_local_contexts_in_the_store_are_contacted():
    host = docker_machine({"DOCKER_CONFIG": "/home/alice/.docker"},
                          files={f"{STORE}/{ROOTLESS_DIR}/meta.json": ROOTLESS_META})
    asked, _ = recording(host)
    d = facts_of(host).value("container.docker")
    assert docker_asked(asked) == [DOCKER_VERSION, DOCKER_RUNTIMES]
    assert d["endpoint"] == "unix:///run/user/1000/docker.sock or unix:///var/run/docker.sock"


@pytest.mark.parametrize("meta, why", [(REMOTE_META[:50], "not valid JSON"),
                                       ('{"Name":"x","Endpoints":{}}', "names no docker host")])
def test_a_context_that_cannot_be_read_is_not_contacted(meta, why):
    host = docker_machine({"HOME": "/home/alice"}, files={f"{STORE}/{REMOTE_DIR}/meta.json": meta})
    asked, _ = recording(host)
    d = facts_of(host).value("container.docker")
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION]
    assert d["error"] == "not_contacted" and why in d["message"] and d["endpoint"] is None


def test_a_hand_edited_host_key_is_read_as_docker_reads_it():
    # Go's encoding/json matches "host" to the Host field and keeps the last match: docker dials tcp.
    meta = '{"Name":"rootless","Endpoints":{"docker":{"Host":"unix:///run/user/1000/docker.sock","host":"tcp://192.0.2.1:2375"}}}'
    host = docker_machine({"HOME": "/home/alice", "DOCKER_CONTEXT": "rootless"},
                          files={f"{STORE}/{ROOTLESS_DIR}/meta.json": meta})
    assert facts_of(host).value("container.docker")["endpoint"] == "tcp://192.0.2.1:2375"


def test_a_missing_docker_context_is_not_guessed():
    host = docker_machine({"HOME": "/home/alice", "DOCKER_CONTEXT": "nope"})
    asked, _ = recording(host)
    d = facts_of(host).value("container.docker")
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION]
    assert "context not found" in d["message"] and d["error"] == "not_contacted"


def test_garbled_config_json_changes_nothing_because_it_is_never_read():
    host = docker_machine({"HOME": "/home/alice"}, files={"/home/alice/.docker/config.json": CONFIG_WITH_AUTH[:30]})
    asked, read = recording(host)
    assert facts_of(host).value("container.docker")["server"] == "20.10.8"
    assert docker_asked(asked) == [DOCKER_VERSION, DOCKER_RUNTIMES]
    assert not any(p.endswith("config.json") for p in read)


def test_snap_docker_keeps_its_contexts_in_the_snap_home():
    # snapd runs the snap's docker with HOME=~/snap/docker/<revision>: its store is looked at too.
    store = "/home/alice/snap/docker/current/.docker/contexts/meta"
    host = make_host(files={"/snap/bin/docker": "", f"{store}/{REMOTE_DIR}/meta.json": REMOTE_META},
                     environ=dict(HOME_ENV, PATH=HOME_ENV["PATH"] + ":/snap/bin"),
                     commands=[{"argv": ["docker"] + DOCKER_CLIENT_VERSION[1:], "stdout": DOCKER_CLIENT_ONLY}])
    d = facts_of(host).value("container.docker")
    assert d["path"] == "/snap/bin/docker" and d["error"] == "not_contacted" and d["client"] == "28.2.2"


def test_podman_version_is_all_that_is_asked_of_a_remote_podman():
    # `podman --version` is printed by the client before any connection is set up, remote or not.
    host = make_host(environ=dict(PATH_ENV, CONTAINER_HOST="ssh://core@192.0.2.7:22/run/podman/podman.sock"),
                     commands=[{"argv": ["podman", "--version"], "stdout": "podman version 4.9.3\n"}])
    asked, _ = recording(host)
    assert facts_of(host).value("container.podman") == {"installed": True, "version": "4.9.3"}
    assert [a for a in asked if "podman" in a[0]] == [["podman", "--version"]]


def test_podmans_docker_wrapper_follows_container_host_and_is_not_contacted():
    # podman-docker's /usr/bin/docker (Fedora's package) is a shell script running podman, which follows
    # CONTAINER_HOST.
    wrapper = ('#!/bin/sh\n[ -e /etc/containers/nodocker ] || \\\necho "Emulate Docker CLI using podman. Create '
               '/etc/containers/nodocker to quiet msg." >&2\nexec /usr/bin/podman "$@"\n')
    host = docker_machine({"CONTAINER_HOST": "ssh://core@192.0.2.7:22/run/podman/podman.sock"},
                          files={"/usr/bin/docker": wrapper})
    asked, _ = recording(host)
    d = facts_of(host).value("container.docker")
    assert docker_asked(asked) == [DOCKER_CLIENT_VERSION] and "CONTAINER_HOST" in d["message"]
    # A real docker binary (an ELF file) ignores CONTAINER_HOST.
    real = docker_machine({"CONTAINER_HOST": "ssh://core@192.0.2.7:22/run/podman/podman.sock"})
    real.doc["elf"] = {"/usr/bin/docker": {"soname": None, "needed": [], "rpath": [], "runpath": []}}
    asked, _ = recording(real)
    assert facts_of(real).value("container.docker")["server"] == "20.10.8"

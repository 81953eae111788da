"""The NVIDIA Container Toolkit's host ldconfig (a wrapper script on Debian/Ubuntu) and the containerd that runs a
Kubernetes node's pods (RKE2's and k3s's own, under /var/lib/rancher), on miniature machines.

Facts: Ubuntu's libc-bin /sbin/ldconfig is a shell script that execs /sbin/ldconfig.real; toolkit 1.15.0 and later
use <ldconfig>.real when it exists (NVIDIA/nvidia-container-toolkit commit 232df647); RKE2/k3s configure their
containerd from <data-dir>/agent/etc/containerd/config.toml and listen on /run/k3s/containerd/containerd.sock
(k3s pkg/agent/config)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.containers import kube_containerd, toolkit_ldconfig
from envdoctor.facts import Facts
from envdoctor.probes import ProbeContext
from envdoctor.probes.containers import probe_containers

from .conftest import make_host
from .test_probe_containers import NVIDIA_CTK_VERSION, PATH_ENV

UBUNTU_LDCONFIG = "#!/bin/sh\n\nexec /sbin/ldconfig.real \"$@\"\n"
ELF = "\x7fELF\x02\x01\x01"
OPERATOR_CONFIG = "/usr/local/nvidia/toolkit/.config/nvidia-container-runtime/config.toml"
RKE2_CONFIG = "/var/lib/rancher/rke2/agent/etc/containerd/config.toml"
RKE2_GENERATED = ('[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n\n'
                  '[plugins.cri.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n')
WITH_NVIDIA = RKE2_GENERATED + ('\n[plugins.cri.containerd.runtimes."nvidia"]\n'
                                '  runtime_type = "io.containerd.runc.v2"\n'
                                '[plugins.cri.containerd.runtimes."nvidia".options]\n'
                                '  BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"\n')
OPERATOR_FILES = {"/usr/local/nvidia/toolkit/nvidia-container-runtime": "",
                  "/usr/local/nvidia/toolkit/libnvidia-container.so.1.13.5": ""}


def toolkit_config(ldconfig):
    return '[nvidia-container-cli]\n  environment = []\n  ldconfig = "%s"\n  root = "/"\n' % ldconfig


def facts(files, cmds=()):
    return Facts(probe_containers(ProbeContext(make_host(files=files, commands=list(cmds), environ=PATH_ENV))))


def ldconfig_findings(files, cmds=()):
    return list(toolkit_ldconfig(CheckContext(facts(files, cmds), [])))


def containerd_findings(files, cmds=()):
    return list(kube_containerd(CheckContext(facts(files, cmds), [])))


def test_operator_toolkit_naming_ubuntus_wrapper_script_warns():
    files = dict(OPERATOR_FILES, **{OPERATOR_CONFIG: toolkit_config("@/sbin/ldconfig"),
                                    "/sbin/ldconfig": UBUNTU_LDCONFIG, "/sbin/ldconfig.real": ELF})
    [f] = ldconfig_findings(files)
    assert f.code == "container-toolkit.ldconfig_is_wrapper_script" and f.severity == "warning"
    assert "1.13.5" in f.title and "@/sbin/ldconfig" in f.title and "shell script" in f.title
    assert "ldconfig.real" in f.detail and "libnvidia-ml.so" in f.detail
    assert "GPU Operator" in f.fix.text and '"@/sbin/ldconfig.real"' in f.fix.commands[0]


def test_host_toolkit_before_115_with_the_script_warns():
    files = {"/etc/nvidia-container-runtime/config.toml": toolkit_config("@/sbin/ldconfig"),
             "/sbin/ldconfig": UBUNTU_LDCONFIG, "/sbin/ldconfig.real": ELF, "/usr/bin/nvidia-container-runtime": ""}
    ctk = [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION.replace("1.17.8", "1.14.6")}]
    [f] = ldconfig_findings(files, ctk)
    assert "1.14.6" in f.title and "ldconfig = \"@/sbin/ldconfig.real\"" in f.fix.text


def test_ubuntu_default_config_naming_ldconfig_real_is_quiet():
    # what the toolkit's Ubuntu package writes: ldconfig = "@/sbin/ldconfig.real", the ELF program
    files = {"/etc/nvidia-container-runtime/config.toml": toolkit_config("@/sbin/ldconfig.real"),
             "/sbin/ldconfig": UBUNTU_LDCONFIG, "/sbin/ldconfig.real": ELF, "/usr/bin/nvidia-container-runtime": ""}
    assert ldconfig_findings(files, [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}]) == []


def test_toolkit_115_or_later_picks_ldconfig_real_itself_so_is_quiet():
    files = {"/etc/nvidia-container-runtime/config.toml": toolkit_config("@/sbin/ldconfig"),
             "/sbin/ldconfig": UBUNTU_LDCONFIG, "/sbin/ldconfig.real": ELF, "/usr/bin/nvidia-container-runtime": ""}
    assert ldconfig_findings(files, [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}]) == []


def test_elf_ldconfig_is_quiet():
    files = dict(OPERATOR_FILES, **{OPERATOR_CONFIG: toolkit_config("@/sbin/ldconfig"), "/sbin/ldconfig": ELF})
    assert ldconfig_findings(files) == []


def test_rke2_containerd_without_nvidia_runtime_warns_and_names_its_paths():
    files = dict(OPERATOR_FILES, **{"/usr/local/bin/rke2": "", RKE2_CONFIG: RKE2_GENERATED})
    [f] = containerd_findings(files)
    assert f.code == "container-toolkit.containerd_runtime_not_configured" and f.severity == "warning"
    assert "RKE2" in f.title and RKE2_CONFIG in f.title and "containerd" in f.title
    assert "/run/k3s/containerd/containerd.sock" in f.detail
    assert "CONTAINERD_CONFIG=%s.tmpl" % RKE2_CONFIG in f.fix.text
    assert "CONTAINERD_SOCKET=/run/k3s/containerd/containerd.sock" in f.fix.text


def test_rke2_containerd_with_the_nvidia_runtime_is_quiet():
    files = dict(OPERATOR_FILES, **{"/usr/local/bin/rke2": "", RKE2_CONFIG: WITH_NVIDIA})
    assert containerd_findings(files) == []


def test_kubelet_node_containerd_without_nvidia_and_host_toolkit_warns_with_nvidia_ctk():
    files = {"/usr/bin/kubelet": "", "/usr/bin/containerd": "", "/usr/bin/nvidia-container-runtime": "",
             "/etc/containerd/config.toml": "version = 2\n[plugins]\n"}
    [f] = containerd_findings(files, [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}])
    assert "sudo nvidia-ctk runtime configure --runtime=containerd" in f.fix.commands


def test_containerd_runtime_in_an_imported_drop_in_is_quiet():
    files = {"/usr/bin/kubelet": "", "/usr/bin/containerd": "", "/usr/bin/nvidia-container-runtime": "",
             "/etc/containerd/config.toml": 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n',
             "/etc/containerd/conf.d/99-nvidia.toml":
                 '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'}
    assert containerd_findings(files, [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}]) == []


def test_docker_hosts_containerd_and_nodes_without_a_toolkit_are_quiet():
    # Docker's containerd.io (cri disabled) is not what runs pods; a node with no toolkit at all is not judged
    docker_cd = {"/usr/bin/kubelet": "", "/usr/bin/containerd": "", "/usr/bin/nvidia-container-runtime": "",
                 "/etc/containerd/config.toml": 'disabled_plugins = ["cri"]\n'}
    assert containerd_findings(docker_cd, [{"argv": ["nvidia-ctk", "--version"], "stdout": NVIDIA_CTK_VERSION}]) == []
    assert containerd_findings({"/usr/local/bin/rke2": "", RKE2_CONFIG: RKE2_GENERATED}) == []

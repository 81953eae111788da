"""Containers: CDI specs in the layout `nvidia-ctk cdi generate` writes, their device nodes' majors against
/proc/devices, and /dev/shm against NCCL's needs with several GPUs."""

from __future__ import annotations

from typing import Any, Dict

from envdoctor.checks import CheckContext
from envdoctor.checks.containers import cdi_spec_stale, container_shm
from envdoctor.facts import Facts, ok
from envdoctor.probes.containers import char_majors, parse_cdi

from .conftest import make_host
from .test_probe_containers import PATH_ENV, facts_of

# /etc/cdi/nvidia.yaml as `nvidia-ctk cdi generate` writes it (keys sorted: a device's name after its
# containerEdits), trimmed: the spec a g4dn.xlarge produced in Docker's buildx GPU guide (docs.docker.com)
CTK_SPEC = """cdiVersion: 0.6.0
containerEdits:
  deviceNodes:
  - path: /dev/nvidia-modeset
  - path: /dev/nvidia-uvm
  - path: /dev/nvidia-uvm-tools
  - path: /dev/nvidiactl
  env:
  - NVIDIA_VISIBLE_DEVICES=void
  hooks:
  - args:
    - nvidia-cdi-hook
    - create-symlinks
    hookName: createContainer
    path: /usr/bin/nvidia-cdi-hook
devices:
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: "0"
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: GPU-1cbd1e6b-8d0b-0a54-5e1d-2f6c6d3b9e2a
- containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
  name: all
kind: nvidia.com/gpu
"""

# a hand-written spec that pins device numbers (the layout of a public split-CDI script's self-test input)
PINNED_SPEC = """cdiVersion: 0.6.0
kind: nvidia.com/gpu
containerEdits:
  deviceNodes:
  - path: /dev/nvidiactl
    hostPath: /dev/nvidiactl
    type: c
    major: 195
    minor: 255
  - path: /dev/nvidia-uvm
    type: c
    major: 511
    minor: 0
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
      type: c
      major: 195
      minor: 0
"""

# /proc/devices of a host whose nvidia-uvm module got major 510 at this boot
PROC_DEVICES = ("Character devices:\n  1 mem\n  4 tty\n195 nvidia\n195 nvidia-modeset\n195 nvidiactl\n"
                "226 drm\n505 nvidia-nvlink\n507 nvidia-caps\n510 nvidia-uvm\n\nBlock devices:\n  8 sd\n")


def test_nvidia_ctk_layout_names_its_devices() -> None:
    parsed = parse_cdi(CTK_SPEC)
    assert parsed["devices"] == ["0", "GPU-1cbd1e6b-8d0b-0a54-5e1d-2f6c6d3b9e2a", "all"]
    assert [n["path"] for n in parsed["nodes"]][:4] == ["/dev/nvidia-modeset", "/dev/nvidia-uvm",
                                                        "/dev/nvidia-uvm-tools", "/dev/nvidiactl"]
    assert all("path" in n for n in parsed["nodes"])  # hooks' "path:" is no device node
    assert parse_cdi(PINNED_SPEC)["devices"] == ["0"]
    assert char_majors(PROC_DEVICES)["nvidia-uvm"] == 510 and "sd" not in char_majors(PROC_DEVICES)


def _cdi_findings(spec: str, nodes: Dict[str, str]) -> Any:
    files = {"/etc/cdi/nvidia.yaml": spec, "/proc/devices": PROC_DEVICES}
    files.update(nodes)
    facts = facts_of(make_host(files=files, environ=PATH_ENV))
    return list(cdi_spec_stale(CheckContext(facts, [])))


def test_a_spec_pinning_nvidia_uvms_old_major_is_stale() -> None:
    nodes = {"/dev/nvidiactl": "", "/dev/nvidia-uvm": "", "/dev/nvidia0": ""}
    found = _cdi_findings(PINNED_SPEC, nodes)
    assert len(found) == 1 and found[0].code == "container-toolkit.cdi_spec_stale"
    assert "/dev/nvidia-uvm (major 511 in the spec, 510 now)" in found[0].title
    # the same spec with the major nvidia-uvm has now: quiet; nvidia-ctk's own layout (no numbers): quiet
    assert _cdi_findings(PINNED_SPEC.replace("major: 511", "major: 510"), nodes) == []
    assert _cdi_findings(CTK_SPEC, dict(nodes, **{"/dev/nvidia-modeset": "", "/dev/nvidia-uvm-tools": ""})) == []


def _shm(size: int, count: int, container: Any = "docker") -> Any:
    facts = Facts([ok("container.shm", {"size_bytes": size}, "file:/proc/self/mounts"),
                   ok("gpu.count", count, "nvml:device_count"), ok("os.container", container, "file:/.dockerenv")])
    return list(container_shm(CheckContext(facts, [])))


def test_docker_default_shm_with_several_gpus_is_said() -> None:
    # Docker's default: "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0"
    mounts = "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"
    value = facts_of(make_host(files={"/proc/self/mounts": mounts}, environ=PATH_ENV)).value("container.shm")
    assert value == {"size_bytes": 64 * 1024 * 1024}
    found = _shm(64 * 1024 * 1024, 4)
    assert len(found) == 1 and found[0].severity == "warning" and "--shm-size=1g" in found[0].fix.commands[0]
    assert _shm(64 * 1024 * 1024, 1) == []  # one GPU: NCCL's intra-node buffers are not needed
    assert _shm(1024 ** 3, 8) == []  # --shm-size=1g
    assert _shm(64 * 1024 * 1024, 8, container=None) == []  # a host's /dev/shm is half its memory


def test_shm_is_read_from_proc_mounts_where_self_mounts_is_not_there() -> None:
    # /proc/mounts is the older name of the same table (a link to self/mounts); a capture that holds only it, as
    # the corpus's Docker machines of NCCL threads do (16 MiB: pytorch/torchtitan#853's CI container), is read
    mounts = "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=16384k 0 0\n"
    fact = facts_of(make_host(files={"/proc/mounts": mounts}, environ=PATH_ENV)).get("container.shm")
    assert fact is not None and fact.value == {"size_bytes": 16 * 1024 * 1024} and fact.source == "file:/proc/mounts"
    found = _shm(16 * 1024 * 1024, 8)
    assert [f.code for f in found] == ["nccl.shm_too_small"] and "/dev/shm" in found[0].title
    # neither readable: no fact, nothing said
    assert facts_of(make_host(files={}, environ=PATH_ENV)).get("container.shm") is None

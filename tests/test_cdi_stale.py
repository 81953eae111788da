"""A CDI spec naming device nodes the host no longer has (corpus: podman-rootless-cdi-spec-names-gone-renderd129,
from NVIDIA/nvidia-container-toolkit#885: 'failed to stat CDI host device "/dev/dri/renderD129"', fixed by
regenerating the spec).  The spec text is the corpus case's, in the layout `nvidia-ctk cdi generate` writes."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeContext
from envdoctor.probes.containers import cdi_device_nodes, probe_containers

from .conftest import make_host

CODE = "container-toolkit.cdi_spec_stale"
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
STALE = open(os.path.join(CORPUS, "podman-rootless-cdi-spec-names-gone-renderd129/root/etc/cdi/nvidia.yaml")).read()
FRESH = open(os.path.join(CORPUS, "healthy-docker-toolkit-cdi-configured/root/var/run/cdi/nvidia.yaml")).read()
PATH_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
NODES = ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
         "/dev/dri/card0", "/dev/dri/renderD128"]


def test_device_nodes_are_read_from_device_entries_not_hooks_or_mounts() -> None:
    nodes = cdi_device_nodes(STALE)
    assert nodes == ["/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl",
                     "/dev/nvidia0", "/dev/dri/card1", "/dev/dri/renderD129"]
    assert not any(n.startswith("/usr/") for n in nodes)  # the hook's path and the mounts' hostPath
    # a node injected under another name: the host side is what must exist
    assert cdi_device_nodes("deviceNodes:\n- path: /dev/dxg\n  hostPath: /dev/dxg0\n") == ["/dev/dxg0"]
    assert cdi_device_nodes("") == [] and cdi_device_nodes("\x00: - [") == []


def findings(spec_path: str, spec: str, nodes: List[str], in_container: bool = False) -> Dict[str, Any]:
    host = make_host(files=dict({spec_path: spec}, **{n: "" for n in nodes}), environ=PATH_ENV)
    facts = list(probe_containers(ProbeContext(host))) + [ok("os.container", "docker" if in_container else None,
                                                             "derived")]
    return {f.code: f for f in run_checks(CheckContext(Facts(facts), []))}


def test_a_spec_naming_gone_nodes_is_reported_with_the_regenerate_command() -> None:
    f = findings("/etc/cdi/nvidia.yaml", STALE, NODES)[CODE]
    assert f.severity == "warning" and "/dev/dri/renderD129" in f.title and "/dev/dri/card1" in f.title
    assert "/dev/nvidia0" not in f.title
    assert "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in f.fix.commands


def test_quiet_for_a_current_spec_for_on_demand_nodes_and_inside_containers() -> None:
    assert CODE not in findings("/var/run/cdi/nvidia.yaml", FRESH, NODES)
    # /dev/nvidia-uvm appears at the first CUDA call: its absence is the driver's finding, not a stale spec
    assert CODE not in findings("/var/run/cdi/nvidia.yaml", FRESH,
                                [n for n in NODES if not n.startswith("/dev/nvidia-uvm")])
    assert CODE not in findings("/etc/cdi/nvidia.yaml", STALE, NODES, in_container=True)
    # another vendor's spec is not the NVIDIA toolkit's to regenerate
    assert CODE not in findings("/etc/cdi/other.yaml", STALE.replace("nvidia.com/gpu", "example.com/fpga"), NODES)

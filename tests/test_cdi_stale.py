"""A CDI spec naming device nodes the host no longer has (corpus: podman-rootless-cdi-spec-names-gone-renderd129,
from NVIDIA/nvidia-container-toolkit#885: 'failed to stat CDI host device "/dev/dri/renderD129"', fixed by
regenerating the spec).  The spec text is the corpus case's, in the layout `nvidia-ctk cdi generate` writes."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeContext
from envdoctor.probes.containers import (
    cdi_device_nodes,
    cdi_mount_paths,
    cdi_spec_driver,
    driver_release_of,
    probe_containers,
)

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


# -- a spec generated under another driver release (corpus: b37-...-cdi-spec-still-mounts-...-libs: the driver was
# updated, /etc/cdi/nvidia.yaml still binds the old release's libraries; regenerating it fixes it). The layout is
# the one `nvidia-ctk cdi generate` writes (keys sorted, list items at their key's indentation); the
# enable-cuda-compat hook with --host-driver-version= is the one recent toolkits write (its hook options, upstream).

LIB = "/usr/lib/x86_64-linux-gnu/"


def generated(release: str, hook: bool = False) -> str:
    bind = "    options:\n    - ro\n    - nosuid\n    - nodev\n    - bind\n"
    mounts = "".join("  - containerPath: %s\n    hostPath: %s\n" % (f, f) + bind for f in driver_files(release))
    hooks = ("  hooks:\n  - args:\n    - nvidia-cdi-hook\n    - enable-cuda-compat\n    - --host-driver-version=%s\n"
             "    hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n" % release) if hook else ""
    return ("---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n  env:\n"
            "  - NVIDIA_VISIBLE_DEVICES=void\n" + hooks + "  mounts:\n" + mounts +
            "devices:\n- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  name: \"0\"\n"
            "- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  name: all\nkind: nvidia.com/gpu\n")


def driver_files(release: str) -> List[str]:
    return [LIB + lib + ".so." + release for lib in ("libcuda", "libnvidia-ml", "libEGL_nvidia")] + [
        "/lib/firmware/nvidia/%s/gsp_ga10x.bin" % release]


def release_findings(spec: str, present: List[str], module: Any = "580.178.04",
                     userspace: Any = "580.178.04", path: str = "/etc/cdi/nvidia.yaml") -> Dict[str, Any]:
    files = dict({path: spec}, **{n: "" for n in NODES + present})
    host = make_host(files=files, environ=PATH_ENV)
    facts = list(probe_containers(ProbeContext(host))) + [ok("os.container", None, "derived")]
    if module is not None:
        facts.append(ok("driver.kernel_module.version", module, "file:/proc/driver/nvidia/version"))
    if userspace is not None:
        facts.append(ok("driver.userspace.version", userspace, "derived"))
    return {f.code: f for f in run_checks(CheckContext(Facts(facts), []))}


def test_mount_paths_are_the_mounts_host_paths_only() -> None:
    spec = generated("580.159.04", hook=True)
    assert cdi_mount_paths(spec) == driver_files("580.159.04")
    assert cdi_spec_driver(spec) == "580.159.04" and cdi_spec_driver(generated("580.159.04")) is None
    # JSON specs: the spec-wide mounts and each device's
    doc = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu",
           "containerEdits": {"mounts": [{"hostPath": LIB + "libcuda.so.550.54.15", "containerPath": "/x"}],
                              "deviceNodes": [{"path": "/dev/nvidiactl"}]},
           "devices": [{"name": "0", "containerEdits": {"mounts": [{"hostPath": "/lib/firmware/nvidia/550.54.15/"
                                                                                "gsp_tu10x.bin"}]}}]}
    assert cdi_mount_paths(json.dumps(doc)) == [LIB + "libcuda.so.550.54.15",
                                                "/lib/firmware/nvidia/550.54.15/gsp_tu10x.bin"]
    assert driver_release_of(LIB + "libnvidia-egl-wayland.so.1.1.13") is None  # a soname, no driver release
    assert driver_release_of(LIB + "libcuda.so.1") is None
    for garbled in ("", "\x00: - [", "{", "{\"containerEdits\": [1, 2]}", "mounts:\n- hostPath:\n  - - :\n"):
        assert cdi_mount_paths(garbled) == [] and cdi_spec_driver(garbled) is None


def test_a_spec_of_an_old_release_whose_files_are_gone_names_both_releases() -> None:
    f = release_findings(generated("580.159.04"), driver_files("580.178.04"))[CODE]
    assert f.severity == "warning"
    assert "580.159.04" in f.title and "580.178.04" in f.title and "/etc/cdi/nvidia.yaml" in f.title
    assert "no longer exist" in f.title and "libcuda.so.580.159.04" in f.title
    assert "sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in f.fix.commands
    assert "nvidia-cdi-refresh" in f.fix.text and "1.18.0" in f.fix.text
    # the loaded module's release is the one named, even where the user-space library is not known
    f = release_findings(generated("580.159.04"), [], userspace=None, path="/var/run/cdi/nvidia.yaml")[CODE]
    assert "driver 580.178.04 is installed" in f.title and "--output=/var/run/cdi/nvidia.yaml" in f.fix.commands[0]


def test_old_release_files_left_behind_still_mismatch_the_module() -> None:
    f = release_findings(generated("580.159.04"), driver_files("580.159.04") + driver_files("580.178.04"))[CODE]
    assert f.severity == "warning" and "580.159.04" in f.title and "580.178.04" in f.title
    assert "mismatch" in f.detail
    # the spec's own release (its hook) is another: stale too, even with no versioned mount
    own = release_findings(generated("580.159.04", hook=True).replace("580.159.04/gsp", "580.178.04/gsp")
                           .replace(".so.580.159.04", ".so.580.178.04"), driver_files("580.178.04"))[CODE]
    assert "generated for driver 580.159.04" in own.title and "580.178.04" in own.title


def test_quiet_for_the_current_release_no_versioned_files_and_a_pending_reboot() -> None:
    assert CODE not in release_findings(generated("580.178.04", hook=True), driver_files("580.178.04"))
    assert CODE not in release_findings(FRESH, [])  # no mounts with a release in their name
    # libraries updated, module not yet reloaded: the spec matches the installed libraries; the mismatch is the
    # driver's finding, not a stale spec
    assert CODE not in release_findings(generated("580.178.04"), driver_files("580.178.04"), module="580.159.04")
    # the installed release unknown: only files that are gone make the spec stale
    assert CODE not in release_findings(generated("580.159.04"), driver_files("580.159.04"), module=None,
                                        userspace=None)
    f = release_findings(generated("580.159.04"), [], module=None, userspace=None)[CODE]
    assert "580.159.04" in f.title and "no longer exist" in f.title


def test_a_garbled_spec_is_no_traceback() -> None:
    for garbled in ("\x00: - [", "{\"kind\": \"nvidia.com/gpu\", \"containerEdits\": {\"mounts\": \"x\"}}",
                    "kind: nvidia.com/gpu\ncontainerEdits:\n  mounts:\n  - hostPath: [libcuda.so.580.159.04\n"):
        assert CODE not in release_findings(garbled, [])

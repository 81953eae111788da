"""``driver.graphics_libraries_incomplete``: a graphics library of the driver that programs open by name
(libEGL_nvidia.so.0, libGLX_nvidia.so.0) is there, but driver libraries its own ELF NEEDED entries name
(libnvidia-eglcore, libnvidia-glcore, libnvidia-glsi of the same release) resolve nowhere with the loader's rules.

Machine: the corpus case rebuilt from the public report (a Gazebo container on a Debian host with driver 550.163.01:
the runtime mounted the host's nvidia/current folder, libEGL_nvidia and libGLX_nvidia among it, but not the
libnvidia-eglcore/glcore/glsi they need), replayed from its snapshot; each variant changes one thing as the fix or
another cause would.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings

CASE = ("b86a-container-gz-sim-headless-rendering-debian-host-driver55016301-libegl-nvidia-mounted-without-eglcore-"
        "glcore-glsi")
COMPUTE_ONLY = "b27-ubuntu2404-driver535-compute-only-packages-mitsuba352-drjit-no-libnvoptix-needs-libnvidia-gl"
FULL_GRAPHICS = ("healthy-b86a-ubuntu2204-rtx4070tisuper-driver570169-cuda122-isaacsim450-pip-swapchain-fails-"
                 "teamviewer-not-the-stack")
CODE = "driver.graphics_libraries_incomplete"
LIB = "/usr/lib/x86_64-linux-gnu"
CURRENT = LIB + "/nvidia/current"
PARTS = ("libnvidia-eglcore.so.550.163.01", "libnvidia-glcore.so.550.163.01", "libnvidia-glsi.so.550.163.01")


def _incomplete(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _add_dir(doc: Dict[str, Any], path: str) -> None:
    doc["dirs"].setdefault(path, {"entries": []})
    parent = posixpath.dirname(path)
    entries = doc["dirs"].setdefault(parent, {"entries": []}).setdefault("entries", [])
    if posixpath.basename(path) not in entries:
        entries.append(posixpath.basename(path))
    if parent != "/":
        _add_dir(doc, parent)


def _add_file(doc: Dict[str, Any], path: str) -> None:
    doc["files"][path] = {"text": ""}
    _add_dir(doc, posixpath.dirname(path))
    entries = doc["dirs"][posixpath.dirname(path)]["entries"]
    if posixpath.basename(path) not in entries:
        entries.append(posixpath.basename(path))


def _drop(doc: Dict[str, Any], path: str) -> None:
    for table in ("files", "links", "elf"):
        doc.get(table, {}).pop(path, None)
    parent = doc["dirs"][posixpath.dirname(path)]
    parent["entries"] = [e for e in parent["entries"] if e != posixpath.basename(path)]


def test_egl_library_mounted_without_the_driver_libraries_it_needs_is_named_with_them() -> None:
    (f,) = _incomplete(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert "EGL" in f.title and "OpenGL (GLX)" in f.title
    for name in PARTS:
        assert name in f.title
    assert ("libEGL_nvidia.so.0 (%s/libEGL_nvidia.so.550.163.01) needs libnvidia-eglcore.so.550.163.01, "
            "libnvidia-glsi.so.550.163.01, not found" % CURRENT) in f.detail
    assert "container (docker)" in f.detail and "CUDA is unaffected" in f.detail
    assert "mount them from the host" in f.fix.text and "NVIDIA_DRIVER_CAPABILITIES=all" in f.fix.text


def test_quiet_once_the_missing_libraries_are_where_the_loader_looks() -> None:
    doc = corpus_snapshot(CASE)
    for name in PARTS:
        _add_file(doc, posixpath.join(LIB, name))  # a default directory of the loader
    assert _incomplete(doc) == []


def test_quiet_when_ld_library_path_names_the_staged_libraries_and_fires_while_one_is_left_out() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["LD_LIBRARY_PATH"] = "/opt/nvidia-host"
    for name in PARTS:
        _add_file(doc, posixpath.join("/opt/nvidia-host", name))
    assert _incomplete(doc) == []
    _drop(doc, "/opt/nvidia-host/libnvidia-glsi.so.550.163.01")
    (f,) = _incomplete(doc)
    assert "libnvidia-glsi.so.550.163.01" in f.title and "libnvidia-eglcore" not in f.title


def test_compute_only_container_without_any_graphics_library_stays_quiet() -> None:
    doc = corpus_snapshot(CASE)
    for name in ("libEGL_nvidia.so.0", "libEGL_nvidia.so.550.163.01", "libGLX_nvidia.so.0",
                 "libGLX_nvidia.so.550.163.01", "libGLESv2_nvidia.so.2", "libGLESv2_nvidia.so.550.163.01"):
        _drop(doc, posixpath.join(CURRENT, name))
    assert _incomplete(doc) == []
    assert _incomplete(corpus_snapshot(COMPUTE_ONLY)) == []


def test_a_complete_or_unreadable_install_stays_quiet() -> None:
    assert _incomplete(corpus_snapshot(FULL_GRAPHICS)) == []
    doc = corpus_snapshot(CASE)
    doc["elf"] = {}  # the libraries' headers not read: nothing to judge from
    assert _incomplete(doc) == []


def test_a_stale_library_of_another_release_no_soname_leads_to_stays_quiet() -> None:
    doc = corpus_snapshot(CASE)
    for name in PARTS:
        _add_file(doc, posixpath.join(LIB, name))
    stale = posixpath.join(CURRENT, "libEGL_nvidia.so.470.256.02")
    _add_file(doc, stale)
    doc["elf"][stale] = {"needed": ["libnvidia-eglcore.so.470.256.02", "libc.so.6"], "runpath": []}
    assert _incomplete(doc) == []


def test_graphics_capability_left_out_is_named_as_the_fix() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["NVIDIA_DRIVER_CAPABILITIES"] = "compute,utility"
    (f,) = _incomplete(doc)
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.detail
    assert f.fix.commands == ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=all ..."]


def test_on_a_host_the_driver_is_reinstalled() -> None:
    doc = corpus_snapshot(CASE)
    _drop(doc, "/.dockerenv")
    (f,) = _incomplete(doc)
    assert "container" not in f.detail
    assert "Reinstall the driver 550.163.01 with its graphics libraries" in f.fix.text


def test_on_ubuntu_with_the_gl_package_installed_it_is_reinstalled() -> None:
    doc = corpus_snapshot(CASE)
    _drop(doc, "/.dockerenv")
    _add_file(doc, "/var/lib/dpkg/status")
    doc["files"]["/var/lib/dpkg/status"] = {"text": "".join(
        "Package: %s\nStatus: install ok installed\nVersion: 550.163.01-0ubuntu1\nArchitecture: amd64\n\n" % name
        for name in ("libnvidia-compute-550", "libnvidia-gl-550"))}
    (f,) = _incomplete(doc)
    assert f.fix.commands == ["sudo apt install --reinstall libnvidia-gl-550"]

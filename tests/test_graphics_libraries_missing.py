"""``driver.graphics_libraries_missing``: the driver's compute libraries without its graphics ones (OpenGL/GLX, EGL,
Vulkan) on a machine with a program that renders through them.

NVIDIA's Ubuntu packaging ships the graphics files together in libnvidia-gl-<flavour>
(debian/templates/libnvidia-gl-flavour.install.in: libGLX_nvidia, libEGL_nvidia, libnvidia-glcore,
libnvidia-eglcore, ..., usr/share/vulkan/icd.d/nvidia_icd.json, usr/share/glvnd/egl_vendor.d/10_nvidia.json);
nvidia-installer's --no-opengl-files leaves them out ("Do not install any of the OpenGL-related driver files",
option_table.h).

Machine: the corpus case rebuilt from the public report (Ubuntu 22.04, driver 535.216.01 from the .run installer
without its OpenGL files, Isaac Sim 4.2 unpacked at ~/isaacsim), replayed from its snapshot; each variant changes one
thing as the fix or another cause would.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b68-ubuntu2204-kernel68-runfile-driver53521601-without-opengl-files-isaac-sim-42-no-device-created"
COMPUTE_ONLY = "b27-ubuntu2404-driver535-compute-only-packages-mitsuba352-drjit-no-libnvoptix-needs-libnvidia-gl"
CODE = "driver.graphics_libraries_missing"
LIB = "/usr/lib/x86_64-linux-gnu"


def _graphics(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _add_file(doc: Dict[str, Any], path: str) -> None:
    doc["files"][path] = {"text": ""}
    entries = doc["dirs"].setdefault(posixpath.dirname(path), {"entries": []}).setdefault("entries", [])
    if posixpath.basename(path) not in entries:
        entries.append(posixpath.basename(path))
    parent = posixpath.dirname(path)
    if parent != "/":
        _add_dir(doc, parent)


def _add_dir(doc: Dict[str, Any], path: str) -> None:
    doc["dirs"].setdefault(path, {"entries": []})
    parent = posixpath.dirname(path)
    entries = doc["dirs"].setdefault(parent, {"entries": []}).setdefault("entries", [])
    if posixpath.basename(path) not in entries:
        entries.append(posixpath.basename(path))
    if parent != "/":
        _add_dir(doc, parent)


def _drop_tree(doc: Dict[str, Any], root: str) -> None:
    for table in ("files", "dirs", "links"):
        for path in [p for p in doc.get(table, {}) if p == root or p.startswith(root + "/")]:
            del doc[table][path]
    parent = doc["dirs"].get(posixpath.dirname(root), {})
    parent["entries"] = [e for e in parent.get("entries", []) if e != posixpath.basename(root)]


def test_runfile_without_opengl_files_and_isaac_sim_is_told_to_reinstall_with_them() -> None:
    (f,) = _graphics(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert "OpenGL" in f.title and "535.216.01" in f.title and "Isaac Sim" in f.title
    assert "--no-opengl-files" in f.detail and "/usr/bin/nvidia-installer" in f.detail
    assert "libGLX_nvidia.so.0" in f.detail and "nvidia_icd.json" in f.detail
    assert "Isaac Sim 4.2.0 (/home/user/isaacsim)" in f.detail
    assert "without --no-opengl-files" in f.fix.text
    assert f.fix.commands == ["sudo sh NVIDIA-Linux-x86_64-535.216.01.run"]
    assert "nvidia-installer" in f.source["url"]


def test_quiet_once_the_driver_has_its_graphics_libraries() -> None:
    doc = corpus_snapshot(CASE)
    for name in ("libGLX_nvidia.so.0", "libGLX_nvidia.so.535.216.01", "libEGL_nvidia.so.0",
                 "libnvidia-glcore.so.535.216.01", "libnvidia-eglcore.so.535.216.01"):
        _add_file(doc, posixpath.join(LIB, name))
    _add_file(doc, "/usr/share/vulkan/icd.d/nvidia_icd.json")
    assert _graphics(doc) == []


def test_a_headless_compute_server_without_a_renderer_stays_quiet() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/home/user/isaacsim")
    assert _graphics(doc) == []


def test_quiet_when_no_install_method_that_leaves_them_out_is_seen() -> None:
    """Without the .run installer's program, compute-only packages or a container's capabilities, the files may lie
    where the look did not reach (a distribution's full driver package installs them): no guess."""
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/usr/bin/nvidia-installer")
    assert _graphics(doc) == []


def test_an_omniverse_launcher_install_is_found_too() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/home/user/isaacsim")
    root = "/home/user/.local/share/ov/pkg/isaac-sim-4.2.0"
    _add_file(doc, root + "/kit/kit")
    (f,) = _graphics(doc)
    assert "Isaac Sim (%s)" % root in f.detail


def test_carla_is_a_renderer_too() -> None:
    doc = corpus_snapshot(CASE)
    _drop_tree(doc, "/home/user/isaacsim")
    _add_file(doc, "/opt/carla-simulator/CarlaUE4.sh")
    (f,) = _graphics(doc)
    assert "CARLA needs" in f.title and "CARLA (/opt/carla-simulator)" in f.detail


def test_a_container_without_the_graphics_capability_is_told_to_add_it() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["NVIDIA_DRIVER_CAPABILITIES"] = "compute,utility"
    (f,) = _graphics(doc)
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.detail
    assert f.fix.commands == ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=all ..."]


def test_ubuntu_compute_only_packages_name_libnvidia_gl_of_the_branch() -> None:
    doc = corpus_snapshot(COMPUTE_ONLY)
    assert _graphics(doc) == []  # no renderer installed: a compute machine, quiet
    home = doc["environ"].get("HOME") or "/root"
    _add_file(doc, home + "/isaacsim/kit/kit")
    (f,) = _graphics(doc)
    assert "libnvidia-compute-535" in f.detail
    assert f.fix.commands == ["sudo apt install libnvidia-gl-535"]
    assert "ubuntu-packaging-nvidia-driver" in f.source["url"]


def test_the_code_is_explained() -> None:
    from envdoctor.checks import code_docs

    docs = code_docs()
    assert docs[CODE].severity == "warning" and "OpenGL" in docs[CODE].summary

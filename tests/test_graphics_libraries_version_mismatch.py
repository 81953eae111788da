"""``driver.graphics_libraries_version_mismatch``: the driver's graphics vendor libraries programs would use
(libEGL_nvidia.so.0 / libGLX_nvidia.so.0 as the loader finds them, and what libglvnd's EGL vendor files name) are of
another driver release than the loaded kernel module, while the compute libraries match it.

Machine: the corpus case rebuilt from the public report (habitat-sim issue 2590: an Apptainer container on a SLURM
node whose host driver is 570.158.01, its compute libraries bound into /.singularity.d/libs, while the image bundles
NVIDIA's EGL/GL libraries of 570.195.03; EGL finds no device), replayed from its snapshot; each variant changes one
thing as the fix or another cause would. The other machines: the b86a Gazebo container (host driver 550.163.01,
graphics libraries of the module's release) and a healthy Ubuntu 22.04 Isaac Sim desktop with the full 570.169
driver.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings

CASE = ("b87a-slurm-apptainer-habitat-sim-conda-host-driver57015801-image-bundles-egl-nvidia-57019503-and-conda-"
        "mesa-libegl-no-egl-device")
SAME_RELEASE = ("b86a-container-gz-sim-headless-rendering-debian-host-driver55016301-libegl-nvidia-mounted-without-"
                "eglcore-glcore-glsi")
FULL_GRAPHICS = ("healthy-b86a-ubuntu2204-rtx4070tisuper-driver570169-cuda122-isaacsim450-pip-swapchain-fails-"
                 "teamviewer-not-the-stack")
CODE = "driver.graphics_libraries_version_mismatch"
LIB = "/usr/lib/x86_64-linux-gnu"
BOUND = "/.singularity.d/libs"
VENDOR_JSON = "/usr/share/glvnd/egl_vendor.d/10_nvidia.json"
HOST = "570.158.01"
IMAGE = "570.195.03"


def _mismatch(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _add_file(doc: Dict[str, Any], path: str, text: str = "") -> None:
    doc["files"][path] = {"text": text}
    entries = doc["dirs"].setdefault(posixpath.dirname(path), {"entries": []})["entries"]
    if posixpath.basename(path) not in entries:
        entries.append(posixpath.basename(path))


def _add_link(doc: Dict[str, Any], path: str, target: str) -> None:
    _add_file(doc, path)
    doc["links"][path] = {"target": target}


def _bind_host_graphics(doc: Dict[str, Any]) -> None:
    """What Apptainer --nv binds when its nvliblist.conf names the graphics libraries: the host's, of its release,
    into /.singularity.d/libs (first on LD_LIBRARY_PATH after the conda env)."""
    for soname in ("libEGL_nvidia.so.0", "libGLX_nvidia.so.0"):
        real = soname[:-1] + HOST
        _add_file(doc, posixpath.join(BOUND, real))
        _add_link(doc, posixpath.join(BOUND, soname), real)
    for core in ("libnvidia-eglcore", "libnvidia-glcore", "libnvidia-glsi", "libnvidia-tls"):
        _add_file(doc, posixpath.join(BOUND, "%s.so.%s" % (core, HOST)))


def test_image_graphics_libraries_of_another_release_than_the_host_module_are_named_with_both() -> None:
    (f,) = _mismatch(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert f.title == ("The NVIDIA driver's EGL and OpenGL (GLX) libraries are release %s, but the loaded kernel "
                       "module is %s" % (IMAGE, HOST))
    assert "Apptainer container (/scratch/user/habitat.sif)" in f.detail
    assert "libEGL_nvidia.so.0 -> %s/libEGL_nvidia.so.%s (found by the loader)" % (LIB, IMAGE) in f.detail
    assert "API mismatch" in f.detail and "CUDA and nvidia-smi work" in f.detail
    assert "host driver's graphics libraries" in f.fix.text and "nvliblist.conf" in f.fix.text
    assert "libnvidia-gl-<branch>" in f.fix.text


def test_quiet_once_the_host_graphics_libraries_are_bound_ahead_of_the_image_copies() -> None:
    doc = corpus_snapshot(CASE)
    _bind_host_graphics(doc)
    assert _mismatch(doc) == []


def test_an_egl_vendor_file_naming_the_image_copy_by_path_still_fires() -> None:
    doc = corpus_snapshot(CASE)
    _bind_host_graphics(doc)
    # libglvnd loads an absolute library_path as it is, whatever LD_LIBRARY_PATH says
    doc["files"][VENDOR_JSON] = {"text": '{"file_format_version": "1.0.0", "ICD": {"library_path": '
                                         '"%s/libEGL_nvidia.so.0"}}' % LIB}
    (f,) = _mismatch(doc)
    assert f.title.startswith("The NVIDIA driver's EGL libraries are release %s" % IMAGE)
    assert "named by %s" % VENDOR_JSON in f.detail


def test_a_damaged_vendor_file_is_no_crash_and_the_loader_view_still_counts() -> None:
    for text in ("{not json", '{"ICD": {"library_path": 7}}', '["ICD"]', '{"ICD": {"library_path": "a/b.so"}}',
                 "\x00" * 64):
        doc = corpus_snapshot(CASE)
        doc["files"][VENDOR_JSON] = {"text": text}
        (f,) = _mismatch(doc)
        assert IMAGE in f.title and HOST in f.title


def test_whole_driver_of_another_release_is_library_mismatch_not_this() -> None:
    # an upgrade without a reboot: the compute libraries are the new release too and NVML refuses them
    doc = corpus_snapshot(CASE)
    _add_file(doc, posixpath.join(LIB, "libnvidia-ml.so." + IMAGE))
    _add_link(doc, posixpath.join(LIB, "libnvidia-ml.so.1"), "libnvidia-ml.so." + IMAGE)
    doc["nvml"] = {"data": {"init": {"code": 18, "error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"}}, "duration": 0.0}
    codes = [f.code for f in snapshot_findings(doc)]
    assert CODE not in codes and "driver.library_mismatch" in codes


def test_on_a_host_the_fix_is_one_release_for_every_part() -> None:
    doc = corpus_snapshot(CASE)
    for name in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER", "SINGULARITY_NAME"):
        doc["environ"].pop(name, None)
    (f,) = _mismatch(doc)
    assert "container" not in f.detail
    assert "install the graphics libraries of driver %s" % HOST in f.fix.text


def test_graphics_libraries_of_the_module_release_stay_quiet() -> None:
    assert _mismatch(corpus_snapshot(SAME_RELEASE)) == []
    assert _mismatch(corpus_snapshot(FULL_GRAPHICS)) == []


def test_a_library_whose_name_carries_no_release_is_not_judged() -> None:
    doc = corpus_snapshot(CASE)
    for soname in ("libEGL_nvidia.so.0", "libGLX_nvidia.so.0"):
        doc["links"][posixpath.join(LIB, soname)] = {"target": soname[:-1] + "1"}  # Tegra-like naming
        _add_file(doc, posixpath.join(LIB, soname[:-1] + "1"))
    assert _mismatch(doc) == []

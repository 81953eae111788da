"""``driver.optix_library_missing``: a package that opens NVIDIA's OptiX runtime (libnvoptix.so.1, part of the
driver) where the loader finds none, and why.

Dr.Jit opens ``libnvoptix.so.1`` by soname (drjit-core src/optix_api.cpp; ``runtime_loads.json``). NVIDIA's Ubuntu
packaging puts it in libnvidia-gl-<branch> (debian/templates/libnvidia-gl-flavour.install.in), NVIDIA's container
library mounts it only for the 'graphics' capability (src/nvc_info.c graphics_libs).

Machine: the corpus case rebuilt from the public report (Ubuntu 24.04, driver 535 from the compute/headless packages,
Mitsuba 3.5.2 and Dr.Jit 0.4.6 in a venv), replayed from its snapshot; each variant changes one thing as the fix or
another cause would.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b27-ubuntu2404-driver535-compute-only-packages-mitsuba352-drjit-no-libnvoptix-needs-libnvidia-gl"
CODE = "driver.optix_library_missing"


def _optix(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _add_file(doc: Dict[str, Any], path: str) -> None:
    doc["files"][path] = {"text": ""}
    entries = doc["dirs"].setdefault(posixpath.dirname(path), {"entries": []}).setdefault("entries", [])
    entries.append(posixpath.basename(path))


def test_compute_only_ubuntu_packages_name_libnvidia_gl_of_the_branch() -> None:
    (f,) = _optix(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert "drjit 0.4.6 opens libnvoptix.so.1" in f.title
    assert "libnvidia-gl-535" in f.detail and f.fix.commands == ["sudo apt install libnvidia-gl-535"]
    assert "ubuntu-packaging-nvidia-driver" in f.source["url"]


def test_a_container_without_the_graphics_capability_is_told_to_add_it() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["NVIDIA_DRIVER_CAPABILITIES"] = "compute,utility"
    (f,) = _optix(doc)
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.detail
    assert f.fix.commands == ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics ..."]
    assert "libnvidia-container" in f.source["url"]


def test_a_copy_outside_the_loaders_path_is_named() -> None:
    doc = corpus_snapshot(CASE)
    _add_file(doc, "/usr/local/lib/libnvoptix.so.1")
    (f,) = _optix(doc)
    assert "/usr/local/lib/libnvoptix.so.1" in f.detail
    assert f.fix.commands[0] == "echo /usr/local/lib | sudo tee /etc/ld.so.conf.d/nvidia-optix.conf"


def test_quiet_once_the_library_is_where_the_loader_looks() -> None:
    doc = corpus_snapshot(CASE)
    _add_file(doc, "/usr/lib/x86_64-linux-gnu/libnvoptix.so.1")
    assert _optix(doc) == []


def test_quiet_when_the_variable_names_the_file() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["DRJIT_LIBOPTIX_PATH"] = "/opt/nvidia/libnvoptix.so.1"
    assert _optix(doc) == []


def test_graphics_capability_or_all_is_not_the_cause() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["NVIDIA_DRIVER_CAPABILITIES"] = "all"
    (f,) = _optix(doc)
    assert "NVIDIA_DRIVER_CAPABILITIES" not in f.detail and "libnvidia-gl-535" in f.detail


# -- the loader's default directories are the machine's glibc's, by its distribution family --------------------------


def test_a_copy_in_usr_lib64_is_not_found_on_ubuntu() -> None:
    """Ubuntu's glibc searches /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib and /usr/lib after the cache
    (``ld.so --help``, "system search path"), never /usr/lib64: a libnvoptix.so.1 mounted there is not loaded."""
    doc = corpus_snapshot(CASE)
    _add_file(doc, "/usr/lib64/libnvoptix.so.1")
    (f,) = _optix(doc)
    assert "the loader finds none" in f.title


def test_a_copy_in_usr_lib64_is_found_on_a_rhel_family_system() -> None:
    """The same machine with Rocky Linux 9's os-release: its glibc searches /lib64 and /usr/lib64 by default."""
    doc = corpus_snapshot(CASE)
    doc["files"]["/etc/os-release"] = {"text": 'NAME="Rocky Linux"\nVERSION="9.4 (Blue Onyx)"\nID="rocky"\n'
                                               'ID_LIKE="rhel centos fedora"\nVERSION_ID="9.4"\n'}
    _add_file(doc, "/usr/lib64/libnvoptix.so.1")
    assert _optix(doc) == []


def test_without_a_known_distribution_every_distributions_directories_count() -> None:
    doc = corpus_snapshot(CASE)
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        doc["files"].pop(path, None)
    _add_file(doc, "/usr/lib64/libnvoptix.so.1")
    assert _optix(doc) == []

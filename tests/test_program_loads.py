"""Applications that open a driver library by soname at run time (``runtime_loads.json`` rows keyed by ``program``;
fact ``apps.program_loads``): Blender's OptiX device opens ``libnvoptix.so.1`` (Cycles' device_optix.cpp calls the
OptiX SDK's ``optixInit()``, which dlopens it), judged by ``driver.optix_library_missing``.

Machine: the corpus case rebuilt from the public report (a nytimes/blender 2.91 GPU container, Blender's release
build at ``/bin/blender`` with its ``/bin/2.91`` folder, started with NVIDIA_DRIVER_CAPABILITIES=compute,utility, no
libnvoptix), replayed from its snapshot; each variant changes one thing as the fix or another install would.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from envdoctor.matrix import loads
from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b78-container-nytimes-blender291-gpu-ubuntu1804-on-tesla-t4-driver41856-host-no-libnvoptix-optix-device-missing"
CODE = "driver.optix_library_missing"


def _optix(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _add_file(doc: Dict[str, Any], path: str) -> None:
    doc["files"][path] = {"text": ""}
    entries = doc["dirs"].setdefault(posixpath.dirname(path), {"entries": []}).setdefault("entries", [])
    entries.append(posixpath.basename(path))


def _rename_version_folder(doc: Dict[str, Any], new: str) -> None:
    """Blender's ``/bin/2.91`` folder (and all below it) renamed to ``/bin/<new>``."""
    for key in [k for k in doc["dirs"] if k == "/bin/2.91" or k.startswith("/bin/2.91/")]:
        doc["dirs"]["/bin/" + new + key[len("/bin/2.91"):]] = doc["dirs"].pop(key)
    for key in [k for k in doc["files"] if k.startswith("/bin/2.91/")]:
        doc["files"]["/bin/" + new + key[len("/bin/2.91"):]] = doc["files"].pop(key)
    doc["dirs"]["/bin"]["entries"] = [new if n == "2.91" else n for n in doc["dirs"]["/bin"]["entries"]]


def test_blender_in_a_container_without_the_graphics_capability() -> None:
    (f,) = _optix(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert f.title.startswith("Blender 2.91 opens libnvoptix.so.1")
    assert "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in f.detail and "lists no OptiX device" in f.detail
    assert f.fix.commands == ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics ..."]
    assert any(e.get("key") == "apps.program_loads" for e in f.evidence)


def test_quiet_once_the_library_is_where_the_loader_looks() -> None:
    doc = corpus_snapshot(CASE)
    _add_file(doc, "/usr/lib/x86_64-linux-gnu/libnvoptix.so.1")
    assert _optix(doc) == []


def test_quiet_for_a_blender_release_without_the_optix_device() -> None:
    doc = corpus_snapshot(CASE)
    _rename_version_folder(doc, "2.80")  # the OptiX device first shipped in 2.81
    assert _optix(doc) == []


def test_quiet_for_a_blender_without_a_release_builds_layout() -> None:
    # a distribution's package keeps its version folder in /usr/share/blender, not beside the executable
    doc = corpus_snapshot(CASE)
    _rename_version_folder(doc, "share")
    assert _optix(doc) == []


def test_program_rows_are_validated() -> None:
    good = {"program": "blender", "releases": ">=2.81", "loads": ["libnvoptix.so.1"]}
    assert loads.validate([good]) == []
    assert loads.validate([dict(good, program="Blender 2")])
    assert loads.validate([{"program": "blender", "loads": ["libnvoptix.so.1"]}])
    assert loads.validate([dict(good, package="blender")])
    assert loads.program_loads("blender", "2.91") and not loads.program_loads("blender", "2.80")
    assert loads.program_loads("blender", None) == [] and loads.program_loads("blender", "x.y") == []

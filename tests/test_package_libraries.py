"""Packages that bundle CUDA-linked libraries of their own (auditwheel's ``<name>.libs/``), judged with the loader's
rules as a framework's libraries are (``package-libraries``).

Fixtures: corpus machines rebuilt from the threads (their ``elf`` records are the NEEDED/RUNPATH of CTranslate2's
real wheels as the threads' ``ldd`` and error messages show them); the quiet variants are the same machines with
the one change the threads' accepted fix made (the wheel's directory on LD_LIBRARY_PATH, the other cuDNN major).
"""

from __future__ import annotations

from typing import Any, Dict, List

from .conftest import corpus_snapshot, snapshot_findings

CT2_450 = "b7-py311-faster-whisper-ct2-450-cudnn9-pip-wheel-not-on-loader-path"
CT2_431 = "b7-ubuntu2204-faster-whisper-ct2-431-needs-cudnn8-has-cudnn92-deb"
CT2_310 = "b6-arch-cuda121-opt-cuda-ctranslate2-310-needs-libcublas11"


def _loud(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code.endswith(".framework_cannot_load")
            and "ctranslate2" in f.title]


def test_a_cudnn_wheel_outside_the_loader_path_is_named_with_its_directory() -> None:
    found = _loud(corpus_snapshot(CT2_450))
    cudnn = [f for f in found if f.code == "cudnn.framework_cannot_load"]
    assert len(cudnn) == 1 and cudnn[0].severity == "error"
    assert "ctranslate2 4.5.0" in cudnn[0].title and "libcudnn.so.9" in cudnn[0].title
    assert "site-packages/nvidia/cudnn/lib" in cudnn[0].title
    assert any("LD_LIBRARY_PATH" in str(c) for c in cudnn[0].fix.commands)
    # torch 2.5.1 is installed, but its libraries are not on this machine's record: nothing said of it
    assert "first" not in cudnn[0].detail


def test_on_the_loader_path_the_same_machine_is_quiet() -> None:
    doc = corpus_snapshot(CT2_450)
    site = "/usr/local/lib/python3.11/site-packages/nvidia"
    doc["environ"]["LD_LIBRARY_PATH"] = "%s/cudnn/lib:%s/cublas/lib" % (site, site)
    assert _loud(doc) == []


def test_another_cudnn_major_is_named_as_what_is_installed() -> None:
    found = _loud(corpus_snapshot(CT2_431))
    assert [f.code for f in found] == ["cudnn.framework_cannot_load"]
    assert "libcudnn.so.8" in found[0].title and "9.2.0" in found[0].title


def test_a_cuda_11_cublas_on_a_cuda_12_machine() -> None:
    # the record lists 3 of Arch's cuDNN 8.8 libraries (the front library, ops_infer, cnn_infer: stand-ins), so the
    # cuDNN 8 sub-libraries CTranslate2 3.x opens through its bundled front library that are not there are said too
    # (tests/test_runtime_loads.py); this test is about cuBLAS
    found = [f for f in _loud(corpus_snapshot(CT2_310)) if f.code.startswith("cuda.")]
    assert [f.code for f in found] == ["cuda.framework_cannot_load"]
    assert "libcublas.so.11" in found[0].title and "ctranslate2 3.10.1" in found[0].title


def test_a_package_requiring_a_framework_is_left_to_the_framework_checks() -> None:
    # the same library, but the package declares torch: it runs with torch loaded, the extension checks judge it
    doc = corpus_snapshot(CT2_431)
    meta = [p for p in doc["files"] if p.endswith("ctranslate2-4.3.1.dist-info/METADATA")][0]
    doc["files"][meta]["text"] += "Requires-Dist: torch\n"
    assert _loud(doc) == []

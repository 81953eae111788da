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


# -- a package's extension modules (RECORD) that link CUDA libraries, themselves or through a library of their own
CUQUANTUM = ("b85h-ubuntu2004-driver47010301-pip-cuquantum-python-2203-custatevec-needs-libcublas11-only-cuda10-"
             "libcublas10")


def _with_ldconfig(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The record ran /sbin/ldconfig -p but holds no /sbin/ldconfig (libc-bin, on every Ubuntu): put it back, so the
    loader cache the record holds is read."""
    doc["files"]["/sbin/ldconfig"] = {"text": ""}
    doc["dirs"]["/sbin"] = {"entries": ["ldconfig"]}
    doc["dirs"]["/"]["entries"].append("sbin")
    return doc


def _add_libraries(doc: Dict[str, Any], where: str, names: List[str]) -> None:
    doc["dirs"][where] = {"entries": list(names)}
    for name in names:
        doc["files"]["%s/%s" % (where, name)] = {"text": ""}


def test_an_extension_module_whose_own_library_needs_another_cuda_major() -> None:
    found = [f for f in snapshot_findings(_with_ldconfig(corpus_snapshot(CUQUANTUM)))
             if f.code == "cuda.framework_cannot_load"]
    cublas = [f for f in found if "libcublas.so.11" in f.title]
    assert len(cublas) == 1 and cublas[0].severity == "error"
    assert "libcustatevec.so.1 (cuquantum-python 22.3.0)" in cublas[0].title
    assert "libcublas.so.10" in cublas[0].title  # the major that is installed
    # cuTENSOR's wheel ships one library per CUDA release (lib/10.2, lib/11, lib/11.0): only the one the modules'
    # RPATH names is loaded, so no variant is judged alone
    assert not any("(cutensor " in f.title for f in found)


def test_with_the_cuda_11_cublas_on_the_loader_path_it_is_quiet() -> None:
    doc = _with_ldconfig(corpus_snapshot(CUQUANTUM))
    _add_libraries(doc, "/usr/local/cuda-11.4/lib64", ["libcublas.so.11", "libcublasLt.so.11"])
    doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.4/lib64"
    assert [f for f in snapshot_findings(doc) if f.code.endswith(".framework_cannot_load")] == []


def test_an_unreadable_loader_cache_gives_no_error() -> None:
    # the record as it is: without the cache, a library not found elsewhere may still be in it
    assert [f for f in snapshot_findings(corpus_snapshot(CUQUANTUM)) if f.severity == "error"] == []


# -- a TensorRT outside Python (a release tarball) that the loader reaches
TRT_TARBALL = "b85k-ubuntu2204-rtx3090-driver53030-cuda121-tensorrt-8600-tarball-no-cudnn-plugin-lib-needs-libcudnn8"


def _trt(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code.endswith(".framework_cannot_load")]


def test_a_tensorrt_tarball_plugin_library_needs_a_cudnn_that_is_not_installed() -> None:
    found = _trt(corpus_snapshot(TRT_TARBALL))
    assert [f.code for f in found] == ["cudnn.framework_cannot_load"]
    assert found[0].severity == "error"
    title = found[0].title
    assert "libnvinfer_plugin.so.8" in title and "libcudnn.so.8" in title
    assert "TensorRT 8.6.0 in /home/foo/TensorRT-8.6.0.12/lib" in title


def test_a_tensorrt_tarball_with_cudnn_installed_is_quiet() -> None:
    doc = corpus_snapshot(TRT_TARBALL)
    doc["dirs"]["/usr/lib/x86_64-linux-gnu"]["entries"].append("libcudnn.so.8")
    doc["files"]["/usr/lib/x86_64-linux-gnu/libcudnn.so.8"] = {"text": ""}
    assert _trt(doc) == []


def test_a_tensorrt_tarball_nothing_loads_is_not_judged() -> None:
    doc = corpus_snapshot(TRT_TARBALL)
    del doc["environ"]["LD_LIBRARY_PATH"]
    assert _trt(doc) == []

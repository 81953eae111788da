"""ONNX Runtime's execution provider libraries shipped inside another package (sherpa-onnx's ``sherpa_onnx/lib``),
judged with the loader's rules as ONNX Runtime's own package's providers are (``package-libraries``).

Fixture: the corpus machine rebuilt from k2-fsa/sherpa-onnx#2046 (sherpa-onnx 1.11.2+cuda, whose bundled ONNX
Runtime 1.17.1 CUDA provider is a CUDA 11.8 build: its ``elf`` record is that build's NEEDED list, cuBLAS/cuBLASLt 11,
cuDNN 8, cuRAND 10, cuFFT 10, cudart 11.0; the machine has only torch's CUDA 12 wheels). The quiet variants make the
one change the maintainer's answer names (CUDA 11.8's libraries where the loader finds them), or take away what the
provider needs to be loaded at all (a GPU; a session asking for an optional provider).
"""

from __future__ import annotations

from typing import Any, Dict, List

from .conftest import corpus_snapshot, snapshot_findings

SHERPA = ("b86g-ubuntu2204-venv-sherpa-onnx-1112-cuda-wheel-ort1171-cuda118-provider-on-cuda12-torch-libs-"
          "no-libcublaslt11")
SITE = "/home/user/app/.venv/lib/python3.10/site-packages"
LIB = SITE + "/sherpa_onnx/lib"
INFO = SITE + "/sherpa_onnx-1.11.2+cuda.dist-info"
CUDA118 = ["libcublas.so.11", "libcublasLt.so.11", "libcudart.so.11.0", "libcufft.so.10", "libcurand.so.10",
           "libcudnn.so.8"]


def _loud(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code.endswith(".framework_cannot_load") and "sherpa-onnx" in f.title]


def _add_dir(doc: Dict[str, Any], where: str, names: List[str]) -> None:
    parent, base = where.rsplit("/", 1)
    doc["dirs"].setdefault(parent, {"entries": []})["entries"].append(base)
    doc["dirs"][where] = {"entries": list(names)}
    for name in names:
        doc["files"]["%s/%s" % (where, name)] = {"text": ""}


def test_a_bundled_cuda_11_provider_on_a_cuda_12_machine_cannot_load() -> None:
    found = _loud(corpus_snapshot(SHERPA))
    lt = [f for f in found if "libcublasLt.so.11" in f.title]
    assert len(lt) == 1 and lt[0].code == "cuda.framework_cannot_load" and lt[0].severity == "error"
    title = lt[0].title
    assert "libonnxruntime_providers_cuda.so" in title
    assert "sherpa-onnx 1.11.2+cuda's ONNX Runtime 1.17.1" in title  # the package and the release it bundles
    assert "libcublasLt.so.12" in title  # the major that is installed
    assert "made for the CUDA you have" in lt[0].fix.text
    assert "provider_bridge_ort.cc" in lt[0].source["url"]
    # cuDNN 8 the build needs, cuDNN 9 from torch's wheel
    cudnn = [f for f in found if f.code == "cudnn.framework_cannot_load"]
    assert len(cudnn) == 1 and "libcudnn.so.8" in cudnn[0].title and "libcudnn.so.9" in cudnn[0].title


def test_with_cuda_11_8_libraries_on_the_loader_path_it_is_quiet() -> None:
    doc = corpus_snapshot(SHERPA)
    _add_dir(doc, "/usr/local/cuda-11.8/lib64", CUDA118)
    doc["dirs"]["/usr/local"] = {"entries": ["cuda-11.8"]}
    doc["dirs"]["/usr"]["entries"].append("local")
    doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.8/lib64"
    assert _loud(doc) == []


def test_without_a_gpu_no_provider_is_opened() -> None:
    doc = corpus_snapshot(SHERPA)
    doc["nvml"]["data"] = {"init": {"value": False, "error": "NVML_ERROR_DRIVER_NOT_LOADED"}}
    doc["dirs"]["/sys/bus/pci/devices"]["entries"] = []
    doc["dirs"]["/proc/driver/nvidia/gpus"]["entries"] = []
    assert _loud(doc) == []


def test_an_optional_provider_without_tensorrt_is_quiet() -> None:
    # a TensorRT provider beside the CUDA one, no TensorRT installed: a session asks for it or not; the CUDA
    # provider's findings are unchanged
    doc = corpus_snapshot(SHERPA)
    trt = LIB + "/libonnxruntime_providers_tensorrt.so"
    doc["dirs"][LIB]["entries"].append("libonnxruntime_providers_tensorrt.so")
    doc["files"][trt] = {"text": ""}
    doc["elf"][trt] = {"needed": ["libnvinfer.so.8", "libnvinfer_plugin.so.8", "libnvonnxparser.so.8",
                                  "libonnxruntime_providers_shared.so", "libc.so.6"],
                       "rpath": [], "runpath": ["$ORIGIN"], "soname": "libonnxruntime_providers_tensorrt.so"}
    found = _loud(doc)
    assert found and not any("tensorrt" in f.title or "libnvinfer" in f.title for f in found)
    assert len(found) == len(_loud(corpus_snapshot(SHERPA)))


def test_the_record_says_which_providers_the_package_installed() -> None:
    # with a RECORD, the files it lists are the package's: one listing the provider finds it, one listing none
    # leaves the folder's file alone (another installer's)
    doc = corpus_snapshot(SHERPA)
    doc["dirs"][INFO]["entries"].append("RECORD")
    doc["files"][INFO + "/RECORD"] = {
        "text": "sherpa_onnx/lib/libonnxruntime_providers_cuda.so,sha256=x,1000\n"
                "sherpa_onnx/lib/libonnxruntime.so.1.17.1,sha256=y,1000\n"}
    assert any("libcublasLt.so.11" in f.title for f in _loud(doc))
    doc["files"][INFO + "/RECORD"] = {"text": "sherpa_onnx/lib/libonnxruntime.so.1.17.1,sha256=y,1000\n"}
    assert _loud(doc) == []


def test_hostile_records_do_not_crash() -> None:
    doc = corpus_snapshot(SHERPA)
    doc["elf"][LIB + "/libonnxruntime_providers_cuda.so"] = {"error": "EINVAL", "message": "not an ELF file"}
    doc["files"][INFO + "/METADATA"] = {"text": "Name: sherpa-onnx\nVersion: \x00\n"}
    assert _loud(doc) == []

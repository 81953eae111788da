"""A certain failure is an error.

* nvcc's default build (no -arch: SASS for one architecture plus its PTX; read from ``nvcc --dryrun`` of NVIDIA's
  nvcc 11.8.89 and 12.4.131 in Debian's nvidia-cuda-toolkit packages, sm_52, and 13.0.88 from PyPI, sm_75)
  reaches any other GPU only through PTX, which a driver of an older CUDA minor cannot JIT;
* WSL2's unversioned libcuda.so out of the loader's reach where cuDNN 8 is installed (its convolution
  sub-library opens libcuda.so).
"""

from __future__ import annotations

from typing import Any, Dict

from envdoctor.checks import CheckContext
from envdoctor.facts import Facts, ok

from .conftest import corpus_snapshot, snapshot_findings


def _codes(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {f.code: f for f in snapshot_findings(doc)}


def test_nvcc_default_ptx_the_driver_cannot_jit_is_an_error() -> None:
    # corpus manjaro-cuda113-package-driver46080-unsupported-ptx: nvcc 11.3 on driver 460.80 (CUDA 11.2), an RTX 3070
    # Laptop GPU (8.6); cuda_memtest failed with 'the provided PTX was compiled with an unsupported toolchain'
    found = _codes(corpus_snapshot("manjaro-cuda113-package-driver46080-unsupported-ptx"))
    f = found["driver.too_old_for_toolkit"]
    assert f.severity == "error" and "460.80" in f.title and "11.3" in f.title and "8.6" in f.title
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in f.detail and "-arch=native" in f.fix.text
    assert "driver.minor_version_compat" not in found


def _compat(cc: str, torch: bool = False, torch_cuda: str = "12.8") -> Dict[str, Any]:
    from envdoctor.checks.compat import compat

    facts = [ok("driver.version", "570.124.06", "nvml:system.driver_version"),
             ok("driver.cuda_version", "12.8", "nvml:system.cuda_driver_version"),
             ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", "GPU", "nvml:device.0.name"),
             ok("gpu.0.compute_capability", cc, "nvml:device.0.compute_capability"),
             ok("cuda.nvcc", {"path": "/usr/local/cuda/bin/nvcc", "release": "12.9", "version": "12.9.86",
                              "toolkit": "/usr/local/cuda-12.9"}, "command:nvcc --version")]
    if torch:
        facts.append(ok("framework.torch", {"version": "2.7.0", "public": "2.7.0", "cuda": torch_cuda, "build": "cuda",
                                            "path": "/site", "package": "torch"}, "file:/site/torch/version.py"))
    return {f.code: f for f in compat(CheckContext(Facts(facts), []))}


def test_nvcc_129_on_a_driver_for_128_by_the_gpu_it_must_jit_for() -> None:
    # the example: nvcc 12.9 on a driver for CUDA 12.8; an RTX 4090 (8.9) gets only compute_52 PTX
    f = _compat("8.9")["driver.too_old_for_toolkit"]
    assert f.severity == "error" and "12.9" in f.title and "PTX" in f.title
    # a Maxwell GPU of 5.2 runs nvcc 12's default SASS (sm_52): no JIT, the runtime runs under minor-version compat
    assert _compat("5.2")["driver.minor_version_compat"].severity == "info"
    # next to a CUDA build of torch that runs natively on this driver, nvcc builds mostly its extensions, which
    # torch.utils.cpp_extension gives the visible GPU's own SASS: the minor-version info
    found = _compat("8.9", torch=True)
    assert "driver.too_old_for_toolkit" not in found and found["driver.minor_version_compat"].severity == "info"
    # a torch built with a CUDA newer than the driver too: the toolkit its extensions are built with (of torch's
    # CUDA) writes PTX this driver cannot JIT, and an extension built with its own -gencode flags or where the GPU
    # was not visible reaches the GPU only through it (corpus b85j: GeneFace++'s extension, torch cu117 and nvcc
    # 11.7 on R510, a V100): a warning, not a certain failure
    found = _compat("8.9", torch=True, torch_cuda="12.9")
    f = found["driver.too_old_for_toolkit"]
    assert f.severity == "warning" and "570.124.06" in f.title and "12.9" in f.title and "8.9" in f.title
    assert "torch.utils.cpp_extension" in f.detail and "torch 2.7.0" in f.detail
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in f.detail
    # a GPU nvcc's default SASS runs on: nothing to JIT, the minor-version info as without torch
    found = _compat("5.2", torch=True, torch_cuda="12.9")
    assert "driver.too_old_for_toolkit" not in found


def test_wsl2_unversioned_libcuda_is_an_error_where_cudnn_8_needs_it() -> None:
    from envdoctor.checks.driver_health.wsl import _wsl

    # corpus wsl2-unversioned-libcuda-not-in-ld-cache (microsoft/WSL#8587), the loader's answers as recorded there
    base = [ok("os.wsl", "WSL2", "file:/proc/version"),
            ok("driver.wsl_libcuda", ["/usr/lib/wsl/lib/libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1"],
               "dir:/usr/lib/wsl/lib"),
            ok("libraries.libcuda", {"libcuda.so.1": {"path": "/usr/lib/wsl/lib/libcuda.so.1"},
                                     "libcuda.so": {"path": None}}, "derived")]
    f = _wsl(Facts(base))[0]
    assert f.code == "driver.wsl_libcuda_unversioned_unreachable" and f.severity == "warning"
    cudnn8 = ok("libraries.cudnn", [{"version": "8.9.7", "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
                                     "kind": "library"}], "derived")
    f = _wsl(Facts(base + [cudnn8]))[0]
    assert f.severity == "error" and "cuDNN 8.9.7" in f.title and "libcudnn_cnn_infer.so.8" in f.detail

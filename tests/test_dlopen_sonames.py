"""The sonames a framework opens at run time follow the toolkit its build saw (envdoctor.probes.dlopen.SONAMES).

TensorFlow's third_party/gpus/find_cuda_config.py (v2.4.0 on) reads each math library's major from CUDA 11's own
headers (CUSOLVER_VER_MAJOR of cusolver_common.h ...) and dso_loader.cc opens lib<name>.so.<major>: CUDA 11.0 ships
cuSOLVER 10.6 (libcusolver.so.10.6.0.245, soname libcusolver.so.10), 11.1 and later cuSOLVER 11. TensorFlow 2.4,
built with 11.0, logs "Could not load dynamic library 'libcusolver.so.10'" on a CUDA 11.1/11.2 machine
(tensorflow/tensorflow#45848, #48498); 2.5 (built with 11.2) opens libcusolver.so.11.
"""

from envdoctor.probes import dlopen


def _tf(version: str, cuda: str) -> list:
    return dlopen.wanted("tensorflow", {"version": version, "public": version, "build": "cuda", "cuda": cuda,
                                        "cudnn": "8"})


def test_a_tensorflow_built_with_cuda_110_opens_cusolver_10_and_the_rest_of_cuda_11() -> None:
    wanted = _tf("2.4.0", "11.0")
    assert "libcusolver.so.10" in wanted and "libcusolver.so.11" not in wanted
    assert {"libcudart.so.11.0", "libcublas.so.11", "libcublasLt.so.11", "libcufft.so.10", "libcurand.so.10",
            "libcusparse.so.11", "libcudnn.so.8"} <= set(wanted)


def test_builds_with_cuda_111_and_later_open_cusolver_11() -> None:
    for cuda in ("11.1", "11.2", "11.8"):
        assert "libcusolver.so.11" in _tf("2.5.0", cuda) and "libcusolver.so.10" not in _tf("2.5.0", cuda)
    assert "libcusolver.so.11" in _tf("2.15.0", "12.2")


def test_a_build_whose_cuda_minor_is_unknown_takes_the_majors_soname() -> None:
    assert dlopen.soname("cusolver", (11, None)) == "libcusolver.so.11"
    assert dlopen.soname("cusolver", (10, 1)) == "libcusolver.so.10"

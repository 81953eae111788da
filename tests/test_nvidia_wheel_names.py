"""NVIDIA's pip wheel names, read in one place (``probes.cuda.nvidia_library_wheel``) by every probe that sorts them:
the CUDA wheels a framework requires, the wheels installed, and the same library for two CUDA majors side by side.
Names as PyPI publishes them (nvidia-cudnn-cu12, CUDA 13's suffix-less nvidia-cuda-runtime, DALI's
nvidia-dali-cuda120, Model Optimizer's nvidia-modelopt-core)."""

from __future__ import annotations

from envdoctor.host.base import Distribution
from envdoctor.probes.cuda import nvidia_library_wheel, pip_cuda_wheels
from envdoctor.probes.dlopen import wheel_families

from .conftest import make_host


def test_library_wheels_and_the_nvidia_projects_that_are_not():
    assert nvidia_library_wheel("nvidia-cudnn-cu12") == ("cudnn", "12")
    assert nvidia_library_wheel("nvidia-cuda-runtime-cu11") == ("cuda-runtime", "11")
    assert nvidia_library_wheel("nvidia-cuda-runtime") == ("cuda-runtime", None)  # CUDA 13: no suffix
    for name in ("nvidia-ml-py", "nvidia-ml-py3", "nvidia-pyindex", "nvidia-dali-cuda120", "nvidia-modelopt-core",
                 "nvidia-tensorflow", "torch", "nvidia"):
        assert nvidia_library_wheel(name) is None, name


def test_every_reader_agrees_that_dali_is_not_a_cuda_library_wheel():
    site = "/venv/lib/python3.11/site-packages"
    dists = [Distribution("nvidia-dali-cuda110", "1.30.0", site + "/nvidia_dali_cuda110-1.30.0.dist-info", site),
             Distribution("nvidia-dali-cuda120", "1.30.0", site + "/nvidia_dali_cuda120-1.30.0.dist-info", site),
             Distribution("nvidia-nccl-cu11", "2.19.3", site + "/nvidia_nccl_cu11-2.19.3.dist-info", site),
             Distribution("nvidia-nccl-cu12", "2.21.5", site + "/nvidia_nccl_cu12-2.21.5.dist-info", site)]
    host = make_host(files={d.metadata_dir + "/METADATA": "Name: %s\nVersion: %s\n" % (d.name, d.version)
                            for d in dists})
    host.distributions = lambda: dists  # type: ignore[method-assign]
    assert [w["name"] for w in pip_cuda_wheels(host)] == ["nvidia-nccl-cu11", "nvidia-nccl-cu12"]
    assert [(f["lib"], [w["name"] for w in f["wheels"]]) for f in wheel_families(host)] == [
        ("nccl", ["nvidia-nccl-cu11", "nvidia-nccl-cu12"])]

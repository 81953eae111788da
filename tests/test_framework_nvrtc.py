"""CuPy compiles its kernels at run time with the NVRTC the loader gives it; NVRTC of a CUDA release targets that
release's architectures (cuda.json cc_min..cc_max, proved from NVIDIA's nvcc wheels). The facts are those of
cupy/cupy#9121's reproduction: ``pip install cupy-cuda12x==13.4.1 nvidia-curand-cu12==10.3.7.77
nvidia-cuda-nvrtc-cu12==12.6.77 nvidia-cuda-runtime-cu12==12.6.77`` with the wheels' lib directories on
LD_LIBRARY_PATH, on an RTX 5090 (compute capability 12.0); the NVRTC 12.8 wheel (nvidia-cuda-nvrtc-cu12 12.8.93) is
the fix CuPy's maintainers give ("Blackwell support requires CUDA 12.8", cupy/cupy#9106). No GPU runs here: the GPU
is NVML's answer as a fact."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.framework_nvrtc import framework_nvrtc
from envdoctor.facts import Facts, ok

SITE = "/home/user/venv/lib/python3.12/site-packages"


def facts(nvrtc="12.6.77", cc="12.0", gpu="NVIDIA GeForce RTX 5090", build="cuda"):
    lib = SITE + "/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    return Facts([
        ok("framework.cupy", {"version": "13.4.1", "package": "cupy-cuda12x", "cuda": "12", "build": build,
                              "path": SITE}, "python"),
        ok("linkage.cupy.dlopen", [
            {"soname": "libnvrtc.so.12", "how": "dlopen", "path": lib, "resolved": lib, "via": "LD_LIBRARY_PATH",
             "version": "12", "file_version": nvrtc},
            {"soname": "libcublas.so.12", "how": "dlopen", "path": None, "resolved": None, "via": None}], "derived"),
        ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", gpu, "nvml:device.0.name"),
        ok("gpu.0.compute_capability", cc, "nvml:device.0.compute_capability")])


def run(f):
    return list(framework_nvrtc(CheckContext(f, [])))


def test_cuda_126_nvrtc_cannot_compile_for_blackwell():
    [f] = run(facts())
    assert f.code == "cuda.toolkit_cannot_target_gpu" and f.severity == "error"
    assert "CuPy 13.4.1" in f.title and "12.6.77" in f.title and "sm_120" in f.title and "12.0" in f.title
    assert "up to 9.0" in f.title and "12.8" in f.detail
    assert f.fix.commands == ["pip install 'nvidia-cuda-nvrtc-cu12>=12.8'"]


def test_quiet_where_the_nvrtc_release_targets_the_gpu():
    assert run(facts(nvrtc="12.8.93")) == []                                   # Blackwell with CUDA 12.8's NVRTC
    assert run(facts(cc="8.9", gpu="NVIDIA GeForce RTX 4090")) == []           # Ada with CUDA 12.6's NVRTC
    assert run(facts(build="cpu")) == []                                       # no CUDA build, nothing compiled


def test_an_nvrtc_of_unknown_release_says_nothing():
    assert run(facts(nvrtc="")) == []


# -- PyTorch's JIT fusers: the NVRTC of torch's own CUDA, the architecture clamped from a torch release on ----------
# (WisconsinAIVision/yolact_edge#107: conda's pytorch 1.7.0 with cudatoolkit 11.0 on an RTX 3090, "nvrtc: error:
# invalid value for --gpu-architecture (-arch)"; 1.7.1 clamps NVRTC 11.0 to 8.0, pytorch/pytorch#48309)

def torch_facts(version="1.7.0", cuda="11.0", cc="8.6", gpu="NVIDIA GeForce RTX 3090", build="cuda"):
    return Facts([
        ok("framework.torch", {"version": version, "cuda": cuda, "build": build, "path": SITE}, "python"),
        ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", gpu, "nvml:device.0.name"),
        ok("gpu.0.compute_capability", cc, "nvml:device.0.compute_capability")])


def test_torch_fuser_asking_nvrtc_110_for_sm86_is_a_warning_naming_the_release_that_clamps():
    [f] = run(torch_facts())
    assert f.code == "cuda.toolkit_cannot_target_gpu" and f.severity == "warning"
    assert f.title == ("torch 1.7.0 compiles fused kernels at run time with NVRTC 11.0, which cannot target NVIDIA "
                       "GeForce RTX 3090 (sm_86, compute capability 8.6): CUDA 11.0 targets up to 8.0, and this "
                       "torch asks NVRTC for the GPU's own architecture unclamped")
    assert "invalid value for --gpu-architecture" in f.detail and "torch 1.7.1 and newer" in f.detail
    assert "torch 1.7.1 or newer" in f.fix.text and "CUDA 11.1" in f.fix.text
    # NVRTC 11.1-11.7 on Ada before torch 1.13 (pytorch/pytorch#87611)
    [g] = run(torch_facts(version="1.10.1+cu113", cuda="11.3", cc="8.9", gpu="NVIDIA GeForce RTX 4090"))
    assert "NVRTC 11.3" in g.title and "sm_89" in g.title and "torch 1.13.0 and newer" in g.detail


def test_torch_fuser_quiet_where_torch_clamps_or_nvrtc_targets_the_gpu():
    assert run(torch_facts(version="1.7.1")) == []                      # clamped to 8.0 from 1.7.1
    assert run(torch_facts(version="1.9.0+cu111", cuda="11.1")) == []   # NVRTC 11.1 targets 8.6
    assert run(torch_facts(version="1.13.1+cu117", cuda="11.7", cc="8.9")) == []  # clamped to 8.6 from 1.13
    assert run(torch_facts(version="1.6.0", cuda="10.2")) == []         # NVRTC 10.x always clamped
    assert run(torch_facts(build="cpu")) == []
    assert run(torch_facts(version="2.7.0+cu126", cuda="12.6", cc="12.0")) == []  # no verified table: not judged

"""The ptxas Triton runs against the GPUs' architectures: compat.triton-ptxas-arch.

The Triton fact is as the frameworks probe writes it for the triton-2.0.0 Linux wheel, whose bundled
triton/third_party/cuda/bin/ptxas answers `ptxas --version` with "Cuda compilation tools, release 11.7, V11.7.99"
(ModelTC/LightLLM#176: "ptxas fatal : Value 'sm_89' is not defined for option 'gpu-name'" on an RTX 4090). The GPU
facts stand in for NVML (no GPU runs here); the compute capabilities are NVIDIA's (developer.nvidia.com/cuda-gpus)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.triton_ptxas_arch import triton_ptxas_arch
from envdoctor.facts import Facts, ok

BUNDLED = "/home/user/env/lib/python3.11/site-packages/triton/third_party/cuda/bin/ptxas"


def _run(version, release, full, cc, name, how="bundled", ptxas=BUNDLED, nvcc=None):
    facts = [ok("framework.torch.triton", {"package": "triton", "version": version, "ptxas": ptxas, "from": how,
                                           "release": release, "ptxas_version": full}, "command:ptxas --version"),
             ok("gpu.0.compute_capability", cc, "nvml", "Compute capability"), ok("gpu.0.name", name, "nvml", "Name")]
    if nvcc:
        facts.append(ok("cuda.nvcc", {"path": nvcc[0], "release": nvcc[1]}, "command:nvcc --version"))
    return triton_ptxas_arch(CheckContext(Facts(facts), []))


def test_triton_200_bundled_cuda_117_ptxas_on_an_rtx_4090_is_an_error_naming_sm_89():
    found = _run("2.0.0", "11.7", "11.7.99", "8.9", "NVIDIA GeForce RTX 4090",
                 nvcc=("/usr/local/cuda-11.8/bin/nvcc", "11.8"))
    assert [f.code for f in found] == ["cuda.toolkit_cannot_target_gpu"] and found[0].severity == "error"
    f = found[0]
    assert "triton 2.0.0" in f.title and "sm_89" in f.title and "CUDA 11.7" in f.title
    assert "11.8" in f.detail  # the first CUDA whose ptxas targets sm_89
    assert f.fix.commands == ["export TRITON_PTXAS_PATH=/usr/local/cuda-11.8/bin/ptxas"]


def test_no_command_when_no_toolkit_targets_the_gpu():
    found = _run("2.0.0", "11.7", "11.7.99", "9.0", "NVIDIA H100 80GB HBM3", nvcc=("/usr/local/cuda-11.7/bin/nvcc",
                                                                                      "11.7"))
    assert [f.code for f in found] == ["cuda.toolkit_cannot_target_gpu"] and found[0].fix.commands == []


def test_quiet_where_the_ptxas_targets_the_gpu():
    assert _run("2.0.0", "11.7", "11.7.99", "8.6", "NVIDIA GeForce RTX 3090") == []
    assert _run("2.1.0", "12.1", "12.1.105", "8.9", "NVIDIA GeForce RTX 4090") == []
    assert _run("2.0.0", "11.8", "11.8.89", "8.9", "NVIDIA GeForce RTX 4090", how="TRITON_PTXAS_PATH",
                ptxas="/usr/local/cuda-11.8/bin/ptxas") == []


def test_quiet_when_triton_runs_no_ptxas_or_its_release_is_unknown():
    assert _run("1.0.0", "11.7", "11.7.99", "8.9", "NVIDIA GeForce RTX 4090", ptxas=None) == []
    assert _run("2.0.0", None, None, "8.9", "NVIDIA GeForce RTX 4090") == []

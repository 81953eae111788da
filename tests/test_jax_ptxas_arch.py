"""The ptxas JAX (XLA) assembles its kernels with against the GPUs' architectures: compat.jax-ptxas-arch.

The facts are as the probes write them for a jaxlib built for a local CUDA (jaxlib 0.1.69+cuda110, which ships no
ptxas) in an image built on CUDA 11.0, whose /usr/local/cuda-11.0/bin/ptxas is first on PATH
(google-deepmind/alphafold#55: the image fails on compute capability 8.6 GPUs, CUDA 11.1 is the first to target
sm_86). The GPU facts stand in for NVML; the compute capabilities are NVIDIA's (developer.nvidia.com/cuda-gpus)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.jax_ptxas_arch import jax_ptxas_arch
from envdoctor.facts import Facts, ok


def _run(cc, name, toolkit="11.0.221", jaxlib="0.1.69+cuda110", build="cuda", wheel=None, on_path=True):
    root = "/usr/local/cuda-%s" % ".".join(toolkit.split(".")[:2])
    ptxas = {"path": {"path": "/usr/local/cuda/bin/ptxas", "resolved": root + "/bin/ptxas"} if on_path else None,
             "wheel": wheel}
    facts = [ok("framework.jax", {"version": "0.2.14", "jaxlib": jaxlib, "build": build, "cuda": "11.0"}, "dir"),
             ok("framework.jax.ptxas", ptxas, "env:PATH"),
             ok("cuda.toolkits", [{"path": root, "version": toolkit, "release": toolkit[:4], "nvcc": False}],
                "derived"),
             ok("gpu.0.compute_capability", cc, "nvml", "Compute capability"), ok("gpu.0.name", name, "nvml", "Name")]
    return jax_ptxas_arch(CheckContext(Facts(facts), []))


def test_cuda_110_ptxas_on_a_cc_86_gpu_is_a_warning_naming_86_and_cuda_111():
    found = _run("8.6", "NVIDIA RTX A6000")
    assert [f.code for f in found] == ["cuda.gpu_newer_than_toolkit"] and found[0].severity == "warning"
    f = found[0]
    assert "8.6" in f.title and "sm_86" in f.title and "CUDA 11.0" in f.title and "jaxlib 0.1.69+cuda110" in f.title
    assert "/usr/local/cuda/bin/ptxas" in f.title
    assert "11.1" in f.detail and "11.1" in f.fix.text  # the first CUDA whose ptxas targets sm_86


def test_the_wheel_ptxas_is_judged_when_none_is_on_path():
    found = _run("12.0", "NVIDIA GeForce RTX 5090", on_path=False, jaxlib="0.4.30",
                 wheel={"version": "12.6.85", "path": "/env/site-packages/nvidia/cuda_nvcc/bin/ptxas"})
    assert [f.code for f in found] == ["cuda.gpu_newer_than_toolkit"] and "sm_120" in found[0].title


def test_quiet_where_the_ptxas_targets_the_gpu():
    assert _run("8.0", "NVIDIA A100-SXM4-40GB") == []
    assert _run("8.6", "NVIDIA RTX A6000", toolkit="11.1.105") == []
    assert _run("12.0", "NVIDIA GeForce RTX 5090", on_path=False, jaxlib="0.5.0",
                wheel={"version": "12.8.93", "path": "/env/site-packages/nvidia/cuda_nvcc/bin/ptxas"}) == []


def test_quiet_for_a_cpu_jaxlib_or_an_unknown_ptxas():
    assert _run("8.6", "NVIDIA RTX A6000", build="cpu") == []
    assert _run("8.6", "NVIDIA RTX A6000", on_path=False) == []


def test_yields_to_the_active_toolkit_finding_when_nvcc_of_that_toolkit_cannot_target_the_gpu_either():
    from envdoctor.checks import run_checks
    root = "/usr/local/cuda-11.0"
    facts = [ok("framework.jax", {"version": "0.2.14", "jaxlib": "0.1.69+cuda110", "build": "cuda", "cuda": "11.0"},
                "dir"),
             ok("framework.jax.ptxas", {"path": {"path": root + "/bin/ptxas", "resolved": root + "/bin/ptxas"},
                                        "wheel": None}, "env:PATH"),
             ok("cuda.toolkits", [{"path": root, "version": "11.0.221", "release": "11.0", "nvcc": True}], "derived"),
             ok("cuda.nvcc", {"path": root + "/bin/nvcc", "resolved": root + "/bin/nvcc", "version": "11.0.221",
                              "release": "11.0"}, "env:PATH"),
             ok("gpu.0.compute_capability", "8.6", "nvml", "Compute capability"),
             ok("gpu.0.name", "NVIDIA RTX A6000", "nvml", "Name")]
    found = [f for f in run_checks(CheckContext(Facts(facts), [])) if f.code == "cuda.gpu_newer_than_toolkit"]
    assert len(found) == 1 and "JAX" not in found[0].title and "8.6" in found[0].title

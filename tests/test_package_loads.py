"""A library a Python package opens by soname at run time (vLLM's NCCL wrapper: libnccl.so.2) against what the
framework loads and what the loader finds (check package-loads).

The layouts: the pytorch channel's conda torch (libtorch_cuda.so names no libnccl: NCCL linked statically; RUNPATH
$ORIGIN and $ORIGIN/../../../.., the environment's lib), pip's torch (libtorch_cuda.so NEEDED libnccl.so.2 from the
nvidia-nccl-cu12 wheel), conda-forge's nccl package (lib/libnccl.so.2 in the environment) and VLLM_NCCL_SO_PATH set.
The NEEDED lists are those layouts; the ELF files themselves are stand-ins (no torch build here)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.libraries.package_loads import package_loads
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeContext
from envdoctor.probes.gpupackages import probe_gpu_packages

from .conftest import make_host

ENV = "/home/ana/miniconda3/envs/vllm"
SITE = ENV + "/lib/python3.10/site-packages"
LDCONFIG = {"argv": ["/usr/sbin/ldconfig", "-p"], "returncode": 0,
            "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                      "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"}
CONDA_NEEDED = ["libc10_cuda.so", "libcudart.so.12", "libcublas.so.12", "libc10.so", "libtorch_cpu.so", "libc.so.6"]
PIP_NEEDED = CONDA_NEEDED + ["libnccl.so.2"]


def _facts(needed, files=(), environ=None):
    host = make_host(
        files=dict({SITE + "/vllm-0.6.1.post1.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm\n"
                    "Version: 0.6.1.post1\n", ENV + "/conda-meta/pytorch-2.4.0-py3.10_cuda12.1_cudnn9.1.0_0.json": "{}",
                    "/usr/sbin/ldconfig": ""}, **{f: "" for f in files}),
        commands=[LDCONFIG], environ=environ or {"PATH": "/usr/bin"},
        python={"executable": ENV + "/bin/python", "version": "3.10.14", "implementation": "cpython",
                "prefix": ENV, "base_prefix": ENV, "sys_path": [SITE]})
    pkgs = list(probe_gpu_packages(ProbeContext(host)))
    torch = ok("framework.torch", {"version": "2.4.0", "cuda": "12.1", "build": "cuda", "path": SITE}, "test",
               "PyTorch")
    elf = ok("linkage.torch.elf", {"path": SITE + "/torch/lib/libtorch_cuda.so", "needed": needed, "rpath": [],
                                   "runpath": ["$ORIGIN", "$ORIGIN/../../../.."]}, "test", "torch ELF")
    return Facts(pkgs + [torch, elf])


def test_conda_torch_with_static_nccl_and_no_libnccl_anywhere_is_a_warning():
    facts = _facts(CONDA_NEEDED)
    opens = facts.value("python.gpu_packages")[0]["opens"]
    assert opens[0]["soname"] == "libnccl.so.2" and opens[0]["path"] is None and opens[0]["certain"] is True
    found = package_loads(CheckContext(facts, []))
    assert [(f.code, f.severity) for f in found] == [("nccl.framework_cannot_load", "warning")]
    assert "libnccl.so.2" in found[0].title and "vllm 0.6.1.post1" in found[0].title
    assert "nvidia-nccl-cu12" in found[0].fix.text


def test_a_copy_off_the_search_is_named_with_the_variable():
    facts = _facts(CONDA_NEEDED, files=[SITE + "/nvidia/nccl/lib/libnccl.so.2"])
    found = package_loads(CheckContext(facts, []))
    assert found[0].fix.commands == ["export VLLM_NCCL_SO_PATH=%s/nvidia/nccl/lib/libnccl.so.2" % SITE]


def test_quiet_when_torch_loads_it_the_environment_has_it_or_the_variable_names_it():
    assert package_loads(CheckContext(_facts(PIP_NEEDED), [])) == []  # pip's torch loads the wheel's
    assert package_loads(CheckContext(_facts(CONDA_NEEDED, files=[ENV + "/lib/libnccl.so.2"]), [])) == []
    assert package_loads(CheckContext(_facts(CONDA_NEEDED, environ={"VLLM_NCCL_SO_PATH": "/opt/nccl/libnccl.so.2"}),
                                      [])) == []

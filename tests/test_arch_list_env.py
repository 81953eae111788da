"""TORCH_CUDA_ARCH_LIST set in the environment without the architecture of a GPU the machine has: CUDA extensions
built there carry no kernel for it (corpus: ext-torch-cuda-arch-list-without-52-titanx-maxwell, from
thomasbrandon/mish-cuda#10: 'fixed by adding 5.2 to TORCH_CUDA_ARCH_LIST' on a TITAN X).  Facts are written in
the shapes the environment and NVML probes produce."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence

import pytest

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Fact, Facts, ok
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes import ProbeContext
from envdoctor.probes.environment import probe_environment
from envdoctor.versions import torch_arch_list_runs_on

CODE = "cuda.arch_list_excludes_gpu"
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def run(facts: List[Fact]) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(Facts(facts), []))}


def machine(arch_list: str, gpus: Sequence[tuple]) -> List[Fact]:
    facts = [ok("env.torch_cuda_arch_list", arch_list, "env:TORCH_CUDA_ARCH_LIST"),
             ok("gpu.count", len(gpus), "nvml:device_count")]
    for i, (name, cc) in enumerate(gpus):
        facts += [ok("gpu.%d.name" % i, name, "nvml:device.%d.name" % i),
                  ok("gpu.%d.compute_capability" % i, cc, "nvml:device.%d.compute_capability" % i)]
    return facts


def test_a_list_without_the_gpus_architecture_is_reported_with_the_list_to_use() -> None:
    f = run(machine("6.0;6.1;7.0;7.5", [("NVIDIA GeForce GTX TITAN X", "5.2")]))[CODE]
    assert f.severity == "warning"
    assert "TORCH_CUDA_ARCH_LIST=6.0;6.1;7.0;7.5" in f.title and "5.2" in f.title
    assert 'export TORCH_CUDA_ARCH_LIST="6.0;6.1;7.0;7.5;5.2"' in f.fix.commands
    # a newer GPU than the list reaches (SASS of 8.0 does not run on 9.0; no PTX): the same
    assert CODE in run(machine("7.0;8.0", [("NVIDIA H100 PCIe", "9.0")]))


@pytest.mark.parametrize("arch_list,cc", [
    ("5.2", "5.2"),               # exactly the GPU
    ("6.0;6.1;7.0;7.5", "7.5"),
    ("8.0", "8.6"),               # SASS of 8.0 runs on 8.6 (same major, higher minor)
    ("8.0+PTX", "9.0"),           # PTX runs on any later GPU
    ("Ampere", "8.6"),            # named architectures as torch expands them
    ("7.0 7.5 8.0 8.6", "8.6"),   # spaces separate entries too
    ("All", "8.6"),               # not a list torch.utils.cpp_extension reads as architectures: no verdict
    ("$ARCHS", "8.6"),
])
def test_a_list_that_reaches_the_gpu_or_cannot_be_read_is_quiet(arch_list: str, cc: str) -> None:
    assert CODE not in run(machine(arch_list, [("GPU", cc)]))


def test_on_a_machine_with_two_models_only_the_uncovered_one_is_named() -> None:
    f = run(machine("8.6", [("NVIDIA GeForce RTX 3090", "8.6"), ("NVIDIA H100 PCIe", "9.0"),
                            ("NVIDIA RTX 6000 Ada Generation", "8.9")]))[CODE]
    assert "9.0" in f.title and "H100" in f.detail and "3090" not in f.detail and "Ada" not in f.detail


def test_no_gpu_or_no_variable_says_nothing() -> None:
    assert CODE not in run([ok("env.torch_cuda_arch_list", "8.0", "env:TORCH_CUDA_ARCH_LIST"),
                            ok("gpu.count", 0, "nvml:device_count")])
    assert CODE not in run(machine("8.0", [("GPU", "8.0")])[1:] + [ok("gpu.0.compute_capability", "5.2", "x")])


def test_the_environment_probe_records_the_variable_only_when_set() -> None:
    def keys(case: str) -> Dict[str, Any]:
        host = SnapshotHost(load_snapshot(os.path.join(CORPUS, case, "snapshot.json")), validated=True)
        return {f.key: f.value for f in probe_environment(ProbeContext(host))}
    assert keys("ext-torch-cuda-arch-list-without-52-titanx-maxwell")["env.torch_cuda_arch_list"] == "6.0;6.1;7.0;7.5"
    assert "env.torch_cuda_arch_list" not in keys("flashattn-nvcc121-torch201-cu117")


def test_arch_list_reading() -> None:
    assert torch_arch_list_runs_on("Maxwell", "5.2") is True
    assert torch_arch_list_runs_on("7.5", "8.0") is False
    assert torch_arch_list_runs_on("", "8.0") is None

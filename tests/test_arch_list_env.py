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


# -- an architecture the extension-building toolkit cannot compile for ---------------------------------------------

UNSUPPORTED = "cuda.arch_list_unsupported"


def nvcc(version: str, path: str = "/usr/local/cuda/bin/nvcc") -> Fact:
    # the value the CUDA probe writes for the nvcc on PATH
    return ok("cuda.nvcc", {"path": path, "resolved": path, "release": ".".join(version.split(".")[:2]),
                            "version": version, "toolkit": path.rsplit("/bin/", 1)[0]}, "command:%s --version" % path)


def test_an_architecture_newer_than_the_nvcc_is_a_failed_build_with_the_list_that_fits() -> None:
    # corpus b49-...-torch-cuda-arch-list-with-90-ptx-bmtrain-build (OpenBMB/BMTrain#83): nvcc 11.7 targets up
    # to 8.7, sm_90 needs CUDA 11.8; the maintainers' fix kept 8.6+PTX
    found = run(machine("5.2 6.0 6.1 7.0 7.5 8.0 8.6 9.0+PTX", [("NVIDIA A100-SXM4-40GB", "8.0")])
                + [nvcc("11.7.64")])
    f = found[UNSUPPORTED]
    assert f.severity == "warning" and "9.0+PTX" in f.title and "CUDA 11.7.64" in f.title
    assert "Unsupported gpu architecture" in f.detail and "11.8" in f.detail
    assert f.fix.commands == ['export TORCH_CUDA_ARCH_LIST="5.2;6.0;6.1;7.0;7.5;8.0;8.6+PTX"']
    assert CODE not in found  # the A100's 8.0 is in the list
    # a named architecture expands as torch.utils.cpp_extension expands it (Hopper: 9.0+PTX)
    assert "9.0+PTX" in run(machine("Ampere;Hopper", [("GPU", "8.0")]) + [nvcc("11.7.99")])[UNSUPPORTED].title


def test_an_architecture_the_nvcc_no_longer_targets_is_said_too_and_without_a_gpu() -> None:
    # CUDA 12.x dropped Kepler (cc_min 5.0): 3.5 in the list stops nvcc; a GPU-less build machine builds the same
    f = run([ok("env.torch_cuda_arch_list", "3.5;5.2;8.0", "env:TORCH_CUDA_ARCH_LIST"),
             ok("gpu.count", 0, "nvml:device_count"), nvcc("12.1.105")])[UNSUPPORTED]
    assert "3.5" in f.title and f.fix.commands == ['export TORCH_CUDA_ARCH_LIST="5.2;8.0"']
    # nothing left: unset it
    assert run([ok("env.torch_cuda_arch_list", "9.0", "env:TORCH_CUDA_ARCH_LIST"),
                nvcc("11.7.64")])[UNSUPPORTED].fix.commands == ["unset TORCH_CUDA_ARCH_LIST"]


@pytest.mark.parametrize("arch_list,version", [
    ("5.2 6.0 6.1 7.0 7.5 8.0 8.6 9.0+PTX", "11.8.89"),  # CUDA 11.8 targets sm_90
    ("8.0;8.6+PTX", "11.7.64"),
    ("All", "11.7.64"),                                   # not read: no verdict
    ("$ARCHS", "11.7.64"),
])
def test_a_list_the_toolkit_builds_or_that_cannot_be_read_is_quiet(arch_list: str, version: str) -> None:
    assert UNSUPPORTED not in run(machine(arch_list, [("GPU", "8.0")]) + [nvcc(version)])


def test_no_toolkit_or_a_runtime_only_toolkit_says_nothing() -> None:
    assert UNSUPPORTED not in run(machine("9.0", [("GPU", "9.0")]))
    link = ok("cuda.default_symlink", {"target": "cuda-11.7", "resolved": "/usr/local/cuda-11.7", "version": "11.7.1",
                                       "dangling": False}, "link:/usr/local/cuda")
    runtime_only = ok("cuda.toolkits", [{"path": "/usr/local/cuda-11.7", "version": "11.7.1", "nvcc": False,
                                         "kind": "system"}], "derived")
    assert UNSUPPORTED not in run(machine("9.0", [("GPU", "8.0")]) + [link, runtime_only])
    # the same toolkit with its compiler: the build fails
    assert UNSUPPORTED in run(machine("9.0", [("GPU", "8.0")]) + [link])

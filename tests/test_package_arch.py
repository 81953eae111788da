"""Packages with GPU code of their own (not frameworks) against the GPUs: compat.package-arch.

The floors are envdoctor/matrix/data/package_arch.json: bitsandbytes' wheels from 0.39.1 carry no Kepler kernels
(the lowest SASS of the 0.42.0 wheel's libbitsandbytes_cuda*.so fat binaries is sm_50, read from
bitsandbytes-0.42.0-py3-none-any.whl), FlashAttention-2 runs on Ampere and newer (its README). The metadata
directories below are named as pip names them (flash_attn-2.3.3.dist-info, bitsandbytes-0.42.0.dist-info)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.package_arch import package_arch
from envdoctor.facts import Facts, ok
from envdoctor.matrix import packages
from envdoctor.probes import ProbeContext
from envdoctor.probes.gpupackages import probe_gpu_packages

from .test_probe_frameworks import site_host

METADATA = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n"


def _gpu(cc, name):
    # NVML's answer for the GPU (a stand-in: no GPU runs here)
    return [ok("gpu.0.compute_capability", cc, "nvml", "Compute capability"), ok("gpu.0.name", name, "nvml", "Name")]


def _run(dist, version, cc, name):
    host = site_host({"%s-%s.dist-info/METADATA" % (dist, version): METADATA % (dist, version)})
    facts = Facts(list(probe_gpu_packages(ProbeContext(host))) + _gpu(cc, name))
    return facts, package_arch(CheckContext(facts, []))


def test_flash_attn_2_on_turing_is_an_error_naming_the_architecture_and_flash_attention_1():
    facts, found = _run("flash_attn", "2.3.3", "7.5", "NVIDIA GeForce RTX 2080 Ti")
    assert facts.value("python.gpu_packages")[0]["package"] == "flash-attn"
    assert [f.code for f in found] == ["gpu.arch_not_in_build"] and found[0].severity == "error"
    assert "sm_75" in found[0].title and "flash-attn 2.3.3" in found[0].title
    assert "FlashAttention 1.x" in found[0].fix.text


def test_bitsandbytes_wheel_on_kepler_is_an_error():
    _, found = _run("bitsandbytes", "0.42.0", "3.7", "Tesla K80")
    assert [f.code for f in found] == ["gpu.arch_not_in_build"]
    assert "bitsandbytes 0.42.0" in found[0].title and "sm_37" in found[0].title


def test_quiet_where_the_builds_carry_the_gpu():
    assert _run("flash_attn", "2.3.3", "8.6", "NVIDIA GeForce RTX 3090")[1] == []
    assert _run("flash_attn", "1.0.9", "7.5", "Tesla T4")[1] == []  # FlashAttention 1.x runs on Turing
    assert _run("bitsandbytes", "0.42.0", "5.2", "Tesla M60")[1] == []
    assert _run("bitsandbytes", "0.38.1", "3.7", "Tesla K80")[1] == []  # before the Kepler binaries were dropped


def test_bitsandbytes_048_dropped_maxwell():
    assert [f.code for f in _run("bitsandbytes", "0.48.1", "5.2", "Tesla M60")[1]] == ["gpu.arch_not_in_build"]


def test_no_fact_without_such_a_package():
    host = site_host({"numpy-1.26.4.dist-info/METADATA": METADATA % ("numpy", "1.26.4")})
    assert list(probe_gpu_packages(ProbeContext(host))) == []


def test_a_local_label_is_ignored_and_garbage_matches_nothing():
    assert packages.arch_row("flash-attn", "2.5.8+cu122torch2.3cxx11abiFALSE")["cc_min"] == "8.0"
    assert packages.arch_row("flash-attn", "not a version") is None


def test_vllm_below_its_compute_capability_7_floor_is_an_error():
    # vLLM's installation docs (0.3 to 0.6: 'GPU: compute capability 7.0 or higher'; its setup.py of 0.2.x refuses
    # 'GPUs with compute capability below 7.0'): an installed vLLM on a Tesla P100 (6.0), as in vllm#1284
    found = _run("vllm", "0.2.0", "6.0", "Tesla P100-PCIE-16GB")[1]
    assert [f.code for f in found] == ["gpu.arch_not_in_build"] and found[0].severity == "error"
    assert "vllm 0.2.0" in found[0].title and "6.0" in found[0].title and "7.0" in found[0].title


def test_vllm_quiet_on_volta_and_newer():
    assert _run("vllm", "0.2.0", "7.0", "Tesla V100-SXM2-32GB")[1] == []
    assert _run("vllm", "0.6.1.post2", "7.5", "Tesla T4")[1] == []


DIRECT_URL_EDITABLE = '{"dir_info": {"editable": true}, "url": "file:///home/user/vllm"}\n'  # as pip 23 writes it


def _run_local(dist, version, cc, name):
    meta = "%s-%s.dist-info/" % (dist, version)
    host = site_host({meta + "METADATA": METADATA % (dist, version), meta + "direct_url.json": DIRECT_URL_EDITABLE})
    facts = Facts(list(probe_gpu_packages(ProbeContext(host))) + _gpu(cc, name))
    return facts, package_arch(CheckContext(facts, []))


def test_a_vllm_built_here_from_its_checkout_is_not_held_to_the_published_floor():
    # vllm#963: built from source on a Quadro P2000 (6.1) with setup.py's check removed, it runs; pip records the
    # local build in direct_url.json (PEP 610 dir_info)
    facts, found = _run_local("vllm", "0.2.6", "6.1", "Quadro P2000")
    assert facts.value("python.gpu_packages")[0]["local_build"] is True
    assert found == []


def test_flash_attn_2_built_from_source_still_refuses_turing():
    # its own csrc/flash_attn/flash_api.cpp refuses non-Ampere GPUs whatever built it
    assert [f.code for f in _run_local("flash_attn", "2.3.3", "7.5", "Tesla T4")[1]] == ["gpu.arch_not_in_build"]


def test_triton_2_below_its_compute_capability_7_floor_is_a_warning_naming_what_fails():
    # corpus b85i (oobabooga/textgen#5665): triton 2.2.0 (torch 2.2.1's) on a GTX 1080 Ti; Triton's README of the
    # 2.x line: "Supported Hardware: NVIDIA GPUs (Compute Capability 7.0+)"; torch's own kernels run on 6.1
    facts, found = _run("triton", "2.2.0", "6.1", "NVIDIA GeForce GTX 1080 Ti")
    assert facts.value("python.gpu_packages")[0]["package"] == "triton"
    assert [f.code for f in found] == ["framework.gpu_below_package_minimum"] and found[0].severity == "warning"
    f = found[0]
    assert "triton 2.2.0" in f.title and "7.0" in f.title and "sm_61" in f.title
    assert "torch.compile" in f.detail and "the rest of the stack runs" in f.detail
    assert "without torch.compile" in f.fix.text


def test_triton_quiet_on_volta_and_newer_and_outside_its_rows():
    assert _run("triton", "2.2.0", "7.0", "Tesla V100-SXM2-16GB")[1] == []
    assert _run("triton", "2.1.0", "7.5", "Tesla T4")[1] == []
    assert _run("triton", "3.0.0", "6.1", "NVIDIA GeForce GTX 1080 Ti")[1] == []  # no row: nothing claimed


def test_a_fails_field_must_say_something():
    row = dict(packages.arch_row("triton", "2.2.0") or {})
    assert row and packages.validate([row]) == []
    row["fails"] = " "
    assert any("fails" in p for p in packages.validate([row]))

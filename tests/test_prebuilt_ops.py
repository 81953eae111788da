"""DeepSpeed's prebuilt ops against the installed torch and CUDA (check prebuilt-ops).

DeepSpeed's setup.py writes deepspeed/git_version_info_installed.py into every build; the two records below have
that file's layout: the PyPI sdist build of 0.14.0 (no op compiled in: installed_ops all False, torch_info 0.0,
as in the deepspeed-0.14.0 sdist) and a wheel built with DS_BUILD_OPS=1 on torch 2.3 + CUDA 12.1 (the Windows
deepspeed-0.15.0 wheel on PyPI records installed_ops 1 and torch_info {'version': '2.3', 'cuda_version': '12.1'})."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.prebuilt_ops import prebuilt_ops
from envdoctor.facts import Facts
from envdoctor.probes import ProbeContext
from envdoctor.probes.frameworks import probe_frameworks
from envdoctor.probes.gpupackages import probe_gpu_packages

from .test_probe_frameworks import site_host

JIT_RECORD = """version='0.14.0 '
git_hash='unknown'
git_branch='unknown'
installed_ops={'async_io': False, 'fused_adam': False, 'cpu_adam': False, 'transformer_inference': False}
compatible_ops={'async_io': True, 'fused_adam': True, 'cpu_adam': True, 'transformer_inference': False}
torch_info={'version': '0.0', 'bf16_support': False, 'cuda_version': '0.0', 'nccl_version': '0.0', 'hip_version': '0.0'}
"""
PREBUILT_RECORD = """version='0.14.2'
git_hash='unknown'
git_branch='HEAD'
installed_ops={'async_io': False, 'fused_adam': 1, 'cpu_adam': 1, 'transformer_inference': 1, 'sparse_attn': False}
accelerator_name='cuda'
torch_info={'version': '2.3', 'bf16_support': True, 'cuda_version': '12.1', 'nccl_version': '0.0', 'hip_version': '0.0'}
"""
METADATA = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
VERSION_PY = "__version__ = '%s'\ndebug = False\ncuda = %r\ngit_version = 'x'\nhip = None\n"


def _run(record, torch_version, cuda):
    files = {"deepspeed-0.14.2.dist-info/METADATA": METADATA % ("deepspeed", "0.14.2"),
             "torch-%s.dist-info/METADATA" % torch_version: METADATA % ("torch", torch_version),
             "torch/version.py": VERSION_PY % (torch_version, cuda)}
    if record is not None:
        files["deepspeed/git_version_info_installed.py"] = record
    host = site_host(files)
    ctx = ProbeContext(host)
    facts = Facts(list(probe_gpu_packages(ctx)) + list(probe_frameworks(ctx)))
    return facts, prebuilt_ops(CheckContext(facts, []))


def test_ops_built_for_torch_23_cuda_121_on_torch_222_cuda_118_are_an_error():
    facts, found = _run(PREBUILT_RECORD, "2.2.2+cu118", "11.8")
    build = facts.value("python.gpu_packages")[0]["build"]
    assert build["ops"] == ["cpu_adam", "fused_adam", "transformer_inference"] and build["torch"] == "2.3"
    assert [f.code for f in found] == ["framework.extension_abi_mismatch"] and found[0].severity == "error"
    assert "deepspeed 0.14.2" in found[0].title and "torch 2.3" in found[0].title and "CUDA 12.1" in found[0].title
    assert "PyTorch version mismatch" in found[0].detail


def test_quiet_on_the_pair_the_ops_were_built_for_and_on_a_jit_build():
    assert _run(PREBUILT_RECORD, "2.3.1+cu121", "12.1")[1] == []
    assert _run(JIT_RECORD, "2.2.2+cu118", "11.8")[1] == []  # no op compiled in: built just in time


def test_without_a_build_record_nothing_is_claimed():
    facts, found = _run(None, "2.2.2+cu118", "11.8")
    assert "build_unknown" in facts.value("python.gpu_packages")[0] and found == []

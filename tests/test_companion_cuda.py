"""torch's companions built for another CUDA than torch: compat.companion-cuda.

The rule is envdoctor/matrix/data/companion_cuda.json, from the projects' own import-time checks
(torchvision/extension.py and torchaudio/_extension/utils.py ``_check_cuda_version``): torchvision before 0.16 and
torchaudio before 2.12 refuse any other CUDA release, torchvision 0.16 on only another CUDA major. The sites below are
laid out as pip lays out download.pytorch.org's wheels (``torch-1.13.1+cu117.dist-info``; torch/version.py as the
1.13.1+cu117 wheel writes it: ``cuda = '11.7'``); Colab's preinstalled torchvision 0.14.1+cu116 is the case of
https://github.com/Linaqruf/kohya-trainer/issues/164."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.companion_cuda import companion_cuda
from envdoctor.matrix import packages

from .test_probe_frameworks import facts_of, site_host

METADATA = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
VERSION_PY = "__version__ = '%s'\ndebug = False\ncuda = %r\ngit_version = '0000000'\nhip = None\n"


def _run(torch, torch_cuda, **companions):
    files = {"torch-%s.dist-info/METADATA" % torch: METADATA % ("torch", torch),
             "torch/version.py": VERSION_PY % (torch, torch_cuda)}
    for name, version in companions.items():
        files["%s-%s.dist-info/METADATA" % (name, version)] = METADATA % (name, version)
    facts = facts_of(site_host(files))
    return companion_cuda(CheckContext(facts, []))


def test_colab_torchvision_cu116_beside_pip_torch_cu117_is_an_error_naming_both_cudas():
    found = _run("1.13.1+cu117", "11.7", torchvision="0.14.1+cu116")
    assert [f.code for f in found] == ["framework.torchvision_cuda_mismatch"]
    f = found[0]
    assert f.severity == "error"
    assert "torchvision 0.14.1+cu116" in f.title and "11.6" in f.title and "11.7" in f.title
    assert "PyTorch has CUDA Version=11.7 and torchvision has CUDA Version=11.6" in f.detail
    assert f.fix.commands == ["pip install 'torch==1.13.1' 'torchvision' --index-url "
                              "https://download.pytorch.org/whl/cu117"]


def test_torchaudio_minor_mismatch_is_said_too():
    found = _run("2.0.1+cu118", "11.8", torchaudio="2.0.2+cu117")
    assert [f.code for f in found] == ["framework.torchvision_cuda_mismatch"]
    assert "torchaudio 2.0.2+cu117" in found[0].title
    assert "PyTorch has CUDA version 11.8 whereas TorchAudio has CUDA version 11.7" in found[0].detail


def test_torchvision_016_on_refuses_only_another_major():
    assert _run("2.1.0+cu121", "12.1", torchvision="0.16.0+cu124") == []
    found = _run("2.9.0+cu130", "13.0", torchvision="0.24.0+cu128")
    assert [f.code for f in found] == ["framework.torchvision_cuda_mismatch"]
    assert found[0].severity == "warning"  # the 0.16 boundary is read from the pull request's date


def test_quiet_on_matching_builds_and_where_a_side_says_no_cuda():
    assert _run("1.13.1+cu117", "11.7", torchvision="0.14.1+cu117", torchaudio="0.13.1+cu117") == []
    assert _run("1.13.1+cu117", "11.7", torchvision="0.14.1") == []  # PyPI's build: no label, cannot tell
    assert _run("1.13.1+cpu", None, torchvision="0.14.1+cu116") == []  # a CPU torch: torchvision does not compare
    assert _run("1.13.1+cu117", "11.7", torchvision="0.14.1+cpu") == []


def test_rule_rows():
    assert packages.companion_refuses(packages.companion_row("torchvision", "0.15.2+cu118"), "11.7", "11.8") is True
    assert packages.companion_refuses(packages.companion_row("torchvision", "0.17.0"), "12.1", "12.4") is False
    assert packages.companion_row("torchvision", "garbage") is None
    assert packages.companion_refuses(packages.companion_row("torchvision", "0.14.1"), "?", "11.6") is None

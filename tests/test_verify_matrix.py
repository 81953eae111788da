"""scripts/verify_matrix.py: the matrix checked against the facts proved from the vendors' artifacts.

The proofs (envdoctor/matrix/proofs.json) were made by ``verify_matrix.py --refresh`` on 2026-11-25 from
NVIDIA's nvcc/crt wheels and the frameworks' wheels on PyPI.  The wheel names and requirement lines below
are real ones from that run (torch 2.14.1's and jax 0.4.26's METADATA).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import pytest

from envdoctor import matrix

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "verify_matrix.py")


@pytest.fixture(scope="module")
def vm():
    spec = importlib.util.spec_from_file_location("verify_matrix", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture(autouse=True)
def _fresh_cache():
    matrix.clear_cache()
    yield
    matrix.clear_cache()


def _proofs(vm):
    return vm.load_proofs()


def test_the_shipped_matrix_agrees_with_every_committed_proof(vm, capsys):
    assert vm.main(["--quiet"]) == 0
    out = capsys.readouterr().out
    assert "0 problem(s)" in out
    assert len(_proofs(vm)) > 150


def test_proofs_name_their_artifact_digest_and_date(vm):
    for p in _proofs(vm):
        # a wheel with its digest, or (facts about which wheels exist) the release list it was read from
        assert p["artifact"].endswith(".whl") or p["sha256"] == "-" * 64, p
        assert len(p["sha256"]) == 64, p
        assert p["source"].startswith("https://pypi.org/project/"), p
        assert len(p["date"]) == 10, p


def test_a_changed_matrix_value_fails_and_is_named(vm, tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    shutil.copytree(matrix.DATA_DIR, str(data))
    doc = json.loads((data / "cuda.json").read_text())
    row = next(r for r in doc["rows"] if r["version"] == "12.8")
    row["gcc_max"] = "13"  # nvcc 12.8's host_config.h says '#if __GNUC__ > 14'
    (data / "cuda.json").write_text(json.dumps(doc))
    monkeypatch.setattr(matrix, "DATA_DIR", str(data))
    assert vm.main(["--quiet"]) == 1
    out = capsys.readouterr().out
    assert "cuda|12.8|gcc_max: the matrix says 13" in out and "says 14" in out


def test_a_verified_fact_without_proof_or_vendor_page_fails(vm, tmp_path, monkeypatch, capsys):
    proofs = [p for p in _proofs(vm) if p["fact"] != "cuda|12.9|cc_max"]
    path = tmp_path / "proofs.json"
    vm.save_proofs(proofs, str(path))
    assert vm.main(["--quiet", "--proofs", str(path)]) == 1
    assert "cuda|12.9|cc_max: marked verified, and provable" in capsys.readouterr().out


def test_a_release_the_matrix_lacks_fails(vm, tmp_path, capsys):
    proofs = _proofs(vm) + [dict(_proofs(vm)[0], fact="cuda|13.9|gcc_max", value="17")]
    path = tmp_path / "proofs.json"
    vm.save_proofs(proofs, str(path))
    assert vm.main(["--quiet", "--proofs", str(path)]) == 1
    assert "cuda|13.9|gcc_max: the artifact proves '17' but the matrix has no such row" in capsys.readouterr().out


@pytest.mark.parametrize("filename,requires,expected", [
    ("torch-2.14.1-cp314-cp314-manylinux_2_28_x86_64.whl", ">=3.10", {"3.14"}),
    ("torch-2.14.1-cp314-cp314t-manylinux_2_28_x86_64.whl", ">=3.10", set()),  # free-threaded only
    ("jax-0.4.26-py3-none-any.whl", ">=3.9", {"3.%d" % m for m in range(9, 16)}),
    ("cupy_cuda12x-14.0.0-cp312-cp312-manylinux2014_x86_64.whl", None, {"3.12"}),
])
def test_wheel_python_tags(vm, filename, requires, expected):
    assert vm._wheel_pythons(filename, requires) == expected


def test_pins_read_from_real_metadata_lines(vm):
    torch_2_14 = ['cuda-toolkit[cublas,cudart,cufft]==13.0.3; platform_system == "Linux"',
                  'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',
                  'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"']
    assert vm._pin(torch_2_14, "cuda-toolkit") == ("cuda-toolkit", "==13.0.3")
    assert vm._pin(torch_2_14, "nvidia-cudnn") == ("nvidia-cudnn-cu13", "==9.24.0.43")
    jax_0_4_26 = ["jaxlib ==0.4.26+cuda12.cudnn89 ; extra == 'cuda'",
                  "nvidia-cudnn-cu11 >=8.8 ; extra == 'cuda11_pip'",
                  "nvidia-cudnn-cu12 <9.0,>=8.9.2.26 ; extra == 'cuda12'"]
    assert vm._pin(jax_0_4_26, "nvidia-cudnn") is None  # only under an extra nobody asked for
    assert vm._pin(jax_0_4_26, "nvidia-cudnn", ("cuda12",)) == ("nvidia-cudnn-cu12", "<9.0,>=8.9.2.26")


def test_vendor_pages(vm):
    assert vm.is_vendor_url("https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html")
    assert vm.is_vendor_url("https://github.com/pytorch/pytorch/blob/main/RELEASE.md")
    assert not vm.is_vendor_url("https://blog.csdn.net/ytomc/article/details/122805982")
    assert not vm.is_vendor_url("https://github.com/someone/pytorch-notes")

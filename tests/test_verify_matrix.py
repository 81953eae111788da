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


# ------------------------------------------------------------------ facts quoted from the vendor's pages
# The quotes in cudnn.json / tensorrt.json are NVIDIA's support-matrix tables as read on 2026-11-25
# (docs.nvidia.com, cuDNN 7.6.0-9.10.2 and TensorRT 8.6-10.14 support matrices).


def _data_copy(tmp_path, monkeypatch, area, change):
    data = tmp_path / "data"
    shutil.copytree(matrix.DATA_DIR, str(data))
    doc = json.loads((data / f"{area}.json").read_text())
    change(doc)
    (data / f"{area}.json").write_text(json.dumps(doc))
    monkeypatch.setattr(matrix, "DATA_DIR", str(data))
    matrix.clear_cache()
    return doc


def _cudnn_row(doc, version):
    return next(r for r in doc["rows"] if r["version"] == version)


def test_quoted_facts_are_listed_with_their_page_and_date(vm, capsys):
    assert vm.main([]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("cudnn|9.0.0|cc_min "))
    assert vm.KIND_QUOTED in line
    page = "https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html"
    assert f"{page} (2026-11-25)" in line
    assert "quoted from" in out.splitlines()[-1] and "0 problem(s)" in out.splitlines()[-1]


def test_a_support_matrix_fact_marked_verified_without_its_quote_fails(vm, tmp_path, monkeypatch, capsys):
    # the row's own URL (NVIDIA's page) is not enough for a support-matrix fact: the page's words must be in the row
    _data_copy(tmp_path, monkeypatch, "cudnn", lambda d: _cudnn_row(d, "9.0.0")["source"].pop("quotes"))
    assert vm.main(["--quiet"]) == 1
    out = capsys.readouterr().out
    assert "cudnn|9.0.0|cuda: marked verified but neither proved nor quoted from the vendor's page" in out
    assert "cudnn|9.0.0|cc_min: marked verified but neither proved nor quoted" in out
    assert "cudnn|9.0.0|sonames" not in out  # named by the version, not a table fact


def test_a_verified_distribution_list_needs_the_installation_guide_quote(vm, tmp_path, monkeypatch, capsys):
    def verify_distributions(doc):
        src = next(r for r in doc["rows"] if r["version"] == "12.4")["source"]
        src["unverified_fields"].remove("distributions")
    _data_copy(tmp_path, monkeypatch, "cuda", verify_distributions)
    assert vm.main(["--quiet"]) == 1
    assert "cuda|12.4|distributions: marked verified but neither proved nor quoted" in capsys.readouterr().out


def test_a_quote_from_a_page_that_is_not_the_vendors_fails(vm, tmp_path, monkeypatch, capsys):
    def third_party(doc):
        _cudnn_row(doc, "8.2.2")["source"]["quotes"][0]["url"] = "https://blog.csdn.net/ytomc/article/details/1"
    _data_copy(tmp_path, monkeypatch, "cudnn", third_party)
    assert vm.main(["--quiet"]) == 1
    assert "cudnn|8.2.2: a quote for cuda, cc_min is from https://blog.csdn.net" in capsys.readouterr().out


@pytest.mark.parametrize("change,problem", [
    (lambda q: q.update(fields=["cuda", "no_such_field"]), "fields must list fields of the row"),
    (lambda q: q.update(url="http://docs.nvidia.com/x"), ".url must be an https:// URL"),
    (lambda q: q.update(date="25.11.2026"), "is not a date YYYY-MM-DD"),
    (lambda q: q.update(quote="  "), ".quote must be the page's words"),
])
def test_a_malformed_quote_is_a_format_error(change, problem):
    doc = json.loads(open(matrix.data_path("cudnn"), encoding="utf-8").read())
    change(_cudnn_row(doc, "8.0.3")["source"]["quotes"][0])
    problems = matrix.problems_of("cudnn", doc)
    assert any(problem in p for p in problems), problems


def test_a_quoted_field_cannot_also_be_unverified():
    doc = json.loads(open(matrix.data_path("cudnn"), encoding="utf-8").read())
    _cudnn_row(doc, "8.0.3")["source"]["unverified_fields"] = ["cc_min"]
    assert any("quotes a field the row marks unverified" in p for p in matrix.problems_of("cudnn", doc))

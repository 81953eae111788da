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


# ------------------------------------------------------------------ torch: the build pip takes from PyPI
# Requirement lines and torch/version.py texts below are the real ones read by --refresh --only torch-pypi on
# 2026-11-27 from torch-2.1.0-cp310-cp310-manylinux1_x86_64.whl, torch-2.11.0-cp310-cp310-manylinux_2_28_x86_64.whl,
# torch-1.12.1-cp310-cp310-manylinux1_x86_64.whl and torch-1.0.0-cp27-cp27m-manylinux1_x86_64.whl.

TORCH_2_1_REQS = ['nvidia-cuda-nvrtc-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"',
                  'nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"',
                  'nvidia-cudnn-cu12 (==8.9.2.26) ; platform_system == "Linux" and platform_machine == "x86_64"']
TORCH_2_11_REQS = ['cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]'
                   '==13.0.2; platform_system == "Linux"', 'cuda-bindings<14,>=13.0.3; platform_system == "Linux"']
TORCH_1_12_VERSION_PY = ("__version__ = '1.12.1+cu102'\ndebug = False\ncuda = '10.2'\n"
                         "git_version = '664058fa83f1d8eede5d66418abff6e20bd76ca8'\nhip = None\n")
TORCH_1_0_VERSION_PY = "__version__ = '1.0.0'\ndebug = False\ncuda = '9.0.176'\n"


class _FakePyPI:
    """Wheels of one release, each with its METADATA requirement lines and torch/version.py text."""

    def __init__(self, wheels):
        self.wheels = wheels  # filename -> (requires lines, version.py text or None)

    def linux_wheels(self, name, version):
        return [{"filename": fn, "digests": {"sha256": "0" * 64}} for fn in self.wheels if f"-{version}-" in fn]

    def metadata(self, name, f):
        return "".join(f"Requires-Dist: {r}\n" for r in self.wheels[f["filename"]][0])

    def cached_member(self, name, f, member):
        assert member == "torch/version.py"
        return self.wheels[f["filename"]][1]


@pytest.mark.parametrize("reqs,version_py,cuda", [
    (TORCH_2_1_REQS, None, "12.1"),
    (TORCH_2_11_REQS, None, "13.0"),
    (["typing-extensions"], TORCH_1_12_VERSION_PY, "10.2"),
    ([], TORCH_1_0_VERSION_PY, "9.0"),
    (["typing-extensions"], "__version__ = '1.12.1+cpu'\ndebug = False\ncuda = None\n", None),
])
def test_a_torch_wheels_cuda_from_metadata_or_version_py(vm, reqs, version_py, cuda):
    fake = _FakePyPI({"torch-9.9.9-cp310-cp310-manylinux1_x86_64.whl": (reqs, version_py)})
    got = vm._torch_wheel_cuda(fake, fake.linux_wheels("torch", "9.9.9")[0])
    assert (got[0] if got else None) == cuda


def test_the_pypi_variant_proof_reads_every_wheel_of_the_release(vm):
    fake = _FakePyPI({"torch-1.12.0-cp39-cp39-manylinux1_x86_64.whl": ([], TORCH_1_12_VERSION_PY),
                      "torch-1.12.1-cp310-cp310-manylinux1_x86_64.whl": ([], TORCH_1_12_VERSION_PY)})
    [p] = vm._torch_pypi_variant(fake, ["1.12.0", "1.12.1"], "1.12")
    assert p["fact"] == "torch|1.12|pypi_variant" and p["value"] == "cu102"
    assert p["artifact"] == "torch-1.12.1-cp310-cp310-manylinux1_x86_64.whl" and "2 wheels" in p["how"]
    # wheels that disagree give every tag (no row value matches); one that cannot be read gives no proof
    fake.wheels["torch-1.12.1-cp310-cp310-manylinux1_x86_64.whl"] = (TORCH_2_1_REQS, None)
    assert vm._torch_pypi_variant(fake, ["1.12.0", "1.12.1"], "1.12")[0]["value"] == "cu102 | cu121"
    fake.wheels["torch-1.12.1-cp310-cp310-manylinux1_x86_64.whl"] = ([], None)
    assert vm._torch_pypi_variant(fake, ["1.12.0", "1.12.1"], "1.12") == []


def test_every_torch_row_has_its_pypi_build_proved(vm):
    proved = {p["fact"].split("|")[1]: p for p in _proofs(vm) if p["fact"].endswith("|pypi_variant")}
    for row in matrix.load("torch"):
        p = proved[row["version"]]
        assert row["pypi_variant"] == p["value"], row["version"]
        assert p["artifact"].startswith("torch-%s." % row["version"]) and p["artifact"].endswith("x86_64.whl"), p
    assert proved["2.1"]["value"] == "cu121" and "nvidia-cuda-runtime-cu12==12.1.105" in proved["2.1"]["how"]
    assert proved["1.12"]["value"] == "cu102" and "cuda = '10.2'" in proved["1.12"]["how"]


def test_a_wrong_or_unproved_pypi_variant_fails(vm, tmp_path, monkeypatch, capsys):
    _data_copy(tmp_path, monkeypatch, "torch",
               lambda doc: next(r for r in doc["rows"] if r["version"] == "2.1").update(pypi_variant="cu118"))
    assert vm.main(["--quiet"]) == 1
    out = capsys.readouterr().out
    assert "torch|2.1|pypi_variant: the matrix says cu118" in out and "says cu121" in out
    proofs = [p for p in _proofs(vm) if p["fact"] != "torch|2.1|pypi_variant"]
    path = tmp_path / "proofs.json"
    vm.save_proofs(proofs, str(path))
    assert vm.main(["--quiet", "--proofs", str(path)]) == 1
    assert "torch|2.1|pypi_variant: marked verified, and provable" in capsys.readouterr().out


class _RangeSession:
    """Serves one in-memory file to HTTP range requests, counting the bytes sent."""

    def __init__(self, data):
        self.data, self.sent = data, 0

    def get(self, url, headers=None, timeout=None):
        start, end = (int(x) for x in headers["Range"].split("=")[1].split("-"))
        body = self.data[start:end + 1]
        self.sent += len(body)
        return type("R", (), {"status_code": 206, "content": body, "raise_for_status": lambda self: None})()


def test_a_zip_member_is_read_with_range_requests_not_the_whole_wheel(vm, tmp_path, monkeypatch):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("torch/version.py", TORCH_1_12_VERSION_PY, compress_type=zipfile.ZIP_DEFLATED)
        zf.writestr("torch/lib/libtorch_cuda.so", os.urandom(8 << 20), compress_type=zipfile.ZIP_STORED)
        zf.writestr("torch-1.12.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\n")
    data = buf.getvalue()
    monkeypatch.setattr(vm, "CACHE", str(tmp_path))
    pypi = vm.PyPI.__new__(vm.PyPI)
    pypi.session, pypi.projects, pypi.blocks = _RangeSession(data), {"simple:torch": {}}, ("", {})
    os.makedirs(str(tmp_path / "metadata"))
    f = {"filename": "torch-1.12.1-cp310-cp310-manylinux1_x86_64.whl", "url": "https://files.example/t.whl",
         "size": len(data)}
    assert pypi.cached_member("torch", f, "torch/version.py") == TORCH_1_12_VERSION_PY
    assert pypi.metadata("torch", f).startswith("Metadata-Version: 2.1")
    assert pypi.session.sent < len(data) // 8, (pypi.session.sent, len(data))
    # read again: from the cache of small texts, nothing fetched
    sent = pypi.session.sent
    assert pypi.cached_member("torch", f, "torch/version.py") == TORCH_1_12_VERSION_PY and pypi.session.sent == sent
    assert os.listdir(str(tmp_path / "metadata")) and all(
        os.path.getsize(str(tmp_path / "metadata" / n)) < 4096 for n in os.listdir(str(tmp_path / "metadata")))


class _IndexSession:
    """PyPI where the JSON API does not answer: the simple API's file list (with a PEP 658 .metadata file for
    one wheel), and the .metadata file itself."""

    def __init__(self, simple, files):
        self.simple, self.files, self.asked = simple, files, []

    def get(self, url, headers=None, timeout=None):
        self.asked.append(url)
        if url.startswith("https://pypi.org/pypi/"):
            raise OSError("no route to host")
        body = json.dumps(self.simple).encode() if url.startswith("https://pypi.org/simple/") else self.files[url]

        class R:
            status_code, content = 200, body

            def raise_for_status(self):
                return None

            def json(self):
                return json.loads(self.content)
        return R()


def test_without_the_json_api_the_simple_api_lists_files_and_serves_metadata(vm, tmp_path, monkeypatch):
    import hashlib

    meta = ("Metadata-Version: 2.1\nName: torch\nVersion: 2.1.0\nRequires-Dist: " + TORCH_2_1_REQS[1] + "\n").encode()
    url = "https://files.pythonhosted.org/packages/6d/13/torch-2.1.0-cp310-cp310-manylinux1_x86_64.whl"
    simple = {"meta": {"api-version": "1.1"}, "name": "torch", "versions": ["2.1.0"], "files": [
        {"filename": "torch-2.1.0-cp310-cp310-manylinux1_x86_64.whl", "url": url, "size": 670168911,
         "hashes": {"sha256": "bf57f8184b2c317ef81fb33dc233ce4d850cd98ef3f4a38be59c7c1572d175db"},
         "requires-python": ">=3.8.0", "yanked": False, "core-metadata": {"sha256": hashlib.sha256(meta).hexdigest()}},
        {"filename": "torch-2.1.0-cp310-none-macosx_10_9_x86_64.whl", "url": url + "-mac", "size": 1,
         "hashes": {"sha256": "1" * 64}, "requires-python": ">=3.8.0", "yanked": False},
        {"filename": "torch-2.1.0rc1-cp310-cp310-manylinux1_x86_64.whl", "url": url + "-rc", "size": 1,
         "hashes": {"sha256": "2" * 64}, "yanked": False}]}
    monkeypatch.setattr(vm, "CACHE", str(tmp_path))
    os.makedirs(str(tmp_path / "metadata"))
    pypi = vm.PyPI.__new__(vm.PyPI)
    pypi.session, pypi.projects, pypi.blocks = _IndexSession(simple, {url + ".metadata": meta}), {}, ("", {})
    assert list(pypi.releases("torch")) == ["2.1.0"]  # the release candidate is left out, as from the JSON API
    [f] = pypi.linux_wheels("torch", "2.1.0")
    assert f["digests"]["sha256"].startswith("bf57f818") and f["requires_python"] == ">=3.8.0"
    assert vm._torch_wheel_cuda(pypi, f)[0] == "12.1"
    assert url + ".metadata" in pypi.session.asked and url not in pypi.session.asked  # no range request on the wheel
    # a .metadata file whose digest differs from the index's is not used
    pypi.session.files[url + ".metadata"] = meta.replace(b"12.1.105", b"11.8.89")
    os.remove(str(tmp_path / "metadata" / (f["filename"] + ".METADATA")))
    assert pypi._core_metadata("torch", f) is None


# ------------------------------------------------------------------ CUDA wheels a framework install pins


def _pins_row(doc, requirement, first):
    return next(r for r in doc["rows"] if r["requirement"] == requirement and r["releases"][0] == first)


def test_a_changed_or_unproved_cuda_wheel_pin_fails(vm, tmp_path, monkeypatch, capsys):
    def change(doc):
        _pins_row(doc, "tensorflow[and-cuda]", "2.15.0")["requires"]["nvidia-nccl-cu12"] = "==2.19.3"
        _pins_row(doc, "jax[cuda12]", "0.4.22")["releases"] = ["0.4.22"]

    _data_copy(tmp_path, monkeypatch, "cuda_wheel_pins", change)
    assert vm.main(["--quiet"]) == 1
    out = capsys.readouterr().out
    assert "cuda_wheel_pins|tensorflow[and-cuda]==2.15.0|requires: the matrix says" in out
    assert "cuda_wheel_pins|jax[cuda12]==0.4.22|releases: the matrix says 0.4.22" in out


def test_cuda_pins_follow_the_plugin_and_cuda_toolkit_one_level(vm, monkeypatch):
    """Real Requires-Dist lines: jax 0.4.31's cuda12 extra pins jax-cuda12-plugin[with_cuda], whose with_cuda extra
    pins the nvidia-* wheels; markers are evaluated for Linux x86_64 and the extra asked for."""
    metadata = {
        ("jax-cuda12-plugin", "0.4.31"): [
            "jax-cuda12-pjrt ==0.4.31",
            "nvidia-cudnn-cu12 <10.0,>=9.1 ; extra == 'with_cuda'",
            "nvidia-nccl-cu12 >=2.18.1 ; extra == 'with_cuda'"],
    }

    class Fake:
        def releases(self, name):
            return {v: [] for (n, v) in metadata if n == name}

    monkeypatch.setattr(vm, "_meta_of", lambda pypi, name, v: ({"filename": "%s-%s.whl" % (name, v)},
                                                              metadata[(name, v)]))
    jax = vm._parsed(["jaxlib ==0.4.31 ; extra == 'cuda12'",
                      "jax-cuda12-plugin[with_cuda] <=0.4.31,>=0.4.31 ; extra == 'cuda12'",
                      "jax-cuda12-plugin ==0.4.31 ; extra == 'cuda12-local'"])
    chosen = [r for r in jax if vm._applies(r, "cuda12")]
    how = []
    assert vm._cuda_pins(Fake(), chosen, how) == {"nvidia-cudnn-cu12": "<10.0,>=9.1",
                                                   "nvidia-nccl-cu12": ">=2.18.1"}
    assert how == ["jax-cuda12-plugin[with_cuda] 0.4.31: jax-cuda12-plugin-0.4.31.whl"]
    local = [r for r in jax if vm._applies(r, "cuda12-local")]
    assert vm._cuda_pins(Fake(), local, []) == {}  # the local extra pulls no CUDA wheel

"""Libraries loaded at run time without a NEEDED entry (matrix area runtime_loads): cuDNN 8's front library opens its
six sub-libraries by soname, cuDNN 9's its sub-libraries and libcudnn_graph the engines; CTranslate2's wheels ship
cuDNN's front library (renamed by auditwheel) and open cuBLAS. The loader model resolves them from the library that
opens them, and a package whose wheel needs one the loader cannot find gets ``cudnn.framework_cannot_load``.

The machine is corpus case b14-ubuntu2204-rtx2080-...-atrain-ctranslate2-... (JuergenFleiss/atrain_core#14:
CTranslate2 4.3.1 with the nvidia-cudnn-cu12 8.9 wheel off the loader path); the quiet variants put that wheel's
directory on LD_LIBRARY_PATH, or the sub-libraries in ctranslate2.libs, which libctranslate2's RUNPATH ($ORIGIN)
covers."""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor import matrix
from envdoctor.host.base import ElfResult
from envdoctor.probes import loader
from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b14-ubuntu2204-rtx2080-driver54523-atrain-ctranslate2-cudnn8-wheel-not-on-loader-path"
SITE = "/home/user/atrain/venv/lib/python3.10/site-packages"
CUDNN8 = ["libcudnn_ops_infer.so.8", "libcudnn_ops_train.so.8", "libcudnn_cnn_infer.so.8", "libcudnn_cnn_train.so.8",
          "libcudnn_adv_infer.so.8", "libcudnn_adv_train.so.8"]


def _cannot_load(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "cudnn.framework_cannot_load"]


def test_ctranslate2_431_cannot_open_cudnn8_sub_libraries_of_a_wheel_off_the_path() -> None:
    found = _cannot_load(corpus_snapshot(CASE))
    titles = " ".join(f.title for f in found)
    assert {f.severity for f in found} == {"error"}
    for name in CUDNN8:
        assert name in titles
    assert "ctranslate2 4.3.1" in titles
    assert any(SITE + "/nvidia/cudnn/lib" in c for f in found for c in f.fix.commands)
    # one directory off the loader's path is one cause with one fix: one finding, not one per sub-library
    assert len(found) == 1, [f.title for f in found]


def test_quiet_when_ld_library_path_holds_the_cudnn_wheel() -> None:
    doc = corpus_snapshot(CASE)
    doc["environ"]["LD_LIBRARY_PATH"] = SITE + "/nvidia/cudnn/lib:" + SITE + "/nvidia/cublas/lib"
    assert _cannot_load(doc) == []


def test_quiet_when_the_sub_libraries_lie_where_the_runpath_looks() -> None:
    doc = corpus_snapshot(CASE)
    doc["dirs"][SITE + "/ctranslate2.libs"]["entries"] += CUDNN8
    assert _cannot_load(doc) == []


def _elf(soname: str, needed: List[str]) -> ElfResult:
    return ElfResult("/x/" + soname, soname=soname, needed=tuple(needed))


def test_the_data_names_what_each_library_opens() -> None:
    # the bundled, renamed front library of cuDNN 8 opens the six sub-libraries
    assert loader.unvendored("libcudnn-463fd6d5.so.8.9.7") == "libcudnn.so.8.9.7"
    assert loader.runtime_loads("/s/ctranslate2.libs/libcudnn-463fd6d5.so.8.9.7",
                                _elf("libcudnn-463fd6d5.so.8.9.7", [])) == CUDNN8
    # CTranslate2 4.3.1 opens cuBLAS 12; with its bundled front library in NEEDED the sub-libraries are the front
    # library's to open; a record without it (a front library it does not link) has them opened for it
    assert loader.runtime_loads("/s/libctranslate2-032e8c30.so.4.3.1", _elf(
        "libctranslate2-032e8c30.so.4.3.1", ["libcudnn-463fd6d5.so.8.9.7"])) == ["libcublas.so.12"]
    assert loader.runtime_loads("/s/libctranslate2-032e8c30.so.4.3.1", _elf(
        "libctranslate2-032e8c30.so.4.3.1", ["libcublas.so.12"])) == CUDNN8
    assert loader.runtime_loads("/s/libctranslate2-1e22bce9.so.3.24.0", _elf(
        "libctranslate2-1e22bce9.so.3.24.0", []))[0] == "libcublas.so.11"
    newer = "libctranslate2-aaaaaaaa.so.4.4.0"  # no row: nothing is added
    assert loader.runtime_loads("/s/" + newer, _elf(newer, [])) == []
    assert loader.runtime_loads("/l/libcudnn.so.9", _elf("libcudnn.so.9", [])) == [
        "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9"]
    assert "libcudnn_heuristic.so.9" in loader.runtime_loads("/l/libcudnn_graph.so.9", _elf("libcudnn_graph.so.9", []))
    assert loader.runtime_loads("/l/libcudnn.so.7", _elf("libcudnn.so.7", [])) == []


def test_every_row_is_valid_and_sourced() -> None:
    doc = matrix.read_document("runtime_loads")
    assert matrix.problems_of("runtime_loads", doc) == []
    for row in doc["rows"]:
        assert row["source"]["verified"] is True and row["source"]["url"].startswith("https://")
        # a library's rows name CUDA libraries; a package's or a program's may name the driver's OptiX (Dr.Jit and
        # Blender open libnvoptix.so.1)
        assert all(loader.CUDA_FAMILY.match(n) or (("package" in row or "program" in row) and n == "libnvoptix.so.1")
                   for n in row["loads"]), row["loads"]
    bad = dict(doc, rows=[dict(doc["rows"][0], major="eight"), dict(doc["rows"][3], major="3")])
    assert matrix.problems_of("runtime_loads", bad) == ["row 0: major must be digits",
                                                         "row 1: needs exactly one of major and releases"]

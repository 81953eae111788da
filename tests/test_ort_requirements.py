"""ONNX Runtime's per-release CUDA library minimums (onnxruntime.json ``builds[].requires``) against the copy the
loader gives its CUDA provider.

The machine is corpus case b17-ubuntu1804-onnxruntime-gpu140-cuda101-cublas10100105-needs-cublas-10201243: CUDA
10.1 GA as NVIDIA's packages install it (cuBLAS 10.1.0.105 in /usr/lib/x86_64-linux-gnu, the toolkit's other
libraries under /usr/local/cuda-10.1) and onnxruntime-gpu 1.4.0, whose pybind module NEEDS libcublas.so.10. ONNX
Runtime's requirements table (https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html, the
1.2-1.4 line): "Requires cublas10-10.2.1.243; cublas 10.1.x will not work". The quiet variants change only the
cuBLAS file to the one CUDA 10.1 Update 2's libcublas10 10.2.1.243 package installs (same soname), or the release.
"""

from __future__ import annotations

from typing import Any, Dict

from envdoctor.host.snapshot import SnapshotHost
from envdoctor.matrix import frameworks as fwm

from .conftest import corpus_snapshot, probe_facts, snapshot_findings

CASE = "b17-ubuntu1804-onnxruntime-gpu140-cuda101-cublas10100105-needs-cublas-10201243"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
SITE = "/home/user/ort/.venv/lib/python3.6/site-packages"


def _cublas(doc: Dict[str, Any], release: str) -> Dict[str, Any]:
    """The same machine with cuBLAS (and cuBLASLt, one package) of another release behind the same sonames."""
    for lib in ("libcublas", "libcublasLt"):
        old, new = "%s.so.10.1.0.105" % lib, "%s.so.%s" % (lib, release)
        doc["files"][LIBDIR + "/" + new] = doc["files"].pop(LIBDIR + "/" + old)
        entries = doc["dirs"][LIBDIR]["entries"]
        entries[entries.index(old)] = new
        doc["links"][LIBDIR + "/%s.so.10" % lib] = {"target": new}
    return doc


def _ort(doc: Dict[str, Any], version: str) -> Dict[str, Any]:
    """The same machine with another onnxruntime-gpu release's metadata and __version__."""
    old, new = "onnxruntime_gpu-1.4.0.dist-info", "onnxruntime_gpu-%s.dist-info" % version
    meta = doc["files"].pop("%s/%s/METADATA" % (SITE, old))
    meta["text"] = meta["text"].replace("Version: 1.4.0", "Version: " + version)
    doc["files"]["%s/%s/METADATA" % (SITE, new)] = meta
    doc["dirs"]["%s/%s" % (SITE, new)] = doc["dirs"].pop("%s/%s" % (SITE, old))
    entries = doc["dirs"][SITE]["entries"]
    entries[entries.index(old)] = new
    init = doc["files"][SITE + "/onnxruntime/__init__.py"]
    init["text"] = init["text"].replace("1.4.0", version)
    return doc


def _codes(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {f.code: f for f in snapshot_findings(doc)}


def test_cublas_older_than_the_release_line_needs_is_an_error():
    f = _codes(corpus_snapshot(CASE))["onnxruntime.cublas_too_old"]
    assert f.severity == "error"
    assert "10.1.0.105" in f.title and "10.2.1.243" in f.title
    assert "cublas 10.1.x will not work" in f.detail
    assert f.source["url"].startswith("https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider")


def test_quiet_with_the_cublas_the_table_names_or_a_newer_one_of_the_major():
    for release in ("10.2.1.243", "10.2.2.89"):
        codes = _codes(_cublas(corpus_snapshot(CASE), release))
        assert not [c for c in codes if c.startswith("onnxruntime.") and c.endswith("_too_old")], release


def test_quiet_for_a_release_line_the_table_gives_no_minimum():
    # onnxruntime-gpu 1.9.0: built with CUDA 11.4, "compatible with any CUDA 11.x"; the 1.2-1.4 minimum is theirs
    assert not fwm.onnxruntime_release("1.9.0")["requires"]
    assert fwm.onnxruntime_release("1.3.0")["requires"] == {"cublas": "10.2.1.243"}
    doc = _ort(corpus_snapshot(CASE), "1.9.0")
    assert probe_facts(SnapshotHost(doc, "case")).mapping("framework.onnxruntime")["version"] == "1.9.0"
    assert "onnxruntime.cublas_too_old" not in _codes(doc)


def test_a_copy_whose_release_cannot_be_read_says_nothing():
    # a libcublas.so.10 that is a plain file (no versioned name behind it): its release is unknown, not "old"
    doc = corpus_snapshot(CASE)
    doc["files"][LIBDIR + "/libcublas.so.10"] = doc["files"].pop(LIBDIR + "/libcublas.so.10.1.0.105")
    doc["dirs"][LIBDIR]["entries"].remove("libcublas.so.10.1.0.105")
    del doc["links"][LIBDIR + "/libcublas.so.10"]
    assert "onnxruntime.cublas_too_old" not in _codes(doc)

"""cuTensorNet against the cuTENSOR it loads (``cutensornet-cutensor``, ``matrix/data/cuquantum.json``).

Fixture: the corpus machine rebuilt from NVIDIA/cuQuantum#8 (cuQuantum 22.07.0's cuTensorNet 1.1.0 in
``$CUQUANTUM_ROOT``, the cuTENSOR 1.6.0.3 archive's ``lib/11`` on LD_LIBRARY_PATH); the quiet variants change the
one release the fix changes (cuTensorNet 1.1.1, or a cuTENSOR 1.5).
"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.matrix import cuquantum

from .conftest import corpus_snapshot, snapshot_findings

CASE = ("b85h-ubuntu2004-driver5154807-cuda117-cuquantum-2207-archive-cutensornet-110-with-cutensor-1603-archive-"
        "version-mismatch")
TENSORNET_H = "/home/user/cuquantum/include/cutensornet.h"
TENSOR_H = "/home/user/libcutensor-linux-x86_64-1.6.0.3-archive/include/cutensor.h"


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "cuquantum.cutensor_version_rejected"]


def _set_minor(doc: Dict[str, Any], header: str, macro: str, value: str) -> None:
    lines = doc["files"][header]["text"].splitlines()
    doc["files"][header]["text"] = "\n".join(
        "#define %s %s" % (macro, value) if line.startswith("#define %s " % macro) else line for line in lines) + "\n"


def test_cutensornet_110_with_cutensor_16_is_refused() -> None:
    found = _found(corpus_snapshot(CASE))
    assert len(found) == 1 and found[0].severity == "error"
    title = found[0].title
    assert "cuTensorNet 1.1.0" in title and "cuTENSOR 1.6.0" in title and "via LD_LIBRARY_PATH" in title
    assert "22.07.1" in found[0].fix.text and "CUTENSORNET_STATUS_CUTENSOR_VERSION_MISMATCH" in found[0].detail


def test_the_fixed_cutensornet_is_quiet() -> None:
    doc = corpus_snapshot(CASE)
    _set_minor(doc, TENSORNET_H, "CUTENSORNET_PATCH", "1")
    assert _found(doc) == []


def test_a_cutensor_15_is_quiet() -> None:
    doc = corpus_snapshot(CASE)
    _set_minor(doc, TENSOR_H, "CUTENSOR_MINOR", "5")
    assert _found(doc) == []


def test_no_cutensor_header_says_nothing() -> None:
    doc = corpus_snapshot(CASE)
    del doc["files"][TENSOR_H]
    assert _found(doc) == []


def test_the_table() -> None:
    assert cuquantum.rejection("cutensornet", "1.1.0", "1.6.0") is not None
    assert cuquantum.rejection("cutensornet", "1.1.0", "1.5.0") is None
    assert cuquantum.rejection("cutensornet", "1.1.1", "1.6.0") is None
    assert cuquantum._validate([{"library": "cutensornet", "releases": ">=1.1.0,<1.1.1", "cuquantum": "22.07.0",
                                 "cutensor_rejected": ">=1.6", "fixed_in": "1.1.0", "fixed_cuquantum": "22.07.1"}])

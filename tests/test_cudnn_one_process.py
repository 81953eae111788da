"""Two frameworks of one Python that resolve the same cuDNN soname to different files: the first imported loads its
copy and the loader gives it to the other (a loaded soname is reused), so a framework built with a newer minor fails
when imported second (jax-ml/jax#19004: torch 2.0.1+cu117's bundled cuDNN 8.5 loaded before jaxlib 0.4.23+cuda11.
cudnn86, whose own lookup finds the nvidia-cudnn-cu11 8.9.6 wheel).

The machine is that corpus case (b14-driver51576-venv-torch201-...); the quiet variants change jaxlib's build."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b14-driver51576-venv-torch201-cu117-cudnn85-loaded-before-jaxlib0423-cudnn86"
SITE = "/home/user/venv/lib/python3.10/site-packages"


def _shadowed(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "cudnn.shadowed"]


def test_torch_bundled_cudnn85_imported_first_breaks_jaxlib_built_with_86() -> None:
    found = _shadowed(corpus_snapshot(CASE))
    assert len(found) == 1
    f = found[0]
    assert f.severity == "warning" and f.components == ["cudnn", "torch", "jax"]
    assert "PyTorch 2.0.1+cu117 loads cuDNN 8.5.0.96" in f.title and "needs cuDNN >= 8.6" in f.title
    assert SITE + "/torch/lib/libcudnn.so.8" in f.title
    assert "Import JAX before PyTorch" in f.fix.text
    assert f.fix.commands == ["export LD_PRELOAD=%s/nvidia/cudnn/lib/libcudnn.so.8${LD_PRELOAD:+:$LD_PRELOAD}" % SITE]


def test_quiet_when_both_are_satisfied_by_either_copy() -> None:
    doc = json.loads(json.dumps(corpus_snapshot(CASE)).replace("cudnn86", "cudnn82"))
    assert _shadowed(doc) == []
    assert not [f for f in snapshot_findings(doc) if f.code.startswith("cudnn.")]


def test_a_framework_that_dlopens_cudnn_searches_its_callers_rpath_first_on_the_live_h100() -> None:
    """The live H100 capture (tests/live/h100-ubuntu2404-container): torch 2.11 and JAX 0.11.2 in one venv with the
    nvidia-cudnn-cu13 9.19 wheel, and a system cuDNN 9.14 in the loader's cache. JAX's CUDA plugin opens
    libcudnn.so.9 itself; it carries a DT_RPATH ($ORIGIN/../../nvidia/cudnn/lib), which dlopen searches before
    LD_LIBRARY_PATH and the cache, so both frameworks get the wheel's 9.19: no shadowing to report."""
    import gzip
    import os

    from envdoctor.host.snapshot import SnapshotHost
    from tests.conftest import HERE, probe_facts

    path = os.path.join(HERE, "live", "h100-ubuntu2404-container", "snapshot.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    site = "/opt/torch/.venv/lib/python3.12/site-packages"
    links = probe_facts(SnapshotHost(doc, "live-h100")).value("linkage.jax.dlopen")
    cudnn = [e for e in links if e["soname"] == "libcudnn.so.9"]
    assert len(cudnn) == 1 and cudnn[0]["via"] == "RPATH", cudnn
    assert cudnn[0]["resolved"] == site + "/nvidia/cudnn/lib/libcudnn.so.9"
    assert _shadowed(doc) == []

"""The cuDNN TensorFlow 0.12 and 1.0 GPU wheels were compiled with, read from the wheels themselves.

Those wheels have no build_info.py: ``framework_builds.json`` holds, per release, the cuDNN their
``CudnnSupport::Init`` prints as the source version (a single ``CUDNN_VERSION`` number, 5105 for 5.1.5) and the CUDA
their library links (DT_NEEDED ``libcudart.so.8.0``), each read with ``scripts/tensorflow_wheel_cudnn.py`` from the
PyPI wheel named in its row. Before 1.8 TensorFlow requires the loaded cuDNN's major.minor to equal the build's
("Loaded runtime CuDNN library: 5005 (compatibility version 5000) but source was compiled with 5105 (compatibility
version 5100)"), so a cuDNN 5.0 under a 5.1 build is refused.

Machine: the corpus case rebuilt from the public report (Ubuntu 16.04, Tesla K20m, CUDA 8.0 with cuDNN 5.0.5,
tensorflow-gpu 0.12.1 from PyPI), replayed from its snapshot; the quiet variant gives the same machine cuDNN 5.1.5.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

from envdoctor import matrix
from envdoctor.matrix import builds
from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b25-ubuntu1604-tesla-k20m-tensorflow-gpu-0121-cuda80-compiled-cudnn51-loads-cudnn505"


def _cudnn_findings(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code.startswith("cudnn.")]


def test_the_rows_read_from_the_0x_and_10_wheels() -> None:
    assert builds.tensorflow_cudnn_built("0.12.1")[0] == "5.1.5"
    assert builds.tensorflow_cudnn_built("1.0.1")[0] == "5.1.10"
    assert builds.tensorflow_wheel_cuda("0.12.0")[0] == "8.0"
    assert builds.tensorflow_wheel_cuda("1.15.0") is None  # its wheel has build_info
    assert builds.validate(matrix.load("framework_builds")) == []


def test_tensorflow_0121_built_with_cudnn_51_loading_cudnn_505_is_refused() -> None:
    found = [f for f in _cudnn_findings(corpus_snapshot(CASE)) if f.code == "cudnn.too_old_for_framework"]
    assert [f.severity for f in found] == ["error"]
    assert "needs cuDNN >= 5.1.5, but loads cuDNN 5.0.5" in found[0].title
    assert "tensorflow-gpu/0.12.1" in found[0].source["url"]


def test_the_same_machine_with_cudnn_515_is_quiet() -> None:
    text = json.dumps(corpus_snapshot(CASE))
    text = text.replace("libcudnn.so.5.0.5", "libcudnn.so.5.1.5").replace("CUDNN_MINOR      0", "CUDNN_MINOR      1")
    assert _cudnn_findings(json.loads(text)) == []

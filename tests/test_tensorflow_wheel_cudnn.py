"""The cuDNN a TensorFlow pip GPU wheel was compiled with (framework_builds.json ``cudnn_built`` rows, read from the
wheels themselves by scripts/tensorflow_wheel_cudnn.py) judges the loaded cuDNN by TensorFlow's own rule: the same
major and, from cuDNN 7, a minor at least the build's ("Loaded runtime CuDNN library: 7.5.1 but source was compiled
with: 7.6.0"). The tested-build table names 7.4 for TensorFlow 1.15; the 1.15.0 wheel was compiled with 7.6.0.

The machine is corpus case b14-ubuntu1804-driver44033-tf115-... (jkjung-avt/hand-detection-tutorial#37: TensorFlow
1.15.0 from pip on Ubuntu 18.04 with the CUDA 10.0 toolkit's cuDNN 7.5.1 on LD_LIBRARY_PATH); the quiet variants
replace its cuDNN file's version."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List

import pytest

from envdoctor import matrix
from envdoctor.matrix import builds
from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b14-ubuntu1804-driver44033-tf115-cuda100-loads-cudnn751-built-with-760"


def _machine(cudnn: str = "7.5.1", tf: str = "1.15.0") -> Dict[str, Any]:
    text = json.dumps(corpus_snapshot(CASE)).replace("7.5.1", cudnn)
    if tf != "1.15.0":
        text = text.replace("1.15.0", tf)
    return json.loads(text)


def _cudnn(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code.startswith("cudnn.")]


def test_tf115_wheel_refuses_cudnn_751_it_was_compiled_with_760() -> None:
    found = _cudnn(_machine())
    assert [f.code for f in found] == ["cudnn.too_old_for_framework"]
    f = found[0]
    assert f.severity == "error"
    assert "7.5.1" in f.title and ">= 7.6.0" in f.title
    assert "pip wheel, compiled with cuDNN 7.6.0" in f.detail
    assert f.source["url"] == "https://pypi.org/project/tensorflow-gpu/1.15.0/#files"
    assert f.fix.commands == ["conda install -c conda-forge 'cudatoolkit=10.0' 'cudnn=7.6'"]


@pytest.mark.parametrize("cudnn", ["7.6.5", "7.6.0"])
def test_quiet_on_the_compiled_minor_or_a_newer_patch(cudnn: str) -> None:
    assert _cudnn(_machine(cudnn)) == []


def test_a_release_no_wheel_row_covers_keeps_the_tested_build_table() -> None:
    # every 1.15 release on PyPI was read; 1.15.1 (never released) stands for one that was not: the tested
    # configuration (cuDNN 7.4) judges, and 7.5.1 passes it
    assert builds.tensorflow_cudnn_built("1.15.1") is None and builds.tensorflow_cudnn_built("2.4.1") is None
    assert _cudnn(_machine(tf="1.15.1")) == []


def test_every_wheel_row_names_its_wheel_and_digest() -> None:
    rows = [r for r in matrix.load("framework_builds") if r.get("framework") == "tensorflow" and "cudnn_built" in r]
    assert len(rows) >= 30
    for row in rows:
        version = row["releases"][2:]
        assert row["releases"].startswith("==") and builds.tensorflow_cudnn_built(version) == (row["cudnn_built"], row)
        note = row["source"]["note"]
        assert re.search(r"tensorflow_gpu-%s-cp\d+-\S+\.whl \(sha256 [0-9a-f]{64}\)" % re.escape(version), note), note
        assert row["source"]["verified"] is True and row["source"]["url"].endswith("/%s/#files" % version)
    # the releases where the wheel differs from the tested-build table's minor
    assert builds.tensorflow_cudnn_built("1.15.0")[0] == "7.6.0"
    assert builds.tensorflow_cudnn_built("2.0.0")[0] == "7.6.0"
    assert builds.tensorflow_cudnn_built("2.4.0")[0] == "8.0.4"

"""cudnn.minor_mismatch: TensorFlow before 1.8 requires the loaded cuDNN to have the major.minor it was built with
(from 1.8, a newer minor is accepted from cuDNN 7 on: IsSourceCompatibleWithCudnnLibrary), read from the rule's rows
in framework_builds.json; a conda build's cuDNN from its conda-meta record's pin.

The machine is corpus case b11-conda-tf141-... (qianguih/voxelnet#50: conda's tensorflow-gpu 1.4.1 with cuDNN 7.1.3 in
the environment). Its record was written without the packages' dependency lists; the tests give the
tensorflow-gpu-base record the pins Anaconda's package carries in conda-meta (``depends``), as conda writes them."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from envdoctor.checks.libraries import _conda_pin_floor
from envdoctor.matrix import builds
from envdoctor.probes.frameworks import keep_conda_record
from tests.conftest import corpus_snapshot, snapshot_findings

CASE = "b11-conda-tf141-cudnn713-built-with-705-old-tf-rule"
ENV = "/home/user/anaconda3/envs/voxelnet"
BASE = ENV + "/conda-meta/tensorflow-gpu-base-1.4.1-py36h01caf0a_0.json"


def _machine(pin: str, tf: str = "1.4.1", cudnn: str = "7.1.3") -> Dict[str, Any]:
    doc = corpus_snapshot(CASE)
    doc["files"][BASE]["text"] = json.dumps({"name": "tensorflow-gpu-base", "version": "1.4.1",
                                             "build": "py36h01caf0a_0",
                                             "depends": ["cudatoolkit 8.0.*", "cudnn " + pin, "python >=3.6,<3.7.0a0"]})
    text = json.dumps(doc)
    major, minor, patch = cudnn.split(".")
    text = text.replace("7.1.3", cudnn).replace("libcudnn.so.7", "libcudnn.so." + major)
    text = text.replace("CUDNN_MAJOR 7", "CUDNN_MAJOR " + major).replace("CUDNN_MINOR 1", "CUDNN_MINOR " + minor)
    text = text.replace("CUDNN_PATCHLEVEL 3", "CUDNN_PATCHLEVEL " + patch).replace("1.4.1", tf)
    return json.loads(text)


def _codes(doc: Dict[str, Any]) -> List[str]:
    return sorted(f.code for f in snapshot_findings(doc) if f.code.startswith("cudnn."))


def test_conda_tf14_built_with_cudnn70_refuses_the_environments_713() -> None:
    found = [f for f in snapshot_findings(_machine("7.0.*")) if f.code == "cudnn.minor_mismatch"]
    assert len(found) == 1
    f = found[0]
    assert f.severity == "error" and "7.1.3" in f.title and "cuDNN 7.0" in f.title
    assert "tensorflow-gpu-base 1.4.1 (py36h01caf0a_0), which depends on cudnn 7.0.*" in f.detail
    assert f.fix.commands == ["conda install 'cudnn=7.0'"]
    assert "r1.7" in str(f.source.get("url"))


@pytest.mark.parametrize("pin,tf,cudnn", [
    ("7.0.*", "1.4.1", "7.0.5"),    # the build's minor: accepted
    ("7.0.*", "1.8.0", "7.1.3"),    # TensorFlow 1.8 accepts a newer cuDNN 7 minor
    ("6.0.*", "1.4.1", "6.0.21"),   # cuDNN 6, the same minor
])
def test_quiet_where_the_release_accepts_the_cudnn(pin: str, tf: str, cudnn: str) -> None:
    assert _codes(_machine(pin, tf, cudnn)) == []


def test_an_older_minor_stays_too_old_and_no_pin_means_cannot_tell() -> None:
    assert _codes(_machine(">=7.1.2,<8.0a0", "1.4.1", "7.0.5")) == ["cudnn.too_old_for_framework"]
    # the record as the case holds it (no dependency list) and no build info: the build's cuDNN is unknown
    assert _codes(corpus_snapshot(CASE)) == []


def test_the_rule_rows_cover_each_release() -> None:
    accepted = builds.cudnn_newer_minor_accepted
    assert accepted("tensorflow", "1.7.1", 7)[0] is False  # type: ignore[index]
    assert accepted("tensorflow", "1.4.1", 6)[0] is False  # type: ignore[index]
    assert accepted("tensorflow", "1.8.0", 7)[0] is True  # type: ignore[index]
    assert accepted("tensorflow", "1.8.0", 6)[0] is False  # type: ignore[index]
    assert accepted("tensorflow", "2.15.0", 8)[0] is True  # type: ignore[index]
    assert accepted("jaxlib", "0.1.65", 8) is None


@pytest.mark.parametrize("spec,floor", [("7.0.*", "7.0"), (">=7.1.2,<8.0a0", "7.1.2"), ("7.0.5", "7.0.5"),
                                        ("==8.9.7.29", "8.9.7.29"), ("<8", None), ("7", None), ("", None),
                                        (None, None), ("garbage", None)])
def test_a_conda_pin_gives_the_build_version(spec: Any, floor: Any) -> None:
    assert _conda_pin_floor(spec) == floor


def test_a_snapshot_keeps_a_conda_records_pins_not_its_file_list() -> None:
    record = {"name": "tensorflow-gpu-base", "version": "1.4.1", "build": "py36h01caf0a_0",
              "depends": ["cudnn 7.0.*"], "files": ["lib/python3.6/site-packages/x.py"] * 1000}
    kept = json.loads(keep_conda_record(json.dumps(record)))
    assert kept == {k: record[k] for k in ("name", "version", "build", "depends")}
    assert keep_conda_record("{not json") == "" and keep_conda_record("[1]") == ""

"""A framework's TF-TRT compiled against one TensorRT release that loads another of the same major (check
tensorrt-framework-build; framework_builds.json tensorrt_built). The facts are the ones the probes give: the installed
TensorFlow (framework.tensorflow, from its dist-info and build_info) and the library the loader picks for each soname
(libraries.loader_choice)."""

from __future__ import annotations

import json

import pytest

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.libraries.trt_framework import tensorrt_framework_build
from envdoctor.facts import Facts, ok

CODE = "tensorrt.framework_built_against_other_release"


def _tf(version="1.13.1", **extra):
    value = {"version": version, "public": version, "local": None, "package": "tensorflow-gpu",
             "path": "/usr/local/lib/python3.6/dist-packages", "packages": {"tensorflow-gpu": version},
             "cuda": "10.0", "cudnn": "7", "tensorrt": None, "build": "cuda"}
    value.update(extra)
    return value


def _choice(version, soname="libnvinfer.so.5", certain=True):
    real = "/usr/lib/x86_64-linux-gnu/libnvinfer.so.%s" % version
    return {soname: {"soname": soname, "path": "/usr/lib/x86_64-linux-gnu/" + soname, "via": "ldconfig cache",
                     "resolved": real, "version": version, "others": [], "certain": certain}}


def findings(tf, choices):
    facts = [ok("framework.tensorflow", tf, "test"), ok("libraries.loader_choice", choices, "test")]
    return list(tensorrt_framework_build(CheckContext(Facts(facts), [])))


def test_tf113_wheel_loading_tensorrt_512_is_a_warning_naming_both_releases():
    found = findings(_tf(), _choice("5.1.2"))
    assert [(f.code, f.severity) for f in found] == [(CODE, "warning")]
    f = found[0]
    assert "TensorFlow 1.13.1 was built against TensorRT 5.0.2" in f.title
    assert "libnvinfer.so.5 resolves to TensorRT 5.1.2" in f.title
    assert "Compiled against version 5.0.2, but loaded 5.1.2" in f.detail
    assert "TensorRT 5.0.2" in f.fix.text and "TensorRT 5.1.2" in f.fix.text
    assert f.source["url"] == "https://github.com/tensorflow/tensorrt/issues/85" and not f.source["verified"]


@pytest.mark.parametrize("tf,choices", [
    (_tf(), _choice("5.0.2")),                                   # the release it was built against
    (_tf(), _choice("5.0.2.6")),                                 # the same release, its build number too
    (_tf(), {}),                                                 # no TensorRT 5 where the loader looks
    (_tf(), _choice("5.1.2", certain=False)),                    # the loader's pick not known
    (_tf(), _choice("6.0.1", soname="libnvinfer.so.6")),         # another major: another soname, never loaded
    (_tf(version="1.15.5"), _choice("5.1.2")),                   # a release no row covers
    (_tf(build="cpu"), _choice("5.1.2")),                        # a CPU build has no TF-TRT
    (_tf(tensorrt=False), _choice("5.1.2")),                     # build_info: not a TensorRT build
    (_tf(version="1.13.1+nv19.3", local="nv19.3"), _choice("5.1.2")),  # not the PyPI wheel
])
def test_quiet_where_the_loaded_release_is_the_built_one_or_unknown(tf, choices):
    assert findings(tf, choices) == []


def test_tensorrt_built_rows_are_validated():
    doc = matrix.read_document("framework_builds")
    at = next(i for i, r in enumerate(doc["rows"]) if "tensorrt_built" in r)
    bad = json.loads(json.dumps(doc))
    bad["rows"][at]["tensorrt_built"] = "5.0"
    assert matrix.problems_of("framework_builds", bad) == [
        "row %d: tensorrt_built must be the full TensorRT version (major.minor.patch)" % at]

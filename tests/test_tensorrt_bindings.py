"""TensorRT's Python bindings (``tensorrt/tensorrt.so``) judged like a framework's library: they link
libnvinfer.so.<major> and its parsers by soname, without an RPATH.

Replayed on jkjung-avt/tensorrt_demos#517's machine
(tests/corpus/b2-ubuntu2004-trt8218-tarball-ld-path-with-angle-brackets: the TensorRT 8.2.1.8 tar file's lib/ is
on LD_LIBRARY_PATH only as the string '</home/ubuntu/TensorRT-8.2.1.8/lib>'), edited the way the thread's fix goes,
and with the libraries in a ``tensorrt_libs`` package directory beside the bindings, which the bindings'
``__init__`` imports (and so loads) first (NVIDIA/TensorRT python/packaging/bindings_wheel/tensorrt/__init__.py).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b2-ubuntu2004-trt8218-tarball-ld-path-with-angle-brackets"
SITE = "/home/ubuntu/.local/lib/python3.8/site-packages"
TARBALL = "/home/ubuntu/TensorRT-8.2.1.8/lib"


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "tensorrt.framework_cannot_load"]


def test_bindings_whose_libnvinfer_the_loader_cannot_find():
    (f,) = _found(corpus_snapshot(CASE))
    assert f.severity == "error" and "libnvinfer.so.8" in f.title and "tensorrt 8.2.1.8" in f.title
    assert "TensorRT-8.2.1.8/lib" in f.fix.text


def test_quiet_once_the_loader_finds_it_or_the_libs_package_preloads_it():
    doc = corpus_snapshot(CASE)
    fixed = copy.deepcopy(doc)  # the thread's fix: the angle brackets removed
    fixed["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-11.5/lib64:" + TARBALL
    assert _found(fixed) == []
    wheel = copy.deepcopy(doc)  # the libraries in the tensorrt_libs package the bindings import first
    libs = SITE + "/tensorrt_libs"
    names = [n for n in doc["dirs"][TARBALL]["entries"]]
    wheel["dirs"][SITE]["entries"].append("tensorrt_libs")
    wheel["dirs"][libs] = {"entries": names}
    for n in names:
        wheel["files"][libs + "/" + n] = {"text": ""}
    assert _found(wheel) == []

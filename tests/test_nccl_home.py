"""``nccl.home_not_on_loader_path``: an NCCL named by NCCL_HOME (NCCL_ROOT, NCCL_ROOT_DIR, NCCL_LIB_DIR) that the
loader does not pick for libnccl.so.2.

Replayed on NVIDIA/nccl#1784's machine (tests/corpus/b3-dgx-container-nccl-home-2270-but-loader-finds-system-2234:
NCCL_HOME's build/lib holds libnccl.so.2 -> libnccl.so.2.27.0, the ld.so cache gives the image's 2.23.4), with the
environment edited the ways the thread's fix and its opposites go.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b3-dgx-container-nccl-home-2270-but-loader-finds-system-2234"
HOME = "/workspace/3rdparty/nccl/build"


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == "nccl.home_not_on_loader_path"]


def test_nccl_home_build_shadowed_by_the_systems_nccl():
    (f,) = _found(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert "NCCL_HOME names NCCL 2.27.0" in f.title and "2.23.4" in f.title
    assert "/usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4" in f.title
    assert f.fix.commands == ["export LD_LIBRARY_PATH=%s/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % HOME]


def test_quiet_when_the_loader_takes_that_nccl_or_none_is_named():
    doc = corpus_snapshot(CASE)
    on_path = copy.deepcopy(doc)  # the thread's fix: the build's lib first on the loader's path
    on_path["environ"]["LD_LIBRARY_PATH"] = HOME + "/lib"
    assert _found(on_path) == []
    unset = copy.deepcopy(doc)
    del unset["environ"]["NCCL_HOME"]
    assert _found(unset) == []
    relative = copy.deepcopy(doc)  # not a path the loader could be compared with
    relative["environ"]["NCCL_HOME"] = "build"
    assert _found(relative) == []
    empty = copy.deepcopy(doc)  # a directory without libnccl: nothing named, nothing said
    empty["environ"]["NCCL_HOME"] = "/workspace/3rdparty/nccl-tests"
    assert _found(empty) == []


def test_pytorchs_nccl_lib_dir_is_read_the_same_way():
    doc = corpus_snapshot(CASE)
    del doc["environ"]["NCCL_HOME"]
    doc["environ"]["NCCL_LIB_DIR"] = HOME + "/lib"
    (f,) = _found(doc)
    assert f.title.startswith("NCCL_LIB_DIR names NCCL 2.27.0")

"""A CUDA toolkit's pkg-config files whose path variables name directories that do not exist
(``toolkit.pkgconfig_bad_path``).

Replayed on tests/corpus/b29-ubuntu1804-cuda110-rc-pkgconfig-cuda-110-pc-libdir-missing-targets (NVIDIA forum thread
145331: CUDA 11.0's ``cuda-11.0.pc`` says ``libdir=${cudaroot}/x86_64-linux/lib`` where the toolkit keeps its
libraries in ``${cudaroot}/targets/x86_64-linux/lib``; the thread lists the same files in ``/usr/lib/pkgconfig``),
then edited: the file as NVIDIA's later packages write it (``libdir=${cudaroot}/targets/x86_64-linux/lib``, CUDA
13.1's ``cudart-13.1.pc`` has the same lines), NVIDIA's ``cudart-11.0.pc`` in ``/usr/lib/pkgconfig``, and another
project's versioned file there.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

from envdoctor.probes.cuda import pc_variables

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b29-ubuntu1804-cuda110-rc-pkgconfig-cuda-110-pc-libdir-missing-targets"
PC = "/usr/local/cuda-11.0/pkgconfig/cuda-11.0.pc"
CODE = "toolkit.pkgconfig_bad_path"
GOOD = ("cudaroot=/usr/local/cuda-11.0\nlibdir=${cudaroot}/targets/x86_64-linux/lib\n"
        "includedir=${cudaroot}/targets/x86_64-linux/include\n\nName: cudart\nDescription: CUDA Runtime Library\n"
        "Version: 11.0\nLibs: -L${libdir} -lcudart\nCflags: -I${includedir}\n")


def _found(doc: Dict[str, Any]) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _good(doc: Dict[str, Any]) -> Dict[str, Any]:
    doc = copy.deepcopy(doc)
    for path in [p for p in doc["files"] if p.endswith("/cuda-11.0.pc")]:
        doc["files"][path] = {"text": GOOD.replace("cudart", "cuda").replace("CUDA Runtime", "CUDA Driver")}
    return doc


def test_libdir_and_includedir_that_do_not_exist():
    (f,) = _found(corpus_snapshot(CASE))
    assert f.severity == "warning" and f.components == ["cuda"]
    assert "cuda-11.0.pc" in f.title and "libdir=/usr/local/cuda-11.0/x86_64-linux/lib" in f.title
    assert "includedir=/usr/local/cuda-11.0/x86_64-linux/include" in f.title
    assert "-L/usr/local/cuda-11.0/x86_64-linux/lib" in f.detail
    assert "/usr/local/cuda-11.0/targets/x86_64-linux/lib" in f.detail
    (cmd,) = f.fix.commands
    assert "'s|^libdir=.*|libdir=/usr/local/cuda-11.0/targets/x86_64-linux/lib|'" in cmd and cmd.endswith(PC)


def test_quiet_when_the_paths_exist():
    assert _found(_good(corpus_snapshot(CASE))) == []


def test_nvidias_files_in_pkgconfigs_own_directory_and_not_another_projects():
    doc = _good(corpus_snapshot(CASE))
    doc["dirs"]["/usr/lib/pkgconfig"] = {"entries": ["cudart-11.0.pc", "gone-2.0.pc"]}
    doc["files"]["/usr/lib/pkgconfig/cudart-11.0.pc"] = {
        "text": GOOD.replace("/targets/x86_64-linux/lib", "/x86_64-linux/lib")}
    # a file of another project (no cudaroot) whose prefix is gone: not a toolkit's, not judged
    doc["files"]["/usr/lib/pkgconfig/gone-2.0.pc"] = {
        "text": "prefix=/opt/gone\nlibdir=${prefix}/lib\n\nName: gone\nVersion: 2.0\nLibs: -L${libdir} -lgone\n"}
    (f,) = _found(doc)
    assert "cudart-11.0.pc" in f.title and "libdir=/usr/local/cuda-11.0/x86_64-linux/lib" in f.title
    assert "includedir" not in f.title and "gone" not in f.title


def test_a_missing_cudaroot_explains_the_paths_under_it():
    doc = copy.deepcopy(corpus_snapshot(CASE))
    doc["files"][PC] = {"text": GOOD.replace("cuda-11.0\n", "cuda-11.0-rc\n", 1)}
    (f,) = _found(doc)
    assert "cudaroot=/usr/local/cuda-11.0-rc" in f.title and "libdir" not in f.title


def test_an_unreadable_or_undefined_file_says_nothing():
    doc = copy.deepcopy(corpus_snapshot(CASE))
    for path in [p for p in doc["files"] if p.endswith("/cuda-11.0.pc")]:
        doc["files"][path] = {"error": "EACCES"}
    assert _found(doc) == []
    doc["files"][PC] = {"text": "libdir=${nowhere}/lib\n"}
    assert _found(doc) == []


def test_variables_expand_as_pkg_config_expands_them():
    text = ("# comment\nprefix=/opt/x\nlibdir=${prefix}/lib # trailing\nodd=$${prefix}\nhere=${pcfiledir}/..\n"
            "bad=${later}/x\nlater=/y\nLibs: -L${libdir}\n")
    v = pc_variables(text, "/opt/x/pkgconfig")
    assert v == {"prefix": "/opt/x", "libdir": "/opt/x/lib", "odd": "${prefix}", "here": "/opt/x/pkgconfig/..",
                 "bad": None, "later": "/y"}

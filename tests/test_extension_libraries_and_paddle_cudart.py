"""The CUDA runtime an extension module or a framework's main library links by soname, judged where the loader
looks for it (``cuda.framework_cannot_load``).

* mmcv (``mmcv-full`` 1.x, ``mmcv`` 2.x) builds its ops as one ``CUDAExtension`` named ``mmcv._ext`` and declares
  no requirement on torch (open-mmlab/mmcv ``setup.py``): its module is found where mmcv keeps it, wheel RECORD or
  not, and judged as a torch extension.
* A Python in a conda environment carries ``DT_RPATH $ORIGIN/../lib`` (conda-build's ``mk_relative_linux``), so a
  library the environment's ``lib/`` holds is found for any module it imports, even where its ELF is unrecorded.
* PaddlePaddle's ``libpaddle.so`` links the CUDA runtime it was built with (``libcudart.so.10.2`` for the default
  2.4 wheel: PaddlePaddle/PaddleOCR#10078's ImportError), so that soname is resolved like any framework's.

Replayed machines: the corpus cases of open-mmlab/mmcv#1380, open-mmlab/mmdetection#3991 and PaddleOCR#10078."""

from __future__ import annotations

import copy

from .conftest import corpus_snapshot, snapshot_findings

MMCV = "b65-ubuntu2004-rtx3080-cuda111-conda-py37-pip-torch190-cu111-mmcv-full-1314-ext-needs-libcudart102"
MMCV_ENV = "/home/user/anaconda3/envs/open-mmlab"
MMCV_OLD = "b6-conda-py37-torch140-cu101-mmcv115-ext-undefined-symbol"
PADDLE = "b65-ubuntu2204-driver52560-cuda120-toolkit-pip-paddle242-default-cu102-wheel-libcudart102-missing-paddleocr"


def _cannot_load(doc):
    return [f for f in snapshot_findings(doc) if f.code == "cuda.framework_cannot_load"]


def _add_library(doc, directory, name):
    doc = copy.deepcopy(doc)
    entry = doc["dirs"].setdefault(directory, {"entries": []})
    entry["entries"] = sorted(set(entry.get("entries") or []) | {name})
    doc["files"][directory + "/" + name] = {"text": ""}
    return doc


def test_mmcv_full_extension_needing_a_cuda_runtime_nothing_provides_is_an_error_naming_it():
    found = _cannot_load(corpus_snapshot(MMCV))
    assert len(found) == 1 and found[0].severity == "error"
    assert found[0].title == ("mmcv-full 1.3.14 needs libcudart.so.10.2, which neither the loader nor "
                              "torch 1.9.0+cu111 provides")
    assert "mmcv/_ext.cpython-37m-x86_64-linux-gnu.so" in found[0].detail
    assert "built for CUDA 10" in found[0].detail


def test_quiet_when_the_conda_environment_lib_holds_that_runtime():
    # found through the environment's python (DT_RPATH $ORIGIN/../lib), though its ELF is not recorded
    assert _cannot_load(_add_library(corpus_snapshot(MMCV), MMCV_ENV + "/lib", "libcudart.so.10.2")) == []


def test_quiet_for_an_extension_whose_runtime_the_conda_cudatoolkit_provides():
    # mmdetection#3991: mmcv-full 1.1.5's _ext links libcudart.so.10.1, which the env's cudatoolkit 10.1 ships in
    # lib/: the failure there is a symbol, not a missing library
    assert _cannot_load(corpus_snapshot(MMCV_OLD)) == []


def test_paddle_main_library_needing_a_cuda_runtime_nothing_provides_is_an_error_naming_it():
    found = [f for f in _cannot_load(corpus_snapshot(PADDLE)) if "libcudart" in f.title]
    assert len(found) == 1 and found[0].severity == "error"
    assert found[0].title == "paddle 2.4.2 needs libcudart.so.10.2, but the loader finds no such file"


def test_paddle_quiet_when_the_loader_path_holds_that_runtime():
    # (a snapshot records a directory under each path it was listed by: the link /usr/local/cuda and its target)
    doc = _add_library(corpus_snapshot(PADDLE), "/usr/local/cuda-12.0/lib64", "libcudart.so.10.2")
    doc = _add_library(doc, "/usr/local/cuda/lib64", "libcudart.so.10.2")
    assert [f for f in _cannot_load(doc) if "libcudart" in f.title] == []


def test_a_conda_program_whose_elf_is_unread_searches_its_environment_lib_and_a_link_counts_from_its_target():
    from envdoctor.probes.loader import conda_program_rpath

    from .conftest import make_host

    host = make_host(files={"/opt/conda/conda-meta/history": "", "/opt/conda/bin/python3.10": "",
                            "/srv/tool/bin/python3": ""},
                     links={"/home/u/venv/bin/python": "/opt/conda/bin/python3.10"})
    assert conda_program_rpath(host, "/opt/conda/bin/python3.10") == ["/opt/conda/lib"]
    assert conda_program_rpath(host, host.resolve("/home/u/venv/bin/python")) == ["/opt/conda/lib"]
    assert conda_program_rpath(host, "/srv/tool/bin/python3") == []          # no conda-meta beside bin/
    assert conda_program_rpath(host, "/opt/conda/python3.10") == []          # not in a bin/ directory

"""Numba's libNVVM/libdevice lookup (matrix ``numba_cuda_paths``, probe ``env.numba_cuda_paths``) and
``framework.numba_cuda_libs_not_found``.

The machine is corpus case b17-ubuntu1604-pip-numba0290-cuda80-libnvvm-not-found-without-numbapro-vars: numba 0.29.0
from pip for /usr/bin/python3 (sys.prefix /usr) and CUDA 8.0 from NVIDIA's packages in /usr/local/cuda-8.0
(/usr/local/cuda a link to it; nvvm/lib64/libnvvm.so.3.1.0, nvvm/libdevice/libdevice.compute_NN.10.bc), no NUMBAPRO_
variable (https://gist.github.com/dapperfu/1ec09ccd606922bab78261ec225f7778). Numba's lookup per release is read from
its source (numba/cuda/cudadrv/libs.py before 0.44, numba/cuda/cuda_paths.py from 0.44). The variants change what
the notes say: the gist's NUMBAPRO_ settings; a newer Numba (its dist-info) with CUDA 9's single libdevice.10.bc;
the toolkit only in /usr/local/cuda-8.0 (no /usr/local/cuda link); NVIDIA's numba-cuda installed.
"""

from __future__ import annotations

from typing import Any, Dict

from envdoctor.host.snapshot import SnapshotHost
from envdoctor.matrix import numba_paths

from .conftest import corpus_snapshot, probe_facts, snapshot_findings

CASE = "b17-ubuntu1604-pip-numba0290-cuda80-libnvvm-not-found-without-numbapro-vars"
SITE = "/usr/local/lib/python3.5/dist-packages"
CODE = "framework.numba_cuda_libs_not_found"


def _findings(doc: Dict[str, Any]) -> Dict[str, Any]:
    return {f.code: f for f in snapshot_findings(doc)}


def _paths(doc: Dict[str, Any]) -> Dict[str, Any]:
    return probe_facts(SnapshotHost(doc, "case")).mapping("env.numba_cuda_paths")


def _numba(doc: Dict[str, Any], version: str, name: str = "numba") -> Dict[str, Any]:
    """The same machine with another release (or NVIDIA's numba-cuda beside it) as pip records it."""
    old, new = "numba-0.29.0.dist-info", "%s-%s.dist-info" % (name.replace("-", "_"), version)
    meta = {"text": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)}
    if name == "numba":
        doc["files"].pop("%s/%s/METADATA" % (SITE, old))
        doc["dirs"].pop("%s/%s" % (SITE, old))
        doc["dirs"][SITE]["entries"].remove(old)
    doc["files"]["%s/%s/METADATA" % (SITE, new)] = meta
    doc["dirs"]["%s/%s" % (SITE, new)] = {"entries": ["METADATA"]}
    doc["dirs"][SITE]["entries"].append(new)
    return doc


def _fat_libdevice(doc: Dict[str, Any]) -> Dict[str, Any]:
    """CUDA 9 and later ship one libdevice.10.bc instead of the per-architecture files."""
    for root in ("/usr/local/cuda-8.0", "/usr/local/cuda"):
        d = root + "/nvvm/libdevice"
        for name in doc["dirs"][d]["entries"]:
            doc["files"].pop(d + "/" + name, None)
        doc["dirs"][d]["entries"] = ["libdevice.10.bc"]
        doc["files"][d + "/libdevice.10.bc"] = {"text": ""}
    return doc


def _no_cuda_link(doc: Dict[str, Any]) -> Dict[str, Any]:
    """The toolkit only in its versioned directory: no /usr/local/cuda link."""
    for key in [k for k in doc["dirs"] if k == "/usr/local/cuda" or k.startswith("/usr/local/cuda/")]:
        del doc["dirs"][key]
    for key in [k for k in doc["files"] if k.startswith("/usr/local/cuda/")]:
        del doc["files"][key]
    for key in [k for k in doc["links"] if k == "/usr/local/cuda" or k.startswith("/usr/local/cuda/")]:
        del doc["links"][key]
    doc["dirs"]["/usr/local"]["entries"].remove("cuda")
    return doc


def test_the_lookup_rows_follow_numbas_source():
    assert [p["kind"] for p in numba_paths.row_for("0.29.0")["nvvm"]] == ["env_file", "env_dir", "prefix_lib"]
    assert [p["kind"] for p in numba_paths.row_for("0.45.1")["nvvm"]][:2] == ["env_dir", "env_dir"]
    assert "env_dir" not in [p["kind"] for p in numba_paths.row_for("0.46.0")["nvvm"]]  # NUMBAPRO_ ignored
    assert [p["kind"] for p in numba_paths.row_for("0.61.2")["nvvm"]] == ["conda", "conda_nvidia", "cuda_home",
                                                                            "system"]
    assert numba_paths.row_for("garbage") is None


def test_numba_029_from_pip_misses_the_toolkit_in_usr_local_cuda():
    f = _findings(corpus_snapshot(CASE))[CODE]
    assert f.severity == "error"
    assert "libNVVM" in f.title and "libdevice" in f.title
    assert "NUMBAPRO_NVVM (not set)" in f.detail and "/usr/lib" in f.detail
    assert f.fix.commands == ["export NUMBAPRO_NVVM=/usr/local/cuda/nvvm/lib64/libnvvm.so.3.1.0",
                              "export NUMBAPRO_LIBDEVICE=/usr/local/cuda/nvvm/libdevice"]
    assert f.source["url"] == "https://github.com/numba/numba/blob/0.37.0/numba/cuda/cudadrv/libs.py"


def test_quiet_with_the_gists_numbapro_settings():
    doc = corpus_snapshot(CASE)
    doc["environ"].update(NUMBAPRO_NVVM="/usr/local/cuda/nvvm/lib64/libnvvm.so",
                          NUMBAPRO_CUDALIB="/usr/local/cuda/targets/x86_64-linux/lib/",
                          NUMBAPRO_LIBDEVICE="/usr/local/cuda/nvvm/libdevice/")
    paths = _paths(doc)
    assert paths["nvvm"]["found"] == "/usr/local/cuda/nvvm/lib64/libnvvm.so"
    assert paths["libdevice"]["by"] == "NUMBAPRO_LIBDEVICE" and paths["libdevice"]["found"]
    assert CODE not in _findings(doc)


def test_quiet_for_a_newer_numba_that_finds_usr_local_cuda_itself():
    doc = _fat_libdevice(_numba(corpus_snapshot(CASE), "0.57.1"))
    paths = _paths(doc)
    assert paths["nvvm"]["by"] == "/usr/local/cuda"
    assert paths["nvvm"]["found"] == "/usr/local/cuda/nvvm/lib64/libnvvm.so.3.1.0"
    assert paths["libdevice"]["found"] == "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
    assert CODE not in _findings(doc)


def test_a_newer_numba_without_the_usr_local_cuda_link_is_told_cuda_home():
    doc = _no_cuda_link(_fat_libdevice(_numba(corpus_snapshot(CASE), "0.57.1")))
    f = _findings(doc)[CODE]
    assert f.fix.commands == ["export CUDA_HOME=/usr/local/cuda-8.0"]
    doc["environ"]["CUDA_HOME"] = "/usr/local/cuda-8.0"
    assert CODE not in _findings(doc)


def test_a_cuda_home_that_is_no_toolkit_is_taken_and_fails():
    # cuda_paths.py takes CUDA_HOME whenever it is set, before /usr/local/cuda, even when nothing is there
    doc = _fat_libdevice(_numba(corpus_snapshot(CASE), "0.57.1"))
    doc["environ"]["CUDA_HOME"] = "/opt/nothing"
    f = _findings(doc)[CODE]
    assert "CUDA_HOME (/opt/nothing/nvvm/lib64)" in f.detail


def test_numba_cuda_has_its_own_lookup_and_is_not_judged():
    doc = _numba(corpus_snapshot(CASE), "0.20.0", name="numba-cuda")
    assert _paths(doc) == {}
    assert CODE not in _findings(doc)


def test_no_libnvvm_anywhere_says_nothing():
    # numba for the CPU on a GPU machine without any CUDA toolkit: nothing for Numba's CUDA target to find
    doc = _no_cuda_link(corpus_snapshot(CASE))
    d = "/usr/local/cuda-8.0/nvvm/lib64"
    for name in doc["dirs"][d]["entries"]:
        doc["files"].pop(d + "/" + name, None)
        doc["links"].pop(d + "/" + name, None)
    doc["dirs"][d]["entries"] = []
    assert CODE not in _findings(doc)

"""The cuDNN (or TensorRT) a framework was built for, against the copy its own search order finds (issue 11,
section 2: "Required versions from the matrix", "Every CUDA library a framework loads", "Name both sides").

Each rule is replayed on the real-world corpus machine it was generalised from (tests/corpus/<case>, rebuilt
from the public thread named in its case.json), then on the same machine changed the way the thread's fix
changed it, where it must stay quiet.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

import pytest

from envdoctor.host.snapshot import SnapshotHost

from .conftest import corpus_snapshot, make_host, probe_facts, snapshot_findings

_doc = corpus_snapshot
_findings = snapshot_findings


def _text(f: Any) -> str:
    return " ".join([f.title, f.detail or "", json.dumps(f.evidence)])


def _renamed(doc: Dict[str, Any], old: str, new: str) -> Dict[str, Any]:
    """The same machine with one real file renamed everywhere (a cuDNN upgrade that keeps the soname link)."""
    return json.loads(json.dumps(doc).replace(old, new))


def _add_library(doc: Dict[str, Any], directory: str, soname: str, real: str) -> None:
    doc["dirs"][directory]["entries"] += [soname, real]
    doc["files"][directory + "/" + real] = {"text": ""}
    doc["files"][directory + "/" + soname] = {"text": ""}
    doc["links"][directory + "/" + soname] = {"target": real}


def _remove_tree(doc: Dict[str, Any], path: str) -> None:
    for kind in ("files", "dirs", "links"):
        for p in [p for p in doc[kind] if p == path or p.startswith(path + "/")]:
            del doc[kind][p]
    parent, name = path.rsplit("/", 1)
    doc["dirs"][parent]["entries"].remove(name)


def _one(findings: List[Any], code: str, where: Optional[Callable[[Any], bool]] = None) -> Any:
    hits = [f for f in findings if f.code == code and (where is None or where(f))]
    assert len(hits) == 1, [(f.code, f.title) for f in findings]
    return hits[0]


def _codes(findings: List[Any], prefix: str) -> List[str]:
    return [f.code for f in findings if f.code.startswith(prefix) and f.severity in ("warning", "error")]


JAXLIB_CASE = "jaxlib065-cuda112-system-cudnn805"  # jax-ml/jax#6517


def test_jaxlib_built_with_cudnn_81_loading_805_from_ld_library_path_is_an_error_naming_both() -> None:
    f = _one(_findings(_doc(JAXLIB_CASE), JAXLIB_CASE), "cudnn.too_old_for_framework")
    assert f.severity == "error"
    text = _text(f)
    for word in ("8.0.5", "8.1.0", "jaxlib 0.1.65+cuda112",
                 "/usr/local/cuda-11.2/targets/x86_64-linux/lib/libcudnn.so.8.0.5", "LD_LIBRARY_PATH"):
        assert word in text, word
    assert f.source["url"] == "https://github.com/jax-ml/jax/issues/6517"


def test_jaxlib_with_the_cudnn_it_was_built_with_is_quiet() -> None:
    # the reporter's fix: cuDNN 8.1.0 in the same place
    doc = _renamed(_doc(JAXLIB_CASE), "libcudnn.so.8.0.5", "libcudnn.so.8.1.0")
    assert _codes(_findings(doc, JAXLIB_CASE), "cudnn.") == []


CONDA_JAX_CASE = "conda-forge-jax0431-needs-cudnn9-has-897"  # conda-forge/jaxlib-feedstock#277
CONDA_LIB = "/home/user/miniforge3/envs/jax/lib"


def test_jax_needing_cudnn_9_with_only_cudnn_8_in_its_conda_env_is_a_major_mismatch() -> None:
    findings = _findings(_doc(CONDA_JAX_CASE), CONDA_JAX_CASE)
    f = _one(findings, "cudnn.major_mismatch")
    assert f.severity == "error"
    for word in ("jax 0.4.31", "9.1", "libcudnn.so.9", "8.9.7", CONDA_LIB + "/libcudnn.so.8"):
        assert word in _text(f), word
    # one verdict: the missing libcudnn.so.9 is not reported a second time as "cannot load"
    assert "cudnn.framework_cannot_load" not in _codes(findings, "cudnn.")


def test_jax_finds_cudnn_9_in_its_conda_env_lib_through_the_packages_rpath() -> None:
    # the fix: conda-forge's cuDNN 9 in the environment (cudnn-feedstock#83); nothing on LD_LIBRARY_PATH
    doc = _doc(CONDA_JAX_CASE)
    _add_library(doc, CONDA_LIB, "libcudnn.so.9", "libcudnn.so.9.1.1")
    assert _codes(_findings(doc, CONDA_JAX_CASE), "cudnn.") == []


TORCH_CASE = "torch1130-conda-env-ldpath-cudnn841"  # gladiaio/gladia#928
WHEEL = "/opt/conda/envs/server/lib/python3.8/site-packages/nvidia/cudnn/lib/libcudnn.so.8"


def test_torch_wheel_pinned_cudnn_shadowed_by_an_older_minor_on_ld_library_path() -> None:
    # torch's library has no readable dynamic section here: the rule uses ld.so's order (LD_LIBRARY_PATH before
    # RUNPATH) and says that it could not tell RPATH from RUNPATH
    f = _one(_findings(_doc(TORCH_CASE), TORCH_CASE), "cudnn.too_old_for_framework")
    assert f.severity == "error"
    text = _text(f)
    for word in ("8.4.1", "8.5.0.96", "/usr/local/cuda-11.7/targets/x86_64-linux/lib/libcudnn.so.8.4.1",
                 "LD_LIBRARY_PATH", WHEEL, "DT_RPATH"):
        assert word in text, word
    assert any("/usr/local/cuda/lib64" in c for c in f.fix.commands)  # drops that one entry, keeps the others


def test_torch_wheel_cudnn_without_ld_library_path_is_quiet() -> None:
    doc = _doc(TORCH_CASE)
    del doc["environ"]["LD_LIBRARY_PATH"]
    assert _codes(_findings(doc, TORCH_CASE), "cudnn.") == []


TF_TRT_CASE = "tf210-wants-libnvinfer7-pip-tensorrt8"  # tensorflow/tensorflow#57671
TF_SITE = "/home/user/miniconda3/envs/tf/lib/python3.8/site-packages"


def test_tf_built_for_tensorrt_7_with_tensorrt_8_installed_warns_once_naming_both() -> None:
    findings = _findings(_doc(TF_TRT_CASE), TF_TRT_CASE)
    f = _one(findings, "tensorrt.framework_cannot_load")
    assert f.severity == "warning"  # only TF-TRT is unavailable; the rest of TensorFlow works
    for word in ("libnvinfer.so.7", "8.5.1.7", TF_SITE + "/tensorrt/libnvinfer.so.8", "tensorflow 2.10.0"):
        assert word in _text(f), word
    assert [x for x in findings if x.severity in ("warning", "error")] == [f]


def test_tf_tensorrt_build_on_a_machine_without_tensorrt_is_quiet() -> None:
    # most TensorFlow users never use TF-TRT: TensorFlow itself only logs a warning
    doc = _doc(TF_TRT_CASE)
    _remove_tree(doc, TF_SITE + "/tensorrt")
    _remove_tree(doc, TF_SITE + "/tensorrt-8.5.1.7.dist-info")
    assert [f for f in _findings(doc, TF_TRT_CASE) if f.severity in ("warning", "error")] == []


def test_jaxlib_local_tag_cudnn805_is_cudnn_8_0_5() -> None:
    # jaxlib 0.3.x's 'cuda11.cudnn805' wheels: cuDNN 8.0.5, not "8.05" (which compared as 8.5)
    from envdoctor.probes.frameworks import jax_fact

    from .test_probe_frameworks import site_host

    tag = "0.3.17+cuda11.cudnn805"
    host = site_host({"jaxlib-%s.dist-info/METADATA" % tag: "Name: jaxlib\nVersion: %s\n" % tag})
    dists = {d.key: d for d in host.distributions()}
    value = jax_fact(host, dists)[0].value
    assert value["cuda"] == "11" and value["cudnn"] == "8.0.5"


def test_tf_tensorrt_of_the_right_major_outside_the_loader_path_names_the_directory() -> None:
    # the same environment with TensorRT 7 (NVIDIA's nvidia-tensorrt 7.2.3.4 wheel layout) instead of 8: TF 2.10
    # can use it once its directory is on LD_LIBRARY_PATH
    doc = _doc(TF_TRT_CASE)
    for lib in ("libnvinfer", "libnvinfer_plugin", "libnvonnxparser"):
        doc = _renamed(doc, lib + ".so.8", lib + ".so.7")
    doc = _renamed(doc, "8.5.1.7", "7.2.3.4")
    f = _one(_findings(doc, TF_TRT_CASE), "tensorrt.framework_cannot_load")
    assert f.severity == "warning" and "7.2.3.4" in f.title and TF_SITE + "/tensorrt/libnvinfer.so.7" in f.title
    assert f.fix.commands == ["export LD_LIBRARY_PATH=%s/tensorrt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % TF_SITE]


PADDLE_CASE = "paddle251-post116-on-gtx1080-pascal"  # PaddlePaddle/Paddle#56683
SYS_LIB = "/usr/lib/x86_64-linux-gnu"


def test_paddle_opening_the_unversioned_cudnn_link_names_the_runtime_copy_and_the_link_to_make() -> None:
    # Paddle 2.x opens "libcudnn.so" (paddle/phi/backends/dynload/dynamic_loader.cc); the runtime package has
    # only libcudnn.so.8
    f = _one(_findings(_doc(PADDLE_CASE), PADDLE_CASE), "cudnn.framework_cannot_load")
    assert f.severity == "error" and "8.4.0" in f.detail and SYS_LIB + "/libcudnn.so.8" in f.detail
    assert f.fix.commands[0] == "sudo ln -s %s/libcudnn.so.8.4.0 %s/libcudnn.so" % (SYS_LIB, SYS_LIB)


def test_paddle_with_the_cudnn_development_link_is_quiet_about_cudnn() -> None:
    doc = _doc(PADDLE_CASE)
    doc["dirs"][SYS_LIB]["entries"].append("libcudnn.so")
    doc["files"][SYS_LIB + "/libcudnn.so"] = {"text": ""}
    doc["links"][SYS_LIB + "/libcudnn.so"] = {"target": "libcudnn.so.8.4.0"}
    assert _codes(_findings(doc, PADDLE_CASE), "cudnn.") == []


def test_copies_not_searched_are_listed_once_per_real_file_without_the_one_the_loader_takes() -> None:
    # /usr/local/cuda links to cuda-11.2 and lib64 to targets/x86_64-linux/lib: the three other names of the cuDNN
    # the loader takes through LD_LIBRARY_PATH are not "copies that are not searched"
    facts = probe_facts(SnapshotHost(_doc(JAXLIB_CASE), JAXLIB_CASE))
    entry = facts.value("linkage.jax.dlopen")[0]
    assert entry["soname"] == "libcudnn.so.8" and len(entry["elsewhere"]) == 3
    assert entry["elsewhere_files"] == []


def test_framework_builds_rows_are_validated() -> None:
    from envdoctor import matrix

    doc = matrix.read_document("framework_builds")
    assert matrix.problems_of("framework_builds", doc) == []
    bad = json.loads(json.dumps(doc))
    bad["rows"][0]["cudnn_built"] = None
    bad["rows"][1]["tensorrt_major"] = "seven"
    bad["rows"][2]["releases"] = "2.12"
    assert matrix.problems_of("framework_builds", bad) == [
        "row 0: a jaxlib row needs the cuda and cudnn_built versions",
        "row 1: a tensorflow row needs tensorrt_major (digits), tensorrt_built, cudnn_built, tested_cuda or "
        "cudnn_newer_minor_from",
        "row 2: releases '2.12' is not a version specifier"]
    rule = next(i for i, r in enumerate(doc["rows"]) if "cudnn_newer_minor_from" in r)
    bad = json.loads(json.dumps(doc))
    bad["rows"][rule]["cudnn_newer_minor_from"] = "seven"
    assert matrix.problems_of("framework_builds", bad) == [
        "row %d: cudnn_newer_minor_from must be a cuDNN major (digits) or null" % rule]


def test_nvidia_tensorflow_library_in_tensorflow_core_is_resolved() -> None:
    # nvidia-tensorflow (TF 1.15 line) and TF 1.15-2.1 ship libtensorflow_framework.so.1/.2 in tensorflow_core/:
    # its NEEDED CUDA libraries are resolved like TF 2's
    from .test_probe_frameworks import SITE, site_host

    build_info = ("is_rocm_build = False\nis_cuda_build = True\n"
                  "cuda_version_number = '11.8'\ncudnn_version_number = '8'\n")
    lib = SITE + "/tensorflow_core/libtensorflow_framework.so.1"
    host = site_host({"nvidia_tensorflow-1.15.5+nv22.12.dist-info/METADATA":
                      "Name: nvidia-tensorflow\nVersion: 1.15.5+nv22.12\n",
                      "tensorflow_core/python/platform/build_info.py": build_info,
                      "tensorflow_core/libtensorflow_framework.so.1": "", "tensorflow/__init__.py": ""})
    host.doc["elf"] = {lib: {"soname": "libtensorflow_framework.so.1", "needed": ["libcudart.so.11.0"],
                             "rpath": [], "runpath": []}}
    facts = probe_facts(type(host)(host.doc))
    assert facts.mapping("linkage.tensorflow.elf")["path"] == lib
    entries = facts.value("linkage.tensorflow")
    assert [e["soname"] for e in entries] == ["libcudart.so.11.0", "libcudnn.so.8"]  # NEEDED, then dlopened cuDNN


#: readelf -d of the PyPI wheel tensorflow_gpu-1.5.0-cp36-cp36m-manylinux1_x86_64.whl (CUDA libraries of each NEEDED
#: list, in order): 1.4-1.13 name libtensorflow_framework.so without a version, and it links cuDNN itself
TF15_FRAMEWORK_NEEDED = ["libcublas.so.9.0", "libcuda.so.1", "libcudnn.so.7", "libcufft.so.9.0", "libcurand.so.9.0",
                         "libcudart.so.9.0", "libc.so.6"]
TF15_PYWRAP_NEEDED = ["libtensorflow_framework.so", "libcublas.so.9.0", "libcusolver.so.9.0", "libcudart.so.9.0",
                      "libc.so.6"]


@pytest.mark.parametrize("cuda,cudnn,fires", [("8.0", "6", True), ("9.0", "7", False)])
def test_tf_15_unversioned_framework_library_is_judged(cuda: str, cudnn: str, fires: bool) -> None:
    # tensorflow-gpu 1.5.0 (CUDA 9.0, cuDNN 7) on a machine with only CUDA 8.0 and cuDNN 6 on the loader path:
    # libcublas.so.9.0, libcudart.so.9.0 and libcudnn.so.7 are missing (errors); with CUDA 9.0 and cuDNN 7 there,
    # nothing is said. The layout is the wheel's (site-packages/tensorflow/...), the CUDA install a stand-in.
    from .test_probe_frameworks import SITE

    lib = "/usr/local/cuda-%s/lib64" % cuda
    files = {SITE + "/" + p: "" for p in ("tensorflow/libtensorflow_framework.so", "tensorflow/__init__.py",
                                          "tensorflow/python/_pywrap_tensorflow_internal.so")}
    files[SITE + "/tensorflow_gpu-1.5.0.dist-info/METADATA"] = "Name: tensorflow-gpu\nVersion: 1.5.0\n"
    for name in ("libcublas.so.%s" % cuda, "libcudart.so.%s" % cuda, "libcusolver.so.%s" % cuda,
                 "libcudnn.so.%s" % cudnn):
        files[lib + "/" + name] = ""
    files["/sbin/ldconfig"] = ""
    host = make_host(files=files, environ={"LD_LIBRARY_PATH": lib, "PATH": "/usr/bin:/bin"},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "returncode": 0,
                                "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                                "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"}],
                     python={"executable": "/home/ana/venv/bin/python", "version": "3.6.9",
                             "implementation": "cpython", "prefix": "/home/ana/venv", "base_prefix": "/usr",
                             "sys_path": [SITE]})
    fw = SITE + "/tensorflow/libtensorflow_framework.so"
    host.doc["elf"] = {fw: {"soname": None, "needed": TF15_FRAMEWORK_NEEDED, "rpath": ["$ORIGIN/"], "runpath": []},
                       SITE + "/tensorflow/python/_pywrap_tensorflow_internal.so": {
                           "soname": None, "needed": TF15_PYWRAP_NEEDED, "rpath": ["$ORIGIN/"], "runpath": []}}
    assert probe_facts(SnapshotHost(host.doc)).mapping("linkage.tensorflow.elf")["path"] == fw
    found = [f for f in snapshot_findings(host.doc) if f.code.endswith("framework_cannot_load")]
    if fires:
        assert sorted((f.code, f.severity) for f in found) == [("cuda.framework_cannot_load", "error")] * 2 + [
            ("cudnn.framework_cannot_load", "error")]
        assert any("libcublas.so.9.0" in f.title for f in found) and any("libcudnn.so.7" in f.title for f in found)
    else:
        assert found == []


@pytest.mark.parametrize("cuda,fires", [("7.5", True), ("8.0", False)])
def test_tf_0x_python_extension_needing_another_cuda_runtime_is_an_error_naming_it(cuda: str, fires: bool) -> None:
    # TensorFlow 0.x's only library is tensorflow/python/_pywrap_tensorflow.so (the 0.x setup.py's package_data); the
    # 0.11.0 GPU wheel links libcudart.so.8.0 and opens its other CUDA libraries at run time. With only CUDA 7.5 on
    # the loader path, import fails: an error naming the soname and CUDA 8.0; with CUDA 8.0 there, nothing is said.
    from .test_probe_frameworks import SITE

    lib = "/usr/local/cuda-%s/lib64" % cuda
    files = {SITE + "/" + p: "" for p in ("tensorflow/__init__.py", "tensorflow/python/_pywrap_tensorflow.so")}
    files[SITE + "/tensorflow-0.11.0.dist-info/METADATA"] = "Name: tensorflow\nVersion: 0.11.0\n"
    files[lib + "/libcudart.so.%s" % cuda] = ""
    files["/sbin/ldconfig"] = ""
    host = make_host(files=files, environ={"LD_LIBRARY_PATH": lib, "PATH": "/usr/bin:/bin"},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "returncode": 0,
                                "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                                "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"}],
                     python={"executable": "/usr/bin/python2.7", "version": "2.7.12", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": [SITE]})
    pywrap = SITE + "/tensorflow/python/_pywrap_tensorflow.so"
    host.doc["elf"] = {pywrap: {"soname": None, "needed": ["libcudart.so.8.0", "libstdc++.so.6", "libc.so.6"],
                                "rpath": [], "runpath": []}}
    assert probe_facts(SnapshotHost(host.doc)).mapping("linkage.tensorflow.elf")["path"] == pywrap
    found = [f for f in snapshot_findings(host.doc) if f.code.startswith(("cuda.", "linkage."))]
    if fires:
        f = _one(found, "cuda.framework_cannot_load")
        assert f.severity == "error" and "libcudart.so.8.0" in f.title and "cannot open shared object file" in f.detail
        assert f.fix is not None and "built for CUDA 8.0 (it links libcudart.so.8.0)" in f.fix.text
    else:
        assert [f.code for f in found] == []


def test_tf_whose_build_names_cudnn_8_with_only_cudnn_9_on_its_path_is_one_major_mismatch_error() -> None:
    # the TF 2.10 environment with conda's cuDNN 8 replaced by a cuDNN 9: TF's build information names cuDNN 8,
    # so libcudnn.so.8 certainly fails to load; the verdict names the cuDNN 9 that is there
    doc = _renamed(_doc(TF_TRT_CASE), "libcudnn.so.8", "libcudnn.so.9")
    findings = _findings(doc, TF_TRT_CASE)
    f = _one(findings, "cudnn.major_mismatch")
    assert f.severity == "error" and "libcudnn.so.8" in f.title and "8.1" in f.title
    assert "/home/user/miniconda3/envs/tf/lib/libcudnn.so.9" in f.title
    assert "cudnn.framework_cannot_load" not in _codes(findings, "cudnn.")


TF216_CASE = "tf216-pip-tensorrt10-wants-libnvinfer8"  # tensorflow/tensorflow#68335, #64809
TF216_SITE = "/home/rkuo/miniconda3/lib/python3.10/site-packages"


def test_tf_216_tensorrt_build_with_pip_tensorrt_10_warns_naming_both_majors() -> None:
    # TF 2.13-2.17 TensorRT builds open TensorRT 8; pip's TensorRT 10 (tensorrt_libs/libnvinfer.so.10, on
    # LD_LIBRARY_PATH here) is never loaded
    f = _one(_findings(_doc(TF216_CASE), TF216_CASE), "tensorrt.framework_cannot_load")
    assert f.severity == "warning"
    for word in ("tensorflow 2.16.2", "libnvinfer.so.8", "10.0.1", TF216_SITE + "/tensorrt_libs/libnvinfer.so.10"):
        assert word in _text(f), word


def test_tf_218_is_not_a_tensorrt_build_and_says_nothing_about_tensorrt_10() -> None:
    # TF 2.18 disabled TensorRT in its CUDA builds (release notes): no TensorRT major to look for
    from envdoctor.matrix import builds

    assert builds.tensorflow_tensorrt_major("2.16.2")[0] == "8"
    assert builds.tensorflow_tensorrt_major("2.17.1")[0] == "8"
    assert builds.tensorflow_tensorrt_major("2.18.0") is None


TF23_CASE = "b2-aws-dlami-tf23-tftrt-no-libnvinfer6"  # pythonlessons/TensorFlow-2.x-YOLOv3#105


def test_tf_23_whose_build_info_has_no_tensorrt_field_opens_libnvinfer_6() -> None:
    # TF 2.3's build_info.py has no is_tensorrt_build; its pip packages are TensorRT 6 builds (framework_builds.json):
    # with only a TensorRT 7 on the loader's path, TF-TRT cannot start, and the warning names both majors
    doc = _doc(TF23_CASE)
    doc["dirs"]["/usr/local/lib"] = {"entries": doc["dirs"]["/usr/local/lib"]["entries"] + [
        "libnvinfer.so.7", "libnvinfer.so.7.1.3"]}
    doc["files"]["/usr/local/lib/libnvinfer.so.7.1.3"] = {"text": ""}
    doc["links"]["/usr/local/lib/libnvinfer.so.7"] = {"target": "libnvinfer.so.7.1.3"}
    f = _one(_findings(doc, TF23_CASE), "tensorrt.framework_cannot_load")
    assert f.severity == "warning" and "libnvinfer.so.6" in f.title and "7.1.3" in f.title
    # without any TensorRT (the thread's machine), TensorFlow's users who never run TF-TRT hear nothing of it
    assert "tensorrt.framework_cannot_load" not in [x.code for x in _findings(_doc(TF23_CASE), TF23_CASE)]


#: tests/corpus/b39-nvidia-docker1-4x-gtx-titan-x-gcr-tensorflow080-gpu-image-opens-unversioned-libcudnn-so-only-so4
#: (NVIDIA/nvidia-docker#205): TensorFlow 0.8.0 (its _pywrap_tensorflow.so links libcudart.so.7.5) in an image whose
#: cuDNN 4 is only /usr/lib/x86_64-linux-gnu/libcudnn.so.4 -> libcudnn.so.4.0.7.
TF08_CASE = "b39-nvidia-docker1-4x-gtx-titan-x-gcr-tensorflow080-gpu-image-opens-unversioned-libcudnn-so-only-so4"
TF08_LIB = "/usr/lib/x86_64-linux-gnu"


def test_tf_08_opening_the_unversioned_cudnn_link_names_the_copy_and_the_link_to_make() -> None:
    f = _one(_findings(_doc(TF08_CASE), TF08_CASE), "cudnn.framework_cannot_load")
    assert f.severity == "error" and "libcudnn.so" in f.title and "tensorflow 0.8.0" in f.title
    assert TF08_LIB + "/libcudnn.so.4" in f.detail
    assert f.fix.commands[0] == "sudo ln -s %s/libcudnn.so.4.0.7 %s/libcudnn.so" % (TF08_LIB, TF08_LIB)


def test_tf_08_with_the_cudnn_development_link_is_quiet_about_cudnn() -> None:
    doc = _doc(TF08_CASE)
    doc["dirs"][TF08_LIB]["entries"].append("libcudnn.so")
    doc["files"][TF08_LIB + "/libcudnn.so"] = {"text": ""}
    doc["links"][TF08_LIB + "/libcudnn.so"] = {"target": "libcudnn.so.4.0.7"}
    assert _codes(_findings(doc, TF08_CASE), "cudnn.") == []


def test_tf_010_opens_a_versioned_cudnn_and_is_quiet_about_the_missing_link() -> None:
    # from 0.10 the pip builds name cuDNN by its SONAME (tensorflow/tensorflow#3091): no libcudnn.so is asked for
    doc = _renamed(_doc(TF08_CASE), "tensorflow-0.8.0", "tensorflow-0.10.0")
    doc = json.loads(json.dumps(doc).replace("Version: 0.8.0", "Version: 0.10.0"))
    assert "libcudnn.so" not in json.dumps([f.title for f in _findings(doc, TF08_CASE)])


def test_a_tf_08_wheel_that_links_no_cuda_runtime_is_not_taken_for_a_cuda_build() -> None:
    # 0.x's CPU and GPU wheels share the name "tensorflow": without libcudart in its extension's NEEDED it is a CPU
    # build, and its cuDNN is not judged
    doc = _doc(TF08_CASE)
    for rec in doc["elf"].values():
        rec["needed"] = [n for n in rec["needed"] if not n.startswith("libcudart")]
    assert _codes(_findings(doc, TF08_CASE), "cudnn.") == []

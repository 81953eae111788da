"""``driver.too_old_for_cudnn``: the cuDNN a framework or package loads is NVIDIA's build for a CUDA major the driver
does not run.

The machine is the corpus case ``b86g-...-deb-libcudnn8-893-cuda121-build-needs-cuda12-driver`` (thread
https://github.com/SYSTRAN/faster-whisper/issues/362: ``libcudnn8/unknown,now 8.9.3.28-1+cuda12.1`` from NVIDIA's
local repository, driver 470.161.03 reporting CUDA 11.4, CTranslate2 3.17.1 linking ``libcudnn.so.8``). The variants
change one fact of it each: the package version as NVIDIA's repository names the CUDA 11 build of the same release
(``libcudnn8 8.9.3.28-1+cuda11.8``, as its nvidia/cuda Dockerfiles pin ``8.9.7.29-1+cuda11.8``), cuDNN 9's package
name (``libcudnn9-cuda-12 9.1.0.70-1``), the pip wheel (``nvidia-cudnn-cu12``) and the redistributable archive's
directory (``cudnn-linux-x86_64-8.9.3.28_cuda12-archive``, NVIDIA's redist file name without ``.tar.xz``), and the
driver (535.104.05, reporting CUDA 12.2). The GPU and its driver are the case's stand-ins (nothing runs a GPU here)."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from envdoctor.checks import CheckContext, all_checks
from envdoctor.checks.libraries.cudnn_cuda_build import cudnn_cuda_build
from envdoctor.facts import Facts, ok

from .conftest import snapshot_facts, snapshot_report

CASE = os.path.join(os.path.dirname(__file__), "corpus",
                    "b86g-ubuntu2004-driver47016103-faster-whisper071-ct2-317-deb-libcudnn8-893-cuda121-build-needs-"
                    "cuda12-driver", "snapshot.json")
LIB = "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.3"
SITE = "/home/user/fw-venv/lib/python3.8/site-packages"


def judge(**replace: Any) -> List[Any]:
    """The check on the case's facts, with the facts named (dots as ``__``) replaced by the values given."""
    new = {k.replace("__", "."): v for k, v in replace.items()}
    facts = [f for f in snapshot_facts(CASE) if f.key not in new]
    facts += [ok(k, v, "test") for k, v in new.items()]
    return list(cudnn_cuda_build(CheckContext(Facts(facts), [])))


def relink(path: str, version: str = "8.9.3") -> List[Dict[str, Any]]:
    """The case's linkage.packages with CTranslate2's libcudnn.so.8 resolved to ``path``."""
    pkgs = [dict(p) for p in snapshot_facts(CASE).items("linkage.packages")]
    pkgs[0]["links"] = [dict(e, path=path, resolved=path, version=version) if e["soname"] == "libcudnn.so.8" else e
                        for e in pkgs[0]["links"]]
    return pkgs


def test_the_deb_build_for_cuda_12_on_an_r470_driver_is_an_error_naming_both_and_the_loader():
    report = snapshot_report(CASE)
    out = [f for f in report.findings if f.code == "driver.too_old_for_cudnn"]
    assert [(f.severity, f.components[0]) for f in out] == [("error", "driver")]
    f = out[0]
    for words in ("cuDNN 8.9.3", "8.9.3.28-1+cuda12.1", "CUDA 12.1", "525.60.13", "470.161.03", "CUDA 11.4",
                  "ctranslate2 3.17.1"):
        assert words in f.title
    assert "CUDNN_STATUS_NOT_INITIALIZED" in f.detail and LIB in f.detail
    # the fix: the same cuDNN series built for the driver's CUDA major, which the cudnn recipe plans (8.9.7 for CUDA 11)
    assert f.fix.install == "envdoctor install cudnn --version 8.9"
    assert "CUDA 11" in f.fix.text and "525.60.13" in f.fix.text
    assert f.source["url"].startswith("https://docs.nvidia.com/deeplearning/cudnn/")


def test_quiet_with_the_cuda_11_build_of_the_same_release():
    # R470 runs CUDA 11.8 builds through minor-version compatibility (>= 450.80.02, the matrix's floor)
    assert judge(cuda__packages=[{"name": "libcudnn8", "version": "8.9.3.28-1+cuda11.8", "manager": "dpkg"}]) == []


def test_quiet_when_the_driver_runs_cuda_12():
    assert judge(driver__version="535.104.05", driver__cuda_version="12.2") == []


def test_quiet_when_the_driver_runs_cuda_12_through_minor_compatibility_only():
    # 525.60.13 reports CUDA 12.0: the CUDA 12.1 build runs on it (cuDNN's matrix: CUDA 12.x needs >= 525.60.13)
    assert judge(driver__version="525.60.13", driver__cuda_version="12.0") == []


def test_rpm_versions_and_cudnn9_package_names_carry_the_build():
    rpm = judge(cuda__packages=[{"name": "libcudnn8", "version": "8.9.3.28-1.cuda12.1", "manager": "rpm"}])
    assert [f.code for f in rpm] == ["driver.too_old_for_cudnn"]
    nine = judge(cuda__packages=[{"name": "libcudnn9-cuda-12", "version": "9.1.0.70-1", "manager": "dpkg"}],
                 linkage__packages=relink("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0", "9.1.0"))
    assert [f.code for f in nine] == ["driver.too_old_for_cudnn"]
    assert "libcudnn9-cuda-12 9.1.0.70-1" in nine[0].title and "CUDA 12," in nine[0].title
    assert "v9.0.0" in nine[0].source["url"]


def test_a_pip_wheel_and_an_archive_carry_their_cuda_major_in_their_names():
    wheel_lib = SITE + "/nvidia/cudnn/lib/libcudnn.so.8"
    pip = judge(libraries__cudnn=[{"path": SITE + "/nvidia_cudnn_cu12-8.9.2.26.dist-info", "version": "8.9.2.26",
                                   "kind": "pip", "found_by": "pip wheel nvidia-cudnn-cu12"}],
                linkage__packages=relink(wheel_lib, "8.9.2"))
    assert [f.code for f in pip] == ["driver.too_old_for_cudnn"]
    assert "nvidia-cudnn-cu12" in pip[0].title and pip[0].fix.install is None
    archive = judge(linkage__packages=relink("/opt/cudnn-linux-x86_64-8.9.3.28_cuda12-archive/lib/libcudnn.so.8.9.3"))
    assert [f.code for f in archive] == ["driver.too_old_for_cudnn"]
    assert "_cuda12-archive" in archive[0].title
    quiet = judge(linkage__packages=relink("/opt/cudnn-linux-x86_64-8.9.3.28_cuda11-archive/lib/libcudnn.so.8.9.3"))
    assert quiet == []


def test_quiet_when_the_loaded_copy_is_not_the_packages_or_nothing_says_its_build():
    # a copy of another release, or one in a directory no package installs to: its CUDA build is not known
    assert judge(linkage__packages=relink("/usr/lib/x86_64-linux-gnu/libcudnn.so.8.6.0", "8.6.0")) == []
    assert judge(linkage__packages=relink("/usr/local/cuda-11.4/lib64/libcudnn.so.8.9.3")) == []
    # two builds of the same release listed: which one the file is, is not known
    assert judge(cuda__packages=[{"name": "libcudnn8", "version": "8.9.3.28-1+cuda12.1", "manager": "dpkg"},
                                 {"name": "libcudnn8", "version": "8.9.3.28-1+cuda11.8", "manager": "dpkg"}]) == []


def test_quiet_when_nothing_loads_it_or_the_driver_is_unknown():
    assert judge(linkage__packages=[]) == []
    assert judge(driver__version=None, driver__cuda_version=None) == []


def test_hostile_values_do_not_crash():
    for value in (None, "garbage", [None, 3, "x", {"links": "no"}], {"a": 1}):
        assert judge(linkage__packages=value, cuda__packages=value) == []
    assert judge(cuda__packages=[{"name": "libcudnn8", "version": "8.9.3.28-1+cuda99999999999.1"}]) == []
    assert judge(cuda__packages=[{"name": "libcudnn8", "version": None}], libraries__cudnn="x") == []


def test_yields_to_a_framework_that_already_needs_the_newer_driver():
    spec = next(s for s in all_checks() if s.name == "cudnn-cuda-build")
    assert spec.yields_to("driver.too_old_for_cudnn") == ("driver.too_old_for_framework>=error",)

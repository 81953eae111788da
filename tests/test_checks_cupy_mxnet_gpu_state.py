"""MXNet's and CuPy's CUDA builds and a GPU's state (throttling, a degraded link): rules generalised from corpus
cases (tests/corpus/<case>, each rebuilt from the public thread its case.json names): replayed on that machine,
then on the same machine changed the way the thread's fix changed it, where the rule must stay quiet."""

from __future__ import annotations

from typing import Any, Dict

from .conftest import corpus_snapshot, snapshot_findings

_doc = corpus_snapshot
_findings = snapshot_findings


def _add_file(doc: Dict[str, Any], directory: str, name: str) -> None:
    doc["dirs"][directory]["entries"].append(name)
    doc["files"][directory + "/" + name] = {"text": ""}


MXNET_CASE = "mxnet-cu112-on-cuda111-missing-libnvrtc112"  # apache/mxnet#20279
CUDA111_LIB = "/usr/local/cuda-11.1/targets/x86_64-linux/lib"


def test_mxnet_cu112_on_a_cuda_111_machine_cannot_load_libnvrtc_112() -> None:
    # libmxnet.so NEEDs the CUDA 11.2 NVRTC; the toolkit on LD_LIBRARY_PATH is 11.1 (libnvrtc.so.11.1)
    hits = [f for f in _findings(_doc(MXNET_CASE), MXNET_CASE) if f.code == "cuda.framework_cannot_load"]
    assert [f.severity for f in hits] == ["error"]
    assert "libnvrtc.so.11.2" in hits[0].title and "mxnet 1.8.0.post0" in hits[0].title
    assert "MXNet" in hits[0].detail


def test_mxnet_with_the_cuda_112_nvrtc_on_the_loader_path_is_quiet() -> None:
    # the CUDA 11.2 libraries the package is built for, where the loader looks (the maintainer's advice)
    doc = _doc(MXNET_CASE)
    _add_file(doc, CUDA111_LIB, "libnvrtc.so.11.2")
    _add_file(doc, "/usr/local/cuda/lib64", "libnvrtc.so.11.2")
    _add_file(doc, "/usr/local/cuda-11.1/lib64", "libnvrtc.so.11.2")
    bad = [f for f in _findings(doc, MXNET_CASE) if f.severity in ("warning", "error")]
    assert bad == [], [(f.code, f.title) for f in bad]


CUPY_CASE = "cupy-cuda12x-and-cuda13x-in-one-image"  # gpustack/gpustack#5459
CUPY_SITE = "/usr/local/lib/python3.12/dist-packages"


def test_two_cupy_wheels_in_one_environment_are_named_with_the_fix_for_the_drivers_cuda() -> None:
    hits = [f for f in _findings(_doc(CUPY_CASE), CUPY_CASE) if f.code == "framework.cupy_packages_conflict"]
    assert len(hits) == 1 and hits[0].severity == "warning"
    f = hits[0]
    assert "cupy-cuda12x 13.6.0" in f.title and "cupy-cuda13x 13.6.0" in f.title
    # the image's fix (gpustack/runner#176): purge both, reinstall the variant of the CUDA major (driver: 13.0)
    assert f.fix.commands == ["pip uninstall -y cupy-cuda12x cupy-cuda13x", "pip install cupy-cuda13x"]


def test_one_cupy_wheel_is_not_a_conflict() -> None:
    doc = _doc(CUPY_CASE)
    meta = CUPY_SITE + "/cupy_cuda12x-13.6.0.dist-info"
    for kind in ("files", "dirs"):
        for p in [p for p in doc[kind] if p == meta or p.startswith(meta + "/")]:
            del doc[kind][p]
    doc["dirs"][CUPY_SITE]["entries"].remove("cupy_cuda12x-13.6.0.dist-info")
    assert [f for f in _findings(doc, CUPY_CASE) if f.code == "framework.cupy_packages_conflict"] == []


def test_conflicting_cupy_packages_are_not_also_judged_as_one_build() -> None:
    # which wheel's files won the shared cupy/ tree is unknown: no "cannot load libnvrtc.so.12" guess beside the
    # conflict finding (the CUDA 13 image has only CUDA 13 libraries)
    findings = _findings(_doc(CUPY_CASE), CUPY_CASE)
    assert [f.code for f in findings if f.severity in ("warning", "error")] == ["framework.cupy_packages_conflict"]


SB2_CASE = "surface-book2-gtx1050-sw-thermal-slowdown-under-load"  # jakeday/linux-surface#216
RTX_CASE = "rtx-pro-6000-gen2-link-under-training-speed-locked"  # local-inference-lab/rtx6kpro#88


def test_throttled_gpu_title_names_the_reason_and_no_placeholder_for_an_unknown_temperature() -> None:
    f = [x for x in _findings(_doc(SB2_CASE), SB2_CASE) if x.code == "gpu.throttled"]
    assert len(f) == 1 and f[0].severity == "warning"
    assert "SW thermal slowdown" in f[0].title and "?" not in f[0].title
    doc = _doc(SB2_CASE)
    doc["nvml"]["data"]["device.0.temperature"] = {"value": 87}
    f = [x for x in _findings(doc, SB2_CASE) if x.code == "gpu.throttled"]
    assert f[0].title.endswith("(87 C)")


def test_busy_gpu_held_at_gen2_of_gen5_is_a_degraded_link_and_power_cap_title_has_no_none() -> None:
    findings = _findings(_doc(RTX_CASE), RTX_CASE)
    link = [f for f in findings if f.code == "gpu.pcie_link_degraded"]
    assert len(link) == 1 and "Gen2 x16" in link[0].title and "Gen5 x16" in link[0].title
    cap = [f for f in findings if f.code == "gpu.power_capped"]
    assert cap and "None" not in cap[0].title  # NVML gave no power limits here
    # the PR's fix: the link retrained to Gen5 before the speed is locked
    doc = _doc(RTX_CASE)
    doc["nvml"]["data"]["device.0.pcie_gen_current"] = {"value": 5}
    assert [f for f in _findings(doc, RTX_CASE) if f.code == "gpu.pcie_link_degraded"] == []

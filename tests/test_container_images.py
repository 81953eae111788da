"""Docker images whose NVIDIA Container Toolkit constraints (NVIDIA_REQUIRE_CUDA) the driver does not meet: the
toolkit refuses to start them ('nvidia-container-cli: requirement error: unsatisfied condition: cuda>=9.2').

Machine: tests/corpus/b9-ubuntu1804-driver39048-nvidia-docker2-cuda92-image-needs-396 (NVIDIA/nvidia-docker#753:
nvidia/cuda:9.2-runtime on driver 390.48, dockerd's image store under a data-root named in daemon.json). The
constraint string of CUDA 12.4.1 is the one NVIDIA's image sets (gitlab.com/nvidia/container-images/cuda,
dist/12.4.1/ubuntu2204/base/Dockerfile).

The brand= alternatives (forward compatibility) against the GPU's brand: tests/corpus/
b24-runpod-host-ubuntu2204-rtx4090-driver55012705-runpod-pytorch280-cuda1281-image-requires-cuda128 (a GeForce RTX 4090
on driver 550.127.05 with a CUDA 12.8.1 image, whose brand alternatives name the data-center brands only). Its NVML
answers hold no brand; the tests that add one stand in for NVML's answer (nvmlDeviceGetBrand: 5 GeForce, 2 Tesla)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

from packaging.version import Version

from envdoctor.checks import CheckContext, run_checks
from envdoctor.checks.containers import require_holds
from envdoctor.host.base import file_filter
from envdoctor.host.snapshot import SnapshotHost
from envdoctor.probes.containers import keep_image_config

from .conftest import corpus_snapshot, probe_facts

CASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus",
                    "b9-ubuntu1804-driver39048-nvidia-docker2-cuda92-image-needs-396", "snapshot.json")
CONFIG = ("/home/hadim/.local/docker/image/overlay2/imagedb/content/sha256/"
          "9292929292929292929292929292929292929292929292929292929292929292")
CODE = "container.image_needs_newer_driver"
RUNPOD = "b24-runpod-host-ubuntu2204-rtx4090-driver55012705-runpod-pytorch280-cuda1281-image-requires-cuda128"
#: NVIDIA_REQUIRE_CUDA of nvidia/cuda 12.8.1 (its brand alternatives: the data-center and virtual brands, no GeForce or
#: TITAN, for the R470, R535, R550, R560 and R565 branches).
CUDA_12_8_1 = " ".join(["cuda>=12.8"] + ["brand=%s,driver>=%d,driver<%d" % (b, d, d + 1)
                                         for d in (470, 535, 550, 560, 565)
                                         for b in ("unknown", "grid", "tesla", "nvidia", "quadro", "quadrortx",
                                                   "nvidiartx", "vapps", "vpc", "vcs", "vws", "cloudgaming")])
CUDA_12_4_1 = " ".join(["cuda>=12.4"] + ["brand=%s,driver>=%d,driver<%d" % (b, d, d + 1) for d in (470, 525, 535)
                                         for b in ("tesla", "unknown", "nvidia", "nvidiartx", "geforce", "geforcertx",
                                                   "quadro", "quadrortx", "titan", "titanrtx")])


def _findings(env_change: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    with open(CASE, encoding="utf-8") as fh:
        doc = json.load(fh)
    if env_change is not None:
        config = json.loads(doc["files"][CONFIG]["text"])
        env = dict(e.split("=", 1) for e in config["config"]["Env"])
        env.update(env_change)
        config["config"]["Env"] = ["%s=%s" % kv for kv in env.items()]
        doc["files"][CONFIG]["text"] = json.dumps(config)
    return {f.code: f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}


def test_an_image_for_a_newer_cuda_than_the_driver_is_named_with_the_driver_it_needs() -> None:
    f = _findings()[CODE]
    assert f.severity == "error"
    assert "nvidia/cuda:9.2-runtime-ubuntu16.04" in f.title and "390.48" in f.title and "CUDA 9.1" in f.title
    assert "cuda>=9.2" in f.detail and "396.26" in f.fix.text  # CUDA 9.2's driver, from NVIDIA's Table 3


def test_an_image_the_driver_meets_or_that_disables_its_constraints_stays_quiet() -> None:
    assert CODE not in _findings({"NVIDIA_REQUIRE_CUDA": "cuda>=9.0"})
    assert CODE not in _findings({"NVIDIA_DISABLE_REQUIRE": "true"})
    assert CODE not in _findings({"NVIDIA_REQUIRE_CUDA": "cuda>=9.2 driver>=390"})  # an alternative holds


def test_nvidias_own_constraints_read_as_the_toolkit_reads_them() -> None:
    def known(driver: str, cuda: str) -> Dict[str, Any]:
        return {"driver": Version(driver), "cuda": Version(cuda), "arch": []}

    assert require_holds(CUDA_12_4_1, known("550.54.15", "12.4")) is True
    # 535 with CUDA 12.2: the forward-compatible alternatives hold on some brands; the brand is not known here
    assert require_holds(CUDA_12_4_1, known("535.104.05", "12.2")) is None
    # 545 is in none of the driver ranges: refused whatever the brand
    assert require_holds(CUDA_12_4_1, known("545.23.08", "12.3")) is False
    assert require_holds("cuda>=11.0 driver>=450", known("440.33", "10.2")) is False
    assert require_holds("arch>=7.0", {"arch": [Version("6.1")]}) is False
    assert require_holds("garbled!!", known("550.54.15", "12.4")) is None


def test_a_snapshot_keeps_only_the_toolkit_variables_of_an_images_configuration() -> None:
    text = json.dumps({"config": {"Env": ["PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=hunter2", "CUDA_VERSION=12.4.1",
                                          "NVIDIA_REQUIRE_CUDA=cuda>=12.4"]}, "history": ["..."]})
    keep = file_filter(CONFIG)
    assert keep is keep_image_config
    kept = json.loads(keep(text))
    assert kept == {"config": {"Env": ["CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4"]}}
    assert keep("not json") == ""


def test_brand_alternatives_are_decided_by_the_gpus_brand() -> None:
    def known(brand: Any) -> Dict[str, Any]:
        return {"driver": Version("550.127.05"), "cuda": Version("12.4"), "arch": [], "brand": brand}

    assert require_holds(CUDA_12_8_1, known(["geforce"])) is False  # no alternative names a GeForce
    assert require_holds(CUDA_12_8_1, known(["geforce", "titan"])) is False  # a GeForce-class product, NVML not asked
    assert require_holds(CUDA_12_8_1, known(["tesla"])) is True  # forward compatibility on a data-center GPU
    assert require_holds(CUDA_12_8_1, known([])) is None  # brand not known: not decided
    # 12.4.1 also admits GeForce and TITAN on R535: which of the two the product reports decides, so undecided
    geforce_535 = {"driver": Version("535.104.05"), "cuda": Version("12.2"), "arch": [], "brand": ["geforce", "titan"]}
    assert require_holds(CUDA_12_4_1, geforce_535) is None
    assert require_holds(CUDA_12_4_1, dict(geforce_535, brand=["geforce"])) is True


def _runpod(brand: Optional[int] = None, name: Optional[str] = None) -> Dict[str, Any]:
    doc = corpus_snapshot(RUNPOD)
    data = doc["nvml"]["data"]
    if brand is not None:
        data["device.0.brand"] = {"value": brand}
    if name is not None:
        data["device.0.name"] = {"value": name}
    facts = probe_facts(SnapshotHost(doc))
    return {"facts": facts, "findings": {f.code: f for f in run_checks(CheckContext(facts, []))}}


def test_a_geforce_host_is_refused_an_image_whose_forward_compat_alternatives_name_only_data_center_brands() -> None:
    f = _runpod()["findings"][CODE]  # the model name alone: a GeForce product
    assert f.severity == "error" and "550.127.05" in f.title and "CUDA 12.4" in f.title
    assert "12.8" in f.fix.text and "geforce" in f.detail
    answered = _runpod(brand=5)
    assert answered["facts"].value("gpu.0.brand") == "GEFORCE"
    assert CODE in answered["findings"]


def test_a_data_center_gpu_on_a_listed_branch_starts_the_image_and_stays_quiet() -> None:
    assert CODE not in _runpod(brand=2)["findings"]  # NVML says Tesla: brand=tesla,driver>=550,driver<551 holds
    # a data-center product whose NVML brand is not recorded: its brand may be any the image lists, so not decided
    assert CODE not in _runpod(name="NVIDIA A100-SXM4-80GB")["findings"]


def _legacy_findings(env: Dict[str, str]) -> Dict[str, Any]:
    """The b9 machine (driver 390.48, CUDA 9.1) with its image's toolkit variables replaced by ``env``."""
    with open(CASE, encoding="utf-8") as fh:
        doc = json.load(fh)
    config = json.loads(doc["files"][CONFIG]["text"])
    config["config"]["Env"] = ["PATH=/usr/bin"] + ["%s=%s" % kv for kv in env.items()]
    doc["files"][CONFIG]["text"] = json.dumps(config)
    return {f.code: f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}


def test_a_legacy_cuda_image_is_held_to_its_cuda_version_as_the_toolkit_and_nvidia_docker_1_hold_it() -> None:
    # CUDA_VERSION without NVIDIA_REQUIRE_CUDA (NVIDIA's images of nvidia-docker 1.0's time): cuda>=9.2
    f = _legacy_findings({"CUDA_VERSION": "9.2.88"})[CODE]
    assert f.severity == "error"
    assert "nvidia/cuda:9.2-runtime-ubuntu16.04" in f.title and "390.48" in f.title and "CUDA 9.1" in f.title
    assert "CUDA_VERSION=9.2.88, held to cuda>=9.2" in f.detail and "legacy CUDA image" in f.detail
    assert "unsupported CUDA version: driver 9.1 < image 9.2.88" in f.detail
    assert "CUDA 9.2" in f.fix.text and "396.26" in f.fix.text


def test_a_legacy_image_the_driver_meets_or_with_its_own_constraints_or_disabled_stays_quiet() -> None:
    assert CODE not in _legacy_findings({"CUDA_VERSION": "9.0.176"})
    assert CODE not in _legacy_findings({"CUDA_VERSION": "9.1.85"})  # major.minor only: 9.1 meets cuda>=9.1
    # NVIDIA_REQUIRE_CUDA set: the image is not legacy, its own constraint is the one checked
    assert CODE not in _legacy_findings({"CUDA_VERSION": "9.2.88", "NVIDIA_REQUIRE_CUDA": "cuda>=9.0"})
    assert CODE not in _legacy_findings({"CUDA_VERSION": "9.2.88", "NVIDIA_DISABLE_REQUIRE": "1"})
    assert CODE not in _legacy_findings({"CUDA_VERSION": "not-a-version"})
    assert CODE not in _legacy_findings({})

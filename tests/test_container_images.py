"""Docker images whose NVIDIA Container Toolkit constraints (NVIDIA_REQUIRE_CUDA) the driver does not meet: the
toolkit refuses to start them ('nvidia-container-cli: requirement error: unsatisfied condition: cuda>=9.2').

Machine: tests/corpus/b9-ubuntu1804-driver39048-nvidia-docker2-cuda92-image-needs-396 (NVIDIA/nvidia-docker#753:
nvidia/cuda:9.2-runtime on driver 390.48, dockerd's image store under a data-root named in daemon.json). The
constraint string of CUDA 12.4.1 is the one NVIDIA's image sets (gitlab.com/nvidia/container-images/cuda,
dist/12.4.1/ubuntu2204/base/Dockerfile)."""

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

from .conftest import probe_facts

CASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus",
                    "b9-ubuntu1804-driver39048-nvidia-docker2-cuda92-image-needs-396", "snapshot.json")
CONFIG = ("/home/hadim/.local/docker/image/overlay2/imagedb/content/sha256/"
          "9292929292929292929292929292929292929292929292929292929292929292")
CODE = "container.image_needs_newer_driver"
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

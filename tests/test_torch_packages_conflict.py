"""Two distributions of PyTorch over one torch/ package (``framework.torch_packages_conflict``): torch 0.4.1.post2
and the 1.0 preview's torch-nightly 1.0.0.dev20181029 in one site-packages, as facebookresearch/maskrcnn-benchmark#75's
collect_env lists them (the corpus case rebuilt from it)."""

from __future__ import annotations

import copy

from .conftest import corpus_snapshot, snapshot_findings

CASE = ("b65-ubuntu1604-gtx1080ti-driver41073-cuda92-conda-py37-pip-torch041-and-torch-nightly-10-"
        "maskrcnn-benchmark-undefined-symbol")
SITE = "/home/l547/anaconda3/lib/python3.7/site-packages"
NIGHTLY = "torch_nightly-1.0.0.dev20181029.dist-info"


def _conflicts(doc):
    return [f for f in snapshot_findings(doc) if f.code == "framework.torch_packages_conflict"]


def test_torch_and_torch_nightly_in_one_site_packages_is_a_warning_naming_both_and_the_release_on_disk():
    [f] = _conflicts(corpus_snapshot(CASE))
    assert f.severity == "warning"
    assert f.title == ("2 PyTorch distributions are installed over one torch package (torch 0.4.1.post2, "
                       "torch-nightly 1.0.0.dev20181029); torch reports 0.4.1.post2")
    assert "undefined symbol" in f.detail
    assert f.fix.commands == ["pip uninstall -y torch torch-nightly"]


def test_quiet_with_one_torch_distribution():
    doc = copy.deepcopy(corpus_snapshot(CASE))
    doc["dirs"][SITE]["entries"] = [e for e in doc["dirs"][SITE]["entries"] if e != NIGHTLY]
    for key in [k for k in doc["dirs"] if NIGHTLY in k]:
        del doc["dirs"][key]
    for key in [k for k in doc["files"] if NIGHTLY in k]:
        del doc["files"][key]
    assert _conflicts(doc) == []

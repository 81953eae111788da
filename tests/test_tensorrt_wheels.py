"""TensorRT's pip packages installed at different releases (``tensorrt.wheel_version_mismatch``).

NVIDIA publishes every package of a TensorRT pip family at one version per release (the sdists on PyPI:
``tensorrt`` 10.0.1 and 10.1.0 require ``tensorrt-cu12`` with no version, 10.2.0 on pin it ``==`` their own;
``tensorrt-cu12`` 10.0.1 installs ``tensorrt-cu12_libs==10.0.1`` and ``tensorrt-cu12_bindings==10.0.1``;
``matrix/data/tensorrt_wheels.json``).

Replayed on two captured machines whose families are whole: tests/corpus/tf216-pip-tensorrt10-wants-libnvinfer8
(``tensorrt``, ``tensorrt-cu12``, ``-libs``, ``-bindings``, all 10.0.1) and
tests/corpus/healthy-b19-ubuntu2404-tensoracle-130-producer-extra-ptxas-132-from-wheels-no-cuda-home-l4
(``tensorrt-cu13`` and its parts 11.4.0.106, no metapackage); then edited the way ``pip install tensorrt==10.0.1``
goes when pip takes the newest runtime (the runtime's dist-info at 10.1.0), and with the lean family added.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List

from .conftest import corpus_snapshot, snapshot_findings

META = "tf216-pip-tensorrt10-wants-libnvinfer8"
META_SITE = "/home/rkuo/miniconda3/lib/python3.10/site-packages"
RUNTIME = "healthy-b19-ubuntu2404-tensoracle-130-producer-extra-ptxas-132-from-wheels-no-cuda-home-l4"
RUNTIME_SITE = "/home/user/venv/lib/python3.12/site-packages"
CODE = "tensorrt.wheel_version_mismatch"


def _found(doc: Dict[str, Any], code: str = CODE) -> List[Any]:
    return [f for f in snapshot_findings(doc) if f.code == code]


def _reversion(doc: Dict[str, Any], site: str, stem: str, old: str, new: str) -> None:
    """Move ``<stem>-<old>.dist-info`` to ``<new>`` in the listing and the files, as pip would have written it."""
    entries = doc["dirs"][site]["entries"]
    entries[entries.index("%s-%s.dist-info" % (stem, old))] = "%s-%s.dist-info" % (stem, new)
    prefix = "%s/%s-%s.dist-info" % (site, stem, old)
    for key in [k for k in doc["files"] if k.startswith(prefix)]:
        entry = doc["files"].pop(key)
        if "text" in entry:
            entry = dict(entry, text=entry["text"].replace("Version: " + old, "Version: " + new))
        doc["files"][key.replace(prefix, "%s/%s-%s.dist-info" % (site, stem, new))] = entry
    for key in [k for k in doc["dirs"] if k.startswith(prefix)]:
        doc["dirs"][key.replace(prefix, "%s/%s-%s.dist-info" % (site, stem, new))] = doc["dirs"].pop(key)


def _add_dist(doc: Dict[str, Any], site: str, stem: str, name: str, version: str) -> None:
    info = "%s-%s.dist-info" % (stem, version)
    doc["dirs"][site]["entries"].append(info)
    doc["dirs"]["%s/%s" % (site, info)] = {"entries": ["METADATA"]}
    doc["files"]["%s/%s/METADATA" % (site, info)] = {
        "text": "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)}


def test_quiet_when_every_package_of_the_family_is_one_release():
    assert _found(corpus_snapshot(META)) == []
    assert _found(corpus_snapshot(RUNTIME)) == []


def test_metapackage_at_one_release_and_the_runtime_pip_took_at_another():
    doc = copy.deepcopy(corpus_snapshot(META))
    for stem in ("tensorrt_cu12", "tensorrt_cu12_libs", "tensorrt_cu12_bindings"):
        _reversion(doc, META_SITE, stem, "10.0.1", "10.1.0")
    (f,) = _found(doc)
    assert f.severity == "warning" and f.components[0] == "tensorrt"
    assert "tensorrt 10.0.1 is installed, but the TensorRT that loads is 10.1.0" in f.title
    assert "tensorrt-cu12-libs 10.1.0" in f.title
    assert "with no version" in f.detail  # 10.0.1's metapackage does not pin its runtime
    (step,) = f.fix.steps
    assert step.options[0] == ["pip install 'tensorrt-cu12==10.0.1' 'tensorrt-cu12-libs==10.0.1' "
                               "'tensorrt-cu12-bindings==10.0.1'"]
    assert step.options[1] == ["pip install 'tensorrt==10.1.0'"]


def test_a_pinned_conflict_is_told_once_by_the_family_rule():
    """From 10.2.0 the metapackage pins its runtime, so `pip check` sees the conflict too: one finding, this one."""
    doc = copy.deepcopy(corpus_snapshot(META))
    for stem in ("tensorrt_cu12", "tensorrt_cu12_libs", "tensorrt_cu12_bindings"):
        _reversion(doc, META_SITE, stem, "10.0.1", "10.3.0")
    _reversion(doc, META_SITE, "tensorrt", "10.0.1", "10.2.0")
    meta = "%s/tensorrt-10.2.0.dist-info/METADATA" % META_SITE
    doc["files"][meta]["text"] += "Requires-Dist: tensorrt-cu12==10.2.0\n"
    (f,) = _found(doc)
    assert "10.2.0" in f.title and "10.3.0" in f.title and "with no version" not in f.detail
    assert [x for x in _found(doc, "packages.requirement_not_met") if "tensorrt" in x.title] == []


def test_runtime_whose_parts_are_another_release():
    doc = copy.deepcopy(corpus_snapshot(RUNTIME))
    _reversion(doc, RUNTIME_SITE, "tensorrt_cu13_libs", "11.4.0.106", "11.3.0.21")
    (f,) = _found(doc)
    assert "tensorrt-cu13 11.4.0.106 is installed, but its parts are another release" in f.title
    assert "tensorrt-cu13-libs 11.3.0.21" in f.title
    assert f.fix.commands == ["pip install 'tensorrt-cu13==11.4.0.106' 'tensorrt-cu13-libs==11.4.0.106' "
                              "'tensorrt-cu13-bindings==11.4.0.106'"]


def test_the_lean_family_is_judged_on_its_own():
    doc = copy.deepcopy(corpus_snapshot(META))
    _add_dist(doc, META_SITE, "tensorrt_lean", "tensorrt_lean", "10.0.1")
    _add_dist(doc, META_SITE, "tensorrt_lean_cu12", "tensorrt_lean-cu12", "10.0.1")
    assert _found(doc) == []
    _add_dist(doc, META_SITE, "tensorrt_lean_cu12_libs", "tensorrt_lean-cu12_libs", "10.1.0")
    (f,) = _found(doc)
    assert f.title.startswith("tensorrt-lean 10.0.1 is installed, but the TensorRT that loads is 10.1.0")


def test_an_unreadable_version_says_nothing():
    doc = copy.deepcopy(corpus_snapshot(META))
    _reversion(doc, META_SITE, "tensorrt_cu12", "10.0.1", "garbage")
    assert _found(doc) == []

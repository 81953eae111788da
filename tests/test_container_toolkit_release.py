"""NVIDIA Container Toolkit releases with a bug fixed in the next one (``container-toolkit.known_broken_release``,
matrix area ``container_toolkit_bugs`` from the toolkit's CHANGELOG).

Fixture: the corpus machine of cncf-tags/container-device-interface#239 (Podman 4.9.3, toolkit 1.17.0 as its
`nvidia-ctk --version` and dpkg show); the quiet variant is the same machine after the fix the thread took (1.17.1).
"""

from __future__ import annotations

from envdoctor.matrix import containers as ctm
from envdoctor.versions import parse

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b7-ubuntu2404-podman493-toolkit1170-cdi-create-symlinks-hook-bug"


def _found(doc):
    return [f for f in snapshot_findings(doc) if f.code == "container-toolkit.known_broken_release"]


def _with_version(doc, version: str):
    for c in doc["commands"]:
        if c["argv"][0] in ("nvidia-ctk", "nvidia-container-cli"):
            c["stdout"] = c["stdout"].replace("1.17.0", version)
    return doc


def test_toolkit_1_17_0_is_named_with_the_release_that_fixed_it() -> None:
    found = _found(corpus_snapshot(CASE))
    assert len(found) == 1 and found[0].severity == "warning"
    assert "1.17.0" in found[0].title and "1.17.1" in found[0].title
    assert "changelog" in found[0].source["url"].lower()


def test_the_fixed_release_and_a_later_one_are_quiet() -> None:
    for version in ("1.17.1", "1.17.8"):
        assert _found(_with_version(corpus_snapshot(CASE), version)) == [], version


def test_every_catalogued_release_is_found_and_its_fix_is_later() -> None:
    for row in ctm.toolkit_bugs():
        assert ctm.toolkit_bug(row["release"]) is row or ctm.toolkit_bug(row["release"]) == row
        assert ctm.toolkit_bug(row["release"] + "-1") == row  # a Debian package's version
        assert parse(row["fixed_in"]) > parse(row["release"])
        assert ctm.toolkit_bug(row["fixed_in"]) is None
        assert row["source"]["verified"] and row["source"]["url"].startswith("https://github.com/NVIDIA/")


# -- a bug that bites only where nvidia-container-cli is run directly (row condition direct_cli) -------------------
# Fixture: the corpus machine of GoogleCloudPlatform/cluster-toolkit#4144 (a Slurm node, enroot's 98-nvidia.sh hook
# in /etc/enroot/hooks.d, the toolkit packages at 1.17.7-1). Quiet variants: the same toolkit without the hook
# (Docker or Podman through the toolkit's own runtime hook, which passes --cuda-compat-mode itself: NVIDIA/
# libnvidia-container#310), and the fixed release.

ENROOT_CASE = "b50-gcp-slurm-node-l4-driver57013320-enroot-nvidia-container-toolkit-1177-update-regression"
HOOK = "/etc/enroot/hooks.d/98-nvidia.sh"


def _without_enroot_hook(doc):
    doc["files"].pop(HOOK, None)
    doc["dirs"]["/etc/enroot/hooks.d"]["entries"] = []
    return doc


def test_toolkit_1_17_7_with_enroots_nvidia_hook_is_named_with_the_hook_and_the_fix() -> None:
    found = _found(corpus_snapshot(ENROOT_CASE))
    assert len(found) == 1 and found[0].severity == "warning"
    f = found[0]
    assert "1.17.7" in f.title and "1.17.8" in f.title and "--cuda-compat-mode" in f.title
    assert HOOK in f.detail and "enroot" in f.detail
    assert "1.17.8" in f.fix.text


def test_toolkit_1_17_7_without_a_direct_caller_is_quiet() -> None:
    assert _found(_without_enroot_hook(corpus_snapshot(ENROOT_CASE))) == []
    # Docker/Podman only (the CDI machine of the first tests) at the same release
    assert _found(_with_version(corpus_snapshot(CASE), "1.17.7")) == []


def test_toolkit_1_17_7_with_apptainer_handing_nv_to_the_cli_is_named() -> None:
    doc = _without_enroot_hook(corpus_snapshot(ENROOT_CASE))
    doc["dirs"]["/usr/bin"]["entries"].append("apptainer")
    doc["files"]["/usr/bin/apptainer"] = {"text": ""}
    doc["dirs"]["/etc/apptainer"] = {"entries": ["apptainer.conf", "nvliblist.conf"]}
    doc["dirs"]["/etc"]["entries"].append("apptainer")
    doc["files"]["/etc/apptainer/nvliblist.conf"] = {"text": "libcuda.so\n"}
    doc["files"]["/etc/apptainer/apptainer.conf"] = {"text": "use nvidia-container-cli = yes\n"}
    doc["commands"].append({"argv": ["/usr/bin/apptainer", "--version"], "returncode": 0, "stderr": "",
                            "stdout": "apptainer version 1.3.4\n", "duration": 0.0, "error": None, "message": "",
                            "timed_out": False})
    found = _found(doc)
    assert len(found) == 1 and "apptainer (use nvidia-container-cli = yes)" in found[0].detail
    doc["files"]["/etc/apptainer/apptainer.conf"] = {"text": "use nvidia-container-cli = no\n"}
    assert _found(doc) == []


def test_toolkit_1_17_8_with_enroots_hook_is_quiet() -> None:
    doc = corpus_snapshot(ENROOT_CASE)
    for c in doc["commands"]:
        for k in ("stdout",):
            c[k] = c[k].replace("1.17.7", "1.17.8")
    assert _found(doc) == []


def test_a_condition_the_table_does_not_know_is_refused() -> None:
    row = dict(ctm.toolkit_bugs()[-1], condition={"kind": "nowhere"})
    assert any("condition" in p for p in ctm.validate_toolkit_bugs([row]))
    assert ctm.validate_toolkit_bugs(ctm.toolkit_bugs()) == []

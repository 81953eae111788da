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

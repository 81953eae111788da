"""Which CDI specs the installed Podman can read (``container.engine_without_cdi``,
``container-toolkit.cdi_spec_unreadable_by_runtime``; matrix area ``cdi_engines``, generated from the CDI library each
Podman release vendors by ``scripts/gen_cdi_engines.py``).

Fixtures: the corpus machines of podman#24474 (Podman 3.4.4, the toolkit's /etc/cdi/nvidia.yaml) and
nvidia-container-toolkit#1860 (Podman 4.9.3, toolkit 1.19.1's spec with additionalGids, cdiVersion 0.7.0); the
quiet variants change only what the threads' fixes changed (the Podman release, the spec's content).
"""

from __future__ import annotations

from envdoctor.matrix import containers as ctm
from envdoctor.versions import parse

from .conftest import corpus_snapshot, snapshot_findings

OLD = "b7-ubuntu2204-podman344-without-cdi-toolkit117-cdi-spec"
GIDS = "b7-ubuntu2404-podman493-toolkit1191-cdi-spec-additionalgids-unknown"
CODES = ("container.engine_without_cdi", "container-toolkit.cdi_spec_unreadable_by_runtime")


def _found(doc):
    return [f for f in snapshot_findings(doc) if f.code in CODES]


def _podman(doc, version: str):
    for c in doc["commands"]:
        if c["argv"][0] == "podman":
            c["stdout"] = "podman version %s\n" % version
    return doc


def test_podman_3_4_reads_only_json_specs_in_etc_cdi() -> None:
    found = _found(corpus_snapshot(OLD))
    assert [f.code for f in found] == ["container.engine_without_cdi"] and found[0].severity == "error"
    assert "Podman 3.4.4" in found[0].title and "/etc/cdi/nvidia.yaml" in found[0].title


def test_the_same_spec_as_json_or_a_newer_podman_is_read() -> None:
    doc = corpus_snapshot(OLD)
    doc["files"]["/etc/cdi/nvidia.json"] = {"text": '{"cdiVersion": "0.3.0", "kind": "nvidia.com/gpu", '
                                                    '"devices": [{"name": "all", "containerEdits": {}}]}'}
    del doc["files"]["/etc/cdi/nvidia.yaml"]
    doc["dirs"]["/etc/cdi"]["entries"] = ["nvidia.json"]
    assert _found(doc) == []
    assert _found(_podman(corpus_snapshot(OLD), "4.3.0")) == []  # its library reads cdiVersion 0.5.0, this spec's
    # Podman 4.1 reads YAML, but only up to cdiVersion 0.4.0: the same spec is then refused for its version
    assert [f.code for f in _found(_podman(corpus_snapshot(OLD), "4.1.0"))] == [
        "container-toolkit.cdi_spec_unreadable_by_runtime"]


def test_a_podman_without_cdi_support_says_so() -> None:
    found = _found(_podman(corpus_snapshot(OLD), "3.1.2"))
    assert "no CDI support" in found[0].title


def test_a_spec_field_newer_than_the_library_is_named() -> None:
    found = _found(corpus_snapshot(GIDS))
    assert found and all(f.code == "container-toolkit.cdi_spec_unreadable_by_runtime" for f in found)
    assert "additionalGids" in found[0].title and "0.6.0" in found[0].title and "Podman 4.9.3" in found[0].title


def test_a_podman_whose_library_reads_0_7_0_is_quiet() -> None:
    assert _found(_podman(corpus_snapshot(GIDS), "5.2.0")) == []


def test_every_catalogued_release_range_and_field() -> None:
    engines = [r for r in ctm.cdi_rows() if r["kind"] == "engine"]
    for a, b in zip(engines, engines[1:]):
        assert parse(a["last"]) < parse(b["first"])  # ranges do not overlap, in order
    for r in engines:
        for v in (r["first"], r["last"]):
            assert ctm.cdi_reading("podman", v) == r
    assert ctm.cdi_reading("podman", "3.2.0")["formats"] == ["json"]
    assert ctm.cdi_reading("podman", "99.0.0") is None  # newer than the table: nothing said
    for f in ctm.cdi_fields():
        assert parse(f["cdi_version"]) is not None and f["source"]["verified"]

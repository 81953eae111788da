"""/etc/docker/daemon.json that dockerd cannot decode (``docker.daemon_config_invalid``).

Fixture: the corpus machine of NVIDIA/nvidia-docker#1420 (the reporter's daemon.json, a comma missing after the
"dns" setting); the quiet variant is the same file with the comma the accepted answer added.
"""

from __future__ import annotations

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b6-ubuntu2004-nvidia-docker2-daemon-json-missing-comma"
PATH = "/etc/docker/daemon.json"


def _codes(doc):
    return {f.code: f for f in snapshot_findings(doc)}


def test_a_missing_comma_is_an_error_naming_the_line() -> None:
    f = _codes(corpus_snapshot(CASE))["docker.daemon_config_invalid"]
    assert f.severity == "error" and PATH in f.title and "line 3" in f.title
    assert "python3 -m json.tool %s" % PATH in f.fix.commands


def test_the_corrected_file_and_an_empty_or_absent_one_are_quiet() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"][PATH]["text"] = doc["files"][PATH]["text"].replace('["172.17.0.1"]\n', '["172.17.0.1"],\n')
    assert "docker.daemon_config_invalid" not in _codes(doc)
    doc["files"][PATH]["text"] = "\n"
    assert "docker.daemon_config_invalid" not in _codes(doc)
    del doc["files"][PATH]
    assert "docker.daemon_config_invalid" not in _codes(doc)


def test_a_json_array_is_not_a_configuration() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"][PATH]["text"] = '["runtimes"]\n'
    assert "not a JSON object" in _codes(doc)["docker.daemon_config_invalid"].title

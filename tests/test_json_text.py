"""Every JSON output is written by one fast encoder (envdoctor.jsontext.chunks), whose text must be the
json module's, indented by two, character for character (jsontext.reference_dumps): checked here on the report
of every captured machine, live capture and corpus case (replayed), and in tests/test_fleet_cluster.py on
generated documents of every shape."""

from __future__ import annotations

import glob
import os
import time

import pytest

from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.jsontext import chunks, dumps, reference_dumps
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SNAPSHOTS = sorted(glob.glob(os.path.join(ROOT, "tests", "machines", "*", "snapshot.json"))
                   + glob.glob(os.path.join(ROOT, "tests", "live", "*", "snapshot.json*"))
                   + glob.glob(os.path.join(ROOT, "tests", "corpus", "*", "snapshot.json"))[::7])


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: os.path.relpath(os.path.dirname(p), ROOT))
def test_every_report_is_written_as_the_json_module_writes_it(path: str) -> None:
    host = SnapshotHost(load_snapshot(path), path, validated=True)
    doc = diagnose(host, deadline=time.monotonic() + 60, scrubber=Scrubber(include_host=True)).to_dict()
    assert dumps(doc) == reference_dumps(doc)
    assert "".join(chunks(doc)) == dumps(doc)


def test_unwritable_values_are_refused_as_the_json_module_refuses_them() -> None:
    for bad in ({"a": object()}, {(1, 2): 1}, [{1, 2}]):
        with pytest.raises(TypeError):
            reference_dumps(bad)
        with pytest.raises(TypeError):
            dumps(bad)

"""Bounded waits: a second asker of a read that hangs waits only until the deadline, and a snapshot
records a read still in flight at the deadline as timed out, so the replay's verdict is the live run's.
The hanging read is a real one: opening a FIFO nobody writes to blocks in the kernel, as a read of a
hung network mount or a wedged driver's /proc file does."""

from __future__ import annotations

import copy
import json
import os
import threading
import time

from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_read_stuck_in_another_thread_is_timed_out_at_the_deadline_and_in_the_snapshot(tmp_path):
    fifo = str(tmp_path / "hung")
    os.mkfifo(fifo)
    host = LiveHost(timeout=1.0, deadline=time.monotonic() + 1.0)
    first = threading.Thread(target=host.read_file, args=(fifo,), daemon=True)
    first.start()
    try:
        time.sleep(0.1)
        start = time.monotonic()
        second = host.read_file(fifo)  # was: waits for the first asker, forever
        assert time.monotonic() - start < 1.5
        assert second.error == "ETIMEDOUT" and "time limit" in second.message
        doc = document_from_host(host, Scrubber(include_host=True), "test")
        assert doc["files"][fifo]["error"] == "ETIMEDOUT"
    finally:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let the stuck reader go
        first.join(5)


def test_a_replayed_read_that_hung_live_times_its_probe_out():
    with open(os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    hung = copy.deepcopy(doc)
    hung["files"]["/etc/os-release"] = {"error": "ETIMEDOUT", "message": "still being read when the time limit came"}
    report = diagnose(SnapshotHost(hung, "hung"), scrubber=Scrubber(include_host=True))
    (os_probe,) = [p for p in report.probes if p.name == "os"]
    assert os_probe.status == "timed_out" and "/etc/os-release" in os_probe.error
    assert "envdoctor.probe_timed_out" in {f.code for f in report.findings}

"""What a snapshot keeps: the evidence the probes use, not the whole machine.

The environment keeps the values of the variables a probe read and of CUDA_*, NVIDIA_*, NCCL_*, LD_*,
CONDA_* and search paths, only the names of the others (tests/test_privacy_env.py, test_privacy_planted.py);
the package databases keep the CUDA-related packages the cuda probe reads. Checked on the real H100 capture
(tests/live: its dpkg status file was 404 KB of a 704 KB snapshot) and on this machine's own dpkg file."""

from __future__ import annotations

import glob
import json
import os
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host, load_snapshot, trim_document
from envdoctor.probes import cuda, run_probes
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIVE = sorted(glob.glob(os.path.join(ROOT, "tests", "live", "*", "snapshot.json.gz")))


def _verdict(doc):
    report = diagnose(SnapshotHost(json.loads(json.dumps(doc)), "r"), scrubber=Scrubber(include_host=True))
    return (sorted((f.key, json.dumps(f.value, sort_keys=True), f.status) for f in report.facts),
            sorted((f.code, f.severity, f.title) for f in report.findings))


@pytest.mark.parametrize("path", LIVE, ids=lambda p: p.split(os.sep)[-2])
def test_the_live_capture_as_a_capture_writes_it_now_replays_the_same_at_under_half_the_size(path):
    doc = load_snapshot(path)
    host = SnapshotHost(json.loads(json.dumps(doc)), path)
    diagnose(host, scrubber=Scrubber(include_host=True))
    trimmed = trim_document(doc, sorted(host.environ().read))
    assert _verdict(trimmed) == _verdict(doc)
    size = len(json.dumps(doc, indent=1, sort_keys=True))
    if "environ_names" in doc:
        # captured live by a version that already keeps only what the probes use: trimming it again
        # changes nothing, and the live machine's records are already the CUDA packages alone
        assert len(json.dumps(trimmed, indent=1, sort_keys=True)) <= size
        assert "LANG" in doc["environ_names"] and "LANG" not in doc["environ"]
        dpkg = doc["files"][cuda.DPKG_STATUS]["text"]
        assert cuda.parse_dpkg_status(dpkg) and len(dpkg) < 64 * 1024  # the whole file is ~400 KB there
        return
    assert len(json.dumps(trimmed, indent=1, sort_keys=True)) < size / 2
    dpkg = trimmed["files"][cuda.DPKG_STATUS]["text"]
    assert len(dpkg) < len(doc["files"][cuda.DPKG_STATUS]["text"]) / 10
    assert cuda.parse_dpkg_status(dpkg) == cuda.parse_dpkg_status(doc["files"][cuda.DPKG_STATUS]["text"])
    assert "LANG" in trimmed["environ_names"] and "LANG" not in trimmed["environ"]  # no probe reads it


def test_an_old_snapshot_replays_as_it_is():
    # Snapshots written before the capture kept only what the probes use hold everything: nothing is
    # filtered on replay (the dpkg file of the live capture is read whole).
    doc = load_snapshot(LIVE[0])
    host = SnapshotHost(doc, "old")
    assert host.read_text(cuda.DPKG_STATUS) == doc["files"][cuda.DPKG_STATUS]["text"]
    assert set(host.environ()) == set(doc["environ"])


@pytest.mark.skipif(not os.path.isfile(cuda.DPKG_STATUS), reason="this machine has no dpkg status file")
def test_a_capture_here_keeps_the_cuda_packages_of_the_dpkg_file_and_nothing_else():
    host = LiveHost(timeout=20, deadline=time.monotonic() + 20)
    run_probes(host)
    doc = document_from_host(host, Scrubber(include_host=True), "test")
    with open(cuda.DPKG_STATUS, encoding="utf-8", errors="replace") as fh:
        whole = fh.read()
    kept = doc["files"][cuda.DPKG_STATUS]["text"]
    assert cuda.parse_dpkg_status(kept) == cuda.parse_dpkg_status(whole)
    stanzas = [s for s in kept.split("\n\n") if s.strip()]
    assert all(cuda._PKG_NAME.match(s.split("\n", 1)[0].split(":", 1)[1].strip()) for s in stanzas)
    assert len(kept) <= len(whole)


_LINES = st.lists(st.one_of(
    st.sampled_from(["cuda-toolkit-12-4 12.4.1-1", "libcudnn9-cuda-12 9.1.0.70-1", "nccl 2.21.5-1+cuda12.4",
                     "bash 5.1.8-9.el9", "cuda-drivers 550.54.15-1", "tensorrt 10.0.1.6-1.cuda12.4", "",
                     "kernel 5.14.0-427.el9", "cuda 12.4.1 extra"]),
    st.text(max_size=30)), max_size=12)


@given(_LINES)
def test_the_rpm_listing_a_capture_keeps_parses_the_same(lines):
    text = "\n".join(lines) + "\n"
    assert cuda.parse_rpm_qa(cuda.keep_cuda_rpm_lines(text)) == cuda.parse_rpm_qa(text)


@given(st.lists(st.tuples(st.sampled_from(["cuda-cudart-12-4", "libnccl2", "bash", "libcudnn8", "vim",
                                           "nvidia-cuda-toolkit", "libnvinfer10"]),
                          st.sampled_from(["install ok installed", "deinstall ok config-files"]),
                          st.text(alphabet="abc .:-\n", max_size=20)), max_size=8))
def test_the_dpkg_stanzas_a_capture_keeps_parse_the_same(stanzas):
    text = "\n".join("Package: %s\nStatus: %s\nVersion: 1.2-3\nDescription: %s\n" % s for s in stanzas)
    assert cuda.parse_dpkg_status(cuda.keep_cuda_stanzas(text)) == cuda.parse_dpkg_status(text)

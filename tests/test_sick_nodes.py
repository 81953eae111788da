"""The pre-flight property: every sick variant of a real GPU node fails `diagnose` (exit 1, with the
finding that says why) and counts as failed in `fleet`; the healthy bases pass. Variants:
tests/sick_variants.py (a live 1-GPU H100 capture and the 8-GPU CentOS Stream 9 node)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost
from envdoctor.report import diagnose

from .sick_variants import bases, variants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = list(variants())


def _report(doc):
    return diagnose(SnapshotHost(json.loads(json.dumps(doc)), "variant"), scrubber=Scrubber(include_host=True))


@pytest.mark.parametrize("name", sorted(bases()))
def test_the_healthy_bases_pass(name):
    report = _report(bases()[name])
    assert report.exit_code == 0, [(f.code, f.title) for f in report.findings if f.severity == "error"]


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_every_sick_variant_fails_diagnose_with_the_reason(variant):
    report = _report(variant.doc)
    codes = {f.code: f for f in report.findings}
    assert report.exit_code == variant.exit, [(f.code, f.severity, f.title) for f in report.findings]
    assert variant.expect in codes, sorted(codes)
    if variant.exit == 1:
        assert codes[variant.expect].severity == "error"


def test_a_lost_gpu_is_named_by_index_bus_address_and_serial():
    v = next(v for v in VARIANTS if v.name == "8xh100/lost-handle")
    lost = [f for f in _report(v.doc).findings if f.code == "gpu.lost"]
    # The handle is lost, so NVML gives neither bus id nor serial: the bus address comes from NVML's PCI
    # order (and says so), the serial is said to be unknown.
    assert len(lost) == 1 and lost[0].title.startswith("GPU 7 (PCI 0000:db:00.0 (by PCI bus order")
    v = next(v for v in VARIANTS if v.name == "8xh100/lost-in-a-call")
    (lost,) = [f for f in _report(v.doc).findings if f.code == "gpu.lost"]
    assert "GPU 7 (PCI 0000:db:00.0, serial 1753024029907)" in lost.title and "memory" in lost.detail


def test_missing_gpus_are_named_by_bus_address():
    v = next(v for v in VARIANTS if v.name == "8xh100/7-of-8")
    (f,) = [f for f in _report(v.doc).findings if f.code == "gpu.missing"]
    assert "7 of the 8" in f.title and f.title.endswith("missing: 0000:db:00.0")
    v = next(v for v in VARIANTS if v.name == "8xh100/0-of-8")
    (f,) = [f for f in _report(v.doc).findings if f.code == "gpu.missing"]
    assert "0 of the 8" in f.title and "0000:18:00.0" in f.title and "0000:db:00.0" in f.title


def test_x1_is_an_error_x8_a_warning_idle_or_not():
    for name, severity, width in (("8xh100/x1-idle", "error", "x1"), ("8xh100/x8-idle", "warning", "x8")):
        v = next(v for v in VARIANTS if v.name == name)
        (f,) = [f for f in _report(v.doc).findings if f.code == "gpu.pcie_width_degraded"]
        assert f.severity == severity and "PCIe %s, but the link supports x16" % width in f.title


def test_fleet_counts_every_sick_node_as_failed(tmp_path):
    sick = [v for v in VARIANTS if v.exit == 1]
    for i, v in enumerate(sick):
        with gzip.open(str(tmp_path / ("node%03d.json.gz" % i)), "wt", encoding="utf-8") as fh:
            json.dump(v.doc, fh)
    for name, doc in bases().items():
        with open(str(tmp_path / ("healthy-%s.json" % name)), "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
    r = subprocess.run([sys.executable, "-m", "envdoctor", "fleet", str(tmp_path), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["with_errors"] == len(sick), doc["summary"]
    failed = {n["name"] for n in doc["nodes"] if n["summary"]["error"]}
    assert failed == {"node%03d" % i for i in range(len(sick))}


@pytest.mark.parametrize("value", ["nan", "-nan", "NaN", "inf", "-inf", "-1", "0", "1e400"])
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_timeout_that_makes_no_sense_is_refused_at_the_door(value, how):
    env = dict(os.environ)
    args = [sys.executable, "-m", "envdoctor", "diagnose", "--snapshot",
            os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json")]
    if how == "option":
        args += ["--timeout", value]
    else:
        env["ENVDOCTOR_TIMEOUT"] = value
    r = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=60, env=env)
    assert r.returncode == 2 and "--timeout" in r.stderr, (r.returncode, r.stderr)
    assert value.lstrip("-").lower()[:3] in r.stderr.lower() or value in ("0", "-1", "1e400"), r.stderr
    assert "Traceback" not in r.stderr


def test_an_unseen_gpu_node_says_so_in_the_first_line(tmp_path):
    v = next(v for v in VARIANTS if v.name == "8xh100/nvml-timed_out")
    path = tmp_path / "node.json"
    path.write_text(json.dumps(v.doc), encoding="utf-8")
    for fmt in ("text", "markdown"):
        r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--snapshot", str(path), "--format", fmt],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert r.returncode == 1
        first = r.stdout.splitlines()[0]
        assert "NOT VERIFIED" in first and "driver/GPU state" in first, first
    # A probe that crashed on a node with an NVIDIA device: the same.
    from envdoctor.checks import CheckContext
    from envdoctor.checks.gpu_verdict import gpu_unverified
    from envdoctor.facts import Facts, ok
    from envdoctor.probes import ProbeResult

    facts = Facts([ok("gpu.pci_devices", [{"bus_id": "0000:18:00.0", "driver": "nvidia"}], "dir:/sys/bus/pci/devices")])
    found = list(gpu_unverified(CheckContext(facts, [ProbeResult("driver", "NVIDIA driver", status="timed_out",
                                                                  error="did not finish")])))
    assert [(f.code, f.severity) for f in found] == [("gpu.unverified", "error")]
    assert "0000:18:00.0" in found[0].detail and "did not finish in time" in found[0].title


def test_an_unreadable_pci_bus_is_unknown_never_no_gpu():
    with open(os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    assert "gpu.none" in {f.code for f in _report(doc).findings}  # readable bus, nothing on it: fine
    doc["dirs"]["/sys/bus/pci/devices"] = {"error": "EACCES", "message": "Permission denied"}
    report = _report(doc)
    codes = {f.code: f for f in report.findings}
    assert "gpu.none" not in codes
    assert codes["gpu.presence_unknown"].severity == "warning"
    facts = report.facts
    assert facts.get("driver.nvidia_pci_gpus").status == "unknown"
    assert "unknown" in facts.get("driver.installed").reason


def test_fleet_flags_newer_reports_and_never_drops_an_unknown_severity(tmp_path):
    with open(os.path.join(ROOT, "tests", "live", "h100-ubuntu2404-container", "live-diagnose.json"),
              encoding="utf-8") as fh:
        report = json.load(fh)
    newer = dict(report, schema_version=99)
    odd = dict(report, findings=list(report["findings"]) + [
        {"code": "gpu.future_check", "severity": "critical", "components": ["gpu"], "title": "GPU on fire"}])
    for name, doc in (("newer", newer), ("odd", odd), ("plain", report)):
        (tmp_path / ("%s.json" % name)).write_text(json.dumps(doc), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "envdoctor", "fleet", str(tmp_path), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    doc = json.loads(r.stdout)
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes["odd"]["summary"]["error"] == nodes["plain"]["summary"]["error"] + 1  # kept, judged an error
    assert nodes["newer"]["summary"]["warning"] == nodes["plain"]["summary"]["warning"] + 1
    codes = {f["code"]: f for f in doc["findings"]}
    assert codes["envdoctor.newer_schema"]["nodes"] == ["newer"]
    assert codes["gpu.future_check"]["nodes"] == ["odd"] and r.returncode == 1

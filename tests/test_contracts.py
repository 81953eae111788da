"""The public contracts a user or a fleet relies on (docs/DESIGN.md): schemas, replay, privacy,
no framework import, no network, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMAS = os.path.join(ROOT, "envdoctor", "schemas")


def _schema(name):
    with open(os.path.join(SCHEMAS, name)) as fh:
        return json.load(fh)


def _facts_and_findings(report):
    doc = report.to_dict()
    return ([(p["name"], p["status"], p["facts"]) for p in doc["probes"]], doc["findings"], doc["summary"])


def _run_cli(args, env=None, timeout=60, cwd=None):
    return subprocess.run([sys.executable, "-m", "envdoctor"] + args, capture_output=True, text=True,
                          timeout=timeout, env=env or dict(os.environ), cwd=cwd)


@pytest.fixture(scope="module")
def live_capture():
    """One live run on this machine, plus the snapshot document of exactly what it read."""
    host = LiveHost(timeout=20)
    scrubber = Scrubber.for_environ(host.environ(), host.nodename())
    report = diagnose(host, scrubber=scrubber)
    doc = document_from_host(host, scrubber, "test")
    return report, doc


def test_report_matches_its_json_schema(live_capture):
    report, _ = live_capture
    jsonschema.validate(report.to_dict(), _schema("report.schema.json"))


def test_snapshot_matches_its_json_schema(live_capture):
    _, doc = live_capture
    jsonschema.validate(doc, _schema("snapshot.schema.json"))


def test_replaying_the_snapshot_gives_the_same_report(live_capture):
    report, doc = live_capture
    replay = diagnose(SnapshotHost(json.loads(json.dumps(doc)), "replay"))
    assert _facts_and_findings(replay) == _facts_and_findings(report)


def test_captured_machines_validate_against_the_schema():
    schema = _schema("snapshot.schema.json")
    machines = os.path.join(ROOT, "tests", "machines")
    found = 0
    for name in sorted(os.listdir(machines)) if os.path.isdir(machines) else []:
        path = os.path.join(machines, name, "snapshot.json")
        if os.path.isfile(path):
            with open(path) as fh:
                jsonschema.validate(json.load(fh), schema)
            found += 1
    if not found:
        pytest.skip("no captured machines yet")


def test_live_report_and_snapshot_hide_host_identity(tmp_path):
    env = dict(os.environ)
    home = env.get("HOME", "")
    node = os.uname().nodename
    out = _run_cli(["diagnose", "--format", "json"], env=env)
    snap = tmp_path / "s.json"
    r = _run_cli(["snapshot", "-o", str(snap)], env=env)
    assert r.returncode == 0, r.stderr
    for text in (out.stdout, snap.read_text()):
        if home and home != "/":
            assert home + "/" not in text and '"%s"' % home not in text
        if len(node) >= 3 and node != "localhost":
            assert node not in text
    # --include-host keeps them (the interpreter's paths live under HOME on these machines).
    r = _run_cli(["snapshot", "-o", str(snap), "--include-host"], env=env)
    assert r.returncode == 0, r.stderr
    if home and home != "/":
        assert home in snap.read_text()


def test_secrets_never_reach_a_snapshot(tmp_path):
    env = dict(os.environ, HF_TOKEN="hf_supersecretvalue123", MY_DB_PASSWORD="hunter2hunter2",
               NVIDIA_API_KEY="nvsecretvalue4455")
    snap = tmp_path / "s.json"
    r = _run_cli(["snapshot", "-o", str(snap), "--include-host"], env=env)
    assert r.returncode == 0, r.stderr
    text = snap.read_text()
    assert "hf_supersecretvalue123" not in text and "hunter2hunter2" not in text and "nvsecretvalue4455" not in text
    assert json.loads(text)["environ"]["NVIDIA_API_KEY"] == "<redacted>"
    doc = json.loads(text)  # no probe reads them: their names only; a secret in a recorded variable: <redacted>
    assert {"HF_TOKEN", "MY_DB_PASSWORD"} <= set(doc["environ_names"]) and "HF_TOKEN" not in doc["environ"]


def _fake_frameworks(tmp_path):
    """Importable torch/tensorflow/jax stand-ins that leave a mark if anything imports them."""
    site = tmp_path / "site"
    marker = tmp_path / "imported"
    for name, version in (("torch", "2.4.0+cu121"), ("tensorflow", "2.15.0"), ("jax", "0.4.30"),
                          ("requests", "2.32.3")):
        pkg = site / name
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("open(%r, 'a').write(%r)\n" % (str(marker), name + "\n"))
        dist = site / ("%s-%s.dist-info" % (name, version))
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    return site, marker


def test_diagnose_imports_no_framework_and_not_requests(tmp_path):
    site, marker = _fake_frameworks(tmp_path)
    script = textwrap.dedent("""
        import sys, json
        sys.path.insert(0, %r)
        from envdoctor.launcher import main  # the console script's path
        try:
            main(["diagnose", "--format", "json"])
        except SystemExit:
            pass
        bad = sorted(m for m in sys.modules if m.split(".")[0] in
                     ("torch", "tensorflow", "jax", "jaxlib", "requests", "urllib3", "cupy", "onnxruntime", "paddle"))
        sys.stderr.write("IMPORTED=" + json.dumps(bad) + "\\n")
    """) % str(site)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "IMPORTED=[]" in r.stderr, r.stderr[-2000:]
    assert not marker.exists(), marker.read_text()
    # ...and yet the stand-ins were seen as installed distributions (the test could fail):
    assert "tensorflow" in r.stdout or "torch" in r.stdout


def test_diagnose_makes_no_network_connection(tmp_path):
    """Air-gapped nodes: with every socket call refused, the report is unchanged."""
    script = textwrap.dedent("""
        import os, socket, sys
        attempts = []
        def deny(*a, **k):
            attempts.append(repr(a)[:100])
            with open(os.environ["ATTEMPT_LOG"], "a") as log:  # seen from any process, the worker's too
                log.write(repr(a)[:100] + "\\n")
            raise OSError("network blocked by test")
        if os.environ.get("BLOCK") == "1":
            socket.socket.connect = deny
            socket.socket.connect_ex = deny
            socket.create_connection = deny
            socket.getaddrinfo = deny
        from envdoctor.launcher import main  # patched before anything (the NVML child included) is forked
        try:
            main(["diagnose", "--format", "json"])
        except SystemExit:
            pass
        sys.stderr.write("ATTEMPTS=%d\\n" % len(attempts))
    """)
    log = tmp_path / "attempts.log"
    blocked = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, BLOCK="1", ATTEMPT_LOG=str(log)))
    assert "ATTEMPTS=0" in blocked.stderr, blocked.stderr[-2000:]
    assert not log.exists(), log.read_text()
    free = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, BLOCK="0", ATTEMPT_LOG=str(log)))
    a, b = json.loads(blocked.stdout), json.loads(free.stdout)
    assert [p["facts"] for p in a["probes"]] == [p["facts"] for p in b["probes"]]
    assert a["findings"] == b["findings"]
    cmd = [sys.executable, "-m", "envdoctor", "diagnose", "--format", "json"]
    if shutil.which("unshare") and os.geteuid() == 0:
        # A real network namespace with no interfaces, when the machine allows it.
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
        if probe.returncode == 0:
            netless = subprocess.run(["unshare", "-n"] + cmd, capture_output=True, text=True, timeout=60)
            assert netless.returncode in (0, 1), netless.stderr
            free = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            a, b = json.loads(netless.stdout), json.loads(free.stdout)
            assert [p["facts"] for p in a["probes"] if p["name"] != "gpu"] == \
                   [p["facts"] for p in b["probes"] if p["name"] != "gpu"]


def test_exit_code_is_1_when_errors_are_found(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import envdoctor.checks as checks
    from envdoctor.checks import meta  # noqa: F401 - registers the built-in checks
    from envdoctor.cli import cli
    from envdoctor.findings import Finding

    def always_error(ctx):
        yield Finding(code="test.always", severity="error", components=["driver"], title="test error")

    monkeypatch.setitem(checks._REGISTRY, "test-always", checks.CheckSpec("test-always", always_error, ()))
    snap = os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json")  # no errors of its own
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", snap, "--format", "json"])
    assert r.exit_code == 1
    assert json.loads(r.output)["summary"]["error"] == 1
    monkeypatch.delitem(checks._REGISTRY, "test-always")
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", snap, "--format", "json"])
    assert r.exit_code == 0


def test_newer_snapshot_schema_is_refused_clearly(tmp_path):
    snap = tmp_path / "s.json"
    snap.write_text(json.dumps({"schema_version": 99}))
    r = _run_cli(["diagnose", "--snapshot", str(snap)])
    assert r.returncode == 2 and "upgrade envdoctor" in r.stderr and "Traceback" not in r.stderr


def _hung_programs_first_on_path(tmp_path, names, body):
    """An environment whose PATH starts with a directory of shell scripts ``names`` running ``body``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in names:
        prog = bindir / name
        prog.write_text("#!/bin/sh\n%s\n" % body)
        prog.chmod(0o755)
    return dict(os.environ, PATH=str(bindir) + ":" + os.environ.get("PATH", ""))


def test_hung_programs_end_as_timed_out_facts_within_the_time_limit(tmp_path):
    """nvcc, nvidia-smi and docker that never answer (and spawn a child holding the pipe) cost one
    timed-out fact each; diagnose still ends within --timeout plus about a second."""
    import time

    env = _hung_programs_first_on_path(tmp_path, ("nvcc", "nvidia-smi", "docker"), "sleep 60 &\nsleep 60")
    start = time.monotonic()
    r = _run_cli(["diagnose", "--format", "json", "--timeout", "2"], env=env, timeout=30)
    elapsed = time.monotonic() - start
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    facts = {f["key"]: f for p in doc["probes"] for f in p["facts"]}
    assert facts["cuda.nvcc"]["status"] == "timed_out"
    assert facts["container.docker"]["status"] == "timed_out" or \
        (facts["container.docker"]["value"] or {}).get("error") == "timed_out"
    # Interpreter start-up and the probes' own work come on top of the 2 s limit.
    assert elapsed < 2 + 2.5, elapsed


def test_planning_does_not_wait_for_programs_it_does_not_need(tmp_path):
    """`install --dry-run` and `advise` read the driver, GPUs, OS and interpreter only: a hung docker
    (found by the peer comparison: 10 s per dry-run) is never asked, and --list names this machine."""
    import time

    env = _hung_programs_first_on_path(tmp_path, ("docker", "podman", "gcc"), "sleep 60")
    for args in (["install", "cuda", "--version", "12.4", "--os", "ubuntu22.04", "--dry-run"],
                 ["install", "pytorch", "--version", "2.4", "--dry-run"], ["advise"]):
        start = time.monotonic()
        r = _run_cli(args, env=env, timeout=60)
        assert r.returncode == 0, (args, r.stderr)
        assert time.monotonic() - start < 5, args
    r = _run_cli(["install", "--list", "--os", "rhel9"])
    assert r.returncode == 0 and "default on rhel9" in r.stdout


def test_a_plan_for_another_machine_names_that_machines_interpreter():
    """Found by the second audit: `install --snapshot` checked the snapshot's Python but wrote this machine's
    venv path into the script; `--os` did the same."""
    snap = os.path.join(ROOT, "tests", "machines", "conda-ubuntu2204-h100", "snapshot.json")
    r = _run_cli(["install", "pytorch", "--dry-run", "--snapshot", snap])
    assert r.returncode == 0, r.stderr
    assert "\n/opt/conda/envs/feral/bin/python -m pip install" in r.stdout and sys.executable not in r.stdout
    r = _run_cli(["install", "pytorch", "--dry-run", "--os", "ubuntu22.04"])
    # issue 14: never pip into the system Python (PEP 668 refuses it on Debian 12 / Ubuntu 24.04): a venv
    assert "\n  /usr/bin/python3 -m venv " in r.stdout and "/envdoctor/venvs/pytorch/bin/python -m pip install" \
        in r.stdout and sys.executable not in r.stdout
    r = _run_cli(["install", "pytorch", "--dry-run", "--os", "ubuntu22.04", "--python", "/opt/v/bin/python"])
    assert "\n/opt/v/bin/python -m pip install" in r.stdout  # an explicit --python still wins

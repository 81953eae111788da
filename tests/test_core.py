"""The seam, the runner and the CLI skeleton: behaviour a user notices."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from envdoctor.cli import cli
from envdoctor.host.base import parse_dist_dir
from envdoctor.host.live import LiveHost, run_command
from envdoctor.host.privacy import Scrubber, redact_environ
from envdoctor.probes import ProbeSpec, _Runner, run_probes

from .conftest import make_host


def test_version_and_help():
    r = CliRunner().invoke(cli, ["--version"])
    assert r.exit_code == 0 and r.output.startswith("envdoctor ")
    for cmd in ([], ["diagnose"], ["snapshot"]):
        r = CliRunner().invoke(cli, cmd + ["--help"])
        assert r.exit_code == 0
        assert "Exit codes" in r.output and "Examples" in r.output


def test_command_timeout_kills_the_whole_group(tmp_path):
    # A child that forks a grandchild holding the pipes: the timeout must still return promptly.
    script = "import os,time\nif os.fork()==0:\n    time.sleep(60)\ntime.sleep(60)\n"
    res = run_command([sys.executable, "-c", script], timeout=0.5)
    assert res.timed_out and res.duration < 3


def test_command_not_installed_is_a_result_not_an_exception():
    res = run_command(["envdoctor-no-such-command-xyz"], timeout=2)
    assert res.not_found and "not installed" in res.describe_failure()


def test_command_runs_in_c_locale():
    res = run_command([sys.executable, "-c", "import os;print(os.environ['LC_ALL'])"], timeout=10)
    assert res.stdout.strip() == "C"


def test_deadline_spent_means_commands_are_not_started():
    host = LiveHost(timeout=5, deadline=0.0)
    res = host.run([sys.executable, "-c", "print(1)"])
    assert res.error == "deadline"


def test_parse_dist_dir():
    assert parse_dist_dir("torch-2.4.0+cu121.dist-info") == ("torch", "2.4.0+cu121")
    assert parse_dist_dir("nvidia_cudnn_cu12-9.1.0.70.dist-info") == ("nvidia_cudnn_cu12", "9.1.0.70")
    assert parse_dist_dir("mxnet-1.9.1-py3.8.egg-info") == ("mxnet", "1.9.1")
    assert parse_dist_dir("README") is None


def test_secrets_are_redacted_and_proxy_passwords_hidden():
    env = redact_environ({"HF_TOKEN": "hf_abc", "AWS_SECRET_ACCESS_KEY": "x", "MY_API_KEY": "y",
                          "https_proxy": "http://bob:hunter2@proxy:3128", "CUDA_HOME": "/usr/local/cuda"})
    assert env["HF_TOKEN"] == env["AWS_SECRET_ACCESS_KEY"] == env["MY_API_KEY"] == "<redacted>"
    assert "hunter2" not in env["https_proxy"] and "bob" not in env["https_proxy"]
    assert env["CUDA_HOME"] == "/usr/local/cuda"


def test_scrubber_hides_home_user_host_and_gpu_ids():
    s = Scrubber(home="/home/alice", user="alice", hostname="gpu-node-17", redact_ids=True)
    out = s({"p": "/home/alice/.conda/envs/x", "h": "gpu-node-17 up", "u": "GPU-12345678-1234-1234-1234-123456789abc",
             "other": "/home/alicex/y"})
    assert out["p"] == "~/.conda/envs/x" and out["h"] == "<hostname> up"
    assert out["u"] == "GPU-redacted-0"
    assert out["other"] == "/home/alicex/y"  # only whole path components are replaced
    assert Scrubber(home="/home/alice", include_host=True)("/home/alice/x") == "/home/alice/x"


def test_crashing_probe_is_contained():
    def boom(ctx):
        raise ValueError("garbled")

    host = make_host()
    runner = _Runner(host, [ProbeSpec("boom", "Boom", boom, 1)], None)
    runner.run_one(runner.specs["boom"])
    res = runner.results["boom"]
    assert res.status == "crashed" and "ValueError: garbled" in res.error


def test_hung_probe_becomes_timed_out(monkeypatch):
    import time as _t

    import envdoctor.probes as probes

    def hang(ctx):
        _t.sleep(30)
        return []

    monkeypatch.setattr(probes, "probes_in", lambda modules: [ProbeSpec("hang", "Hang", hang, 1)])
    start = _t.monotonic()
    out = run_probes(make_host(), deadline=_t.monotonic() + 0.3)
    assert out[0].status == "timed_out" and _t.monotonic() - start < 2


def test_diagnose_runs_on_this_machine_as_json():
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["probes"]


def test_bad_snapshot_exits_2_with_a_message(tmp_path):
    bad = tmp_path / "snap.json"
    bad.write_text('{"schema_version": 1, "files": {"/etc/os-release": {"te')
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(bad)])
    assert r.exit_code == 2
    assert "not valid JSON" in r.output and "Traceback" not in r.output
    missing = CliRunner().invoke(cli, ["diagnose", "--snapshot", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "cannot read snapshot" in missing.output


def test_elf_dynamic_section_of_a_real_library_and_replay():
    import glob

    from envdoctor.host.privacy import Scrubber
    from envdoctor.host.snapshot import SnapshotHost, document_from_host

    libc = next(iter(sorted(glob.glob("/lib/*/libc.so.6") + glob.glob("/lib64/libc.so.6"))), None)
    if libc is None:
        import pytest

        pytest.skip("no libc.so.6 found")
    host = LiveHost(timeout=5)
    res = host.elf(libc)
    assert res.ok and res.soname == "libc.so.6"
    bad = host.elf("/proc/cpuinfo")
    assert bad.error == "not_elf"
    assert host.elf("/no/such/lib.so").error == "ENOENT"
    doc = document_from_host(host, Scrubber(include_host=True), "test")
    replay = SnapshotHost(doc)
    assert replay.elf(libc) == res and replay.elf("/proc/cpuinfo").error == "not_elf"


def test_truncated_elf_is_an_error_not_a_crash(tmp_path):
    import glob

    src = next(iter(sorted(glob.glob("/lib/*/libc.so.6") + glob.glob("/lib64/libc.so.6"))), None)
    if src is None:
        import pytest

        pytest.skip("no libc.so.6 found")
    cut = tmp_path / "libcut.so"
    cut.write_bytes(open(src, "rb").read(100))
    res = LiveHost(timeout=5).elf(str(cut))
    assert res.error == "bad_elf" and "truncated" in res.message


def test_a_command_that_floods_its_output_is_stopped_not_read_to_the_end(tmp_path):
    """`ldconfig` or `gcc` gone mad (or a hostile wrapper on PATH) printing gigabytes: envdoctor keeps
    at most MAX_OUTPUT_BYTES of it and says why, instead of holding all of it in memory."""
    import time

    from envdoctor.host.live import MAX_OUTPUT_BYTES, run_command

    for stream in ("", ">&2"):
        start = time.monotonic()
        res = run_command(["sh", "-c", "yes 0123456789abcdef %s" % stream], timeout=20)
        assert time.monotonic() - start < 10
        assert res.error == "output_too_large" and not res.ok
        assert "printed more than" in res.describe_failure()
        assert max(len(res.stdout), len(res.stderr)) == MAX_OUTPUT_BYTES
    small = run_command(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=5)
    assert (small.stdout, small.stderr, small.returncode, small.error) == ("out\n", "err\n", 3, None)

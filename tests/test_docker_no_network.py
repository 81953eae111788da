"""End to end through the live host seam: with docker pointed at another machine, `envdoctor diagnose`
and `envdoctor snapshot` run docker only as a client, never asking the daemon (README "No network").

The stand-in docker logs its arguments and answers like Docker CLI 28.2.2 (`--version`) or like a
client that cannot reach its daemon (anything else)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

FAKE_DOCKER = """#!/bin/sh
echo "$@" >> "$DOCKER_ARGV_LOG"
case "$*" in
  *--version*) echo "Docker version 28.2.2, build e6534b4" ;;
  *) echo "Cannot connect to the Docker daemon at tcp://192.0.2.1:2375. Is the docker daemon running?" >&2
     exit 1 ;;
esac
"""


def _env(tmp_path, **extra):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    prog = bindir / "docker"
    prog.write_text(FAKE_DOCKER)
    prog.chmod(0o755)
    env = dict(os.environ, PATH=str(bindir) + ":" + os.environ.get("PATH", ""), HOME=str(tmp_path / "home"),
               DOCKER_ARGV_LOG=str(tmp_path / "argv.log"))
    for name in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "CONTAINER_HOST", "CONTAINER_CONNECTION"):
        env.pop(name, None)
    env.update(extra)
    return env


def _cli(args, env):
    return subprocess.run([sys.executable, "-m", "envdoctor"] + args, capture_output=True, text=True, timeout=60,
                          env=env)


def _docker_fact(report_json):
    return next(f for p in json.loads(report_json)["probes"] for f in p["facts"] if f["key"] == "container.docker")


def test_diagnose_and_snapshot_never_ask_a_remote_daemon(tmp_path):
    env = _env(tmp_path, DOCKER_HOST="tcp://192.0.2.1:2375")
    r = _cli(["diagnose", "--format", "json"], env)
    assert r.returncode in (0, 1), r.stderr
    fact = _docker_fact(r.stdout)["value"]
    # the remote daemon's address is the site's network: hidden like the host's names (not --include-host)
    assert (fact["client"], fact["error"], fact["endpoint"]) == ("28.2.2", "not_contacted", "tcp://<address>:2375")
    snap = tmp_path / "s.json"
    r = _cli(["snapshot", "-o", str(snap)], env)
    assert r.returncode == 0, r.stderr
    # Both runs ran docker once each, as a client only.
    assert (tmp_path / "argv.log").read_text().splitlines() == ["--host unix:///dev/null --version"] * 2
    recorded = [c["argv"] for c in json.loads(snap.read_text())["commands"] if c["argv"][0] == "docker"]
    assert recorded == [["docker", "--host", "unix:///dev/null", "--version"]]
    replay = _cli(["diagnose", "--snapshot", str(snap), "--format", "json"], env)
    assert _docker_fact(replay.stdout)["value"] == fact


def test_default_docker_is_asked_as_before(tmp_path):
    r = _cli(["diagnose", "--format", "json"], _env(tmp_path))
    assert r.returncode in (0, 1), r.stderr
    assert (tmp_path / "argv.log").read_text().splitlines() == ["version --format {{json .}}"]
    assert _docker_fact(r.stdout)["value"]["error"] == "daemon_not_running"

"""Offline, a redist install says in one sentence what it could not reach and what to do.

issue 20: `install cuda --version 12.4.1 --method redist --prefix X --yes` without a network printed urllib3's
own text ("HTTPSConnectionPool(host=...): Max retries exceeded ... (Caused by NameResolutionError(...") cut
mid-quote. The network is taken away for real here: a proxy variable naming a loopback port nobody listens on
(requests honours HTTPS_PROXY), a mirror on such a port, a mirror whose name cannot resolve (.invalid, RFC 2606).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RAW = ("HTTPSConnectionPool", "HTTPConnectionPool", "Max retries", "urllib3", "NameResolutionError",
       "NewConnectionError", "Errno", "Caused by", "object at 0x")


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _install(tmp_path, *extra, **env):
    environ = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "envdoctor", "install", "cuda", "--version", "12.4.1", "--method",
                           "redist", "--prefix", str(tmp_path / "cuda-12.4"), "--yes", "--retries", "0"]
                          + list(extra), cwd=ROOT, capture_output=True, text=True, env=environ, timeout=120)


def _one_sentence(r):
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("envdoctor: cannot reach "), r.stderr
    assert not [w for w in RAW if w in r.stderr], r.stderr
    return lines[0]


def test_no_network_names_the_host_and_the_mirror_option(tmp_path):
    port = _closed_port()
    line = _one_sentence(_install(tmp_path, HTTPS_PROXY="http://127.0.0.1:%d" % port,
                                  https_proxy="http://127.0.0.1:%d" % port, NO_PROXY=""))
    assert "developer.download.nvidia.com" in line and "proxy" in line
    assert "--mirror URL" in line and "ENVDOCTOR_MIRROR" in line and "network" in line
    assert not (tmp_path / "cuda-12.4").exists() and os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("mirror, why", [("http://127.0.0.1:{port}/redist", "127.0.0.1 refused the connection"),
                                         ("http://nvidia-mirror.invalid/redist", "does not resolve")])
def test_an_unreachable_mirror_says_so(tmp_path, mirror, why):
    line = _one_sentence(_install(tmp_path, "--mirror", mirror.format(port=_closed_port())))
    assert "the mirror" in line and why in line and "check the --mirror URL" in line

"""Shared by the tests that run real engines (NHC, Slurm, Prometheus, Ansible): the inputs they replay.

A *broken* node is the captured 8x H100 CentOS Stream 9 server (driver 535.154.05); a *healthy* node
is the real H100 capture in tests/live (driver 580.159.04).  The policy asks for what the healthy one
has and the broken one lacks: a driver of at least 550.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HEALTHY = os.path.join(HERE, "live", "h100-ubuntu2404-container", "snapshot.json.gz")
BROKEN = os.path.join(HERE, "machines", "centosstream9-8xh100", "snapshot.json")
POLICY = """\
schema_version = 1
[require]
"driver.version" = ">=550"
"gpu.*.compute_capability" = ">=8.0"
[findings]
fail_on = "error"
ignore = ["cudnn.shadowed", "framework.cpu_only_build"]
"""
BROKEN_LINE = "driver.version: 535.154.05, want >=550"
NHC_TARBALL = os.path.join(HERE, "third_party", "lbnl-nhc-1.4.3.tar.gz")
#: tests/third_party/README.md: the tarball's origin (github.com/mej/nhc, tag 1.4.3) and this digest
NHC_SHA256 = "f08c53c990936823db96b36fe56f61bd183eb101914204fb2c1a3b35f53da783"


def envdoctor_argv() -> List[str]:
    """The command that runs this checkout's envdoctor, from any directory."""
    return [sys.executable, "-m", "envdoctor"]


def envdoctor_env() -> dict:
    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def write_policy(directory: str, text: str = POLICY) -> str:
    path = os.path.join(directory, "policy.toml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def nhc_tarball() -> str:
    """The NHC 1.4.3 tarball, checked against its recorded digest ("" when missing or not that file)."""
    import hashlib

    for cand in (os.environ.get("ENVDOCTOR_NHC_TARBALL", ""), NHC_TARBALL):
        if cand and os.path.isfile(cand):
            with open(cand, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() == NHC_SHA256:
                    return cand
    return ""


def unpack_nhc(dest: str) -> str:
    """NHC 1.4.3 unpacked into ``dest``; returns its directory (with ``nhc``, ``scripts/``, ``helpers/``)."""
    with tarfile.open(nhc_tarball()) as tar:
        for member in tar.getmembers():
            if member.name.startswith("/") or ".." in member.name.split("/"):
                raise RuntimeError("unsafe path in the NHC tarball: %s" % member.name)
        tar.extractall(dest)  # noqa: S202 - checked above; our own pinned tarball
    (top,) = [n for n in os.listdir(dest) if n.startswith("lbnl-nhc")]
    return os.path.join(dest, top)


def which(*names: str) -> List[str]:
    """The names that are not on PATH (nor in /usr/sbin, where Debian puts the daemons)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
    return [n for n in names if shutil.which(n, path=path) is None]

"""A Debian 12 root made by ``debootstrap`` once per test run, copied for each test that runs plans in a chroot.

The apt and the dnf executed-plan tests (tests/test_install_apt_chroot.py, tests/test_install_dnf_chroot.py)
both need one; debootstrapping twice would cost CI a minute or two per run.  The root is minbase plus what the
plans need to run: curl and ca-certificates (the apt plan's keyring fetch) and Debian's dnf, rpm and
dnf-plugins-core (the RHEL plans' package manager and its config-manager).  Made from the distribution mirror,
then cut off from it (its sources.list removed): from there on only the tests' loopback repositories serve it.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Optional, Tuple

import pytest

MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
INCLUDE = ("curl", "ca-certificates", "dnf", "rpm", "dnf-plugins-core")

_base: Dict[str, str] = {}  # "root": the pristine root, or "skip": why it could not be made


def why_not() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root (debootstrap and chroot)"
    missing = [t for t in ("debootstrap", "chroot") if shutil.which(t) is None]
    if missing:
        return "needs " + ", ".join(missing) + " (apt-get install debootstrap)"
    return None


def _make_base() -> str:
    if "skip" in _base:
        pytest.skip(_base["skip"])
    if "root" in _base:
        return _base["root"]
    why = why_not()
    if why:
        pytest.skip(why)
    top = tempfile.mkdtemp(prefix="envdoctor-debian12-")
    atexit.register(shutil.rmtree, top, True)
    root = os.path.join(top, "root")
    try:
        r = subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(INCLUDE), SUITE, root, MIRROR],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1500)
    except subprocess.TimeoutExpired:
        _base["skip"] = f"debootstrap from {MIRROR} took longer than 25 minutes"
        pytest.skip(_base["skip"])
    if r.returncode != 0:
        last = [ln for ln in r.stdout.splitlines() if ln.strip()][-1:] or ["no output"]
        _base["skip"] = f"debootstrap could not make a Debian 12 root from {MIRROR}: {last[0]}"
        pytest.skip(_base["skip"])
    os.remove(os.path.join(root, "etc", "apt", "sources.list"))  # from here on, only the tests' repositories
    _base["root"] = root
    return root


def fresh_root(dest: str) -> str:
    """A copy of the Debian 12 root at ``dest`` (skips the test with the reason when none can be made)."""
    base = _make_base()
    subprocess.run(["cp", "-a", "--", base, dest], check=True, timeout=600)
    return dest


class Loopback:
    """``directory`` served over HTTP on 127.0.0.1 (a thread; ``close()`` stops it), with a throw-away GPG key
    in a home of its own (``gpg(...)``) for signing what it serves."""

    def __init__(self, directory: str, gnupg: str) -> None:
        handler = functools.partial(_Quiet, directory=directory)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.gnupg = gnupg
        os.makedirs(gnupg, mode=0o700)

    def gpg(self, *args: str) -> bytes:
        return subprocess.run(["gpg", "--batch", "--homedir", self.gnupg, *args], check=True,
                              capture_output=True, timeout=120).stdout

    def make_key(self) -> None:
        self.gpg("--passphrase", "", "--quick-gen-key", "envdoctor throw-away <tests@example.invalid>", "rsa2048",
                 "sign", "never")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def write_tree(root: str, files: Dict[str, Tuple[bytes, int]]) -> None:
    """Each ``path: (content, mode)`` of a package's files written below ``root``."""
    for path, (data, mode) in files.items():
        dest = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data)
        os.chmod(dest, mode)


CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"  # absolute: the chroot's PATH is not ours
#: The environment of everything run in (or on) the root: HOME=/root also fixes where Debian's rpm keeps its
#: database ($HOME/.rpmdb).
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C",
       "DEBIAN_FRONTEND": "noninteractive", "HOME": "/root"}


def run_script(root: str, script: str, name: str) -> subprocess.CompletedProcess[str]:
    """``script`` (a plan as ``--dry-run`` prints it) run with bash inside the chroot at ``root``."""
    with open(os.path.join(root, "tmp", name), "w") as f:
        f.write(script)
    return subprocess.run([CHROOT, root, "/bin/bash", f"/tmp/{name}"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=ENV, timeout=900)

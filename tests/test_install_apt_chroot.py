"""Issue 14, part 3: an apt repo plan executed for real, in a Debian 12 chroot, against a loopback repository.

The chroot is a copy of the Debian 12 root tests/debian_root.py makes once per run with ``debootstrap`` from the
distribution mirror (minbase plus curl and ca-certificates: what the plan's keyring fetch needs), cut off from
the mirror (its sources.list removed).  The repository is built here with ``dpkg-deb`` and ``apt-ftparchive`` in the
layout of NVIDIA's (``<mirror>/debian12/x86_64/``, a flat repository, ``InRelease`` signed), signed with a
throw-away key, and holds packages with NVIDIA's names and dependency shape:

* ``cuda-keyring_1.1-1_all.deb``: the key as ``/usr/share/keyrings/cuda-archive-keyring.gpg`` and
  ``/etc/apt/sources.list.d/cuda-debian12-x86_64.list`` with ``signed-by`` (what NVIDIA's keyring package holds);
* ``cuda-toolkit-12-4`` 12.4.1-1 and 12.4.99-1 (so the plan's pin ``=12.4.1-1`` must choose), depending on
  ``cuda-nvcc-12-4`` and ``cuda-cudart-12-4`` (files under /usr/local/cuda-12.4);
* ``cudnn9-cuda-12`` depending on ``libcudnn9-cuda-12`` (= its version).

The plans (``envdoctor install cuda --version 12.4.1 --mirror ...`` and ``cudnn --version 9``) are rendered as
the scripts ``--dry-run`` prints and run with bash inside the chroot.  Needs root (chroot, debootstrap) and
the mirror; skipped with the reason otherwise.  CI runs as root (.ci/run installs debootstrap and apt-utils).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from typing import Dict, List, Tuple

import pytest

from envdoctor.facts import Facts
from envdoctor.install.plan import render_sh
from envdoctor.recipes import Request, load_recipe, parse_target

from . import debian_root

CHROOT = debian_root.CHROOT
TOOLS = ("dpkg-deb", "apt-ftparchive", "gpg")

# chroot: a Debian root made with debootstrap (once per process, so these run on one xdist worker together)
pytestmark = [pytest.mark.slow, pytest.mark.chroot, pytest.mark.xdist_group("debian-root")]


@pytest.fixture(scope="module")
def debian12(tmp_path_factory):
    why = debian_root.why_not()
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if why is None and missing:
        why = "needs " + ", ".join(missing) + " (apt-get install apt-utils)"
    if why:
        pytest.skip(why)
    root = debian_root.fresh_root(str(tmp_path_factory.mktemp("chroot") / "debian12"))
    yield pathlib.Path(root)
    shutil.rmtree(root, ignore_errors=True)


def _deb(out: str, work: str, name: str, version: str, depends: str, files: Dict[str, Tuple[bytes, int]],
         arch: str = "amd64") -> str:
    pkg = os.path.join(work, f"{name}_{version}")
    os.makedirs(os.path.join(pkg, "DEBIAN"))
    control = (f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: envdoctor tests "
               f"<tests@example.invalid>\n" + (f"Depends: {depends}\n" if depends else "")
               + f"Description: stand-in for NVIDIA's {name}\n")
    with open(os.path.join(pkg, "DEBIAN", "control"), "w") as f:
        f.write(control)
    debian_root.write_tree(pkg, files)
    deb = os.path.join(out, f"{name}_{version}_{arch}.deb")
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", pkg, deb], check=True, capture_output=True,
                   timeout=120)
    return deb


class Repo:
    """NVIDIA's repository layout below ``<url>/compute/cuda/repos``, served on 127.0.0.1, signed."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.srv = os.path.join(base, "srv")
        self.dir = os.path.join(self.srv, "compute", "cuda", "repos", "debian12", "x86_64")
        os.makedirs(self.dir)
        self.server = debian_root.Loopback(self.srv, os.path.join(base, "gnupg"))
        self.gpg = self.server.gpg
        self.mirror = self.server.url + "/compute/cuda/repos"

    def build(self) -> None:
        self.server.make_key()
        key = self.gpg("--export")  # a binary keyring, the format of cuda-archive-keyring.gpg
        work = os.path.join(self.base, "work")
        sources = (f"deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] {self.mirror}/debian12/x86_64/ /\n")
        _deb(self.dir, work, "cuda-keyring", "1.1-1", "", {
            "/usr/share/keyrings/cuda-archive-keyring.gpg": (key, 0o644),
            "/etc/apt/sources.list.d/cuda-debian12-x86_64.list": (sources.encode(), 0o644)}, arch="all")
        nvcc = b"#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n"
        _deb(self.dir, work, "cuda-nvcc-12-4", "12.4.131-1", "", {"/usr/local/cuda-12.4/bin/nvcc": (nvcc, 0o755)})
        _deb(self.dir, work, "cuda-cudart-12-4", "12.4.127-1", "",
             {"/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127": (b"\x7fELF stand-in\n", 0o644)})
        for v in ("12.4.1-1", "12.4.99-1"):
            _deb(self.dir, work, "cuda-toolkit-12-4", v, "cuda-nvcc-12-4 (>= 12.4.131), cuda-cudart-12-4",
                 {f"/usr/share/doc/cuda-toolkit-12-4/VERSION-{v}": (v.encode(), 0o644)})
        _deb(self.dir, work, "libcudnn9-cuda-12", "9.1.0.70-1", "",
             {"/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0": (b"\x7fELF stand-in\n", 0o644)})
        _deb(self.dir, work, "cudnn9-cuda-12", "9.1.0.70-1", "libcudnn9-cuda-12 (= 9.1.0.70-1)", {})

        def run(*argv: str) -> bytes:
            return subprocess.run(list(argv), cwd=self.dir, check=True, capture_output=True, timeout=120).stdout

        with open(os.path.join(self.dir, "Packages"), "wb") as f:
            f.write(run("apt-ftparchive", "packages", "."))
        release = run("apt-ftparchive", "-o", "APT::FTPArchive::Release::Origin=NVIDIA", "release", ".")
        with open(os.path.join(self.dir, "Release"), "wb") as f:
            f.write(release)
        self.gpg("--yes", "--clearsign", "-o", os.path.join(self.dir, "InRelease"), os.path.join(self.dir, "Release"))

    def close(self) -> None:
        self.server.close()


def _in_chroot(root, script: str, name: str) -> subprocess.CompletedProcess:
    return debian_root.run_script(str(root), script, name)


def _installed(root) -> Dict[str, str]:
    fmt = "${Package} ${Version} ${db:Status-Abbrev}\n"
    r = subprocess.run([CHROOT, str(root), "dpkg-query", "-W", "-f", fmt],
                       capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    out = {}
    for line in r.stdout.splitlines():
        name, version, status = (line.split(" ", 2) + ["", ""])[:3]
        if status.startswith("ii"):
            out[name] = version
    return out


def test_an_apt_repo_plan_runs_in_a_debian12_chroot_and_a_second_run_changes_nothing(debian12, tmp_path):
    repo = Repo(str(tmp_path / "repo"))
    try:
        repo.build()
        debian = parse_target("debian12")
        cuda = load_recipe("cuda").plan(Request("cuda", "12.4.1", None, mirror=repo.mirror), debian, Facts())
        cudnn = load_recipe("cudnn").plan(Request("cudnn", "9", "repo", mirror=repo.mirror), debian, Facts())
        before = _installed(debian12)
        first: List[subprocess.CompletedProcess] = [_in_chroot(debian12, render_sh(cuda), "cuda.sh"),
                                                     _in_chroot(debian12, render_sh(cudnn), "cudnn.sh")]
        for r in first:
            assert r.returncode == 0, r.stdout[-4000:]
        after = _installed(debian12)
        new = {k: v for k, v in after.items() if k not in before}
        assert new == {"cuda-keyring": "1.1-1", "cuda-toolkit-12-4": "12.4.1-1", "cuda-nvcc-12-4": "12.4.131-1",
                       "cuda-cudart-12-4": "12.4.127-1", "cudnn9-cuda-12": "9.1.0.70-1",
                       "libcudnn9-cuda-12": "9.1.0.70-1"}, new  # the pin chose 12.4.1-1 over 12.4.99-1
        assert os.access(str(debian12 / "usr/local/cuda-12.4/bin/nvcc"), os.X_OK)
        # the key is trusted for NVIDIA's repository only: named by signed-by, never in apt's global keyrings
        sources = (debian12 / "etc/apt/sources.list.d/cuda-debian12-x86_64.list").read_text()
        assert sources.startswith("deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] " + repo.mirror)
        trusted = debian12 / "etc/apt/trusted.gpg.d"
        assert not (debian12 / "etc/apt/trusted.gpg").exists()
        assert not any("cuda" in n for n in (os.listdir(str(trusted)) if trusted.is_dir() else []))
        # a second run changes nothing: every install step is skipped or finds nothing to do
        status = (debian12 / "var/lib/dpkg/status").read_bytes()
        again = [_in_chroot(debian12, render_sh(cuda), "cuda.sh"), _in_chroot(debian12, render_sh(cudnn), "cudnn.sh")]
    finally:
        repo.close()
    for r in again:
        assert r.returncode == 0, r.stdout[-4000:]
    assert "skip (already done): install the CUDA 12.4 toolkit" in again[0].stdout
    assert "0 newly installed" in again[1].stdout
    assert (debian12 / "var/lib/dpkg/status").read_bytes() == status
    assert _installed(debian12) == after

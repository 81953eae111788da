"""Issue 14, part 3: RHEL-family repo plans executed for real with dnf, against a loopback RPM repository.

Debian 12 packages dnf 4.14, rpm 4.18 and createrepo_c, so the RHEL plans run here the way the apt plan does in
tests/test_install_apt_chroot.py: rendered as the script ``--dry-run`` prints and run unchanged with bash inside a
chroot (a copy of the Debian 12 root of tests/debian_root.py, which holds Debian's dnf, rpm and dnf-plugins-core).
That root is made into an RHEL 9 installroot first: ``dnf --installroot ROOT --releasever 9 install
redhat-release`` (the host's dnf) puts a stand-in ``redhat-release`` (providing ``system-release(releasever) =
9``, as RHEL's does) into its rpm database, so the dnf inside detects release 9 as on RHEL.  Run inside the
chroot, the plans' own ``dnf`` commands act on that installroot.  Debian's rpm keeps its database under
``$HOME/.rpmdb`` (RHEL: /var/lib/rpm), so every rpm and dnf here runs with HOME=/root.

Two loopback repositories, served on 127.0.0.1:

* "BaseOS" (the test's stand-in for RHEL's own repository, unsigned, configured before the plan runs): the
  ``redhat-release`` above and a ``dnf-plugins-core`` RPM, which the plan's first step installs as on a minimal
  RHEL (the config-manager code itself is Debian's, already in the root);
* NVIDIA's layout (``<mirror>/rhel9/x86_64/``, ``createrepo_c`` metadata), every RPM signed by ``rpmsign`` with a
  throw-away key published as ``D42D0685.pub``, and ``cuda-rhel9.repo`` with the content NVIDIA's has
  (``[cuda-rhel9-x86_64]``, ``baseurl=<repo>``, ``gpgcheck=1``, ``gpgkey=<repo>/D42D0685.pub``; the entrypoint
  ``.../repos/rhel9/x86_64/cuda-rhel9.repo`` per https://github.com/NVIDIA/cuda-repo-management) but pointing
  at the loopback URL, as a mirror's would.  It holds packages with
  NVIDIA's names and dependency shape: ``cuda-toolkit-12-4`` 12.4.1-1 and 12.4.99-1 (the plan's pin
  ``cuda-toolkit-12-4-12.4.1-1`` must choose) requiring ``cuda-nvcc-12-4 >= 12.4.131`` and ``cuda-cudart-12-4``
  (files under /usr/local/cuda-12.4), and ``cudnn9-cuda-12`` requiring ``libcudnn9-cuda-12 = 9.1.0.70-1``.

The plans are ``envdoctor install cuda --version 12.4.1 --os rhel9 --mirror ...`` and ``cudnn --version 9
--method repo``.  Needs root (chroot, debootstrap), an x86_64 machine (NVIDIA's rhel9/x86_64 packages) and the
engines (``apt-get install dnf createrepo-c rpm``, as .ci/run does); skipped with the reason otherwise.
"""

from __future__ import annotations

import os
import pathlib
import platform
import shutil
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple

import pytest

from envdoctor.facts import Facts
from envdoctor.install.plan import render_sh
from envdoctor.recipes import Request, load_recipe, parse_target

from . import debian_root

CHROOT = debian_root.CHROOT
TOOLS = ("rpmbuild", "rpmsign", "createrepo_c", "dnf", "rpm", "gpg")
RPMDB = "/root/.rpmdb"  # Debian's rpm: %_dbpath is $HOME/.rpmdb
ENV = debian_root.ENV

# chroot: a Debian root made with debootstrap (once per process, so these run on one xdist worker together)
pytestmark = [pytest.mark.slow, pytest.mark.chroot, pytest.mark.xdist_group("debian-root")]


def _why_not() -> Optional[str]:
    why = debian_root.why_not()
    if why:
        return why
    if platform.machine() != "x86_64":
        return ("the loopback repository holds x86_64 RPMs (NVIDIA's rhel9/x86_64); this machine is "
                + platform.machine())
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return "needs " + ", ".join(missing) + " (apt-get install dnf createrepo-c rpm gpg)"
    return None


class Repos:
    """The BaseOS stand-in and NVIDIA's repository layout below ``<url>/compute/cuda/repos``, on 127.0.0.1."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.srv = os.path.join(base, "srv")
        self.cuda = os.path.join(self.srv, "compute", "cuda", "repos", "rhel9", "x86_64")
        self.baseos = os.path.join(self.srv, "baseos")
        for d in (self.cuda, self.baseos):
            os.makedirs(d)
        self.server = debian_root.Loopback(self.srv, os.path.join(base, "gnupg"))
        self.gpg, self.gnupg = self.server.gpg, self.server.gnupg
        self.url = self.server.url
        self.mirror = self.url + "/compute/cuda/repos"
        self.key_id = ""

    def rpm(self, out: str, name: str, version: str, release: str, requires: Sequence[str],
            files: Dict[str, Tuple[bytes, int]], provides: Sequence[str] = ()) -> None:
        """Build ``name-version-release.x86_64.rpm`` into ``out`` with rpmbuild (no automatic requires: the
        installroot's rpm database holds no /bin/sh, only what the test puts there)."""
        nvr = f"{name}-{version}-{release}"
        tree = os.path.join(self.base, "trees", nvr)
        debian_root.write_tree(tree, files)
        spec = os.path.join(self.base, nvr + ".spec")
        lines = ([f"Name: {name}", f"Version: {version}", f"Release: {release}",
                  f"Summary: stand-in for {name}", "License: none", "AutoReqProv: no"]
                 + [f"Requires: {r}" for r in requires] + [f"Provides: {p}" for p in provides]
                 + ["%description", f"stand-in for {name}", "%install", "mkdir -p %{buildroot}",
                    f"cp -a {tree}/. %{{buildroot}}/", "%files"] + list(files))
        with open(spec, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["rpmbuild", "-bb", "--quiet", "--target", "x86_64",
                        "--define", "_topdir " + os.path.join(self.base, "rpmbuild"),
                        "--define", "_rpmdir " + out, "--define", "debug_package %{nil}",
                        "--define", "__os_install_post %{nil}",
                        "--define", "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm", spec],
                       check=True, capture_output=True, timeout=300, env=dict(ENV, HOME=self.base))

    def build(self) -> None:
        self.server.make_key()
        self.key_id = self.gpg("--list-keys", "--with-colons").decode().split("pub:")[1].split(":")[3][-8:].lower()
        with open(os.path.join(self.cuda, "D42D0685.pub"), "wb") as f:
            f.write(self.gpg("--armor", "--export"))
        with open(os.path.join(self.cuda, "cuda-rhel9.repo"), "w") as f:
            f.write(f"[cuda-rhel9-x86_64]\nname=cuda-rhel9-x86_64\nbaseurl={self.mirror}/rhel9/x86_64\nenabled=1\n"
                    f"gpgcheck=1\ngpgkey={self.mirror}/rhel9/x86_64/D42D0685.pub\n")
        self.rpm(self.baseos, "redhat-release", "9.4", "0.5.el9", [],
                 {"/etc/redhat-release": (b"Red Hat Enterprise Linux release 9.4 (Plow)\n", 0o644)},
                 provides=["system-release", "system-release(releasever) = 9"])
        self.rpm(self.baseos, "dnf-plugins-core", "4.3.0", "13.el9", [],
                 {"/usr/share/doc/dnf-plugins-core/README.stand-in": (b"stand-in\n", 0o644)})
        nvcc = b"#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n"
        self.rpm(self.cuda, "cuda-nvcc-12-4", "12.4.131", "1", [], {"/usr/local/cuda-12.4/bin/nvcc": (nvcc, 0o755)})
        self.rpm(self.cuda, "cuda-cudart-12-4", "12.4.127", "1", [],
                 {"/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127": (b"\x7fELF stand-in\n", 0o644)})
        for v in ("12.4.1", "12.4.99"):
            self.rpm(self.cuda, "cuda-toolkit-12-4", v, "1", ["cuda-nvcc-12-4 >= 12.4.131", "cuda-cudart-12-4"],
                     {f"/usr/share/doc/cuda-toolkit-12-4/VERSION-{v}": (v.encode(), 0o644)})
        self.rpm(self.cuda, "libcudnn9-cuda-12", "9.1.0.70", "1", [],
                 {"/usr/lib64/libcudnn.so.9.1.0": (b"\x7fELF stand-in\n", 0o644)})
        self.rpm(self.cuda, "cudnn9-cuda-12", "9.1.0.70", "1", ["libcudnn9-cuda-12 = 9.1.0.70-1"],
                 {"/usr/share/doc/cudnn9-cuda-12/README": (b"stand-in\n", 0o644)})
        signed = sorted(os.path.join(self.cuda, n) for n in os.listdir(self.cuda) if n.endswith(".rpm"))
        subprocess.run(["rpmsign", "--addsign", "--define", "_gpg_name envdoctor throw-away",
                        "--define", "_gpg_path " + self.gnupg, "--define", "__gpg " + str(shutil.which("gpg")),
                        *signed], check=True, capture_output=True, timeout=300, env=dict(ENV, HOME=self.base))
        for d in (self.cuda, self.baseos):
            subprocess.run(["createrepo_c", "--quiet", d], check=True, capture_output=True, timeout=300)

    def close(self) -> None:
        self.server.close()


@pytest.fixture(scope="module")
def rhel9(tmp_path_factory):
    why = _why_not()
    if why:
        pytest.skip(why)
    root = debian_root.fresh_root(str(tmp_path_factory.mktemp("chroot") / "rhel9"))
    yield pathlib.Path(root)
    shutil.rmtree(root, ignore_errors=True)


def _seed(root: pathlib.Path, repos: Repos) -> None:
    """Make the root an RHEL 9 installroot: BaseOS configured, ``redhat-release`` in its rpm database."""
    (root / "etc/yum.repos.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/yum.repos.d/baseos.repo").write_text(
        f"[baseos]\nname=BaseOS stand-in\nbaseurl={repos.url}/baseos\nenabled=1\ngpgcheck=0\n")
    # Debian's dnf-plugins-core enables its "local" plugin (a repository of its own); RHEL ships it separately
    (root / "etc/dnf/plugins/local.conf").write_text("[main]\nenabled = false\n")
    r = subprocess.run(["dnf", "--installroot", str(root), "--releasever", "9", "--noplugins", "-y", "install",
                        "redhat-release"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-4000:]


def _in_chroot(root: pathlib.Path, script: str, name: str) -> subprocess.CompletedProcess:
    return debian_root.run_script(str(root), script, name)


def _installed(root: pathlib.Path) -> Dict[str, str]:
    """name -> version-release (and install time) of every package in the installroot's rpm database."""
    r = subprocess.run(["rpm", "--root", str(root), "--dbpath", RPMDB, "-qa", "--qf",
                        "%{NAME} %{VERSION}-%{RELEASE} %{INSTALLTIME}\\n"],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode == 0, r.stderr
    out = {}
    for line in r.stdout.splitlines():
        name, version, when = (line.split(" ") + ["", ""])[:3]
        out[name] = f"{version} {when}"
    return out


def _versions(installed: Dict[str, str]) -> Dict[str, str]:
    return {k: v.split(" ")[0] for k, v in installed.items()}


def _from_repo(root: pathlib.Path) -> Dict[str, str]:
    """name -> the repository dnf installed it from (its history database)."""
    r = subprocess.run([CHROOT, str(root), "dnf", "-q", "--disablerepo=*", "repoquery", "--installed", "--qf",
                        "%{name} %{from_repo}"], capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)


def test_rhel9_repo_plans_run_with_dnf_and_a_second_run_changes_nothing(rhel9, tmp_path):
    repos = Repos(str(tmp_path / "repos"))
    try:
        repos.build()
        _seed(rhel9, repos)
        rhel = parse_target("rhel9")
        cuda = load_recipe("cuda").plan(Request("cuda", "12.4.1", None, mirror=repos.mirror), rhel, Facts())
        cudnn = load_recipe("cudnn").plan(Request("cudnn", "9", "repo", mirror=repos.mirror), rhel, Facts())
        before = _installed(rhel9)
        assert set(before) == {"redhat-release"}
        first: List[subprocess.CompletedProcess] = [_in_chroot(rhel9, render_sh(cuda), "cuda.sh"),
                                                     _in_chroot(rhel9, render_sh(cudnn), "cudnn.sh")]
        for r in first:
            assert r.returncode == 0, r.stdout[-4000:]
        after = _installed(rhel9)
        new = {k: v for k, v in _versions(after).items() if k not in before}
        assert new == {"dnf-plugins-core": "4.3.0-13.el9", "cuda-toolkit-12-4": "12.4.1-1",
                       "cuda-nvcc-12-4": "12.4.131-1", "cuda-cudart-12-4": "12.4.127-1",
                       "cudnn9-cuda-12": "9.1.0.70-1", "libcudnn9-cuda-12": "9.1.0.70-1",
                       "gpg-pubkey": new.get("gpg-pubkey", "")}, new  # the pin chose 12.4.1-1 over 12.4.99-1
        # the one key dnf imported is the repository's own (from its gpgkey=), and every package was checked with it
        assert new["gpg-pubkey"].startswith(repos.key_id + "-"), (new["gpg-pubkey"], repos.key_id)
        assert f"Importing GPG key 0x{repos.key_id.upper()}" in first[0].stdout
        assert os.access(str(rhel9 / "usr/local/cuda-12.4/bin/nvcc"), os.X_OK)
        # the repository is the loopback one: the .repo file config-manager fetched, and where dnf took each package
        repo_file = (rhel9 / "etc/yum.repos.d/cuda-rhel9.repo").read_text()
        assert f"baseurl={repos.mirror}/rhel9/x86_64\n" in repo_file and "gpgcheck=1" in repo_file
        origin = _from_repo(rhel9)
        for pkg in ("cuda-toolkit-12-4", "cuda-nvcc-12-4", "cuda-cudart-12-4", "cudnn9-cuda-12", "libcudnn9-cuda-12"):
            assert origin.get(pkg) == "cuda-rhel9-x86_64", origin
        assert origin.get("dnf-plugins-core") == "baseos", origin
        # a second run changes nothing: every install step is skipped or finds nothing to do
        again = [_in_chroot(rhel9, render_sh(cuda), "cuda.sh"), _in_chroot(rhel9, render_sh(cudnn), "cudnn.sh")]
    finally:
        repos.close()
    for r in again:
        assert r.returncode == 0, r.stdout[-4000:]
    assert "skip (already done): add NVIDIA's CUDA repository (cuda-rhel9.repo)" in again[0].stdout
    assert "skip (already done): install the CUDA 12.4 toolkit" in again[0].stdout
    assert "Nothing to do." in again[1].stdout
    assert _installed(rhel9) == after  # same packages, same versions, none reinstalled (same install times)

"""Every command the system recipes plan, checked against a table of the vendors' documented commands per OS.

The table below is the reviewable statement of where each command comes from: a row names the components
and systems it applies to, the command's shape (a regular expression over the argument list joined with
spaces), the vendor page it was read from, and whether that page's text was actually read ("verified") or
the command follows a vendor's package/file names without the page's own command text ("not verified": see
tests/recipes_expected/VERIFIED.md; its rows were searched for again on 2026-11-25 in the stored copies of the
CUDA and cuDNN guides, which hold only each page's start: the statuses stand).  The test plans every
combination the golden tests use plus the
variants issue 14 added (driver branches, Secure Boot, runtimes, CUDA 13 NCCL) and fails on any command no
row accounts for, and on any row no plan uses.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterator, List, NamedTuple, Tuple

import pytest

from envdoctor.facts import Facts, ok
from envdoctor.install.plan import RunCommand
from envdoctor.recipes import SUPPORTED_TARGETS, Request, load_recipe, parse_target

DEB = ("ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "debian12")
EL = ("rhel8", "rhel9", "rocky8", "rocky9", "almalinux8", "almalinux9", "centos9")
EL7 = ("centos7",)
ALL = DEB + EL + EL7
REPO = r"https://developer\.download\.nvidia\.com/compute/cuda/repos/(ubuntu2004|ubuntu2204|ubuntu2404|debian12|rhel[789])/(x86_64|sbsa)"
CUDA_GUIDE = "https://docs.nvidia.com/cuda/cuda-installation-guide-linux/"
DRIVER_GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"
CTK_GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
CUDNN_GUIDE = "https://docs.nvidia.com/deeplearning/cudnn/installation/latest/linux.html"
NCCL_GUIDE = "https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html"
REPO_COMPONENTS = ("cuda", "cudnn", "nccl", "driver")


class Row(NamedTuple):
    components: Tuple[str, ...]
    targets: Tuple[str, ...]
    pattern: str
    source: str
    status: str


TABLE: List[Row] = [
    # -- NVIDIA's CUDA repository ----------------------------------------------------------------------------
    Row(REPO_COMPONENTS, DEB, r"curl -fsSL --create-dirs -o /var/tmp/envdoctor/cuda-keyring_1\.1-1_all\.deb "
        + REPO + r"/cuda-keyring_1\.1-1_all\.deb",
        "https://github.com/NVIDIA/cuda-repo-management (README, GPG keys: keyring entrypoints); " + CUDA_GUIDE,
        "verified (file name, URL)"),
    Row(REPO_COMPONENTS, DEB, r"dpkg -i /var/tmp/envdoctor/cuda-keyring_1\.1-1_all\.deb", CUDA_GUIDE
        + " (Network Repo Installation for Ubuntu/Debian)", "not verified"),
    Row(REPO_COMPONENTS + ("container-toolkit",), DEB, r"apt-get update", CUDA_GUIDE + "; " + CTK_GUIDE,
        "verified (container toolkit guide)"),
    Row(REPO_COMPONENTS, EL, r"dnf install -y dnf-plugins-core",
        "https://dnf-plugins-core.readthedocs.io/en/latest/config_manager.html (config-manager is this plugin)",
        "verified (package of dnf config-manager)"),
    Row(REPO_COMPONENTS, EL, r"dnf config-manager --add-repo " + REPO + r"/cuda-rhel[89]\.repo",
        "https://github.com/NVIDIA/cuda-repo-management (README: .repo entrypoints)", "verified (URL)"),
    Row(REPO_COMPONENTS, EL7, r"yum install -y yum-utils", "https://man7.org/linux/man-pages/man1/yum-config-manager.1.html",
        "not verified"),
    Row(REPO_COMPONENTS, EL7, r"yum-config-manager --add-repo " + REPO + r"/cuda-rhel7\.repo",
        "https://docs.nvidia.com/cuda/archive/12.3.2/cuda-installation-guide-linux/", "not verified"),
    # -- CUDA ----------------------------------------------------------------------------------------------------
    Row(("cuda",), ALL, r"(apt-get|dnf|yum) install -y cuda-toolkit-\d+-\d+([=-]\d+\.\d+\.\d+-1)?",
        CUDA_GUIDE + " (Meta Packages)", "not verified"),
    Row(("cuda",), ALL, r"conda install -y -c nvidia/label/cuda-\d+\.\d+\.\d+ cuda",
        "https://anaconda.org/nvidia/cuda", "verified"),
    Row(("cuda",), ALL, r"curl -fsSL --create-dirs -o /var/tmp/envdoctor/cuda_[\d.]+_md5sum\.txt "
        r"https://developer\.download\.nvidia\.com/compute/cuda/[\d.]+/docs/sidebar/md5sum\.txt",
        "https://developer.nvidia.com/cuda-toolkit-archive (md5sum.txt per release)", "not verified"),
    Row(("cuda",), ALL, r"curl -fL --retry 3 -C - --create-dirs -o "
        r"/var/tmp/envdoctor/cuda_[\d.]+_[\d.]+_linux(_sbsa)?\.run "
        r"https://developer\.download\.nvidia\.com/compute/cuda/[\d.]+/local_installers/cuda_[\d.]+_[\d.]+_linux(_sbsa)?\.run",
        "https://developer.nvidia.com/cuda-toolkit-archive", "not verified"),
    Row(("cuda",), ALL, r"sh -c cd \"\$1\" && want=.*md5sum -c - && touch \"\$4\" sh /var/tmp/envdoctor .*",
        "envdoctor's own check of NVIDIA's md5sum.txt", "envdoctor"),
    Row(("cuda",), ALL, r"sh /var/tmp/envdoctor/cuda_[\d.]+_[\d.]+_linux(_sbsa)?\.run --silent --toolkit "
        r"--toolkitpath=\S+ --no-opengl-libs", CUDA_GUIDE + " (Runfile Installation, Advanced Options)",
        "not verified"),
    Row(("cuda",), ALL, r"ln -sfn /usr/local/cuda-[\d.]+ /usr/local/cuda", CUDA_GUIDE + " (/usr/local/cuda link)",
        "not verified"),
    # -- cuDNN, NCCL -----------------------------------------------------------------------------------------------
    Row(("cudnn",), ALL, r"(apt-get|dnf|yum) install -y cudnn9-cuda-1[1-3]", CUDNN_GUIDE, "not verified"),
    Row(("cudnn", "nccl"), ALL, r"/usr/bin/python3 -m venv /\S+/envdoctor/venvs/(cudnn|nccl)",
        "https://peps.python.org/pep-0668/ (a virtual environment instead of the system Python)", "verified"),
    Row(("cudnn",), ALL, r"/\S+/bin/python -m pip install nvidia-cudnn-cu1[1-3]==[\d.]+\.\*", CUDNN_GUIDE
        + " (Installing cuDNN with pip)", "not verified"),
    Row(("nccl",), DEB, r"apt-get install -y libnccl2=[\d.]+-1\+cuda[\d.]+ libnccl-dev=[\d.]+-1\+cuda[\d.]+",
        NCCL_GUIDE, "not verified"),
    Row(("nccl",), EL + EL7, r"(dnf|yum) install -y libnccl-[\d.]+-1\+cuda[\d.]+ libnccl-devel-[\d.]+-1\+cuda[\d.]+",
        NCCL_GUIDE, "not verified"),
    Row(("nccl",), ALL, r"/\S+/bin/python -m pip install nvidia-nccl-cu1[2-3]==[\d.]+",
        "https://pypi.org/project/nvidia-nccl-cu12/", "not verified"),
    # -- the driver ----------------------------------------------------------------------------------------------------
    Row(("driver",), ("debian12",), r"apt-get install -y software-properties-common",
        "https://packages.debian.org/bookworm/software-properties-common (add-apt-repository)", "verified"),
    Row(("driver",), ("debian12",), r"add-apt-repository -y contrib", DRIVER_GUIDE + " (Debian pre-installation)",
        "not verified"),
    Row(("driver",), DEB, r'sh -c apt-get install -y "linux-headers-\$\(uname -r\)"', DRIVER_GUIDE
        + " (2.2 Verify the System has the Correct Kernel Packages Installed)", "not verified"),
    Row(("driver",), DEB, r"apt-get install -y (nvidia-open|cuda-drivers)", DRIVER_GUIDE
        + "advanced-options.html (Switching between Driver Module Flavors)", "verified"),
    Row(("driver",), DEB, r"apt-get install -y nvidia-driver-pinning-\d{3}", DRIVER_GUIDE
        + " (Recent Updates: Version locking packages for Ubuntu / Debian)", "verified (pinning before the driver)"),
    Row(("driver",), DEB, r"apt-get install -y nvidia-open-5[67]\d",
        DRIVER_GUIDE + " (open flavor default from 560); package name from public install scripts", "not verified"),
    Row(("driver",), DEB, r"apt-get install -y cuda-drivers-\d{3}", DRIVER_GUIDE + " (Recent Updates, Table 4)",
        "verified (pre-590 name)"),
    Row(("driver",), EL, r"subscription-manager repos --enable codeready-builder-for-rhel-[89]-(x86_64|aarch64)-rpms",
        "https://docs.fedoraproject.org/en-US/epel/getting-started/", "not verified"),
    Row(("driver",), EL, r"dnf install -y https://dl\.fedoraproject\.org/pub/epel/epel-release-latest-[89]\.noarch\.rpm",
        "https://docs.fedoraproject.org/en-US/epel/getting-started/", "not verified"),
    Row(("driver",), EL, r"dnf config-manager --set-enabled (crb|powertools)",
        "https://docs.fedoraproject.org/en-US/epel/getting-started/", "not verified"),
    Row(("driver",), EL, r"dnf install -y epel-release", "https://docs.fedoraproject.org/en-US/epel/getting-started/",
        "not verified"),
    Row(("driver",), EL, r'sh -c dnf install -y (kernel-devel-matched|"kernel-devel-\$\(uname -r\)") '
        r'"kernel-headers-\$\(uname -r\)"', DRIVER_GUIDE + " (2.2 kernel packages)", "not verified"),
    Row(("driver",), EL, r"dnf module enable -y nvidia-driver:(open-dkms|\d{3}-open)", DRIVER_GUIDE
        + "kernel-modules.html (Table 5)", "verified"),
    Row(("driver",), EL, r"dnf install -y nvidia-open", DRIVER_GUIDE + "kernel-modules.html (Table 5)", "verified"),
    Row(("driver",), EL, r"dnf module install -y nvidia-driver:(latest-dkms|\d{3}-dkms)",
        "https://github.com/NVIDIA/yum-packaging-dkms-nvidia (stream names)", "not verified (command)"),
    Row(("driver",), EL, r"dnf install -y python3-dnf-plugin-versionlock",
        DRIVER_GUIDE + "version-locking.html (DNF 4)", "verified"),
    Row(("driver",), EL, r"dnf versionlock add \*nvidia\*\d{3}\*", DRIVER_GUIDE + "version-locking.html (DNF 4)",
        "verified"),
    Row(("driver",), EL7, r"yum install -y epel-release", "https://docs.fedoraproject.org/en-US/epel/getting-started/",
        "not verified"),
    Row(("driver",), EL7, r'sh -c yum install -y "kernel-devel-\$\(uname -r\)" "kernel-headers-\$\(uname -r\)"',
        DRIVER_GUIDE + " (2.2 kernel packages)", "not verified"),
    Row(("driver",), EL7, r"yum install -y nvidia-driver-(latest-dkms|branch-\d{3})",
        "https://github.com/NVIDIA/yum-packaging-nvidia-driver (README: RHEL7 flavors)", "verified (package names)"),
    Row(("driver",), ALL, r"mokutil --import /var/lib/(dkms/mok\.pub|shim-signed/mok/MOK\.der) --root-pw",
        "https://manpages.debian.org/bookworm/mokutil/mokutil.1.en.html", "not verified (NVIDIA's text)"),
    # -- the container toolkit ------------------------------------------------------------------------------------
    Row(("container-toolkit",), DEB, r"curl -fsSL --create-dirs -o /var/tmp/envdoctor/nvidia-container-toolkit-gpgkey "
        r"https://nvidia\.github\.io/libnvidia-container/gpgkey", CTK_GUIDE + " (With apt)", "verified"),
    Row(("container-toolkit",), DEB, r"gpg --batch --yes --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-"
        r"keyring\.gpg /var/tmp/envdoctor/nvidia-container-toolkit-gpgkey", CTK_GUIDE + " (With apt)", "verified"),
    Row(("container-toolkit",), EL + EL7, r"curl -fsSL -o /etc/yum\.repos\.d/nvidia-container-toolkit\.repo "
        r"https://nvidia\.github\.io/libnvidia-container/stable/rpm/nvidia-container-toolkit\.repo",
        CTK_GUIDE + " (With dnf)", "verified"),
    Row(("container-toolkit",), ALL, r"(apt-get|dnf|yum) install -y (nvidia-container-toolkit|"
        r"(nvidia-container-toolkit|nvidia-container-toolkit-base|libnvidia-container-tools|libnvidia-container1)"
        r"[=-][\d.]+-1( \S+)*)", CTK_GUIDE + " (Install the NVIDIA Container Toolkit packages)", "verified"),
    Row(("container-toolkit",), ALL, r"nvidia-ctk runtime configure --runtime=docker", CTK_GUIDE
        + " (Configuring Docker)", "verified"),
    Row(("container-toolkit",), ALL, r"nvidia-ctk runtime configure --runtime=(containerd|crio)", CTK_GUIDE
        + " (Configuring containerd, CRI-O)", "not verified"),
    Row(("container-toolkit",), ALL, r"systemctl restart (docker|containerd|crio)", CTK_GUIDE, "verified (docker)"),
    Row(("container-toolkit",), ALL, r"nvidia-ctk cdi generate --output=/etc/cdi/nvidia\.yaml",
        "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html", "verified"),
]

SYSTEM = ("driver", "cuda", "cudnn", "nccl", "container-toolkit")


def _facts(**kv) -> Facts:
    return Facts([ok(k, v, "test") for k, v in kv.items()])


def _requests() -> Iterator[Tuple[str, str, Request, Facts]]:
    """The golden matrix (component x method x target) and the variants issue 14 added."""
    from tests.test_recipes_system import _version

    for comp in SYSTEM:
        mod = load_recipe(comp)
        for method in mod.METHODS:
            if method == "redist":
                continue
            for t in SUPPORTED_TARGETS:
                yield comp, t, Request(comp, _version(comp, method, t), method), Facts()
    for t in SUPPORTED_TARGETS:
        for branch in ("495", "550", "565", "580", "595"):
            for flavor in ("open", "proprietary"):
                yield "driver", t, Request("driver", branch, None, options={"flavor": flavor}), \
                    _facts(**{"driver.secure_boot": True})
        yield "cuda", t, Request("cuda", "12.4.1", "repo"), Facts()
        yield "cuda", t, Request("cuda", "12.8", "repo", with_driver=True), Facts()
        yield "nccl", t, Request("nccl", None, "repo"), _facts(**{"driver.cuda_version": "13.0"})
        yield "container-toolkit", t, Request("container-toolkit", "1.17.8", None), _facts(**{"install.runtimes": {
            "systemd": True, "kubelet": True, "runtimes": {"containerd": {"systemd": True}, "crio": {"systemd": True},
                                                           "podman": {"systemd": False}}}})


def test_every_planned_command_is_in_the_vendor_table(monkeypatch):
    from envdoctor.recipes import RecipeError

    monkeypatch.setenv("XDG_DATA_HOME", "/home/user/.local/share")
    used = set()
    unknown = []
    planned = 0
    for comp, target, req, facts in _requests():
        try:
            plan = load_recipe(comp).plan(req, parse_target(target), facts)
        except RecipeError:
            continue  # a refusal plans nothing (its alternatives are checked in test_install_plans)
        planned += 1
        for step in plan.steps:
            if not isinstance(step.action, RunCommand):
                continue
            line = " ".join(step.action.argv)
            # CUDA --with-driver plans the driver recipe's steps too
            comps = {comp, "driver"} if comp == "cuda" and req.with_driver else {comp}
            rows = [i for i, r in enumerate(TABLE) if comps & set(r.components) and target in r.targets
                    and re.fullmatch(r.pattern, line)]
            if rows:
                used.update(rows)
            else:
                unknown.append(f"{comp} {target}: {shlex.join(step.action.argv)}")
    assert planned > 200
    assert not unknown, "commands no vendor row accounts for:\n" + "\n".join(sorted(set(unknown)))
    stale = [TABLE[i].pattern for i in range(len(TABLE)) if i not in used]
    assert not stale, "rows no plan uses: " + "; ".join(stale)


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.pattern[:40])
def test_each_row_cites_a_source(row):
    assert row.source.startswith(("https://", "envdoctor")) and row.status

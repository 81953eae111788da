"""The NVIDIA Container Toolkit, and Docker configured to use it (method ``repo``).

Commands from NVIDIA's install guide,
https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html :

apt (Ubuntu, Debian)::

    curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | \
        sudo gpg --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
    curl -s -L https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list | \
        sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' | \
        sudo tee /etc/apt/sources.list.d/nvidia-container-toolkit.list
    sudo apt-get update && sudo apt-get install -y nvidia-container-toolkit

dnf/yum (RHEL, CentOS)::

    curl -s -L https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo | \
        sudo tee /etc/yum.repos.d/nvidia-container-toolkit.repo
    sudo dnf install -y nvidia-container-toolkit

then ("Configuring Docker")::

    sudo nvidia-ctk runtime configure --runtime=docker
    sudo systemctl restart docker

Pipes are not plan actions, so the key is fetched to a file and dearmored in a second step, and the
apt list (two lines, the stable one with signed-by) is written as the ``sed`` leaves it.
"""

from __future__ import annotations

import sys
from typing import Any, List, Tuple

from envdoctor.install import validate
from envdoctor.install.plan import Plan, RunCommand, Step, WriteFile, exists, has_content

from . import DOWNLOAD_DIR, Request, Target, install_step, pick_method

COMPONENT = "container-toolkit"
METHODS: Tuple[str, ...] = ("repo",)
GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
BASE = "https://nvidia.github.io/libnvidia-container"
KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
APT_LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
APT_LIST_CONTENT = (f"deb [signed-by={KEYRING}] {BASE}/stable/deb/$(ARCH) /\n"
                    f"#deb [signed-by={KEYRING}] {BASE}/experimental/deb/$(ARCH) /\n")
YUM_REPO = "/etc/yum.repos.d/nvidia-container-toolkit.repo"
#: Installed together when a version is pinned (guide: NVIDIA_CONTAINER_TOOLKIT_VERSION=1.17.8-1).
PINNED = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
          "libnvidia-container1")


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    """No table: the repository's newest release unless --version pins one (e.g. 1.17.8)."""
    return []


def plan(request: Request, target: Target, facts: Any) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    version = str(validate.version(request.version)) if request.version else None
    if target.family == "debian":
        # verified 2026-11-22 against
        # https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html
        # ("With apt: Ubuntu, Debian"; source NVIDIA/cloud-native-docs container-toolkit/install-guide.md):
        # gpgkey URL, keyring path, stable/deb list URL, sed signed-by, list path, apt-get update; the key is
        # fetched then dearmored (no pipe).  not verified: APT_LIST_CONTENT itself (the guide does not print
        # the .list file; the stable line + commented experimental line is how public copies of it read)
        key = f"{DOWNLOAD_DIR}/nvidia-container-toolkit-gpgkey"
        steps = [
            Step("fetch-gpgkey", "fetch the libnvidia-container signing key over HTTPS",
                 RunCommand(["curl", "-fsSL", "--create-dirs", "-o", key, f"{BASE}/gpgkey"]), needs_root=True,
                 done_if=[exists(KEYRING)], verify=[exists(key)]),
            Step("dearmor-gpgkey", f"store it as {KEYRING}",
                 RunCommand(["gpg", "--batch", "--yes", "--dearmor", "-o", KEYRING, key]), needs_root=True,
                 done_if=[exists(KEYRING)], verify=[exists(KEYRING)]),
            Step("write-apt-list", f"write {APT_LIST}", WriteFile(APT_LIST, APT_LIST_CONTENT, 0o644),
                 needs_root=True, done_if=[has_content(APT_LIST, APT_LIST_CONTENT)]),
            Step("apt-update", "refresh the package lists", RunCommand(["apt-get", "update"]), needs_root=True),
        ]
        # verified 2026-11-22 (same guide, step "Install the NVIDIA Container Toolkit packages", apt):
        # the four packages pinned =${NVIDIA_CONTAINER_TOOLKIT_VERSION} (<version>-1)
        pkgs = [f"{p}={version}-1" for p in PINNED] if version else ["nvidia-container-toolkit"]
    else:
        # verified 2026-11-22 (same guide, "With dnf: RHEL/CentOS, Fedora, Amazon Linux"): the .repo URL and
        # /etc/yum.repos.d/nvidia-container-toolkit.repo (curl ... | tee, here curl -o), packages pinned
        # -<version>-1; CentOS 7 uses yum where the guide says dnf
        steps = [Step("fetch-repo-file", f"add the libnvidia-container repository ({YUM_REPO})",
                      RunCommand(["curl", "-fsSL", "-o", YUM_REPO, f"{BASE}/stable/rpm/nvidia-container-toolkit.repo"]),
                      needs_root=True, done_if=[exists(YUM_REPO)], verify=[exists(YUM_REPO)])]
        pkgs = [f"{p}-{version}-1" for p in PINNED] if version else ["nvidia-container-toolkit"]
    steps.append(install_step(target, "install-toolkit", "install the NVIDIA Container Toolkit"
                              + (f" {version}" if version else ""), pkgs))
    # verified 2026-11-22 (same guide, "Configuring Docker"): nvidia-ctk runtime configure --runtime=docker,
    # then systemctl restart docker
    steps.append(Step("configure-docker", "register the nvidia runtime in /etc/docker/daemon.json",
                      RunCommand(["nvidia-ctk", "runtime", "configure", "--runtime=docker"]), needs_root=True))
    steps.append(Step("restart-docker", "restart Docker so it loads the nvidia runtime",
                      RunCommand(["systemctl", "restart", "docker"]), needs_root=True))
    notes = [f"Source: {GUIDE}",
             "Check it: docker run --rm --runtime=nvidia --gpus all ubuntu nvidia-smi"]
    if facts.value("driver.installed") is False:
        notes.append("No NVIDIA driver is installed: containers need one on the host (envdoctor install driver)")
    return Plan(title="install the NVIDIA Container Toolkit{} on {}".format(f" {version}" if version else "",
                                                                          target.describe),
                component=COMPONENT, version=version or "latest", method=method, target=target.describe,
                steps=steps, notes=notes)

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


#: How each runtime is configured (guide: "Configuration"; Podman through CDI, cdi-support.html).
#: verified 2026-11-22: docker (install-guide.html "Configuring Docker": nvidia-ctk runtime configure
#: --runtime=docker; systemctl restart docker) and Podman (https://docs.nvidia.com/datacenter/cloud-native/
#: container-toolkit/latest/cdi-support.html: nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml).
#: not verified: the containerd and CRI-O sections' text (--runtime=containerd / --runtime=crio and their
#: restarts are the same form, not read in the stored copies)
CONFIGURE = {
    "docker": (["nvidia-ctk", "runtime", "configure", "--runtime=docker"], "/etc/docker/daemon.json", "docker"),
    "containerd": (["nvidia-ctk", "runtime", "configure", "--runtime=containerd"], "/etc/containerd/config.toml",
                   "containerd"),
    "crio": (["nvidia-ctk", "runtime", "configure", "--runtime=crio"], "/etc/crio/crio.conf.d/99-nvidia.toml",
             "crio"),
}
CDI_SPEC = "/etc/cdi/nvidia.yaml"
CHECKS = {"docker": "docker run --rm --runtime=nvidia --gpus all ubuntu nvidia-smi",
          "podman": "podman run --rm --device nvidia.com/gpu=all --security-opt=label=disable ubuntu nvidia-smi -L"}


def runtime_steps(seen: Any) -> Tuple[List[Step], List[str]]:
    """Configure the runtimes this machine has (``install.runtimes``, see envdoctor.install.runtimes); restart
    those systemd manages, and say how to restart the others.  Unknown (a plan for another machine): Docker,
    as the guide's first example, and a note."""
    if not isinstance(seen, dict):
        names = ["docker"]
        managed = {"docker": True}
        notes = ["Container runtimes were not looked at (a plan for another machine): Docker is configured and "
                 "restarted with systemd; for containerd, CRI-O or Podman, plan on that machine"]
    else:
        found = dict(seen.get("runtimes") or {})
        # containerd also runs under Docker: configured on its own only where Docker is absent (a Kubernetes node
        # or a containerd-only host) or kubelet uses it; never restarted under a running Docker otherwise
        if "docker" in found and "containerd" in found and not seen.get("kubelet"):
            found.pop("containerd")
        names = [n for n in ("docker", "containerd", "crio", "podman") if n in found]
        managed = {n: bool((found.get(n) or {}).get("systemd")) for n in names}
        notes = []
        if not names:
            notes.append("No container runtime (Docker, containerd, CRI-O, Podman) was found: only the toolkit is "
                         "installed; configure one later with nvidia-ctk runtime configure --runtime=NAME")
    steps: List[Step] = []
    for name in names:
        if name == "podman":
            steps.append(Step("configure-podman", f"generate the CDI specification {CDI_SPEC} (Podman uses CDI)",
                              RunCommand(["nvidia-ctk", "cdi", "generate", f"--output={CDI_SPEC}"]), needs_root=True,
                              verify=[exists(CDI_SPEC)]))
            continue
        argv, config, unit = CONFIGURE[name]
        steps.append(Step(f"configure-{name}", f"register the nvidia runtime with {name} ({config})",
                          RunCommand(argv), needs_root=True))
        if managed.get(name):
            steps.append(Step(f"restart-{name}", f"restart {name} so it loads the nvidia runtime",
                              RunCommand(["systemctl", "restart", unit]), needs_root=True))
        else:
            notes.append(f"{name} is not managed by systemd here: restart it yourself so it loads the nvidia runtime "
                         f"(e.g. sudo service {unit} restart, or restart the {name} daemon the way it was started)")
    for name in names:
        if name in CHECKS:
            notes.append("Check it: " + CHECKS[name])
    return steps, notes


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
    config_steps, config_notes = runtime_steps(facts.value("install.runtimes") if facts is not None else None)
    steps += config_steps
    notes = [f"Source: {GUIDE}"] + config_notes
    if facts.value("driver.installed") is False:
        notes.append("No NVIDIA driver is installed: containers need one on the host (envdoctor install driver)")
    return Plan(title="install the NVIDIA Container Toolkit{} on {}".format(f" {version}" if version else "",
                                                                          target.describe),
                component=COMPONENT, version=version or "latest", method=method, target=target.describe,
                steps=steps, notes=notes)

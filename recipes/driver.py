"""The NVIDIA driver from NVIDIA's CUDA repository (method ``repo``).

Commands from NVIDIA's Driver Installation Guide,
https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/ (network repository):

* Ubuntu / Debian: ``apt-get install -y nvidia-open`` (open kernel modules, NVIDIA's recommendation
  for Turing and newer) or ``cuda-drivers`` (proprietary); a branch: ``cuda-drivers-550``.
* RHEL 8/9 and rebuilds, open flavor (guide, "Kernel Modules", Table 5 "Open GPU kernel module
  installation"): ``dnf module enable nvidia-driver:open-dkms`` then ``dnf install nvidia-open``; a branch:
  ``dnf module enable nvidia-driver:580-open`` then ``dnf install nvidia-open``.  Proprietary flavor:
  ``dnf module install -y nvidia-driver:latest-dkms`` / ``nvidia-driver:550-dkms`` (not verified, see below).
* CentOS 7: ``yum install -y nvidia-driver-latest-dkms`` (no module streams on 7).

``--version`` names a driver branch (``550``) or a full version whose branch is used.  A driver
install always ends with a reboot.  ``options["flavor"]`` is ``open`` (default) or ``proprietary``.
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional, Tuple

from packaging.version import Version

from envdoctor.install.plan import Plan, RunCommand, Step
from envdoctor.matrix import hardware

from . import RecipeError, Request, Target, install_step, pick_method, repo_steps, target_note

COMPONENT = "driver"
METHODS: Tuple[str, ...] = ("repo",)
FLAVORS = ("open", "proprietary")
CUDA_TABLE_URL = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    """Driver branches the matrix knows (each CUDA release's minimum driver), oldest first."""
    branches = set()
    for row in hardware.cuda_releases():
        if Version(row["version"]) < Version("11.0"):
            continue
        for drv in [row["min_driver_linux"], *row.get("driver_by_update", {}).values()]:
            branches.add(str(Version(drv).release[0]))
    return sorted(branches, key=int)


def branch_of(version: str) -> str:
    return str(Version(version).release[0])


def packages(target: Target, branch: Optional[str], flavor: str) -> Tuple[str, List[str]]:
    """(how, argv tail) for the driver packages on ``target``."""
    if target.family == "debian":
        if branch:
            # not verified: the guide's apt row for "install a specific branch" was not found in the stored
            # copies; its "Recent Updates" page (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/,
            # "Ubuntu 590 and later packages") says cuda-drivers-<branch> is removed from 590 on and branches
            # are locked with pinning packages instead, and cuda-drivers-<branch> is the proprietary flavor.
            # So: planned only where that package exists (before 590) and is what was asked for; refused
            # otherwise, rather than print a command that cannot work.
            if int(branch) >= 590 or flavor == "open":
                raise RecipeError(
                    f"envdoctor cannot yet pin driver branch {branch} ({flavor} kernel modules) on {target.label}: "
                    "NVIDIA replaced cuda-drivers-<branch> with pinning packages from 590 on, and the open "
                    "flavor has no per-branch metapackage; the exact commands are in "
                    "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/",
                    ["envdoctor install driver   (the newest driver, open kernel modules)",
                     "envdoctor install driver --option flavor=proprietary --version 580   "
                     "(a proprietary branch before 590)"])
            return "apt", [f"cuda-drivers-{branch}"]
        # verified 2026-11-22 (package names) against
        # https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/advanced-options.html
        # ("Switching between Driver Module Flavors", Debian 12 / Ubuntu): open = nvidia-open,
        # proprietary = cuda-drivers
        return "apt", ["nvidia-open" if flavor == "open" else "cuda-drivers"]
    if target.package_manager == "yum":
        # verified 2026-11-22 (package name) against https://github.com/NVIDIA/yum-packaging-nvidia-driver
        # (README, "RHEL7 flavor: latest-dkms" -> nvidia-driver-latest-dkms); the CentOS 7 install command
        # itself is in no current NVIDIA guide (RHEL 7 is out of the driver guide's support list)
        if branch:
            raise RecipeError(f"driver branch {branch} cannot be pinned on {target.label} (no module streams)",
                              [f"envdoctor install driver --os {target.label}   (newest: nvidia-driver-latest-dkms)"])
        return "yum", ["nvidia-driver-latest-dkms"]
    if branch:
        stream = f"nvidia-driver:{branch}-open" if flavor == "open" else f"nvidia-driver:{branch}-dkms"
    else:
        stream = "nvidia-driver:open-dkms" if flavor == "open" else "nvidia-driver:latest-dkms"
    # stream names verified 2026-11-22 against https://github.com/NVIDIA/yum-packaging-dkms-nvidia (README:
    # streams latest-dkms / XXX-dkms, and open-dkms / XXX-open from 515 on) and, for the open ones,
    # against the guide's Table 5 (below)
    return ("module-enable" if flavor == "open" else "module"), [stream]


def driver_steps(target: Target, branch: Optional[str], flavor: str = "open", minimum: bool = False) -> List[Step]:
    """Steps that install the driver.  With ``minimum`` the branch is a floor (CUDA's --with-driver):
    on Debian/Ubuntu the newest open driver satisfies any floor and needs no per-branch package."""
    if minimum and branch and target.family == "debian" and flavor == "open":
        how, pkgs = packages(target, None, flavor)
        title = f"install the NVIDIA driver (open, newest; branch {branch} or newer is needed)"
    else:
        how, pkgs = packages(target, branch, flavor)
        title = "install the NVIDIA driver ({}{})".format(flavor, f", branch {branch}" if branch else ", newest")
    if how == "module-enable":
        # verified 2026-11-22 against https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
        # (Table 5 "Open GPU kernel module installation", RHEL / Rocky / AlmaLinux 8/9):
        #   dnf module enable nvidia-driver:open-dkms   (a branch: nvidia-driver:580-open)
        #   dnf install nvidia-open
        return [Step("enable-driver-stream", f"enable the {pkgs[0]} module stream",
                     RunCommand(["dnf", "module", "enable", "-y", *pkgs]), needs_root=True),
                Step("install-driver", title, RunCommand(["dnf", "install", "-y", "nvidia-open"]), needs_root=True)]
    if how == "module":
        # not verified: the guide's proprietary-flavor table (kernel-modules.html, "Proprietary GPU Kernel
        # Modules Installation") was not readable in the stored copies; `dnf module install` of the stream is
        # the form of older CUDA installation guides, not checked against the current driver guide
        return [Step("install-driver", title, RunCommand(["dnf", "module", "install", "-y", *pkgs]),
                     needs_root=True)]
    return [install_step(target, "install-driver", title, pkgs)]


def plan(request: Request, target: Target, facts: Any) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    flavor = request.options.get("flavor", "open")
    if flavor not in FLAVORS:
        raise RecipeError(f"driver flavor {flavor!r} is unknown", [f"--flavor {f}" for f in FLAVORS])
    branch = None
    if request.version:
        branch = branch_of(request.version)
        known = versions()
        if branch not in known:
            raise RecipeError(f"driver branch {branch} is not one envdoctor knows", ["--version " + b for b in known])
    steps = repo_steps(target) + driver_steps(target, branch, flavor)
    notes = [target_note(target)]
    if facts.value("driver.secure_boot") is True:
        notes.append("Secure Boot is on: the DKMS-built module must be signed with an enrolled key (MOK) to load")
    current = facts.value("driver.version")
    if current:
        notes.append(f"Replaces the installed driver {current}")
    return Plan(title="install the NVIDIA driver ({}) on {}".format(
        f"branch {branch}" if branch else "newest", target.describe), component=COMPONENT,
        version=branch or "latest", method=method, target=target.describe, steps=steps, reboot_required=True,
        notes=notes)


# -- used by the CUDA recipe ------------------------------------------------
def too_old_for(cuda_full: str, facts: Any) -> Optional[Tuple[str, str]]:
    """(installed, needed) when the installed driver cannot run ``cuda_full``; None when fine or unknown.

    The driver each release needs is Table 3 of the CUDA release notes (matrix ``cuda.json``).
    """
    needed = hardware.min_driver_for_cuda(cuda_full)
    if needed is None:
        return None
    installed = facts.value("driver.version")
    if installed:
        try:
            if Version(str(installed)) < Version(needed):
                return str(installed), needed
            return None
        except ValueError:
            pass
    supports = facts.value("driver.cuda_version")
    if supports:
        try:
            mm = Version(cuda_full).release[:2]
            if Version(str(supports)).release[:2] < mm:
                return f"supporting CUDA up to {supports}", needed
        except ValueError:
            return None
    return None

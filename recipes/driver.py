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

import functools
import sys
from typing import Any, List, Optional, Tuple

from packaging.version import Version

from envdoctor import matrix
from envdoctor.install.plan import Plan, RunCommand, Step, exists
from envdoctor.machine import compute_capabilities
from envdoctor.matrix import gpu_support, hardware

from . import RecipeError, Request, Target, install_step, pick_method, repo_steps, target_note

COMPONENT = "driver"
METHODS: Tuple[str, ...] = ("repo",)
FLAVORS = ("open", "proprietary")
CUDA_TABLE_URL = "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html"


def default_method(target: Target) -> str:
    return "repo"


def versions() -> List[str]:
    """Driver branches the matrix knows (each CUDA release's minimum driver), oldest first."""
    return list(_branches())


@functools.lru_cache(maxsize=None)
def _branches() -> Tuple[str, ...]:
    """:func:`versions`, worked out once per loaded matrix (a plan asks it several times per GPU)."""
    branches = set()
    for row in hardware.cuda_releases():
        if Version(row["version"]) < Version("11.0"):
            continue
        for drv in [row["min_driver_linux"], *row.get("driver_by_update", {}).values()]:
            branches.add(str(Version(drv).release[0]))
    return tuple(sorted(branches, key=int))


matrix.DERIVED_CACHES.append(_branches.cache_clear)


def branch_of(version: str) -> str:
    return str(Version(version).release[0])


#: "Starting in the 560 driver release series, the open kernel module flavor is the default and suggested
#: installation" (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html, verified
#: 2026-11-25); an older branch asked for without a flavor gets the proprietary modules it defaulted to.
OPEN_DEFAULT_FROM = 560
#: From this branch on, Debian and Ubuntu lock a branch with NVIDIA's pinning package
#: (``nvidia-driver-pinning-<branch>``, installed before the driver) instead of ``cuda-drivers-<branch>``.
PINNING_FROM = 580
#: The driver guide's "Version locking" page (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/
#: version-locking.html, "DNF 4": RHEL/Rocky 8 and 9) locks a branch with the versionlock plugin.
VERSIONLOCK_PLUGIN = "python3-dnf-plugin-versionlock"
GUIDE = "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/"


def _sh(script: str) -> List[str]:
    """A command needing the running kernel's release (``$(uname -r)``), which an argument list cannot expand."""
    return ["sh", "-c", script]


def preinstall_steps(target: Target) -> List[Step]:
    """The guide's pre-installation actions: the running kernel's headers (DKMS builds the module against them),
    and the repositories DKMS comes from (RHEL/Rocky/Alma 8-9: EPEL with CRB/PowerTools; CentOS 7: EPEL;
    Debian: the contrib component)."""
    # not verified: the driver guide's "Pre-installation Actions" per distribution were not readable in the stored
    # copies (only its table of contents: https://docs.nvidia.com/datacenter/tesla/pdf/Driver_Installation_Guide.pdf,
    # 2.2 "Verify the System has the Correct Kernel Packages Installed"); the commands below are the distributions'
    # own for these packages and repositories (EPEL: https://docs.fedoraproject.org/en-US/epel/getting-started/)
    steps: List[Step] = []
    if target.family == "debian":
        if target.os_id == "debian":
            steps += [Step("install-add-apt-repository", "install add-apt-repository (software-properties-common)",
                           RunCommand(["apt-get", "install", "-y", "software-properties-common"]), needs_root=True),
                      Step("enable-contrib", "enable Debian's contrib component (the driver's DKMS packages need it)",
                           RunCommand(["add-apt-repository", "-y", "contrib"]), needs_root=True)]
        steps.append(Step("kernel-headers", "install the running kernel's headers (DKMS builds the module with them)",
                          RunCommand(_sh('apt-get install -y "linux-headers-$(uname -r)"')), needs_root=True))
        return steps
    if target.package_manager == "yum":
        return [Step("enable-epel", "enable EPEL (DKMS comes from it)", RunCommand(["yum", "install", "-y",
                                                                                   "epel-release"]),
                     needs_root=True, done_if=[exists("/etc/yum.repos.d/epel.repo")]),
                Step("kernel-headers", "install the running kernel's headers (DKMS builds the module with them)",
                     RunCommand(_sh('yum install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)"')),
                     needs_root=True)]
    major = target.version  # dnf config-manager (dnf-plugins-core) is installed by recipes.repo_steps
    if target.os_id == "rhel":
        steps += [Step("enable-crb", f"enable CodeReady Builder for RHEL {major}",
                       RunCommand(["subscription-manager", "repos", "--enable",
                                   f"codeready-builder-for-rhel-{major}-{target.arch}-rpms"]), needs_root=True),
                  Step("enable-epel", "enable EPEL (DKMS comes from it)",
                       RunCommand(["dnf", "install", "-y", "https://dl.fedoraproject.org/pub/epel/"
                                   f"epel-release-latest-{major}.noarch.rpm"]),
                       needs_root=True, done_if=[exists("/etc/yum.repos.d/epel.repo")])]
    else:
        repo = "powertools" if major == "8" else "crb"
        steps += [Step("enable-crb", f"enable the {repo} repository",
                       RunCommand(["dnf", "config-manager", "--set-enabled", repo]), needs_root=True),
                  Step("enable-epel", "enable EPEL (DKMS comes from it)",
                       RunCommand(["dnf", "install", "-y", "epel-release"]), needs_root=True,
                       done_if=[exists("/etc/yum.repos.d/epel.repo")])]
    headers = ('dnf install -y kernel-devel-matched "kernel-headers-$(uname -r)"' if major == "9" else
               'dnf install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)"')
    steps.append(Step("kernel-headers", "install the running kernel's headers (DKMS builds the module with them)",
                      RunCommand(_sh(headers)), needs_root=True))
    return steps


def packages(target: Target, branch: Optional[str], flavor: str) -> Tuple[str, List[str]]:
    """(how, argv tail) for the driver packages on ``target``."""
    if target.family == "debian":
        name = "nvidia-open" if flavor == "open" else "cuda-drivers"
        if branch and int(branch) >= PINNING_FROM:
            # driver guide, "Recent Updates" ("Version locking packages for Ubuntu / Debian": driver pinning
            # packages track a branch; "we suggest to install the pinning package prior to installing the
            # driver"; from 590 cuda-drivers-<branch> is removed): nvidia-driver-pinning-<branch>, then the driver
            # not verified: the guide's APT section of version-locking.html was not in the stored copies; the
            # package name is the one public install scripts use (apt-get install -y nvidia-driver-pinning-580)
            return "pin", [f"nvidia-driver-pinning-{branch}", name]
        if branch:
            if flavor == "open" and int(branch) >= OPEN_DEFAULT_FROM:
                # not verified: the guide's apt row for a branch before the pinning packages was not readable;
                # nvidia-open-<branch> (560 ... 575) is the package public install scripts use from NVIDIA's repo
                return "apt", [f"nvidia-open-{branch}"]
            if flavor == "open":
                raise RecipeError(
                    f"envdoctor cannot pin open-module driver branch {branch} on {target.label}: before "
                    f"{OPEN_DEFAULT_FROM} NVIDIA's repository has no per-branch open metapackage ({GUIDE})",
                    [f"envdoctor install driver --version {branch} --option flavor=proprietary --os {target.label}",
                     f"envdoctor install driver --version {PINNING_FROM} --os {target.label}",
                     f"envdoctor install driver --os {target.label}"])
            # verified 2026-11-22 (package name) against the guide's "Recent Updates" table (cuda-drivers-580 is
            # the pre-590 per-branch proprietary metapackage)
            return "apt", [f"cuda-drivers-{branch}"]
        # verified 2026-11-22 (package names) against
        # https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/advanced-options.html
        # ("Switching between Driver Module Flavors", Debian 12 / Ubuntu): open = nvidia-open,
        # proprietary = cuda-drivers
        return "apt", [name]
    if target.package_manager == "yum":
        # verified 2026-11-22 (package names) against https://github.com/NVIDIA/yum-packaging-nvidia-driver
        # (README: RHEL7 flavors latest-dkms -> nvidia-driver-latest-dkms, and "the branch-XXX flavor locks driver
        # updates to the specified driver branch" -> nvidia-driver-branch-XXX); the CentOS 7 install command itself
        # is in no current NVIDIA guide (RHEL 7 is out of the driver guide's support list)
        return "yum", [f"nvidia-driver-branch-{branch}" if branch else "nvidia-driver-latest-dkms"]
    if branch:
        stream = f"nvidia-driver:{branch}-open" if flavor == "open" else f"nvidia-driver:{branch}-dkms"
    else:
        stream = "nvidia-driver:open-dkms" if flavor == "open" else "nvidia-driver:latest-dkms"
    # stream names verified 2026-11-22 against https://github.com/NVIDIA/yum-packaging-dkms-nvidia (README:
    # streams latest-dkms / XXX-dkms, and open-dkms / XXX-open from 515 on) and, for the open ones,
    # against the guide's Table 5 (below)
    return ("module-enable" if flavor == "open" else "module"), [stream]


def lock_steps(target: Target, branch: Optional[str]) -> List[Step]:
    """Keep a RHEL 8/9 system on ``branch`` (dnf versionlock), as the guide's "Version locking" page does."""
    if not branch or target.family != "rhel" or target.package_manager != "dnf":
        return []
    # verified 2026-11-22 against https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html
    # ("DNF 4", RHEL/Rocky 8 and 9: "Make sure the python3-dnf-plugin-versionlock package is installed",
    # "dnf4 versionlock \*nvidia\*575\*"); Table 5 of kernel-modules.html gives `dnf versionlock \*nvidia\*580\*`
    # for RHEL 10. An argument list needs no backslashes: the pattern reaches dnf unexpanded.
    return [Step("versionlock-plugin", f"install the dnf versionlock plugin ({VERSIONLOCK_PLUGIN})",
                 RunCommand(["dnf", "install", "-y", VERSIONLOCK_PLUGIN]), needs_root=True),
            Step("versionlock-branch", f"lock the driver packages to branch {branch} (dnf versionlock)",
                 RunCommand(["dnf", "versionlock", "add", f"*nvidia*{branch}*"]), needs_root=True)]


def driver_steps(target: Target, branch: Optional[str], flavor: str = "open", minimum: bool = False) -> List[Step]:
    """Steps that install the driver (after NVIDIA's repository is enabled), its pre-installation actions first.
    With ``minimum`` the branch is a floor (CUDA's --with-driver): on Debian/Ubuntu the newest open driver
    satisfies any floor and needs no per-branch package."""
    if minimum and branch and target.family == "debian" and flavor == "open":
        how, pkgs = packages(target, None, flavor)
        title = f"install the NVIDIA driver (open, newest; branch {branch} or newer is needed)"
        branch = None
    else:
        how, pkgs = packages(target, branch, flavor)
        title = "install the NVIDIA driver ({}{})".format(flavor, f", branch {branch}" if branch else ", newest")
    pre = preinstall_steps(target)
    if how == "pin":
        return pre + [install_step(target, "pin-driver-branch", f"lock apt to driver branch {branch} "
                                   f"({pkgs[0]}, before the driver)", [pkgs[0]]),
                      install_step(target, "install-driver", title, pkgs[1:])]
    if how == "module-enable":
        # verified 2026-11-22 against https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
        # (Table 5 "Open GPU kernel module installation", RHEL / Rocky / AlmaLinux 8/9):
        #   dnf module enable nvidia-driver:open-dkms   (a branch: nvidia-driver:580-open)
        #   dnf install nvidia-open
        return pre + [Step("enable-driver-stream", f"enable the {pkgs[0]} module stream",
                           RunCommand(["dnf", "module", "enable", "-y", *pkgs]), needs_root=True),
                      Step("install-driver", title, RunCommand(["dnf", "install", "-y", "nvidia-open"]),
                           needs_root=True)] + lock_steps(target, branch)
    if how == "module":
        # not verified: the guide's proprietary-flavor table (kernel-modules.html, "Proprietary GPU Kernel
        # Modules Installation") was not readable in the stored copies; `dnf module install` of the stream is
        # the form of older CUDA installation guides, not checked against the current driver guide
        return pre + [Step("install-driver", title, RunCommand(["dnf", "module", "install", "-y", *pkgs]),
                           needs_root=True)] + lock_steps(target, branch)
    return pre + [install_step(target, "install-driver", title, pkgs)]


def mok_key(target: Target) -> str:
    """Where DKMS keeps the key it signs modules with: dkms 3 (Debian 12, Ubuntu 24.04, EPEL's) /var/lib/dkms/mok.pub;
    Ubuntu 20.04/22.04's dkms 2 uses shim-signed's key."""
    if target.os_id == "ubuntu" and target.version in ("20.04", "22.04"):
        return "/var/lib/shim-signed/mok/MOK.der"
    return "/var/lib/dkms/mok.pub"


def mok_steps(target: Target) -> List[Step]:
    """Secure Boot: queue DKMS's signing key for enrolment (the MOK manager asks for root's password at the next
    boot, ``--root-pw``), so the module it signed loads."""
    key = mok_key(target)
    # not verified against NVIDIA's guide (its Secure Boot section was not in the stored copies); mokutil's own
    # options: --import KEY, --root-pw (use the root password as the enrolment password)
    return [Step("enroll-mok", f"queue the DKMS signing key {key} for enrolment (Secure Boot is on)",
                 RunCommand(["mokutil", "--import", key, "--root-pw"]), needs_root=True, verify=[exists(key)])]


def choose_branch(target: Target, ccs: List[str]) -> Tuple[Optional[str], str]:
    """(branch, why) for ``install driver`` without --version: the supported branch that drives the GPUs and that
    NVIDIA packages for ``target`` (long-term support first, supported longest); None: the repository's newest.
    RecipeError when no branch NVIDIA packages for ``target`` drives the GPUs."""
    packaged = hardware.branches_packaged(target.matrix_distro, target.version)
    row, why = hardware.recommend_branch(ccs, packaged=packaged)
    if row is not None:
        return row["branch"], why
    if packaged is not None and not hardware.drives_all(packaged[1], ccs):
        raise RecipeError(f"no driver NVIDIA's repository carries for {target.label} drives this machine's GPUs: "
                          f"{why}", [])
    return None, why


def plan(request: Request, target: Target, facts: Any) -> Plan:
    method = pick_method(sys.modules[__name__], request, target)
    ccs = compute_capabilities(facts)
    # each GPU as driver-support judges it (matrix.gpu_support): its PCI device ID against NVIDIA's per-GPU lists,
    # its architecture by NVML's compute capability, else (the driver not loaded) by the lists' name for its ID
    gpus = gpu_support.machine_gpus(facts) if facts is not None else []
    named_ccs = [g.cc for g in gpus if g.reported_cc is None and g.cc]
    branch = None
    unknown_note = []
    chosen_note = []
    if request.version:
        branch = branch_of(request.version)
        known = versions()
        if int(branch) < int(known[0]) or int(branch) > int(known[-1]) + 50:
            raise RecipeError(f"driver branch {branch} is outside the branches NVIDIA's CUDA repositories carry "
                              f"({known[0]} .. {known[-1]})",
                              ["envdoctor install driver --version " + b for b in (known[0], known[-1])])
        if branch not in known:
            # a real branch between the ones the matrix names (565, say): planned, with a warning
            unknown_note = [f"WARNING: driver branch {branch} is not one envdoctor's matrix names (it knows "
                            f"{', '.join(known[-6:])} ...); check that NVIDIA's repository carries it before running"]
        if not hardware.drives_all(branch, ccs):
            good, why = hardware.recommend_branch(ccs)
            # a GPU the machine names: refused in driver-support's words for it (matrix.gpu_support)
            for gpu in gpus:
                said = gpu_support.branch_support(gpu, int(branch))
                if said is not None and said.code == gpu_support.LEGACY:
                    gpu_refusal(target, [gpu], branch, None)
                if said is not None:
                    raise RecipeError(f"driver branch {branch} does not support this machine's {gpu.label()}: "
                                      f"{said.why}; {why}",
                                      [f"envdoctor install driver --version {good['branch']}"] if good else [])
            raise RecipeError(f"driver branch {branch} cannot drive this machine's GPUs (compute capability "
                              f"{', '.join(sorted(set(ccs)))}): {why}",
                              [f"envdoctor install driver --version {good['branch']}"] if good else [])
    else:
        branch, why = choose_branch(target, ccs + named_ccs)
        chosen_note = [f"Driver branch {branch} chosen: {why}" if branch else
                       f"No driver branch pinned: {why}"]
        legacy = legacy_branch(target, gpus, branch)
        if legacy is not None:
            branch, gpu, said = legacy
            packaged = hardware.branches_packaged(target.matrix_distro, target.version)
            if packaged is not None and not packaged[0] <= int(branch) <= packaged[1]:
                raise RecipeError(f"no driver NVIDIA's repository carries for {target.label} drives this machine's "
                                  f"{gpu.label()}: {said.why}, and the repository carries branches {packaged[0]} .. "
                                  f"{packaged[1]}", [])
            chosen_note = [f"Driver branch {branch} chosen: this machine's {gpu.label()}: {said.why}"]
    old_branch = branch is not None and int(branch) < OPEN_DEFAULT_FROM
    pre_turing = [cc for cc in ccs if hardware.open_modules_drive(cc) is False]
    open_only = [cc for cc in ccs if hardware.proprietary_modules_drive(cc) is False]
    if pre_turing and open_only:
        raise RecipeError(f"no NVIDIA kernel module flavor drives all of this machine's GPUs: compute capability "
                          f"{', '.join(sorted(set(pre_turing)))} needs the proprietary modules, "
                          f"{', '.join(sorted(set(open_only)))} the open ones", [])
    no_open = [g for g in gpus if gpu_support.flavor_support(g, "open") is not None]
    no_proprietary = [g for g in gpus if gpu_support.flavor_support(g, "proprietary") is not None]
    if no_open and no_proprietary:
        raise RecipeError(f"no NVIDIA kernel module flavor drives all of this machine's GPUs: "
                          f"{', '.join(g.label() for g in no_open)} needs the proprietary modules, "
                          f"{', '.join(g.label() for g in no_proprietary)} the open ones", [])
    flavor = request.options.get("flavor") or ("proprietary" if (old_branch or pre_turing or no_open)
                                               and not (open_only or no_proprietary) else "open")
    if flavor not in FLAVORS:
        raise RecipeError(f"driver flavor {flavor!r} is unknown",
                          [f"envdoctor install driver --option flavor={f}" for f in FLAVORS])
    gpu_refusal(target, gpus, branch, flavor)
    if flavor == "proprietary" and open_only:
        raise RecipeError(f"NVIDIA's proprietary kernel modules cannot drive this machine's GPU (compute capability "
                          f"{', '.join(sorted(set(open_only)))}): Blackwell ({hardware.OPEN_ONLY_MIN_CC}) and newer "
                          "is driven by the open kernel modules only",
                          ["envdoctor install driver --option flavor=open"])
    if flavor == "open" and pre_turing:
        raise RecipeError(f"NVIDIA's open kernel modules cannot drive this machine's GPU (compute capability "
                          f"{', '.join(sorted(set(pre_turing)))}): they drive Turing (7.5) and newer only",
                          ["envdoctor install driver --option flavor=proprietary"])
    steps = repo_steps(target, request.mirror) + driver_steps(target, branch, flavor)
    notes = unknown_note + chosen_note + [target_note(target, request.mirror)]
    if no_open and not pre_turing and "flavor" not in request.options:
        no_gsp = gpu_support.flavor_support(no_open[0], "open")
        notes.append(f"NVIDIA's open kernel modules do not drive this machine's {no_open[0].label()}: this GPU "
                     f"{no_gsp.why if no_gsp is not None else ''}; the proprietary flavor is installed")
    elif pre_turing and "flavor" not in request.options:
        notes.append(f"Compute capability {', '.join(sorted(set(pre_turing)))} predates Turing: NVIDIA's open kernel "
                     "modules do not drive it, the proprietary flavor is installed")
    elif old_branch and "flavor" not in request.options:
        notes.append(f"Branch {branch} predates the open kernel modules as NVIDIA's default ({OPEN_DEFAULT_FROM}): "
                     "the proprietary flavor is installed (--option flavor=open to ask for the open one)")
    secure = facts.value("driver.secure_boot") is True
    if secure:
        steps += mok_steps(target)
        notes.append(f"Secure Boot is on: the DKMS-built module is signed with {mok_key(target)}; that key is queued "
                     "for enrolment, confirm it in the MOK manager at the next boot (root's password)")
    if branch:
        notes.append(f"The system stays on driver branch {branch}: "
                     + ("NVIDIA's pinning package holds apt to it" if target.family == "debian"
                        and int(branch) >= PINNING_FROM else
                        "dnf versionlock holds the packages" if target.package_manager == "dnf" else
                        "the branch metapackage tracks it"))
    current = facts.value("driver.version")
    if current:
        notes.append(f"Replaces the installed driver {current}")
    return Plan(title="install the NVIDIA driver ({}) on {}".format(
        f"branch {branch}" if branch else "newest", target.describe), component=COMPONENT,
        version=branch or "latest", method=method, target=target.describe, steps=steps, reboot_required=True,
        mok_enrolment=secure, notes=notes)


def planned_branch(target: Target, branch: Optional[str]) -> int:
    """The branch a plan installs: ``branch``, else the newest NVIDIA's repository carries for ``target`` (else the
    newest the matrix knows)."""
    if branch:
        return int(branch)
    packaged = hardware.branches_packaged(target.matrix_distro, target.version)
    return packaged[1] if packaged is not None else int(versions()[-1])


def legacy_branch(target: Target, gpus: List[gpu_support.Gpu], branch: Optional[str]
                  ) -> Optional[Tuple[str, gpu_support.Gpu, gpu_support.Unsupported]]:
    """(branch, GPU, why) when a GPU is supported only up to an older branch than the one planned
    (:func:`planned_branch`) and NVIDIA's repositories carry that branch: the oldest such, which ``install driver``
    without --version installs (as driver-support's fix says); None otherwise."""
    planned = planned_branch(target, branch)
    found = [(said.branch, gpu, said) for gpu in gpus for said in [gpu_support.branch_support(gpu, planned)]
             if said is not None and said.code == gpu_support.LEGACY and said.branch
             and int(said.branch) >= int(versions()[0])]
    return min(found, key=lambda f: int(f[0])) if found else None


def gpu_refusal(target: Target, gpus: List[gpu_support.Gpu], branch: Optional[str], flavor: Optional[str]) -> None:
    """RecipeError when the driver planned (:func:`planned_branch`, with modules of ``flavor``) does not support one
    of ``gpus``, by the rule driver-support judges an installed driver with
    (:func:`envdoctor.matrix.gpu_support.support`) and in its words."""
    planned = planned_branch(target, branch)
    for gpu in gpus:
        said = gpu_support.support(gpu, planned, flavor)
        if said is None:
            continue
        if said.code == gpu_support.LEGACY:
            carried = said.branch is not None and int(said.branch) >= int(versions()[0])
            raise RecipeError(f"driver branch {planned} does not support this machine's {gpu.label()}: {said.why}"
                              + ("" if carried else f" (NVIDIA's CUDA repositories carry branches {versions()[0]} "
                                                    "and newer only)"),
                              [f"envdoctor install driver --version {said.branch}"] if carried else [])
        if said.code == gpu_support.TOO_NEW:
            raise RecipeError(f"driver branch {planned} does not support this machine's {gpu.label()}: {said.why}",
                              [f"envdoctor install driver --version {branch_of(said.branch or '0')}"])
        if said.code == gpu_support.OPEN_UNSUPPORTED:
            raise RecipeError(f"NVIDIA's open kernel modules cannot drive this machine's {gpu.label()}: this GPU "
                              f"{said.why}", ["envdoctor install driver --option flavor=proprietary"])
        raise RecipeError(f"NVIDIA's proprietary kernel modules cannot drive this machine's {gpu.label()}: "
                          f"{said.why}", ["envdoctor install driver --option flavor=open"])


# -- used by the CUDA recipe ------------------------------------------------
def too_old_for(cuda_full: str, facts: Any) -> Optional[Tuple[str, str]]:
    """(installed, needed) when the installed driver does not run ``cuda_full`` natively (through minor-version
    compatibility at most, or not at all); None when it does, or when that is unknown.

    Decided as ``diagnose`` decides it (:func:`envdoctor.matrix.hardware.driver_runs`, over Table 3 of the CUDA
    release notes: matrix ``cuda.json``); ``needed`` is the driver Table 3 gives the release (or its update).
    """
    needed = hardware.min_driver_for_cuda(cuda_full)
    if needed is None:
        return None
    installed = facts.value("driver.version")
    supports = facts.value("driver.cuda_version")
    verdict = hardware.driver_runs(cuda_full, *hardware.driver_of(facts))
    if verdict in (None, "ok"):
        return None
    if isinstance(installed, str) and hardware.parse_version(installed) is not None:
        return installed, needed
    return f"supporting CUDA up to {supports}", needed

"""Install recipes: pure functions ``(request, target, facts) -> Plan``.

One module per component (``recipes.cuda``, ``recipes.driver`` ...), each
exposing ``COMPONENT``, ``METHODS``, ``default_method(target)``, ``versions()``
and ``plan(request, target, facts)``.  :mod:`recipes.cuda_redist` holds the
no-root redist method (CUDA or cuDNN into a prefix); it needs a manifest
fetched by the caller, so the CLI drives it directly.

A recipe never touches the machine; the executor alone does.  This module
holds the shared vocabulary: :class:`Target` (the one class, :mod:`envdoctor.target`), :class:`Request`,
:class:`RecipeError`, the registry :data:`RECIPES`, and the helpers for
NVIDIA's CUDA package repositories that several recipes use.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from packaging.version import Version

from envdoctor import frameworks, osinfo, versions
from envdoctor.install.plan import RunCommand, Step, exists
from envdoctor.matrix import hardware
from envdoctor.target import Target


class RecipeError(Exception):
    """An unsupported or impossible request; ``alternatives`` are shown to the user (CLI exit 2)."""

    def __init__(self, message: str, alternatives: Optional[Sequence[str]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.alternatives: List[str] = list(alternatives or [])

    def __str__(self) -> str:
        if not self.alternatives:
            return self.message
        return self.message + "\n  alternatives:\n" + "\n".join("    " + a for a in self.alternatives)


# -- targets ---------------------------------------------------------------
ARCHES = ("x86_64", "aarch64")

SUPPORTED_TARGETS = osinfo.SYSTEMS  # the one list of systems --os names (advise's too)


def parse_target(text: str, arch: str = "x86_64") -> Target:
    """``ubuntu22.04``, ``ubuntu-22.04``, ``rhel9``, ``rocky8-aarch64`` (the ``--os`` grammar and list ``advise``
    shares: :func:`envdoctor.osinfo.system`) -> Target; RecipeError for anything else, in advise's words."""
    try:
        spec = osinfo.system(text)
    except osinfo.OsSpecError as exc:
        raise RecipeError(str(exc), []) from None
    a = spec.arch or arch
    if a not in ARCHES:
        raise RecipeError(f"architecture {a!r} is not supported", [f"--os {spec.os_id}{spec.version}-{x}"
                                                                      for x in ARCHES])
    return Target(spec.os_id, spec.version, osinfo.family(spec.os_id), a)


def target_from_facts(facts: Any) -> Target:
    """This machine's install target: the system side of the machine's one :class:`Target`
    (:func:`envdoctor.machine.target_from_facts`, from ``os.id``, ``os.version`` and ``os.arch``), its release as
    NVIDIA's repositories name it, refused when no recipe targets it."""
    from envdoctor.machine import target_from_facts as machine

    seen = machine(facts)
    os_id, version = seen.os_id, seen.version
    arch = {"amd64": "x86_64"}.get(seen.arch, seen.arch)
    if osinfo.family(os_id) == "rhel" or os_id == "debian":
        version = version.split(".")[0]
    label = f"{os_id}{version}" if os_id else "an unknown system"
    if f"{os_id}{version}" not in SUPPORTED_TARGETS:
        raise RecipeError(f"this machine ({label}) is not a supported install target; plan for one with --os",
                          ["--os " + t for t in SUPPORTED_TARGETS])
    if arch not in ARCHES:
        raise RecipeError(f"this machine's architecture {arch!r} is not supported")
    return Target(os_id, version, osinfo.family(os_id), arch)


# -- requests --------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """What ``envdoctor install`` was asked: the component, its version and method, and the options that shape the
    plan."""
    component: str
    version: Optional[str]
    method: Optional[str]
    prefix: Optional[str] = None
    mirror: Optional[str] = None
    force: bool = False
    python: Optional[str] = None  # interpreter for pip
    venv: Optional[str] = None  # pip: the virtual environment to make or use (default: under the user's data dir)
    with_driver: bool = False
    options: Mapping[str, str] = field(default_factory=dict)
    #: the pre-flight's judge of a framework build on this machine (:func:`envdoctor.preflight.build_judge`, the
    #: command line passes it): a framework recipe chooses, and names as ways out, only builds it accepts, as
    #: ``advise`` recommends them
    accept: Optional[Callable[[str, Any], List[str]]] = field(default=None, compare=False)


# -- registry --------------------------------------------------------------
#: Component -> its recipe module: the system's components, then each framework plug-in's recipe (its ``recipe``,
#: :data:`envdoctor.frameworks.RECIPES`: the module of that name here).
RECIPES: Dict[str, str] = dict({
    "driver": f"{__name__}.driver",
    "cuda": f"{__name__}.cuda",
    "cudnn": f"{__name__}.cudnn",
    "nccl": f"{__name__}.nccl",
    "container-toolkit": f"{__name__}.container_toolkit",
}, **{recipe: f"{__name__}.{recipe}" for recipe in frameworks.RECIPES})


def load_recipe(component: str) -> ModuleType:
    """The recipe module of ``component`` (imported on first use)."""
    if component not in RECIPES:
        raise RecipeError(f"no recipe for {component!r}", sorted(RECIPES))
    name = RECIPES[component]
    if component in frameworks.RECIPES and name not in sys.modules and importlib.util.find_spec(name) is None:
        # a framework's recipe is the one recipe every framework plug-in is installed by, from its declared data; a
        # module recipes/<recipe>.py holds the build hook where its builds need code of their own (and makes itself
        # that recipe on import), else this one plans the plug-in's pip_package
        from .framework import recipe_module

        sys.modules[name] = recipe_module(frameworks.BY_NAME[frameworks.RECIPES[component]])
    return importlib.import_module(name)


def driver_cuda_major(facts: Any) -> int:
    """The newest CUDA major the installed driver runs natively, as ``compat.driver-vs-cuda`` reads it
    (:func:`envdoctor.matrix.hardware.driver_cuda` of :func:`~envdoctor.matrix.hardware.driver_of`: the CUDA version
    the driver reports, else Table 3's for a Linux driver's version); 0 when unknown."""
    cuda = hardware.driver_cuda(*hardware.driver_of(facts))
    return cuda[0] if cuda is not None else 0


def driver_runs_build(facts: Any, major: Any) -> bool:
    """Whether the installed driver runs a library built for CUDA ``major`` (``"12"``): the rule
    ``compat.driver-vs-cuda`` applies (:func:`envdoctor.matrix.hardware.driver_runs` of a major: a CUDA 12 build
    runs on a CUDA 13 driver, not the reverse), of the same facts (:func:`~envdoctor.matrix.hardware.driver_of`:
    the CUDA the driver reports, else Table 3's for its version); True when that is unknown."""
    return hardware.driver_runs(str(major), *hardware.driver_of(facts)) != "too_old"


def pick_method(module: Any, request: Request, target: Target) -> str:
    method = request.method or module.default_method(target)
    if method not in module.METHODS:
        raise RecipeError(f"{module.COMPONENT} cannot be installed with --method {method}",
                          [f"--method {m}" for m in module.METHODS])
    return method


def pick_version(wanted: str, known: Sequence[str], component: str) -> str:
    """``wanted`` itself when known, else the newest known with ``wanted`` as prefix ("12.4" -> "12.4.1").

    RecipeError listing the known versions otherwise.  ``wanted`` must already be validated.
    """
    if wanted in known:
        return wanted
    w = Version(wanted).release
    matches = [k for k in known if Version(k).release[:len(w)] == w]
    if matches:
        return max(matches, key=Version)
    raise RecipeError(f"{component} {wanted} is not a version envdoctor knows",
                      ["--version " + k for k in nearest_versions(wanted, known)])


#: How many known releases an unknown ``--version`` is answered with.
SUGGESTED_VERSIONS = 5


def nearest_versions(wanted: str, known: Sequence[str], count: int = SUGGESTED_VERSIONS) -> List[str]:
    """The releases to offer for an unknown ``wanted``: the newest ``count`` of its major when envdoctor knows that
    major (``12.99`` -> the newest 12.x), else the newest ``count`` of all; oldest first, the newest last."""
    parsed = [(v, k) for v, k in ((versions.parse(k), k) for k in known) if v is not None]
    major = versions.major(wanted)
    same = [p for p in parsed if p[0].major == major]
    return [k for _v, k in sorted(same or parsed)[-count:]]


# -- NVIDIA's CUDA package repository (driver, CUDA, cuDNN, NCCL all come from it) --
REPO_BASE = "https://developer.download.nvidia.com/compute/cuda/repos"
#: The apt keyring package NVIDIA's guide installs; it also writes the repo's sources list.
#: https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ ("Network Repository Installation", Ubuntu/Debian)
KEYRING_DEB = "cuda-keyring_1.1-1_all.deb"
KEYRING_FILE = "/usr/share/keyrings/cuda-archive-keyring.gpg"
DOWNLOAD_DIR = "/var/tmp/envdoctor"


def repo_url(target: Target, mirror: Optional[str] = None) -> str:
    """NVIDIA's repository for ``target``, or the same layout below ``mirror`` (``--mirror``, already validated:
    ``<mirror>/<distro>/<arch>``, as ``.../compute/cuda/repos`` is laid out)."""
    return f"{(mirror or REPO_BASE).rstrip('/')}/{target.repo_distro}/{target.repo_arch}"


def repo_steps(target: Target, mirror: Optional[str] = None) -> List[Step]:
    """Enable NVIDIA's CUDA repository (or a mirror of it) on ``target`` (skipped when already enabled)."""
    url = repo_url(target, mirror)
    if target.family == "debian":
        deb = f"{DOWNLOAD_DIR}/{KEYRING_DEB}"
        # https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ (Ubuntu / Debian, network repo):
        #   wget https://developer.download.nvidia.com/compute/cuda/repos/<distro>/<arch>/cuda-keyring_1.1-1_all.deb
        #   sudo dpkg -i cuda-keyring_1.1-1_all.deb ; sudo apt-get update
        # verified 2026-11-22 (keyring file name and its URL per distro/arch) against
        # https://github.com/NVIDIA/cuda-repo-management (README "GPG keys": debian12 entrypoint
        # .../repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb); not verified: the guide's own "Network Repo
        # Installation for Ubuntu/Debian" text (only the start of
        # https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ is in the stored copies)
        # NVIDIA publishes no checksum for the keyring package, so this is a plain HTTPS fetch (as in the
        # guide), not a Download step (which requires a sha256); every package apt installs afterwards
        # is verified against the key it holds.
        return [
            Step("fetch-cuda-keyring", f"fetch NVIDIA's repository key package {KEYRING_DEB} over HTTPS",
                 RunCommand(["curl", "-fsSL", "--create-dirs", "-o", deb, f"{url}/{KEYRING_DEB}"]),
                 needs_root=True, done_if=[exists(KEYRING_FILE)], verify=[]),
            Step("install-cuda-keyring", "install it (adds the NVIDIA CUDA apt repository)",
                 RunCommand(["dpkg", "-i", deb]), needs_root=True, done_if=[exists(KEYRING_FILE)],
                 verify=[exists(KEYRING_FILE)]),
            Step("apt-update", "refresh the package lists", RunCommand(["apt-get", "update"]), needs_root=True),
        ]
    repo_file = f"cuda-{target.repo_distro}.repo"
    dest = f"/etc/yum.repos.d/{repo_file}"
    if target.package_manager == "yum":
        # CentOS 7 / RHEL 7 (https://docs.nvidia.com/cuda/archive/12.3.2/cuda-installation-guide-linux/):
        #   sudo yum-config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel7/x86_64/cuda-rhel7.repo
        # not verified: the RHEL 7 section of the archived 12.3.2 guide was not in the stored copies
        argv = ["yum-config-manager", "--add-repo", f"{url}/{repo_file}"]
    else:
        # https://docs.nvidia.com/cuda/cuda-installation-guide-linux/ (RHEL / Rocky, network repo):
        #   sudo dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/cuda-rhel9.repo
        # verified 2026-11-22 (the .repo entrypoint URL) against https://github.com/NVIDIA/cuda-repo-management
        # (README "GPG keys": .../repos/<distro>/<arch>/cuda-<distro>.repo); not verified: the guide's own
        # "Network Repo Installation for RHEL" text (only the start of the guide is in the stored copies)
        argv = ["dnf", "config-manager", "--add-repo", f"{url}/{repo_file}"]
    add = Step("add-cuda-repo", f"add NVIDIA's CUDA repository ({repo_file})", RunCommand(argv),
               needs_root=True, done_if=[exists(dest)], verify=[exists(dest)])
    if target.package_manager == "yum":
        return [Step("yum-utils", "install yum-config-manager (yum-utils)",
                     RunCommand(["yum", "install", "-y", "yum-utils"]), needs_root=True, done_if=[exists(dest)]), add]
    # `dnf config-manager` is a plugin (dnf-plugins-core), absent from minimal installs and container images
    return [Step("dnf-plugins", "install dnf's config-manager (dnf-plugins-core)",
                 RunCommand(["dnf", "install", "-y", "dnf-plugins-core"]), needs_root=True, done_if=[exists(dest)]),
            add]


def install_step(target: Target, step_id: str, title: str, packages: Sequence[str]) -> Step:
    """``apt-get install -y ...`` / ``dnf install -y ...`` / ``yum install -y ...`` as root."""
    return Step(step_id, title, RunCommand([target.package_manager, "install", "-y", *packages]), needs_root=True)


def target_note(target: Target, mirror: Optional[str] = None) -> str:
    return "Planned for {}; {} {}/".format(target.describe, "mirror of NVIDIA's repository" if mirror else
                                          "NVIDIA repository", repo_url(target, mirror))

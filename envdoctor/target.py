"""The one :class:`Target`: the system and machine that ``advise`` answers for and an install recipe plans for.

``advise`` fills the machine's side (driver, the GPUs' compute capabilities, Python, platform) from probe
facts or the command line; ``install`` the system's side (distribution, release, family, architecture:
``recipes.parse_target``/``recipes.target_from_facts``), and the recipes that pick a framework build ask
:func:`envdoctor.advise.choose_build` with a Target of the machine. Nothing here reads the machine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Optional, Tuple

#: The probes whose facts a Target is made from (OS, driver, GPUs, interpreter): what ``advise``, ``install``,
#: ``dockerfile``, ``fit`` and the MCP server's tools read of a machine, without waiting for Docker, compilers or
#: every framework, nor for one of them that hangs.
PLANNING_PROBES = ("os", "driver", "gpu", "python")


@dataclass(frozen=True)
class Target:
    """The system (distribution, release, family, architecture) and machine (driver, GPUs, Python, platform)
    planned for."""
    os_id: str = ""  # distro's id: "ubuntu", "debian", "rhel", "rocky" ... ("" when unknown)
    version: str = ""  # the release: "22.04", "12", "9" (a recipe target), or as the machine reports it
    family: str = ""  # "debian" | "rhel" (envdoctor.osinfo.FAMILIES)
    arch: str = "x86_64"  # "x86_64" | "aarch64"
    driver: Optional[str] = None
    cc: Optional[str] = None  # the lowest compute capability of the machine's GPUs (the one shown)
    gpu: Optional[str] = None
    python: Optional[str] = None
    platform: str = "linux-x86_64"  # the wheels' platform: linux-x86_64, linux-aarch64, wsl2
    origin: Tuple[Tuple[str, str], ...] = ()  # where each value came from (a fact key, "--driver" ...)
    #: False when the machine was seen to have no NVIDIA GPU at all (none via NVML, none on the PCI bus).
    gpu_present: Optional[bool] = None
    #: every GPU's compute capability (a build must carry code for each); () means just ``cc``
    ccs: Tuple[str, ...] = ()

    # -- the system -------------------------------------------------------------------------------
    @property
    def os_version(self) -> str:
        return self.version

    @property
    def label(self) -> str:
        return f"{self.os_id}{self.version}"

    @property
    def describe(self) -> str:
        return f"{self.label} {self.arch}"

    @property
    def matrix_distro(self) -> str:
        """The key of cuda.json ``distributions``: RHEL rebuilds (CentOS, Rocky, Alma) count as rhel."""
        return "rhel" if self.family == "rhel" else self.os_id

    @property
    def repo_distro(self) -> str:
        """NVIDIA's repository folder name: ubuntu2204, debian12, rhel9 (rebuilds use RHEL's)."""
        if self.family == "rhel":
            return "rhel" + self.version
        return self.os_id + self.version.replace(".", "")

    @property
    def repo_arch(self) -> str:
        """NVIDIA's repository architecture folder: x86_64, or sbsa for 64-bit Arm servers."""
        return "sbsa" if self.arch == "aarch64" else "x86_64"

    @property
    def package_manager(self) -> str:
        if self.family == "debian":
            return "apt-get"
        return "yum" if self.version == "7" else "dnf"

    # -- the machine ------------------------------------------------------------------------------
    @property
    def gpu_ccs(self) -> Tuple[str, ...]:
        """The compute capabilities a build must carry code for: every GPU's, else the one given."""
        return self.ccs or ((self.cc,) if self.cc else ())

    def origin_of(self, name: str) -> str:
        return dict(self.origin).get(name, "")

    def merged(self, **given: Optional[str]) -> Target:
        """This target with the explicitly given (non-None) values replacing the machine's (``os_version``
        is ``version``; a given ``cc`` replaces every GPU's)."""
        from . import osinfo

        values: Dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        origin = dict(self.origin)
        origin.update({k: "--" + ("os" if k in ("os_id", "os_version") else k) for k in values})
        if "os_version" in values:
            values["version"] = values.pop("os_version")
        if "os_id" in values:
            values["family"] = osinfo.family(values["os_id"]) or ""
        if "cc" in values:
            values["ccs"] = ()
        return replace(self, origin=tuple(sorted(origin.items())), **values)

    def to_dict(self) -> Dict[str, Any]:
        return {"driver": self.driver, "compute_capability": self.cc, "gpu": self.gpu, "os_id": self.os_id or None,
                "os_version": self.version or None, "python": self.python, "platform": self.platform,
                "origin": dict(self.origin)}

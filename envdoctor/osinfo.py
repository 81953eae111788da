"""One home for what envdoctor knows about Linux distributions: their family, the name NVIDIA's tables
and repositories use for them, and the one grammar of ``--os`` (``advise`` and ``install`` both parse it
here).

Ids are the ``distro`` library's normalised ids (``distro.id()``): Oracle Linux is ``oracle`` (its
os-release says ``ol``), Red Hat is ``rhel``, openSUSE Leap is ``opensuse``. What a user types goes
through :func:`normalize_id` first, so ``ol9``, ``oracle9`` and ``oracle-9`` mean the same system.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional, Tuple

import distro

#: distro's normalised id -> envdoctor's OS family (what decides the package manager and the recipes).
FAMILIES = {
    "ubuntu": "debian", "debian": "debian", "linuxmint": "debian", "pop": "debian",
    "rhel": "rhel", "centos": "rhel", "rocky": "rhel", "almalinux": "rhel", "oracle": "rhel", "fedora": "rhel",
    "amzn": "rhel", "scientific": "rhel", "cloudlinux": "rhel",
    "sles": "suse", "opensuse": "suse", "opensuse-tumbleweed": "suse",
    "arch": "arch", "manjaro": "arch",
}

#: Rebuilds of RHEL that NVIDIA's tables and repositories list under ``rhel`` (by major version).
RHEL_REBUILDS = ("rhel", "centos", "rocky", "almalinux", "oracle")

#: Names users type for a distribution, beyond distro's own normalisation.
_TYPED = {"alma": "almalinux", "redhat": "rhel", "oraclelinux": "oracle", "opensuse-leap": "opensuse"}

#: Machine architectures by the names envdoctor uses (``uname -m``), with the aliases people type.
ARCH_ALIASES = {"amd64": "x86_64", "x86_64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64",
                "sbsa": "aarch64"}

#: ``--os``: an id, an optional separator, a version, an optional architecture: ``ubuntu22.04``,
#: ``ubuntu-22.04``, ``rocky8-aarch64``, ``ubuntu 24.04``.
_OS = re.compile(r"^([a-z][a-z-]*?)[-_ ]?(\d+(?:\.\d+)*)(?:[-_ ]([a-z0-9_]+))?$")


class OsSpec(NamedTuple):
    """A system named on the command line: distro id, version as typed, architecture (None: not given)."""

    os_id: str
    version: str
    arch: Optional[str] = None

    @property
    def family(self) -> str:
        return family(self.os_id)


class OsSpecError(ValueError):
    """``--os`` text that is not a distribution and version."""


def normalize_id(text: str) -> str:
    """A distribution id as ``distro`` normalises it (``ol`` -> ``oracle``, ``redhat`` -> ``rhel``)."""
    key = text.strip().lower().replace(" ", "")
    key = _TYPED.get(key, key)
    key = getattr(distro, "NORMALIZED_OS_ID", {}).get(key, key)
    return getattr(distro, "NORMALIZED_DISTRO_ID", {}).get(key, key)


def normalize_arch(text: str) -> Optional[str]:
    return ARCH_ALIASES.get(text.strip().lower())


def family(distro_id: str, like: str = "") -> str:
    """The family of ``distro_id``, else of the first id in ``like`` (os-release's ``ID_LIKE``) that has one."""
    for candidate in [distro_id] + like.split():
        fam = FAMILIES.get(normalize_id(candidate)) if candidate else None
        if fam:
            return fam
    return "other"


def parse_os(text: str) -> OsSpec:
    """The one ``--os`` grammar: ``ubuntu22.04``, ``ubuntu-22.04``, ``rhel9``, ``rocky8-aarch64``, ``ol9``."""
    m = _OS.match((text or "").strip().lower())
    if not m:
        raise OsSpecError("--os %r is not a distribution and version such as ubuntu22.04, rhel9 or "
                          "rocky8-aarch64" % (text,))
    arch = None
    if m.group(3):
        arch = normalize_arch(m.group(3))
        if arch is None:
            raise OsSpecError("--os %r: architecture %r is not x86_64 or aarch64" % (text, m.group(3)))
    return OsSpec(normalize_id(m.group(1)), m.group(2), arch)


def nvidia_distro(os_id: str, version: str) -> Tuple[str, str]:
    """The (distribution, version) NVIDIA's tables use for a system: RHEL rebuilds are ``rhel``; Ubuntu
    keeps ``22.04``, every other distribution goes by its major version."""
    os_id = normalize_id(os_id)
    if os_id == "ubuntu":
        return os_id, version
    return ("rhel" if os_id in RHEL_REBUILDS else os_id), version.split(".")[0]

"""One home for what envdoctor knows about Linux distributions: their family, the name NVIDIA's tables
and repositories use for them, and the one grammar of ``--os`` (``advise`` and ``install`` both parse it
here).

Ids are the ``distro`` library's normalised ids (``distro.id()``): Oracle Linux is ``oracle`` (its
os-release says ``ol``), Red Hat is ``rhel``, openSUSE Leap is ``opensuse``. What a user types goes
through :func:`normalize_id` first, so ``ol9``, ``oracle9`` and ``oracle-9`` mean the same system.
"""

from __future__ import annotations

import io
import re
from functools import cached_property
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

import distro

from . import lazyre

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

#: The systems ``--os`` names, in ``advise`` and ``install`` alike: those envdoctor's install recipes plan for (NVIDIA's
#: repositories and runfiles for each; CONTRIBUTING.md, "an install target"), as ``id`` + version.
SYSTEMS = ["ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "debian12", "centos7", "centos9", "rhel8", "rhel9",
           "rocky8", "rocky9", "almalinux8", "almalinux9"]

#: Machine architectures by the names envdoctor uses (``uname -m``), with the aliases people type.
ARCH_ALIASES = {"amd64": "x86_64", "x86_64": "x86_64", "x64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64",
                "sbsa": "aarch64"}

#: ``--os``: an id, an optional separator, a version, an optional architecture: ``ubuntu22.04``,
#: ``ubuntu-22.04``, ``rocky8-aarch64``, ``ubuntu 24.04``.
_OS = lazyre.compile(r"^([a-z][a-z-]*?)[-_ ]?(\d+(?:\.\d+)*)(?:[-_ ]([a-z0-9_]+))?$")


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


def system(text: str) -> OsSpec:
    """``--os`` of ``advise`` and ``install``: the one grammar (:func:`parse_os`) and the one list
    (:data:`SYSTEMS`); anything else is refused with the same words by both."""
    spec = parse_os(text)
    if spec.os_id + spec.version not in SYSTEMS:
        raise OsSpecError("--os %r is not a system envdoctor plans for; one of: %s (append -aarch64 for Arm "
                          "servers)" % (text, ", ".join(SYSTEMS)))
    return spec


#: The python3 each release installs from its own archive (``apt-get install python3``, ``dnf install
#: python3``), by (family or id, major[.minor]). Sources: packages.ubuntu.com (python3 in bionic, focal,
#: jammy, noble), packages.debian.org (buster, bullseye, bookworm, trixie), RHEL's "Installing and using
#: Python" (RHEL 8: python3 is 3.6; RHEL 9: 3.9; RHEL 10: 3.12), the same for its rebuilds.
SYSTEM_PYTHON = {
    ("ubuntu", "18.04"): "3.6", ("ubuntu", "20.04"): "3.8", ("ubuntu", "22.04"): "3.10", ("ubuntu", "24.04"): "3.12",
    ("debian", "10"): "3.7", ("debian", "11"): "3.9", ("debian", "12"): "3.11", ("debian", "13"): "3.13",
    ("rhel", "8"): "3.6", ("rhel", "9"): "3.9", ("rhel", "10"): "3.12",
}


def system_python(os_id: str, version: str) -> Optional[str]:
    """The python3 X.Y a distribution release installs from its own archive (None: not known)."""
    os_id = normalize_id(os_id)
    if os_id == "ubuntu":
        return SYSTEM_PYTHON.get(("ubuntu", version))
    key = "rhel" if os_id in RHEL_REBUILDS else os_id
    return SYSTEM_PYTHON.get((key, version.split(".")[0]))


def nvidia_distro(os_id: str, version: str) -> Tuple[str, str]:
    """The (distribution, version) NVIDIA's tables use for a system: RHEL rebuilds are ``rhel``; Ubuntu
    keeps ``22.04``, every other distribution goes by its major version."""
    os_id = normalize_id(os_id)
    if os_id == "ubuntu":
        return os_id, version
    return ("rhel" if os_id in RHEL_REBUILDS else os_id), version.split(".")[0]


# --------------------------------------------------------------------------- the loader's directories

#: Where glibc looks after the cache when the distribution is not known: the union of Debian/Ubuntu's multiarch
#: directories and those other distributions use (Fedora/RHEL /lib64 and /usr/lib64, Arch /usr/lib).
LOADER_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
               "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
#: Debian's multiarch triplet per machine (``uname -m``).
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}
#: glibc's own search path ("system search path") per distribution family on a 64-bit machine, built in when glibc
#: is compiled (its slibdir and libdir): Debian's glibc packages use the multiarch directories, then /lib and /usr/lib
#: (``ld.so --help`` of Debian 12's glibc 2.36-9+deb12u14: "/lib/x86_64-linux-gnu (system search path)",
#: "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"); glibc's default layout for 64-bit x86-64 and AArch64, which
#: Fedora/RHEL and SUSE keep, is /lib64 then /usr/lib64 (sysdeps/unix/sysv/linux/x86_64/64/configure: slibdir
#: /lib64, libdir /usr/lib64); Arch builds glibc with slibdir and libdir /usr/lib.
FAMILY_DIRS: Dict[str, Callable[[str], Tuple[str, ...]]] = {
    "debian": lambda triplet: ("/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"),
    "rhel": lambda _triplet: ("/lib64", "/usr/lib64"),
    "suse": lambda _triplet: ("/lib64", "/usr/lib64"),
    "arch": lambda _triplet: ("/usr/lib",),
}
#: Where the NVIDIA driver's packages and its installer put its user-space libraries: the /usr half of
#: :data:`LOADER_DIRS` (on a merged-/usr system each /lib directory is a link to its /usr twin, and the driver's
#: files would be found twice).
DRIVER_DIRS = tuple(d for d in LOADER_DIRS if d.startswith("/usr/"))
#: Where the NVIDIA GPU Operator's driver container mounts its root on the host.
GPU_OPERATOR_ROOT = "/run/nvidia/driver"
#: WSL 2: the Windows NVIDIA driver's libraries (libcuda, libnvidia-ml), mounted into the Linux system.
WSL_LIB_DIR = "/usr/lib/wsl/lib"
#: Where nvidia-docker 1's driver volume (``com.nvidia.volumes.needed="nvidia_driver"``) put the driver in a
#: container; CUDA images still name these in LD_LIBRARY_PATH.
CONTAINER_DRIVER_DIRS = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")


# --------------------------------------------------------------------------- release files, in memory

#: A release file larger than this is not one (os-release is a few hundred bytes): the rest is ignored.
RELEASE_LIMIT = 64 * 1024

#: distro's notion of a distribution release file (``/etc/redhat-release``, ``/etc/centos-release``...),
#: applied to a listing of /etc. Its own pattern and ignore list where this distro version has them.
_dd = getattr(distro, "distro", distro)
RELEASE_FILE = getattr(_dd, "_DISTRO_RELEASE_BASENAME_PATTERN", None) or re.compile(r"(\w+)[-_](release|version)$")
_RELEASE_IGNORED = frozenset(getattr(_dd, "_DISTRO_RELEASE_IGNORE_BASENAMES", ()) or (
    "debian_version", "lsb-release", "oem-release", "os-release", "system-release", "plesk-release",
    "iredmail-release", "board-release", "ec2_version"))


class ReleaseFiles(distro.LinuxDistribution):
    """The ``distro`` library's answers (its parsers, its precedence between sources, its id normalisation)
    computed from release files held in memory: the text a probe read through the host, live or from a
    snapshot, with no file written anywhere (a machine with a read-only or full disk is still identified).

    ``files`` maps absolute paths (``/etc/os-release``, ``/usr/lib/os-release``, ``/etc/redhat-release``,
    ``/etc/debian_version``...) to their text. distro reads its sources through four cached readers; each is
    answered here from ``files``. Its root is a directory that does not exist, so a reader a newer distro
    adds finds nothing rather than this machine's files (tests/test_osinfo.py fails when distro grows one).
    """

    NOWHERE = "/nonexistent/envdoctor-release-files"

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = {k: v for k, v in files.items() if v is not None}
        os_release = "/etc/os-release" if "/etc/os-release" in self._files else "/usr/lib/os-release"
        super().__init__(include_lsb=False, include_uname=False, include_oslevel=False, root_dir=self.NOWHERE,
                         os_release_file=self.NOWHERE + os_release)
        self.os_release_path = os_release if os_release in self._files else ""

    def _text(self, path: str) -> str:
        return self._files.get(path) or ""

    @cached_property
    def _os_release_info(self) -> Dict[str, str]:  # type: ignore[override]
        text = self._text(self.os_release_path)
        return self._parse_os_release_content(io.StringIO(text)) if text else {}

    @cached_property
    def _debian_version(self) -> str:  # type: ignore[override]
        return (self._text("/etc/debian_version").splitlines() or [""])[0].rstrip()

    @cached_property
    def _armbian_version(self) -> str:
        text = self._text("/etc/armbian-release")
        return self._parse_os_release_content(io.StringIO(text)).get("version", "") if text else ""

    @cached_property
    def _distro_release_info(self) -> Dict[str, str]:  # type: ignore[override]
        """distro's search for a distribution release file: the names in /etc matching its pattern, in order,
        not on its ignore list; the first whose first line names a distribution."""
        for name in sorted(p[len("/etc/"):] for p in self._files if p.startswith("/etc/") and "/" not in p[5:]):
            match = RELEASE_FILE.match(name)
            if name in _RELEASE_IGNORED or match is None:
                continue
            info = self._parse_distro_release_content((self._text("/etc/" + name).splitlines() or [""])[0])
            if "name" not in info:
                continue
            self.distro_release_file = "/etc/" + name
            info["id"] = match.group(1)
            if "cloudlinux" in info.get("name", "").lower():
                info["id"] = "cloudlinux"
            return info
        return {}


def _plainly_balanced(line: str) -> bool:
    """A line shlex cannot refuse, seen without splitting it: no backslash, and quotes of one kind only, an even
    number of them (each opens or closes a quoted part). Nearly every line of a release file is one."""
    if "\\" in line:
        return False
    double, single = line.count('"'), line.count("'")
    return (single == 0 and double % 2 == 0) or (double == 0 and single % 2 == 0)


def shell_lines(text: str) -> Tuple[str, List[Tuple[int, str]]]:
    """The lines of a KEY=value release file that parse as shell words (how os-release(5) and distro read
    them), and the ones that do not (an unbalanced quote...), numbered: one bad line costs that line, not
    the file."""
    import shlex

    kept: List[str] = []
    bad: List[Tuple[int, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            if not _plainly_balanced(line):
                shlex.split(line, comments=True)
        except ValueError:
            bad.append((n, line[:120]))
            continue
        kept.append(line)
    return "\n".join(kept) + "\n", bad


#: Release files written as KEY=value shell assignments (the others are one free-text line).
_SHELL_FORMAT = ("/etc/os-release", "/usr/lib/os-release", "/etc/lsb-release", "/etc/armbian-release")


class ReleaseInfo(NamedTuple):
    """What a machine's release files say, as distro reads them."""

    id: str
    name: str
    pretty: str
    version: str
    version_full: str
    codename: str
    like: str
    family: str
    damaged: List[str]


def release_info(files: Mapping[str, Optional[bytes]], cut: Tuple[str, ...] = ()) -> ReleaseInfo:
    """distro's reading of release files given as bytes by absolute path (None: absent). Lines of the
    KEY=value files that are not shell words are dropped and listed in ``damaged``, as are files named in
    ``cut`` (read only up to :data:`RELEASE_LIMIT`)."""
    texts: Dict[str, str] = {}
    damaged: List[str] = []
    for path in sorted(files):
        data = files[path]
        if data is None:
            continue
        text = data.decode("utf-8", "replace")
        if path in _SHELL_FORMAT:
            text, bad = shell_lines(text)
            damaged += ["%s line %d: %s" % (path, n, line) for n, line in bad]
        if path in cut:
            damaged.append("%s: cut at %d KiB (larger than any release file: the rest is ignored)" % (
                path, RELEASE_LIMIT // 1024))
        texts[path] = text
    d = ReleaseFiles(texts)
    did, like = d.id(), d.like()
    return ReleaseInfo(did, d.name(), d.name(pretty=True), d.version(), d.version(best=True), d.codename(), like,
                       family(did, like) if did else "other", damaged)

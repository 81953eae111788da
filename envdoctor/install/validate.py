"""Validation of everything that comes from outside before it reaches a plan.

User options (``--version``, ``--prefix``, ``--mirror``, ``--components``) and
the contents of downloaded manifests are untrusted: each is checked here
against a strict shape, and a :class:`ValidationError` (exit code 2 in the CLI)
says what was wrong.  Nothing reaches a command line unvalidated.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Dict, Iterable, List, Optional

from packaging.version import InvalidVersion, Version

from .. import lazyre


class ValidationError(ValueError):
    """A value from the user or a manifest is not acceptable."""


_CONTROL = lazyre.compile(r"[\x00-\x1f\x7f]")
_RELEASE = lazyre.compile(r"^[0-9]+(?:\.[0-9]+){0,3}$")
_NAME = lazyre.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SHA256 = lazyre.compile(r"^[0-9a-f]{64}$")
_REL_PATH = lazyre.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*$")
_PLATFORM = lazyre.compile(r"^(?:linux|windows)-(?:x86_64|sbsa|aarch64|ppc64le)$")


def _show(value: str) -> str:
    return repr(value) if len(value) <= 80 else repr(value[:77] + "...")


#: Longer than any real release number (NVIDIA's longest, component versions like 12.4.35753180, are 13).
MAX_VERSION_LENGTH = 40


def version(value: str, what: str = "--version") -> Version:
    """A plain release number such as ``12.4`` or ``12.4.1`` (nothing else)."""
    text = (value or "").strip()
    if len(text) > MAX_VERSION_LENGTH or not _RELEASE.match(text):
        raise ValidationError(f"{what} {_show(value)} is not a release number like 12.4 or 12.4.1 "
                              "(digits and dots only)")
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # pragma: no cover - the regex and the length admit only valid ones
        raise ValidationError(f"{what} {_show(value)} is not a valid version") from None


def prefix(value: str, cwd: Optional[str] = None, what: str = "--prefix") -> str:
    """An install directory: absolute (or made absolute), no control characters, not a system or home directory,
    neither as written nor once its links are resolved (``~/sys/x`` with ``~/sys -> /usr`` is ``/usr/x``)."""
    path = path_value(value, cwd, what)
    why = system_directory(path)
    if why:
        raise ValidationError(f"{what} {path} is {why}; give a directory of its own, e.g. "
                              f"{_suggest(path)}")
    real = os.path.realpath(path)
    why = system_directory(real) if real != path else ""
    if why:
        raise ValidationError(f"{what} {path} resolves to {real}, which is {why}; give a directory of its own, "
                              f"e.g. {_suggest(real)}")
    return path


def path_value(value: str, cwd: Optional[str] = None, what: str = "--log-file") -> str:
    """A file path from the user (``--log-file``, ``--python``): absolute (or made absolute), no control
    characters; unlike :func:`prefix`, anywhere (an interpreter lives in /usr/bin, a log in /var/log)."""
    if not value or not value.strip():
        raise ValidationError(f"{what} is empty")
    if _CONTROL.search(value):
        raise ValidationError(f"{what} {_show(value)} contains control characters")
    path = os.path.expanduser(value)
    if not path.startswith("/"):
        path = posixpath.join(cwd or os.getcwd(), path)
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path


#: Trees that belong to the operating system: nothing is installed anywhere below them.
_SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin",
                 "/sys", "/usr", "/var")
#: ... except below these (a directory of its own inside them is fine: /usr/local/cuda-12.4, /var/tmp/x).
_OPEN_BELOW = ("/usr/local", "/var/tmp")
#: FHS directories of /usr/local, which belong to everything installed there.
_USR_LOCAL = ("bin", "etc", "games", "include", "lib", "lib32", "lib64", "libexec", "man", "sbin", "share", "src")


def _home_directories() -> List[str]:
    """Every home directory, as written and with its links resolved (``/home/u`` may be ``/data/home/u``)."""
    homes = set()
    env_home = os.environ.get("HOME")
    if env_home and env_home.startswith("/"):
        homes.add(posixpath.normpath(env_home))
    try:
        import pwd

        for entry in pwd.getpwall():
            if entry.pw_dir and entry.pw_dir.startswith("/"):
                homes.add(posixpath.normpath(entry.pw_dir))
    except (ImportError, OSError, KeyError):  # pragma: no cover - no user database
        pass
    return sorted(homes | {os.path.realpath(h) for h in homes})


def system_directory(path: str) -> str:
    """Why ``path`` (absolute, normalised) is a system or home directory that no install may take, or ""."""
    if path == "/":
        return "the root directory, a system directory"
    if path.count("/") == 1:
        return "a top-level system directory"
    for tree in _SYSTEM_TREES:
        if path == tree or path.startswith(tree + "/"):
            opened = [o for o in _OPEN_BELOW if path.startswith(o + "/")]
            if not opened:
                return f"a system directory (inside {tree}, which belongs to the operating system)"
            rest = path[len(opened[0]) + 1:].split("/")
            if opened[0] == "/usr/local" and rest[0] in _USR_LOCAL:
                return f"a system directory ({opened[0]}/{rest[0]}, shared by everything installed in /usr/local)"
    if path.startswith("/home/") and path.count("/") == 2:
        return "a home directory (or where one goes)"
    for home in _home_directories():
        if home in ("/", ""):
            continue
        if path == home:
            return "a home directory"
        if home.startswith(path + "/"):
            return "a directory holding home directories"
        if path.startswith(home + "/") and path[len(home) + 1:].split("/")[0].startswith(".") and \
                path.count("/") == home.count("/") + 1:
            return "a settings directory of a home directory"
    return ""


def _suggest(path: str) -> str:
    if path.startswith("/usr") or path.count("/") <= 1:
        return "/usr/local/cuda-12.4 or /opt/cuda-12.4"
    return path.rstrip("/") + "/cuda-12.4"


def toolkit_in(path: str) -> str:
    """What toolkit ``path`` holds ("" when none): what ``--force`` may move aside without ``--force-any``."""
    import json

    vj = os.path.join(path, "version.json")
    try:
        if os.path.isfile(vj):
            with open(vj, "rb") as f:
                doc = json.loads(f.read(1024 * 1024).decode("utf-8", "replace"))
            if isinstance(doc, dict) and doc:
                if isinstance(doc.get("cuda"), dict):
                    return "a CUDA toolkit (version.json: CUDA %s)" % doc["cuda"].get("version", "?")
                if any(str(k).startswith(("cudnn", "cuda_", "lib")) for k in doc):
                    return "an NVIDIA library tree (version.json)"
        if os.path.isfile(os.path.join(path, "bin", "nvcc")):
            return "a CUDA toolkit (bin/nvcc)"
        if os.path.isfile(os.path.join(path, "include", "cudnn_version.h")):
            return "a cuDNN tree (include/cudnn_version.h)"
        if os.path.isdir(path) and not os.path.islink(path) and not os.listdir(path):
            return "an empty directory"
    except (OSError, ValueError):
        return ""
    return ""


def replaceable(path: str, force_any: bool) -> str:
    """Why ``--force`` must not move ``path`` aside ("" when it may).

    Judged as written and with its links resolved: a rename moves what the path's resolved parent holds under
    its name (``~/via/victim`` with ``~/via -> /var/lib`` moves ``/var/lib/victim``), and a path that is itself
    a link to a system or home directory is refused too."""
    norm = posixpath.normpath(path)
    parent, name = posixpath.split(norm)
    moved = posixpath.join(os.path.realpath(parent or "/"), name)
    for candidate in dict.fromkeys((norm, moved, os.path.realpath(norm))):
        why = system_directory(candidate)
        if why:
            shown = norm if candidate == norm else f"{norm} (which resolves to {candidate})"
            return f"{shown} is {why}; --force never replaces it"
    if force_any or toolkit_in(norm):
        return ""
    return (f"{norm} is not a CUDA toolkit or NVIDIA library tree that envdoctor or NVIDIA installed (no "
            "version.json, bin/nvcc or include/cudnn_version.h); --force replaces only those. To replace it "
            "anyway (it is moved aside, not deleted): --force --force-any")


def method_name(value: str) -> str:
    """``--method``: a plain lower-case word (the recipe says whether it knows it)."""
    if not re.match(r"^[a-z]{1,16}$", value):
        raise ValidationError(f"--method {_show(value)} is not a method name (see envdoctor install --list)")
    return value


def recipe_options(items: Iterable[str]) -> Dict[str, str]:
    """``--option KEY=VALUE`` pairs; keys and values are plain words (they may reach a command line)."""
    out: Dict[str, str] = {}
    for item in items:
        m = re.match(r"^([a-z][a-z0-9_-]{0,31})=([A-Za-z0-9._-]{1,64})$", item)
        if not m:
            raise ValidationError(f"--option {_show(item)} is not KEY=VALUE with plain words (e.g. flavor=open)")
        out[m.group(1)] = m.group(2)
    return out


def mirror(value: str) -> str:
    """An ``http(s)://`` base URL with the layout of NVIDIA's redist server; returned without a trailing slash.
    It may hold credentials (``https://user:password@host/...``): they are sent, never shown (:func:`shown_url`)."""
    if not value:
        raise ValidationError("--mirror is empty (is ENVDOCTOR_MIRROR set?)")
    shown = _show(shown_url(value))
    if _CONTROL.search(value) or any(c.isspace() for c in value):
        raise ValidationError(f"--mirror {shown} contains spaces or control characters")
    from urllib.parse import urlsplit  # here: urllib.parse brings ipaddress, and planning needs neither

    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValidationError(f"--mirror {shown} must be an http:// or https:// URL, e.g. "
                              "https://mirror.example.org/compute/cuda/redist")
    if parts.query or parts.fragment:
        raise ValidationError(f"--mirror {shown} must not have a query or fragment")
    return value.rstrip("/")


def has_credentials(url: str) -> bool:
    """Whether ``url`` holds user information (``scheme://user:password@host``)."""
    from urllib.parse import urlsplit

    return "@" in urlsplit(url).netloc


def shown_url(text: str) -> str:
    """``text`` with every URL's credentials replaced by ``<redacted>`` (what the install log, messages and
    the resume command show: ``http://<redacted>@mirror/...``); the privacy rules snapshots follow."""
    from ..host.privacy import redact_text

    return redact_text(text)


def component_names(values: Iterable[str]) -> List[str]:
    """Redist component names such as ``cuda_nvcc`` or ``libcublas``."""
    out: List[str] = []
    for raw in values:
        for name in raw.split(","):
            name = name.strip()
            if not name:
                continue
            if not _NAME.match(name):
                raise ValidationError(f"component {_show(name)} is not a redist component name "
                                      "like cuda_nvcc or libcublas")
            if name not in out:
                out.append(name)
    return out


def platform(value: str) -> str:
    if not _PLATFORM.match(value or ""):
        raise ValidationError(f"platform {_show(value or '')} is not one of linux-x86_64, linux-sbsa, "
                              "linux-aarch64, linux-ppc64le")
    return value


# -- manifest contents (untrusted: they come from a server or a mirror) ----
def sha256(value: object, where: str) -> str:
    if not isinstance(value, str) or not _SHA256.match(value.lower()):
        raise ValidationError(f"{where}: sha256 {_show(str(value))} is not 64 hex digits")
    return value.lower()


def size(value: object, where: str) -> int:
    try:
        n = int(str(value))
    except ValueError:
        raise ValidationError(f"{where}: size {_show(str(value))} is not a number") from None
    if n < 0:
        raise ValidationError("%s: size %d is negative" % (where, n))
    return n


def relative_path(value: object, where: str) -> str:
    """A path below the server's base: no ``..``, no leading ``/``, plain characters only."""
    if not isinstance(value, str) or not _REL_PATH.match(value) or ".." in value.split("/"):
        raise ValidationError(f"{where}: relative_path {_show(str(value))} is not a plain relative path")
    return value


def manifest_version(value: object, where: str) -> str:
    text = str(value)
    if len(text) > MAX_VERSION_LENGTH or not re.match(r"^[0-9]+(?:\.[0-9]+){0,5}$", text):
        raise ValidationError(f"{where}: version {_show(text)} is not a release number")
    return text

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
from typing import Iterable, List, Optional
from urllib.parse import urlsplit

from packaging.version import InvalidVersion, Version


class ValidationError(ValueError):
    """A value from the user or a manifest is not acceptable."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RELEASE = re.compile(r"^[0-9]+(?:\.[0-9]+){0,3}$")
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_REL_PATH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_][A-Za-z0-9_.+-]*)*$")
_PLATFORM = re.compile(r"^(?:linux|windows)-(?:x86_64|sbsa|aarch64|ppc64le)$")


def _show(value: str) -> str:
    return repr(value) if len(value) <= 80 else repr(value[:77] + "...")


def version(value: str, what: str = "--version") -> Version:
    """A plain release number such as ``12.4`` or ``12.4.1`` (nothing else)."""
    text = (value or "").strip()
    if not _RELEASE.match(text):
        raise ValidationError(f"{what} {_show(value)} is not a release number like 12.4 or 12.4.1 "
                              "(digits and dots only)")
    try:
        return Version(text)
    except InvalidVersion:  # pragma: no cover - the regex admits only valid versions
        raise ValidationError(f"{what} {_show(value)} is not a valid version") from None


def prefix(value: str, cwd: Optional[str] = None, what: str = "--prefix") -> str:
    """An install directory: absolute (or made absolute), no control characters, not a system root."""
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
    if path in ("/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/var", "/boot", "/home", "/opt",
                "/usr/local", "/usr/bin", "/usr/lib", "/root", "/tmp", "/dev", "/proc", "/sys"):
        raise ValidationError(f"{what} {path} is a system directory; give a directory of its own, "
                              f"e.g. {path.rstrip('/')}/cuda-12.4")
    return path


def mirror(value: str) -> str:
    """An ``http(s)://`` base URL with the layout of NVIDIA's redist server; returned without a trailing slash."""
    if _CONTROL.search(value or "") or any(c.isspace() for c in value or ""):
        raise ValidationError("--mirror {} contains spaces or control characters".format(_show(value or "")))
    parts = urlsplit(value or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValidationError("--mirror {} must be an http:// or https:// URL, e.g. "
                              "https://mirror.example.org/compute/cuda/redist".format(_show(value or "")))
    if parts.query or parts.fragment:
        raise ValidationError(f"--mirror {_show(value)} must not have a query or fragment")
    return value.rstrip("/")


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
    if not re.match(r"^[0-9]+(?:\.[0-9]+){0,5}$", text):
        raise ValidationError(f"{where}: version {_show(text)} is not a release number")
    return text

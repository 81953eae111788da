"""One home for reading versions, over ``packaging`` (never hand-rolled comparisons).

Every version envdoctor meets (a driver ``535.154.05``, a CUDA ``12.4.131``, a wheel ``2.4.0+cu121``,
a matrix row ``12.x``) comes from a file, a command or a snapshot, so any of them may be garbled:
each helper here returns ``None`` for what is not a version instead of raising.
"""

from __future__ import annotations

import functools
import re
from typing import Any, List, Optional, Tuple

from packaging.version import InvalidVersion, Version

from . import lazyre

__all__ = ["Version", "parse", "release", "major", "major_minor", "branch", "pip_pin", "digits",
           "torch_arch_list_runs_on"]


def parse(text: Any) -> Optional[Version]:
    """A :class:`packaging.version.Version` of ``text`` (a string, a number, or a Version), else None.
    Surrounding blanks and a leading ``v`` (``v12.4``) are allowed; ``None`` and ``""`` are not versions."""
    if isinstance(text, Version):
        return text
    if text is None or isinstance(text, bool) or not isinstance(text, (str, int, float)):
        return None
    return _parse_text(str(text).strip().lstrip("vV"))


@functools.lru_cache(maxsize=4096)
def _parse_text(s: str) -> Optional[Version]:
    """:func:`parse` of a stripped string, once per distinct text (a Version is never changed after it is made):
    a 64-GPU board asks for the same compute capability and driver version once per GPU and check."""
    if not s:
        return None
    try:
        return Version(s)
    except (InvalidVersion, ValueError):  # not a version, or a number too long to be one (4300 digits)
        return None


def sort_key(text: Any) -> Version:
    """``text`` as a version to order by: anything that does not parse sorts first (as 0)."""
    return parse(text) or Version("0")


def release(text: Any) -> Optional[str]:
    """``"12.4.131"`` -> ``"12.4"`` (major.minor, what compatibility tables speak); ``"12"`` -> ``"12.0"``."""
    v = parse(text)
    if v is None:
        return None
    return "%d.%d" % (v.major, v.minor)


def major(text: Any) -> Optional[int]:
    """``"535.154.05"`` -> 535; ``"12.x"`` -> 12."""
    mm = major_minor(text)
    return mm[0] if mm else None


def major_minor(text: Any) -> Optional[Tuple[int, Optional[int]]]:
    """``"12.4.1"`` -> (12, 4); ``"12"`` and ``"12.x"`` -> (12, None)."""
    s = str(text).strip() if text is not None else ""
    if s.endswith(".x"):
        s = s[:-2]
    v = parse(s)
    if v is None:
        return None
    rel = v.release
    return (rel[0], rel[1] if len(rel) > 1 else None)


def branch(driver: Any) -> Optional[str]:
    """A driver's branch: ``"535.154.05"`` -> ``"535"`` (what ``install driver --version`` takes)."""
    v = parse(driver)
    return str(v.release[0]) if v is not None else None


#: A Linux NVIDIA driver version as the driver's files carry it: a branch of three or more digits, then one or two
#: numbers (``418.126.02``, ``535.54``). A library's soname suffix in another form (the Windows driver's
#: ``libcuda.so.1.1`` that WSL2 mounts in /usr/lib/wsl/lib, ``libnvidia-egl-wayland.so.1.1.13``) is not one.
DRIVER_VERSION = lazyre.compile(r"^\d{3,}\.\d+(?:\.\d+)?$")


def is_driver_version(text: Any) -> bool:
    """Whether ``text`` is a Linux NVIDIA driver version (:data:`DRIVER_VERSION`)."""
    return isinstance(text, str) and DRIVER_VERSION.match(text) is not None


def pip_pin(version: str) -> str:
    """A pip pin for a release: ``"2.7"`` -> ``"==2.7.*"`` (its newest patch), ``"1.18.1"`` -> ``"==1.18.1"``."""
    v = parse(version)
    return ("==%s.*" % version) if v is not None and len(v.release) == 2 else ("==%s" % version)


_CU_TAG = lazyre.compile(r"^cu(\d+)(\d)$")


def cuda_of_tag(tag: Any) -> Optional[str]:
    """A CUDA build's local version tag as PyTorch's wheels spell it: ``"cu116"`` -> ``"11.6"``, ``"cu121"`` ->
    ``"12.1"``; None for anything else (``"cpu"``, ``"rocm6.0"``, None). The inverse of :func:`cuda_tag`."""
    m = _CU_TAG.match(tag) if isinstance(tag, str) else None
    return "%s.%s" % m.groups() if m else None


def digits(text: Any) -> Optional[str]:
    """``"12.1"`` -> ``"121"``, as wheel tags spell a CUDA release (cu121, post121)."""
    v = parse(text)
    if v is None or len(v.release) < 2:
        return None
    return "%d%d" % (v.release[0], v.release[1])


def cuda_tag(cuda: Any) -> Optional[str]:
    """A CUDA release's local version tag and index name as PyTorch's wheels spell it: ``"12.1"`` (or
    ``"12.1.105"``) -> ``"cu121"``; None when ``cuda`` has no major.minor. The inverse of :func:`cuda_of_tag`."""
    d = digits(cuda)
    return "cu" + d if d else None


def cu_wheel(stem: str, cuda: Any) -> str:
    """The name of NVIDIA's pip wheel ``stem`` made for a CUDA major, which is all its name carries:
    ``("nvidia-cudnn", "12")`` and ``("nvidia-cudnn", "12.4")`` -> ``"nvidia-cudnn-cu12"``. The inverse of
    :func:`cuda_of_wheel`."""
    return "%s-cu%s" % (stem, str(cuda).split(".")[0])


def cuda_of_wheel(name: Any, stem: str) -> Optional[str]:
    """The CUDA major the name of NVIDIA's pip wheel ``stem`` carries: ``("nvidia-nccl-cu12", "nvidia-nccl")`` ->
    ``"12"``; None for any other name. The inverse of :func:`cu_wheel`."""
    text, prefix = str(name or ""), stem + "-cu"
    rest = text[len(prefix):]
    return rest if text.startswith(prefix) and re.match(r"^\d+$", rest) else None


_CUDART_FILE = lazyre.compile(r"^libcudart\.so\.(\d+(?:\.\d+)*)$")


def cuda_of_cudart(name: Any) -> Optional[str]:
    """The version a CUDA runtime's file name carries: ``"libcudart.so.7.5"`` -> ``"7.5"`` (the soname of CUDA
    10.2 and earlier names its major.minor), ``"libcudart.so.12"`` -> ``"12"``, ``"libcudart.so.12.4.127"`` ->
    ``"12.4.127"``; None for any other name."""
    m = _CUDART_FILE.match(name) if isinstance(name, str) else None
    return m.group(1) if m else None


#: The names torch.utils.cpp_extension accepts in TORCH_CUDA_ARCH_LIST and what each stands for.
TORCH_NAMED_ARCHES = {"kepler+tesla": "3.7", "kepler": "3.5+PTX", "maxwell+tegra": "5.3", "maxwell": "5.0;5.2+PTX",
                      "pascal": "6.0;6.1+PTX", "volta+tegra": "7.2", "volta": "7.0+PTX", "turing": "7.5+PTX",
                      "ampere+tegra": "8.7", "ampere": "8.0;8.6+PTX", "ada": "8.9+PTX", "hopper": "9.0+PTX"}


def torch_arch_list_entries(arch_list: str) -> Optional[List[Tuple[str, Tuple[int, int]]]]:
    """The entries of ``TORCH_CUDA_ARCH_LIST=arch_list`` as torch.utils.cpp_extension expands the named
    architectures: (entry as written or expanded, e.g. ``"9.0+PTX"``, (major, minor)). None when the list cannot
    be read (a variable, a typo, ``All``) or is empty."""
    out: List[Tuple[str, Tuple[int, int]]] = []
    for word in re.split(r"[;\s]+", arch_list.strip().strip("\"'")):
        if not word:
            continue
        for e in TORCH_NAMED_ARCHES.get(word.lower(), word).split(";"):
            m = re.fullmatch(r"(\d+)\.(\d+)[a-z]?(\+PTX)?", e.strip(), re.I)
            if not m:
                return None
            out.append((e.strip(), (int(m.group(1)), int(m.group(2)))))
    return out or None


def torch_arch_list_runs_on(arch_list: str, cc: str) -> Optional[bool]:
    """Whether code built for ``TORCH_CUDA_ARCH_LIST=arch_list`` runs on a GPU of compute capability ``cc``: SASS
    of X.Y on X.Y..X.9, PTX of X.Y on any later GPU; the named architectures (``Ampere``, ``Hopper``...) as
    torch.utils.cpp_extension expands them. None when the list cannot be read (a variable, a typo, ``All``)."""
    try:
        want = tuple(int(p) for p in cc.split(".")[:2])
    except ValueError:
        return None
    entries = []
    for word in re.split(r"[;\s]+", arch_list.strip().strip("\"'")):
        if not word:
            continue
        entries += TORCH_NAMED_ARCHES.get(word.lower(), word).split(";")
    for e in entries:
        m = re.fullmatch(r"(\d+)\.(\d+)[a-z]?(\+PTX)?", e.strip(), re.I)
        if not m:
            return None
        arch = (int(m.group(1)), int(m.group(2)))
        if m.group(3) and arch <= want:
            return True
        if arch[0] == want[0] and arch[1] <= want[1]:
            return True
    return False if entries else None

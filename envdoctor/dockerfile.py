"""``envdoctor dockerfile``: judge a Dockerfile's GPU set-up before it is built, against the matrix and the
host it will run on (this machine, a snapshot, or ``--driver``/``--gpu``).

What goes wrong with GPU images is mostly known before ``docker build``: an ``nvidia/cuda`` tag that does
not exist (``latest``) or whose CUDA the host driver cannot start (the image sets
``NVIDIA_REQUIRE_CUDA=cuda>=X.Y``, which the NVIDIA Container Toolkit enforces, unless forward
compatibility lets a data-center GPU in); ``nvcc`` or a CUDA extension build (flash-attn...) on a
``-runtime`` image that has no compiler, or for a TORCH_CUDA_ARCH_LIST without the host's GPU; a framework
build the host's driver or GPU cannot run, or the image's Python cannot install; ``pip`` refusing to install
into Ubuntu 24.04's system Python (PEP 668); ``pip`` in an ``nvidia/cuda`` image that has no Python (or a
Python without pip); a CPU-only package in a GPU image. Each is a :class:`~envdoctor.findings.Finding`
with the Dockerfile's line, the rule's source and the line to write instead.

The parser reads what ``docker build`` reads: parser directives (``# escape=``), line continuations,
comments, heredocs, ``ARG`` defaults and ``--build-arg`` values in ``FROM`` and (as the shell sees them)
in ``RUN``, multi-stage builds (``FROM builder``), exec-form ``RUN [...]``, ``ENV``. A value the file does
not give (an ``ARG`` without a default, a shell-only expansion) is not guessed: what depends on it is not
judged. Nothing is run, pulled or downloaded.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import stat
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from . import frameworks, osinfo, versions
from .checks import CodeDoc
from .findings import Finding, Fix
from .matrix import hardware as hw
from .target import Target

#: A Dockerfile larger than this is not one (the largest public ones are a few hundred KiB); the same bound
#: holds for each file of the build context that is read (requirements files, pyproject.toml, uv.lock).
MAX_BYTES = 1024 * 1024
#: The most text ARG/ENV/RUN expansion may produce in one run (a few KiB in real Dockerfiles): a chain of
#: ARGs each repeating the one before (ARG B=$A$A$A$A) doubles with every line.
MAX_EXPANSION = 4 * 1024 * 1024

IMAGE_SOURCE = "https://hub.docker.com/r/nvidia/cuda"
LATEST_SOURCE = "https://github.com/NVIDIA/nvidia-docker/issues/1454"
REQUIRE_SOURCE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html"
PEP668_SOURCE = "https://peps.python.org/pep-0668/"
DRIVER_SOURCE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/index.html"

CODES: Tuple[CodeDoc, ...] = (
    CodeDoc("dockerfile.image_tag_missing", "error",
            "FROM nvidia/cuda without a version tag (or with 'latest'): that tag does not exist, the pull fails "
            "with 'manifest unknown'.", "the FROM lines",
            "NVIDIA removed the 'latest' tag of its CUDA images in 2021; every tag names a CUDA release, a "
            "flavour (base, runtime, devel) and an OS.", LATEST_SOURCE),
    CodeDoc("dockerfile.image_needs_newer_driver", "error",
            "The nvidia/cuda image's CUDA needs a newer driver than the host has: the container does not start.",
            "the FROM lines and the host's driver",
            "nvidia/cuda images set NVIDIA_REQUIRE_CUDA=cuda>=X.Y; the NVIDIA Container Toolkit refuses to start "
            "them on an older driver ('unsatisfied condition: cuda>=X.Y'); minor-version compatibility does not "
            "lift that check. The same variable admits some older data-center driver branches through forward "
            "compatibility: on a data-center GPU with a long-term support branch the images list (R470 and R535 "
            "for CUDA 12, R535 for CUDA 13) nothing is reported, with no GPU named it is a warning, on GeForce "
            "an error.", REQUIRE_SOURCE),
    CodeDoc("dockerfile.no_compiler_in_image", "error",
            "A stage compiles CUDA code (nvcc, a CUDA extension such as flash-attn) on an image without nvcc.",
            "the RUN lines and each stage's base image",
            "Only the -devel nvidia/cuda images carry nvcc and the CUDA headers; base and runtime images (and "
            "images without CUDA) fail the build with 'nvcc: not found' or 'CUDA_HOME environment variable is "
            "not set'.", IMAGE_SOURCE),
    CodeDoc("dockerfile.build_does_not_fit", "error",
            "A framework build the Dockerfile installs cannot run on the host's driver or GPU, or cannot be "
            "installed for the image's Python.", "the pip install lines, the image's Python, the host",
            "The build installs, then fails at the first GPU call ('no kernel image is available', 'driver is "
            "too old'), or pip finds no matching distribution.", ""),
    CodeDoc("dockerfile.externally_managed_python", "error",
            "pip installs into the system Python of an image that forbids it (PEP 668: Ubuntu 23.04+, "
            "Debian 12+).", "the pip install lines and the image's OS",
            "pip stops with 'error: externally-managed-environment'; use a virtual environment.", PEP668_SOURCE),
    CodeDoc("dockerfile.no_python_in_image", "error",
            "pip runs in a stage whose image has no Python (nvidia/cuda images carry none) and nothing installs "
            "one before.", "the RUN lines and each stage's base image",
            "The build stops with 'pip: not found'.", IMAGE_SOURCE),
    CodeDoc("dockerfile.cuda_libraries_not_installed", "warning",
            "A framework is installed without the pip extra that brings the CUDA libraries its GPU build loads "
            "(tensorflow without [and-cuda]).", "the pip install lines and the image",
            "Unless the image holds exactly the CUDA and cuDNN releases the build was made with, the framework "
            "finds no GPU libraries and runs on the CPU ('Cannot dlopen some GPU libraries').",
            "https://www.tensorflow.org/install/pip"),
    CodeDoc("dockerfile.driver_in_image", "error",
            "A RUN line installs an NVIDIA driver into the image (nvidia-driver-535, cuda-drivers, "
            "libnvidia-compute-*, nvidia-driver:*-dkms, NVIDIA-Linux-*.run...).",
            "the package-manager and runfile lines",
            "In a container the host's driver is the one that runs: its kernel module is loaded on the host and the "
            "NVIDIA Container Toolkit mounts its user-space libraries into the container. A driver in the image "
            "cannot load a kernel module there, and its libraries, of another release than the host's module, "
            "shadow or contradict the host's ('Failed to initialize NVML: Driver/library version mismatch', 'CUDA "
            "driver version is insufficient'). The package names come from NVIDIA's own driver packaging "
            "(matrix area driver_packages).", DRIVER_SOURCE),
    CodeDoc("dockerfile.frameworks_conflict", "error",
            "Two frameworks installed into one environment pin CUDA library wheels (nvidia-nccl-cu12, "
            "nvidia-cudnn-cu12, nvidia-cublas-cu12 ...) that no release satisfies together.",
            "the pip install lines and the releases' Requires-Dist pins",
            "In one pip command pip stops with 'ResolutionImpossible' (when no pair of releases it could take meets; "
            "pip backtracks, so ranges that meet are fine); in two, the second replaces the library the first was "
            "built against, which then cannot load its GPU libraries. The pins are the releases' own Requires-Dist "
            "on PyPI, every nvidia-* wheel (cuDNN, NCCL, cuBLAS, cuFFT, cuSPARSE, cuSOLVER, the CUDA runtime, "
            "nvJitLink...; matrix area cuda_wheel_pins); for a release not there, the cuDNN of the matrix's builds.",
            "https://pip.pypa.io/en/stable/topics/dependency-resolution/"),
    CodeDoc("dockerfile.build_arg_unused", "warning",
            "A --build-arg names no ARG of the Dockerfile: the build ignores it, as docker build warns.",
            "the --build-arg values and the ARG instructions",
            "docker build prints '[Warning] One or more build-args [X] were not consumed' and builds with the "
            "Dockerfile's own defaults: a misspelt name (CUDA_VERSION for CUDA) silently builds another image. "
            "Docker's predefined arguments (the proxies) are never reported.",
            "https://docs.docker.com/reference/dockerfile/#arg"),
    CodeDoc("dockerfile.context_file_unreadable", "info",
            "A file of the build context that a RUN line installs from (a requirements file, pyproject.toml, "
            "uv.lock) is there but was not read: not a regular file, larger than 1 MiB, not valid TOML.",
            "the build context's files named by the RUN lines",
            "What the line installs from it is not judged (a FIFO would never end, a device never stop). "
            "A file that is missing is not reported: the build context may be another directory (--context).",
            ""),
    CodeDoc("dockerfile.cpu_only_build", "warning",
            "A CPU-only package or build of a framework is installed in a GPU image.",
            "the pip install lines (package, index URL, extras)",
            "It never uses the GPU; the image's CUDA libraries are dead weight.", ""),
)
CODE_DOCS = {d.code: d for d in CODES}


class DockerfileError(ValueError):
    """Input that is not a Dockerfile envdoctor can read (too large, not text, not finished within the
    deadline, expanding past :data:`MAX_EXPANSION`)."""


class Deadline:
    """The time the command's own work may take (``--timeout``): reading the Dockerfile and the build
    context's files, parsing and judging. :meth:`pause` stops the clock while the host is probed, which has
    its own deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds
        self._paused: Optional[float] = None

    def left(self) -> float:
        return max(0.0, self._end - (self._paused if self._paused is not None else time.monotonic()))

    def pause(self) -> None:
        if self._paused is None:
            self._paused = time.monotonic()

    def resume(self) -> None:
        if self._paused is not None:
            self._end += time.monotonic() - self._paused
            self._paused = None

    def check(self, what: str) -> None:
        if self._paused is None and time.monotonic() > self._end:
            raise DockerfileError("%s could not be judged within --timeout %g s" % (what, self.seconds))


class Expansion:
    """What ARG/ENV and RUN variable expansion has produced so far, held to :data:`MAX_EXPANSION`."""

    def __init__(self, limit: int = MAX_EXPANSION) -> None:
        self.left = limit
        self.limit = limit

    def spend(self, n: int, what: str) -> None:
        self.left -= n
        if self.left < 0:
            raise DockerfileError("%s expands to more than %d MiB of text: not a Dockerfile envdoctor judges" % (
                what, self.limit // (1024 * 1024)))


# --------------------------------------------------------------------------- reading the file


@dataclass
class Instruction:
    line: int  # 1-based line of the instruction's first line
    keyword: str  # upper case: FROM, RUN, ENV, ARG ...
    text: str  # the arguments, continuations joined (a heredoc's body appended after a newline)


def instructions(text: str, deadline: Optional[Deadline] = None, path: str = "Dockerfile") -> List[Instruction]:
    """The instructions of a Dockerfile, as ``docker build`` splits them."""
    lines = text.splitlines()
    escape = "\\"
    # Parser directives: only at the very top, before any instruction, comment or empty line.
    for raw in lines:
        m = re.match(r"^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$", raw)
        if not m:
            break
        if m.group(1).lower() == "escape" and m.group(2) in ("\\", "`"):
            escape = m.group(2)
    out: List[Instruction] = []
    i = 0
    while i < len(lines):
        if deadline is not None and len(out) % 512 == 511:
            deadline.check(path)
        raw = lines[i]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        start = i
        parts = []
        while True:
            piece = lines[i].rstrip()
            if piece.endswith(escape) and i + 1 < len(lines):
                parts.append(piece[:-1])
                i += 1
                # comment lines inside a continuation are dropped, as docker does
                while i < len(lines) and lines[i].strip().startswith("#"):
                    i += 1
                if i >= len(lines):
                    break
                continue
            parts.append(piece)
            i += 1
            break
        joined = " ".join(p.strip() for p in parts).strip()
        keyword, _, args = joined.partition(" ")
        keyword = keyword.upper()
        # Heredocs (RUN <<EOF ... EOF): the body belongs to the instruction.
        bodies = [args]
        for m in re.finditer(r"<<(-?)[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?", args):
            if i >= len(lines):
                break  # the file ended inside an earlier heredoc: the later ones have no body
            body = []
            while i < len(lines) and lines[i].strip() != m.group(2):
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter
            bodies.append("\n".join(body))
        out.append(Instruction(start + 1, keyword, "\n".join(bodies).strip()))
    return out


# Shell words and operators, as the POSIX shell splits them: a word is unquoted text, '...', "..." (with
# backslash escapes) or \x, run together; # at the start of a word starts a comment. Regular expressions
# rather than shlex, whose cost grows with the square of a word's length (a 1 MiB word: 16 s).
_WORD = r"""(?:[^\s;&|()'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+"""
_SHELL_TOKEN = re.compile(r"[ \t\r\f\v]*(?:(#.*)|([;&|()]+)|(%s)|([^ \t\r\f\v]))" % _WORD, re.S)
_PLAIN_TOKEN = re.compile(r"""\s*(?:((?:[^\s'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+)|(\S))""", re.S)
_PIECE = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|([^'"\\]+)""", re.S)


def _unquote(word: str) -> str:
    if "'" not in word and '"' not in word and "\\" not in word:
        return word
    out = []
    for m in _PIECE.finditer(word):
        if m.group(1) is not None:
            out.append(m.group(1))
        elif m.group(2) is not None:
            out.append(re.sub(r'\\([$`"\\\n])', r"\1", m.group(2)))
        else:
            out.append(m.group(3) if m.group(3) is not None else m.group(4))
    return "".join(out)


def shell_tokens(text: str) -> Optional[List[Tuple[bool, str]]]:
    """The tokens of one line of shell: (is an operator, text), words unquoted; None when the line cannot be
    split (an unbalanced quote, a trailing backslash)."""
    out: List[Tuple[bool, str]] = []
    for m in _SHELL_TOKEN.finditer(text):
        kind = m.lastindex
        if kind == 1:
            break  # a comment, to the end of the line
        if kind == 2:
            out.append((True, m.group(2)))
        elif kind == 3:
            out.append((False, _unquote(m.group(3))))
        else:
            return None  # a quote or backslash no word closes
    return out


def split_words(text: str) -> Optional[List[str]]:
    """Words as ``shlex.split`` gives them (quotes and backslashes removed, no operators, no comments);
    None when the text cannot be split."""
    out: List[str] = []
    for m in _PLAIN_TOKEN.finditer(text):
        if m.lastindex != 1:
            return None
        out.append(_unquote(m.group(1)))
    return out


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


def substitute(text: str, values: Mapping[str, str], keep_unknown: bool = False,
               budget: Optional[Expansion] = None, what: str = "a value") -> str:
    """``$VAR``, ``${VAR}``, ``${VAR:-default}``, ``${VAR:+alt}`` as Dockerfile variables expand (with
    ``keep_unknown``, a name without a value and without a default is left as written). What the
    expansion adds is spent from ``budget``, before it is built."""
    if "$" not in text:
        return text
    out: List[str] = []
    pos = 0
    for m in _VAR.finditer(text):
        name = m.group(1) or m.group(4)
        val = values.get(name)
        if keep_unknown and val is None and m.group(2) != "-":
            piece = m.group(0)
        elif m.group(2) == "-":
            piece = val if val else m.group(3)
        elif m.group(2) == "+":
            piece = m.group(3) if val else ""
        else:
            piece = val if val is not None else ""
        if budget is not None:
            budget.spend(len(piece), what)
        out.append(text[pos:m.start()])
        out.append(piece)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def _key_values(text: str) -> List[Tuple[str, str]]:
    """``ENV``/``ARG`` arguments: ``K=V K2="v 2"``, or the old ``ENV K V`` form."""
    words = split_words(text)
    if words is None:
        words = text.split()
    if words and "=" not in words[0]:
        return [(words[0], " ".join(words[1:]))] if len(words) > 1 else [(words[0], "")]
    return [tuple(w.split("=", 1)) if "=" in w else (w, "") for w in words]  # type: ignore[misc]


# --------------------------------------------------------------------------- images


@dataclass
class Image:
    reference: str  # as written, variables expanded
    repository: str = ""  # without registry: "nvidia/cuda", "python", "pytorch/pytorch"
    tag: str = ""
    cuda: Optional[str] = None  # nvidia/cuda: the full CUDA release "12.4.1"
    flavour: Optional[str] = None  # base | runtime | devel
    cudnn: bool = False
    cudnn_tag: Optional[str] = None  # the tag's cuDNN word: "cudnn8", "cudnn9", "cudnn" (cuDNN 9, from 12.4 on)
    os_label: Optional[str] = None  # "ubuntu22.04", "ubi9", "rockylinux8"
    python: Optional[str] = None  # the image's own Python (python:3.11 images), X.Y
    torch: Optional[Tuple[str, str]] = None  # pytorch/pytorch: (release X.Y, variant cuXYZ)
    has_python: Optional[bool] = None  # does the image carry a Python at all (False: nvidia/cuda)
    moving: bool = False  # a tag such as ubuntu:latest: os_label is the oldest release it can be today
    has_nvcc: Optional[bool] = None  # does the image carry nvcc and the CUDA headers (None: not known)


_CUDA_TAG = re.compile(r"^(?P<cuda>\d+\.\d+(?:\.\d+)?)-(?:(?P<cudnn>cudnn\d*)-)?(?P<flavour>base|runtime|devel)"
                       r"(?:-(?P<os>[a-z]+\d+(?:\.\d+)?))?$")
_TORCH_TAG = re.compile(r"^(?P<torch>\d+\.\d+)(?:\.\d+)?-cuda(?P<cuda>\d+\.\d+)-cudnn\d+-(?P<flavour>runtime|devel)$")
_PY_TAG = re.compile(r"^(?P<py>3\.\d+)(?:\.\d+)?(?:[a-z]+\d*)?(?:-(?P<os>[a-z]+))?")
#: NGC framework containers (nvcr.io/nvidia/...): the full CUDA toolkit (nvcc, headers) and a Python.
NGC_FRAMEWORKS = ("nvidia/pytorch", "nvidia/tensorflow", "nvidia/jax", "nvidia/nemo", "nvidia/cuda-dl-base",
                  "nvidia/paddlepaddle", "nvidia/mxnet", "nvidia/pax", "nvidia/t5x")
#: Images whose Python is a conda environment (not the OS's, so not externally managed).
CONDA_IMAGES = ("continuumio/miniconda3", "continuumio/anaconda3", "condaforge/miniforge3", "condaforge/mambaforge",
                "mambaorg/micromamba")
_DEBIAN_NAMES = {"buster": "10", "bullseye": "11", "bookworm": "12", "trixie": "13"}
_UBUNTU_NAMES = {"bionic": "18.04", "focal": "20.04", "jammy": "22.04", "noble": "24.04"}


def parse_image(reference: str) -> Image:
    ref = reference.split("@", 1)[0]
    name, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # a registry host
    if parts and parts[0] == "library":
        parts = parts[1:]
    repo = "/".join(parts).lower()
    img = Image(reference, repo, tag)
    if repo == "nvidia/cuda":
        img.has_python = False
        m = _CUDA_TAG.match(tag)
        if m:
            img.cuda, img.flavour, img.cudnn = m.group("cuda"), m.group("flavour"), bool(m.group("cudnn"))
            img.cudnn_tag = m.group("cudnn")
            img.os_label = m.group("os")
            img.has_nvcc = img.flavour == "devel"
    elif repo == "pytorch/pytorch":
        img.has_python = True
        m = _TORCH_TAG.match(tag)
        if m:
            img.torch = (m.group("torch"), versions.cuda_tag(m.group("cuda")) or "")
            img.flavour = m.group("flavour")
            img.has_nvcc = img.flavour == "devel"
    elif repo in NGC_FRAMEWORKS:
        img.has_python = img.has_nvcc = True
    elif repo in CONDA_IMAGES:
        img.has_python = True
        img.has_nvcc = False
    elif repo == "python":
        img.has_python = True
        img.has_nvcc = False
        m = _PY_TAG.match(tag)
        if m:
            img.python = m.group("py")
            osname = m.group("os")
            if osname in _DEBIAN_NAMES:
                img.os_label = "debian" + _DEBIAN_NAMES[osname]
    elif repo in ("ubuntu", "debian"):
        img.has_python = img.has_nvcc = False
        ver = _UBUNTU_NAMES.get(tag, _DEBIAN_NAMES.get(tag.split("-")[0], tag.split("-")[0]))
        if re.fullmatch(r"\d+(\.\d+)?", ver or ""):
            img.os_label = repo + ver
        elif tag in ("", "latest"):
            # a moving tag: since 2024-04 (Ubuntu 24.04) and 2023-06 (Debian 12) a release whose Python is
            # externally managed, and every later one too
            img.os_label = repo + ("24.04" if repo == "ubuntu" else "12")
            img.moving = True
    if img.has_nvcc is None and re.search(r"(^|[-_.])devel([-_.]|$)", tag):
        img.has_nvcc = True  # other vendors' -devel tags (nvcr.io/nvidia/nvhpc:...-devel-cuda12.8-...) do too
    if img.os_label is None:
        m = re.search(r"(ubuntu|debian|rockylinux|ubi|oraclelinux)(\d+(?:\.\d+)?)$", tag)
        if m:  # other vendors' images name their OS the same way (nvcr.io/nvidia/nvhpc:...-ubuntu24.04)
            img.os_label = m.group(1) + m.group(2)
    return img


def system_python(os_label: Optional[str]) -> Optional[str]:
    """The python3 an image OS installs from its own archive (``apt-get install python3``)."""
    m = re.fullmatch(r"([a-z]+?)(\d+(?:\.\d+)?)", os_label or "")
    if not m:
        return None
    os_id = {"ubi": "rhel", "rockylinux": "rocky", "oraclelinux": "oracle"}.get(m.group(1), m.group(1))
    return osinfo.system_python(os_id, m.group(2))


def _externally_managed(os_label: Optional[str]) -> bool:
    m = re.fullmatch(r"(ubuntu|debian)(\d+(?:\.\d+)?)", os_label or "")
    if not m:
        return False
    return Version(m.group(2)) >= Version("23.04" if m.group(1) == "ubuntu" else "12")


# --------------------------------------------------------------------------- stages and commands


@dataclass
class PipInstall:
    line: int
    argv: List[str]
    requirements: List[Requirement] = field(default_factory=list)
    urls: List[str] = field(default_factory=list)  # git+https://..., local paths, archives
    index_url: Optional[str] = None
    extra_index_urls: List[str] = field(default_factory=list)
    find_links: List[str] = field(default_factory=list)
    flags: List[str] = field(default_factory=list)
    requirement_files: List[str] = field(default_factory=list)
    python: Optional[str] = None  # X.Y when the command names its interpreter (python3.11 -m pip)
    in_venv: bool = False  # the pip of a virtual environment (a path), or uv/pipx


@dataclass
class Stage:
    index: int
    line: int
    image: Image
    name: Optional[str] = None
    parent: Optional[Stage] = None  # FROM <an earlier stage>
    runs: List[Instruction] = field(default_factory=list)
    env: Dict[str, str] = field(default_factory=dict)
    #: the variables of the stages it is built on (complete: a stage ends where the next FROM starts)
    inherited_env: Dict[str, str] = field(default_factory=dict)
    #: the image at the root of its FROM chain (itself when not built on a stage)
    origin: Optional[Image] = None

    @property
    def base(self) -> Image:
        return self.origin if self.origin is not None else self.image

    def all_env(self) -> Dict[str, str]:
        out = dict(self.inherited_env)
        out.update(self.env)
        return out


@dataclass
class Dockerfile:
    path: str
    stages: List[Stage]
    args: Dict[str, str]
    #: --build-arg names no ARG declares (docker build warns: "[Warning] One or more build-args [X] were not
    #: consumed")
    unused_build_args: List[str] = field(default_factory=list)
    given: Dict[str, str] = field(default_factory=dict)  # the --build-arg values


def parse(text: str, path: str = "Dockerfile", build_args: Optional[Mapping[str, str]] = None,
          deadline: Optional[Deadline] = None) -> Dockerfile:
    args: Dict[str, str] = {}
    given = dict(build_args or {})
    declared: Set[str] = set()
    stages: List[Stage] = []
    by_name: Dict[str, Stage] = {}
    unset = set()  # ARGs declared without a value, and given none: the build command is to give them
    budget = Expansion()
    for n, ins in enumerate(instructions(text, deadline, path)):
        if deadline is not None and n % 256 == 0:
            deadline.check(path)
        if ins.keyword == "ARG":
            with_value = set(re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", ins.text))  # ARG X="" has one
            for k, v in _key_values(ins.text):
                declared.add(k)
                known_before = k in args and k not in unset  # ARG X in a stage takes the global X's value
                args[k] = given.get(k, substitute(v, args, budget=budget, what="line %d: ARG %s" % (ins.line, k))
                                    if v else args.get(k, ""))
                if k in given or k in with_value or known_before:
                    unset.discard(k)
                else:
                    unset.add(k)
                # RUN sees a stage's ARGs as environment variables; one with no value from anywhere is not
                # known (the documented build command gives it), so it is left out and stays unexpanded
                if stages and k not in unset:
                    stages[-1].env.setdefault(k, args[k])
            continue
        if ins.keyword == "FROM":
            words = [w for w in ins.text.split() if not w.startswith("--")]
            if not words:
                continue
            # a FROM naming a build argument that has no value here is not guessed (left as written)
            ref = substitute(words[0], {k: v for k, v in args.items() if k not in unset}, keep_unknown=True,
                             budget=budget, what="line %d: FROM" % ins.line)
            name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            parent = by_name.get(ref.lower())
            st = Stage(len(stages), ins.line, parse_image(ref), name, parent)
            if parent is not None:
                st.inherited_env = parent.all_env()
                st.origin = parent.base
            stages.append(st)
            if name:
                by_name[name.lower()] = st
            continue
        if not stages:
            continue
        if ins.keyword == "RUN":
            stages[-1].runs.append(ins)
        elif ins.keyword == "ENV":
            for k, v in _key_values(ins.text):
                stages[-1].env[k] = substitute(v, {**args, **stages[-1].all_env()}, budget=budget,
                                               what="line %d: ENV %s" % (ins.line, k))
    # docker build's own rule: a build argument no ARG declares (and none of its predefined ones) is not used
    unused = sorted(k for k in given if k not in declared and k not in PREDEFINED_ARGS)
    return Dockerfile(path, stages, args, unused, given)


#: The build arguments docker build defines without an ARG (proxies) and those BuildKit sets per platform:
#: --build-arg of these is never reported as unused. https://docs.docker.com/reference/dockerfile/#predefined-args
PREDEFINED_ARGS = frozenset(["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "FTP_PROXY", "ftp_proxy",
                             "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "BUILDKIT_INLINE_CACHE",
                             "BUILDKIT_SYNTAX", "BUILDKIT_CONTEXT_KEEP_GIT_DIR", "BUILDKIT_MULTI_PLATFORM",
                             "BUILDKIT_SANDBOX_HOSTNAME", "SOURCE_DATE_EPOCH"])


def _script(ins: Instruction) -> str:
    text = ins.text
    while text.startswith("--"):  # RUN --mount=... --network=...
        _flag, _, text = text.partition(" ")
        text = text.lstrip()
    if text.startswith("["):
        try:
            argv = json.loads(text.split("\n", 1)[0])
            if isinstance(argv, list) and all(isinstance(a, str) for a in argv):
                if len(argv) >= 3 and os.path.basename(argv[0]) in ("sh", "bash") and argv[1] == "-c":
                    return argv[2]
                return " ".join(shlex.quote(a) for a in argv)
        except (ValueError, RecursionError):
            pass  # not a JSON array (or one nested past what the parser follows): the shell form
    return text


def commands(script: str) -> Iterator[List[str]]:
    """The simple commands of a shell script (split at ``&&``, ``||``, ``;``, ``|``, newlines), as argument
    lists with leading variable assignments, ``sudo`` and ``exec`` removed. Text the shell grammar cannot
    split (an unbalanced quote) yields nothing."""
    for _env, argv, _arm in commands_env(script):
        yield argv


def commands_env(script: str) -> Iterator[Tuple[Dict[str, str], List[str], bool]]:
    """:func:`commands`, each with the variables the shell gives it (its own leading assignments,
    ``FORCE_BUILD=1 pip install ...``, over what ``export`` set before in the script) and whether it is in
    an arm of a ``case`` (run for one value only: ``case $TARGETPLATFORM in linux/arm64) ...``)."""
    return _commands_env(script, 0)


def _commands_env(script: str, nesting: int) -> Iterator[Tuple[Dict[str, str], List[str], bool]]:
    exported: Dict[str, str] = {}
    depth = 0
    for chunk in script.split("\n"):
        tokens = shell_tokens(chunk)
        if tokens is None:
            continue
        cur: List[str] = []
        for is_op, w in tokens + [(True, ";")]:
            if is_op:
                own: Dict[str, str] = {}
                while cur and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", cur[0]):
                    k, _, v = cur.pop(0).partition("=")
                    own[k] = v
                while cur and cur[0] in ("sudo", "exec", "time", "nohup"):
                    cur.pop(0)
                if cur and cur[0] == "export":
                    for a in cur[1:]:
                        k, eq, v = a.partition("=")
                        if eq and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                            exported[k] = v
                env = dict(exported, **own)
                if cur and cur[0] == "case":
                    depth += 1
                elif cur and cur[0] == "esac":
                    depth = max(0, depth - 1)
                if len(cur) >= 3 and os.path.basename(cur[0]) in ("sh", "bash", "dash") and cur[1] in (
                        "-c", "-lc", "-ec", "-xc") and nesting < 8:
                    for sub_env, argv, arm in _commands_env(cur[2], nesting + 1):  # bash -c "pip install ..."
                        yield dict(env, **sub_env), argv, arm or depth > 0
                elif cur:
                    yield env, cur, depth > 0
                cur = []
            else:
                cur.append(w)


_PIP = re.compile(r"^pip(3(\.\d+)?)?$")
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
_PIP_VALUE_OPTIONS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement",
                      "-c", "--constraint", "-t", "--target", "--prefix", "--root", "--python-version", "--platform",
                      "--only-binary", "--no-binary", "-e", "--editable", "--python", "--cache-dir", "--src",
                      "--implementation", "--abi", "--progress-bar", "--trusted-host", "--timeout", "--retries",
                      "--upgrade-strategy", "--config-settings", "-C", "--global-option", "--log", "--report"}


@functools.lru_cache(maxsize=4096)
def _requirement(word: str) -> Optional[Requirement]:
    try:
        return Requirement(word)
    except InvalidRequirement:
        return None


@functools.lru_cache(maxsize=1024)
def _framework_of(name: str) -> Optional[frameworks.Framework]:
    return frameworks.of_distribution(name)


def pip_install(argv: Sequence[str], line: int, check: Optional[Any] = None) -> Optional[PipInstall]:
    """A ``pip install`` (``pip``, ``pip3``, ``python3 -m pip``, ``uv pip``, a venv's ``bin/pip``) as its parts
    (``check``: called every thousand words, to stop at a deadline)."""
    exe = os.path.basename(argv[0]) if argv else ""
    rest: Sequence[str]
    python = None
    in_venv = "/" in argv[0] and not argv[0].startswith(("/usr/bin/", "/usr/local/bin/", "/bin/")) if argv else False
    if _PIP.match(exe):
        rest = argv[1:]
        m = re.match(r"^pip(3\.\d+)$", exe)
        python = m.group(1) if m else None
    elif _PYTHON.match(exe) and list(argv[1:3]) == ["-m", "pip"]:
        rest = argv[3:]
        m = re.match(r"^python(3\.\d+)$", exe)
        python = m.group(1) if m else None
    elif exe == "uv" and list(argv[1:2]) == ["pip"]:
        rest, in_venv = argv[2:], "--system" not in argv
    else:
        return None
    if not rest or rest[0] != "install":
        return None
    p = PipInstall(line, list(argv), python=python, in_venv=in_venv)
    it = iter(rest[1:])
    for n, word in enumerate(it):
        if check is not None and n % 1000 == 999:
            check()
        opt, eq, val = word.partition("=")
        if word.startswith("-") and opt in _PIP_VALUE_OPTIONS:
            value = val if eq else next(it, "")
            if opt in ("-i", "--index-url"):
                p.index_url = value
            elif opt == "--extra-index-url":
                p.extra_index_urls.append(value)
            elif opt in ("-f", "--find-links"):
                p.find_links.append(value)
            elif opt in ("-r", "--requirement"):
                p.requirement_files.append(value)
            elif opt in ("-e", "--editable"):
                p.urls.append(value)
            continue
        if word.startswith("-"):
            p.flags.append(word)
            continue
        if "://" in word or word.startswith((".", "/")) or word.endswith((".whl", ".tar.gz", ".zip")):
            p.urls.append(word)
            continue
        req = _requirement(word)
        if req is not None:
            p.requirements.append(req)  # shared: nothing changes a Requirement it is given
        else:
            p.urls.append(word)
    return p


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(mode: int) -> Optional[str]:
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    return "is not a regular file (%s)" % kind


def _context_text(path: str, run: Optional[_Run] = None, line: int = 0) -> Optional[str]:
    """A file of the build context (a requirements file, pyproject.toml, uv.lock); None when it is missing
    or cannot be read. Only a regular file of at most MAX_BYTES is read (a FIFO would block, a device never
    end); what is there but not read is told to ``run``."""
    if run is not None:
        run.check()
    try:
        info = os.stat(path)
    except OSError:
        return None  # missing: nothing to read
    why = _not_regular(info.st_mode)
    data = b""
    if why is None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            why = "could not be read (%s)" % (exc.strerror or exc)
        else:
            try:
                why = _not_regular(os.fstat(fd).st_mode)  # replaced since the stat: read nothing
                chunks: List[bytes] = []
                size = 0
                while why is None and size <= MAX_BYTES:
                    chunk = os.read(fd, MAX_BYTES + 1 - size)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                data = b"".join(chunks)
            except OSError as exc:
                why = "could not be read (%s)" % (exc.strerror or exc)
            finally:
                os.close(fd)
            if why is None and len(data) > MAX_BYTES:
                why = "is larger than %d KiB" % (MAX_BYTES // 1024)
    if why is not None:
        if run is not None:
            run.unreadable(path, line, why)
        return None
    return data.decode("utf-8", "replace")


def read_requirements(path: str, into: PipInstall, depth: int = 0, run: Optional[_Run] = None,
                      seen: Optional[Set[str]] = None) -> None:
    """Requirements and options of a requirements file in the build context (missing: nothing added); a
    file included twice (``-r`` loops, diamonds) is read once."""
    seen = set() if seen is None else seen
    key = os.path.normpath(path)
    if key in seen:
        return
    seen.add(key)
    text = _context_text(path, run, into.line)
    if text is None:
        return
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        words = split_words(line)
        if not words:
            continue
        if words[0] in ("-r", "--requirement") and len(words) > 1 and depth < 5:
            read_requirements(os.path.join(os.path.dirname(path), words[1]), into, depth + 1, run, seen)
            continue
        sub = pip_install(["pip", "install"] + words, into.line)
        if sub is None:
            continue
        into.requirements += sub.requirements
        into.urls += sub.urls
        into.index_url = into.index_url or sub.index_url
        into.extra_index_urls += sub.extra_index_urls
        into.find_links += sub.find_links


# --------------------------------------------------------------------------- the rules

#: Packages whose pip install compiles CUDA code with nvcc (no wheel on PyPI for most set-ups), and
#: repositories whose source builds do: the build needs nvcc and the CUDA headers. (xformers is not one:
#: PyPI carries its manylinux wheels; nor is "apex": that name on PyPI is another, pure-Python project.)
CUDA_SOURCE_BUILDS = ("flash-attn", "mamba-ssm", "causal-conv1d", "pytorch3d", "detectron2",
                      "torch-scatter", "torch-sparse", "torch-cluster", "torch-spline-conv", "gsplat", "nvdiffrast",
                      "tiny-cuda-nn", "diff-gaussian-rasterization", "simple-knn", "deepspeed")
_SOURCE_REPOS = re.compile(r"(flash-attention|NVIDIA/apex|pytorch3d|detectron2|xformers|tiny-cuda-nn|nvdiffrast|"
                           r"diff-gaussian-rasterization|simple-knn|mamba|causal-conv1d|gsplat)", re.I)
#: Variables with which those builds take a prebuilt wheel instead of compiling (flash-attn, mamba-ssm,
#: causal-conv1d: FLASH_ATTENTION_SKIP_CUDA_BUILD, MAMBA_SKIP_CUDA_BUILD, CAUSAL_CONV1D_SKIP_CUDA_BUILD).
_SKIP_BUILD = re.compile(r"^[A-Z0-9_]*SKIP_CUDA_BUILD$")


def _compiles_cuda(argv: Sequence[str], env: Mapping[str, str], pip: Optional[PipInstall]) -> Optional[str]:
    """Why this command compiles CUDA code (None: it does not, as far as can be told)."""
    exe = os.path.basename(argv[0])
    if exe == "nvcc":
        return "runs nvcc"
    if exe == "cmake" and any(re.search(r"CUDA|CUBLAS|GGML_CUDA", a) for a in argv[1:]):
        return "configures a CUDA build with cmake"
    if _PYTHON.match(exe) and len(argv) > 2 and argv[1].endswith("setup.py") and (
            env.get("TORCH_CUDA_ARCH_LIST") or env.get("CUDA_HOME") or env.get("FORCE_CUDA")):
        return "builds a CUDA extension (setup.py with %s set)" % next(
            k for k in ("TORCH_CUDA_ARCH_LIST", "CUDA_HOME", "FORCE_CUDA") if env.get(k))
    if pip is not None:
        if any(_SKIP_BUILD.match(k) and _truthy(v) for k, v in env.items()):
            return None  # the package's setup takes its prebuilt wheel
        # wheels from a --find-links page (data.pyg.org, a project's release page) are prebuilt
        prebuilt = bool(pip.find_links) or "--only-binary=:all:" in pip.flags or _truthy(env.get("PIP_ONLY_BINARY"))
        for r in pip.requirements:
            name = canonicalize_name(r.name)
            if name in CUDA_SOURCE_BUILDS and name != "deepspeed" and not prebuilt:
                return "installs %s, which compiles CUDA code with nvcc when pip builds it" % r.name
            if name == "deepspeed" and any(k.startswith("DS_BUILD_") and v == "1" for k, v in env.items()):
                # deepspeed compiles its ops only when asked (DS_BUILD_*=1), else at run time
                return "installs deepspeed with DS_BUILD_* set, which compiles its CUDA ops with nvcc"
        for u in pip.urls:
            if _SOURCE_REPOS.search(u) and not u.endswith(".whl"):
                return "builds %s from source, which compiles CUDA code with nvcc" % u
    return None


def _finding(code: str, title: str, detail: str, line: Optional[int], path: str, fix: Optional[Fix] = None,
             rule: str = "", url: str = "", severity: Optional[str] = None,
             evidence: Sequence[Tuple[str, Any]] = ()) -> Finding:
    """A finding on ``line`` of the Dockerfile (None: on the command line, a --build-arg)."""
    doc = CODE_DOCS[code]
    ev = [{"key": "dockerfile.line", "value": line, "source": "file:%s" % path, "status": "ok"}] if line else []
    ev += [{"key": k, "value": v, "source": "file:%s" % path if line else "--build-arg", "status": "ok"}
           for k, v in evidence]
    return Finding(code, severity or doc.severity, ["docker"], ("line %d: %s" % (line, title)) if line else title,
                   detail, ev, {"rule": rule or doc.summary, "url": url or doc.source, "checked": ""}, fix or Fix())


def _cudnn_major(word: Optional[str]) -> Optional[int]:
    """The cuDNN major of an nvidia/cuda tag word: cudnn8 -> 8, cudnn9 -> 9, plain cudnn (12.4 on) -> 9."""
    if not word:
        return None
    return int(word[5:]) if word[5:].isdigit() else 9


def _suggest_image(t: Target, flavour: str, os_label: Optional[str], cudnn_tag: Optional[str] = None
                   ) -> Tuple[Optional[str], str]:
    """An nvidia/cuda image this host's driver starts (the newest release the image table knows) of the same
    variant: flavour, cuDNN and OS where that release has them; and what differs from the image it replaces
    (another OS, another cuDNN major), to say in the fix."""
    from envdoctor.recipes.docker_image import IMAGE_PYTHON, IMAGES

    newest = hw.newest_cuda_for_driver(t.driver) if t.driver else None
    best = None
    for minor in sorted(IMAGES, key=Version):
        if newest is not None and Version(minor) > Version(newest):
            continue
        best = minor
    if best is None:
        return None, ""
    release, word, oses = IMAGES[best]
    osl = os_label if os_label in oses else oses[-1]
    notes = []
    if os_label and osl != os_label:
        notes.append("CUDA %s images have no %s tag; %s is the newest they have%s" % (
            best, os_label, osl, " (its Python is %s)" % IMAGE_PYTHON[osl] if IMAGE_PYTHON.get(osl) else ""))
    variant = flavour or "runtime"
    if cudnn_tag and variant in ("runtime", "devel"):
        variant = "%s-%s" % (word, variant)
        if _cudnn_major(word) != _cudnn_major(cudnn_tag):
            notes.append("its cuDNN is %s, not %s: what the image builds against cuDNN must match" % (
                _cudnn_major(word), _cudnn_major(cudnn_tag)))
    return "nvidia/cuda:%s-%s-%s" % (release, variant, osl), "; ".join(notes)


class _Run:
    """One judgement of a Dockerfile: its deadline and expansion budget, what could not be read of the build
    context, the Python state each stage ends with (a stage built on it starts there) and the framework
    verdicts already reached (a line repeated 30,000 times is judged once)."""

    def __init__(self, path: str, deadline: Optional[Deadline]) -> None:
        self.path = path
        self.deadline = deadline
        self.budget = Expansion()
        self.unread: Dict[str, Tuple[int, str]] = {}  # context file -> (line, why)
        self.states: Dict[int, _PyState] = {}
        self.picks: Dict[Tuple[Any, ...], List[Any]] = {}
        self.verdicts: Dict[Tuple[int, Target], Any] = {}

    def check(self) -> None:
        if self.deadline is not None:
            self.deadline.check(self.path)

    def unreadable(self, path: str, line: int, why: str) -> None:
        self.unread.setdefault(path, (line, why))


def lint(df: Dockerfile, target: Target, context_dir: Optional[str] = None,
         deadline: Optional[Deadline] = None) -> List[Finding]:
    """Every finding for a parsed Dockerfile on a host described by ``target`` (driver, GPUs; unknown
    values are not judged). DockerfileError when ``deadline`` passes first."""
    out: List[Finding] = []
    path = df.path
    run = _Run(path, deadline)
    for st in df.stages:
        run.check()
        out += _image_findings(st, target, path)
        out += _run_findings(st, target, path, context_dir, run)
    for arg in df.unused_build_args:
        import difflib

        # the declared ARG the user most likely meant: one naming the other (CUDA, CUDA_VERSION), else a close
        # spelling
        near = sorted((k for k in df.args if arg.lower() in k.lower() or k.lower() in arg.lower()), key=len)[:1] \
            or difflib.get_close_matches(arg, list(df.args), n=1, cutoff=0.6)
        out.append(_finding(
            "dockerfile.build_arg_unused", "--build-arg %s: no ARG %s in the Dockerfile%s" % (
                arg, arg, "; it declares %s" % near[0] if near else ""),
            "docker build warns '[Warning] One or more build-args [%s] were not consumed' and builds as if it "
            "were not given: nothing in this file reads it, so nothing above was judged with it." % arg, None, path,
            Fix("Give the argument the Dockerfile declares%s, or declare it (ARG %s) where it is used." % (
                " (--build-arg %s=%s)" % (near[0], df.given.get(arg, "")) if near else "", arg)),
            evidence=[("dockerfile.build_arg", arg)]))
    for name, (line, why) in run.unread.items():
        shown = os.path.relpath(name, context_dir) if context_dir else name
        out.append(_finding(
            "dockerfile.context_file_unreadable", "%s in the build context %s: not read" % (shown, why),
            "What the line installs from it is not judged.", line, path))
    return out


def _image_findings(st: Stage, t: Target, path: str) -> List[Finding]:
    img = st.image
    if st.parent is not None or img.repository != "nvidia/cuda":
        return []
    if img.tag in ("", "latest"):
        sugg, _ = _suggest_image(t, "runtime", None)
        return [_finding(
            "dockerfile.image_tag_missing", "FROM %s: nvidia/cuda has no %s tag" % (
                img.reference, "'latest'" if img.tag else "default ('latest')"),
            "The pull fails with 'manifest for nvidia/cuda:latest not found: manifest unknown'. Each tag names "
            "a CUDA release, a flavour (base, runtime, devel) and an OS.", st.line, path,
            Fix("Name a tag%s." % (" this host's driver starts" if t.driver else ""),
                ["FROM %s" % sugg] if sugg else []))]
    if "$" not in img.tag and not re.match(r"^\d+\.\d+", img.tag):
        sugg, _ = _suggest_image(t, "runtime", None)
        return [_finding(
            "dockerfile.image_tag_missing", "FROM %s: nvidia/cuda has no tag %r" % (img.reference, img.tag),
            "Every nvidia/cuda tag starts with a CUDA release X.Y.Z (12.4.1-runtime-ubuntu22.04); a major "
            "alone (12-devel-...) or a word names no image: the pull fails with 'not found'.", st.line, path,
            Fix("Name a tag%s." % (" this host's driver starts" if t.driver else ""),
                ["FROM %s" % sugg] if sugg else []))]
    out = []
    if img.cuda and t.driver:
        mm = ".".join(img.cuda.split(".")[:2])
        # the toolkit compares the driver's CUDA (X.Y) with cuda>=X.Y: an update release (12.4.1, 13.0.2)
        # starts on the X.Y.0 driver (minor-version compatibility covers the rest)
        need = hw.min_driver_for_cuda(mm)
        try:
            older = need is not None and Version(t.driver) < Version(need)
        except InvalidVersion:
            older = False
        compat = _forward_compat(mm, t) if older else None
        if older and compat != "starts":
            newest = hw.newest_cuda_for_driver(t.driver)
            sugg, differs = _suggest_image(t, img.flavour or "runtime", img.os_label, img.cudnn_tag)
            branch = t.driver.split(".")[0]
            if compat == "maybe":
                title = "%s needs NVIDIA driver >= %s, or forward compatibility on a data-center GPU; this host " \
                        "has %s" % (img.reference, need, t.driver)
                detail = ("The image sets NVIDIA_REQUIRE_CUDA=cuda>=%s and also admits some older driver branches "
                          "(brand=...,driver>=B,driver<B+1) through CUDA forward compatibility, whose libraries "
                          "(cuda-compat) it carries: on a data-center GPU with a driver of a listed branch it "
                          "starts and runs; on a GeForce GPU, or a branch the image does not list, it does not "
                          "start ('unsatisfied condition: cuda>=%s') or CUDA fails (error 804). Whether R%s is "
                          "listed depends on the image release: see `docker inspect` of the image."
                          % (mm, mm, branch))
            else:
                title = "%s needs NVIDIA driver >= %s; this host has %s%s" % (
                    img.reference, need, t.driver, " (CUDA up to %s)" % newest if newest else "")
                detail = ("The image sets NVIDIA_REQUIRE_CUDA=cuda>=%s, so the NVIDIA Container Toolkit refuses "
                          "to start it ('nvidia-container-cli: requirement error: unsatisfied condition: "
                          "cuda>=%s'); CUDA minor-version compatibility does not lift that check%s." % (
                              mm, mm, ", and forward compatibility (the older branches the image admits) is "
                              "for data-center GPUs only" if compat == "geforce" else ""))
            out.append(_finding(
                "dockerfile.image_needs_newer_driver", title, detail, st.line, path,
                Fix("Build FROM an image of a CUDA this driver runs, or update the driver.%s" % (
                    (" " + differs[:1].upper() + differs[1:] + ".") if differs else ""),
                    (["FROM %s" % sugg] if sugg else []) + ["envdoctor install driver --dry-run"]),
                severity="warning" if compat == "maybe" else None,
                url=FORWARD_COMPAT_SOURCE if compat in ("maybe", "geforce") else "",
                evidence=[("host.driver", t.driver), ("host.gpu", t.gpu or None)]))
    return out


#: The oldest driver branch nvidia/cuda images of a CUDA major admit through forward compatibility: their
#: NVIDIA_REQUIRE_CUDA lists ``brand=tesla,driver>=B,driver<B+1`` (and the other data-center brands) for
#: some branches B from this one up, next to ``cuda>=X.Y`` (space-separated constraints are ORed).
#: Seen in the images' environment: 12.4.0 lists R470, R525, R535; 12.6.3 and 12.8.1 list R470, R535,
#: R550 (12.8.1 also R560, R565); 13.0 lists R535, R550, R565 and later. Long-term support branches from
#: the floor on are in every list seen; other branches come and go with the image release.
FORWARD_COMPAT_FLOOR = {12: 470, 13: 535}
FORWARD_COMPAT_SOURCE = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"


def _forward_compat(cuda_mm: str, t: Target) -> Optional[str]:
    """Whether an nvidia/cuda image of CUDA ``cuda_mm``, too new for the host's driver, still starts through
    forward compatibility: "starts" (a data-center GPU on a long-term support branch the images list),
    "maybe" (a branch that may be listed, or a GPU whose kind is not known), "geforce" (forward
    compatibility is for data-center GPUs only), None (the branch is below every list)."""
    from envdoctor.matrix.hardware import gpu_product

    floor = FORWARD_COMPAT_FLOOR.get(int(cuda_mm.split(".")[0]))
    try:
        branch = int((t.driver or "").split(".")[0])
    except ValueError:
        return None
    if floor is None or branch < floor:
        return None
    row = gpu_product(t.gpu) if t.gpu else None
    segment = row.get("segment") if row else ("geforce" if t.gpu and "geforce" in t.gpu.lower() else None)
    if segment == "geforce":
        return "geforce"
    ltsb = (hw.driver_branch(t.driver or "") or {}).get("type") == "ltsb"
    return "starts" if segment == "datacenter" and ltsb else "maybe"


_PKG_MANAGERS = ("apt-get", "apt", "yum", "dnf", "microdnf", "apk", "zypper")
#: A PATH entry that is a virtual environment's or a conda prefix's bin directory (/opt/venv/bin,
#: /app/.venv/bin, /opt/conda/bin, /opt/py3/bin), not a system one (/usr/local/bin, /usr/local/cuda/bin,
#: /root/.local/bin).
_ENV_BIN = re.compile(r"^/(?!usr/|bin|sbin)(?:[^/]+/)*(?:\.?venv[^/]*|[^/]*env[^/]*|[^/]*conda[^/]*|miniforge[^/]*|"
                      r"mambaforge|micromamba|py(?:thon)?[0-9.]*)/bin/?$", re.I)


def _env_venv(base: Image, env: Mapping[str, str]) -> bool:
    """Do the image and the stage's variables put a virtual environment (or conda) in front of pip?"""
    return (_truthy(env.get("PIP_BREAK_SYSTEM_PACKAGES")) or bool(env.get("VIRTUAL_ENV"))
            or base.repository in CONDA_IMAGES
            or any(_ENV_BIN.match(e) for e in env.get("PATH", "").split(":")))


def _truthy(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class _PyState:
    """What the stage has, command by command: its Python (X.Y when known), whether it has one at all, a
    pip for it, a virtual environment (or conda) that pip installs into, and nvcc."""
    version: Optional[str]
    present: bool
    pip: bool
    venv: bool
    nvcc: bool = False

    @classmethod
    def of(cls, base: Image, env: Mapping[str, str]) -> _PyState:
        present = bool(base.has_python) or base.has_python is None
        venv = _env_venv(base, env)
        return cls(base.python, present or venv, present or venv, venv)

    def add_env(self, base: Image, env: Mapping[str, str]) -> None:
        """A stage built on another one: its own variables may put a virtual environment first."""
        if _env_venv(base, env):
            self.venv = self.present = self.pip = True

    def after(self, argv: Sequence[str], base: Image) -> None:
        exe = os.path.basename(argv[0])
        words = " ".join(argv)
        if exe in _PKG_MANAGERS and "install" in argv:
            pkgs = [a for a in argv if not a.startswith("-")]
            named = [re.match(r"^python(3\.\d+)(?:-|$)", a) for a in pkgs]
            explicit = [m.group(1) for m in named if m]
            if explicit:
                self.version, self.present = explicit[-1], True
            elif any(re.match(r"^python3(-pip|-venv|-dev|-full)?$", a) or a in ("python-is-python3", "py3-pip")
                     for a in pkgs):
                self.version = self.version or (None if base.moving else system_python(base.os_label))
                self.present = True
            if any(re.match(r"^(python(3(\.\d+)?)?-pip|py3-pip)$", a) for a in pkgs):
                self.pip = True
            elif self.present and exe not in ("apt-get", "apt", "apk"):
                self.pip = True  # not judged: whether dnf/yum/zypper's python3 brings pip varies by release
            if re.search(r"cuda-(toolkit|nvcc|compiler)|nvidia-cuda-toolkit|cuda-nvcc", words):
                self.nvcc = True
        elif exe in ("conda", "mamba", "micromamba", "pyenv"):
            m = re.search(r"python[= ]?=?(3\.\d+)", words)
            self.version = m.group(1) if m else self.version
            self.present = self.pip = True
            self.venv = self.venv or exe != "pyenv"
            if re.search(r"cuda-(toolkit|nvcc)|cudatoolkit-dev", words):
                self.nvcc = True
        elif exe == "uv" and argv[1:3] == ["python", "install"]:
            m = re.search(r"(3\.\d+)", " ".join(argv[3:]))
            self.version, self.present = (m.group(1) if m else self.version), True
        elif exe == "uv" and argv[1:2] == ["venv"]:
            m = re.search(r"(?:--python|-p)[= ]?(?:python)?(3\.\d+)", words)
            self.version = m.group(1) if m else self.version
            self.present = self.venv = True
            self.pip = self.pip or "--seed" in argv
        elif (_PYTHON.match(exe) and "venv" in argv[1:3]) or exe == "virtualenv":
            m = re.match(r"^python(3\.\d+)$", exe)
            self.version = m.group(1) if m else self.version
            self.present = self.venv = True
            self.pip = self.pip or "--without-pip" not in argv
        elif _PYTHON.match(exe) and "ensurepip" in argv[1:3]:
            self.pip = True
        elif exe in ("source", ".") and any("activate" in a for a in argv[1:]):
            self.venv = True
        elif exe == "pipx":
            self.present = True
        elif "get-pip.py" in words:
            self.present = self.pip = True
        elif "miniconda" in words.lower() or "miniforge" in words.lower() or "micromamba" in words.lower():
            self.present = self.pip = self.venv = True


_MANAGERS = {"apt-get": "apt", "apt": "apt", "aptitude": "apt", "yum": "dnf", "dnf": "dnf", "microdnf": "dnf",
             "zypper": "zypper"}


@functools.lru_cache(maxsize=None)
def _driver_patterns() -> Dict[str, List[Any]]:
    """matrix area driver_packages: package manager -> the patterns of NVIDIA's driver package names."""
    from . import matrix

    out: Dict[str, List[Any]] = {}
    for row in matrix.load("driver_packages"):
        out.setdefault(row["manager"], []).append(re.compile(row["pattern"]))
    return out


def _driver_install(argv: Sequence[str]) -> Optional[str]:
    """The NVIDIA driver package (or runfile) this command installs, else None."""
    pats = _driver_patterns()
    exe = os.path.basename(argv[0])
    manager = _MANAGERS.get(exe)
    if manager is not None:
        verbs = [i for i, a in enumerate(argv) if a in ("install", "in", "reinstall")]
        if verbs:
            for word in argv[verbs[0] + 1:]:
                if word.startswith("-") or "$" in word:
                    continue
                name = word.split("=", 1)[0] if manager == "apt" else word
                if any(p.fullmatch(name) for p in pats.get(manager, [])):
                    return name
        return None
    runfile = argv[0] if exe not in ("sh", "bash") else next((a for a in argv[1:] if not a.startswith("-")), "")
    base = os.path.basename(runfile)
    if any(p.fullmatch(base) for p in pats.get("runfile", [])):
        return base
    if re.fullmatch(r"cuda_[0-9.]+_[0-9.]+_linux(_sbsa)?\.run", base) and "--driver" in argv:
        return base + " --driver"
    return None


def _run_findings(st: Stage, t: Target, path: str, context_dir: Optional[str], run: _Run) -> List[Finding]:
    out: List[Finding] = []
    base = st.base
    env = st.all_env()
    gpu_image = bool(base.cuda or base.torch)
    told_python = told_compiler = told_pep668 = told_arch = told_driver = False
    installed: List[_Installed] = []
    parent_state = run.states.get(st.parent.index) if st.parent is not None else None
    if parent_state is not None:  # what the stages it is built on installed counts (judged there)
        state = replace(parent_state)
        state.add_env(base, env)
    else:
        state = _PyState.of(base, env)
    t = _through_forward_compat(base, t)
    for ins in st.runs:
        run.check()
        what = "line %d: RUN" % ins.line
        for k, (cmd_env, raw, arm) in enumerate(commands_env(_script(ins))):
            if k % 256 == 255:
                run.check()
            scope = dict(env, **cmd_env)
            argv = [_expand(a, scope, run.budget, what) for a in raw]
            if arm:
                # run only for one case value (another platform's install line): not judged; what it
                # installed counts
                state.after(argv, base)
                continue
            driver = _driver_install(argv) if not told_driver else None
            if driver:
                told_driver = True
                out.append(_finding(
                    "dockerfile.driver_in_image", "%s installs %s, an NVIDIA driver, into the image" % (
                        os.path.basename(argv[0]), driver),
                    "The host's driver is the one that runs a container: the NVIDIA Container Toolkit mounts its "
                    "libraries into it. A driver in the image cannot load its kernel module there, and its "
                    "libraries, of another release than the host's module, shadow or contradict the host's "
                    "('Failed to initialize NVML: Driver/library version mismatch', 'CUDA driver version is "
                    "insufficient').", ins.line, path,
                    Fix("Remove the driver from the image: the CUDA libraries come with an nvidia/cuda image "
                        "(or cuda-libraries-X-Y, the nvidia-* wheels); the driver belongs on the host, with the "
                        "NVIDIA Container Toolkit.", ["envdoctor install driver --dry-run",
                                                       "envdoctor install container-toolkit --dry-run"]),
                    evidence=[("image.driver_package", driver)]))
            pip = pip_install(argv, ins.line, run.check)
            if pip is not None:
                for f in pip.requirement_files:
                    if context_dir and "$" not in f:
                        read_requirements(os.path.join(context_dir, f), pip, run=run)
            why = _compiles_cuda(argv, scope, pip)
            if why and not told_compiler and base.has_nvcc is False and not state.nvcc:
                told_compiler = True
                what = ("a %s image" % base.flavour) if base.flavour else ("%s (no CUDA toolkit)" % base.reference)
                sugg = ("nvidia/cuda:%s-%sdevel%s" % (base.cuda, base.cudnn_tag + "-" if base.cudnn_tag else "",
                                                      "-" + base.os_label if base.os_label else "")
                        if base.cuda else None)
                out.append(_finding(
                    "dockerfile.no_compiler_in_image", "%s, but the stage builds FROM %s, which has no nvcc" % (
                        why[:1].upper() + why[1:], base.reference),
                    "Only the -devel nvidia/cuda images carry nvcc and the CUDA headers; on %s the build stops with "
                    "'nvcc: not found' or 'CUDA_HOME environment variable is not set' (a project whose CUDA "
                    "part is optional, such as PyTorch built from source, builds without it instead)." % what,
                    ins.line, path,
                    Fix("Build FROM the -devel image, or compile in a -devel stage and copy the result into this "
                        "one (or install a prebuilt wheel).", ["FROM %s" % sugg.rstrip("-")] if sugg else [])))
            if why and not told_arch and t.gpu_ccs and scope.get("TORCH_CUDA_ARCH_LIST"):
                arch_list = scope["TORCH_CUDA_ARCH_LIST"]
                missing = [cc for cc in t.gpu_ccs if versions.torch_arch_list_runs_on(arch_list, cc) is False]
                if missing:
                    told_arch = True
                    out.append(_finding(
                        "dockerfile.build_does_not_fit", "%s for TORCH_CUDA_ARCH_LIST=%s, which has no code for "
                        "compute capability %s" % (why[:1].upper() + why[1:], scope["TORCH_CUDA_ARCH_LIST"],
                                                    ", ".join(missing)),
                        "The build compiles machine code (SASS) only for the listed architectures: SASS for X.Y "
                        "runs on X.Y to X.9, and only an entry with +PTX runs on later GPUs (compiled at first "
                        "use). On this host the compiled kernels fail with 'no kernel image is available for "
                        "execution on the device'.", ins.line, path,
                        Fix("Add the host's architecture (or +PTX on the newest entry).",
                            ['ENV TORCH_CUDA_ARCH_LIST="%s"' % ";".join(
                                [scope["TORCH_CUDA_ARCH_LIST"].replace(" ", ";")] + missing)]),
                        url="https://pytorch.org/docs/stable/cpp_extension.html",
                        evidence=[("host.gpu_cc", ",".join(t.gpu_ccs))]))
            if pip is not None:
                uses_pip = os.path.basename(argv[0]) != "uv"
                if not state.present and not told_python and not pip.in_venv:
                    told_python = True
                    out.append(_finding(
                        "dockerfile.no_python_in_image", "%s runs, but %s has no Python and nothing installs one "
                        "before" % (os.path.basename(argv[0]), base.reference),
                        "nvidia/cuda and plain OS images carry no Python; the build stops with '%s: not found'." %
                        os.path.basename(argv[0]), ins.line, path,
                        Fix("Install Python first.", ["RUN apt-get update && apt-get install -y "
                                                      "--no-install-recommends python3 python3-pip python3-venv"])))
                elif state.present and not state.pip and uses_pip and not pip.in_venv and not told_python:
                    told_python = True
                    exe = os.path.basename(argv[0])
                    out.append(_finding(
                        "dockerfile.no_python_in_image", "%s runs, but the Python installed before has no pip (%s "
                        "has none, and no python3-pip, get-pip.py or virtual environment came before)" % (
                            " ".join(argv[:3]) if _PYTHON.match(exe) else exe, base.reference),
                        "The distribution's python3 package does not include pip; the build stops with '%s'." % (
                            "No module named pip" if _PYTHON.match(exe) else "%s: not found" % exe),
                        ins.line, path,
                        Fix("Install pip with Python (or use a virtual environment).",
                            ["RUN apt-get update && apt-get install -y --no-install-recommends python3-pip"])))
                breaks = ("--break-system-packages" in pip.flags or _truthy(scope.get("PIP_BREAK_SYSTEM_PACKAGES"))
                          or _truthy(scope.get("UV_BREAK_SYSTEM_PACKAGES")))
                if (_externally_managed(base.os_label) and state.present and not state.venv and not pip.in_venv
                        and base.python is None and not breaks
                        and not any(f in pip.flags for f in ("--target", "-t", "--prefix", "--user"))
                        and not told_pep668):
                    told_pep668 = True
                    out.append(_finding(
                        "dockerfile.externally_managed_python",
                        "pip installs into %s's system Python, which forbids it (PEP 668)" % base.os_label,
                        "%s marks its Python externally managed: pip stops with 'error: "
                        "externally-managed-environment'." % base.os_label, ins.line, path,
                        Fix("Install into a virtual environment (and put it first on PATH).",
                            ["RUN python3 -m venv /opt/venv", "ENV PATH=/opt/venv/bin:$PATH"]),
                        url=PEP668_SOURCE))
                out += _framework_findings(pip, st, t, pip.python or state.version, gpu_image, path, scope, run,
                                           installed)
            for project in _project_installs(argv, pip, ins.line, context_dir, run):
                out += _framework_findings(project, st, t, state.version, gpu_image, path, scope, run, installed)
            state.after(argv, base)
    run.states[st.index] = state
    host = Target(driver=t.driver, cc=t.cc, ccs=t.ccs, gpu=t.gpu, python=state.version, platform=t.platform,
                  gpu_present=t.gpu_present)
    return out + _pin_conflicts(installed, host, path, run.check)


def _project_installs(argv: Sequence[str], pip: Optional[PipInstall], line: int,
                      context_dir: Optional[str], run: Optional[_Run] = None) -> List[PipInstall]:
    """The dependencies of the project in the build context that this command installs (``pip install .``,
    ``pip install -e .[gpu]``, ``uv sync``, ``uv pip install -r pyproject.toml``), one install each, with the
    index uv takes it from where ``[tool.uv.sources]`` names one (pip does not read uv's sources: for pip the
    command's own index). Empty when the command installs no local project or pyproject.toml is not readable."""
    if not context_dir:
        return []
    extras: set = set()
    uv = bool(argv) and os.path.basename(argv[0]) == "uv"
    if uv and list(argv[1:2]) == ["sync"]:
        words = list(argv[2:])
        for i, w in enumerate(words):
            if w == "--extra" and i + 1 < len(words):
                extras.add(words[i + 1])
            elif w.startswith("--extra="):
                extras.add(w.split("=", 1)[1])
        if "--all-extras" in words:
            extras.add("*")
    elif pip is not None and (any(re.fullmatch(r"\.(/)?(\[[\w,.-]+\])?", u) for u in pip.urls)
                              or any(os.path.basename(f) == "pyproject.toml" for f in pip.requirement_files)):
        for u in pip.urls:
            m = re.fullmatch(r"\./?\[([\w,.-]+)\]", u)
            if m:
                extras.update(x.strip() for x in m.group(1).split(","))
    else:
        return []
    doc = _read_toml(os.path.join(context_dir, "pyproject.toml"), run, line)
    project = _table(doc, "project")
    deps = _strings(project.get("dependencies"))
    for name, items in _table(project, "optional-dependencies").items():
        if "*" in extras or name in extras:
            deps += _strings(items)
    uvconf = _table(_table(doc, "tool"), "uv")
    indexes = {i["name"]: i["url"] for i in _list(uvconf.get("index"))
               if isinstance(i, dict) and isinstance(i.get("name"), str) and isinstance(i.get("url"), str)}
    sources = _table(uvconf, "sources")
    locked = _uv_locked(context_dir, run, line) if uv and list(argv[1:2]) == ["sync"] else {}
    out: List[PipInstall] = []
    for text in deps:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        index = pip.index_url if pip is not None else None
        pinned = locked.get(canonicalize_name(req.name))
        if pinned is not None:  # uv sync installs what uv.lock pins, from where it says
            version, registry = pinned
            try:
                req = Requirement("%s==%s" % (req.name, version))
            except InvalidRequirement:
                continue
            out.append(PipInstall(line, list(argv), requirements=[req], index_url=registry, in_venv=True))
            continue
        if uv:
            src = sources.get(req.name) or sources.get(canonicalize_name(req.name))
            if isinstance(src, list):  # several sources, each with a marker: not judged
                continue
            if isinstance(src, dict) and isinstance(src.get("index"), str) and src["index"] in indexes:
                index = indexes[src["index"]]
            elif isinstance(src, dict):
                continue  # a git, path or URL source: not an index build
        out.append(PipInstall(line, list(argv), requirements=[req], index_url=index, in_venv=True))
    return out


def _uv_locked(context_dir: str, run: Optional[_Run] = None, line: int = 0) -> Dict[str, Tuple[str, Optional[str]]]:
    """uv.lock's pins: name -> (version, the registry it comes from; None for PyPI's). A package locked
    several times (per platform or per marker) is left out: which one this image takes is not known here."""
    doc = _read_toml(os.path.join(context_dir, "uv.lock"), run, line)
    seen: Dict[str, List[Tuple[str, Optional[str]]]] = {}
    for pkg in _list(doc.get("package")):
        if not isinstance(pkg, dict) or not isinstance(pkg.get("name"), str) or not isinstance(pkg.get("version"),
                                                                                                  str):
            continue
        source = _table(pkg, "source")
        registry = source.get("registry") if isinstance(source.get("registry"), str) else None
        if registry is None and source:
            continue  # git, path, URL or the project itself: no index build
        if registry and "pypi.org" in registry:
            registry = None
        seen.setdefault(canonicalize_name(pkg["name"]), []).append((pkg["version"], registry))
    return {name: pins[0] for name, pins in seen.items() if len(pins) == 1}


def _table(doc: Mapping[str, Any], key: str) -> Dict[str, Any]:
    value = doc.get(key)
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> List[str]:
    """The strings of a TOML array (anything else: none)."""
    return [v for v in _list(value) if isinstance(v, str)]


def _read_toml(path: str, run: Optional[_Run] = None, line: int = 0) -> Dict[str, Any]:
    from .policy import toml_module

    text = _context_text(path, run, line)
    if text is None:
        return {}
    try:
        doc = toml_module().loads(text)
    except (ValueError, UnicodeError) as exc:
        if run is not None:
            run.unreadable(path, line, "could not be read (not valid TOML: %s)" % str(exc).split("\n")[0][:80])
        return {}
    except RecursionError:
        if run is not None:
            run.unreadable(path, line, "could not be read (nested deeper than the TOML reader follows)")
        return {}
    return doc if isinstance(doc, dict) else {}


def _through_forward_compat(base: Image, t: Target) -> Target:
    """The host as CUDA inside the image sees it: where an nvidia/cuda image starts on an older driver
    through forward compatibility, CUDA loads the image's cuda-compat libcuda, of the image's own CUDA."""
    if base.repository != "nvidia/cuda" or not base.cuda or not t.driver:
        return t
    mm = ".".join(base.cuda.split(".")[:2])
    need = hw.min_driver_for_cuda(mm)
    try:
        older = need is not None and Version(t.driver) < Version(need)
    except InvalidVersion:
        return t
    if older and _forward_compat(mm, t) == "starts":
        return t.merged(driver=need)
    return t


_RUN_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _expand(word: str, values: Mapping[str, str], budget: Optional[Expansion] = None, what: str = "RUN") -> str:
    """``$NAME`` and ``${NAME}`` whose value is known (the stage's ARG and ENV values, the command's own
    assignments), as the shell expands them in RUN; anything else (unknown names, ``${X#...}``, ``$(...)``)
    is left as written, so what depends on it is not judged. What it adds is spent from ``budget``."""
    if "$" not in word:
        return word
    out: List[str] = []
    pos = 0
    for m in _RUN_VAR.finditer(word):
        name = m.group(1) or m.group(2)
        piece = values[name] if name in values else m.group(0)
        if budget is not None:
            budget.spend(len(piece), what)
        out.append(word[pos:m.start()])
        out.append(piece)
        pos = m.end()
    out.append(word[pos:])
    return "".join(out)


@functools.lru_cache(maxsize=None)
def _candidate_requirement(command: str) -> Optional[Requirement]:
    """The requirement a matrix build's install command names (parsed once per command: every pip line of a
    Dockerfile is matched against every build of its framework)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    ci = pip_install(argv, 0)
    return ci.requirements[0] if ci is not None and ci.requirements else None


def _pip_picks(req: Requirement, pip: PipInstall, fw: str, python: Optional[str],
               env: Optional[Mapping[str, str]] = None, any_extras: bool = False) -> List[Any]:
    """The matrix builds of ``fw`` this requirement can install, as pip chooses: the newest release its
    specifier admits whose Python range admits ``python`` (pip skips releases whose Requires-Python does
    not; when none does, the newest release, which then fails on Python), every variant of that release the
    line's package, extras and index could give (torch from PyPI alone: PyPI's build, where the matrix knows it)."""
    from .advise import candidates, python_admits

    name = canonicalize_name(req.name)
    exact = next((s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version), None)
    index = (pip.index_url or "").rstrip("/")
    local = exact.split("+", 1)[1] if exact and "+" in exact else None
    variant = local or (index.rsplit("/", 1)[-1] if "download.pytorch.org" in index else None)
    by_release: Dict[str, List[Any]] = {}
    for c in candidates(fw):
        creq = _candidate_requirement(c.command)
        if creq is None:
            continue
        if _builds_name(creq.name) != _builds_name(name):
            continue
        if fw == "jax" and not any_extras and not (req.extras & creq.extras):
            continue
        probe = _release_version(c.release, creq.specifier)
        if probe is None or not req.specifier.contains(probe, prereleases=True):
            if not (exact and creq.specifier.contains(exact.split("+")[0], prereleases=True)):
                continue
        if exact and not creq.specifier.contains(exact.split("+")[0], prereleases=True):
            continue
        if fw == "torch" and variant and c.variant != variant:
            continue
        by_release.setdefault(c.release, []).append(c)
    releases = list(by_release.values())
    if fw == "torch" and not variant and not (pip.index_url or pip.extra_index_urls or pip.find_links or any(
            k.startswith(_INDEX_VARIABLES) for k in env or {})):
        releases = [[c for c in builds if c.variant == c.row.get("pypi_variant")] or builds
                    for builds in releases]  # pip takes the one build PyPI has (unknown: any of them)
    for builds in releases:
        if python is None or any(python_admits(c.python_spec, python) is not False for c in builds):
            return builds
    return releases[0] if releases else []


def _extras(command: str) -> set:
    creq = _candidate_requirement(command)
    return set(creq.extras) if creq is not None else set()


def _release_version(release: str, spec: SpecifierSet) -> Optional[str]:
    """A version inside a candidate's release (``2.4`` -> ``2.4.0``; a JAX range -> its lower bound)."""
    if release and release[0].isdigit():
        return release + (".0" if release.count(".") < 2 else "")
    lows = [s.version for s in spec if s.operator in (">=", "==", "~=")]
    return lows[0].rstrip(".*") if lows else None


_INDEX_VARIABLES = ("PIP_INDEX", "PIP_EXTRA_INDEX", "PIP_FIND_LINKS", "PIP_NO_INDEX", "UV_INDEX", "UV_EXTRA_INDEX",
                    "UV_DEFAULT_INDEX", "UV_FIND_LINKS", "UV_NO_INDEX")


def _picks(req: Requirement, pip: PipInstall, fw: str, python: Optional[str], env: Mapping[str, str],
           run: Optional[_Run]) -> List[Any]:
    """:func:`_pip_picks`, once per distinct line of a run."""
    if run is None:
        return _pip_picks(req, pip, fw, python, env)
    key = (str(req), fw, python, pip.index_url, tuple(pip.extra_index_urls), tuple(pip.find_links),
           tuple(sorted(k for k in env if k.startswith(_INDEX_VARIABLES))))
    if key not in run.picks:
        run.picks[key] = _pip_picks(req, pip, fw, python, env)
    return run.picks[key]


@functools.lru_cache(maxsize=None)
def _retired() -> Dict[str, Dict[str, Any]]:
    """matrix area retired_distributions, by normalised name."""
    from . import matrix

    return {canonicalize_name(r["name"]): r for r in matrix.load("retired_distributions")}


def _builds_name(name: str) -> str:
    """The name whose builds a distribution installs (tensorflow-gpu 2.11 is tensorflow 2.11's build)."""
    key = canonicalize_name(name)
    row = _retired().get(key)
    return canonicalize_name(row["same_builds_as"]) if row and row.get("same_builds_as") else key


def _env_key(pip: PipInstall) -> str:
    """Which environment an install goes to, as far as the line says: a venv's pip, ``--python``, or the
    stage's default one (""); ``--target``/``--prefix`` installs are not environments ("-")."""
    if any(f in pip.flags for f in ("--target", "-t", "--prefix", "--root")) or any(
            a in ("--target", "-t", "--prefix", "--root") or a.startswith(("--target=", "--prefix="))
            for a in pip.argv):
        return "-"
    for i, a in enumerate(pip.argv):
        if a == "--python" and i + 1 < len(pip.argv):
            return os.path.dirname(pip.argv[i + 1])
        if a.startswith("--python="):
            return os.path.dirname(a.split("=", 1)[1])
    return os.path.dirname(pip.argv[0]) if "/" in pip.argv[0] else ""


def _framework_findings(pip: PipInstall, st: Stage, t: Target, py: Optional[str], gpu_image: bool,
                        path: str, env: Optional[Mapping[str, str]] = None, run: Optional[_Run] = None,
                        installed: Optional[List[_Installed]] = None) -> List[Finding]:
    from .advise import choose_build
    from .advise import judge as judge_build

    def judge(c: Any, host: Target) -> Any:
        if run is None:
            return judge_build(c, host)
        key = (id(c), host)
        if key not in run.verdicts:
            run.verdicts[key] = judge_build(c, host)
        return run.verdicts[key]

    out: List[Finding] = []
    if any("$" in u for u in [pip.index_url or ""] + pip.extra_index_urls):
        return out  # an index named by a value this file does not give: which builds it holds is not known
    host = Target(driver=t.driver, cc=t.cc, ccs=t.ccs, gpu=t.gpu, python=py, platform=t.platform,
                  gpu_present=t.gpu_present)
    for req in pip.requirements:
        fw = _framework_of(req.name)
        if fw is None:
            continue
        index = (pip.index_url or "").rstrip("/")
        cpu = frameworks.cpu_only(req.name) or (fw.name == "torch" and index.endswith("/whl/cpu")) or (
            fw.name == "jax" and not any(e.startswith("cuda") for e in req.extras) and req.name.lower() == "jax")
        if cpu:
            if gpu_image or t.gpu_present:
                exact = next((x.version for x in req.specifier if x.operator == "=="), "")
                same = ".".join(exact.split(".")[:2]) if exact[:1].isdigit() else None
                chosen = (choose_build(fw.name, host, release=same) if same else None) or (
                    choose_build(fw.name, host) if fw.advise else None)
                where = "a GPU image (%s)" % st.base.reference if gpu_image else "a host with an NVIDIA GPU"
                out.append(_finding(
                    "dockerfile.cpu_only_build", "%s is a CPU-only build of %s, installed in %s" % (
                        str(req), fw.display, where),
                    "It never uses the GPU.", pip.line, path,
                    Fix("Install a CUDA build%s." % (" this host runs" if t.driver else ""),
                        ["RUN " + chosen[0].command] if chosen else [])))
            continue
        if not fw.advise:
            continue
        retired = _retired().get(canonicalize_name(req.name))
        if retired is not None:
            stub = retired["stub"]
            wheels = SpecifierSet(retired["wheels"]) if retired.get("wheels") else None
            if req.specifier.contains(stub, prereleases=True) or wheels is None or not any(
                    wheels.contains(s.version.rstrip(".*"), prereleases=True) for s in req.specifier
                    if s.operator in ("==", "===", "~=", "<=", "<")):
                chosen = choose_build(fw.name, host)
                out.append(_finding(
                    "dockerfile.build_does_not_fit", "%s installs %s %s, a retired name whose release only fails: "
                    "'%s'" % (str(req), retired["name"], stub, retired["stub_error"]),
                    "%s on PyPI %s; pip takes %s %s, whose setup.py raises that error on install. Install %s "
                    "instead." % (retired["name"], "has wheels only for releases %s" % retired["wheels"]
                                  if wheels else "has no release with files to install", retired["name"], stub,
                                  retired["replacement"]), pip.line, path,
                    Fix("Install %s%s." % (retired["replacement"], ", the build that fits this host" if chosen
                                           and t.driver else ""),
                        ["RUN " + chosen[0].command] if chosen else ["RUN pip install " + retired["replacement"]]),
                    url=retired["source"]["url"], evidence=[("image.python", py)]))
                continue
        picks = _picks(req, pip, fw.name, py, st.env if env is None else env, run)
        loose = False
        if not picks and fw.name == "jax" and req.extras:
            # an extra the matrix's builds do not name (jax[cuda], jax[cuda11_cudnn82]...): the release's Python
            # range still holds
            picks, loose = _pip_picks(req, pip, fw.name, py, st.env if env is None else env, any_extras=True), True
        if not picks:
            continue
        if installed is not None:
            options = _pin_options(req, pip, fw.name, picks, py)
            if options:
                installed.append(_Installed(_env_key(pip), pip.line, id(pip), req, fw.display, fw.name, options))
        if loose:
            verdicts = [(c, judge(c, Target(python=py, platform=t.platform))) for c in picks]
            if not any(v.ok for _, v in verdicts):
                why = [r for _, v in verdicts for r in v.reasons]
                chosen = choose_build(fw.name, host)
                out.append(_finding(
                    "dockerfile.build_does_not_fit", "%s (%s %s) does not fit: %s" % (
                        str(req), fw.display, picks[0].release, why[0]),
                    "pip finds no %s %s wheel for the image's Python %s." % (fw.display, picks[0].release, py),
                    pip.line, path, Fix("Install the build that fits.", ["RUN " + chosen[0].command] if chosen else []),
                    evidence=[("image.python", py)]))
            continue
        wanted = set().union(*(_extras(c.command) for c in picks)) - set(req.extras)
        if wanted and all(_extras(c.command) for c in picks):
            c = picks[0]
            libs = " and ".join("%s %s" % (label, c.row[k]) for k, label in (("cuda", "CUDA"), ("cudnn", "cuDNN"))
                                if c.row.get(k))
            fixed = Requirement(str(req))
            fixed.extras = set(req.extras) | wanted
            out.append(_finding(
                "dockerfile.cuda_libraries_not_installed",
                "%s installs %s without [%s], which brings the CUDA libraries its GPU build loads" % (
                    str(req), fw.display, ",".join(sorted(wanted))),
                "%s %s's GPU build loads %s; without the extra, pip installs none, and unless the image holds "
                "exactly those, it runs on the CPU ('Cannot dlopen some GPU libraries')." % (
                    fw.display, c.release, libs or "the CUDA libraries it was built with"), pip.line, path,
                Fix("Install it with the extra.", ["RUN pip install %s" % shlex.quote(str(fixed))])))
        verdicts = [(c, judge(c, host)) for c in picks]
        if any(v.ok for _, v in verdicts):
            continue
        reasons: List[str] = []
        for _c, v in verdicts:
            for r in v.reasons:
                if r not in reasons:
                    reasons.append(r)
        chosen = choose_build(fw.name, host)
        builds = ", ".join(sorted({c.variant for c in picks}))
        out.append(_finding(
            "dockerfile.build_does_not_fit", "%s (%s %s, %s) does not fit: %s" % (
                str(req), fw.display, picks[0].release, builds, reasons[0]),
            "Every build pip can take for this line: %s." % "; ".join(reasons), pip.line, path,
            Fix("Install the build that fits%s." % (
                " (newest that runs on driver %s%s)" % (t.driver, " and %s" % t.gpu if t.gpu else "")
                if t.driver else ""), ["RUN " + chosen[0].command] if chosen else []),
            evidence=[("host.driver", t.driver), ("host.gpu_cc", ",".join(host.gpu_ccs) or None),
                      ("image.python", py)]))
    return out


class _PinOption(NamedTuple):
    """One release pip may take for a requirement, and the nvidia-* wheels its install pins."""

    release: str
    requires: Dict[str, str]
    candidate: Any  # the matrix build (advise.Candidate) of that release, or None


class _Installed(NamedTuple):
    """A framework requirement a pip command of a stage installs, with the CUDA wheels it may pin."""

    env: str  # which environment (:func:`_env_key`)
    line: int
    command: int  # the pip command (two requirements of one command are resolved together)
    req: Requirement
    display: str
    framework: str
    options: List[_PinOption]


@functools.lru_cache(maxsize=None)
def _wheel_pins() -> Dict[Tuple[str, str], List[Tuple[Version, Dict[str, str]]]]:
    """matrix area cuda_wheel_pins: (distribution, extra or "") -> [(release, {package: specifier})], ascending."""
    from . import matrix

    out: Dict[Tuple[str, str], List[Tuple[Version, Dict[str, str]]]] = {}
    for row in matrix.load("cuda_wheel_pins"):
        try:
            req = Requirement(row["requirement"])
        except InvalidRequirement:
            continue
        key = (canonicalize_name(req.name), canonicalize_name(next(iter(req.extras))) if req.extras else "")
        for v in row["releases"]:
            try:
                out.setdefault(key, []).append((Version(v), dict(row["requires"])))
            except InvalidVersion:
                continue
    for rows in out.values():
        rows.sort(key=lambda r: r[0])
    return out


@functools.lru_cache(maxsize=4096)
def _release_candidates(fw: str, name: str, version: Version) -> List[Any]:
    """The matrix builds of ``fw`` whose release admits ``version`` (their Python range, their fit)."""
    from .advise import candidates

    out = []
    for c in candidates(fw):
        creq = _candidate_requirement(c.command)
        if creq is not None and _builds_name(creq.name) == _builds_name(name) and creq.specifier.contains(
                version, prereleases=True):
            out.append(c)
    return out


def _build_of(builds: List[Any], extras: List[str]) -> Any:
    """The build among a release's that an install with these extras takes: JAX's variant of the extra's CUDA major
    (cuda12, cuda12-pip -> cuda12), torch's PyPI build, else the first."""
    majors = {m.group(1) for m in (re.match(r"^cuda(\d+)", e) for e in extras) if m}
    for c in builds:
        if ("cuda" + "".join(sorted(majors)) == c.variant) if majors else c.variant == c.row.get("pypi_variant"):
            return c
    return builds[0] if builds else None


def _pin_options(req: Requirement, pip: PipInstall, fw: str, picks: List[Any], python: Optional[str]
                 ) -> List[_PinOption]:
    """The releases pip may take for ``req`` and the nvidia-* wheels each pins (matrix area cuda_wheel_pins): every
    release the specifier and the image's Python admit (pip backtracks among them when one command also names
    another framework); where the area does not know the release (or torch comes from another index than PyPI),
    the cuDNN pin of the matrix builds pip picks."""
    from .advise import python_admits

    name = canonicalize_name(req.name)
    extras = sorted(str(canonicalize_name(e)) for e in req.extras) or [""]
    from_pypi = fw != "torch" or all(c.variant == c.row.get("pypi_variant") for c in picks)
    out: List[_PinOption] = []
    if from_pypi and not (fw == "torch" and (pip.index_url or pip.extra_index_urls or pip.find_links)):
        merged: Dict[Version, Dict[str, str]] = {}
        for extra in extras:
            for v, requires in _wheel_pins().get((name, extra), []):
                if not req.specifier.contains(v):
                    continue
                pins = merged.setdefault(v, {})
                for pkg, spec in requires.items():
                    pins[pkg] = ",".join(x for x in (pins.get(pkg), spec) if x)
        for v in sorted(merged):
            builds = _release_candidates(fw, name, v)
            if python and builds and all(python_admits(c.python_spec, python) is False for c in builds):
                continue  # pip skips a release with no wheel for the image's Python
            out.append(_PinOption(str(v), merged[v], _build_of(builds, extras)))
        if out:
            return out
    pinned = [c for c in picks if c.cudnn_pip and _extras(c.command) <= set(req.extras)]
    if pinned and len(pinned) == len(picks):
        return [_PinOption(c.release, {c.cudnn_pip[0]: c.cudnn_pip[1]}, c) for c in pinned]
    return []


def _specifiers_meet(a: str, b: str) -> bool:
    """Does some version satisfy both specifier sets (as pip's resolver asks)? Tried on every version either names
    and on one just above each (a set of ==, !=, <, <=, >, >=, ~= and wildcards is a union of intervals whose lower
    ends are those), and on 0."""
    try:
        sa, sb = SpecifierSet(a), SpecifierSet(b)
    except ValueError:
        return True  # not understood: no conflict claimed
    probes = ["0"]
    for s in list(sa) + list(sb):
        base = s.version.rstrip(".*")
        probes += [base, base + ".0.0.0.1"]
    for v in probes:
        try:
            if sa.contains(v, prereleases=True) and sb.contains(v, prereleases=True):
                return True
        except InvalidVersion:
            continue
    return False


def _clashes(a: _PinOption, b: _PinOption) -> List[str]:
    """The packages both pin to specifier sets no release satisfies together."""
    return [pkg for pkg in sorted(set(a.requires) & set(b.requires))
            if not _specifiers_meet(a.requires[pkg], b.requires[pkg])]


def _pin_conflicts(installed: List[_Installed], host: Target, path: str,
                   check: Callable[[], None] = lambda: None) -> List[Finding]:
    """Frameworks installed into one environment of a stage whose CUDA wheel pins (nvidia-nccl-cu12,
    nvidia-cudnn-cu12 ...) cannot meet: in one pip command, for every pair of releases pip could take (it
    backtracks); in two, for the releases each takes (the later replaces what the earlier pinned).

    Each install is compared with every install of its own command and, among the earlier installs of other
    commands, with the first of each kind (same environment, framework, requirement and pins taken): the others
    give the same answer, so a Dockerfile repeating one line thousands of times costs as many comparisons as
    lines, not their square."""
    out: List[Finding] = []
    told: Set[Tuple[str, str]] = set()
    by_command: Dict[int, List[Tuple[int, _Installed]]] = {}
    # kind -> the first two earlier installs of that kind in different commands (one of them is not b's command)
    firsts: Dict[Tuple[Any, ...], List[Tuple[int, _Installed]]] = {}
    for j, b in enumerate(installed):
        if j % 256 == 255:
            check()
        earlier = list(by_command.get(b.command, []))
        earlier += [next(e for e in pair if e[1].command != b.command) for pair in firsts.values()
                    if any(e[1].command != b.command for e in pair)]
        earlier.sort(key=lambda e: e[0])
        kind = (b.env, b.framework, str(b.req), b.display,
                tuple((o.release, tuple(sorted(o.requires.items()))) for o in b.options[-1:]))
        pair = firsts.setdefault(kind, [])
        if len(pair) < 2 and all(e[1].command != b.command for e in pair):
            pair.append((j, b))
        by_command.setdefault(b.command, []).append((j, b))
        for _, a in earlier:
            if a.env != b.env or a.env == "-" or a.framework == b.framework or (a.framework, b.framework) in told:
                continue
            same = a.command == b.command
            opts_a = a.options if same else a.options[-1:]
            opts_b = b.options if same else b.options[-1:]
            if any(not _clashes(oa, ob) for oa in opts_a for ob in opts_b):
                continue  # some release of each meets
            told.add((a.framework, b.framework))
            oa, ob = opts_a[-1], opts_b[-1]
            clash = _clashes(oa, ob)
            pkg = clash[0]
            fix = _agreeing_release(b, oa, host) or _agreeing_release(a, ob, host)
            more = [p for p in clash[1:]]
            out.append(_finding(
                "dockerfile.frameworks_conflict", "%s needs %s%s, but %s%s needs %s%s" % (
                    str(b.req), pkg, ob.requires[pkg], str(a.req), "" if same else " (line %d)" % a.line, pkg,
                    oa.requires[pkg]),
                ("pip cannot install both (ResolutionImpossible): no %s release satisfies %s %s's %s and %s %s's "
                 "%s%s." % (pkg, a.display, oa.release, oa.requires[pkg], b.display, ob.release, ob.requires[pkg],
                            (" (nor " + ", ".join(more) + ")") if more else "")) if same else
                ("The later install replaces %s with one %s %s cannot load (pip warns '%s %s requires %s%s, but you "
                 "have ... which is incompatible'), and %s then runs without its GPU libraries%s." % (
                     pkg, a.display, oa.release, canonicalize_name(a.req.name), oa.release, pkg, oa.requires[pkg],
                     a.display, (" (so do " + ", ".join(more) + ")") if more else "")),
                b.line, path,
                Fix("Install releases whose CUDA wheel pins meet, or each framework in its own virtual environment.",
                    ["RUN " + fix] if fix else []),
                evidence=[("pins", "%s %s: %s%s; %s %s: %s%s" % (a.display, oa.release, pkg, oa.requires[pkg],
                                                                b.display, ob.release, pkg, ob.requires[pkg]))]))
    return out


def _cuda_majors(pins: Mapping[str, str]) -> Set[str]:
    """The CUDA majors of nvidia-*-cuNN wheels a set of pins names."""
    return {m.group(1) for m in (re.search(r"-cu(\d+)$", p) for p in pins) if m}


def _with_build_cudnn(option: _PinOption) -> _PinOption:
    """The option's pins with the cuDNN its matrix build needs added (where the matrix names one)."""
    c = option.candidate
    if c is None or not c.cudnn_pip:
        return option
    pins = dict(option.requires)
    pins[c.cudnn_pip[0]] = ",".join(x for x in (pins.get(c.cudnn_pip[0]), c.cudnn_pip[1]) if x)
    return option._replace(requires=pins)


def _agreeing_release(wanted: _Installed, other: _PinOption, host: Target) -> Optional[str]:
    """A pip command for the newest release of ``wanted``'s requirement (its name and extras, any version) that fits
    the host and the image's Python and whose CUDA wheel pins all meet ``other``'s."""
    from .advise import judge

    name = canonicalize_name(wanted.req.name)
    extras = sorted(str(canonicalize_name(e)) for e in wanted.req.extras) or [""]
    rows = [(v, pins) for e in extras for v, pins in _wheel_pins().get((name, e), [])]
    if rows:
        # beyond what pip resolves, the cuDNN each build needs at run time (the matrix's; JAX 0.4.23's wheels
        # admit any cuDNN >= 8.9, its jaxlib loads only cuDNN 8)
        need = _with_build_cudnn(other)
        for v, pins in sorted(rows, key=lambda r: r[0], reverse=True):
            build = _build_of(_release_candidates(wanted.framework, name, v), extras)
            if build is None or _clashes(_with_build_cudnn(_PinOption(str(v), pins, build)), need):
                continue
            if _cuda_majors(pins) != _cuda_majors(other.requires):
                continue  # wheels of another CUDA major share files with these (nvidia/nccl/lib/libnccl.so.2)
            if not judge(build, host).ok:
                continue
            shown = "%s[%s]" % (wanted.req.name, ",".join(sorted(wanted.req.extras))) if wanted.req.extras \
                else wanted.req.name
            return 'pip install "%s==%s"' % (shown, v)
        return None
    # the cuDNN pin of the matrix's builds (torch from its own index)
    from .advise import candidates

    for c in candidates(wanted.framework):
        if c.cudnn_pip and c.cudnn_pip[0] in other.requires and _cuda_majors(
                {c.cudnn_pip[0]: ""}) == _cuda_majors(other.requires) and _specifiers_meet(
                c.cudnn_pip[1], other.requires[c.cudnn_pip[0]]) and judge(c, host).ok:
            return str(c.command)
    return None


def read(path: str, deadline: Optional[Deadline] = None) -> str:
    """The Dockerfile's text; DockerfileError for a file that cannot be one. A pipe or FIFO (standard input,
    ``<(...)``) is read like a file until its writer closes it, within ``deadline``."""
    import sys

    name = "standard input" if path == "-" else path
    if path == "-":
        stream = sys.stdin.buffer
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a file descriptor (an in-memory stream)
            return _text(stream.read(MAX_BYTES + 1), name)
        return _text(_read_fd(fd, name, deadline), name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise DockerfileError("cannot read %s: %s" % (path, exc.strerror or exc)) from None
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise DockerfileError("cannot read %s: it is a directory" % path)
        return _text(_read_fd(fd, name, deadline), name)
    finally:
        os.close(fd)


def _read_fd(fd: int, name: str, deadline: Optional[Deadline]) -> bytes:
    """At most MAX_BYTES + 1 bytes of ``fd``, waiting for a pipe's writer no longer than ``deadline``."""
    import select

    chunks: List[bytes] = []
    size = 0
    poller = select.poll() if hasattr(select, "poll") else None
    if poller is not None:
        poller.register(fd, select.POLLIN | select.POLLPRI)
    while size <= MAX_BYTES:
        left = deadline.left() if deadline is not None else None
        if left is not None and left <= 0:
            raise DockerfileError("%s could not be read within --timeout %g s (a pipe or FIFO its writer never "
                                  "closed?)" % (name, deadline.seconds if deadline else 0))
        if poller is not None:
            ready = bool(poller.poll(None if left is None else max(1, int(left * 1000))))
        else:
            ready = bool(select.select([fd], [], [], left)[0])
        if not ready:
            continue
        try:
            chunk = os.read(fd, min(1 << 16, MAX_BYTES + 1 - size))
        except BlockingIOError:
            continue
        except OSError as exc:
            raise DockerfileError("cannot read %s: %s" % (name, exc.strerror or exc)) from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _text(data: bytes, path: str) -> str:
    if len(data) > MAX_BYTES:
        raise DockerfileError("%s is larger than %d KiB: not a Dockerfile" % (path, MAX_BYTES // 1024))
    if b"\x00" in data:
        raise DockerfileError("%s is not text (it holds NUL bytes): not a Dockerfile" % path)
    return data.decode("utf-8", "replace")


def document(name: str, df: Dockerfile, target: Target, whence: str, findings: List[Finding]) -> Dict[str, Any]:
    """``envdoctor dockerfile --format json`` (``envdoctor/schemas/dockerfile.schema.json``): the file, the host
    it was judged for (``whence``: where its driver and GPUs came from), each stage's image and the findings."""
    from . import __version__
    from .findings import summarize

    host = {"from": whence, "driver": target.driver, "gpu": target.gpu or None,
            "compute_capabilities": list(target.gpu_ccs), "gpu_present": target.gpu_present}
    stages = [{"line": s.line, "name": s.name, "from": s.image.reference, "cuda": s.base.cuda,
               "flavour": s.base.flavour, "os": s.base.os_label} for s in df.stages]
    return {"schema_version": 1, "envdoctor_version": __version__, "file": name, "host": host, "stages": stages,
            "findings": [f.to_dict() for f in findings], "summary": summarize(findings)}

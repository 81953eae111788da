"""CUDA toolkits: every copy on the machine, each with its path and how its version was learned.

Sources, each read through the host:

* ``/usr/local/cuda*`` directories: ``version.json`` (CUDA >= 11.1),
  ``version.txt`` (older), or, for toolkits assembled from pip wheels, the
  ``dist-info/`` folder naming ``nvidia_cuda_runtime-13.0.96.dist-info``;
  ``bin/nvcc``, ``lib64/libcudart.so.*`` and ``compat/libcuda.so.<driver>``;
* where ``/usr/local/cuda`` points, ``CUDA_HOME``/``CUDA_PATH``, ``nvcc`` on PATH;
* distro packages (dpkg status file, or ``rpm -qa``), kept as ``cuda.packages``
  so the libraries probe can reuse them;
* conda environments (``conda-meta/*.json`` file names);
* pip CUDA wheels of the inspected Python (``nvidia-cuda-runtime-cu12`` ...);
* application bundles unpacked in a home folder that carry their own CUDA runtime
  (``<bundle>/lib/libcudart.so.10.2.89``, ``<bundle>/<part>/lib/...``: a release tarball's layout): the runtime an
  application bundles is the toolkit's it was built with, and needs that CUDA's driver. CUDA toolkits, conda
  prefixes and Python environments are left to their own facts. ``cuda.bundled_cudart`` = ``[{root, path,
  release}]``;
* ``LD_LIBRARY_PATH``.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from .. import lazyre, versions
from ..facts import Fact, ok, timed_out, unknown
from ..host.base import COMMAND_FILTERS, FILE_FILTERS, FILE_PATTERN_FILTERS, Host, normalize_name, parse_dist_dir
from ..matrix.packages import is_driver_package
from . import ProbeContext, register

#: dpkg status files can be several MiB on a desktop install.
DPKG_STATUS = "/var/lib/dpkg/status"
DPKG_LIMIT = 16 * 1024 * 1024

#: Distro packages worth keeping: CUDA itself and the libraries built on it, and the packages of the driver's
#: kernel module, whose names say its flavour (Ubuntu nvidia-driver-550-open / nvidia-dkms-550 /
#: linux-modules-nvidia-550-server-open-generic, NVIDIA's repositories nvidia-open / kmod-nvidia-open-dkms /
#: kmod-nvidia-latest-dkms, Debian nvidia-open-kernel-dkms / nvidia-kernel-dkms).
_PKG_NAME = lazyre.compile(
    r"^(nvidia-cuda-toolkit|nvidia-cuda-dev|nvidia-cudnn|cuda(-[a-z0-9.+-]+)?|libcudnn[0-9a-z.+-]*|"
    r"libnccl[0-9a-z.+-]*|libnvinfer[0-9a-z.+-]*|tensorrt[0-9a-z.+-]*|libcudart[0-9a-z.+-]*|"
    r"libcublas[0-9a-z.+-]*|"
    r"nvidia-driver-\d+(-server)?(-open)?|nvidia-dkms-\d+(-server)?(-open)?|nvidia-kernel-open-\d+|"
    r"linux-modules-nvidia-\d+(-server)?(-open)?-[a-z0-9.+-]+|nvidia-open(-\d+)?|kmod-nvidia-(open|latest)-dkms|"
    r"nvidia-(open-)?kernel-dkms)$")

#: A toolkit directory name under /usr/local.
_TOOLKIT_DIR = lazyre.compile(r"^cuda(-\d+(\.\d+)*)?$")
_VERSION_TXT = lazyre.compile(r"CUDA Version\s+(\d+\.\d+(?:\.\d+)*)")
_NVCC_RELEASE = lazyre.compile(r"release\s+(\d+\.\d+),\s*V(\d+\.\d+(?:\.\d+)*)")
_COMPAT_LIBCUDA = lazyre.compile(r"^libcuda\.so\.(\d+\.\d+(?:\.\d+)*)$")
_CONDA_CUDA = lazyre.compile(r"^(cudatoolkit|cuda-version|cuda-runtime|cuda-cudart|cuda-nvcc|cuda-toolkit|"
                             r"cuda-libraries|cuda-compiler)-([^-]+)-([^-]+)\.json$")
#: A conda environment's package record, ``conda-meta/NAME-VERSION-BUILD.json``: (name, version, build string).
CONDA_META_FILE = lazyre.compile(r"^([a-z0-9][a-z0-9_.-]*?)-(\d[^-]*)-([^-]+)\.json$")
#: ``nvidia-cudnn-cu12`` (lib ``cudnn``, CUDA 12) and CUDA 13's suffix-less ``nvidia-cuda-runtime``.
_NVIDIA_WHEEL = lazyre.compile(r"^nvidia-(?P<lib>[a-z0-9-]+?)(?:-cu(?P<cuda>\d+))?$")
#: nvidia-* projects on PyPI that are not CUDA library wheels (NVML's bindings, the index helper, NVIDIA's own
#: builds of DALI, Model Optimizer and TensorFlow), each with the projects named after it (``nvidia-dali-cuda120``).
NOT_CUDA_WHEELS = ("nvidia-ml-py", "nvidia-ml-py3", "nvidia-pyindex", "nvidia-smi", "nvidia-dali", "nvidia-modelopt",
                   "nvidia-tensorflow")


def nvidia_library_wheel(key: str) -> Optional[Tuple[str, Optional[str]]]:
    """``(library, CUDA major or None)`` of an NVIDIA CUDA library wheel's normalised name: ``nvidia-cudnn-cu12`` ->
    ``("cudnn", "12")``, CUDA 13's ``nvidia-cuda-runtime`` -> ``("cuda-runtime", None)``; None for any other name.
    The one reader of these names."""
    if key.startswith(NOT_CUDA_WHEELS):
        return None
    m = _NVIDIA_WHEEL.match(key)
    return (m.group("lib"), m.group("cuda")) if m else None


_valid = versions.parse


#: ``12.4.131`` -> ``12.4`` (major.minor, what compatibility tables speak).
release_of = versions.release


def _best(versions: Iterable[str]) -> Optional[str]:
    """The most precise of several spellings of one version (``12.4.127`` over ``12``)."""
    best: Optional[str] = None
    for v in versions:
        if _valid(v) is None:
            continue
        if best is None or len(v.split(".")) > len(best.split(".")):
            best = v
    return best


# -- one toolkit directory -------------------------------------------------------

def inspect_toolkit(host: Host, path: str) -> Dict[str, Any]:
    """Everything one toolkit directory says about itself.

    ``version`` is ``None`` (with ``reason``) when no source names it; ``source``
    says which file gave it.
    """
    tk: Dict[str, Any] = {"path": path, "version": None, "release": None, "kind": "system", "nvcc": False,
                          "source": None, "cudart": None, "compat": []}
    reasons: List[str] = []
    # version.json (CUDA 11.1 and later)
    vj = host.read_file(posixpath.join(path, "version.json"))
    if vj.text is not None:
        try:
            doc = json.loads(vj.text)
            version = doc["cuda"]["version"]
            if not isinstance(version, str) or _valid(version) is None:
                raise ValueError(f"cuda.version is {version!r}")
            tk["version"], tk["source"] = version, "file:" + vj.path
        except (ValueError, KeyError, TypeError) as exc:
            reasons.append(f"{vj.path} is garbled ({str(exc)[:80] or type(exc).__name__})")
    elif not vj.missing:
        reasons.append(f"cannot read {vj.path} ({vj.error})")
    # version.txt (CUDA 11.0 and older)
    if tk["version"] is None:
        vt = host.read_file(posixpath.join(path, "version.txt"))
        if vt.text is not None:
            m = _VERSION_TXT.search(vt.text)
            if m:
                tk["version"], tk["source"] = m.group(1), "file:" + vt.path
            else:
                reasons.append(f"{vt.path} names no version ({vt.text.strip()[:60]!r})")
    # a toolkit assembled from pip wheels keeps the wheels' dist-info folders
    dist_dir = posixpath.join(path, "dist-info")
    dists: Dict[str, str] = {}
    for name in host.list_dir(dist_dir).names():
        parsed = parse_dist_dir(name)
        if parsed:
            dists[normalize_name(parsed[0])] = parsed[1]
    if dists:
        tk["components"] = dict(sorted(dists.items()))
        if tk["version"] is None:
            for comp in ("nvidia-cuda-runtime", "nvidia-cuda-nvcc", "nvidia-cuda-cudart"):
                if _valid(dists.get(comp)):
                    tk["version"] = dists[comp]
                    tk["source"] = "dir:{} ({}-{}.dist-info)".format(dist_dir, comp.replace("-", "_"), dists[comp])
                    break
            else:
                reasons.append(f"{dist_dir} lists no nvidia_cuda_runtime or nvidia_cuda_nvcc wheel")
        tk["kind"] = "pip-assembled"
    # bin/nvcc
    tk["nvcc"] = "nvcc" in host.list_dir(posixpath.join(path, "bin")).names()
    # libcudart.so.X[.Y.Z] in lib64, lib or targets/<arch>/lib
    lib_dirs = [posixpath.join(path, d) for d in ("lib64", "lib")]
    for target in host.list_dir(posixpath.join(path, "targets")).names():
        lib_dirs.append(posixpath.join(path, "targets", target, "lib"))
    cudart: List[str] = []
    for d in lib_dirs:
        cudart += [v for v in map(versions.cuda_of_cudart, host.list_dir(d).names()) if v]
    tk["cudart"] = _best(cudart)
    if tk["version"] is None and tk["cudart"] and len(tk["cudart"].split(".")) >= 3:
        tk["version"], tk["source"] = tk["cudart"], "dir:{} (libcudart.so.{})".format(path, tk["cudart"])
    # compat/: forward-compatibility libcuda for an older driver (cuda-compat-X-Y's layout); compat/lib/ is where
    # NVIDIA's NGC images of the CUDA 10/11 era keep it (their LD_LIBRARY_PATH starts /usr/local/cuda/compat/lib);
    # later NGC images keep the files in compat/lib.real, which their entrypoint links compat/lib to. Each copy is
    # recorded once, with the directory it really is in ("real"), which the loader path is compared with.
    seen_real: Set[str] = set()
    for compat_dir in (posixpath.join(path, "compat"), posixpath.join(path, "compat", "lib"),
                       posixpath.join(path, "compat", "lib.real")):
        real_dir = host.resolve(compat_dir)
        for name in host.list_dir(compat_dir).names():
            m = _COMPAT_LIBCUDA.match(name)
            real = posixpath.join(real_dir, name)
            if m and real not in seen_real:
                seen_real.add(real)
                tk["compat"].append({"path": posixpath.join(compat_dir, name), "driver_version": m.group(1),
                                     "real": real})
    tk["release"] = release_of(tk["version"])
    if tk["version"] is None:
        tk["reason"] = "; ".join(reasons) or "no version.json, version.txt, dist-info or versioned libcudart"
    return tk


# -- distro packages ---------------------------------------------------------------

_DPKG_PACKAGE = lazyre.compile(r"Package:[ \t]*(\S+)")
_DPKG_STANZA_END = lazyre.compile(r"\n[ \t]*\n")
#: Every name _PKG_NAME or a driver package pattern accepts contains one of these.
_PKG_NEEDLES = ("cuda", "cudnn", "cublas", "nccl", "nvinfer", "tensorrt", "nvidia-driver", "nvidia-dkms-",
                "nvidia-kernel-", "linux-modules-nvidia-", "nvidia-open", "kmod-nvidia", "kernel-dkms",
                "xorg-x11-drv-nvidia", "xserver-xorg-video-nvidia", "libnvidia-", "nvidia-utils", "nvidia-smi",
                "nvidia-alternative", "nvidia-compute-utils", "nvidia-headless", "nvidia-legacy-", "nvidia-tesla-",
                "nvidia-gfxG", "nvidia-computeG", "x11-video-nvidiaG")


def _wanted(name: str) -> bool:
    """A CUDA package, or one of the NVIDIA driver's (kept with them, so the installed driver's packages are
    known)."""
    return bool(_PKG_NAME.match(name)) or is_driver_package(name)


def _candidate_lines(text: str, needles: Tuple[str, ...] = _PKG_NEEDLES) -> List[int]:
    """Offsets of the ``Package:`` lines that mention a CUDA-related name: one pass over the file with str.find
    (no regex over the whole file, and not one pass per name: a workstation's status file is megabytes)."""
    starts = []
    pos = text.find("Package:")
    while pos != -1:
        end = text.find("\n", pos)
        if pos == 0 or text[pos - 1] == "\n":
            line = text[pos:] if end == -1 else text[pos:end]
            if any(map(line.__contains__, needles)):  # no generator frame per line: thousands of lines
                starts.append(pos)
        pos = -1 if end == -1 else text.find("Package:", end)
    return starts


#: Packages other probes read from the dpkg status file, kept in a snapshot beside the CUDA ones (not CUDA packages:
#: :func:`parse_dpkg_status` skips them): FFmpeg builds whose package release pins their NVENC API (``apps``).
OTHER_DPKG_NAMES = lazyre.compile(r"^jellyfin-ffmpeg\d*$")
_OTHER_NEEDLES = ("jellyfin-ffmpeg",)


def _cuda_stanzas(text: str, others: bool = False) -> Iterable[Tuple[str, str]]:
    """(package name, its stanza) of every dpkg status stanza whose ``Package:`` is CUDA-related (with ``others``:
    or one :data:`OTHER_DPKG_NAMES` names)."""
    for start in _candidate_lines(text, _PKG_NEEDLES + _OTHER_NEEDLES if others else _PKG_NEEDLES):
        m = _DPKG_PACKAGE.match(text, start)
        if m is None or not (_wanted(m.group(1)) or (others and OTHER_DPKG_NAMES.match(m.group(1)))):
            continue
        end = _DPKG_STANZA_END.search(text, m.end())
        yield m.group(1), text[m.start():end.start() if end else len(text)]


def keep_cuda_stanzas(text: str) -> str:
    """What a snapshot keeps of the dpkg status file: the stanzas :func:`parse_dpkg_status` reads (the rest
    of the system's packages, most of a snapshot's size, says nothing about CUDA)."""
    stanzas = [s.rstrip("\n") for _, s in _cuda_stanzas(text, others=True)]
    return "\n\n".join(stanzas) + "\n" if stanzas else ""


def keep_cuda_rpm_lines(text: str) -> str:
    """What a snapshot keeps of ``rpm -qa``'s output: the lines :func:`parse_rpm_qa` reads."""
    return "".join(line for line in text.splitlines(True)
                   if len(line.split()) == 2 and _wanted(line.split()[0]))


def other_dpkg_packages(text: str) -> List[Dict[str, str]]:
    """The installed packages of the dpkg status file that :data:`OTHER_DPKG_NAMES` names: name and version."""
    out = []
    for name, stanza in _cuda_stanzas(text, others=True):
        if not OTHER_DPKG_NAMES.match(name):
            continue
        fields = dict(line.partition(":")[::2] for line in stanza.splitlines()
                      if line[:1] not in (" ", "\t") and ":" in line)
        if fields.get("Status", "").split()[-1:] == ["installed"]:
            out.append({"name": name, "version": fields.get("Version", "").strip(),
                        "arch": fields.get("Architecture", "").strip()})
    return out


def parse_dpkg_status(text: str) -> List[Dict[str, str]]:
    """Installed packages from a dpkg status file, filtered to CUDA-related names.

    The file lists every package on the system (often megabytes): only the
    lines that mention a CUDA-related name are looked at, and only the stanzas
    whose ``Package:`` line has such a name are parsed.
    """
    out: List[Dict[str, str]] = []
    for name, stanza in _cuda_stanzas(text):
        fields: Dict[str, str] = {}
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            k, _, v = line.partition(":")
            fields[k.strip()] = v.strip()
        if fields.get("Status", "").split()[-1:] != ["installed"]:
            continue
        out.append({"name": name, "version": fields.get("Version", ""), "manager": "dpkg"})
    return sorted(out, key=lambda p: p["name"])


def parse_rpm_qa(text: str) -> List[Dict[str, str]]:
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and _wanted(parts[0]):
            out.append({"name": parts[0], "version": parts[1], "manager": "rpm"})
    return sorted(out, key=lambda p: p["name"])


RPM_ARGV = ("rpm", "-qa", "--qf", "%{NAME} %{VERSION}-%{RELEASE}\n")
FILE_FILTERS[DPKG_STATUS] = keep_cuda_stanzas
COMMAND_FILTERS[RPM_ARGV[1:]] = keep_cuda_rpm_lines


def upstream_version(pkg_version: str) -> str:
    """``1:11.5.1-1ubuntu1`` -> ``11.5.1``; ``8.9.7.29-1+cuda12.2`` -> ``8.9.7.29``."""
    v = pkg_version.split(":", 1)[-1]
    return v.rsplit("-", 1)[0] if "-" in v else v


def _packages(host: Host) -> Fact:
    label = "CUDA-related distro packages"
    res = host.read_file(DPKG_STATUS, limit=DPKG_LIMIT)
    if res.text is not None:
        pkgs = parse_dpkg_status(res.text)
        if res.truncated:
            why = f"{DPKG_STATUS} is larger than {DPKG_LIMIT // (1024 * 1024)} MiB; package list incomplete"
            return unknown("cuda.packages", why, "file:" + DPKG_STATUS, label)
        return ok("cuda.packages", pkgs, "file:" + DPKG_STATUS, label)
    rpm = host.which("rpm")
    if rpm:
        argv = (rpm,) + RPM_ARGV[1:]
        src = "command:" + " ".join(argv[:3]) + " ..."
        r = host.run(list(argv), timeout=30)
        if r.timed_out:
            return timed_out("cuda.packages", r.describe_failure(), src, label)
        if not r.ok:
            return unknown("cuda.packages", r.describe_failure(), src, label)
        return ok("cuda.packages", parse_rpm_qa(r.stdout), src, label)
    if not res.missing:
        return unknown("cuda.packages", f"cannot read {DPKG_STATUS} ({res.error})", "file:" + DPKG_STATUS,
                       label)
    return unknown("cuda.packages", f"no package database found (no {DPKG_STATUS}, no rpm on PATH)",
                   "file:" + DPKG_STATUS, label)


def _distro_toolkits(host: Host, pkgs: List[Dict[str, str]], toolkits: List[Dict[str, Any]]) -> None:
    """Tie packages to toolkit directories, adding the distro's own CUDA (``nvidia-cuda-toolkit``)."""
    by_path = {t["path"]: t for t in toolkits}
    for p in pkgs:
        m = re.match(r"^cuda-toolkit-(\d+)-(\d+)$", p["name"])
        if m:
            path = f"/usr/local/cuda-{m.group(1)}.{m.group(2)}"
            if path in by_path:
                by_path[path]["package"] = "{} {}".format(p["name"], p["version"])
            else:
                toolkits.append({"path": path, "version": upstream_version(p["version"]),
                                 "release": release_of(upstream_version(p["version"])), "kind": "distro",
                                 "nvcc": False, "source": "package:{} {}".format(p["name"], p["version"]),
                                 "cudart": None, "compat": [],
                                 "reason": f"package installed but {path} is missing"})
        elif p["name"] == "nvidia-cuda-toolkit":
            version = upstream_version(p["version"])
            toolkits.append({"path": "/usr/lib/nvidia-cuda-toolkit", "version": version,
                             "release": release_of(version), "kind": "distro",
                             "nvcc": host.exists("/usr/bin/nvcc"),
                             "source": "package:{} {}".format(p["name"], p["version"]), "cudart": None, "compat": []})


# -- conda and pip ------------------------------------------------------------------

def conda_prefixes(host: Host) -> List[Tuple[str, str]]:
    """(prefix, how found): the active env, then those conda lists in ~/.conda/environments.txt."""
    out: List[Tuple[str, str]] = []
    active = host.getenv("CONDA_PREFIX")
    if active:
        out.append((active.rstrip("/") or "/", "env:CONDA_PREFIX"))
    home = host.getenv("HOME")
    if home:
        envs_txt = posixpath.join(home, ".conda", "environments.txt")
        for line in (host.read_text(envs_txt) or "").splitlines():
            line = line.strip().rstrip("/")
            if line.startswith("/") and line not in [p for p, _ in out]:
                out.append((line, "file:" + envs_txt))
    return out


def _conda(host: Host) -> List[Dict[str, Any]]:
    envs = []
    for prefix, how in conda_prefixes(host):
        meta = posixpath.join(prefix, "conda-meta")
        listing = host.list_dir(meta)
        pkgs = []
        for name in listing.names():
            m = _CONDA_CUDA.match(name)
            if m:
                pkgs.append({"name": m.group(1), "version": m.group(2), "build": m.group(3)})
        by_name = {p["name"]: p["version"] for p in pkgs}
        cuda_version = None
        for n in ("cudatoolkit", "cuda-version", "cuda-runtime", "cuda-cudart", "cuda-toolkit"):
            if _valid(by_name.get(n)):
                cuda_version = by_name[n]
                break
        env: Dict[str, Any] = {"prefix": prefix, "found_by": how, "packages": pkgs, "cuda_version": cuda_version,
                               "nvcc": "cuda-nvcc" in by_name, "source": "dir:" + meta}
        if not listing.ok:
            env["reason"] = f"cannot list {meta} ({listing.error})"
        envs.append(env)
    return envs


def pip_cuda_wheels(host: Host) -> List[Dict[str, Any]]:
    """NVIDIA CUDA wheels (``nvidia-cuda-runtime-cu12``, CUDA 13's ``nvidia-cuda-runtime``...)."""
    out = []
    for d in host.distributions():
        wheel = nvidia_library_wheel(d.key)
        if wheel is None:
            continue
        cuda_major: Optional[int] = int(wheel[1]) if wheel[1] else None
        v = _valid(d.version)
        if cuda_major is None and d.key.startswith("nvidia-cuda-") and v is not None:
            cuda_major = v.major  # CUDA 13 wheels drop the -cuNN suffix; their version is CUDA's
        out.append({"name": d.key, "version": d.version, "cuda_major": cuda_major, "location": d.location,
                    "metadata_dir": d.metadata_dir})
    return out


# -- nvcc ------------------------------------------------------------------------------

def parse_nvcc_version(text: str) -> Optional[Tuple[str, str]]:
    """``Cuda compilation tools, release 12.4, V12.4.131`` -> ``("12.4", "12.4.131")``."""
    m = _NVCC_RELEASE.search(text)
    return (m.group(1), m.group(2)) if m else None


def _nvcc(host: Host) -> Fact:
    label = "nvcc on PATH"
    path = host.which("nvcc")
    if not path:
        return ok("cuda.nvcc", None, "env:PATH", label)
    argv = [path, "--version"]
    src = "command:" + " ".join(argv)
    r = host.run(argv, timeout=15)
    if r.timed_out:
        return timed_out("cuda.nvcc", "%s --version hung (no answer within %.1fs)" % (path, r.duration), src, label)
    if not r.ok:
        return unknown("cuda.nvcc", r.describe_failure(), src, label)
    parsed = parse_nvcc_version(r.stdout)
    if not parsed:
        return unknown("cuda.nvcc", f"unexpected output of {path} --version: {r.stdout.strip()[-80:]!r}", src,
                       label)
    return ok("cuda.nvcc", {"path": path, "resolved": host.resolve(path), "release": parsed[0],
                            "version": parsed[1]}, src, label)


# -- the probe ---------------------------------------------------------------------------

#: Scripts a login shell sources (/etc/profile runs each /etc/profile.d/*.sh): toolkit packages that are not in
#: /usr/local put their bin directory on PATH there (System76's system76-cuda: /etc/profile.d/system76-cuda.sh adding
#: /usr/lib/cuda/bin; Arch's cuda: /etc/profile.d/cuda.sh adding /opt/cuda/bin).
PROFILE_D = "/etc/profile.d"
_PROFILE_SCRIPT = lazyre.compile(r"/etc/profile\.d/[^/]+\.sh$")
#: A directory named in a PATH assignment of such a script.
_PATH_LINE = lazyre.compile(r"\bPATH\b")
_BIN_DIR = lazyre.compile(r"(/[A-Za-z0-9_.+/-]*?/bin)(?=[\"':$}\s]|$)")


def keep_path_lines(text: str) -> str:
    """What a snapshot keeps of a login script: its lines that mention PATH (the rest may set secrets)."""
    return "".join(line + "\n" for line in text.splitlines() if _PATH_LINE.search(line))


FILE_PATTERN_FILTERS.append((_PROFILE_SCRIPT, keep_path_lines))

#: A user's own shell startup files, where NVIDIA's post-install steps have the user add /usr/local/cuda/bin to
#: PATH (bash reads ~/.bashrc in interactive shells, ~/.bash_profile or ~/.profile in login shells; zsh its own).
USER_STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile")
_USER_STARTUP = lazyre.compile(r"^/(?:home/[^/]+|root)/(?:%s)$" % "|".join(map(re.escape, USER_STARTUP_FILES)))
#: A user name as sudo records it in SUDO_USER (used only to name that user's home directory).
_USER_NAME = lazyre.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")


def user_homes(host: Host) -> List[str]:
    """The home directories whose files are the user's: HOME's, and under sudo the invoking user's (sudo may set HOME
    to root's); absolute, normalised, without ``/``, each once."""
    homes = [host.getenv("HOME") or ""]
    sudo_user = host.getenv("SUDO_USER") or ""
    if _USER_NAME.match(sudo_user) and sudo_user != "root":
        homes.append("/home/" + sudo_user)
    return list(dict.fromkeys(posixpath.normpath(h) for h in homes if h.startswith("/") and h.rstrip("/")))

FILE_PATTERN_FILTERS.append((_USER_STARTUP, keep_path_lines))


# -- pkg-config files a toolkit installs ----------------------------------------------

#: Where pkg-config looks by default on the distributions envdoctor knows (pkg-config's --variable pc_path: Debian
#: and Ubuntu add the multiarch directories, Fedora and RHEL /usr/lib64/pkgconfig), where NVIDIA's packages put the
#: toolkit's files (cuda-cudart-dev-X-Y: /usr/lib/pkgconfig/cudart-X.Y.pc), besides <toolkit>/pkgconfig.
PKGCONFIG_DIRS = ("/usr/local/lib/pkgconfig", "/usr/local/share/pkgconfig", "/usr/lib/x86_64-linux-gnu/pkgconfig",
                  "/usr/lib/aarch64-linux-gnu/pkgconfig", "/usr/lib64/pkgconfig", "/usr/lib/pkgconfig",
                  "/usr/share/pkgconfig")
#: The most .pc files read, and the most of one (NVIDIA's are a few hundred bytes).
PKGCONFIG_FILES = 256
PKGCONFIG_LIMIT = 64 * 1024
#: NVIDIA's files are named <library>-<CUDA major.minor>.pc (cudart-11.0.pc); in a shared directory only those are
#: read, and kept when they define NVIDIA's ``cudaroot`` variable.
_PC_VERSIONED = lazyre.compile(r"^[A-Za-z][A-Za-z0-9_+]*-\d+\.\d+\.pc$")
_PC_VARIABLE = lazyre.compile(r"^\s*([A-Za-z0-9_.]+)\s*=\s*(.*?)\s*$")
_PC_REFERENCE = lazyre.compile(r"\$\{([A-Za-z0-9_.]+)\}")


def pc_variables(text: str, pcfiledir: str) -> Dict[str, Optional[str]]:
    """The variables of a .pc file, each expanded as pkg-config expands it (``${name}`` by the variables defined
    before it, ``pcfiledir`` the file's directory, ``pc_sysrootdir`` ``/``, ``$$`` a literal ``$``); None for one
    that names a variable not defined (pkg-config refuses the file)."""
    out: Dict[str, Optional[str]] = {}
    known: Dict[str, Optional[str]] = {"pcfiledir": pcfiledir, "pc_sysrootdir": "/"}
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        m = _PC_VARIABLE.match(line)
        if not m or ":" in line.split("=", 1)[0]:
            continue  # a keyword line (Libs: ...) or no assignment
        name, raw = m.group(1), m.group(2).replace("$$", "\0")
        bad = [r for r in _PC_REFERENCE.findall(raw) if known.get(r) is None]
        value = None if bad else _PC_REFERENCE.sub(lambda r: str(known[r.group(1)]), raw).replace("\0", "$")
        out[name] = known[name] = value
    return out


def pkgconfig_files(host: Host, toolkits: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every pkg-config file a CUDA toolkit installed (``<toolkit>/pkgconfig/*.pc``; NVIDIA's ``<lib>-X.Y.pc``
    defining ``cudaroot`` in pkg-config's directories and those of PKG_CONFIG_PATH), with each variable whose
    value, expanded, is an absolute path, and those of them that name nothing on the machine."""
    places: List[Tuple[str, Optional[str]]] = []
    for tk in toolkits:
        if tk.get("kind") != "conda" and tk.get("path"):
            places.append((posixpath.join(str(tk["path"]), "pkgconfig"), str(tk["path"])))
    env_dirs = [d for d in (host.getenv("PKG_CONFIG_PATH") or "").split(":") if d.startswith("/")]
    places += [(d, None) for d in env_dirs + list(PKGCONFIG_DIRS)]
    out: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    for directory, toolkit in places:
        for name in sorted(host.list_dir(directory).names()):
            if not name.endswith(".pc") or (toolkit is None and not _PC_VERSIONED.match(name)):
                continue
            path = posixpath.join(directory, name)
            real = host.resolve(path)
            if real in seen or len(seen) >= PKGCONFIG_FILES:
                continue
            seen.add(real)
            text = host.read_text(path, PKGCONFIG_LIMIT)
            if text is None:
                continue
            variables = pc_variables(text, directory)
            if toolkit is None and not variables.get("cudaroot"):
                continue  # another project's file
            paths = {k: v for k, v in variables.items() if v and v.startswith("/") and " " not in v}
            missing = [k for k, v in sorted(paths.items()) if not (host.is_dir(v) or host.exists(v))]
            entry: Dict[str, Any] = {"file": path, "toolkit": toolkit, "paths": paths, "missing": missing}
            instead = {k: d for k, d in ((k, _pc_instead(host, paths, k)) for k in missing) if d}
            if instead:
                entry["instead"] = instead
            out.append(entry)
    return out


def _pc_instead(host: Host, paths: Dict[str, str], var: str) -> Optional[str]:
    """The directory of the toolkit that holds what a missing path under ``cudaroot`` means: the same tail under
    ``${cudaroot}/targets`` (where NVIDIA's toolkits keep each target's lib and include), else ``lib64`` or
    ``include`` at the root, when it exists."""
    root = (paths.get("cudaroot") or "").rstrip("/")
    value = paths.get(var) or ""
    if not root or var == "cudaroot" or not value.startswith(root + "/"):
        return None
    tail = value[len(root) + 1:]
    candidates = [] if tail.startswith("targets/") else [posixpath.join(root, "targets", tail)]
    candidates += [posixpath.join(root, {"lib": "lib64"}.get(posixpath.basename(tail), posixpath.basename(tail)))]
    return next((c for c in candidates if c != value and host.is_dir(c)), None)


def _login_path_toolkits(host: Host) -> Fact:
    """cuda.login_path_toolkits: the CUDA toolkits whose bin directory (one holding nvcc) a login script
    (/etc/profile.d) or the user's own shell startup file (~/.bashrc, ...: HOME's, and under sudo the invoking
    user's) puts on PATH, each with whether this session's PATH has it."""
    label = "CUDA toolkits a login or shell startup script puts on PATH"
    session = [posixpath.normpath(d) for d in (host.getenv("PATH") or "").split(":") if d]
    found: List[Dict[str, Any]] = []
    scripts = [(s, "login") for s in sorted(host.glob_dir(PROFILE_D, r".+\.sh"))[:256]]
    sudo_user = host.getenv("SUDO_USER") or ""
    for home in user_homes(host):
        # only homes the snapshot filter covers (/home/<user>, /root), so a snapshot keeps just their PATH lines
        scripts += [(posixpath.join(home, n), "user") for n in USER_STARTUP_FILES
                    if _USER_STARTUP.match(posixpath.join(home, n))]
    for script, kind in scripts:
        text = host.read_text(script, limit=64 * 1024) or ""
        for line in text.splitlines():
            if line.lstrip().startswith("#") or not _PATH_LINE.search(line):
                continue
            for bindir in _BIN_DIR.findall(line):
                bindir = posixpath.normpath(bindir)
                if any(f["bin"] == bindir for f in found) or not host.exists(posixpath.join(bindir, "nvcc")):
                    continue
                root = posixpath.dirname(bindir)
                tk = inspect_toolkit(host, _toolkit_root(host, root)) if host.is_dir(root) else {}
                found.append({"script": script, "kind": kind, "bin": bindir, "root": root,
                              "version": tk.get("release") or tk.get("version"),
                              "on_path": bindir in session or _toolkit_root(host, bindir) in
                              [_toolkit_root(host, d) for d in session]})
    if sudo_user:  # a session started by sudo, whose PATH is sudoers' secure_path, not the user's
        for f in found:
            f["sudo"] = True
    return ok("cuda.login_path_toolkits", found, "dir:%s,%s" % (PROFILE_D, ",".join(
        "~/" + n for n in USER_STARTUP_FILES)), label)


def _toolkit_root(host: Host, path: str) -> str:
    return posixpath.normpath(host.resolve(path))


#: torch.utils.cpp_extension._find_cuda_home (read in torch 2.13.0's wheel; the same since torch 1.5):
#: CUDA_HOME or CUDA_PATH; else dirname(dirname(`which nvcc`)), the path as found, not resolved;
#: else /usr/local/cuda if it exists. flash-attn, apex, DeepSpeed and xformers build through it.
CPP_EXTENSION_HOME_RULE = "torch.utils.cpp_extension._find_cuda_home"


def _extension_home(host: Host, home_vars: List[Tuple[str, str]], nvcc: Fact,
                    seen: Dict[str, Dict[str, Any]]) -> Fact:
    """cuda.extension_home: the CUDA_HOME that building a CUDA extension of PyTorch would use, and whether
    it is a toolkit (headers to compile against, an nvcc to compile with)."""
    label = "CUDA_HOME for torch extensions"
    if home_vars:
        path, how = home_vars[0][1], home_vars[0][0]
    elif nvcc.known and isinstance(nvcc.value, dict) and nvcc.value.get("path"):
        path, how = posixpath.dirname(posixpath.dirname(nvcc.value["path"])), "nvcc on PATH (%s)" % nvcc.value["path"]
    elif nvcc.status == "ok" and host.exists("/usr/local/cuda"):
        path, how = "/usr/local/cuda", "/usr/local/cuda exists"
    elif nvcc.status == "ok":
        return ok("cuda.extension_home", None, "derived", label)
    else:  # nvcc on PATH hung or failed: which one torch would pick is still known, whether it works is not
        return unknown("cuda.extension_home", "nvcc on PATH did not answer (%s)" % nvcc.reason, "derived", label)
    tk = seen.get(_toolkit_root(host, path))
    value = {"path": path, "how": how, "headers": host.exists(posixpath.join(path, "include", "cuda_runtime.h")),
             "nvcc": host.exists(posixpath.join(path, "bin", "nvcc")), "version": tk["version"] if tk else None}
    return ok("cuda.extension_home", value, "derived:" + CPP_EXTENSION_HOME_RULE, label)


BUNDLE_LIBDIRS = ("lib", "lib64")
#: The most questions (listings and existence checks together) asked looking for bundles, and the most entries of
#: one folder looked at: a home folder full of data sets costs no more than a small one.
BUNDLE_QUESTIONS = 160
BUNDLE_ENTRIES = 48


def find_bundled_cudart(host: Host) -> List[Dict[str, Any]]:
    """CUDA runtimes that application bundles carry: in ``lib``/``lib64`` of a folder in a home folder, or of a
    folder in one of those (a release tarball unpacked in the home folder: ``~/Meshroom-2020.1.0/aliceVision/lib``).
    Only folders whose listing shows a ``lib``/``lib64`` are looked into, CUDA toolkits, conda prefixes and Python
    environments are left to their own facts, and every listing and check counts against one small budget."""
    budget = [BUNDLE_QUESTIONS]

    def names(d: str) -> List[str]:
        if budget[0] <= 0:
            return []
        budget[0] -= 1
        return sorted(n for n in host.list_dir(d).names() if not n.startswith("."))[:BUNDLE_ENTRIES]

    def bundle(root: str, entries: List[str]) -> bool:
        """Holds a lib folder, and is none of a toolkit (bin/nvcc, version.json), conda or venv prefix."""
        return (any(n in entries for n in BUNDLE_LIBDIRS)
                and not any(n in entries for n in ("conda-meta", "pyvenv.cfg", "version.json", "version.txt"))
                and "nvcc" not in (names(posixpath.join(root, "bin")) if "bin" in entries else []))

    roots: List[Tuple[str, List[str]]] = []
    for home in user_homes(host):
        for n in names(home):
            if n in BUNDLE_LIBDIRS:
                continue
            top = posixpath.join(home, n)
            below = names(top)
            roots.append((top, below))
            for m in below:
                if m not in BUNDLE_LIBDIRS and budget[0] > 0:
                    sub = posixpath.join(top, m)
                    roots.append((sub, names(sub)))
    out: List[Dict[str, Any]] = []
    for root, entries in roots:
        if not bundle(root, entries):
            continue
        for libdir in BUNDLE_LIBDIRS:
            if libdir not in entries:
                continue
            d = posixpath.join(root, libdir)
            for name in names(d):
                # the runtime's file with its full release (libcudart.so.10.2.89): the .so.X.Y link alone does not
                # say the toolkit's build
                release = versions.cuda_of_cudart(name) or ""
                if release.count(".") == 2:
                    out.append({"root": root, "path": posixpath.join(d, name),
                                "release": release.rsplit(".", 1)[0]})
    return out


@register("cuda", "CUDA toolkits", order=50,
          produces=("cuda.*",))
def probe_cuda(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    toolkits: List[Dict[str, Any]] = []
    seen: Dict[str, Dict[str, Any]] = {}

    def add(path: str, found_by: str) -> Optional[Dict[str, Any]]:
        root = _toolkit_root(host, path)
        if root in seen:
            return seen[root]
        if not host.is_dir(root):
            return None
        tk = inspect_toolkit(host, root)
        tk["found_by"] = found_by
        seen[root] = tk
        toolkits.append(tk)
        return tk

    usr_local = host.list_dir("/usr/local")
    for name in usr_local.names():
        if _TOOLKIT_DIR.match(name) and name != "cuda":
            add(posixpath.join("/usr/local", name), "dir:/usr/local")
    # Arch's cuda package installs to /opt/cuda (its PATH entry comes from /etc/profile.d/cuda.sh, which a
    # non-login shell lacks); NVIDIA's runfile may be told --installpath=/opt/cuda-X.Y
    for name in host.list_dir("/opt").names():
        if _TOOLKIT_DIR.match(name):
            add(posixpath.join("/opt", name), "dir:/opt")

    # /usr/local/cuda: normally a link to one of them (update-alternatives may add a hop)
    link = host.read_link("/usr/local/cuda")
    label = "/usr/local/cuda points to"
    if link.ok:
        tk = add("/usr/local/cuda", "link:/usr/local/cuda")
        resolved = _toolkit_root(host, "/usr/local/cuda")
        facts.append(ok("cuda.default_symlink", {"target": link.target, "resolved": resolved,
                                                 "version": tk["version"] if tk else None,
                                                 "dangling": tk is None}, "link:/usr/local/cuda", label))
    elif "cuda" in usr_local.names():
        tk = add("/usr/local/cuda", "dir:/usr/local")
        facts.append(ok("cuda.default_symlink", {"target": None, "resolved": "/usr/local/cuda",
                                                 "version": tk["version"] if tk else None, "dangling": False},
                        "dir:/usr/local", label))
    else:
        facts.append(ok("cuda.default_symlink", None, "link:/usr/local/cuda", label))

    # CUDA_HOME / CUDA_PATH
    env = host.environ()
    home_vars = [(v, env[v]) for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    if home_vars:
        var, value = home_vars[0]
        tk = add(value, "env:" + var)
        home: Dict[str, Any] = {"var": var, "path": value, "resolved": _toolkit_root(host, value),
                                "exists": tk is not None, "version": tk["version"] if tk else None}
        if len(home_vars) > 1:
            home["also"] = {v: p for v, p in home_vars[1:]}
        facts.append(ok("cuda.home", home, "env:" + var, "CUDA_HOME / CUDA_PATH"))
    else:
        facts.append(ok("cuda.home", None, "env:CUDA_HOME,CUDA_PATH", "CUDA_HOME / CUDA_PATH"))

    # nvcc on PATH, and the toolkit it belongs to
    nvcc = _nvcc(host)
    facts.append(nvcc)
    if nvcc.known and nvcc.value:
        resolved = nvcc.value["resolved"]
        root = posixpath.dirname(posixpath.dirname(resolved))
        tk = seen.get(root)
        if tk is None and posixpath.basename(posixpath.dirname(resolved)) == "bin" and host.is_dir(root):
            candidate = inspect_toolkit(host, root)
            if candidate["version"]:  # /usr/local/bin/nvcc is no toolkit of its own
                tk = add(root, "nvcc on PATH")
        if tk is None:
            # a wrapper script (/usr/local/bin/nvcc -> exec .../bin/nvcc): match by version
            same = [t for t in toolkits if t["nvcc"] and t["release"] == nvcc.value["release"]]
            if len(same) == 1:
                tk = same[0]
                nvcc.value["toolkit_by"] = "release match"
        nvcc.value["toolkit"] = tk["path"] if tk else None
    facts.append(_extension_home(host, home_vars, nvcc, seen))
    facts.append(_login_path_toolkits(host))

    # distro packages
    pkgs = _packages(host)
    facts.append(pkgs)
    if pkgs.known:
        _distro_toolkits(host, pkgs.value, toolkits)

    # conda
    conda = _conda(host)
    facts.append(ok("cuda.conda", conda, "env:CONDA_PREFIX,file:~/.conda/environments.txt", "conda CUDA packages"))
    for envd in conda:
        if envd["cuda_version"]:
            toolkits.append({"path": envd["prefix"], "version": envd["cuda_version"],
                             "release": release_of(envd["cuda_version"]), "kind": "conda", "nvcc": envd["nvcc"],
                             "source": envd["source"], "cudart": None, "compat": [], "found_by": envd["found_by"]})

    # pip wheels
    py = host.python()
    wheels_src = "python:" + (py.executable or "?")
    if py.error:
        facts.append(unknown("cuda.pip_wheels", "cannot inspect {} ({})".format(py.executable or "python", py.message or
                                                                              py.error), wheels_src,
                             "pip CUDA wheels"))
    else:
        facts.append(ok("cuda.pip_wheels", pip_cuda_wheels(host), wheels_src, "pip CUDA wheels"))

    facts.append(ok("cuda.toolkits", toolkits, "derived", "CUDA toolkits"))
    facts.append(ok("cuda.pkgconfig", pkgconfig_files(host, toolkits), "derived", "CUDA pkg-config files"))
    facts.append(ok("cuda.bundled_cudart", find_bundled_cudart(host), "derived", "CUDA runtimes applications bundle"))
    compat = [dict(c, toolkit=t["path"]) for t in toolkits for c in t.get("compat", [])]
    facts.append(ok("cuda.forward_compat", compat, "derived", "Forward-compatibility libcuda"))

    ldp = env.get("LD_LIBRARY_PATH")
    facts.append(ok("cuda.ld_library_path", ld_library_path_dirs(ldp), "env:LD_LIBRARY_PATH", "LD_LIBRARY_PATH"))
    return facts


def ld_library_path_dirs(value: Optional[str]) -> List[str]:
    """Directories of an ``LD_LIBRARY_PATH`` value, in order (empty entries dropped), normalised as the loader
    opens them: ``/env/lib/`` and ``/env/./lib`` are ``/env/lib`` (compared with other paths as such)."""
    return [posixpath.normpath(d) for d in re.split(r"[:;]", value or "") if d]

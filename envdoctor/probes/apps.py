"""Applications that bring their own CUDA and state their own driver floors (``data/driver_floors.json``):

* RAPIDS (cuDF, cuML, cuGraph, RMM ...), installed by conda (``<prefix>/conda-meta/<name>-<version>-<build>.json``,
  the build naming the CUDA major: ``cuda_11_py38_...``, ``cuda11_...``, ``cuda12_...``) or by pip (one wheel per
  CUDA major, named ``-cu11``/``-cu12``/``-cu13``, RSN 31). Fact ``apps.rapids`` = ``[{package, version, release,
  cuda_major, where}]`` (``release`` is RAPIDS' YY.MM).
* Ollama, a Go program, not a Python package: its install script puts ``ollama`` in ``/usr/local/bin`` (packages:
  ``/usr/bin``) and its GPU runners in ``<lib>/ollama/cuda_vNN`` (``/usr/local/lib``, ``/usr/lib``). Its version is
  what ``ollama --version`` prints ("ollama version is 0.13.0"; "client version is ..." beside a warning when no
  server answers). Fact ``apps.ollama`` = ``{path, version, libdir, runners}`` or None when it is not installed.
* Renderers that draw with the driver's graphics libraries (Vulkan/EGL), not only CUDA: Isaac Sim and other Omniverse
  Kit applications (a folder holding ``kit/kit``: the workstation .zip unpacked at ``~/isaacsim``, the launcher's
  ``~/.local/share/ov/pkg/<app>-<version>``, the container's ``/isaac-sim``; the pip ``isaacsim`` package), CARLA
  (``CarlaUE4.sh``: the .deb's ``/opt/carla-simulator``, a release unpacked in the home folder) and Habitat-sim (its
  Python package). Fact ``apps.renderers`` = ``[{name, path, version}]``. 32-bit ones (Steam's client, Debian's
  wine32): ``apps.renderers_32bit`` = ``[{name, path}]``.
* Flatpak's apps and runtimes (system and user installations), with the NVIDIA GL runtime extensions among them.
  Fact ``apps.flatpak`` = ``{installations, apps, runtimes: [{id, arch, branch, path}], gl_drivers}``.
* FFmpeg's NVENC/NVDEC headers (nv-codec-headers, one release per Video Codec SDK API level): their Makefile installs
  ``ffnvcodec.pc`` (``Name: ffnvcodec``, ``Version: 13.0.19.0``) into ``<prefix>/lib/pkgconfig``, where FFmpeg's
  configure finds them; an FFmpeg built against them needs the driver their README states for that API level.
  A packaged FFmpeg installs no headers, but its release pins them: Jellyfin's jellyfin-ffmpeg* .debs
  (``matrix/data/ffmpeg_nv_codec.json``, from the dpkg status file), and the jellyfin-ffmpeg a QNAP package (QPKG,
  registered in ``/etc/config/qpkg.conf``) bundles in its folder, known from its own ``ffmpeg -version``
  ("ffmpeg version 6.0.1-Jellyfin").
  Fact ``apps.nv_codec_headers`` = ``[{path, version}]`` (pkg-config's directories and PKG_CONFIG_PATH's).
* Python packages that render through the driver's own OptiX and state their driver floor per release (NVISII: one
  wheel per driver branch). Fact ``apps.optix_packages`` = ``[{package, name, version, where}]``.
* Python packages that state their own driver floors per release and per CUDA major of their build, and floors of
  single features (Warp, ``warp-lang``: 470/525/580 for its CUDA 11/12/13 builds; module loading during CUDA graph
  capture from CUDA 12.3's driver). The build's CUDA major is the version's ``+cuNN`` label (Warp's GitHub builds:
  ``1.8.0+cu11``), else that of the release's default wheels (``driver_floors.json`` ``wheel_cuda_major``). Fact
  ``apps.floor_packages`` = ``[{package, name, version, cuda_major, where}]``.
* Applications that open a driver library by soname at run time (``matrix/data/runtime_loads.json`` rows keyed by
  ``program``: Blender's OptiX device opens ``libnvoptix.so.1``). Blender is found as ``blender`` on PATH (its link
  followed) or in a snap's current revision; its version is the ``<major>.<minor>`` folder holding ``scripts`` beside
  the executable, the layout of blender.org's release builds (the builds made with OptiX); a distribution's package
  keeps that folder in ``/usr/share/blender`` and is not counted. Fact ``apps.program_loads`` = ``[{program, name,
  version, path, opens}]``, ``opens`` per soname: the file the loader's search from the program finds (``path``,
  ``via``, ``certain``: LD_LIBRARY_PATH, the loader cache, the default directories) and the copies outside that search
  (``elsewhere``).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import lazyre
from ..facts import Fact, ok, unknown
from ..host.base import Host
from ..matrix import ffmpeg, floors, loads
from . import ProbeContext, loader, register
from .cuda import (
    CONDA_META_FILE,
    DPKG_LIMIT,
    DPKG_STATUS,
    PKGCONFIG_DIRS,
    conda_prefixes,
    other_dpkg_packages,
    user_homes,
)

#: RAPIDS' packages (conda names; pip wheels add -cuNN).
RAPIDS_PACKAGES = frozenset({
    "rapids", "cudf", "libcudf", "dask-cudf", "cuml", "libcuml", "cugraph", "libcugraph", "pylibcugraph", "rmm",
    "librmm", "cuspatial", "libcuspatial", "cuxfilter", "cucim", "raft-dask", "pylibraft", "libraft", "cuvs",
    "libcuvs", "nx-cugraph", "cudf-polars", "pylibcudf", "libkvikio", "kvikio"})
_CONDA_CUDA = lazyre.compile(r"(?:^|_)cuda_?(\d+)(?:[._]|$)")
_PIP_CU = lazyre.compile(r"^(.+)-cu(\d+)$")
_RELEASE = lazyre.compile(r"^(\d+)\.(\d+)")

OLLAMA_BINARIES = ("/usr/local/bin/ollama", "/usr/bin/ollama")
OLLAMA_LIBDIRS = ("/usr/local/lib/ollama", "/usr/lib/ollama")
_OLLAMA_VERSION = lazyre.compile(r"version is (\d+\.\d+\.\d+(?:-rc\d+)?)")


def _release(version: str) -> Optional[str]:
    m = _RELEASE.match(version)
    return "%d.%02d" % (int(m.group(1)), int(m.group(2))) if m else None


def find_rapids(host: Host) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for prefix, _how in conda_prefixes(host):
        meta = posixpath.join(prefix, "conda-meta")
        for name in host.list_dir(meta).names():
            m = CONDA_META_FILE.match(name)
            if not m or m.group(1) not in RAPIDS_PACKAGES:
                continue
            cuda = _CONDA_CUDA.search(m.group(3))
            release = _release(m.group(2))
            if release:
                out.append({"package": m.group(1), "version": m.group(2), "release": release,
                            "cuda_major": cuda.group(1) if cuda else None, "where": posixpath.join(meta, name)})
    for dist in host.distributions():
        m = _PIP_CU.match(dist.key)
        release = _release(dist.version)
        if m and m.group(1) in RAPIDS_PACKAGES and release:
            out.append({"package": dist.name, "version": dist.version, "release": release,
                        "cuda_major": m.group(2), "where": dist.location})
    return out


def find_ollama(host: Host) -> Fact:
    label = "Ollama"
    found = host.which("ollama")
    path = found if found else next((p for p in OLLAMA_BINARIES if host.exists(p)), None)
    if path is None:
        return ok("apps.ollama", None, "dir:" + ",".join(OLLAMA_BINARIES), label)
    libdir = next((d for d in OLLAMA_LIBDIRS if host.is_dir(d)), None)
    runners = sorted(n for n in host.list_dir(libdir).names() if n.startswith("cuda_")) if libdir else []
    argv = [path, "--version"]
    res = host.run(argv, timeout=10)
    m = _OLLAMA_VERSION.search(res.stdout + "\n" + res.stderr)
    value = {"path": path, "version": m.group(1) if m else None, "libdir": libdir, "runners": runners}
    if m is None and not res.ok:
        return unknown("apps.ollama", "%s --version: %s" % (path, res.describe_failure()),
                       "command:" + " ".join(argv), label)
    return ok("apps.ollama", value, "command:" + " ".join(argv), label)


#: Omniverse Kit application folders outside a home folder (NVIDIA's Isaac Sim container: /isaac-sim).
KIT_ROOTS = ("/isaac-sim", "/opt/isaac-sim", "/opt/nvidia/isaac-sim")
#: ... and in one (the workstation .zip's documented place, and the Omniverse launcher's package folder).
KIT_HOME_ROOTS = ("isaacsim", "isaac-sim", "isaac_sim")
KIT_HOME_PKG = ".local/share/ov/pkg"
CARLA_ROOTS = ("/opt/carla-simulator",)
#: Python packages that render through the driver's graphics libraries (PEP 503 names).
RENDERER_PACKAGES = {"isaacsim": "Isaac Sim", "omniverse-kit": "Omniverse Kit", "habitat-sim": "Habitat-sim"}


def _first_line(host: Host, path: str) -> Optional[str]:
    text = host.read_text(path, limit=4096)
    line = text.strip().splitlines()[0].strip() if text and text.strip() else ""
    return line[:80] or None


def find_renderers(host: Host) -> List[Dict[str, Any]]:
    """Installed programs that need the driver's graphics libraries (Vulkan, EGL) to create their GPU device."""
    out: List[Dict[str, Any]] = []
    homes = user_homes(host)
    kit = list(KIT_ROOTS)
    for home in homes:
        kit += [posixpath.join(home, n) for n in KIT_HOME_ROOTS]
        pkg = posixpath.join(home, KIT_HOME_PKG)
        kit += [posixpath.join(pkg, n) for n in sorted(host.list_dir(pkg).names())[:64]]
    for root in dict.fromkeys(kit):
        if host.exists(posixpath.join(root, "kit", "kit")):
            isaac = "isaac" in posixpath.basename(root).lower() or host.exists(posixpath.join(root, "isaac-sim.sh"))
            out.append({"name": "Isaac Sim" if isaac else "an Omniverse Kit application (%s)" % posixpath.basename(
                root), "path": root, "version": _first_line(host, posixpath.join(root, "VERSION"))})
    carla = list(CARLA_ROOTS)
    for home in homes:
        carla += [posixpath.join(home, n) for n in sorted(host.list_dir(home).names())[:512]
                  if n.lower().startswith("carla")]
    for root in dict.fromkeys(carla):
        if host.exists(posixpath.join(root, "CarlaUE4.sh")):
            out.append({"name": "CARLA", "path": root, "version": None})
    for dist in host.distributions():
        name = RENDERER_PACKAGES.get(dist.key)
        if name:
            out.append({"name": name, "path": dist.location, "version": dist.version})
    return out


#: 32-bit (i386) programs that render through the driver's OpenGL/Vulkan: Steam's client is a 32-bit program
#: (``ubuntu12_32/steam``, which the launcher unpacks into ``~/.local/share/Steam``, reached also through the
#: ``~/.steam/steam`` link; the distributions' launcher packages install ``steam`` in /usr/games or /usr/bin and run
#: that client), and Debian's and Ubuntu's wine32 package (its i386 Wine in /usr/lib/i386-linux-gnu/wine).
STEAM_CLIENT_DIRS = (".local/share/Steam", ".steam/steam", ".steam/debian-installation")
STEAM_LAUNCHERS = ("/usr/games/steam", "/usr/bin/steam")
WINE32_DIRS = ("/usr/lib/i386-linux-gnu/wine",)


def find_renderers_32bit(host: Host) -> List[Dict[str, Any]]:
    """Installed 32-bit programs that render with the driver's 32-bit graphics libraries."""
    out: List[Dict[str, Any]] = []
    for home in user_homes(host):
        client = next((p for p in (posixpath.join(home, d, "ubuntu12_32", "steam") for d in STEAM_CLIENT_DIRS)
                       if host.exists(p)), None)
        if client:
            out.append({"name": "Steam's 32-bit client", "path": client})
    if not out:
        launcher = next((p for p in STEAM_LAUNCHERS if host.exists(p)), None)
        if launcher:
            out.append({"name": "Steam (its client is a 32-bit program)", "path": launcher})
    out += [{"name": "Wine (32-bit)", "path": d} for d in WINE32_DIRS if host.is_dir(d)]
    return out


#: Flatpak's installations: the system one and each user's (``flatpak --user``); an app is
#: ``app/<id>/<arch>/<branch>/active``, a runtime or runtime extension ``runtime/<id>/<arch>/<branch>/active``
#: (https://docs.flatpak.org/en/latest/tips-and-tricks.html#the-flatpak-installation-directories).
FLATPAK_SYSTEM = "/var/lib/flatpak"
FLATPAK_USER = ".local/share/flatpak"
#: The most refs of one kind read in one installation.
MAX_FLATPAK_REFS = 256


def _flatpak_refs(host: Host, installation: str, kind: str) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    base = posixpath.join(installation, kind)
    for ref in sorted(host.list_dir(base).names())[:MAX_FLATPAK_REFS]:
        for arch in sorted(host.list_dir(posixpath.join(base, ref)).names())[:8]:
            if arch in ("current",) or arch.startswith("."):
                continue
            for branch in sorted(host.list_dir(posixpath.join(base, ref, arch)).names())[:16]:
                path = posixpath.join(base, ref, arch, branch)
                if host.exists(posixpath.join(path, "active")):
                    out.append({"id": ref, "arch": arch, "branch": branch, "path": path})
    return out


def find_flatpak(host: Host) -> Dict[str, Any]:
    """Flatpak's installed apps and runtimes (with their extensions: org.freedesktop.Platform.GL.nvidia-<version>),
    in the system installation and the user's."""
    installations = [FLATPAK_SYSTEM] + [posixpath.join(h, FLATPAK_USER) for h in user_homes(host)]
    found = [i for i in installations if host.is_dir(i)]
    return {"installations": found,
            "apps": [r for i in found for r in _flatpak_refs(host, i, "app")],
            "runtimes": [r for i in found for r in _flatpak_refs(host, i, "runtime")],
            "gl_drivers": host.getenv("FLATPAK_GL_DRIVERS")}


#: Python packages (PEP 503 names) built on the driver's OptiX whose releases state a driver floor
#: (driver_floors.json, product = the name).
OPTIX_PACKAGES = {"nvisii": "NVISII"}


def find_optix_packages(host: Host) -> List[Dict[str, Any]]:
    return [{"package": dist.key, "name": OPTIX_PACKAGES[dist.key], "version": dist.version, "where": dist.location}
            for dist in host.distributions() if dist.key in OPTIX_PACKAGES and dist.version]


#: Python packages (PEP 503 names) whose releases state their own driver floors (driver_floors.json, product = the name)
#: per CUDA major of the build or per feature, with their display name.
FLOOR_PACKAGES = {"warp-lang": "Warp"}
_LOCAL_CU = lazyre.compile(r"^cu(\d\d)")


def find_floor_packages(host: Host) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for dist in host.distributions():
        if dist.key not in FLOOR_PACKAGES or not dist.version:
            continue
        local = dist.version.partition("+")[2]
        m = _LOCAL_CU.match(local.lower())
        major = str(int(m.group(1))) if m else floors.wheel_cuda_major(dist.key, dist.version)
        out.append({"package": dist.key, "name": FLOOR_PACKAGES[dist.key], "version": dist.version,
                    "cuda_major": major, "where": dist.location})
    return out


#: Applications (runtime_loads.json ``program``) with their display name, the places they are installed whole, and
#: how their version is read: the ``<major>.<minor>`` folder beside the executable that holds this subfolder.
PROGRAMS = {"blender": {"name": "Blender", "places": ("/snap/blender/current/blender",), "version_dir": "scripts"}}
_MAJOR_MINOR = lazyre.compile(r"^\d+\.\d+$")


def _program_version(host: Host, path: str, holds: str) -> Optional[str]:
    """The ``<major>.<minor>`` folder beside ``path`` that holds ``holds`` (the highest, when there are several)."""
    folder = posixpath.dirname(path)
    found = [n for n in host.list_dir(folder).names()
             if _MAJOR_MINOR.match(n) and host.is_dir(posixpath.join(folder, n, holds))]
    return max(found, key=lambda n: tuple(int(x) for x in n.split("."))) if found else None


def find_program_loads(host: Host) -> List[Dict[str, Any]]:
    """Installed applications that open a library by soname at run time, and where the loader finds it."""
    out: List[Dict[str, Any]] = []
    config = None
    for program in loads.program_names():
        spec = PROGRAMS.get(program)
        if spec is None:
            continue
        found = host.which(program)
        seen = set()
        for path in ([found] if found else []) + [p for p in spec["places"] if host.exists(p)]:
            real = host.resolve(path)
            if real in seen:
                continue
            seen.add(real)
            version = _program_version(host, real, str(spec["version_dir"]))
            rows = loads.program_loads(program, version)
            if not rows:
                continue
            if config is None:
                config = loader.loader_config(host)
            opens = [loader.opened_by_name(host, config, so) for row in rows for so in row["loads"]]
            out.append({"program": program, "name": spec["name"], "version": version, "path": real, "opens": opens})
    return out


FFNVCODEC_PC = "ffnvcodec.pc"
_PC_NAME = lazyre.compile(r"^Name:\s*ffnvcodec\s*$", re.M)
_PC_VERSION = lazyre.compile(r"^Version:\s*(\d+(?:\.\d+){1,3})\s*$", re.M)


def find_nv_codec_headers(host: Host) -> List[Dict[str, Any]]:
    """Installed nv-codec-headers: each ``ffnvcodec.pc`` (named ffnvcodec, with a version) in pkg-config's default
    directories and those PKG_CONFIG_PATH names."""
    env_dirs = [d for d in (host.getenv("PKG_CONFIG_PATH") or "").split(":") if d.startswith("/")]
    out: List[Dict[str, Any]] = []
    seen = set()
    for directory in dict.fromkeys(env_dirs + list(PKGCONFIG_DIRS)):
        path = posixpath.join(directory, FFNVCODEC_PC)
        if not host.exists(path):
            continue
        real = host.resolve(path)
        if real in seen:
            continue
        seen.add(real)
        text = host.read_text(path, 16 * 1024) or ""
        m = _PC_VERSION.search(text)
        if _PC_NAME.search(text) and m:
            out.append({"path": path, "version": m.group(1)})
    return out


def packaged_nv_codec_headers(host: Host) -> List[Dict[str, Any]]:
    """nv-codec-headers that an installed FFmpeg package was built against (its release pins them; the headers
    themselves are not installed): Jellyfin's jellyfin-ffmpeg* .debs for amd64."""
    res = host.read_file(DPKG_STATUS, limit=DPKG_LIMIT)
    out: List[Dict[str, Any]] = []
    for pkg in other_dpkg_packages(res.text) if res.text else []:
        headers = ffmpeg.nv_codec_headers("jellyfin-ffmpeg", pkg["version"])
        if headers and pkg.get("arch") in ("amd64", ""):
            out.append({"path": DPKG_STATUS, "version": headers,
                        "built_into": "%s %s" % (pkg["name"], pkg["version"])})
    return out


#: QNAP's package registry (QTS, QuTS hero): one INI section per installed QPKG, whose ``Install_Path`` is its folder
#: (``/share/CACHEDEV1_DATA/.qpkg/<name>``). QPKGs keep their own programs there: an FFmpeg a media server bundles
#: is known only from its own ``-version`` output.
QPKG_CONF = "/etc/config/qpkg.conf"
QPKG_LIMIT = 256 * 1024
#: The most packages, and FFmpeg programs, looked at in one run.
MAX_QPKGS = 64
MAX_FFMPEGS = 8
_INI_SECTION = lazyre.compile(r"^\s*\[([^\]]+)\]\s*$")
_INI_INSTALL_PATH = lazyre.compile(r"^\s*Install_Path\s*=\s*(/[^\s]*)\s*$")
#: ``ffmpeg -version``'s first line: "ffmpeg version 6.0.1-Jellyfin Copyright ..." (release, then the build's
#: ``--extra-version``).
_FFMPEG_BANNER = lazyre.compile(r"^ffmpeg version (\d+(?:\.\d+)*)-([A-Za-z][A-Za-z0-9]*)(?:\s|$)")


def qpkg_folders(host: Host) -> List[Tuple[str, str]]:
    """``(package, folder)`` of each QPKG QNAP's registry lists with an install folder (at most
    :data:`MAX_QPKGS`)."""
    text = host.read_text(QPKG_CONF, limit=QPKG_LIMIT) or ""
    out: List[Tuple[str, str]] = []
    section = None
    for line in text.splitlines():
        m = _INI_SECTION.match(line)
        if m:
            section = m.group(1).strip()
            continue
        m = _INI_INSTALL_PATH.match(line)
        if m and section and len(out) < MAX_QPKGS:
            out.append((section, posixpath.normpath(m.group(1))))
    return out


def qpkg_ffmpegs(host: Host) -> List[Tuple[str, str]]:
    """``(package, path)`` of the FFmpeg programs QPKGs keep in their folders: ``ffmpeg`` in the folder, its
    ``bin``, and the folders in it named for FFmpeg (``jellyfin-ffmpeg/ffmpeg``)."""
    out: List[Tuple[str, str]] = []
    for package, folder in qpkg_folders(host):
        dirs = [folder, posixpath.join(folder, "bin")]
        for name in sorted(host.list_dir(folder).names())[:64]:
            if "ffmpeg" in name.lower() and name != "ffmpeg":
                dirs += [posixpath.join(folder, name), posixpath.join(folder, name, "bin")]
        for d in dirs:
            path = posixpath.join(d, "ffmpeg")
            if len(out) < MAX_FFMPEGS and path not in [p for _pkg, p in out] and host.exists(path):
                out.append((package, path))
    return out


def bundled_ffmpeg_headers(host: Host) -> List[Dict[str, Any]]:
    """nv-codec-headers that an FFmpeg a NAS package bundles was built against: its ``-version`` output names its
    release and its build's ``--extra-version`` (``6.0.1-Jellyfin``), which ``matrix/data/ffmpeg_nv_codec.json``
    maps to the headers (:func:`envdoctor.matrix.ffmpeg.release_nv_codec_headers`). An FFmpeg whose output names no
    known package family, or a release the table does not cover, gives nothing."""
    out: List[Dict[str, Any]] = []
    for package, path in qpkg_ffmpegs(host):
        res = host.run([path, "-version"], timeout=10)
        m = _FFMPEG_BANNER.match((res.stdout or "").lstrip()) if res.ok else None
        family = ffmpeg.EXTRA_VERSIONS.get(m.group(2)) if m else None
        headers = ffmpeg.release_nv_codec_headers(family, m.group(1)) if m and family else None
        if m and family and headers:
            out.append({"path": path, "version": headers,
                        "built_into": "%s %s (the QNAP package %s's %s)" % (family, m.group(1), package, path)})
    return out


@register("apps", "Applications with their own driver floors", order=97, produces=("apps.*",))
def probe_apps(ctx: ProbeContext) -> Iterable[Fact]:
    return [ok("apps.rapids", find_rapids(ctx.host), "derived", "RAPIDS packages"), find_ollama(ctx.host),
            ok("apps.renderers", find_renderers(ctx.host), "derived", "Programs that render with the driver"),
            ok("apps.renderers_32bit", find_renderers_32bit(ctx.host), "derived",
               "32-bit programs that render with the driver"),
            ok("apps.flatpak", find_flatpak(ctx.host), "dir:%s,~/%s" % (FLATPAK_SYSTEM, FLATPAK_USER),
               "Flatpak apps and runtimes"),
            ok("apps.nv_codec_headers", find_nv_codec_headers(ctx.host) + packaged_nv_codec_headers(ctx.host)
               + bundled_ffmpeg_headers(ctx.host),
               "derived", "FFmpeg's NVENC/NVDEC headers"),
            ok("apps.optix_packages", find_optix_packages(ctx.host), "derived", "Python packages built on OptiX"),
            ok("apps.floor_packages", find_floor_packages(ctx.host), "derived",
               "Python packages with their own driver floors"),
            ok("apps.program_loads", find_program_loads(ctx.host), "derived",
               "Applications that open driver libraries at run time")]

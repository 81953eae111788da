"""A driver installed without its graphics libraries (OpenGL, EGL, Vulkan) on a machine with a program that renders
through them (Isaac Sim and other Omniverse Kit applications, CARLA, Habitat-sim).

CUDA needs only the driver's compute libraries (libcuda, libnvidia-ml); a headless compute server without the
graphics ones is a supported, common choice and stays quiet. A renderer creates its GPU device through the
driver's Vulkan or EGL driver (libGLX_nvidia, libEGL_nvidia, libnvidia-glcore, registered by nvidia_icd.json and
10_nvidia.json): without them the Vulkan loader finds no NVIDIA driver and the program creates no device."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence, _installed, caps_without_graphics, driver_apt_flavours

CODE = "driver.graphics_libraries_missing"
#: NVIDIA's Ubuntu packaging: libnvidia-gl-<flavour> installs the graphics libraries and the Vulkan/EGL files.
UBUNTU_GL_URL = ("https://github.com/NVIDIA/ubuntu-packaging-nvidia-driver/blob/03c8e6169c2d3525774ba7e08be4574079d8dbc8/"
                 "debian/templates/libnvidia-gl-flavour.install.in")
#: nvidia-installer's option table: "--no-opengl-files: Do not install any of the OpenGL-related driver files."
INSTALLER_URL = ("https://github.com/NVIDIA/nvidia-installer/blob/601e1b28f7f6f64582dbd0a479115f5755327494/"
                 "option_table.h")
CHECKED = "2026-11-30"
#: What a complete driver installs and a --no-opengl-files one leaves out (the ones named in the finding).
EXPECTED = ("libGLX_nvidia.so.0", "libEGL_nvidia.so.0", "libnvidia-glcore.so", "libnvidia-eglcore.so",
            "nvidia_icd.json (Vulkan)", "10_nvidia.json (EGL)")

DOCS = (
    CodeDoc(CODE, "warning",
            "The driver's compute libraries (libcuda) are installed but none of its graphics libraries (OpenGL/GLX, "
            "EGL, Vulkan: libGLX_nvidia, libEGL_nvidia, libnvidia-glcore), on a machine with a program that renders "
            "through them (Isaac Sim or another Omniverse Kit application, CARLA, Habitat-sim): the .run installer "
            "with --no-opengl-files, Ubuntu's compute-only packages without libnvidia-gl-<branch>, a container "
            "without the 'graphics' capability (one of those must be seen). Machines without such a program stay "
            "quiet.",
            "driver.graphics_files, driver.userspace.libraries, apps.renderers, cuda.packages, "
            "env.nvidia_driver_capabilities",
            "CUDA works, but the renderer's Vulkan/EGL finds no NVIDIA driver and creates no GPU device (Isaac Sim: "
            "'No device could be created', its Vulkan table showing 'Driver Version: 0').", UBUNTU_GL_URL),
)

INCOMPLETE = "driver.graphics_libraries_incomplete"
INCOMPLETE_DOCS = (
    CodeDoc(INCOMPLETE, "warning",
            "A graphics library of the driver that programs open by name (libEGL_nvidia.so.0, libGLX_nvidia.so.0: "
            "libglvnd's EGL and GLX vendor libraries) is where the loader finds it, but driver libraries its NEEDED "
            "entries name (libnvidia-eglcore, libnvidia-glcore, libnvidia-glsi of the same release) are found "
            "nowhere the loader looks: a container runtime that made only part of the driver visible, or a driver "
            "install with files missing. Judged from the library's own ELF headers; a compute-only install (no "
            "graphics library at all) and a complete one stay quiet.",
            "driver.graphics_files, driver.userspace.version, os.container, env.nvidia_driver_capabilities, "
            "cuda.packages",
            "The library fails to load: libglvnd silently skips the NVIDIA vendor, so EGL/OpenGL programs (headless "
            "EGL rendering, Gazebo, Isaac Sim, CARLA) see no NVIDIA device and fall back to Mesa's software or "
            "another GPU's renderer; CUDA is unaffected.", UBUNTU_GL_URL),
)
#: What each graphics library is to a user (the API it provides), by its soname's stem.
_API = (("libEGL_", "EGL"), ("libGLX_", "OpenGL (GLX)"), ("libGLESv", "OpenGL ES"), ("libnvidia-eglcore", "EGL"),
        ("libnvidia-glcore", "OpenGL"))


def _api(name: str) -> str:
    return next((api for stem, api in _API if name.startswith(stem)), "graphics")


def _graphics_incomplete(facts: Facts) -> List[Finding]:
    files = facts.value("driver.graphics_files")
    broken = [u for u in (files.get("unresolved") or []) if isinstance(u, dict) and u.get("missing")] \
        if isinstance(files, dict) else []
    if not broken or facts.value("os.wsl") == "WSL2":
        return []
    version = facts.value("driver.userspace.version") or facts.value("driver.kernel_module.version")
    missing = list(dict.fromkeys(str(n) for u in broken for n in u["missing"]))
    apis = list(dict.fromkeys(_api(str(u.get("soname") or posixpath.basename(str(u["library"])))) for u in broken))
    each = "; ".join("%s (%s) needs %s, not found" % (u.get("soname") or posixpath.basename(str(u["library"])),
                                                       u["library"], ", ".join(u["missing"])) for u in broken)
    caps = caps_without_graphics(facts)
    container = facts.value("os.container")
    compute, gl = driver_apt_flavours(facts)
    commands: List[str] = []
    if container and caps is not None:
        why = ("This container was started with NVIDIA_DRIVER_CAPABILITIES=%s: the NVIDIA Container Toolkit mounts "
               "the driver's OpenGL, EGL and Vulkan libraries only for the 'graphics' capability." % caps)
        fix = "Start the container with the graphics capability (NVIDIA_DRIVER_CAPABILITIES=all, or add graphics)."
        commands = ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=all ..."]
    elif container:
        why = ("This is a container (%s): its runtime made part of the host's driver visible here but not these "
               "libraries of it." % container)
        fix = ("Make the host driver's %s visible in the container where its loader looks (mount them from the "
               "host, beside %s or in a directory named in LD_LIBRARY_PATH), and start it with the graphics "
               "capability (NVIDIA_DRIVER_CAPABILITIES=all, or including graphics); the host's driver must have "
               "them installed." % (", ".join(missing), broken[0]["library"]))
    elif gl or compute:
        flavour = sorted(gl)[-1] if gl else compute[-1]
        why = "The driver is installed from Ubuntu's packages; its graphics libraries ship in libnvidia-gl-%s." % (
            flavour)
        fix = "%s libnvidia-gl-%s (the driver's graphics libraries, matching the installed driver)." % (
            "Reinstall" if gl else "Install", flavour)
        commands = ["sudo apt install %slibnvidia-gl-%s" % ("--reinstall " if gl else "", flavour)]
    else:
        why = "The driver's install is missing these files."
        fix = ("Reinstall the driver%s with its graphics libraries, so that the libraries of its one release are "
               "all installed together." % (" %s" % version if version else ""))
    return [Finding(
        code=INCOMPLETE, severity="warning", components=["driver"],
        title="The NVIDIA driver's %s %s cannot load: driver libraries %s (%s) are missing" % (
            " and ".join(apis), "libraries" if len(broken) > 1 else "library", "they need" if len(broken) > 1
            else "it needs", ", ".join(missing)),
        detail="%s %s. The loader cannot load %s, so libglvnd cannot use the NVIDIA vendor and %s programs see no "
               "NVIDIA device (headless EGL rendering falls back to Mesa); CUDA is unaffected." % (
                   why, each, "them" if len(broken) > 1 else "it", "/".join(apis)),
        evidence=_evidence(facts, "driver.graphics_files", "driver.userspace.version", "os.container",
                           "env.nvidia_driver_capabilities", "cuda.packages"),
        source={"rule": "The driver's graphics libraries need its other libraries of the same release (their ELF "
                        "NEEDED entries); NVIDIA's packaging installs them together (libnvidia-gl-<flavour>)",
                "url": UBUNTU_GL_URL, "checked": CHECKED},
        fix=Fix(text=fix, commands=commands),
    )]


def _renderers(facts: Facts) -> List[Dict[str, Any]]:
    return [r for r in facts.items("apps.renderers") if isinstance(r, dict) and r.get("name")]


def _label(r: Dict[str, Any]) -> str:
    version = r.get("version")
    return "%s%s (%s)" % (r["name"], " %s" % version if version else "", r.get("path"))


def _graphics_missing(facts: Facts) -> List[Finding]:
    files = facts.value("driver.graphics_files")
    if not isinstance(files, dict) or files.get("libraries") or not facts.value("driver.userspace.libraries"):
        return []
    if facts.value("os.wsl") == "WSL2":
        return []  # WSL's graphics go through the Windows driver (d3d12), not these files
    renderers = _renderers(facts)
    if not renderers:
        return []  # a headless compute install: CUDA needs none of them
    version = facts.value("driver.userspace.version") or facts.value("driver.kernel_module.version")
    missing = [n for n in EXPECTED if not ((n.startswith("nvidia_icd") and files.get("vulkan_icd"))
                                           or (n.startswith("10_nvidia") and files.get("egl_vendor")))]
    caps = caps_without_graphics(facts)
    compute = driver_apt_flavours(facts)[0]
    commands: List[str] = []
    url = UBUNTU_GL_URL
    if caps is not None:
        why = ("This container was started with NVIDIA_DRIVER_CAPABILITIES=%s: the NVIDIA Container Toolkit mounts "
               "the driver's OpenGL, EGL and Vulkan libraries only for the 'graphics' capability." % caps)
        fix = "Start the container with the graphics capability (NVIDIA_DRIVER_CAPABILITIES=all, or add graphics)."
        commands = ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=all ..."]
    elif files.get("installer"):
        url = INSTALLER_URL
        why = ("The driver was installed with NVIDIA's .run installer (%s is present) without its OpenGL files "
               "(--no-opengl-files, or the 'Do not install any of the OpenGL-related driver files' choice)."
               % files["installer"])
        fix = ("Reinstall the driver %s with its OpenGL files: run its .run installer again without "
               "--no-opengl-files (and without choosing to leave the OpenGL files out)." % (version or ""))
        if version:
            commands = ["sudo sh NVIDIA-Linux-x86_64-%s.run" % version]
    elif compute:
        flavour = compute[-1]
        why = ("The driver was installed from its compute packages (libnvidia-compute-%s); its OpenGL, EGL and "
               "Vulkan libraries ship in libnvidia-gl-%s, which is not installed." % (flavour, flavour))
        fix = "Install libnvidia-gl-%s (the driver's graphics libraries, matching the installed driver)." % flavour
        commands = ["sudo apt install libnvidia-gl-%s" % flavour]
    else:
        # no install method known to leave them out (a distribution's full driver package installs them wherever
        # they are): the files may lie where this look did not reach, so say nothing rather than guess
        return []
    first = renderers[0]
    return [Finding(
        code=CODE, severity="warning", components=["driver"],
        title="The NVIDIA driver %sis installed without its OpenGL/EGL/Vulkan libraries, which %s needs to create its "
              "GPU device" % ("%s " % version if version else "", first["name"]),
        detail="%s CUDA and nvidia-smi work (libcuda is installed), but none of the driver's graphics files is "
               "found (%s; searched %s), so the Vulkan loader and EGL find no NVIDIA driver and %s fails to create a "
               "GPU device ('No device could be created', 'Driver Version: 0'). Installed here: %s." % (
                   why, ", ".join(missing), ", ".join(str(d) for d in files.get("searched") or []),
                   first["name"], "; ".join(_label(r) for r in renderers)),
        evidence=_evidence(facts, "driver.graphics_files", "driver.userspace.libraries", "apps.renderers",
                           "env.nvidia_driver_capabilities", "cuda.packages"),
        source={"rule": "The driver's OpenGL, EGL and Vulkan files ship apart from its compute libraries "
                        "(libnvidia-gl-<flavour>; the .run installer's --no-opengl-files leaves them out); "
                        "Vulkan/EGL renderers need them", "url": url, "checked": CHECKED},
        fix=Fix(text=fix, commands=commands),
    )]


@check("driver-health.graphics-files", requires=("driver.installed", "apps.renderers"),
       reads=("driver.graphics_files", "driver.userspace.*", "driver.kernel_module.version", "os.wsl", "cuda.packages",
              "env.nvidia_driver_capabilities"),
       layers=("driver",), codes=DOCS)
def graphics_files(ctx: CheckContext) -> List[Finding]:
    return _graphics_missing(ctx.facts) if _installed(ctx.facts) else []


@check("driver-health.graphics-incomplete", requires=("driver.installed",),
       reads=("driver.graphics_files", "driver.userspace.version", "driver.kernel_module.version", "os.wsl",
              "os.container", "cuda.packages", "env.nvidia_driver_capabilities"),
       layers=("driver",), codes=INCOMPLETE_DOCS)
def graphics_incomplete(ctx: CheckContext) -> List[Finding]:
    return _graphics_incomplete(ctx.facts) if _installed(ctx.facts) else []

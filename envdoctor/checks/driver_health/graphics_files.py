"""A driver installed without its graphics libraries (OpenGL, EGL, Vulkan) on a machine with a program that renders
through them (Isaac Sim and other Omniverse Kit applications, CARLA, Habitat-sim).

CUDA needs only the driver's compute libraries (libcuda, libnvidia-ml); a headless compute server without the
graphics ones is a supported, common choice and stays quiet. A renderer creates its GPU device through the
driver's Vulkan or EGL driver (libGLX_nvidia, libEGL_nvidia, libnvidia-glcore, registered by nvidia_icd.json and
10_nvidia.json): without them the Vulkan loader finds no NVIDIA driver and the program creates no device."""

from __future__ import annotations

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

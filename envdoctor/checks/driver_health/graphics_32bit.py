"""A driver whose 64-bit graphics libraries are installed but not its 32-bit ones, on a machine that runs 32-bit
programs that render through them (Steam's client, 32-bit Wine).

A 32-bit process can load only 32-bit libraries: its OpenGL (libglvnd's libGLX) and Vulkan loader look for the
NVIDIA vendor library (libGLX_nvidia.so.0, with libnvidia-glcore of the same release) in the 32-bit directories.
NVIDIA's Ubuntu packaging builds libnvidia-gl-<flavour> for i386 as well as amd64 (``Architecture: i386 amd64``,
``Multi-Arch: same``): the 32-bit half is its own package, ``libnvidia-gl-<flavour>:i386``, that nothing installs for
a compute setup; NVIDIA's CUDA apt repository publishes no i386 packages at all, and the .run installer installs its
32-bit compatibility libraries only when asked. Without them the 32-bit program finds only Mesa's GL (software
rendering, or GLX errors under the NVIDIA X driver) and Steam's client crashes at start. A machine without such a
program, or without i386 libraries at all, stays quiet."""

from __future__ import annotations

from typing import Any, Dict, List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence, _installed, driver_apt_flavours

CODE = "driver.graphics_libraries_32bit_missing"
#: NVIDIA's Ubuntu packaging: libnvidia-gl-<flavour> is built for i386 and amd64 (Multi-Arch: same).
CONTROL_URL = ("https://github.com/NVIDIA/ubuntu-packaging-nvidia-driver/blob/df92087d3c818388f56cce10714626fda9625e11/"
               "debian/templates/control.in")
CHECKED = "2026-12-01"

DOCS = (
    CodeDoc(CODE, "warning",
            "The driver's 64-bit graphics libraries are installed but none of its 32-bit ones (libGLX_nvidia, "
            "libnvidia-glcore for i386), on a machine with 32-bit libraries (i386 multiarch) and a 32-bit program that "
            "renders through them (Steam's client, 32-bit Wine): NVIDIA's CUDA repository ships no i386 packages, "
            "Ubuntu's libnvidia-gl-<branch>:i386 is a package of its own, the .run installer leaves its 32-bit "
            "compatibility libraries out unless asked. Machines without a 32-bit renderer stay quiet.",
            "driver.graphics_files, driver.graphics_files_32bit, apps.renderers_32bit, driver.userspace.version, "
            "cuda.packages, os.family",
            "CUDA and 64-bit OpenGL/Vulkan work, but 32-bit programs find no NVIDIA OpenGL/Vulkan driver: they fall "
            "back to Mesa's software rendering or fail (Steam's 32-bit client crashes at start; 32-bit games under "
            "Wine/Proton run without the GPU).", CONTROL_URL),
)


def _renderers(facts: Facts) -> List[Dict[str, Any]]:
    return [r for r in facts.items("apps.renderers_32bit") if isinstance(r, dict) and r.get("name")]


def _i386(files: Dict[str, Any]) -> str:
    """How this machine is known to run i386 programs ('' when it is not)."""
    arches = files.get("dpkg_architectures")
    if isinstance(arches, list) and "i386" in arches:
        return "i386 is one of dpkg's architectures (/var/lib/dpkg/arch)"
    if files.get("libc32"):
        return "a 32-bit C library is installed (%s)" % files["libc32"]
    return ""


def _graphics_32bit_missing(facts: Facts) -> List[Finding]:
    files = facts.value("driver.graphics_files_32bit")
    graphics = facts.value("driver.graphics_files")
    if not isinstance(files, dict) or files.get("libraries") or not isinstance(graphics, dict) \
            or not graphics.get("libraries"):
        return []  # the 32-bit ones are there, or the 64-bit ones are not either (graphics_libraries_missing)
    if facts.value("os.wsl") == "WSL2" or facts.value("os.container"):
        return []
    renderers = _renderers(facts)
    i386 = _i386(files)
    if not renderers or not i386:
        return []
    version = facts.value("driver.userspace.version") or facts.value("driver.kernel_module.version")
    branch = str(version).split(".")[0] if version else ""
    compute, gl = driver_apt_flavours(facts)
    flavour = sorted(gl)[-1] if gl else (compute[-1] if compute else branch)
    commands: List[str] = []
    repo = files.get("cuda_apt_repo")
    if facts.value("os.family") == "debian" and flavour:
        if repo:
            why = ("The driver came from NVIDIA's CUDA apt repository (%s), which publishes no i386 packages: its "
                   "32-bit OpenGL/Vulkan libraries (libnvidia-gl-%s:i386) cannot be installed from it." % (
                       repo, flavour))
            fix = ("Install libnvidia-gl-%s:i386 from the distribution's archive where it carries that branch (on "
                   "Ubuntu: its nvidia-driver-<branch> packages, whose libnvidia-gl-<branch> is built for i386 too), "
                   "or move to a driver branch that has it, so that the 32-bit libraries match the driver's release."
                   % flavour)
        else:
            why = ("The driver's 32-bit OpenGL/Vulkan libraries ship in their own package, libnvidia-gl-%s:i386, "
                   "which is not installed." % flavour)
            fix = "Install libnvidia-gl-%s:i386 (the driver's 32-bit graphics libraries, of the same release)." % (
                flavour)
        commands = ["sudo apt install libnvidia-gl-%s:i386" % flavour]
    elif graphics.get("installer"):
        why = ("The driver was installed with NVIDIA's .run installer (%s is present) without its 32-bit "
               "compatibility libraries." % graphics["installer"])
        fix = ("Reinstall the driver %s and answer yes to installing NVIDIA's 32-bit compatibility libraries."
               % (version or ""))
        if version:
            commands = ["sudo sh NVIDIA-Linux-x86_64-%s.run" % version]
    else:
        why = "The driver was installed without its 32-bit part."
        fix = ("Install the driver's 32-bit graphics package of the same release (Arch: lib32-nvidia-utils; "
               "Fedora/RPM Fusion: xorg-x11-drv-nvidia-libs.i686; openSUSE: the -32bit packages).")
    first = renderers[0]
    return [Finding(
        code=CODE, severity="warning", components=["driver"],
        title="The NVIDIA driver %shas no 32-bit OpenGL/Vulkan libraries, which %s needs" % (
            "%s " % version if version else "", first["name"]),
        detail="%s A 32-bit program can load only 32-bit libraries, and none of the driver's 32-bit graphics "
               "libraries (libGLX_nvidia.so.0, libnvidia-glcore) is installed (searched %s and the loader cache), "
               "while its 64-bit ones are (%s) and %s. So 32-bit OpenGL/Vulkan programs find no NVIDIA driver: they "
               "fall back to Mesa's software rendering or fail (Steam's 32-bit client crashes at start). Installed "
               "here: %s." % (
                   why, ", ".join(str(d) for d in files.get("searched") or []), graphics["libraries"][0], i386,
                   "; ".join("%s (%s)" % (r["name"], r.get("path")) for r in renderers)),
        evidence=_evidence(facts, "driver.graphics_files_32bit", "apps.renderers_32bit", "driver.graphics_files",
                           "driver.userspace.version", "cuda.packages"),
        source={"rule": "32-bit programs load the driver's 32-bit graphics libraries; NVIDIA's packaging builds "
                        "libnvidia-gl-<flavour> for i386 and amd64 (Multi-Arch: same) as separate packages",
                "url": CONTROL_URL, "checked": CHECKED},
        fix=Fix(text=fix, commands=commands),
    )]


@check("driver-health.graphics-32bit", requires=("driver.installed", "apps.renderers_32bit"),
       reads=("driver.graphics_files", "driver.graphics_files_32bit", "driver.userspace.version",
              "driver.kernel_module.version", "os.wsl", "os.container", "os.family", "cuda.packages"),
       layers=("driver",), codes=DOCS)
def graphics_32bit(ctx: CheckContext) -> List[Finding]:
    return _graphics_32bit_missing(ctx.facts) if _installed(ctx.facts) else []

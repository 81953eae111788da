"""A driver installed without its graphics libraries (OpenGL, EGL, Vulkan) on a machine with a program that renders
through them (Isaac Sim and other Omniverse Kit applications, CARLA, Habitat-sim).

CUDA needs only the driver's compute libraries (libcuda, libnvidia-ml); a headless compute server without the
graphics ones is a supported, common choice and stays quiet. A renderer creates its GPU device through the
driver's Vulkan or EGL driver (libGLX_nvidia, libEGL_nvidia, libnvidia-glcore, registered by nvidia_icd.json and
10_nvidia.json): without them the Vulkan loader finds no NVIDIA driver and the program creates no device."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Tuple

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


MISMATCH = "driver.graphics_libraries_version_mismatch"
#: The kernel module's own refusal of a driver component of another release: "NVRM: API mismatch: the client has
#: the version %s, but NVRM: this kernel module has the version %s.  Please make sure that this kernel module and
#: all NVIDIA driver components have the same version." (the resource manager's strings, nv-kernel.o_binary of the
#: driver package; envdoctor/matrix/data/kernel_messages.json, api_mismatch_version).
API_MISMATCH_URL = "https://download.nvidia.com/XFree86/Linux-x86_64/555.58.02/"
MISMATCH_CHECKED = "2026-12-01"
MISMATCH_DOCS = (
    CodeDoc(MISMATCH, "warning",
            "The driver's graphics vendor libraries that programs would use (libEGL_nvidia.so.0 and libGLX_nvidia.so.0 "
            "as the loader finds them, and the libraries libglvnd's EGL vendor files and the Vulkan ICD file name) "
            "are of another driver release than the loaded kernel module, judged from the release their real files' "
            "names carry (libEGL_nvidia.so.570.195.03), while the compute libraries match the module (else "
            "driver.library_mismatch speaks): a container image that bundles its own libnvidia-gl-<branch>, an "
            "Apptainer --nv or toolkit mount of the host's compute libraries only, a partial driver upgrade. WSL and "
            "files whose names carry no release stay quiet.",
            "driver.graphics_files, driver.kernel_module.version, driver.userspace.version, os.container",
            "The kernel module refuses a driver component of another release ('NVRM: API mismatch ... Please make "
            "sure that this kernel module and all NVIDIA driver components have the same version'), so EGL and "
            "OpenGL find no NVIDIA device (eglQueryDevicesEXT returns none; habitat-sim: 'no EGL devices found', "
            "'Unable to create windowless context') and headless rendering fails or falls back to Mesa, while CUDA "
            "and nvidia-smi work.", API_MISMATCH_URL),
)


def _release_key(text: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def _graphics_mismatch(facts: Facts) -> List[Finding]:
    files = facts.value("driver.graphics_files")
    if not isinstance(files, dict) or facts.value("os.wsl") == "WSL2":
        return []
    module = facts.text("driver.kernel_module.version")
    if not module or not _release_key(module):
        return []
    user = facts.text("driver.userspace.version")
    if user and _release_key(user) != _release_key(module):
        return []  # the compute libraries differ too: driver.library_mismatch says so for the whole driver
    other = [r for r in (files.get("releases") or []) if isinstance(r, dict) and isinstance(r.get("release"), str)
             and r.get("library") and _release_key(r["release"]) and _release_key(r["release"]) != _release_key(module)]
    if not other:
        return []
    releases = list(dict.fromkeys(str(r["release"]) for r in other))
    apis = list(dict.fromkeys(_api(posixpath.basename(str(r["name"]))) for r in other))
    each = "; ".join("%s -> %s (%s)" % (r["name"], r["library"], "found by the loader" if r.get("via") == "loader"
                                         else "named by %s" % r["via"]) for r in other)
    dirs = list(dict.fromkeys(posixpath.dirname(str(r["library"])) for r in other))
    container = facts.value("os.container")
    apptainer = files.get("apptainer")
    compute = ("the compute libraries (libcuda, libnvidia-ml) are %s" % user if user
               else "NVML and the compute libraries answer as %s" % module)
    if apptainer or container:
        where = ("this Apptainer container (%s)" % apptainer if apptainer else "this container (%s)" % container)
        why = ("In %s the graphics libraries are the image's own copies (%s), not the host driver's: the runtime "
               "made the host's compute libraries visible but not its graphics ones." % (where, ", ".join(dirs)))
        fix = ("Use the host driver's graphics libraries in the container: remove the image's copies of driver %s "
               "(on Ubuntu images the libnvidia-gl-<branch> package; libEGL_nvidia, libGLX_nvidia, "
               "libnvidia-eglcore/glcore/glsi/tls) and have the runtime bring the host's (Apptainer --nv with "
               "libEGL_nvidia, libGLX_nvidia, libnvidia-eglcore, libnvidia-glcore, libnvidia-glsi and libnvidia-tls "
               "in its nvliblist.conf; the NVIDIA Container Toolkit with NVIDIA_DRIVER_CAPABILITIES including "
               "graphics), or build the image with the graphics libraries of driver %s exactly."
               % (" and ".join(releases), module))
        commands: List[str] = []
    else:
        why = "The graphics libraries in %s are another release than the rest of the driver." % ", ".join(dirs)
        fix = ("Make every part of the driver one release: install the graphics libraries of driver %s (on Ubuntu "
               "libnvidia-gl-<branch> of that version), or upgrade the whole driver to %s and reboot so the module "
               "is that release too." % (module, releases[-1]))
        commands = []
    return [Finding(
        code=MISMATCH, severity="warning", components=["driver"],
        title="The NVIDIA driver's %s libraries are release %s, but the loaded kernel module is %s" % (
            " and ".join(apis), " and ".join(releases), module),
        detail="%s %s. The kernel module %s accepts only driver components of its own release ('API mismatch'), "
               "so %s programs find no NVIDIA device (EGL: eglQueryDevicesEXT returns none, 'no EGL devices found'; "
               "headless rendering fails or falls back to Mesa's software renderer), while %s, so CUDA and "
               "nvidia-smi work." % (why, each, module, "/".join(apis), compute),
        evidence=_evidence(facts, "driver.graphics_files", "driver.kernel_module.version", "driver.userspace.version",
                           "os.container"),
        source={"rule": "The kernel module and all NVIDIA driver components must be the same version (the "
                        "module's 'API mismatch' message); the graphics libraries' file names carry their release",
                "url": API_MISMATCH_URL, "checked": MISMATCH_CHECKED},
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


@check("driver-health.graphics-version-mismatch", requires=("driver.installed",),
       reads=("driver.graphics_files", "driver.userspace.version", "driver.kernel_module.version", "os.wsl",
              "os.container", "cuda.packages"),
       layers=("driver",), codes=MISMATCH_DOCS)
def graphics_version_mismatch(ctx: CheckContext) -> List[Finding]:
    return _graphics_mismatch(ctx.facts) if _installed(ctx.facts) else []

"""Does a library a Python package opens by soname at run time load?

vLLM's NCCL wrapper opens ``libnccl.so.2`` with ctypes (``matrix/data/runtime_loads.json``, rows keyed by
``package``; fact ``python.gpu_packages`` ``opens``). ctypes finds it when a library already loaded has that soname
(pip's torch links the nvidia-nccl wheel's ``libnccl.so.2``, so importing torch loads it) or through the loader's
search. The pytorch channel's conda builds link NCCL statically: their ``libtorch_cuda.so`` names no ``libnccl``
(``linkage.torch.elf`` NEEDED), nothing has loaded one, and unless the loader finds one the wrapper fails ("Failed to
load NCCL library from libnccl.so.2"). vLLM's installation page: conda "installs torch with statically linked NCCL.
This can cause issues when vLLM tries to use NCCL.\""""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Optional

from ... import versions
from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from ..driver_health import caps_without_graphics, driver_apt_flavours
from . import _FRAMEWORK_LINKAGE_DOCS, component_of

VLLM_DOCS = "https://docs.vllm.ai/en/v0.6.1.post2/getting_started/installation.html"
CHECKED = "2026-11-29"

#: NVIDIA's OptiX runtime is part of the driver (OptiX 7 and later: the SDK's loader opens it by this soname).
OPTIX = "libnvoptix.so.1"
#: NVIDIA's container library mounts it only for the 'graphics' driver capability: src/nvc_info.c lists
#: "libnvoptix.so" /* Optix */ in graphics_libs, not in compute_libs.
OPTIX_CONTAINER_URL = ("https://github.com/NVIDIA/libnvidia-container/blob/00b4b47e2a3eed09f8059eb39feaa0b4540d22d9/"
                       "src/nvc_info.c")
#: NVIDIA's Ubuntu packaging of the driver installs libnvoptix.so.<version> and its libnvoptix.so.1 link in
#: libnvidia-gl-<flavour> (debian/templates/libnvidia-gl-flavour.install.in and .links.in); the compute packages
#: (libnvidia-compute-<flavour>, nvidia-headless-<flavour>) do not.
OPTIX_UBUNTU_URL = ("https://github.com/NVIDIA/ubuntu-packaging-nvidia-driver/blob/df92087d3c818388f56cce10714626fda9625e11/"
                    "debian/templates/libnvidia-gl-flavour.install.in")
OPTIX_CHECKED = "2026-11-30"


def _framework_links(facts: Facts, fw: str, soname: str) -> Optional[bool]:
    """Whether the framework's CUDA library names ``soname`` among its NEEDED entries (None: its ELF was not read)."""
    elf = facts.value("linkage.%s.elf" % fw)
    if not isinstance(elf, dict) or not isinstance(elf.get("needed"), list):
        return None
    stem = soname.split(".so", 1)[0] + ".so"
    return any(str(n).startswith(stem) for n in elf["needed"])


def _program_loads(facts: Facts) -> List[Finding]:
    """Applications that open the driver's OptiX library by soname (``apps.program_loads``: Blender's OptiX device)
    where the loader finds none."""
    out: List[Finding] = []
    for entry in facts.items("apps.program_loads"):
        if not isinstance(entry, dict):
            continue
        for load in entry.get("opens") or []:
            if isinstance(load, dict) and load.get("soname") == OPTIX and not load.get("path") \
                    and load.get("certain") is not False:
                out.append(_optix_missing(facts, entry, load))
    return out


def _package_loads(facts: Facts) -> List[Finding]:
    out: List[Finding] = _program_loads(facts)
    pkgs = facts.get("python.gpu_packages")
    if pkgs is None or not pkgs.known or not isinstance(pkgs.value, list):
        return out
    for entry in pkgs.value:
        if not isinstance(entry, dict):
            continue
        for load in entry.get("opens") or []:
            if not isinstance(load, dict) or load.get("set_by") or load.get("path") or load.get("certain") is False:
                continue
            if load.get("soname") == OPTIX:
                out.append(_optix_missing(facts, entry, load))
                continue
            fw, so = str(load.get("with") or ""), str(load.get("soname") or "")
            fwv: Dict[str, Any] = facts.mapping("framework." + fw) if fw else {}
            if fw and fwv.get("build") != "cuda":
                continue  # the load goes with the framework's CUDA build
            links = _framework_links(facts, fw, so) if fw else False
            if links is not False:
                continue  # the framework loads it (its own finding says if it cannot), or that is unknown
            label = "%s %s" % (entry.get("package"), entry.get("version"))
            comp = component_of(so)
            major = str(fwv.get("cuda") or "").split(".")[0]
            wheel = ("pip install " + versions.cu_wheel("nvidia-nccl", major)
                     if comp == "nccl" and major.isdigit() else "")
            fw_label = "%s %s" % (fw, fwv.get("version")) if fw else ""
            elsewhere = [str(p) for p in load.get("elsewhere") or []]
            env = load.get("unless_env")
            out.append(Finding(
                code="%s.framework_cannot_load" % comp, severity="warning", components=[comp, fw] if fw else [comp],
                title="%s opens %s at run time, but %s links none and the loader finds no such file" % (
                    label, so, fw_label or "nothing loaded"),
                detail="%s's Python code opens %s by soname (ctypes); %s%s. Multi-GPU and distributed runs fail "
                       "when it is first used ('Failed to load NCCL library from %s')." % (
                           entry.get("package"), so,
                           "%s's libraries name no %s (NCCL linked statically, as the pytorch channel's conda builds "
                           "do), so importing it loads none, and " % (fw_label, so.split(".so")[0]) if fw else "",
                           "neither LD_LIBRARY_PATH, the loader cache nor the default directories hold one" + (
                               " (copies elsewhere: %s)" % ", ".join(elsewhere) if elsewhere else ""), so),
                evidence=[x.to_dict() for x in (pkgs, facts.get("linkage.%s.elf" % fw), facts.get(
                    "framework." + fw)) if x is not None],
                source={"rule": "vLLM opens VLLM_NCCL_SO_PATH, else libnccl.so.2 (found when torch loaded it); conda's "
                                "torch links NCCL statically", "url": VLLM_DOCS, "checked": CHECKED},
                fix=Fix(text="Install %s with pip, whose torch loads the nvidia-nccl wheel's %s (vLLM's docs: 'it is "
                             "highly recommended to use pip to install vLLM'), or point %s at an NCCL 2 library "
                             "(%s)." % (entry.get("package"), so, env or "the loader",
                                        elsewhere[0] if elsewhere else wheel or "a copy of it"),
                        commands=["export %s=%s" % (env, elsewhere[0])] if env and elsewhere else [])))
    return out


def _optix_missing(facts: Facts, entry: Dict[str, Any], load: Dict[str, Any]) -> Finding:
    """A package or an application opens the driver's OptiX library and the loader finds none: why, from what the
    machine shows."""
    who = entry.get("name") or entry.get("package")  # an application's display name, else the distribution's
    label = "%s %s" % (who, entry.get("version"))
    elsewhere = [str(p) for p in load.get("elsewhere") or []]
    caps = caps_without_graphics(facts)
    compute, gl = driver_apt_flavours(facts)
    url, commands = OPTIX_CONTAINER_URL, []  # type: str, List[str]
    if elsewhere:
        where = posixpath.dirname(elsewhere[0])
        why = ("%s is at %s, a directory the loader does not search (not on LD_LIBRARY_PATH, not in the loader "
               "cache)." % (OPTIX, ", ".join(elsewhere)))
        fix = "Add %s to the loader's path, or mount the driver's OptiX library where the loader looks." % where
        commands = ["echo %s | sudo tee /etc/ld.so.conf.d/nvidia-optix.conf" % where, "sudo ldconfig"]
    elif caps is not None:
        why = ("This container was started with NVIDIA_DRIVER_CAPABILITIES=%s: the NVIDIA Container Toolkit mounts "
               "the driver's OptiX library only for the 'graphics' capability." % caps)
        fix = "Start the container with the graphics capability as well."
        commands = ["docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=%s,graphics ..." % caps]
    elif compute and not gl:
        flavour = compute[-1]
        url = OPTIX_UBUNTU_URL
        why = ("The driver was installed from its compute packages (libnvidia-compute-%s); on Ubuntu the OptiX "
               "library ships in libnvidia-gl-%s, which is not installed." % (flavour, flavour))
        fix = "Install libnvidia-gl-%s (the driver's graphics libraries, OptiX among them)." % flavour
        commands = ["sudo apt install libnvidia-gl-%s" % flavour]
    else:
        why = "No copy of it is installed: the driver was installed without its OptiX library."
        fix = "Install the driver's graphics libraries (they include %s), matching the installed driver." % OPTIX
    env = load.get("unless_env")
    return Finding(
        code="driver.optix_library_missing", severity="warning", components=["driver"],
        title="%s opens %s (NVIDIA's OptiX, part of the driver), but the loader finds none" % (label, OPTIX),
        detail="%s %s %s%s." % (
            "%s opens %s by soname at run time." % (who, OPTIX), why,
            "Its OptiX initialisation fails (OPTIX_ERROR_LIBRARY_NOT_FOUND) and it lists no OptiX device; its CUDA "
            "devices still work" if entry.get("program") else
            "Its OptiX ray tracing fails ('could not be loaded', 'Could not initialize OptiX')",
            "; %s names the file instead when it is set" % env if env else ""),
        evidence=[x.to_dict() for x in (facts.get("apps.program_loads" if entry.get("program") else
                                                  "python.gpu_packages"), facts.get("env.nvidia_driver_capabilities"),
                                        facts.get("cuda.packages")) if x is not None],
        source={"rule": "OptiX 7+ loads libnvoptix.so.1 from the driver; containers get it with the graphics "
                        "capability, Ubuntu installs it with libnvidia-gl-<branch>", "url": url,
                "checked": OPTIX_CHECKED},
        fix=Fix(text=fix, commands=commands))


OPTIX_DOCS = (
    CodeDoc("driver.optix_library_missing", "warning",
            "A program that loads NVIDIA's OptiX runtime from the driver (libnvoptix.so.1: Dr.Jit, and Mitsuba 3 "
            "through it; Blender's OptiX device) runs where the loader cannot find it: a container without the "
            "'graphics' driver capability, Ubuntu's compute-only driver packages without libnvidia-gl-<branch>, or "
            "the file in a directory outside the loader's path.",
            "python.gpu_packages (opens), apps.program_loads (opens), env.nvidia_driver_capabilities, cuda.packages, "
            "matrix runtime_loads",
            "OptiX initialisation fails ('libnvoptix.so.1 could not be loaded -- disabling OptiX backend', 'Could not "
            "initialize OptiX'; Blender lists no OptiX device); CUDA-only work still runs.", OPTIX_CONTAINER_URL),
)


@check("package-loads", requires=("python.gpu_packages",),
       reads=("framework.*", "linkage.*.elf", "env.nvidia_driver_capabilities", "cuda.packages", "apps.program_loads"),
       layers=("driver", "cuda", "libraries", "frameworks"),
       codes=tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code.endswith(".framework_cannot_load")) + OPTIX_DOCS)
def package_loads(ctx: CheckContext) -> List[Finding]:
    return _package_loads(ctx.facts)

"""Flatpak applications on an NVIDIA machine without the GL runtime extension of the loaded driver's release.

A Flatpak app does not see the host's graphics libraries: its runtime's GL extension point
(org.freedesktop.Platform.GL) mounts the one extension whose name matches the active GL driver. Flatpak names the
NVIDIA one from the loaded kernel module's version, ``/sys/module/nvidia/version`` with its dots turned into dashes
(``nvidia-384-111``), before ``default`` (Mesa) and ``host`` (flatpak's ``flatpak_get_gl_drivers``); Flathub publishes
org.freedesktop.Platform.GL.nvidia-<version> (and GL32.nvidia-<version> for 32-bit apps) per driver release, and
``flatpak update`` installs the one matching the running driver once it exists. After a driver update, before the
extension is published or installed, only extensions of other releases are there: the user-space NVIDIA driver must
match the kernel module exactly, so inside the sandbox OpenGL/Vulkan fall back to Mesa (software rendering) or fail.
Quiet without installed flatpak apps, with FLATPAK_GL_DRIVERS set (the user chose the drivers) or the GL.host
extension installed."""

from __future__ import annotations

from typing import Any, List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence, _installed

CODE = "driver.flatpak_gl_extension_missing"
#: flatpak's flatpak_get_gl_drivers: "nvidia-" + /sys/module/nvidia/version with dots as dashes, then default, host.
FLATPAK_URL = ("https://github.com/flatpak/flatpak/blob/55ec5bd5925948ef1860381436858e0626f9bf1c/common/"
               "flatpak-utils.c#L517-L550")
CHECKED = "2026-12-01"
GL = "org.freedesktop.Platform.GL"
GL32 = "org.freedesktop.Platform.GL32"
#: Runtimes that run 32-bit code in a flatpak (Steam's, Wine's): they take the GL32 extension.
COMPAT32 = ("org.freedesktop.Platform.Compat32", "org.freedesktop.Platform.Compat.i386")

DOCS = (
    CodeDoc(CODE, "warning",
            "Flatpak applications are installed but no org.freedesktop.Platform.GL.nvidia-<version> runtime extension "
            "(or GL32 for 32-bit ones) matches the loaded NVIDIA kernel module: only extensions of other releases (a "
            "driver just updated, the new one not yet published or installed), or a remote without them. Flatpak "
            "picks the extension by the module's version; without it there is no NVIDIA GL driver in the sandbox.",
            "apps.flatpak, driver.kernel_module.version",
            "OpenGL/Vulkan inside flatpak apps (Steam, Bottles, OBS, games) fall back to Mesa's software rendering or "
            "fail to start, while the host's own programs work.", FLATPAK_URL),
)


def flatpak_driver_name(version: str) -> str:
    """Flatpak's name for the NVIDIA GL driver of a kernel module version: ``384.111`` -> ``nvidia-384-111``."""
    return "nvidia-" + version.strip().replace(".", "-")


def _ids(refs: Any) -> List[str]:
    return [str(r["id"]) for r in refs if isinstance(r, dict) and r.get("id")] if isinstance(refs, list) else []


def _flatpak_gl_missing(facts: Facts) -> List[Finding]:
    flatpak = facts.value("apps.flatpak")
    version = facts.value("driver.kernel_module.version")
    if not isinstance(flatpak, dict) or not isinstance(version, str) or not version.strip():
        return []
    apps = _ids(flatpak.get("apps"))
    runtimes = _ids(flatpak.get("runtimes"))
    if not apps or flatpak.get("gl_drivers") or GL + ".host" in runtimes:
        return []
    name = flatpak_driver_name(version)
    wanted = [GL + "." + name]
    if any(r in COMPAT32 for r in runtimes) or any(r.startswith(GL32 + ".") for r in runtimes):
        wanted.append(GL32 + "." + name)
    missing = [w for w in wanted if w not in runtimes]
    if not missing:
        return []
    others = sorted(r for r in runtimes if r.startswith((GL + ".nvidia-", GL32 + ".nvidia-")))
    have = ("only %s (for another driver release) is installed" % ", ".join(others)) if others else \
        "no NVIDIA GL extension is installed"
    return [Finding(
        code=CODE, severity="warning", components=["driver"],
        title="Flatpak has no GL extension for the loaded NVIDIA driver %s (%s): %s cannot use the GPU" % (
            version, ", ".join(missing), _apps_phrase(apps)),
        detail="Flatpak gives its apps the NVIDIA driver only through the runtime extension named after the loaded "
               "kernel module's version (%s, from /sys/module/nvidia/version), and %s. Inside the "
               "sandbox there is no NVIDIA OpenGL/Vulkan driver of the module's release, so %s fall back to Mesa's "
               "software rendering or fail to start; the host's own programs are not affected. Flathub publishes "
               "the extension for each driver release (after a driver update it may take a day)." % (
                   ", ".join(missing), have, _apps_phrase(apps)),
        evidence=_evidence(facts, "apps.flatpak", "driver.kernel_module.version"),
        source={"rule": "Flatpak's active GL driver is nvidia-<kernel module version, dots as dashes>, mounted from "
                        "the org.freedesktop.Platform.GL extension of that name",
                "url": FLATPAK_URL, "checked": CHECKED},
        fix=Fix(text="Install the GL extension of the running driver's release: `flatpak update` installs it once "
                     "the remote has it (or `flatpak install flathub %s`); if Flathub has not published it yet, wait "
                     "for it, or keep the previous driver until it is." % " ".join(missing),
                commands=["flatpak update"]),
    )]


def _apps_phrase(apps: List[str]) -> str:
    shown = ", ".join(apps[:3]) + (" and %d more" % (len(apps) - 3) if len(apps) > 3 else "")
    return "its apps (%s)" % shown


@check("driver-health.flatpak-gl", requires=("driver.installed", "apps.flatpak", "driver.kernel_module.version"),
       reads=(), layers=("driver",), codes=DOCS)
def flatpak_gl(ctx: CheckContext) -> List[Finding]:
    return _flatpak_gl_missing(ctx.facts) if _installed(ctx.facts) else []


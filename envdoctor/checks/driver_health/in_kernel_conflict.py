"""nouveau or nova (the in-kernel drivers) holding the GPU."""

from __future__ import annotations

from typing import List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import install_line
from . import DOCS, READS, _driver_label, _evidence, _family, _source

NOUVEAU_CONF = "/etc/modprobe.d/blacklist-nouveau.conf"
NOUVEAU_TEXT = "blacklist nouveau\noptions nouveau modeset=0\n"
NOVA_CONF = "/etc/modprobe.d/blacklist-nova.conf"
NOVA_TEXT = "blacklist nova_drm\nblacklist nova_core\n"


def _initramfs(family: str) -> List[str]:
    if family == "debian":
        return ["sudo update-initramfs -u"]
    if family in ("rhel", "fedora", "suse"):
        return ["sudo dracut --force"]
    return ["sudo update-initramfs -u   # Debian/Ubuntu", "sudo dracut --force   # RHEL/Fedora/SUSE"]


def _in_kernel_conflict(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    container_driver = no_driver = False
    if facts.value("driver.installed") is not True:
        # no driver on the host: installing NVIDIA's packages blacklists nouveau (driver.not_installed says so, one
        # finding). Said here instead where that will not be enough: on a Kubernetes node the GPU Operator's
        # driver container only runs modprobe nvidia and blacklists nothing; and where a nouveau blacklist exists
        # but nouveau still drives the GPU, the initramfs loads it before the blacklist is read (NVIDIA's README,
        # "What if my initial ramdisk image contains Nouveau?"), so nvidia-installer stops on it and a package's
        # blacklist does not take effect either until the initramfs is rebuilt
        if facts.value("driver.installed") is not False:
            return out
        container_driver = facts.value("driver.kubernetes_node") is True
        no_driver = not container_driver
        if no_driver and facts.value("driver.modprobe_blacklist_nouveau") is not True:
            return out
    family = _family(facts)
    nvidia_loaded = facts.value("driver.kernel_module.loaded") is True
    for name, conf, text, modules in (
        ("nouveau", NOUVEAU_CONF, NOUVEAU_TEXT, "nouveau"),
        ("nova", NOVA_CONF, NOVA_TEXT, "nova_drm nova_core"),
    ):
        loaded = facts.value("driver.%s.loaded" % name) is True
        bound = facts.strings("driver.%s.bound" % name)
        if not loaded and not bound or (container_driver or no_driver) and not bound or no_driver and name != "nouveau":
            continue
        severe = bool(bound) or not nvidia_loaded
        blacklisted = name == "nouveau" and facts.value("driver.modprobe_blacklist_nouveau") is True
        if bound:
            what = "%s drives the NVIDIA GPU %s" % (name, ", ".join(bound))
        else:
            what = "the %s kernel module is loaded" % name
        detail = ("%s, so the NVIDIA driver cannot own it%s. The in-kernel %s driver and NVIDIA's driver "
                  "cannot share a GPU." % (what[0].upper() + what[1:],
                                           "" if nvidia_loaded else " (the nvidia module is not loaded)", name))
        if container_driver:
            detail += (" This Kubernetes node has no NVIDIA driver of its own: the NVIDIA GPU Operator's driver "
                       "container loads the nvidia module with modprobe and does not blacklist %s, so it cannot "
                       "take the GPU while %s holds it (the driver pod fails and restarts). Blacklist %s on the "
                       "host; the driver container then installs at the next start." % (name, name, name))
        if no_driver:
            detail += (" No NVIDIA driver is installed yet, and NVIDIA's installer stops while nouveau is in use "
                       "(\"The Nouveau kernel driver is currently in use by your system\").")
        if blacklisted:
            # the blacklist in /etc/modprobe.d only reaches early boot once the initramfs is rebuilt: name the
            # distribution's command, the step install guides leave out
            detail += (" A blacklist file exists already, but the initramfs still loads %s at boot: regenerate "
                       "the initramfs (%s) and reboot." % (
                           name, " or ".join("`%s`" % c.split("   #")[0].strip() for c in _initramfs(family))))
        cmds = []
        if not blacklisted:
            cmds.append("printf '%s' | sudo tee %s" % (text.replace("\n", "\\n"), conf))
        cmds += _initramfs(family) + ["sudo reboot"]
        if no_driver:
            cmds.append("lsmod | grep -c nouveau   # 0 after the reboot; then install the NVIDIA driver")
        out.append(Finding(
            code="driver.%s_conflict" % name, severity="error" if severe else "warning",
            components=["driver", "kernel"],
            title=("%s drives the NVIDIA GPU %s, and this node has no NVIDIA driver: the GPU Operator's driver "
                   "container cannot take it" % (name if name == "nouveau" else "nova (nova-core)", ", ".join(bound))
                   if container_driver else
                   "nouveau drives the NVIDIA GPU %s despite its blacklist (the initramfs loads it), and no NVIDIA "
                   "driver is installed: NVIDIA's installer stops on it" % ", ".join(bound) if no_driver else
                   "%s is active next to %s (%s)" % (
                       "nouveau" if name == "nouveau" else "nova (nova-core)", _driver_label(facts),
                       "GPU %s" % ", ".join(bound) if bound else "module loaded")),
            detail=detail,
            evidence=_evidence(facts, "driver.%s.loaded" % name, "driver.%s.bound" % name,
                               "driver.modprobe_blacklist_nouveau", "driver.kernel_module.loaded",
                               "driver.installed", "driver.kubernetes_node", "os.family"),
            source=_source("driver_container" if container_driver else "nouveau"),
            fix=Fix(text=("Blacklist %s (%s with: %s), rebuild the initramfs so it is not loaded at boot, and "
                          "reboot." % (name, conf, text.strip().replace("\n", "; ")) if not blacklisted else
                          "Rebuild the initramfs so the blacklist applies at boot, and reboot (modules: %s)." % modules)
                    + (" Then install the NVIDIA driver for this GPU." if no_driver else ""),
                    commands=cmds, install=install_line(facts, "driver") if no_driver else None),
        ))
    return out


@check("driver-health.in-kernel-conflict", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.nouveau_conflict", "driver.nova_conflict"))
def in_kernel_conflict(ctx: CheckContext) -> List[Finding]:
    return _in_kernel_conflict(ctx.facts)

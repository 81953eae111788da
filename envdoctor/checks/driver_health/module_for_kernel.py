"""No nvidia module built for the running kernel (DKMS built for another one, headers missing), or for a newer
installed kernel the machine will boot next."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import rpm_tool
from . import DOCS, READS, _evidence, _family, _installed, _pci_gpus, _source


def _headers(family: str, tool: str = "dnf") -> List[str]:
    if family == "debian":
        return ['sudo apt-get install -y "linux-headers-$(uname -r)"']
    if family in ("rhel", "fedora"):
        return ['sudo %s install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)"' % tool]
    if family == "suse":
        return ["sudo zypper install -y kernel-default-devel"]
    return ['sudo apt-get install -y "linux-headers-$(uname -r)"   # Debian/Ubuntu',
            'sudo dnf install -y "kernel-devel-$(uname -r)"   # RHEL/Fedora']


def _dkms_nvidia(facts: Facts) -> List[Dict[str, Any]]:
    return [e for e in facts.items("driver.dkms.status")
            if isinstance(e, dict) and str(e.get("module", "")).startswith("nvidia")]


def _failed_build(facts: Facts) -> Optional[Dict[str, Any]]:
    """DKMS's build log of the nvidia module for the running kernel, left by a build that failed."""
    got = facts.value("driver.dkms.failure")
    return got if isinstance(got, dict) and got.get("module") and got.get("version") else None


def _driver_left_for_kernel(facts: Facts) -> bool:
    """No driver user space, but an NVIDIA GPU and DKMS holding the nvidia module (registered, or a failed build
    for the running kernel): the driver was being installed and its module never built for this kernel (NVIDIA's
    installer stops before the libraries when DKMS cannot build the module)."""
    return facts.value("driver.installed") is False and bool(_pci_gpus(facts)) and bool(
        _dkms_nvidia(facts) or _failed_build(facts))


def _no_module_for_kernel(facts: Facts) -> List[Finding]:
    installed = facts.value("driver.installed") is True
    if not (installed or _driver_left_for_kernel(facts)) or facts.value("driver.kernel_module.loaded") is True:
        return []
    fact = facts.get("driver.module_for_running_kernel")
    if fact is None or not fact.known or fact.value is not False:
        return []
    release = facts.value("kernel.release") or "the running kernel"
    dkms = _dkms_nvidia(facts)
    others = sorted({e.get("kernel", "") for e in dkms if str(e.get("state", "")).startswith("installed")}
                    - {release})
    versions = sorted({e.get("version", "") for e in dkms if e.get("version")})
    added = sorted({"%s %s" % (e.get("module"), e.get("version")) for e in dkms
                    if e.get("state") == "added" and e.get("version")})
    failure = _failed_build(facts)
    family = _family(facts)
    title = "No nvidia kernel module is built for the running kernel %s" % release
    if failure:
        title += " (DKMS's build of %s/%s for it failed)" % (failure["module"], failure["version"])
    elif others:
        title += " (DKMS built nvidia %s only for %s)" % (", ".join(versions) or "?", ", ".join(others))
    elif added:
        title += " (DKMS has %s added but built for no kernel)" % ", ".join(added)
    cmds = _headers(family, rpm_tool(facts)) + ["sudo dkms autoinstall", "sudo modprobe nvidia"]
    headers = facts.mapping("kernel.headers")
    missing_headers = [] if headers.get("present") is not False else [Finding(
        code="driver.kernel_headers_missing", severity="error", components=["kernel", "driver"],
        title="The headers of the running kernel %s are not installed, so DKMS cannot build the nvidia module for "
              "it" % release,
        detail="DKMS compiles the nvidia module against /lib/modules/%s/build; without the kernel's headers "
               "package the build is skipped after a kernel update, and the new kernel boots without the module."
               % release,
        evidence=_evidence(facts, "kernel.headers", "kernel.release", "driver.dkms.status"),
        source=_source("headers"),
        fix=Fix(text="Install the headers of kernel %s; DKMS then builds the module." % release, commands=cmds))]
    detail = ("The machine booted kernel %s, but /lib/modules/%s holds no nvidia.ko and DKMS has not built one "
              "for it" % (release, release))
    source = _source("headers")
    fix = Fix(text="Install the headers of the running kernel and let DKMS build the module for it (or boot "
                   "the kernel it was built for).", commands=cmds)
    if failure and headers.get("present") is not False:
        module = "%s/%s" % (failure["module"], failure["version"])
        detail += (": its build of %s for this kernel failed%s. A build that fails with the kernel's headers "
                   "installed usually means the driver release does not support this kernel (a newer kernel "
                   "changed an interface its module uses) or the compiler differs from the kernel's" % (
                       module, " (the build log %s says: '%s')" % (failure.get("log"), failure["reason"])
                       if failure.get("reason") else " (see the build log %s)" % failure.get("log")))
        source = _source("dkms_kernel")
        fix = Fix(text="Read the build log, then install a driver release that supports kernel %s (or boot a "
                       "kernel this driver builds for) and build the module again." % release,
                  commands=["less %s" % failure.get("log"), "sudo dkms install %s -k %s" % (module, release)])
    else:
        detail += (" (usually a kernel update whose headers were not installed, so DKMS could not rebuild the "
                   "module)")
    if not installed:
        detail += ("; the driver's libraries are not installed either (NVIDIA's installer stops when the kernel "
                   "module cannot be built)")
    detail += ". Until it is built, the module cannot load and CUDA sees no GPU."
    return missing_headers + [Finding(
        code="driver.no_module_for_kernel", severity="error", components=["driver", "kernel"],
        title=title, detail=detail,
        evidence=_evidence(facts, "driver.module_for_running_kernel", "driver.dkms.status", "driver.dkms.failure",
                           "kernel.release", "kernel.headers", "driver.kernel_module.loaded"),
        source=source, fix=fix,
    )]


@check("driver-health.module-for-kernel", requires=("driver.installed",), reads=READS, layers=("driver", "os"),
       codes=docs_for(DOCS, "driver.kernel_headers_missing", "driver.no_module_for_kernel"))
def module_for_kernel(ctx: CheckContext) -> List[Finding]:
    return _no_module_for_kernel(ctx.facts)  # it asks whether a driver is installed, or was left for this kernel


def _dkms_managed(facts: Facts, release: str) -> bool:
    """DKMS builds the nvidia module here: it says it installed one for the running kernel, or the running
    kernel's module lies where DKMS installs (updates/dkms)."""
    if any(isinstance(e, dict) and e.get("kernel") == release and str(e.get("state", "")).startswith("installed")
           for e in facts.items("driver.dkms.status")):
        return True
    fact = facts.get("driver.module_for_running_kernel")
    return fact is not None and fact.value is True and "/updates/dkms" in str(fact.source)


def _no_module_for_newer_kernel(facts: Facts) -> List[Finding]:
    release = facts.value("kernel.release")
    if not isinstance(release, str) or not release:
        return []
    missing: List[Dict[str, Any]] = [k for k in facts.items("driver.newer_kernels") if isinstance(k, dict)
                                     and not k.get("modules") and not k.get("dkms_installed")]
    failed = [k for k in missing if isinstance(k.get("dkms_failure"), dict)]
    if not missing or not (failed or _dkms_managed(facts, release)):
        return []
    newest = missing[-1]
    rel = str(newest.get("release"))
    got = newest.get("dkms_failure")
    failure: Dict[str, Any] = got if isinstance(got, dict) else {}
    module = "%s/%s" % (failure["module"], failure["version"]) if failure else "nvidia"
    said = ""
    if failure:
        why = "DKMS's build of %s for it failed" % module
        said = (" The build log %s says: '%s'." % (failure.get("log"), failure["reason"]) if failure.get("reason")
                else " See the build log %s." % failure.get("log"))
    elif newest.get("headers") is False:
        why = "its headers are not installed, so DKMS could not build the module"
    else:
        why = "DKMS has not built the module for it"
    others = ", ".join(str(k.get("release")) for k in missing[:-1])
    cmds = ["sudo dkms install %s -k %s" % (module if failure else "nvidia/<version>", rel)]
    if failure:
        cmds.insert(0, "less %s" % failure.get("log"))
    return [Finding(
        code="driver.no_module_for_installed_kernel", severity="warning", components=["driver", "kernel"],
        title="Kernel %s is installed but has no nvidia module (%s): after a reboot into it the NVIDIA driver "
              "does not load" % (rel, why),
        detail="The running kernel %s has its nvidia module, so the GPU works now. Kernel %s (%s) is newer, and "
               "boot loaders start the newest kernel by default, but its modules directory holds no nvidia module "
               "and DKMS did not install one for it%s.%s A build that fails for a new kernel usually means the "
               "driver branch does not support that kernel yet (or no longer gets fixes for new kernels: the "
               "legacy branches) or the kernel's headers or compiler are missing." % (
                   release, rel, newest.get("image"),
                   "; %s also lack%s one" % (others, "" if "," in others else "s") if others else "", said),
        evidence=_evidence(facts, "driver.newer_kernels", "driver.dkms.status", "kernel.release",
                           "driver.module_for_running_kernel"),
        source=_source("dkms_kernel"),
        fix=Fix(text="Keep booting %s (choose it in the boot menu, or make it the boot loader's default) until "
                     "the module builds for %s: read the build log, install the kernel's headers if they are "
                     "missing, update the driver to a release that supports the kernel, or hold the kernel "
                     "package at a release the driver builds for." % (release, rel), commands=cmds),
    )]


@check("driver-health.module-for-newer-kernel", requires=("driver.installed",), reads=READS,
       layers=("driver", "os"), codes=docs_for(DOCS, "driver.no_module_for_installed_kernel"))
def module_for_newer_kernel(ctx: CheckContext) -> List[Finding]:
    return _no_module_for_newer_kernel(ctx.facts) if _installed(ctx.facts) else []

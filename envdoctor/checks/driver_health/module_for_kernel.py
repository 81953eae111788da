"""No nvidia module built for the running kernel (DKMS built for another one, headers missing)."""

from __future__ import annotations

from typing import List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import rpm_tool
from . import DOCS, READS, _evidence, _family, _installed, _source


def _headers(family: str, tool: str = "dnf") -> List[str]:
    if family == "debian":
        return ['sudo apt-get install -y "linux-headers-$(uname -r)"']
    if family in ("rhel", "fedora"):
        return ['sudo %s install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)"' % tool]
    if family == "suse":
        return ["sudo zypper install -y kernel-default-devel"]
    return ['sudo apt-get install -y "linux-headers-$(uname -r)"   # Debian/Ubuntu',
            'sudo dnf install -y "kernel-devel-$(uname -r)"   # RHEL/Fedora']


def _no_module_for_kernel(facts: Facts) -> List[Finding]:
    if facts.value("driver.installed") is not True or facts.value("driver.kernel_module.loaded") is True:
        return []
    fact = facts.get("driver.module_for_running_kernel")
    if fact is None or not fact.known or fact.value is not False:
        return []
    release = facts.value("kernel.release") or "the running kernel"
    dkms = facts.items("driver.dkms.status")
    others = sorted({e.get("kernel", "") for e in dkms if isinstance(e, dict) and
                     str(e.get("state", "")).startswith("installed")} - {release})
    versions = sorted({e.get("version", "") for e in dkms if isinstance(e, dict) and e.get("version")})
    family = _family(facts)
    title = "No nvidia kernel module is built for the running kernel %s" % release
    if others:
        title += " (DKMS built nvidia %s only for %s)" % (", ".join(versions) or "?", ", ".join(others))
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
    return missing_headers + [Finding(
        code="driver.no_module_for_kernel", severity="error", components=["driver", "kernel"],
        title=title,
        detail="The machine booted kernel %s, but /lib/modules/%s holds no nvidia.ko and DKMS has not built one "
               "for it (usually a kernel update whose headers were not installed, so DKMS could not rebuild the "
               "module). Until it is built, the module cannot load and CUDA sees no GPU." % (release, release),
        evidence=_evidence(facts, "driver.module_for_running_kernel", "driver.dkms.status", "kernel.release",
                           "driver.kernel_module.loaded"),
        source=_source("headers"),
        fix=Fix(text="Install the headers of the running kernel and let DKMS build the module for it (or boot "
                     "the kernel it was built for).", commands=cmds),
    )]


@check("driver-health.module-for-kernel", requires=("driver.installed",), reads=READS, layers=("driver", "os"),
       codes=docs_for(DOCS, "driver.kernel_headers_missing", "driver.no_module_for_kernel"))
def module_for_kernel(ctx: CheckContext) -> List[Finding]:
    return _no_module_for_kernel(ctx.facts) if _installed(ctx.facts) else []

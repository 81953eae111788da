"""Secure Boot refusing an unsigned module, or one signed by a key that is not enrolled."""

from __future__ import annotations

from typing import List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from . import DOCS, READS, _driver_label, _evidence, _family, _installed, _source


def _secure_boot(facts: Facts) -> List[Finding]:
    if facts.value("driver.secure_boot") is not True:
        return []
    signed = facts.get("driver.module_signed")
    if signed is not None and signed.known and signed.value is True:
        return _key_not_enrolled(facts)
    if signed is None or not signed.known or signed.value is not False:
        return []
    loaded = facts.value("driver.kernel_module.loaded") is True
    return [Finding(
        code="driver.module_unsigned_secure_boot", severity="warning" if loaded else "error",
        components=["driver", "kernel"],
        title="Secure Boot is on, but the nvidia module of %s is not signed" % _driver_label(facts),
        detail=("With UEFI Secure Boot on, the kernel refuses modules not signed by an enrolled key "
                "(\"Key was rejected by service\" from modprobe)." +
                (" The module is loaded now (signature enforcement is off or it was loaded another way), but "
                 "it will be refused when enforcement applies." if loaded else
                 " That is why the module is not loaded.")),
        evidence=_evidence(facts, "driver.secure_boot", "driver.module_signed", "driver.kernel_module.loaded"),
        source=_source("secure_boot"),
        fix=Fix(text="Sign the module with a Machine Owner Key and enrol that key: mokutil asks for a one-time "
                     "password; at the next boot choose \"Enroll MOK\" in the blue MokManager screen and enter it. "
                     "Then rebuild (DKMS signs with the enrolled key). Or turn Secure Boot off in the firmware.",
                commands=["sudo mokutil --import /var/lib/dkms/mok.pub", "sudo reboot",
                          "sudo dkms autoinstall", "sudo modprobe nvidia"]),
    )]


def _key_not_enrolled(facts: Facts) -> List[Finding]:
    """Secure Boot on, the module signed, built for this kernel, and still not loaded: its signing key is not
    enrolled (certain when ``mokutil --test-key`` says so for the key DKMS signs with)."""
    if facts.value("driver.kernel_module.loaded") is not False or facts.value("driver.module_for_running_kernel") \
            is not True:
        return []
    keys = [k for k in facts.items("driver.mok_keys") if isinstance(k, dict)]
    if any(k.get("enrolled") is True for k in keys) and not any(k.get("enrolled") is False for k in keys):
        return []  # the key is enrolled: something else keeps the module out
    missing = [k for k in keys if k.get("enrolled") is False]
    key = str(missing[0]["path"]) if missing else "/var/lib/shim-signed/mok/MOK.der"
    signer = facts.value("driver.module_signer") or "a Machine Owner Key"
    ubuntu_like = _family(facts) == "debian"
    enrol = (["sudo update-secureboot-policy --enroll-key"] if ubuntu_like and key.startswith("/var/lib/shim-signed")
             else ["sudo mokutil --import %s" % key])
    return [Finding(
        code="driver.module_key_not_enrolled", severity="error" if missing else "warning",
        components=["driver", "kernel"],
        title="Secure Boot is on and the nvidia module of %s is signed (by %s), but %s: the kernel refuses it" % (
            _driver_label(facts), signer, "the signing key %s is not enrolled" % key if missing else
            "it is not loaded, so its signing key is most likely not enrolled"),
        detail="Under Secure Boot the kernel loads only modules signed by a key in the firmware's or shim's "
               "database; modprobe says \"Key was rejected by service\". DKMS signed the module with the machine's "
               "own key (MOK), which has to be enrolled once, at the next boot, in the blue MokManager screen.",
        evidence=_evidence(facts, "driver.secure_boot", "driver.module_signed", "driver.module_signer",
                           "driver.mok_keys", "driver.kernel_module.loaded", "driver.module_for_running_kernel"),
        source=_source("secure_boot"),
        fix=Fix(text="Enrol the signing key: the command asks for a one-time password; reboot, choose \"Enroll MOK\" "
                     "in MokManager, confirm and enter that password; the module then loads. (Or turn Secure Boot "
                     "off in the firmware.)",
                commands=enrol + ["sudo reboot", "mokutil --test-key %s" % key, "sudo modprobe nvidia"]),
    )]


@check("driver-health.secure-boot", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.module_unsigned_secure_boot", "driver.module_key_not_enrolled"))
def secure_boot(ctx: CheckContext) -> List[Finding]:
    return _secure_boot(ctx.facts) if _installed(ctx.facts) else []

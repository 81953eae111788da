"""Secure Boot refusing an unsigned module, or one signed by a key that is not enrolled."""

from __future__ import annotations

from typing import List, Optional

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


def _signer_enrolled(signer: str, enrolled: List[str]) -> bool:
    """Whether the module's signer (the common name ``modinfo -F signer`` prints) is one of the enrolled keys."""
    want = signer.strip().lower()
    return any(want == name.strip().lower() for name in enrolled)


def _built_here(facts: Facts) -> bool:
    """The module was built and signed on this machine (DKMS, akmods): DKMS installed it for the running kernel, it
    lies where DKMS installs, or a local module-signing key (MOK) is there."""
    release = facts.value("kernel.release")
    if any(isinstance(e, dict) and e.get("kernel") == release and str(e.get("state", "")).startswith("installed")
           for e in facts.items("driver.dkms.status")):
        return True
    fact = facts.get("driver.module_for_running_kernel")
    if fact is not None and "/updates/dkms" in str(fact.source):
        return True
    return any(isinstance(k, dict) for k in facts.items("driver.mok_keys"))


def _key_not_enrolled(facts: Facts) -> List[Finding]:
    """Secure Boot on, the module signed, built for this kernel, and still not loaded: its signing key is not
    enrolled (certain when ``mokutil --test-key`` says so for the key DKMS signs with; for a module a package brought
    prebuilt and signed, its signer is compared with the enrolled keys ``mokutil --list-enrolled`` names)."""
    if facts.value("driver.kernel_module.loaded") is not False or facts.value("driver.module_for_running_kernel") \
            is not True:
        return []
    signer = facts.value("driver.module_signer")
    listed = facts.get("driver.mok_enrolled")
    enrolled = [str(n) for n in listed.value] if listed is not None and listed.known and \
        isinstance(listed.value, list) else None
    if isinstance(signer, str) and signer and enrolled is not None and _signer_enrolled(signer, enrolled):
        return []  # the signer's key is enrolled: something else keeps the module out
    if not _built_here(facts):
        return _vendor_key_not_enrolled(facts, signer if isinstance(signer, str) and signer else None, enrolled)
    keys = [k for k in facts.items("driver.mok_keys") if isinstance(k, dict)]
    if any(k.get("enrolled") is True for k in keys) and not any(k.get("enrolled") is False for k in keys):
        return []  # the key is enrolled: something else keeps the module out
    missing = [k for k in keys if k.get("enrolled") is False]
    key = str(missing[0]["path"]) if missing else "/var/lib/shim-signed/mok/MOK.der"
    signer = signer or "a Machine Owner Key"
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
                           "driver.mok_keys", "driver.mok_enrolled", "driver.kernel_module.loaded",
                           "driver.module_for_running_kernel"),
        source=_source("secure_boot"),
        fix=Fix(text="Enrol the signing key: the command asks for a one-time password; reboot, choose \"Enroll MOK\" "
                     "in MokManager, confirm and enter that password; the module then loads. (Or turn Secure Boot "
                     "off in the firmware.)",
                commands=enrol + ["sudo reboot", "mokutil --test-key %s" % key, "sudo modprobe nvidia"]),
    )]


#: NVIDIA's precompiled kmod-nvidia packages for RHEL are signed with NVIDIA's own key (signer "NVIDIA"), whose
#: public half NVIDIA publishes beside the packages in its CUDA repository for each RHEL release, as
#: NVIDIA<year>-public_key.der, to enrol with mokutil (NVIDIA/yum-packaging-precompiled-kmod UEFI.md, "Enroll key in
#: MOK"; kmod-nvidia.spec signs with sign-file and the build's public_key.der, which the package does not install).
NVIDIA_KEY_HINT = ("NVIDIA publishes its module-signing key for its precompiled RHEL packages beside them in its "
                   "CUDA repository (https://developer.download.nvidia.com/compute/cuda/repos/rhel<N>/x86_64/, "
                   "NVIDIA<year>-public_key.der)")


def _vendor_key_not_enrolled(facts: Facts, signer: Optional[str], enrolled: Optional[List[str]]) -> List[Finding]:
    """The module came prebuilt and signed in a package (no DKMS build, no local signing key): its vendor's key has
    to be enrolled."""
    who = signer or "its vendor's key"
    nvidia = signer is not None and "nvidia" in signer.lower() and _family(facts) in ("rhel", "fedora")
    state = ("%s is not among the enrolled Machine Owner Keys (%s)" % (who, ", ".join(enrolled) or "none")
             if enrolled is not None else "it is not loaded, so that key is most likely not enrolled")
    return [Finding(
        code="driver.module_key_not_enrolled", severity="warning",
        components=["driver", "kernel"],
        title="Secure Boot is on and the nvidia module of %s came prebuilt, signed by %s, but %s: the kernel refuses "
              "it" % (_driver_label(facts), who, state),
        detail="Under Secure Boot the kernel loads only modules signed by a key it trusts: the distribution's own "
               "kernel key, the firmware's database or an enrolled Machine Owner Key (MOK); modprobe says \"Key was "
               "rejected by service\". This module was not built and signed on this machine (no DKMS build, no local "
               "signing key): its package brought it signed by %s, whose public key has to be enrolled once, at "
               "the next boot, in the blue MokManager screen.%s" % (
                   signer if signer else "its vendor's key",
                   " " + NVIDIA_KEY_HINT + "." if nvidia else ""),
        evidence=_evidence(facts, "driver.secure_boot", "driver.module_signed", "driver.module_signer",
                           "driver.mok_enrolled", "driver.kernel_module.loaded", "driver.module_for_running_kernel",
                           "driver.dkms.status"),
        source=_source("secure_boot"),
        fix=Fix(text="Get the public key (.der) of the module's signer%s from the package's vendor and enrol it: the "
                     "command asks for a one-time password; reboot, choose \"Enroll MOK\" in MokManager, confirm and "
                     "enter that password; the module then loads. (Or install a module signed by the distribution's "
                     "own key where it ships one, or turn Secure Boot off in the firmware.)" % (
                         " (%s)" % signer if signer else ""),
                commands=["sudo mokutil --import <public_key.der>", "sudo reboot", "mokutil --list-enrolled",
                          "sudo modprobe nvidia"]),
    )]


@check("driver-health.secure-boot", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.module_unsigned_secure_boot", "driver.module_key_not_enrolled"))
def secure_boot(ctx: CheckContext) -> List[Finding]:
    return _secure_boot(ctx.facts) if _installed(ctx.facts) else []

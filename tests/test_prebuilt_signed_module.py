"""A nvidia module a package brought prebuilt and signed (NVIDIA's precompiled kmod-nvidia for RHEL): found where the
package puts it, under /lib/modules or /usr/lib/modules, and judged under Secure Boot by its signer against the
enrolled keys."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts
from envdoctor.probes import run_probes
from envdoctor.probes.driver import SECURE_BOOT_VAR, mok_names
from tests.test_probe_driver import SB_OFF, SB_ON, machine, nvml_error

REL = "5.14.0-611.24.1.el9_7.x86_64"
#: NVIDIA/yum-packaging-precompiled-kmod kmod-nvidia.spec: kmod_module_path
#: /lib/modules/<kernel>.<arch>/extra/drivers/video/nvidia, modules nvidia nvidia-uvm nvidia-modeset nvidia-drm
KMOD_DIR = "extra/drivers/video/nvidia"
OS_RELEASE = 'NAME="Red Hat Enterprise Linux"\nID="rhel"\nID_LIKE="fedora"\nVERSION_ID="9.7"\n'
LDCONFIG = ("2 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib64/libnvidia-ml.so.1\n"
            "\tlibcuda.so.1 (libc6,x86-64) => /lib64/libcuda.so.1\n")
#: `mokutil --list-enrolled` (OpenSSL's text form of each certificate, a long name wrapped; the layout of the
#: listing in Oracle's "Removing keys using mokutil"), here with a DKMS key and a distribution's key enrolled.
LIST_ENROLLED = """[key 1]
SHA1 Fingerprint: 5f:f4:35:5a:49:ec:8d:f1:56:d1:ee:9b:ac:f6:19:54:08:77:d3:59
Certificate:
    Data:
        Version: 3 (0x2)
        Serial Number:
            21:b3:c1:01:19:dc:af:44:43:15:8b:0f:33:6b:18:be
    Signature Algorithm: sha256WithRSAEncryption
        Issuer: C=US, O=Example Corporation, OU=Example Trust Network,
            CN=Example Code Signing CA - G2
        Validity
            Not Before: Jun 30 00:00:00 2020 GMT
        Subject: C=US, ST=California,
            O=Example Inc., OU=Drivers, CN=Example Inc.
        Subject Public Key Info:
            Public Key Algorithm: rsaEncryption
[key 2]
SHA1 Fingerprint: 0a:1b
Certificate:
    Data:
        Issuer: CN = DKMS module signing key
        Validity
        Subject: CN = DKMS module signing key
"""


def rhel_machine(root: str = "/usr/lib/modules", sb: str = SB_ON, signer: str = "NVIDIA\n",
                 enrolled: Optional[str] = None, extra: Optional[List[Dict[str, Any]]] = None):
    files = {"/etc/os-release": OS_RELEASE, "/usr/sbin/ldconfig": "",
             "/usr/lib64/libnvidia-ml.so.590.48.01": "", "/usr/lib64/libcuda.so.590.48.01": "",
             "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
             "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
             "/sys/bus/pci/devices/0000:01:00.0/device": "0x24b0\n",
             "/usr/lib/modules/%s/vmlinuz" % REL: ""}
    files.update({"%s/%s/%s/%s.ko" % (root, REL, KMOD_DIR, m): "" for m in ("nvidia", "nvidia-uvm", "nvidia-drm")})
    commands = [{"argv": ["/usr/sbin/ldconfig", "-p"], "stdout": LDCONFIG},
                {"argv": ["modinfo", "-F", "signer", "nvidia"], "stdout": signer}]
    if enrolled is not None:
        commands.append({"argv": ["mokutil", "--list-enrolled"], "stdout": enrolled})
    commands += extra or []
    efi = {"/sys": ["firmware"], "/sys/firmware": ["efi"], "/sys/firmware/efi": ["efivars"]}
    return machine(files=files, dirs=efi, commands=commands, nvml=nvml_error("NVML_ERROR_DRIVER_NOT_LOADED", 9),
                   release=REL, b64={SECURE_BOOT_VAR: sb})


def facts_of(host) -> Facts:
    return Facts([x for r in run_probes(host, only=["os", "driver", "gpu"]) for x in r.facts])


def findings(host) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(facts_of(host), []))}


def test_a_prebuilt_module_under_usr_lib_modules_is_the_running_kernels_module_and_needs_no_headers():
    facts = facts_of(rhel_machine(sb=SB_OFF))
    fact = facts.get("driver.module_for_running_kernel")
    assert fact.value is True and fact.source == "dir:/usr/lib/modules/%s/%s" % (REL, KMOD_DIR)
    assert "kernel.headers" not in facts  # the module is there: no build, no headers needed
    found = findings(rhel_machine(sb=SB_OFF))
    assert "driver.no_module_for_kernel" not in found and "driver.kernel_headers_missing" not in found


def test_a_prebuilt_module_under_lib_modules_is_found_as_before():
    facts = facts_of(rhel_machine(root="/lib/modules", sb=SB_OFF))
    assert facts.value("driver.module_for_running_kernel") is True
    assert facts.get("driver.module_for_running_kernel").source == "dir:/lib/modules/%s/%s" % (REL, KMOD_DIR)


def test_no_module_anywhere_still_says_so_with_the_headers():
    host = rhel_machine(sb=SB_OFF)
    for path in [p for p in host.doc["files"] if KMOD_DIR in p]:
        del host.doc["files"][path]
    host.doc["dirs"]["/usr/lib/modules/%s/%s" % (REL, KMOD_DIR)] = {"entries": []}
    found = findings(host)
    assert found["driver.no_module_for_kernel"].severity == "error"
    assert found["driver.kernel_headers_missing"].severity == "error"


def test_secure_boot_refuses_a_prebuilt_module_signed_by_a_key_not_enrolled():
    found = findings(rhel_machine(enrolled=LIST_ENROLLED))
    f = found["driver.module_key_not_enrolled"]
    assert f.severity == "error" and "Secure Boot" in f.title and "prebuilt, signed by NVIDIA" in f.title
    assert "not among the enrolled Machine Owner Keys" in f.title and "DKMS module signing key" in f.title
    assert "NVIDIA<year>-public_key.der" in f.detail and "MokManager" in f.detail
    assert f.fix.commands[0] == "sudo mokutil --import <public_key.der>"
    assert not {"driver.no_module_for_kernel", "driver.kernel_headers_missing", "driver.not_loaded",
                "gpu.not_driven"} & set(found)


def test_secure_boot_and_a_prebuilt_module_without_the_enrolled_list_is_the_likely_cause():
    found = findings(rhel_machine())
    f = found["driver.module_key_not_enrolled"]
    # the cause only inferred (a warning on its own), but the GPU is not driven: an error
    assert f.severity == "error" and "most likely not enrolled" in f.title
    assert "/var/lib/shim-signed" not in " ".join(f.fix.commands) and "DKMS signed" not in f.detail


def test_the_signers_key_enrolled_is_quiet():
    enrolled = LIST_ENROLLED + "[key 3]\n        Issuer: O=NVIDIA, CN=NVIDIA\n        Subject: O=NVIDIA, CN=NVIDIA\n"
    found = findings(rhel_machine(enrolled=enrolled))
    assert "driver.module_key_not_enrolled" not in found


def test_secure_boot_off_is_quiet():
    found = findings(rhel_machine(sb=SB_OFF, enrolled=LIST_ENROLLED))
    assert "driver.module_key_not_enrolled" not in found and "driver.module_unsigned_secure_boot" not in found


def test_the_enrolled_keys_common_names_from_the_certificates_text():
    assert mok_names(LIST_ENROLLED) == ["Example Code Signing CA - G2", "Example Inc.", "DKMS module signing key"]
    assert mok_names("MokListRT is empty\n") == []
    facts = facts_of(rhel_machine(enrolled="MokListRT is empty\n"))
    assert facts.value("driver.mok_enrolled") == []

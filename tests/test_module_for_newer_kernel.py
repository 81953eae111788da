"""A kernel newer than the running one is installed and DKMS built no nvidia module for it
(``driver.no_module_for_installed_kernel``): the next boot comes up without the driver.

Fixture: the corpus machine of void-linux/void-packages#55238 (Void, nvidia390-dkms 390.157, running 6.6.87_1 with
its DKMS module, 6.6.89_1 installed: its image in /boot, its modules directory without an nvidia module, and the
make.log of the failed build naming its header tree). Quiet variants: the new kernel has its module, DKMS says it
installed one, the directory is a leftover of a removed kernel (no image), the driver is not DKMS-managed.
"""

from __future__ import annotations

import base64

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b50-void-linux66-68987-installed-nvidia390-dkms-39015701-fails-for-new-kernel-running-68987-still-loaded"
CODE = "driver.no_module_for_installed_kernel"
LOG = "/var/lib/dkms/nvidia/390.157/build/make.log"
NEW = "/usr/lib/modules/6.6.89_1"


def _found(doc):
    return [f for f in snapshot_findings(doc) if f.code == CODE]


def _set_dkms_status(doc, stdout: str, returncode: int = 0) -> None:
    for c in doc["commands"]:
        if c["argv"] == ["dkms", "status"]:
            c["stdout"], c["returncode"] = stdout, returncode


def _add_file(doc, path: str, entry) -> None:
    doc["files"][path] = entry
    parts = path.strip("/").split("/")
    for i in range(len(parts)):
        d = "/" + "/".join(parts[:i])
        entries = doc["dirs"].setdefault(d, {"entries": []})["entries"]
        if parts[i] not in entries:
            entries.append(parts[i])


def test_a_newer_kernel_dkms_failed_to_build_for_is_named_with_the_logs_reason_and_the_kernel_to_keep() -> None:
    found = _found(corpus_snapshot(CASE))
    assert len(found) == 1 and found[0].severity == "warning"
    f = found[0]
    assert "6.6.89_1" in f.title and "nvidia/390.157" in f.title and "failed" in f.title
    assert LOG in f.detail and "Error 2" in f.detail and "6.6.87_1" in f.detail
    assert "Keep booting 6.6.87_1" in f.fix.text
    assert "sudo dkms install nvidia/390.157 -k 6.6.89_1" in f.fix.commands


def test_a_compiler_error_in_the_log_is_the_reason_given() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"][LOG] = {"text": "DKMS make.log for nvidia-390.157 for kernel 6.6.89_1 (x86_64)\n"
                                 "nvidia/os-interface.c:12:10: error: implicit declaration of function 'foo'\n"
                                 "make: *** [Makefile:81: modules] Error 2\n"}
    found = _found(doc)
    assert len(found) == 1 and "implicit declaration of function 'foo'" in found[0].detail


def test_a_log_of_another_kernels_build_is_not_the_reason() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"][LOG] = {"text": "DKMS make.log for nvidia-390.157 for kernel 6.6.87_1 (x86_64)\nok\n"}
    found = _found(doc)  # still DKMS-managed (the running kernel's module is DKMS's): said without a log
    assert len(found) == 1 and "DKMS has not built the module" in found[0].title
    assert LOG not in found[0].detail


def test_a_missing_unreadable_or_binary_log_still_gives_a_clear_finding() -> None:
    for entry in (None, {"error": "EACCES", "message": "Permission denied"}, {"text": ""},
                  {"base64": base64.b64encode(b"\x00\xff\xfe garbage 6.6.89_1").decode("ascii")}):
        doc = corpus_snapshot(CASE)
        if entry is None:
            doc["files"].pop(LOG)
        else:
            doc["files"][LOG] = entry
        found = _found(doc)
        assert len(found) == 1 and "6.6.89_1" in found[0].title, entry


def test_missing_headers_of_the_new_kernel_are_the_reason_when_no_log_names_it() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"].pop(LOG)
    doc["links"].pop(NEW + "/build")
    doc["dirs"].pop(NEW + "/build")
    doc["files"].pop(NEW + "/build/Makefile")
    doc["dirs"][NEW]["entries"].remove("build")
    found = _found(doc)
    assert len(found) == 1 and "headers are not installed" in found[0].title


def test_quiet_when_the_newer_kernel_has_its_module_or_dkms_installed_one() -> None:
    doc = corpus_snapshot(CASE)
    _add_file(doc, NEW + "/updates/dkms/nvidia.ko.zst", {"text": ""})
    assert _found(doc) == []
    doc = corpus_snapshot(CASE)
    _set_dkms_status(doc, "nvidia/390.157, 6.6.87_1, x86_64: installed\nnvidia/390.157, 6.6.89_1, x86_64: installed\n")
    assert _found(doc) == []


def test_quiet_for_a_modules_directory_a_removed_kernel_left_behind() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"].pop("/boot/vmlinuz-6.6.89_1")
    doc["dirs"]["/boot"]["entries"].remove("vmlinuz-6.6.89_1")
    assert _found(doc) == []


def test_quiet_when_the_running_kernel_is_the_newest() -> None:
    doc = corpus_snapshot(CASE)
    doc["uname"]["release"] = "6.6.89_1"
    assert _found(doc) == []


def test_quiet_when_the_driver_is_not_dkms_managed() -> None:
    doc = corpus_snapshot(CASE)
    doc["files"].pop(LOG)
    _set_dkms_status(doc, "", returncode=127)
    old = "/usr/lib/modules/6.6.87_1"
    doc["files"].pop(old + "/updates/dkms/nvidia.ko")
    doc["dirs"][old]["entries"].remove("updates")
    for d in (old + "/updates/dkms", old + "/updates"):  # the folders go with the module (a consistent machine)
        doc["dirs"].pop(d, None)
    _add_file(doc, old + "/kernel/nvidia-390/nvidia.ko", {"text": ""})
    assert _found(doc) == []

"""No nvidia module for the running kernel where the driver's user space never got installed
(``driver.no_module_for_kernel`` rather than ``driver.not_installed``): DKMS holds the driver (``dkms status``
lists it added, or its failed build left make.log for the running kernel), so the machine is told the module did not
build for that kernel, naming it, and not merely that no driver is installed.

Fixture: the corpus machine of Azure/aks-engine#3269 (Ubuntu 18.04, kernel 5.3.0-1020-azure with its headers, DKMS
with nvidia 418.40.04 added and its make.log for that kernel, no driver libraries). Quiet variants: no DKMS trace of
the driver, or a build log of another kernel only: the driver is simply not installed.
"""

from __future__ import annotations

from envdoctor.probes.driver import parse_dkms_status

from .conftest import corpus_snapshot, snapshot_findings

CASE = "b81-aks-engine-ubuntu1804-kernel-530-1020-azure-driver4184004-dkms-build-fails-no-module"
KERNEL = "5.3.0-1020-azure"
LOG = "/var/lib/dkms/nvidia/418.40.04/build/make.log"


def _codes(doc):
    return {f.code: f for f in snapshot_findings(doc)}


def _set_dkms_status(doc, stdout: str) -> None:
    for c in doc["commands"]:
        if c["argv"] == ["dkms", "status"]:
            c["stdout"], c["returncode"] = stdout, 0


def test_dkms_status_lists_modules_added_for_no_kernel_in_both_formats():
    text = ("nvidia, 418.40.04: added\n"
            "nvidia/550.54.15, 5.15.0-105-generic, x86_64: installed\n"
            "nvidia/565.57.01: added\n"
            "virtualbox, 6.1.38: added\n")
    assert parse_dkms_status(text) == [
        {"module": "nvidia", "version": "418.40.04", "kernel": "", "arch": "", "state": "added"},
        {"module": "nvidia", "version": "550.54.15", "kernel": "5.15.0-105-generic", "arch": "x86_64",
         "state": "installed"},
        {"module": "nvidia", "version": "565.57.01", "kernel": "", "arch": "", "state": "added"}]


def test_a_failed_dkms_build_for_the_running_kernel_is_said_naming_the_kernel_not_driver_not_installed():
    found = _codes(corpus_snapshot(CASE))
    assert "driver.not_installed" not in found
    f = found["driver.no_module_for_kernel"]
    assert f.severity == "error"
    assert KERNEL in f.title and "nvidia/418.40.04" in f.title and "failed" in f.title
    assert LOG in f.detail and "libraries are not installed" in f.detail
    assert f.fix.commands == ["less " + LOG, "sudo dkms install nvidia/418.40.04 -k " + KERNEL]
    assert "driver.kernel_headers_missing" not in found  # the headers are there: the build itself failed


def test_the_logs_compiler_error_is_the_reason_given():
    doc = corpus_snapshot(CASE)
    doc["files"][LOG] = {"text": "DKMS make.log for nvidia-418.40.04 for kernel %s (x86_64)\n"
                                 "nvidia/os-interface.c:12:10: error: implicit declaration of function 'foo'\n"
                                 "make: *** [Makefile:81: modules] Error 2\n" % KERNEL}
    f = _codes(doc)["driver.no_module_for_kernel"]
    assert "implicit declaration of function 'foo'" in f.detail


def test_a_module_dkms_added_but_never_built_is_said_without_a_log():
    doc = corpus_snapshot(CASE)
    doc["files"].pop(LOG)
    found = _codes(doc)
    f = found["driver.no_module_for_kernel"]
    assert KERNEL in f.title and "nvidia 418.40.04 added but built for no kernel" in f.title
    assert "driver.not_installed" not in found


def test_quiet_without_any_dkms_trace_of_the_driver():
    doc = corpus_snapshot(CASE)
    doc["files"].pop(LOG)
    _set_dkms_status(doc, "")
    found = _codes(doc)
    assert "driver.no_module_for_kernel" not in found and found["driver.not_installed"].severity == "error"
    # a build log of another kernel's build only: not this kernel's failure
    doc = corpus_snapshot(CASE)
    doc["files"][LOG] = {"text": "DKMS make.log for nvidia-418.40.04 for kernel 4.15.0-1082-azure (x86_64)\nok\n"}
    _set_dkms_status(doc, "")
    found = _codes(doc)
    assert "driver.no_module_for_kernel" not in found and "driver.not_installed" in found

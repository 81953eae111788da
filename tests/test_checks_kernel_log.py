"""The hardware layers' checks the real-world corpus showed missing or crashing: GPUs the kernel driver failed to
initialise (its log), the device nodes CUDA needs, and a fix for every soname shape a framework dlopens."""

from __future__ import annotations

import json
from typing import Dict, List

import pytest

from envdoctor.checks import CheckContext
from envdoctor.checks.libraries import _pip_fix_for
from envdoctor.facts import Facts, ok
from envdoctor.findings import Finding
from tests.conftest import probe_facts


@pytest.mark.parametrize("soname,major", [
    ("libcudnn.so", "8"),              # the unversioned development link PaddlePaddle dlopens: its own cuDNN's
    ("libcudnn.so.8", "8"),
    ("libcudnn.so.9.1.0", "9"),
    ("libcudnn.so.x", "8"),            # garbled: the framework's own cuDNN decides
    ("libcudnn.so.", "8"),
])
def test_cudnn_fix_never_crashes_on_a_soname_shape(soname: str, major: str) -> None:
    facts = Facts([ok("framework.paddle", {"version": "2.5.1.post116", "cuda": "11.6", "cudnn": "8.4.0",
                                           "build": "cuda"}, "file:paddle/version/__init__.py")])
    fix = _pip_fix_for(facts, "paddle", soname)
    assert fix.commands and fix.commands[0].endswith("'nvidia-cudnn-cu11>=%s,<%d'" % (major, int(major) + 1))


def test_cudnn_fix_without_any_version_names_no_made_up_major() -> None:
    facts = Facts([ok("framework.paddle", {"version": "2.5.1", "build": "cuda"}, "file:paddle/version/__init__.py")])
    fix = _pip_fix_for(facts, "paddle", "libcudnn.so")
    assert not fix.commands and "libcudnn.so" in fix.text


@pytest.mark.parametrize("soname", ["libcudnn", "libcudnn_ops_infer.so.8", "libcublasLt.so", "libnvinfer.so.so",
                                    "", ".so.", "libfoo.so.99999999999999999999"])
def test_a_fix_is_written_for_any_soname(soname: str) -> None:
    facts = Facts([ok("framework.paddle", {"version": "2.5.1", "cuda": "11.6", "build": "cuda"}, "file:x")])
    assert _pip_fix_for(facts, "paddle", soname).text


# -- /dev/nvidia-uvm on a host whose container runtime cannot load nvidia_uvm ---------------------

def _uvm_host(dev: List[str], runtime_dirs: Dict[str, List[str]], path: str = "/usr/bin:/bin"):
    """The healthy 550 machine of tests/test_probe_driver.py after a reboot: /dev as listed (the nodes the
    driver's udev rules and nvidia-persistenced made), plus the runtime's program or configuration dir."""
    from tests.test_probe_driver import healthy_550

    host = healthy_550(dirs=dict({"/dev": dev}, **runtime_dirs))
    host.doc.setdefault("environ", {})["PATH"] = path
    return type(host)(host.doc)


def _driver_findings(host) -> List[Finding]:
    from envdoctor.checks.driver_health import driver_health

    return list(driver_health(CheckContext(probe_facts(host), [])))


AFTER_REBOOT = ["null", "nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "zero"]  # NVIDIA/enroot#106


@pytest.mark.parametrize("runtime_dirs,name", [
    ({"/usr/bin": ["enroot", "python3"]}, "enroot"),                 # the program on PATH
    ({"/etc/enroot": ["enroot.conf"]}, "enroot"),                    # only its configuration (PATH of a job)
    ({"/usr/local/bin": ["apptainer"]}, "Apptainer"),
])
def test_uvm_missing_after_reboot_on_an_unprivileged_runtime_host(runtime_dirs: Dict[str, List[str]],
                                                                  name: str) -> None:
    found = [f for f in _driver_findings(_uvm_host(AFTER_REBOOT, runtime_dirs, "/usr/local/bin:/usr/bin"))
             if f.code == "driver.device_nodes_missing"]
    assert [f.severity for f in found] == ["warning"]
    f = found[0]
    assert "/dev/nvidia-uvm" in f.title and "/dev/nvidia-uvm-tools" in f.title and name in f.title
    assert "sudo nvidia-modprobe -u -c=0" in f.fix.commands
    assert any("modules-load.d" in c for c in f.fix.commands)  # at every boot, not just now


@pytest.mark.parametrize("dev,runtime_dirs", [
    (AFTER_REBOOT, {}),                                                      # CUDA loads it on first use itself
    (AFTER_REBOOT + ["nvidia-uvm", "nvidia-uvm-tools"], {"/usr/bin": ["enroot"]}),  # loaded at boot: fine
])
def test_uvm_quiet_where_cuda_creates_it_or_it_exists(dev: List[str], runtime_dirs: Dict[str, List[str]]) -> None:
    assert [f.code for f in _driver_findings(_uvm_host(dev, runtime_dirs))] == []


# -- the kernel log: bounded, hostile-input-safe, only the driver's lines ---------------------------

def test_driver_log_lines_keeps_the_driver_lines_only_bounded_and_escaped() -> None:
    from envdoctor.host.base import KERNEL_LOG_LINE_CHARS, KERNEL_LOG_MAX_LINES, driver_log_lines

    text = "\n".join([
        "e1000e 0000:00:1f.6 eth0: renamed from enp0s31f6",          # another device: never kept
        "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)",
        "pci 0000:01:00.0: BAR 1: no space for [mem size 0x800000000 64bit pref]",
        "NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.\x1b[2J\x00",
        "audit: user=alice host=secret-host",
    ])
    kept = driver_log_lines(text)
    assert kept[0].startswith("NVRM: GPU 0000:01:00.0") and kept[1].startswith("pci 0000:01:00.0: BAR 1")
    assert kept[2].endswith("\\x1b[2J\\x00") and len(kept) == 3  # control characters escaped, not raw
    # a huge log: the last lines, each cut short, in bounded time and memory
    flood = ("NVRM: Xid (PCI:0000:01:00): 13, " + "x" * 5000 + "\n") * 20000 + "BAR 1" * 200000
    kept = driver_log_lines(flood)
    assert len(kept) == KERNEL_LOG_MAX_LINES and all(len(x) <= KERNEL_LOG_LINE_CHARS for x in kept)


def test_live_host_records_only_the_driver_lines_and_the_replay_agrees(tmp_path, monkeypatch) -> None:
    # a real program on PATH standing in for dmesg (the real one needs root where dmesg_restrict is set)
    import os

    from envdoctor.host.base import KERNEL_LOG_ARGV
    from envdoctor.host.live import LiveHost
    from envdoctor.host.privacy import Scrubber
    from envdoctor.host.snapshot import SnapshotHost, document_from_host

    dmesg = tmp_path / "dmesg"
    dmesg.write_text("#!/bin/sh\nprintf 'wlan0: associated with 10.1.2.3\\nNVRM: GPU 0000:01:00.0: RmInitAdapter "
                     "failed! (0x22:0x56:884)\\n'\n")
    os.chmod(str(dmesg), 0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    host = LiveHost(timeout=5)
    res = host.kernel_log()
    assert res.ok and res.stdout == "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)\n"
    doc = document_from_host(host, Scrubber(), "test")
    recorded = [c for c in doc["commands"] if tuple(c["argv"]) == KERNEL_LOG_ARGV]
    assert len(recorded) == 1 and "10.1.2.3" not in recorded[0]["stdout"]
    assert SnapshotHost(doc).kernel_log().stdout == res.stdout


def _kernel_log_fact(command: Dict[str, object]):
    from envdoctor.host.base import KERNEL_LOG_ARGV
    from envdoctor.probes.driver import _kernel_log
    from tests.conftest import make_host

    return _kernel_log(make_host(commands=[dict(command, argv=list(KERNEL_LOG_ARGV))]))


def test_kernel_log_unreadable_says_why() -> None:
    fact = _kernel_log_fact({"returncode": 1, "stderr": "dmesg: read kernel buffer failed: Operation not permitted\n"})
    assert not fact.known and "root" in fact.reason
    xid = "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus."
    fact = _kernel_log_fact({"returncode": 0, "stdout": xid + "\n"})
    assert fact.known and fact.value == [xid]


# -- gpu.init_failed: the driver is bound to a GPU it could not bring up -----------------------------

RM_5090 = ["NVRM: GPU 0000:01:00.0: rm_init_adapter failed, device minor number 0",
           "NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:884)"]  # NVIDIA/open-gpu-kernel-modules#862


def _verdict(bound: List[str], answered: Dict[int, str], log: object) -> Dict[str, List[Finding]]:
    from envdoctor.checks.gpu_verdict import gpu_init_failed, gpu_missing
    from envdoctor.facts import Fact

    facts = [ok("gpu.count", len(answered), "nvml:device_count"),
             ok("gpu.pci_devices", [{"bus_id": b, "driver": "nvidia"} for b in bound], "dir:/sys/bus/pci/devices")]
    facts += [ok("gpu.%d.pci_bus_id" % i, b, "nvml:device.%d.pci_bus_id" % i) for i, b in answered.items()]
    facts.append(ok("driver.kernel_log", log, "command:dmesg") if isinstance(log, list) else
                 Fact("driver.kernel_log", None, "command:dmesg", "unknown", "only root may read the kernel log"))
    ctx = CheckContext(Facts(facts), [])
    out: Dict[str, List[Finding]] = {}
    for f in list(gpu_init_failed(ctx)) + list(gpu_missing(ctx)):
        out.setdefault(f.code, []).append(f)
    return out


def test_init_failed_names_the_gpu_the_driver_message_and_the_checklist() -> None:
    found = _verdict(["0000:01:00.0"], {}, RM_5090)
    assert list(found) == ["gpu.init_failed"]  # not also gpu.missing: one cause, said once
    f = found["gpu.init_failed"][0]
    assert f.severity == "error" and "0000:01:00.0" in f.title and "RmInitAdapter failed! (0x22:0x56:884)" in f.title
    assert "Resizable BAR" in f.fix.text and "Above 4G Decoding" in f.fix.text
    assert all(line in f.detail for line in RM_5090)


@pytest.mark.parametrize("extra,cause_words", [
    (["NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:",
      "NVRM: BAR1 is 0M @ 0x0 (PCI:0000:01:00.0)"], "Above 4G Decoding"),
    (["pci 0000:01:00.0: BAR 1: no space for [mem size 0x800000000 64bit pref]"], "64-bit MMIO"),
    (["NVRM: GPU 0000:01:00.0: GPU does not have the necessary power cables connected."], "auxiliary power"),
    (["NVRM: RmInitAdapter: Cannot initialize GSP firmware RM"], "GSP"),
])
def test_init_failed_fix_follows_the_cause_the_kernel_names(extra: List[str], cause_words: str) -> None:
    f = _verdict(["0000:01:00.0"], {}, extra + RM_5090)["gpu.init_failed"][0]
    assert cause_words in f.fix.text


def test_a_gpu_the_branch_does_not_support_is_its_own_finding_not_an_init_failure() -> None:
    from envdoctor.checks.kernel_log import kernel_log

    # the lines as the driver prints them (osapi.c: one message over several lines)
    log = ["NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2b85)",
           "NVRM: installed in this system is not supported by the",
           "NVRM: NVIDIA 535.183.01 driver release."] + RM_5090
    assert _verdict(["0000:01:00.0"], {}, log) == {}  # gpu.init_failed stays quiet: the cause is the branch
    facts = Facts([ok("gpu.count", 0, "nvml:device_count"), ok("driver.kernel_module.loaded", True, "file:/proc"),
                   ok("gpu.pci_devices", [{"bus_id": "0000:01:00.0", "driver": "nvidia", "device_id": "10de:2b85"}],
                      "dir:/sys/bus/pci/devices"), ok("driver.kernel_log", log, "command:dmesg")])
    found = list(kernel_log(CheckContext(facts, [])))
    assert [f.code for f in found] == ["driver.gpu_not_supported_by_branch"]
    f = found[0]
    assert f.severity == "error" and "NVIDIA GeForce RTX 5090" in f.title and "535.183.01" in f.detail
    assert "branch whose supported-GPU list has this GPU" in f.fix.text


def test_old_driver_lines_without_an_address_belong_to_the_only_missing_gpu() -> None:
    # driver 390-era form: no bus address in the line
    log = ["NVRM: RmInitAdapter failed! (0x26:0xffff:1227)",
           "NVRM: rm_init_adapter failed for device bearing minor number 0"]
    found = _verdict(["0000:01:00.0", "0000:02:00.0"], {0: "0000:02:00.0"}, log)
    assert [f.title.split()[1] for f in found["gpu.init_failed"]] == ["0000:01:00.0"]
    # two missing: an unnamed line cannot be pinned on either, gpu.missing says which are missing
    found = _verdict(["0000:01:00.0", "0000:02:00.0"], {}, log)
    assert list(found) == ["gpu.missing"]


def test_init_failed_quiet_where_the_gpu_answers_or_the_log_is_unread() -> None:
    # an old failure in the log of a GPU that came up later (NVML answers for it): nothing to say
    assert _verdict(["0000:01:00.0"], {0: "0000:01:00.0"}, RM_5090) == {}
    # the log could not be read: the GPU is still missing, said as gpu.missing (the bus address, the checks)
    assert list(_verdict(["0000:01:00.0"], {}, None)) == ["gpu.missing"]
    # lines about another GPU only: the missing one is not explained by them
    found = _verdict(["0000:01:00.0", "0000:02:00.0"], {0: "0000:02:00.0"},
                     [x.replace("0000:01:00.0", "0000:03:00.0") for x in RM_5090])
    assert list(found) == ["gpu.missing"]


def test_one_of_eight_failed_the_others_missing_for_no_logged_reason() -> None:
    bound = ["0000:%02x:00.0" % b for b in (0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb)]
    answered = {i: b for i, b in enumerate(bound[:6])}
    found = _verdict(bound, answered, [x.replace("0000:01:00.0", bound[6]) for x in RM_5090])
    assert [f.title.split()[1] for f in found["gpu.init_failed"]] == [bound[6]]
    assert bound[7] in found["gpu.missing"][0].title and bound[6] not in found["gpu.missing"][0].title


def test_init_failed_when_nvml_itself_fails_to_start_for_the_gpus_sake() -> None:
    from envdoctor.checks.gpu_verdict import gpu_init_failed
    from envdoctor.facts import Fact

    def found(status: str) -> List[Finding]:
        facts = Facts([Fact("driver.nvml.status", status, "nvml:init", "ok", "NVML failed"),
                       Fact("gpu.count", None, "nvml:device_count", "unknown", "NVML did not start"),
                       ok("gpu.pci_devices", [{"bus_id": "0000:01:00.0", "driver": "nvidia"}], "dir:/sys"),
                       ok("driver.kernel_log", RM_5090, "command:dmesg")])
        return list(gpu_init_failed(CheckContext(facts, [])))

    assert [f.code for f in found("NVML_ERROR_UNKNOWN")] == ["gpu.init_failed"]
    # a missing library or module is not the GPU's failure: the kernel's old lines are not its cause
    assert found("NVML_ERROR_LIBRARY_NOT_FOUND") == [] and found("NVML_ERROR_DRIVER_NOT_LOADED") == []


def test_a_gpu_no_known_torch_wheel_carries_is_told_to_build_from_source_not_to_update_the_driver() -> None:
    from envdoctor.checks.compat import compat

    # a Fermi board (compute capability 2.0): no PyTorch wheel ever carried sm_20
    facts = [ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", "Tesla M2090", "nvml:device.0.name"),
             ok("gpu.0.compute_capability", "2.0", "nvml:device.0.compute_capability"),
             ok("framework.torch", {"version": "1.99.1", "public": "1.99.1", "cuda": "10.1", "build": "cuda",
                                    "path": "/site", "package": "torch"}, "file:/site/torch/version.py"),
             ok("framework.torch.gpu_code", {"sass": ["sm_37", "sm_50", "sm_70"], "ptx": [], "complete": True,
                                             "libraries": []}, "fatbin:/site/torch/lib/libtorch_cuda.so")]
    found = [f for f in compat(CheckContext(Facts(facts), [])) if f.code == "gpu.arch_not_in_build"]
    assert len(found) == 1 and "Tesla M2090" in found[0].title and "sm_20" in found[0].title
    assert 'TORCH_CUDA_ARCH_LIST="2.0"' in found[0].fix.text and "update the driver" not in found[0].fix.text
    assert "CUDA_VISIBLE_DEVICES" in found[0].fix.text


# -- the GSP firmware of the loaded module, whatever else is wrong -------------------------------------------------
# ublue-os/bazzite#2668, rebuilt as corpus case b11-bazzite42-...: user space 570.153.02 over a loaded 570.144 module
# (NVML: version mismatch), and the 570.144 module failed to load its own GSP firmware file.
BAZZITE = "b11-bazzite42-image-nvidia-57015302-userspace-kmod-570144-no-firmware"
FW_LINE = "nvidia 0000:07:00.0: Direct firmware load for nvidia/570.144/gsp_ga10x.bin failed with error -2"


def _codes(doc: Dict[str, object]) -> Dict[str, Finding]:
    from tests.conftest import snapshot_findings

    return {f.code: f for f in snapshot_findings(doc)}


def test_missing_firmware_of_the_loaded_module_is_said_beside_a_library_mismatch() -> None:
    from tests.conftest import corpus_snapshot

    found = _codes(corpus_snapshot(BAZZITE))
    assert found["driver.library_mismatch"].severity == "error"  # the other cause, still said
    f = found["driver.gsp_firmware_missing"]
    # NVML cannot say whether the GPU is driven now: a warning, naming the module's version and its file
    assert f.severity == "warning" and "0000:07:00.0" in f.title
    assert "nvidia/570.144/gsp_ga10x.bin" in f.detail and "reboot into driver 570.144 still fails" in f.detail
    assert FW_LINE in f.detail


def test_the_probe_lists_the_loaded_versions_firmware_where_the_kernel_looks() -> None:
    from envdoctor.host.snapshot import SnapshotHost
    from tests.conftest import corpus_snapshot, probe_facts

    doc = corpus_snapshot(BAZZITE)
    doc["dirs"]["/lib/firmware/nvidia/570.144"] = {"entries": ["gsp_ga10x.bin", "gsp_tu10x.bin"]}
    value = probe_facts(SnapshotHost(doc)).value("driver.gsp_firmware")
    assert value["version"] == "570.144"
    assert value["files"] == ["/lib/firmware/nvidia/570.144/gsp_ga10x.bin",
                              "/lib/firmware/nvidia/570.144/gsp_tu10x.bin"]
    release = doc["uname"]["release"]
    assert value["searched"] == ["/lib/firmware/updates/%s/nvidia/570.144" % release, "/lib/firmware/updates/nvidia/"
                                 "570.144", "/lib/firmware/%s/nvidia/570.144" % release, "/lib/firmware/nvidia/570.144"]
    # no firmware failure in the log: nothing listed at all
    for result in doc["commands"]:
        if result["argv"][0] == "dmesg":
            result["stdout"] = "\n".join(x for x in result["stdout"].splitlines() if "Direct firmware" not in x)
    assert probe_facts(SnapshotHost(doc)).get("driver.gsp_firmware") is None


def test_missing_firmware_quiet_when_the_file_is_there_now_or_belongs_to_another_version() -> None:
    from tests.conftest import corpus_snapshot

    # installed since: the loaded version's GSP firmware is where the kernel looks (compressed, as Fedora ships it)
    doc = corpus_snapshot(BAZZITE)
    doc["dirs"]["/lib/firmware/nvidia/570.144"] = {"entries": ["gsp_ga10x.bin.xz", "gsp_tu10x.bin.xz"]}
    found = _codes(doc)
    assert "driver.gsp_firmware_missing" not in found and "driver.library_mismatch" in found
    # a line of another driver version than the module loaded now: history
    doc = corpus_snapshot(BAZZITE)
    text = json.dumps(doc).replace("nvidia/570.144/gsp_ga10x.bin", "nvidia/565.77/gsp_ga10x.bin")
    found = _codes(json.loads(text))
    assert "driver.gsp_firmware_missing" not in found and "driver.library_mismatch" in found


def test_missing_firmware_of_a_gpu_nvml_answers_for_is_history() -> None:
    from envdoctor.checks.kernel_log import kernel_log

    facts = Facts([ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.pci_bus_id", "0000:07:00.0", "nvml:x"),
                   ok("driver.nvml.status", "ok", "nvml:init"), ok("driver.kernel_module.loaded", True, "file:/proc"),
                   ok("driver.kernel_module.version", "570.144", "file:/proc/driver/nvidia/version"),
                   ok("gpu.pci_devices", [{"bus_id": "0000:07:00.0", "driver": "nvidia", "device_id": "10de:2484"}],
                      "dir:/sys/bus/pci/devices"), ok("driver.kernel_log", [FW_LINE], "command:dmesg")])
    assert list(kernel_log(CheckContext(facts, []))) == []


# -- a GPU the driver's probe refused: never bound, so no sysfs driver link, no procfs entry, no NVML answer ------
# NVIDIA/open-gpu-kernel-modules kernel-open/nvidia/nv-pci.c: nv_pci_probe prints "This PCI I/O region assigned to
# your NVIDIA device is invalid:" and "BAR%d is %lluM @ 0x%llx (PCI:...)" and fails the probe, so the device is left
# without a driver; nv.c then prints "The NVIDIA probe routine failed for %d device(s)." (a VM whose firmware's
# 64-bit MMIO window is too small for four large-BAR GPUs: canonical/lxd#14381).
REFUSED_LOG = ["NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:",
               "NVRM: BAR0 is 0M @ 0x0 (PCI:0000:07:00.0)",
               "NVRM: This PCI I/O region assigned to your NVIDIA device is invalid:",
               "NVRM: BAR0 is 0M @ 0x0 (PCI:0000:08:00.0)",
               "NVRM: The NVIDIA probe routine failed for 2 device(s)."]


def _refused_verdict(log: object, loaded: bool = True, container: bool = False) -> Dict[str, List[Finding]]:
    from envdoctor.checks.gpu_verdict import gpu_init_failed, gpu_missing

    bound = ["0000:05:00.0", "0000:06:00.0"]
    pci = [{"bus_id": b, "driver": "nvidia"} for b in bound] + [{"bus_id": b} for b in ("0000:07:00.0",
                                                                                       "0000:08:00.0")]
    facts = [ok("gpu.count", 2, "nvml:device_count"), ok("gpu.pci_devices", pci, "dir:/sys/bus/pci/devices"),
             ok("driver.kernel_module.loaded", loaded, "file:/proc/driver/nvidia/version"),
             ok("driver.kernel_log", log, "command:dmesg")]
    facts += [ok("gpu.%d.pci_bus_id" % i, b, "nvml:device.%d.pci_bus_id" % i) for i, b in enumerate(bound)]
    if container:
        facts.append(ok("os.container", "lxc", "file:/run/systemd/container"))
    ctx = CheckContext(Facts(facts), [])
    out: Dict[str, List[Finding]] = {}
    for f in list(gpu_init_failed(ctx)) + list(gpu_missing(ctx)):
        out.setdefault(f.code, []).append(f)
    return out


def test_gpus_the_probe_refused_for_unassigned_bars_are_init_failures_naming_the_bar() -> None:
    found = _refused_verdict(REFUSED_LOG)
    assert list(found) == ["gpu.init_failed"]
    assert [f.title.split()[1] for f in found["gpu.init_failed"]] == ["0000:07:00.0", "0000:08:00.0"]
    f = found["gpu.init_failed"][0]
    assert f.severity == "error" and "refused by the nvidia driver's probe" in f.title and "BAR0 is 0M" in f.title
    assert "bound to the nvidia driver" not in f.title
    assert "64-bit MMIO window" in f.fix.text and "Above 4G Decoding" in f.fix.text
    assert "NVRM: BAR0 is 0M @ 0x0 (PCI:0000:07:00.0)" in f.detail


def test_refused_gpus_quiet_without_their_lines_in_a_container_or_without_the_module() -> None:
    assert _refused_verdict([x for x in REFUSED_LOG if "07:00.0" not in x and "08:00.0" not in x]) == {}
    assert _refused_verdict(REFUSED_LOG, container=True) == {}
    assert _refused_verdict(REFUSED_LOG, loaded=False) == {}

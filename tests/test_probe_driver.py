"""The NVIDIA driver probe, one miniature machine per situation a user can be in.

Every file content and command output below is copied from a real machine as
published; the comment above each says where it was found.  Where a real
source was found through the search index without a repository name, the
index id is given (``index id N``) with what the source is.
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

import pytest

from envdoctor.facts import Facts
from envdoctor.probes import run_probes
from envdoctor.probes.driver import SECURE_BOOT_VAR, cuda_from_int, parse_dkms_status, parse_proc_version
from tests.conftest import make_host

# -- real evidence ----------------------------------------------------------------

# /proc/driver/nvidia/version of a 4x Tesla V100 Ubuntu 20.04 machine, driver 550.54.15 (proprietary module);
# from a public machine notes page (index id 11286379010, "Nvidia Tesla V100": dpkg -l, /proc, nvidia-smi).
PROC_550 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
            "GCC version:  gcc version 9.4.0 (Ubuntu 9.4.0-1ubuntu1~20.04.2)\n")

# `nvidia-smi` on the same machine (header and first GPU; the probe reads only the header's CUDA Version).
SMI_550 = """Sat Aug 24 11:46:37 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  Tesla V100-SXM2-32GB           Off |   00000000:18:00.0 Off |                    0 |
| N/A   33C    P0             40W /  300W |       0MiB /  32768MiB |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""
# `nvidia-smi --query-gpu=driver_version --format=csv,noheader` prints one line per GPU (4 GPUs there).
SMI_QUERY_550 = "550.54.15\n550.54.15\n550.54.15\n550.54.15\n"

# The open kernel module, 560.35.03, as quoted in a Rust probe's doc comment of "real observed formats"
# (index id 69334094907) and in a C# test (index id 70795925691).
PROC_560_OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  "
                 "(dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024\n")

# Kernel module 535.113.01 left loaded while user space moved on: a RHEL cluster note that shows
# "Failed to initialize NVML: Driver/library version mismatch" next to this line (index id 1312854986).
PROC_535 = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.113.01  Tue Sep 12 19:41:24 UTC 2023\n"
# nvidia-smi's answer in that state, verbatim from https://github.com/mozilla/translations/issues/1167
SMI_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.144\n"
# A real 550.144 library file name, from an NVIDIA 550.144.02 package listing (index id 47434271844).
LIB_550_144 = "libnvidia-ml.so.550.144.02"

# `dkms status` after installing cuda-driver on RHEL 8.9 (ppc64le) (index id 20003607708).
DKMS_RHEL = "nvidia/550.54.15, 4.18.0-513.5.1.el8_9.ppc64le, ppc64le: installed\n"

# `modinfo ... | grep signer` for a DKMS-built module (dell/dkms README, index id 20329934557).
SIGNER_DKMS = "DKMS module signing key\n"

# nvidia-installer's nouveau blacklist file (quoted in several install guides, e.g. index id 15603924688;
# the installer's own warning names /usr/lib/modprobe.d/nvidia-installer-disable-nouveau.conf, index id 17199411343).
NOUVEAU_BLACKLIST = "blacklist nouveau\noptions nouveau modeset=0\n"

# efivarfs SecureBoot variable: 4 attribute bytes (0x06 = BOOTSERVICE_ACCESS|RUNTIME_ACCESS) then the
# 1-byte value; https://docs.kernel.org/filesystems/efivarfs.html and a C++ test fixture building the
# same bytes (index id 71471947941).
SB_ON = base64.b64encode(b"\x06\x00\x00\x00\x01").decode()
SB_OFF = base64.b64encode(b"\x06\x00\x00\x00\x00").decode()

# WSL2: /proc/version (a WSL setup guide quoting `wsl cat /proc/version`, index id 10910981503)
# and the /usr/lib/wsl/lib listing mounted from the Windows driver (NixOS-WSL modules, index id 54385711068).
WSL_PROC_VERSION = ("Linux version 5.15.133.1-microsoft-standard-WSL2 (root@1c602f52c2e4) (gcc (GCC) 11.2.0, "
                    "GNU ld (GNU Binutils) 2.37) #1 SMP Thu Oct 5 21:02:42 UTC 2023\n")
WSL_LIBS = ["libcudadebugger.so.1", "libcuda.so", "libcuda.so.1", "libcuda.so.1.1", "libd3d12core.so",
            "libd3d12.so", "libdxcore.so", "libnvcuvid.so", "libnvcuvid.so.1", "libnvdxdlkernels.so",
            "libnvidia-encode.so", "libnvidia-ml.so.1", "nvidia-smi"]

# /dev on a 4-GPU box with the UVM and modeset modules loaded (names per NVIDIA's driver README, "Device Nodes").
DEV_4GPU = ["null", "nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidia-caps", "nvidiactl", "nvidia-modeset",
            "nvidia-uvm", "nvidia-uvm-tools", "tty", "zero"]

# A sysfs PCI driver directory: device addresses plus the driver's control files (kernel ABI,
# Documentation/ABI/testing/sysfs-bus-pci).
PCI_DRIVER_DIR = ["0000:01:00.0", "bind", "module", "new_id", "remove_id", "uevent", "unbind"]

UBUNTU = "5.15.0-105-generic"
QUERY = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]


def nvml_ok(version: str, cuda: int, count: int = 1) -> Dict[str, Any]:
    """NVML worker answers (keys from envdoctor/host/nvml_worker.py) for a healthy driver."""
    return {"data": {"init": {"value": None}, "system.driver_version": {"value": version},
                     "system.cuda_driver_version": {"value": cuda}, "device_count": {"value": count}}}


def nvml_error(name: str, code: int) -> Dict[str, Any]:
    return {"data": {"init": {"error": name, "code": code}}}


def machine(files: Optional[Dict[str, str]] = None, dirs: Optional[Dict[str, List[str]]] = None,
            commands: Optional[List[Dict[str, Any]]] = None, nvml: Optional[Dict[str, Any]] = None,
            release: str = UBUNTU, b64: Optional[Dict[str, str]] = None):
    host = make_host(files=files, dirs=dirs, commands=commands, nvml=nvml,
                     uname={"sysname": "Linux", "release": release, "version": "#1 SMP", "machine": "x86_64"})
    for path, data in (b64 or {}).items():  # binary files (efivars) use the snapshot's base64 form
        host.doc["files"][path] = {"base64": data}
        parent, name = path.rsplit("/", 1)
        host.doc["dirs"].setdefault(parent, {"entries": []})["entries"].append(name)
    return host


def driver_facts(host) -> Facts:
    results = {r.name: r for r in run_probes(host, only=["os", "driver"])}
    assert results["driver"].status == "ok", results["driver"].error
    return Facts(results["driver"].facts)


def healthy_550(**extra: Any):
    files = {"/proc/driver/nvidia/version": PROC_550, "/sys/module/nvidia/version": "550.54.15\n",
             "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": "",
             "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15": "",
             f"/lib/modules/{UBUNTU}/updates/dkms/nvidia.ko": ""}
    files.update(extra.pop("files", {}))
    commands = [{"argv": ["modinfo", "-F", "signer", "nvidia"], "stdout": SIGNER_DKMS},
                {"argv": ["systemctl", "is-active", "nvidia-persistenced"], "stdout": "active\n"},
                # present but must not be consulted while NVML answers:
                {"argv": QUERY, "timed_out": True, "returncode": None}]
    commands += extra.pop("commands", [])
    dirs = {"/dev": DEV_4GPU, "/sys/module/nvidia": ["version", "taint"], "/sys/firmware/efi": ["efivars"]}
    dirs.update(extra.pop("dirs", {}))
    return machine(files=files, dirs=dirs, commands=commands,
                   nvml=extra.pop("nvml", nvml_ok("550.54.15", 12040, 4)), **extra)


# -- parsing tables ---------------------------------------------------------------

@pytest.mark.parametrize("text, version, flavor", [
    (PROC_550, "550.54.15", "proprietary"),
    (PROC_560_OPEN, "560.35.03", "open"),
    (PROC_535, "535.113.01", "proprietary"),
    # aarch64 open module (index id 68562749719)
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build", "580.65.06", "open"),
    # two-part version of an older branch (index id 15961072743)
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\n", "515.76",
     "proprietary"),
])
def test_proc_version_formats(text, version, flavor):
    info = parse_proc_version(text)
    assert info is not None
    assert (info["version"], info["flavor"]) == (version, flavor)


def test_proc_version_garbage_is_not_a_version():
    assert parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Mod") is None
    assert parse_proc_version("\x00\x00\x00") is None


@pytest.mark.parametrize("value, expected", [(12040, "12.4"), (12060, "12.6"), (11080, "11.8"), (0, None),
                                             ("12040", None), (True, None)])
def test_cuda_driver_version_integer(value, expected):
    assert cuda_from_int(value) == expected


def test_dkms_status_lines():
    assert parse_dkms_status(DKMS_RHEL) == [{"module": "nvidia", "version": "550.54.15",
                                             "kernel": "4.18.0-513.5.1.el8_9.ppc64le", "arch": "ppc64le",
                                             "state": "installed"}]


# -- whole machines ---------------------------------------------------------------

def test_healthy_proprietary_550():
    f = driver_facts(healthy_550())
    assert f.value("driver.installed") is True
    assert f.value("driver.kernel_module.version") == "550.54.15"
    assert f.value("driver.kernel_module.flavor") == "proprietary"
    assert f.value("driver.kernel_module.gcc") == "9.4.0 (Ubuntu 9.4.0-1ubuntu1~20.04.2)"
    assert f.value("driver.nvml.status") == "ok"
    assert f.value("driver.version") == "550.54.15"
    assert f.get("driver.version").source == "nvml:system.driver_version"  # nvidia-smi not consulted
    assert f.value("driver.cuda_version") == "12.4"
    assert f.value("driver.userspace.version") == "550.54.15"
    assert f.value("driver.device_nodes") == ["nvidia-caps", "nvidia-modeset", "nvidia-uvm", "nvidia-uvm-tools",
                                              "nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl"]
    assert f.value("driver.module_for_running_kernel") is True
    assert f.value("driver.module_signed") is True
    assert f.value("driver.module_signer") == "DKMS module signing key"
    assert f.value("driver.nouveau.loaded") is False
    assert f.value("driver.nvswitch.present") is False
    assert "driver.fabric_manager.state" not in f
    assert f.value("driver.persistenced.state") == "active"
    for fact in f:
        assert fact.label, fact.key
        assert fact.source, fact.key


def test_open_module_560():
    host = machine(files={"/proc/driver/nvidia/version": PROC_560_OPEN,
                          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.560.35.03": ""},
                   dirs={"/dev": ["nvidia0", "nvidiactl"]}, nvml=nvml_ok("560.35.03", 12060))
    f = driver_facts(host)
    assert f.value("driver.kernel_module.version") == "560.35.03"
    assert f.value("driver.kernel_module.flavor") == "open"
    assert f.value("driver.cuda_version") == "12.6"
    assert f.value("driver.userspace.version") == "560.35.03"


def test_version_mismatch_names_both_versions():
    host = machine(files={"/proc/driver/nvidia/version": PROC_535,
                          "/usr/lib/x86_64-linux-gnu/" + LIB_550_144: ""},
                   dirs={"/dev": ["nvidia0", "nvidiactl"]},
                   commands=[{"argv": QUERY, "returncode": 18, "stdout": SMI_MISMATCH}],
                   nvml=nvml_error("NVML_ERROR_LIB_RM_VERSION_MISMATCH", 18))
    f = driver_facts(host)
    status = f.get("driver.nvml.status")
    assert status.value == "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    assert "Driver/library version mismatch" in status.reason
    assert "535.113.01" in status.reason and "550.144.02" in status.reason
    assert f.value("driver.kernel_module.version") == "535.113.01"
    assert f.value("driver.userspace.version") == "550.144.02"
    assert f.get("driver.version").status == "unknown"
    assert "mismatch" in f.get("driver.version").reason


def test_no_driver_no_gpu_is_said_plainly():
    # A laptop with only an Intel iGPU: vendor/class files as sysfs shows them.
    host = machine(files={"/sys/bus/pci/devices/0000:00:02.0/vendor": "0x8086\n",
                          "/sys/bus/pci/devices/0000:00:02.0/class": "0x030000\n"})
    f = driver_facts(host)
    installed = f.get("driver.installed")
    assert installed.value is False
    assert "no NVIDIA driver installed" in installed.reason
    assert "driver.version" not in f and "driver.kernel_module.version" not in f
    assert [x.key for x in f if x.status != "ok"] == []  # no wall of unknowns


def test_gpu_present_but_no_driver_names_the_gpu_not_its_audio_function():
    host = machine(files={"/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
                          "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
                          "/sys/bus/pci/devices/0000:01:00.1/vendor": "0x10de\n",
                          "/sys/bus/pci/devices/0000:01:00.1/class": "0x040300\n"})
    f = driver_facts(host)
    assert f.value("driver.installed") is False
    assert "0000:01:00.0" in f.get("driver.installed").reason
    assert f.value("driver.nvidia_pci_gpus") == ["0000:01:00.0"]


def test_nouveau_loaded_and_bound():
    host = machine(files={"/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
                          "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n"},
                   dirs={"/sys/module/nouveau": ["parameters"], "/sys/bus/pci/drivers/nouveau": PCI_DRIVER_DIR})
    f = driver_facts(host)
    assert f.value("driver.nouveau.loaded") is True
    assert f.value("driver.nouveau.bound") == ["0000:01:00.0"]
    assert f.value("driver.nova.loaded") is False
    assert f.value("driver.modprobe_blacklist_nouveau") is False


def test_nouveau_blacklist_file_found():
    conf = "/usr/lib/modprobe.d/nvidia-installer-disable-nouveau.conf"
    f = driver_facts(healthy_550(files={conf: NOUVEAU_BLACKLIST}))
    assert f.value("driver.modprobe_blacklist_nouveau") is True
    assert conf in f.get("driver.modprobe_blacklist_nouveau").source


@pytest.mark.parametrize("data, expected", [(SB_ON, True), (SB_OFF, False)])
def test_secure_boot_from_efivar(data, expected):
    f = driver_facts(healthy_550(b64={SECURE_BOOT_VAR: data}))
    assert f.value("driver.secure_boot") is expected
    assert f.get("driver.secure_boot").source == "file:" + SECURE_BOOT_VAR


def test_secure_boot_legacy_bios():
    host = healthy_550()
    del host.doc["dirs"]["/sys/firmware/efi"]
    f = driver_facts(host)
    sb = f.get("driver.secure_boot")
    assert sb.status == "not_supported" and "legacy BIOS" in sb.reason


def test_secure_boot_falls_back_to_mokutil():
    # mokutil's own output strings (lcp/mokutil src/mokutil.c, index id 36885619746).
    f = driver_facts(healthy_550(commands=[{"argv": ["mokutil", "--sb-state"], "stdout": "SecureBoot enabled\n"}]))
    assert f.value("driver.secure_boot") is True
    assert f.get("driver.secure_boot").source == "command:mokutil --sb-state"


def test_nvidia_smi_fallback_when_nvml_worker_timed_out():
    host = machine(files={"/proc/driver/nvidia/version": PROC_550},
                   commands=[{"argv": QUERY, "stdout": SMI_QUERY_550}, {"argv": ["nvidia-smi"], "stdout": SMI_550}],
                   nvml={"error": "timed_out", "message": "NVML query did not answer within 10.0s"})
    f = driver_facts(host)
    assert f.value("driver.nvml.status") == "timed_out"
    assert "did not answer within 10.0s" in f.get("driver.nvml.status").reason  # the query's own account
    assert f.value("driver.version") == "550.54.15"
    assert f.get("driver.version").source == "command:" + " ".join(QUERY)
    assert f.value("driver.cuda_version") == "12.4"
    assert f.get("driver.cuda_version").source == "command:nvidia-smi"


def test_hung_nvidia_smi_is_a_timed_out_fact():
    host = machine(files={"/proc/driver/nvidia/version": PROC_550},
                   commands=[{"argv": QUERY, "timed_out": True, "returncode": None, "duration": 10.0}],
                   nvml={"error": "timed_out", "message": "NVML query did not answer within 10.0s"})
    f = driver_facts(host)
    version = f.get("driver.version")
    assert version.status == "timed_out"
    assert "timed out after 10.0s" in version.reason
    assert f.get("driver.cuda_version").status == "timed_out"
    assert f.value("driver.kernel_module.version") == "550.54.15"  # what could be learned still is


def test_garbled_proc_version_is_unknown_with_the_text():
    host = machine(files={"/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Mod"},
                   nvml=nvml_ok("550.54.15", 12040))
    f = driver_facts(host)
    kv = f.get("driver.kernel_module.version")
    assert kv.status == "unknown"
    assert "unexpected contents" in kv.reason and "Kernel Mod" in kv.reason
    assert f.value("driver.version") == "550.54.15"


def test_garbled_proc_falls_back_to_sys_module():
    # /sys/module/nvidia/taint "PO": proprietary + out-of-tree (Documentation/admin-guide/tainted-kernels.rst).
    host = machine(files={"/proc/driver/nvidia/version": "\x00garbled\x00",
                          "/sys/module/nvidia/version": "550.54.15\n", "/sys/module/nvidia/taint": "PO\n"},
                   nvml=nvml_ok("550.54.15", 12040))
    f = driver_facts(host)
    assert f.value("driver.kernel_module.version") == "550.54.15"
    assert f.get("driver.kernel_module.version").source == "file:/sys/module/nvidia/version"
    assert f.value("driver.kernel_module.flavor") == "proprietary"


def test_wsl2_driver_on_windows_is_normal():
    host = machine(files={"/proc/version": WSL_PROC_VERSION},
                   dirs={"/usr/lib/wsl/lib": WSL_LIBS, "/dev": ["dxg", "null"]},
                   nvml=nvml_ok("591.97", 13010), release="5.15.133.1-microsoft-standard-WSL2")
    f = driver_facts(host)
    assert "/usr/lib/wsl/lib/libcuda.so.1.1" in f.value("driver.wsl_libcuda")
    kv = f.get("driver.kernel_module.version")
    assert kv.status == "not_supported" and "WSL2" in kv.reason
    assert f.value("driver.version") == "591.97"
    assert f.value("driver.cuda_version") == "13.1"
    assert [x.key for x in f if x.status in ("unknown", "timed_out")] == []
    assert "driver.module_for_running_kernel" not in f


def test_dkms_module_for_running_kernel():
    release = "4.18.0-513.5.1.el8_9.ppc64le"
    host = machine(files={"/proc/driver/nvidia/version": PROC_550}, dirs={"/lib/modules/" + release: ["kernel"]},
                   commands=[{"argv": ["dkms", "status"], "stdout": DKMS_RHEL}], nvml=nvml_ok("550.54.15", 12040),
                   release=release)
    f = driver_facts(host)
    assert f.value("driver.module_for_running_kernel") is True
    assert f.value("driver.dkms.status")[0]["version"] == "550.54.15"


def test_kernel_updated_without_module():
    # DKMS built the module for the old kernel only; the machine booted a newer one.
    release = "4.18.0-553.el8_10.ppc64le"
    host = machine(files={"/proc/driver/nvidia/version": PROC_550}, dirs={"/lib/modules/" + release: ["kernel"]},
                   commands=[{"argv": ["dkms", "status"], "stdout": DKMS_RHEL}], nvml=nvml_ok("550.54.15", 12040),
                   release=release)
    f = driver_facts(host)
    fact = f.get("driver.module_for_running_kernel")
    assert fact.value is False
    assert "4.18.0-513.5.1.el8_9.ppc64le" in fact.reason


def test_nvswitch_system_reports_fabric_manager():
    host = healthy_550(dirs={"/dev": DEV_4GPU + ["nvidia-nvswitch0", "nvidia-nvswitchctl"]},
                       commands=[{"argv": ["systemctl", "is-active", "nvidia-fabricmanager"], "returncode": 3,
                                  "stdout": "inactive\n"}])
    f = driver_facts(host)
    assert f.value("driver.nvswitch.present") is True
    assert f.value("driver.fabric_manager.state") == "inactive"


@pytest.mark.parametrize("err, words", [
    ("NVML_ERROR_DRIVER_NOT_LOADED", "not loaded"),
    ("NVML_ERROR_NO_PERMISSION", "permission"),
    ("NVML_ERROR_GPU_IS_LOST", "fallen off the bus"),
])
def test_nvml_errors_have_human_reasons(err, words):
    host = machine(files={"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": ""}, nvml=nvml_error(err, 9))
    f = driver_facts(host)
    assert f.value("driver.nvml.status") == err
    assert words in f.get("driver.nvml.status").reason


def test_inside_a_container_module_questions_are_the_hosts():
    # `docker run --gpus all`: /proc/driver/nvidia and the libraries are mounted in, /lib/modules and systemd
    # are not (/.dockerenv is Docker's marker file).
    host = machine(files={"/.dockerenv": "", "/proc/driver/nvidia/version": PROC_550,
                          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": ""},
                   dirs={"/dev": ["nvidia0", "nvidiactl", "nvidia-uvm"]}, nvml=nvml_ok("550.54.15", 12040))
    f = driver_facts(host)
    assert f.value("driver.version") == "550.54.15"
    mod = f.get("driver.module_for_running_kernel")
    assert mod.status == "not_supported" and "container" in mod.reason
    assert "driver.persistenced.state" not in f  # optional, and no systemctl to ask
    assert [x.key for x in f if x.status in ("unknown", "timed_out")] == []


# RPM Fusion's xorg-x11-drv-nvidia 177.80 (rpmfusion/xorg-x11-drv-nvidia, commit 1ae70cb, the spec's
# %files libs): the driver's libraries in %{_libdir}/nvidia (libcuda.so.177.80 and its libcuda.so.1 link), that
# directory named in /etc/ld.so.conf.d/nvidia-x86_64.conf, which ldconfig puts in the loader cache. No
# libnvidia-ml in that release (NVML came later), so NVML's library is not found. `ldconfig -p` in glibc's format.
RPMFUSION_LIBS = {"/usr/lib64/nvidia/libcuda.so.177.80": "", "/usr/lib64/nvidia/libcuda.so.1": "",
                  "/etc/ld.so.conf.d/nvidia-x86_64.conf": "/usr/lib64/nvidia\n",
                  "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
                  "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
                  "/sys/bus/pci/devices/0000:01:00.0/device": "0x0322\n"}
LDCONFIG_RPMFUSION = ("2 libs found in cache `/etc/ld.so.cache'\n"
                      "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib64/nvidia/libcuda.so.1\n"
                      "\tlibc.so.6 (libc6,x86-64) => /lib64/libc.so.6\n")
LDCONFIG_NO_NVIDIA = ("1 libs found in cache `/etc/ld.so.cache'\n"
                      "\tlibc.so.6 (libc6,x86-64) => /lib64/libc.so.6\n")


@pytest.mark.parametrize("cache, installed", [(LDCONFIG_RPMFUSION, True), (LDCONFIG_NO_NVIDIA, False)])
def test_driver_libraries_in_a_directory_the_loader_cache_names_are_an_installed_driver(cache, installed):
    # The module never loaded (177.80 ignores a GeForce FX) and NVML has no library: the driver is still installed,
    # its libraries where the loader finds them (the cache). Without the cache entry the loader would not find
    # /usr/lib64/nvidia/libcuda.so.1, and neither does envdoctor.
    host = machine(files=dict(RPMFUSION_LIBS, **{"/sbin/ldconfig": ""}),
                   commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout": cache}],
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12), release="2.6.26.5-45.fc9.x86_64")
    f = driver_facts(host)
    assert f.value("driver.installed") is installed
    if installed:
        assert f.value("driver.userspace.version") == "177.80"
    else:
        assert f.value("driver.nvidia_pci_gpus") == ["0000:01:00.0"]


def test_a_legacy_gpu_under_rpmfusions_current_driver_names_the_legacy_branch_without_the_kernel_log():
    # The same machine, the kernel log unreadable: the branch (177 from libcuda.so.177.80) against NVIDIA's
    # README legacy list (gpu_pci_ids: 10de:0322 GeForce FX 5200 -> 173.14.xx) still names the branch.
    from envdoctor.checks import CheckContext, run_checks

    host = machine(files=dict(RPMFUSION_LIBS, **{"/sbin/ldconfig": ""}),
                   commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout": LDCONFIG_RPMFUSION}],
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12), release="2.6.26.5-45.fc9.x86_64")
    results = {r.name: r for r in run_probes(host, only=["os", "driver", "gpu"])}
    facts = Facts([x for r in results.values() for x in r.facts])
    found = {x.code: x for x in run_checks(CheckContext(facts, []))}
    assert "driver.not_installed" not in found
    f = found["driver.gpu_needs_legacy_branch"]
    assert f.severity == "error" and "173" in f.title and "177.80" in f.title


def test_a_module_installed_for_the_kernel_is_an_installed_driver_even_without_its_libraries():
    # RPM Fusion's kmod-nvidia layout (/lib/modules/<release>/extra/nvidia/nvidia.ko.xz) for driver 535.183.01, the
    # module never loaded (a GeForce GTX 680, 10de:1180, which 535 leaves to the 470 legacy branch) and no driver
    # library where the loader looks: the driver is installed, its module on disk says which branch.
    from envdoctor.checks import CheckContext, run_checks

    rel = "6.5.6-300.fc39.x86_64"
    files = {f"/lib/modules/{rel}/extra/nvidia/nvidia.ko.xz": "",
             "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
             "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
             "/sys/bus/pci/devices/0000:01:00.0/device": "0x1180\n"}
    commands = [{"argv": ["modinfo", "-F", "version", "nvidia"], "stdout": "535.183.01\n"},
                {"argv": ["modinfo", "-F", "license", "nvidia"], "stdout": "NVIDIA\n"}]
    host = machine(files=files, commands=commands, nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12), release=rel)
    results = {r.name: r for r in run_probes(host, only=["os", "driver", "gpu"])}
    facts = Facts([x for r in results.values() for x in r.facts])
    assert facts.value("driver.installed") is True and facts.value("driver.module_for_running_kernel") is True
    assert facts.value("driver.module_on_disk.version") == "535.183.01"
    found = {x.code: x for x in run_checks(CheckContext(facts, []))}
    assert "driver.not_installed" not in found
    assert "470" in found["driver.gpu_needs_legacy_branch"].title
    # no module and no library: not installed, as before
    bare = {k: v for k, v in files.items() if not k.startswith("/lib/modules")}
    host = machine(files=bare, commands=commands, nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12), release=rel)
    assert driver_facts(host).value("driver.installed") is False


def test_debian_driver_libraries_behind_alternatives_links_name_the_version():
    # Debian trixie's libcuda1 550.163.01-2 (dpkg-deb -c): usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.550.163.01
    # and its libcuda.so.1 link; nvidia-alternative links /usr/lib/x86_64-linux-gnu/libcuda.so.1 to it through
    # /etc/alternatives, and the loader cache holds that link. The module is not loaded (NVML: driver not loaded).
    cur = "/usr/lib/x86_64-linux-gnu/nvidia/current"
    alt = "/etc/alternatives/nvidia--libcuda.so.1-x86_64-linux-gnu"
    host = make_host(files={cur + "/libcuda.so.550.163.01": "", "/sbin/ldconfig": ""},
                     links={cur + "/libcuda.so.1": "libcuda.so.550.163.01", alt: cur + "/libcuda.so.1",
                            "/usr/lib/x86_64-linux-gnu/libcuda.so.1": alt},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout":
                                "1 libs found in cache `/etc/ld.so.cache'\n\tlibcuda.so.1 (libc6,x86-64) => "
                                "/usr/lib/x86_64-linux-gnu/libcuda.so.1\n"}],
                     nvml=nvml_error("NVML_ERROR_DRIVER_NOT_LOADED", 9),
                     uname={"sysname": "Linux", "release": "6.12.38+deb13-amd64", "version": "#1 SMP",
                            "machine": "x86_64"})
    assert driver_facts(host).value("driver.userspace.version") == "550.163.01"


def test_the_rpm_database_names_the_branch_when_nothing_else_does():
    # Fedora 9 with RPM Fusion's packages for 177.80 (names from its spec: xorg-x11-drv-nvidia, -libs; the kmod
    # built by kmodtool), as `rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}\n'` prints them; the module on disk but
    # modinfo gives nothing, and no library the loader finds: the packages' version names the branch, and the
    # GeForce FX 5200 (10de:0322) is on NVIDIA's 173.14.xx legacy list.
    from envdoctor.checks import CheckContext, run_checks
    from envdoctor.probes.cuda import RPM_ARGV

    rel = "2.6.26.5-45.fc9.x86_64"
    files = {f"/lib/modules/{rel}/extra/nvidia/nvidia.ko": "", "/usr/bin/rpm": "",
             "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
             "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",
             "/sys/bus/pci/devices/0000:01:00.0/device": "0x0322\n"}
    rpm_qa = ("kernel 2.6.26.5-45.fc9\nxorg-x11-drv-nvidia 177.80-1.fc9\nxorg-x11-drv-nvidia-libs 177.80-1.fc9\n"
              "kmod-nvidia-2.6.26.5-45.fc9.x86_64 177.80-1.fc9.2\nbash 3.2-22.fc9\n")
    host = machine(files=files, commands=[{"argv": ["/usr/bin/rpm"] + list(RPM_ARGV[1:]), "stdout": rpm_qa}],
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12), release=rel)
    results = {r.name: r for r in run_probes(host, only=["os", "driver", "gpu", "cuda"])}
    facts = Facts([x for r in results.values() for x in r.facts])
    names = [p["name"] for p in facts.value("cuda.packages")]
    assert "xorg-x11-drv-nvidia" in names and "bash" not in names and "kernel" not in names
    assert "driver.module_on_disk.version" not in facts and facts.value("driver.installed") is True
    found = {x.code: x for x in run_checks(CheckContext(facts, []))}
    f = found["driver.gpu_needs_legacy_branch"]
    assert "173" in f.title and "177.80" in f.title and f.severity == "error"

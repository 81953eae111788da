"""The driver-health check: one miniature machine per situation, fired and quiet.

The machines reuse the real evidence of ``tests/test_probe_driver.py`` (each
constant there says where it was copied from); what is added here says where
it comes from in a comment.  Every probe runs on each machine, so the check
sees exactly the facts a user's run would.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext
from envdoctor.checks.driver_health import RELOAD, driver_health
from envdoctor.facts import Facts
from envdoctor.findings import Finding
from envdoctor.probes.driver import SECURE_BOOT_VAR
from tests.conftest import load_machine, machine_names, probe_facts
from tests.test_probe_driver import (
    DEV_4GPU,
    DKMS_RHEL,
    LIB_550_144,
    NOUVEAU_BLACKLIST,
    PCI_DRIVER_DIR,
    PROC_535,
    PROC_550,
    QUERY,
    SB_ON,
    SIGNER_DKMS,
    SMI_MISMATCH,
    UBUNTU,
    WSL_LIBS,
    WSL_PROC_VERSION,
    healthy_550,
    machine,
    nvml_error,
    nvml_ok,
)

# /etc/os-release of Ubuntu 20.04.6 (tests/machines/ubuntu2004-rtx3060-cuda118, a public `cat /etc/os-release`).
OS_UBUNTU = ('NAME="Ubuntu"\nVERSION="20.04.6 LTS (Focal Fossa)"\nID=ubuntu\nID_LIKE=debian\n'
             'PRETTY_NAME="Ubuntu 20.04.6 LTS"\nVERSION_ID="20.04"\nVERSION_CODENAME=focal\nUBUNTU_CODENAME=focal\n')
# /etc/os-release of Rocky Linux 9.3 (python-distro tests/resources/distros/rocky9, as in tests/machines).
OS_ROCKY = ('NAME="Rocky Linux"\nVERSION="9.3 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\n'
            'VERSION_ID="9.3"\nPLATFORM_ID="platform:el9"\nPRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"\n')

# `modinfo -F signer nvidia` of an unsigned module prints an empty line and exits 0 (kmod's modinfo prints
# the field's value, empty when the module has no signature).
UNSIGNED = "\n"

NVIDIA_PCI = {"/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
              "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n"}


def findings(host) -> List[Finding]:
    return list(driver_health(CheckContext(probe_facts(host), [])))


def codes(host) -> List[str]:
    return [f.code for f in findings(host)]


def only(host, code: str) -> Finding:
    found = findings(host)
    assert [f.code for f in found] == [code], [(f.code, f.title) for f in found]
    f = found[0]
    # every finding per docs/DESIGN.md: a title, a source with URL and date, evidence, and a fix
    assert f.title and f.detail
    assert f.source["url"].startswith("https://") and f.source["checked"]
    assert f.evidence and all("key" in e for e in f.evidence)
    assert f.fix.text
    return f


def with_devices(nvml: Dict[str, Any], names: List[str]) -> Dict[str, Any]:
    """NVML worker answers with a name per device (key format of envdoctor/host/nvml_worker.py)."""
    for i, name in enumerate(names):
        nvml["data"]["device.%d.handle" % i] = {"value": True}
        nvml["data"]["device.%d.name" % i] = {"value": name}
    nvml["data"]["device_count"] = {"value": len(names)}
    return nvml


def not_loaded_machine(os_release: str, release: str, commands: Optional[List[Dict[str, Any]]] = None,
                       files: Optional[Dict[str, str]] = None, b64: Optional[Dict[str, str]] = None):
    """User-space 550.54.15 installed, kernel module not loaded (NVML: DRIVER_NOT_LOADED)."""
    f = {"/etc/os-release": os_release, "/usr/lib64/libnvidia-ml.so.550.54.15": "",
         "/usr/lib64/libcuda.so.550.54.15": ""}
    f.update(NVIDIA_PCI)
    f.update(files or {})
    return machine(files=f, dirs={"/lib/modules/" + release: ["kernel"], "/sys/firmware/efi": ["efivars"]},
                   commands=commands, nvml=nvml_error("NVML_ERROR_DRIVER_NOT_LOADED", 9), release=release, b64=b64)


# -- healthy machines stay quiet --------------------------------------------------------

def test_healthy_driver_is_quiet():
    assert findings(healthy_550(files={"/etc/os-release": OS_UBUNTU})) == []


def test_healthy_with_secure_boot_and_signed_module_is_quiet():
    assert findings(healthy_550(b64={SECURE_BOOT_VAR: SB_ON})) == []


def test_healthy_wsl2_is_quiet():
    host = machine(files={"/proc/version": WSL_PROC_VERSION},
                   dirs={"/usr/lib/wsl/lib": WSL_LIBS, "/dev": ["dxg", "null"]},
                   nvml=nvml_ok("591.97", 13010), release="5.15.133.1-microsoft-standard-WSL2")
    assert findings(host) == []


# -- version mismatch -----------------------------------------------------------------------

def test_mismatch_names_both_versions_and_the_reload_commands():
    host = machine(files={"/proc/driver/nvidia/version": PROC_535, "/usr/lib/x86_64-linux-gnu/" + LIB_550_144: ""},
                   dirs={"/dev": ["nvidia0", "nvidiactl"]},
                   commands=[{"argv": QUERY, "returncode": 18, "stdout": SMI_MISMATCH}],
                   nvml=nvml_error("NVML_ERROR_LIB_RM_VERSION_MISMATCH", 18))
    f = only(host, "driver.library_mismatch")
    assert f.severity == "error"
    assert "535.113.01" in f.title and "550.144.02" in f.title
    assert "Driver/library version mismatch" in f.title
    assert "without a reboot" in f.detail or "not rebooted" in f.detail
    assert f.fix.commands == ["sudo reboot", RELOAD]
    assert RELOAD == "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia"


# -- no driver / no GPU ----------------------------------------------------------------------

def test_gpu_without_driver_is_an_error_with_the_install_line():
    host = machine(files=dict(NVIDIA_PCI, **{"/etc/os-release": OS_UBUNTU}))
    f = only(host, "driver.not_installed")
    assert f.severity == "error"
    assert "0000:01:00.0" in f.title
    assert f.fix.install == "envdoctor install driver"
    assert "sudo reboot" in f.fix.commands


def test_gpu_without_driver_held_by_nouveau_is_one_finding():
    host = machine(files=NVIDIA_PCI, dirs={"/sys/module/nouveau": ["parameters"],
                                           "/sys/bus/pci/drivers/nouveau": PCI_DRIVER_DIR})
    f = only(host, "driver.not_installed")
    assert "nouveau" in f.detail


def test_kubernetes_node_without_driver_held_by_nouveau_names_nouveau_as_the_cause():
    # NVIDIA/gpu-operator#8 (tests/corpus/b6-gpu-operator-node-...): the GPU Operator's driver container only runs
    # modprobe nvidia; with nouveau bound to the GPU it fails, so nouveau is the finding, not "install a driver"
    dirs = {"/sys/module/nouveau": ["parameters"], "/sys/bus/pci/drivers/nouveau": PCI_DRIVER_DIR}
    host = machine(files=dict(NVIDIA_PCI, **{"/etc/os-release": OS_UBUNTU, "/usr/bin/kubelet": ""}), dirs=dirs)
    f = only(host, "driver.nouveau_conflict")
    assert f.severity == "error" and "0000:01:00.0" in f.title and "GPU Operator" in f.title
    assert "blacklist nouveau" in f.fix.commands[0] and "sudo update-initramfs -u" in f.fix.commands
    assert "gpu-driver-container" in f.source["url"]
    # the node's nouveau only loaded, bound to no GPU: the driver container can take the GPU; no driver is said
    loaded_only = machine(files=dict(NVIDIA_PCI, **{"/usr/bin/kubelet": ""}),
                          dirs={"/sys/module/nouveau": ["parameters"]})
    assert codes(loaded_only) == ["driver.not_installed"]


def test_no_gpu_no_driver_is_one_info_finding():
    # A laptop with only an Intel iGPU: vendor/class files as sysfs shows them.
    host = machine(files={"/sys/bus/pci/devices/0000:00:02.0/vendor": "0x8086\n",
                          "/sys/bus/pci/devices/0000:00:02.0/class": "0x030000\n"})
    f = only(host, "gpu.none")
    assert f.severity == "info"
    assert "CPU-only" in f.title


def test_userspace_missing_next_to_a_loaded_module():
    f = only(load_machine("ubuntu2404-open-module-no-nvml"), "driver.userspace_missing")
    assert "565.57.01" in f.title and "open" in f.title
    assert f.fix.commands == ["sudo apt-get install -y libnvidia-compute-565 nvidia-utils-565"]
    # user space must match the loaded open module 565 exactly: the driver recipe plans open branch 565 on Ubuntu
    # (nvidia-open-565; issue 14: it used to refuse --version 565 there, and no install line was given)
    assert f.fix.install == "envdoctor install driver --version 565"


# -- nouveau / nova ----------------------------------------------------------------------------

def test_nouveau_bound_next_to_installed_driver_is_an_error_with_blacklist_and_initramfs():
    host = not_loaded_machine(OS_UBUNTU, UBUNTU, files={f"/lib/modules/{UBUNTU}/updates/dkms/nvidia.ko": ""})
    host.doc["dirs"]["/sys/module/nouveau"] = {"entries": ["parameters"]}
    host.doc["dirs"]["/sys/bus/pci/drivers/nouveau"] = {"entries": PCI_DRIVER_DIR}
    f = only(host, "driver.nouveau_conflict")  # and not also "module not loaded"
    assert f.severity == "error"
    assert "0000:01:00.0" in f.title and "550.54.15" in f.title
    assert f.fix.commands == [
        "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
        "sudo update-initramfs -u", "sudo reboot"]


def test_nouveau_loaded_but_blacklisted_on_rhel_asks_for_dracut_only():
    conf = "/usr/lib/modprobe.d/nvidia-installer-disable-nouveau.conf"
    host = healthy_550(files={conf: NOUVEAU_BLACKLIST, "/etc/os-release": OS_ROCKY},
                       dirs={"/sys/module/nouveau": ["parameters"]})
    f = only(host, "driver.nouveau_conflict")
    assert f.severity == "warning"  # nvidia is loaded and nouveau drives nothing
    assert f.fix.commands == ["sudo dracut --force", "sudo reboot"]
    assert "550.54.15" in f.title
    assert "`sudo dracut --force`" in f.detail  # the detail names the rebuild, not only the fix's commands


def test_nouveau_bound_despite_blacklist_file_names_update_initramfs():
    # Ubuntu: blacklist-nouveau.conf written, initramfs never rebuilt, so nouveau still takes the GPU at boot
    # (corpus case ubuntu1604-nouveau-blacklist-without-initramfs-update)
    host = not_loaded_machine(OS_UBUNTU, UBUNTU, files={f"/lib/modules/{UBUNTU}/updates/dkms/nvidia.ko": "",
                                                        "/etc/modprobe.d/blacklist-nouveau.conf": NOUVEAU_BLACKLIST})
    host.doc["dirs"]["/sys/module/nouveau"] = {"entries": ["parameters"]}
    host.doc["dirs"]["/sys/bus/pci/drivers/nouveau"] = {"entries": PCI_DRIVER_DIR}
    host = type(host)(host.doc)
    f = only(host, "driver.nouveau_conflict")
    assert f.severity == "error"
    assert "initramfs still loads nouveau" in f.detail and "`sudo update-initramfs -u`" in f.detail
    assert "dracut" not in f.detail
    assert f.fix.commands == ["sudo update-initramfs -u", "sudo reboot"]


def test_nouveau_bound_despite_its_blacklist_with_no_driver_installed_is_the_finding_not_install_a_driver():
    # no NVIDIA driver yet; nvidia-installer (or the user) wrote its blacklist file, the initramfs was never rebuilt,
    # nouveau still takes the GPU at boot and the installer stops on it (NVIDIA's README, "What if my initial
    # ramdisk image contains Nouveau?")
    conf = "/etc/modprobe.d/nvidia-installer-disable-nouveau.conf"
    host = machine(files=dict(NVIDIA_PCI, **{"/etc/os-release": OS_UBUNTU, conf: NOUVEAU_BLACKLIST}),
                   dirs={"/sys/module/nouveau": ["parameters"], "/sys/bus/pci/drivers/nouveau": PCI_DRIVER_DIR})
    f = only(host, "driver.nouveau_conflict")  # and not also driver.not_installed: one root cause
    assert f.severity == "error" and "0000:01:00.0" in f.title and "no NVIDIA driver is installed" in f.title
    assert "initramfs still loads nouveau" in f.detail and "currently in use by your system" in f.detail
    assert f.fix.commands[:2] == ["sudo update-initramfs -u", "sudo reboot"]
    assert f.fix.install == "envdoctor install driver"
    # the blacklist in effect (nouveau loaded by nothing, bound to nothing): only "install a driver"
    host = machine(files=dict(NVIDIA_PCI, **{"/etc/os-release": OS_UBUNTU, conf: NOUVEAU_BLACKLIST}))
    assert codes(host) == ["driver.not_installed"]


def test_nova_core_bound_is_a_conflict():
    host = healthy_550(dirs={"/sys/module/nova_core": ["parameters"], "/sys/bus/pci/drivers/nova_core": PCI_DRIVER_DIR})
    f = only(host, "driver.nova_conflict")
    assert f.severity == "error"
    assert any("blacklist-nova.conf" in c for c in f.fix.commands)


# -- module for the running kernel, Secure Boot -----------------------------------------------

def only_of(host, code):
    hits = [f for f in findings(host) if f.code == code]
    assert len(hits) == 1, [f.code for f in findings(host)]
    return hits[0]


def test_kernel_updated_without_module_asks_for_headers_and_dkms():
    release = "4.18.0-553.el8_10.ppc64le"
    host = not_loaded_machine(OS_ROCKY, release, commands=[{"argv": ["dkms", "status"], "stdout": DKMS_RHEL}])
    # this machine has no headers for the new kernel either (the cause): said as its own finding
    assert release in only_of(host, "driver.kernel_headers_missing").title
    host.doc["dirs"]["/lib/modules/%s/build" % release] = {"entries": ["Makefile"]}
    host = type(host)(host.doc)
    assert "driver.kernel_headers_missing" not in codes(host)
    f = only(host, "driver.no_module_for_kernel")
    assert release in f.title and "4.18.0-513.5.1.el8_9.ppc64le" in f.title and "550.54.15" in f.title
    assert f.fix.commands == ['sudo dnf install -y "kernel-devel-$(uname -r)" "kernel-headers-$(uname -r)"',
                              "sudo dkms autoinstall", "sudo modprobe nvidia"]


def test_module_built_for_running_kernel_but_not_loaded_is_not_loaded():
    host = not_loaded_machine(OS_UBUNTU, UBUNTU, files={f"/lib/modules/{UBUNTU}/updates/dkms/nvidia.ko": ""},
                              commands=[{"argv": ["modinfo", "-F", "signer", "nvidia"], "stdout": SIGNER_DKMS}])
    f = only(host, "driver.not_loaded")
    assert "550.54.15" in f.title and "0000:01:00.0" in f.title
    assert f.fix.commands[0] == "sudo modprobe nvidia"


def test_unsigned_module_under_secure_boot_gives_the_mok_steps():
    host = not_loaded_machine(OS_UBUNTU, UBUNTU, files={f"/lib/modules/{UBUNTU}/updates/dkms/nvidia.ko": ""},
                              commands=[{"argv": ["modinfo", "-F", "signer", "nvidia"], "stdout": UNSIGNED}],
                              b64={SECURE_BOOT_VAR: SB_ON})
    f = only(host, "driver.module_unsigned_secure_boot")
    assert f.severity == "error"
    assert "550.54.15" in f.title
    assert f.fix.commands[0] == "sudo mokutil --import /var/lib/dkms/mok.pub"


def test_unsigned_module_without_secure_boot_is_quiet():
    host = healthy_550(commands=[{"argv": ["modinfo", "-F", "signer", "nvidia"], "stdout": UNSIGNED}])
    assert codes(host) == []


# -- device nodes ----------------------------------------------------------------------------

def test_missing_gpu_nodes_while_module_loaded():
    host = healthy_550(dirs={"/dev": ["null", "nvidia0", "nvidiactl", "nvidia-uvm"]})  # NVML sees 4 GPUs
    f = only(host, "driver.device_nodes_missing")
    assert "/dev/nvidia1" in f.title and "/dev/nvidia3" in f.title and "/dev/nvidia0" not in f.title
    assert "sudo nvidia-modprobe -c 0 -u" in f.fix.commands


def test_missing_nodes_in_a_container_point_at_gpus_all():
    host = machine(files={"/.dockerenv": "", "/proc/driver/nvidia/version": PROC_550,
                          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": ""},
                   dirs={"/dev": ["null", "zero"]}, nvml=nvml_ok("550.54.15", 12040))
    f = only(host, "driver.device_nodes_missing")
    assert "container-toolkit" in f.components
    assert f.fix.commands[0] == "docker run --gpus all ..."


# A container started without GPUs (`docker run` without --gpus / the nvidia runtime): the host's module shows through
# /proc/driver/nvidia and /sys, but the NVIDIA Container Toolkit injected no device node and no driver library
# (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/docker-specialized.html: unset
# NVIDIA_VISIBLE_DEVICES "has the same behavior as runc"). Its /dev is Docker's default set (moby's
# oci/defaults.go devices null, zero, full, random, urandom, tty, console, ptmx, plus the pts, shm and mqueue
# mounts and the fd/stdin/stdout/stderr/core links); libnvidia-ml not found is NVML_ERROR_LIBRARY_NOT_FOUND (12).
DEV_NO_GPUS = ["console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
               "stdout", "tty", "urandom", "zero"]


def started_without_gpus(marker: Dict[str, str], dev: Optional[List[str]] = DEV_NO_GPUS, **extra: str):
    files = dict(marker, **{"/proc/driver/nvidia/version": PROC_535})
    files.update(extra)
    return machine(files=files, dirs={"/dev": dev} if dev is not None else {},
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))


def test_container_started_without_gpus_names_the_request_not_a_driver_install():
    found = findings(started_without_gpus({"/.dockerenv": ""}))
    assert [f.code for f in found] == ["driver.device_nodes_missing"], [(f.code, f.title) for f in found]
    f = only(started_without_gpus({"/.dockerenv": ""}), "driver.device_nodes_missing")
    assert f.severity == "error"
    assert "started without GPUs" in f.title and "/dev/nvidia*" in f.title and "535.113.01" in f.title
    assert f.fix.commands[0] == "docker run --gpus all ..."
    assert any("--runtime=nvidia" in c and "NVIDIA_VISIBLE_DEVICES=all" in c for c in f.fix.commands)
    assert not any("apt-get" in c for c in f.fix.commands)
    assert "container-toolkit" in f.source["url"]


def test_container_without_gpus_when_dev_could_not_be_listed_rests_on_the_libraries():
    f = only(started_without_gpus({"/.dockerenv": ""}, dev=None), "driver.device_nodes_missing")
    assert "started without GPUs" in f.title and "/dev/nvidia*" in f.title
    assert "could not be listed" in f.detail


def test_podman_container_without_gpus_gets_the_cdi_request():
    f = only(started_without_gpus({"/run/.containerenv": ""}), "driver.device_nodes_missing")
    assert f.fix.commands == ["sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
                              "podman run --device nvidia.com/gpu=all ..."]


def test_kubernetes_pod_without_gpus_gets_the_resource_request():
    # /proc/1/cgroup of a pod's container (cgroup v1 path under kubepods, as the kubelet names it)
    f = only(started_without_gpus({"/proc/1/cgroup": "12:devices:/kubepods/besteffort/pod1234/abcd\n"}),
             "driver.device_nodes_missing")
    assert "nvidia.com/gpu" in f.fix.text and f.fix.commands == []


def test_container_given_gpus_is_quiet():
    host = machine(files={"/.dockerenv": "", "/proc/driver/nvidia/version": PROC_550,
                          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": "",
                          "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15": ""},
                   dirs={"/dev": DEV_NO_GPUS + ["nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"]},
                   nvml=nvml_ok("550.54.15", 12040))
    assert codes(host) == []


def test_container_with_nodes_but_no_libraries_is_not_said_to_lack_gpus():
    # GPU nodes passed in (the request was made), libnvidia-ml not: another cause, not "started without GPUs"
    host = machine(files={"/.dockerenv": "", "/proc/driver/nvidia/version": PROC_535},
                   dirs={"/dev": DEV_NO_GPUS + ["nvidia0", "nvidiactl", "nvidia-uvm"]},
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))
    assert not any("started without GPUs" in f.title for f in findings(host))


def test_host_without_userspace_is_still_userspace_missing():
    host = machine(files={"/proc/driver/nvidia/version": PROC_535}, dirs={"/dev": ["null", "zero"]},
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))
    found = findings(host)
    assert "driver.userspace_missing" in [f.code for f in found]
    assert not any("started without GPUs" in f.title for f in found)


# -- NVSwitch and fabric manager -------------------------------------------------------------

@pytest.mark.parametrize("state, rc", [("inactive", 3), ("failed", 3)])
def test_nvswitch_without_fabric_manager(state, rc):
    host = healthy_550(files={"/etc/os-release": OS_UBUNTU},
                       dirs={"/dev": DEV_4GPU + ["nvidia-nvswitch0", "nvidia-nvswitchctl"]},
                       commands=[{"argv": ["systemctl", "is-active", "nvidia-fabricmanager"], "returncode": rc,
                                  "stdout": state + "\n"}])
    f = only(host, "driver.fabric_manager_not_running")
    assert f.severity == "error" and "fabric-manager" in f.components
    assert state in f.title and "550.54.15" in f.title
    assert "802" in f.detail
    assert f.fix.commands[:2] == ["sudo apt-get install -y nvidia-fabricmanager-550=550.54.15-*",
                                  "sudo systemctl enable --now nvidia-fabricmanager"]


def test_nvswitch_with_active_fabric_manager_is_quiet():
    host = healthy_550(dirs={"/dev": DEV_4GPU + ["nvidia-nvswitch0", "nvidia-nvswitchctl"]},
                       commands=[{"argv": ["systemctl", "is-active", "nvidia-fabricmanager"], "stdout": "active\n"}])
    assert codes(host) == []


# -- forward compatibility -------------------------------------------------------------------

def compat_machine(gpu_name: str):
    # /usr/local/cuda-12.4/compat/libcuda.so.550.54.15: the file cuda-compat-12-4 installs (NVIDIA's forward
    # compatibility guide, "Installing the CUDA Forward Compatibility Package"); version.json of CUDA 12.4.1.
    version_json = '{"cuda" : {"name" : "CUDA SDK", "version" : "12.4.1"}}'
    host = healthy_550(files={"/usr/local/cuda-12.4/version.json": version_json,
                              "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15": ""},
                       nvml=with_devices(nvml_ok("535.104.12", 12020), [gpu_name]))
    host.doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-12.4/compat"
    host.doc["files"]["/sys/module/nvidia/version"] = {"text": "535.104.12\n"}
    return host


def test_forward_compat_on_geforce_is_an_error():
    f = only(compat_machine("NVIDIA GeForce RTX 3060"), "driver.forward_compat_unsupported_gpu")
    # CUDA certainly fails (804): a board named GeForce is never Data Center, whatever the matrix row's status
    assert f.severity == "error"
    assert "GeForce RTX 3060" in f.title and "550.54.15" in f.title
    assert f.source["url"] == "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"


def test_forward_compat_on_a_data_center_gpu_is_quiet():
    assert "driver.forward_compat_unsupported_gpu" not in codes(compat_machine("NVIDIA A100-SXM4-80GB"))


def older_compat_machine(**extra: Any):
    # driver 550.54.15 runs (NVML, module, libraries); the image's cuda-compat-12-2 libcuda is 535.104.05, the driver
    # CUDA 12.2.2 shipped with (cuda_12.2.2_535.104.05_linux.run): a compat libcuda older than the running driver
    # (corpus case vertex-image-compat-first-older-than-injected-driver: a cloud service upgraded the driver)
    version_json = '{"cuda" : {"name" : "CUDA SDK", "version" : "12.2.2"}}'
    files = {"/usr/local/cuda-12.2/version.json": version_json, "/usr/local/cuda-12.2/compat/libcuda.so.535.104.05": ""}
    files.update(extra.pop("files", {}))
    return healthy_550(files=files, nvml=with_devices(nvml_ok("550.54.15", 12040), ["NVIDIA A100-SXM4-80GB"]),
                       **extra)


def test_forward_compat_older_than_the_running_driver_on_ld_library_path_is_an_error():
    host = older_compat_machine()
    host.doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-12.2/compat"
    f = only(host, "driver.forward_compat_older_than_driver")
    assert f.severity == "error"
    assert "535.104.05" in f.title and "550.54.15" in f.title and "/usr/local/cuda-12.2/compat" in f.title
    assert "803" in f.title
    assert any("grep -vx /usr/local/cuda-12.2/compat" in c for c in f.fix.commands)


def test_forward_compat_older_than_the_running_driver_through_the_ld_cache_is_an_error():
    # cuda-compat's /etc/ld.so.conf.d entry puts the compat libcuda in the loader cache: no LD_LIBRARY_PATH needed,
    # and its libcuda.so.1 is no "stale link left by an update"
    compat = "/usr/local/cuda-12.2/compat/libcuda.so.535.104.05"
    cache = ("2 libs found in cache `/etc/ld.so.cache'\n"
             "\tlibcuda.so.1 (libc6,x86-64) => %s\n"
             "\tlibc.so.6 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libc.so.6\n" % compat)
    host = older_compat_machine(files={"/usr/sbin/ldconfig": ""},
                                commands=[{"argv": ["/usr/sbin/ldconfig", "-p"], "stdout": cache}])
    f = only(host, "driver.forward_compat_older_than_driver")
    assert "via ldconfig cache" in f.title and "535.104.05" in f.title


def test_forward_compat_not_on_the_loader_path_is_quiet():
    assert findings(older_compat_machine()) == []  # installed but nothing loads it


# -- WSL2 ------------------------------------------------------------------------------------

def wsl(files: Optional[Dict[str, str]] = None, wsl_libs: Optional[List[str]] = None, nvml=None):
    f = {"/proc/version": WSL_PROC_VERSION, "/etc/os-release": OS_UBUNTU}
    f.update(files or {})
    dirs = {"/dev": ["dxg", "null"]}
    if wsl_libs is not None:
        dirs["/usr/lib/wsl/lib"] = wsl_libs
    return machine(files=f, dirs=dirs, nvml=nvml or nvml_ok("591.97", 13010),
                   release="5.15.133.1-microsoft-standard-WSL2")


def test_linux_driver_installed_inside_wsl():
    host = wsl(files={"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": ""}, wsl_libs=WSL_LIBS)
    f = only(host, "driver.linux_driver_in_wsl")
    assert "550.54.15" in f.title and "591.97" in f.title
    assert f.fix.commands[0] == "sudo apt-get purge -y 'nvidia-driver-*' 'libnvidia-compute-*' 'nvidia-utils-*'"


def test_wsl_without_windows_driver_libraries():
    host = wsl(wsl_libs=[], nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))
    f = only(host, "driver.wsl_libcuda_missing")
    assert f.severity == "warning"  # no GPU can be seen at all from inside WSL: maybe there is none


def test_wsl_libraries_present_but_not_on_the_loader_path():
    host = wsl(wsl_libs=WSL_LIBS, nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))
    f = only(host, "driver.wsl_lib_not_in_loader_path")
    assert f.fix.commands == ["echo /usr/lib/wsl/lib | sudo tee /etc/ld.so.conf.d/ld.wsl.conf", "sudo ldconfig"]


# NVML through WSL's libnvidia-ml when the Windows driver hands Linux no GPU (microsoft/WSL#6772: Windows Insider
# build 21343 with driver 465.89; nvidia-smi "couldn't communicate with the NVIDIA driver").
WSL_NOT_LOADED = nvml_error("NVML_ERROR_DRIVER_NOT_LOADED", 9)


def test_wsl2_windows_driver_reaching_no_gpu_is_an_error_never_silent():
    f = only(wsl(wsl_libs=WSL_LIBS, nvml=WSL_NOT_LOADED), "driver.nvml_failed")
    assert f.severity == "error"
    assert f.title.startswith("WSL2: the Windows NVIDIA driver gives this WSL instance no GPU")
    assert "/dev/dxg is there, so the failure is on the Windows side" in f.detail
    assert "do not install a Linux NVIDIA driver inside WSL" in f.detail
    assert f.fix.commands[:2] == ["nvidia-smi.exe", "cmd.exe /c ver"] and "wsl.exe --update" in f.fix.commands
    assert not any("modprobe" in str(c) for c in f.fix.commands)  # no Linux kernel module on WSL2


def test_wsl2_without_dev_dxg_says_the_gpu_device_is_missing():
    host = machine(files={"/proc/version": WSL_PROC_VERSION, "/etc/os-release": OS_UBUNTU},
                   dirs={"/dev": ["null"], "/usr/lib/wsl/lib": WSL_LIBS}, nvml=WSL_NOT_LOADED,
                   release="5.15.133.1-microsoft-standard-WSL2")
    assert probe_facts(host).value("driver.wsl_dxg") is False
    f = only(host, "driver.nvml_failed")
    assert "/dev/dxg, WSL 2's GPU device, is missing" in f.detail


def test_wsl2_linux_driver_inside_is_told_once_not_as_an_nvml_failure():
    host = wsl(files={"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": ""}, wsl_libs=WSL_LIBS,
               nvml=WSL_NOT_LOADED)
    assert codes(host) == ["driver.linux_driver_in_wsl"]


# WSL 1 (microsoft/WSL#5554): kernel release 4.4.0-19041-Microsoft, no /dev/dxg, no /usr/lib/wsl; the Linux
# driver 440.100 installed with apt answers NVML_ERROR_DRIVER_NOT_LOADED.
WSL1_RELEASE = "4.4.0-19041-Microsoft"


def wsl1(files: Optional[Dict[str, str]] = None, nvml=None):
    f = {"/etc/os-release": OS_UBUNTU}
    f.update(files or {})
    return machine(files=f, dirs={"/dev": ["null"]}, release=WSL1_RELEASE,
                   nvml=nvml or nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))


def test_linux_driver_under_wsl1_is_an_error_naming_wsl1():
    host = wsl1(files={"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.440.100": "",
                       "/usr/lib/x86_64-linux-gnu/libcuda.so.440.100": ""},
                nvml=nvml_error("NVML_ERROR_DRIVER_NOT_LOADED", 9))
    assert probe_facts(host).value("os.wsl") == "WSL1"
    f = only(host, "driver.wsl1_no_gpu")  # (driver.not_loaded yields to it: one root cause)
    assert f.severity == "error"
    assert f.title == ("This Linux runs under WSL 1, which gives Linux no GPU, and a Linux NVIDIA driver 440.100 is "
                       "installed in it")
    assert "4.4.0-19041-Microsoft" in f.detail
    assert f.fix.commands[0].startswith("sudo apt-get purge -y 'nvidia-driver-*'")
    assert f.fix.commands[-1] == 'wsl.exe --set-version "$WSL_DISTRO_NAME" 2'


def test_cuda_toolkit_alone_under_wsl1_is_a_warning():
    from tests.test_probe_cuda import VERSION_JSON_11_5

    host = wsl1(files={"/usr/local/cuda-11.5/version.json": VERSION_JSON_11_5, "/usr/local/cuda-11.5/bin/nvcc": ""})
    f = only(host, "driver.wsl1_no_gpu")
    assert f.severity == "warning" and "WSL 1" in f.title and "CUDA toolkit 11.5" in f.title
    assert f.fix.commands == ["wsl.exe -l -v   # VERSION 1: this distribution runs under WSL 1",
                              'wsl.exe --set-version "$WSL_DISTRO_NAME" 2']


def test_wsl1_without_any_nvidia_or_cuda_software_is_quiet():
    assert findings(wsl1()) == []


def test_native_linux_driver_not_loaded_is_still_the_module_question():
    host = machine(files={"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.440.100": ""},
                   nvml=nvml_error("NVML_ERROR_DRIVER_NOT_LOADED", 9))
    assert "driver.wsl1_no_gpu" not in codes(host) and "driver.not_loaded" in codes(host)


# The links of the Windows driver's libraries as WSL2 mounts them (`ls -l /usr/lib/wsl/lib`, quoted in
# microsoft/WSL#5548: "libcuda.so -> libcuda.so.1.1", "libcuda.so.1 -> libcuda.so.1.1"), found through the loader
# cache ld.wsl.conf fills; and the links a native driver 550.54.15 installs beside libnvidia-egl-wayland, a library
# of its own release (libnvidia-egl-wayland.so.1 -> libnvidia-egl-wayland.so.1.1.13, NVIDIA/egl-wayland 1.1.13).
WSL_LINKS = {"/usr/lib/wsl/lib/libcuda.so.1": "libcuda.so.1.1", "/usr/lib/wsl/lib/libcuda.so": "libcuda.so.1.1"}
WSL_CACHE = ("3 libs found in cache `/etc/ld.so.cache'\n"
             "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1\n"
             "\tlibcuda.so (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so\n"
             "\tlibnvidia-ml.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libnvidia-ml.so.1\n")


def test_a_soname_suffix_that_is_not_a_driver_version_is_never_a_stale_link():
    ldconfig = [{"argv": ["/usr/sbin/ldconfig", "-p"], "stdout": WSL_CACHE}]
    files = {"/proc/version": WSL_PROC_VERSION, "/etc/os-release": OS_UBUNTU, "/usr/sbin/ldconfig": "",
             "/usr/lib/wsl/lib/libcuda.so.1.1": ""}
    host = machine(files=files, dirs={"/dev": ["dxg", "null"], "/usr/lib/wsl/lib": WSL_LIBS}, commands=ldconfig,
                   nvml=nvml_ok("591.97", 13010), release="5.15.133.1-microsoft-standard-WSL2")
    host.doc["links"].update({p: {"target": t} for p, t in WSL_LINKS.items()})
    assert probe_facts(host).value("driver.installed") is True and findings(host) == []
    # a native driver's own library of another release beside its libcuda.so.1
    lib = "/usr/lib/x86_64-linux-gnu/"
    cache = ("1 libs found in cache `/etc/ld.so.cache'\n\tlibcuda.so.1 (libc6,x86-64) => %slibcuda.so.1\n" % lib)
    host = healthy_550(files={lib + "libnvidia-egl-wayland.so.1.1.13": "", "/usr/sbin/ldconfig": ""})
    host.doc["commands"].append({"argv": ["/usr/sbin/ldconfig", "-p"], "stdout": cache, "returncode": 0,
                                 "stderr": "", "timed_out": False})
    host.doc["links"].update({lib + "libnvidia-egl-wayland.so.1": {"target": "libnvidia-egl-wayland.so.1.1.13"},
                              lib + "libcuda.so.1": {"target": "libcuda.so.550.54.15"}})
    host.doc["dirs"][lib.rstrip("/")]["entries"] += ["libnvidia-egl-wayland.so.1", "libcuda.so.1"]
    host = type(host)(host.doc)
    assert probe_facts(host).value("driver.library_links") == [
        {"link": lib + "libcuda.so.1", "target": lib + "libcuda.so.550.54.15", "version": "550.54.15",
         "exists": True}]
    assert findings(host) == []


# -- NVML errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("err, code, words", [
    ("NVML_ERROR_NO_PERMISSION", "driver.nvml_no_permission", "ls -l /dev/nvidia*"),
    ("NVML_ERROR_GPU_IS_LOST", "gpu.lost", "sudo dmesg -T | grep -i xid"),
])
def test_nvml_errors(err, code, words):
    host = machine(files={"/proc/driver/nvidia/version": PROC_550,
                          "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15": ""},
                   dirs={"/dev": ["nvidia0", "nvidiactl"]}, nvml=nvml_error(err, 4))
    f = only(host, code)
    assert f.severity == "error"
    assert words in f.fix.commands
    assert "550.54.15" in f.title


def test_hung_nvml_points_at_d_state_and_bug_report():
    host = machine(files={"/proc/driver/nvidia/version": PROC_550},
                   dirs={"/dev": ["nvidia0", "nvidiactl"]},
                   commands=[{"argv": QUERY, "timed_out": True, "returncode": None, "duration": 10.0}],
                   nvml={"error": "timed_out", "message": "NVML query did not answer within 10.0s"})
    f = only(host, "driver.nvml_hung")
    assert "sudo nvidia-bug-report.sh" in f.fix.commands
    assert any("/D/" in c for c in f.fix.commands)


def test_no_driver_probe_facts_means_no_findings():
    assert list(driver_health(CheckContext(Facts(), []))) == []


# -- every captured machine --------------------------------------------------------------------

EXPECTED = {
    "centos7-a100-cuda115": [],
    "centosstream9-8xh100": [],
    "conda-ubuntu2204-h100": [],
    "debian12-nogpu": ["gpu.none"],
    "dual-socket-8xk80-pcie-switches": [],
    "hgx-h100-8gpu-nvswitch": [],
    "pipwheels-ubuntu2204-a100": [],
    "rocky8-4xa100-conda": [],
    "rocky9-h100-old-torch": [],
    "sglkernel012-old-abi-on-torch270": [],
    "sglkernel019-on-torch270": [],
    "ubuntu2004-rtx3060-cuda118": [],
    "ubuntu2204-a100-mig": [],
    "ubuntu2404-driver-mismatch": ["driver.library_mismatch"],
    "ubuntu2404-open-module-no-nvml": ["driver.userspace_missing"],
    "ubuntu2204-hostile-broken": ["driver.nvml_hung"],
    "wsl2-ubuntu2204-rtx4070": [],
}


def test_every_captured_machine_has_an_expectation():
    assert sorted(EXPECTED) == machine_names()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_captured_machine(name):
    found = findings(load_machine(name))
    assert sorted(f.code for f in found) == EXPECTED[name], [(f.code, f.title) for f in found]
    if name == "debian12-nogpu":
        assert [f.severity for f in found] == ["info"]
    if name == "ubuntu2404-driver-mismatch":
        assert "580.173.02" in found[0].title and "580.178.04" in found[0].title


def test_no_gpu_is_only_said_when_the_pci_bus_was_read():
    """Found by the second audit: with no driver and nothing known of the PCI bus (the GPU facts said
    "cannot tell whether an NVIDIA GPU is present"), gpu.none still said "No NVIDIA GPU"."""
    from envdoctor.checks import CheckContext
    from envdoctor.checks.driver_health import driver_health
    from envdoctor.facts import Facts, ok, unknown

    base = [ok("driver.installed", False, "test")]
    quiet = Facts(base + [unknown("gpu.pci_devices", "cannot list /sys/bus/pci/devices (EACCES)", "test")])
    assert "gpu.none" not in {f.code for f in driver_health(CheckContext(quiet, []))}
    known = Facts(base + [ok("gpu.pci_devices", [], "test")])
    assert "gpu.none" in {f.code for f in driver_health(CheckContext(known, []))}


# -- forward compatibility in NVIDIA's NGC layout ------------------------------------------------------------

def ngc_compat_machine(driver: str, cuda: int, compat: str, toolkit: str, version_txt: str,
                       gpu: str = "Tesla T4"):
    """A container of NVIDIA's NGC images of the CUDA 10/11 era: the toolkit at /usr/local/cuda-X.Y, its cuda-compat
    libraries in compat/lib (with their soname links, libcuda.so.1 -> libcuda.so.<compat driver>), and the images'
    LD_LIBRARY_PATH=/usr/local/cuda/compat/lib:/usr/local/nvidia/lib:/usr/local/nvidia/lib64 (tritonserver 20.06's,
    quoted in a public run command); the host's driver as NVML answers it."""
    lib = "/usr/local/%s/compat/lib/" % toolkit
    files = {"/usr/local/%s/version.txt" % toolkit: version_txt, lib + "libcuda.so." + compat: "",
             lib + "libnvidia-ptxjitcompiler.so." + compat: "", "/.dockerenv": "",
             "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + driver: "",
             "/usr/lib/x86_64-linux-gnu/libcuda.so." + driver: ""}
    host = machine(files=files, nvml=with_devices(nvml_ok(driver, cuda), [gpu]))
    host.doc["links"].update({
        "/usr/local/cuda": {"target": toolkit},
        lib + "libcuda.so.1": {"target": "libcuda.so." + compat},
        lib + "libnvidia-ptxjitcompiler.so.1": {"target": "libnvidia-ptxjitcompiler.so." + compat}})
    host.doc["dirs"][lib.rstrip("/")]["entries"] += ["libcuda.so.1", "libnvidia-ptxjitcompiler.so.1"]
    host.doc["dirs"]["/usr/local"]["entries"].append("cuda")
    host.doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat/lib:/usr/local/nvidia/lib:/usr/local/nvidia/lib64"
    return type(host)(host.doc)


def all_findings(host) -> List[Finding]:
    from envdoctor.checks import run_checks

    return [f for f in run_checks(CheckContext(probe_facts(host), [])) if f.severity in ("warning", "error")]


def test_a_forward_compat_package_nvidias_table_lists_for_the_branch_runs_its_cuda():
    # driver R418 (CUDA 10.1) with CUDA 10.2's compat libraries (440.33.01, the driver CUDA 10.2 shipped with) on a
    # Tesla T4: NVIDIA CUDA and Drivers Support, Table 1, R418: "supports CUDA 10.2, CUDA 11.0 and CUDA 11.1
    # (through CUDA forward compatible upgrade)"
    host = ngc_compat_machine("418.126.02", 10010, "440.33.01", "cuda-10.2", "CUDA Version 10.2.89\n")
    facts = probe_facts(host)
    assert [c["path"] for c in facts.value("cuda.forward_compat")] == [
        "/usr/local/cuda-10.2/compat/lib/libcuda.so.440.33.01"]
    found = all_findings(host)
    assert not [f for f in found if f.code in ("driver.too_old_for_toolkit", "driver.stale_library_link",
                                                "driver.library_mismatch", "driver.forward_compat_unsupported_gpu")], \
        [(f.code, f.title) for f in found]


def test_a_forward_compat_package_the_branch_does_not_run_is_still_too_old():
    # the same R418 with CUDA 11.8's compat libraries (520.61.05, the driver CUDA 11.8.0 shipped with): Triton 22.05's
    # Driver Requirements: "users should upgrade from all R418, R440, and R460 drivers, which are not
    # forward-compatible with CUDA 11.7"
    host = ngc_compat_machine("418.126.02", 10010, "520.61.05", "cuda-11.8", "CUDA Version 11.8.89\n")
    f = next(f for f in all_findings(host) if f.code == "driver.too_old_for_toolkit")
    assert f.severity == "error" and "11.8" in f.title
    assert "forward" in f.detail and "11.6" in f.detail and "R418" in f.detail and "11.7 and later" in f.detail
    # CUDA 11.2, which NVIDIA's notes name neither way for R418: judged as any CUDA newer than the driver (an error)
    host = ngc_compat_machine("418.126.02", 10010, "460.27.04", "cuda-11.2", "CUDA Version 11.2.67\n")
    f = next(f for f in all_findings(host) if f.code == "driver.too_old_for_toolkit")
    assert f.severity == "error" and "11.2" in f.title
    # on a GeForce board forward compatibility does not apply at all: error 804
    host = ngc_compat_machine("418.126.02", 10010, "440.33.01", "cuda-10.2", "CUDA Version 10.2.89\n",
                              gpu="GeForce RTX 2080 Ti")
    assert any(f.code == "driver.forward_compat_unsupported_gpu" and f.severity == "error"
               for f in all_findings(host))


# forward compatibility per branch family: each pair quoted in driver_branches.json from the Driver Requirements
# paragraph of the NGC release notes of a container of that CUDA (release, toolkit, compat driver = the driver the
# CUDA release shipped with, as its cuda-compat package carries it)
@pytest.mark.parametrize("driver, cuda_code, compat, toolkit, version_txt, gpu", [
    # TensorFlow 18.12 (CUDA 10.0): "you may use NVIDIA driver release 384"
    ("384.183", 9000, "410.48", "cuda-10.0", "CUDA Version 10.0.130\n", "Tesla P100-PCIE-16GB"),
    # PyTorch 19.03 (CUDA 10.1): "384.111+ or 410"
    ("410.104", 10000, "418.39", "cuda-10.1", "CUDA Version 10.1.105\n", "Tesla V100-SXM2-16GB"),
    # PyTorch 19.11 (CUDA 10.2): "396, 384.111+, 410 or 418.xx"
    ("410.129", 10000, "440.33.01", "cuda-10.2", "CUDA Version 10.2.89\n", "Tesla P100-PCIE-16GB"),
    # Triton 21.04 (CUDA 11.3): "418.40 (or later R418), 440.33 (or later R440), 450.51 (or later R450), or 460.27"
    ("418.197.02", 10010, "465.19.01", "cuda-11.3", "CUDA Version 11.3.58\n", "Tesla T4"),
    # Triton 22.01 (CUDA 11.6): "... 440.33 (or later R440) ... or 470.57 (or later R470)"
    ("440.118.02", 10020, "510.39.01", "cuda-11.6", "CUDA Version 11.6.2\n", "Tesla V100-SXM2-16GB"),
    ("470.161.03", 11040, "510.39.01", "cuda-11.6", "CUDA Version 11.6.2\n", "NVIDIA A100-SXM4-40GB"),
])
def test_forward_compat_runs_the_cuda_nvidias_notes_list_for_the_branch(driver, cuda_code, compat, toolkit,
                                                                         version_txt, gpu):
    found = all_findings(ngc_compat_machine(driver, cuda_code, compat, toolkit, version_txt, gpu=gpu))
    assert not [f for f in found if f.code.startswith("driver.")
                and f.code != "driver.branch_end_of_life"], [(f.code, f.title) for f in found]


@pytest.mark.parametrize("driver, cuda_code, compat, toolkit, version_txt, ends", [
    # TensorFlow 23.01 (CUDA 12.0): "users should upgrade from all R418, R440, and R460 drivers, which are not
    # forward-compatible"; Triton 22.05: R460 not forward-compatible with CUDA 11.7
    ("460.106.00", 11020, "525.85.12", "cuda-12.0", "CUDA Version 12.0.140\n", "11.7"),
    # Triton 24.10 (CUDA 12.6): "users should upgrade from all R418, R440, R450, R460, R510 ..."
    ("510.108.03", 11060, "560.35.03", "cuda-12.6", "CUDA Version 12.6.77\n", "12.6"),
    ("450.236.01", 11000, "560.35.03", "cuda-12.6", "CUDA Version 12.6.77\n", "12.6"),
])
def test_forward_compat_on_a_branch_nvidia_says_is_not_forward_compatible_is_an_error(
        driver, cuda_code, compat, toolkit, version_txt, ends):
    host = ngc_compat_machine(driver, cuda_code, compat, toolkit, version_txt, gpu="NVIDIA A100-SXM4-40GB")
    f = next(f for f in all_findings(host) if f.code == "driver.too_old_for_toolkit")
    assert f.severity == "error" and "R%s" % driver.split(".")[0] in f.detail
    assert "not forward-compatible with CUDA %s and later" % ends in f.detail


@pytest.mark.parametrize("gpu", ["TITAN RTX", "NVIDIA TITAN V", "NVIDIA GeForce RTX 2080 Ti"])
def test_forward_compat_on_a_consumer_board_is_an_error(gpu):
    # NVIDIA's forward-compatibility guide: "applicable only for systems with: NVIDIA Data Center GPUs. Select NGC
    # Server Ready SKUs of RTX cards. Jetson boards." TITAN boards are consumer products (NVIDIA's CUDA GPUs page
    # lists them under "GeForce and TITAN Products"): CUDA cannot initialise at all (error 804), whatever the matrix
    # row's status
    host = ngc_compat_machine("418.87.01", 10010, "440.33.01", "cuda-10.2", "CUDA Version 10.2.89\n", gpu=gpu)
    f = next(f for f in all_findings(host) if f.code == "driver.forward_compat_unsupported_gpu")
    assert f.severity == "error" and "804" in f.title


def test_forward_compat_on_a_workstation_board_is_a_warning():
    # a professional RTX board may be one of the "select NGC Server Ready SKUs": not certain, so a warning
    host = ngc_compat_machine("418.87.01", 10010, "440.33.01", "cuda-10.2", "CUDA Version 10.2.89\n",
                              gpu="Quadro RTX 6000")
    f = next(f for f in all_findings(host) if f.code == "driver.forward_compat_unsupported_gpu")
    assert f.severity == "warning"


def ngc_lib_real_machine(driver: str, cuda: int, gpu: str):
    """NVIDIA's NGC images of the CUDA 12 era (TensorFlow 23.01 here): the cuda-compat files in
    /usr/local/cuda-12.0/compat/lib.real (libcuda, libnvidia-nvvm, libnvidia-ptxjitcompiler with their soname
    links), compat/lib -> lib.real made by the image's entrypoint, /usr/local/cuda -> cuda-12.0, and the image's
    LD_LIBRARY_PATH starting /usr/local/cuda/compat/lib; the host's driver as NVML answers it."""
    real = "/usr/local/cuda-12.0/compat/lib.real/"
    compat = "525.85.12"
    files = {"/usr/local/cuda-12.0/version.json": '{"cuda" : {"name" : "CUDA SDK", "version" : "12.0.1"}}',
             real + "libcuda.so." + compat: "", real + "libnvidia-nvvm.so." + compat: "",
             real + "libnvidia-ptxjitcompiler.so." + compat: "", "/.dockerenv": "",
             "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + driver: "",
             "/usr/lib/x86_64-linux-gnu/libcuda.so." + driver: "",
             "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so." + driver: ""}
    host = machine(files=files, nvml=with_devices(nvml_ok(driver, cuda), [gpu]))
    host.doc["links"].update({
        "/usr/local/cuda": {"target": "cuda-12.0"},
        "/usr/local/cuda-12.0/compat/lib": {"target": "lib.real"},
        real + "libcuda.so.1": {"target": "libcuda.so." + compat},
        real + "libnvidia-nvvm.so.4": {"target": "libnvidia-nvvm.so." + compat},
        real + "libnvidia-ptxjitcompiler.so.1": {"target": "libnvidia-ptxjitcompiler.so." + compat},
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1": {"target": "libcuda.so." + driver},
        "/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1": {"target": "libnvidia-ptxjitcompiler.so." + driver}})
    host.doc["dirs"][real.rstrip("/")]["entries"] += ["libcuda.so.1", "libnvidia-nvvm.so.4",
                                                      "libnvidia-ptxjitcompiler.so.1"]
    host.doc["dirs"]["/usr/local/cuda-12.0/compat"]["entries"].append("lib")
    host.doc["dirs"]["/usr/lib/x86_64-linux-gnu"]["entries"] += ["libcuda.so.1", "libnvidia-ptxjitcompiler.so.1"]
    host.doc["dirs"]["/usr/local"]["entries"].append("cuda")
    host.doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat/lib:/usr/local/nvidia/lib:/usr/local/nvidia/lib64"
    return type(host)(host.doc)


def test_forward_compat_in_lib_real_is_found_and_its_own_links_are_not_the_drivers():
    # R470 runs CUDA 12.0 through the package (TensorFlow 23.01's Driver Requirements: "470.57 (or later R470)");
    # the package's libnvidia-nvvm.so.4 / libnvidia-ptxjitcompiler.so.1 carry 525.85.12 on purpose
    host = ngc_lib_real_machine("470.161.03", 11040, "NVIDIA A100-SXM4-40GB")
    facts = probe_facts(host)
    assert [c["real"] for c in facts.value("cuda.forward_compat")] == [
        "/usr/local/cuda-12.0/compat/lib.real/libcuda.so.525.85.12"]
    found = all_findings(host)
    assert not [f for f in found if f.code.startswith("driver.") and f.code != "driver.branch_end_of_life"], \
        [(f.code, f.title) for f in found]


def test_forward_compat_in_lib_real_on_a_geforce_board_is_an_error():
    f = next(f for f in all_findings(ngc_lib_real_machine("470.161.03", 11040, "NVIDIA GeForce RTX 3090"))
             if f.code == "driver.forward_compat_unsupported_gpu")
    assert f.severity == "error" and "GeForce RTX 3090" in f.title


def test_forward_compat_package_on_a_native_host():
    # a host (no container) with cuda-compat-12-4 installed as NVIDIA's guide shows (/usr/local/cuda-12.4/compat) and
    # LD_LIBRARY_PATH naming it, driver R535 (NVIDIA's notes list R535 for CUDA 12.6 and 13.0, not 12.4: they do not
    # say): the data-center GPU is not the question, the GeForce board is
    assert "driver.forward_compat_unsupported_gpu" not in codes(compat_machine("NVIDIA H100 80GB HBM3"))
    f = only(compat_machine("NVIDIA GeForce RTX 4090"), "driver.forward_compat_unsupported_gpu")
    assert f.severity == "error"


# -- forward compatibility in the matrix (driver_branches.json) -------------------------------

@pytest.mark.parametrize("driver, cuda, runs", [
    ("384.183", "10.0", True), ("384.183", "10.2", True), ("410.129", "10.1", True),
    ("418.87.01", "10.2", True), ("418.197.02", "11.6", True), ("418.197.02", "11.7", False),
    ("418.197.02", "12.0", False), ("418.87.01", "11.2", None),
    ("440.118.02", "11.6", True), ("440.118.02", "12.0", False),
    ("450.236.01", "11.8", True), ("450.236.01", "12.2", True), ("450.236.01", "12.6", False),
    ("460.106.00", "11.6", True), ("460.106.00", "12.0", False),
    ("470.161.03", "12.0", True), ("470.161.03", "12.6", True), ("510.108.03", "13.0", False),
    ("525.147.05", "12.6", True), ("535.274.02", "13.0", True), ("550.163.01", "13.0", True),
    ("570.195.03", "13.0", None), ("396.54", "10.2", None),
])
def test_forward_compat_runs_per_branch(driver, cuda, runs):
    from envdoctor.matrix import hardware as hw

    assert hw.forward_compat_runs(driver, cuda) is runs


def test_a_branch_kept_for_forward_compatibility_only_is_no_lifecycle_row():
    from envdoctor.matrix import hardware as hw

    # R410 is in no NVIDIA lifecycle table: no type or end of life to judge, only its forward compatibility
    assert hw.driver_branch("410.129") is None
    assert hw.forward_compat_row("410.129")["forward_compat_cuda"] == ["10.1", "10.2"]
    assert hw.driver_branch("470.161.03")["type"] == "ltsb"
    assert hw.validate_driver_branches([{"branch": "410", "forward_compat_cuda": ["10.1"],
                                         "forward_compat_ends": "11"}]) == [
        "driver_branches 410: forward_compat_ends must be a CUDA release (\"11.7\")"]
    assert hw.validate_driver_branches([{"branch": "410"}])  # neither lifecycle nor forward compatibility


# -- libnvidia-ml without libcuda ---------------------------------------------------------
# Ubuntu 16.04's nvidia-384 without libcuda1-384 (corpus case
# b36-ubuntu1604-quadro-m2200-nvidia384-without-libcuda1-384-cuda80-driver-insufficient): NVML answers, nvidia-smi
# works, and no libcuda.so.<version> is anywhere the loader looks.
OS_UBUNTU1604 = ('NAME="Ubuntu"\nVERSION="16.04.3 LTS (Xenial Xerus)"\nID=ubuntu\nID_LIKE=debian\n'
                 'PRETTY_NAME="Ubuntu 16.04.3 LTS"\nVERSION_ID="16.04"\nVERSION_CODENAME=xenial\n')
LIBCUDA_550 = "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"


def _without_libcuda(host):
    del host.doc["files"][LIBCUDA_550]
    entries = host.doc["dirs"].get("/usr/lib/x86_64-linux-gnu", {}).get("entries", [])
    if "libcuda.so.550.54.15" in entries:
        entries.remove("libcuda.so.550.54.15")
    return host


@pytest.mark.parametrize("os_release,package", [(OS_UBUNTU, "libnvidia-compute-550"),
                                                (OS_UBUNTU1604, "libcuda1-550")])
def test_libnvidia_ml_without_libcuda_is_an_error_naming_the_package(os_release, package):
    f = only(_without_libcuda(healthy_550(files={"/etc/os-release": os_release})), "driver.userspace_missing")
    assert f.severity == "error" and "libcuda" in f.title and "nvidia-smi works" in f.title
    assert f.fix.commands == ["sudo apt-get install -y " + package]


def test_libcuda_beside_libnvidia_ml_or_in_a_container_is_quiet():
    assert findings(healthy_550(files={"/etc/os-release": OS_UBUNTU})) == []
    container = _without_libcuda(healthy_550(files={"/etc/os-release": OS_UBUNTU, "/.dockerenv": ""}))
    assert "driver.userspace_missing" not in codes(container)


# -- libcuda without libnvidia-ml ---------------------------------------------------------
# Ubuntu's libcuda1-<branch> (16.04) carries libcuda, libnvidia-fatbinaryloader and libnvidia-ptxjitcompiler, not
# libnvidia-ml or nvidia-smi (those are nvidia-<branch>'s): a container given the GPUs' nodes and that package runs
# CUDA (corpus case healthy-b84c-...-libcuda1-390-...-devicequery-pass) while NVML is not found. systemd's PID 1
# writes the container manager's name to /run/systemd/container ("lxc" in an LXD container, whose /proc/1/cgroup
# shows only "/" under cgroup namespaces).
LIBCUDA_390 = "/usr/lib/x86_64-linux-gnu/libcuda.so.390.116"
PROC_390 = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  390.116  Sun Jan 27 07:21:36 PST 2019\n"
            "GCC version:  gcc version 5.4.0 20160609 (Ubuntu 5.4.0-6ubuntu1~16.04.11)\n")


def _libcuda_only(marker: Dict[str, str]):
    files = dict(marker, **{"/proc/driver/nvidia/version": PROC_390, LIBCUDA_390: "",
                            "/etc/os-release": OS_UBUNTU1604})
    return machine(files=files, dirs={"/dev": ["null", "nvidia0", "nvidiactl", "nvidia-uvm"]},
                   nvml=nvml_error("NVML_ERROR_LIBRARY_NOT_FOUND", 12))


def test_libcuda_without_nvml_in_a_systemd_marked_container_is_information():
    host = _libcuda_only({"/run/systemd/container": "lxc\n"})
    assert probe_facts(host).value("os.container") == "lxc"
    f = only(host, "driver.userspace_missing")
    assert f.severity == "info"
    assert "libcuda is installed" in f.title and "CUDA programs run" in f.title and "390.116" in f.title
    assert LIBCUDA_390 in f.detail and "container (lxc)" in f.detail


def test_libcuda_without_nvml_on_a_host_is_a_warning_not_a_missing_driver():
    f = only(_libcuda_only({}), "driver.userspace_missing")
    assert f.severity == "warning"
    assert "no user-space driver library" not in f.title and "libnvidia-ml" in f.title
    assert f.fix.commands == ["sudo apt-get install -y libnvidia-compute-390 nvidia-utils-390"]


def test_neither_library_is_still_the_missing_user_space_error():
    host = _libcuda_only({"/run/systemd/container": "lxc\n"})
    del host.doc["files"][LIBCUDA_390]
    host.doc["dirs"]["/usr/lib/x86_64-linux-gnu"]["entries"].remove("libcuda.so.390.116")
    f = only(host, "driver.userspace_missing")
    assert f.severity == "error" and "no user-space driver library" in f.title


def test_empty_systemd_container_marker_is_no_container():
    host = _libcuda_only({"/run/systemd/container": "\n"})
    assert probe_facts(host).value("os.container") is None


def test_libcuda_beside_an_nvml_library_that_does_not_load_is_still_the_error():
    host = _libcuda_only({})
    host.doc["files"]["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.390.116"] = ""
    host.doc["dirs"]["/usr/lib/x86_64-linux-gnu"]["entries"].append("libnvidia-ml.so.390.116")
    assert only(host, "driver.userspace_missing").severity == "error"

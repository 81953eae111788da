"""Verdicts that follow the consequence, across the stack (the toolkit, the driver and its libraries, containers,
the frameworks' libraries): each with a machine where it fires and one where it must stay quiet.  Facts are
written in the shapes the probes produce (see envdoctor/probes/cuda.py and driver.py); the corpus cases named in
each test are the real-world machines the rule was generalised from.
"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Fact, Facts, ok

CUDA116 = {"path": "/usr/local/cuda-11.6", "version": "11.6.55", "release": "11.6", "kind": "system",
           "source": "dir:/usr/local/cuda-11.6 (libcudart.so.11.6.55)", "cudart": "11.6.55", "compat": [],
           "found_by": "dir:/usr/local"}


def run(facts: List[Fact]) -> Dict[str, Any]:
    return {f.code: f for f in run_checks(CheckContext(Facts(facts), []))}


def rtx5090() -> List[Fact]:
    return [ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", "NVIDIA GeForce RTX 5090", "nvml:device.0.name"),
            ok("gpu.0.compute_capability", "12.0", "nvml:device.0.compute_capability")]


def toolkit_via_symlink(with_nvcc: bool) -> List[Fact]:
    return [ok("cuda.default_symlink", {"target": "cuda-11.6", "resolved": "/usr/local/cuda-11.6",
                                        "version": "11.6.55", "dangling": False}, "link:/usr/local/cuda"),
            ok("cuda.toolkits", [dict(CUDA116, nvcc=with_nvcc)], "derived")]


def test_a_runtime_only_toolkit_is_not_judged_as_a_compiler() -> None:
    # corpus: healthy-container-cuda116-on-newer-driver (a CUDA 11.6 base image on an RTX 5090 host)
    assert "cuda.gpu_newer_than_toolkit" not in run(rtx5090() + toolkit_via_symlink(with_nvcc=False))
    f = run(rtx5090() + toolkit_via_symlink(with_nvcc=True))["cuda.gpu_newer_than_toolkit"]
    assert "11.6" in f.title and "sm_120" in f.title


def driver_460_with_libcuda(libcuda_version: str) -> List[Fact]:
    return [ok("driver.installed", True, "file:/usr/lib/x86_64-linux-gnu"),
            ok("driver.nvml.status", "ok", "nvml:init"), ok("driver.version", "460.80", "nvml:system.driver_version"),
            ok("driver.userspace.libraries", ["/usr/lib/x86_64-linux-gnu/libcuda.so.%s" % libcuda_version,
                                              "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.460.80"], "derived"),
            ok("gpu.count", 1, "nvml:device_count"),
            ok("gpu.0.name", "NVIDIA GeForce RTX 3090", "nvml:device.0.name"),
            ok("gpu.0.compute_capability", "8.6", "nvml:device.0.compute_capability")]


def test_compat_libcuda_copied_into_a_loader_directory_is_an_error_on_geforce() -> None:
    # corpus: container-cuda-compat-injected-geforce-804 (NVIDIA/nvidia-docker#1515)
    f = run(driver_460_with_libcuda("465.19.01"))["driver.forward_compat_unsupported_gpu"]
    assert f.severity == "error" and "465.19.01" in f.title and "804" in f.title
    assert "cuda-compat" in f.fix.text and f.fix.install is None
    # the driver's own libcuda: nothing to say
    assert "driver.forward_compat_unsupported_gpu" not in run(driver_460_with_libcuda("460.80"))


def nvcc(version: str, path: str, toolkit: Any) -> Fact:
    return ok("cuda.nvcc", {"path": path, "resolved": path, "release": ".".join(version.split(".")[:2]),
                            "version": version, "toolkit": toolkit}, "command:%s --version" % path)


def test_two_toolkits_with_path_and_cuda_home_agreeing_is_a_deliberate_choice() -> None:
    # corpus: healthy-switch-cuda-113-beside-122 (CUDA 11.3 chosen by PATH and CUDA_HOME, /usr/local/cuda -> 12.2)
    link = ok("cuda.default_symlink", {"target": "/usr/local/cuda-12.2", "resolved": "/usr/local/cuda-12.2",
                                       "version": "12.2.2", "dangling": False}, "link:/usr/local/cuda")
    home = ok("cuda.home", {"var": "CUDA_HOME", "path": "/usr/local/cuda-11.3", "exists": True, "version": "11.3.1"},
              "env:CUDA_HOME")
    tk = nvcc("11.3.109", "/usr/local/cuda-11.3/bin/nvcc", "/usr/local/cuda-11.3")
    assert "cuda.toolkits_disagree" not in run([link, home, tk])
    # CUDA_HOME naming another toolkit than the nvcc on PATH: builds mix them
    other = ok("cuda.home", {"var": "CUDA_HOME", "path": "/usr/local/cuda-12.2", "exists": True,
                             "version": "12.2.2"}, "env:CUDA_HOME")
    f = run([link, other, tk])["cuda.toolkits_disagree"]
    assert "11.3.109" in f.title and "12.2.2" in f.title


def test_a_distribution_packaged_nvcc_is_not_judged_by_nvidias_distribution_list() -> None:
    # corpus: healthy-driver525-torch200-cu117-distro-nvcc115 (Ubuntu 22.04's own nvidia-cuda-toolkit 11.5)
    ubuntu = [ok("os.id", "ubuntu", "file:/etc/os-release"), ok("os.version", "22.04", "file:/etc/os-release")]
    assert "os.unsupported_by_cuda" not in run(ubuntu + [nvcc("11.5.119", "/usr/bin/nvcc", None)])
    # NVIDIA's own CUDA 11.5 toolkit on Ubuntu 22.04: NVIDIA did not build it for that release
    f = run(ubuntu + [nvcc("11.5.119", "/usr/local/cuda-11.5/bin/nvcc", "/usr/local/cuda-11.5")])
    assert "ubuntu 22.04" in f["os.unsupported_by_cuda"].title


def test_torch_without_package_metadata_is_still_seen() -> None:
    # corpus: torch1102-cu113-conda-system-nvcc101 (a conda env whose torch has no .dist-info): torch's own
    # version.py (the real 1.10.2 cu113 one) names it, as `import torch` would
    from envdoctor.probes import ProbeContext
    from envdoctor.probes.frameworks import probe_frameworks

    from .test_probe_frameworks import site_host

    version_py = ("from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
                  "__version__ = '1.10.2'\ndebug = False\ncuda: Optional[str] = '11.3'\nhip: Optional[str] = None\n")
    facts = Facts(probe_frameworks(ProbeContext(site_host({"torch/version.py": version_py}))))
    torch = facts.value("framework.torch")
    assert torch["version"] == "1.10.2" and torch["cuda"] == "11.3" and torch["build"] == "cuda"
    assert facts.get("framework.torch") is not None
    assert Facts(probe_frameworks(ProbeContext(site_host({"numpy/version.py": "version = '1.26.4'\n"})))).get(
        "framework.torch") is None


def _corpus_host(case: str, **replace_stdout: str) -> Any:
    import json
    import os

    from envdoctor.host.snapshot import SnapshotHost

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", case, "snapshot.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    for c in doc.get("commands", []):
        key = " ".join(c["argv"])
        if key in replace_stdout:
            c["stdout"] = replace_stdout[key]
    return SnapshotHost(doc, case)


def test_secure_boot_with_a_signed_module_whose_key_is_not_enrolled() -> None:
    # corpus: mint22-secureboot-dkms-mok-not-enrolled (linuxmint/mintdrivers#100): the real `mokutil --test-key`
    from .conftest import probe_facts

    case = "mint22-secureboot-dkms-mok-not-enrolled"
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}
    f = found["driver.module_key_not_enrolled"]
    assert f.severity == "error" and "/var/lib/shim-signed/mok/MOK.der" in f.title
    assert f.fix.commands[0] == "sudo update-secureboot-policy --enroll-key" and "MokManager" in f.fix.text
    assert "driver.not_loaded" not in found  # one root cause, one finding
    # the key is enrolled: the module is kept out by something else, not this
    key = "mokutil --test-key /var/lib/shim-signed/mok/MOK.der"
    enrolled = _corpus_host(case, **{key: "/var/lib/shim-signed/mok/MOK.der is already enrolled\n"})
    assert "driver.module_key_not_enrolled" not in {f.code for f in run_checks(CheckContext(probe_facts(enrolled),
                                                                                              []))}


def test_systemd_cgroup_docker_without_dev_char_links() -> None:
    # corpus: docker-systemd-cgroup-daemon-reload-nvml-unknown (NVIDIA/nvidia-docker#1730)
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "docker-systemd-cgroup-daemon-reload-nvml-unknown"
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}
    f = found["container-toolkit.dev_char_symlinks_missing"]
    assert "/dev/char" in f.title and "systemd" in f.title
    assert f.fix.commands[0] == "sudo nvidia-ctk system create-dev-char-symlinks --create-all"
    # after `nvidia-ctk system create-dev-char-symlinks`: /dev/char/195:0 ... exist, quiet
    doc = _corpus_host(case).doc
    doc["dirs"]["/dev/char"]["entries"] += ["195:0", "195:255"]
    fixed = probe_facts(SnapshotHost(doc))
    assert "container-toolkit.dev_char_symlinks_missing" not in {f.code for f in run_checks(CheckContext(fixed, []))}


def test_wsl2_unversioned_libcuda_not_reachable() -> None:
    # corpus: wsl2-unversioned-libcuda-not-in-ld-cache (microsoft/WSL#8587): the real `ldconfig -p`
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "wsl2-unversioned-libcuda-not-in-ld-cache"
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}
    f = found["driver.wsl_libcuda_unversioned_unreachable"]
    assert "libcuda.so" in f.title and f.fix.commands[0].startswith("export LD_LIBRARY_PATH=/usr/lib/wsl/lib")
    # the reporter's workaround: /usr/lib/wsl/lib on LD_LIBRARY_PATH, then dlopen("libcuda.so") finds it
    doc = _corpus_host(case).doc
    doc["environ"]["LD_LIBRARY_PATH"] = "/usr/lib/wsl/lib"
    fixed = {f.code for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}
    assert "driver.wsl_libcuda_unversioned_unreachable" not in fixed


def test_a_library_tensorflow_dlopens_is_looked_for_where_the_loader_looks() -> None:
    # corpus: tf29-conda-cudatoolkit-not-on-loader-path (tensorflow#56413): conda's cudatoolkit in the env's lib
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "tf29-conda-cudatoolkit-not-on-loader-path"
    found = [f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))
             if f.code == "cuda.framework_cannot_load"]
    cudart = [f for f in found if "libcudart.so.11.0" in f.title]
    assert len(cudart) == 1 and cudart[0].severity == "error"
    env_lib = "/home/user/anaconda3/envs/tf/lib"
    assert env_lib + "/libcudart.so.11.0" in cudart[0].title  # the copy that exists but is not searched
    assert cudart[0].fix.commands == ["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % env_lib]
    # the thread's fix: the env's lib on LD_LIBRARY_PATH; then nothing is missing
    doc = _corpus_host(case).doc
    doc["environ"]["LD_LIBRARY_PATH"] = env_lib
    after = [f.title for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))
             if f.code.endswith("framework_cannot_load")]
    # (the rebuilt env holds cudart, cuBLAS and cuDNN only: those are the ones now found)
    assert after and not any(so in t for t in after for so in ("libcudart", "libcublas", "libcudnn"))


def test_onnxruntime_cudnn_wheel_that_nothing_puts_on_the_search_path() -> None:
    # corpus: ort1220-cudnn9-wheel-not-preloaded (onnxruntime#25609)
    from .conftest import probe_facts

    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "ort1220-cudnn9-wheel-not-preloaded")), []))}
    f = found["cudnn.framework_cannot_load"]
    assert "libcudnn.so.9" in f.title and "nvidia/cudnn/lib" in f.title


def _tf(version: str, cudnn_file: str, cudnn_version: str) -> List[Fact]:
    site = "/home/user/venv/lib/python3.10/site-packages"
    return [ok("framework.tensorflow", {"version": version, "public": version, "package": "tensorflow", "path": site,
                                        "cuda": "12.2", "cudnn": "8", "build": "cuda"}, "file:" + site),
            ok("linkage.tensorflow.dlopen", [{"soname": "libcudnn.so.8", "how": "dlopen",
                                              "path": "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
                                              "resolved": "/usr/lib/x86_64-linux-gnu/" + cudnn_file,
                                              "via": "ld.so cache", "version": cudnn_version, "others": [],
                                              "elsewhere": [], "expected": None, "shadowed": False}], "derived")]


def test_a_cudnn_minor_older_than_the_framework_was_built_with_is_an_error() -> None:
    # corpus: tf215-system-cudnn880 (tensorflow/docs#2291): TF 2.15 is built with cuDNN 8.9 (tested configs)
    f = run(_tf("2.15.0", "libcudnn.so.8.8.0", "8.8.0"))["cudnn.too_old_for_framework"]
    assert f.severity == "error" and "8.9" in f.title and "8.8.0" in f.title
    assert "cudnn.too_old_for_framework" not in run(_tf("2.15.0", "libcudnn.so.8.9.4", "8.9.4"))


def _gpus(count: int) -> List[Fact]:
    return [ok("gpu.count", count, "nvml:device_count")] + [
        ok("gpu.%d.uuid" % i, "GPU-%d1b2c3d4-0000-0000-0000-000000000000" % i, "nvml:device.%d.uuid" % i)
        for i in range(count)]


def test_cuda_visible_devices_naming_no_gpu() -> None:
    # corpus: cvd-index2-on-single-titanx-pascal, cvd-export-1-in-script-single-rtx2070super
    for value in ("2", "1", "", "-1", "GPU-ffffffff"):
        f = run(_gpus(1) + [ok("env.cuda_visible_devices", value, "env:CUDA_VISIBLE_DEVICES")])
        assert f["gpu.cuda_visible_devices_hides_all"].severity == "error", value
        assert "CUDA_VISIBLE_DEVICES" in f["gpu.cuda_visible_devices_hides_all"].title
    # naming GPUs that exist (by index or UUID), or selecting one of several: quiet
    for value, count in (("0", 1), ("1", 2), ("0,1", 2), ("GPU-01b2c3d4", 1), ("1,7", 2)):
        facts = _gpus(count) + [ok("env.cuda_visible_devices", value, "env:CUDA_VISIBLE_DEVICES")]
        assert "gpu.cuda_visible_devices_hides_all" not in run(facts), value


def test_mig_devices_in_cuda_visible_devices_are_read_as_cuda_reads_them() -> None:
    # corpus: healthy-b7-2x-h100-mig-on-gpu0-...-cuda-visible-devices-mig-uuid (vllm#41848): GPU 0 in MIG mode,
    # CUDA_VISIBLE_DEVICES=MIG-<UUID> (R470+ form) names one of its MIG devices; the R450/R460 form names its GPU
    def found(value: str, modes: List[object]) -> bool:
        facts = _gpus(len(modes)) + [ok("env.cuda_visible_devices", value, "env:CUDA_VISIBLE_DEVICES")] + [
            ok("gpu.%d.mig_mode_current" % i, m, "nvml:device.%d.mig_mode" % i) for i, m in enumerate(modes)]
        return "gpu.cuda_visible_devices_hides_all" in run(facts)

    mig = "MIG-377e0049-554c-540b-93c6-d0976f8426cb"
    old_form = "MIG-GPU-01b2c3d4-0000-0000-0000-000000000000/1/0"
    for value in (mig, mig + ",1", old_form, "MIG-GPU-01b2c3d4/7/0"):
        assert not found(value, [True, False]), value
    # no GPU in MIG mode: CUDA finds no MIG device, every GPU is hidden; the old form on the GPU without MIG too
    assert found(mig, [False, False])
    assert found("MIG-GPU-11b2c3d4-0000-0000-0000-000000000000/1/0", [True, False])
    assert found("MIG-GPU-ffffffff/1/0", [True, False])  # names no GPU at all
    # MIG mode unknown (a driver without the call): cannot be told, so nothing is said
    facts = _gpus(2) + [ok("env.cuda_visible_devices", mig, "env:CUDA_VISIBLE_DEVICES")]
    assert "gpu.cuda_visible_devices_hides_all" not in run(facts)


def test_the_toolkit_stub_libcuda_first_on_the_loader_path() -> None:
    # corpus: warp-libcuda-stub-dir-on-ld-library-path (the real `ldconfig -p` of the case)
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "warp-libcuda-stub-dir-on-ld-library-path"
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}
    f = found["driver.libcuda_stub_on_loader_path"]
    assert "stubs" in f.title and "LD_LIBRARY_PATH" in f.title and "grep -vx" in f.fix.commands[0]
    doc = _corpus_host(case).doc
    ldp = doc["environ"]["LD_LIBRARY_PATH"]
    doc["environ"]["LD_LIBRARY_PATH"] = ":".join(p for p in ldp.split(":") if not p.rstrip("/").endswith("stubs"))
    after = {f.code for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}
    assert "driver.libcuda_stub_on_loader_path" not in after


def test_library_mismatch_is_fixed_by_a_reboot_only_when_the_module_on_disk_matches() -> None:
    # corpus: debian12-mismatch-module-package-not-upgraded (the real modinfo / dkms status of the case)
    from .conftest import probe_facts

    case = "debian12-mismatch-module-package-not-upgraded"
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}
    f = found["driver.module_on_disk_mismatch"]
    assert f.severity == "error" and "520.56.06" in f.title and "525.85.12" in f.title
    assert "sudo reboot" != found["driver.library_mismatch"].fix.commands[0]
    assert found["driver.library_mismatch"].fix.commands[0] == "sudo apt-get install --fix-broken"
    # the new module is installed, only not loaded yet: a reboot is the fix
    fixed = _corpus_host(case, **{"modinfo -F version nvidia": "525.85.12\n",
                                  "dkms status": "nvidia-current, 525.85.12, 6.1.0-3-amd64, x86_64: installed\n"})
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(fixed), []))}
    assert "driver.module_on_disk_mismatch" not in found
    assert found["driver.library_mismatch"].fix.commands[0] == "sudo reboot"


def test_fabric_manager_of_another_version_is_named_with_both_versions() -> None:
    # corpus: hgx-fabricmanager-version-differs-from-driver (NVIDIA/gpu-operator#544): `nv-fabricmanager --version`
    from .conftest import probe_facts

    case = "hgx-fabricmanager-version-differs-from-driver"
    f = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}[
        "driver.fabric_manager_not_running"]
    assert "530.30.02" in f.title and "530.41.03" in f.title
    same = _corpus_host(case, **{"nv-fabricmanager --version": "Fabric Manager version is : 530.41.03\n"})
    f = {f.code: f for f in run_checks(CheckContext(probe_facts(same), []))}["driver.fabric_manager_not_running"]
    assert "530.30.02" not in f.title and "is failed" in f.title


def test_runtime_compiling_frameworks_and_minor_version_compatibility() -> None:
    # corpus: cupy900rc1-cuda113-build-on-driver460-cuda112 (cupy#5095), jaxlib0315-local-cuda1162-on-driver470
    from .conftest import probe_facts

    cupy = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "cupy900rc1-cuda113-build-on-driver460-cuda112")), []))}
    f = cupy["driver.too_old_for_toolkit"]
    assert f.severity == "error" and "11.3" in f.title and "11.2" in f.title
    jax = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "jaxlib0315-local-cuda1162-on-driver470-no-kernel-image")), []))}
    # JAX JIT-compiles with the local toolkit and requires the toolkit's own driver (its README): an error naming
    # that rule, and no line telling the user the same toolkit "runs through minor-version compatibility"
    f = jax["driver.too_old_for_toolkit"]
    assert f.severity == "error" and "11.6" in f.title and "510.39.01" in f.title and "JAX" in f.detail
    assert "driver.minor_version_compat" not in jax
    # the same toolkit with nothing compiling at run time against it: info (test_checks_compat)


def test_jaxlib_local_tag_cuda112_is_cuda_11_2() -> None:
    from envdoctor.probes import ProbeContext
    from envdoctor.probes.frameworks import probe_frameworks

    from .test_probe_frameworks import site_host

    def jax_cuda(jaxlib: str) -> Any:
        host = site_host({"jax-0.2.13.dist-info/METADATA": "Name: jax\nVersion: 0.2.13\n",
                          "jaxlib-%s.dist-info/METADATA" % jaxlib: "Name: jaxlib\nVersion: %s\n" % jaxlib})
        return Facts(probe_frameworks(ProbeContext(host))).mapping("framework.jax").get("cuda")

    assert jax_cuda("0.1.65+cuda112") == "11.2"      # corpus: jaxlib065-cuda112-system-cudnn805
    assert jax_cuda("0.3.15+cuda11.cudnn82") == "11"  # the local-CUDA wheels name only the major


def test_module_file_names_of_every_distribution() -> None:
    from envdoctor.probes.driver import _NVIDIA_KO

    for name in ("nvidia.ko", "nvidia-current.ko", "nvidia_550.ko", "nvidia.ko.xz", "nvidia.ko.zst",
                 "nvidia-current.ko.xz"):
        assert _NVIDIA_KO.match(name), name
    for name in ("nvidia-uvm.ko", "nvidia-drm.ko.zst", "nvidia_modeset.ko", "nouveau.ko.xz"):
        assert not _NVIDIA_KO.match(name), name


def test_user_space_driver_is_found_where_the_loader_looks() -> None:
    # the live H100 container capture: the injected driver libraries are in /usr/local/nvidia/lib64, named by
    # LD_LIBRARY_PATH (the container layout); nvidia-smi printed Driver Version 580.159.04
    import os

    from envdoctor.host.snapshot import SnapshotHost, load_snapshot

    from .conftest import probe_facts

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "live", "h100-ubuntu2404-container",
                        "snapshot.json.gz")
    doc = load_snapshot(path)
    assert probe_facts(SnapshotHost(doc)).value("driver.userspace.version") == "580.159.04"
    doc["environ"].pop("LD_LIBRARY_PATH")
    # still where the loader looks: the image's ld.so.cache names /usr/local/nvidia/lib64 (`ldconfig -p`:
    # "libcuda.so.1 (libc6,x86-64) => /usr/local/nvidia/lib64/libcuda.so.1", the CUDA images' ld.so.conf.d)
    assert probe_facts(SnapshotHost(doc)).value("driver.userspace.version") == "580.159.04"
    for cmd in doc["commands"]:
        if cmd["argv"][-2:] == ["ldconfig", "-p"] or cmd["argv"] == ["/usr/sbin/ldconfig", "-p"]:
            cmd["stdout"] = "".join(line for line in cmd["stdout"].splitlines(True)
                                    if "/usr/local/nvidia/" not in line)
    fact = probe_facts(SnapshotHost(doc)).get("driver.userspace.version")
    assert fact is not None and not fact.known  # neither LD_LIBRARY_PATH nor the cache leads there: not claimed


def test_stale_driver_library_links_left_by_an_update() -> None:
    # corpus: void-stale-libnvidia-nvvm-link-after-550-update, rhel7-ppc64le-stale-libnvidia-ml-link-function-not-found
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "void-stale-libnvidia-nvvm-link-after-550-update"
    f = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))}["driver.stale_library_link"]
    assert "libnvidia-nvvm.so.4" in f.title and "525.105.17" in f.title and "sudo ldconfig" in f.fix.commands
    doc = _corpus_host(case).doc
    doc["links"]["/usr/lib/libnvidia-nvvm.so.4"] = {"target": "libnvidia-nvvm.so.550.107.02"}
    assert "driver.stale_library_link" not in {f.code for f in run_checks(CheckContext(
        probe_facts(SnapshotHost(doc)), []))}
    rhel = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "rhel7-ppc64le-stale-libnvidia-ml-link-function-not-found")), []))}
    f = rhel["driver.library_mismatch"]
    assert "387.26" in f.title and "384.81" in f.title and "sudo reboot" not in f.fix.commands


def test_docker_desktop_context_is_named() -> None:
    # corpus: docker-desktop-context-hides-nvidia-runtime (nvidia-container-toolkit#814)
    from .conftest import probe_facts

    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "docker-desktop-context-hides-nvidia-runtime")), []))}
    f = found["container-toolkit.runtime_not_configured"]
    assert "Docker Desktop" in f.title and f.fix.commands == ["docker context use default"]
    # the plain case (tests/test_checks_containers.py: no desktop context) keeps nvidia-ctk runtime configure


def test_a_wheel_library_picks_an_older_nvjitlink_through_ld_library_path() -> None:
    # corpus: jaxlib062-cusparse-picks-hpcsdk-nvjitlink (jax#30050): libcusparse.so.12's real NEEDED/RUNPATH
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "jaxlib062-cusparse-picks-hpcsdk-nvjitlink"
    hits = [f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), [])) if f.code == "cuda.shadowed"]
    assert len(hits) == 1 and hits[0].severity == "error"
    assert "libnvJitLink.so.12" in hits[0].title and "12.4.127" in hits[0].title and "12.9.86" in hits[0].title
    assert "grep -vx /opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4/lib64" in hits[0].fix.commands[0]
    doc = _corpus_host(case).doc
    doc["environ"].pop("LD_LIBRARY_PATH")
    assert "cuda.shadowed" not in {f.code for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}


def test_wheel_and_julia_artifact_links_are_both_judged() -> None:
    # the same machine with a Julia depot beside the wheels: CUDA.jl's artifact libcublas.so.12 (RUNPATH $ORIGIN,
    # as in test_checks_libraries) whose libcublasLt.so.12 also comes first from the HPC SDK's lib64 on
    # LD_LIBRARY_PATH. Both bundles' links are one fact; neither may hide the other.
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    doc = _corpus_host("jaxlib062-cusparse-picks-hpcsdk-nvjitlink").doc
    sdk = doc["environ"]["LD_LIBRARY_PATH"].split(":")[0]
    art = "/home/wassim/.julia/artifacts/0a1b2c3d4e5f60718293a4b5c6d7e8f901234567/lib"
    doc["environ"]["JULIA_DEPOT_PATH"] = "/home/wassim/.julia"
    for d, names in ((art, ["libcublas.so.12", "libcublasLt.so.12"]), (sdk, ["libcublasLt.so.12"])):
        for n in names:
            doc["files"][d + "/" + n] = {"text": ""}
        parts = d.strip("/").split("/")
        for i in range(len(parts)):
            parent, child = "/" + "/".join(parts[:i]), parts[i]
            entries = doc["dirs"].setdefault(parent, {"entries": []})["entries"]
            if child not in entries:
                entries.append(child)
        entries = doc["dirs"].setdefault(d, {"entries": []})["entries"]
        entries += [n for n in names if n not in entries]
    doc["elf"][art + "/libcublas.so.12"] = {"soname": "libcublas.so.12", "needed": ["libcublasLt.so.12"],
                                            "rpath": [], "runpath": ["$ORIGIN"]}
    titles = [f.title for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))
              if f.code.endswith(".shadowed")]
    assert any("libcusparse.so.12 (pip wheel) loads libnvJitLink.so.12" in t for t in titles), titles
    assert any("libcublas.so.12 (Julia artifact) loads libcublasLt.so.12 from %s/" % sdk in t for t in titles), titles


def test_titles_have_no_double_spaces_or_repeated_unknowns() -> None:
    # every finding on every captured and rebuilt machine: a missing version must not leave "  " or
    # "driver unknown ... driver unknown" in the one line a user reads first
    import glob
    import os

    from envdoctor.host.snapshot import SnapshotHost, load_snapshot
    from envdoctor.report import diagnose

    here = os.path.dirname(os.path.abspath(__file__))
    snaps = glob.glob(os.path.join(here, "machines", "*", "snapshot.json")) + glob.glob(
        os.path.join(here, "corpus", "*", "snapshot.json"))
    titles = [f.title for s in snaps for f in diagnose(SnapshotHost(load_snapshot(s), validated=True)).findings]
    assert len(titles) > 50
    bad = [t for t in titles if "  " in t or t.lower().count("unknown") > 1 or t != t.strip() or "None" in t]
    assert bad == []


def test_nvidia_wheels_of_two_cuda_majors_in_one_environment() -> None:
    # corpus: torch280-nccl-cu11-and-cu12-wheels-share-lib (rwth-i6/returnn#1802): collect_env's wheel list
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "torch280-nccl-cu11-and-cu12-wheels-share-lib"
    found = [f for f in run_checks(CheckContext(probe_facts(_corpus_host(case)), []))
             if f.code == "framework.nvidia_wheels_conflict"]
    nccl = [f for f in found if "nvidia-nccl-cu11 2.14.3" in f.title]
    assert nccl and nccl[0].severity == "error"
    assert nccl[0].fix.commands[0].startswith("pip uninstall -y nvidia-nccl-cu11")
    doc = _corpus_host(case).doc
    for listing in doc["dirs"].values():
        listing["entries"] = [e for e in listing.get("entries", []) if not e.startswith("nvidia_nccl_cu11")]
    after = [f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))
             if f.code == "framework.nvidia_wheels_conflict" and "nccl" in f.title]
    assert after == []


def test_cuda_device_order_on_a_mixed_gpu_machine() -> None:
    # corpus: cvd-3-mixed-8gpu-server-fastest-first-order (pytorch#20606)
    names = ["NVIDIA GeForce GTX 1080 Ti", "NVIDIA TITAN V", "NVIDIA TITAN V", "NVIDIA GeForce GTX 1080 Ti"]
    gpus = [ok("gpu.count", 4, "nvml")] + [ok("gpu.%d.name" % i, n, "nvml") for i, n in enumerate(names)]
    cvd = ok("env.cuda_visible_devices", "3", "env:CUDA_VISIBLE_DEVICES")
    f = run(gpus + [cvd, ok("env.cuda_device_order", None, "env:CUDA_DEVICE_ORDER")])["gpu.cuda_device_order_differs"]
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in f.title
    assert "gpu.cuda_device_order_differs" not in run(gpus + [cvd, ok("env.cuda_device_order", "PCI_BUS_ID", "env")])
    same = [ok("gpu.count", 4, "nvml")] + [ok("gpu.%d.name" % i, "NVIDIA A100-SXM4-80GB", "nvml") for i in range(4)]
    assert "gpu.cuda_device_order_differs" not in run(same + [cvd, ok("env.cuda_device_order", None, "env")])


def test_jax_pieces_must_agree() -> None:
    # corpus: jax-cuda12-plugin092-with-jaxlib0901, jaxlib0169-cuda101-older-than-jax0226-minimum
    from .conftest import probe_facts

    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "jax-cuda12-plugin092-with-jaxlib0901")), []))}
    f = found["framework.jax_plugin_mismatch"]
    assert "0.9.2" in f.title and "0.9.0.1" in f.title
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_corpus_host(
        "jaxlib0169-cuda101-older-than-jax0226-minimum")), []))}
    f = found["framework.jaxlib_too_old_for_jax"]
    assert "0.1.69" in f.title and "0.1.74" in f.title
    jax = ok("framework.jax", {"version": "0.4.30", "jaxlib": "0.4.30", "jaxlib_minimum": "0.4.27",
                               "plugins": {"jax-cuda12-plugin": "0.4.30"}, "plugins_match_jaxlib": True,
                               "mismatched_plugins": [], "build": "cuda", "cuda": "12"}, "test")
    assert not {"framework.jax_plugin_mismatch", "framework.jaxlib_too_old_for_jax"} & set(run([jax]))


def test_nvidia_tensorflow_is_recognised_from_tensorflow_core() -> None:
    # NVIDIA's nvidia-tensorflow (TF 1.15 line) keeps its package in tensorflow_core/; build_info.py of TF < 2.3
    # is written as module variables (the form tensorflow-gpu 1.15's own build_info.py has)
    from envdoctor.probes import ProbeContext
    from envdoctor.probes.frameworks import probe_frameworks

    from .test_probe_frameworks import site_host

    build_info = ("# Lint as: python2, python3\nis_rocm_build = False\nis_cuda_build = True\n"
                  "cuda_version_number = '11.8'\ncudnn_version_number = '8'\n")
    host = site_host({"nvidia_tensorflow-1.15.5+nv22.12.dist-info/METADATA":
                      "Name: nvidia-tensorflow\nVersion: 1.15.5+nv22.12\n",
                      "tensorflow_core/python/platform/build_info.py": build_info,
                      "tensorflow/__init__.py": ""})
    tf = Facts(probe_frameworks(ProbeContext(host))).mapping("framework.tensorflow")
    assert tf.get("build") == "cuda" and tf.get("cuda") == "11.8" and tf.get("package") == "nvidia-tensorflow"


def test_forward_compat_reached_through_a_linked_directory() -> None:
    # LD_LIBRARY_PATH=/usr/local/cuda/compat where /usr/local/cuda -> cuda-12.4: the compat libcuda the cuda probe
    # finds under /usr/local/cuda-12.4/compat is the one the loader takes (paths compared after resolving links)
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts
    from .test_checks_driver_health import compat_machine

    host = compat_machine("NVIDIA GeForce RTX 3060")
    host.doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat"
    host.doc["links"]["/usr/local/cuda"] = {"target": "cuda-12.4"}
    host.doc["dirs"]["/usr/local"]["entries"].append("cuda")
    host = SnapshotHost(host.doc)
    f = {f.code: f for f in run_checks(CheckContext(probe_facts(host), []))}["driver.forward_compat_unsupported_gpu"]
    assert f.severity == "error" and "grep -vx /usr/local/cuda/compat" in f.fix.commands[0]
    assert "/usr/local/cuda-12.4/compat/libcuda.so.550.54.15" in f.title
    host.doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda/lib64"
    after = [f.title for f in run_checks(CheckContext(probe_facts(SnapshotHost(host.doc)), []))
             if f.code == "driver.forward_compat_unsupported_gpu"]
    assert not any("/usr/local/cuda-12.4/compat" in t for t in after)


def test_a_corrupt_driver_library_first_on_the_loader_path_is_reported_with_the_loaders_error() -> None:
    # the live H100 capture, with its libnvidia-ml.so.1 replaced by a file that is no ELF object (what a live
    # snapshot records for such a file: the ELF reader's error)
    import os

    from envdoctor.host.snapshot import SnapshotHost, load_snapshot

    from .conftest import probe_facts

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "live", "h100-ubuntu2404-container",
                        "snapshot.json.gz")
    doc = load_snapshot(path)
    assert "driver.library_unloadable" not in {f.code for f in run_checks(CheckContext(
        probe_facts(SnapshotHost(doc)), []))}
    doc.setdefault("elf", {})["/usr/local/nvidia/lib64/libnvidia-ml.so.1"] = {"error": "not_elf",
                                                                           "message": "not an ELF file"}
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}
    f = found["driver.library_unloadable"]
    assert "/usr/local/nvidia/lib64/libnvidia-ml.so.1" in f.title and "not an ELF file" in f.title
    assert "gpu.none" not in found


def test_tensorflow_and_cuda_is_suggested_only_from_2_14() -> None:
    # the [and-cuda] extra exists from TensorFlow 2.14 (corpus: tf29-conda-cudatoolkit-not-on-loader-path is 2.9)
    from envdoctor.checks.libraries import _pip_fix_for

    def fix(version: str) -> Any:
        return _pip_fix_for(Facts([ok("framework.tensorflow", {"version": version, "public": version, "cuda": "11.2",
                                                                "cudnn": "8", "build": "cuda"}, "t")]),
                            "tensorflow", "libcudnn.so.8")

    assert fix("2.15.0").commands == ["pip install 'tensorflow[and-cuda]==2.15.0'"]
    old = fix("2.9.1")
    assert not any("and-cuda" in c for c in old.commands) and "2.14" in old.text


def test_numba_told_to_load_something_else_than_the_drivers_libcuda() -> None:
    # corpus: b10-ubuntu1804-numba-numbapro-cuda-driver-names-libcudart-cuinit-missing (numba/numba#3963): the
    # recorded machine, then the same machine with the variable changed
    from envdoctor.host.snapshot import SnapshotHost

    from .conftest import probe_facts

    case = "b10-ubuntu1804-numba-numbapro-cuda-driver-names-libcudart-cuinit-missing"
    code = "framework.numba_cuda_driver_not_libcuda"

    def findings(environ: Dict[str, str], numba: str = "0.43.1") -> Dict[str, Any]:
        doc = _corpus_host(case).doc
        doc["environ"] = {k: v for k, v in doc["environ"].items() if "CUDA_DRIVER" not in k}
        doc["environ"].update(environ)
        site = doc["dirs"]["/usr/local/lib/python3.6/dist-packages"]["entries"]
        site[:] = [("numba-%s.dist-info" % numba if numba else "") if e.startswith("numba-") else e for e in site]
        site[:] = [e for e in site if e]
        return {f.code: f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc)), []))}

    runtime = findings({"NUMBAPRO_CUDA_DRIVER": "/usr/lib/cuda/lib64/libcudart.so"})[code]
    assert runtime.severity == "error" and "CUDA runtime" in runtime.detail and "cuInit" in runtime.detail
    assert runtime.fix.commands == ["export NUMBAPRO_CUDA_DRIVER=/usr/lib/x86_64-linux-gnu/libcuda.so.1"]
    missing = findings({"NUMBA_CUDA_DRIVER": "/opt/nvidia/libcuda.so.1"})[code]
    assert "does not exist" in missing.detail and "not a valid file path" in missing.detail
    # the driver's own library, by either name; Numba told to use no GPU ("0"); a relative path
    for value in ("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so", "0",
                  "libcuda.so.1"):
        assert code not in findings({"NUMBA_CUDA_DRIVER": value}), value
    # Numba 0.46 and later ignore NUMBAPRO_ variables (numba/cuda/envvars.py at 0.46.0); without Numba the variable
    # changes nothing
    assert code not in findings({"NUMBAPRO_CUDA_DRIVER": "/usr/lib/cuda/lib64/libcudart.so"}, numba="0.56.4")
    assert code not in findings({"NUMBAPRO_CUDA_DRIVER": "/usr/lib/cuda/lib64/libcudart.so"}, numba="0.46.0")
    assert code in findings({"NUMBAPRO_CUDA_DRIVER": "/usr/lib/cuda/lib64/libcudart.so"}, numba="0.45.1")
    assert code not in findings({"NUMBA_CUDA_DRIVER": "/usr/lib/cuda/lib64/libcudart.so"}, numba="")
    # NUMBA_CUDA_DRIVER is read first
    assert code not in findings({"NUMBA_CUDA_DRIVER": "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                 "NUMBAPRO_CUDA_DRIVER": "/usr/lib/cuda/lib64/libcudart.so"})


def _video_host(ld_library_path: str) -> Any:
    # the Video Codec SDK unpacked as NVIDIA ships it (Lib/linux/stubs/x86_64: libnvcuvid.so, libnvidia-encode.so),
    # with the .so.1 links users make to them; the driver's libraries in the multiarch directory and ld.so.cache
    from .conftest import make_host

    sdk = "/opt/Video_Codec_SDK_12.1.14/Lib/linux/stubs/x86_64/"
    lib = "/usr/lib/x86_64-linux-gnu/"
    cache = "".join("\t%s (libc6,x86-64) => %s%s\n" % (n, lib, n) for n in
                    ("libcuda.so.1", "libnvcuvid.so.1", "libnvidia-encode.so.1"))
    return make_host(
        files={sdk + "libnvcuvid.so": "", sdk + "libnvidia-encode.so": "", lib + "libcuda.so.535.183.01": "",
               lib + "libnvcuvid.so.535.183.01": "", lib + "libnvidia-encode.so.535.183.01": "",
               "/usr/sbin/ldconfig": ""},
        links={sdk + "libnvcuvid.so.1": "libnvcuvid.so", sdk + "libnvidia-encode.so.1": "libnvidia-encode.so",
               lib + "libcuda.so.1": "libcuda.so.535.183.01", lib + "libnvcuvid.so.1": "libnvcuvid.so.535.183.01",
               lib + "libnvidia-encode.so.1": "libnvidia-encode.so.535.183.01"},
        commands=[{"argv": ["/usr/sbin/ldconfig", "-p"], "stdout": "3 libs found in cache `/etc/ld.so.cache'\n" +
                   cache}],
        environ={"LD_LIBRARY_PATH": ld_library_path, "PATH": "/usr/bin:/bin"})


def test_the_video_codec_sdk_stubs_first_on_the_loader_path() -> None:
    # corpus: b76-ubuntu1804-vpf-built-against-video-codec-sdk-stub-libnvcuvid-on-ld-library-path-driver44033
    from .conftest import probe_facts

    stubs = "/opt/Video_Codec_SDK_12.1.14/Lib/linux/stubs/x86_64"
    found = {f.code: f for f in run_checks(CheckContext(probe_facts(_video_host(stubs + ":/usr/local/cuda/lib64")),
                                                        []))}
    f = found["driver.video_stub_on_loader_path"]
    assert f.severity == "warning"
    assert "stub libnvcuvid.so.1 and libnvidia-encode.so.1" in f.title and stubs in f.title
    assert "LD_LIBRARY_PATH" in f.title and "/usr/lib/x86_64-linux-gnu/libnvcuvid.so.1" in f.detail
    assert "grep -vx " + stubs in f.fix.commands[0]
    # the SDK's directory not on the path (only linked against at build time): the driver's libraries load
    quiet = {f.code for f in run_checks(CheckContext(probe_facts(_video_host("/usr/local/cuda/lib64")), []))}
    assert "driver.video_stub_on_loader_path" not in quiet

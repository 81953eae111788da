"""Driver / CUDA toolkit / GPU architecture / framework build compatibility (envdoctor/checks/compat/).

Each finding code has a machine where it fires and one where it stays quiet.  Machines are either
miniature hosts (make_host, real probes) with real file contents, captured machines from
tests/machines/, or Facts built directly with the values the probes write (see the probe modules
for the shapes) when the probe is not the point.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from envdoctor import matrix
from envdoctor.checks import CheckContext
from envdoctor.checks.compat import DOCS, compat
from envdoctor.facts import Fact, Facts, ok, unknown
from envdoctor.findings import Finding
from envdoctor.matrix import hardware as hw
from tests.conftest import load_machine, machine_names, make_host, probe_facts

# The CUDA 11.5 toolkit's real version.json and `nvcc --version` (sources cited there).
from tests.test_probe_cuda import NVCC_11_5, PATH, VERSION_JSON_11_5


def run(facts: Facts) -> List[Finding]:
    return list(compat(CheckContext(facts, [])))


def codes(findings: List[Finding]) -> List[str]:
    return [f.code for f in findings]


def only(findings: List[Finding], code: str) -> Finding:
    hits = [f for f in findings if f.code == code]
    assert len(hits) == 1, codes(findings)
    return hits[0]


# -- Facts as the probes write them ------------------------------------------------------------


def driver(version: Optional[str], cuda: Optional[str]) -> List[Fact]:
    out = [ok("driver.installed", True, "file:/proc/driver/nvidia/version")]
    out.append(ok("driver.version", version, "nvml:system.driver_version") if version
               else unknown("driver.version", "NVML: libnvidia-ml.so.1 not found", "nvml:system.driver_version"))
    out.append(ok("driver.cuda_version", cuda, "nvml:system.cuda_driver_version") if cuda
               else unknown("driver.cuda_version", "NVML: libnvidia-ml.so.1 not found",
                            "nvml:system.cuda_driver_version"))
    return out


def gpu(cc: str, name: str, i: int = 0) -> List[Fact]:
    return [ok("gpu.count", i + 1, "nvml:device_count"), ok("gpu.%d.name" % i, name, "nvml:device.%d.name" % i),
            ok("gpu.%d.compute_capability" % i, cc, "nvml:device.%d.compute_capability" % i)]


def torch(version: str, cuda: Optional[str]) -> Fact:
    # the value torch_fact() writes (envdoctor/probes/frameworks.py); version.py's cuda is e.g. '12.1'
    local = version.split("+", 1)[1] if "+" in version else None
    return ok("framework.torch", {"version": version, "public": version.split("+")[0], "local": local,
                                  "package": "torch", "path": "/usr/lib/python3/dist-packages", "cuda": cuda,
                                  "build": "cuda" if cuda else "cpu"},
              "file:/usr/lib/python3/dist-packages/torch/version.py")


def nvcc(version: str, path: str = "/usr/local/cuda/bin/nvcc") -> Fact:
    mm = ".".join(version.split(".")[:2])
    return ok("cuda.nvcc", {"path": path, "resolved": path, "release": mm, "version": version,
                            "toolkit": path.rsplit("/bin/", 1)[0]}, "command:%s --version" % path)


def os_facts(distro: str, version: str) -> List[Fact]:
    return [ok("os.id", distro, "file:/etc/os-release"), ok("os.version", version, "file:/etc/os-release")]


def F(*parts: Any) -> Facts:
    out: List[Fact] = []
    for p in parts:
        out.extend(p if isinstance(p, list) else [p])
    return Facts(out)


def nvml(version: str, cuda_int: int, count: int = 0) -> Dict[str, Any]:
    # key format of envdoctor/host/nvml_worker.py (as tests/test_probe_driver.py writes it)
    return {"data": {"init": {"value": None}, "system.driver_version": {"value": version},
                     "system.cuda_driver_version": {"value": cuda_int}, "device_count": {"value": count}}}


# -- driver vs CUDA ------------------------------------------------------------------------------


def test_driver_too_old_for_torch_names_both_sides_and_the_floor():
    # driver 470.82.01 (R470: CUDA 11.4) with torch 2.4.0+cu121 (torch/version.py cuda = '12.1')
    found = run(F(driver("470.82.01", "11.4"), torch("2.4.0+cu121", "12.1"), gpu("8.6", "NVIDIA GeForce RTX 3060"),
                  os_facts("rocky", "9.4")))
    f = only(found, "driver.too_old_for_framework")
    assert f.title == ("Driver 470.82.01 supports CUDA up to 11.4, but torch 2.4.0+cu121 needs CUDA 12.1 "
                       "(driver >= 525.60.13)")
    # the 12.x driver floors of cuda.json are verified against NVIDIA's Table 3: an error
    assert not matrix.unverified(hw.cuda_release("12.0"), "min_driver_linux")
    assert f.severity == "error"
    # planned by the driver recipe for this machine (Rocky 9: the nvidia-driver:530-open module stream)
    assert f.fix.install == "envdoctor install driver --version 530"
    assert f.source["url"].startswith("https://") and f.source["checked"]
    assert {e["key"] for e in f.evidence} >= {"driver.version", "driver.cuda_version", "framework.torch"}
    assert "never crosses majors" in f.detail


def test_driver_too_old_is_an_error_when_the_rows_are_verified():
    # driver 418.39 (CUDA 10.1) with torch 1.13.1+cu116: the 11.x floor 450.80.02 comes from verified rows
    f = only(run(F(driver("418.39", "10.1"), torch("1.13.1+cu116", "11.6"))), "driver.too_old_for_framework")
    assert f.severity == "error"
    assert "needs CUDA 11.6 (driver >= 450.80.02)" in f.title


def test_driver_new_enough_for_torch_is_quiet():
    assert run(F(driver("550.54.15", "12.4"), torch("2.4.0+cu121", "12.1"), gpu("8.6", "NVIDIA GeForce RTX 3060"))) \
        == []


def test_no_nvml_means_no_verdict_on_the_driver():
    assert run(F(driver(None, None), torch("2.4.0+cu121", "12.1"))) == []


def test_minor_version_compat_is_explained_for_a_framework_as_info():
    # captured machine: driver 535.154.05 (CUDA 12.2), torch nightly cu126 on 8x H100
    found = run(probe_facts(load_machine("centosstream9-8xh100")))
    f = only(found, "driver.minor_version_compat")
    assert f.severity == "info" and "525.60.13" in f.title and "PTX" in f.detail
    assert codes(found) == ["driver.minor_version_compat"]


def miniature_11_5(nvml_answer: Dict[str, Any]):
    return make_host(files={"/usr/local/cuda-11.5/version.json": VERSION_JSON_11_5,
                            "/usr/local/cuda-11.5/bin/nvcc": ""},
                     links={"/usr/local/cuda": "/usr/local/cuda-11.5"},
                     commands=[{"argv": ["/usr/local/cuda-11.5/bin/nvcc", "--version"], "stdout": NVCC_11_5}],
                     environ={"PATH": "/usr/local/cuda-11.5/bin:" + PATH}, nvml=nvml_answer)


def test_toolkit_under_minor_version_compat_is_said_not_warned():
    # driver 460.32.03 reports CUDA 11.2 (11020); nvcc 11.5 needs 495.29.05 but 11.x's floor is 450.80.02.
    # Only code built for PTX alone fails there (corpus: healthy-a100-mig-3g40gb-torch-nightly-cu121): info.
    f = only(run(probe_facts(miniature_11_5(nvml("460.32.03", 11020)))), "driver.minor_version_compat")
    assert f.severity == "info" and "CUDA toolkit 11.5.119" in f.title and "PTX only" in f.detail


def test_driver_too_old_for_the_toolkit_across_majors():
    # driver 418.39 reports CUDA 10.1 (10010): below the 11.x floor
    f = only(run(probe_facts(miniature_11_5(nvml("418.39", 10010)))), "driver.too_old_for_toolkit")
    assert f.severity == "error" and "CUDA toolkit 11.5.119" in f.title and "450.80.02" in f.title


def test_nvcc_older_than_the_drivers_cuda_version_is_healthy_and_quiet():
    # driver 550.54.15 reports CUDA 12.4 (12040); nvcc 11.5: the driver's number is a ceiling, not a mismatch
    assert run(probe_facts(miniature_11_5(nvml("550.54.15", 12040)))) == []
    doc = next(d for d in DOCS if d.code == "driver.cuda_version_is_a_ceiling")
    assert doc.severity == "info" and "never reported" in doc.summary


def test_conda_cudatoolkit_newer_than_the_driver():
    conda = ok("cuda.conda", [{"prefix": "/opt/conda/envs/tf", "found_by": "env:CONDA_PREFIX",
                               "packages": [{"name": "cudatoolkit", "version": "11.8.0", "build": "h37601d7_11"}],
                               "cuda_version": "11.8.0", "nvcc": False, "source": "dir:/opt/conda/envs/tf/conda-meta"}],
               "env:CONDA_PREFIX")
    f = only(run(F(driver("440.33.01", "10.2"), conda)), "driver.too_old_for_toolkit")
    assert "conda cudatoolkit 11.8.0" in f.title
    assert run(F(driver("520.61.05", "11.8"), conda)) == []


def test_missing_driver_with_a_gpu_on_the_bus_and_a_cuda_framework():
    pci = ok("driver.nvidia_pci_gpus", ["0000:01:00.0"], "dir:/sys/bus/pci/devices")
    missing = ok("driver.installed", False, "nvml:init")
    f = only(run(F(missing, pci, torch("2.4.0+cu121", "12.1"), os_facts("ubuntu", "22.04"))),
             "driver.missing_for_framework")
    # Ubuntu: the driver recipe plans branch 530 (the proprietary flavor, NVIDIA's default before 560; issue 14:
    # it used to refuse --version 530 and the newest driver was suggested instead)
    assert f.severity == "error" and f.fix.install == "envdoctor install driver --version 530"
    # no GPU on the bus: a CUDA wheel on a laptop without NVIDIA is not this finding
    nogpu = ok("driver.nvidia_pci_gpus", [], "dir:/sys/bus/pci/devices")
    assert run(F(missing, nogpu, torch("2.4.0+cu121", "12.1"))) == []


# -- GPU architecture vs builds ------------------------------------------------------------------


def test_gpu_arch_missing_from_the_torch_wheel():
    # captured machine: H100 (sm_90) with torch 2.0.1+cu117, the 'sm_90 is not compatible' report
    found = run(probe_facts(load_machine("rocky9-h100-old-torch")))
    f = only(found, "gpu.arch_not_in_build")
    assert f.severity == "error"
    assert "sm_90" in f.title and "torch 2.0.1+cu117" in f.title
    assert "no kernel image is available" in f.detail
    assert "--index-url https://download.pytorch.org/whl/cu1" in f.fix.commands[0]
    assert f.fix.install.startswith("envdoctor install pytorch --version 2.")


def test_gpu_arch_present_in_the_wheel_is_quiet():
    # captured machine: H100 with torch 2.9.1+cu126 (sm_90 in its arch list), driver 580 (CUDA 13.0)
    assert run(probe_facts(load_machine("conda-ubuntu2204-h100"))) == []


def test_same_major_lower_minor_sass_runs():
    # RTX 4090 is sm_89; torch 2.4 cu121 carries sm_86: a cubin for 8.6 runs on 8.9
    assert "gpu.arch_not_in_build" not in codes(run(F(driver("550.54.15", "12.4"), torch("2.4.1+cu121", "12.1"),
                                                      gpu("8.9", "NVIDIA GeForce RTX 4090"))))


# TensorFlow 2.4-2.10 wheels' build_info.py: 'cuda_compute_capabilities': ['sm_35', 'sm_50', 'sm_60', 'sm_70',
# 'sm_75', 'compute_80'] (tensorflow/python/platform/build_info.py of the tensorflow-2.x manylinux wheels).
TF_CAPS = ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"]


def tensorflow(version: str = "2.10.1", cuda: str = "11.2", caps: Any = None) -> Fact:
    return ok("framework.tensorflow", {"version": version, "public": version, "local": None, "package": "tensorflow",
                                       "cuda": cuda, "cudnn": "8", "compute_capabilities": caps or TF_CAPS,
                                       "build": "cuda", "packages": {"tensorflow": version}},
              "file:/usr/lib/python3/dist-packages/tensorflow/python/platform/build_info.py")


def test_gpu_reached_only_through_ptx_jit():
    f = only(run(F(driver("525.60.13", "12.0"), tensorflow(), gpu("8.6", "NVIDIA GeForce RTX 3060"))),
             "gpu.arch_ptx_jit_only")
    assert f.severity == "warning" and "sm_86" in f.title and "JIT cache" in f.detail
    # a Turing GPU has SASS (sm_75) in the same build
    assert run(F(driver("525.60.13", "12.0"), tensorflow(), gpu("7.5", "Tesla T4"))) == []


# -- toolkit vs GPU ------------------------------------------------------------------------------


def test_toolkit_that_dropped_the_gpu_architecture():
    # Tesla K80 is sm_37; CUDA 12 dropped Kepler (cuda.json cc_min 5.0)
    assert hw.cuda_release("12.4")["cc_min"] == "5.0"
    f = only(run(F(driver("470.82.01", "11.4"), nvcc("12.4.131"), gpu("3.7", "Tesla K80"))),
             "cuda.toolkit_cannot_target_gpu")
    assert "CUDA 12.4.131" in f.title and "sm_37" in f.title and "11.8" in f.detail
    assert "cuda.toolkit_cannot_target_gpu" not in codes(run(F(driver("470.82.01", "11.4"), nvcc("11.4.152"),
                                                               gpu("3.7", "Tesla K80"))))


def test_gpu_newer_than_the_toolkit():
    f = only(run(F(driver("535.104.12", "12.2"), nvcc("11.7.99"), gpu("9.0", "NVIDIA H100 PCIe"))),
             "cuda.gpu_newer_than_toolkit")
    assert "up to 8.7" in f.title and "11.8" in f.detail
    assert run(F(driver("535.104.12", "12.2"), nvcc("11.8.89"), gpu("9.0", "NVIDIA H100 PCIe"))) == []


# -- CPU-only builds -----------------------------------------------------------------------------


def test_cpu_torch_on_a_gpu_machine_suggests_a_cuda_wheel_this_driver_runs():
    found = run(F(driver("470.82.01", "11.4"), torch("2.4.1+cpu", None), gpu("8.6", "NVIDIA GeForce RTX 3060"),
                  ok("python.version", "3.10.12", "python:/usr/bin/python3"), os_facts("ubuntu", "22.04")))
    f = only(found, "framework.cpu_only_build")
    assert f.severity == "warning" and "torch 2.4.1+cpu" in f.title
    # the driver runs CUDA 11.x only: torch 2.4's cu118 wheel is the one that fits
    assert f.fix.commands == ["pip install --force-reinstall 'torch==2.4.*' --index-url "
                              "https://download.pytorch.org/whl/cu118"]
    assert f.fix.install == "envdoctor install pytorch --version 2.4 --method pip"


def test_cpu_torch_without_a_gpu_is_quiet():
    assert run(F(torch("2.4.1+cpu", None), ok("gpu.count", 0, "derived"))) == []


def test_jaxlib_without_plugin_on_a_gpu_machine():
    jax = ok("framework.jax", {"version": "0.4.30", "public": "0.4.30", "local": None, "package": "jax",
                               "jaxlib": "0.4.30", "plugins": {}, "cuda": None, "build": "cpu"}, "dir:x")
    f = only(run(F(driver("550.54.15", "12.4"), jax, gpu("8.0", "NVIDIA A100-SXM4-80GB"))), "framework.cpu_only_build")
    assert "jax[cuda12]" in f.fix.commands[0]


def _advised(framework: str, driver_version: str, cc: str, python: str) -> Any:
    from envdoctor.advise import Target, advise

    return advise(Target(driver=driver_version, cc=cc, python=python), [framework]).frameworks[0]


def test_cpu_tensorflow_on_driver_470_suggests_the_build_advise_names_not_one_the_driver_cannot_run():
    """The fix used to say `pip install 'tensorflow[and-cuda]==2.17.*'` for the installed release, whose CUDA
    12.3 wheels need driver 525.60.13 or newer; now it is advise's answer for this driver, GPU and Python."""
    cpu_tf = ok("framework.tensorflow", {"version": "2.17.0", "public": "2.17.0", "local": None,
                                         "package": "tensorflow-cpu", "build": "cpu",
                                         "packages": {"tensorflow-cpu": "2.17.0"}}, "dir:x")
    found = run(F(driver("470.82.01", "11.4"), cpu_tf, gpu("8.0", "NVIDIA A100-SXM4-80GB"),
                  ok("python.version", "3.10.12", "python:/usr/bin/python3"), os_facts("ubuntu", "22.04")))
    f = only(found, "framework.cpu_only_build")
    answer = _advised("tensorflow", "470.82.01", "8.0", "3.10.12")
    assert answer.release == "2.14"
    assert f.fix.commands == ["pip uninstall -y tensorflow-cpu", "pip install 'tensorflow[and-cuda]==2.14.*'"]
    assert f.fix.install == "envdoctor install tensorflow --version 2.14 --method pip"
    # a driver that runs the installed release keeps it
    f = only(run(F(driver("550.54.15", "12.4"), cpu_tf, gpu("8.0", "NVIDIA A100-SXM4-80GB"),
                   ok("python.version", "3.10.12", "python:/usr/bin/python3"), os_facts("ubuntu", "22.04"))),
             "framework.cpu_only_build")
    assert f.fix.commands[-1] == "pip install 'tensorflow[and-cuda]==2.17.*'"


def test_cpu_jaxlib_on_driver_470_suggests_the_cuda_11_wheels_advise_names():
    """It used to say `pip install -U 'jax[cuda11]'`, an extra jax 0.4.30 does not have (its CUDA 12 plugin
    needs driver 525.60.13); now the last jax with CUDA 11 wheels, from JAX's links page, as advise says."""
    jax = ok("framework.jax", {"version": "0.4.30", "public": "0.4.30", "local": None, "package": "jax",
                               "jaxlib": "0.4.30", "plugins": {}, "cuda": None, "build": "cpu"}, "dir:x")
    f = only(run(F(driver("470.82.01", "11.4"), jax, gpu("8.0", "NVIDIA A100-SXM4-80GB"),
                   ok("python.version", "3.10.12", "python:/usr/bin/python3"), os_facts("ubuntu", "22.04"))),
             "framework.cpu_only_build")
    answer = _advised("jax", "470.82.01", "8.0", "3.10.12")
    assert (answer.release, answer.variant) == ("<0.4.26,>=0.4.25", "cuda11")  # 0.4.25, JAX's last CUDA 11 wheels
    assert f.fix.commands == ["pip install 'jax[cuda11_pip]<0.4.26,>=0.4.25' -f "
                              "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"]
    assert f.fix.install == "envdoctor install jax --method pip"


# TensorFlow 2.3's build_info.py: SASS up to sm_61 and PTX compute_70, built with CUDA 10.1 (newest target 7.5)
TF23_CAPS = ["sm_35", "sm_37", "sm_52", "sm_60", "sm_61", "compute_70"]


def test_ptx_jit_across_a_gpu_generation_the_builds_cuda_never_knew_is_an_error():
    """tensorflow/tensorflow#43701: TF 2.3 (CUDA 10.1) on an RTX 3080 fails at start-up ('device kernel image is
    invalid') although PTX compute_70 is in the build: CUDA 10.1 targets 7.5 at most, so nothing of that release
    knows Ampere. The same PTX reaching a Turing-era-or-older GPU, or a build whose CUDA knows the generation
    (CUDA 11.0 targets 8.0, so 8.6 is the same generation), stays a warning."""
    f = only(run(F(driver("455.23.04", "11.1"), tensorflow("2.3.1", "10.1", TF23_CAPS),
                   gpu("8.6", "GeForce RTX 3080"))), "gpu.arch_ptx_jit_only")
    assert f.severity == "error" and "CUDA 10.1" in f.detail and "7.5" in f.detail
    f = only(run(F(driver("455.23.04", "11.1"), tensorflow("2.4.0", "11.0", TF23_CAPS),
                   gpu("8.6", "GeForce RTX 3080"))), "gpu.arch_ptx_jit_only")
    assert f.severity == "warning" and "CUDA 11.0" not in f.detail
    f = only(run(F(driver("455.23.04", "11.1"), tensorflow("2.3.1", "10.1", TF23_CAPS),
                   gpu("7.5", "Tesla T4"))), "gpu.arch_ptx_jit_only")
    assert f.severity == "warning"


def test_tensorflow_missing_the_gpu_architecture_is_not_told_to_upgrade_past_its_driver():
    """An RTX 3060 (sm_86) under TensorFlow 2.10 (SASS up to sm_75) on driver 470: the fix said `pip install
    --upgrade 'tensorflow[and-cuda]'`, i.e. 2.21, whose CUDA 12.5 this driver cannot run."""
    facts = F(driver("470.82.01", "11.4"), tensorflow(), gpu("8.6", "NVIDIA GeForce RTX 3060"))
    f = only(run(facts), "gpu.arch_ptx_jit_only")
    assert _advised("tensorflow", "470.82.01", "8.6", "3.10").release == "2.14"
    assert f.fix.commands == ["pip install 'tensorflow[and-cuda]==2.14.*'"]
    f = only(run(F(driver("470.82.01", "11.4"), tensorflow("2.14.1"), gpu("8.6", "NVIDIA GeForce RTX 3060"))),
             "gpu.arch_ptx_jit_only")
    assert f.fix.commands == [] and "No newer TensorFlow release" in f.fix.text


# -- several toolkits ----------------------------------------------------------------------------


def test_toolkits_disagree_and_differ_from_torch():
    link = ok("cuda.default_symlink", {"target": "cuda-12.4", "resolved": "/usr/local/cuda-12.4", "version": "12.4.1",
                                       "dangling": False}, "link:/usr/local/cuda")
    found = run(F(driver("550.54.15", "12.4"), link, nvcc("11.8.89", "/usr/local/cuda-11.8/bin/nvcc"),
                  torch("2.4.0+cu121", "12.1"), gpu("8.0", "NVIDIA A100-SXM4-80GB")))
    f = only(found, "cuda.toolkits_disagree")
    assert f.severity == "warning" and "11.8.89" in f.title and "12.4.1" in f.title
    g = only(found, "cuda.toolkit_differs_from_framework")
    # another CUDA major (11 vs 12): building extensions fails, so a warning (a different minor is info)
    assert g.severity == "warning" and "refuses a different CUDA major" in g.detail
    # ... where they would run: without a GPU (a CPU CI runner) it is only said
    assert only(run(F(driver("550.54.15", "12.4"), link, nvcc("11.8.89", "/usr/local/cuda-11.8/bin/nvcc"),
                      torch("2.4.0+cu121", "12.1"))), "cuda.toolkit_differs_from_framework").severity == "info"
    # no CUDA 12.1 toolkit here: the hand fix points where the install line puts one (found by the second
    # audit: it said /usr/local/cuda-12.1, which did not exist, beside an install into ~/cuda-12.1)
    assert g.fix.commands == ["export CUDA_HOME=~/cuda-12.1"]
    assert g.fix.install == "envdoctor install cuda --version 12.1.0 --prefix ~/cuda-12.1"
    have = ok("cuda.toolkits", [{"path": "/opt/cuda-12.1", "version": "12.1.105", "nvcc": True, "kind": "system"}],
              "derived")
    g = only(run(F(driver("550.54.15", "12.4"), link, nvcc("11.8.89", "/usr/local/cuda-11.8/bin/nvcc"),
                   torch("2.4.0+cu121", "12.1"), have)), "cuda.toolkit_differs_from_framework")
    assert g.fix.commands == ["export CUDA_HOME=/opt/cuda-12.1"] and g.fix.install is None


def test_an_installed_toolkit_nobody_builds_with_is_only_said():
    # corpus healthy-mx150-laptop-driver470-torch190-cu102-cuda114-toolkit (pytorch/pytorch#62250): a CUDA 11.4
    # toolkit under /usr/local/cuda, nvcc not on PATH, no CUDA_HOME, beside torch 1.9.0 (CUDA 10.2) that runs
    link = ok("cuda.default_symlink", {"target": "cuda-11.4", "resolved": "/usr/local/cuda-11.4", "version": "11.4.0",
                                       "dangling": False}, "link:/usr/local/cuda")
    no_nvcc = ok("cuda.nvcc", None, "command:nvcc --version")
    no_home = ok("cuda.home", None, "env:CUDA_HOME,CUDA_PATH")
    base = [driver("470.42.01", "11.4"), link, torch("1.9.0", "10.2"), gpu("6.1", "NVIDIA GeForce MX150")]
    f = only(run(F(*base, no_nvcc, no_home)), "cuda.toolkit_differs_from_framework")
    assert f.severity == "info" and "11.4.0" in f.title and "10.2" in f.title
    # the same toolkit with its nvcc on PATH, or named by CUDA_HOME, is the one builds use: a warning
    f = only(run(F(*base, nvcc("11.4.48", "/usr/local/cuda-11.4/bin/nvcc"), no_home)),
             "cuda.toolkit_differs_from_framework")
    assert f.severity == "warning" and "refuses a different CUDA major" in f.detail
    home = ok("cuda.home", {"var": "CUDA_HOME", "path": "/usr/local/cuda", "resolved": "/usr/local/cuda-11.4",
                            "exists": True, "version": "11.4.0"}, "env:CUDA_HOME")
    assert only(run(F(*base, no_nvcc, home)), "cuda.toolkit_differs_from_framework").severity == "warning"


def test_one_toolkit_matching_torch_is_quiet():
    link = ok("cuda.default_symlink", {"target": "cuda-12.1", "resolved": "/usr/local/cuda-12.1", "version": "12.1.1",
                                       "dangling": False}, "link:/usr/local/cuda")
    assert run(F(driver("550.54.15", "12.4"), link, nvcc("12.1.105", "/usr/local/cuda-12.1/bin/nvcc"),
                 torch("2.4.0+cu121", "12.1"))) == []


# -- host compiler and OS ------------------------------------------------------------------------


def gcc(version: str, banner: str) -> Fact:
    return ok("compiler.gcc", {"path": "/usr/bin/gcc", "version": version, "banner": banner},
              "command:/usr/bin/gcc --version")


def test_gcc_newer_than_nvcc_accepts():
    # Ubuntu 24.04's gcc banner; CUDA 11.8's newest host GCC is 11 (cuda.json gcc_max)
    g = gcc("13.2.0", "gcc (Ubuntu 13.2.0-23ubuntu4) 13.2.0")
    f = only(run(F(nvcc("11.8.89"), g)), "compiler.gcc_too_new_for_cuda")
    assert "GCC 13.2.0" in f.title and "GCC <= 11" in f.title
    # Ubuntu 22.04's gcc 11.4.0 is accepted
    assert run(F(nvcc("11.8.89"), gcc("11.4.0", "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0"))) == []


def glibc(version: str) -> Fact:
    return ok("os.glibc", version, "command:getconf GNU_LIBC_VERSION")


# The failure cuda_glibc.json's row describes, as reported verbatim: glibc 2.34's stdio.h, GCC 11, nvcc 11.4/11.5.0
# ('/usr/include/stdio.h(183): error: attribute "__malloc__" does not take arguments', Xpra-org/xpra#3293 on
# Fedora 35; nixpkgs#169484 for CUDA 11.5.0, whose nvcc prints V11.5.50). Banners: Fedora 35's and Ubuntu 22.04's.
GCC_11_F35 = ("11.2.1", "gcc (GCC) 11.2.1 20211019 (Red Hat 11.2.1-6)")
GCC_11_JAMMY = ("11.4.0", "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0")


@pytest.mark.parametrize("toolkit, libc", [("11.5.50", "2.34"), ("11.4.48", "2.35"), ("11.5.0", "2.34")])
def test_glibc_234_headers_with_gcc_11_break_nvcc_before_115_update_1(toolkit: str, libc: str):
    f = only(run(F(nvcc(toolkit), gcc(*GCC_11_F35), glibc(libc))), "compiler.glibc_too_new_for_cuda")
    assert "glibc %s" % libc in f.title and toolkit in f.title and "11.5.1" in f.title
    assert '__malloc__' in f.detail and "11.5" in f.fix.text
    # not confirmed from NVIDIA's own notes (cuda_glibc.json: verified false): a warning that says so
    assert f.severity == "warning" and "Not confirmed" in f.detail


@pytest.mark.parametrize("toolkit, libc, compiler", [
    ("11.5.119", "2.35", GCC_11_JAMMY),   # Ubuntu 22.04's own nvidia-cuda-toolkit 11.5.1 on its glibc and GCC
    ("11.5.1", "2.34", GCC_11_F35),       # a release version (version.json) at the fixed update
    ("11.6.55", "2.34", GCC_11_F35),
    ("11.5.50", "2.33", GCC_11_F35),      # glibc before 2.34 has no such attribute
    ("11.5.50", "2.34", ("10.3.1", "gcc (GCC) 10.3.1 20210422 (Red Hat 10.3.1-1)")),  # GCC 10: glibc omits it
])
def test_glibc_and_nvcc_that_agree_are_quiet(toolkit: str, libc: str, compiler):
    assert "compiler.glibc_too_new_for_cuda" not in codes(run(F(nvcc(toolkit), gcc(*compiler), glibc(libc))))


def test_glibc_row_is_judged_against_the_compiler_nvcc_runs():
    # nvcc's own gcc (a -ccbin/NVCC_CCBIN gcc 10) decides, not /usr/bin/gcc 11
    host = ok("compiler.nvcc_host", {"path": "/usr/bin/g++-10", "version": "10.3.0", "via": "NVCC_CCBIN"},
              "env:NVCC_CCBIN")
    assert "compiler.glibc_too_new_for_cuda" not in codes(
        run(F(nvcc("11.5.50"), gcc(*GCC_11_F35), host, glibc("2.34"))))


def extension_cc(path: str, version: Optional[str]) -> Fact:
    value: Dict[str, Any] = {"var": "CC", "path": path, "exists": True}
    if version:
        value["version"] = version
    return ok("compiler.extension_cc", value, "env:CC")


def test_gcc_limit_is_an_error_where_the_release_limit_was_verified():
    # CUDA 9.0's host_config.h stops at 'gcc versions later than 6' (cuda.json gcc_max, verified): a certain
    # build failure, so an error; Ubuntu 18.04's gcc 7.5.0 banner
    f = only(run(F(nvcc("9.0.176"), gcc("7.5.0", "gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0"))),
             "compiler.gcc_too_new_for_cuda")
    assert f.severity == "error" and "GCC <= 6" in f.title and "CUDA 9.0.176" in f.title
    # gcc 6 is accepted
    assert run(F(nvcc("9.0.176"), gcc("6.5.0", "gcc (Ubuntu 6.5.0-2ubuntu1~18.04) 6.5.0"))) == []


def test_gcc_limit_with_a_minor_compares_the_minor():
    # CUDA 7.5 tests '__GNUC__ > 4 || (__GNUC__ == 4 && __GNUC_MINOR__ > 9)': 4.9 passes, 5.x does not
    assert run(F(nvcc("7.5.17"), gcc("4.9.2", "gcc (Debian 4.9.2-10) 4.9.2"))) == []
    f = only(run(F(nvcc("7.5.17"), gcc("5.4.0", "gcc (Ubuntu 5.4.0-6ubuntu1~16.04.12) 5.4.0"))),
             "compiler.gcc_too_new_for_cuda")
    assert "GCC <= 4.9" in f.title


def test_cc_is_the_compiler_torch_extensions_give_nvcc():
    # torch.utils.cpp_extension adds '-ccbin $CC': /usr/bin/gcc (7.5) is fine for CUDA 11.0, CC=gcc-10 is not
    default = gcc("7.5.0", "gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0")
    f = only(run(F(nvcc("11.0.221"), default, extension_cc("/usr/bin/gcc-10", "10.1.0"))),
             "compiler.gcc_too_new_for_cuda")
    assert "GCC 10.1.0" in f.title and "CC" in f.title and "GCC <= 9" in f.title
    assert f.severity == "error" and any("export CC=" in c for c in f.fix.commands)
    # CC naming an accepted GCC, or a compiler whose version is unknown (clang, missing), says nothing
    assert run(F(nvcc("11.0.221"), default, extension_cc("/usr/bin/gcc-9", "9.4.0"))) == []
    assert run(F(nvcc("11.0.221"), default, extension_cc("clang", None))) == []


def test_distribution_not_supported_by_the_toolkit():
    f = only(run(F(nvcc("12.4.131"), os_facts("ubuntu", "24.04"))), "os.unsupported_by_cuda")
    assert f.severity == "warning" and "ubuntu 24.04" in f.title
    assert run(F(nvcc("12.4.131"), os_facts("ubuntu", "22.04"))) == []
    assert run(F(nvcc("12.4.131"), os_facts("rocky", "8.9"))) == []  # Rocky 8 counts as RHEL 8


# -- every captured machine, and the documentation -----------------------------------------------


@pytest.mark.parametrize("name", machine_names())
def test_captured_machines_never_crash_and_use_documented_codes(name):
    documented = {d.code for d in DOCS}
    for f in run(probe_facts(load_machine(name))):
        assert f.code in documented and f.code != "driver.cuda_version_is_a_ceiling"
        assert f.source.get("url", "").startswith("https://")
        assert f.title and f.fix.text


@pytest.mark.parametrize("name", ["debian12-nogpu", "ubuntu2004-rtx3060-cuda118", "wsl2-ubuntu2204-rtx4070",
                                  "rocky8-4xa100-conda", "pipwheels-ubuntu2204-a100", "ubuntu2404-driver-mismatch"])
def test_healthy_or_unjudgeable_captured_machines_are_quiet(name):
    assert run(probe_facts(load_machine(name))) == []


def test_codes_are_documented_lowercase_layer_snake_case():
    import re
    for d in DOCS:
        assert re.match(r"^[a-z]+\.[a-z0-9_]+$", d.code) and d.summary and d.why and d.source


# -- property: never raises; a combination the matrix supports gives no error --------------------

CUDA_ROWS = [r for r in hw.cuda_releases()]
TORCH_ROWS = matrix.load("torch")
CCS = [r["cc"] for r in matrix.load("gpu_arch")]


@settings(max_examples=150, deadline=None)
@given(driver_row=st.sampled_from(CUDA_ROWS), torch_row=st.sampled_from(TORCH_ROWS), cc=st.sampled_from(CCS),
       nvcc_row=st.sampled_from(CUDA_ROWS), data=st.data())
def test_random_combinations_never_raise_and_supported_ones_give_no_error(driver_row, torch_row, cc, nvcc_row, data):
    var = data.draw(st.sampled_from(torch_row["variants"]))
    drv = driver_row["min_driver_linux"]
    tv = "%s.0+%s" % (torch_row["version"], var["tag"])
    facts = F(driver(drv, driver_row["version"]), torch(tv, var["cuda"]), gpu(cc, "GPU"), nvcc(nvcc_row["ga"]))
    found = run(facts)
    for f in found:
        assert isinstance(f, Finding) and f.title
    driver_runs = Version(drv) >= Version(hw.min_driver_for_cuda(var["cuda"]))
    arch_ok = cc in var["arch_list"]
    if driver_runs and arch_ok:
        # the driver runs this wheel's CUDA and the wheel has SASS for the GPU: nothing about torch may be wrong
        # (building extensions with a toolkit of another major is its own question: not torch being wrong)
        bad = [f for f in found if f.severity != "info" and "torch" in f.components
               and f.code != "cuda.toolkit_differs_from_framework"]
        assert bad == [], [f.title for f in bad]


def paddle(version: str, cuda: Optional[str] = None) -> Fact:
    # framework.paddle as the probe writes it; Paddle 2.0 and older name no CUDA in paddle/version/__init__.py
    # (paddlepaddle-gpu 2.0.0's real file: full_version, major, minor, patch, rc, istaged, commit, with_mkl only)
    return ok("framework.paddle", {"version": version, "package": "paddlepaddle-gpu", "cuda": cuda, "cudnn": None,
                                   "build": "cuda"},
              "file:/opt/conda/lib/python3.7/site-packages/paddle/version/__init__.py")


def test_paddle_wheel_without_a_cuda_field_is_judged_by_its_build():
    # corpus paddle200-cu102-default-wheel-on-aistudio-driver-cuda101 (PaddlePaddle/Paddle#30933): the plain
    # 2.0.0 wheel is the CUDA 10.2 build; on a CUDA 10.1 driver it fails with Cuda error(35)
    f = only(run(F(driver("418.67", "10.1"), paddle("2.0.0"), gpu("7.0", "Tesla V100-SXM2-32GB"))),
             "driver.too_old_for_framework")
    assert f.severity == "error" and "paddlepaddle-gpu 2.0.0" in f.title and "10.2" in f.title
    # the reporter's fix, 2.0.0.post101 (CUDA 10.1), runs on that driver
    assert run(F(driver("418.67", "10.1"), paddle("2.0.0.post101"), gpu("7.0", "Tesla V100-SXM2-32GB"))) == []


def test_paddle_post_suffix_names_the_cuda_when_no_table_row_does():
    # 2.x wheels are named .postNNN for CUDA NN.N (post112 = 11.2); 2.3 has no matrix row: the suffix decides
    f = only(run(F(driver("418.67", "10.1"), paddle("2.3.2.post112"), gpu("8.6", "NVIDIA GeForce RTX 3060"))),
             "driver.too_old_for_framework")
    assert "11.2" in f.title
    # 1.x suffixes named CUDA and cuDNN together (post97 = CUDA 9.0, cuDNN 7): no guess, no verdict
    old = run(F(driver("384.130", "9.0"), paddle("1.8.4.post97"), gpu("6.1", "GeForce GTX 1080")))
    assert not [f for f in old if f.code.startswith("driver.")], codes(old)
    # a version file that names the CUDA still wins over the wheel's name
    assert run(F(driver("418.67", "10.1"), paddle("2.3.2.post112", cuda="10.1"),
                 gpu("7.0", "Tesla V100-SXM2-32GB"))) == []


def test_driver_too_old_within_a_cuda_10_major_is_not_called_a_newer_major():
    # corpus torch160-cu102-driver418-rhel7-v100 (pytorch/pytorch#43058): CUDA 10.2 wheel, driver 418.67 (10.1).
    # CUDA 10 had no minor-version compatibility: the advice must not promise it
    f = only(run(F(driver("418.67", "10.1"), torch("1.6.0", "10.2"), gpu("7.0", "Tesla V100-PCIE-16GB"))),
             "driver.too_old_for_framework")
    assert "no minor-version compatibility" in f.detail and "newer major" not in f.detail
    assert f.fix is not None and "minor-version" not in f.fix.text and "440.33" in f.fix.text
    # across majors the reason stays the major
    g = only(run(F(driver("450.80.02", "11.0"), torch("2.1.0", "12.1"), gpu("7.5", "Tesla T4"))),
             "driver.too_old_for_framework")
    assert "newer major" in g.detail and "minor-version compatibility" in g.fix.text


def _cpu_mxnet(version: str) -> Any:
    # what the frameworks probe reads of PyPI's CPU-only `mxnet` wheel (its dist-info; no mxnet-cuNNN package)
    return ok("framework.mxnet", {"version": version, "public": version, "package": "mxnet", "build": "cpu",
                                  "packages": {"mxnet": version}}, "dir:x")


def test_cpu_mxnet_names_the_mxnet_cuNNN_package_of_the_cuda_the_driver_runs():
    # driver 410 runs CUDA 10.0: PyPI's mxnet-cu100 (no 1.6 release of it: 1.5.1.post0, then 1.7.0)
    f = only(run(F(driver("410.104", "10.0"), _cpu_mxnet("1.6.0"), gpu("6.1", "GeForce GTX 1080 Ti"))),
             "framework.cpu_only_build")
    assert "mxnet-cu100" in f.detail
    assert f.fix.commands == ["pip uninstall -y mxnet", "pip install 'mxnet-cu100==1.7.*'"]
    # a driver for CUDA 10.2 keeps the installed release: mxnet-cu102 1.6.0.post0
    f = only(run(F(driver("440.100", "10.2"), _cpu_mxnet("1.6.0"), gpu("6.1", "GeForce GTX 1080 Ti"))),
             "framework.cpu_only_build")
    assert f.fix.commands[-1] == "pip install 'mxnet-cu102==1.6.*'"


def test_cpu_mxnet_without_a_gpu_is_quiet():
    assert run(F(_cpu_mxnet("1.6.0"), ok("gpu.count", 0, "derived"))) == []


def test_plain_mxnet_whose_library_links_cuda_is_no_cpu_build():
    # a source build with USE_CUDA=1 installed under the plain name (setup.py install): its libmxnet.so links the
    # CUDA runtime, so the frameworks probe says build "cuda"; nothing about a CPU-only build
    cuda_src = ok("framework.mxnet", {"version": "0.5.0", "public": "0.5.0", "package": "mxnet", "build": "cuda",
                                      "cuda": "7.5", "packages": {"mxnet": "0.5.0"}}, "dir:x")
    found = run(F(driver("352.39", "7.5"), cuda_src, gpu("5.2", "GeForce GTX TITAN X")))
    assert "framework.cpu_only_build" not in [f.code for f in found]
    f = only(run(F(driver("352.39", "7.5"), _cpu_mxnet("0.5.0"), gpu("5.2", "GeForce GTX TITAN X"))),
             "framework.cpu_only_build")
    assert f.severity == "warning" and "mxnet 0.5.0 is a CPU-only build" in f.title


# -- JAX's own driver floor per CUDA major (jax 0.4.14-0.4.25's CUDA 11 and CUDA 12 pip wheels) -------------------


def _jax_cuda11_pip() -> Fact:
    # the value jax_fact() writes for `pip install "jax[cuda11_pip]==0.4.23"` (the jaxlib wheel
    # jaxlib-0.4.23+cuda11.cudnn86-cp310-cp310-manylinux2014_x86_64.whl of jax_cuda_releases.html)
    return ok("framework.jax", {"version": "0.4.23", "package": "jax", "jaxlib": "0.4.23+cuda11.cudnn86",
                                "plugins": {}, "cuda": "11", "cudnn": "8.6", "build": "cuda"},
              "dir:/usr/lib/python3/dist-packages/jax-0.4.23.dist-info")


def test_jax_cuda11_wheels_below_jaxs_cuda_11_driver_floor():
    """JAX's install guide (jax-v0.4.14 to v0.4.25): 'the driver must be version >= 525.60.13 for CUDA 12 and >=
    450.80.02 for CUDA 11 on Linux'. Driver 450.51.06 (CUDA 11.0 GA's) is below it, though it 'supports CUDA 11'."""
    f = only(run(F(driver("450.51.06", "11.0"), _jax_cuda11_pip(), gpu("7.0", "Tesla V100-SXM2-16GB"))),
             "driver.too_old_for_framework")
    assert f.severity == "error"
    assert "450.51.06" in f.title and "driver >= 450.80.02" in f.title
    assert "jax 0.4.23 (its CUDA 11 wheels" in f.title
    assert f.title.count("(its CUDA 11 wheels, built with CUDA 11.8)") == 1
    assert f.source["verified"] is True


def test_jax_cuda11_wheels_at_jaxs_driver_floor_are_quiet():
    found = run(F(driver("450.80.02", "11.0"), _jax_cuda11_pip(), gpu("7.0", "Tesla V100-SXM2-16GB")))
    assert "driver.too_old_for_framework" not in codes(found)


# -- which toolkit JAX compiles with: the ptxas XLA runs (first on PATH, else the nvidia-cuda-nvcc wheel's) -------


def _jax_cuda12_plugin(ptxas_on_path: Optional[str], wheel: bool) -> List[Fact]:
    # jax 0.4.34 with jax-cuda12-plugin[with_cuda] (AlphaFold 3's `jax[cuda12]` pin): the plugin names no CUDA minor;
    # framework.jax.ptxas as _ptxas_candidates() writes it
    site = "/alphafold3_venv/lib/python3.11/site-packages"
    jax = ok("framework.jax", {"version": "0.4.34", "package": "jax", "jaxlib": "0.4.34",
                               "plugins": {"jax-cuda12-plugin": "0.4.34", "jax-cuda12-pjrt": "0.4.34"},
                               "cuda": "12", "cudnn": None, "build": "cuda"}, "dir:%s/jax-0.4.34.dist-info" % site)
    ptxas = ok("framework.jax.ptxas", {
        "path": {"path": ptxas_on_path, "resolved": ptxas_on_path} if ptxas_on_path else None,
        "wheel": {"path": site + "/nvidia/cuda_nvcc/bin/ptxas", "version": "12.6.85",
                  "package": "nvidia-cuda-nvcc-cu12"} if wheel else None}, "env:PATH")
    return [jax, ptxas]


_CUDA_126 = ok("cuda.default_symlink", {"target": "/etc/alternatives/cuda", "resolved": "/usr/local/cuda-12.6",
                                        "version": "12.6.0", "dangling": False}, "link:/usr/local/cuda")


def test_jax_pip_wheels_beside_a_newer_minor_toolkit_run_through_minor_version_compat():
    """An AlphaFold 3 container (nvidia/cuda:12.6.0-base: /usr/local/cuda-12.6, no ptxas) with JAX's pip CUDA wheels
    on a host driver 535 (CUDA 12.2): JAX compiles with the wheel's ptxas, and the toolkit's CUDA 12.6 runs on the
    driver through CUDA 12 minor-version compatibility (NVIDIA: driver >= 525.60.13). No error."""
    found = run(F(driver("535.183.01", "12.2"), _CUDA_126, *_jax_cuda12_plugin(None, wheel=True),
                  gpu("8.0", "NVIDIA A100 80GB PCIe")))
    assert "driver.too_old_for_toolkit" not in codes(found)
    f = only(found, "driver.minor_version_compat")
    assert "CUDA toolkit 12.6.0" in f.title


def test_jax_compiling_with_the_toolkits_ptxas_needs_the_toolkits_driver():
    """The same, but the toolkit's ptxas is first on PATH: XLA runs it, and JAX requires the toolkit's own driver."""
    found = run(F(driver("535.183.01", "12.2"), _CUDA_126,
                  *_jax_cuda12_plugin("/usr/local/cuda-12.6/bin/ptxas", wheel=True),
                  gpu("8.0", "NVIDIA A100 80GB PCIe")))
    f = only(found, "driver.too_old_for_toolkit")
    assert f.severity == "error" and "560.28.03" in f.title


# -- packages bundling CUDA-linked libraries of their own: CTranslate2's PyPI wheels (framework_builds.json) --------


def _ct2(version: str, lib: str, cublas: str) -> Fact:
    # linkage.packages as package_libraries() writes it for the ctranslate2 wheel: ctranslate2.libs/ holds the
    # auditwheel-renamed libctranslate2 (e.g. libctranslate2-de03ae65.so.4.0.0 of the 4.0.0 cp38 wheel), which opens
    # cuBLAS by soname at run time (src/cuda/cublas_stub.cc, runtime_loads.json)
    site = "/usr/local/lib/python3.8/dist-packages"
    root = "%s/ctranslate2.libs/%s" % (site, lib)
    return ok("linkage.packages", [{"package": "ctranslate2", "version": version, "roots": [root],
                                    "links": [{"requester": root, "soname": cublas, "how": "dlopen", "path": None,
                                               "certain": True, "component": "cuda"}],
                                    "unread": [], "cache_unknown": None}], "elf:" + root)


def test_ctranslate2_cuda12_wheel_on_a_cuda_11_driver():
    """CTranslate2 4.0-4.6.0's wheels are built with CUDA 12.2 (its wheel build script); driver 510.85.02 runs CUDA
    11.6 at most, and minor-version compatibility never crosses majors (faster-whisper#734)."""
    f = only(run(F(driver("510.85.02", "11.6"), _ct2("4.0.0", "libctranslate2-de03ae65.so.4.0.0", "libcublas.so.12"),
                   gpu("7.5", "Tesla T4"))), "driver.too_old_for_framework")
    assert f.severity == "error"
    assert "510.85.02" in f.title and "ctranslate2 4.0.0" in f.title and "driver >= 525.60.13" in f.title


def test_ctranslate2_wheels_on_a_driver_that_runs_their_cuda_are_quiet():
    # 4.6.3+ are built with CUDA 12.8: on driver 535 (CUDA 12.2) through minor-version compatibility, said as info
    found = run(F(driver("535.183.01", "12.2"), _ct2("4.7.1", "libctranslate2-0a1b2c3d.so.4.7.1", "libcublas.so.12"),
                  gpu("8.6", "NVIDIA GeForce RTX 3090")))
    assert not [f for f in found if f.code.startswith("driver.") and f.severity != "info"], codes(found)
    found = run(F(driver("550.144.03", "12.4"), _ct2("4.4.0", "libctranslate2-bc15bf3f.so.4.4.0", "libcublas.so.12"),
                  gpu("8.6", "NVIDIA GeForce RTX 3090")))
    assert "driver.too_old_for_framework" not in codes(found)


def test_ctranslate2_build_loading_another_cublas_major_is_not_judged_by_the_catalog():
    # a wheel built elsewhere for CUDA 11 (its library opens libcublas.so.11): not the PyPI build the catalog knows
    found = run(F(driver("510.85.02", "11.6"), _ct2("4.0.0", "libctranslate2-11111111.so.4.0.0", "libcublas.so.11"),
                  gpu("7.5", "Tesla T4")))
    assert "driver.too_old_for_framework" not in codes(found)


def test_ctranslate2_wheel_cuda_per_release_from_its_build_script():
    from envdoctor.matrix import builds, load

    assert [builds.ctranslate2_build(v)[0] for v in ("3.24.0", "4.0.0", "4.6.0", "4.6.2", "4.8.1")] == [  # type: ignore[index]
        "11.2", "12.2", "12.2", "12.4", "12.8"]
    assert builds.ctranslate2_build("1.20.0") is None and builds.ctranslate2_build("4.9.0") is None
    rows = [r for r in load("framework_builds") if r.get("framework") == "ctranslate2"]
    assert builds.validate(rows) == []
    assert builds.validate([dict(rows[0], cuda="12")]) == ["row 0: a ctranslate2 row needs cuda (major.minor)"]


def test_a_pre_cuda11_toolkit_of_another_minor_says_why_it_matters_but_stays_info():
    # corpus b49-...-cuda101168-nvcc-torch110-cu100-apex-cuda-ext-build-refuses-minor-mismatch (NVIDIA/apex#350) and
    # healthy-four-toolkits-cuda101-active-torch182-cu102: the same machine shape, one broken by apex's own
    # major.minor check, one healthy; before CUDA 11 each minor is its own runtime (libcudart.so.10.1)
    base = [driver("418.67", "10.1"), gpu("6.1", "NVIDIA GeForce GTX 1080 Ti")]
    f = only(run(F(*base, nvcc("10.1.168"), torch("1.1.0", "10.0.130"))), "cuda.toolkit_differs_from_framework")
    assert f.severity == "info" and "10.1.168" in f.title and "10.0" in f.title
    assert "libcudart.so.10.1" in f.detail and "apex" in f.detail
    # from CUDA 11 one runtime serves every minor: torch's own words
    f = only(run(F(*base, nvcc("11.0.221"), torch("1.13.0+cu116", "11.6"))), "cuda.toolkit_differs_from_framework")
    assert f.severity == "info" and "warns about a different minor" in f.detail and "libcudart" not in f.detail

"""``nccl.cuda_build_mismatch``: an installed NCCL built for a CUDA the driver does not run, or for another CUDA than
the toolkit's. NVIDIA's packages name their CUDA build in the version (``libnccl2 2.1.4-1+cuda9.0``: the file names of
NVIDIA's repository, e.g. ``libnccl2_2.1.4-1+cuda8.0_amd64.deb`` / ``..._cuda9.0_amd64.deb`` / ``..._cuda9.1_amd64.deb``
listed side by side in nvidia/container-images/cuda issue 12; RPM ``libnccl 2.11.4-1+cuda11.4`` as ``rpm -qa --qf
'%{NAME} %{VERSION}-%{RELEASE}'`` prints NVIDIA's rhel8 repository package ``libnccl-2.11.4-1+cuda11.4.x86_64.rpm``).
Only the GPU and its driver are stand-ins (their facts), as nothing runs a GPU here."""

from __future__ import annotations

from typing import Any, List, Optional

from envdoctor.checks import CheckContext
from envdoctor.checks.libraries.nccl_build import nccl_cuda_build
from envdoctor.facts import Facts, ok
from envdoctor.probes.cuda import parse_dpkg_status, parse_rpm_qa

STANZA = """Package: libnccl2
Status: install ok installed
Priority: optional
Section: libs
Installed-Size: {size}
Maintainer: cudatools <cudatools@nvidia.com>
Architecture: amd64
Source: nccl
Version: {version}
Description: NVIDIA Collective Communication Library (NCCL) Runtime
 NCCL (pronounced "Nickel") is a stand-alone library of standard collective
 communication routines for GPUs.
Homepage: https://developer.nvidia.com/nccl

"""


def nvcc(version: str) -> Any:
    mm = ".".join(version.split(".")[:2])
    return ok("cuda.nvcc", {"path": "/usr/local/cuda/bin/nvcc", "resolved": "/usr/local/cuda-%s/bin/nvcc" % mm,
                            "release": mm, "version": version, "toolkit": "/usr/local/cuda-%s" % mm},
              "command:nvcc --version")


def judge(packages: List[Any], driver: str, driver_cuda: Optional[str], toolkit: Optional[str],
          choice: Optional[Any] = None, pip: Optional[List[Any]] = None, extra: Optional[List[Any]] = None
          ) -> List[Any]:
    facts = list(extra or []) + [ok("cuda.packages", packages, "file:/var/lib/dpkg/status"),
             ok("libraries.nccl", pip or [], "derived"),
             ok("libraries.loader_choice", {"libnccl.so.2": choice} if choice else {}, "derived"),
             ok("driver.version", driver, "nvml"), ok("driver.cuda_version", driver_cuda, "nvml"),
             ok("os.wsl", False, "derived")]
    if toolkit:
        facts.append(nvcc(toolkit))
    return list(nccl_cuda_build(CheckContext(Facts(facts), [])))


def deb(version: str) -> List[Any]:
    return parse_dpkg_status(STANZA.format(size=123456, version=version))


def test_a_package_built_for_a_newer_cuda_than_the_driver_runs_is_an_error_naming_both():
    # driver 440.100 reports CUDA 10.2; libnccl2 2.9.8-1+cuda11.0 carries CUDA 11.0's runtime
    out = judge(deb("2.9.8-1+cuda11.0"), "440.100", "10.2", "10.2.89")
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "error")]
    assert "11.0" in out[0].title and "10.2" in out[0].title
    assert "unhandled cuda error" in out[0].detail
    assert out[0].fix.commands == ["sudo apt-get install --allow-downgrades 'libnccl2=2.9.8-1+cuda10.2' "
                                   "'libnccl-dev=2.9.8-1+cuda10.2'"]


def test_a_driver_without_a_reported_cuda_is_placed_by_table_3():
    # 384.111 is not told by NVML (R384 has the call, a snapshot may not): Table 3 places it at CUDA 9.0
    out = judge(deb("2.4.8-1+cuda10.0"), "384.111", None, None)
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "error")]


def test_a_build_for_another_cuda_than_the_toolkit_before_cuda_11_is_a_warning():
    # driver 384.111 runs CUDA 9.0; the toolkit is 8.0 and apt took the +cuda9.0 build
    out = judge(deb("2.1.15-1+cuda9.0"), "384.111", "9.0", "8.0.61")
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "warning")]
    assert "cuda9.0" in out[0].title and "8.0" in out[0].title
    assert out[0].fix.commands == ["sudo apt-get install --allow-downgrades 'libnccl2=2.1.15-1+cuda8.0' "
                                   "'libnccl-dev=2.1.15-1+cuda8.0'"]


def test_quiet_for_the_matching_build_and_for_another_minor_from_cuda_11():
    assert judge(deb("2.1.15-1+cuda9.0"), "384.111", "9.0", "9.0.176") == []
    # minor-version compatibility: +cuda12.2 beside a 12.4 toolkit on a driver for 12.4
    assert judge(deb("2.19.3-1+cuda12.2"), "550.54.15", "12.4", "12.4.131") == []
    # no toolkit to compare with, a driver that runs the build
    assert judge(deb("2.19.3-1+cuda12.3"), "550.54.15", "12.4", None) == []
    # distributions' own builds carry no +cuda suffix (Ubuntu's libnccl2 2.18.3-1)
    assert judge(deb("2.18.3-1"), "470.82.01", "11.4", None) == []


def test_quiet_when_the_loader_takes_another_nccl_than_the_package():
    choice = {"path": "/opt/nccl/lib/libnccl.so.2", "resolved": "/opt/nccl/lib/libnccl.so.2.7.8",
              "version": "2.7.8", "via": "LD_LIBRARY_PATH"}
    assert judge(deb("2.9.8-1+cuda11.0"), "440.100", "10.2", "10.2.89", choice=choice) == []
    same = dict(choice, path="/usr/lib/x86_64-linux-gnu/libnccl.so.2", version="2.9.8", via="ldconfig cache")
    assert len(judge(deb("2.9.8-1+cuda11.0"), "440.100", "10.2", "10.2.89", choice=same)) == 1


def test_rpm_packages_and_pip_wheels():
    rpm = parse_rpm_qa("libnccl 2.11.4-1+cuda11.4\nlibnccl-devel 2.11.4-1+cuda11.4\n")
    out = judge(rpm, "418.87.01", "10.1", None)
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "error")]
    assert out[0].fix.commands == ["sudo yum install 'libnccl-2.11.4-1+cuda10.1' 'libnccl-devel-2.11.4-1+cuda10.1'"]
    # minor-version compatibility runs +cuda11.4 on a driver for 11.0 from 450.80.02
    assert judge(rpm, "450.80.02", "11.0", None) == []
    wheel = [{"path": "/venv/lib/python3.10/site-packages/nvidia_nccl_cu12-2.21.5.dist-info", "version": "2.21.5",
              "kind": "pip", "found_by": "pip wheel nvidia-nccl-cu12"}]
    out = judge([], "470.82.01", "11.4", None, pip=wheel)
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "error")]
    assert judge([], "535.104.05", "12.2", None, pip=wheel) == []


SITE = "/home/u/venv/lib/python3.12/site-packages"


def cu_wheel(major: str, version: str) -> List[Any]:
    """A pip NCCL wheel as the probe records it: its library, then its dist-info."""
    lib = SITE + "/nvidia/nccl/lib/libnccl.so.2"
    return [{"path": lib, "soname": "libnccl.so.2", "version": version, "found_by": "pip wheel nvidia-nccl-cu" + major,
             "resolved": lib, "kind": "library"},
            {"path": "%s/nvidia_nccl_cu%s-%s.dist-info" % (SITE, major, version), "version": version, "kind": "pip",
             "found_by": "pip wheel nvidia-nccl-cu" + major}]


def torch(cuda: str, wheels: Any) -> Any:
    # torch 2.11.0+cu130's metadata pins nvidia-nccl-cu13==2.28.9 (its wheel's Requires-Dist)
    return ok("framework.torch", {"version": "2.11.0+cu%s" % cuda.replace(".", ""), "public": "2.11.0",
                                  "package": "torch", "path": SITE, "cuda": cuda, "build": "cuda",
                                  "nvidia_wheels": wheels}, "file:" + SITE)


CU13_PIN = {"nvidia-nccl-cu13": {"required": "2.28.9", "specifier": "==2.28.9", "installed": "2.28.9"}}


def test_a_framework_wheel_nccl_is_not_judged_against_a_toolkit_the_loader_does_not_give_it_to():
    # torch 2.11.0+cu130 loads nvidia-nccl-cu13 through its RPATH; a CUDA 12.8 nvcc on PATH builds programs that
    # do not find that copy (no LD_LIBRARY_PATH, no loader-cache entry): nothing to say about NCCL
    out = judge([], "595.97", "13.2", "12.8.61", pip=cu_wheel("13", "2.28.9"), extra=[torch("13.0", CU13_PIN)])
    assert out == []
    none = {"soname": "libnccl.so.2", "path": None, "resolved": None, "version": None, "via": None}
    assert judge([], "595.97", "13.2", "12.8.61", choice=none, pip=cu_wheel("13", "2.28.9")) == []


def test_a_wheel_nccl_the_loader_gives_programs_is_still_judged_against_the_toolkit():
    lib = SITE + "/nvidia/nccl/lib"
    choice = {"path": lib + "/libnccl.so.2", "resolved": lib + "/libnccl.so.2", "version": "2.28.9",
              "via": "LD_LIBRARY_PATH"}
    out = judge([], "595.97", "13.2", "12.8.61", choice=choice, pip=cu_wheel("13", "2.28.9"),
                extra=[torch("13.0", CU13_PIN)])
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "warning")]
    assert "nvidia-nccl-cu13" in out[0].title and "toolkit is 12.8" in out[0].title


def test_a_wheel_nccl_of_another_cuda_major_than_the_framework_that_loads_it_is_a_warning():
    # torch +cu130 requires nvidia-nccl-cu13, but only nvidia-nccl-cu12 wrote site-packages/nvidia/nccl/lib
    pin = {"nvidia-nccl-cu13": {"required": "2.28.9", "specifier": "==2.28.9", "installed": None}}
    out = judge([], "595.97", "13.2", None, pip=cu_wheel("12", "2.27.3"), extra=[torch("13.0", pin)])
    assert [(f.code, f.severity) for f in out] == [("nccl.cuda_build_mismatch", "warning")]
    assert "nvidia-nccl-cu12 2.27.3" in out[0].title and "torch 2.11.0+cu130" in out[0].title
    assert "CUDA 13.0" in out[0].title and "loads it" in out[0].title
    assert out[0].fix.commands == ["pip install --force-reinstall 'nvidia-nccl-cu13==2.28.9'"]
    # its own wheel installed beside it: the two overwrite each other, which framework.nvidia_wheels_conflict says
    both = {"nvidia-nccl-cu13": dict(pin["nvidia-nccl-cu13"], installed="2.28.9")}
    assert judge([], "595.97", "13.2", None, pip=cu_wheel("12", "2.27.3"), extra=[torch("13.0", both)]) == []
    # a framework of the wheel's own major: quiet
    pin12 = {"nvidia-nccl-cu12": {"required": "2.27.3", "specifier": "==2.27.3", "installed": "2.27.3"}}
    assert judge([], "595.97", "13.2", "13.0.88", pip=cu_wheel("12", "2.27.3"), extra=[torch("12.8", pin12)]) == []

"""Checks the real-world corpus showed missing or crashing in the hardware layers (issue 11): every soname
shape a framework dlopens, the device nodes CUDA needs, GPUs the kernel driver failed to initialise."""

from __future__ import annotations

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

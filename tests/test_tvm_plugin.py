"""Apache TVM as a framework plug-in: its build read from its runtime library's NEEDED entries, and a CPU-only build
on a GPU machine is framework.cpu_only_build.

A TVM built with USE_CUDA=ON links the CUDA runtime and driver into libtvm_runtime.so (cmake/modules/CUDA.cmake:
CUDA_CUDART_LIBRARY, CUDA_CUDA_LIBRARY and CUDA_NVRTC_LIBRARY appended to TVM_RUNTIME_LINKER_LIBS); the apache-tvm
PyPI wheel (tvm.apache.org/docs/install/pypi.html) is not a CUDA-enabled build, its [cuda] extra adds cuda-python
only. The NEEDED lists below are those two layouts; the ELF files themselves are stand-ins (no TVM build here)."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.cpu_builds import cpu_builds
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeContext
from envdoctor.probes.frameworks import probe_frameworks

from .conftest import make_host
from .test_probe_frameworks import SITE

METADATA = "Metadata-Version: 2.1\nName: apache-tvm\nVersion: 0.22.0\nRequires-Dist: cuda-python; extra == \"cuda\"\n"
CPU_NEEDED = ["libstdc++.so.6", "libm.so.6", "libc.so.6"]
CUDA_NEEDED = ["libcudart.so.12", "libcuda.so.1", "libnvrtc.so.12", "libstdc++.so.6", "libm.so.6", "libc.so.6"]


def _host(runtime_needed):
    host = make_host(
        files={SITE + "/apache_tvm-0.22.0.dist-info/METADATA": METADATA, SITE + "/tvm/__init__.py": "",
               SITE + "/tvm/libtvm_runtime.so": "", SITE + "/tvm/libtvm.so": ""},
        python={"executable": "/home/ana/venv/bin/python", "version": "3.10.12", "implementation": "cpython",
                "prefix": "/home/ana/venv", "base_prefix": "/usr", "sys_path": [SITE]})
    host.doc.setdefault("elf", {}).update({
        SITE + "/tvm/libtvm_runtime.so": {"needed": runtime_needed, "rpath": [], "runpath": ["$ORIGIN"],
                                          "soname": "libtvm_runtime.so"},
        SITE + "/tvm/libtvm.so": {"needed": ["libtvm_runtime.so"] + CPU_NEEDED, "rpath": [], "runpath": ["$ORIGIN"],
                                  "soname": "libtvm.so"}})
    return host


def _gpu():
    # NVML's answers for one GPU (a stand-in: no GPU runs here)
    return [ok("gpu.count", 1, "nvml", "GPUs"), ok("gpu.0.compute_capability", "8.6", "nvml", "Compute capability"),
            ok("gpu.0.name", "NVIDIA GeForce RTX 3090", "nvml", "Name")]


def test_the_pypi_wheel_is_a_cpu_build_and_is_named_on_a_gpu_machine():
    facts = Facts(list(probe_frameworks(ProbeContext(_host(CPU_NEEDED)))) + _gpu())
    tvm = facts.value("framework.tvm")
    assert tvm["version"] == "0.22.0" and tvm["build"] == "cpu" and tvm["cuda_libraries"] == []
    found = [f for f in cpu_builds(CheckContext(facts, [])) if f.code == "framework.cpu_only_build"]
    assert len(found) == 1 and "apache-tvm 0.22.0" in found[0].title and "USE_CUDA=ON" in found[0].detail
    assert "[cuda] extra" in found[0].fix.text


def test_a_use_cuda_build_is_quiet():
    facts = Facts(list(probe_frameworks(ProbeContext(_host(CUDA_NEEDED)))) + _gpu())
    assert facts.value("framework.tvm")["build"] == "cuda"
    assert facts.value("framework.tvm")["cuda_libraries"] == ["libcuda.so.1", "libcudart.so.12", "libnvrtc.so.12"]
    assert [f for f in cpu_builds(CheckContext(facts, [])) if f.code == "framework.cpu_only_build"] == []

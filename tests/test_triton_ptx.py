"""Triton's kernels against the ptxas that assembles them (frameworks.triton-ptxas-ptx).

Triton 1.0/1.1 (read in the 1.0.0, 1.1.0 and 1.1.1 Linux wheels' libtriton.so) declare the PTX ISA version of the
driver's CUDA (vptx: up to 7.3) and run the first ptxas on PATH (1.0 only when TRITON_PTXAS is set; without one the
driver compiles the PTX); from 2.0 (the 2.0.0 wheel's compiler.py) Triton runs its bundled ptxas or
TRITON_PTXAS_PATH and takes the PTX ISA version from that ptxas. The ptxas outputs below are NVIDIA's own
(``ptxas --version`` of CUDA 11.2.152 and 11.8.89, as the toolkits print them); the machine around them is the
probe's input built by hand, since nothing here runs a GPU.
"""

from __future__ import annotations

from typing import Dict, List, Optional

from packaging.specifiers import SpecifierSet

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok
from envdoctor.matrix import hardware as hw
from envdoctor.matrix import load
from envdoctor.probes import ProbeContext
from envdoctor.probes.frameworks import probe_frameworks

from .conftest import make_host
from .test_probe_frameworks import PTXAS_11_8, PTXAS_12_3, TORCH_240_CU121_VERSION_PY

SITE = "/home/ana/venv/lib/python3.8/site-packages"
CODE = "framework.triton_ptxas_too_old_for_ptx"
PTXAS_11_2 = ("ptxas: NVIDIA (R) Ptx optimizing assembler\nCopyright (c) 2005-2021 NVIDIA Corporation\n"
              "Built on Sun_Feb_14_21:11:52_PST_2021\nCuda compilation tools, release 11.2, V11.2.152\n"
              "Build cuda_11.2.r11.2/compiler.29618528_0\n")


def host(triton: str = "1.1.1", path: str = "/usr/local/cuda-11.2/bin:/usr/bin",
         environ: Optional[Dict[str, str]] = None, egg: bool = False, bundled: str = "",
         answers: Optional[List[Dict[str, object]]] = None):
    files = {SITE + "/torch/version.py": TORCH_240_CU121_VERSION_PY.replace("12.1", "11.3"),
             SITE + "/torch-1.10.2+cu113.dist-info/METADATA": "Name: torch\nVersion: 1.10.2+cu113\n",
             "/usr/local/cuda-11.2/bin/ptxas": "", "/usr/local/cuda-11.8/bin/ptxas": ""}
    sys_path = [SITE]
    if egg:  # `python setup.py develop` of Triton's source tree: triton.egg-info without a version in its name
        files["/src/triton/python/triton.egg-info/PKG-INFO"] = "Metadata-Version: 2.1\nName: triton\nVersion: %s\n" % (
            triton)
        files["/src/triton/python/triton/__init__.py"] = "__version__ = '%s'\n" % triton
        sys_path.append("/src/triton/python")
    else:
        files[SITE + "/triton-%s.dist-info/METADATA" % triton] = "Name: triton\nVersion: %s\n" % triton
    if bundled:
        files[SITE + "/" + bundled] = ""
    env = {"PATH": path}
    env.update(environ or {})
    return make_host(files=files, environ=env, commands=answers if answers is not None else [
        {"argv": ["/usr/local/cuda-11.2/bin/ptxas", "--version"], "stdout": PTXAS_11_2},
        {"argv": ["/usr/local/cuda-11.8/bin/ptxas", "--version"], "stdout": PTXAS_11_8},
        {"argv": [SITE + "/" + bundled, "--version"], "stdout": PTXAS_12_3}],
        python={"executable": "/home/ana/venv/bin/python", "version": "3.8.10", "implementation": "cpython",
                "prefix": "/home/ana/venv", "base_prefix": "/usr", "sys_path": sys_path})


def judged(h, driver_cuda: str = "11.4", driver: str = "470.82.01"):
    facts = Facts(probe_frameworks(ProbeContext(h)))
    facts.add(ok("driver.cuda_version", driver_cuda, "nvml", "CUDA level of the driver"))
    facts.add(ok("driver.version", driver, "nvml", "driver"))
    return facts, [f for f in run_checks(CheckContext(facts, [])) if f.code == CODE]


def test_triton_1_1_with_cuda_11_2_ptxas_first_on_path_under_a_cuda_11_4_driver_fails():
    facts, found = judged(host())
    t = facts.value("framework.torch.triton")
    assert (t["from"], t["ptxas"], t["release"]) == ("PATH", "/usr/local/cuda-11.2/bin/ptxas", "11.2")
    assert len(found) == 1 and found[0].severity == "error"
    f = found[0]
    assert "PTX ISA 7.3" in f.title and "CUDA 11.2" in f.title and "7.2 at most" in f.title
    assert "Unsupported .version 7.3; current version is '7.2'" in f.detail and "CUDA 11.3 or newer" in f.detail


def test_a_source_build_in_develop_mode_is_read_from_its_pkg_info():
    facts, found = judged(host(triton="1.1.2", egg=True))
    assert facts.value("framework.torch.triton")["version"] == "1.1.2" and len(found) == 1


def test_quiet_when_the_ptxas_on_path_knows_the_drivers_ptx_isa():
    _, found = judged(host(path="/usr/local/cuda-11.8/bin:/usr/bin"))
    assert found == []
    # a CUDA 11.2 driver: Triton writes PTX ISA 7.2, which CUDA 11.2's ptxas accepts
    assert judged(host(), driver_cuda="11.2", driver="460.27.04")[1] == []


def test_quiet_without_ptxas_on_path_the_driver_compiles_the_ptx():
    facts, found = judged(host(path="/usr/bin"))
    assert facts.value("framework.torch.triton")["ptxas"] is None and found == []


def test_triton_1_0_runs_ptxas_only_when_triton_ptxas_is_set():
    facts, found = judged(host(triton="1.0.0"))
    assert facts.value("framework.torch.triton")["ptxas"] is None and found == []
    assert len(judged(host(triton="1.0.0", environ={"TRITON_PTXAS": "1"}))[1]) == 1


def test_quiet_for_triton_2_which_bundles_its_ptxas_and_follows_it():
    facts, found = judged(host(triton="2.0.0", bundled="triton/third_party/cuda/bin/ptxas"))
    t = facts.value("framework.torch.triton")
    assert (t["from"], t["release"]) == ("bundled", "12.3") and found == []
    # TRITON_PTXAS_PATH to an old ptxas: Triton 2 writes that ptxas's own PTX ISA, so nothing to say here
    assert judged(host(triton="2.0.0", environ={"TRITON_PTXAS_PATH": "/usr/local/cuda-11.2/bin/ptxas"}))[1] == []


def test_a_silent_ptxas_on_path_is_judged_by_the_toolkit_it_lies_in():
    h = host(answers=[{"argv": ["/usr/local/cuda-11.2/bin/ptxas", "--version"], "returncode": 126,
                       "stderr": "Permission denied"}])
    facts = Facts(probe_frameworks(ProbeContext(h)))
    t = facts.value("framework.torch.triton")
    assert t["release"] is None and t["version_error"] and t["resolved"] == "/usr/local/cuda-11.2/bin/ptxas"
    facts.add(ok("driver.cuda_version", "11.4", "nvml", "CUDA level of the driver"))
    facts.add(ok("cuda.toolkits", [{"path": "/usr/local/cuda-11.2", "version": "11.2.2"}], "dir", "toolkits"))
    found = [f for f in run_checks(CheckContext(facts, [])) if f.code == CODE]
    assert len(found) == 1 and "toolkit at /usr/local/cuda-11.2" in found[0].detail


def test_every_triton_row_and_ptx_isa_is_used_by_the_queries():
    for row in load("triton"):
        low = next(s.version for s in SpecifierSet(row["releases"]) if s.operator == ">=")
        assert hw.triton_release(low) is row
    assert hw.triton_release("0.4.2") is None and hw.triton_release("garbage") is None
    known = [r for r in hw.cuda_releases() if "ptx_isa" in r]
    assert [hw.ptx_isa_for_cuda(r["version"]) for r in known] == [r["ptx_isa"] for r in known]
    assert (hw.ptx_isa_for_cuda("11.2.2"), hw.ptx_isa_for_cuda("12.6"), hw.ptx_isa_for_cuda("13.5")) == (
        "7.2", "8.5", None)

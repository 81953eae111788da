"""Triton's launcher build and the cuda.h it includes (frameworks.triton-launcher).

The rule is the wheels' own: Triton 2.0.0's triton/compiler.py (_build: -I<CUDA_PATH, else CUDA_HOME, else
/usr/local/cuda>/include, falling back to the bundled triton/third_party/cuda/include only when that has no cuda.h) and
2.1.0's triton/common/build.py (the bundled folder only, which every wheel carries: not judged), read in the Linux
wheels (triton.json launcher_include). The
layout is pytorch/pytorch#90757's: the PyTorch nightly of December 2022 with its torchtriton 2.0.0+<commit>, whose
third_party/cuda holds ptxas but no include/cuda.h, and a CUDA 11.7 toolkit under /usr/local/cuda-11.7 without the
/usr/local/cuda link. The ptxas output is NVIDIA's own (CUDA 11.8.89); the machine around it is the probe's input
built by hand, since nothing here runs a GPU.
"""

from __future__ import annotations

from typing import Dict, Optional

import pytest

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok
from envdoctor.probes import ProbeContext
from envdoctor.probes.frameworks import probe_frameworks

from .conftest import make_host
from .test_probe_frameworks import PTXAS_11_8

ENV = "/home/user/miniconda3/envs/torch2"
SITE = ENV + "/lib/python3.10/site-packages"
BUNDLE = SITE + "/triton/third_party/cuda"
CODE = "framework.triton_launcher_cannot_build"


def host(package: str = "torchtriton", version: str = "2.0.0+0d7e753227", bundled_h: bool = False,
         usr_local_cuda: bool = False, environ: Optional[Dict[str, str]] = None, bundle_dir: bool = True,
         usr_include: bool = False):
    files = {SITE + "/torch-2.0.0.dev20221210.dist-info/METADATA": "Name: torch\nVersion: 2.0.0.dev20221210\n",
             SITE + "/torch/version.py": "__version__ = '2.0.0.dev20221210'\ncuda = '11.7'\n",
             SITE + "/%s-%s.dist-info/METADATA" % (package.replace("-", "_"), version):
                 "Name: %s\nVersion: %s\n" % (package, version),
             SITE + "/triton/__init__.py": "",
             "/usr/local/cuda-11.7/include/cuda.h": "", "/usr/local/cuda-11.7/bin/nvcc": ""}
    if bundle_dir:
        files[BUNDLE + "/bin/ptxas"] = ""
    if bundled_h:
        files[BUNDLE + "/include/cuda.h"] = ""
    if usr_local_cuda:
        files["/usr/local/cuda/include/cuda.h"] = ""
    if usr_include:  # Debian's nvidia-cuda-dev puts cuda.h in /usr/include
        files["/usr/include/cuda.h"] = ""
    env = {"PATH": ENV + "/bin:/usr/local/cuda-11.7/bin:/usr/bin:/bin", "CONDA_PREFIX": ENV}
    env.update(environ or {})
    return make_host(files=files, environ=env, commands=[
        {"argv": [BUNDLE + "/bin/ptxas", "--version"], "stdout": PTXAS_11_8}],
        python={"executable": ENV + "/bin/python", "version": "3.10.8", "implementation": "cpython",
                "prefix": ENV, "base_prefix": ENV, "sys_path": [SITE]})


def judged(h):
    facts = Facts(probe_frameworks(ProbeContext(h)))
    facts.add(ok("driver.cuda_version", "12.0", "nvml", "CUDA level of the driver"))
    facts.add(ok("driver.version", "525.60.11", "nvml", "driver"))
    facts.add(ok("cuda.toolkits", [{"root": "/usr/local/cuda-11.7", "version": "11.7.1"}], "test", "toolkits"))
    return facts, [f for f in run_checks(CheckContext(facts, [])) if f.code == CODE]


def test_torchtriton_without_bundled_cuda_h_and_no_usr_local_cuda_warns():
    facts, found = judged(host())
    launcher = facts.value("framework.torch.triton")["launcher_cuda_h"]
    assert launcher["found"] is None and launcher["searched"][0] == "/usr/local/cuda/include"
    assert [f.severity for f in found] == ["warning"]
    assert "torchtriton 2.0.0+0d7e753227" in found[0].title and "cuda.h" in found[0].title
    assert "cuda.h: No such file or directory" in found[0].detail
    assert found[0].fix.commands == ["export CUDA_HOME=/usr/local/cuda-11.7"]


def test_cuda_home_naming_a_folder_without_cuda_h_is_named():
    _, found = judged(host(environ={"CUDA_HOME": "/opt/nothing"}))
    assert len(found) == 1 and "CUDA_HOME=/opt/nothing" in found[0].title


@pytest.mark.parametrize("kw", [{"bundled_h": True}, {"usr_local_cuda": True}, {"usr_include": True},
                                {"environ": {"CUDA_HOME": "/usr/local/cuda-11.7"}},
                                {"environ": {"CUDA_PATH": "/usr/local/cuda-11.7", "CUDA_HOME": "/opt/nothing"}},
                                {"environ": {"CPATH": "/usr/local/cuda-11.7/include"}}])
def test_quiet_when_cuda_h_is_where_triton_2_0_or_the_compiler_looks(kw):
    assert judged(host(**kw))[1] == []


@pytest.mark.parametrize("package,version,kw", [("triton", "3.0.0", {}), ("triton", "1.1.1", {}),
                                                ("triton", "2.1.0", {}), ("pytorch-triton", "2.2.0+e28a256d71", {}),
                                                ("torchtriton", "2.0.0+0d7e753227", {"bundle_dir": False})])
def test_quiet_where_the_rule_or_the_install_layout_is_not_known(package, version, kw):
    # from 2.1 the launcher reads only the cuda.h every wheel bundles (2.1.0's triton/common/build.py), so a record
    # without it is a partial one; 3.x's and 1.x's rules are not in the matrix; an install whose bundled CUDA folder
    # (with ptxas) was not read cannot be judged by what is missing from it
    facts, found = judged(host(package, version, **kw))
    assert found == [] and "launcher_cuda_h" not in facts.value("framework.torch.triton")


def test_garbled_launcher_fact_is_quiet():
    facts = Facts([ok("framework.torch.triton", {"package": "triton", "version": "2.0.0",
                                                 "launcher_cuda_h": {"found": None, "searched": "garbled"}},
                      "test", "t")])
    assert [f for f in run_checks(CheckContext(facts, [])) if f.code == CODE] == []

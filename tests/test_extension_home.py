"""Which CUDA_HOME building a PyTorch CUDA extension would use, and whether it is a toolkit.

torch.utils.cpp_extension._find_cuda_home (read in the torch 2.13.0 wheel): CUDA_HOME or CUDA_PATH,
else dirname(dirname(`which nvcc`)) -- the path as found, not resolved --, else /usr/local/cuda. On
this project's development VM nvcc is /usr/local/bin/nvcc, a wrapper script for a pip-assembled CUDA
13.0 in /usr/local/cuda-13.0 (the layout of tests/test_probe_cuda.py), so torch would take
CUDA_HOME=/usr/local, which has no include/cuda_runtime.h: flash-attn and friends fail to build.
Found by the peer comparison; no peer reports it.
"""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.compat import compat
from envdoctor.facts import Facts

from .conftest import make_host
from .test_probe_cuda import CUDA13_DIST_INFO, NVCC_13_0, PATH, cuda_facts
from .test_probe_frameworks import TORCH_240_CU121_VERSION_PY, TORCH_240_METADATA, facts_of, site_host

TOOLKIT = {"/usr/local/cuda-13.0/bin/nvcc": "", "/usr/local/cuda-13.0/lib/libcudart.so.13": "",
           "/usr/local/cuda-13.0/include/cuda_runtime.h": ""}


def this_vm(environ=None, wrapper=True):
    files = dict(TOOLKIT)
    if wrapper:
        files["/usr/local/bin/nvcc"] = '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n'
    nvcc = "/usr/local/bin/nvcc" if wrapper else "/usr/local/cuda-13.0/bin/nvcc"
    return make_host(
        files=files,
        dirs={"/usr/local/cuda-13.0/dist-info": CUDA13_DIST_INFO, "/usr/local/cuda-13.0/lib64": ["libcudart.so.13"],
              "/usr/local": ["cuda"]},
        links={"/usr/local/cuda": "/usr/local/cuda-13.0", "/usr/local/cuda-13.0/lib64": "lib"},
        commands=[{"argv": [nvcc, "--version"], "stdout": NVCC_13_0}],
        environ=dict({"PATH": PATH if wrapper else "/usr/local/cuda-13.0/bin:" + PATH}, **(environ or {})))


def torch_cuda_facts():
    """framework.torch of a real torch 2.4.0+cu121 wheel's files (tests/test_probe_frameworks.py)."""
    host = site_host({"torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA,
                      "torch/version.py": TORCH_240_CU121_VERSION_PY})
    facts = facts_of(host).with_prefix("framework.")
    assert any(f.key == "framework.torch" and f.value["build"] == "cuda" for f in facts)
    return facts


def findings(host, torch=True):
    facts = Facts(list(cuda_facts(host)) + (torch_cuda_facts() if torch else []))
    return {f.code: f for f in compat(CheckContext(facts, []))}, facts


def test_the_extension_home_is_decided_as_torch_decides():
    _, facts = findings(this_vm())
    assert facts.value("cuda.extension_home") == {
        "path": "/usr/local", "how": "nvcc on PATH (/usr/local/bin/nvcc)", "headers": False, "nvcc": True,
        "version": None}
    _, facts = findings(this_vm({"CUDA_PATH": "/usr/local/cuda-13.0"}))
    home = facts.value("cuda.extension_home")
    assert home["path"] == "/usr/local/cuda-13.0" and home["how"] == "CUDA_PATH" and home["headers"] is True


def test_a_wrapper_nvcc_makes_torch_extensions_unbuildable():
    found, _ = findings(this_vm())
    f = found["cuda.extension_home_not_a_toolkit"]
    assert f.severity == "warning" and f.components == ["cuda", "torch"]
    assert "CUDA_HOME=/usr/local (from nvcc on PATH (/usr/local/bin/nvcc))" in f.title
    assert "include/cuda_runtime.h" in f.title and "torch 2.4.0+cu121" in f.title
    # no CUDA 12 toolkit on the machine: install the one torch was built with, and point CUDA_HOME at it
    assert f.fix.install == "envdoctor install cuda --version 12.1.0 --prefix ~/cuda-12.1"
    assert f.fix.commands == ["export CUDA_HOME=~/cuda-12.1"]


def test_a_usable_extension_home_or_no_cuda_torch_is_quiet():
    for host in (this_vm({"CUDA_HOME": "/usr/local/cuda-13.0"}), this_vm(wrapper=False)):
        found, _ = findings(host)
        assert "cuda.extension_home_not_a_toolkit" not in found
        # ...and the toolkit compared with torch's CUDA is the one extensions build with
        assert "13.0" in found["cuda.toolkit_differs_from_framework"].title
    found, _ = findings(this_vm(), torch=False)
    assert "cuda.extension_home_not_a_toolkit" not in found


# /usr/local/cuda-12.4 as NVIDIA's runfile lays it out when its /usr/local/cuda link is declined: version.json
# (its "cuda" entry, as CUDA 12.4.1's file has it), bin/nvcc, include/cuda_runtime.h; nvcc is not on PATH.
VERSIONED_124 = {"/usr/local/cuda-12.4/version.json": '{\n   "cuda" : {\n      "name" : "CUDA SDK",\n'
                                                      '      "version" : "12.4.1"\n   }\n}\n',
                 "/usr/local/cuda-12.4/bin/nvcc": "", "/usr/local/cuda-12.4/include/cuda_runtime.h": "",
                 "/usr/local/cuda-12.4/lib64/libcudart.so.12": ""}


def versioned_only(environ=None):
    return make_host(files=VERSIONED_124, environ=dict({"PATH": PATH}, **(environ or {})))


def test_a_toolkit_only_in_a_versioned_directory_gives_torch_extensions_no_cuda_home():
    found, facts = findings(versioned_only())
    assert facts.value("cuda.extension_home") is None
    f = found["cuda.extension_home_not_a_toolkit"]
    assert f.severity == "warning" and "no CUDA_HOME" in f.title and "/usr/local/cuda-12.4" in f.title
    assert f.fix.commands == ["export CUDA_HOME=/usr/local/cuda-12.4"]


def test_cuda_home_set_to_the_versioned_toolkit_or_no_toolkit_at_all_is_quiet():
    found, _ = findings(versioned_only({"CUDA_HOME": "/usr/local/cuda-12.4"}))
    assert "cuda.extension_home_not_a_toolkit" not in found
    found, _ = findings(make_host(files={"/etc/os-release": "ID=ubuntu\n"}, environ={"PATH": PATH}))
    assert "cuda.extension_home_not_a_toolkit" not in found

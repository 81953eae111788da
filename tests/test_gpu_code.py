"""The GPU architectures a framework really carries, read from its CUDA fat binary, and the check on them.

Real inputs:
- tests/data/fatbin/*.so: shared objects built on this machine with nvcc 13.0 from kernel.cu (commands in
  tests/data/fatbin/README.md), for known targets: SASS sm_75 + arch-specific sm_90a + PTX compute_80; and
  sm_86 + family sm_100f + arch-specific sm_120a + arch-specific PTX compute_90a, compressed.
- tests/data/fatbin/h100-libraries.json: what `cuobjdump --list-elf --list-ptx` lists for the real libraries
  of torch 2.11.0+cu130, the JAX CUDA 13 plugin and CuPy on an H100 machine (where a reader with the same
  layout agreed with it).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext
from envdoctor.checks.compat import compat
from envdoctor.facts import Fact, Facts, ok
from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host
from envdoctor.probes.gpucode import read_gpu_code

from .conftest import probe_facts
from .test_probe_frameworks import SITE, TORCH_240_CU121_VERSION_PY, TORCH_240_METADATA, site_host

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "fatbin")
LIB_A = os.path.join(DATA, "libsm75-sm90a-ptx80.so")
LIB_B = os.path.join(DATA, "libsm86-sm100f-sm120a-ptx90a.so")
with open(os.path.join(DATA, "h100-libraries.json"), encoding="utf-8") as _fh:
    H100 = json.load(_fh)["libraries"]
TORCH_211 = H100["/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"]
JAX_PLUGIN = H100["/opt/torch/.venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so"]


# -- the reader --------------------------------------------------------------------------------


def test_reader_finds_exactly_what_nvcc_built() -> None:
    host = LiveHost()
    a, b = host.fatbin(LIB_A), host.fatbin(LIB_B)
    assert (a.sass, a.ptx, a.section, a.complete) == (("sm_75", "sm_90a"), ("compute_80",), True, True)
    # family code is listed under its plain name (as cuobjdump does); arch-specific keeps its "a"
    assert (b.sass, b.ptx, b.complete) == (("sm_86", "sm_100", "sm_120a"), ("compute_90a",), True)


def test_library_without_gpu_code_and_missing_or_foreign_files(tmp_path) -> None:
    host = LiveHost()
    # a real shared object without device code: envdoctor's own interpreter's libc (or its binary)
    plain = next((p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6", "/lib/libc.so.6")
                  if os.path.exists(p)), os.path.realpath(sys.executable))
    r = host.fatbin(plain)
    assert r.ok and not r.section and r.sass == () and r.ptx == ()
    assert host.fatbin(str(tmp_path / "absent.so")).error == "ENOENT"
    text = tmp_path / "libfake.so"
    text.write_text("INPUT(-lfoo)\n")  # a linker script named like a library
    assert host.fatbin(str(text)).error == "not_elf"


def test_truncated_and_garbled_binaries_never_raise(tmp_path) -> None:
    data = open(LIB_A, "rb").read()
    start = data.index(b"\x50\xed\x55\xba")
    for cut in list(range(0, 200, 7)) + [start + 8, start + 40, start + 100, len(data) // 2, len(data) - 1]:
        p = tmp_path / ("cut%d.so" % cut)
        p.write_bytes(data[:cut])
        r = LiveHost().fatbin(str(p))
        assert r.ok or r.error in ("not_elf", "bad_elf"), r
    # a container whose size field points past the section: what was read is kept, marked incomplete
    bad = bytearray(data)
    bad[start + 8:start + 16] = (1 << 40).to_bytes(8, "little")
    p = tmp_path / "garbled.so"
    p.write_bytes(bytes(bad))
    r = LiveHost().fatbin(str(p))
    assert r.ok and r.complete is False


def test_snapshot_replays_what_the_live_host_read(tmp_path) -> None:
    lib = tmp_path / "libtorch_cuda.so"
    shutil.copy(LIB_B, lib)
    live = LiveHost()
    read = live.fatbin(str(lib))
    doc = json.loads(json.dumps(document_from_host(live, Scrubber(), "test")))
    assert doc["fatbin"][str(lib)]["sass"] == ["sm_86", "sm_100", "sm_120a"]
    replayed = SnapshotHost(doc).fatbin(str(lib))
    assert replayed == read


# -- the probe ---------------------------------------------------------------------------------


def torch_site(fatbin: Optional[Dict[str, Any]], version_py: str = TORCH_240_CU121_VERSION_PY,
               metadata: str = TORCH_240_METADATA):
    host = site_host({"torch-2.4.0+cu121.dist-info/METADATA": metadata, "torch/version.py": version_py,
                      "torch/lib/libtorch_cuda.so": ""})
    if fatbin is not None:
        host.doc["fatbin"] = {SITE + "/torch/lib/libtorch_cuda.so": fatbin}
    return type(host)(host.doc)


def test_probe_reads_the_framework_kernel_library() -> None:
    facts = probe_facts(torch_site({"sass": TORCH_211["sass"], "ptx": [], "section": True, "complete": True}))
    code = facts.get("framework.torch.gpu_code")
    assert code is not None and code.known and code.value["sass"] == TORCH_211["sass"]
    assert code.source == "fatbin:" + SITE + "/torch/lib/libtorch_cuda.so"
    # a snapshot that did not record it: unknown, saying why (never "no GPU code")
    facts = probe_facts(torch_site(None))
    code = facts.get("framework.torch.gpu_code")
    assert code is not None and not code.known and "not_recorded" in code.reason


def test_probe_reads_jax_plugin_and_cupy_libraries_from_a_real_layout(tmp_path) -> None:
    site = tmp_path / "site"
    (site / "jax_plugins" / "xla_cuda13").mkdir(parents=True)
    (site / "jax_cuda13_plugin").mkdir()
    (site / "cupy" / "cuda").mkdir(parents=True)
    shutil.copy(LIB_A, site / "jax_plugins" / "xla_cuda13" / "xla_cuda_plugin.so")
    shutil.copy(LIB_B, site / "jax_cuda13_plugin" / "_prng.so")
    shutil.copy(LIB_B, site / "cupy" / "cuda" / "thrust.cpython-312-x86_64-linux-gnu.so")
    host = LiveHost()
    jax, problems = read_gpu_code(host, str(site), "jax")
    assert not problems and {r.path.rsplit("/", 1)[1] for r in jax} == {"xla_cuda_plugin.so", "_prng.so"}
    cupy, _ = read_gpu_code(host, str(site), "cupy")
    assert [r.sass for r in cupy] == [("sm_86", "sm_100", "sm_120a")]


# -- the check ---------------------------------------------------------------------------------


def gpu(cc: str, name: str) -> List[Fact]:
    return [ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", name, "nvml:device.0.name"),
            ok("gpu.0.compute_capability", cc, "nvml:device.0.compute_capability")]


def framework(name: str, version: str, cuda: Optional[str]) -> Fact:
    return ok("framework." + name, {"version": version, "public": version.split("+")[0], "package": name,
                                    "path": SITE, "cuda": cuda, "build": "cuda"},
              "file:%s/%s/version.py" % (SITE, name))


def gpu_code(name: str, sass: List[str], ptx: List[str], lib: str = "libtorch_cuda.so", complete: bool = True) -> Fact:
    path = "%s/%s/lib/%s" % (SITE, name, lib)
    return ok("framework.%s.gpu_code" % name, {"sass": sass, "ptx": ptx, "complete": complete,
                                               "libraries": [{"path": path, "sass": sass, "ptx": ptx,
                                                              "complete": complete}]}, "fatbin:" + path)


def arch_findings(*facts: Any) -> List[Any]:
    flat: List[Fact] = []
    for f in facts:
        flat.extend(f if isinstance(f, list) else [f])
    return [f for f in compat(CheckContext(Facts(flat), [])) if f.code.startswith("gpu.arch")]


def test_real_torch_211_binary_fires_on_volta_and_is_quiet_on_hopper_and_blackwell() -> None:
    # A build the matrix may not list: the binary decides (torch 2.11 cu130 dropped sm_70).
    torch = framework("torch", "2.11.0+cu130", "13.0")
    code = gpu_code("torch", TORCH_211["sass"], TORCH_211["ptx"])
    found = arch_findings(gpu("7.0", "Tesla V100-SXM2-32GB"), torch, code)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "sm_70" in found[0].title and "sm_75" in found[0].title and "libtorch_cuda.so" in found[0].title
    assert arch_findings(gpu("9.0", "NVIDIA H100 80GB HBM3"), torch, code) == []
    assert arch_findings(gpu("12.0", "NVIDIA GeForce RTX 5090"), torch, code) == []
    assert arch_findings(gpu("8.9", "NVIDIA L4"), torch, code) == []


def test_the_binary_overrules_the_matrix() -> None:
    # torch 2.4.0+cu121 wheels carry no sm_120 per the matrix; a source build of the same version that does
    # (its binary says so) must not be called broken, and one whose binary lacks sm_80 must be.
    torch = framework("torch", "2.4.0+cu121", "12.1")
    assert arch_findings(gpu("12.0", "NVIDIA GeForce RTX 5090"), torch,
                         gpu_code("torch", ["sm_80", "sm_90", "sm_120"], [])) == []
    found = arch_findings(gpu("8.0", "NVIDIA A100-SXM4-80GB"), torch, gpu_code("torch", ["sm_90"], []))
    assert [f.code for f in found] == ["gpu.arch_not_in_build"]


@pytest.mark.parametrize("cc,expected", [
    ("9.0", []),                                  # sm_90a is SASS for exactly 9.0
    ("8.6", ["gpu.arch_ptx_jit_only"]),           # compute_80 PTX JITs up to 8.6
    ("10.0", ["gpu.arch_ptx_jit_only"]),          # ... and across majors (PTX runs at or above its own)
    ("7.0", ["gpu.arch_not_in_build"]),           # sm_75 does not run on 7.0; PTX 8.0 is above it
])
def test_arch_specific_sass_and_plain_ptx(cc: str, expected: List[str]) -> None:
    found = arch_findings(gpu(cc, "GPU"), framework("torch", "2.99.0+cu130", "13.0"),
                          gpu_code("torch", ["sm_75", "sm_90a"], ["compute_80"]))
    assert [f.code for f in found] == expected


@pytest.mark.parametrize("cc,expected", [
    ("12.0", []),                                 # sm_120a: exactly 12.0
    ("12.1", ["gpu.arch_not_in_build"]),          # sm_120a does not run on 12.1, compute_90a only JITs to 9.0
    ("9.0", ["gpu.arch_ptx_jit_only"]),           # arch-specific PTX compute_90a JITs to 9.0 itself
    ("10.3", []),                                 # sm_100 (family) runs on 10.3
])
def test_arch_specific_ptx_runs_on_its_own_capability_only(cc: str, expected: List[str]) -> None:
    found = arch_findings(gpu(cc, "GPU"), framework("torch", "2.99.0+cu130", "13.0"),
                          gpu_code("torch", ["sm_86", "sm_100", "sm_120a"], ["compute_90a"]))
    assert [f.code for f in found] == expected


def test_runtime_compiled_frameworks_get_a_warning_not_an_error() -> None:
    jax = framework("jax", "0.8.0", "13.0")
    code = gpu_code("jax", JAX_PLUGIN["sass"], [], lib="xla_cuda_plugin.so")
    found = arch_findings(gpu("6.1", "NVIDIA GeForce GTX 1080"), jax, code)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "warning")]
    assert "XLA" in found[0].detail
    assert arch_findings(gpu("9.0", "NVIDIA H100 80GB HBM3"), jax, code) == []


def test_unreadable_binary_falls_back_to_what_the_cuda_version_can_target() -> None:
    unread = Fact("framework.torch.gpu_code", None, "fatbin:" + SITE + "/torch/lib/libtorch_cuda.so", "unknown",
                  "the snapshot holds no record of its GPU code")
    # a torch the matrix does not list, built with CUDA 13.0: nothing below sm_75 exists in it
    found = arch_findings(gpu("6.1", "NVIDIA GeForce GTX 1080"), framework("torch", "2.99.0+cu130", "13.0"), unread)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "13.0" in found[0].title and "7.5" in found[0].title
    # built with CUDA 11.7 (nvcc emits up to 8.7): a Hopper runs it only through PTX, and PyTorch's cu117
    # wheels (the matrix lists them) embed none: certainly no kernel
    found = arch_findings(gpu("9.0", "NVIDIA H100 80GB HBM3"), framework("torch", "1.99.0+cu117", "11.7"), unread)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "carry no PTX" in found[0].title
    # a TensorFlow built with CUDA 11.2 whose build_info was unreadable: only PTX could reach a Hopper, and
    # whether it embedded some is unknown
    unread_tf = Fact("framework.tensorflow.gpu_code", None, "fatbin:" + SITE, "unknown", "not recorded")
    found = arch_findings(gpu("9.0", "NVIDIA H100 80GB HBM3"), framework("tensorflow", "2.99.0", "11.2"), unread_tf)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_support_unknown", "warning")]
    # within what CUDA 12.4 targets: nothing to say
    assert arch_findings(gpu("8.6", "NVIDIA GeForce RTX 3090"), framework("torch", "2.99.0+cu124", "12.4"),
                         unread) == []
    # nothing known at all: an "unknown" finding, not silence
    found = arch_findings(gpu("8.6", "NVIDIA GeForce RTX 3090"), framework("torch", "2.99.0", None), unread)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_support_unknown", "info")]


def _tf_1x(version: str) -> Fact:
    """A TensorFlow 1.x GPU wheel as its build_info.py of 1.1-1.4 describes it: is_cuda_build only."""
    return ok("framework.tensorflow", {"version": version, "public": version, "package": "tensorflow-gpu",
                                       "path": SITE, "cuda": None, "cudnn": None, "compute_capabilities": None,
                                       "build": "cuda", "packages": {"tensorflow-gpu": version}},
              "file:%s/tensorflow/python/platform/build_info.py" % SITE)


def test_tested_build_configuration_rows() -> None:
    from envdoctor import matrix
    from envdoctor.matrix import builds

    assert builds.tensorflow_tested_cuda("1.4.0")[0] == "8.0" and builds.tensorflow_tested_cuda("1.1.0")[0] == "8.0"
    assert builds.tensorflow_tested_cuda("1.4.0")[1]["ptx_each_arch"] is True
    assert builds.tensorflow_tested_cuda("1.5.0") is None and builds.tensorflow_tested_cuda("1.0.1") is None
    rows = matrix.load("framework_builds")
    assert builds.validate(rows) == []
    bad = [{"framework": "tensorflow", "releases": ">=1.1,<1.5", "tested_cuda": "8", "ptx_each_arch": "yes"}]
    assert [p.split(": ", 1)[1] for p in builds.validate(bad)] == [
        "tested_cuda must be a CUDA release (major.minor)", "ptx_each_arch must be true or false"]


def test_tensorflow_1x_without_cuda_in_build_info_is_judged_by_its_release_build_configuration() -> None:
    # TensorFlow 1.4's build_info names no CUDA: tensorflow.org's tested build configurations do (CUDA 8), and
    # its nvcc builds embed PTX of every architecture; CUDA 8.0 compiles for 6.2 at most, so a Volta GPU runs it
    # only through PTX JIT (the minutes at the first batch)
    unread = Fact("framework.tensorflow.gpu_code", None, "fatbin:" + SITE, "unknown", "not recorded")
    found = arch_findings(gpu("7.0", "Tesla V100-SXM2-16GB"), _tf_1x("1.4.0"), unread)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_ptx_jit_only", "warning")]
    assert "compute capability 7.0" in found[0].title and "release's build configuration" in found[0].title
    assert "CUDA 8.0" in found[0].title and "not read" in found[0].detail
    # a Pascal GPU is within CUDA 8.0's range: nothing to say
    assert arch_findings(gpu("6.1", "NVIDIA GeForce GTX 1080 Ti"), _tf_1x("1.4.0"), unread) == []
    # a release no build-configuration row covers keeps the unknown it was
    found = arch_findings(gpu("7.0", "Tesla V100-SXM2-16GB"), _tf_1x("1.7.0"), unread)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_support_unknown", "info")]


# -- PaddlePaddle and Kepler: builds no matrix row describes -----------------------------------

#: What PaddlePaddle 2.5's CUDA 11.x wheels report at start-up on a Pascal GPU (gpu_resources.cc): "The GPU
#: architecture in your current machine is Pascal, which is not compatible with Paddle installation with arch:
#: 70 75 80 86" (https://github.com/PaddlePaddle/Paddle/issues/54713, #55715, #56683).
PADDLE_25_CU11_SASS = ["sm_70", "sm_75", "sm_80", "sm_86"]


@pytest.mark.parametrize("layout", ["paddle/fluid/libpaddle.so", "paddle/base/libpaddle.so",
                                    "paddle/fluid/core_avx.so"])
def test_probe_reads_paddle_kernel_library_in_each_release_layout(layout: str) -> None:
    from .test_probe_frameworks import PADDLE_VERSION_PY

    host = site_host({"paddlepaddle_gpu-2.5.1.post116.dist-info/METADATA": "Name: paddlepaddle-gpu\n",
                      "paddle/version/__init__.py": PADDLE_VERSION_PY, layout: ""})
    host.doc["fatbin"] = {SITE + "/" + layout: {"sass": PADDLE_25_CU11_SASS, "ptx": [], "section": True,
                                                "complete": True}}
    facts = probe_facts(type(host)(host.doc))
    code = facts.get("framework.paddle.gpu_code")
    assert code is not None and code.known and code.value["sass"] == PADDLE_25_CU11_SASS
    assert code.source == "fatbin:%s/%s" % (SITE, layout)


def test_paddle_binary_without_the_gpu_architecture_is_an_error_with_paddle_own_fix() -> None:
    paddle = framework("paddle", "2.5.1.post116", "11.6")
    code = gpu_code("paddle", PADDLE_25_CU11_SASS, [], lib="libpaddle.so")
    found = arch_findings(gpu("6.1", "NVIDIA GeForce GTX 1080"), paddle, code)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "sm_61" in found[0].title and "6.1" in found[0].title and "libpaddle.so" in found[0].title
    # the GPU is older than everything the wheel carries: an older CUDA's wheel, never "upgrade"
    assert "older CUDA" in found[0].fix.text and "CUDA_ARCH_BIN=61" in found[0].fix.text
    # CUDA 11.6 itself targets 6.1 (the fallback rule alone would say nothing): the binary decides
    assert arch_findings(gpu("6.1", "NVIDIA GeForce GTX 1080"), paddle,
                         Fact("framework.paddle.gpu_code", None, "fatbin:" + SITE, "unknown", "not recorded")) == []
    assert arch_findings(gpu("8.6", "NVIDIA GeForce RTX 3090"), paddle, code) == []
    assert arch_findings(gpu("7.5", "Tesla T4"), paddle, code) == []


def kepler_box() -> List[Fact]:
    """One Tesla K80 (two GPUs, 3.7) and two Tesla K40c (3.5), as in pytorch/pytorch#31319."""
    out = [ok("gpu.count", 4, "nvml:device_count")]
    for i, (name, cc) in enumerate([("Tesla K80", "3.7"), ("Tesla K80", "3.7"), ("Tesla K40c", "3.5"),
                                    ("Tesla K40c", "3.5")]):
        out += [ok("gpu.%d.name" % i, name, "nvml:device.%d.name" % i),
                ok("gpu.%d.compute_capability" % i, cc, "nvml:device.%d.compute_capability" % i)]
    return out


def test_kepler_binary_names_the_gpu_it_lacks_and_spares_the_one_it_has() -> None:
    # From 1.3 the binaries carry sm_37 and newer, not sm_35 (pytorch/pytorch#24205, #31319); a cubin for 3.7
    # does not run on 3.5, and PTX for 3.7 only JITs at 3.7 or above.
    torch = framework("torch", "1.99.1", "10.1")  # a release no matrix row lists: the binary alone decides
    code = gpu_code("torch", ["sm_37", "sm_50", "sm_60", "sm_61", "sm_70", "sm_75"], ["compute_37"])
    found = arch_findings(kepler_box(), torch, code)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "Tesla K40c" in found[0].title and "sm_35" in found[0].title and "K80" not in found[0].title
    # a binary that still carries sm_35 runs on both
    assert arch_findings(kepler_box(), torch, gpu_code("torch", ["sm_35", "sm_50", "sm_70"], [])) == []


def test_kepler_without_a_binary_falls_back_to_what_the_cuda_version_targets() -> None:
    unread = Fact("framework.torch.gpu_code", None, "fatbin:" + SITE + "/torch/lib/libtorch_cuda.so", "unknown",
                  "the snapshot holds no record of its GPU code")
    # CUDA 12 has nothing below 5.0: both Keplers are out, each named
    found = arch_findings(kepler_box(), framework("torch", "2.99.0+cu121", "12.1"), unread)
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")] * 2
    assert {"Tesla K40c", "Tesla K80"} == {f.title.split(" (")[0] for f in found}
    assert any("sm_35" in f.title for f in found)
    # CUDA 10.1 still targets 3.0 and up: the CUDA version alone cannot condemn a Kepler
    assert [f for f in arch_findings(kepler_box(), framework("torch", "1.99.1", "10.1"), unread)
            if f.code == "gpu.arch_not_in_build"] == []


# -- torch 0.x: kernels in ATen (0.4.0) or THC/THCUNN (0.1-0.3), beside torch or where torch/_C's RPATH points -----


def _torch0_host(lib_files: Dict[str, Dict[str, Any]], c_rpath: List[str], c_needed: List[str]):
    env = "/home/ana/anaconda3"
    site = env + "/lib/python3.5/site-packages"
    files = {site + "/torch-0.1.6_2-py3.5.egg-info/PKG-INFO": "Name: torch\nVersion: 0.1.6_2\n",
             site + "/torch/__init__.py": "", site + "/torch/_C.cpython-35m-x86_64-linux-gnu.so": ""}
    files.update({p: "" for p in lib_files})
    from .conftest import make_host
    host = make_host(files=files, python={"executable": env + "/bin/python", "version": "3.5.2",
                                          "implementation": "cpython", "prefix": env, "base_prefix": env,
                                          "sys_path": [site]})
    host.doc["elf"] = {site + "/torch/_C.cpython-35m-x86_64-linux-gnu.so": {
        "soname": "", "needed": c_needed, "rpath": c_rpath, "runpath": []}}
    host.doc["fatbin"] = lib_files
    return type(host)(host.doc), site, env


_THC = {"sass": ["sm_30", "sm_35", "sm_50", "sm_52"], "ptx": ["compute_52"], "section": True, "complete": True}


def test_torch0_kernel_libraries_are_followed_through_the_extensions_rpath() -> None:
    env = "/home/ana/anaconda3"
    host, site, _ = _torch0_host({env + "/lib/libTHC.so.1": _THC, env + "/lib/libTHCUNN.so.1": _THC},
                                 ["$ORIGIN/../../.."], ["libTH.so.1", "libTHC.so.1", "libTHCUNN.so.1",
                                                        "libcudart.so.7.5"])
    found, problems = read_gpu_code(host, site, "torch")
    assert not problems and [r.path for r in found] == [env + "/lib/libTHC.so.1", env + "/lib/libTHCUNN.so.1"]
    # the same libraries where _C's RPATH does not point are not the ones it loads: not read
    host, site, _ = _torch0_host({env + "/lib/libTHC.so.1": _THC}, ["$ORIGIN/lib"], ["libTHC.so.1"])
    assert read_gpu_code(host, site, "torch") == ([], [])


def test_torch04_aten_beside_torch_with_sm61_only_fails_on_volta_and_runs_on_pascal() -> None:
    host = site_host({"torch-0.4.0a0+709fcfd.dist-info/METADATA": "Name: torch\n",
                      "torch/version.py": "__version__ = '0.4.0a0+709fcfd'\ndebug = False\ncuda = '9.0.176'\n",
                      "torch/lib/libATen.so.1": ""})
    host.doc["fatbin"] = {SITE + "/torch/lib/libATen.so.1": {"sass": ["sm_61"], "ptx": [], "section": True,
                                                              "complete": True}}
    host = type(host)(host.doc)
    code = probe_facts(host).get("framework.torch.gpu_code")
    assert code is not None and code.known and code.value["sass"] == ["sm_61"] and code.value["ptx"] == []
    torch04 = framework("torch", "0.4.0a0+709fcfd", "9.0.176")
    aten = gpu_code("torch", ["sm_61"], [], lib="libATen.so.1")
    f = [x for x in arch_findings(gpu("7.0", "Tesla V100-PCIE-16GB"), torch04, aten)
         if x.code == "gpu.arch_not_in_build"]
    assert len(f) == 1 and f[0].severity == "error" and "7.0" in f[0].title and "libATen.so.1" in f[0].title
    assert [x for x in arch_findings(gpu("6.1", "Tesla P40"), torch04, aten) if x.severity != "info"] == []


def test_torch0_thc_with_ptx_below_pascal_is_ptx_jit_only_on_pascal() -> None:
    torch016 = framework("torch", "0.1.6_2", "7.5")
    thc = gpu_code("torch", _THC["sass"], _THC["ptx"], lib="libTHC.so.1")
    f = [x for x in arch_findings(gpu("6.1", "TITAN X (Pascal)"), torch016, thc) if x.code == "gpu.arch_ptx_jit_only"]
    assert len(f) == 1 and f[0].severity in ("warning", "error") and "6.1" in f[0].title
    # a Maxwell GPU has SASS of its own there
    assert [x for x in arch_findings(gpu("5.2", "GeForce GTX 980 Ti"), torch016, thc)
            if x.code.startswith("gpu.arch")] == []

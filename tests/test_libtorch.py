"""LibTorch, PyTorch's C++ distribution (``envdoctor/probes/libtorch.py``, check ``libtorch``).

Fixtures: the machines of tests/corpus replayed through their snapshots (LibTorch unpacked in /usr/local/libtorch,
~/libtorch and tch's torch-sys build folders, as the threads showed them), and facts built by hand for the quiet
sides (the same installs, reachable; no GPU; a toolkit of LibTorch's CUDA).
"""

from __future__ import annotations

import copy
import os
from typing import Any, Dict, List

from envdoctor.checks import CheckContext
from envdoctor.checks.libtorch import libtorch as libtorch_check
from envdoctor.facts import Fact, Facts, ok
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes.libtorch import find_installs, find_programs
from envdoctor.versions import cuda_of_tag as cuda_of
from tests.test_checks_compat import gpu

CORPUS = os.path.join(os.path.dirname(__file__), "corpus")
LDP_TOP = "b48-ubuntu2204-a10g-driver535-rust-tch-libtorch200-cu118-usr-local-ld-library-path-missing-lib-suffix"
HOME = ("b48-ubuntu2204-a10g-driver535-rust-tch014-libtorch210-cu118-in-home-ld-library-path-unset-libtorch-cuda-"
        "not-found")
CPU = "b48-vm-tesla-t4-driver44064-rust-tch017-default-build-downloaded-cpu-libtorch150-cuda-not-available"
CPP = "b48-ubuntu2204-a10g-driver535-cpp-libtorch230-cu118-built-with-cuda117-toolkit-undefined-cudalaunchkernelexc"
BUILTINS = "b48-arch-driver49546-rust-tch061-torch-sys-download-libtorch1100-cu111-nvrtc-builtins-hashed-name-not-found"


def _host(case: str) -> SnapshotHost:
    return SnapshotHost(load_snapshot(os.path.join(CORPUS, case, "snapshot.json")))


def _facts(installs: List[Dict[str, Any]], programs: List[Dict[str, Any]], extra: List[Fact]) -> List[Any]:
    ctx = CheckContext(Facts([ok("libtorch.installs", installs, "derived"),
                              ok("libtorch.programs", programs, "derived")] + extra), [])
    return list(libtorch_check(ctx))


def _nvcc(version: str) -> Fact:
    return ok("cuda.nvcc", {"path": "/usr/local/cuda-%s/bin/nvcc" % version, "version": version}, "command:nvcc")


def test_cuda_tag() -> None:
    assert (cuda_of("cu118"), cuda_of("cu92"), cuda_of("cpu"), cuda_of(None)) == ("11.8", "9.2", None, None)


def test_install_read_where_ld_library_path_names_its_top_folder() -> None:
    host = _host(LDP_TOP)
    installs = find_installs(host)
    assert [(i["root"], i["version"], i["cuda"], i["cuda_build"], i["how"], i["top_on_ld_library_path"])
            for i in installs] == [("/usr/local/libtorch", "2.0.0+cu118", "11.8", True, "LIBTORCH", True)]
    programs = find_programs(host)
    assert [p["path"] for p in programs] == ["/home/user/myproject/target/release/myproject"]
    assert {link["soname"]: link["path"] for link in programs[0]["links"]}["libtorch_cuda.so"] is None


def test_program_that_cannot_load_libtorch_cuda_is_an_error_naming_the_lib_folder() -> None:
    host = _host(LDP_TOP)
    found = _facts(find_installs(host), find_programs(host), gpu("8.6", "NVIDIA A10G"))
    assert [(f.code, f.severity) for f in found] == [("linkage.missing", "error")]
    assert "libtorch_cuda.so" in found[0].title and "/usr/local/libtorch/lib" in found[0].title
    assert "LibTorch's top folder" in found[0].detail
    assert found[0].fix.commands == [
        "export LD_LIBRARY_PATH=/usr/local/libtorch/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"]


def test_libtorch_in_home_found_through_libtorch_variable() -> None:
    host = _host(HOME)
    found = _facts(find_installs(host), find_programs(host), gpu("8.6", "NVIDIA A10G"))
    assert [(f.code, f.severity) for f in found] == [("linkage.missing", "error")]
    assert "target/debug/tch_test needs libtorch_cuda.so" in found[0].title
    assert "LibTorch 2.1.0+cu118 at /home/user/libtorch" in found[0].title


def test_quiet_when_the_loader_finds_libtorch() -> None:
    host = _host(LDP_TOP)
    programs = copy.deepcopy(find_programs(host))
    for link in programs[0]["links"]:
        link["path"], link["via"] = "/usr/local/libtorch/lib/" + link["soname"], "LD_LIBRARY_PATH"
    assert _facts(find_installs(host), programs, gpu("8.6", "NVIDIA A10G")) == []


def test_cpu_only_libtorch_of_a_torch_sys_build_on_a_gpu_machine_warns() -> None:
    installs = find_installs(_host(CPU))
    assert [(i["how"], i["cuda_build"], i["version"]) for i in installs] == [("torch-sys build", False, None)]
    found = _facts(installs, [], gpu("7.5", "Tesla T4"))
    assert [(f.code, f.severity) for f in found] == [("framework.cpu_only_build", "warning")]
    assert "CPU-only build (no libtorch_cuda.so)" in found[0].title and "/out/libtorch/libtorch" in found[0].title
    assert "TORCH_CUDA_VERSION" in found[0].fix.text


def test_cpu_only_libtorch_quiet_without_a_gpu_or_when_nothing_uses_it() -> None:
    installs = find_installs(_host(CPU))
    assert _facts(installs, [], []) == []
    unused = [dict(installs[0], how="standard place")]
    assert _facts(unused, [], gpu("7.5", "Tesla T4")) == []


def test_older_toolkit_than_libtorch_cuda_warns() -> None:
    installs = find_installs(_host(CPP))
    assert [(i["root"], i["cuda"]) for i in installs] == [("/home/user/libtorch", "11.8")]
    found = _facts(installs, [], gpu("8.6", "NVIDIA A10G") + [_nvcc("11.7")])
    assert [(f.code, f.severity) for f in found] == [("cuda.toolkit_differs_from_framework", "warning")]
    assert "11.7" in found[0].title and "CUDA 11.8" in found[0].title and "undefined reference" in found[0].detail


def test_toolkit_of_libtorch_cuda_quiet_and_newer_minor_info() -> None:
    installs = find_installs(_host(CPP))
    assert _facts(installs, [], gpu("8.6", "NVIDIA A10G") + [_nvcc("11.8")]) == []
    cu117 = [dict(installs[0], version="2.0.0+cu117", cuda="11.7")]
    newer = _facts(cu117, [], gpu("8.6", "NVIDIA A10G") + [_nvcc("11.8")])
    assert [(f.code, f.severity) for f in newer] == [("cuda.toolkit_differs_from_framework", "info")]


def test_hashed_nvrtc_builtins_without_the_plain_name_is_an_error() -> None:
    installs = find_installs(_host(BUILTINS))
    assert [(i["version"], i["cuda"], [b["file"] for b in i["nvrtc_builtins"]]) for i in installs] == [
        ("1.10.0+cu111", "11.1", ["libnvrtc-builtins-07fb3db5.so.11.1"])]
    found = _facts(installs, [], gpu("8.6", "NVIDIA GeForce RTX 3080"))
    assert [(f.code, f.severity) for f in found] == [("linkage.missing", "error")]
    assert "libnvrtc-builtins.so.11.1" in found[0].title and "libnvrtc-builtins-07fb3db5.so.11.1" in found[0].title
    assert found[0].fix.commands[0].startswith("ln -s ")


def test_hashed_nvrtc_builtins_quiet_when_the_plain_name_is_found() -> None:
    installs = copy.deepcopy(find_installs(_host(BUILTINS)))
    installs[0]["nvrtc_builtins"][0]["path"] = "/opt/cuda/lib64/libnvrtc-builtins.so.11.1"
    assert _facts(installs, [], gpu("8.6", "NVIDIA GeForce RTX 3080")) == []

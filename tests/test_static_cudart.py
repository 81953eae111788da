"""GPU code that carries its own (statically linked) CUDA runtime: the PTX ISA version read from its fat binary,
the probe ``python.static_cuda`` and its verdicts in ``compat.driver-vs-cuda``.

Fixtures:
- tests/data/fatbin/catboost-0.10.3-gpu-_catboost.so.headers.gz and ...-_catboost.so.headers.gz: every byte the
  fat-binary and ELF readers read (tests/data/fatbin/headers.py) from ``catboost/gpu/_catboost.so`` (130,432,480
  bytes: sm_35/52/61/70 cubins, PTX ISA 6.1, no libcudart in NEEDED) and ``catboost/_catboost.so`` (the CPU module,
  24,688,400 bytes) of PyPI's catboost-0.10.3-cp36-none-manylinux1_x86_64.whl (sha256
  97d447a8c4e67e84630c9175590c99a344c61c61ebbb6e728d22ee91771d2265); rebuilt here as sparse files of the same size.
- CATBOOST_RECORD / CATBOOST_WHEEL: the RECORD pip 25 writes when it installs that wheel (whose own RECORD is empty:
  no hashes, no sizes) and the wheel's WHEEL file, as they are.
- tests/data/fatbin/catboost-1.1.1-_catboost.so.headers.gz: the same from ``catboost/_catboost.so`` (201,182,888
  bytes, the one module, GPU code included: sm_35/52/61/70/80 cubins, PTX ISA 7.0) of PyPI's
  catboost-1.1.1-cp38-none-manylinux1_x86_64.whl (sha256
  3fd12d9f1f89440292c63b242ccabdab012d313250e2b1e8a779d6618c734b32).
- tests/data/fatbin/libsm75-sm90a-ptx80.so: built with nvcc 13.0 (tests/data/fatbin/README.md): PTX ISA 9.0.
- The driver and GPU facts of the verdict tests are those tests/test_checks_compat.py builds.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.driver_vs_cuda import driver_vs_cuda
from envdoctor.facts import Facts, ok
from envdoctor.host.base import Distribution
from envdoctor.host.fatbin import read_archs
from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host
from envdoctor.matrix import hardware as hw
from envdoctor.probes import record, staticcuda
from envdoctor.probes.record import shared_objects
from envdoctor.probes.staticcuda import find_static_cuda, record_libraries
from tests.test_checks_compat import driver, gpu

DATA = os.path.join(os.path.dirname(__file__), "data", "fatbin")
sys.path.insert(0, DATA)
from headers import rebuild  # noqa: E402

LIB = os.path.join(DATA, "libsm75-sm90a-ptx80.so")
CATBOOST_RECORD = ("catboost-0.10.3.dist-info/INSTALLER,sha256=zuuue4knoyJ-UwPPXg8fezS7VCrXJQrAP7zeNuwvFQg,4\n"
                   "catboost-0.10.3.dist-info/METADATA,,\ncatboost-0.10.3.dist-info/RECORD,,\n"
                   "catboost-0.10.3.dist-info/WHEEL,,\ncatboost-0.10.3.dist-info/top_level.txt,,\n"
                   "catboost/__init__.py,,\ncatboost/_catboost.so,,\ncatboost/core.py,,\ncatboost/gpu/__init__.py,,\n"
                   "catboost/gpu/_catboost.so,,\n")
CATBOOST_WHEEL = "Wheel-Version: 1.0\n"


def _site(tmp_path: Any, record: str = CATBOOST_RECORD, wheel: Optional[str] = CATBOOST_WHEEL,
          name: str = "catboost", version: str = "0.10.3") -> LiveHost:
    """A site-packages folder holding catboost 0.10.3 as pip installs it (the libraries rebuilt from their recorded
    bytes), and a live host whose interpreter has only that distribution."""
    site = tmp_path / "site-packages"
    meta = site / ("%s-%s.dist-info" % (name, version))
    (site / "catboost" / "gpu").mkdir(parents=True)
    meta.mkdir()
    (meta / "RECORD").write_text(record)
    if wheel is not None:
        (meta / "WHEEL").write_text(wheel)
    rebuild(os.path.join(DATA, "catboost-0.10.3-gpu-_catboost.so.headers.gz"), str(site / "catboost/gpu/_catboost.so"))
    rebuild(os.path.join(DATA, "catboost-0.10.3-_catboost.so.headers.gz"), str(site / "catboost/_catboost.so"))
    host = LiveHost()
    # the one stand-in: the interpreter's distributions, as Host.distributions finds them on its sys.path
    host.__dict__["_distributions"] = [Distribution(name, version, str(meta), str(site))]
    return host


def test_ptx_isa_read_from_real_nvcc_output() -> None:
    with open(LIB, "rb") as fh:
        assert read_archs(fh)["ptx_isa"] == "9.0"  # nvcc 13.0 writes .version 9.0


def test_real_catboost_headers(tmp_path: Any) -> None:
    path = str(tmp_path / "_catboost.so")
    rebuild(os.path.join(DATA, "catboost-0.10.3-gpu-_catboost.so.headers.gz"), path)
    assert os.path.getsize(path) == 130432480
    r = LiveHost().fatbin(path)
    assert (r.ptx_isa, r.sass, r.complete) == ("6.1", ("sm_35", "sm_52", "sm_61", "sm_70"), True)
    assert r.ptx == ("compute_30", "compute_50", "compute_60", "compute_61", "compute_70")
    assert not any(n.startswith("libcudart") for n in LiveHost().elf(path).needed)


def test_ptx_isa_maps_to_the_cuda_that_introduced_it() -> None:
    assert hw.cuda_for_ptx_isa("6.1") == "9.1"
    assert hw.cuda_for_ptx_isa("9.0") == "13.0"
    assert hw.cuda_for_ptx_isa("99.0") is None


def test_record_lines() -> None:
    # pip's RECORD of a wheel without one: no sizes, so both libraries are looked at
    assert record_libraries(shared_objects(CATBOOST_RECORD.encode())) == [("catboost/_catboost.so", None),
                                                            ("catboost/gpu/_catboost.so", None)]
    text = (b"pkg/small.cpython-311-x86_64-linux-gnu.so,sha256=x,40960\r\npkg/big.so.2,sha256=y,1048576\n"
            b"pkg/source.py,sha256=z,99999999\n/abs/lib.so,,\n../out.so,,\npkg/garbled.so\npkg/bad.so,sha256=q,12ab\n"
            b"pkg/\xff\xfe.so,,\npkg/last.so,,")
    assert record_libraries(shared_objects(text)) == [("pkg/big.so.2", 1048576), ("pkg/\ufffd\ufffd.so", None),
                                                      ("pkg/last.so", None)]
    assert record_libraries(shared_objects(b"")) == []
    assert record_libraries(shared_objects(b".so.so,,,,\n\n,.so")) == []


def test_probe_finds_the_static_library_only(tmp_path: Any) -> None:
    host = _site(tmp_path)
    value: Dict[str, Any] = find_static_cuda(host)
    site = str(tmp_path / "site-packages")
    assert [(x["path"], x["ptx_isa"], x["sass"]) for x in value["libraries"]] == [
        (site + "/catboost/gpu/_catboost.so", "6.1", ["sm_35", "sm_52", "sm_61", "sm_70"])]
    assert (value["complete"], value["unlisted"], value["unreadable"]) == (True, 0, [])
    # only the two libraries RECORD lists were opened (no folder was listed)
    assert sorted(host.fatbins) == [site + "/catboost/_catboost.so", site + "/catboost/gpu/_catboost.so"]
    assert not any(d.startswith(site) for d in host.dirs)


def test_replays_from_a_snapshot(tmp_path: Any) -> None:
    host = _site(tmp_path)
    live = find_static_cuda(host)
    doc = document_from_host(host, Scrubber(include_host=True), "test")
    replay = SnapshotHost(doc, "test")
    replay.__dict__["_distributions"] = host.__dict__["_distributions"]
    assert find_static_cuda(replay) == live


def test_pure_python_wheels_and_small_libraries_are_not_opened(tmp_path: Any) -> None:
    host = _site(tmp_path, wheel="Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
    assert find_static_cuda(host)["libraries"] == [] and not host.fatbins
    sized = CATBOOST_RECORD.replace("catboost/_catboost.so,,", "catboost/_catboost.so,sha256=x,%d"
                                    % (staticcuda.MIN_SIZE - 1))
    host = _site(tmp_path / "b", record=sized)
    assert len(find_static_cuda(host)["libraries"]) == 1 and len(host.fatbins) == 1


def test_frameworks_and_nvidia_wheels_are_left_to_their_checks(tmp_path: Any) -> None:
    for name in ("torch", "nvidia-cuda-runtime-cu12"):
        host = _site(tmp_path / name, name=name)
        assert find_static_cuda(host)["libraries"] == [] and not host.fatbins


def test_bounds(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(staticcuda, "MAX_LIBRARIES", 1)
    value = find_static_cuda(_site(tmp_path))
    assert value["complete"] is False and value["libraries"] == []  # the first RECORD line was the CPU module
    monkeypatch.setattr(staticcuda, "MAX_LIBRARIES", 64)
    monkeypatch.setattr(record, "RECORD_LIMIT", 200)
    assert find_static_cuda(_site(tmp_path / "b"))["complete"] is False


def test_no_record_is_searched_through_its_name_else_counted(tmp_path: Any) -> None:
    # no RECORD, no top_level.txt: the package its .dist-info names (catboost/) is searched; its CPU module there
    # (catboost/_catboost.so) carries no GPU code, and catboost/gpu/ is below the one level searched
    host = _site(tmp_path / "a")
    os.remove(host.distributions()[0].metadata_dir + "/RECORD")
    value = find_static_cuda(host)
    assert (value["libraries"], value["unlisted"]) == ([], 0)
    # a distribution whose name names no package beside it: counted, not searched
    host = _site(tmp_path / "b", name="other")
    os.remove(host.distributions()[0].metadata_dir + "/RECORD")
    value = find_static_cuda(host)
    assert (value["libraries"], value["unlisted"]) == ([], 1)


@pytest.mark.parametrize("cut", [64, 4096, 25241900, 120000000, 130429800])
def test_truncated_library_is_a_note_not_a_traceback(tmp_path: Any, cut: int) -> None:
    host = _site(tmp_path)
    path = str(tmp_path / "site-packages/catboost/gpu/_catboost.so")
    with open(path, "r+b") as fh:
        fh.truncate(cut)
    value = find_static_cuda(host)
    # the section headers live at the end: any cut loses them, and the file is reported as unreadable
    assert value["libraries"] == []
    assert [(u["path"], u["error"]) for u in value["unreadable"]] == [(path, "bad_elf")]


def _facts(value: Dict[str, Any], drv: List[Any], cc: str) -> List[Any]:
    facts = Facts(drv + gpu(cc, "GPU") + [ok("python.static_cuda", value, "derived")])
    return [f for f in driver_vs_cuda(CheckContext(facts, [])) if f.severity in ("warning", "error", "info")]


def _catboost(ptx_isa: str = "6.1", sass: Any = ("sm_35", "sm_52", "sm_61", "sm_70"),
              ptx: Any = ("compute_30", "compute_50", "compute_60", "compute_61", "compute_70")) -> Dict[str, Any]:
    return {"libraries": [{"package": "catboost", "version": "0.10.3", "path": "/site/catboost/gpu/_catboost.so",
                           "ptx_isa": ptx_isa, "sass": list(sass), "ptx": list(ptx), "complete": True}],
            "unreadable": [], "unlisted": 0, "complete": True}


def test_fires_on_driver_384_for_the_real_library(tmp_path: Any) -> None:
    found = _facts(find_static_cuda(_site(tmp_path)), driver("384.130", "9.0"), "6.1")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    assert "catboost 0.10.3" in found[0].title and "CUDA 9.1 (driver >= 390.46)" in found[0].title
    assert "CUDA driver version is insufficient for CUDA runtime version" in found[0].detail


def test_quiet_on_a_new_enough_driver() -> None:
    assert _facts(_catboost(), driver("390.46", "9.1"), "6.1") == []


def test_quiet_when_libcudart_is_needed(tmp_path: Any) -> None:
    # dynamically linked: the linkage checks judge the libcudart it loads; nothing is reported twice
    host = _site(tmp_path)
    path = str(tmp_path / "site-packages/catboost/gpu/_catboost.so")
    real = host.elf(path)
    host.elfs[path] = real._replace(needed=("libcudart.so.9.1",) + real.needed)
    assert find_static_cuda(host)["libraries"] == []


def test_minor_version_compat_with_a_cubin_runs() -> None:
    # PTX ISA 8.5 = CUDA 12.5 on a CUDA 12.2 driver (535): a cubin for the GPU (sm_80 runs on 8.6): info only
    found = _facts(_catboost("8.5", ["sm_70", "sm_80"], ["compute_80"]), driver("535.104.05", "12.2"), "8.6")
    assert [(f.code, f.severity) for f in found] == [("driver.minor_version_compat", "info")]


def test_minor_version_compat_without_a_cubin_is_an_error_of_ptx() -> None:
    # the same library on a GPU of capability 9.0: no cubin, only its PTX (ISA 8.5), which a 12.2 driver cannot JIT
    found = _facts(_catboost("8.5", ["sm_70", "sm_80"], ["compute_80"]), driver("535.104.05", "12.2"), "9.0")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    f = found[0]
    assert "no cubin for compute capability 9.0" in f.title and "driver >= 555.42.02" in f.title
    # the runtime does start (minor-version compatibility, floor 525.60.13): the failure is the PTX JIT's
    assert "cudaErrorUnsupportedPtxVersion" in f.detail and "525.60.13" in f.detail and "PTX (ISA 8.5)" in f.detail
    assert "insufficient" not in f.detail and "newest CUDA runtime" not in f.detail
    assert "555.42.02" in f.fix.text and "minor-version compatibility" not in f.fix.text
    assert "compatibility floor" not in f.source["rule"]


def test_no_ptx_for_the_gpu_is_not_blamed_on_the_driver() -> None:
    # arch-specific cubin and PTX (sm_90a, compute_90a) reach only a 9.0 GPU; on 8.9 nothing here runs whatever the
    # driver: not the driver's JIT, and not "ships SASS for the GPU" either: this check says nothing
    lib = _catboost("8.5", ["sm_90a"], ["compute_90a"])
    assert _facts(lib, driver("535.104.05", "12.2"), "8.9") == []
    found = _facts(lib, driver("535.104.05", "12.2"), "9.0")
    assert [f.code for f in found] == ["driver.minor_version_compat"]  # its sm_90a cubin runs on 9.0


def test_runs_only_with_a_check_that_reads_it() -> None:
    from envdoctor.scope import plan, plan_checks

    assert "staticcuda" in plan_checks(["compat.driver-vs-cuda"]).probes
    assert "staticcuda" not in plan_checks(["compat.toolkit-vs-framework"]).probes
    assert "staticcuda" not in plan(["os", "gpu", "cuda"]).probes
    # the libraries layer's nccl-cuda-build yields to driver.too_old_for_framework (one cause, one finding), so
    # planning it plans the check that may say that, and its probe
    assert "staticcuda" in plan(["libraries"]).probes


# -- catboost 1.1.1 (PyPI's manylinux1 wheel): its one module carries the GPU code, built with CUDA 11.0 -------------

CATBOOST_111_RECORD = ("catboost-1.1.1.dist-info/WHEEL,sha256=_8KhHaY45G73W68dS5SDqrkl2x4w72YtCOVosustXZc=,42\n"
                       "catboost-1.1.1.dist-info/RECORD,,\n"
                       "catboost/_catboost.so,sha256=UzdQnn0a-qlE-Va-jLzzU1-oh0lKv2Wjm8bQ1Wz-Hdk=,201182888\n")


def _site_111(tmp_path: Any) -> LiveHost:
    """catboost 1.1.1 as pip installs its wheel (the lines of its RECORD that name the module, as they are), the
    module rebuilt from its recorded bytes."""
    site = tmp_path / "site-packages"
    meta = site / "catboost-1.1.1.dist-info"
    (site / "catboost").mkdir(parents=True)
    meta.mkdir()
    (meta / "RECORD").write_text(CATBOOST_111_RECORD)
    (meta / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
    rebuild(os.path.join(DATA, "catboost-1.1.1-_catboost.so.headers.gz"), str(site / "catboost/_catboost.so"))
    host = LiveHost()
    host.__dict__["_distributions"] = [Distribution("catboost", "1.1.1", str(meta), str(site))]
    return host


def test_real_catboost_111_module_needs_cuda_11(tmp_path: Any) -> None:
    value = find_static_cuda(_site_111(tmp_path))
    (lib,) = value["libraries"]
    assert (lib["ptx_isa"], lib["sass"]) == ("7.0", ["sm_35", "sm_52", "sm_61", "sm_70", "sm_80"])
    assert lib["ptx"] == ["compute_50", "compute_60", "compute_61", "compute_70"]
    assert hw.cuda_for_ptx_isa("7.0") == "11.0"


def test_catboost_111_on_a_cuda_10_1_driver_is_an_error(tmp_path: Any) -> None:
    # a V100 (7.0, its sm_70 cubin) on driver 418.181.07 (CUDA 10.1): the runtime linked in refuses to start
    found = _facts(find_static_cuda(_site_111(tmp_path)), driver("418.181.07", "10.1"), "7.0")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    assert "catboost 1.1.1" in found[0].title and "CUDA 11.0" in found[0].title
    assert "418.181.07" in found[0].title + found[0].detail


def test_catboost_111_quiet_on_a_cuda_11_driver(tmp_path: Any) -> None:
    assert _facts(find_static_cuda(_site_111(tmp_path)), driver("450.80.02", "11.0"), "7.0") == []

"""GPU code that carries its own (statically linked) CUDA runtime: the PTX ISA version read from its fat binary,
the probe ``python.static_cuda`` and its verdicts in ``compat.driver-vs-cuda``.

Fixtures:
- tests/data/fatbin/libsm75-sm90a-ptx80.so: built with nvcc 13.0 (tests/data/fatbin/README.md); its PTX entry's
  header holds PTX ISA 9.0 (minor 0, major 9 at offset 24).
- The PTX ISA 6.1 library is that same real ELF with the PTX entry's ISA words set to 6.1: the value and place read
  from the real ``catboost/gpu/_catboost.so`` of PyPI's catboost-0.10.3-cp36-none-manylinux1_x86_64.whl (sha256
  97d447a8c4e67e84630c9175590c99a344c61c61ebbb6e728d22ee91771d2265, 130 MB, not committed): sm_35/52/61/70,
  PTX ISA 6.1, no libcudart in NEEDED.
- Machines: SnapshotHost documents holding the fat-binary and ELF records a live host writes for such files.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Dict, List

from envdoctor.checks import CheckContext
from envdoctor.checks.compat.driver_vs_cuda import driver_vs_cuda
from envdoctor.facts import Facts, ok
from envdoctor.host.fatbin import _sections, read_archs
from envdoctor.host.live import LiveHost
from envdoctor.matrix import hardware as hw
from envdoctor.probes.staticcuda import find_static_cuda
from tests.conftest import make_host
from tests.test_checks_compat import driver, gpu

LIB = os.path.join(os.path.dirname(__file__), "data", "fatbin", "libsm75-sm90a-ptx80.so")


def _with_isa(tmp_path: Any, major: int, minor: int) -> str:
    data = bytearray(open(LIB, "rb").read())
    with open(LIB, "rb") as fh:
        off = next(o for n, o, _ in _sections(fh) if n == b".nv_fatbin")
    _m, _v, hsize, fsize = struct.unpack_from("<IHHQ", data, off)
    q = off + hsize
    while q < off + hsize + fsize:
        kind, _ver, ehsize, psize = struct.unpack_from("<HHIQ", data, q)
        if kind == 1:
            struct.pack_into("<HH", data, q + 24, minor, major)
        q += ehsize + psize
    out = tmp_path / ("lib-ptx%d%d.so" % (major, minor))
    out.write_bytes(bytes(data))
    return str(out)


def test_ptx_isa_read_from_real_nvcc_output(tmp_path: Any) -> None:
    assert read_archs(open(LIB, "rb"))["ptx_isa"] == "9.0"  # nvcc 13.0 writes .version 9.0
    r = LiveHost().fatbin(_with_isa(tmp_path, 6, 1))
    assert (r.ptx_isa, r.sass, r.ptx) == ("6.1", ("sm_75", "sm_90a"), ("compute_80",))


def test_truncated_fatbin_is_no_traceback(tmp_path: Any) -> None:
    data = open(_with_isa(tmp_path, 6, 1), "rb").read()
    for cut in (64, 2000, len(data) // 2, len(data) - 100):
        p = tmp_path / ("cut%d.so" % cut)
        p.write_bytes(data[:cut])
        r = LiveHost().fatbin(str(p))
        assert r.error in (None, "bad_elf", "not_elf"), r


def test_ptx_isa_maps_to_the_cuda_that_introduced_it() -> None:
    assert hw.cuda_for_ptx_isa("6.1") == "9.1"
    assert hw.cuda_for_ptx_isa("9.0") == "13.0"
    assert hw.cuda_for_ptx_isa("99.0") is None


SITE = "/usr/lib/python3/dist-packages"


def _host(needed: List[str], ptx_isa: str = "6.1", sass: Any = ("sm_35", "sm_52", "sm_61", "sm_70")) -> Any:
    so = SITE + "/catboost/gpu/_catboost.so"
    host = make_host(files={SITE + "/catboost-0.10.3.dist-info/METADATA": "Name: catboost\nVersion: 0.10.3\n",
                            SITE + "/catboost-0.10.3.dist-info/top_level.txt": "catboost\n",
                            SITE + "/catboost/__init__.py": "", so: "", SITE + "/catboost/_catboost.so": ""},
                     python={"executable": "/usr/bin/python3", "version": "3.6.9", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": [SITE]})
    host.doc["fatbin"] = {so: {"sass": list(sass), "ptx": ["compute_30", "compute_61"], "section": True,
                               "complete": True, "ptx_isa": ptx_isa},
                          SITE + "/catboost/_catboost.so": {"sass": [], "ptx": [], "section": False, "complete": True}}
    host.doc["elf"] = {so: {"soname": None, "needed": needed, "rpath": [], "runpath": []}}
    return host


def _findings(host: Any, drv: List[Any], cc: str = "6.1") -> List[Any]:
    value = find_static_cuda(host)
    facts = Facts(drv + gpu(cc, "GeForce GTX 1050 Ti") + [ok("python.static_cuda", value, "derived")])
    return [f for f in driver_vs_cuda(CheckContext(facts, [])) if f.severity in ("warning", "error", "info")]


def test_probe_lists_the_static_library_only() -> None:
    value: Dict[str, Any] = find_static_cuda(_host(["libc.so.6", "libdl.so.2"]))
    assert [(x["path"], x["ptx_isa"]) for x in value["libraries"]] == [(SITE + "/catboost/gpu/_catboost.so", "6.1")]
    assert value["complete"] is True


def test_fires_on_driver_384_for_ptx_isa_61() -> None:
    found = _findings(_host(["libc.so.6"]), driver("384.130", "9.0"))
    assert [f.code for f in found] == ["driver.too_old_for_framework"]
    assert found[0].severity == "error"
    assert "catboost 0.10.3" in found[0].title and "CUDA 9.1" in found[0].title


def test_quiet_on_a_new_enough_driver() -> None:
    assert _findings(_host(["libc.so.6"]), driver("390.48", "9.1")) == []


def test_quiet_when_libcudart_is_needed() -> None:
    # dynamically linked: the linkage checks judge the libcudart it loads; nothing is reported twice
    assert find_static_cuda(_host(["libcudart.so.9.1", "libc.so.6"]))["libraries"] == []
    assert _findings(_host(["libcudart.so.9.1"]), driver("384.130", "9.0")) == []


def test_minor_version_compat_with_a_cubin_runs() -> None:
    # PTX ISA 8.5 = CUDA 12.5 on a CUDA 12.2 driver (535): a cubin for the GPU (sm_86) runs: info only
    host = _host(["libc.so.6"], ptx_isa="8.5", sass=["sm_70", "sm_80"])
    found = _findings(host, driver("535.104.05", "12.2"), cc="8.6")
    assert [(f.code, f.severity) for f in found] == [("driver.minor_version_compat", "info")]


def test_minor_version_compat_without_a_cubin_is_an_error() -> None:
    # the same library on a GPU of capability 9.0 has no cubin: only its PTX (ISA 8.5), which a 12.2 driver cannot JIT
    host = _host(["libc.so.6"], ptx_isa="8.5", sass=["sm_70", "sm_80"])
    found = _findings(host, driver("535.104.05", "12.2"), cc="9.0")
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    assert "PTX ISA 8.5" in found[0].detail

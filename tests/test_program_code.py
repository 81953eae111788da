"""GPU code of programs and libraries outside the Python frameworks (``programs.gpu_code``; checks
``compat.program-arch`` and ``compat.program-nvrtc``) and conda packages' libraries in ``linkage.packages``.

Fixtures:
- The machines of tests/corpus replayed through their snapshots, each recording a real package's files as the
  thread showed them: conda-forge's openmm 7.7.0 (``lib/plugins/libOpenMMCUDA.so`` needing ``libnvrtc.so.11.2``,
  RUNPATH ``$ORIGIN/..``) beside cudatoolkit 11.7.1 / 11.2.2, omnia's openmm 7.1.1 (needing ``libcufft.so.8.0``),
  Dorado 0.0.1's ``bin/dorado`` and bundled ``lib/libtorch_cuda.so`` (sm_70..sm_86), Guppy 3.6.1's
  ``data/shared.fatbin`` (sm_50..sm_75) and mmcv-full 1.3.15's ``mmcv/_ext`` built for sm_61 only.
- tests/data/fatbin/libsm75-sm90a-ptx80.so (nvcc 13.0 output, tests/data/fatbin/README.md): its ``.nv_fatbin``
  section written out as a file of its own is what ``nvcc -fatbin`` writes.
- Driver and GPU facts as tests/test_checks_compat.py builds them.
- Applications' engine backends: the corpus machine b88b-...-jan079-... (Jan 0.7.9's llama.cpp backend b8892 in its
  data folder, its libraries' NEEDED as janhq/jan#8145 diagnoses them), and miniatures of Jan's data folder in that
  layout (their ELF entries stand-ins with llama.cpp's names).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from envdoctor.checks import CheckContext
from envdoctor.checks.closure import package_libraries as package_libraries_check
from envdoctor.checks.compat.program_code import program_arch, program_nvrtc
from envdoctor.facts import Facts, ok
from envdoctor.host import fatbin as fatbin_reader
from envdoctor.host.live import LiveHost
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes.linkage import conda_package_libraries
from envdoctor.probes.loader import loader_config
from envdoctor.probes.programs import find_gpu_code
from tests.test_checks_compat import driver, gpu

CORPUS = os.path.join(os.path.dirname(__file__), "corpus")
LIB = os.path.join(os.path.dirname(__file__), "data", "fatbin", "libsm75-sm90a-ptx80.so")
OPENMM_117 = "b27-ubuntu2004-driver46091-cuda112-conda-openmm-cudatoolkit117-ptx-unsupported"
OPENMM_CONTAINER = "b27-container-cuda1162-devel-driver51047-conda-openmm-cudatoolkit117-ptx-unsupported"
OPENMM_112 = "b27-ubuntu2004-quadro-k2000-kepler-cc30-driver470-conda-openmm77-cuda11-nvrtc-no-sm30"
OPENMM_71 = "b27-rhel74-gtx1080-driver38726-cuda90-omnia-openmm711-built-for-cuda80-libcufft80-missing"
DORADO = "b27-driver46084-gtx1080-pascal-dorado001-libtorch-built-for-volta-and-newer-no-kernel-image"
GUPPY = "b27-ubuntu1804-2x-rtx3090-driver46519-guppy361-shared-fatbin-no-sm86-needs-guppy4014"
MMCV = "b26-container-pytorch160-cuda101-devel-mmcv-full-built-with-mmcv-cuda-args-sm61-on-tesla-v100-sm70-driver460"


def _host(case: str) -> SnapshotHost:
    return SnapshotHost(load_snapshot(os.path.join(CORPUS, case, "snapshot.json")))


def _code(case: str) -> Dict[str, Any]:
    return find_gpu_code(_host(case))


def _judge(value: Dict[str, Any], facts: List[Any]) -> List[Any]:
    ctx = CheckContext(Facts(facts + [ok("programs.gpu_code", value, "derived")]), [])
    return list(program_arch(ctx)) + list(program_nvrtc(ctx))


def test_conda_library_that_links_nvrtc_is_found_with_its_nvrtc_release() -> None:
    libs = _code(OPENMM_117)["libraries"]
    assert [(e["kind"], e["owner"], e["nvrtc"], e["toolkit"]) for e in libs] == [
        ("conda", "openmm", True, "11.7")]
    assert libs[0]["path"].endswith("/envs/dock-md-fep/lib/plugins/libOpenMMCUDA.so")


def test_conda_prefix_found_from_path_without_conda_prefix() -> None:
    # the container sets no CONDA_PREFIX; /opt/conda/bin on PATH makes /opt/conda the prefix whose programs run
    libs = _code(OPENMM_CONTAINER)["libraries"]
    assert [(e["path"], e["toolkit"]) for e in libs] == [("/opt/conda/lib/plugins/libOpenMMCUDA.so", "11.7")]


def test_nvrtc_newer_than_the_driver_is_an_error_not_minor_version_compat() -> None:
    found = _judge(_code(OPENMM_117), driver("460.91.03", "11.2") + gpu("7.5", "GeForce RTX 2080"))
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_toolkit", "error")]
    assert "NVRTC 11.7" in found[0].title and "460.91.03" in found[0].title and "ISA 7.7" in found[0].title
    assert "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in found[0].detail
    assert "515.43.04" in found[0].fix.text


def test_nvrtc_quiet_on_a_driver_of_its_cuda() -> None:
    assert _judge(_code(OPENMM_117), driver("515.43.04", "11.7") + gpu("7.5", "GeForce RTX 2080")) == []


def test_nvrtc_that_cannot_target_the_gpu() -> None:
    found = _judge(_code(OPENMM_112), driver("470.141.03", "11.4") + gpu("3.0", "Quadro K2000"))
    assert [(f.code, f.severity) for f in found] == [("cuda.toolkit_cannot_target_gpu", "error")]
    assert "NVRTC 11.2" in found[0].title and "compute capability 3.0" in found[0].title


def test_nvrtc_quiet_on_a_gpu_it_targets() -> None:
    assert _judge(_code(OPENMM_112), driver("470.141.03", "11.4") + gpu("3.5", "Tesla K40")) == []


def test_program_and_bundled_library_without_code_for_the_gpu() -> None:
    value = _code(DORADO)
    assert {e["path"].rsplit("/", 1)[1] for e in value["libraries"] if e["sass"]} == {"dorado", "libtorch_cuda.so"}
    found = _judge(value, driver("460.84", "11.2") + gpu("6.1", "GeForce GTX 1080"))
    assert {(f.code, f.severity) for f in found} == {("gpu.arch_not_in_build", "error")}
    assert all("compute capability 6.1" in f.title and "sm_70" in f.title for f in found)
    assert _judge(value, driver("460.84", "11.2") + gpu("7.0", "Tesla V100")) == []


def test_fat_binary_file_beside_a_program() -> None:
    value = _code(GUPPY)
    carried = [e["path"] for e in value["libraries"] if e["sass"]]
    assert carried == ["/home/user/00_biosoft/ont-guppy/data/shared.fatbin"]
    found = _judge(value, driver("465.19.01", "11.3") + gpu("8.6", "GeForce RTX 3090"))
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "sm_75" in found[0].title  # what it does carry
    assert _judge(value, driver("465.19.01", "11.3") + gpu("7.5", "GeForce RTX 2080 Ti")) == []


def test_python_extension_built_for_one_architecture() -> None:
    value = _code(MMCV)
    assert [(e["kind"], e["owner"], e["sass"]) for e in value["libraries"]] == [("python", "mmcv_full", ["sm_61"])]
    found = _judge(value, driver("460.32.03", "11.2") + gpu("7.0", "Tesla V100-SXM2-16GB"))
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_not_in_build", "error")]
    assert "mmcv" in found[0].title
    # a Python package's extension is rebuilt with torch's architecture list
    assert 'TORCH_CUDA_ARCH_LIST="7.0"' in found[0].fix.text and "CMAKE_CUDA_ARCHITECTURES" not in found[0].fix.text
    # sm_61 runs on 6.1 and on 6.2 (a cubin runs on its own major at an equal or higher minor)
    assert _judge(value, driver("460.32.03", "11.2") + gpu("6.2", "Jetson TX2")) == []


def test_conda_package_library_missing_its_cuda_library() -> None:
    host = _host(OPENMM_71)
    entries = conda_package_libraries(host, loader_config(host))
    assert [(e["package"], e["version"]) for e in entries] == [("openmm", "7.1.1")]
    facts = Facts([ok("linkage.packages", entries, "derived")])
    found = [f for f in package_libraries_check(CheckContext(facts, [])) if f.severity == "error"]
    assert found and all("libcufft.so.8.0" in f.title for f in found)
    assert {f.code for f in found} == {"cuda.framework_cannot_load"}


def test_nvidia_packages_and_frameworks_are_left_to_their_checks() -> None:
    # cudatoolkit's own libraries (libcufft, libnvrtc) in the same prefix are not read as programs
    paths = [e["path"] for e in _code(OPENMM_117)["libraries"]]
    assert not any("/libcufft" in p or "/libnvrtc" in p for p in paths)


def test_raw_fat_binary_file_is_read_like_a_section(tmp_path: Any) -> None:
    with open(LIB, "rb") as fh:
        sections = [(off, size) for name, off, size in fatbin_reader._sections(fh) if name == fatbin_reader.SECTION]
        assert len(sections) == 1
        fh.seek(sections[0][0])
        raw = fh.read(sections[0][1])
    path = tmp_path / "kernels.fatbin"
    path.write_bytes(raw)
    whole, alone = LiveHost().fatbin(LIB), LiveHost().fatbin(str(path))
    assert alone.ok and (alone.sass, alone.ptx, alone.ptx_isa) == (whole.sass, whole.ptx, whole.ptx_isa)
    assert alone.sass  # nvcc 13.0's sm_75 and sm_90a cubins


def test_garbled_fat_binary_file_is_incomplete_not_a_traceback(tmp_path: Any) -> None:
    with open(LIB, "rb") as fh:
        data = fh.read()
    magic = data.find(b"\x50\xed\x55\xba")
    path = tmp_path / "cut.fatbin"
    path.write_bytes(data[magic:magic + 200])
    res = LiveHost().fatbin(str(path))
    assert res.ok and not res.complete


# --- compat.program-ptx: a fat binary that reaches the GPU only through PTX newer than the driver's CUDA ---------
#
# Records: fussim 0.3.10's real cu126 extension (NEEDED libcudart.so.12, the CUDA runtime of the torch cu126
# wheels; healthy-b19 case) with its fat binary record rewritten to what TORCH_CUDA_ARCH_LIST="7.5;8.0;8.6+PTX"
# with nvcc 12.6 writes (cubins sm_75..sm_86, PTX compute_86 of ISA 8.5, CUDA 12.6's: cuda.json ptx_isa); and
# cubnm 0.0.4's real static-runtime extension (B30) with the ISA its case names (7.8, CUDA 11.8's). The rewritten
# fields are what host/fatbin.py reads from a fat binary (sass, ptx, ptx_isa); everything else is the case's own.

from envdoctor.checks.compat.driver_vs_cuda import driver_vs_cuda  # noqa: E402
from envdoctor.checks.compat.program_code import program_ptx  # noqa: E402
from envdoctor.probes.staticcuda import find_static_cuda  # noqa: E402
from envdoctor.report import diagnose  # noqa: E402

FUSSIM = "healthy-b19-ubuntu2404-fussim-fat-wheel-cu118-cu128-extensions-torch271-cu126-rtx4090"
FUSSIM_126 = "/home/user/venv/lib/python3.12/site-packages/fussim/_cuda_cu126.cpython-312-x86_64-linux-gnu.so"
CUBNM = "b30-ubuntu1804-driver46080-cuda112-pip-cubnm004-cuda118-ptx-unsupported-toolchain"
CUBNM_CORE = "/home/user/venv/lib/python3.8/site-packages/cubnm/core.cpython-38-x86_64-linux-gnu.so"


def _rewritten(case: str, path: str, sass: List[str], ptx: List[str], isa: str) -> SnapshotHost:
    doc = load_snapshot(os.path.join(CORPUS, case, "snapshot.json"))
    doc["fatbin"][path] = dict(doc["fatbin"][path], sass=sass, ptx=ptx, ptx_isa=isa)
    return SnapshotHost(doc)


def _fussim_ptx_only_above_86(extra_sass: List[str] = ()) -> Dict[str, Any]:  # type: ignore[assignment]
    host = _rewritten(FUSSIM, FUSSIM_126, ["sm_75", "sm_80", "sm_86"] + list(extra_sass), ["compute_86"], "8.5")
    return find_gpu_code(host)


def _ptx(value: Dict[str, Any], facts: List[Any], static: Any = None) -> List[Any]:
    extra = [ok("python.static_cuda", static, "derived")] if static is not None else []
    ctx = CheckContext(Facts(facts + extra + [ok("programs.gpu_code", value, "derived")]), [])
    return list(program_ptx(ctx))


def test_dynamic_runtime_extension_is_recorded_with_its_libcudart() -> None:
    libs = {e["path"]: e for e in _fussim_ptx_only_above_86()["libraries"]}
    assert libs[FUSSIM_126]["cudart"] == "libcudart.so.12" and libs[FUSSIM_126]["ptx_isa"] == "8.5"


def test_dynamic_runtime_extension_with_only_newer_ptx_for_the_gpu_is_an_error() -> None:
    # torch 2.7.1+cu126 runs on driver 535 (CUDA 12.2) through minor-version compatibility; an H100 (9.0) runs
    # none of the cubins (sm_75..sm_86: a cubin never crosses majors), so the extension's PTX (ISA 8.5, first in
    # CUDA 12.5) is its only code there, and driver 535 cannot JIT it
    found = _ptx(_fussim_ptx_only_above_86(), driver("535.183.01", "12.2") + gpu("9.0", "NVIDIA H100 80GB HBM3"))
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    f = found[0]
    assert FUSSIM_126 in f.title and "PTX ISA 8.5" in f.title and "CUDA 12.5" in f.title
    assert "535.183.01" in f.title and "12.2" in f.title and "555.42.02" in f.title  # CUDA 12.5's own driver
    assert "libcudart.so.12" in f.detail and "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in f.detail
    assert "555.42.02" in f.fix.text and "sm_90" in f.fix.text and "fussim" in f.fix.text
    # below CUDA 12's minor-version-compatibility floor (525.60.13) as well: still this one finding
    older = _ptx(_fussim_ptx_only_above_86(), driver("470.256.02", "11.4") + gpu("9.0", "NVIDIA H100 PCIe"))
    assert [(f.code, "555.42.02" in f.title) for f in older] == [("driver.too_old_for_framework", True)]
    assert "minor-version-compatibility floor" in older[0].detail


def test_quiet_when_a_cubin_runs_on_the_gpu() -> None:
    h100 = driver("535.183.01", "12.2") + gpu("9.0", "NVIDIA H100 80GB HBM3")
    assert _ptx(_fussim_ptx_only_above_86(["sm_90"]), h100) == []
    # a cubin for 8.6 runs on 8.6 and 8.9 (its own major, an equal or higher minor): the PTX is never JIT-compiled
    value = _fussim_ptx_only_above_86()
    assert _ptx(value, driver("535.183.01", "12.2") + gpu("8.9", "NVIDIA GeForce RTX 4090")) == []
    assert _ptx(value, driver("535.183.01", "12.2") + gpu("8.6", "NVIDIA RTX A6000")) == []


def test_quiet_when_the_driver_knows_the_ptx_isa() -> None:
    value = _fussim_ptx_only_above_86()
    assert _ptx(value, driver("555.42.02", "12.5") + gpu("9.0", "NVIDIA H100 80GB HBM3")) == []
    assert _ptx(value, driver("570.124.06", "12.8") + gpu("9.0", "NVIDIA H100 80GB HBM3")) == []


def test_quiet_on_a_gpu_below_the_ptx_architecture() -> None:
    # compute_86 PTX does not run on 7.0 at all (and no cubin does): compat.program-arch says so, not this rule
    assert _ptx(_fussim_ptx_only_above_86(), driver("535.183.01", "12.2") + gpu("7.0", "Tesla V100")) == []


def test_static_runtime_extension_is_left_to_driver_vs_cuda() -> None:
    host = _rewritten(CUBNM, CUBNM_CORE, ["sm_52"], ["compute_52"], "7.8")
    static, value = find_static_cuda(host), find_gpu_code(host)
    assert [lib["path"] for lib in static["libraries"]] == [CUBNM_CORE]
    core = [e for e in value["libraries"] if e["path"] == CUBNM_CORE]
    assert core and core[0]["cudart"] is None and core[0]["ptx_isa"] == "7.8"
    facts = driver("460.80", "11.2") + gpu("7.5", "GeForce RTX 2080 Ti")
    # without python.static_cuda the rule judges the file itself (the same verdict)...
    alone = _ptx(value, facts)
    assert [(f.code, CUBNM_CORE in f.title) for f in alone] == [("driver.too_old_for_framework", True)]
    # ...with it, the file is compat.driver-vs-cuda's alone: one root cause, one finding
    assert _ptx(value, facts, static) == []
    ctx = CheckContext(Facts(facts + [ok("python.static_cuda", static, "derived")]), [])
    said = [f for f in driver_vs_cuda(ctx) if f.code == "driver.too_old_for_framework"]
    assert len(said) == 1 and "cubnm" in said[0].title and "520.61.05" in said[0].title


def test_static_runtime_extension_gets_one_finding_in_a_whole_diagnosis() -> None:
    host = _rewritten(CUBNM, CUBNM_CORE, ["sm_52"], ["compute_52"], "7.8")
    found = [f for f in diagnose(host, source={"kind": "snapshot", "description": "cubnm"}).findings
             if CUBNM_CORE in f.title + f.detail or "cubnm" in f.title]
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    assert "460.80" in found[0].title


# -- software installed whole under /opt/<name> or /usr/local/<name>, its folder on PATH or not ---------------------


def _sdk_host(needed: str, cudart_installed: str) -> SnapshotHost:
    """A vendor SDK in /usr/local/vendorsdk (its tools/ not on PATH) whose program needs ``needed``, beside a
    CUDA toolkit whose runtime the loader cache lists as ``cudart_installed``."""
    from tests.conftest import make_host

    cudart = "/usr/local/cuda-7.5/lib64/" + cudart_installed
    host = make_host(files={"/usr/local/vendorsdk/tools/Viewer": "", "/usr/local/vendorsdk/lib/libsdk_core.so": "",
                            "/usr/local/vendorsdk/doc/README": "", "/usr/local/cuda-7.5/bin/nvcc": "",
                            "/usr/local/cuda-7.5/bin/cuda-gdb": "", cudart: "", "/sbin/ldconfig": ""},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                                "\t%s (libc6,x86-64) => %s\n" % (cudart_installed, cudart)}])
    host.doc["elf"] = {
        "/usr/local/vendorsdk/tools/Viewer": {"soname": "", "needed": [needed, "libsdk_core.so", "libc.so.6"],
                                              "rpath": ["$ORIGIN/../lib"], "runpath": []},
        "/usr/local/vendorsdk/lib/libsdk_core.so": {"soname": "libsdk_core.so", "needed": [needed, "libc.so.6"],
                                                    "rpath": [], "runpath": []},
        "/usr/local/cuda-7.5/bin/cuda-gdb": {"soname": "", "needed": ["libcudart.so.9.9"], "rpath": [], "runpath": []}}
    return SnapshotHost(host.doc)


def _program_findings(host: SnapshotHost) -> List[Any]:
    from envdoctor.probes.linkage import program_libraries

    entries = program_libraries(host, loader_config(host))
    facts = Facts([ok("linkage.packages", entries, "derived")])
    return [f for f in package_libraries_check(CheckContext(facts, [])) if f.severity in ("warning", "error")]


def test_vendor_sdk_program_needing_a_cuda_runtime_no_toolkit_provides() -> None:
    found = _program_findings(_sdk_host("libcudart.so.8.0", "libcudart.so.7.5"))
    assert found and {(f.code, f.severity) for f in found} == {("cuda.framework_cannot_load", "error")}
    assert all("libcudart.so.8.0" in f.title and "/usr/local/vendorsdk" in f.title for f in found)
    assert any(f.title.startswith("Viewer ") for f in found)
    # a toolkit's own programs (bin/nvcc beside them) are not read as the software's
    assert not any("cuda-gdb" in f.title or "9.9" in f.title for f in found)


def test_vendor_sdk_program_whose_cuda_runtime_is_installed_is_quiet() -> None:
    assert _program_findings(_sdk_host("libcudart.so.7.5", "libcudart.so.7.5")) == []


# -- the modules a program opens from its own lib folders (an interpreter's lib/lua/5.1/*.so) ----------------------


def _module_host(needed: str, cache: str, extra: Optional[Dict[str, str]] = None) -> SnapshotHost:
    """Software unpacked in ~/tool/install with its bin on PATH: an interpreter that needs no CUDA library, a library
    of its lib/ and a module of lib/lua/5.1 that need ``needed``; the loader cache lists ``cache``."""
    from tests.conftest import make_host

    installed = "/usr/local/cuda-7.5/lib64/" + cache
    root = "/home/u/tool/install"
    files = {root + "/bin/luajit": "", root + "/lib/libcore.so": "", root + "/lib/lua/5.1/libcumod.so": "",
             root + "/lib/lua/5.1/libplain.so": "", installed: "", "/sbin/ldconfig": ""}
    files.update(extra or {})
    host = make_host(files=files, environ={"PATH": root + "/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": root + "/lib"},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"], "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                                "\t%s (libc6,x86-64) => %s\n" % (cache, installed)}])
    host.doc["elf"] = {
        root + "/bin/luajit": {"soname": "", "needed": ["libc.so.6"], "rpath": [], "runpath": []},
        root + "/lib/libcore.so": {"soname": "libcore.so", "needed": [needed, "libc.so.6"], "rpath": [],
                                   "runpath": []},
        root + "/lib/lua/5.1/libcumod.so": {"soname": "libcumod.so", "needed": ["libcore.so", needed, "libc.so.6"],
                                            "rpath": [], "runpath": []},
        root + "/lib/lua/5.1/libplain.so": {"soname": "libplain.so", "needed": ["libc.so.6"], "rpath": [],
                                            "runpath": []}}
    return SnapshotHost(host.doc)


def test_software_libraries_built_against_a_cuda_release_no_longer_installed() -> None:
    found = _program_findings(_module_host("libcudart.so.7.0", "libcudart.so.7.5"))
    assert [(f.code, f.severity) for f in found] == [("cuda.framework_cannot_load", "error")]
    f = found[0]
    assert "libcudart.so.7.0" in f.title and "/home/u/tool/install" in f.title
    assert "cannot open shared object file" in f.detail
    assert "rebuild the software in /home/u/tool/install against the CUDA installed here" in f.fix.text


def test_a_module_needing_only_the_cuda_it_was_built_for_here_stays_quiet() -> None:
    assert _program_findings(_module_host("libcudart.so.7.5", "libcudart.so.7.5")) == []


def test_a_module_whose_library_has_a_copy_a_launcher_may_add_stays_quiet() -> None:
    # a copy in the software's own lib folders, or in a toolkit the loader is not told about: a launcher (or the
    # program's own paths) may supply it, so a library alone is not judged
    own = {"/home/u/tool/install/lib/cuda/libcudart.so.7.0": ""}
    assert _program_findings(_module_host("libcudart.so.7.0", "libcudart.so.7.5", own)) == []
    toolkit = {"/usr/local/cuda-7.0/lib64/libcudart.so.7.0": ""}
    assert _program_findings(_module_host("libcudart.so.7.0", "libcudart.so.7.5", toolkit)) == []


# --- packaged applications (snaps, Flatpak) and PTX judged by the CUDA runtime a program bundles -----------------
#
# Records: B55's gemma3 snap, whose llamacpp-cuda component (/snap/gemma3/components/266/llamacpp-cuda, the layout
# snapd gives a strict snap's components) carries libggml-cuda.so.0 with cubins sm_86, sm_89, sm_120a and PTX
# compute_50..compute_90 whose ISA the record does not hold, and the CUDA runtime it was built with beside it
# (libcudart.so.12.9.79, RUNPATH $ORIGIN).

from envdoctor.probes.programs import packaged_roots, root_name  # noqa: E402

GEMMA = "b55-ubuntu2404-gtx1080ti-driver570-gemma3-snap-llamacpp-cuda12-build-ptx-unsupported-toolchain-needs-580"
COMPONENT = "/snap/gemma3/components/266/llamacpp-cuda"
GGML_CUDA = COMPONENT + "/lib/libggml-cuda.so.0"


def _gemma_doc() -> Dict[str, Any]:
    return load_snapshot(os.path.join(CORPUS, GEMMA, "snapshot.json"))


def _moved(doc: Dict[str, Any], old: str, new: str) -> Dict[str, Any]:
    """The snapshot with every record under ``old`` moved under ``new`` (parent folders listed)."""
    for key in ("dirs", "links", "files", "elf", "fatbin"):
        table = doc.get(key) or {}
        doc[key] = {(new + p[len(old):] if p == old or p.startswith(old + "/") else p): v for p, v in table.items()}
    parts = new.strip("/").split("/")
    for i in range(len(parts)):
        parent = "/" + "/".join(parts[:i])
        entries = list(doc["dirs"].get(parent, {}).get("entries", []))
        if parts[i] not in entries:
            doc["dirs"][parent] = {"entries": sorted(entries + [parts[i]])}
    return doc


def _gemma_code(doc: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    return [e for e in find_gpu_code(SnapshotHost(doc or _gemma_doc()))["libraries"] if "libggml-cuda" in e["path"]]


def test_snap_component_library_is_read_once_with_its_bundled_runtime() -> None:
    found = _gemma_code()
    assert [(e["path"], e["owner"], e["cudart"], e["cudart_version"], e["ptx_isa"]) for e in found] == [
        (GGML_CUDA, "gemma3+llamacpp-cuda", "libcudart.so.12", "12.9", None)]


def test_ptx_only_code_built_with_a_newer_bundled_runtime_is_a_warning_naming_the_driver() -> None:
    value = find_gpu_code(_host(GEMMA))
    found = _ptx(value, driver("570.195.03", "12.8") + gpu("6.1", "NVIDIA GeForce GTX 1080 Ti"))
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    f = found[0]
    assert "570.195.03" in f.title and GGML_CUDA in f.title and "gemma3+llamacpp-cuda" in f.title
    assert "CUDA 12.9" in f.title and "575.51.03" in f.title  # CUDA 12.9's own driver (cuda.json)
    assert "libcudart.so.12 12.9" in f.detail and "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in f.detail
    assert "575.51.03" in f.fix.text and "sm_61" in f.fix.text


def test_bundled_runtime_rule_quiet_when_the_driver_or_a_cubin_or_the_read_isa_allows() -> None:
    value = find_gpu_code(_host(GEMMA))
    gtx = gpu("6.1", "NVIDIA GeForce GTX 1080 Ti")
    assert _ptx(value, driver("580.95.05", "13.0") + gtx) == []  # a driver of a newer CUDA JIT-compiles it
    assert _ptx(value, driver("575.64.03", "12.9") + gtx) == []  # one of the runtime's own CUDA
    # a cubin for 8.6 runs on an RTX 3090: no PTX is JIT-compiled
    assert _ptx(value, driver("570.195.03", "12.8") + gpu("8.6", "NVIDIA GeForce RTX 3090")) == []
    # the PTX ISA read from the file itself wins over the runtime beside it: ISA 8.7 is CUDA 12.8's
    doc = _gemma_doc()
    for path in (GGML_CUDA, GGML_CUDA + ".0.0"):
        doc["fatbin"][path] = dict(doc["fatbin"][path], ptx_isa="8.7")
    assert _ptx(find_gpu_code(SnapshotHost(doc)), driver("570.195.03", "12.8") + gtx) == []


def test_flatpak_app_is_read_like_a_snap() -> None:
    files = "/var/lib/flatpak/app/org.example.Chat/current/active/files"
    found = _gemma_code(_moved(_gemma_doc(), COMPONENT, files))
    assert [(e["path"], e["owner"], e["cudart_version"]) for e in found] == [
        (files + "/lib/libggml-cuda.so.0", "org.example.Chat", "12.9")]
    assert root_name("/opt/zed") == "zed" and root_name("/snap/gemma3/current") == "gemma3"


def test_snap_components_of_the_current_revision_only() -> None:
    # snapd keeps the previous revision mounted: current names the one that runs
    doc = _moved(_gemma_doc(), COMPONENT, "/snap/gemma3/components/270/llamacpp-cuda")
    doc = _moved(doc, "/snap/gemma3/components/270/llamacpp-cuda/bin", "/snap/gemma3/components/266/old/bin")
    doc["links"]["/snap/gemma3/current"] = {"target": "270"}
    doc["dirs"]["/snap/gemma3"]["entries"] = sorted(doc["dirs"]["/snap/gemma3"]["entries"] + ["270", "current"])
    roots = [root for root, _files in packaged_roots(SnapshotHost(doc))]
    assert roots == ["/snap/gemma3/components/270/llamacpp-cuda"]
    # no current link (a snapshot without it): the highest revision
    del doc["links"]["/snap/gemma3/current"]
    assert [root for root, _files in packaged_roots(SnapshotHost(doc))] == [
        "/snap/gemma3/components/270/llamacpp-cuda"]


def test_base_and_runtime_snaps_are_not_applications() -> None:
    doc = _moved(_gemma_doc(), COMPONENT, "/snap/core24/components/1/llamacpp-cuda")
    assert not [root for root, _files in packaged_roots(SnapshotHost(doc)) if "core24" in root]


def test_a_librarys_bundled_nvrtc_is_read_where_the_loader_would_look() -> None:
    """ld.so ignores DT_RPATH when DT_RUNPATH is set (ld.so(8)): the NVRTC release read beside a library is the one
    its DT_RUNPATH leads to, not an older copy its DT_RPATH names."""
    from types import SimpleNamespace

    from envdoctor.probes.programs import _NVRTC_FILE, _bundled_release
    from tests.conftest import make_host

    host = make_host(files={"/opt/app/old/libnvrtc.so.11.2.152": "", "/opt/app/new/libnvrtc.so.12.4.127": "",
                            "/opt/app/lib/libapp.so": ""})
    both = SimpleNamespace(rpath=["$ORIGIN/../old"], runpath=["$ORIGIN/../new"])
    assert _bundled_release(host, "/opt/app/lib/libapp.so", both, None, _NVRTC_FILE) == "12.4"
    only_rpath = SimpleNamespace(rpath=["$ORIGIN/../old"], runpath=[])
    assert _bundled_release(host, "/opt/app/lib/libapp.so", only_rpath, None, _NVRTC_FILE) == "11.2"

# Python packages whose only code for the GPU is PTX (issue 23: GPU libraries built per CUDA version).
#
# Records: faiss-gpu 1.7.2's PyPI wheel (B63; a CUDA 10.2 build, CMAKE_CUDA_ARCHITECTURES=35-real;50-real;60-real;
# 70-real;75 as its maintainer quotes the build script in kyamagu/faiss-wheels#54: cubins sm_35..sm_75, PTX
# compute_75) and fast_jl 0.1.3 compiled at install by nvcc 11.8 with TORCH_CUDA_ARCH_LIST=7.0+PTX (B63; NEEDED
# libcudart.so.11.0, cubin sm_70, PTX compute_70), both installed with a .dist-info that has no RECORD.

from envdoctor.checks.compat.program_code import _program_arch  # noqa: E402
from envdoctor.probes.staticcuda import candidates_once  # noqa: E402

FAISS = ("b63-ubuntu1804-a100-driver53515405-venv-pip-faiss-gpu-172-cuda102-wheel-no-sm80-ptx-jit-hangs-needs-"
         "173-cuda11-wheel")
FAISS_SITE = "/home/user/venv/lib/python3.8/site-packages"
FAST_JL = ("b63-ubuntu1804-a100-driver4609103-venv-torch220-cu118-fast-jl-013-built-by-nvcc118-sm70-ptx-jit-"
           "unsupported-toolchain")
FAST_JL_SO = FAISS_SITE + "/fast_jl.cpython-38-x86_64-linux-gnu.so"


def _nvcc(version: str) -> List[Any]:
    release = ".".join(version.split(".")[:2])
    return [ok("cuda.nvcc", {"path": "/usr/local/cuda/bin/nvcc", "resolved": "/usr/local/cuda-%s/bin/nvcc" % release,
                             "release": release, "version": version, "toolkit": "/usr/local/cuda-%s" % release},
               "command:/usr/local/cuda/bin/nvcc --version")]


def test_a_dist_info_without_record_is_read_through_its_top_level_modules() -> None:
    libs = _code(FAISS)["libraries"]
    assert [(e["owner"], e["path"].rsplit("/", 1)[1]) for e in libs] == [
        ("faiss_gpu", "_swigfaiss.cpython-38-x86_64-linux-gnu.so"),
        ("faiss_gpu", "_swigfaiss_avx2.cpython-38-x86_64-linux-gnu.so")]
    # numpy's .dist-info has neither RECORD nor top_level.txt: counted, not searched
    assert candidates_once(_host(FAISS))[1] == 1
    doc = load_snapshot(os.path.join(CORPUS, FAISS, "snapshot.json"))
    doc["files"] = {p: v for p, v in doc["files"].items() if not p.endswith("faiss_gpu-1.7.2.dist-info/top_level.txt")}
    host = SnapshotHost(doc)
    assert find_gpu_code(host)["libraries"] == [] and candidates_once(host)[1] == 2


def test_python_package_reaching_the_gpu_only_through_ptx_is_a_jit_warning() -> None:
    found = _program_arch(Facts(driver("535.154.05", "12.2") + gpu("8.0", "NVIDIA A100-PCIE-40GB")
                                + [ok("programs.gpu_code", _code(FAISS), "derived")]))
    # one finding for the package's two modules of the same code
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_ptx_jit_only", "warning")]
    f = found[0]
    assert "faiss_gpu 1.7.2" in f.title and "sm_80" in f.title and "compute_75" in f.title
    assert "JIT-compiles the PTX" in f.detail and "CUDA_CACHE_MAXSIZE" in f.detail
    assert "sm_80" in f.fix.text


def test_ptx_jit_warning_quiet_where_a_cubin_runs_or_no_code_does() -> None:
    value = _code(FAISS)
    # its sm_70 cubin runs on a V100, its sm_75 one on a T4
    assert _judge(value, driver("535.154.05", "12.2") + gpu("7.0", "Tesla V100-SXM2-16GB")) == []
    assert _judge(value, driver("535.154.05", "12.2") + gpu("7.5", "Tesla T4")) == []
    # on a Kepler 3.0 nothing runs (PTX compute_75 is above it): no kernel, the error, not the JIT warning
    found = _judge(value, driver("470.256.02", "11.4") + gpu("3.0", "GeForce GTX 680"))
    assert {f.code for f in found} == {"gpu.arch_not_in_build"}


def test_ptx_jit_warning_yields_to_the_driver_that_cannot_jit_it() -> None:
    h100 = gpu("9.0", "NVIDIA H100 80GB HBM3")
    value = _fussim_ptx_only_above_86()
    facts = driver("535.183.01", "12.2") + h100
    ctx = CheckContext(Facts(facts + [ok("programs.gpu_code", value, "derived")]), [])
    assert [f.code for f in program_ptx(ctx)] == ["driver.too_old_for_framework"]
    assert [f for f in _program_arch(ctx.facts) if f.code == "gpu.arch_ptx_jit_only"] == []
    # a driver that knows PTX ISA 8.5 JIT-compiles it: only the JIT warning is left
    newer = _program_arch(Facts(driver("555.42.02", "12.5") + h100 + [ok("programs.gpu_code", value, "derived")]))
    assert [(f.code, "fussim" in f.title) for f in newer] == [("gpu.arch_ptx_jit_only", True)]


def test_ptx_built_by_the_machines_newer_toolkit_is_a_warning_worded_as_unverified() -> None:
    value = _code(FAST_JL)
    assert [(e["path"], e["cudart"], e["ptx_isa"]) for e in value["libraries"]] == [
        (FAST_JL_SO, "libcudart.so.11.0", None)]
    a100 = gpu("8.0", "A100-PCIE-40GB")
    found = _ptx(value, driver("460.91.03", "11.2") + a100 + _nvcc("11.8.89"))
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "warning")]
    f = found[0]
    assert "460.91.03" in f.title and "presumably" in f.title and "CUDA 11.8" in f.title and "520.61.05" in f.title
    assert "not read from the file" in f.detail and "nvcc on PATH" in f.detail and "ISA 7.8" in f.detail
    assert "minor-version compatibility does not cover PTX JIT" in f.detail
    # the JIT warning yields to it
    assert [x for x in _judge(value, driver("460.91.03", "11.2") + a100 + _nvcc("11.8.89"))
            if x.code == "gpu.arch_ptx_jit_only"] == []


def test_toolkit_inference_quiet_on_another_major_no_toolkit_or_a_driver_of_its_cuda() -> None:
    value = _code(FAST_JL)
    a100 = gpu("8.0", "A100-PCIE-40GB")
    assert _ptx(value, driver("460.91.03", "11.2") + a100) == []  # no toolkit: nothing to infer from
    # the module links CUDA 11's runtime: a CUDA 12 toolkit did not build it
    assert _ptx(value, driver("460.91.03", "11.2") + a100 + _nvcc("12.1.105")) == []
    assert _ptx(value, driver("520.61.05", "11.8") + a100 + _nvcc("11.8.89")) == []  # CUDA 11.8's own driver
    # a V100 runs the sm_70 cubin: no PTX is JIT-compiled
    assert _ptx(value, driver("460.91.03", "11.2") + gpu("7.0", "Tesla V100") + _nvcc("11.8.89")) == []


def test_ptx_isa_read_from_the_file_makes_it_an_error() -> None:
    # what a real fast_jl module built by nvcc 11.8 records: PTX ISA 7.8 in its fat binary's PTX entry header
    host = _rewritten(FAST_JL, FAST_JL_SO, ["sm_70"], ["compute_70"], "7.8")
    found = _ptx(find_gpu_code(host), driver("460.91.03", "11.2") + gpu("8.0", "A100-PCIE-40GB") + _nvcc("11.8.89"))
    assert [(f.code, f.severity) for f in found] == [("driver.too_old_for_framework", "error")]
    assert "PTX ISA 7.8" in found[0].title and "460.91.03" in found[0].title and "presumably" not in found[0].title


# -- GPU code outside the frameworks: libraries in the loader's cache, files whose dynamic section is not
# recorded, wheels installed without a RECORD, an NVRTC older than the GPU (B75/B76 cases) ------------------

from envdoctor.probes.programs import cache_libraries  # noqa: E402

OPENCV = "b76-ubuntu1604-opencv440-cuda100-built-sm60-61-on-rtx2060-not-built-for-selected-device"
GADGETRON = "b76-ubuntu2004-rtx3090-driver46519-cuda113-gadgetron-built-without-sm80-86"
ACEMD = "b75-ubuntu2004-2x-rtx3090-driver49544-conda-acemd3-350-cuda102-cudatoolkit10289-nvrtc-cannot-target-sm86"
MACH = "b76-container-dataflow-nvidia-l4-driver535-mach-wheel-built-sm75-only-ptx75"
BNB_K80 = "b17-ubuntu2004-tesla-k80-pip-bitsandbytes0420-no-kepler-binaries"


def test_library_built_into_usr_local_lib_is_read_from_the_loader_cache() -> None:
    value = _code(OPENCV)
    assert [(e["kind"], e["owner"], e["version"], e["sass"]) for e in value["libraries"]] == [
        ("library", "libopencv_core", "4.4.0", ["sm_60", "sm_61"]),
        ("library", "libopencv_cudev", "4.4.0", ["sm_60", "sm_61"]),
        ("library", "libopencv_dnn", "4.4.0", ["sm_60", "sm_61"])]
    found = _judge(value, driver("430.50", "10.1") + gpu("7.5", "GeForce RTX 2060"))
    assert {(f.code, f.severity) for f in found} == {("gpu.arch_not_in_build", "error")}
    assert all("compute capability 7.5" in f.title and "sm_60, sm_61" in f.title for f in found)
    # one build (one folder, one architecture list): one finding naming its three files, not three findings
    assert len(found) == 1
    assert "3 files of one build in /usr/local/lib (libopencv_core.so.4.4, libopencv_cudev.so.4.4, " \
           "libopencv_dnn.so.4.4)" in found[0].title
    assert "library libopencv_core 4.4.0, library libopencv_cudev 4.4.0" in found[0].detail
    # a library built from source is rebuilt with its CMake build's architecture list, not torch's
    assert "CMAKE_CUDA_ARCHITECTURES=75 for a CMake build" in found[0].fix.text
    assert "TORCH_CUDA_ARCH_LIST" not in found[0].fix.text
    # sm_61 runs on a 6.1 GPU: quiet
    assert _judge(value, driver("430.50", "10.1") + gpu("6.1", "GeForce GTX 1080")) == []
    # two GPU models of one compute capability (judged once per capability): still one finding, each file once
    two = _judge(value, driver("430.50", "10.1") + gpu("7.5", "GeForce RTX 2060")
                 + gpu("7.5", "Quadro RTX 6000", 1)[1:])
    assert len(two) == 1 and "3 files of one build" in two[0].title and two[0].title.count("libopencv_dnn") == 1


def test_loader_cache_leaves_the_system_nvidia_and_toolkit_libraries_to_their_checks() -> None:
    doc = load_snapshot(os.path.join(CORPUS, OPENCV, "snapshot.json"))
    ldconfig = next(c for c in doc["commands"] if c["argv"][-1] == "-p")
    ldconfig["stdout"] += "".join("\t%s (libc6,x86-64) => %s\n" % (n, p) for n, p in (
        ("libcudnn.so.7", "/usr/local/lib/libcudnn.so.7"), ("libnvidia-ml.so.1", "/usr/local/nvidia/lib64/x.so"),
        ("libfoo.so.1", "/opt/cuda-10.0/extras/lib/libfoo.so.1"), ("libbar.so.1", "/usr/lib/libbar.so.1")))
    listed = [path for _soname, path in cache_libraries(SnapshotHost(doc))]
    assert listed == ["/usr/local/lib/libopencv_core.so.4.4", "/usr/local/lib/libopencv_cudev.so.4.4",
                      "/usr/local/lib/libopencv_dnn.so.4.4", "/usr/local/lib/libopencv_imgproc.so.4.4"]


def test_library_whose_dynamic_section_was_not_read_is_judged_by_its_fat_binary() -> None:
    value = _code(GADGETRON)
    # the programs beside it (no fat binary recorded, no dynamic section) are not kept
    assert [(e["owner"], e["path"].rsplit("/", 1)[1], e["cudart"]) for e in value["libraries"]] == [
        ("gadgetron", "libgadgetron_toolbox_gpu_%s.so" % n, None) for n in ("core", "nfft", "solvers")]
    found = _judge(value, driver("465.19.01", "11.3") + gpu("8.6", "GeForce RTX 3090"))
    assert {(f.code, f.severity) for f in found} == {("gpu.arch_not_in_build", "error")}
    assert all("compute capability 8.6" in f.title for f in found)
    assert len(found) == 1 and "3 files of one build" in found[0].title
    assert _judge(value, driver("465.19.01", "11.3") + gpu("7.5", "GeForce RTX 2080 Ti")) == []


def test_nvrtc_older_than_the_gpu_cannot_target_it() -> None:
    value = _code(ACEMD)
    found = _judge(value, driver("495.44", "11.5") + gpu("8.6", "NVIDIA GeForce RTX 3090"))
    assert [(f.code, f.severity) for f in found] == [("cuda.gpu_newer_than_toolkit", "warning")]
    assert "NVRTC 10.2" in found[0].title and "compute capability 8.6" in found[0].title
    assert "up to 7.5" in found[0].title and "acemd3" in found[0].title
    assert "invalid value for --gpu-architecture" in found[0].detail and "CUDA 11.1" in found[0].fix.text
    # a GPU its NVRTC targets, or no library linking NVRTC: quiet
    assert _judge(value, driver("495.44", "11.5") + gpu("7.5", "GeForce RTX 2080 Ti")) == []
    unlinked = {"libraries": [dict(e, nvrtc=False) for e in value["libraries"]], "complete": True}
    assert _judge(unlinked, driver("495.44", "11.5") + gpu("8.6", "NVIDIA GeForce RTX 3090")) == []


def test_wheel_installed_without_record_or_top_level_is_found_by_its_name() -> None:
    value = _code(MACH)
    assert [(e["kind"], e["owner"], e["sass"], e["ptx"]) for e in value["libraries"]] == [
        ("python", "mach", ["sm_75"], ["compute_75"])]
    found = _judge(value, driver("535.183.01", "12.2") + gpu("8.9", "NVIDIA L4"))
    assert [(f.code, f.severity) for f in found] == [("gpu.arch_ptx_jit_only", "warning")]
    assert "compute capability 8.9" in found[0].title and "mach" in found[0].title
    assert _judge(value, driver("535.183.01", "12.2") + gpu("7.5", "Tesla T4")) == []


def test_package_below_its_published_builds_floor_is_reported_once_not_per_file() -> None:
    report = diagnose(_host(BNB_K80))
    found = [f for f in report.findings if f.code == "gpu.arch_not_in_build"]
    assert len(found) == 1 and "bitsandbytes 0.42.0" in found[0].title


# -- an application's engine backends in a folder of its own (Jan's llama.cpp backends, Ollama's CUDA runners) ------

JAN = ("b88b-debian13-rtx5070ti-open58012618-cuda131-jan079-llamacpp-b8892-cuda13-backend-ci-runpath-needs-"
       "unbundled-libnccl")


def test_jan_backend_needing_a_cuda_library_no_path_provides() -> None:
    # the corpus machine: the backend's libggml-cuda.so needs libnccl.so.2, which the bundle does not ship and the
    # machine does not have; its CUDA 13 runtime and cuBLAS come from the toolkit through the loader cache
    found = _program_findings(_host(JAN))
    assert [(f.code, f.severity) for f in found] == [("nccl.framework_cannot_load", "warning")]
    assert "libggml-cuda.so" in found[0].title and "libnccl.so.2" in found[0].title
    assert "Jan's backend b8892/linux-cuda-13-common_cpus-x64" in found[0].title
    assert "rebuild" not in found[0].fix.text  # NCCL is missing, not a CUDA release the backend was built with


def test_jan_backend_quiet_once_the_library_is_installed() -> None:
    doc = load_snapshot(os.path.join(CORPUS, JAN, "snapshot.json"))
    nccl = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    doc["files"][nccl] = {"text": ""}
    doc["dirs"]["/usr/lib/x86_64-linux-gnu"]["entries"] = sorted(
        doc["dirs"]["/usr/lib/x86_64-linux-gnu"]["entries"] + ["libnccl.so.2"])
    for cmd in doc["commands"]:
        if cmd["argv"] == ["/usr/sbin/ldconfig", "-p"]:
            cmd["stdout"] += "\tlibnccl.so.2 (libc6,x86-64) => %s\n" % nccl
    assert _program_findings(SnapshotHost(doc)) == []


def _jan_host(needs: Dict[str, str], cache: str) -> SnapshotHost:
    """Jan's data folder holding llama.cpp backends (``needs``: ``<release>/<variant>`` -> the CUDA library its
    ``build/bin/libggml-cuda.so`` needs besides libcudart.so.12), the loader cache listing ``cache`` and CUDA 12's
    runtime. The layout is the one janhq/jan#8145 names; the ELF entries are stand-ins with llama.cpp's names."""
    from tests.conftest import make_host

    top = "/home/u/.local/share/Jan/data/llamacpp/backends/"
    cudart = "/usr/local/cuda-12.8/lib64/libcudart.so.12"
    files = {cudart: "", "/usr/local/cuda-12.8/lib64/" + cache: "", "/sbin/ldconfig": ""}
    elf = {}
    for backend, needed in needs.items():
        files.update({top + backend + "/build/bin/" + n: "" for n in ("llama-server", "libggml-base.so",
                                                                      "libggml-cuda.so")})
        elf[top + backend + "/build/bin/libggml-cuda.so"] = {
            "soname": "libggml-cuda.so", "needed": ["libggml-base.so", "libcudart.so.12", needed, "libc.so.6"],
            "rpath": [], "runpath": ["$ORIGIN"]}
    host = make_host(files=files, environ={"HOME": "/home/u", "PATH": "/usr/bin:/bin"},
                     commands=[{"argv": ["/sbin/ldconfig", "-p"],
                                "stdout": "2 libs found in cache `/etc/ld.so.cache'\n"
                                "\tlibcudart.so.12 (libc6,x86-64) => %s\n"
                                "\t%s (libc6,x86-64) => /usr/local/cuda-12.8/lib64/%s\n" % (cudart, cache, cache)}])
    host.doc["elf"] = elf
    return SnapshotHost(host.doc)


def test_each_downloaded_backend_is_judged_on_its_own() -> None:
    found = _program_findings(_jan_host({"b6500/linux-cuda-12-common_cpus-x64": "libcublas.so.12",
                                         "b8892/linux-cuda-12-common_cpus-x64": "libnccl.so.2"}, "libcublas.so.12"))
    assert [(f.code, f.severity) for f in found] == [("nccl.framework_cannot_load", "warning")]
    assert "Jan's backend b8892/linux-cuda-12-common_cpus-x64" in found[0].title
    assert "libnccl.so.2" in found[0].title and "when it picks it" in found[0].detail


def test_backend_whose_cuda_libraries_the_loader_finds_is_quiet() -> None:
    assert _program_findings(_jan_host({"b8892/linux-cuda-12-common_cpus-x64": "libnccl.so.2"}, "libnccl.so.2")) == []


def test_backends_are_not_read_as_gpu_code() -> None:
    # which backend runs is the application's choice: their fat binaries are not judged against the GPU
    host = _jan_host({"b8892/linux-cuda-12-common_cpus-x64": "libcublas.so.12"}, "libcublas.so.12")
    assert find_gpu_code(host)["libraries"] == []

"""Any program's CUDA libraries (``envdoctor libs``), the same resolver in ``diagnose`` (ONNX Runtime's every
execution provider, a wheel library's own dependencies, torch extension modules), and compiled extensions'
symbols against the installed framework's.

Every library is a real ELF object compiled here with gcc, laid out as the real packages lay theirs out (the
layouts read from the real wheels on the development machine's package index: ``onnxruntime/capi/
libonnxruntime_providers_*.so`` with RUNPATH ``$ORIGIN``, ``tensorrt_libs/libnvinfer.so.10``,
``nvidia/cusparse/lib/libcusparse.so.12`` needing ``libnvJitLink.so.12`` through RUNPATH
``$ORIGIN/../../nvjitlink/lib``, torch's ``torch/lib/libtorch_cuda.so`` with DT_RPATH into the wheels). The
libraries are empty but for the sonames, search paths and symbols that matter. Where a verdict depends on the
machine having a GPU, the fact ``gpu.count`` is given as a stand-in (this machine has none), and the test says so.
Where the real loader can answer (``ctypes.CDLL`` loads with RTLD_NOW), the prediction is compared with it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List

import pytest
from click.testing import CliRunner

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok
from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host
from envdoctor.probes import run_probes

ENV = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "python%d.%d" % sys.version_info[:2]


def _gcc(cwd: str, *args: str) -> None:
    subprocess.run(["gcc", *args], cwd=cwd, env=ENV, check=True, timeout=60, capture_output=True)


def _lib(d: str, out: str, soname: str, source: str, *link: str) -> str:
    """A shared object compiled from ``source`` at ``d/out`` with ``soname`` (``link``: -L/-l/-Wl options)."""
    os.makedirs(os.path.dirname(os.path.join(d, out)), exist_ok=True)
    src = os.path.join(d, "src_%s.c" % abs(hash((out, source))))
    with open(src, "w") as fh:
        fh.write(source)
    # --no-as-needed: a library is NEEDED even when nothing of it is called (the real providers call into theirs)
    _gcc(d, "-shared", "-fPIC", "-o", out, "-Wl,-soname," + soname, src, "-Wl,--no-as-needed", *link)
    return os.path.join(d, out)


def _dist(site: str, name: str, version: str, requires: List[str] = (), record: List[str] = ()) -> None:
    info = os.path.join(site, "%s-%s.dist-info" % (name, version))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as fh:
        fh.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name.replace("_", "-"), version))
        for r in requires:
            fh.write("Requires-Dist: %s\n" % r)
        fh.write("\nA long description that a snapshot leaves out.\n")
    if record:
        with open(os.path.join(info, "RECORD"), "w") as fh:
            fh.write("".join("%s,,\n" % r for r in record))


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """A virtual environment whose site-packages holds ONNX Runtime's GPU package (CUDA and TensorRT providers),
    TensorRT 10's pip libraries, torch with its cuSPARSE and nvJitLink wheels, two torch extension packages (one
    built against this torch's libc10, one against an older one) and a CUDA torchvision; and a system CUDA 12.1
    lib64 with an older nvJitLink."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = str(tmp_path_factory.mktemp("machine"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(d, "venv")], check=True, timeout=120,
                   capture_output=True)
    site = os.path.join(d, "venv", "lib", PY, "site-packages")
    scratch = os.path.join(d, "scratch")
    os.makedirs(scratch)
    nothing = "int f(void) { return 0; }\n"
    # TensorRT 8 exists only to link the provider against (ORT 1.16's TensorRT provider needs libnvinfer.so.8)
    _lib(scratch, "libnvinfer.so.8", "libnvinfer.so.8", nothing)
    capi = os.path.join(site, "onnxruntime", "capi")
    _lib(capi, "libonnxruntime_providers_shared.so", "libonnxruntime_providers_shared.so", nothing)
    _lib(capi, "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_cuda.so", nothing,
         "-L.", "-l:libonnxruntime_providers_shared.so", "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN")
    _lib(capi, "libonnxruntime_providers_tensorrt.so", "libonnxruntime_providers_tensorrt.so", nothing,
         "-L.", "-l:libonnxruntime_providers_shared.so", "-L" + scratch, "-l:libnvinfer.so.8",
         "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN")
    # the format of onnxruntime 1.30.0's real file (tests/data/wheels), with a CUDA build's cuda_version
    with open(os.path.join(capi, "build_and_package_info.py"), "w") as fh:
        fh.write("package_name = 'onnxruntime-gpu'\n__version__ = '1.16.3'\ncuda_version = '11.8'\n")
    open(os.path.join(site, "onnxruntime", "__init__.py"), "w").close()
    _dist(site, "onnxruntime_gpu", "1.16.3", ["numpy (>=1.21.6)"])
    trt = _lib(os.path.join(site, "tensorrt_libs"), "libnvinfer.so.10", "libnvinfer.so.10", nothing)
    _dist(site, "tensorrt_cu12_libs", "10.0.1")
    # torch 2.5.1+cu124 with cuSPARSE 12.3 needing nvJitLink 12.4 from its wheel
    # CUDA's libraries version their symbols with their soname (real nvJitLink: __nvJitLinkCreate_13_0@@
    # libnvJitLink.so.13; cuSPARSE imports __nvJitLinkCreate_13_0@libnvJitLink.so.13): a linker version script does
    jit = os.path.join(site, "nvidia", "nvjitlink", "lib")
    vmap = os.path.join(scratch, "nvjitlink.map")
    with open(vmap, "w") as fh:
        fh.write("libnvJitLink.so.12 { global: *; };\n")
    _lib(jit, "libnvJitLink.so.12", "libnvJitLink.so.12", "int __nvJitLinkCreate_12_4(void) { return 0; }\n"
         "int __nvJitLinkCreate_12_1(void) { return 0; }\n", "-Wl,--version-script=" + vmap)
    cus = os.path.join(site, "nvidia", "cusparse", "lib")
    _lib(cus, "libcusparse.so.12", "libcusparse.so.12", "int __nvJitLinkCreate_12_4(void);\n"
         "int cusparseCreate(void) { return __nvJitLinkCreate_12_4(); }\n", "-L" + jit, "-l:libnvJitLink.so.12",
         "-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../../nvjitlink/lib")
    _dist(site, "nvidia_cusparse_cu12", "12.3.1.170", ["nvidia-nvjitlink-cu12"])
    _dist(site, "nvidia_nvjitlink_cu12", "12.4.127")
    lib = os.path.join(site, "torch", "lib")
    c10 = "int f_ok(void) __asm__(\"_ZN3c104impl6stableEv\"); int f_ok(void) { return 1; }\n"
    _lib(lib, "libc10.so", "libc10.so", c10)
    _lib(lib, "libtorch_cuda.so", "libtorch_cuda.so", "int cusparseCreate(void); int g(void) { return "
         "cusparseCreate(); }\n", "-L" + cus, "-l:libcusparse.so.12", "-Wl,-rpath-link," + jit,
         "-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../../nvidia/cusparse/lib")
    with open(os.path.join(site, "torch", "version.py"), "w") as fh:
        fh.write("__version__ = '2.5.1+cu124'\ndebug = False\ncuda = '12.4'\ngit_version = 'x'\nhip = None\n")
    open(os.path.join(site, "torch", "__init__.py"), "w").close()
    _dist(site, "torch", "2.5.1+cu124", ["nvidia-cusparse-cu12 (==12.3.1.170) ; platform_system == \"Linux\"",
                                         "nvidia-nvjitlink-cu12 (==12.4.127) ; platform_system == \"Linux\""])
    # extension packages: goodext imports a c10 symbol this libc10 has; badext one only an older libc10 had
    old = os.path.join(scratch, "oldc10")
    _lib(old, "libc10.so", "libc10.so", c10 + "int f_gone(void) __asm__(\"_ZN3c104impl4goneEv\"); "
         "int f_gone(void) { return 2; }\n")
    _lib(os.path.join(site, "goodext"), "_C.so", "_C.so", "int f_ok(void) __asm__(\"_ZN3c104impl6stableEv\");\n"
         "int use(void) { return f_ok(); }\n", "-L" + old, "-l:libc10.so")
    _lib(os.path.join(site, "badext"), "_C.so", "_C.so", "int f_gone(void) __asm__(\"_ZN3c104impl4goneEv\");\n"
         "int use(void) { return f_gone(); }\n", "-L" + old, "-l:libc10.so")
    _dist(site, "goodext", "1.0", ["torch"], ["goodext/_C.so"])
    _dist(site, "badext", "0.9", ["torch (==2.4.0)"], ["badext/_C.so"])
    # a system CUDA 12.1 whose nvJitLink is older than the wheel's
    sysdir = os.path.join(d, "cuda-12.1", "lib64")
    _lib(sysdir, "libnvJitLink.so.12.1.105", "libnvJitLink.so.12", "int __nvJitLinkCreate_12_1(void) { return 0; }\n",
         "-Wl,--version-script=" + vmap)
    os.symlink("libnvJitLink.so.12.1.105", os.path.join(sysdir, "libnvJitLink.so.12"))
    return {"dir": d, "site": site, "python": os.path.join(d, "venv", "bin", "python"), "capi": capi, "trt": trt,
            "sysdir": sysdir, "cusparse": os.path.join(cus, "libcusparse.so.12"), "lib": lib}


def _facts(m: Dict[str, str], monkeypatch: pytest.MonkeyPatch, ldp: str = "", gpu: bool = True,
           host: Any = None) -> Facts:
    """The probes' facts on the fixture machine (its interpreter inspected), plus the stand-in ``gpu.count``."""
    monkeypatch.setenv("LD_LIBRARY_PATH", ldp)
    host = host or LiveHost(timeout=20, python_executable=m["python"])
    facts = [f for r in run_probes(host, parallel=False, only=("os", "driver", "gpu", "cuda", "libraries", "python",
                                                                "frameworks", "requires", "linkage", "dlopen"))
             for f in r.facts]
    if gpu:  # stand-in: this machine has no GPU, the verdicts below concern one that has
        facts.append(ok("gpu.count", 1, "stand-in", "GPUs"))
    return Facts(facts)


def _findings(facts: Facts) -> List[Any]:
    return list(run_checks(CheckContext(facts, [])))


# -- ONNX Runtime: every execution provider --------------------------------------------------------------------

def test_the_tensorrt_provider_needing_tensorrt_8_beside_tensorrt_10_is_said(machine, monkeypatch) -> None:
    found = [f for f in _findings(_facts(machine, monkeypatch)) if f.code.startswith("linkage.")]
    wrong = [f for f in found if f.code == "linkage.wrong_major"]
    assert len(wrong) == 1, [f.title for f in found]
    f = wrong[0]
    assert f.severity == "warning" and f.components[:2] == ["tensorrt", "onnxruntime"]
    assert "libonnxruntime_providers_tensorrt.so" in f.title and "libnvinfer.so.8" in f.title
    assert "libnvinfer.so.10" in f.title and machine["trt"] in f.title and "onnxruntime-gpu 1.16.3" in f.title


def test_no_tensorrt_at_all_is_the_normal_state_and_says_nothing(machine, monkeypatch, tmp_path) -> None:
    hidden = str(tmp_path / "libnvinfer.so.10")
    shutil.move(machine["trt"], hidden)
    try:
        found = [f for f in _findings(_facts(machine, monkeypatch)) if f.code.startswith("linkage.")]
    finally:
        shutil.move(hidden, machine["trt"])
    assert not [f for f in found if "nvinfer" in f.title], [f.title for f in found]


def test_the_right_tensorrt_major_outside_the_loader_path_names_its_directory(machine, monkeypatch) -> None:
    """TensorRT 8 in tensorrt_libs (where no loader looks) for a provider needing libnvinfer.so.8."""
    extra = os.path.join(os.path.dirname(machine["trt"]), "libnvinfer.so.8")
    _lib(os.path.dirname(machine["trt"]), "libnvinfer.so.8", "libnvinfer.so.8", "int f(void) { return 0; }\n")
    try:
        found = [f for f in _findings(_facts(machine, monkeypatch)) if f.code == "linkage.missing"]
        again = [f for f in _findings(_facts(machine, monkeypatch, ldp=os.path.dirname(extra)))
                 if f.code.startswith("linkage.") and "nvinfer" in f.title]
    finally:
        os.unlink(extra)
    assert len(found) == 1 and found[0].severity == "warning" and extra in found[0].title
    assert found[0].fix.commands == ["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" %
                                     os.path.dirname(extra)]
    assert again == []  # on LD_LIBRARY_PATH it is found: nothing to say


def test_without_a_gpu_an_optional_provider_is_not_judged(machine, monkeypatch) -> None:
    found = [f for f in _findings(_facts(machine, monkeypatch, gpu=False)) if "nvinfer" in f.title]
    assert found == []


# -- a wheel library's own dependency -------------------------------------------------------------------------

def test_cusparse_taking_the_system_nvjitlink_from_ld_library_path_is_an_error(machine, monkeypatch) -> None:
    """torch 2.5's wheels and a system CUDA 12.1 lib64 first on LD_LIBRARY_PATH: the real loader takes 12.1's
    nvJitLink for cuSPARSE, which needs 12.4's."""
    facts = _facts(machine, monkeypatch, ldp=machine["sysdir"])
    found = [f for f in _findings(facts) if "libnvJitLink.so.12" in f.title]
    assert len(found) == 1, [(f.code, f.title) for f in found]  # one finding, not one per check that sees it
    f = found[0]
    assert f.severity == "error" and "12.1.105" in f.title and "12.4.127" in f.title
    assert "__nvJitLinkCreate_12_4" in f.detail  # the symbol the real loader names, read from the symbol tables
    assert machine["sysdir"] in f.fix.commands[0]
    # the real loader agrees on the file
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL(%r)" % machine["cusparse"]],
                          env=dict(ENV, LD_LIBRARY_PATH=machine["sysdir"]), capture_output=True, text=True, timeout=30)
    assert "undefined symbol: __nvJitLinkCreate_12_4" in real.stderr


def test_a_newer_system_nvjitlink_that_exports_what_cusparse_calls_is_only_a_warning(machine, monkeypatch,
                                                                                       tmp_path) -> None:
    """A system CUDA 12.6 first on LD_LIBRARY_PATH: not the shipped copy, but it exports every symbol cuSPARSE
    imports of it (read from both symbol tables), so cuSPARSE loads."""
    newer = str(tmp_path / "lib64")
    vmap = str(tmp_path / "v.map")
    with open(vmap, "w") as fh:
        fh.write("libnvJitLink.so.12 { global: *; };\n")
    _lib(newer, "libnvJitLink.so.12.6.85", "libnvJitLink.so.12", "int __nvJitLinkCreate_12_4(void) { return 0; }\n"
         "int __nvJitLinkCreate_12_6(void) { return 0; }\n", "-Wl,--version-script=" + vmap)
    os.symlink("libnvJitLink.so.12.6.85", os.path.join(newer, "libnvJitLink.so.12"))
    found = [f for f in _findings(_facts(machine, monkeypatch, ldp=newer)) if "libnvJitLink.so.12" in f.title]
    assert [(f.code, f.severity) for f in found] == [("cuda.shadowed", "warning")]
    real = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL(%r)" % machine["cusparse"]],
                          env=dict(ENV, LD_LIBRARY_PATH=newer), capture_output=True, text=True, timeout=30)
    assert real.returncode == 0, real.stderr


def test_the_same_machine_without_ld_library_path_is_quiet(machine, monkeypatch) -> None:
    found = [f for f in _findings(_facts(machine, monkeypatch)) if "nvJitLink" in f.title or "cusparse" in f.title]
    assert found == []


def test_without_the_elf_record_or_the_loader_cache_the_wheel_metadata_still_tells(machine, monkeypatch) -> None:
    """A snapshot whose cuSPARSE dynamic section and loader cache were not recorded (a machine rebuilt from a bug
    report): cuSPARSE's needs are modelled from its wheel's Requires-Dist (nvidia-nvjitlink-cu12), and
    LD_LIBRARY_PATH comes before the cache whatever the cache holds."""
    monkeypatch.setenv("LD_LIBRARY_PATH", machine["sysdir"])
    live = LiveHost(timeout=20, python_executable=machine["python"])
    _facts(machine, monkeypatch, ldp=machine["sysdir"], host=live)
    doc = json.loads(json.dumps(document_from_host(live, Scrubber(include_host=True), "test")))
    doc["elf"].pop(machine["cusparse"])
    doc["files"].pop("/etc/ld.so.cache", None)
    doc["commands"] = [c for c in doc["commands"] if "ldconfig" not in c["argv"][0]]
    facts = _facts(machine, monkeypatch, ldp=machine["sysdir"], host=SnapshotHost(doc, "edited"))
    links = facts.value("linkage.nvidia_wheels")
    assert isinstance(links, list) and links[0].get("modelled") and links[0]["via"] == "LD_LIBRARY_PATH"
    found = [f for f in _findings(facts) if "libnvJitLink.so.12" in f.title]
    assert len(found) == 1 and found[0].severity == "error"


# -- torch extension modules -----------------------------------------------------------------------------------

def test_an_extension_built_against_another_libc10_is_predicted_to_fail_as_the_loader_fails(machine,
                                                                                           monkeypatch) -> None:
    facts = _facts(machine, monkeypatch, gpu=False)
    sym = [f for f in _findings(facts) if f.code == "framework.extension_abi_mismatch"]
    assert len(sym) == 1 and sym[0].severity == "error"
    assert "badext 0.9" in sym[0].title and "_ZN3c104impl4goneEv" in sym[0].detail
    assert "goodext" not in " ".join(f.title for f in sym)
    # the real loader: torch's libc10 loaded first (as import torch does), then each extension
    code = ("import ctypes, sys\nctypes.CDLL(%r, mode=ctypes.RTLD_GLOBAL)\nfor p in sys.argv[1:]:\n"
            "    try:\n        ctypes.CDLL(p); print('ok', p)\n    except OSError as e:\n        print('fail', e)\n"
            % os.path.join(machine["lib"], "libc10.so"))
    real = subprocess.run([sys.executable, "-c", code, os.path.join(machine["site"], "goodext", "_C.so"),
                           os.path.join(machine["site"], "badext", "_C.so")], env=ENV, capture_output=True, text=True,
                          timeout=30).stdout
    assert "ok " + os.path.join(machine["site"], "goodext", "_C.so") in real
    assert "undefined symbol: _ZN3c104impl4goneEv" in real


def test_a_cuda_extension_on_a_torch_without_its_cuda_library_fails_on_any_machine(machine, monkeypatch,
                                                                                   tmp_path) -> None:
    tv = os.path.join(machine["site"], "torchvision")
    scratch = str(tmp_path)
    _lib(scratch, "libc10_cuda.so", "libc10_cuda.so", "int f(void) { return 0; }\n")
    _lib(tv, "_C.so", "_C.so", "int f(void); int g(void) { return f(); }\n", "-L" + scratch, "-l:libc10_cuda.so")
    _dist(machine["site"], "torchvision", "0.20.1+cu124", ["torch (==2.5.1)"], ["torchvision/_C.so"])
    try:
        found = [f for f in _findings(_facts(machine, monkeypatch, gpu=False)) if "torchvision" in f.title]
    finally:
        shutil.rmtree(tv)
        shutil.rmtree(os.path.join(machine["site"], "torchvision-0.20.1+cu124.dist-info"))
    assert [f.code for f in found] == ["cuda.framework_cannot_load"] and found[0].severity == "error"
    assert "libc10_cuda.so" in found[0].title


# -- envdoctor libs --------------------------------------------------------------------------------------------

def _libs(*args: str) -> Any:
    from envdoctor.cli import cli

    return CliRunner().invoke(cli, ["libs", *args])


def test_libs_on_the_provider_names_each_library_and_exits_1(machine) -> None:
    r = _libs(os.path.join(machine["capi"], "libonnxruntime_providers_tensorrt.so"), "--ld-library-path", "")
    assert r.exit_code == 1, r.output
    assert "libnvinfer.so.8: not found" in r.output and "libnvinfer.so.10" in r.output
    assert "ERROR" in r.output
    # 80 columns into a pipe, but for a path longer than the line (never cut)
    assert all(len(line) <= 80 or " " not in line.strip() for line in r.output.splitlines())


def test_libs_json_follows_its_schema_and_says_what_the_loader_takes(machine) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with open(os.path.join(ROOT, "envdoctor", "schemas", "libs.schema.json"), encoding="utf-8") as fh:
        schema = json.load(fh)
    r = _libs(os.path.join(machine["lib"], "libtorch_cuda.so"), "--ld-library-path", machine["sysdir"],
              "--format", "json")
    doc = json.loads(r.output)
    jsonschema.validate(doc, schema)
    libs = {lk["soname"]: lk for lk in doc["programs"][0]["libraries"]}
    assert libs["libcusparse.so.12"]["via"] == "RPATH" and libs["libcusparse.so.12"]["version"] == "12.3.1.170"
    jit = libs["libnvJitLink.so.12"]
    assert jit["via"] == "LD_LIBRARY_PATH" and jit["version"] == "12.1.105" and jit["shadowed"]
    assert jit["expected_version"] == "12.4.127" and jit["requester"] == machine["cusparse"]
    assert [f["code"] for f in doc["findings"]] == ["linkage.older_than_shipped"] and r.exit_code == 1
    quiet = _libs(os.path.join(machine["lib"], "libtorch_cuda.so"), "--ld-library-path", "")
    assert quiet.exit_code == 0 and "Every CUDA library it needs is found" in quiet.output


def test_libs_on_a_directory_judges_each_shared_object_in_it(machine) -> None:
    r = _libs(machine["capi"], "--ld-library-path", "", "--format", "json")
    doc = json.loads(r.output)
    assert sorted(os.path.basename(p["path"]) for p in doc["programs"]) == [
        "libonnxruntime_providers_cuda.so", "libonnxruntime_providers_shared.so",
        "libonnxruntime_providers_tensorrt.so"]
    assert [f["code"] for f in doc["findings"]] == ["linkage.wrong_major"] and r.exit_code == 1


def test_libs_refuses_what_it_cannot_read(machine, tmp_path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    r = _libs(str(text))
    assert r.exit_code == 2 and "not an ELF" in r.output
    r = _libs(str(tmp_path / "nothing.so"))
    assert r.exit_code == 2 and "no such file" in r.output


def test_libs_replays_a_snapshot_as_the_live_run_answered(machine, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("LD_LIBRARY_PATH", machine["sysdir"])
    from envdoctor.cli.libs import build
    from envdoctor.probes import loader

    live = LiveHost(timeout=20)
    path = os.path.join(machine["lib"], "libtorch_cuda.so")
    first = build(live, loader.loader_config(live), [path], None)
    doc = document_from_host(live, Scrubber(include_host=True), "test")
    assert doc["elf_names"]  # the names each library holds were recorded
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(doc))
    r = _libs(path, "--snapshot", str(snap), "--format", "json")
    again = json.loads(r.output)
    assert again["programs"] == first["programs"] and again["findings"] == first["findings"]


def test_the_symbol_lookup_replays_from_a_snapshot(machine) -> None:
    live = LiveHost(timeout=20)
    ext = os.path.join(machine["site"], "badext", "_C.so")
    providers = [os.path.join(machine["lib"], "libc10.so")]
    res = live.elf_unresolved(ext, providers)
    assert res.ok and res.missing == (("_ZN3c104impl4goneEv", None),)
    doc = json.loads(json.dumps(document_from_host(live, Scrubber(include_host=True), "test")))
    assert SnapshotHost(doc, "s").elf_unresolved(ext, providers) == res
    assert SnapshotHost(doc, "s").elf_unresolved(ext, providers + ["/other"]).error == "not_recorded"


# -- nvidia-tensorflow 1.15 with a system CUDA first on LD_LIBRARY_PATH -----------------------------------------

@pytest.fixture
def nvtf(tmp_path) -> Dict[str, str]:
    """nvidia-tensorflow 1.15.5+nv22.10 (CUDA 11.8 by NVIDIA's release notes; its build information names no CUDA,
    as TF 1.15's does not) in a venv, with the CUDA runtime wheel it requires, and a system CUDA 11.2 lib64."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = str(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(d, "venv")], check=True, timeout=120,
                   capture_output=True)
    site = os.path.join(d, "venv", "lib", PY, "site-packages")
    nothing = "int f(void) { return 0; }\n"
    core = os.path.join(site, "tensorflow_core")
    _lib(core, "libtensorflow_framework.so.1", "libtensorflow_framework.so.1", nothing)
    os.makedirs(os.path.join(core, "python", "platform"))
    with open(os.path.join(core, "python", "platform", "build_info.py"), "w") as fh:
        fh.write("is_rocm_build = False\nis_cuda_build = True\n")  # TF 1.15's whole file on Linux
    _dist(site, "nvidia_tensorflow", "1.15.5+nv22.10", ["nvidia-cuda-runtime-cu11 (==11.8.89)"])
    rt = os.path.join(site, "nvidia", "cuda_runtime", "lib")
    _lib(rt, "libcudart.so.11.0", "libcudart.so.11.0", nothing)
    _dist(site, "nvidia_cuda_runtime_cu11", "11.8.89")
    sysdir = os.path.join(d, "cuda-11.2", "lib64")
    _lib(sysdir, "libcudart.so.11.2.152", "libcudart.so.11.0", nothing)
    os.symlink("libcudart.so.11.2.152", os.path.join(sysdir, "libcudart.so.11.0"))
    return {"python": os.path.join(d, "venv", "bin", "python"), "sysdir": sysdir, "site": site, "rt": rt}


def test_nvidia_tensorflow_taking_the_system_cuda_runtime_before_its_wheel_is_an_error(nvtf, monkeypatch) -> None:
    facts = _facts(nvtf, monkeypatch, ldp=nvtf["sysdir"])  # gpu.count: a stand-in (no GPU here)
    found = [f for f in _findings(facts) if "libcudart.so.11.0" in f.title]
    assert [(f.code, f.severity) for f in found] == [("cuda.shadowed", "error")], [f.title for f in found]
    assert "11.2.152" in found[0].title and "11.8.89" in found[0].title and "1.15.5+nv22.10" in found[0].title
    assert [f for f in _findings(_facts(nvtf, monkeypatch)) if "libcudart" in f.title] == []


def test_without_its_wheel_the_release_notes_cuda_tells_the_runtime_is_older(nvtf, monkeypatch) -> None:
    shutil.rmtree(nvtf["rt"])
    shutil.rmtree(os.path.join(nvtf["site"], "nvidia_cuda_runtime_cu11-11.8.89.dist-info"))
    found = [f for f in _findings(_facts(nvtf, monkeypatch, ldp=nvtf["sysdir"])) if "libcudart.so.11.0" in f.title]
    assert [(f.code, f.severity) for f in found] == [("cuda.runtime_older_than_framework", "warning")]
    assert "its build's CUDA 11.8" in found[0].title


def test_a_tensorflow_extension_built_against_another_tensorflow_is_predicted_to_fail(tmp_path, monkeypatch) -> None:
    """tensorflow-text-like: a module needing libtensorflow_framework.so.2 and a tensorflow:: symbol this
    TensorFlow's framework library no longer exports (both compiled here)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = str(tmp_path)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", os.path.join(d, "venv")], check=True, timeout=120,
                   capture_output=True)
    site = os.path.join(d, "venv", "lib", PY, "site-packages")
    tf = os.path.join(site, "tensorflow")
    old = os.path.join(d, "old")
    keep = "int a(void) __asm__(\"_ZN10tensorflow6kernel4keepEv\"); int a(void) { return 1; }\n"
    gone = "int b(void) __asm__(\"_ZN10tensorflow6kernel4goneEv\"); int b(void) { return 2; }\n"
    _lib(old, "libtensorflow_framework.so.2", "libtensorflow_framework.so.2", keep + gone)
    _lib(tf, "libtensorflow_framework.so.2", "libtensorflow_framework.so.2", keep)
    os.makedirs(os.path.join(tf, "python", "platform"))
    with open(os.path.join(tf, "python", "platform", "build_info.py"), "w") as fh:
        fh.write("build_info = {'is_cuda_build': False, 'is_rocm_build': False}\n")
    open(os.path.join(tf, "__init__.py"), "w").close()
    _dist(site, "tensorflow_cpu", "2.16.1")
    uses = ("int a(void) __asm__(\"_ZN10tensorflow6kernel4keepEv\"); int b(void) __asm__(\"_ZN10tensorflow6kernel4go"
            "neEv\");\nint use(void) { return a() + b(); }\n")
    _lib(os.path.join(site, "tensorflow_text", "python", "ops"), "_ops.so", "_ops.so", uses, "-L" + old,
         "-l:libtensorflow_framework.so.2")
    _dist(site, "tensorflow_text", "2.15.0", ["tensorflow (<2.16,>=2.15.0)"], ["tensorflow_text/python/ops/_ops.so"])
    found = [f for f in _findings(_facts({"python": os.path.join(d, "venv", "bin", "python")}, monkeypatch,
                                         gpu=False)) if f.code == "framework.extension_abi_mismatch"]
    assert len(found) == 1 and found[0].components == ["tensorflow"]
    assert "tensorflow_text 2.15.0" in found[0].title or "tensorflow-text 2.15.0" in found[0].title
    assert "_ZN10tensorflow6kernel4goneEv" in found[0].detail


def test_libs_on_a_path_that_blocks_when_read_ends_within_its_timeout(tmp_path) -> None:
    """A FIFO named like a library (opening it blocks until a writer comes): exit 2 within --timeout + 1 s."""
    import time

    fifo = str(tmp_path / "libcudart.so.12")
    os.mkfifo(fifo)
    started = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "envdoctor", "libs", fifo, "--timeout", "1"], capture_output=True,
                       text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and "did not finish within --timeout" in r.stderr
    assert time.monotonic() - started < 15  # interpreter start-up included

"""Library checks: the linkage probe resolving a real torch wheel's DT_RPATH, and the checks on it.

torch's libtorch_cuda.so from PyPI carries DT_RPATH $ORIGIN/../../nvidia/<lib>/lib:...:$ORIGIN
(pytorch/pytorch .ci/manywheel/build_cuda.sh: CUDA_RPATHS + FORCE_RPATH="--force-rpath"), and NEEDS
libcudnn.so.9 (torch 2.4 pins nvidia-cudnn-cu12==9.1.0.70, METADATA in test_probe_frameworks).
"""

from __future__ import annotations

import envdoctor.probes.linkage  # noqa: F401 - registers the linkage probe (until the lead lists it)
from envdoctor.checks import CheckContext
from envdoctor.checks.libraries import cudnn_version, framework_linkage
from envdoctor.checks.libraries.wheels import nvidia_wheel_links, onnxruntime_packaging
from envdoctor.probes.loader import expand_origin

from .conftest import make_host, probe_facts
from .test_probe_frameworks import SITE, TORCH_240_CU121_VERSION_PY, TORCH_240_METADATA, site_host

LIB = SITE + "/torch/lib"
RPATH = ["$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN/../../nvidia/cublas/lib:$ORIGIN"]
NEEDED = ["libc10_cuda.so", "libcudart.so.12", "libcublas.so.12", "libcudnn.so.9", "libnccl.so.2", "libc10.so"]


def torch_host(cudnn_wheel=True, ldp=None, system_cudnn=None):
    files = {"torch-2.4.0+cu121.dist-info/METADATA": TORCH_240_METADATA,
             "torch/version.py": TORCH_240_CU121_VERSION_PY, "torch/lib/libtorch_cuda.so": "",
             "nvidia/cublas/lib/libcublas.so.12": "", "nvidia/nccl/lib/libnccl.so.2": "",
             "nvidia_cublas_cu12-12.1.3.1.dist-info/METADATA": "Name: nvidia-cublas-cu12\nVersion: 12.1.3.1\n"}
    if cudnn_wheel:
        files["nvidia/cudnn/lib/libcudnn.so.9"] = ""
        files["nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA"] = "Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n"
    host = site_host(files)
    # the CUDA runtime: system toolkit, through the loader cache is not needed here; put it in torch/lib
    host.doc["files"][LIB + "/libcudart.so.12"] = {"text": ""}
    host.doc["dirs"][LIB]["entries"].append("libcudart.so.12")
    if system_cudnn:
        d, real = system_cudnn
        host.doc["dirs"].setdefault(d, {"entries": []})["entries"] += ["libcudnn.so.9", real]
        host.doc["links"][d + "/libcudnn.so.9"] = {"target": real}
    if ldp:
        host.doc["environ"]["LD_LIBRARY_PATH"] = ldp
    host.doc["elf"] = {LIB + "/libtorch_cuda.so": {"soname": "libtorch_cuda.so", "needed": NEEDED, "rpath": RPATH,
                                                   "runpath": []}}
    # Every glibc machine has a loader cache; this one lists only libc (glibc's `ldconfig -p` format).
    host.doc["files"]["/sbin/ldconfig"] = {"text": ""}
    host.doc["dirs"]["/sbin"] = {"entries": ["ldconfig"]}
    host.doc["dirs"]["/"]["entries"].append("sbin")
    host.doc.setdefault("commands", []).append({
        "argv": ["/sbin/ldconfig", "-p"], "returncode": 0,
        "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                  "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"})
    return type(host)(host.doc)


def run(host, fn):
    return {f.code: f for f in fn(CheckContext(probe_facts(host), []))}


def test_expand_origin():
    assert expand_origin(["$ORIGIN/../../nvidia/cudnn/lib:${ORIGIN}"], LIB) == [SITE + "/nvidia/cudnn/lib", LIB]


def test_healthy_torch_wheel_is_quiet_and_rpath_beats_ld_library_path():
    host = torch_host(ldp="/usr/local/cuda/lib64", system_cudnn=("/usr/local/cuda/lib64", "libcudnn.so.9.0.0"))
    facts = probe_facts(host)
    cudnn = [e for e in facts.value("linkage.torch") if e["soname"] == "libcudnn.so.9"][0]
    assert cudnn["via"] == "RPATH" and cudnn["path"] == SITE + "/nvidia/cudnn/lib/libcudnn.so.9"
    assert not cudnn["shadowed"]
    ctx = CheckContext(facts, [])
    assert list(framework_linkage(ctx)) == [] and list(cudnn_version(ctx)) == []


def test_old_system_cudnn_used_when_the_wheel_is_missing():
    host = torch_host(cudnn_wheel=False, ldp="/usr/local/cuda/lib64",
                      system_cudnn=("/usr/local/cuda/lib64", "libcudnn.so.9.0.0"))
    f = run(host, cudnn_version)["cudnn.too_old_for_framework"]
    assert f.severity == "error" and "9.1.0.70" in f.title and "9.0.0" in f.title
    assert f.fix.commands == ["pip install 'nvidia-cudnn-cu12==9.1.0.70'"]


def test_cudnn_nowhere_cannot_be_loaded():
    f = run(torch_host(cudnn_wheel=False), framework_linkage)["cudnn.framework_cannot_load"]
    assert f.severity == "error" and "libcudnn.so.9" in f.title and "torch 2.4.0+cu121" in f.title


def test_onnxruntime_cpu_and_gpu_together():
    # dist-info names of the two PyPI wheels (https://pypi.org/project/onnxruntime-gpu/1.19.2/).
    files = {"onnxruntime-1.19.2.dist-info/METADATA": "Name: onnxruntime\nVersion: 1.19.2\n",
             "onnxruntime_gpu-1.19.2.dist-info/METADATA": "Name: onnxruntime-gpu\nVersion: 1.19.2\n"}
    f = run(site_host(files), onnxruntime_packaging)["onnxruntime.cpu_and_gpu_installed"]
    assert f.fix.commands[0] == "pip uninstall -y onnxruntime onnxruntime-gpu"
    alone = {k: v for k, v in files.items() if "gpu" in k}
    assert "onnxruntime.cpu_and_gpu_installed" not in run(site_host(alone), onnxruntime_packaging)


# -- cuDNN vs the GPU's compute capability ----------------------------------------------------------
# cuDNN 9.11 dropped Maxwell, Pascal and Volta (cudnn.json 9.11.0 row; immich-app/immich#23110 is the
# user report this replays: onnxruntime-gpu pulled nvidia-cudnn-cu12 9.14 onto GTX 10-series cards).

def _with_gpu(host, cc, name):
    from envdoctor.facts import ok
    facts = probe_facts(host)
    for f in (ok("gpu.count", 1, "nvml:device_count"), ok("gpu.0.name", name, "nvml:device.0.name"),
              ok("gpu.0.compute_capability", cc, "nvml:device.0.compute_capability")):
        facts.add(f)
    return CheckContext(facts, [])


def _ort_host(cudnn):
    # dist-info names and versions as pip writes them for onnxruntime-gpu 1.23.0 and nvidia-cudnn-cu12
    return site_host({"onnxruntime_gpu-1.23.0.dist-info/METADATA": "Name: onnxruntime-gpu\nVersion: 1.23.0\n",
                      "onnxruntime/__init__.py": "", "nvidia/cudnn/lib/libcudnn.so.9": "",
                      "nvidia_cudnn_cu12-%s.dist-info/METADATA" % cudnn:
                          "Name: nvidia-cudnn-cu12\nVersion: %s\n" % cudnn})


def test_cudnn_9_14_wheel_on_a_pascal_gpu_is_named_with_the_last_cudnn_that_works():
    from envdoctor.checks.libraries.cudnn_gpu import cudnn_gpu
    found = list(cudnn_gpu(_with_gpu(_ort_host("9.14.0.64"), "6.1", "NVIDIA GeForce GTX 1080")))
    assert [f.code for f in found] == ["cudnn.gpu_unsupported"]
    f = found[0]
    assert "cuDNN 9.14.0.64" in f.title and "onnxruntime 1.23.0" in f.title and "GTX 1080" in f.title
    assert "needs 7.5 or newer" in f.title
    # the 9.11.0 row is not checked against NVIDIA's own table yet: a warning, not an error
    assert f.severity == "warning"
    assert f.fix.commands == ["pip install 'nvidia-cudnn-cu12<9.11'"] and "9.10.2" in f.fix.text
    assert {"libraries.cudnn", "gpu.0.compute_capability"} <= {e["key"] for e in f.evidence}


def test_cudnn_9_10_on_pascal_and_9_14_on_turing_are_quiet():
    from envdoctor.checks.libraries.cudnn_gpu import cudnn_gpu
    assert list(cudnn_gpu(_with_gpu(_ort_host("9.10.2.21"), "6.1", "NVIDIA GeForce GTX 1080"))) == []
    assert list(cudnn_gpu(_with_gpu(_ort_host("9.14.0.64"), "7.5", "Tesla T4"))) == []


def test_system_cudnn_a_framework_links_is_judged_by_its_own_version():
    # torch loads the system copy (no wheel); a Volta V100 (7.0) with cuDNN 9.14 from the system
    from envdoctor.checks.libraries.cudnn_gpu import cudnn_gpu
    host = torch_host(cudnn_wheel=False, ldp="/usr/local/cuda/lib64",
                      system_cudnn=("/usr/local/cuda/lib64", "libcudnn.so.9.14.0"))
    found = list(cudnn_gpu(_with_gpu(host, "7.0", "Tesla V100-SXM2-16GB")))
    assert len(found) == 1
    assert "/usr/local/cuda/lib64/libcudnn.so.9.14.0" in found[0].title
    assert "torch 2.4.0+cu121" in found[0].title


# -- the ld.so cache unread: "not found" must not become a false error --------------------------------
def _cudart_only_in_the_cache(ldconfig):
    """torch's libcudart.so.12 lives in /usr/local/cuda-12.1/lib64, which only the ld.so cache lists."""
    host = torch_host()
    del host.doc["files"][LIB + "/libcudart.so.12"]
    host.doc["dirs"][LIB]["entries"].remove("libcudart.so.12")
    host.doc["files"]["/usr/local/cuda-12.1/lib64/libcudart.so.12"] = {"text": ""}
    host.doc["dirs"]["/usr/local/cuda-12.1/lib64"] = {"entries": ["libcudart.so.12"]}
    host.doc["commands"] = [c for c in host.doc["commands"] if c["argv"][0] != "/sbin/ldconfig"]
    host.doc["commands"].append(dict(ldconfig, argv=["/sbin/ldconfig", "-p"]))
    return type(host)(host.doc)


_CACHE_HEADER = "{} libs found in cache `/etc/ld.so.cache'\n"
_CUDART_LINE = "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12.1/lib64/libcudart.so.12\n"


def test_a_library_the_cache_lists_is_found():
    host = _cudart_only_in_the_cache({"returncode": 0, "stdout": _CACHE_HEADER.format(1) + _CUDART_LINE})
    assert "cuda.framework_cannot_load" not in run(host, framework_linkage)


def test_an_unreadable_or_truncated_cache_turns_cannot_load_into_a_warning_that_says_why():
    """Found by the peer comparison's truncated `ldconfig -p`: the probe took 2 of 536 entries as the whole
    cache, and a library only the cache lists became an error, 'the loader finds no such file'."""
    cases = {
        "truncated": ({"returncode": 0, "stdout": _CACHE_HEADER.format(536) + "\tlibc.so.6 (libc6,x86-64) => "
                       "/lib/x86_64-linux-gnu/libc.so.6\n"}, "listed 1 of the 536 entries"),
        "failed": ({"returncode": 1, "stderr": "ldconfig: Can't open cache file /etc/ld.so.cache\n"},
                   "Can't open cache file"),
        "hung": ({"timed_out": True, "duration": 10.0}, "timed out"),
    }
    for name, (ldconfig, why) in cases.items():
        host = _cudart_only_in_the_cache(ldconfig)
        facts = probe_facts(host)
        assert not facts.get("libraries.ld_cache").known, name
        f = run(host, framework_linkage)["cuda.framework_cannot_load"]
        assert f.severity == "warning", name
        assert "could not be read" in f.title and why in f.detail, (name, f.detail)
        assert f.fix.commands[0] == "ldconfig -p | grep -F 'libcudart.so.12'"


def test_runpath_wheel_shadowed_by_ld_library_path_names_both_copies_and_why():
    # the same wheel linked with DT_RUNPATH (torch 1.13.0's cu117 wheels: pytorch/builder#1150, #1183): LD_LIBRARY_PATH
    # is searched first, so the older system cuDNN wins over the pinned wheel
    host = torch_host(ldp="/usr/local/cuda/lib64", system_cudnn=("/usr/local/cuda/lib64", "libcudnn.so.9.0.0"))
    host.doc["elf"][LIB + "/libtorch_cuda.so"].update(rpath=[], runpath=RPATH)
    host = type(host)(host.doc)
    shadowed = run(host, framework_linkage)["cudnn.shadowed"]
    text = shadowed.title + " " + shadowed.detail
    assert "9.0.0" in shadowed.title and "/usr/local/cuda/lib64/libcudnn.so.9.0.0" in shadowed.title
    assert SITE + "/nvidia/cudnn/lib/libcudnn.so.9" in text and "9.1.0.70" in text  # the copy that loses
    assert "searched before a library's RUNPATH" in text
    old = run(host, cudnn_version)["cudnn.too_old_for_framework"]
    assert old.severity == "error" and "9.0.0" in old.title and "via LD_LIBRARY_PATH" in old.title
    assert SITE + "/nvidia/cudnn/lib/libcudnn.so.9" in old.detail and "9.1.0.70" in old.detail
    assert "/usr/local/cuda/lib64" in old.fix.commands[0] and "grep -vx" in old.fix.commands[0]


def _split_cudnn_host(wheel_parts, system_version="9.23.0"):
    """torch's cuDNN 9.1.0.70 wheel holding ``wheel_parts`` beside libcudnn.so.9, and a system cuDNN 9 on
    LD_LIBRARY_PATH whose directory holds libcudnn_graph and libcudnn_engines_tensor_ir of ``system_version``
    (pytorch/pytorch#185512: the nvidia-cudnn-cu13 9.20 wheel lacks libcudnn_engines_tensor_ir.so.9)."""
    host = torch_host(ldp="/opt/cudnn/lib", system_cudnn=("/opt/cudnn/lib", "libcudnn.so.%s" % system_version))
    wheel = SITE + "/nvidia/cudnn/lib"
    for name in wheel_parts:
        host.doc["files"]["%s/%s" % (wheel, name)] = {"text": ""}
        host.doc["dirs"][wheel]["entries"].append(name)
    for name in ("libcudnn_graph.so.9", "libcudnn_engines_tensor_ir.so.9"):
        real = name + system_version[1:]
        host.doc["dirs"]["/opt/cudnn/lib"]["entries"] += [name, real]
        host.doc["links"]["/opt/cudnn/lib/" + name] = {"target": real}
    return type(host)(host.doc)


def test_a_cudnn_sublibrary_the_wheel_lacks_comes_from_another_cudnn_and_is_an_error():
    f = run(_split_cudnn_host(["libcudnn_graph.so.9"]), framework_linkage)["cudnn.shadowed"]
    assert f.severity == "error" and "libcudnn_engines_tensor_ir.so.9" in f.title and "9.1.0.70" in f.title
    assert "libcudnn_graph" not in f.title and "9.23.0" in f.detail and "SUBLIBRARY_VERSION_MISMATCH" in f.detail
    assert "/opt/cudnn/lib" in f.fix.commands[0]
    # a complete wheel, or a system copy of the same version, is quiet
    assert run(_split_cudnn_host(["libcudnn_graph.so.9", "libcudnn_engines_tensor_ir.so.9"]),
               framework_linkage) == {}
    assert run(_split_cudnn_host(["libcudnn_graph.so.9"], "9.1.0.70"), framework_linkage) == {}


def _extension_host(needed):
    """torch 2.4.0+cu121 (its libcudart.so.12 in torch/lib) and vllm whose compiled module links ``needed``
    (vllm-project/vllm#1718: vllm 0.2.2's CUDA 12.1 module next to a CUDA 11.8 torch)."""
    host = torch_host()
    mod = SITE + "/vllm/_C.abi3.so"
    for path in (mod, SITE + "/vllm-0.2.2.dist-info/METADATA"):
        host.doc["files"][path] = {"text": "Name: vllm\nVersion: 0.2.2\n" if path.endswith("METADATA") else ""}
    host.doc["dirs"][SITE + "/vllm"] = {"entries": ["_C.abi3.so"]}
    host.doc["dirs"][SITE + "/vllm-0.2.2.dist-info"] = {"entries": ["METADATA"]}
    host.doc["dirs"][SITE]["entries"] += ["vllm", "vllm-0.2.2.dist-info"]
    host.doc["elf"][mod] = {"soname": None, "needed": needed, "rpath": [], "runpath": []}
    return type(host)(host.doc)


def test_an_extension_built_for_another_cuda_than_torch_cannot_load():
    found = {f.code: f for f in framework_linkage(_with_gpu(_extension_host(["libcudart.so.11.0", "libc.so.6"]),
                                                            "8.0", "NVIDIA A100-SXM4-80GB"))}
    f = found["cuda.framework_cannot_load"]
    assert f.severity == "error" and "vllm 0.2.2" in f.title and "libcudart.so.11.0" in f.title
    assert "CUDA 11, the framework for CUDA 12.1" in f.detail and "CUDA 12.1" in f.fix.text
    # the runtime torch itself loads satisfies the extension
    ok_ctx = _with_gpu(_extension_host(["libcudart.so.12", "libc.so.6"]), "8.0", "NVIDIA A100-SXM4-80GB")
    assert [f for f in framework_linkage(ok_ctx) if f.code == "cuda.framework_cannot_load"] == []


# -- a fat wheel with one module per CUDA build -------------------------------------------------------------
#: fussim 0.3.10's wheel (fussim-0.3.10-cp312-cp312-manylinux_2_28_x86_64.whl from PyPI, readelf -d): one module per
#: CUDA build, _cuda_cu118 linking libcudart.so.11.0, _cuda_cu124/_cu126/_cu128 linking libcudart.so.12; its
#: __init__.py imports the one for torch.version.cuda ("cu{major}{minor}"), else tries each in turn.
FUSSIM_MODULES = {"_cuda_cu118": "libcudart.so.11.0", "_cuda_cu124": "libcudart.so.12",
                  "_cuda_cu126": "libcudart.so.12", "_cuda_cu128": "libcudart.so.12"}


def _fat_wheel_host(modules, cuda_runtime_in_torch=True, cuda_runtime_wheel=False):
    host = _extension_host(["libc.so.6"])
    names = []
    for stem, cudart in modules.items():
        name = stem + ".cpython-312-x86_64-linux-gnu.so"
        path = SITE + "/fussim/" + name
        names.append(name)
        host.doc["files"][path] = {"text": ""}
        host.doc["elf"][path] = {"soname": None, "needed": ["libc10.so", "libc10_cuda.so", cudart, "libc.so.6"],
                                 "rpath": [], "runpath": []}
    host.doc["files"][SITE + "/fussim-0.3.10.dist-info/METADATA"] = {
        "text": "Name: fussim\nVersion: 0.3.10\nRequires-Dist: torch>=2.0\n"}
    host.doc["files"][SITE + "/fussim-0.3.10.dist-info/RECORD"] = {
        "text": "".join("fussim/%s,sha256=x,1\n" % n for n in names)}
    host.doc["dirs"][SITE + "/fussim"] = {"entries": names}
    host.doc["dirs"][SITE + "/fussim-0.3.10.dist-info"] = {"entries": ["METADATA", "RECORD"]}
    host.doc["dirs"][SITE]["entries"] += ["fussim", "fussim-0.3.10.dist-info"]
    for lib in ("libc10.so", "libc10_cuda.so"):
        host.doc["files"][LIB + "/" + lib] = {"text": ""}
        host.doc["dirs"][LIB]["entries"].append(lib)
    if not cuda_runtime_in_torch:
        host.doc["dirs"][LIB]["entries"].remove("libcudart.so.12")
        del host.doc["files"][LIB + "/libcudart.so.12"]
    if cuda_runtime_wheel:  # the nvidia-cuda-runtime-cu12 wheel's file, as pip lays it out
        host.doc["files"][SITE + "/nvidia/cuda_runtime/lib/libcudart.so.12"] = {"text": ""}
        host.doc["dirs"][SITE + "/nvidia/cuda_runtime/lib"] = {"entries": ["libcudart.so.12"]}
        host.doc["dirs"][SITE + "/nvidia/cuda_runtime"] = {"entries": ["lib"]}
        host.doc["dirs"][SITE + "/nvidia"]["entries"].append("cuda_runtime")
    return _with_gpu(type(host)(host.doc), "8.9", "NVIDIA GeForce RTX 4090")


def _fussim_errors(ctx):
    return [f for f in framework_linkage(ctx) if f.code == "cuda.framework_cannot_load" and "fussim" in f.title]


def test_a_fat_wheel_is_judged_by_the_module_it_imports_for_torchs_cuda():
    # torch 2.4.0+cu121 with its libcudart.so.12: fussim has no cu121 module, tries them in turn, and a CUDA 12 one
    # imports; the cu118 module beside it is never loaded
    assert _fussim_errors(_fat_wheel_host(FUSSIM_MODULES)) == []
    # a module for exactly torch's CUDA is the one imported: judged alone, and here it cannot load
    found = _fussim_errors(_fat_wheel_host({"_cuda_cu121": "libcudart.so.11.0", "_cuda_cu118": "libcudart.so.12"}))
    assert [(f.severity, "libcudart.so.11.0" in f.title) for f in found] == [("error", True)]
    assert "_cuda_cu121" in found[0].detail


def test_a_fat_wheel_none_of_whose_modules_can_load_is_an_error():
    found = _fussim_errors(_fat_wheel_host({"_cuda_cu117": "libcudart.so.11.0", "_cuda_cu118": "libcudart.so.11.0"}))
    assert sorted(f.severity for f in found) == ["error", "error"]


def test_torchs_nvidia_wheels_provide_their_libraries_to_an_extension():
    # torch/__init__.py loads the nvidia-* wheels' libraries when it is imported (_load_global_deps): an extension
    # needing libcudart.so.12 finds the one in nvidia/cuda_runtime/lib once torch is imported
    assert len(_fussim_errors(_fat_wheel_host({"_cuda_cu121": "libcudart.so.12"}, cuda_runtime_in_torch=False))) == 1
    assert _fussim_errors(_fat_wheel_host({"_cuda_cu121": "libcudart.so.12"}, cuda_runtime_in_torch=False,
                                          cuda_runtime_wheel=True)) == []


def test_cuda_variant_modules_are_grouped_by_their_tag():
    from envdoctor.probes.linkage import variant_modules_not_loaded

    paths = ["/s/pkg/_C_cu118.so", "/s/pkg/_C_cu128.so", "/s/other/cu118/_C.so", "/s/other/cu126/_C.so",
             "/s/pkg/_ops.so", "/s/lone/_C_cu118.so"]
    assert sorted(variant_modules_not_loaded(paths, "12.6", {})) == [
        "/s/other/cu118/_C.so", "/s/pkg/_C_cu118.so", "/s/pkg/_C_cu128.so"]
    # no exact variant: none judged unless all fail
    assert variant_modules_not_loaded(["/s/a/x_cu118.so", "/s/a/x_cu124.so"], "12.1", {"/s/a/x_cu118.so": 1}) == [
        "/s/a/x_cu118.so", "/s/a/x_cu124.so"]
    assert variant_modules_not_loaded(["/s/a/x_cu118.so", "/s/a/x_cu124.so"], "12.1",
                                      {"/s/a/x_cu118.so": 1, "/s/a/x_cu124.so": 1}) == []
    # "cuda" or a longer number is not a tag
    assert variant_modules_not_loaded(["/s/a/cuda_ops.so", "/s/a/cu1180.so"], "11.8", {}) == []


# -- ONNX Runtime with PyTorch's CUDA wheels ---------------------------------------------------------------
# onnxruntime/capi/version_info.py as the onnxruntime-gpu 1.20.1 CUDA 12 wheel writes it (use_cuda, cuda_version,
# cudnn_version); torch 2.4.0+cu121 brings the nvidia-*-cu12 wheels, whose files lie in site-packages/nvidia/*/lib.
# ONNX Runtime's CUDA provider page ("Compatibility with PyTorch"): it reuses the libraries torch loaded.
ORT_1201_VERSION_INFO = 'use_cuda = True\n\ncuda_version = "12.2"\ncudnn_version = "9.1"\n'


def _ort_with_torch(torch_version_py=TORCH_240_CU121_VERSION_PY):
    files = {"onnxruntime_gpu-1.20.1.dist-info/METADATA": "Name: onnxruntime-gpu\nVersion: 1.20.1\n",
             "onnxruntime/__init__.py": '__version__ = "1.20.1"\n',
             "onnxruntime/capi/version_info.py": ORT_1201_VERSION_INFO,
             "nvidia/cublas/lib/libcublas.so.12": "", "nvidia/cublas/lib/libcublasLt.so.12": "",
             "nvidia/cuda_runtime/lib/libcudart.so.12": "", "nvidia/cufft/lib/libcufft.so.11": "",
             "nvidia/curand/lib/libcurand.so.10": "", "nvidia/cudnn/lib/libcudnn.so.9": ""}
    if torch_version_py:
        files.update({"torch/version.py": torch_version_py, "torch/__init__.py": "",
                      "torch-2.4.0.dist-info/METADATA": TORCH_240_METADATA})
    # an ld.so cache that was read and lists no CUDA library (`ldconfig -p` of a machine without a toolkit)
    ldconfig = {"argv": ["/sbin/ldconfig", "-p"], "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"}
    base = site_host({})
    host = make_host(files=dict({SITE + "/" + p: t for p, t in files.items()}, **{"/sbin/ldconfig": ""}),
                     commands=[ldconfig], python=base.doc["python"], uname=base.doc["uname"])
    return _with_gpu(host, "8.6", "NVIDIA GeForce RTX 3090")


def _dlopen_findings(ctx):
    from envdoctor.checks.libraries.linkage import _dlopen_linkage
    return list(_dlopen_linkage(ctx.facts, "onnxruntime"))


def test_onnxruntime_with_a_cuda_torch_beside_it_finds_its_libraries_once_torch_is_imported():
    found = _dlopen_findings(_ort_with_torch())
    assert [(f.code, f.severity) for f in found] == [("cuda.framework_cannot_load", "info")]
    assert "only once torch 2.4.0 is imported first" in found[0].title
    assert "libcudnn.so.9" in found[0].title and "libcublasLt.so.12" in found[0].title
    assert "preload_dlls" in found[0].fix.text


def test_onnxruntime_without_torch_still_cannot_load_the_wheels_libraries():
    found = _dlopen_findings(_ort_with_torch(torch_version_py=None))
    assert found and {f.severity for f in found} == {"error"}
    assert "libcudnn.so.9" in {f.title.split(" loads ")[1].split(" ")[0] for f in found}


def test_a_torch_of_another_cuda_major_does_not_provide_them():
    cu118 = TORCH_240_CU121_VERSION_PY.replace("+cu121", "+cu118").replace("'12.1'", "'11.8'")
    found = _dlopen_findings(_ort_with_torch(cu118))
    assert found and {f.severity for f in found} == {"error"}


# -- onnxruntime-gpu whose provider library was not read: its own build information names its CUDA -----------
# onnxruntime/capi/version_info.py as ONNX Runtime's setup.py writes it (use_cuda, cuda_version, cudnn_version);
# CUDA 10.x runtimes carry a soname per minor (libcudart.so.10.1, libcudart.so.10.2), as NVIDIA's toolkits ship them.
def _ort_cuda10(cudart, cudnn):
    info = 'use_cuda = True\ncuda_version = "10.2"\ncudnn_version = "8.0"\n'
    files = {"onnxruntime_gpu-1.6.0.dist-info/METADATA": "Name: onnxruntime-gpu\nVersion: 1.6.0\n",
             "onnxruntime/__init__.py": '__version__ = "1.6.0"\n', "onnxruntime/capi/version_info.py": info}
    lib = "/usr/lib/x86_64-linux-gnu/"
    cache = "".join("\t%s (libc6,x86-64) => %s%s\n" % (s, lib, s) for s in (cudart, cudnn))
    ldconfig = {"argv": ["/sbin/ldconfig", "-p"], "stdout": "3 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n" + cache}
    base = site_host({})
    return make_host(files=dict({SITE + "/" + p: t for p, t in files.items()}, **{
        "/sbin/ldconfig": "", lib + cudart: "", lib + cudnn: ""}),
        commands=[ldconfig], python=base.doc["python"], uname=base.doc["uname"])


def test_onnxruntime_built_for_another_cuda_minor_cannot_load_its_runtime():
    found = run(_ort_cuda10("libcudart.so.10.1", "libcudnn.so.7"), onnxruntime_packaging)
    f = found["cuda.framework_cannot_load"]
    assert f.severity == "error"
    assert f.title == ("onnxruntime-gpu 1.6.0 is built for CUDA 10.2 and needs libcudart.so.10.2, but the loader "
                       "only finds libcudart.so.10.1 (/usr/lib/x86_64-linux-gnu/libcudart.so.10.1)")
    assert "CPUExecutionProvider" in f.detail and "version_info.py" in f.source["rule"]
    g = found["onnxruntime.cudnn_major_mismatch"]
    assert g.severity == "error" and "needs cuDNN 8" in g.title and "libcudnn.so.7" in g.title


def test_onnxruntime_with_its_own_cuda_minor_and_cudnn_is_quiet():
    found = run(_ort_cuda10("libcudart.so.10.2", "libcudnn.so.8"), onnxruntime_packaging)
    assert "cuda.framework_cannot_load" not in found and "onnxruntime.cudnn_major_mismatch" not in found


# -- a Julia artifact's CUDA libraries (CUDA.jl's CUDA_Runtime_jll: <depot>/artifacts/<hash>/lib, RUNPATH $ORIGIN) ---
# libcublas.so.12's dynamic section as NVIDIA's cuBLAS 12.2.5.6 redistributable carries it: NEEDED
# libcublasLt.so.12, RUNPATH $ORIGIN (readelf -d of nvidia_cublas_cu12-12.2.5.6's copy of the same release).
ART = "/home/ana/depot/artifacts/0a1b2c3d4e5f60718293a4b5c6d7e8f901234567/lib"
MODULE = "/opt/cuda/12.6.1/lib64"


def _julia_host(ldp):
    files = {ART + "/libcublas.so.12": "", ART + "/libcublasLt.so.12": "", ART + "/libcublasLt.so.12.2.5.6": "",
             MODULE + "/libcublasLt.so.12": "", MODULE + "/libcublasLt.so.12.6.1.4": ""}
    ldconfig = {"argv": ["/sbin/ldconfig", "-p"], "stdout": "1 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n"}
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/home/ana", "JULIA_DEPOT_PATH": "/home/ana/depot"}
    if ldp:
        environ["LD_LIBRARY_PATH"] = ldp
    host = make_host(files=dict(files, **{"/sbin/ldconfig": ""}), commands=[ldconfig], environ=environ,
                     links={ART + "/libcublasLt.so.12": "libcublasLt.so.12.2.5.6",
                            MODULE + "/libcublasLt.so.12": "libcublasLt.so.12.6.1.4"})
    host.doc["elf"] = {ART + "/libcublas.so.12": {"soname": "libcublas.so.12", "needed": ["libcublasLt.so.12"],
                                                  "rpath": [], "runpath": ["$ORIGIN"]}}
    return type(host)(host.doc)


def test_julia_artifact_library_shadowed_by_ld_library_path():
    f = run(_julia_host(MODULE), nvidia_wheel_links)["cuda.shadowed"]
    assert f.severity == "warning"
    assert f.title == ("libcublas.so.12 (Julia artifact) loads libcublasLt.so.12 from %s/libcublasLt.so.12 "
                       "(12.6.1.4, via LD_LIBRARY_PATH), not its artifact's %s/libcublasLt.so.12 (12.2.5.6)" % (
                           MODULE, ART))
    assert "Take %s off LD_LIBRARY_PATH" % MODULE in f.fix.text


def test_julia_artifact_using_its_own_copy_is_quiet():
    assert run(_julia_host(None), nvidia_wheel_links) == {}

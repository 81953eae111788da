"""Framework packages that disagree with each other (envdoctor/checks/frameworks.py): each rule fires on the
real-world corpus machine it was generalised from, and stays quiet on the same machine once the one thing
the thread fixed is fixed (the snapshot edited exactly as the thread's fix would change the machine).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Optional

from envdoctor.checks import CheckContext, run_checks
from envdoctor.findings import Finding
from envdoctor.host.snapshot import SnapshotHost

from .conftest import probe_facts

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def findings(case: str, edit: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Finding]:
    with open(os.path.join(CORPUS, case, "snapshot.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    if edit is not None:
        edit(doc)
    return {f.code: f for f in run_checks(CheckContext(probe_facts(SnapshotHost(doc, case)), []))}


def _set_file(doc: Dict[str, Any], suffix: str, text: str) -> None:
    (path,) = [p for p in doc["files"] if p.endswith(suffix)]
    doc["files"][path] = {"text": text}


def test_jaxlib_older_than_the_installed_jax_minimum() -> None:
    # corpus: jaxlib0169-cuda101-older-than-jax0226-minimum (Zuricho/ParallelFold#13); jax's own version.py
    case = "jaxlib0169-cuda101-older-than-jax0226-minimum"
    f = findings(case)["framework.jaxlib_too_old_for_jax"]
    assert f.severity == "error" and "0.1.69+cuda101" in f.title and "0.1.74" in f.title
    assert f.fix.commands == ["pip install 'jax==0.1.69'"] or "jax" in f.fix.text
    # the thread's fix: a jax whose minimum this jaxlib meets (jax 0.2.14 wants jaxlib >= 0.1.65)
    quiet = findings(case, lambda d: _set_file(d, "/jax/version.py",
                                               '__version__ = "0.2.14"\n_minimum_jaxlib_version = "0.1.65"\n'))
    assert "framework.jaxlib_too_old_for_jax" not in quiet


def test_jax_cuda_plugin_of_another_version_than_jaxlib() -> None:
    # corpus: jax-cuda12-plugin092-with-jaxlib0901 (ma-gilles/recovar#64)
    case = "jax-cuda12-plugin092-with-jaxlib0901"
    f = findings(case)["framework.jax_plugin_mismatch"]
    assert f.severity == "error" and "0.9.2" in f.title and "0.9.0.1" in f.title
    assert "jax-cuda12-plugin==0.9.0.1" in f.fix.commands[0]

    def same_version(doc: Dict[str, Any]) -> None:  # the thread's fix: plugins pinned to jaxlib's version
        for p in list(doc["dirs"]):
            entries = doc["dirs"][p].get("entries")
            if entries:
                doc["dirs"][p]["entries"] = [e.replace("-0.9.2.dist-info", "-0.9.0.1.dist-info") for e in entries]
        for p in list(doc["files"]):
            if "-0.9.2.dist-info" in p:
                doc["files"][p.replace("-0.9.2.dist-info", "-0.9.0.1.dist-info")] = doc["files"].pop(p)
    assert "framework.jax_plugin_mismatch" not in findings(case, same_version)


def test_old_toolkit_ptxas_first_on_path_shadows_the_wheels() -> None:
    # corpus: jax0438-cuda12-plugin-runs-path-ptxas-121 (jax-ml/jax#25718)
    case = "jax0438-cuda12-plugin-runs-path-ptxas-121"
    f = findings(case)["framework.ptxas_shadowed"]
    assert f.severity == "error" and "12.1" in f.title and "/usr/local/cuda/bin/ptxas" in f.title
    assert "12.6.85" in f.title  # the wheel's ptxas, named
    assert "/usr/local/cuda/bin" in f.fix.commands[0]

    def off_path(doc: Dict[str, Any]) -> None:  # the thread's fix: CUDA 12.1's bin off PATH
        doc["environ"]["PATH"] = doc["environ"]["PATH"].replace("/usr/local/cuda/bin:", "")
    assert "framework.ptxas_shadowed" not in findings(case, off_path)

    def new_toolkit(doc: Dict[str, Any]) -> None:  # the other fix: the toolkit on PATH upgraded to 12.6
        doc["files"]["/usr/local/cuda-12.1/version.json"]["text"] = doc["files"][
            "/usr/local/cuda-12.1/version.json"]["text"].replace("12.1.0", "12.6.3")
        for c in doc["commands"]:
            c["stdout"] = c["stdout"].replace("release 12.1, V12.1.66", "release 12.6, V12.6.85")
    assert "framework.ptxas_shadowed" not in findings(case, new_toolkit)


def test_local_cuda_jaxlib_runs_an_older_toolkits_ptxas() -> None:
    # corpus: b27-...-jaxlib0172-cuda111-system-cuda110-... (localcolabfold): jaxlib 0.1.72+cuda111 is built for a
    # local CUDA 11.1; the ptxas first on PATH is CUDA 11.0's. JAX's README: the local CUDA's minor must be at least
    # the one the wheel expects.
    case = "b27-ubuntu2004-localcolabfold-120beta-jaxlib0172-cuda111-system-cuda110-ptxas-older-than-111"
    f = findings(case)["framework.ptxas_shadowed"]
    assert f.severity == "error" and "/usr/local/cuda-11.0/bin/ptxas" in f.title and "CUDA 11.0" in f.title
    assert ">= 11.1 (jaxlib's CUDA)" in f.title
    assert "installed-locally" in f.source["url"]

    def new_toolkit(doc: Dict[str, Any]) -> None:  # the same machine with the CUDA 11.0 toolkit upgraded to 11.1
        text = json.dumps(doc).replace("11.0.221", "11.1.105").replace("release 11.0, V11", "release 11.1, V11")
        doc.clear()
        doc.update(json.loads(text))
    assert "framework.ptxas_shadowed" not in findings(case, new_toolkit)


def test_pip_ptxas_newer_than_the_driver_cuda() -> None:
    # corpus: jax0424-pip-ptxas-123-driver535-cuda122 (jax-ml/jax#19821)
    case = "jax0424-pip-ptxas-123-driver535-cuda122"
    f = findings(case)["driver.minor_version_compat"]
    assert f.severity == "info" and "12.2" in f.title and "12.3" in f.title and "ptxas" in f.title

    def pinned(doc: Dict[str, Any]) -> None:  # the thread's other fix: the nvcc wheel pinned to 12.2
        for p in list(doc["dirs"]):
            entries = doc["dirs"][p].get("entries")
            if entries:
                doc["dirs"][p]["entries"] = [e.replace("cu12-12.3.107", "cu12-12.2.140") for e in entries]
        for p in list(doc["files"]):
            if "nvidia_cuda_nvcc_cu12-12.3.107" in p:
                doc["files"][p.replace("12.3.107", "12.2.140")] = doc["files"].pop(p)
    assert "driver.minor_version_compat" not in findings(case, pinned)


def test_cuda_visible_devices_index_on_mixed_models_without_pci_order() -> None:
    # corpus: cvd-3-mixed-8gpu-server-fastest-first-order (pytorch/pytorch#20606)
    case = "cvd-3-mixed-8gpu-server-fastest-first-order"
    f = findings(case)["gpu.cuda_device_order_differs"]
    assert f.severity == "warning" and "CUDA_DEVICE_ORDER" in f.title and "PCI_BUS_ID" in f.title
    assert f.fix.commands[0] == "export CUDA_DEVICE_ORDER=PCI_BUS_ID"

    def pci_order(doc: Dict[str, Any]) -> None:  # the thread's fix
        doc["environ"]["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    assert "gpu.cuda_device_order_differs" not in findings(case, pci_order)

    def one_model(doc: Dict[str, Any]) -> None:  # eight identical GPUs: both orders agree
        for key, entry in doc["nvml"]["data"].items():
            if key.endswith(".name"):
                entry["value"] = "TITAN V"
    assert "gpu.cuda_device_order_differs" not in findings(case, one_model)


def test_paddle_cuda10_build_on_an_ampere_gpu_has_no_kernels() -> None:
    # corpus: paddle222-cu102-wheel-on-rtx3060-no-kernel-image (PaddlePaddle/PaddleDetection#5206): no fat binary
    # could be read, so the build's CUDA decides: CUDA 10.2 compiles up to sm_75 and Paddle's release builds
    # (CUDA_ARCH_NAME=All) carry no PTX
    case = "paddle222-cu102-wheel-on-rtx3060-no-kernel-image"
    f = findings(case)["gpu.arch_not_in_build"]
    assert f.severity == "error" and "8.6" in f.title and "10.2" in f.title and "PTX" in f.title

    def turing(doc: Dict[str, Any]) -> None:  # the same wheel on a GPU CUDA 10.2 targets (an RTX 2080, sm_75)
        for key, entry in doc["nvml"]["data"].items():
            if key.endswith(".compute_capability"):
                entry["value"] = [7, 5]
            elif key.endswith(".name"):
                entry["value"] = "NVIDIA GeForce RTX 2080"
    quiet = findings(case, turing)
    assert "gpu.arch_not_in_build" not in quiet and "gpu.arch_support_unknown" not in quiet


def test_ld_library_path_entries_with_a_trailing_slash_are_searched() -> None:
    # corpus: tf210-wants-libnvinfer7-pip-tensorrt8 (tensorflow/tensorflow#57671): LD_LIBRARY_PATH=<env>/lib/ holds
    # the conda CUDA libraries TensorFlow dlopens; the loader searches it, so nothing may be reported as unfound
    case = "tf210-wants-libnvinfer7-pip-tensorrt8"
    assert not [f for f in findings(case).values() if f.code.endswith(".framework_cannot_load")
                and "not searched" in f.title]

    def not_on_path(doc: Dict[str, Any]) -> None:  # without the entry the same copies really are not searched
        del doc["environ"]["LD_LIBRARY_PATH"]
    f = findings(case, not_on_path)["cuda.framework_cannot_load"]
    assert f.severity == "error" and "which is not searched" in f.title


def test_conda_forge_cuda_jaxlib_is_not_called_cpu_only() -> None:
    # corpus: conda-forge-jax0431-needs-cudnn9-has-897 (conda-forge/jaxlib-feedstock#277): conda-forge's jaxlib has
    # no +cuda tag in its version; its conda build string (cuda120py312h...) says CUDA 12.0
    case = "conda-forge-jax0431-needs-cudnn9-has-897"
    assert "framework.cpu_only_build" not in findings(case)
    jax = probe_facts(SnapshotHost(_edited(case, lambda d: None), case)).mapping("framework.jax")
    assert jax["build"] == "cuda" and jax["cuda"] == "12.0"

    def cpu_package(doc: Dict[str, Any]) -> None:  # conda-forge's CPU jaxlib: build "cpu_py312h..."
        for p, entry in doc["dirs"].items():
            if p.endswith("/conda-meta") and entry.get("entries"):
                entry["entries"] = [e.replace("cuda120py312", "cpu_py312") for e in entry["entries"]]
    assert probe_facts(SnapshotHost(_edited(case, cpu_package), case)).mapping("framework.jax")["build"] == "cpu"
    assert "framework.cpu_only_build" in findings(case, cpu_package)


def _edited(case: str, edit: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    with open(os.path.join(CORPUS, case, "snapshot.json"), encoding="utf-8") as fh:
        doc: Dict[str, Any] = json.load(fh)
    edit(doc)
    return doc


def test_paddle_cannot_open_cudnn_outside_the_loader_path() -> None:
    # corpus: paddle172-post107-cudnn-not-on-loader-path (PaddlePaddle/PaddleOCR#300): Paddle 1.x dlopens
    # "libcudnn.so"; cuDNN was unpacked into the CUDA 10.2 toolkit, which nothing on the loader path names
    case = "paddle172-post107-cudnn-not-on-loader-path"
    f = findings(case)["cudnn.framework_cannot_load"]
    assert f.severity == "error" and "libcudnn.so" in f.title and "paddle 1.7.2.post107" in f.title
    assert "LD_LIBRARY_PATH" in f.fix.commands[0]

    def on_path(doc: Dict[str, Any]) -> None:  # the maintainer's fix: cuDNN's directory on LD_LIBRARY_PATH
        doc["environ"]["LD_LIBRARY_PATH"] = "/usr/local/cuda-10.2/lib64"
    assert "cudnn.framework_cannot_load" not in findings(case, on_path)


def test_nvidia_uvm_node_missing_inside_a_container() -> None:
    # the node list as a container sees it (corpus enroot-after-reboot-nvidia-uvm-not-loaded: NVIDIA/enroot#106 has
    # the same list on its host, where it stays unjudged: CUDA creates the node on first use there)
    from envdoctor.facts import Facts, ok

    def facts(nodes: Any, container: Any) -> Dict[str, Finding]:
        return {f.code: f for f in run_checks(CheckContext(Facts([
            ok("driver.installed", True, "file:/usr/lib/x86_64-linux-gnu"),
            ok("driver.kernel_module.loaded", True, "file:/sys/module/nvidia"),
            ok("driver.device_nodes", nodes, "dir:/dev"), ok("gpu.count", 1, "nvml:device_count"),
            ok("os.container", container, "file:/.dockerenv")]), []))}
    f = facts(["nvidia0", "nvidiactl"], "docker")["driver.device_nodes_missing"]
    assert f.severity == "error" and "/dev/nvidia-uvm" in f.title
    assert "driver.device_nodes_missing" not in facts(["nvidia0", "nvidiactl", "nvidia-uvm"], "docker")
    assert "driver.device_nodes_missing" not in facts(["nvidia0", "nvidiactl"], None)


def test_torch_and_jax_in_one_conda_env_with_different_cudnn_minors() -> None:
    # corpus: conda-pytorch212-cudnn87-with-jaxlib0423-cudnn88 (jax-ml/jax#18032): the pytorch channel's build string
    # names the cuDNN torch carries (8.7.0); jaxlib uses the environment's conda cuDNN 8.8.0
    case = "conda-pytorch212-cudnn87-with-jaxlib0423-cudnn88"
    f = findings(case)["cudnn.shadowed"]
    assert f.severity == "warning" and "8.7.0" in f.title and "8.8.0" in f.title and "jax 0.4.23" in f.title
    assert "importing torch first breaks jax" in f.detail

    def same_minor(doc: Dict[str, Any]) -> None:  # a pytorch build with the environment's cuDNN 8.8
        for p, entry in doc["dirs"].items():
            if p.endswith("/conda-meta") and entry.get("entries"):
                entry["entries"] = [e.replace("cudnn8.7.0", "cudnn8.8.0") for e in entry["entries"]]
    assert "cudnn.shadowed" not in findings(case, same_minor)


def test_triton_ptxas_of_a_newer_cuda_major_than_the_driver() -> None:
    # corpus: torch220-cu118-triton-ptxas123-on-driver470-a100 (pytorch/pytorch#119054): triton 2.2.0 assembles
    # with its bundled CUDA 12.3 ptxas, the R470 driver (CUDA 11.4) cannot load the result
    case = "torch220-cu118-triton-ptxas123-on-driver470-a100"
    f = findings(case)["framework.triton_ptxas_newer_than_driver"]
    assert f.severity == "warning" and "470.182.03" in f.title and "12.3" in f.title
    assert f.fix is not None and "TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas" in " ".join(f.fix.commands)

    def forced(doc: Dict[str, Any]) -> None:  # the reporter's fix: Triton pointed at the CUDA 11.8 ptxas
        doc["environ"]["TRITON_PTXAS_PATH"] = "/usr/local/cuda-11.8/bin/ptxas"
        doc["commands"].append({"argv": ["/usr/local/cuda-11.8/bin/ptxas", "--version"], "returncode": 0,
                                "stdout": "Cuda compilation tools, release 11.8, V11.8.89\n", "stderr": ""})
    assert "framework.triton_ptxas_newer_than_driver" not in findings(case, forced)

    def newer_driver(doc: Dict[str, Any]) -> None:  # a driver of CUDA 12.2: a 12.3 ptxas is the same major
        doc["nvml"]["data"]["system.cuda_driver_version"]["value"] = 12020
        doc["nvml"]["data"]["system.driver_version"]["value"] = "535.104.05"
    assert "framework.triton_ptxas_newer_than_driver" not in findings(case, newer_driver)

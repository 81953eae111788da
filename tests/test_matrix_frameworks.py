"""The framework tables of the compatibility matrix, checked against the vendors' own tables.

Each case below is one line of a vendor table (the URL is given beside each group);
the test asks the same question a check or ``envdoctor advise`` would ask and compares
the answer with what the vendor says.
"""

from __future__ import annotations

import copy
import json

import pytest
from packaging.specifiers import SpecifierSet

import envdoctor.matrix as matrix
from envdoctor.matrix import MatrixError, load, unverified
from envdoctor.matrix import frameworks as fw


@pytest.fixture(autouse=True)
def _fresh_tables():
    matrix.clear_cache()
    yield
    matrix.clear_cache()


# --------------------------------------------------------------------------- the files themselves


@pytest.mark.parametrize("area", fw.AREAS)
def test_every_framework_table_loads_and_passes_its_own_rules(area):
    rows = load(area)  # raises MatrixError naming the file when anything is off
    assert rows
    assert fw.VALIDATORS[area](rows) == []


def test_a_broken_table_is_refused_with_the_file_named(tmp_path, monkeypatch):
    doc = json.loads(open(matrix.data_path("torch"), encoding="utf-8").read())
    # A variant whose tag says CUDA 12.1 but whose CUDA field says 12.4: the index
    # URL and the install command we would print would disagree with each other.
    doc["rows"][-1]["variants"][0]["tag"] = "cu121"
    (tmp_path / "torch.json").write_text(json.dumps(doc))
    monkeypatch.setattr(matrix, "DATA_DIR", str(tmp_path))
    matrix.clear_cache()
    with pytest.raises(MatrixError) as err:
        load("torch")
    assert str(tmp_path / "torch.json") in str(err.value)
    assert "cu121" in str(err.value)


# --------------------------------------------------------------------------- validators catch real mistakes


def _torch_rows():
    return copy.deepcopy(load("torch"))


def test_torch_validator_flags_tag_that_disagrees_with_cuda():
    rows = _torch_rows()
    row = next(r for r in rows if r["version"] == "1.12")
    row["variants"][0]["cuda"] = "11.8"  # 1.12's cu102 claiming CUDA 11.8
    problems = fw.validate_torch(rows)
    assert any("cu102" in p and "11.8" in p for p in problems)


def test_torch_validator_flags_unsorted_arch_list_and_stray_ptx():
    rows = _torch_rows()
    var = rows[-1]["variants"][0]
    var["arch_list"] = ["8.0", "7.5"]
    var["ptx"] = "9.0"
    problems = fw.validate_torch(rows)
    assert any("not sorted" in p for p in problems)
    assert any("ptx '9.0'" in p for p in problems)


def test_torch_validator_flags_a_pypi_variant_the_release_does_not_have():
    rows = _torch_rows()
    row = next(r for r in rows if r["version"] == "2.1")
    row["pypi_variant"] = "cu124"  # 2.1 has cu118 and cu121 only
    assert any("pypi_variant 'cu124'" in p for p in fw.validate_torch(rows))


@pytest.mark.parametrize("version,tag", [
    ("2.1.0", "cu121"), ("2.0.1", "cu117"), ("1.13.1", "cu117"), ("1.12.1", "cu102"), ("2.5", "cu124"),
    ("2.7.1", "cu126"), ("1.0.0", "cu90"),
])
def test_torch_pypi_build(version, tag):
    """What plain ``pip install torch==X`` gets on Linux x86_64 (proved from PyPI's wheels)."""
    assert fw.torch_pypi_variant(version)["tag"] == tag


@pytest.mark.parametrize("odd", ["0.4.1", "9.9", "", None, "not-a-version"])
def test_torch_pypi_build_unknown_is_none(odd):
    assert fw.torch_pypi_variant(odd) is None


def test_validators_flag_releases_out_of_order():
    rows = copy.deepcopy(load("tensorflow"))
    rows[0], rows[1] = rows[1], rows[0]
    assert any("not after" in p for p in fw.validate_tensorflow(rows))


def test_onnxruntime_validator_needs_exactly_one_pypi_default():
    rows = copy.deepcopy(load("onnxruntime"))
    for b in rows[-1]["builds"]:
        b["pypi_default"] = False
    assert any("exactly one build" in p for p in fw.validate_onnxruntime(rows))


def test_cupy_validator_flags_a_12x_wheel_admitting_cuda_13():
    rows = copy.deepcopy(load("cupy"))
    rows[1]["packages"][1]["cuda"] = ">=12.0"  # cupy-cuda12x "for any CUDA >= 12"
    assert any("cupy-cuda12x" in p for p in fw.validate_cupy(rows))


def test_jax_validator_flags_overlapping_version_ranges():
    rows = copy.deepcopy(load("jax"))
    rows[1]["jax"] = ">=0.4.10,<0.4.26"  # overlaps the row before it
    assert any("overlaps" in p or "does not start after" in p for p in fw.validate_jax(rows))


def test_tensorrt_validator_flags_package_of_the_wrong_cuda_major():
    rows = copy.deepcopy(load("tensorrt"))
    rows[1]["builds"][0]["python_package"] = "tensorrt-cu12"  # on the CUDA 11 build
    assert any("tensorrt-cu12" in p for p in fw.validate_tensorrt(rows))


# --------------------------------------------------------------------------- PyTorch

# https://github.com/pytorch/pytorch/blob/main/RELEASE.md#release-compatibility-matrix
TORCH_CUDNN = [
    ("1.12.1+cu116", "11.6", "8.3.2.44"),
    ("1.13.1+cu117", "11.7", "8.5.0.96"),
    ("2.0.1+cu118", "11.8", "8.7.0.84"),
    ("2.1.2+cu121", "12.1", "8.9.2.26"),
    ("2.3.1+cu118", "11.8", "8.7.0.84"),
    ("2.4.1+cu121", "12.1", "9.1.0.70"),
    ("2.6.0+cu126", "12.6", "9.5.1.17"),
    ("2.7.1+cu128", "12.8", "9.7.1.26"),
    ("2.8.0+cu129", "12.9", "9.10.2.21"),
    ("2.9.1+cu130", "13.0", "9.13.0.50"),
    ("2.11.0+cu128", "12.8", "9.17.1.4"),
    ("2.14.0+cu132", "13.2", "9.24.0.43"),
]


@pytest.mark.parametrize("installed, cuda, cudnn", TORCH_CUDNN)
def test_torch_wheel_tag_gives_its_cuda_and_bundled_cudnn(installed, cuda, cudnn):
    var = fw.torch_variant(installed)
    assert var is not None
    assert var["cuda"] == cuda
    assert var["cudnn"] == cudnn
    assert var["index_url"] == "https://download.pytorch.org/whl/" + fw.torch_local_tag(installed)


# RELEASE.md lists NCCL from 2.10 on.
@pytest.mark.parametrize(
    "installed, nccl", [("2.10.0+cu130", "2.28.9"), ("2.12.0+cu126", "2.29.3"), ("2.14.0+cu130", "2.30.7")]
)
def test_torch_bundled_nccl(installed, nccl):
    assert fw.torch_variant(installed)["nccl"] == nccl


# RELEASE.md (stable + experimental CUDA columns).
TORCH_TAGS = [
    ("1.13", ["cu116", "cu117"]),
    ("2.0", ["cu117", "cu118"]),
    ("2.4", ["cu118", "cu121", "cu124"]),
    ("2.6", ["cu118", "cu124", "cu126"]),
    ("2.7", ["cu118", "cu126", "cu128"]),
    ("2.8", ["cu126", "cu128", "cu129"]),
    ("2.9", ["cu126", "cu128", "cu130"]),
    ("2.13", ["cu126", "cu130", "cu132"]),
]


@pytest.mark.parametrize("release, tags", TORCH_TAGS)
def test_torch_release_lists_its_cuda_variants(release, tags):
    assert [v["tag"] for v in fw.torch_variants(release)] == tags


# RELEASE.md Python column: "2.4 | >=3.8, <=3.12", "2.5 | >=3.9, <=3.12, (3.13 experimental)",
# "2.9 | >=3.10, <=(3.14, 3.14t experimental)".
@pytest.mark.parametrize(
    "release, python, ok",
    [
        ("2.4.0", "3.12.4", True),
        ("2.4.0", "3.13.0", False),
        ("2.5.1", "3.13.1", True),
        ("2.5.1", "3.8.18", False),
        ("2.9.0", "3.9.19", False),
        ("2.9.0", "3.14.0", True),
        ("1.12.1", "3.11.0", False),
    ],
)
def test_torch_python_range(release, python, ok):
    assert fw.python_supported(fw.torch_release(release), python) is ok


# Compute capabilities each wheel was compiled for:
# https://github.com/moi90/pytorch_compute_capabilities/blob/main/table.md (cuobjdump of the binaries) and
# TORCH_CUDA_ARCH_LIST in https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh
TORCH_ARCH = [
    ("2.4.1+cu118", "3.7", True),  # Tesla K80: only the CUDA 11.8 wheels keep sm_37
    ("2.4.1+cu121", "3.7", False),
    ("2.7.0+cu126", "6.1", True),  # GTX 1080: sm_60 SASS runs on 6.1
    ("2.7.0+cu128", "6.1", False),  # the cu128 wheel starts at sm_75
    ("2.7.0+cu128", "12.0", True),  # RTX 5090
    ("2.7.0+cu126", "12.0", False),  # Blackwell needs the cu128 wheel: no sm_120, no PTX
    ("2.8.0+cu128", "7.0", True),  # V100 kept in 2.8's cu128 (pytorch/pytorch#157517)
    ("2.8.0+cu129", "12.1", True),  # 12.0+PTX: JIT-compiled for a newer GPU
    ("2.14.0+cu130", "7.0", False),  # CUDA 13 wheels start at Turing
]


@pytest.mark.parametrize("installed, cc, ok", TORCH_ARCH)
def test_torch_wheel_runs_on_gpu(installed, cc, ok):
    assert fw.torch_supports_arch(fw.torch_variant(installed), cc) is ok


@pytest.mark.parametrize("odd", ["2.4.1", "2.4.1+cpu", "2.4.1+cu999", "not a version", "", None, "9.9.0+cu121"])
def test_torch_variant_without_an_answer_is_none(odd):
    assert fw.torch_variant(odd) is None


def test_torch_variant_for_the_cuda_torch_reports():
    # torch.version.cuda says "12.4" for the cu124 wheel of 2.5.1
    assert fw.torch_variant_for_cuda("2.5.1", "12.4")["tag"] == "cu124"
    assert fw.torch_variant_for_cuda("2.5.1", "12.6") is None


def test_unverified_rows_are_marked_and_say_why():
    # jax 0.4.26-0.4.28's variant contents are quoted from installation.md of that era, the range inferred.
    row = next(r for r in load("jax") if SpecifierSet(r["jax"]).contains("0.4.27"))
    assert unverified(row) and row["source"]["note"]
    # TensorFlow 2.19's tested-build row is now read from tensorflow/docs; where its GPU wheels exist is not
    assert not unverified(fw.tensorflow_release("2.19.0")) and unverified(fw.tensorflow_release("2.19.0"),
                                                                          "gpu_platforms")
    assert not unverified(fw.torch_release("2.4.1")) and not unverified(fw.torch_release("2.10.0"))


# --------------------------------------------------------------------------- TensorFlow

# https://www.tensorflow.org/install/source#gpu ("Tested build configurations", Linux GPU)
TF = [
    ("2.10.1", "11.2", "8.1", ">=3.7,<3.11"),
    ("2.12.0", "11.8", "8.6", ">=3.8,<3.12"),
    ("2.13.1", "11.8", "8.6", ">=3.8,<3.12"),
    ("2.16.1", "12.3", "8.9", ">=3.9,<3.13"),
    ("2.17.0", "12.3", "8.9", ">=3.9,<3.13"),
]


@pytest.mark.parametrize("version, cuda, cudnn, python", TF)
def test_tensorflow_tested_configuration(version, cuda, cudnn, python):
    row = fw.tensorflow_release(version)
    assert (row["cuda"], row["cudnn"], row["python"]) == (cuda, cudnn, python)


def test_tensorflow_windows_native_gpu_ends_at_2_10():
    # https://www.tensorflow.org/install/pip: "TensorFlow 2.10 was the last TensorFlow release that
    # supported GPU on native-Windows"
    assert fw.tensorflow_has_gpu_build("2.10.0", "windows-x86_64") is True
    assert fw.tensorflow_has_gpu_build("2.11.0", "windows-x86_64") is False
    assert fw.tensorflow_has_gpu_build("2.11.0", "wsl2") is True
    assert fw.tensorflow_has_gpu_build("1.15.0", "linux-x86_64") is True   # tensorflow-gpu 1.15 (history rows)
    assert fw.tensorflow_has_gpu_build("1.14.0", "linux-x86_64") is None


# --------------------------------------------------------------------------- JAX

# https://docs.jax.dev/en/latest/installation.html#nvidia-gpu: "JAX currently ships two CUDA wheel
# variants: CUDA 12 and CUDA 13" (CUDA 12.3 / >=12.1, CUDA 13.0 / >=13.0, CUDNN >=9.8,<10.0)
def test_jax_cuda13_plugin():
    var = fw.jax_plugin_for("0.8.1", "13.0")
    assert var["plugin"] == "jax-cuda13-plugin"
    assert var["pip_extra"] == "jax[cuda13]"
    assert SpecifierSet(var["cudnn"]).contains("9.12.0.46") and not SpecifierSet(var["cudnn"]).contains("9.8")


def test_jax_cuda12_plugin_accepts_12_1_but_not_12_0():
    # jax-ml/jax docs/installation.md: "Built with CUDA 12.3 | Compatible with CUDA >=12.1"
    var = fw.jax_plugin_for("0.4.30", 12)
    assert var["plugin"] == "jax-cuda12-plugin"
    assert SpecifierSet(var["cuda"]).contains("12.1")
    assert not SpecifierSet(var["cuda"]).contains("12.0")
    assert var["min_driver"] == "525.60.13"


def test_jax_without_a_wheel_for_that_cuda():
    assert fw.jax_plugin_for("0.4.30", 11) is None  # CUDA 11 wheels are gone by then
    assert fw.jax_plugin_for("0.4.30", 13) is None
    assert fw.jax_plugin_for("0.4.20", 11)["cudnn_built"] == "8.6"  # "CUDA 11.8, cuDNN 8.6, NCCL 2.16"
    assert fw.jax_plugin_for("garbage", 12) is None


# --------------------------------------------------------------------------- ONNX Runtime

# https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements
ORT = [
    ("1.12.1", "11", "8"),
    ("1.14.1", "11", "8"),
    ("1.16.3", "11", "8"),
    ("1.17.1", "11", "8"),  # "The default CUDA version for ORT 1.17 is CUDA 11.8"
    ("1.18.0", "11", "8"),
    ("1.19.2", "12", "9"),  # "Starting with version 1.19, CUDA 12.x becomes the default"
    ("1.20.1", "12", "9"),
]


@pytest.mark.parametrize("version, cuda_major, cudnn_major", ORT)
def test_onnxruntime_gpu_pypi_build(version, cuda_major, cudnn_major):
    rel = fw.onnxruntime_release(version)
    assert (rel["cuda_major"], rel["cudnn_major"]) == (cuda_major, cudnn_major)


def test_onnxruntime_1_18_1_cuda12_build_needs_cudnn_9():
    # "1.18.1 | 12.x | 9.x | cuDNN 9 is required" vs "1.18.0 | 12.x | 8.x"
    def cuda12(v):
        return next(b for b in fw.onnxruntime_release(v)["builds"] if b["cuda_major"] == "12")

    assert cuda12("1.18.1")["cudnn_major"] == "9"
    assert cuda12("1.18.0")["cudnn_major"] == "8"
    assert fw.onnxruntime_release("1.18.2")["version"] == "1.18.1"
    assert fw.onnxruntime_release("0.5.0") is None


# --------------------------------------------------------------------------- PaddlePaddle, CuPy, TensorRT, MXNet


def test_paddle_post_builds():
    # https://www.paddlepaddle.org.cn/documentation/docs/en/2.4/install/index_en.html: CUDA 10.2/11.2/11.6/11.7
    assert fw.paddle_variant("2.4.2.post117")["cuda"] == "11.7"
    assert fw.paddle_variant("2.4.2")["cuda"] == "10.2"  # the plain PyPI wheel
    assert fw.paddle_variant("2.4.2.post120") is None  # 2.4 had no CUDA 12.0 build
    # PaddlePaddle/FastDeploy#4414: pip install paddlepaddle-gpu==3.2.0 -i .../packages/stable/cu126/
    assert fw.paddle_variant("3.2.0", "cu126")["index_url"] == "https://www.paddlepaddle.org.cn/packages/stable/cu126/"


# https://docs.cupy.dev/en/v13.2.0/install.html (CUDA v11.2 ... v12.4) and
# https://docs.cupy.dev/en/stable/install.html (v14: CUDA v12.0 ... v13.1)
@pytest.mark.parametrize(
    "cupy, cuda, package",
    [
        ("13.3.0", "12.4", "cupy-cuda12x"),
        ("13.3.0", "11.8", "cupy-cuda11x"),
        ("13.3.0", "11.1", None),  # cupy-cuda11x is "for CUDA 11.2 ~ 11.x" (PyPI description)
        ("14.0.1", "13.0", "cupy-cuda13x"),
        ("14.0.1", "11.8", None),
    ],
)
def test_cupy_wheel_for_cuda(cupy, cuda, package):
    assert fw.cupy_package_for(cupy, cuda) == package


def test_cupy_python_range():
    assert fw.python_supported(fw.cupy_release("14.0.0"), "3.9") is False
    assert fw.python_supported(fw.cupy_release("13.2.0"), "3.12") is True


def test_tensorrt_build_for_cuda():
    # https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/support-matrix-10/10.0.1.html
    assert fw.tensorrt_build_for("10.0.1.6", "11.8")["python_package"] == "tensorrt-cu11"
    assert fw.tensorrt_build_for("10.0.1.6", "12.4")["python_package"] == "tensorrt-cu12"
    # TensorRT 10.13.2 release notes: "Added support for CUDA 13.0, dropped support for CUDA 11.X"
    assert fw.tensorrt_build_for("10.13.2", "11.8") is None
    assert fw.tensorrt_build_for("10.13.2", "13.0")["python_package"] == "tensorrt-cu13"


def test_mxnet_is_legacy():
    row = fw.mxnet_release("1.9.1")
    assert row["legacy"] is True
    assert fw.mxnet_package_for("1.9.1", "11.2") == "mxnet-cu112"
    assert unverified(row)


def test_torch_2_14_cu130_row_agrees_with_the_real_wheel():
    # The real torch-2.14.1 wheel (PyPI's default, a CUDA 13.0 build; tests/data/wheels): its
    # torch/version.py and the cuDNN/NCCL wheels its METADATA pins are what the matrix row says.
    import os
    import re

    data = os.path.join(os.path.dirname(__file__), "data", "wheels")
    with open(os.path.join(data, "torch-2.14.1.version.py"), encoding="utf-8") as fh:
        version_py = fh.read()
    with open(os.path.join(data, "torch-2.14.1.METADATA"), encoding="utf-8") as fh:
        metadata = fh.read()
    local = re.search(r"__version__ = '([^']+)'", version_py).group(1)
    cuda = re.search(r"cuda: Optional\[str\] = '([^']+)'", version_py).group(1)
    var = fw.torch_variant(local)
    assert local == "2.14.1+cu130" and var is not None and var["cuda"] == cuda == "13.0"
    pins = dict(re.findall(r"Requires-Dist: nvidia-(cudnn|nccl)-cu13==([0-9.]+)", metadata))
    assert var["cudnn"] == pins["cudnn"] == "9.24.0.43"
    assert var["nccl"] == pins["nccl"] == "2.30.7"

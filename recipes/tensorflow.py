"""TensorFlow with GPU support (pip, pip inside conda, or a Docker image).

tensorflow.org (https://www.tensorflow.org/install/pip): from 2.14 on Linux,
``pip install 'tensorflow[and-cuda]'`` pulls CUDA and cuDNN from PyPI (NVIDIA
driver >= 525.60.13 for the CUDA 12 builds); older releases need the CUDA and
cuDNN of their "tested build configurations" row installed on the system.
Releases, their CUDA/cuDNN, Python range and GPU platforms come from the matrix
(``envdoctor/matrix/data/tensorflow.json``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor.install import validate
from envdoctor.install.plan import Plan
from envdoctor.matrix import load
from envdoctor.matrix.frameworks import python_supported, tensorflow_release

from . import RecipeError
from . import docker_image as common

COMPONENT = "tensorflow"
METHODS: Tuple[str, ...] = ("pip", "conda", "docker")
#: verified 2026-11-22 against https://www.tensorflow.org/install/pip (quick install, Linux):
#:   python3 -m pip install 'tensorflow[and-cuda]'
#: envdoctor pins it: ``tensorflow[and-cuda]==2.17.*`` (row pip_extra of the matrix); releases before 2.14
#: install plain ``tensorflow==X.Y.*`` (not verified: the pre-2.14 instructions were not in the stored copies)
PYPI = "https://pypi.org/simple"
SMOKE = "import tensorflow as tf; print(tf.__version__, tf.config.list_physical_devices('GPU'))"
#: TensorFlow 2.16's wheels (also with [and-cuda]) are known to see no GPU:
#: https://github.com/tensorflow/tensorflow/issues/63362 ("TF 2.17.0 RC0 Fails to work with GPUs (and TF 2.16 too)")
KNOWN_NO_GPU = {"2.16": "a known problem of TensorFlow 2.16's wheels, with [and-cuda] too "
                        "(https://github.com/tensorflow/tensorflow/issues/63362): install 2.17 or newer "
                        "(envdoctor install tensorflow --version 2.17)"}
SMOKE_GPU = (SMOKE + "\nimport sys\nknown = " + repr(KNOWN_NO_GPU) + "\n"
             "if not tf.config.list_physical_devices('GPU'): sys.exit('TensorFlow ' + tf.__version__ + ' sees no GPU "
             "on this GPU machine' + (': ' + known[tf.__version__[:4]] if tf.__version__[:4] in known else "
             "': check the driver with nvidia-smi'))")


def default_method(target: Any) -> str:
    return "pip"


def versions() -> List[str]:
    return [r["version"] for r in load("tensorflow")]


def _release(version: Optional[str]) -> Dict[str, Any]:
    if not version:
        return dict(load("tensorflow")[-1])
    try:
        validate.version(version)
    except validate.ValidationError as exc:
        raise RecipeError(str(exc), ["--version " + versions()[-1]]) from None
    row = tensorflow_release(version)
    if row is None:
        raise RecipeError(f"TensorFlow {version} is not in the matrix", ["--version " + v for v in versions()[-3:]])
    return row


def plan(request: Any, target: Any, facts: Any) -> Plan:
    common.check_method(request, METHODS)
    opts = common.options(request, ("cuda", "variant", "cudnn", "image_os", "env"))
    row = _release(request.version)
    if opts.get("cuda", "cpu").lower() not in ("cpu", row["cuda"]):
        raise RecipeError("TensorFlow {} is built with CUDA {} only".format(row["version"], row["cuda"]),
                          ["--option cuda=" + row["cuda"], "--option cuda=cpu (the CPU build)"])
    cpu = common.cpu_build_reason(request, facts, opts)
    platform = "linux-aarch64" if getattr(target, "arch", "x86_64") == "aarch64" else "linux-x86_64"
    if cpu is None and platform not in row["gpu_platforms"]:
        have = [r["version"] for r in load("tensorflow") if platform in r["gpu_platforms"]]
        raise RecipeError("TensorFlow {} has no GPU build for {} (it has: {})".format(
            row["version"], platform, ", ".join(row["gpu_platforms"])),
            ["envdoctor install tensorflow --version " + have[-1]] if have else [])
    py = facts.value("python.version") if facts is not None else None
    if request.method in (None, "pip") and not request.python and py and python_supported(row, py) is False:
        raise RecipeError("TensorFlow {} supports Python {}, this interpreter is {}".format(
            row["version"], row["python"], py), _python_alternatives(py))
    if cpu is not None:
        return _cpu_plan(request, target, facts, row, cpu)
    notes: List[str] = []
    driver = common.driver_version(facts)
    ok, need = common.can_run(driver, row["cuda"], minor_compat=True)
    if not ok and request.method != "docker":
        why = ("TensorFlow {} is built with CUDA {}, which needs NVIDIA driver >= {} (the CUDA {}.x "
               "minor-version compatibility floor tensorflow.org asks for); this host has {}").format(
            row["version"], row["cuda"], need, Version(row["cuda"]).major, driver)
        if not request.force:
            raise RecipeError(why, [f"envdoctor install driver --version {common.driver_branch(need or '')}"])
        notes.append("WARNING (--force): " + why)
    pin = common.release_pin(request.version, row["version"])
    extra = row.get("pip_extra")
    if extra:
        req = extra + pin
        notes.append("{} brings CUDA {} and cuDNN {} as NVIDIA wheels from PyPI (no system CUDA needed)".format(
            extra, row["cuda"], row["cudnn"]))
    else:
        req = "tensorflow" + pin
        notes.append("TensorFlow {} uses the system CUDA {} and cuDNN {}: envdoctor install cuda --version {} "
                     "--method redist --prefix ~/cuda-{} and envdoctor install cudnn (tensorflow.org tested build "
                     "configurations)".format(row["version"], row["cuda"], row["cudnn"], row["cuda"], row["cuda"]))
    notes.append("matrix: {} (checked {})".format(row["source"]["url"], row["source"]["checked"]))
    notes += common.unverified_note([row], "TensorFlow " + row["version"])
    smoke = common.smoke_for(SMOKE, SMOKE_GPU, facts)
    what = common.PipInstall((req,), smoke=smoke, python_spec=row.get("python"))
    if request.mirror:
        what = common.PipInstall((req,), index_url=common.index_base(request, PYPI), smoke=smoke,
                                 python_spec=row.get("python"))
    return common.plan_for_method(
        request, target, facts, component=COMPONENT, version=row["version"], what=what,
        title="install TensorFlow {} (CUDA {}, cuDNN {})".format(row["version"], row["cuda"], row["cudnn"]),
        notes=notes, image_cuda=common.image_cuda_for(row["cuda"]), name_tag=row["version"],
        need_cudnn=not extra, conda_default_env="tensorflow")


def _cpu_plan(request: Any, target: Any, facts: Any, row: Dict[str, Any], why: str) -> Plan:
    """The plain ``tensorflow`` wheel, which runs on the CPU (tensorflow.org/install/pip: the [and-cuda]
    extra only adds the GPU libraries)."""
    req = "tensorflow" + common.release_pin(request.version, row["version"])
    what = common.PipInstall((req,), index_url=common.index_base(request, PYPI) if request.mirror else None,
                             smoke=SMOKE, python_spec=row.get("python"))
    notes = ["CPU build: " + why, "matrix: {} (checked {})".format(row["source"]["url"], row["source"]["checked"])]
    notes += common.unverified_note([row], "TensorFlow " + row["version"])
    return common.plan_for_method(request, target, facts, component=COMPONENT, version=row["version"], what=what,
                                  title="install TensorFlow {} (CPU build)".format(row["version"]), notes=notes,
                                  image_cuda=None, name_tag=row["version"] + "-cpu", conda_default_env="tensorflow")


def _python_alternatives(py: str) -> List[str]:
    fits = [r["version"] for r in load("tensorflow") if python_supported(r, py)]
    alts = [f"envdoctor install tensorflow --version {fits[-1]} (supports Python {py})"] if fits else []
    return alts + ["--python /path/to/another/python", "--method conda"]

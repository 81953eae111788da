"""One table of the Python frameworks envdoctor knows: what each is called, whether it is a component
findings can name, which matrix table holds its builds, whether ``advise`` answers for it and which
install recipe installs it.

The probe (``envdoctor/probes/frameworks.py``), the checks, the report's layers, ``advise``, its
``--framework`` choices and the recipes' registry read it; ``tests/test_registries.py`` cross-checks
them, so a framework added here without its probe, data file or recipe fails the suite.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Tuple


class Framework(NamedTuple):
    name: str  # fact key ``framework.<name>`` and, for a component, its name in findings
    display: str  # how users know it
    component: bool  # a finding can concern it (a layer of the report of its own)
    matrix_area: Optional[str] = None  # envdoctor/matrix/data/<area>.json: its builds and what they need
    advise: bool = False  # `envdoctor advise` chooses a build of it
    recipe: Optional[str] = None  # `envdoctor install <recipe>`
    companion_of: Optional[str] = None  # reported on that framework's line (torchvision on torch's)
    counts: bool = True  # installed alone, it is "a framework installed" (torchvision never comes alone)
    #: the Python distributions (PyPI project names, normalised) that install it: a regular expression
    distributions: str = ""
    #: those of them that are CPU-only builds whatever the machine (None: the build is decided otherwise)
    cpu_distributions: Optional[str] = None


FRAMEWORKS: Tuple[Framework, ...] = (
    Framework("torch", "PyTorch", True, "torch", advise=True, recipe="pytorch", distributions="torch"),
    Framework("tensorflow", "TensorFlow", True, "tensorflow", advise=True, recipe="tensorflow",
              distributions=r"tensorflow(-cpu|-gpu|-intel|-rocm|-aarch64)?|tf-nightly(-gpu|-cpu)?|intel-tensorflow|"
                            r"nvidia-tensorflow", cpu_distributions=r"tensorflow-cpu|tf-nightly-cpu|intel-tensorflow"),
    Framework("jax", "JAX", True, "jax", advise=True, recipe="jax", distributions="jax|jaxlib"),
    Framework("onnxruntime", "ONNX Runtime", True, "onnxruntime", advise=True,
              distributions=r"onnxruntime(-gpu|-training|-directml|-openvino|-rocm)?|ort-nightly(-gpu)?",
              cpu_distributions=r"onnxruntime|ort-nightly"),
    Framework("cupy", "CuPy", True, "cupy", advise=True, distributions=r"cupy(-cuda(\d+x|\d+))?"),
    Framework("paddle", "PaddlePaddle", True, "paddle", advise=True, distributions="paddlepaddle(-gpu)?",
              cpu_distributions="paddlepaddle"),
    Framework("mxnet", "MXNet", True, "mxnet", distributions=r"mxnet(-cu\d+)?(mkl)?", cpu_distributions="mxnet(mkl)?"),
    Framework("tensorrt", "TensorRT (Python)", False, "tensorrt",  # findings name the library layer
              distributions=r"tensorrt(-cu\d+)?([-_](libs|bindings))?"),
    Framework("keras", "Keras", False, companion_of="tensorflow", distributions="keras"),
    Framework("torchvision", "torchvision", False, companion_of="torch", counts=False, distributions="torchvision"),
    Framework("torchaudio", "torchaudio", False, companion_of="torch", counts=False, distributions="torchaudio"),
)

BY_NAME = {f.name: f for f in FRAMEWORKS}
#: Frameworks a finding can name as a component, in report order.
COMPONENTS: Tuple[str, ...] = tuple(f.name for f in FRAMEWORKS if f.component)
#: Frameworks `envdoctor advise` answers for, in its order.
ADVISED: Tuple[str, ...] = tuple(f.name for f in FRAMEWORKS if f.advise)
#: The frameworks whose presence means "a framework is installed" (the probe's "none installed" test).
PROBED: Tuple[str, ...] = tuple(f.name for f in FRAMEWORKS if f.counts)
#: Package shown on another framework's line -> that framework.
COMPANIONS = {f.name: f.companion_of for f in FRAMEWORKS if f.companion_of}
#: Install recipe -> framework.
RECIPES = {f.recipe: f.name for f in FRAMEWORKS if f.recipe}


def of_distribution(name: str) -> Optional[Framework]:
    """The framework a Python distribution (a PyPI project name, any spelling) installs, else None."""
    import re

    key = re.sub(r"[-_.]+", "-", name).lower()
    for f in FRAMEWORKS:
        if f.distributions and re.fullmatch(f.distributions, key):
            return f
    return None


def cpu_only(name: str) -> bool:
    """Is this distribution a CPU-only build of its framework whatever the machine (``onnxruntime``,
    ``tensorflow-cpu``, ``paddlepaddle``...)?"""
    import re

    key = re.sub(r"[-_.]+", "-", name).lower()
    f = of_distribution(key)
    return bool(f and f.cpu_distributions and re.fullmatch(f.cpu_distributions, key))

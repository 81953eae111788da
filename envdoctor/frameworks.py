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


FRAMEWORKS: Tuple[Framework, ...] = (
    Framework("torch", "PyTorch", True, "torch", advise=True, recipe="pytorch"),
    Framework("tensorflow", "TensorFlow", True, "tensorflow", advise=True, recipe="tensorflow"),
    Framework("jax", "JAX", True, "jax", advise=True, recipe="jax"),
    Framework("onnxruntime", "ONNX Runtime", True, "onnxruntime", advise=True),
    Framework("cupy", "CuPy", True, "cupy", advise=True),
    Framework("paddle", "PaddlePaddle", True, "paddle", advise=True),
    Framework("mxnet", "MXNet", True, "mxnet"),
    Framework("tensorrt", "TensorRT (Python)", False, "tensorrt"),  # findings name the library layer
    Framework("keras", "Keras", False, companion_of="tensorflow"),
    Framework("torchvision", "torchvision", False, companion_of="torch", counts=False),
    Framework("torchaudio", "torchaudio", False, companion_of="torch", counts=False),
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

"""TensorFlow with GPU support (pip, pip inside conda, or a Docker image).

tensorflow.org (https://www.tensorflow.org/install/pip): from 2.14 on Linux,
``pip install 'tensorflow[and-cuda]'`` pulls CUDA and cuDNN from PyPI (NVIDIA
driver >= 525.60.13 for the CUDA 12 builds); older releases need the CUDA and
cuDNN of their "tested build configurations" row installed on the system.
Releases, their CUDA/cuDNN, Python range and GPU platforms come from the matrix
(``envdoctor/matrix/data/tensorflow.json``).  The build is the one ``envdoctor advise`` names
(:func:`envdoctor.advise.choose_build`): the release asked for, else the newest with a GPU build
for this platform, driver (CUDA minor-version compatibility counts), every GPU and the
interpreter's Python, with the cuDNN pin it needs on an older GPU.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor import frameworks
from envdoctor.advise import Candidate, Verdict, candidates
from envdoctor.install.plan import Plan
from envdoctor.matrix import load
from envdoctor.matrix.frameworks import python_supported

from . import RecipeError, framework
from . import docker_image as common

#: the plug-in this recipe installs (its declared data: envdoctor/frameworks/tensorflow.py).
#: verified 2026-11-22 against https://www.tensorflow.org/install/pip (quick install, Linux):
#:   python3 -m pip install 'tensorflow[and-cuda]'
#: envdoctor pins it: ``tensorflow[and-cuda]==2.17.*`` (row pip_extra of the matrix); releases before 2.14
#: install plain ``tensorflow==X.Y.*`` (not verified: the pre-2.14 instructions were not in the stored copies),
#: from PyPI (:data:`framework.PYPI`)
FW = frameworks.BY_NAME["tensorflow"]
_RECIPE = str(FW.recipe)  # `envdoctor install <recipe>`
PYPI = framework.PYPI


def _tag(want: str, row: Optional[Dict[str, Any]]) -> Optional[str]:
    """``--option cuda=12.3`` -> the build ``cuda12.3`` (None for none asked); a RecipeError when the release
    asked for (``row``), or every release, is built with another CUDA."""
    if not want or want.lower() == "cpu":
        return None
    if row is not None and want != row["cuda"]:
        raise RecipeError("TensorFlow {} is built with CUDA {} only".format(row["version"], row["cuda"]),
                          ["--option cuda=" + row["cuda"], "--option cuda=cpu (the CPU build)"])
    if not any(r["cuda"] == want for r in load("tensorflow")):
        raise RecipeError(f"no TensorFlow release in the matrix is built with CUDA {want}",
                          ["--option cuda=" + c for c in sorted({r["cuda"] for r in load("tensorflow")}, key=Version)]
                          + ["--option cuda=cpu (the CPU build)"])
    return "cuda" + want


def _choose(request: Any, target: Any, facts: Any, row: Dict[str, Any], tag: Optional[str]
            ) -> Tuple[Candidate, Verdict, List[str]]:
    """The build :func:`choose_build` picks (advise's answer): the release asked for, else the newest release
    with a GPU build for this platform, driver, every GPU and the interpreter's Python; a RecipeError saying
    why none fits (``--force``: the driver is not held against it, with a warning)."""
    image = common.image_release if request.method == "docker" else None
    machine = common.machine_target(facts, target, common.pip_python(request, facts))
    if not request.version and tag:  # the newest release of that CUDA: what a refusal explains
        row = next(r for r in reversed(load("tensorflow")) if r["cuda"] == tag[4:])
    scope = [c for c in candidates("tensorflow") if c.release == row["version"]]
    return framework.choose_or_refuse("tensorflow", _RECIPE, "TensorFlow " + row["version"], request, machine,
                                      facts, scope, row["version"] if request.version else None, row["version"], tag,
                                      image, lambda c: "envdoctor install tensorflow --version " + c.release)


def build_plan(fw: Any, request: Any, target: Any, facts: Any, opts: Dict[str, str], row: Dict[str, Any]) -> Plan:
    """The recipe's build (``recipes/framework.py`` checked the method, the options and the release ``row``): a GPU
    build with its CUDA from PyPI ([and-cuda]) or from the system, or the CPU build."""
    tag = _tag(opts.get("cuda", ""), row if request.version else None)
    cpu = common.cpu_build_reason(request, facts, opts)
    if cpu is not None:
        py = common.pip_python(request, facts)
        if py and python_supported(row, py) is False:
            raise RecipeError("TensorFlow {} supports Python {}, this interpreter is {}".format(
                row["version"], row["python"], py), _python_alternatives(py))
        return _cpu_plan(request, target, facts, row, cpu)
    cand, verdict, notes = _choose(request, target, facts, row, tag)
    newest = load("tensorflow")[-1]
    if not request.version and cand.release != newest["version"]:
        notes.append("TensorFlow {} is the newest release this machine runs; TensorFlow {} has no GPU build for "
                     "its platform, driver, GPU and Python".format(cand.release, newest["version"]))
    row = cand.row
    pin = common.release_pin(request.version, row["version"])
    extra = row.get("pip_extra")
    if extra:
        req = extra + pin
        notes.append("{} brings CUDA {} and cuDNN {} as NVIDIA wheels from PyPI (no system CUDA needed)".format(
            extra, row["cuda"], row["cudnn"]))
    else:
        req = (row.get("package") or "tensorflow") + pin
        notes.append("TensorFlow {} uses the system CUDA {} and cuDNN {}: envdoctor install cuda --version {} "
                     "--method redist --prefix ~/cuda-{} and envdoctor install cudnn (tensorflow.org tested build "
                     "configurations)".format(row["version"], row["cuda"], row["cudnn"], row["cuda"], row["cuda"]))
    notes += verdict.pin_notes + ([verdict.driver_note] if verdict.driver_note else [])
    notes.append("matrix: {} (checked {})".format(row["source"]["url"], row["source"]["checked"]))
    notes += common.unverified_note([row], "TensorFlow " + row["version"])
    what = common.PipInstall((req,) + tuple(verdict.pins),
                             index_url=common.index_base(request, PYPI) if request.mirror else None,
                             smoke=common.smoke_for(FW.smoke, FW.smoke_gpu, facts), python_spec=row.get("python"))
    p = common.plan_for_method(
        request, target, facts, component=_RECIPE, version=row["version"], what=what,
        title="install TensorFlow {} (CUDA {}, cuDNN {})".format(row["version"], row["cuda"], row["cudnn"]),
        notes=notes, image_cuda=common.image_cuda_for(row["cuda"]), name_tag=row["version"],
        need_cudnn=not extra, conda_default_env="tensorflow")
    forced = any(n.startswith("WARNING (--force)") for n in notes)  # the driver deliberately not held against it
    if request.method != "docker" and not forced:  # an image's TensorFlow is not the machine's
        p.provides = framework.build_provides("tensorflow", cand)
    return p


def _cpu_plan(request: Any, target: Any, facts: Any, row: Dict[str, Any], why: str) -> Plan:
    """The plain ``tensorflow`` wheel, which runs on the CPU (tensorflow.org/install/pip: the [and-cuda]
    extra only adds the GPU libraries)."""
    req = "tensorflow" + common.release_pin(request.version, row["version"])
    what = common.PipInstall((req,), index_url=common.index_base(request, PYPI) if request.mirror else None,
                             smoke=FW.smoke, python_spec=row.get("python"))
    notes = ["CPU build: " + why, "matrix: {} (checked {})".format(row["source"]["url"], row["source"]["checked"])]
    notes += common.unverified_note([row], "TensorFlow " + row["version"])
    return common.plan_for_method(request, target, facts, component=_RECIPE, version=row["version"], what=what,
                                  title="install TensorFlow {} (CPU build)".format(row["version"]), notes=notes,
                                  image_cuda=None, name_tag=row["version"] + "-cpu", conda_default_env="tensorflow")


def _python_alternatives(py: str) -> List[str]:
    fits = [r["version"] for r in load("tensorflow") if python_supported(r, py)]
    alts = [f"envdoctor install tensorflow --version {fits[-1]} (supports Python {py})"] if fits else []
    return alts + ["--python /path/to/another/python", "--method conda"]


# the rest of the recipe (its methods, options, versions, release, alternatives, plan) is the one framework recipe's,
# from the plug-in's declared install data, around build_plan above
framework.recipe_module(FW, sys.modules[__name__])

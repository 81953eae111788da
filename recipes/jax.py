"""JAX with its CUDA plugin (pip, pip inside conda, or a Docker image).

The JAX installation guide (https://docs.jax.dev/en/latest/installation.html)
installs NVIDIA GPU support with ``pip install -U "jax[cuda12]"`` (or
``jax[cuda13]``), which pulls the ``jax-cudaNN-plugin`` and CUDA/cuDNN from
PyPI.  The extras, plugins and driver floors per jax range come from the
matrix (``envdoctor/matrix/data/jax.json``).  The build is the one ``envdoctor advise``
names (:func:`envdoctor.advise.choose_build`): of the release asked for, else of the newest
release with wheels for this driver, every GPU and the interpreter's Python; within it the
newest CUDA major the driver runs.  Old releases' CUDA jaxlib wheels come from JAX's own
links page (``--find-links``).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import frameworks
from envdoctor.advise import JAX_OLD_FIND_LINKS, Candidate, Verdict, candidates
from envdoctor.install.plan import Plan
from envdoctor.matrix import load

from . import RecipeError, framework
from . import docker_image as common

#: the plug-in this recipe installs (its declared data: envdoctor/frameworks/jax.py).
#: verified 2026-11-22 against https://docs.jax.dev/en/latest/installation.html ("Summary", GPU NVIDIA):
#:   pip install -U "jax[cuda13]"   (jax[cuda12] for CUDA 12)
#: envdoctor runs ``python -m pip install 'jax[cudaNN]==<version>'`` (pinned, so no -U), from PyPI
#: (:data:`framework.PYPI`)
FW = frameworks.BY_NAME["jax"]
_RECIPE = str(FW.recipe)  # `envdoctor install <recipe>`
PYPI = framework.PYPI


def _cpu_plan(request: Any, target: Any, facts: Any, row: Dict[str, Any], why: str) -> Plan:
    """Plain ``jax``: its default install is CPU-only (docs.jax.dev installation, "CPU: pip install -U jax")."""
    req = "jax" + (f"=={request.version}" if request.version else "")
    what = common.PipInstall((req,), index_url=common.index_base(request, PYPI) if request.mirror else None,
                             smoke=FW.smoke, python_spec=row.get("python"))
    notes = ["CPU build: " + why] + common.unverified_note([row], "jax " + row["jax"])
    return common.plan_for_method(request, target, facts, component=_RECIPE, version=request.version or row["jax"],
                                  what=what, title=f"install JAX ({req}) for the CPU", notes=notes,
                                  image_cuda=None, name_tag=(request.version or "latest") + "-cpu",
                                  conda_default_env="jax")


def _tag(want: Optional[str], row: Optional[Dict[str, Any]]) -> Optional[str]:
    """``--option cuda=12`` (or ``cuda12``, ``12.8``) -> the wheel variant ``cuda12``; a RecipeError when the
    release asked for (``row``), or every release, has no such wheels."""
    if not want:
        return None
    major = want.lower().replace("cuda", "").split(".")[0]
    tag = "cuda" + major
    have = row["variants"] if row is not None else [v for r in load("jax") for v in r["variants"]]
    if not any(v["tag"] == tag for v in have):
        tags = sorted({v["tag"] for v in have}, key=lambda t: int(t[4:]))
        raise RecipeError("jax {} has no {} wheels".format(row["jax"] if row else "(any release)", tag),
                          ["--option cuda=" + t[4:] for t in tags])
    return tag


def _candidates_of(row: Dict[str, Any], tag: Optional[str]) -> List[Candidate]:
    """advise's candidates (builds) of one jax row, optionally of one wheel variant."""
    return [c for c in candidates("jax") if c.row["jax"] == row["jax"] and (tag is None or c.variant == tag)]


def _line(c: Candidate) -> str:
    low = min((s.version for s in SpecifierSet(c.row["jax"]) if s.operator == ">="), key=Version)
    return f"envdoctor install jax --version {low} --option cuda={c.variant[4:]}"


def _choose(request: Any, target: Any, facts: Any, row: Dict[str, Any], tag: Optional[str],
            docker: bool) -> Tuple[Candidate, Verdict, List[str]]:
    """The build :func:`choose_build` picks (advise's answer): of the release asked for, else of the newest
    release with one for this machine; a RecipeError saying why none fits (``--force``: the driver is not
    held against it, with a warning)."""
    image = common.image_release if docker else None
    machine = common.machine_target(facts, target, common.pip_python(request, facts),
                                    ignore_driver=docker and bool(tag))  # an image by CUDA: refuse_image_driver
    if not request.version:  # the newest release with such wheels: what a refusal explains
        row = next(r for r in reversed(load("jax")) if _candidates_of(r, tag))
    scope = _candidates_of(row, tag)
    return framework.choose_or_refuse("jax", _RECIPE, "jax " + row["jax"], request, machine, facts, scope,
                                      scope[0].release if request.version else None,
                                      scope[0].release if scope else None, tag, image, _line)


def build_plan(fw: Any, request: Any, target: Any, facts: Any, opts: Dict[str, str], row: Dict[str, Any]) -> Plan:
    """The recipe's build (``recipes/framework.py`` checked the method, the options and the release ``row``): a
    wheel variant of a jax range, or the CPU build."""
    cpu = common.cpu_build_reason(request, facts, opts)
    if cpu is not None:
        return _cpu_plan(request, target, facts, row, cpu)
    tag = _tag(opts.get("cuda"), row if request.version else None)
    cand, verdict, notes = _choose(request, target, facts, row, tag, request.method == "docker")
    newest = load("jax")[-1]
    if not request.version and cand.row["jax"] != newest["jax"]:
        notes.append("jax {} is the newest release this machine runs; jax {} has no build for its GPU, driver and "
                     "Python".format(cand.row["jax"], newest["jax"]))
    row = cand.row
    var = next(v for v in row["variants"] if v["tag"] == cand.variant)
    pin = f"=={request.version}" if request.version else ("" if row["jax"] == newest["jax"] else row["jax"])
    req = var["pip_extra"] + pin
    notes.append("{} {}: built with CUDA {} and cuDNN {}; accepts CUDA {}, cuDNN {}{} (matrix: {})".format(
        var["pip_extra"], row["jax"], var["cuda_built"], var["cudnn_built"], var["cuda"], var["cudnn"],
        ", driver >= " + var["min_driver"] if var.get("min_driver") else "", row["source"]["url"]))
    notes += verdict.pin_notes + ([verdict.driver_note] if verdict.driver_note else [])
    if "_local" in var["pip_extra"]:
        notes.append("this extra uses the system CUDA and cuDNN: install them first (envdoctor install cuda)")
    notes += common.unverified_note([row], "jax " + row["jax"])
    what = common.PipInstall((req,) + tuple(verdict.pins),
                             index_url=common.index_base(request, PYPI) if request.mirror else None,
                             find_links=JAX_OLD_FIND_LINKS if var.get("plugin") is None else None,
                             smoke=common.smoke_for(FW.smoke, FW.smoke_gpu, facts), python_spec=row.get("python"))
    image = common.image_cuda_for(var["cuda_built"])
    low = min((s.version for s in SpecifierSet(row["jax"]) if s.operator == ">="), key=Version)
    name = request.version or ("latest" if row["jax"] == newest["jax"] else low)
    p = common.plan_for_method(request, target, facts, component=_RECIPE, version=request.version or row["jax"],
                               what=what, title="install JAX ({}) with CUDA {} wheels".format(req, var["tag"][4:]),
                               notes=notes, image_cuda=image, name_tag=name + "-" + var["tag"],
                               conda_default_env="jax")
    forced = any(n.startswith("WARNING (--force)") for n in notes)  # the driver deliberately not held against it
    if request.method != "docker" and not forced:  # an image's jax is not the machine's
        p.provides = framework.build_provides("jax", cand, request.version)
    return p


# the rest of the recipe (its methods, options, versions, release, alternatives, plan) is the one framework recipe's,
# from the plug-in's declared install data, around build_plan above
framework.recipe_module(FW, sys.modules[__name__])

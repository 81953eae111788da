"""JAX with its CUDA plugin (pip, pip inside conda, or a Docker image).

The JAX installation guide (https://docs.jax.dev/en/latest/installation.html)
installs NVIDIA GPU support with ``pip install -U "jax[cuda12]"`` (or
``jax[cuda13]``), which pulls the ``jax-cudaNN-plugin`` and CUDA/cuDNN from
PyPI.  The extras, plugins and driver floors per jax range come from the
matrix (``envdoctor/matrix/data/jax.json``); the newest CUDA major the driver
runs is chosen.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from envdoctor.install import validate
from envdoctor.install.plan import Plan
from envdoctor.matrix import load
from envdoctor.matrix.frameworks import jax_release

from . import RecipeError
from . import docker_image as common

COMPONENT = "jax"
METHODS: Tuple[str, ...] = ("pip", "conda", "docker")
#: verified 2026-11-22 against https://docs.jax.dev/en/latest/installation.html ("Summary", GPU NVIDIA):
#:   pip install -U "jax[cuda13]"   (jax[cuda12] for CUDA 12)
#: envdoctor runs ``python -m pip install 'jax[cudaNN]==<version>'`` (pinned, so no -U)
PYPI = "https://pypi.org/simple"
SMOKE = "import jax; print(jax.__version__, jax.devices())"
SMOKE_GPU = (SMOKE + "\nimport sys\nif not any(d.platform == 'gpu' for d in jax.devices()): sys.exit('jax ' + "
             "jax.__version__ + ' sees no GPU on this GPU machine (jax.devices() lists none): check the driver with "
             "nvidia-smi, and that the CUDA plugin was installed')")


def default_method(target: Any) -> str:
    return "pip"


def versions() -> List[str]:
    """The first jax version of each row (a row covers a range with the same CUDA wheels)."""
    out = []
    for r in load("jax"):
        m = re.search(r">=\s*([0-9.]+)", r["jax"])
        if m:
            out.append(m.group(1))
    return out


def _release(version: Optional[str]) -> Dict[str, Any]:
    if not version:
        return dict(load("jax")[-1])
    try:
        validate.version(version)
    except validate.ValidationError as exc:
        raise RecipeError(str(exc), []) from None
    row = jax_release(version)
    if row is None:
        raise RecipeError(f"jax {version} is not in the matrix", ["--version " + v for v in versions()[-2:]])
    return row


def _min_driver(var: Dict[str, Any]) -> Optional[str]:
    return var.get("min_driver") or common.hardware.min_driver_for_cuda(var["cuda_built"], minor_compat=True)


def _cpu_plan(request: Any, target: Any, facts: Any, row: Dict[str, Any], why: str) -> Plan:
    """Plain ``jax``: its default install is CPU-only (docs.jax.dev installation, "CPU: pip install -U jax")."""
    req = "jax" + (f"=={request.version}" if request.version else "")
    what = common.PipInstall((req,), index_url=common.index_base(request, PYPI) if request.mirror else None,
                             smoke=SMOKE, python_spec=row.get("python"))
    notes = ["CPU build: " + why] + common.unverified_note([row], "jax " + row["jax"])
    return common.plan_for_method(request, target, facts, component=COMPONENT, version=request.version or row["jax"],
                                  what=what, title=f"install JAX ({req}) for the CPU", notes=notes,
                                  image_cuda=None, name_tag=(request.version or "latest") + "-cpu",
                                  conda_default_env="jax")


def _driver_meets(driver: Optional[Version], needed: Optional[str]) -> bool:
    """True when the host's driver (None: unknown) is at least ``needed`` (None: no floor)."""
    return driver is None or needed is None or driver >= Version(needed)


def plan(request: Any, target: Any, facts: Any) -> Plan:
    common.check_method(request, METHODS)
    opts = common.options(request, ("cuda", "variant", "cudnn", "image_os", "env"))
    row = _release(request.version)
    cpu = common.cpu_build_reason(request, facts, opts)
    if cpu is not None:
        return _cpu_plan(request, target, facts, row, cpu)
    bad = [cc for cc in common.compute_capabilities(facts) if Version(cc) < Version(row["min_sm"])]
    if bad:
        raise RecipeError("jax GPU wheels need compute capability >= {}; this machine has {}".format(
            row["min_sm"], ", ".join(bad)), ["envdoctor install jax --method pip (CPU only: pip install jax)"])
    variants = sorted(row["variants"], key=lambda v: int(v["tag"][4:]), reverse=True)
    if opts.get("cuda"):
        major = opts["cuda"].replace("cuda", "").split(".")[0]
        variants = [v for v in variants if v["tag"] == "cuda" + major]
        if not variants:
            raise RecipeError(f"jax {row['jax']} has no cuda{major} wheels",
                              ["--option cuda=" + v["tag"] for v in row["variants"]])
    driver = common.driver_version(facts)
    usable = [v for v in variants if _driver_meets(driver, _min_driver(v))]
    notes: List[str] = []
    if not usable:
        low = min(variants, key=lambda v: Version(_min_driver(v) or "0"))
        why = "{} needs NVIDIA driver >= {}, this host has {}".format(low["pip_extra"], _min_driver(low), driver)
        if not request.force:
            raise RecipeError(why, [f"envdoctor install driver --version "
                                    f"{common.driver_branch(_min_driver(low) or '')}"])
        notes.append("WARNING (--force): " + why)
        usable = [low]
    var = usable[0]
    pin = f"=={request.version}" if request.version else ""
    req = var["pip_extra"] + pin
    notes.append("{} {}: built with CUDA {} and cuDNN {}; accepts CUDA {}, cuDNN {}{} (matrix: {})".format(
        var["pip_extra"], row["jax"], var["cuda_built"], var["cudnn_built"], var["cuda"], var["cudnn"],
        ", driver >= " + var["min_driver"] if var.get("min_driver") else "", row["source"]["url"]))
    if var["pip_extra"].endswith("_local]"):
        notes.append("this extra uses the system CUDA and cuDNN: install them first (envdoctor install cuda)")
    notes += common.unverified_note([row], "jax " + row["jax"])
    what = common.PipInstall((req,), index_url=common.index_base(request, PYPI) if request.mirror else None,
                             smoke=common.smoke_for(SMOKE, SMOKE_GPU, facts), python_spec=row.get("python"))
    image = common.image_cuda_for(var["cuda_built"])
    return common.plan_for_method(request, target, facts, component=COMPONENT, version=request.version or row["jax"],
                                  what=what, title="install JAX ({}) with CUDA {} wheels".format(
                                      req, var["tag"][4:]),
                                  notes=notes, image_cuda=image, name_tag=(request.version or "latest") + "-"
                                  + var["tag"], conda_default_env="jax")

"""What the framework recipes (``pytorch``, ``tensorflow``, ``jax``) share: the build they plan when only the
checks' rules stand against it, and the facts a plan adds to the machine.

Which build a recipe installs is advise's choice (:func:`envdoctor.advise.choose_build`). Whether the machine runs
it is, where a check holds the rule, that check's verdict on the facts after the plan (``envdoctor.preflight``
over :attr:`envdoctor.install.plan.Plan.provides`), as ``diagnose`` would give it once the plan ran:

- the driver against the CUDA the build was made with (``compat.driver-vs-cuda``: natively, through minor-version
  compatibility, or too old; JAX's own driver floor per CUDA wheel);
- the GPU architectures the build carries (``compat.arch-vs-builds``), for the frameworks whose precompiled
  kernels decide whether a GPU runs at all (the plug-in's ``arch_lists``, not ``runtime_compiled``).

When :func:`envdoctor.advise.choose_build` finds no build of the release asked for only because of those rules,
the recipe plans the build it would install but for them (:func:`held_by_checks`) and the pre-flight refuses it
with the check's code and title. The rules no check holds stay advise's and the recipe's: the interpreter's
Python, the wheels' platform, the GPU floor of the cuDNN pip brings with the build, a driver that predates a GPU,
and a container image's CUDA (the container toolkit checks it natively, with no minor-version compatibility).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import frameworks
from envdoctor.advise import Candidate, Verdict, architecture_driver_reason, choose_build, cuda_floor_reason, judge


def provides_keys(name: str) -> Tuple[str, ...]:
    """The facts a plan of framework ``name`` may add (the recipe's ``PROVIDES``): the framework's own fact, and
    its kernels' (unknown until it is installed: its libraries are read by ``diagnose`` then)."""
    return ("framework." + name, "framework.%s.gpu_code" % name)


def provides(name: str, version: str, cuda: Optional[str], **more: Any) -> Dict[str, Any]:
    """The facts after a plan that installs the CUDA build of framework ``name`` ``version`` made with ``cuda``:
    ``framework.<name>`` as the frameworks probe reports an installed build (its ``version``, ``package``, ``cuda``
    and ``build``, and ``more`` of the plug-in's own fields), its GPU code not yet read (the check then reads the
    matrix's list of what the build carries)."""
    value: Dict[str, Any] = {"version": version, "public": version.split("+")[0],
                             "local": version.split("+")[1] if "+" in version else None,
                             "package": more.pop("package", None) or name, "cuda": cuda, "build": "cuda"}
    value.update(more)
    return {"framework." + name: value, "framework.%s.gpu_code" % name: None}


def lowest(spec: str) -> str:
    """The lowest version a range of releases (``>=0.4.26,<0.5``: a jax row) admits: the release it names."""
    return str(min((s.version for s in SpecifierSet(spec) if s.operator == ">="), key=Version))


def build_provides(name: str, c: Candidate, version: Optional[str] = None) -> Dict[str, Any]:
    """The facts after installing advise's candidate build ``c`` of framework ``name`` (:func:`provides`), as the
    recipe's plan provides them, ``version`` the release asked for where the build covers a range (jax's rows):
    torch's version carries its variant as the local part (``2.7.1+cu126``); TensorFlow's its cuDNN and
    distribution; jax's the jaxlib it pins."""
    if name == "torch":
        return provides(name, f"{c.release}+{c.variant}", c.cuda)
    if name == "tensorflow":
        return provides(name, c.row["version"], c.row["cuda"], cudnn=c.row["cudnn"],
                        package=c.row.get("package") or name)
    if name == "jax":
        pinned = version or lowest(c.row["jax"])
        return provides(name, pinned, c.cuda, jaxlib=pinned)
    return provides(name, version or c.release, c.cuda)


def _arch_judged(name: str) -> bool:
    """Whether ``compat.arch-vs-builds`` judges the GPU architectures of ``name``'s builds (its plug-in lists them
    and its kernels are precompiled, not compiled at run time for the GPU present)."""
    fw = frameworks.BY_NAME.get(name)
    return fw is not None and fw.arch_lists and not fw.runtime_compiled


def _arch_reason(c: Candidate, cc: str, reason: str) -> bool:
    return reason.startswith("has no code for compute capability %s " % cc) or reason == cuda_floor_reason(c.cuda, cc)


def held_by_checks(name: str, machine: Any, facts: Any, release: Optional[str], variant: Optional[str] = None,
                   image_cuda: Optional[Callable[[str], Optional[str]]] = None
                   ) -> Optional[Tuple[Candidate, Verdict]]:
    """The build of ``release`` (optionally of one ``variant``) to plan when :func:`choose_build` finds none that
    fits ``machine`` and every rule that rejects it is a check's (module docstring): advise's choice on the machine
    but for its driver (and, where the arch check judges them, its GPUs), with its verdict there. None when another
    rule rejects every build, for a container image, when the driver predates a GPU, or when the driver advise
    judged is not the one the check reads (``driver.version``: NVML's answer; advise falls back on the kernel
    module's version when NVML gives none)."""
    if image_cuda is not None or any(architecture_driver_reason(machine.driver, cc) for cc in machine.ccs):
        return None
    judged = facts.value("driver.version") if facts is not None else None
    if machine.driver is not None and machine.driver != (judged.strip() if isinstance(judged, str) else judged):
        return None
    no_driver = replace(machine, driver=None)
    chosen = choose_build(name, no_driver, release=release, variant=variant)
    if chosen is not None or not _arch_judged(name) or not machine.ccs:
        return chosen
    chosen = choose_build(name, replace(no_driver, ccs=(), cc=None), release=release, variant=variant)
    if chosen is None:
        return None
    reasons = judge(chosen[0], no_driver).reasons
    if all(any(_arch_reason(chosen[0], cc, r) for cc in machine.ccs) for r in reasons):
        return chosen
    return None


def alternatives_for(component: str, with_driver: bool) -> Callable[..., List[str]]:
    """The recipe ``component``'s ``alternatives`` hook (:func:`envdoctor.preflight.check` asks it when a driver
    finding refuses the plan): the same install with ``--with-driver`` where the recipe offers it, or the driver
    first."""
    def alternatives(version: Optional[str], facts: Any, installs_driver: bool = False) -> List[str]:
        out = []
        pinned = " --version %s" % version if version else ""
        if with_driver:
            out.append("envdoctor install %s%s --with-driver   (installs the driver it needs; reboot)" % (
                component, pinned))
        out.append("envdoctor install driver   (then this install again)")
        return out
    return alternatives

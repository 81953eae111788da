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

import types
from dataclasses import replace
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import frameworks, versions
from envdoctor.advise import (
    Candidate,
    Verdict,
    architecture_driver_reason,
    candidates,
    choose_build,
    cuda_floor_reason,
    judge,
)
from envdoctor.install import validate
from envdoctor.install.plan import Plan
from envdoctor.matrix import load
from envdoctor.matrix.frameworks import release_row

from . import RecipeError, nearest_versions
from . import docker_image as common

#: Where pip finds the wheels of TensorFlow, JAX and a plug-in's framework: PyPI's index (a mirror given to
#: ``install --mirror`` stands in for it)
PYPI = "https://pypi.org/simple"


def provides_keys(name: str) -> Tuple[str, ...]:
    """The facts a plan of framework ``name`` may add (the recipe's ``PROVIDES``): the framework's own fact, and
    its kernels' (unknown until it is installed: its libraries are read by ``diagnose`` then)."""
    return ("framework." + name, "framework.%s.gpu_code" % name)


def installed(name: str, version: Optional[str], cuda: Optional[str], **more: Any) -> Dict[str, Any]:
    """``framework.<name>`` as the frameworks probe reports an installed CUDA build of framework ``name``
    ``version`` made with ``cuda``: its ``version`` (its public part and local tag apart), ``package``, ``cuda`` and
    ``build``, and ``more`` of the plug-in's own fields. ``version`` None where pip picks the release (a companion
    reinstalled beside torch), its build's tag then given as ``local``."""
    public, _, local = (version or "").partition("+")
    value: Dict[str, Any] = {"version": version, "public": public or None, "local": local or None,
                             "package": more.pop("package", None) or name, "cuda": cuda, "build": "cuda"}
    value.update(more)
    return value


def provides(name: str, version: str, cuda: Optional[str], **more: Any) -> Dict[str, Any]:
    """The facts after a plan that installs the CUDA build of framework ``name`` ``version`` made with ``cuda``:
    ``framework.<name>`` (:func:`installed`), its GPU code not yet read (the check then reads the matrix's list of
    what the build carries)."""
    return {"framework." + name: installed(name, version, cuda, **more), "framework.%s.gpu_code" % name: None}


def lowest(spec: str) -> str:
    """The lowest version a range of releases (``>=0.4.26,<0.5``: a jax row) admits: the release it names."""
    return str(min((s.version for s in SpecifierSet(spec) if s.operator == ">="), key=Version))


def build_provides(name: str, c: Candidate, version: Optional[str] = None) -> Dict[str, Any]:
    """The facts after installing advise's candidate build ``c`` of framework ``name`` (:func:`provides`), as the
    recipe's plan provides them, ``version`` the release asked for where the build covers a range of releases, read
    from its plug-in's declared ``install``: the release (the first of the build's range, ``release_range``), the
    variant as the local part (``local_variant``: torch's ``2.7.1+cu126``), fields of the build's row
    (``build_fields``: TensorFlow's cuDNN and distribution), the companion pinned with it (``companion_version``:
    jax's jaxlib)."""
    spec = frameworks.BY_NAME[name].install
    release = version or (lowest(c.row[spec.release_range]) if spec.release_range else c.release)
    more: Dict[str, Any] = {key: c.row.get(field) for key, field in spec.build_fields}
    if spec.companion_version:
        more[spec.companion_version] = release
    return provides(name, release + ("+" + c.variant if spec.local_variant else ""), c.cuda, **more)


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


def choose_or_refuse(name: str, component: str, what: str, request: Any, machine: Any, facts: Any,
                     scope: List[Candidate], release: Optional[str], held_release: Optional[str], tag: Optional[str],
                     image: Optional[Callable[[str], Optional[str]]], line: Callable[[Candidate], str],
                     ignore_driver: bool = False) -> Tuple[Candidate, Verdict, List[str]]:
    """The build of framework ``name`` a recipe plans (the TensorFlow and JAX recipes'): advise's choice
    (:func:`choose_build`, of ``release`` when one was asked for, among the builds the pre-flight's judge
    ``request.accept`` accepts, not for an image nor with ``--force``); else, when only the checks' rules reject the
    builds of ``held_release``, the one :func:`held_by_checks` gives (the pre-flight refuses it with the check's code
    and title); else a RecipeError saying why none of ``scope`` (advise's candidates of the release, named ``what``)
    fits and the ``line`` of the newest build that runs here. ``--force``: the build that fits but for the driver,
    with a warning as the third value (the driver is deliberately not held against it). ``ignore_driver`` (a plan
    that installs the driver first): the build for the machine without its driver, nothing deferred to the checks
    (they judge the planned driver)."""
    if ignore_driver:
        machine = replace(machine, driver=None)
    # the pre-flight's judge (Request) judges the machine's driver: not for a planned one
    accept = None if image is not None or request.force or ignore_driver else request.accept
    chosen = choose_build(name, machine, release=release, variant=tag, image_cuda=image, accept=accept)
    if chosen is not None:
        return chosen[0], chosen[1], []
    held = None if request.force or ignore_driver else held_by_checks(name, machine, facts, held_release, tag, image)
    if held is not None:  # only the checks' rules reject it: the pre-flight refuses it with their code and title
        return held[0], held[1], []
    newest = choose_build(name, machine, variant=tag, image_cuda=image, accept=accept) if release else None
    err = common.no_build_refusal(what, component, scope, machine, image, line(newest[0]) if newest else None)
    forced = common.forced_build(scope, machine, image) if request.force else None
    if forced is not None:
        return forced[0], forced[1], ["WARNING (--force): " + err.message]
    raise err


class DriverFirst(NamedTuple):
    """What ``--with-driver`` adds to a framework plan (:func:`driver_first`)."""

    steps: List[Any]  # the driver recipe's steps, before the framework's
    reboot: bool
    provides: Dict[str, Any]  # the driver's facts after the plan (``driver.version``, ``driver.cuda_version``)

    def apply(self, p: Plan) -> None:
        """Put the driver's steps first in plan ``p``."""
        if self.steps:
            p.steps = self.steps + p.steps
            p.reboot_required = p.reboot_required or self.reboot


def driver_first(request: Any, target: Any, facts: Any, choose: Callable[[bool], Any], cuda_of: Callable[[Any], str],
                 docker: bool = False) -> Tuple[Any, DriverFirst]:
    """The build a framework recipe plans, ``choose(ignore_driver)``, and under ``--with-driver`` (a plug-in's
    declared ``install.with_driver``) the driver it needs first: when no driver is installed, or when the
    installed one runs no build (``choose(False)`` refuses), the build for the machine without its driver and the
    driver recipe's plan of the branch its CUDA (``cuda_of(build)``) needs."""
    chosen = None
    if not (request.with_driver and not docker and facts is not None and facts.value("driver.installed") is False):
        try:
            chosen = choose(False)
        except RecipeError:
            if not request.with_driver:
                raise
    if chosen is not None:
        return chosen, DriverFirst([], False, {})
    chosen = choose(True)
    cuda = cuda_of(chosen)
    need = common.hardware.min_driver_for_cuda(cuda) or ""
    steps, reboot = common.driver_plan_steps(request, target, facts, common.driver_branch(need))
    return chosen, DriverFirst(steps, reboot, {"driver.version": need, "driver.cuda_version": cuda} if need else {})


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


# -- the recipe every framework is installed by ---------------------------------------------------------------------


def label(fw: Any) -> str:
    """How install's messages name framework ``fw`` (its plug-in's ``install.label``, else its display name)."""
    return str(fw.install.label or fw.display)


def release_versions(fw: Any) -> List[str]:
    """The releases ``install <recipe> --list`` names: each row's ``version``, or where a row covers a range of
    releases (``install.release_range``), the first release of each range."""
    field = fw.install.release_range
    return [lowest(r[field]) if field else r["version"] for r in load(fw.matrix_area)]


def release(fw: Any, version: Optional[str]) -> Dict[str, Any]:
    """The row of ``fw``'s table a ``--version`` names (:func:`envdoctor.matrix.frameworks.release_row`; without
    one, the newest), or a RecipeError naming the newest releases (``install.suggest`` of them)."""
    rows = load(fw.matrix_area)
    if not version:
        if not rows:
            raise RecipeError("the matrix has no %s release" % label(fw))
        return dict(rows[-1])
    known = release_versions(fw)
    try:
        validate.version(version)
    except validate.ValidationError as exc:
        raise RecipeError(str(exc), ["--version " + known[-1]] if known else []) from None
    row = release_row(fw.matrix_area, version, fw.install.release_range)
    if row is None:
        raise RecipeError("%s %s is not in the matrix" % (label(fw), version),
                          ["--version " + v for v in nearest_versions(version, known, fw.install.suggest)])
    return row


def recipe_module(fw: Any, hooks: Optional[types.ModuleType] = None) -> types.ModuleType:
    """The recipe of framework plug-in ``fw`` (its ``recipe`` names it): a module like every recipe's
    (``COMPONENT``, ``METHODS``, ``PROVIDES``, ``alternatives``, ``default_method``, ``versions``, ``SMOKE``,
    ``SMOKE_GPU``, ``plan``), all of them read from the plug-in's declared data (``install``: methods, options,
    ``--with-driver``, how a ``--version`` names a row; ``smoke``, ``smoke_gpu``). Its ``plan`` checks the method,
    the options and the release asked for, then plans the build: with ``hooks`` (the module ``recipes/<recipe>.py``,
    where a framework's builds need code of their own), its ``build_plan``; without, advise's build of the plug-in's
    ``pip_package`` (:func:`envdoctor.advise.plugin_candidates`) with pip, pip inside conda or a Docker image.
    ``hooks`` itself becomes the module, keeping what it defines: a hook module calls
    ``recipe_module(FW, sys.modules[__name__])`` as its last line, so importing it gives the whole recipe."""
    module = hooks or types.ModuleType("envdoctor.recipes." + fw.recipe, "%s (%s's plug-in and data file)." % (
        fw.display, fw.name))
    build = getattr(hooks, "build_plan", None) or _pip_build_plan
    surface: Dict[str, Any] = {
        "COMPONENT": fw.recipe, "METHODS": fw.install.methods, "PROVIDES": provides_keys(fw.name),
        "alternatives": alternatives_for(fw.recipe, with_driver=fw.install.with_driver),
        "default_method": lambda target: fw.install.methods[0], "versions": lambda: release_versions(fw),
        "SMOKE": fw.smoke, "SMOKE_GPU": fw.smoke_gpu,
        "plan": lambda request, target, facts: plan(fw, build, request, target, facts)}
    for name, value in surface.items():
        setattr(module, name, value)
    return module


def plan(fw: Any, build: Callable[..., Plan], request: Any, target: Any, facts: Any) -> Plan:
    """Framework ``fw``'s plan: the method and options the request names checked against its plug-in's, the row of
    the release asked for (:func:`release`), then ``build(fw, request, target, facts, opts, row)``."""
    common.check_method(request, fw.install.methods)
    opts = common.options(request, fw.install.options)
    return build(fw, request, target, facts, opts, release(fw, request.version))


def _pip_build_plan(fw: Any, request: Any, target: Any, facts: Any, opts: Dict[str, str],
                    row: Dict[str, Any]) -> Plan:
    """The build of a plug-in's ``pip_package`` (its data file's rows: one wheel per release, running with each
    CUDA its row lists)."""
    rows = load(fw.matrix_area)
    if request.with_driver and not fw.install.with_driver:
        raise RecipeError("the %s recipe does not install the driver (--with-driver)" % fw.recipe,
                          ["envdoctor install driver   (then this install again)"])
    cpu = common.cpu_build_reason(request, facts, opts)
    if cpu is not None:
        raise RecipeError("%s: no CPU build is known to envdoctor (%s)" % (label(fw), cpu))
    want = opts.get("cuda", "").lower().replace("cuda", "")
    if want:  # one wheel per release runs with each CUDA its row lists: the option only narrows the releases
        listed = sorted({c for r in rows for c in _cudas(r)}, key=Version)
        if want not in listed:
            raise RecipeError("no %s release in the matrix runs with CUDA %s" % (label(fw), want),
                              ["--option cuda=" + c for c in listed])
        if request.version and want not in _cudas(row):
            raise RecipeError("%s %s runs with CUDA %s" % (label(fw), row["version"], ", ".join(_cudas(row))),
                              ["--option cuda=" + c for c in _cudas(row)])
    image = common.image_release if request.method == "docker" else None
    machine = common.machine_target(facts, target, common.pip_python(request, facts))
    fits = [c for c in candidates(fw.name) if not want or want in _cudas(c.row)]
    if not request.version and fits:  # the newest release with such a wheel: what a refusal explains
        row = fits[0].row
    scope = [c for c in fits if c.release == row["version"]]

    def choose(ignore_driver: bool) -> Tuple[Candidate, Verdict, List[str]]:
        return choose_or_refuse(fw.name, fw.recipe, "%s %s" % (label(fw), row["version"]), request, machine, facts,
                                scope, row["version"] if request.version else None, row["version"], None, image,
                                lambda c: "envdoctor install %s --version %s" % (fw.recipe, c.release), ignore_driver)

    # --with-driver (the plug-in's install.with_driver): the driver the build needs first
    (cand, verdict, notes), driver = driver_first(request, target, facts, choose, lambda c: c[0].cuda or "",
                                                  docker=request.method == "docker")
    row = cand.row
    notes = ["%s %s (matrix: %s)" % (label(fw), row["version"], row["source"]["url"])] + \
        cand.notes + notes + verdict.pin_notes + ([verdict.driver_note] if verdict.driver_note else [])
    notes += common.unverified_note([row], "%s %s" % (label(fw), row["version"]))
    smoke = fw.smoke or "import %s; print(%s.__version__)" % (fw.name, fw.name)
    what = common.PipInstall((fw.pip_package + versions.pip_pin(request.version or row["version"]),)
                             + tuple(verdict.pins),
                             # its own index, a folder per build variant; PyPI's only for a mirror standing in
                             index_url="%s/%s" % (common.index_base(request, fw.install.pip_index).rstrip("/"),
                                                  cand.variant) if fw.install.pip_index
                             else common.index_base(request, PYPI) if request.mirror else None,
                             smoke=common.smoke_for(smoke, fw.smoke_gpu or smoke, facts),
                             python_spec=row.get("python"))
    cuda = want or cand.cuda or ""  # the CUDA asked for (its wheel runs with it), else the least it needs
    p = common.plan_for_method(request, target, facts, component=fw.recipe, version=row["version"], what=what,
                               title="install %s %s (CUDA %s)" % (fw.display, row["version"], cuda),
                               notes=notes, image_cuda=common.image_cuda_for(cuda),
                               name_tag="%s-%s" % (row["version"], cand.variant), conda_default_env=fw.name)
    driver.apply(p)
    forced = any(n.startswith("WARNING (--force)") for n in notes)  # the driver deliberately not held against it
    if request.method != "docker" and not forced:  # an image's framework is not the machine's
        p.provides = dict(build_provides(fw.name, cand), **driver.provides)
    return p


def _cudas(row: Dict[str, Any]) -> List[str]:
    """The CUDA releases a plug-in's table row says its wheel runs with."""
    listed = row.get("cuda")
    return [c for c in (listed if isinstance(listed, list) else [listed]) if isinstance(c, str)]

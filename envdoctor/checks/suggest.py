"""The ``envdoctor install ...`` line a finding suggests, built by the recipe that would run it.

A check never writes an install line by hand: it asks :func:`install_line` for the component and
version it wants, and the recipe plans it for this machine's target from the same facts
(``envdoctor install ... --dry-run --snapshot`` does exactly this).  When the recipe refuses (an
unsupported target, a branch it cannot pin there), the line is ``None`` and the finding keeps only
its prose and commands, so a suggested line is always one ``envdoctor install`` accepts.

``floor=True`` means the version is a minimum (a driver branch "or newer"): when the recipe cannot
pin that branch on this target, its newest is suggested instead, which satisfies any floor.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

#: Where recipes plan for a machine they do not run on (the CLI's default for a snapshot).
DEFAULT_PYTHON = "/usr/bin/python3"
#: The oldest CUDA with redistributable archives (redistrib_X.Y.Z.json): 11.0-11.3 have none
#: (https://github.com/JuliaPackaging/Yggdrasil/pull/7213, "dropping support for CUDA 11.0-11.3, which don't
#: have redistributable sources"; read 2026-11-25).  The redist recipe itself only finds out at download time.
OLDEST_REDIST_CUDA = "11.4"
#: The facts an install line depends on (the recipes' target and plan, the interpreter): part of the ``reads=``
#: of every check whose fix asks :func:`install_line` or suggests a build (``envdoctor.advise.choose_build``).
INSTALL_LINE_READS = ("os.*", "driver.installed", "driver.version", "driver.cuda_version", "driver.secure_boot",
                      "gpu.*", "gpu.*.*", "python.executable", "python.version", "python.environment")


def _python(facts: Any) -> str:
    theirs = facts.value("python.executable")
    if isinstance(theirs, str) and theirs.startswith("/") and not any(c.isspace() for c in theirs):
        return theirs
    return DEFAULT_PYTHON


def _render(component: str, version: Optional[str], method: Optional[str], prefix: Optional[str],
            options: Dict[str, str]) -> str:
    argv: List[str] = ["envdoctor", "install", component]
    if version:
        argv += ["--version", version]
    if method:
        argv += ["--method", method]
    if prefix:
        argv += ["--prefix", prefix]
    for key, value in sorted(options.items()):
        argv += ["--option", "%s=%s" % (key, value)]
    return " ".join(argv)


def _redist_ok(component: str, version: str, prefix: str, facts: Any = None) -> bool:
    """The no-root redist method plans from NVIDIA's manifest (fetched over the network when it runs); here
    the request is validated as the CLI validates it, the version must be one the recipe knows, and (for CUDA)
    the installed driver must run it natively (:func:`envdoctor.matrix.hardware.driver_runs`, the rule the
    ``compat.driver-vs-cuda`` check applies: under minor-version compatibility ``install``'s pre-flight may refuse
    it, nvcc's default build being PTX the driver cannot JIT)."""
    from envdoctor.recipes import RecipeError, load_recipe

    from ..install import validate
    from ..install.validate import ValidationError

    try:
        validate.version(version)
        validate.prefix(prefix)
        recipe = load_recipe(component)
        known = recipe.versions()
    except (ValidationError, RecipeError, ImportError):
        return False
    if component == "cuda" and facts is not None and (not _driver_runs(version, facts)
                                                      or not _targets_gpus(version, facts)):
        return False
    mm = ".".join(version.split(".")[:2])
    from packaging.version import InvalidVersion, Version

    try:
        if component == "cuda" and Version(mm) < Version(OLDEST_REDIST_CUDA):
            return False
    except InvalidVersion:
        return False
    return any(k == version or k == mm or k.startswith(mm + ".") for k in known)


def _driver_runs(version: str, facts: Any) -> bool:
    """Whether the installed driver runs CUDA ``version`` natively; True when that is unknown."""
    from ..matrix.hardware import driver_runs

    installed = facts.value("driver.version")
    verdict = driver_runs(version, installed if isinstance(installed, str) else None,
                          facts.value("driver.cuda_version"), wsl=bool(facts.value("os.wsl")))
    return verdict in (None, "ok")


def _targets_gpus(version: str, facts: Any) -> bool:
    """Whether CUDA ``version``'s nvcc can compile for every GPU NVML answered for (the rule
    ``cuda.toolkit_cannot_target_gpu`` applies after the install); True where that is unknown."""
    from ..matrix.hardware import cuda_supports_cc

    mm = ".".join(version.split(".")[:2])
    for f in facts.named("gpu.", "compute_capability"):
        if f.known and cuda_supports_cc(mm, str(f.value)) is False:
            return False
    return True


def install_line(facts: Any, component: str, version: Optional[str] = None, method: Optional[str] = None,
                 prefix: Optional[str] = None, floor: bool = False, **options: str) -> Optional[str]:
    """``envdoctor install COMPONENT ...`` as the recipe plans it for this machine, or None when it refuses."""
    for line, _plan in _planned(facts, component, version, method, prefix, floor, options):
        return line
    return None


def preload_planner() -> None:
    """Import what :func:`install_line` plans the driver with (the recipes, the install planner, the driver's
    recipe), ahead of the checks: ``diagnose`` does it while the probes wait, on a machine with an NVIDIA driver,
    where the driver findings' fixes plan one (about 0.1 s of imports otherwise paid after the probes)."""
    try:
        from envdoctor.recipes import load_recipe

        load_recipe("driver")
    except Exception:  # noqa: BLE001,S110 - install_line meets the same failure and answers None
        pass


def _planned(facts: Any, component: str, version: Optional[str], method: Optional[str], prefix: Optional[str],
             floor: bool, options: Dict[str, str]) -> List[Tuple[str, Any]]:
    try:
        from envdoctor.recipes import RecipeError, Request, load_recipe, target_from_facts
    except ImportError:
        return []
    from ..install.validate import ValidationError

    if prefix is not None and component in ("cuda", "cudnn") and method in (None, "redist"):
        if version and _redist_ok(component, version, prefix, facts):
            return [(_render(component, version, None, prefix, options), None)]
        return []
    try:
        module = load_recipe(component)
        target = target_from_facts(facts)
    except (RecipeError, ImportError):
        return []
    tries = [version] + ([None] if floor and version else [])
    for v in tries:
        request = Request(component=component, version=v, method=method, prefix=prefix, python=_python(facts),
                          options=dict(options))
        try:
            plan = module.plan(request, target, facts)
        except (RecipeError, ValidationError):
            continue
        return [(_render(component, v, method, prefix, options), plan)]
    return []


def rpm_tool(facts: Any) -> str:
    """The package manager of a RHEL-family machine: yum on EL7 and older (dnf came with RHEL 8), dnf after."""
    version = str(facts.value("os.version") or "")
    major = version.split(".")[0]
    if facts.value("os.family") == "rhel" or facts.value("os.id") in ("rhel", "centos", "rocky", "almalinux", "ol"):
        if major.isdigit() and int(major) <= 7:
            return "yum"
    return "dnf"

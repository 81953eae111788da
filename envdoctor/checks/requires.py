"""Installed packages against each other (``python.requirements``, :mod:`envdoctor.probes.requires`): what
``pip check`` reports, without running pip.

* ``packages.requirement_not_met`` (warning): a package requires another at a version outside what is installed
  ("vllm 0.3.3 requires torch==2.1.2, but torch 2.2.1 is installed"). A package pinned to one framework release
  usually carries compiled code built against it; the compiled-extension check says when that code cannot load.
* ``packages.requirement_missing`` (info): a package requires a framework, an NVIDIA CUDA wheel or Triton that is
  not installed. Said, not warned about: it fails only the code paths that import it, and its absence is often
  deliberate (``--no-deps`` installs). Other missing requirements stay in the fact.

The pins of the frameworks on NVIDIA's CUDA wheels are judged by ``framework.nvidia_wheel_mismatch``
(checks/libraries/wheels.py) with their CUDA meaning, and left out here.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from .. import frameworks, versions
from ..facts import Facts
from ..findings import Finding, Fix
from ..matrix import trt_wheels
from . import CheckContext, CodeDoc, check

PIP_CHECK = {"rule": "every installed distribution's Requires-Dist (markers evaluated for this interpreter, extras "
                     "not applied) must be satisfied by what is installed: what `pip check` verifies",
             "url": "https://pip.pypa.io/en/stable/cli/pip_check/", "checked": "2026-11-28"}

PYTHON_TAGS = {"rule": "CPython imports an extension module only under its own tag "
                       "(`name.cpython-XY-<platform>.so`, or `name.abi3.so` for the stable ABI); pip installs no "
                       "release whose Requires-Python excludes the interpreter",
               "url": "https://peps.python.org/pep-3149/", "checked": "2026-11-30"}

#: framework -> the fact field listing the NVIDIA wheels it pins (judged by the nvidia-wheels check)
_NVIDIA_PIN_FIELDS = tuple((f.name, f.nvidia_wheels_field) for f in frameworks.FRAMEWORKS if f.nvidia_wheels_field)


def _component(facts: Facts, entry: Dict[str, Any]) -> List[str]:
    """The framework the conflict concerns (the required one, else the requiring one), then python."""
    out: List[str] = []
    for key in (entry.get("name"), entry.get("key")):
        f = frameworks.of_distribution(str(key or ""))
        if f is not None:
            name = f.companion_of or f.name
            comp = name if frameworks.BY_NAME[name].component else None
            if comp and comp not in out:
                out.append(comp)
    return out + ["python"]


def _stack_package(name: str) -> bool:
    """Whether a missing requirement is part of the GPU stack envdoctor judges (a framework, an NVIDIA CUDA wheel,
    Triton): the others are listed in the fact, not said (on machines rebuilt from a report the listing of
    site-packages is often partial)."""
    return frameworks.of_distribution(name) is not None or name.startswith("nvidia-") or name in (
        "triton", "cuda-toolkit", "cuda-python", "cuda-bindings")


def _judged_elsewhere(facts: Facts, entry: Dict[str, Any]) -> bool:
    """A framework's pin on an NVIDIA CUDA wheel: framework.nvidia_wheel_mismatch says it, with its meaning; a
    TensorRT pip package's pin on another of its family: tensorrt.wheel_version_mismatch says it."""
    a, b = (trt_wheels.member(re.sub(r"[-_.]+", "-", str(entry.get(k) or "")).lower()) for k in ("package", "name"))
    if a is not None and b is not None and a.family == b.family:
        return True
    for fw, field in _NVIDIA_PIN_FIELDS:
        value = facts.mapping("framework." + fw)
        wheels = value.get(field)
        if isinstance(wheels, dict) and entry.get("name") in wheels:
            return True
    return False


def _pinned_release(spec: str) -> Optional[Tuple[int, ...]]:
    """The release an exact pin names (``==2.1.2`` -> (2, 1, 2)); None for a range or a wildcard."""
    try:
        parts = list(SpecifierSet(spec))
    except InvalidSpecifier:
        return None
    pins = [p for p in parts if p.operator in ("==", "===") and "*" not in p.version]
    if len(pins) != 1:
        return None
    v = versions.parse(pins[0].version)
    return tuple(v.release) if v is not None else None


@check("installed-requirements", requires=("python.requirements",), reads=("framework.*",),
       layers=("python", "frameworks"),
       codes=(
    CodeDoc("packages.requirement_not_met", "warning", "An installed package requires another at a version other "
            "than the one installed (what `pip check` reports); an error when it pins a framework release and "
            "carries compiled modules built against it.", "python.requirements",
            "The package was built or tested against that version; a compiled extension pinned to one framework "
            "release fails to import with another ('undefined symbol'), others misbehave.", PIP_CHECK["url"]),
    CodeDoc("package.no_build_for_python", "warning", "An installed package was made for other Python releases "
            "than the environment's interpreter: its compiled extension modules are tagged for other CPython "
            "releases only (`name.cpython-38-<platform>.so`), or its Requires-Python leaves the interpreter out. "
            "pip installs such a release when no newer one admits the interpreter and it declares no Python range.",
            "python.requirements (no_build), python.version",
            "`import` of the package fails ('No module named ...backend_impl') or it runs on a Python it was never "
            "tested with.", PYTHON_TAGS["url"]),
    CodeDoc("packages.requirement_missing", "info", "An installed package requires another that is not installed.",
            "python.requirements", "The code paths that import it fail with ModuleNotFoundError.",
            PIP_CHECK["url"]),
))
def installed_requirements(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    value = facts.value("python.requirements")
    if not isinstance(value, dict):
        return
    ev = [f.to_dict() for f in (facts.get("python.requirements"),) if f is not None]
    for c in value.get("conflicts") or []:
        if not isinstance(c, dict) or _judged_elsewhere(facts, c):
            continue
        spec = str(c.get("spec") or "")
        pinned = _pinned_release(spec)
        have = versions.parse(str(c.get("installed") or ""))
        compiled = [str(p) for p in c.get("compiled") or []]
        abi = bool(compiled and pinned and have is not None and pinned[:2] != have.release[:2])
        yield Finding(
            code="packages.requirement_not_met", severity="error" if abi else "warning",
            components=_component(facts, c),
            title="%s %s requires %s%s, but %s %s is installed" % (
                c.get("package"), c.get("version"), c.get("name"), spec, c.get("installed_name") or c.get("name"),
                c.get("installed")),
            detail="%s %s declares 'Requires-Dist: %s'; pip would not have installed %s %s beside it (`pip check` "
                   "reports the same conflict). A package pinned to one release of a framework usually carries "
                   "code built against that release.%s" % (c.get("package"), c.get("version"), c.get("requirement"),
                                                           c.get("name"), c.get("installed"), (
                       " Its compiled modules (%s) were built against %s %s, and the framework's C++ interface "
                       "changes between releases: importing them with %s %s fails ('undefined symbol')." % (
                           ", ".join(posixpath.basename(p) for p in compiled[:3]), c.get("name"),
                           ".".join(str(n) for n in pinned or ()), c.get("name"), c.get("installed"))
                       if abi else "")),
            evidence=ev, source=dict(PIP_CHECK),
            fix=Fix(text="Install what %s requires, or a release of %s made for %s %s (upgrading it usually "
                         "brings one)." % (c.get("package"), c.get("package"), c.get("name"), c.get("installed")),
                    commands=["pip install '%s%s'" % (c.get("name"), spec)]))
    for nb in value.get("no_build") or []:
        if isinstance(nb, dict):
            yield _no_build(facts, nb, ev)
    for m in value.get("missing") or []:
        if not isinstance(m, dict) or not _stack_package(str(m.get("name") or "")):
            continue
        spec = str(m.get("spec") or "")
        yield Finding(
            code="packages.requirement_missing", severity="info", components=_component(facts, m),
            title="%s %s requires %s%s, which is not installed" % (m.get("package"), m.get("version"), m.get("name"),
                                                                    "" if spec.startswith("@") else spec),
            detail="%s %s declares 'Requires-Dist: %s' and no distribution of that name is on the interpreter's "
                   "path (`pip check` reports it as missing)." % (m.get("package"), m.get("version"),
                                                                  m.get("requirement")),
            evidence=ev, source=dict(PIP_CHECK),
            fix=Fix(text="Install it (or ignore this if it was left out on purpose).",
                    commands=["pip install '%s%s'" % (m.get("name"), "" if spec.startswith("@") else spec)]))


def _no_build(facts: Facts, nb: Dict[str, Any], ev: List[Dict[str, Any]]) -> Finding:
    """``package.no_build_for_python``: one distribution made for other Pythons than the interpreter."""
    name, version, python = nb.get("key") or nb.get("package"), nb.get("version"), nb.get("python")
    builds = [str(b) for b in nb.get("builds") or []]
    spec = str(nb.get("requires_python") or "")
    why = []
    if builds:
        why.append("its compiled modules (%s) are built for CPython %s only, and Python %s imports none of them: "
                   "`import` fails" % (", ".join(str(m) for m in (nb.get("modules") or [])[:3]),
                                       ", ".join(builds), python))
    if spec:
        why.append("its metadata declares 'Requires-Python: %s', which leaves Python %s out (pip installs such a "
                   "release only when told to ignore it)" % (spec, python))
    supported = ", ".join(builds) if builds else spec
    return Finding(
        code="package.no_build_for_python", severity="warning",
        components=_component(facts, {"name": nb.get("key")}),
        title="%s %s has no build for this environment's Python %s" % (name, version, python),
        detail="%s %s is installed for Python %s, but %s. pip falls back to an old release when no newer one "
               "admits the interpreter and the old one declares no Python range, so a release installed that way "
               "is often years old." % (name, version, python, "; ".join(why)),
        evidence=ev, source=dict(PYTHON_TAGS),
        fix=Fix(text="Install a release of %s made for Python %s if the project publishes one; otherwise use a "
                     "Python it supports (%s) for this environment." % (name, python, supported),
                commands=["pip install --upgrade '%s>%s'" % (nb.get("key"), version)]))

"""TensorRT's pip packages against each other: the ``tensorrt`` metapackage (or ``tensorrt-lean``,
``tensorrt-dispatch``) a user installed at one release, and the runtime wheels that hold the TensorRT that loads
(``tensorrt-cu12``, ``tensorrt-cu12-libs``, ``tensorrt-cu12-bindings``) at another.

NVIDIA publishes every package of a family at one version per TensorRT release (``matrix/data/tensorrt_wheels.json``).
The metapackages of 10.0 and 10.1 require their runtime with no version, so ``pip install tensorrt==10.0.1`` takes
the newest ``tensorrt-cu12``; the runtimes install their parts with ``pip`` from inside their own setup, so pip's
metadata (and ``pip check``) may not know the parts at all. The version a user asked for is then not the one that
runs, and an engine serialized by one TensorRT release does not deserialize in another."""

from __future__ import annotations

from typing import Dict, Iterable, List, Tuple

from ... import versions
from ...findings import AnyOf, Finding, Fix
from ...matrix import trt_wheels
from .. import CheckContext, CodeDoc, check

RULE = {"rule": "every package of a TensorRT pip family (metapackage, runtime of a CUDA major, its -libs and "
                "-bindings) is published at one version per release and must be installed at one version",
        "url": "https://pypi.org/project/tensorrt/#files", "checked": "2026-11-30"}
ENGINE_DOC = ("https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/"
              "advanced.html#version-compatibility")


def _families(packages: Dict[str, str]) -> Dict[Tuple[str, str], List[Tuple[str, str, str]]]:
    """(family, CUDA major) -> [(role, name, version)]; the metapackage joins every CUDA major of its family."""
    metas: Dict[str, Tuple[str, str]] = {}
    groups: Dict[Tuple[str, str], List[Tuple[str, str, str]]] = {}
    for name, version in sorted(packages.items()):
        m = trt_wheels.member(str(name))
        if m is None:
            continue
        if m.role == "metapackage":
            metas[m.family] = (str(name), str(version))
        else:
            groups.setdefault((m.family, m.cuda), []).append((m.role, str(name), str(version)))
    for (family, _cuda), members in groups.items():
        if family in metas:
            members.insert(0, ("metapackage",) + metas[family])
    return groups


@check("tensorrt-wheels", requires=("framework.tensorrt",), reads=(), layers=("libraries",), codes=(
    CodeDoc("tensorrt.wheel_version_mismatch", "warning",
            "TensorRT's pip packages are installed at different releases: the `tensorrt` metapackage at one version, "
            "the runtime wheels that hold the TensorRT that loads (`tensorrt-cu12`, `-libs`, `-bindings`; the lean "
            "and dispatch families alike) at another.", "framework.tensorrt (packages)",
            "The TensorRT that runs is not the release asked for: engines built by the other release fail to "
            "deserialize, and code written for one release's API meets another's.", RULE["url"]),
))
def tensorrt_wheels(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    packages = facts.mapping("framework.tensorrt").get("packages")
    if not isinstance(packages, dict):
        return
    ev = [f.to_dict() for f in (facts.get("framework.tensorrt"),) if f is not None]
    for (family, cuda), members in sorted(_families(packages).items()):
        row = trt_wheels.member(family).row  # type: ignore[union-attr]
        runtime = trt_wheels.runtime_name(row, cuda)
        reference = next((m for m in members if m[0] == "metapackage"), None) or next(
            (m for m in members if m[0] == "runtime"), None)
        if reference is None:
            continue  # parts alone: nothing says which release was asked for
        want = versions.parse(reference[2])
        if want is None:
            continue  # an unreadable version: cannot tell
        others = [m for m in members if m is not reference]
        if any(versions.parse(m[2]) is None for m in others):
            continue
        wrong = [m for m in others if versions.parse(m[2]) != want]
        if not wrong:
            continue
        loads = [m for m in members if m[0] == "part"] or [m for m in members if m[0] == "runtime"]
        loads_text = ", ".join("%s %s" % (m[1], m[2]) for m in loads)
        got = sorted({m[2] for m in wrong})
        parts = trt_wheels.part_names(row, cuda)
        pin = "pip install '%s==%s'" % (runtime, reference[2])
        if reference[0] == "metapackage":
            title = "%s %s is installed, but the TensorRT that loads is %s (%s)" % (
                reference[1], reference[2], " and ".join(sorted({m[2] for m in loads})), loads_text)
            detail = ("You installed %s %s, a metapackage with no code of its own; the TensorRT that runs comes from "
                      "%s and its parts, installed at %s. An engine serialized by TensorRT %s does not deserialize "
                      "in TensorRT %s (%s)." % (reference[1], reference[2], runtime, " and ".join(got),
                                                 reference[2], " and ".join(got), ENGINE_DOC))
            pinned_from = versions.parse(str(row.get("pinned_from")))
            if pinned_from is not None and want < pinned_from:
                detail += (" %s %s requires '%s' with no version, so pip installed the newest %s." % (
                    reference[1], reference[2], runtime, runtime))
            fix = Fix(text="Install the runtime of the release you asked for, or the metapackage of the release "
                           "that is installed.",
                      commands=[AnyOf(pin + " " + " ".join("'%s==%s'" % (p, reference[2]) for p in parts),
                                      "pip install '%s==%s'" % (reference[1], got[-1]))])
        else:
            title = "%s %s is installed, but its parts are another release (%s)" % (
                reference[1], reference[2], ", ".join("%s %s" % (m[1], m[2]) for m in wrong))
            detail = ("%s %s installs %s at its own version; the TensorRT that loads comes from them, installed at %s, "
                      "so it is not the release %s names." % (reference[1], reference[2], " and ".join(parts),
                                                              " and ".join(got), reference[1]))
            fix = Fix(text="Install the parts at the runtime's release.",
                      commands=[pin + " " + " ".join("'%s==%s'" % (p, reference[2]) for p in parts)])
        yield Finding(code="tensorrt.wheel_version_mismatch", severity="warning", components=["tensorrt", "python"],
                      title=title, detail=detail, evidence=ev, source=dict(RULE), fix=fix)

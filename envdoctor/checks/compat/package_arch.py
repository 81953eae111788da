"""Do the GPU packages that are not frameworks (bitsandbytes, flash-attn) carry code for every GPU?

A package's published builds have a floor (``matrix/data/package_arch.json``: the lowest compute capability its
wheels carry kernels for, read from the wheels' fat binaries or the project's own support statement); a GPU below
it gets no kernel, whatever the framework under it runs on. A package pip built here from a local checkout
(``local_build``) was compiled for this machine's GPUs: it is judged only by rows whose floor is in the project's
code itself (``source_builds``: FlashAttention-2's kernels refuse older GPUs at the first call). A row whose floor
is of the package's own work only (``fails``: Triton 2.x compiles kernels for compute capability 7.0 and newer, while
PyTorch's own kernels run on older GPUs) is a warning naming what fails, not an error."""

from __future__ import annotations

from typing import Any, Dict, List, Set, Tuple

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...host.base import normalize_name
from ...matrix import packages
from .. import CheckContext, check, docs_for
from . import DOCS, _ev, _source, _v, gpu_ccs


def _judged(facts: Facts) -> List[Tuple[str, str, Dict[str, Any], Version]]:
    """(package, version, its package_arch.json row, floor) of each installed package a row judges."""
    out: List[Tuple[str, str, Dict[str, Any], Version]] = []
    fact = facts.get("python.gpu_packages")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return out
    for entry in fact.value:
        if not isinstance(entry, dict):
            continue
        name, version = str(entry.get("package") or ""), str(entry.get("version") or "")
        row = packages.arch_row(name, version)
        floor = _v(row["cc_min"]) if row is not None else None
        if row is None or floor is None:
            continue
        if entry.get("local_build") and not row.get("source_builds"):
            continue  # built from source on this machine: compiled for its GPUs, not the published builds' floor
        out.append((name, version, row, floor))
    return out


def below_floor(facts: Facts) -> Set[Tuple[str, str]]:
    """(normalised package name, compute capability) of each package and GPU this check reports (the package's
    published builds carry no code for that GPU): compat.program-arch does not report its files again."""
    out: Set[Tuple[str, str]] = set()
    for name, _version, _row, floor in _judged(facts):
        for cc, _gpu, _cc_fact in gpu_ccs(facts):
            want = _v(cc)
            if want is not None and want < floor:
                out.add((normalize_name(name), cc))
    return out


def _package_arch(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    fact = facts.get("python.gpu_packages")
    gpus = gpu_ccs(facts)
    if fact is None or not gpus:
        return out
    for name, version, row, floor in _judged(facts):
        label = "%s %s" % (name, version)
        for cc, gpu, cc_fact in gpus:
            want = _v(cc)
            if want is None or want >= floor:
                continue
            sm = "sm_" + cc.replace(".", "")
            if row.get("fails"):
                out.append(_below_minimum(name, version, row, cc, gpu, cc_fact, fact))
                continue
            out.append(Finding(
                code="gpu.arch_not_in_build", severity="error", components=["gpu"],
                title="%s (%s, compute capability %s) is not supported by %s: its builds need compute capability "
                      "%s or newer" % (gpu, sm, cc, label, row["cc_min"]),
                detail="%s releases %s carry GPU kernels for compute capability %s and newer only: on %s its GPU "
                       "calls fail ('no kernel image is available for execution on the device', or the package's "
                       "own refusal of the GPU)." % (name, row["releases"], row["cc_min"], sm),
                evidence=_ev(cc_fact, fact),
                source=_source("package_arch.json: %s %s needs compute capability %s or newer" % (
                    name, row["releases"], row["cc_min"]), row),
                fix=Fix(text=row["remedy"][0].upper() + row["remedy"][1:] + ".")))
    return out


def _below_minimum(name: str, version: str, row: Dict[str, Any], cc: str, gpu: str, cc_fact: Any,
                   fact: Any) -> Finding:
    """A package whose floor is of its own work only (``fails``: Triton compiles kernels for compute capability
    7.0 and newer, while torch's own kernels run on older GPUs): a warning naming what fails."""
    sm = "sm_" + cc.replace(".", "")
    return Finding(
        code="framework.gpu_below_package_minimum", severity="warning", components=["gpu", "python"],
        title="%s (%s, compute capability %s) is below what %s %s supports: compute capability %s or newer" % (
            gpu, sm, cc, name, version, row["cc_min"]),
        detail="%s releases %s support GPUs of compute capability %s and newer only. On %s %s fails; the rest "
               "of the stack runs." % (name, row["releases"], row["cc_min"], sm, row["fails"]),
        evidence=_ev(cc_fact, fact),
        source=_source("package_arch.json: %s %s supports compute capability %s or newer" % (
            name, row["releases"], row["cc_min"]), row),
        fix=Fix(text=row["remedy"][0].upper() + row["remedy"][1:] + "."))


@check("compat.package-arch", requires=("gpu.N.compute_capability", "python.gpu_packages"), reads=(), layers=("gpu",),
       codes=docs_for(DOCS, "gpu.arch_not_in_build", "framework.gpu_below_package_minimum"))
def package_arch(ctx: CheckContext) -> List[Finding]:
    return _package_arch(ctx.facts)



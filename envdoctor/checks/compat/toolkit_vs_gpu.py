"""Can the installed CUDA toolkit compile for the GPUs (their compute capabilities within its nvcc's range)?"""

from __future__ import annotations

from typing import List

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import hardware as hw
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line
from . import DOCS, _active_toolkit_row, _can_compile, _ev, _severity, _source, gpu_ccs


def _cuda_ga(version: str) -> str:
    """The GA version ("12.4.0") of a CUDA release named by the table ("12.4")."""
    row = hw.cuda_release(version)
    assert row is not None  # version comes from the same table
    return row["ga"]


def _toolkit_vs_gpu(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    active = _active_toolkit_row(facts)
    if active is None:
        return out
    version, how, tk_fact, row = active
    if not _can_compile(facts, tk_fact):
        return out
    for cc, name, cc_fact in gpu_ccs(facts):
        want = Version(cc)
        sm = "sm_" + cc.replace(".", "")
        if want < Version(row["cc_min"]):
            newest = [v for v in hw.cuda_for_cc(cc)]
            last = newest[-1] if newest else None
            out.append(Finding(
                code="cuda.toolkit_cannot_target_gpu", severity=_severity(row, ["cc_min"]),
                components=["cuda", "gpu"],
                title="CUDA %s (%s) cannot compile for %s (%s, compute capability %s): it targets %s and newer" % (
                    version, how, name, sm, cc, row["cc_min"]),
                detail="Support for this architecture was removed from nvcc; code built with CUDA %s has no SASS "
                       "or PTX this GPU can run. The last CUDA that targets it is %s." % (version, last or "?"),
                evidence=_ev(tk_fact, cc_fact),
                source=_source("CUDA %s nvcc targets compute capability %s..%s" % (
                    row["version"], row["cc_min"], row["cc_max"]), row),
                fix=Fix(text="Use a toolkit that still targets %s (CUDA %s) for this GPU." % (sm, last or "older"),
                        install=install_line(facts, "cuda", _cuda_ga(last), prefix="~/cuda-%s" % last)
                        if last else None)))
        elif want > Version(row["cc_max"]):
            newer = hw.cuda_for_cc(cc)
            first = newer[0] if newer else None
            out.append(Finding(
                code="cuda.gpu_newer_than_toolkit", severity="warning", components=["cuda", "gpu"],
                title="%s (%s, compute capability %s) is newer than CUDA %s (%s) can target (up to %s)" % (
                    name, sm, cc, version, how, row["cc_max"]),
                detail="nvcc %s rejects -arch=%s ('Unsupported gpu architecture'); code it builds runs on this GPU "
                       "only through PTX JIT of an older architecture. The first CUDA that targets it is %s." % (
                           version, sm, first or "not in envdoctor's matrix"),
                evidence=_ev(tk_fact, cc_fact),
                source=_source("CUDA %s nvcc targets compute capability %s..%s" % (
                    row["version"], row["cc_min"], row["cc_max"]), row),
                fix=Fix(text="Install CUDA %s or newer and point CUDA_HOME / PATH at it." % (first or "a newer"),
                        install=install_line(facts, "cuda", _cuda_ga(first), prefix="~/cuda-%s" % first)
                        if first else None)))
    return out


@check("compat.toolkit-vs-gpu", requires=("cuda.toolkits", "gpu.N.compute_capability"),
       reads=("cuda.*",) + INSTALL_LINE_READS, layers=("cuda",),
       codes=docs_for(DOCS, "cuda.toolkit_cannot_target_gpu", "cuda.gpu_newer_than_toolkit"))
def toolkit_vs_gpu(ctx: CheckContext) -> List[Finding]:
    return _toolkit_vs_gpu(ctx.facts)

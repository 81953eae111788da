"""The NCCL a multi-GPU job loads against the GPUs' architecture: an NCCL older than the first release for it."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from packaging.version import Version

from ... import matrix, versions
from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence

NCCL_RELEASES = "https://github.com/NVIDIA/nccl/releases"


def _nccl_candidates(facts: Facts) -> List[Dict[str, Any]]:
    """The NCCL copies a multi-GPU job may load: the loader's choice of libnccl.so.2 when it resolves one with a
    version, else every NCCL found (system packages, pip wheels, toolkits), one entry per version."""
    choice = facts.mapping("libraries.loader_choice").get("libnccl.so.2")
    if isinstance(choice, dict) and choice.get("version") and choice.get("path"):
        return [{"version": str(choice["version"]), "path": str(choice.get("resolved") or choice["path"]),
                 "key": "libraries.loader_choice"}]
    out: Dict[str, Dict[str, Any]] = {}
    for entry in facts.items("libraries.nccl"):
        if isinstance(entry, dict) and versions.parse(entry.get("version")) is not None:
            out.setdefault(str(entry["version"]), {"version": str(entry["version"]), "path": str(entry.get("path")),
                                                   "key": "libraries.nccl"})
    return list(out.values())


@check("nccl-gpu", requires=("gpu.N.compute_capability", "libraries.nccl"),
       reads=("gpu.*", "gpu.*.*", "libraries.*"), layers=("libraries",), codes=(
    CodeDoc("nccl.too_old_for_gpu", "error",
            "The NCCL a multi-GPU job loads predates support for the GPUs' architecture: an error where NCCL "
            "fails on it (before 2.26.2 on compute capability 12.0, RTX 50-series), a warning where the release "
            "only added it (Hopper 2.15.1, Blackwell sm_100 2.25.1).",
            "libraries.loader_choice (libnccl.so.2), libraries.nccl, gpu.N.compute_capability, gpu.count",
            "Collectives fail at start-up ('ncclMaxSharedMem ... exceeds device/fn maxSharedMem', 'unhandled cuda "
            "error') or run on untuned, JIT-compiled kernels.",
            "nccl_arch.json (NCCL's release notes per tag); " + NCCL_RELEASES),
))
def nccl_gpu(ctx: CheckContext) -> Iterable[Finding]:
    from ...matrix import nccl_env
    from ..compat import gpu_ccs

    facts = ctx.facts
    gpus = gpu_ccs(facts)
    count = facts.value("gpu.count")
    if not gpus or not isinstance(count, int) or count < 2:
        return  # NCCL's kernels run between GPUs: one GPU never launches them
    copies = _nccl_candidates(facts)
    if not copies:
        return
    said = set()
    for cc, name, cc_fact in gpus:
        row = nccl_env.first_release_for(cc)
        if row is None or cc in said:
            continue
        need = Version(row["nccl_min"])
        old = [c for c in copies if Version(c["version"]) < need]
        if len(old) != len(copies):
            continue  # a copy new enough is there, and which one the job loads is not known
        said.add(cc)
        fails = row["kind"] == "fails_before"
        severity = "warning" if not fails or matrix.unverified(row) else "error"
        listed = ", ".join("%s (%s)" % (c["version"], c["path"]) for c in old)
        yield Finding(
            code="nccl.too_old_for_gpu", severity=severity, components=["nccl", "gpu"],
            title="NCCL %s is older than %s, the first NCCL for %s (compute capability %s)" % (
                listed, row["nccl_min"], name, cc),
            detail="%s%s." % (row["why"][0].upper() + row["why"][1:], "" if fails else
                              "; multi-GPU jobs may run, slowly, or fail"),
            evidence=_evidence(facts, *sorted({c["key"] for c in old})) + [cc_fact.to_dict()],
            source={"rule": "NCCL %s is the first release for compute capability %s" % (row["nccl_min"], cc),
                    "url": row["source"]["url"], "checked": row["source"]["checked"]},
            fix=Fix(text="Use NCCL %s or newer: upgrade the framework (its wheel pins an NCCL) or the NCCL wheel "
                         "or package it loads." % row["nccl_min"],
                    commands=["pip install -U 'nvidia-nccl-cu12>=%s'" % row["nccl_min"]]))

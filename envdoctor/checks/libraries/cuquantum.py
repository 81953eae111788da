"""cuQuantum's cuTensorNet against the cuTENSOR it loads: a release of it that refuses that cuTENSOR although its
documented requirement admits it (``cuquantum.json``: cuTensorNet 1.1.0 of cuQuantum 22.07.0 refuses cuTENSOR 1.6,
fixed in 1.1.1 of 22.07.1). Its handle creation fails with CUTENSORNET_STATUS_CUTENSOR_VERSION_MISMATCH."""

from __future__ import annotations

from typing import Iterable

from ...findings import Finding, Fix
from ...matrix import cuquantum
from .. import CheckContext, CodeDoc, check

DOCS = (
    CodeDoc("cuquantum.cutensor_version_rejected", "error", "cuTensorNet loads a cuTENSOR release that release of "
            "cuTensorNet refuses.", "linkage.cutensornet (its header's release, the cuTENSOR its libcutensor.so "
            "resolves to and that one's header)",
            "Every cuTensorNet call fails with CUTENSORNET_STATUS_CUTENSOR_VERSION_MISMATCH, although the "
            "documented requirement (cuTENSOR 1.5 or above) is met: a defect of that release, fixed in the next.",
            "https://docs.nvidia.com/cuda/cuquantum/22.07.1/cutensornet/release_notes.html"),
)


@check("cutensornet-cutensor", requires=("linkage.cutensornet",), reads=(), layers=("libraries", "cuda"),
       codes=DOCS)
def cutensornet_cutensor(ctx: CheckContext) -> Iterable[Finding]:
    fact = ctx.facts.get("linkage.cutensornet")
    for e in ctx.facts.items("linkage.cutensornet"):
        tensor = e.get("cutensor") if isinstance(e, dict) else None
        if not isinstance(tensor, dict) or not tensor.get("version") or not e.get("version"):
            continue
        row = cuquantum.rejection("cutensornet", str(e["version"]), str(tensor["version"]))
        if row is None:
            continue
        src = row["source"]
        yield Finding(
            code="cuquantum.cutensor_version_rejected", severity="error", components=["cuda"],
            title="cuTensorNet %s (cuQuantum %s, %s) loads cuTENSOR %s (%s, via %s), which that release refuses" % (
                e["version"], row["cuquantum"], e.get("path"), tensor["version"], tensor.get("resolved")
                or tensor.get("path"), tensor.get("via")),
            detail="cuTensorNet %s refuses cuTENSOR releases %s although its documented requirement admits them: "
                   "every call fails with CUTENSORNET_STATUS_CUTENSOR_VERSION_MISMATCH. NVIDIA fixed it in "
                   "cuTensorNet %s (cuQuantum %s)." % (e["version"], row["cutensor_rejected"], row["fixed_in"],
                                                       row["fixed_cuquantum"]),
            evidence=[fact.to_dict()] if fact is not None else [],
            source={"rule": "cuTensorNet %s refuses cuTENSOR %s (fixed in %s)" % (
                row["releases"], row["cutensor_rejected"], row["fixed_in"]), "url": src["url"],
                "checked": src["checked"]},
            fix=Fix(text="Install cuQuantum %s or later (cuTensorNet %s), or load a cuTENSOR 1.5 release with this "
                         "one." % (row["fixed_cuquantum"], row["fixed_in"])))

"""Is a GPU below the compute capability a Lua framework's CUDA backend supports (Torch7's cutorch: 2.0)?

The floor is the backend's own (``matrix/data/package_arch.json``, ``ecosystem: luarocks``): its kernels are
written for it, so no build of it, made here or anywhere, runs on an older GPU, and its build from source for one
fails. It is said where the backend's rock is installed in a Lua tree (``lua.trees``) and where its build was
started in the tree's torch/distro checkout and left nothing installed (the build is what fails)."""

from __future__ import annotations

from typing import List

from ...findings import Finding, Fix
from ...matrix import packages
from .. import CheckContext, CodeDoc, check
from . import _ev, _source, _v, gpu_ccs

DOCS = (
    CodeDoc("gpu.too_old_for_framework", "error", "The GPU's compute capability is below the minimum a framework's "
            "CUDA backend supports (Torch7's cutorch: 2.0), installed or being built.",
            "gpu.N.compute_capability, lua.trees against package_arch.json's luarocks rows",
            "The backend's kernels need that capability: its build for the GPU fails (compute 1.x: 'Formal "
            "parameter space overflowed (256 bytes max)') and no build of it runs there, whatever the toolkit.",
            "https://github.com/torch/cutorch/blob/5e9d86cb982a6048d3077aeb0e0cee19847b4c08/lib/THC/cmake/"
            "select_compute_arch.cmake"),
)


def _rock_arch(ctx: CheckContext) -> List[Finding]:
    out: List[Finding] = []
    trees = ctx.facts.get("lua.trees")
    gpus = gpu_ccs(ctx.facts)
    if trees is None or not trees.known or not isinstance(trees.value, list) or not gpus:
        return out
    for row in packages.rock_arch_rows():
        floor = _v(row["cc_min"])
        name = str(row["package"])
        for tree in trees.value:
            if not isinstance(tree, dict) or floor is None:
                continue
            installed = name in (tree.get("installed") or [])
            building = [b for b in tree.get("building") or [] if isinstance(b, dict) and b.get("name") == name]
            if not installed and not building:
                continue
            how = ("installed in %s" % tree.get("prefix") if installed
                   else "being built in %s (nothing of it installed)" % building[0].get("path"))
            for cc, gpu, cc_fact in gpus:
                want = _v(cc)
                if want is None or want >= floor:
                    continue
                sm = "sm_" + cc.replace(".", "")
                out.append(Finding(
                    code="gpu.too_old_for_framework", severity="error", components=["gpu"],
                    title="%s (%s, compute capability %s) is below what %s (%s's CUDA backend) supports: compute "
                          "capability %s or newer" % (gpu, sm, cc, name, row["framework"], row["cc_min"]),
                    detail="%s's kernels need compute capability %s or newer, so its build for %s fails and no "
                           "build of it runs on this GPU, whatever the CUDA toolkit; %s is %s." % (
                               name, row["cc_min"], sm, name, how),
                    evidence=_ev(cc_fact, trees),
                    source=_source("package_arch.json: %s (%s) needs compute capability %s or newer" % (
                        name, row["framework"], row["cc_min"]), row),
                    fix=Fix(text=row["remedy"][0].upper() + row["remedy"][1:] + ".")))
    return out


@check("compat.rock-arch", requires=("gpu.N.compute_capability", "lua.trees"), reads=(), layers=("gpu",),
       codes=DOCS)
def rock_arch(ctx: CheckContext) -> List[Finding]:
    return _rock_arch(ctx)

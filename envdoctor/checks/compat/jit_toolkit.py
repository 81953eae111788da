"""Is the CUDA toolkit a package compiling its CUDA code at run time would use one it supports?

Some packages compile their CUDA kernels when they first run, with a toolkit's nvcc found on the machine
(``matrix/data/jit_toolkits.json``: Jittor takes the toolkit of its own under ~/.cache/jittor/jtcuda when it is there,
else ``$nvcc_path``, the first nvcc on PATH, /usr/local/cuda/bin/nvcc...). Each states the oldest CUDA release it
supports (Jittor: 10.0); an older toolkit makes that compilation fail at its first GPU use. The nvcc the package's
own search finds is the probe's (``python.jit_toolkits``); its release is the toolkit's as the CUDA probe read it
(``cuda.nvcc``, ``cuda.toolkits``): an nvcc of no toolkit read is not judged."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List, Optional, Tuple

from ...facts import Fact, Facts
from ...findings import Finding, Fix
from ...matrix import packages
from .. import CheckContext, check, docs_for
from . import DOCS, _ev, _severity, _source, _v


def nvcc_release(facts: Facts, nvcc: Dict[str, Any]) -> Optional[Tuple[str, Fact]]:
    """The version of the toolkit an nvcc (``{path, resolved}``) belongs to, with the fact it was read from: the nvcc
    on PATH (``cuda.nvcc``), else a toolkit whose ``bin`` holds it (``cuda.toolkits``); None when unknown."""
    where = {str(nvcc.get(k)) for k in ("path", "resolved") if nvcc.get(k)}
    if not where:
        return None
    on_path = facts.get("cuda.nvcc")
    if on_path is not None and on_path.known and isinstance(on_path.value, dict) and on_path.value.get("version") \
            and where & {str(on_path.value.get(k)) for k in ("path", "resolved") if on_path.value.get(k)}:
        return str(on_path.value["version"]), on_path
    dirs = {posixpath.dirname(posixpath.dirname(w)) for w in where}
    toolkits = facts.get("cuda.toolkits")
    if toolkits is not None and toolkits.known and isinstance(toolkits.value, list):
        for tk in toolkits.value:
            if isinstance(tk, dict) and tk.get("version") and tk.get("nvcc") is not False and dirs & {
                    str(tk.get(k)) for k in ("path", "resolved") if tk.get(k)}:
                return str(tk["version"]), toolkits
    return None


def _jit_toolkit(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    fact = facts.get("python.jit_toolkits")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return out
    for entry in fact.value:
        if not isinstance(entry, dict) or entry.get("own_toolkit") or not isinstance(entry.get("nvcc"), dict):
            continue  # its own toolkit (installed by its own command, a release it supports), or no nvcc at all
        name, version = str(entry.get("package") or ""), str(entry.get("version") or "")
        row = packages.jit_row(name, version)
        if row is None:
            continue
        found = nvcc_release(facts, entry["nvcc"])
        have = _v(found[0]) if found is not None else None
        floor = _v(row["cuda_min"])
        if found is None or have is None or floor is None or have >= floor:
            continue
        tk_version, tk_fact = found
        label = "%s %s" % (row["label"], version)
        nvcc = entry["nvcc"]
        how = ("named by %s" % nvcc["how"] if str(nvcc.get("how", "")).startswith("$")
               else "the first nvcc on PATH" if nvcc.get("how") == "PATH" else "found at %s" % nvcc.get("how"))
        commands = [str(row["install_own"])] if row.get("install_own") else []
        out.append(Finding(
            code="framework.jit_toolkit_below_minimum", severity=_severity(row, ["cuda_min"]),
            components=["cuda", "python"],
            title="%s compiles its CUDA code with CUDA %s (%s), older than the CUDA %s it supports" % (
                label, tk_version, nvcc.get("path"), row["cuda_min"]),
            detail="%s compiles its CUDA kernels at run time with the nvcc it finds (%s, %s): it supports CUDA %s "
                   "or newer, so that compilation fails on its first GPU use (its own test as well)." % (
                       row["label"], nvcc.get("path"), how, row["cuda_min"]),
            evidence=_ev(fact, tk_fact),
            source=_source("jit_toolkits.json: %s %s supports CUDA %s or newer" % (
                row["label"], row["releases"], row["cuda_min"]), row),
            fix=Fix(text=row["remedy"][0].upper() + row["remedy"][1:] + ".", commands=commands)))
    return out


@check("compat.jit-toolkit", requires=("python.jit_toolkits",), reads=("cuda.nvcc", "cuda.toolkits"),
       layers=("python", "cuda"), codes=docs_for(DOCS, "framework.jit_toolkit_below_minimum"))
def jit_toolkit(ctx: CheckContext) -> List[Finding]:
    return _jit_toolkit(ctx.facts)

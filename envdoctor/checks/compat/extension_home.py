"""CUDA_HOME (what torch.utils.cpp_extension builds with) is not a CUDA toolkit."""

from __future__ import annotations

from typing import List

from ...facts import Facts
from ...findings import Finding, Fix, quoted
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS
from . import CPP_EXTENSION, DOCS, _cuda_home_for, _ev, _mm, _mm_str, _source


def _extension_home(facts: Facts) -> List[Finding]:
    home = facts.get("cuda.extension_home")
    torch = facts.mapping("framework.torch")
    if home is None or not home.known or torch.get("build") != "cuda":
        return []
    if home.value is None:
        return _no_extension_home(facts)
    if not isinstance(home.value, dict):
        return []
    h = home.value
    missing = [what for what, ok_ in (("include/cuda_runtime.h", h.get("headers")), ("bin/nvcc", h.get("nvcc")))
               if ok_ is False]
    if not missing:
        return []
    want = _mm(torch.get("cuda"))
    cmds, install, found = _cuda_home_for(facts, want, same_major=True)
    return [Finding(
        code="cuda.extension_home_not_a_toolkit", severity="warning", components=["cuda", "torch"],
        title="Building torch %s CUDA extensions would use CUDA_HOME=%s (from %s), which has no %s" % (
            torch.get("version"), quoted(h.get("path")), h.get("how"), " and no ".join(missing)),
        detail="torch.utils.cpp_extension (and the setup.py of flash-attn, apex, DeepSpeed, xformers) takes "
               "CUDA_HOME, else CUDA_PATH, else the directory above the nvcc on PATH, else /usr/local/cuda. "
               "Here that is not a toolkit, so compiling fails with 'cuda_runtime.h: No such file or directory' "
               "or cannot find nvcc. Running torch itself is unaffected.",
        evidence=_ev(home, facts.get("framework.torch"), facts.get("cuda.nvcc")),
        source=_source("torch.utils.cpp_extension._find_cuda_home: CUDA_HOME, CUDA_PATH, "
                       "dirname(dirname(which nvcc)), /usr/local/cuda (torch 2.13.0)", url=CPP_EXTENSION),
        fix=Fix(text=("Point CUDA_HOME at a toolkit with CUDA %s, the CUDA torch was built with, before building."
                      % (_mm_str(want) if want else torch.get("cuda"))) + (
                          "" if found or install else " No such toolkit was found."),
                commands=cmds, install=install))]


def _no_extension_home(facts: Facts) -> List[Finding]:
    """No CUDA_HOME at all (no variable, no nvcc on PATH, no /usr/local/cuda), while a toolkit is installed in a
    versioned directory: torch.utils.cpp_extension finds none of it ('CUDA_HOME environment variable is not set')."""
    torch = facts.mapping("framework.torch")
    toolkits = [t for t in facts.items("cuda.toolkits") if isinstance(t, dict) and t.get("nvcc") and t.get("path")
                and t.get("kind") == "system"]
    if not toolkits:
        return []  # nothing to build with anyway: the toolkit checks say what is missing
    want = _mm(torch.get("cuda"))
    cmds, install, _ = _cuda_home_for(facts, want, same_major=True)
    where = ", ".join(str(t["path"]) for t in toolkits)
    return [Finding(
        code="cuda.extension_home_not_a_toolkit", severity="warning", components=["cuda", "torch"],
        title="Building torch %s CUDA extensions would find no CUDA_HOME, though a CUDA toolkit is at %s" % (
            torch.get("version"), where),
        detail="torch.utils.cpp_extension (and the builds and JIT compilers of flashinfer, sglang, flash-attn, apex, "
               "DeepSpeed, xformers) takes CUDA_HOME, else CUDA_PATH, else the directory above the nvcc on PATH, "
               "else /usr/local/cuda. None of them is set or exists here, so compiling fails with 'CUDA_HOME "
               "environment variable is not set' although %s holds a toolkit. Running torch itself is unaffected."
               % where,
        evidence=_ev(facts.get("cuda.extension_home"), facts.get("cuda.toolkits"), facts.get("framework.torch")),
        source=_source("torch.utils.cpp_extension._find_cuda_home: CUDA_HOME, CUDA_PATH, "
                       "dirname(dirname(which nvcc)), /usr/local/cuda (torch 2.13.0)", url=CPP_EXTENSION),
        fix=Fix(text="Point CUDA_HOME at the toolkit (or put its bin on PATH) before building or running code that "
                     "compiles CUDA kernels.", commands=cmds or ["export CUDA_HOME=%s" % toolkits[0]["path"]],
                install=install))]


@check("compat.extension-home", requires=("cuda.extension_home",), reads=("cuda.*",
       "framework.*") + INSTALL_LINE_READS, layers=("cuda",),
       codes=docs_for(DOCS, "cuda.extension_home_not_a_toolkit"))
def extension_home(ctx: CheckContext) -> List[Finding]:
    return _extension_home(ctx.facts)

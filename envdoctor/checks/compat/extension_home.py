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
    if home is None or not home.known or not isinstance(home.value, dict) or torch.get("build") != "cuda":
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


@check("compat.extension-home", requires=("cuda.extension_home",), reads=("cuda.*",
       "framework.*") + INSTALL_LINE_READS, layers=("cuda",),
       codes=docs_for(DOCS, "cuda.extension_home_not_a_toolkit"))
def extension_home(ctx: CheckContext) -> List[Finding]:
    return _extension_home(ctx.facts)

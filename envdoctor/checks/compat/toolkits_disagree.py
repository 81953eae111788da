"""The nvcc on PATH and the toolkit at /usr/local/cuda (or CUDA_HOME) are different releases."""

from __future__ import annotations

from typing import List, Tuple

from ...facts import Fact, Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS
from . import CUDA_ENV, DOCS, _ev, _mm, _mm_str, _source


def _toolkits_disagree(facts: Facts) -> List[Finding]:
    seen: List[Tuple[str, str, Fact]] = []
    nvcc = facts.get("cuda.nvcc")
    if nvcc is not None and nvcc.known and isinstance(nvcc.value, dict) and nvcc.value.get("version"):
        seen.append(("nvcc on PATH (%s)" % nvcc.value.get("path"), str(nvcc.value["version"]), nvcc))
    home = facts.get("cuda.home")
    if home is not None and home.known and isinstance(home.value, dict) and home.value.get("version"):
        seen.append(("%s=%s" % (home.value.get("var"), home.value.get("path")), str(home.value["version"]), home))
    link = facts.get("cuda.default_symlink")
    # With CUDA_HOME and the nvcc on PATH agreeing, /usr/local/cuda is never reached by the tools that honour
    # them (it is their last fallback): a second toolkit there is a deliberate, consistent choice.
    chosen_by_both = len(seen) == 2 and _mm(seen[0][1]) == _mm(seen[1][1])
    if link is not None and link.known and isinstance(link.value, dict) and link.value.get("version") \
            and not chosen_by_both:
        seen.append(("/usr/local/cuda -> %s" % link.value.get("resolved"), str(link.value["version"]), link))
    releases = {_mm(v) for _, v, _ in seen}
    if len(releases) < 2:
        return []
    chosen = seen[0]
    return [Finding(
        code="cuda.toolkits_disagree", severity="warning", components=["cuda"],
        title="CUDA toolkits disagree: %s" % "; ".join("%s is %s" % (w, v) for w, v, _ in seen),
        detail="Build tools pick different ones: CMake and torch.utils.cpp_extension use CUDA_HOME first, then the "
               "nvcc on PATH, then /usr/local/cuda; Makefiles often hard-code /usr/local/cuda. An extension can "
               "compile with one CUDA and link against another.",
        evidence=_ev(*[f for _, _, f in seen]),
        source=_source("one toolkit should be reachable by PATH, CUDA_HOME and /usr/local/cuda", url=CUDA_ENV),
        fix=Fix(text="Point all three at the toolkit you build with (%s, CUDA %s)." % (chosen[0], chosen[1]),
                commands=["export CUDA_HOME=/usr/local/cuda-%s" % _mm_str(_mm(chosen[1]) or (0, 0)),
                          "export PATH=$CUDA_HOME/bin:$PATH",
                          "sudo ln -sfn /usr/local/cuda-%s /usr/local/cuda" % _mm_str(_mm(chosen[1]) or (0, 0))]))]


@check("compat.toolkits-disagree", requires=("cuda.toolkits", "cuda.nvcc"), reads=("cuda.*",) + INSTALL_LINE_READS,
       layers=("cuda",),
       codes=docs_for(DOCS, "cuda.toolkits_disagree"))
def toolkits_disagree(ctx: CheckContext) -> List[Finding]:
    return _toolkits_disagree(ctx.facts)

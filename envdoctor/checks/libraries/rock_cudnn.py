"""Can Torch7's cuDNN bindings (the cudnn.torch rock) use the cuDNN they load?

cudnn.torch has one branch per cuDNN major (R4, R5, R6, R7), and each branch's ``ffi.lua`` fixes what it accepts:
it opens ``libcudnn.so.<major>`` by name (R6 on, and master's R5 since late 2016: the file ``CUDNN_PATH`` names,
when set) and then stops with 'These bindings are for ...' when ``cudnnGetVersion()`` is outside its bounds
(master's R5: ``5005 <= version < 6000``; R6: ``>= 6002``; R7: ``>= 7000``). The installed ffi.lua is read for
those bounds and names (``lua.trees``, the probe ``lua``), so every branch is judged by its own code."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from . import _FRAMEWORK_LINKAGE_DOCS
from .cudnn_build import _CUDNN_VERSION_DOCS

SOURCE = {"rule": "cudnn.torch's ffi.lua (each branch R4-R7): the libcudnn names it opens and the "
                  "cudnnGetVersion() bounds it accepts",
          "url": "https://github.com/soumith/cudnn.torch/blob/008c49de3982119378576fa4244e472a50fd9ebe/ffi.lua",
          "checked": "2026-12-01"}
BRANCHES = "https://github.com/soumith/cudnn.torch/branches"


def version_number(version: str) -> Optional[int]:
    """``cudnnGetVersion()`` of a cuDNN release before 9 (major*1000 + minor*100 + patch): 6.0.20 -> 6020."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", version or "")
    if not m:
        return None
    major, minor, patch = (int(x) for x in m.groups())
    return major * 10000 + minor * 100 + patch if major >= 9 else major * 1000 + minor * 100 + patch


def _accepts(b: Dict[str, Any]) -> str:
    lo, hi = b.get("min"), b.get("max")
    if isinstance(lo, int) and isinstance(hi, int):
        return "%d <= version < %d" % (lo, hi)
    return "version >= %s" % lo if isinstance(lo, int) else "version < %s" % hi


def _major_of(number: int) -> int:
    return number // 10000 if number >= 90000 else number // 1000


def _one(tree: Dict[str, Any], fact: Any) -> Optional[Finding]:
    b = tree.get("cudnn_bindings")
    if not isinstance(b, dict) or not isinstance(b.get("loaded"), dict):
        return None
    loaded = b["loaded"]
    lo, hi = b.get("min"), b.get("max")
    if not isinstance(lo, int) and not isinstance(hi, int):
        return None
    branch = _major_of(lo) if isinstance(lo, int) else None
    wanted = "R%d" % branch if branch else "the branch for your cuDNN"
    if loaded.get("path") is None:
        names = ", ".join(b.get("libnames") or []) or "libcudnn"
        by_path = loaded.get("via") == "CUDNN_PATH"
        where = "the file CUDNN_PATH names" if by_path else names
        why = ("ffi.load(CUDNN_PATH) fails" if by_path
               else "they stop with 'libcudnn (...) not found in library path'")
        return Finding(
            code="cudnn.framework_cannot_load", severity="error", components=["cudnn"],
            title="Torch7's cuDNN bindings (cudnn.torch %s) find no cuDNN: the loader finds no %s" % (wanted, where),
            detail="The bindings in %s open %s by name and %s: require 'cudnn' fails." % (b.get("path"), where, why),
            evidence=[fact.to_dict()], source=dict(SOURCE),
            fix=Fix(text="Install the cuDNN the bindings are for where the loader finds it (or set CUDNN_PATH to "
                         "its libcudnn.so file), or install the cudnn.torch branch for the cuDNN you have (%s)."
                         % BRANCHES))
    version = str(loaded.get("version") or "")
    number = version_number(version)
    if number is not None:
        low = high = number
    elif re.match(r"^[1-8]$", version):  # only the major is known (libcudnn.so.6): every release of it
        low, high = int(version) * 1000, int(version) * 1000 + 999
    else:
        return None
    refused_low = isinstance(lo, int) and high < lo
    refused_high = isinstance(hi, int) and low >= hi
    if not refused_low and not refused_high:
        return None  # accepted, or only some releases of that major are: cannot tell
    major = _major_of(low)
    via = " through CUDNN_PATH" if loaded.get("via") == "CUDNN_PATH" else ""
    rockspec = "https://raw.githubusercontent.com/soumith/cudnn.torch/R%d/cudnn-scm-1.rockspec" % major
    return Finding(
        code="cudnn.major_mismatch", severity="error", components=["cudnn"],
        title="Torch7's cuDNN bindings (cudnn.torch %s) refuse the cuDNN %s they load: they accept %s" % (
            wanted, version, _accepts(b)),
        detail="cudnn.torch's ffi.lua in %s checks cudnnGetVersion() and stops with 'These bindings are for ... "
               "while the loaded CuDNN is version: %s': it loads %s%s (cuDNN %s). Each branch of the bindings "
               "(R4-R7) is for one cuDNN major." % (b.get("path"), low if number is not None else "%d..." % major,
                                                   loaded.get("resolved") or loaded.get("path"), via, version),
        evidence=[fact.to_dict()], source=dict(SOURCE),
        fix=Fix(text="Install the bindings' branch for cuDNN %d (R%d), or a cuDNN the installed bindings accept "
                     "(%s)." % (major, major, _accepts(b)),
                commands=["luarocks install %s" % rockspec] if 4 <= major <= 7 else []))


@check("libraries.rock-cudnn", requires=("lua.trees",), reads=(), layers=("libraries",),
       codes=docs_for(_CUDNN_VERSION_DOCS, "cudnn.major_mismatch")
       + docs_for(_FRAMEWORK_LINKAGE_DOCS, "cudnn.framework_cannot_load"))
def rock_cudnn(ctx: CheckContext) -> List[Finding]:
    fact = ctx.facts.get("lua.trees")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return []
    found = [_one(t, fact) for t in fact.value if isinstance(t, dict)]
    return [f for f in found if f is not None]

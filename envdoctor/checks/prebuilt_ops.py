"""Were a package's prebuilt C++/CUDA ops compiled for the torch and CUDA installed beside it?

DeepSpeed records the torch major.minor and CUDA major.minor its wheel's ops were compiled with
(``deepspeed/git_version_info_installed.py``: ``torch_info``, ``installed_ops``; fact ``python.gpu_packages``), and
refuses to load such an op under any other (op_builder/builder.py, ``validate_torch_version`` and
``validate_torch_op_version``: "PyTorch version mismatch! DeepSpeed ops were compiled and installed with a different
version than what is being used at runtime.")."""

from __future__ import annotations

from typing import Any, Dict, List

from .. import versions
from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, check
from .closure import SYMBOLS_DOC

BUILDER = "https://github.com/deepspeedai/DeepSpeed/blob/master/op_builder/builder.py"
CHECKED = "2026-11-29"


def _mm(text: Any) -> str:
    v = versions.parse(str(text or "").split("+")[0])
    return "%d.%d" % (v.release[0], v.release[1] if len(v.release) > 1 else 0) if v is not None else ""


def _prebuilt_ops(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    pkgs, torch = facts.get("python.gpu_packages"), facts.get("framework.torch")
    if pkgs is None or not pkgs.known or not isinstance(pkgs.value, list) or torch is None or not torch.known:
        return out
    tv: Dict[str, Any] = torch.value if isinstance(torch.value, dict) else {}
    have_torch, have_cuda = _mm(tv.get("version")), _mm(tv.get("cuda")) if tv.get("cuda") else "0.0"
    for entry in pkgs.value:
        build = entry.get("build") if isinstance(entry, dict) else None
        if not isinstance(build, dict) or not build.get("ops") or not have_torch:
            continue
        wrong = []
        if build.get("torch") and build["torch"] != have_torch:
            wrong.append("torch %s (installed: torch %s)" % (build["torch"], tv.get("version")))
        if build.get("cuda") and build["cuda"] != "0.0" and have_cuda != "0.0" and build["cuda"] != have_cuda:
            wrong.append("CUDA %s (installed torch's: CUDA %s)" % (build["cuda"], tv.get("cuda")))
        if not wrong:
            continue
        label = "%s %s" % (entry.get("package"), entry.get("version"))
        ops = list(build["ops"])
        out.append(Finding(
            code="framework.extension_abi_mismatch", severity="error", components=["torch"],
            title="%s's prebuilt ops were compiled for %s" % (label, " and ".join(wrong)),
            detail="Its wheel carries compiled ops (%s%s) built against torch %s with CUDA %s, as its build record "
                   "%s says; loading one under another torch or CUDA fails with 'PyTorch version mismatch! DeepSpeed "
                   "ops were compiled and installed with a different version than what is being used at runtime' "
                   "(or 'CUDA version mismatch!')." % (", ".join(ops[:6]), ", ..." if len(ops) > 6 else "",
                                                        build.get("torch"), build.get("cuda"), build.get("record")),
            evidence=[pkgs.to_dict(), torch.to_dict()],
            source={"rule": "DeepSpeed refuses ops compiled for another torch or CUDA major.minor "
                            "(validate_torch_version, validate_torch_op_version)", "url": BUILDER, "checked": CHECKED},
            fix=Fix(text="Install the DeepSpeed wheel from PyPI, whose ops are built just in time for the installed "
                         "torch (pip install --force-reinstall --no-deps deepspeed==%s), or install torch %s built "
                         "with CUDA %s, the pair these ops were built for." % (
                             str(entry.get("version") or "").split("+")[0], build.get("torch"), build.get("cuda")),
                    commands=["pip install --force-reinstall --no-deps deepspeed==%s" % str(
                        entry.get("version") or "").split("+")[0]])))
    return out


@check("prebuilt-ops", requires=("python.gpu_packages", "framework.torch"), reads=(), layers=("frameworks",),
       codes=(SYMBOLS_DOC,))
def prebuilt_ops(ctx: CheckContext) -> List[Finding]:
    return _prebuilt_ops(ctx.facts)

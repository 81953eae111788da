"""Can Triton build its launcher? The first time a Triton kernel runs (torch.compile / Inductor, or Triton code), Triton
writes a small C file that includes ``cuda.h`` and compiles it with the host C compiler. Triton 2.0 takes ``cuda.h``
from the ``include`` folder of CUDA_PATH, else CUDA_HOME, else /usr/local/cuda, falling back to the copy its wheel
bundles (``matrix/data/triton.json`` ``launcher_include``, read in the 2.0.0 wheel); 2.1 and later use only the copy
every wheel bundles, so nothing outside the wheel is needed and they are not judged.
PyTorch's own Triton builds of late 2022 (``torchtriton``) bundled no ``cuda.h``: with the toolkit elsewhere than
/usr/local/cuda and neither variable set, every Triton kernel fails to build ('fatal error: cuda.h: No such file or
directory') while eager CUDA works."""

from __future__ import annotations

from typing import Iterable, List

from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, Message, check

TRITON_CUDA_H_ISSUE = "https://github.com/pytorch/pytorch/issues/90757"
TRITON_2_0_WHEEL = "https://pypi.org/project/triton/2.0.0/#files"


def _toolkit_roots(ctx: CheckContext) -> List[str]:
    """The folders of the CUDA toolkits found on the machine (``cuda.toolkits``)."""
    out: List[str] = []
    for tk in ctx.facts.items("cuda.toolkits"):
        root = tk.get("root") or tk.get("path") if isinstance(tk, dict) else None
        if isinstance(root, str) and root.startswith("/"):
            out.append(root.rstrip("/"))
    return out


@check("frameworks.triton-launcher", requires=("framework.torch.triton",),
       reads=("framework.torch.triton", "cuda.toolkits"), layers=("frameworks",), codes=(
    CodeDoc("framework.triton_launcher_cannot_build", "warning",
            "Triton compiles a small C launcher (including cuda.h) the first time a kernel runs, and the cuda.h it "
            "needs is nowhere it looks: not bundled with the installed Triton, not under CUDA_PATH / CUDA_HOME / "
            "/usr/local/cuda, not in the compiler's own include folders.",
            "framework.torch.triton (launcher_cuda_h: the folders the release's launcher build searches, from "
            "triton.json launcher_include), cuda.toolkits",
            "Eager CUDA works, but torch.compile and every Triton kernel fail at their first call ('fatal error: "
            "cuda.h: No such file or directory'). PyTorch's Triton builds of late 2022 (torchtriton) did not bundle "
            "cuda.h, so a toolkit had to be where Triton 2.0 looks.",
            TRITON_2_0_WHEEL,
            messages=(Message("fatal error: cuda.h: No such file or directory", TRITON_CUDA_H_ISSUE),)),))
def triton_launcher(ctx: CheckContext) -> Iterable[Finding]:
    triton = ctx.facts.value("framework.torch.triton")
    if not isinstance(triton, dict):
        return []
    launcher = triton.get("launcher_cuda_h")
    if not isinstance(launcher, dict) or launcher.get("found") or not isinstance(launcher.get("searched"), list):
        return []
    searched = [p for p in launcher["searched"] if isinstance(p, str)]
    home, how = launcher.get("cuda_home"), launcher.get("cuda_home_from")
    toolkits = [t for t in _toolkit_roots(ctx) if t != home]
    if home and how != "default":
        where = "%s=%s (its include folder has no cuda.h)" % (how, home)
    elif home:
        where = "CUDA_PATH and CUDA_HOME unset, so Triton looks in %s/include, which has no cuda.h" % home
    else:
        where = "this release reads only its bundled copy"
    commands: List[str] = []
    if home and toolkits:
        text = ("Point Triton at a toolkit that has cuda.h before running it: `export CUDA_HOME=%s` (or link it as "
                "/usr/local/cuda), or upgrade to a Triton that bundles cuda.h (a newer PyTorch with its "
                "pytorch-triton, or triton 2.0.0 and later)." % toolkits[0])
        commands = ["export CUDA_HOME=%s" % toolkits[0]]
    elif home:
        text = ("Install a CUDA toolkit (its cuda.h) and set CUDA_HOME to it, or upgrade to a Triton that bundles "
                "cuda.h (a newer PyTorch with its pytorch-triton, or triton 2.0.0 and later).")
    else:
        text = "Reinstall %s: its wheel's own cuda.h (%s) is missing." % (triton.get("package"),
                                                                            launcher.get("bundled"))
        commands = ["pip install --force-reinstall --no-deps '%s==%s'" % (triton.get("package"),
                                                                          triton.get("version"))]
    return [Finding(
        code="framework.triton_launcher_cannot_build", severity="warning", components=["torch", "cuda"],
        title="%s %s cannot build its kernel launcher: no cuda.h where it looks (%s)" % (
            triton.get("package"), triton.get("version"), where),
        detail="torch.compile and every Triton kernel fail at their first call ('fatal error: cuda.h: No such file "
               "or directory') while eager CUDA works: Triton compiles a small C launcher that includes cuda.h the "
               "first time a kernel runs, %s %s bundles none (%s), and none is in %s.%s" % (
                   triton.get("package"), triton.get("version"), launcher.get("bundled"),
                   ", ".join(p for p in searched if p != launcher.get("bundled")),
                   " A toolkit is at %s." % ", ".join(toolkits) if toolkits else ""),
        evidence=[f.to_dict() for f in (ctx.facts.get(k) for k in ("framework.torch.triton", "cuda.toolkits"))
                  if f is not None],
        source={"rule": "Triton 2.0 includes cuda.h from $CUDA_PATH, $CUDA_HOME or /usr/local/cuda, else the copy its "
                        "wheel bundles (triton/compiler.py _build)", "url": TRITON_2_0_WHEEL,
                "checked": "2026-12-01", "verified": True},
        fix=Fix(text=text, commands=commands),
    )]

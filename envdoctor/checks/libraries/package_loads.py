"""Does a library a Python package opens by soname at run time load?

vLLM's NCCL wrapper opens ``libnccl.so.2`` with ctypes (``matrix/data/runtime_loads.json``, rows keyed by
``package``; fact ``python.gpu_packages`` ``opens``). ctypes finds it when a library already loaded has that soname
(pip's torch links the nvidia-nccl wheel's ``libnccl.so.2``, so importing torch loads it) or through the loader's
search. The pytorch channel's conda builds link NCCL statically: their ``libtorch_cuda.so`` names no ``libnccl``
(``linkage.torch.elf`` NEEDED), nothing has loaded one, and unless the loader finds one the wrapper fails ("Failed to
load NCCL library from libnccl.so.2"). vLLM's installation page: conda "installs torch with statically linked NCCL.
This can cause issues when vLLM tries to use NCCL.\""""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check
from . import _FRAMEWORK_LINKAGE_DOCS, component_of

VLLM_DOCS = "https://docs.vllm.ai/en/v0.6.1.post2/getting_started/installation.html"
CHECKED = "2026-11-29"


def _framework_links(facts: Facts, fw: str, soname: str) -> Optional[bool]:
    """Whether the framework's CUDA library names ``soname`` among its NEEDED entries (None: its ELF was not read)."""
    elf = facts.value("linkage.%s.elf" % fw)
    if not isinstance(elf, dict) or not isinstance(elf.get("needed"), list):
        return None
    stem = soname.split(".so", 1)[0] + ".so"
    return any(str(n).startswith(stem) for n in elf["needed"])


def _package_loads(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    pkgs = facts.get("python.gpu_packages")
    if pkgs is None or not pkgs.known or not isinstance(pkgs.value, list):
        return out
    for entry in pkgs.value:
        if not isinstance(entry, dict):
            continue
        for load in entry.get("opens") or []:
            if not isinstance(load, dict) or load.get("set_by") or load.get("path") or load.get("certain") is False:
                continue
            fw, so = str(load.get("with") or ""), str(load.get("soname") or "")
            fwv: Dict[str, Any] = facts.mapping("framework." + fw) if fw else {}
            if fw and fwv.get("build") != "cuda":
                continue  # the load goes with the framework's CUDA build
            links = _framework_links(facts, fw, so) if fw else False
            if links is not False:
                continue  # the framework loads it (its own finding says if it cannot), or that is unknown
            label = "%s %s" % (entry.get("package"), entry.get("version"))
            comp = component_of(so)
            major = str(fwv.get("cuda") or "").split(".")[0]
            wheel = "pip install nvidia-nccl-cu%s" % major if comp == "nccl" and major.isdigit() else ""
            fw_label = "%s %s" % (fw, fwv.get("version")) if fw else ""
            elsewhere = [str(p) for p in load.get("elsewhere") or []]
            env = load.get("unless_env")
            out.append(Finding(
                code="%s.framework_cannot_load" % comp, severity="warning", components=[comp, fw] if fw else [comp],
                title="%s opens %s at run time, but %s links none and the loader finds no such file" % (
                    label, so, fw_label or "nothing loaded"),
                detail="%s's Python code opens %s by soname (ctypes); %s%s. Multi-GPU and distributed runs fail "
                       "when it is first used ('Failed to load NCCL library from %s')." % (
                           entry.get("package"), so,
                           "%s's libraries name no %s (NCCL linked statically, as the pytorch channel's conda builds "
                           "do), so importing it loads none, and " % (fw_label, so.split(".so")[0]) if fw else "",
                           "neither LD_LIBRARY_PATH, the loader cache nor the default directories hold one" + (
                               " (copies elsewhere: %s)" % ", ".join(elsewhere) if elsewhere else ""), so),
                evidence=[x.to_dict() for x in (pkgs, facts.get("linkage.%s.elf" % fw), facts.get(
                    "framework." + fw)) if x is not None],
                source={"rule": "vLLM opens VLLM_NCCL_SO_PATH, else libnccl.so.2 (found when torch loaded it); conda's "
                                "torch links NCCL statically", "url": VLLM_DOCS, "checked": CHECKED},
                fix=Fix(text="Install %s with pip, whose torch loads the nvidia-nccl wheel's %s (vLLM's docs: 'it is "
                             "highly recommended to use pip to install vLLM'), or point %s at an NCCL 2 library "
                             "(%s)." % (entry.get("package"), so, env or "the loader",
                                        elsewhere[0] if elsewhere else wheel or "a copy of it"),
                        commands=["export %s=%s" % (env, elsewhere[0])] if env and elsewhere else [])))
    return out


@check("package-loads", requires=("python.gpu_packages",), reads=("framework.*", "linkage.*.elf"),
       layers=("cuda", "libraries", "frameworks"),
       codes=tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code.endswith(".framework_cannot_load")))
def package_loads(ctx: CheckContext) -> List[Finding]:
    return _package_loads(ctx.facts)

"""LibTorch (PyTorch's C++ distribution) judged as torch is judged, where that applies: a program built against it
that the loader cannot give its libraries, a CPU-only LibTorch on a machine with an NVIDIA GPU that something uses,
and a CUDA toolkit set up for building against it that is not the CUDA it was built with."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, check, docs_for
from .closure import DOCS as LINK_DOCS
from .closure import RULE
from .compat import DOCS as COMPAT_DOCS
from .compat import _ev, _mm, _mm_str, active_toolkit, has_nvidia_gpu
from .compat.toolkit_vs_framework import _toolkit_set_up_for_builds

LIBTORCH_URL = "https://pytorch.org/cppdocs/installing.html"
#: How an install is used: what points a build or the loader at it (not merely found in a usual place).
USED = ("LIBTORCH", "LD_LIBRARY_PATH", "torch-sys build")


def _label(inst: Dict[str, Any]) -> str:
    return "LibTorch %s at %s" % (inst.get("version") or "(release not recorded)", inst.get("root"))


def _installs(facts: Facts) -> List[Dict[str, Any]]:
    return [i for i in facts.items("libtorch.installs") if isinstance(i, dict) and i.get("root")]


def _owner(installs: List[Dict[str, Any]], soname: str) -> Optional[Dict[str, Any]]:
    for inst in installs:
        if soname in (inst.get("files") or []):
            return inst
    return None


def _unloadable(facts: Facts, installs: List[Dict[str, Any]]) -> Iterable[Finding]:
    fact = facts.get("libtorch.programs")
    for prog in facts.items("libtorch.programs"):
        if not isinstance(prog, dict):
            continue
        missing = [link for link in prog.get("links") or [] if isinstance(link, dict) and not link.get("path")
                   and link.get("certain", True)]
        if not missing:
            continue
        sonames = [str(link.get("soname")) for link in missing]
        # the first one the loader stops at names the error; libtorch_cuda.so first where it is missing
        inst = next((i for i in (_owner(installs, s) for s in sonames) if i is not None), None)
        name = posixpath.basename(str(prog.get("path")))
        named = ", ".join(sonames)
        if inst is None:
            yield Finding(
                code="linkage.missing", severity="error", components=["torch"],
                title="%s needs %s (LibTorch), but the loader finds no such file and no LibTorch was found" % (
                    prog.get("path"), named),
                detail="It fails to start: 'error while loading shared libraries: %s: cannot open shared object "
                       "file'." % sonames[0],
                evidence=_ev(fact), source=dict(RULE),
                fix=Fix(text="Put the lib folder of the LibTorch %s was built against on LD_LIBRARY_PATH (or link "
                             "it with an rpath)." % name))
            continue
        lib = str(inst.get("lib"))
        near = [str(inst.get("root"))] if inst.get("top_on_ld_library_path") else []
        yield Finding(
            code="linkage.missing", severity="error", components=["torch"],
            title="%s needs %s, which the loader cannot find; %s has %s in %s, which it does not search" % (
                prog.get("path"), named, _label(inst), "them" if len(sonames) > 1 else "it", lib),
            detail="The program has no RPATH/RUNPATH reaching LibTorch, and %s is not on LD_LIBRARY_PATH, in the "
                   "ld.so cache or the default directories, so it fails to start: 'error while loading shared "
                   "libraries: %s: cannot open shared object file'.%s" % (
                       lib, sonames[0], (" LD_LIBRARY_PATH names %s, LibTorch's top folder: the libraries are in "
                                         "its lib folder." % near[0]) if near else ""),
            evidence=_ev(fact, facts.get("libtorch.installs")), source=dict(RULE),
            fix=Fix(text="Put %s on LD_LIBRARY_PATH (or link the program with an rpath to it)." % lib,
                    commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % lib]))


def _builtins(facts: Facts, installs: List[Dict[str, Any]]) -> Iterable[Finding]:
    """NVRTC opens its builtins library by its release's plain soname; a bundle that copied it under a hashed name
    (``libnvrtc-builtins-07fb3db5.so.11.1``) leaves run-time compilation (TorchScript's fusers, jiterator) without
    it unless the loader finds the plain name elsewhere."""
    for inst in installs:
        if not inst.get("cuda_build"):
            continue
        for b in inst.get("nvrtc_builtins") or []:
            if not isinstance(b, dict) or b.get("path") or not b.get("certain", True):
                continue
            lib = str(inst.get("lib"))
            soname, hashed = str(b.get("soname")), str(b.get("file"))
            release = soname.split(".so.", 1)[-1]
            yield Finding(
                code="linkage.missing", severity="error", components=["cuda", "torch"],
                title="%s: its NVRTC (CUDA %s) opens %s at run time, which the loader cannot find; LibTorch ships "
                      "it only as %s" % (_label(inst), release, soname, hashed),
                detail="NVRTC opens its builtins library by the plain soname of its release; the copy in %s has "
                       "another name, and no %s is on LD_LIBRARY_PATH, in the ld.so cache or the default "
                       "directories. Code compiled at run time (TorchScript's fused kernels) fails with 'failed to "
                       "open %s'." % (lib, soname, soname),
                evidence=_ev(facts.get("libtorch.installs")), source=dict(RULE),
                fix=Fix(text="Give the bundled copy its plain name in %s and put that folder on LD_LIBRARY_PATH (or "
                             "install CUDA %s's NVRTC where the loader finds it)." % (lib, release),
                        commands=["ln -s %s %s" % (posixpath.join(lib, hashed), posixpath.join(lib, soname)),
                                  "export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % lib]))


def _used(facts: Facts, inst: Dict[str, Any]) -> bool:
    if inst.get("how") in USED:
        return True
    return any(isinstance(p, dict) and any(isinstance(link, dict) and str(link.get("path") or "").startswith(
        str(inst.get("lib")) + "/") for link in p.get("links") or []) for p in facts.items("libtorch.programs"))


def _cpu_only(facts: Facts, installs: List[Dict[str, Any]]) -> Iterable[Finding]:
    if not has_nvidia_gpu(facts):
        return
    for inst in installs:
        if inst.get("cuda_build") or not _used(facts, inst):
            continue
        torch_sys = inst.get("how") == "torch-sys build"
        yield Finding(
            code="framework.cpu_only_build", severity="warning", components=["torch", "gpu"],
            title="%s is a CPU-only build (no libtorch_cuda.so), but this machine has an NVIDIA GPU" % _label(inst),
            detail="Programs built against it never use the GPU (tch's Cuda::is_available() and "
                   "torch::cuda::is_available() are false).%s" % (
                       " tch's torch-sys build script downloaded it into the build folder: without LIBTORCH it "
                       "fetches the CPU build unless told otherwise." if torch_sys else ""),
            evidence=_ev(facts.get("libtorch.installs"), facts.get("gpu.count")),
            source={"rule": "LibTorch's CPU archives (libtorch-*-cpu / +cpu) carry no libtorch_cuda.so", "url":
                    LIBTORCH_URL, "checked": "2026-11-30"},
            fix=Fix(text="Download a CUDA build of LibTorch (pytorch.org, a CUDA variant this driver runs), point "
                         "LIBTORCH at it%s and rebuild." % (
                             " (or have torch-sys download the CUDA build: TORCH_CUDA_VERSION)" if torch_sys else "")))


def _toolkit(facts: Facts, installs: List[Dict[str, Any]]) -> Iterable[Finding]:
    active = active_toolkit(facts)
    if active is None:
        return
    tk = _mm(active[0])
    for inst in installs:
        lt = _mm(inst.get("cuda"))
        if not inst.get("cuda_build") or tk is None or lt is None or lt[1] is None or tk[1] is None or tk == lt:
            continue
        older = tk[0] != lt[0] or tk[1] < lt[1]
        warn = older and has_nvidia_gpu(facts) and _toolkit_set_up_for_builds(facts)
        yield Finding(
            code="cuda.toolkit_differs_from_framework", severity="warning" if warn else "info",
            components=["cuda", "torch"],
            title="The active CUDA toolkit is %s (%s), but %s was built with CUDA %s" % (
                active[0], active[1], _label(inst), _mm_str(lt)),
            detail="A program built against LibTorch (find_package(Torch)) compiles and links its CUDA parts with "
                   "this toolkit. %s" % (
                       "Another CUDA major is not the one LibTorch's libraries link." if tk[0] != lt[0] else
                       "This toolkit is older: its CUDA runtime lacks functions LibTorch's CUDA libraries call, so "
                       "linking fails with 'undefined reference' to them." if older else
                       "A newer minor of the same major links, as CUDA's minor compatibility allows."),
            evidence=_ev(active[2], facts.get("libtorch.installs")),
            source={"rule": "LibTorch's CUDA archives are built with the CUDA their variant names (+cuNNN); "
                            "programs using them build with that CUDA", "url": LIBTORCH_URL, "checked": "2026-11-30"},
            fix=Fix(text="Build against %s with CUDA %s (or use the LibTorch variant made for CUDA %s)." % (
                _label(inst), _mm_str(lt), active[0])))


@check("libtorch", requires=("libtorch.installs",), reads=("libtorch.programs", "gpu.count", "driver.nvidia_pci_gpus",
                                                            "gpu.pci_devices", "cuda.*"),
       layers=("cuda", "frameworks"),
       codes=docs_for(LINK_DOCS, "linkage.missing") + docs_for(COMPAT_DOCS, "framework.cpu_only_build",
                                                              "cuda.toolkit_differs_from_framework"))
def libtorch(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    installs = _installs(facts)
    return (list(_unloadable(facts, installs)) + list(_builtins(facts, installs)) + list(_cpu_only(facts, installs))
            + list(_toolkit(facts, installs)))

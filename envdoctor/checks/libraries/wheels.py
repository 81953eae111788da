"""NVIDIA's pip wheels and the frameworks that require them: files one wheel overwrote of another's, a wheel's
library linked to another copy of its dependency, versions the framework's requirements exclude; and ONNX
Runtime's packaging (CPU and GPU wheels together).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional

from ... import frameworks, matrix, versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import frameworks as fwm
from .. import CheckContext, CodeDoc, Message, check
from ..suggest import INSTALL_LINE_READS, install_line
from . import (
    _FRAMEWORK_LINKAGE_DOCS,
    CHECKED,
    LDSO_RULE,
    NAMES,
    _drop_ldp_entry,
    _evidence,
    _fw_version,
    _v,
    _version_at,
    component_of,
)

WHEEL_FILES_RULE = {"rule": "pip installs files of different projects to the same path without conflict checks: "
                            "the last one installed wins", "url": "https://github.com/pypa/pip/issues/4625",
                    "checked": "2026-11-25"}


@check("nvidia-wheel-conflicts", requires=("python.nvidia_wheel_conflicts",), reads=("framework.*",),
       layers=("frameworks", "python"), codes=(
    CodeDoc("framework.nvidia_wheels_conflict", "error",
            "NVIDIA wheels of the same library for two CUDA majors (nvidia-nccl-cu11 and nvidia-nccl-cu12) are "
            "installed in one environment: both write site-packages/nvidia/<lib>/lib, the last installed wins.",
            "python.nvidia_wheel_conflicts, framework.<name> (nvidia_wheels)",
            "The framework loads the other major's library: undefined symbols at import ('undefined symbol: "
            "ncclMemFree') or the wrong CUDA runtime.", WHEEL_FILES_RULE["url"]),
))
def nvidia_wheel_conflicts(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    needed: Dict[str, List[str]] = {}  # wheel -> frameworks that require it
    for fw in frameworks.COMPONENTS:
        for name in (facts.mapping("framework." + fw).get("nvidia_wheels") or {}):
            needed.setdefault(str(name), []).append(fw)
    for c in facts.items("python.nvidia_wheel_conflicts"):
        if not isinstance(c, dict):
            continue
        wheels = [w for w in c.get("wheels") or [] if isinstance(w, dict)]
        names = ", ".join("%s %s" % (w.get("name"), w.get("version")) for w in wheels)
        wanted = [w for w in wheels if w.get("name") in needed]
        unwanted = [w for w in wheels if w.get("name") not in needed]
        if wanted and unwanted:
            fix = Fix(text="Remove the wheel nothing installed requires (%s), then reinstall the one %s needs, whose "
                           "files it overwrote." % (", ".join(str(w["name"]) for w in unwanted),
                                                    ", ".join(needed[str(wanted[0]["name"])])),
                      commands=["pip uninstall -y %s" % " ".join(str(w["name"]) for w in unwanted),
                                "pip install --force-reinstall --no-deps '%s==%s'" % (wanted[0]["name"],
                                                                                     wanted[0]["version"])])
        else:
            fix = Fix(text="Frameworks here need %s for different CUDA majors: they cannot share one environment; "
                           "give each its own virtual environment." % names,
                      commands=["python -m venv ~/venv-cu%s" % wheels[0].get("cuda")])
        yield Finding(
            code="framework.nvidia_wheels_conflict", severity="error",
            components=sorted({fw for w in wanted for fw in needed[str(w["name"])]}) or ["python"],
            title="%s are installed together in %s: both install nvidia/%s/lib, so one overwrote the other" % (
                names, c.get("location"), c.get("lib")),
            detail="pip lets wheels of one NVIDIA library for two CUDA majors coexist, but they write the same "
                   "files; the framework then loads whichever was installed last%s." % (
                       " (%s needs %s)" % (", ".join(needed[str(wanted[0]["name"])]), wanted[0]["name"])
                       if wanted else ""),
            evidence=_evidence(facts, "python.nvidia_wheel_conflicts"),
            source=dict(WHEEL_FILES_RULE), fix=fix)


@check("nvidia-wheel-links", requires=("linkage.nvidia_wheels", "cuda.ld_library_path"), reads=(),
       layers=("cuda", "libraries"), codes=tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code.endswith(".shadowed")))
def nvidia_wheel_links(ctx: CheckContext) -> Iterable[Finding]:
    """A wheel library (cuSPARSE, cuBLAS ...) that the loader links to another copy of its dependency than the one
    its RUNPATH names: an older minor of the same major is an error (cuSPARSE needs an nvJitLink of its own CUDA
    minor or newer: 'undefined symbol: __nvJitLinkCreate_12_x'), any other copy a warning."""
    facts = ctx.facts
    for lk in facts.items("linkage.nvidia_wheels"):
        if not isinstance(lk, dict) or not lk.get("shadowed"):
            continue
        got, want = _v(lk.get("version")), _v(lk.get("expected_version"))
        symbols = lk.get("missing_symbols")
        # the symbols it imports from that library, when they could be read, decide; else the versions
        older = bool(symbols) if isinstance(symbols, list) else (
            got is not None and want is not None and got.release[:2] < want.release[:2])
        lib, dep = posixpath.basename(str(lk.get("library"))), str(lk.get("soname"))
        comp = component_of(dep)
        bundle = str(lk.get("bundle") or "pip wheel")
        what = "wheel" if bundle == "pip wheel" else bundle.split()[-1]
        yield Finding(
            code="%s.shadowed" % comp, severity="error" if older else "warning", components=[comp],
            title="%s (%s) loads %s from %s (%s, via %s), not its %s's %s (%s)" % (
                lib, bundle, dep, lk.get("path"), lk.get("version") or "version unknown", lk.get("via"), what,
                lk.get("expected"), lk.get("expected_version") or "version unknown"),
            detail="The %s's RUNPATH names its own copy, but the loader searches %s first.%s" % (
                what, lk.get("via"), (
                    " That copy lacks %s, which %s calls: loading fails with 'undefined symbol: %s'." % (
                        ", ".join(symbols[:3]), lib, symbols[0]) if symbols else
                    " A CUDA library needs its dependencies of its own CUDA minor or newer: this older one lacks the "
                    "symbols it calls, so it fails to load ('undefined symbol').") if older else ""),
            evidence=_evidence(facts, "linkage.nvidia_wheels", "cuda.ld_library_path"),
            source=dict(LDSO_RULE),
            fix=Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so the %s's own copy is used." % (
                         posixpath.dirname(str(lk.get("path"))), what),
                    commands=[_drop_ldp_entry(posixpath.dirname(str(lk.get("path"))))]
                    if lk.get("via") == "LD_LIBRARY_PATH" else ["sudo ldconfig"]))


@check("onnxruntime-packaging", requires=("framework.onnxruntime",),
       reads=("libraries.*", "linkage.*") + INSTALL_LINE_READS, layers=("frameworks",), codes=(
    CodeDoc("onnxruntime.cpu_and_gpu_installed", "error", "onnxruntime and onnxruntime-gpu are installed "
            "together.", "framework.onnxruntime", "Both write the same onnxruntime/ package; the last one "
            "installed wins file by file and the CUDA provider silently disappears.",
            "https://onnxruntime.ai/docs/install/"),
    CodeDoc("onnxruntime.cudnn_major_mismatch", "error", "onnxruntime-gpu is built for another cuDNN major than "
            "the loader can find.", "framework.onnxruntime, libraries.loader_choice",
            "The CUDA execution provider fails to load and ONNX Runtime falls back to the CPU.",
            "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements"),
) + tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code == "cuda.framework_cannot_load"))
def onnxruntime_packaging(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    v = facts.value("framework.onnxruntime")
    if not isinstance(v, dict):
        return
    pkgs = v.get("packages") or {}
    gpu = [p for p in pkgs if p.endswith("-gpu")]
    cpu = [p for p in pkgs if p in ("onnxruntime", "ort-nightly")]
    if gpu and cpu:
        g = gpu[0]
        yield Finding(
            code="onnxruntime.cpu_and_gpu_installed", severity="error", components=["onnxruntime"],
            title="%s %s and %s %s are both installed; they provide the same onnxruntime module" % (
                cpu[0], pkgs[cpu[0]], g, pkgs[g]),
            detail="Both wheels write the onnxruntime/ directory; the one installed last wins file by file, so "
                   "the CUDA execution provider can silently disappear (get_available_providers() shows only "
                   "CPUExecutionProvider). Uninstalling either one breaks the other's files.%s" % (
                       " Its build information now says %s: the %s files are in place." % (
                           v["build_package"], v["build_package"]) if v.get("build_package") else ""),
            evidence=_evidence(facts, "framework.onnxruntime", "framework.onnxruntime_conflict"),
            source={"rule": "install only one onnxruntime package per environment",
                    "url": "https://onnxruntime.ai/docs/install/", "checked": CHECKED},
            fix=Fix(text="Remove both, then reinstall only the GPU package.",
                    commands=["pip uninstall -y %s %s" % (cpu[0], g),
                              "pip install '%s==%s'" % (g, pkgs[g])]))
    if not v.get("gpu") or isinstance(facts.value("linkage.onnxruntime"), list):
        return  # the linkage checks judge the provider library itself when it could be read
    rel = fwm.onnxruntime_release(v.get("version"))
    choice = facts.value("libraries.loader_choice")
    if not isinstance(choice, dict) or (rel is None and not v.get("cudnn") and not v.get("cuda")):
        return
    yield from _onnxruntime_cudart(facts, v, rel, choice)
    if not (v.get("cudnn") or rel):
        return
    major = str(v.get("cudnn") or (rel or {}).get("cudnn_major")).split(".")[0]
    want = "libcudnn.so." + major
    if (choice.get(want) or {}).get("path"):
        return
    found = sorted(s for s, r in choice.items() if s.startswith("libcudnn.so.") and (r or {}).get("path"))
    if not found:
        return  # no cuDNN at all: the cuDNN checks say so
    verified = bool(v.get("cudnn")) or (rel is not None and not matrix.unverified({"source": rel["source"]}))
    cache = facts.get("libraries.ld_cache")
    cache_read = cache is not None and cache.known  # without it, "not found" may only mean "not seen"
    got = ", ".join("%s (cuDNN %s, %s%s)" % (
        s, _version_at(facts, "cudnn", choice[s].get("resolved")) or choice[s].get("version") or "version unknown",
        choice[s].get("resolved"), ", via %s" % choice[s]["via"] if choice[s].get("via") else "") for s in found)
    yield Finding(
        code="onnxruntime.cudnn_major_mismatch", severity="error" if verified and cache_read else "warning",
        components=["onnxruntime", "cudnn"],
        title="onnxruntime-gpu %s needs cuDNN %s, but the loader only finds %s" % (v.get("version"), major, got),
        detail="ONNX Runtime's CUDA provider (libonnxruntime_providers_cuda.so) links %s; without it "
               "InferenceSession falls back to CPUExecutionProvider with a 'Failed to load library' error." % want,
        evidence=_evidence(facts, "framework.onnxruntime", "libraries.loader_choice"),
        source=_onnxruntime_build_source(v, rel, "cuDNN", major),
        fix=Fix(text="Install cuDNN %s (the pip wheel is enough), or the onnxruntime-gpu build for the cuDNN you "
                     "have." % major,
                commands=["pip install '%s>=%s,<%d'" % (
                    versions.cu_wheel("nvidia-cudnn", str(v.get("cuda") or (rel or {}).get("cuda_major") or "")
                                      .split(".")[0]), major, int(major) + 1)] if major.isdigit() else [],
                install=install_line(facts, "cudnn", major)))


def _cudart_soname(cuda: object) -> str:
    """The soname of the CUDA runtime a build for CUDA ``cuda`` links (the one table of them:
    :data:`envdoctor.probes.dlopen.SONAMES`); "" when ``cuda`` is no version the table knows."""
    from ...probes import dlopen

    m = re.match(r"^(\d+)(?:\.(\d+))?", str(cuda or ""))
    if not m:
        return ""
    return dlopen.soname("cudart", (int(m.group(1)), int(m.group(2)) if m.group(2) else None)) or ""


def _onnxruntime_build_source(v: Dict[str, Any], rel: Optional[Dict[str, Any]], what: str,
                              want: str) -> Dict[str, Any]:
    """Where an onnxruntime-gpu build's CUDA/cuDNN need comes from: the package's own build information
    (onnxruntime/capi/version_info.py) when it has one, else the requirements table."""
    if v.get("cuda" if what == "CUDA" else "cudnn"):
        return {"rule": "onnxruntime-gpu %s's own build information (onnxruntime/capi/version_info.py) says it is "
                        "built for %s %s" % (v.get("version"), what, want),
                "url": "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements",
                "checked": CHECKED}
    src = (rel or {}).get("source") or {}
    return {"rule": "onnxruntime-gpu %s is built for %s %s" % ((rel or {}).get("version"), what, want),
            "url": src.get("url"), "checked": src.get("checked")}


def _onnxruntime_cudart(facts: Facts, v: Dict[str, Any], rel: Optional[Dict[str, Any]],
                        choice: Dict[str, Any]) -> Iterable[Finding]:
    """onnxruntime-gpu's CUDA provider links the CUDA runtime of the CUDA it was built for (libcudart.so.10.2 for a
    CUDA 10.2 build: before CUDA 11 each minor has its own soname); when the loader finds only another CUDA's
    runtime, the provider cannot load and ONNX Runtime falls back to the CPU (or import fails). Judged for the
    builds before CUDA 11, whose runtimes came only from a toolkit on the loader path (no CUDA pip wheels)."""
    cuda = str(v.get("cuda") or (rel or {}).get("cuda") or "")
    want = _cudart_soname(cuda)
    if not re.match(r"^libcudart\.so\.\d+\.\d+$", want) or want == "libcudart.so.11.0":
        return  # from CUDA 11 on, one soname per major: the CUDA-major checks judge those builds
    entry = choice.get(want)
    if isinstance(entry, dict) and entry.get("path"):
        return
    found = sorted(s for s, r in choice.items()
                   if s.startswith("libcudart.so.") and isinstance(r, dict) and r.get("path"))
    if not found:
        return  # no CUDA runtime on the loader path at all: the CUDA checks say so
    cache = facts.get("libraries.ld_cache")
    firm = bool(v.get("cuda")) and cache is not None and cache.known
    got = ", ".join("%s (%s)" % (s, choice[s].get("resolved") or choice[s].get("path")) for s in found)
    yield Finding(
        code="cuda.framework_cannot_load", severity="error" if firm else "warning",
        components=["onnxruntime", "cuda"],
        title="onnxruntime-gpu %s is built for CUDA %s and needs %s, but the loader only finds %s" % (
            v.get("version"), cuda, want, got),
        detail="ONNX Runtime's CUDA provider links %s. Without it, creating a session with CUDAExecutionProvider "
               "fails ('%s: cannot open shared object file') and ONNX Runtime falls back to "
               "CPUExecutionProvider. Before CUDA 11 every CUDA minor has its own runtime soname, so another "
               "minor's runtime does not stand in for it." % (want, want),
        evidence=_evidence(facts, "framework.onnxruntime", "libraries.loader_choice"),
        source=_onnxruntime_build_source(v, rel, "CUDA", cuda),
        fix=Fix(text="Install the CUDA %s runtime libraries (and the cuDNN it was built with) on the loader path, or "
                     "the onnxruntime-gpu release built for the CUDA this machine has." % cuda,
                install=install_line(facts, "cuda", cuda)))


PIP_SPEC_RULE = {"rule": "an installed distribution must satisfy every Requires-Dist specifier of the packages that "
                         "depend on it (what `pip check` verifies)",
                 "url": "https://packaging.python.org/en/latest/specifications/version-specifiers/",
                 "checked": CHECKED}
#: framework -> the fact field listing the NVIDIA wheels it requires
#: Framework -> the field of its fact that lists the NVIDIA wheels it requires.
_WHEEL_FIELDS = tuple((f.name, f.nvidia_wheels_field) for f in frameworks.FRAMEWORKS if f.nvidia_wheels_field)


@check("nvidia-wheels", requires=("framework.*",), reads=(), layers=("frameworks",), codes=(
    CodeDoc("framework.nvidia_wheel_mismatch", "warning", "An installed NVIDIA CUDA wheel does not satisfy the "
            "version the framework requires.", "framework.<name> (nvidia_wheels)",
            "The framework was built and tested against other CUDA library versions; a different cuBLAS, cuDNN "
            "or NCCL can fail with undefined symbols, refuse to load, or compute differently. pip's resolver "
            "would not have installed this combination (`pip check` reports it).", PIP_SPEC_RULE["url"],
        messages=(Message("undefined symbol: __nvJitLink*",
                "https://github.com/pytorch/pytorch/issues/111469"),)),
))
def nvidia_wheels_match(ctx: CheckContext) -> Iterable[Finding]:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    facts = ctx.facts
    for fw, field in _WHEEL_FIELDS:
        wheels = facts.mapping("framework." + fw).get(field)
        if not isinstance(wheels, dict):
            continue
        for name, info in sorted(wheels.items()):
            if not isinstance(info, dict) or not isinstance(info.get("installed"), str):
                continue
            spec_text = info.get("specifier")
            installed = _v(info["installed"])
            if not isinstance(spec_text, str) or not spec_text or installed is None:
                continue
            try:
                spec = SpecifierSet(spec_text)
            except InvalidSpecifier:
                continue
            if spec.contains(installed, prereleases=True):
                continue
            via = " (through %s)" % info["via"] if info.get("via") else ""
            yield Finding(
                code="framework.nvidia_wheel_mismatch", severity="warning", components=[fw, "cuda"],
                title="%s requires %s%s%s, but %s is installed" % (
                    _fw_version(facts, fw), name, spec_text, via, info["installed"]),
                detail="%s was built against %s %s; the installed %s was probably pulled in by another package "
                       "or installed by hand. Mismatched CUDA library wheels cause undefined-symbol errors at "
                       "import or first use." % (NAMES.get(fw, fw), name, spec_text, info["installed"]),
                evidence=_evidence(facts, "framework." + fw),
                source=dict(PIP_SPEC_RULE),
                fix=Fix(text="Install the version %s asks for (or reinstall %s so pip resolves its dependencies "
                             "again)." % (fw, fw),
                        commands=["pip install '%s%s'" % (name, spec_text)]))

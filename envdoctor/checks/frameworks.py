"""The tools a framework runs that come from elsewhere on the machine (jax/jaxlib/plugin versions: checks/jax.py).

* The ptxas XLA runs to compile its kernels: the first on PATH, else the one of the ``nvidia-cuda-nvcc``
  wheel.  An older one than jaxlib requires (an old toolkit first on PATH) fails on the PTX jaxlib generates;
  a newer CUDA minor than the driver's runs through minor-version compatibility, with XLA's parallel
  compilation turned off.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .. import frameworks as framework_table
from ..facts import Facts
from ..findings import Finding, Fix
from ..matrix import hardware as hw
from ..matrix import unverified
from . import CheckContext, CodeDoc, Message, check, compat, docs_for, libraries
from .suggest import INSTALL_LINE_READS

CHECKED = "2026-11-25"
JAX_INSTALL = "https://docs.jax.dev/en/latest/installation.html"
PTXAS_ISSUE = "https://github.com/jax-ml/jax/issues/25718"
PTXAS_DRIVER = "https://github.com/jax-ml/jax/issues/19821"


def _v(text: Any) -> Optional[Version]:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return Version(text.strip().split("+")[0])
    except InvalidVersion:
        return None


def _ev(facts: Facts, *keys: str) -> List[Dict[str, Any]]:
    return [f.to_dict() for f in (facts.get(k) for k in keys) if f is not None]


def _src(rule: str, url: str) -> Dict[str, Any]:
    return {"rule": rule, "url": url, "checked": CHECKED}


def _jax(facts: Facts) -> Dict[str, Any]:
    fact = facts.get("framework.jax")
    if fact is None or not fact.known or not isinstance(fact.value, dict):
        return {}
    return fact.value


def _specifier(text: Any) -> Optional[SpecifierSet]:
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return SpecifierSet(text.replace(" ", ""))
    except InvalidSpecifier:
        return None


def _toolkit_version(facts: Facts, resolved: str) -> Optional[Tuple[str, str]]:
    """(version, toolkit path) of the CUDA toolkit a binary path lies in."""
    tks = facts.value("cuda.toolkits")
    for tk in tks if isinstance(tks, list) else []:
        if not isinstance(tk, dict) or not isinstance(tk.get("path"), str):
            continue
        root = tk["path"].rstrip("/")
        if resolved.startswith(root + "/") and isinstance(tk.get("version"), str):
            return tk["version"], root
    nvcc = facts.mapping("cuda.nvcc")
    if isinstance(nvcc.get("resolved"), str) and posixpath.dirname(nvcc["resolved"]) == posixpath.dirname(resolved):
        ver = nvcc.get("version") or nvcc.get("release")
        if isinstance(ver, str):
            return ver, posixpath.dirname(posixpath.dirname(resolved))
    return None


def _ptxas(facts: Facts) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]]]:
    """(first ptxas on PATH, the nvidia-cuda-nvcc wheel's ptxas) of fact framework.jax.ptxas."""
    ptxas = facts.value("framework.jax.ptxas")
    if not isinstance(ptxas, dict):
        return None, None
    on_path, wheel = ptxas.get("path"), ptxas.get("wheel")
    return (on_path if isinstance(on_path, dict) else None), (wheel if isinstance(wheel, dict) else None)


#: JAX's README, "pip installation: GPU (CUDA, installed locally, harder)" (the jax 0.4 releases of 2023), on jaxlib
#: wheels built against a locally installed CUDA: "You may use a JAX wheel provided the major version of your CUDA and
#: CuDNN installation matches, and the minor version is at least as new as the version JAX expects."
JAX_LOCAL_CUDA = "https://github.com/google/jax#pip-installation-gpu-cuda-installed-locally-harder"


def _local_cuda_too_old(have: Version, cuda: Any) -> bool:
    """Is the toolkit (its release ``have``) older than jaxlib's own CUDA (``cuda``, e.g. 11.1) within its major?"""
    need = _mm(_v(cuda)) if isinstance(cuda, str) else None
    mine = _mm(have)
    return need is not None and mine is not None and mine[0] == need[0] and mine < need


def _mm(v: Optional[Version]) -> Optional[Tuple[int, int]]:
    if v is None:
        return None
    rel = tuple(v.release) + (0, 0)
    return rel[0], rel[1]


@check("frameworks.jax-ptxas", requires=("framework.jax.ptxas", "cuda.nvcc"), reads=("cuda.*", "framework.*"),
       layers=("frameworks",), codes=(
    CodeDoc("framework.ptxas_shadowed", "error",
            "JAX (XLA) runs the ptxas first on PATH, which is older than the one its CUDA wheels require, or (a "
            "jaxlib built for a local CUDA, jaxlib 0.1.x+cudaNNN) than jaxlib's own CUDA release.",
            "framework.jax, framework.jax.ptxas (ptxas on PATH, the nvidia-cuda-nvcc wheel), cuda.toolkits, cuda.nvcc",
            "XLA compiles every kernel with ptxas; an older ptxas than jaxlib's CUDA rejects or miscompiles the "
            "PTX it generates ('Unsupported .version', 'ptxas returned an error').", PTXAS_ISSUE),
))
def jax_ptxas(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    jax = _jax(facts)
    if jax.get("build") != "cuda":
        return []
    on_path, wheel = _ptxas(facts)
    if on_path is None or not isinstance(on_path.get("resolved"), str):
        return []
    tk = _toolkit_version(facts, on_path["resolved"])
    if tk is None:
        return []
    have = _v(tk[0])
    wheels = jax.get("nvidia_wheels")
    req = next((w for k, w in (wheels.items() if isinstance(wheels, dict) else ())
                if k.startswith("nvidia-cuda-nvcc") and isinstance(w, dict)), None)
    spec = _specifier(req.get("specifier")) if req else None
    wheel_v = _v(wheel.get("version")) if wheel else None
    source_url = ""
    if have is None:
        return []
    if spec is not None and str(spec):
        if spec.contains(have, prereleases=True) or _mm(have) in {_mm(_v(s.version)) for s in spec
                                                                 if s.operator == ">="}:
            return []
        need, severity = str(spec), "error"
    elif wheel_v is not None and _mm(have) is not None and _mm(have) < _mm(wheel_v):  # type: ignore[operator]
        need, severity = ">= %s (the nvidia-cuda-nvcc wheel's)" % wheel.get("version"), "warning"  # type: ignore[union-attr]
    elif wheel_v is None and _local_cuda_too_old(have, jax.get("cuda")):
        # a jaxlib built for a local CUDA (jaxlib 0.1.x+cudaNNN, cuda12_local) uses the system toolkit's ptxas,
        # whose minor must be at least jaxlib's CUDA's
        need, severity, source_url = ">= %s (jaxlib's CUDA)" % jax.get("cuda"), "error", JAX_LOCAL_CUDA
    else:
        return []
    return [Finding(
        code="framework.ptxas_shadowed", severity=severity, components=["jax", "cuda"],
        title="JAX runs %s (CUDA %s, first on PATH), but jax %s needs ptxas %s%s" % (
            on_path["path"], tk[0], jax.get("jaxlib") or jax.get("version"), need,
            "; the pip ptxas %s at %s is not used" % (wheel.get("version"), wheel.get("path")) if wheel else ""),
        detail="XLA compiles its GPU kernels with the ptxas binary it finds first on PATH before the one the "
               "nvidia-cuda-nvcc wheel ships. An older ptxas than jaxlib's CUDA fails on (or miscompiles) the PTX "
               "jaxlib generates: 'ptxas returned an error during compilation of ptx to sass'.",
        evidence=_ev(facts, "framework.jax", "framework.jax.ptxas", "cuda.toolkits", "cuda.nvcc"),
        source=(_src("jaxlib built for a local CUDA %s needs an installed CUDA of that major and at least its minor; "
                     "XLA takes the ptxas on PATH first" % jax.get("cuda"), source_url) if source_url else
                _src("jaxlib's CUDA wheels require nvidia-cuda-nvcc %s; XLA takes the ptxas on PATH first" % need,
                     PTXAS_ISSUE)),
        fix=Fix(text="Take %s/bin off PATH in the environment that runs JAX (or upgrade that toolkit to CUDA %s or "
                     "newer), so the wheel's ptxas is used." % (tk[1], need.lstrip(">= ").split(" ")[0]),
                commands=['export PATH="$(echo "$PATH" | tr : "\\n" | grep -vx "%s" | paste -sd:)"'
                          % posixpath.dirname(on_path["path"])]),
    )]


@check("frameworks.jax-ptxas-driver", requires=("framework.jax.ptxas", "driver.version"),
       reads=("cuda.*", "framework.*", "driver.nvidia_pci_gpus") + INSTALL_LINE_READS, layers=("driver",),
       codes=docs_for(compat.DOCS, "driver.minor_version_compat"),
       yields={"driver.minor_version_compat": ("driver.minor_version_compat", "driver.too_old_for_toolkit")})
def jax_ptxas_driver(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    jax = _jax(facts)
    if jax.get("build") != "cuda":
        return []
    drv = _mm(_v(facts.value("driver.cuda_version")))
    on_path, wheel = _ptxas(facts)
    runs: Optional[Tuple[str, str]] = None
    if on_path is not None and isinstance(on_path.get("resolved"), str):
        tk = _toolkit_version(facts, on_path["resolved"])
        runs = (tk[0], on_path["path"]) if tk else None
    elif wheel is not None and isinstance(wheel.get("version"), str):
        runs = (wheel["version"], wheel.get("path") or "")
    have = _mm(_v(runs[0])) if runs else None
    if drv is None or have is None or runs is None or have[0] != drv[0] or have <= drv:
        return []
    # (where jaxlib's CUDA or the toolkit it uses already runs through minor-version compatibility, or is too new
    # for this driver by JAX's own rule, driver-vs-cuda says so, and this finding yields to that one)
    return [Finding(
        code="driver.minor_version_compat", severity="info", components=["driver", "jax"],
        title="Driver %s supports CUDA %d.%d; JAX compiles with ptxas %s (CUDA %d.%d, %s), so it runs through "
              "minor-version compatibility" % (facts.value("driver.version") or "?", drv[0], drv[1], runs[0],
                                               have[0], have[1], runs[1]),
        detail="The driver runs the cubins a newer ptxas of the same CUDA major produces, but XLA then turns off "
               "parallel compilation (slower compiles) and warns on every start.",
        evidence=_ev(facts, "driver.version", "driver.cuda_version", "framework.jax", "framework.jax.ptxas"),
        source=_src("XLA disables parallel compilation when ptxas is newer than the driver's CUDA", PTXAS_DRIVER),
        fix=Fix(text="Nothing is required. Update the driver to a branch for CUDA %d.%d or newer, or pin the "
                     "ptxas wheel to the driver's CUDA: `pip install 'nvidia-cuda-nvcc-cu%d==%d.%d.*'`." % (
                         have[0], have[1], drv[0], drv[0], drv[1])),
    )]


TRITON_PTXAS_ISSUE = "https://github.com/pytorch/pytorch/issues/119054"


@check("frameworks.triton-ptxas-driver", requires=("framework.torch.triton", "driver.cuda_version"),
       reads=("framework.torch", "framework.torch.triton", "driver.version", "driver.cuda_version", "cuda.nvcc"),
       layers=("driver",), codes=(
    CodeDoc("framework.triton_ptxas_newer_than_driver", "warning",
            "The ptxas Triton assembles torch.compile's kernels with (the one its wheel bundles, or "
            "TRITON_PTXAS_PATH) is a newer CUDA major than the driver supports.",
            "framework.torch.triton (triton's ptxas and its `--version`), driver.version, driver.cuda_version",
            "Eager PyTorch runs (its own kernels are built for the driver), but the cubins Triton produces cannot "
            "be loaded: torch.compile and Triton kernels fail with 'Triton Error [CUDA]: device kernel image is "
            "invalid'. A newer minor of the driver's own major loads (minor-version compatibility).",
            TRITON_PTXAS_ISSUE),))
def triton_ptxas_driver(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    triton = facts.value("framework.torch.triton")
    if not isinstance(triton, dict):
        return []
    drv = _mm(_v(facts.value("driver.cuda_version")))
    have = _mm(_v(triton.get("release")))
    if drv is None or have is None or have[0] <= drv[0]:
        return []
    row = hw.cuda_release("%d.%d" % have)
    exact = row.get("min_driver_linux") if row else None
    how = "TRITON_PTXAS_PATH" if triton.get("from") == "TRITON_PTXAS_PATH" else "bundled with it"
    # a ptxas of the driver's own major lets Triton's kernels load: the active toolkit's, when it is one
    nvcc = facts.value("cuda.nvcc")
    own = None
    if isinstance(nvcc, dict) and isinstance(nvcc.get("path"), str):
        tk = _mm(_v(nvcc.get("release")))
        if tk is not None and tk[0] == drv[0]:
            own = posixpath.join(posixpath.dirname(nvcc["path"]), "ptxas")
    text = ("Point Triton at a ptxas of CUDA %d.x (%s), or update the driver to one for CUDA %d.%d%s." % (
        drv[0], "export TRITON_PTXAS_PATH=%s" % own if own else "TRITON_PTXAS_PATH", have[0], have[1],
        " (>= %s)" % exact if exact else ""))
    return [Finding(
        code="framework.triton_ptxas_newer_than_driver", severity="warning", components=["driver", "torch"],
        title="Driver %s supports CUDA up to %d.%d, but %s %s assembles torch.compile kernels with ptxas %s "
              "(CUDA %d.%d, %s)" % (facts.value("driver.version") or "?", drv[0], drv[1], triton.get("package"),
                                    triton.get("version"), triton.get("ptxas_version") or triton.get("release"),
                                    have[0], have[1], how),
        detail="PyTorch's own CUDA kernels run, but every kernel Triton compiles (torch.compile, Inductor, Triton "
               "code) is a CUDA %d cubin this driver cannot load: 'Triton Error [CUDA]: device kernel image is "
               "invalid'. Minor-version compatibility does not cross majors." % have[0],
        evidence=_ev(facts, "driver.version", "driver.cuda_version", "framework.torch", "framework.torch.triton"),
        source=_src("Triton assembles with its bundled ptxas unless TRITON_PTXAS_PATH names another; a driver "
                    "loads cubins of its own CUDA major only", TRITON_PTXAS_ISSUE),
        fix=Fix(text=text, commands=["export TRITON_PTXAS_PATH=%s" % own] if own else []),
    )]


#: NVIDIA's PTX ISA release history (PTX ISA version -> the CUDA release that introduced it), the table cuda.json's
#: ptx_isa field follows.
PTX_ISA_HISTORY = "https://docs.nvidia.com/cuda/parallel-thread-execution/#release-notes-ptx-release-history"
TRITON_RELEASES = "https://pypi.org/project/triton/#history"


@check("frameworks.triton-ptxas-ptx", requires=("framework.torch.triton", "driver.cuda_version"),
       reads=("framework.torch", "framework.torch.triton", "driver.version", "driver.cuda_version", "cuda.toolkits",
              "cuda.nvcc"),
       layers=("frameworks",), codes=(
    CodeDoc("framework.triton_ptxas_too_old_for_ptx", "error",
            "Triton declares its kernels' PTX ISA version from the driver's CUDA, and the ptxas it runs (the first on "
            "PATH for Triton 1.x) is of an older CUDA that does not know that PTX ISA version.",
            "framework.torch.triton (the Triton release, the ptxas it runs and its release), driver.cuda_version, "
            "cuda.toolkits; the matrix's triton rows and cuda.json's ptx_isa",
            "Every kernel Triton compiles fails to assemble ('ptxas fatal : Unsupported .version 7.3; current version "
            "is '7.2''), so Triton ops and torch code that uses them stop at their first call. Triton 1.x takes the "
            "PTX ISA version from the driver, not from the ptxas; from 2.0 it bundles a ptxas and follows it.",
            PTX_ISA_HISTORY,
            messages=(Message("ptxas fatal   : Unsupported .version *; current version is '*'", PTX_ISA_HISTORY),)),))
def triton_ptxas_ptx(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    triton = facts.value("framework.torch.triton")
    if not isinstance(triton, dict) or not isinstance(triton.get("ptxas"), str):
        return []
    row = hw.triton_release(str(triton.get("version") or ""))
    drv = _mm(_v(facts.value("driver.cuda_version")))
    if row is None or row.get("ptx_isa") != "driver" or drv is None or drv < (10, 0):
        return []  # (below CUDA 10.0 Triton 1.x refuses to compile at all: 'Triton requires CUDA 10+')
    emitted = hw.ptx_isa_known_to(drv)
    cap = row.get("ptx_isa_max")
    if emitted is not None and cap is not None and Version(cap) < Version(emitted):
        emitted = cap
    release = triton.get("release")
    where = "its ptxas --version"
    if not isinstance(release, str) and isinstance(triton.get("resolved"), str):
        tk = _toolkit_version(facts, triton["resolved"])
        release, where = (tk[0], "the CUDA toolkit at %s" % tk[1]) if tk else (None, "")
    rel = _mm(_v(release))
    accepts = hw.ptx_isa_for_cuda("%d.%d" % rel) if rel else None
    if emitted is None or accepts is None or rel is None or Version(emitted) <= Version(accepts):
        return []
    need = hw.cuda_for_ptx_isa(emitted) or "?"
    how = {"PATH": "the first ptxas on PATH", "TRITON_PTXAS_PATH": "TRITON_PTXAS_PATH"}.get(
        str(triton.get("from")), "its ptxas")
    nvcc = facts.mapping("cuda.nvcc")
    own = None
    tk_rel = _mm(_v(nvcc.get("release"))) if isinstance(nvcc.get("path"), str) else None
    tk_isa = _v(hw.ptx_isa_for_cuda("%d.%d" % tk_rel)) if tk_rel is not None else None
    if tk_isa is not None and tk_isa >= Version(emitted):
        own = posixpath.dirname(nvcc["path"])
    steps = ("Put the bin folder of a CUDA %s or newer toolkit first on PATH%s, take ptxas off PATH (Triton %s then "
             "hands its PTX to the driver, which compiles it), or upgrade Triton to 2.0 or newer, which assembles "
             "with the ptxas it bundles." % (need, " (`export PATH=%s:$PATH`)" % own if own else "",
                                             triton.get("version")))
    return [Finding(
        code="framework.triton_ptxas_too_old_for_ptx", severity="warning" if unverified(row) else "error",
        components=["torch", "cuda"],
        title="%s %s writes PTX ISA %s for driver %s (CUDA %d.%d), but the ptxas it runs (%s, CUDA %d.%d) accepts "
              "PTX ISA %s at most" % (triton.get("package"), triton.get("version"), emitted,
                                     facts.value("driver.version") or "?", drv[0], drv[1], triton["ptxas"], rel[0],
                                     rel[1], accepts),
        detail="Every kernel Triton compiles fails to assemble: 'ptxas fatal : Unsupported .version %s; current "
               "version is '%s''. Triton %s takes the PTX ISA version from the driver's CUDA (up to %s), not from "
               "the ptxas it runs, which is %s (CUDA %d.%d, from %s); a PTX ISA %s file needs the ptxas of CUDA %s "
               "or newer." % (emitted, accepts, triton.get("version"), cap or emitted, how, rel[0], rel[1], where,
                              emitted, need),
        evidence=_ev(facts, "driver.version", "driver.cuda_version", "framework.torch.triton", "cuda.nvcc"),
        source=_src("Triton before 2.0 runs the first ptxas on PATH and declares the PTX ISA version of the "
                    "driver's CUDA; a ptxas accepts the PTX ISA versions up to its own CUDA release's",
                    str(row.get("source", {}).get("url") or TRITON_RELEASES)),
        fix=Fix(text=steps, commands=["export PATH=%s:$PATH" % own] if own else []),
    )]


CUDNN_ONE_PROCESS = "https://github.com/jax-ml/jax/issues/19004"


def _env_prefix(facts: Facts) -> Optional[str]:
    env = facts.mapping("python.environment")
    prefix = env.get("prefix")
    return prefix.rstrip("/") if isinstance(prefix, str) and prefix.startswith("/") else None


def _cudnn_copies_by_soname(facts: Facts, fw: str) -> Dict[str, Tuple[str, Version]]:
    """soname -> (the file the loader gives ``fw`` for it, that file's cuDNN version) for its cuDNN libraries, where
    the version is known to the minor: the file's own (libraries.cudnn), else, for the copy the framework ships
    beside itself, the cuDNN the matrix says its build ships."""
    out: Dict[str, Tuple[str, Version]] = {}
    for key in ("linkage." + fw, "linkage.%s.dlopen" % fw):
        for e in facts.items(key):
            if not isinstance(e, dict) or not e.get("path") or libraries.component_of(str(e.get("soname"))) != "cudnn":
                continue
            got = _v(libraries._cudnn_full_version(facts, e))
            if (got is None or len(got.release) < 2) and e.get("expected") and e.get("expected") == e.get("path"):
                req = libraries._required_cudnn(facts, fw)
                got = _v(req.get("version")) if req else None
            if got is not None and len(got.release) >= 2:
                out.setdefault(str(e["soname"]), (str(e.get("resolved") or e["path"]), got))
    return out


def _cudnn_first_loaded(facts: Facts) -> Iterable[Finding]:
    """Two frameworks of one Python whose cuDNN soname resolves to different files: the first imported loads its
    copy and the other gets it (the loader reuses a loaded soname); one older than the other's build is refused."""
    names = [f.name for f in framework_table.FRAMEWORKS if f.cudnn_build
             and facts.mapping("framework." + f.name).get("build") == "cuda"]
    copies = {fw: _cudnn_copies_by_soname(facts, fw) for fw in names}
    needs: Dict[str, Tuple[Version, Dict[str, Any]]] = {}
    for fw in names:
        req = libraries._required_cudnn(facts, fw)
        want = _v(req.get("version")) if req else None
        if req is not None and want is not None and len(want.release) >= 2:
            needs[fw] = (want, req)
    for first in names:
        for second in names:
            if first == second or second not in needs:
                continue
            want, req = needs[second]
            for soname, (path, got) in copies[first].items():
                theirs = copies[second].get(soname)
                if theirs is None or theirs[0] == path or got.release[0] != want.release[0]:
                    continue
                if _mm(got) >= _mm(want) or _mm(theirs[1]) < _mm(want):  # type: ignore[operator]
                    continue  # the first's copy satisfies it, or its own does not either (cudnn-version says so)
                a, b = libraries.NAMES.get(first, first), libraries.NAMES.get(second, second)
                fa = facts.mapping("framework." + first)
                fb = facts.mapping("framework." + second)
                va = fa.get("jaxlib") or fa.get("version")
                vb = fb.get("jaxlib") or fb.get("version")
                back = needs.get(first)
                reverse = back is None or (theirs[1].release[0] == back[0].release[0]
                                           and _mm(theirs[1]) >= _mm(back[0]))  # type: ignore[operator]
                steps = ("Import %s before %s in the program: %s then loads cuDNN %s (%s), which %s accepts%s. "
                         % (b, a, b, theirs[1], theirs[0], a,
                            "" if back is None else " (it needs %s or a newer %d.x)" % (back[0], back[0].release[0]))
                         if reverse else "")
                yield Finding(
                    code="cudnn.shadowed", severity="warning", components=["cudnn", first, second],
                    title="%s %s loads cuDNN %s (%s) and %s %s needs cuDNN >= %s: a program that imports %s first "
                          "gives %s cuDNN %s" % (a, va, got, path, b, vb, want, a, b, got),
                    detail="A process holds one %s: the loader reuses the copy already loaded, so whichever framework "
                           "is imported first serves both. %s's own lookup would find %s (cuDNN %s), but after %s it "
                           "is given cuDNN %s, an older minor than it was built with (%s), which it refuses "
                           "('Loaded runtime CuDNN library: %s but source was compiled with: %s')." % (
                               soname, b, theirs[0], theirs[1], a, got, req["from"], got, want),
                    evidence=_ev(facts, "framework." + first, "framework." + second, "linkage." + first,
                                 "linkage.%s.dlopen" % first, "linkage." + second, "linkage.%s.dlopen" % second,
                                 "libraries.cudnn"),
                    source=_src("one libcudnn per process: the first one to load it wins", CUDNN_ONE_PROCESS),
                    fix=Fix(text="%sOr make both load one cuDNN %d.x at %s or newer (preloading it comes before every "
                                 "framework's own search), or install a %s build made with cuDNN %s or newer." % (
                                     steps, want.release[0], want, a, "%d.%d" % _mm(want)),  # type: ignore[str-format]
                            commands=["export LD_PRELOAD=%s${LD_PRELOAD:+:$LD_PRELOAD}" % theirs[0]] if reverse
                            else []))


@check("frameworks.cudnn-in-one-process", requires=("framework.*", "libraries.cudnn"),
       reads=("python.environment", "linkage.*", "linkage.*.dlopen", "libraries.*"), layers=("libraries",),
       codes=docs_for(libraries._FRAMEWORK_LINKAGE_DOCS, "cudnn.shadowed"))
def cudnn_in_one_process(ctx: CheckContext) -> Iterable[Finding]:
    """Frameworks of one Python that would load the same cuDNN soname from different files: one process has one
    libcudnn.so.N, the first one loaded. torch carrying its own cuDNN (the pytorch channel's conda build names it)
    beside a framework that dlopens the environment's cuDNN (JAX, TensorFlow) is judged by the versions' minors;
    any other pair by where the loader takes each one's copy."""
    facts = ctx.facts
    torch = facts.mapping("framework.torch")
    req = torch.get("cudnn_required")
    if torch.get("build") != "cuda" or not isinstance(req, dict) or req.get("from") != "conda build":
        return list(_cudnn_first_loaded(facts))
    mine = _v(req.get("version"))
    prefix = _env_prefix(facts)
    others = [fw for fw in ("jax", "tensorflow") if facts.mapping("framework." + fw).get("build") == "cuda"]
    if mine is None or prefix is None or not others:
        return []
    out: List[Finding] = []
    for lib in facts.items("libraries.cudnn"):
        if not isinstance(lib, dict) or lib.get("kind") != "library" or not isinstance(lib.get("path"), str):
            continue
        if not lib["path"].startswith(prefix + "/lib/"):
            continue
        theirs = _v(lib.get("version"))
        if theirs is None or theirs.release[0] != mine.release[0] or _mm(theirs) == _mm(mine):
            continue
        names = ", ".join("%s %s" % (fw, facts.mapping("framework." + fw).get("jaxlib") or
                                     facts.mapping("framework." + fw).get("version")) for fw in others)
        older, newer = (("torch", names) if _mm(mine) < _mm(theirs) else (names, "torch"))  # type: ignore[operator]
        out.append(Finding(
            code="cudnn.shadowed", severity="warning", components=["cudnn", "torch"] + others,
            title="torch %s carries cuDNN %s, while %s uses this environment's cuDNN %s (%s): in one process the "
                  "first one loaded serves both" % (torch.get("version"), req["version"], names, lib["version"],
                                                    lib["path"]),
            detail="A process holds one libcudnn.so.%d: whichever framework is imported first loads its copy and the "
                   "other gets it. A cuDNN minor older than a framework was built with is refused, so importing %s "
                   "first breaks %s." % (mine.release[0], older, newer),
            evidence=_ev(facts, "framework.torch", *["framework." + fw for fw in others], "libraries.cudnn"),
            source=_src("one libcudnn per process: the first one to load it wins", CUDNN_ONE_PROCESS),
            fix=Fix(text="Give each framework its own environment, or install builds that use the same cuDNN minor "
                         "(the environment's %s for both)." % lib["version"])))
        break
    return out


CUPY_INSTALL = "https://docs.cupy.dev/en/stable/install.html"
#: pip removes the files its own RECORD lists, so distributions sharing a package folder break each other
PIP_UNINSTALL_URL = "https://pip.pypa.io/en/stable/cli/pip_uninstall/"


def _distributions_sharing_a_package(facts: Any, key: str) -> Optional[Tuple[List[str], str]]:
    """(their names, "name version, ...") of the two or more distributions a framework fact lists as installed over
    its one package folder (``packages``: cupy and cupy-cudaNNx; torch and torch-nightly); None for one or none."""
    pkgs = facts.mapping(key).get("packages")
    if not isinstance(pkgs, dict) or len(pkgs) < 2:
        return None
    names = sorted(pkgs)
    return names, ", ".join("%s %s" % (n, pkgs[n]) for n in names)


@check("frameworks.cupy-packages", requires=("framework.cupy",), reads=("driver.cuda_version",),
       layers=("frameworks",), codes=(
    CodeDoc("framework.cupy_packages_conflict", "warning", "Two or more CuPy packages (cupy, cupy-cudaNNx) are "
            "installed in one environment.", "framework.cupy", "They all write the same cupy/ package: the one "
            "installed last wins file by file, so the module can mix builds for different CUDA releases (CuPy "
            "itself warns 'multiple CuPy packages are installed').", CUPY_INSTALL),
))
def cupy_packages(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    several = _distributions_sharing_a_package(facts, "framework.cupy")
    if several is None:
        return []
    names, listed = several
    cuda = _v(str(facts.value("driver.cuda_version") or ""))
    keep = "cupy-cuda%dx" % cuda.release[0] if cuda is not None and cuda.release[0] >= 11 else None
    return [Finding(
        code="framework.cupy_packages_conflict", severity="warning", components=["cupy"],
        title="%d CuPy packages are installed together (%s); they provide the same cupy module" % (len(names), listed),
        detail="Every CuPy wheel and the source package write the cupy/ directory; the one installed last wins file "
               "by file, so cupy can load a mix of builds for different CUDA releases, and uninstalling one removes "
               "files the other needs. CuPy warns at import: 'CuPy may not function correctly because multiple CuPy "
               "packages are installed'.",
        evidence=_ev(facts, "framework.cupy", "driver.cuda_version"),
        source=_src("install exactly one CuPy package per environment", CUPY_INSTALL),
        fix=Fix(text="Uninstall all of them, then install only the one for this machine's CUDA%s." % (
                    " (%s: the driver runs CUDA %s)" % (keep, facts.value("driver.cuda_version")) if keep else ""),
                commands=["pip uninstall -y %s" % " ".join(names)] + (["pip install %s" % keep] if keep else [])))]


@check("frameworks.torch-packages", requires=("framework.torch",), reads=(), layers=("frameworks",), codes=(
    CodeDoc("framework.torch_packages_conflict", "warning", "Two or more distributions of PyTorch (torch, "
            "torch-nightly) are installed in one site-packages.", "framework.torch", "They all write the same "
            "torch/ package: the one installed last wins file by file, so torch reports one release while "
            "extensions built against the other fail to import ('undefined symbol').", PIP_UNINSTALL_URL),
))
def torch_packages(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    several = _distributions_sharing_a_package(facts, "framework.torch")
    if several is None:
        return []
    names, listed = several
    v = facts.mapping("framework.torch")
    return [Finding(
        code="framework.torch_packages_conflict", severity="warning", components=["torch"],
        title="%d PyTorch distributions are installed over one torch package (%s); torch reports %s" % (
            len(names), listed, v.get("version") or "?"),
        detail="Each of them writes the torch/ directory; the one installed last wins file by file, so the package "
               "is a mix of releases (pip removes only its own files on uninstall), and a compiled extension built "
               "against the other release cannot be imported (ImportError: undefined symbol).",
        evidence=_ev(facts, "framework.torch"),
        source=_src("one distribution per import package in an environment", PIP_UNINSTALL_URL),
        fix=Fix(text="Uninstall all of them, install the one release wanted, then rebuild the extensions built "
                     "against the other.", commands=["pip uninstall -y %s" % " ".join(names)]))]


#: torch 2.0.0's Inductor: cache_dir() (TORCHINDUCTOR_CACHE_DIR, else <tempdir>/torchinductor_<user>) holds the shared
#: objects it compiles and loads; a load failing with "failed to map segment from shared object" it explains as the
#: temporary folder mounted noexec (torch/_inductor/codecache.py, CppCodeCache._load_library, of the torch-2.0.0
#: wheel); Triton's cache defaults to <cache_dir>/triton (torch/_inductor/triton_ops/autotune.py).
INDUCTOR_CACHE_SOURCE = "https://github.com/pytorch/pytorch/blob/v2.0.0/torch/_inductor/codecache.py#L58-L62"
#: The first release with torch.compile and its Inductor backend.
INDUCTOR_FIRST = Version("2.0")


@check("frameworks.compile-cache-noexec", requires=("framework.torch", "env.compile_cache"), reads=("env.*",),
       layers=("frameworks",), codes=(
    CodeDoc("framework.compile_cache_noexec", "warning", "The folder where torch.compile's Inductor (and Triton "
            "under it) writes the kernels and shared objects it then loads is on a filesystem mounted noexec.",
            "framework.torch, env.compile_cache (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, TMPDIR, the mount "
            "table)", "Inductor's cache defaults to <temp dir>/torchinductor_<user> (/tmp, the folder most often "
            "mounted noexec): loading what it compiled there fails ('failed to map segment from shared object'), "
            "so torch.compile fails.", INDUCTOR_CACHE_SOURCE),
))
def compile_cache_noexec(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    version = _v(facts.mapping("framework.torch").get("version"))
    if version is None or Version(version.base_version) < INDUCTOR_FIRST:
        return []
    cache = facts.mapping("env.compile_cache")
    bad: List[Tuple[str, Dict[str, Any], Dict[str, Any]]] = []
    for name in ("inductor", "triton"):
        place = cache.get(name)
        if not isinstance(place, dict):
            continue
        mount = place.get("mount")
        if isinstance(mount, dict) and mount.get("noexec") is True:
            bad.append((name, place, mount))
    if len(bad) == 2 and bad[1][1].get("from") == "default" and bad[1][2] == bad[0][2]:
        bad = bad[:1]  # Triton's default cache lies inside Inductor's: one mount, said once
    if not bad:
        return []
    what = "; ".join("%s's cache %s (%s) is on %s, mounted noexec" % (
        "Inductor" if name == "inductor" else "Triton", place.get("path"),
        "the default" if place.get("from") == "default" else "set by %s" % place.get("from"), mount.get("point"))
        for name, place, mount in bad)
    points = sorted({str(m.get("point")) for _, _, m in bad})
    return [Finding(
        code="framework.compile_cache_noexec", severity="warning", components=["torch"],
        title="torch %s: %s, so torch.compile cannot load the kernels it builds there" % (
            facts.mapping("framework.torch").get("version"), what),
        detail="torch.compile's Inductor writes the C++ and Triton kernels it compiles, as shared objects, into its "
               "cache folder (TORCHINDUCTOR_CACHE_DIR, by default %s/torchinductor_<user>, Triton's under it unless "
               "TRITON_CACHE_DIR says otherwise) and then loads them; a filesystem mounted noexec refuses to map "
               "them ('failed to map segment from shared object'), and torch.compile fails." % (
                   cache.get("temp_dir") or "/tmp"),
        evidence=_ev(facts, "env.compile_cache", "framework.torch"),
        source=_src("Inductor's cache_dir(): TORCHINDUCTOR_CACHE_DIR, else <tempfile.gettempdir()>/torchinductor_"
                    "<user>; loading from a noexec mount fails", INDUCTOR_CACHE_SOURCE),
        fix=Fix(text="Point the caches at a folder on a filesystem that allows exec (set TORCHINDUCTOR_CACHE_DIR, "
                     "and TRITON_CACHE_DIR if set elsewhere), or remount %s with exec." % ", ".join(points),
                commands=["export TORCHINDUCTOR_CACHE_DIR=$HOME/.cache/torchinductor "
                          "TRITON_CACHE_DIR=$HOME/.cache/torchinductor/triton",
                          "findmnt -T %s -o TARGET,OPTIONS" % points[0]]))]


GLIBC_RULE_URL = "https://peps.python.org/pep-0600/"
GLIBC_FRAMEWORKS = framework_table.having("glibc")


def _glibc(text: Any) -> Optional[Version]:
    """``2.17`` -> Version; None for anything that is no glibc release number."""
    v = _v(text)
    return v if v is not None and len(v.release) >= 2 else None


@check("frameworks.glibc", requires=("os.glibc",), reads=("framework.*", "linkage.*"),
       layers=("frameworks", "libraries"), codes=(
    CodeDoc("framework.glibc_too_old", "error", "A framework's compiled libraries (or the wheel they came in) need "
            "a newer glibc than the system has.", "linkage.<framework>.abi (the GLIBC_x.y symbol versions its main "
            "libraries require, its wheels' manylinux tags), os.glibc",
            "`import` fails before any GPU code runs: ld.so refuses the library (\"version `GLIBC_2.27' not found "
            "(required by ...)\"). glibc is part of the OS and cannot be upgraded alone: an older release of the "
            "framework built for this glibc (a manylinux2014 wheel runs on glibc 2.17), a newer OS, or a container "
            "with a newer glibc.", GLIBC_RULE_URL),
))
def glibc_too_old(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    system = _glibc(facts.value("os.glibc"))
    if system is None:  # unknown, timed out, or not glibc (musl): nothing to compare with
        return []
    out: List[Finding] = []
    for name in GLIBC_FRAMEWORKS:
        abi = facts.mapping("linkage.%s.abi" % name)
        if not abi:
            continue
        out.extend(_glibc_finding(facts, name, abi, system))
    named = {n for f in out for n in f.components}
    for name in framework_table.having("links"):
        links = facts.value("linkage." + name)
        if name in named or not isinstance(links, list):
            continue
        finding = _loaded_glibc_finding(facts, name, links, system)
        if finding is not None:
            out.append(finding)
    return out


def _loaded_glibc_finding(facts: Facts, name: str, links: List[Any], system: Version) -> Optional[Finding]:
    """A CUDA library the loader hands ``name`` (from wherever it resolves: LD_LIBRARY_PATH, a tarball's lib/)
    that needs a newer glibc than this system's."""
    needs = [(_glibc(e.get("glibc")), e) for e in links if isinstance(e, dict)]
    over = [(need, e) for need, e in needs if need is not None and need > system]
    if not over:
        return None
    worst = max(over, key=lambda pair: pair[0])[1]
    lib = str(worst.get("resolved") or worst.get("path"))
    sysname = str(facts.value("os.glibc"))
    fw = facts.mapping("framework." + name)
    label = str(fw.get("package") or name)
    others = ", ".join(str(e.get("soname")) for _, e in over if e is not worst)
    return Finding(
        code="framework.glibc_too_old", severity="error", components=[name],
        title="%s (%s), which %s loads, needs glibc %s (GLIBC_%s of %s), but this system has glibc %s" % (
            worst.get("soname"), lib, label, worst.get("glibc"), worst.get("glibc"), worst.get("glibc_from"),
            sysname),
        detail="`import %s` fails: the loader refuses %s with \"%s: version `GLIBC_%s' not found (required by %s)\". "
               "That copy (found via %s) was built for a newer system than this one%s." % (
                   name, lib, worst.get("glibc_from"), worst.get("glibc"), lib, worst.get("via") or "the loader",
                   "; so were %s" % others if others else ""),
        evidence=_ev(facts, "linkage." + name, "os.glibc"),
        source=_src("a library requiring the symbol version GLIBC_x.y loads only with glibc >= x.y",
                    GLIBC_RULE_URL),
        fix=Fix(text="glibc belongs to the OS and cannot be upgraded on its own: install the build of this library "
                     "made for this OS release (NVIDIA publishes tarballs and packages per distribution, e.g. RHEL/"
                     "CentOS 7 builds for glibc 2.17), or run %s on a newer OS or in a container whose image has "
                     "glibc %s or newer." % (label, worst.get("glibc"))))


def _glibc_finding(facts: Facts, name: str, abi: Dict[str, Any], system: Version) -> List[Finding]:
    sysname = str(facts.value("os.glibc"))
    libs = [e for e in abi.get("libraries") or [] if isinstance(e, dict)]
    elf_need = _glibc(abi.get("glibc"))
    wheel_need = _glibc(abi.get("wheel_glibc"))
    elf_over = elf_need is not None and elf_need > system
    wheel_over = wheel_need is not None and wheel_need > system
    if not elf_over and not wheel_over:
        return []
    fw = facts.mapping("framework." + name)
    tags = [str(t) for t in abi.get("wheel_tags") or [] if isinstance(t, str)]
    tag_words = ("tagged %s, " % ", ".join(tags[:3])) if tags else ""
    mod = name
    if elf_over:
        package = str(abi.get("glibc_package") or fw.get("package") or name)
        version = abi.get("glibc_package_version")
        lib = str(abi.get("glibc_library") or "its library")
        base = posixpath.basename(lib)
        from_lib = str(abi.get("glibc_from") or "libc.so.6")
        title = "%s%s's %s needs glibc %s (GLIBC_%s of %s), but this system has glibc %s" % (
            package, " %s" % version if version else "", base, abi.get("glibc"), abi.get("glibc"), from_lib,
            sysname)
        detail = ("`import %s` fails: the loader refuses %s with \"%s: version `GLIBC_%s' not found (required by "
                  "%s)\". The library was built on a system with a newer glibc than this one" % (
                      mod, lib, from_lib, abi.get("glibc"), lib))
        detail += (" (its wheel %s, is %s: built for glibc %s)" % (package, tag_words.rstrip(", "), abi.get(
            "wheel_glibc")) if wheel_need is not None else "") + "."
        severity = "error"
    else:
        # only the wheel's tag says so: an error when no library could be read, milder when the libraries read
        # need no more than this glibc (the tag may claim more than the binaries use)
        read_ok = [e for e in libs if _glibc(e.get("glibc")) is not None]
        package = str(abi.get("wheel_package") or fw.get("package") or name)
        version = abi.get("wheel_package_version")
        title = "%s%s is a wheel built for glibc %s (%s), but this system has glibc %s" % (
            package, " %s" % version if version else "", abi.get("wheel_glibc"), ", ".join(tags[:2]) or "manylinux",
            sysname)
        if read_ok:
            severity = "warning"
            detail = ("pip refuses such a wheel on this system, so it was installed another way (a copied "
                      "environment, `pip --platform/--target`, a wheel file renamed). The libraries envdoctor read "
                      "need glibc %s at most, so `import %s` may still work; others in the wheel may need more." % (
                          abi.get("glibc"), mod))
        else:
            severity = "error"
            detail = ("pip refuses such a wheel on this system, so it was installed another way (a copied "
                      "environment, `pip --platform/--target`); its compiled libraries expect glibc %s symbols, "
                      "so `import %s` fails with \"version `GLIBC_...' not found\"." % (abi.get("wheel_glibc"), mod))
    need = str(abi.get("glibc") if elf_over else abi.get("wheel_glibc"))
    fix = Fix(
        text="glibc belongs to the OS and cannot be upgraded on its own. Either install a release of %s whose "
             "wheels are built for glibc %s or older (manylinux2014 wheels need glibc 2.17): pip run on this "
             "machine picks only wheels whose tags fit its glibc, so reinstalling lets it choose the newest release "
             "that fits (a wheel can be tagged lower than its libraries need: run envdoctor again after, and check "
             "that release still supports your GPU's CUDA); or run %s on a newer OS, or in a container whose image "
             "has glibc %s or newer (with the GPU passed through); or build it from source here." % (
                 package, sysname, name, need),
        commands=["pip install --force-reinstall --only-binary=:all: %s" % package])
    return [Finding(
        code="framework.glibc_too_old", severity=severity, components=[name], title=title, detail=detail,
        evidence=_ev(facts, "linkage.%s.abi" % name, "os.glibc", "framework." + name),
        source=_src("a library requiring the symbol version GLIBC_x.y loads only with glibc >= x.y; a "
                    "manylinux_x_y wheel (manylinux2014 = 2_17, manylinux2010 = 2_12) needs glibc >= x.y",
                    GLIBC_RULE_URL),
        fix=fix)]

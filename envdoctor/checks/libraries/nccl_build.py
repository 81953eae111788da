"""The CUDA an installed NCCL was built for, against the driver that must run it and the toolkit programs are built on.

NVIDIA packages every NCCL release once per CUDA version and says which in the package's version: Debian/Ubuntu
``libnccl2 2.11.4-1+cuda11.4``, RPM ``libnccl 2.11.4-1+cuda11.4``; the pip wheels by CUDA major
(``nvidia-nccl-cu12``). NCCL links its CUDA runtime statically (``-lcudart_static`` in its ``src/Makefile``), so a
build for CUDA X.Y runs only on a driver that runs CUDA X.Y: on an older one every NCCL call fails ("unhandled cuda
error", the runtime's cudaErrorInsufficientDriver). A build for another CUDA than the toolkit's is the one the
installation guide warns about (its apt and yum lines pin the ``+cudaX.Y`` build of the CUDA in use): the programs
built on the toolkit then run two CUDA runtimes in one process. A pip wheel's NCCL (``site-packages/nvidia/nccl/lib``)
is another matter: the loader does not find it unless a path points there; the framework that requires it loads it
through its own RPATH, so it is judged against that framework's CUDA, and against the toolkit only where the loader
gives programs that copy.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ... import lazyre, versions
from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence

#: NCCL links the CUDA runtime statically: https://github.com/NVIDIA/nccl/blob/master/src/Makefile
#: (``LDFLAGS += -L${CUDA_LIB} -lcudart_static``); the installation guide installs the package build of the CUDA in
#: use (``libnccl2=<version>-1+cuda<X.Y>``): https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html.
#: Both checked 2026-11-30.
NCCL_BUILD_RULE = {"rule": "an NCCL build carries the CUDA runtime of its +cudaX.Y (linked statically): the driver "
                           "must run that CUDA, and the package build should be the toolkit's CUDA",
                   "url": "https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html",
                   "checked": "2026-11-30"}
NCCL_MAKEFILE = "https://github.com/NVIDIA/nccl/blob/master/src/Makefile"
#: PyTorch's wheels that take NVIDIA's libraries from pip link libnccl.so.2 dynamically and find it through their RPATH
#: ``$ORIGIN/../../nvidia/nccl/lib`` (``USE_STATIC_NCCL=0`` and ``CUDA_RPATHS`` in .ci/manywheel/build_cuda.sh,
#: pytorch/pytorch at 00c7a380b8369d08e02dd400aa76dc6c0738b589, read 2026-11-30); torch/__init__.py preloads the
#: same ``nvidia/nccl/lib/libnccl.so.*`` when that fails. Nothing else on the machine is pointed there.
WHEEL_RPATH = "https://github.com/pytorch/pytorch/blob/main/.ci/manywheel/build_cuda.sh"

#: NVIDIA's NCCL packages: Debian/Ubuntu ``libnccl2``, RPM ``libnccl``; the CUDA build in the version's release part.
_PACKAGE = lazyre.compile(r"^libnccl\d*$")
_CUDA_SUFFIX = lazyre.compile(r"\+cuda(\d+)\.(\d+)(?![\d.])")
_WHEEL = "nvidia-nccl"  # NVIDIA's wheel, its name without the CUDA major (versions.cu_wheel)
#: The first CUDA release with minor-version compatibility (a runtime of X.y runs on a driver and beside programs of
#: any X.z): https://docs.nvidia.com/deploy/cuda-compatibility/ ("Minor Version Compatibility", from CUDA 11).
_MINOR_COMPAT_FROM = 11


def nccl_builds(facts: Facts) -> List[Dict[str, Any]]:
    """Every installed NCCL whose CUDA build is known: ``[{what, version, cuda, key}]`` (``cuda`` "11.0", or "12"
    for a pip wheel, which names the major only)."""
    out: List[Dict[str, Any]] = []
    for p in facts.items("cuda.packages"):
        if not isinstance(p, dict) or not _PACKAGE.match(str(p.get("name") or "")):
            continue
        m = _CUDA_SUFFIX.search(str(p.get("version") or ""))
        if m:
            out.append({"what": "%s %s" % (p["name"], p["version"]), "version": str(p["version"]),
                        "upstream": str(p["version"]).split(":", 1)[-1].split("-", 1)[0],
                        "cuda": "%s.%s" % (int(m.group(1)), int(m.group(2))), "key": "cuda.packages",
                        "manager": p.get("manager") or "dpkg", "name": p["name"]})
    for c in facts.items("libraries.nccl"):
        if not isinstance(c, dict) or c.get("kind") != "pip":
            continue
        major = versions.cuda_of_wheel(str(c.get("found_by") or "").replace("pip wheel ", "", 1), _WHEEL)
        if major:
            out.append({"what": "pip wheel %s %s" % (versions.cu_wheel(_WHEEL, major), c.get("version")),
                        "version": str(c.get("version")), "upstream": str(c.get("version")),
                        "cuda": major, "key": "libraries.nccl", "manager": "pip",
                        "name": versions.cu_wheel(_WHEEL, major),
                        "site": posixpath.dirname(str(c.get("path") or "")) or None})
    return out


def _loaded_elsewhere(facts: Facts, build: Dict[str, Any]) -> bool:
    """A system package whose library is not the one the loader gives programs (libnccl.so.2 resolves to a copy of
    another version): what that package was built for does not reach them."""
    if build["manager"] == "pip":
        return False
    choice = facts.mapping("libraries.loader_choice").get("libnccl.so.2")
    if not isinstance(choice, dict) or not choice.get("path") or not choice.get("version"):
        return False
    got, have = versions.parse(str(choice["version"])), versions.parse(build["upstream"])
    return got is not None and have is not None and got.release[:3] != have.release[:3]


def _loader_gives(facts: Facts, build: Dict[str, Any]) -> bool:
    """A pip wheel's NCCL is what the loader gives programs (libnccl.so.2 resolves into its nvidia/nccl/lib: a path
    such as LD_LIBRARY_PATH points there); otherwise only the framework that requires it loads it."""
    if not build.get("site"):
        return False
    lib = posixpath.join(build["site"], "nvidia", "nccl", "lib") + "/"
    choice = facts.mapping("libraries.loader_choice").get("libnccl.so.2")
    if not isinstance(choice, dict):
        return False
    return any(isinstance(choice.get(k), str) and posixpath.normpath(choice[k]).startswith(lib)
               for k in ("path", "resolved"))


def _loaded_by(facts: Facts, build: Dict[str, Any]) -> List[Tuple[Any, Optional[Dict[str, Any]]]]:
    """The framework builds of the wheel's environment that load NCCL from its nvidia/nccl/lib (they require an
    nvidia-nccl-cuNN wheel), each with the NCCL wheel it requires (``{name, required, installed}``)."""
    from ...probes.dlopen import required_wheels
    from ..compat import framework_needs

    out: List[Tuple[Any, Optional[Dict[str, Any]]]] = []
    for need in framework_needs(facts):
        if need.kind != "framework" or not isinstance(need.fact.value, dict):
            continue
        value = need.fact.value
        if build.get("site") and value.get("path") and posixpath.normpath(str(value["path"])) != \
                posixpath.normpath(build["site"]):
            continue
        wanted = [dict(info, name=name) for name, info in sorted(required_wheels(value).items())
                  if versions.cuda_of_wheel(name, _WHEEL)]
        if wanted:
            out.append((need, wanted[0]))
    return out


def _driver_level(facts: Facts) -> Tuple[Optional[str], Any]:
    from ...matrix import hardware

    version, supports, wsl = hardware.driver_of(facts)
    have = hardware.driver_cuda(version, supports, wsl)
    return ("%d.%d" % have if have else None), version


def _text(mm: Tuple[int, Optional[int]]) -> str:
    return "%d.%d" % (mm[0], mm[1]) if mm[1] is not None else str(mm[0])


def _matching(build: Dict[str, Any], cuda: str) -> str:
    """The command that installs the same NCCL release built for CUDA ``cuda`` (NVIDIA's repositories publish each
    release per CUDA version; the package's own version with its +cudaX.Y replaced)."""
    if build["manager"] == "pip":
        return "pip install '%s'" % versions.cu_wheel(_WHEEL, cuda)
    pinned = _CUDA_SUFFIX.sub("+cuda" + cuda, build["version"])
    if build["manager"] == "rpm":
        return "sudo yum install 'libnccl-%s' 'libnccl-devel-%s'" % (pinned, pinned)
    return "sudo apt-get install --allow-downgrades '%s=%s' 'libnccl-dev=%s'" % (build["name"], pinned, pinned)


@check("nccl-cuda-build", requires=("libraries.nccl",),
       reads=("cuda.*", "driver.*", "os.wsl", "libraries.*", "framework.*"), layers=("libraries",),
       # one root cause, one finding: a driver too old for the framework or toolkit that brings this NCCL is said there
       yields={"nccl.cuda_build_mismatch": ("driver.too_old_for_framework", "driver.too_old_for_toolkit")}, codes=(
    CodeDoc("nccl.cuda_build_mismatch", "error",
            "An installed NCCL was built for a CUDA the driver does not run (an error: NCCL carries that CUDA's "
            "runtime), or, a warning, for another CUDA than the active toolkit's (another major; before CUDA 11, "
            "another major.minor); a pip wheel's NCCL, which only the framework requiring it loads unless a path "
            "points the loader there, for another CUDA major than that framework's.",
            "cuda.packages (libnccl2/libnccl versions' +cudaX.Y), libraries.nccl (nvidia-nccl-cuNN wheels), "
            "libraries.loader_choice, driver.version, driver.cuda_version, cuda.nvcc/cuda.home, "
            "framework.<name> (cuda, nvidia_wheels)",
            "Every NCCL call fails with 'unhandled cuda error' (the CUDA runtime inside NCCL finds the driver too "
            "old), or programs built on the toolkit load an NCCL made for another CUDA.",
            NCCL_BUILD_RULE["url"] + "; " + NCCL_MAKEFILE + "; " + WHEEL_RPATH),
))
def nccl_cuda_build(ctx: CheckContext) -> Iterable[Finding]:
    from ...matrix import hardware
    from ..compat import active_toolkit

    facts = ctx.facts
    builds = [b for b in nccl_builds(facts) if not _loaded_elsewhere(facts, b)]
    if not builds:
        return
    level, driver_version = _driver_level(facts)
    version, supports, wsl = hardware.driver_of(facts)
    toolkit = active_toolkit(facts)
    tk = versions.major_minor(toolkit[0]) if toolkit else None
    for b in builds:
        ev = _evidence(facts, b["key"], "libraries.loader_choice")
        if hardware.driver_runs(b["cuda"], version, supports, wsl) == "too_old":
            yield Finding(
                code="nccl.cuda_build_mismatch", severity="error", components=["nccl", "driver"],
                title="NCCL %s was built for CUDA %s, but driver %s runs CUDA %s at most" % (
                    b["what"], b["cuda"], driver_version, level),
                detail="NCCL carries the CUDA runtime it was built with (it links it statically), so on a driver "
                       "older than CUDA %s every NCCL call fails ('unhandled cuda error': the runtime reports the "
                       "driver too old), whatever the program itself was built with." % b["cuda"],
                evidence=ev + _evidence(facts, "driver.version", "driver.cuda_version"),
                source=dict(NCCL_BUILD_RULE),
                fix=Fix(text="Install the NCCL build for a CUDA the driver runs (CUDA %s or older, the toolkit's if "
                             "you build against one), or a driver that runs CUDA %s." % (level, b["cuda"]),
                        commands=[_matching(b, _text(tk) if tk and tk[1] is not None else str(level))]
                        if level else []))
            continue
        if b["manager"] == "pip" and not _loader_gives(facts, b):
            yield from _against_framework(facts, b, ev)
            continue
        if tk is None or toolkit is None:
            continue
        need = versions.major_minor(b["cuda"])
        if need is None:
            continue
        other = need[0] != tk[0] or (need[1] is not None and tk[1] is not None and tk[0] < _MINOR_COMPAT_FROM
                                     and need[1] != tk[1])
        if not other:
            continue
        tk_text = _text(tk)
        yield Finding(
            code="nccl.cuda_build_mismatch", severity="warning", components=["nccl", "cuda"],
            title="NCCL %s was built for CUDA %s, but the CUDA toolkit is %s" % (b["what"], b["cuda"], tk_text),
            detail="NVIDIA builds each NCCL release once per CUDA version and the package's version names which "
                   "(+cudaX.Y); programs built on the CUDA %s toolkit (%s) then load an NCCL carrying another CUDA "
                   "runtime, and NCCL calls can fail ('unhandled cuda error'). Package managers take the newest "
                   "CUDA build unless the version is pinned." % (tk_text, toolkit[1]),
            evidence=ev + [toolkit[2].to_dict()], source=dict(NCCL_BUILD_RULE),
            fix=Fix(text="Install the NCCL build for CUDA %s (pin the +cuda%s version), or the toolkit NCCL was "
                         "built for." % (tk_text, tk_text),
                    commands=[_matching(b, tk_text)] if b["manager"] != "pip" else []))


def _against_framework(facts: Facts, b: Dict[str, Any], ev: List[Dict[str, Any]]) -> Iterable[Finding]:
    """A pip wheel's NCCL no path gives programs: the frameworks that load it through their RPATH must be of its
    CUDA major (NCCL carries its CUDA's runtime beside theirs)."""
    for need, wanted in _loaded_by(facts, b):
        major = need.cuda[0]
        if str(major) == str(b["cuda"]):
            continue
        if wanted and wanted["name"] != b["name"] and isinstance(wanted.get("installed"), str):
            continue  # its own wheel is installed too: the two overwrite each other (framework.nvidia_wheels_conflict)
        name = versions.cu_wheel(_WHEEL, major)
        spec = str(wanted.get("specifier") or "") if wanted and wanted["name"] == name else ""
        yield Finding(
            code="nccl.cuda_build_mismatch", severity="warning", components=["nccl", need.component],
            title="NCCL %s was built for CUDA %s, but %s, which loads it, was built with CUDA %s" % (
                b["what"], b["cuda"], need.label, "%d.%d" % need.cuda if need.cuda[1] is not None else major),
            detail="%s finds libnccl.so.2 in site-packages/nvidia/nccl/lib, where this wheel put it; NCCL carries "
                   "the CUDA runtime it was built with, so a CUDA %s process then runs a CUDA %s NCCL, and NCCL "
                   "calls can fail ('unhandled cuda error') or symbols be missing." % (
                       need.label, major, b["cuda"]),
            evidence=ev + [need.fact.to_dict()],
            source={"rule": "a framework's pip build loads NCCL from the nvidia-nccl-cuNN wheel of its own CUDA "
                            "major (its RPATH $ORIGIN/../../nvidia/nccl/lib)", "url": WHEEL_RPATH,
                    "checked": "2026-11-30"},
            fix=Fix(text="Install the NCCL wheel for CUDA %s, which %s requires." % (major, need.label),
                    commands=["pip install --force-reinstall '%s%s'" % (name, spec)]))

"""The GPU architectures each installed framework really carries code for.

Read from the CUDA fat binaries (``.nv_fatbin``) of the framework's kernel libraries through
``Host.fatbin`` (never importing the framework): the SASS architectures (``sm_80``, ``sm_90a``)
and PTX (``compute_90``) it ships.  This is what decides "no kernel image is available for
execution on the device", whatever the release notes or the matrix say, and it works for builds
no table lists (nightlies, NGC and source builds, distribution packages, old releases).

Fact ``framework.<name>.gpu_code`` = ``{"sass": [...], "ptx": [...], "libraries": [{path, sass,
ptx, complete}], "complete": bool}`` (the union over the framework's kernel libraries), or unknown
with the reason (no kernel library found, unreadable, not recorded in a snapshot).
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Tuple

from .. import frameworks
from ..facts import Fact, ok, unknown
from ..host.base import FatbinResult, Host
from ..host.fatbin import arch_sort_key
from . import ProbeContext, register

#: Framework -> (directory relative to its site-packages dir, file names or name prefixes ending in "*")
#: of the libraries holding its precompiled kernels, newest layout first (its plug-in's ``kernel_libraries``).
#: The first of a group that exists is read; the groups are united (torch 1.8-1.12 split its kernels over two
#: libraries).
KERNEL_LIBRARIES: Dict[str, Tuple[Tuple[str, Tuple[str, ...]], ...]] = {
    f.name: f.kernel_libraries for f in frameworks.FRAMEWORKS if f.kernel_libraries}
#: Reading stops after this many libraries per framework (a bound on hostile trees).
MAX_LIBRARIES = 32


def _candidates(host: Host, base: str, names: Tuple[str, ...]) -> List[str]:
    listing = None
    out: List[str] = []
    for name in names:
        if name.endswith("*"):
            if listing is None:
                listing = host.list_dir(base).names()
            out += [posixpath.join(base, n) for n in sorted(listing)
                    if n.startswith(name[:-1]) and (n.endswith(".so") or ".so." in n)]
        else:
            out.append(posixpath.join(base, name))
    return out


#: Framework -> (folder of its extension module relative to site-packages, the module's file names): where a
#: kernel library is not beside the framework, the one the module links is read where its own RPATH/RUNPATH finds
#: it (a conda build of torch 0.x put libTHC.so.1 in the environment's lib, _C's RPATH ``$ORIGIN/../../..``).
LINKED_BY: Dict[str, Tuple[str, str]] = {"torch": ("torch", r"_C(?:\.[A-Za-z0-9_.-]+)?\.so")}


def _linked_kernel_libraries(host: Host, location: str, name: str) -> List[str]:
    """The kernel libraries framework ``name``'s extension module names in NEEDED, found in the module's own search
    paths (``$ORIGIN`` expanded): the first directory holding each, as the loader takes it."""
    from .loader import own_search_paths

    if name not in LINKED_BY:
        return []
    rel, pattern = LINKED_BY[name]
    wanted = {n for _rel, names in KERNEL_LIBRARIES.get(name, ()) for n in names if not n.endswith("*")}
    out: List[str] = []
    for module in sorted(host.glob_dir(posixpath.join(location, rel), pattern))[:2]:
        elf = host.elf(module)
        if not elf.ok:
            continue
        rpath, runpath = own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(elf.path))
        dirs = rpath + runpath
        for soname in elf.needed:
            if soname not in wanted:
                continue
            path = next((posixpath.join(d, soname) for d in dirs if host.exists(posixpath.join(d, soname))), None)
            if path is not None and path not in out:
                out.append(path)
    return out


def read_gpu_code(host: Host, location: str, name: str) -> Tuple[List[FatbinResult], List[str]]:
    """The fat-binary readings of framework ``name``'s kernel libraries under ``location``, and the
    problems met (unreadable libraries); where none lies there, those its extension module links."""
    found: List[FatbinResult] = []
    problems: List[str] = []
    for rel, names in KERNEL_LIBRARIES.get(name, ()):
        base = posixpath.join(location, rel)
        multi = any(n.endswith("*") for n in names)
        for path in _candidates(host, base, names):
            if len(found) + len(problems) >= MAX_LIBRARIES:
                return found, problems
            res = host.fatbin(path)
            if res.error == "ENOENT":
                continue
            if res.ok:
                found.append(res)
            else:
                problems.append("%s: %s%s" % (path, res.error, " (%s)" % res.message if res.message else ""))
            if not multi:
                break  # first of the group that exists
    if not found and not problems:
        for path in _linked_kernel_libraries(host, location, name)[:MAX_LIBRARIES]:
            res = host.fatbin(path)
            if res.ok:
                found.append(res)
            elif res.error != "ENOENT":
                problems.append("%s: %s%s" % (path, res.error, " (%s)" % res.message if res.message else ""))
    return found, problems


@register("gpucode", "GPU code in framework binaries", order=96,
          produces=("framework.*.gpu_code",), needs=("frameworks",))
def probe_gpu_code(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    fw = ctx.facts_of("frameworks")
    facts: List[Fact] = []
    for name in KERNEL_LIBRARIES:
        value = fw.value("framework." + name)
        if not isinstance(value, dict) or not value.get("path") or value.get("build") not in ("cuda", "unknown"):
            continue
        key, label = "framework.%s.gpu_code" % name, "%s GPU code" % name
        found, problems = read_gpu_code(host, value["path"], name)
        with_code = [r for r in found if r.section]
        if not with_code:
            why = ("; ".join(problems) if problems else
                   "its libraries hold no CUDA fat binary" if found else
                   "none of its kernel libraries was found under %s" % value["path"])
            facts.append(unknown(key, why, "fatbin:" + (found[0].path if found else value["path"]), label))
            continue
        libs: List[Dict[str, Any]] = [{"path": r.path, "sass": list(r.sass), "ptx": list(r.ptx),
                                       "complete": r.complete} for r in with_code]
        sass = sorted({a for r in with_code for a in r.sass}, key=arch_sort_key)
        ptx = sorted({a for r in with_code for a in r.ptx}, key=arch_sort_key)
        facts.append(ok(key, {"sass": sass, "ptx": ptx, "libraries": libs,
                              "complete": all(r.complete for r in with_code) and not problems},
                        "fatbin:" + with_code[0].path, label))
    return facts

"""What a framework links (ELF dependencies) and opens at run time (dlopen): a CUDA library the loader cannot
find, or another copy winning over the framework's own.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List

from ... import frameworks, versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import builds
from .. import CheckContext, CodeDoc, check
from ..suggest import INSTALL_LINE_READS
from . import (
    _FRAMEWORK_LINKAGE_DOCS,
    CHECKED,
    LDSO_RULE,
    NAMES,
    _copies_of,
    _cudnn_copies,
    _drop_ldp_entry,
    _evidence,
    _fw_version,
    _pip_fix_for,
    _required_cudnn,
    _v,
    _version_at,
    _why,
    component_of,
    torch_variant,
)

#: ONNX Runtime's CUDA provider takes the CUDA and cuDNN libraries a PyTorch imported before it has loaded: a soname
#: already in the process satisfies the provider's NEEDED entries and dlopen calls (ld.so(8)), and torch/__init__.py
#: loads its nvidia-* wheels' libraries from site-packages/nvidia/<lib>/lib when it is imported (_load_global_deps,
#: _preload_cuda_deps). ONNX Runtime documents this pairing ("Compatibility with PyTorch").
TORCH_FIRST = {"rule": "onnxruntime-gpu reuses the CUDA and cuDNN libraries PyTorch loaded, when their majors match "
                       "(import torch before creating the session)",
               "url": "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html"
                      "#compatibility-with-pytorch", "checked": "2026-11-29"}


def torch_loads(facts: Facts, fw: str) -> Dict[str, str]:
    """{soname: copy} of the CUDA/cuDNN libraries ``fw`` (ONNX Runtime) cannot find on its own that a CUDA build of
    PyTorch in the same site-packages loads from its nvidia-* wheels when imported first: the provider then finds
    them in the process. Empty for other frameworks, or when torch's CUDA major is not the provider's."""
    if fw != "onnxruntime":
        return {}
    mine, torch = facts.mapping("framework." + fw), facts.mapping("framework.torch")
    site = str(mine.get("path") or "")
    if not site or torch.get("build") != "cuda" or str(torch.get("path") or "") != site:
        return {}
    if str(torch.get("cuda") or "").split(".")[0] != str(mine.get("cuda") or "").split(".")[0]:
        return {}
    wheels = posixpath.join(site, "nvidia") + "/"
    out: Dict[str, str] = {}
    for e in facts.items("linkage.%s.dlopen" % fw):
        if not isinstance(e, dict) or e.get("path"):
            continue
        copy = next((str(p) for p in e.get("elsewhere") or [] if str(p).startswith(wheels)
                     and re.match(r"^[^/]+/lib/[^/]+$", str(p)[len(wheels):])), None)
        if copy and component_of(str(e.get("soname"))) in ("cuda", "cudnn"):
            out[str(e.get("soname"))] = copy
    return out


def _torch_first(facts: Facts, fw: str, missing: Dict[str, str]) -> Finding:
    names = sorted(missing)
    return Finding(
        code="%s.framework_cannot_load" % ("cudnn" if all(component_of(n) == "cudnn" for n in names) else "cuda"),
        severity="info", components=["cuda", fw, "torch"],
        title="%s finds %s only once %s is imported first" % (
            _fw_version(facts, fw), ", ".join(names), _fw_version(facts, "torch")),
        detail="The loader alone does not find them (they are in PyTorch's nvidia-* wheels: %s); PyTorch loads them "
               "when it is imported, and %s then uses the copies in the process. A program that creates a CUDA "
               "session without importing torch first falls back to the CPU." % (
                   ", ".join(sorted({posixpath.dirname(p) for p in missing.values()})), NAMES[fw]),
        evidence=_evidence(facts, "framework." + fw, "framework.torch", "linkage." + fw, "linkage.%s.dlopen" % fw),
        source=dict(TORCH_FIRST),
        fix=Fix(text="Import torch before onnxruntime (onnxruntime 1.21 and later can also load them itself: "
                     "onnxruntime.preload_dlls()), or put those directories on LD_LIBRARY_PATH."))


def _framework_linkage(facts: Facts, fw: str) -> Iterable[Finding]:
    yield from _extension_cannot_load(facts, fw)
    entries = facts.value("linkage." + fw)
    if not isinstance(entries, list):
        return
    via_torch = torch_loads(facts, fw)
    for e in entries:
        if not isinstance(e, dict) or (not e.get("path") and e.get("soname") in via_torch):
            continue  # framework-dlopen says it is found once torch is imported
        soname = e.get("soname", "")
        comp = component_of(soname)
        comps = [comp, fw] if comp != "cuda" else ["cuda", fw]
        ev = _evidence(facts, "linkage." + fw, "linkage.%s.elf" % fw)
        yield from _foreign_cudnn_parts(facts, fw, e, ev)
        if not e.get("path") and e.get("cache_unknown"):
            # Not found outside the ld.so cache, and the cache itself could not be read: maybe it is there.
            yield Finding(
                code="%s.framework_cannot_load" % comp, severity="warning", components=comps,
                title="%s needs %s, which is not in its RPATH/RUNPATH, LD_LIBRARY_PATH or the default "
                      "directories; the ld.so cache could not be read to tell" % (_fw_version(facts, fw), soname),
                detail="%s (%s) fails with '%s: cannot open shared object file' unless the ld.so cache lists "
                       "it, and envdoctor could not read the cache: %s." % (
                           NAMES[fw], e.get("how", "NEEDED"), soname, e["cache_unknown"]),
                evidence=_evidence(facts, "linkage." + fw, "linkage.%s.elf" % fw, "libraries.ld_cache"),
                source=dict(LDSO_RULE), fix=Fix(
                    text="Check whether the cache lists it; if not, install it as below.",
                    commands=["ldconfig -p | grep -F '%s'" % soname] + _pip_fix_for(facts, fw, soname).commands))
        elif not e.get("path"):
            yield Finding(
                code="%s.framework_cannot_load" % comp, severity="error", components=comps,
                title="%s needs %s, but the loader finds no such file" % (_fw_version(facts, fw), soname),
                detail="%s (%s) would fail with '%s: cannot open shared object file: No such file or "
                       "directory': it is not in the library's own RPATH/RUNPATH, LD_LIBRARY_PATH, the "
                       "ld.so cache or the default directories.%s" % (
                           NAMES[fw], e.get("how", "NEEDED"), soname, _installed_text(facts, comp)),
                evidence=ev, source=dict(LDSO_RULE), fix=_pip_fix_for(facts, fw, soname))
        elif e.get("shadowed"):
            # torch's own cuDNN rule decides whether the winner is merely different or too old:
            # that case is reported by cudnn-version (an error) instead.
            winner_version = _version_at(facts, comp, e.get("resolved"))
            yield Finding(
                code="%s.shadowed" % comp, severity="warning", components=comps,
                title="%s loads %s %sfrom %s (via %s), not the copy it ships at %s" % (
                    _fw_version(facts, fw), soname, "%s " % winner_version if winner_version else "",
                    e.get("resolved") or e.get("path"), e.get("via"), e.get("expected")),
                detail="The dynamic loader finds %s through %s before reaching the framework's own copy; the "
                       "framework then runs with a library it was not built and tested with.%s" % (
                           soname, _why(e.get("via")), _installed_text(facts, comp, e.get("resolved"))),
                evidence=ev, source=dict(LDSO_RULE),
                fix=Fix(text="Remove the directory holding %s from LD_LIBRARY_PATH (or drop its ld.so.conf "
                             "entry and run ldconfig) so the framework's own copy is used." % (
                                 e.get("resolved") or e.get("path")),
                        commands=[_drop_ldp_entry(posixpath.dirname(str(e.get("path") or e.get("resolved"))))
                                  if e.get("via") == "LD_LIBRARY_PATH" else "sudo ldconfig"]))


def _extension_cannot_load(facts: Facts, fw: str) -> Iterable[Finding]:
    """A PyTorch extension package (vLLM, flash-attn, ...) whose compiled module needs a CUDA library that neither
    the loader nor the framework provides: built for another CUDA than the framework's, it cannot be imported."""
    ext = facts.value("linkage.%s.extensions" % fw)
    if not isinstance(ext, list):
        return
    have = facts.mapping("framework." + fw)
    yield from _extension_for_other_build(facts, fw, [e for e in ext if isinstance(e, dict) and e.get("framework_lib")])
    if not _gpu_present(facts):
        return
    for e in ext:
        if not isinstance(e, dict) or not e.get("soname") or e.get("framework_lib"):
            continue
        soname, comp = str(e["soname"]), component_of(str(e["soname"]))
        want = re.match(r"^lib\w+?\.so\.(\d+)", soname)
        major = want.group(1) if want else "?"
        other = str(have.get("cuda") or "").split(".")[0] not in ("", major)
        elsewhere = [str(p) for p in e.get("elsewhere") or []]
        fix = Fix(text=("Install the %s build made for %s's CUDA %s, or the %s build for the CUDA %s.x the "
                        "package needs (pip install with that CUDA's index URL), so both use one CUDA runtime." % (
                            e.get("package"), NAMES.get(fw, fw), have.get("cuda"), NAMES.get(fw, fw), major))
                  if other else "Install the CUDA %s.x runtime the package links (the %s wheel, or the CUDA "
                                "toolkit's libraries on the loader path)." % (
                                    major, versions.cu_wheel("nvidia-cuda-runtime", major)))
        if elsewhere:
            where = posixpath.dirname(elsewhere[0])
            fix = Fix(text="Put %s, which holds %s, on the loader's path (LD_LIBRARY_PATH, or an ld.so.conf.d entry "
                           "and ldconfig)." % (where, soname),
                      commands=['export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}' % where])
        yield Finding(
            code="%s.framework_cannot_load" % comp, severity="error", components=[comp, fw],
            title="%s %s needs %s, which neither the loader nor %s provides" % (
                e.get("package"), e.get("version"), soname, _fw_version(facts, fw)),
            detail="Its compiled module %s links %s; %s (CUDA %s) brings no such library, and it is not on "
                   "LD_LIBRARY_PATH, in the ld.so cache or the default directories, so importing %s fails with "
                   "'%s: cannot open shared object file'.%s" % (
                       e.get("path"), soname, _fw_version(facts, fw), have.get("cuda") or "?", e.get("package"),
                       soname, " The package was built for CUDA %s, the framework for CUDA %s." % (
                           major, have.get("cuda")) if other else "") + (
                " A copy lies at %s, where the loader does not look." % ", ".join(elsewhere) if elsewhere else ""),
            evidence=_evidence(facts, "linkage.%s.extensions" % fw, "framework." + fw),
            source=dict(LDSO_RULE), fix=fix)


def _extension_for_other_build(facts: Facts, fw: str, entries: List[Dict[str, Any]]) -> Iterable[Finding]:
    """An extension package whose modules link libraries of the framework that this build of it does not have
    (``libc10_cuda.so``, ``libtorch_cuda.so``: a CUDA build of torchvision beside a CPU-only torch): its modules
    cannot be imported, on any machine. One finding per package."""
    have = facts.mapping("framework." + fw)
    by_package: Dict[str, List[Dict[str, Any]]] = {}
    for e in entries:
        by_package.setdefault(str(e.get("package")), []).append(e)
    for package, es in sorted(by_package.items()):
        libs = sorted({str(e.get("soname")) for e in es})
        files = sorted({posixpath.basename(str(e.get("path"))) for e in es})
        cuda = any("cuda" in lib for lib in libs)
        yield Finding(
            code="cuda.framework_cannot_load", severity="error", components=[fw, "cuda"] if cuda else [fw],
            title="%s %s needs %s, which %s does not have%s" % (
                package, es[0].get("version"), ", ".join(libs), _fw_version(facts, fw),
                " (a CUDA build of %s beside a %s build of %s)" % (package, have.get("build") or "CPU-only",
                                                                    NAMES.get(fw, fw)) if cuda else ""),
            detail="Its compiled module%s %s link%s %s; %s ships no such librar%s, so importing %s fails with "
                   "'%s: cannot open shared object file' (torchvision then reports its operators as missing: "
                   "'operator torchvision::nms does not exist')." % (
                       "s" if len(files) > 1 else "", ", ".join(files), "" if len(files) > 1 else "s",
                       ", ".join(libs), _fw_version(facts, fw), "ies" if len(libs) > 1 else "y", package, libs[0]),
            evidence=_evidence(facts, "linkage.%s.extensions" % fw, "framework." + fw),
            source=dict(LDSO_RULE),
            fix=Fix(text="Install the %s build that matches %s %s (from the same index: pip then picks the %s "
                         "release made for it), or %s's %s build to go with it." % (
                             package, NAMES.get(fw, fw), have.get("version"), package, NAMES.get(fw, fw),
                             "CUDA" if cuda else "other"),
                    commands=["pip install 'torch==%s' '%s' --index-url https://download.pytorch.org/whl/%s" % (
                        str(have.get("version") or "").partition("+")[0], package, torch_variant(have))]
                    if fw == "torch" and package in ("torchvision", "torchaudio") else []))


def _foreign_cudnn_parts(facts: Facts, fw: str, e: Dict[str, Any], ev: Any) -> Iterable[Finding]:
    """cuDNN sub-libraries the framework's own cuDNN (9+) lacks, which the loader takes from another cuDNN copy
    of another version: cuDNN refuses the mix at the first operation that needs them."""
    parts = [p for p in e.get("foreign_parts") or [] if isinstance(p, dict)]
    own = _version_at(facts, "cudnn", e.get("resolved"))
    mixed = [p for p in parts if not (own and p.get("version") and (str(p["version"]).startswith(str(own)) or
                                                                 str(own).startswith(str(p["version"]))))]
    if not mixed:
        return
    names = ", ".join("%s %s" % (p["soname"], p.get("version") or "(version unknown)") for p in mixed)
    where = sorted({posixpath.dirname(str(p.get("path"))) for p in mixed})
    yield Finding(
        code="cudnn.shadowed", severity="error", components=["cudnn", fw],
        title="%s's cuDNN %sat %s lacks %s, which the loader takes from another cuDNN (%s)" % (
            _fw_version(facts, fw), "%s " % own if own else "", posixpath.dirname(str(e.get("resolved"))),
            ", ".join(p["soname"] for p in mixed), ", ".join(where)),
        detail="cuDNN 9 opens its sub-libraries (engines, ops, cnn, adv, graph, heuristic) with dlopen by bare "
               "soname; one missing beside the framework's copy is found through %s instead: %s. A sub-library "
               "of another version than the core is refused when first used (cudnnFinalize: "
               "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH), e.g. at the first convolution." % (
                   ", ".join(sorted({_why(p.get("via")) for p in mixed})), names),
        evidence=ev, source=dict(LDSO_RULE),
        fix=Fix(text="Make the other cuDNN unreachable for this process (take %s off LD_LIBRARY_PATH, or remove that "
                     "cuDNN), or install a cuDNN for the framework that ships every sub-library (a newer "
                     "nvidia-cudnn wheel of the same major). Disabling cuDNN (torch.backends.cudnn.enabled = False) "
                     "avoids the crash at a speed cost." % ", ".join(where),
                commands=[_drop_ldp_entry(d) for d in where if any(
                    p.get("via") == "LD_LIBRARY_PATH" for p in mixed)]))


@check("framework-linkage.{}", each=frameworks.having("links"), requires=("framework.{}", "linkage.*"),
       reads=("framework.*", "libraries.*", "linkage.*.elf", "linkage.*.extensions", "linkage.*.dlopen",
              "gpu.count", "driver.nvidia_pci_gpus") + INSTALL_LINE_READS, layers=("cuda", "libraries", "frameworks"),
       codes=_FRAMEWORK_LINKAGE_DOCS)
def framework_linkage_of(ctx: CheckContext, item: str) -> Iterable[Finding]:
    """The CUDA libraries the framework links (ELF dependencies): missing, or shadowed by another copy."""
    return _framework_linkage(ctx.facts, item)


def _installed_text(facts: Facts, comp: str, exclude: Any = None) -> str:
    """' cuDNN copies present: 8.9.7 at /x (how it was found); ...' for a finding's detail ('' when none is known)."""
    others = [c for c in _copies_of(facts, comp) if c["resolved"] != exclude]
    if not others:
        return ""
    return " %s copies present: %s." % (
        {"cudnn": "cuDNN", "nccl": "NCCL", "tensorrt": "TensorRT"}[comp],
        "; ".join("%s at %s (%s)" % (c["version"], c["path"], c["found_by"]) for c in others))


def _gpu_present(facts: Facts) -> bool:
    count = facts.value("gpu.count")
    return (isinstance(count, int) and count > 0) or bool(facts.value("driver.nvidia_pci_gpus"))


def _dlopen_linkage(facts: Facts, fw: str) -> Iterable[Finding]:
    """The CUDA libraries the framework dlopens at run time that the loader cannot find (on a GPU machine: on a
    CPU-only one a CUDA build falls back to the CPU, as intended)."""
    entries = facts.value("linkage.%s.dlopen" % fw)
    if not isinstance(entries, list) or not _gpu_present(facts):
        return
    if facts.mapping("framework." + fw).get("conflict"):
        return  # several packages share the module: which build's files are in place (and what they open) is
        # unknown; framework.cupy_packages_conflict says so
    needed = {e.get("soname") for e in facts.items("linkage." + fw) if isinstance(e, dict)}
    via_torch = torch_loads(facts, fw)
    if via_torch:
        yield _torch_first(facts, fw, via_torch)
    for e in entries:
        if isinstance(e, dict) and e.get("soname") in via_torch:
            continue
        if isinstance(e, dict) and e.get("path") and e.get("not_pinned_copy") and e.get("soname") not in needed:
            yield from _dlopen_not_the_pinned_copy(facts, fw, e)
        elif isinstance(e, dict) and e.get("path") and e.get("built_cuda") and e.get("soname") not in needed:
            yield from _runtime_older_than_build(facts, fw, e)
        if not isinstance(e, dict) or e.get("path") or e.get("soname") in needed:
            continue
        soname = str(e.get("soname", ""))
        comp = component_of(soname)
        if comp == "cudnn" and _other_major_cudnn(facts, fw):
            continue  # cudnn-version names the cuDNN of the wrong major that is there instead
        if comp == "tensorrt":
            yield from _tensorrt_missing(facts, fw, e)
            continue
        elsewhere = [str(p) for p in (e.get("elsewhere_files") if isinstance(e.get("elsewhere_files"), list)
                                      else e.get("elsewhere")) or []]
        if elsewhere:
            where = posixpath.dirname(elsewhere[0])
            fix = Fix(text="A copy is at %s, where the loader does not look: put its directory on "
                           "LD_LIBRARY_PATH for %s." % (elsewhere[0], NAMES[fw]),
                      commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % where])
        elif soname.endswith(".so") and _copies_of(facts, comp):
            # the unversioned name is the development link (libcudnn8-dev, cudnn-devel); the runtime copy is here
            real = _copies_of(facts, comp)[0]
            link = posixpath.join(posixpath.dirname(real["resolved"]), soname)
            fix = Fix(text="%s is the development link, which the runtime package does not install; %s %s is at %s. "
                           "Install the distribution's cuDNN development package, or make the link." % (
                               soname, comp if comp != "cudnn" else "cuDNN", real["version"], real["path"]),
                      commands=["sudo ln -s %s %s" % (real["resolved"], link), "sudo ldconfig"])
        else:
            fix = _pip_fix_for(facts, fw, soname)
        yield Finding(
            code="%s.framework_cannot_load" % comp, severity="error", components=[comp, fw],
            title="%s loads %s at run time, but the loader finds no such file%s" % (
                _fw_version(facts, fw), soname, " (a copy is at %s, which is not searched)" % elsewhere[0]
                if elsewhere else ""),
            detail="%s opens %s with dlopen when it first uses the GPU; it is not on LD_LIBRARY_PATH, in the "
                   "directories %s adds itself, the ld.so cache or the default directories, so %s falls back to "
                   "the CPU or fails ('%s: cannot open shared object file').%s" % (
                       NAMES[fw], soname, NAMES[fw], NAMES[fw], soname,
                       (" Copies that exist but are not searched: %s." % ", ".join(elsewhere) if elsewhere else "")
                       + _installed_text(facts, comp)),
            evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "cuda.ld_library_path"),
            source=dict(LDSO_RULE), fix=fix)


RUNTIME_DOC = CodeDoc(
    "cuda.runtime_older_than_framework", "warning", "A framework opens a CUDA runtime (or NVRTC) of an older minor "
    "than the CUDA it was built with.", "linkage.<framework>.dlopen",
    "Functions the build calls are missing from the older runtime: it fails when it first uses them, or refuses to "
    "start ('CUDA driver version is insufficient for CUDA runtime version' is the other way round).",
    "https://docs.nvidia.com/deploy/cuda-compatibility/")


def _runtime_older_than_build(facts: Facts, fw: str, e: Dict[str, Any]) -> Iterable[Finding]:
    """The CUDA runtime or NVRTC the framework dlopens is of an older minor than its build's CUDA (a system CUDA 11.2
    on LD_LIBRARY_PATH for nvidia-tensorflow built with CUDA 11.8): the file's version is the CUDA release's."""
    got, built = _v(e.get("file_version")), _v(e.get("built_cuda"))
    if got is None or built is None or len(got.release) < 3:
        return  # a soname's own suffix (libcudart.so.11.0) is no release: the file's full version is needed
    if got.release[:1] != built.release[:1] or got.release[:2] >= built.release[:2]:
        return
    where = posixpath.dirname(str(e.get("path")))
    yield Finding(
        code="cuda.runtime_older_than_framework", severity="warning", components=["cuda", fw],
        title="%s loads %s %s from %s (via %s), older than its build's CUDA %s" % (
            _fw_version(facts, fw), e.get("soname"), e.get("file_version"), e.get("resolved") or e.get("path"),
            e.get("via"), e.get("built_cuda")),
        detail="%s opens the CUDA runtime with dlopen and takes the first %s the loader finds, through %s; a runtime "
               "older than the build's CUDA lacks functions the build calls.%s" % (
                   NAMES[fw], e.get("soname"), _why(e.get("via")), (" Copies not searched: %s." % ", ".join(
                       str(p) for p in e.get("elsewhere_files") or [])) if e.get("elsewhere_files") else ""),
        evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "cuda.ld_library_path"),
        source={"rule": "a CUDA application needs a runtime of its own CUDA minor or newer",
                "url": RUNTIME_DOC.source, "checked": "2026-11-29"},
        fix=Fix(text="Take %s off LD_LIBRARY_PATH, or put a CUDA %s runtime first (the toolkit's lib64, or the "
                     "nvidia-cuda-runtime wheel's lib)." % (where, e.get("built_cuda")),
                commands=[_drop_ldp_entry(where)]) if e.get("via") == "LD_LIBRARY_PATH" else Fix(
            text="Install the CUDA %s runtime where the loader finds it first." % e.get("built_cuda")))


def _dlopen_not_the_pinned_copy(facts: Facts, fw: str, e: Dict[str, Any]) -> Iterable[Finding]:
    """A library the framework opens at run time is taken from another copy than the one in the NVIDIA wheel its
    metadata requires (LD_LIBRARY_PATH naming a system CUDA first, a framework that does not search the wheels): an
    older one is an error (the build calls functions it lacks), another a warning. cuDNN is judged by its own
    version checks."""
    soname = str(e.get("soname"))
    comp = component_of(soname)
    if comp == "cudnn":
        return
    got, want = _v(e.get("file_version")), _v(e.get("pinned_version"))
    older = got is not None and want is not None and got.release[:1] == want.release[:1] and \
        got.release[:2] < want.release[:2]
    where = posixpath.dirname(str(e.get("path")))
    yield Finding(
        code="%s.shadowed" % comp, severity="error" if older else "warning", components=[comp, fw],
        title="%s loads %s %sfrom %s (via %s), not the %s%s its package requires" % (
            _fw_version(facts, fw), soname, "%s " % e["file_version"] if e.get("file_version") else "",
            e.get("resolved") or e.get("path"), e.get("via"), e.get("pinned"),
            " (%s)" % e["pinned_version"] if e.get("pinned_version") else ""),
        detail="%s opens %s with dlopen, which searches %s before the pip wheel %s requires.%s" % (
            NAMES[fw], soname, _why(e.get("via")), NAMES[fw],
            " That copy is older than the one the build was made with: functions it calls are missing ('undefined "
            "symbol', or a CUDA error at run time)." if older else " The framework then runs with a library it was "
                                                                    "not built and tested with."),
        evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "cuda.ld_library_path"),
        source=dict(LDSO_RULE),
        fix=Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so the wheel's copy is found%s." % (
                    where, "" if fw != "tensorflow" else ", or put the wheels' lib directories before it"),
                commands=[_drop_ldp_entry(where)]) if e.get("via") == "LD_LIBRARY_PATH" else Fix(
            text="Make the wheel's copy the one the loader finds first (LD_LIBRARY_PATH), or remove the other copy "
                 "from the loader's path.",
            commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % posixpath.dirname(
                str(e.get("pinned")))]))


def _other_major_cudnn(facts: Facts, fw: str) -> bool:
    req = _required_cudnn(facts, fw)
    want = _v(req["version"]) if req else None
    return want is not None and any(
        _v(c["version"]) is not None and _v(c["version"]).major != want.major  # type: ignore[union-attr]
        for c in _cudnn_copies(facts))


def _tensorrt_copies(facts: Facts) -> List[Dict[str, Any]]:
    return _copies_of(facts, "tensorrt")


def _tensorrt_missing(facts: Facts, fw: str, e: Dict[str, Any]) -> Iterable[Finding]:
    """The TensorRT soname a framework's TensorRT path opens is missing. Without any TensorRT that is the normal
    state of a machine that does not use it (TensorFlow only logs 'TF-TRT Warning: Could not find TensorRT');
    with a TensorRT of another major installed, the user's TensorRT cannot be used: a warning naming both."""
    copies = _tensorrt_copies(facts)
    soname = str(e.get("soname"))
    major = soname.rsplit(".", 1)[-1]
    if soname.startswith("libnvinfer_plugin.") and any(
            isinstance(o, dict) and o.get("soname") == "libnvinfer.so." + major and not o.get("path")
            for o in facts.items("linkage.%s.dlopen" % fw)):
        return  # one finding for the TensorRT major: the main library's
    wrong = [c for c in copies if str(c["version"]).split(".")[0] != major]
    right = [c for c in copies if c not in wrong]
    if not copies:
        return
    v = facts.mapping("framework." + fw)
    if right:  # the right major is installed, but not where the framework's dlopen looks
        where = posixpath.dirname(right[0]["path"])
        yield Finding(
            code="tensorrt.framework_cannot_load", severity="warning", components=["tensorrt", fw],
            title="%s's TensorRT support loads %s, but TensorRT %s at %s is not where the loader looks" % (
                _fw_version(facts, fw), soname, right[0]["version"], right[0]["path"]),
            detail="%s opens %s with dlopen when TensorRT is first used; that directory is not on "
                   "LD_LIBRARY_PATH or in the ld.so cache, so the TensorRT path is unavailable.%s" % (
                       NAMES[fw], soname, _installed_text(facts, "tensorrt", right[0]["resolved"])),
            evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "libraries.tensorrt"),
            source=dict(LDSO_RULE),
            fix=Fix(text="Put %s on LD_LIBRARY_PATH for %s." % (where, NAMES[fw]),
                    commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % where]))
        return
    trt = builds.tensorflow_tensorrt_major(v.get("public") or v.get("version")) if fw == "tensorflow" else None
    row = trt[1] if trt else {}
    src = {"rule": "%s %s's TensorRT build opens %s (TensorRT %s); a TensorRT of another major has other sonames "
                   "and is never used" % (NAMES[fw], v.get("version"), soname, major),
           "url": row.get("source", {}).get("url", LDSO_RULE["url"]),
           "checked": row.get("source", {}).get("checked", CHECKED)}
    have = ", ".join("TensorRT %s at %s (%s)" % (c["version"], c["path"], c["found_by"]) for c in wrong)
    yield Finding(
        code="tensorrt.framework_cannot_load", severity="warning", components=["tensorrt", fw],
        title="%s's TensorRT support loads %s (TensorRT %s), but only %s is installed" % (
            _fw_version(facts, fw), soname, major, have),
        detail="%s opens %s with dlopen when TensorRT is first used; TensorRT majors have different sonames, so "
               "the installed %s is never loaded and the TensorRT path (TF-TRT) is unavailable ('Could not load "
               "dynamic library '%s''); the rest of %s works." % (NAMES[fw], soname, have, soname, NAMES[fw]),
        evidence=_evidence(facts, "framework." + fw, "linkage.%s.dlopen" % fw, "libraries.tensorrt"),
        source=src,
        fix=Fix(text="Use a %s release built for the TensorRT you have, or install TensorRT %s's libraries "
                     "(%s) where the loader finds them." % (NAMES[fw], major, soname),
                commands=["pip install --upgrade '%s'" % (v.get("package") or fw)]))


@check("framework-dlopen.{}", each=frameworks.ordered_by("dlopen_order"),
       requires=("linkage.*.dlopen",),
       reads=("cuda.*", "framework.*", "libraries.*", "linkage.*", "driver.nvidia_pci_gpus") + INSTALL_LINE_READS,
       layers=("cuda", "libraries"),
       codes=tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code.endswith((".framework_cannot_load", ".shadowed")))
       + (RUNTIME_DOC,))
def framework_dlopen_of(ctx: CheckContext, item: str) -> Iterable[Finding]:
    """The libraries the framework opens at run time (dlopen): missing where the loader looks."""
    return _dlopen_linkage(ctx.facts, item)

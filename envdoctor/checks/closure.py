"""Every CUDA library a program or a framework loads, transitively, judged the same way wherever it is asked:
``envdoctor libs PATH`` for any ELF program or shared object, and ``diagnose`` for each framework's libraries
beyond the ones its own checks already judge (ONNX Runtime's execution providers, a CUDA library's own
dependencies, cuDNN's sub-libraries, what an extension module links).

The links come from :func:`envdoctor.probes.loader.cuda_closure` (the loader's rules, NEEDED and the names
each library holds for dlopen). Four verdicts:

* ``linkage.missing``: the loader finds no file of that soname (an error: the library fails to load, or the
  part of the program that opens it fails; when the loader cache could not be read, a warning);
* ``linkage.wrong_major``: none of that soname, but another major of the same library is installed (sonames
  carry the major: libnvinfer.so.10 is never taken for libnvinfer.so.8);
* ``linkage.older_than_shipped``: the loader takes another copy than the one the requesting library ships
  beside itself (its RPATH/RUNPATH), and an older one: CUDA libraries need their dependencies of their own
  minor or newer, else they fail with "undefined symbol" (cuSPARSE and nvJitLink);
* ``linkage.shadowed``: another copy wins over the shipped one, not older (a warning).

A library that is optional to its program (ONNX Runtime's TensorRT provider) is judged milder: missing without
any TensorRT installed is the normal state of a machine that does not use it, and says nothing.
"""

from __future__ import annotations

import posixpath
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from .. import frameworks, versions
from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

LDSO_URL = "https://man7.org/linux/man-pages/man8/ld.so.8.html"
RULE = {"rule": "ld.so search order: DT_RPATH of the object and its loaders (without DT_RUNPATH), LD_LIBRARY_PATH, "
                "DT_RUNPATH, /etc/ld.so.cache, default dirs; a soname names one major",
        "url": LDSO_URL, "checked": "2026-11-28"}
NAMES = {"cuda": "CUDA", "cudnn": "cuDNN", "nccl": "NCCL", "tensorrt": "TensorRT"}

DOCS = (
    CodeDoc("linkage.missing", "error", "A library needs a CUDA, cuDNN, NCCL or TensorRT library the loader cannot "
            "find.", "linkage.<framework>.closure (envdoctor libs: the program's closure)",
            "Loading fails with '<soname>: cannot open shared object file', or the part that opens it (an "
            "execution provider, cuDNN's sub-libraries) fails when first used.", LDSO_URL),
    CodeDoc("linkage.wrong_major", "error", "A library needs one major of a CUDA library and only another major is "
            "installed.", "linkage.<framework>.closure",
            "Sonames carry the major (libnvinfer.so.8, libnvinfer.so.10): the loader never substitutes one for the "
            "other, so the library fails to load.", LDSO_URL),
    CodeDoc("linkage.older_than_shipped", "error", "The loader gives a library an older copy of a CUDA library "
            "than the one it ships beside itself.", "linkage.<framework>.closure",
            "CUDA libraries need their dependencies of their own minor or newer; an older one lacks symbols they "
            "call ('undefined symbol: __nvJitLinkAddData_12_4').", LDSO_URL),
    CodeDoc("linkage.shadowed", "warning", "Another copy of a CUDA library wins over the one the requesting library "
            "ships beside itself.", "linkage.<framework>.closure",
            "The library runs with a dependency it was not built and tested with.", LDSO_URL),
)

#: Why the loader takes a copy, by how it was found.
WHY = {
    "RPATH": "a DT_RPATH (of the library, one that loaded it, or the program), searched before LD_LIBRARY_PATH",
    "LD_LIBRARY_PATH": "LD_LIBRARY_PATH, searched before a library's RUNPATH, the ld.so cache and the default "
                       "directories",
    "RUNPATH": "the library's own RUNPATH",
    "ldconfig cache": "the ld.so cache",
    "default dir": "a default directory",
    "loaded": "a library of that soname already loaded",
}


def _drop_ldp_entry(directory: str) -> str:
    return ('export LD_LIBRARY_PATH="$(echo "$LD_LIBRARY_PATH" | tr \':\' \'\\n\' | grep -vx %s | paste -sd:)"'
            % directory)


def _older(got: Any, want: Any) -> Optional[bool]:
    g, w = versions.parse(str(got or "")), versions.parse(str(want or ""))
    if g is None or w is None or len(g.release) < 2 or len(w.release) < 2:
        return None
    return g.release[:2] < w.release[:2] if g.release[0] == w.release[0] else None


def _name(path: Any) -> str:
    return posixpath.basename(str(path or "")) or "the program"


def judge(closure: Dict[str, Any], subject: str = "", components: Sequence[str] = (),
          optional: Callable[[Dict[str, Any]], bool] = lambda link: False,
          skip: Callable[[Dict[str, Any]], bool] = lambda link: False,
          evidence: Optional[List[Dict[str, Any]]] = None) -> List[Finding]:
    """Findings for the CUDA links of one closure. ``subject`` names what the roots belong to ("onnxruntime-gpu
    1.16.3"), ``components`` are added to each finding's, ``optional(link)`` marks links the program can run
    without, ``skip(link)`` the links another check already judges."""
    out: List[Finding] = []
    seen = set()
    # libraries one requester cannot find whose copies lie in one directory the loader does not search (cuDNN 8's
    # six sub-libraries in a pip wheel's nvidia/cudnn/lib): one cause, one fix, so one finding
    unsearched: Dict[Any, List[Dict[str, Any]]] = {}
    slots: List[Any] = []
    for link in closure.get("links") or []:
        if not isinstance(link, dict) or skip(link):
            continue
        key = (link.get("soname"), link.get("resolved"), bool(link.get("shadowed")))
        if key in seen:
            continue
        seen.add(key)
        elsewhere = link.get("elsewhere") or []
        if not link.get("path") and link.get("certain", True) and elsewhere:
            group = (link.get("requester"), str(link.get("component") or "cuda"), link.get("how"),
                     posixpath.dirname(str(elsewhere[0])), optional(link))
            if group not in unsearched:
                unsearched[group] = []
                slots.append(group)
            unsearched[group].append(link)
            continue
        slots.append(link)
    for slot in slots:
        if isinstance(slot, dict):
            finding = _verdict(slot, subject, optional(slot), closure.get("cache_unknown"))
            comp = str(slot.get("component") or "cuda")
        else:
            links = unsearched[slot]
            finding = (_verdict(links[0], subject, slot[4], closure.get("cache_unknown")) if len(links) == 1
                       else _unsearched(links, subject, slot[4], slot[3]))
            comp = slot[1]
        if finding is None:
            continue
        finding.components = [comp] + [c for c in components if c != comp]
        finding.evidence = list(evidence or [])
        out.append(finding)
    return out


def _unsearched(links: List[Dict[str, Any]], subject: str, optional: bool, where: str) -> Finding:
    """One finding for several libraries a requester cannot find whose copies are all in ``where``."""
    first = links[0]
    comp = str(first.get("component") or "cuda")
    req = _name(first.get("requester"))
    who = "%s (%s)" % (req, subject) if subject else req
    sonames = [str(link.get("soname")) for link in links]
    named = ", ".join(sonames[:-1]) + " and " + sonames[-1]
    how = "opens %s with dlopen" % named if first.get("how") == "dlopen" else "needs %s" % named
    return Finding(
        code="linkage.missing", severity="warning" if optional else "error", components=[comp],
        title="%s %s; copies are in %s, which the loader does not search" % (who, how, where),
        detail="None of these %d libraries is on the library's RPATH/RUNPATH, LD_LIBRARY_PATH, in the ld.so cache or "
               "the default directories, so loading them fails ('%s: cannot open shared object file'). Copies that "
               "exist but are not searched: %s." % (
                   len(links), sonames[0], ", ".join(str(p) for link in links for p in link.get("elsewhere") or [])),
        source=dict(RULE),
        fix=Fix(text="Put %s on LD_LIBRARY_PATH (or load the package that ships them first)." % where,
                commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % where]))


def _verdict(link: Dict[str, Any], subject: str, optional: bool, cache_why: Any) -> Optional[Finding]:
    soname = str(link.get("soname"))
    comp = str(link.get("component") or "cuda")
    req = _name(link.get("requester"))
    who = "%s (%s)" % (req, subject) if subject else req
    how = "opens %s with dlopen" % soname if link.get("how") == "dlopen" else "needs %s" % soname
    if not link.get("path"):
        majors = [m for m in link.get("other_majors") or [] if isinstance(m, dict)]
        elsewhere = [str(p) for p in link.get("elsewhere") or []]
        if not link.get("certain", True):
            return Finding(
                code="linkage.missing", severity="warning", components=[comp],
                title="%s %s, which is not on its RPATH/RUNPATH, LD_LIBRARY_PATH or in the default directories; "
                      "the ld.so cache could not be read to tell" % (who, how),
                detail="It loads only if the ld.so cache lists %s, and the cache could not be read: %s." % (
                    soname, cache_why or "unknown reason"),
                source=dict(RULE), fix=Fix(text="Check whether the cache lists it.",
                                           commands=["ldconfig -p | grep -F '%s'" % soname]))
        if elsewhere:
            where = posixpath.dirname(elsewhere[0])
            return Finding(
                code="linkage.missing", severity="warning" if optional else "error", components=[comp],
                title="%s %s; a copy is at %s, which the loader does not search" % (who, how, elsewhere[0]),
                detail="%s is not on the library's RPATH/RUNPATH, LD_LIBRARY_PATH, in the ld.so cache or the default "
                       "directories, so loading it fails ('%s: cannot open shared object file'). Copies that exist "
                       "but are not searched: %s." % (soname, soname, ", ".join(elsewhere)),
                source=dict(RULE),
                fix=Fix(text="Put %s on LD_LIBRARY_PATH (or load the package that ships it first)." % where,
                        commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % where]))
        if majors:
            have = ", ".join("%s %s (%s at %s)" % (NAMES[comp], m.get("version") or "of another major",
                                                    m.get("soname"), m.get("path")) for m in majors[:3])
            wanted_major = soname.split(".so.", 1)[-1] if ".so." in soname else "?"
            return Finding(
                code="linkage.wrong_major", severity="warning" if optional else "error", components=[comp],
                title="%s %s (%s %s), but only %s is installed" % (who, how, NAMES[comp], wanted_major, have),
                detail="The soname carries the major: the loader never takes %s for %s, so %s fails to load%s." % (
                    majors[0].get("soname"), soname, req, " (the program runs without it: only what needs it is "
                                                          "unavailable)" if optional else ""),
                source=dict(RULE),
                fix=Fix(text="Install %s %s's libraries where the loader finds them, or a build of %s made for the "
                             "%s you have." % (NAMES[comp], wanted_major, subject or req, NAMES[comp])))
        if optional:
            return None
        return Finding(
            code="linkage.missing", severity="error", components=[comp],
            title="%s %s, but the loader finds no such file" % (who, how),
            detail="%s is not on the library's RPATH/RUNPATH, LD_LIBRARY_PATH, in the ld.so cache or the default "
                   "directories, and no copy was found elsewhere: loading fails with '%s: cannot open shared "
                   "object file'." % (soname, soname),
            source=dict(RULE), fix=Fix(text="Install the %s library that provides %s." % (NAMES[comp], soname)))
    if not link.get("shadowed"):
        return None
    got, want = link.get("version"), link.get("expected_version")
    via_text = str(link.get("via"))
    where = posixpath.dirname(str(link.get("path")))
    fix = Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so %s's own copy is used." % (where, req),
              commands=[_drop_ldp_entry(where)]) if via_text == "LD_LIBRARY_PATH" else Fix(
        text="Remove the other copy from the loader's path (its ld.so.conf entry, then sudo ldconfig), or make the "
             "shipped copy win.", commands=["sudo ldconfig"])
    symbols = link.get("missing_symbols")
    release = link.get("expected_by") == "release"
    older = _older(got, want) if release or not isinstance(symbols, list) else bool(symbols)
    if release and via_text != "LD_LIBRARY_PATH":
        own = posixpath.dirname(str(link.get("expected")))
        fix = Fix(text="Put %s first on LD_LIBRARY_PATH so every piece of %s comes from one release (or remove the "
                       "other %s)." % (own, NAMES[comp], NAMES[comp]),
                  commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % own])
    taken = "%s %sfrom %s (via %s)" % (soname, "%s " % got if got else "", link.get("resolved") or link.get("path"),
                                        via_text)
    if release:
        why = ("%s's pieces must all be of one release: the library checks its sub-libraries' version when it opens "
               "them and fails (CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, or 'undefined symbol' for a call the other "
               "release lacks); %s is not on %s's RPATH/RUNPATH, so the loader does not look beside it first" % (
                   NAMES[comp], link.get("expected"), req))
    if older:
        why = why if release else ("it lacks %s, which %s calls, so loading fails with 'undefined symbol: %s'" % (
                   ", ".join(symbols[:3]) + (" and %d more" % (len(symbols) - 3) if len(symbols) > 3 else ""), req,
                   symbols[0]) if symbols else
               "a CUDA library needs its dependencies of its own minor or newer: this older one lacks symbols %s "
               "calls, so it fails to load ('undefined symbol')" % req)
        return Finding(
            code="linkage.older_than_shipped", severity="warning" if optional else "error", components=[comp],
            title="%s loads %s, older than the %s it ships at %s" % (who, taken, want or "copy",
                                                                      link.get("expected")),
            detail="The loader finds it through %s; %s." % (WHY.get(via_text, via_text), why),
            source=dict(RULE), fix=fix)
    return Finding(
        code="linkage.shadowed", severity="warning", components=[comp],
        title="%s loads %s, not the copy it ships at %s%s" % (who, taken, link.get("expected"),
                                                              " (%s)" % want if want else ""),
        detail=("The loader takes it from %s and never reaches the copy beside the library: %s." % (
            WHY.get(via_text, via_text), why)) if release else (
               "The loader takes it from %s and never reaches the copy beside the library, which then runs with a "
               "%s library it was not built and tested with (it exports every symbol the library imports of it%s)." % (
                   WHY.get(via_text, via_text), NAMES[comp], "" if isinstance(link.get("missing_symbols"), list)
                   else ", as far as could be read")),
        source=dict(RULE), fix=fix)


def count(findings: Iterable[Finding]) -> Dict[str, int]:
    out = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        out[f.severity] = out.get(f.severity, 0) + 1
    return out


# -- in diagnose ---------------------------------------------------------------------------------------------


#: the frameworks whose CUDA libraries' closure is judged (``linkage.<name>.closure``: those whose linkage is read)
FRAMEWORKS = frameworks.having("links")
SYMBOLS_DOC = CodeDoc(
    "framework.extension_abi_mismatch", "error", "An extension module imports framework symbols the installed "
    "framework does not export.", "linkage.torch.extension_symbols, linkage.tensorflow.extension_symbols",
    "It was built against another release of the framework: importing it fails with 'undefined symbol: "
    "_ZN3c10...' (C++ has no stable ABI across releases).", "https://pytorch.org/docs/stable/notes/faq.html")


def _gpu_present(facts: Facts) -> bool:
    count = facts.value("gpu.count")
    return (isinstance(count, int) and count > 0) or bool(facts.value("driver.nvidia_pci_gpus"))


def _fw_text(facts: Facts, fw: str) -> str:
    v = facts.mapping("framework." + fw)
    package = str(v.get("package") or fw)
    return "%s %s" % (package, v.get("version", "?"))


def _wheel_to_wheel(link: Dict[str, Any]) -> bool:
    """A wheel library taking another copy of a wheel library it ships with: the nvidia-wheel-links check's."""
    return bool(link.get("shadowed")) and link.get("expected_by") != "release" and "/nvidia/" in str(
        link.get("requester")) and "/nvidia/" in str(link.get("expected"))


def _member(optional: Any) -> Callable[[Dict[str, Any]], bool]:
    return lambda link: link.get("requester") in optional


def _skipper(gpu: bool, optional: Any) -> Callable[[Dict[str, Any]], bool]:
    def skip(link: Dict[str, Any]) -> bool:
        if _wheel_to_wheel(link):
            return True
        # what is opened at run time (or by an optional provider) matters on a machine with a GPU only
        return not gpu and (link.get("how") == "dlopen" or link.get("requester") in optional)
    return skip


@check("library-closure", requires=("linkage.*.closure",), reads=("framework.*", "gpu.count",
                                                                   "driver.nvidia_pci_gpus"),
       layers=("cuda", "libraries", "frameworks"), codes=DOCS)
def library_closure(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    gpu = _gpu_present(facts)
    for fw in FRAMEWORKS:
        value = facts.value("linkage.%s.closure" % fw)
        if not isinstance(value, dict):
            continue
        optional = set(value.get("optional") or [])
        fact = facts.get("linkage.%s.closure" % fw)
        ev = [fact.to_dict()] if fact is not None else []

        yield from judge(value, _fw_text(facts, fw), [fw], optional=_member(optional),
                         skip=_skipper(gpu, optional), evidence=ev)


@check("extension-symbols", requires=("framework.*",), reads=("linkage.*.extension_symbols",),
       layers=("frameworks",), codes=(SYMBOLS_DOC,))
def extension_symbols(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    for fw, display in ((f.name, f.display) for f in frameworks.FRAMEWORKS if f.extension_symbols):
        value = facts.mapping("framework." + fw)
        fact = facts.get("linkage.%s.extension_symbols" % fw)
        by_package: Dict[str, List[Dict[str, Any]]] = {}
        for e in facts.items("linkage.%s.extension_symbols" % fw):
            if isinstance(e, dict) and e.get("missing"):
                by_package.setdefault(str(e.get("package")), []).append(e)
        for package, es in sorted(by_package.items()):
            total = sum(int(e.get("count") or len(e.get("missing") or [])) for e in es)
            first = str(es[0]["missing"][0])
            files = ", ".join(sorted({posixpath.basename(str(e.get("path"))) for e in es}))
            yield Finding(
                code="framework.extension_abi_mismatch", severity="error", components=[fw],
                title="%s %s was built against another %s: %s import%s %d symbol%s %s %s does not export" % (
                    package, es[0].get("version"), display, files, "s" if len(es) == 1 else "", total,
                    "" if total == 1 else "s", display, value.get("version", "?")),
                detail="Importing it fails with 'undefined symbol: %s' (looked up in every library of %s, as the "
                       "loader binds them). C++ symbols change between releases: a compiled extension works only "
                       "with the %s it was built against." % (first, display, display),
                evidence=[fact.to_dict()] if fact is not None else [],
                source={"rule": "an extension module's undefined symbols must be exported by the libraries it is "
                                "loaded with (ld.so: 'undefined symbol')", "url": LDSO_URL, "checked": "2026-11-28"},
                fix=_rebuild_fix(package, value, fw))


def _rebuild_fix(package: str, torch: Dict[str, Any], fw: str = "torch") -> Fix:
    """torchvision and torchaudio come from PyTorch's index, one release per torch release: install the one made for
    this torch; anything else is rebuilt against it (a source build without build isolation compiles against the
    installed torch)."""
    version = str(torch.get("version") or "?")
    if fw == "torch" and package in ("torchvision", "torchaudio"):
        from .libraries import torch_variant

        index = torch_variant(torch)
        return Fix(text="Install the %s release made for torch %s (pip picks it when torch is pinned)." % (
                       package, version),
                   commands=["pip install 'torch==%s' '%s' --index-url https://download.pytorch.org/whl/%s" % (
                       version.partition("+")[0], package, index)])
    return Fix(text="Install the %s release built for %s %s, or rebuild it against it (without build isolation, so "
                    "it compiles against the installed one)." % (package, fw, version),
               commands=["pip install --force-reinstall --no-deps --no-build-isolation --no-cache-dir '%s'" % package])


# -- packages that bundle CUDA-linked libraries of their own (auditwheel's <name>.libs: CTranslate2 ...) ---------

from .libraries import _FRAMEWORK_LINKAGE_DOCS  # noqa: E402  (the codes the frameworks' linkage documents)


def _frameworks_loading(facts: Facts, soname: str) -> List[str]:
    """The frameworks (by name) that load ``soname`` from a copy of their own (a program importing them first has
    it)."""
    out = []
    for fw in frameworks.having("links"):
        for e in facts.value("linkage." + fw) or []:
            if isinstance(e, dict) and e.get("soname") == soname and e.get("path"):
                out.append(fw)
    return out


def _loaded_by_framework(facts: Facts, soname: str) -> List[str]:
    """The display names of the frameworks that load ``soname`` from a copy of their own."""
    return [frameworks.BY_NAME[fw].display if fw in frameworks.BY_NAME else fw
            for fw in _frameworks_loading(facts, soname)]


@check("package-libraries", requires=("linkage.packages",), reads=("linkage.*", "gpu.count", "driver.nvidia_pci_gpus"),
       layers=("libraries", "cuda"),
       codes=tuple(d for d in _FRAMEWORK_LINKAGE_DOCS if d.code.endswith(".framework_cannot_load")))
def package_libraries(ctx: CheckContext) -> Iterable[Finding]:
    """A package's own bundled libraries (auditwheel's ``<name>.libs``, the extension modules its RECORD lists and
    what they link, a conda package's, software installed whole, a TensorRT outside Python the loader reaches) need
    a CUDA, cuDNN, NCCL or TensorRT library the loader cannot find, or only another major of it: importing the
    package (or loading the library) fails as a framework's import would. Judged by the closure rules every library
    set is judged by (:func:`envdoctor.checks.closure.judge`).

    ONNX Runtime's execution provider libraries a package ships beside its own ONNX Runtime (sherpa-onnx) are judged
    as ONNX Runtime's own package's are: opened only when a session asks for the provider, so only on a machine with
    a GPU, the providers other than CUDA's optional (``optional``, ``dlopened``); a library a framework the package
    declares loads from its own copy is met when the package imports it (``requires``). An application's downloaded
    engine backend (Jan's llama.cpp backends, ``backend``) is said as a warning: the application loads it only when
    it picks it."""
    facts = ctx.facts
    fact = facts.get("linkage.packages")
    ev = [fact.to_dict()] if fact is not None else []
    gpu = _gpu_present(facts)
    for pkg in facts.items("linkage.packages"):
        if not isinstance(pkg, dict):
            continue
        subject = str(pkg.get("label") or "%s %s" % (pkg.get("package"), pkg.get("version")))
        dlopened = {str(p) for p in pkg.get("dlopened") or []}
        if dlopened and not gpu:
            continue  # execution providers: opened for a session on a GPU only
        required = {str(r) for r in pkg.get("requires") or []}
        for f in judge(pkg, subject, optional=_member({str(p) for p in pkg.get("optional") or []}), evidence=ev):
            if f.severity != "error" or f.code not in ("linkage.missing", "linkage.wrong_major"):
                continue
            comp = f.components[0] if f.components else "cuda"
            f.code = "%s.framework_cannot_load" % comp
            sonames = {str(link.get("soname")) for link in pkg.get("links") or [] if isinstance(link, dict)
                       and link.get("soname") and str(link.get("soname")) in f.title}
            if required and sonames and all(required & set(_frameworks_loading(facts, s)) for s in sonames):
                continue  # the package imports that framework, which has loaded the library by then
            if dlopened and pkg.get("source"):
                f.source = {"rule": "ONNX Runtime opens an execution provider library from its own library's folder; "
                                    "the loader then resolves the provider's NEEDED by its rules (ld.so search order: "
                                    "RUNPATH, LD_LIBRARY_PATH, the ld.so cache; a soname names one major)",
                            "url": str(pkg["source"]), "checked": "2026-12-01"}
            if f.fix is not None and any(isinstance(link, dict) and link.get("built_against") and
                                         str(link.get("soname")) in sonames for link in pkg.get("links") or []):
                # a library the software was built against, of a CUDA release no longer installed
                f.fix.text += (" Or rebuild %s against the CUDA installed here: it links the libraries of the release "
                               "it was built with." % subject)
            if pkg.get("backend"):
                # one of the backends an application downloaded: it fails when the application picks it
                f.severity = "warning"
                f.detail += (" The application loads this backend when it picks it for this machine; then its GPU "
                             "support fails to start (it finds no GPU, or runs on the CPU).")
            with_fw = sorted({n for s in sonames for n in _loaded_by_framework(facts, s)})
            if with_fw:
                f.detail += (" A program that imports %s first has that library loaded from %s's own copy and "
                             "does not fail there; one that imports only %s does." % (
                                 " or ".join(with_fw), with_fw[0], pkg.get("package")))
            yield f

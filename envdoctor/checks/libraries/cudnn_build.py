"""The cuDNN a framework loads against the one it was built with: another major, or an older minor."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from ... import frameworks, matrix
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import builds
from .. import CheckContext, CodeDoc, Message, check
from ..suggest import INSTALL_LINE_READS
from . import (
    NAMES,
    TORCH_CUDNN_RULE,
    _cudnn_copies,
    _cudnn_full_version,
    _drop_ldp_entry,
    _evidence,
    _fw_version,
    _pip_fix_for,
    _required_cudnn,
    _v,
    _why,
    component_of,
)

_CUDNN_VERSION_DOCS = (
    CodeDoc("cudnn.major_mismatch", "error", "The cuDNN a framework loads has another major than it was built "
            "with.", "linkage.<framework>, framework.<name>, libraries.cudnn", "cuDNN majors are not "
            "interchangeable: the framework fails to load or refuses cuDNN.", TORCH_CUDNN_RULE["url"],
        messages=(Message("Loaded runtime CuDNN library: * but source was compiled with: *",
                "https://github.com/tensorflow/tensorflow/blob/master/third_party/xla/xla/stream_executor/cuda/cuda_dnn.cc"),
                  Message("These bindings are for * while the loaded CuDNN is version: *",
                          "https://github.com/soumith/cudnn.torch/blob/008c49de3982119378576fa4244e472a50fd9ebe/ffi.lua"))),
    CodeDoc("cudnn.too_old_for_framework", "error", "The cuDNN a framework loads is older than the one it was "
            "built with.", "linkage.<framework>, framework.<name>, libraries.cudnn",
            "torch raises 'cuDNN version incompatibility: PyTorch was compiled against ... but found runtime "
            "version ...'.", TORCH_CUDNN_RULE["url"],
        messages=(Message("Loaded runtime CuDNN library: * but source was compiled with: *",
                "https://github.com/tensorflow/tensorflow/blob/master/third_party/xla/xla/stream_executor/cuda/cuda_dnn.cc"),)),
    CodeDoc("cudnn.minor_mismatch", "error", "The cuDNN a framework loads has a newer minor than the one it was "
            "built with, and that release requires the same major.minor (TensorFlow before 1.8; from 1.8, builds "
            "with cuDNN older than 7).", "linkage.<framework>, framework.<name> (build info, a conda package's cudnn "
            "pin), libraries.cudnn, matrix framework_builds",
            "TensorFlow refuses the cuDNN at its first convolution ('Loaded runtime CuDNN library: ... (compatibility "
            "version ...) but source was compiled with ...'): a newer minor is no better than an older one.",
            "https://github.com/tensorflow/tensorflow/blob/r1.7/tensorflow/stream_executor/cuda/cuda_dnn.cc",
        messages=(Message("Loaded runtime CuDNN library: * (compatibility version *) but source was compiled with * "
                          "(compatibility version *)",
                "https://github.com/tensorflow/tensorflow/blob/r1.7/tensorflow/stream_executor/cuda/cuda_dnn.cc"),
                  Message("Loaded runtime CuDNN library: * but source was compiled with: *.  CuDNN library major and "
                          "minor version needs to match or have higher minor version in case of CuDNN 7.0 or later "
                          "version.*",
                "https://github.com/tensorflow/tensorflow/blob/r1.8/tensorflow/stream_executor/cuda/cudnn_version.cc"))),
)


def _lead(facts: Facts, fw: str, e: Dict[str, Any], winner: Any) -> str:
    """The first sentences of a cuDNN version finding: which copy the loader takes and why, and every other copy,
    which it never reaches (the loader stops at the first file with the soname)."""
    others = [c for c in _cudnn_copies(facts) if c["resolved"] != winner]
    text = "The loader takes %s from %s" % (e.get("soname"), _why(e.get("via")))
    if others:
        text += ", so %s %s never reached" % ("; ".join("cuDNN %s at %s (%s)" % (c["version"], c["path"], c["found_by"])
                                                       for c in others), "is" if len(others) == 1 else "are")
    text += "." if others else "; no other cuDNN is installed."
    if e.get("modelled"):
        text += (" %s's libraries could not be read to tell DT_RPATH (searched before LD_LIBRARY_PATH) from RUNPATH: "
                 "this is the order with RUNPATH." % NAMES[fw])
    return text


def _torch_modelled(facts: Facts) -> List[Dict[str, Any]]:
    """torch's cuDNN when its library's dynamic section could not be read: its wheel copy is reached through
    the library's RPATH/RUNPATH ($ORIGIN/../../nvidia/cudnn/lib), which LD_LIBRARY_PATH precedes unless the
    library carries DT_RPATH."""
    v = facts.mapping("framework.torch")
    req = v.get("cudnn_required")
    if isinstance(facts.value("linkage.torch"), list) or v.get("build") != "cuda" or not isinstance(req, dict):
        return []
    major = str(req.get("version") or "").split(".")[0]
    if not major.isdigit():
        return []
    soname = "libcudnn.so." + major
    site = str(v.get("path") or "")
    wheel = next((c for c in facts.items("libraries.cudnn") if isinstance(c, dict) and c.get("kind") == "library"
                  and str(c.get("found_by", "")).startswith("pip wheel") and site
                  and str(c.get("path", "")).startswith(site + "/")), None)
    choice = (facts.value("libraries.loader_choice") or {}).get(soname) if isinstance(
        facts.value("libraries.loader_choice"), dict) else None
    if isinstance(choice, dict) and choice.get("path") and choice.get("via") == "LD_LIBRARY_PATH":
        if wheel is None or (wheel.get("resolved") or wheel.get("path")) != choice.get("resolved"):
            return [dict(choice, how="NEEDED", modelled=True, expected=wheel.get("path") if wheel else None)]
    return []


def _cudnn_version(facts: Facts, fw: str) -> Iterable[Finding]:
    req = _required_cudnn(facts, fw)
    entries = [e for key in ("linkage." + fw, "linkage.%s.dlopen" % fw) for e in facts.items(key)]
    if fw == "torch" and not entries:
        entries = _torch_modelled(facts)
    if req is None or not entries:
        return
    want = _v(req["version"])
    if want is None:
        return
    severity = "error" if req.get("verified", True) else "warning"
    ev = _evidence(facts, "framework." + fw, "linkage." + fw, "linkage.%s.dlopen" % fw, "libraries.cudnn",
                   "libraries.loader_choice")
    fix = _pip_fix_for(facts, fw, "libcudnn.so.%d" % want.major)
    seen = set()
    for e in entries:
        if not isinstance(e, dict) or component_of(e.get("soname", "")) != "cudnn":
            continue
        key = (e.get("soname"), e.get("resolved"))
        if key in seen:
            continue
        seen.add(key)
        if not e.get("path"):
            # the soname of the build's major is nowhere the loader looks; copies of another major do not count
            wrong = [c for c in _cudnn_copies(facts) if _v(c["version"]) is not None
                     and _v(c["version"]).major != want.major]  # type: ignore[union-attr]
            if not wrong or e.get("soname") != "libcudnn.so.%d" % want.major:
                continue
            # the soname named by the framework's own build information certainly fails to load
            certain = "error" if str(facts.mapping("framework." + fw).get("cudnn") or "").split(".")[0] == str(
                want.major) else severity
            yield Finding(
                code="cudnn.major_mismatch", severity=certain, components=["cudnn", fw],
                title="%s needs cuDNN %s (%s), but only cuDNN %s is installed" % (
                    _fw_version(facts, fw), req["version"], e.get("soname"),
                    ", ".join("%s (%s)" % (c["version"], c["path"]) for c in wrong)),
                detail="%s opens %s, a file only cuDNN %d provides; %s provide%s another soname, which the "
                       "loader never substitutes, so %s's cuDNN calls fail ('DNN library is not found' or "
                       "'cannot open shared object file'). The requirement comes from %s." % (
                           NAMES[fw], e.get("soname"), want.major,
                           ", ".join("cuDNN %s at %s (%s)" % (c["version"], c["path"], c["found_by"]) for c in wrong),
                           "" if len(wrong) > 1 else "s", NAMES[fw], req["from"]),
                evidence=ev, source=req["source"], fix=fix)
            continue
        got_text = _cudnn_full_version(facts, e)
        got = _v(got_text)
        if got is None:
            continue
        winner = e.get("resolved") or e.get("path")
        lead = _lead(facts, fw, e, winner)
        if got.major != want.major:
            yield Finding(
                code="cudnn.major_mismatch", severity=severity, components=["cudnn", fw],
                title="%s was built for cuDNN %s, but the loader gives it cuDNN %s (%s, via %s)" % (
                    _fw_version(facts, fw), req["version"], got_text, winner, e.get("via")),
                detail="%s cuDNN %d and %d are not interchangeable; %s's requirement comes from %s." % (
                    lead, want.major, got.major, NAMES[fw], req["from"]),
                evidence=ev, source=req["source"], fix=fix)
        elif len(got.release) >= 2 and len(want.release) >= 2 and got.release[:2] < want.release[:2]:
            yield Finding(
                code="cudnn.too_old_for_framework", severity=severity, components=["cudnn", fw],
                title="%s needs cuDNN >= %s, but loads cuDNN %s from %s (via %s)" % (
                    _fw_version(facts, fw), req["version"], got_text, winner, e.get("via")),
                detail="%s The requirement comes from %s; a cuDNN minor older than the build's is refused "
                       "(torch: 'cuDNN version incompatibility: PyTorch was compiled against ... but found runtime "
                       "version ...'; XLA: 'CuDNN library needs to have matching major version and equal or "
                       "higher minor version')." % (lead, req["from"]),
                evidence=ev, source=req["source"], fix=_older_cudnn_fix(facts, fw, e, fix))
        elif len(got.release) >= 2 and len(want.release) >= 2 and got.release[:2] > want.release[:2]:
            finding = _newer_minor(facts, fw, req, want, got_text, e, winner, lead, severity, ev)
            if finding is not None:
                yield finding


def _newer_minor(facts: Facts, fw: str, req: Dict[str, Any], want: Any, got_text: Any, e: Dict[str, Any],
                 winner: Any, lead: str, severity: str, ev: Any) -> Optional[Finding]:
    """cudnn.minor_mismatch: a newer minor than the build's, where the release requires the same major.minor."""
    v = facts.mapping("framework." + fw)
    rule = builds.cudnn_newer_minor_accepted(fw, v.get("public") or v.get("version"), want.major)
    if rule is None or rule[0]:
        return None
    row = rule[1]
    built = "%d.%d" % (want.major, want.minor)
    if matrix.unverified(row):
        severity = "warning"
    src = row.get("source", {})
    return Finding(
        code="cudnn.minor_mismatch", severity=severity, components=["cudnn", fw],
        title="%s was built with cuDNN %s and requires that major.minor, but loads cuDNN %s from %s (via %s)" % (
            _fw_version(facts, fw), req["version"], got_text, winner, e.get("via")),
        detail="%s %s accepts only a cuDNN %s.x: it compares the loaded library's major.minor with its build's and "
               "refuses any other, a newer minor included ('Loaded runtime CuDNN library: ... but source was compiled "
               "with ...'). The build's cuDNN comes from %s." % (lead, _fw_version(facts, fw), built, req["from"]),
        evidence=ev, source={"rule": "%s requires the loaded cuDNN to have the build's major.minor" % NAMES[fw],
                             "url": src.get("url"), "checked": src.get("checked")},
        fix=_same_minor_fix(facts, fw, built, e))


def _same_minor_fix(facts: Facts, fw: str, built: str, e: Dict[str, Any]) -> Fix:
    """Install the build's cuDNN major.minor where the framework loads it from (its conda environment, else the
    system), or a release of the framework built for the cuDNN present."""
    pin = facts.mapping("framework." + fw).get("cudnn_conda")
    if isinstance(pin, dict):
        return Fix(text="Install cuDNN %s.x into the conda environment (the one %s's conda package was built with), "
                        "or a %s build for the cuDNN you have." % (built, NAMES[fw], NAMES[fw]),
                   commands=["conda install 'cudnn=%s'" % built])
    return Fix(text="Install cuDNN %s.x where %s loads it (%s), or a %s release that accepts the cuDNN you "
                    "have." % (
                        built, NAMES[fw], posixpath.dirname(str(e.get("path") or "")) or "the loader's path",
                        NAMES[fw]))


def _older_cudnn_fix(facts: Facts, fw: str, e: Dict[str, Any], fix: Fix) -> Fix:
    """An older cuDNN found through LD_LIBRARY_PATH while the framework's own copy is present: drop that entry."""
    if e.get("via") == "LD_LIBRARY_PATH" and e.get("expected"):
        where = posixpath.dirname(str(e.get("path")))
        return Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so %s loads its own copy at %s." % (
                       where, NAMES[fw], e.get("expected")),
                   commands=[_drop_ldp_entry(where)])
    return fix


@check("cudnn-version.{}", each=frameworks.having("cudnn_build"),
       requires=("framework.{}", "linkage.*", "libraries.cudnn"),
       reads=("framework.*", "libraries.*", "linkage.*.dlopen") + INSTALL_LINE_READS, layers=("libraries",),
       codes=_CUDNN_VERSION_DOCS)
def cudnn_version_of(ctx: CheckContext, item: str) -> Iterable[Finding]:
    """The cuDNN the framework loads against the one it was built with."""
    return _cudnn_version(ctx.facts, item)

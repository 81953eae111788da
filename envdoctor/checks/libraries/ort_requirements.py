"""The CUDA libraries ONNX Runtime's CUDA provider loads against the releases its requirements table demands.

ONNX Runtime's "CUDA Execution Provider" requirements table (``onnxruntime.json`` ``builds[].requires``) names,
for some release lines, the lowest release of a CUDA library within its major that the build works with: 1.2-1.4
are built for CUDA 10.1 and "Require cublas10-10.2.1.243; cublas 10.1.x will not work" (cuBLAS 10.2.1.243 is the
one of CUDA 10.1 Update 2; CUDA 10.1 GA's is 10.1.0.105, and both are ``libcublas.so.10``). The soname cannot tell
the two apart, so the loader takes the older one without complaint and the provider fails when it first calls
cuBLAS. The release a copy is comes from its real file's name (``libcublas.so.10.1.0.105``) or its wheel.
Release lines whose table lists only the libraries the build used, under CUDA's minor version compatibility ("built
with CUDA 11.4 should be compatible with any CUDA 11.x"), have no minimum and are not judged here.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import frameworks as fwm
from .. import CheckContext, CodeDoc, check
from . import _evidence, _fw_version, _v, _why

URL = "https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements"
#: The libraries the CUDA provider loads (the plug-in's ``dlopens``), by the name the table and the soname use.
LIBRARIES = {"cudart": "the CUDA runtime", "cublas": "cuBLAS", "cublasLt": "cuBLASLt", "cufft": "cuFFT",
             "curand": "cuRAND"}

DOCS = tuple(
    CodeDoc("onnxruntime.%s_too_old" % lib.lower(), "error",
            "The %s ONNX Runtime's CUDA provider loads is older than the release its requirements table demands."
            % name, "framework.onnxruntime, linkage.onnxruntime.dlopen, matrix onnxruntime (builds[].requires)",
            "The soname (lib%s.so.<major>) is the same for every release of the major, so the loader takes the older "
            "copy and the CUDA provider fails when it calls what that release lacks (ONNX Runtime 1.2-1.4: "
            "'cublas 10.1.x will not work')." % lib, URL)
    for lib, name in LIBRARIES.items())


def _too_old(facts: Facts, rel: Dict[str, Any], lib: str, want: str, e: Dict[str, Any]) -> Iterable[Finding]:
    got, need = _v(e.get("file_version")), _v(want)
    if got is None or need is None or len(got.release) < 3 or got.release[0] != need.release[0] or got >= need:
        return  # the soname's suffix alone is no release; another major is another soname (judged elsewhere)
    where = posixpath.dirname(str(e.get("path")))
    name = LIBRARIES[lib]
    note = (" The table says: '%s'." % rel["note"]) if rel.get("note") else ""
    yield Finding(
        code="onnxruntime.%s_too_old" % lib.lower(), severity="error", components=["onnxruntime", "cuda"],
        title="%s loads %s %s from %s; its release line needs %s %s or newer" % (
            _fw_version(facts, "onnxruntime"), e.get("soname"), e.get("file_version"),
            e.get("resolved") or e.get("path"), name, want),
        detail="ONNX Runtime's requirements table says release %s needs %s %s or a newer %d.x; the loader takes "
               "%s %s from %s, through %s, and every release of that major has the same soname, so the CUDA "
               "provider loads it and fails when it calls what it lacks.%s" % (
                   rel["version"], name, want, need.release[0], e.get("soname"), e.get("file_version"), where,
                   _why(e.get("via")), note),
        evidence=_evidence(facts, "framework.onnxruntime", "linkage.onnxruntime.dlopen"),
        source={"rule": "onnxruntime-gpu %s needs %s %s or newer within major %d" % (
                    rel["version"], name, want, need.release[0]),
                "url": str((rel.get("source") or {}).get("url") or URL),
                "checked": str((rel.get("source") or {}).get("checked") or "2026-11-30")},
        fix=Fix(text="Install %s %s or a newer %d.x release where the loader finds it before %s, or use an "
                     "onnxruntime-gpu release built for the CUDA you have." % (name, want, need.release[0], where)))


@check("onnxruntime-library-requirements", requires=("framework.onnxruntime", "linkage.onnxruntime.dlopen"),
       reads=(), layers=("frameworks", "cuda"), codes=DOCS)
def onnxruntime_library_requirements(ctx: CheckContext) -> Iterable[Finding]:
    """Each CUDA library the provider loads, against the lowest release its release line's table row demands."""
    facts = ctx.facts
    rel = fwm.onnxruntime_release(facts.mapping("framework.onnxruntime").get("version"))
    if rel is None or not rel.get("requires"):
        return []
    out: List[Finding] = []
    for e in facts.items("linkage.onnxruntime.dlopen"):
        if not isinstance(e, dict) or not e.get("path"):
            continue
        stem = str(e.get("soname") or "").split(".so", 1)[0][3:]
        want = rel["requires"].get(stem)
        if stem in LIBRARIES and want:
            out.extend(_too_old(facts, rel, stem, str(want), e))
    return out

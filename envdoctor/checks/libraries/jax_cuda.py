"""JAX's own start-up comparison of the CUDA libraries it loads with its build (jax 0.4.17 on).

From jax 0.4.17, starting the CUDA backend runs ``_check_cuda_versions`` (jax/_src/xla_bridge.py; from 0.6.1
jax_plugins/cuda/__init__.py): each library's ``get_version`` is compared with the version jaxlib (or its CUDA
plugin) was built with, rounded by ``scale_for_comparison``, or from 0.4.26 with an absolute
``min_supported_version``. A failure raises, and JAX runs without its GPU backend ("Outdated CUDA installation
found ... Installed version ..."; before 0.4.26 "Found CUDA version ..., but JAX was built against version ...,
which is newer"). Which libraries, and how each is compared, per release: matrix ``jax_cuda_checks``.

The loaded copies are the ones the loader resolves for jax's run-time loads (``linkage.jax.dlopen``, with the
file's version). cuDNN is left to the cuDNN version check (XLA also refuses an older cuDNN minor at its first
convolution); a library whose build version the installed jax does not record, or whose version is no file
version (cuPTI's API version), is not judged.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from packaging.version import InvalidVersion, Version

from ... import versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import frameworks as fwm
from ...matrix import jax_cuda
from .. import CheckContext, CodeDoc, Message, check
from . import _drop_ldp_entry, _evidence, _fw_version, _why

CODE = "framework.jax_cuda_library_too_old"
#: library -> NVIDIA's pip wheel of it (its name without the CUDA major: :func:`envdoctor.versions.cu_wheel`)
PIP_WHEEL = {"cudart": "nvidia-cuda-runtime", "cublas": "nvidia-cublas", "cufft": "nvidia-cufft",
             "cusolver": "nvidia-cusolver", "cusparse": "nvidia-cusparse"}


def _v(text: Any) -> Optional[Version]:
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def _bound(lib: Dict[str, Any], jax: Dict[str, Any]) -> Optional[Version]:
    """The version the loaded library must reach, or None where JAX's comparison cannot fail or the build's own
    version of the library is not known."""
    against = lib.get("against")
    if lib.get("library") in ("cudnn", "cupti"):
        return None  # cuDNN: the cuDNN version check (XLA's own); cuPTI's version is an API number, no file's
    if against == "minimum":
        return _v(lib.get("minimum"))
    if against in ("build", "cuda_release") and lib.get("library") in ("cudart", "cublas"):
        # the CUDA runtime's version is its CUDA release's; cuBLAS 12.x carries its CUDA release's major.minor
        variant = fwm.jax_plugin_for(jax.get("version"), str(jax.get("cuda") or "").split(".")[0])
        return _v(variant.get("cuda_built")) if variant else None
    return None


def _short(v: Version, parts: int) -> tuple:
    return tuple((list(v.release) + [0, 0, 0])[:parts])


CODES = (CodeDoc(
    CODE, "error", "A CUDA library jax loads is older than jax's own start-up check accepts (the version its CUDA "
    "build was made with, or jax's minimum for it).", "linkage.jax.dlopen, framework.jax, matrix jax_cuda_checks",
    "jax refuses its CUDA backend and runs on the CPU ('CUDA backend failed to initialize: ... Outdated CUDA "
    "installation found', or 'Found CUDA version ..., but JAX was built against version ..., which is newer').",
    "https://github.com/jax-ml/jax/blob/jax-v0.4.30/jax/_src/xla_bridge.py",
    messages=(Message("Outdated * installation found.*",
                      "https://github.com/jax-ml/jax/blob/jax-v0.4.30/jax/_src/xla_bridge.py"),
              Message("Found * version *, but JAX was built against version *, which is newer.*",
                      "https://github.com/jax-ml/jax/blob/jax-v0.4.17/jax/_src/xla_bridge.py"))),)


@check("jax.cuda-versions", requires=("framework.jax", "linkage.jax.dlopen"),
       reads=("linkage.jax.version_checked", "env.jax_skip_cuda_constraints_check"), layers=("libraries",),
       codes=CODES)
def jax_cuda_versions(ctx: CheckContext) -> Iterable[Finding]:
    """Each CUDA library jax compares at start-up, as the loader resolves it, against jax's bound for it."""
    return _judge(ctx.facts)


def _judge(facts: Facts) -> Iterable[Finding]:
    jax = facts.mapping("framework.jax")
    if jax.get("build") != "cuda":
        return
    row = jax_cuda.checks_for(jax.get("version"))
    if row is None or row.get("runs") is False:
        return  # before 0.4.17 (and in 0.6.0) jax compares nothing itself
    entries: List[Dict[str, Any]] = [e for e in facts.items("linkage.jax.dlopen") + facts.items(
        "linkage.jax.version_checked") if isinstance(e, dict)]
    for lib in row["libraries"]:
        bound = _bound(lib, jax)
        if bound is None:
            continue
        stem = "lib%s.so." % lib["library"]
        for e in entries:
            if not str(e.get("soname", "")).startswith(stem) or not e.get("path"):
                continue
            got = _v(e.get("file_version"))
            if got is None or len(got.release) < 2 or got.major != bound.major:
                continue  # another major is another soname; a soname's own suffix is no release
            parts = 2 if lib["against"] == "minimum" else int(lib.get("parts") or 2)
            if _short(got, parts) >= _short(bound, parts):
                continue
            yield _finding(facts, jax, row, lib, e, got, bound)


def _finding(facts: Facts, jax: Dict[str, Any], row: Dict[str, Any], lib: Dict[str, Any], e: Dict[str, Any],
             got: Version, bound: Version) -> Finding:
    name, stem = lib["name"], lib["library"]
    where = posixpath.dirname(str(e.get("path")))
    built = lib["against"] != "minimum"
    need = ("the version jax was built against (CUDA %s)" % bound if built else "jax's minimum %s" % bound)
    wheel = versions.cu_wheel(PIP_WHEEL[stem], bound.major) if stem in PIP_WHEEL else ""
    if e.get("via") == "LD_LIBRARY_PATH":
        fix = Fix(text="Take %s off LD_LIBRARY_PATH (keep the other entries) so jax loads the copy in its "
                       "nvidia wheel; if that wheel is old too, upgrade it." % where,
                  commands=[_drop_ldp_entry(where)] + (["pip install -U '%s>=%s'" % (wheel, bound)] if wheel else []))
    elif wheel and "site-packages/nvidia/" in str(e.get("resolved") or e.get("path")):
        fix = Fix(text="Upgrade the %s wheel to %s or newer (or install the jax CUDA build made for the CUDA you "
                       "have)." % (wheel, bound), commands=["pip install -U '%s>=%s'" % (wheel, bound)])
    else:
        fix = Fix(text="Install %s %s or newer where the loader finds it first (the %s wheel, or the CUDA toolkit's "
                       "lib64), or a jax release built for the CUDA you have." % (name, bound, wheel or name))
    skip = row.get("skipped_by") or {}
    skipped = bool(skip) and bool(facts.value("env.jax_skip_cuda_constraints_check"))
    return Finding(
        code=CODE, severity="error" if row["refuses"] and not skipped else "warning", components=["jax", "cuda"],
        title="%s loads %s %s from %s (via %s), older than %s%s" % (
            _fw_version(facts, "jax"), e.get("soname"), e.get("file_version"), e.get("resolved") or e.get("path"),
            e.get("via"), need, "; %s is set, so jax starts with it unchecked" % skip.get("variable") if skipped
            else ""),
        detail="When its CUDA backend starts, jax compares the %s it loaded with %s and refuses an older one "
               "('Outdated %s installation found'); jax then runs on the CPU only.%s The loader takes %s through "
               "%s.%s" % (
                   name, need, name,
                   (" With %s set jax skips that comparison and starts on the older library its check exists to "
                    "refuse: what goes wrong then shows in the operations that use it, not at start-up."
                    % skip.get("variable")) if skipped else "",
                   e.get("soname"), _why(e.get("via")),
                   (" Copies not searched: %s." % ", ".join(str(p) for p in e.get("elsewhere_files") or []))
                   if e.get("elsewhere_files") else ""),
        evidence=_evidence(facts, "framework.jax", "linkage.jax.dlopen", "cuda.ld_library_path"),
        source={"rule": "jax's _check_cuda_versions: %s (%s)" % (row["quote"][:160], lib.get("quote") or
                                                                  lib.get("note") or lib["against"]),
                "url": row["source"]["url"], "checked": row["source"]["checked"]},
        fix=fix)

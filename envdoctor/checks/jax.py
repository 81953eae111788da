"""JAX's own pieces agreeing with each other: jax, jaxlib and the CUDA plugin wheels.

* jax refuses a jaxlib older than its ``_minimum_jaxlib_version`` (jax/version.py) at import: "jaxlib is version
  X, but this version of jax requires version Y".
* The CUDA plugin wheels (jax-cudaNN-plugin, jax-cudaNN-pjrt) must be exactly jaxlib's version; another one is
  refused ("not compatible with the installed jaxlib version") and the GPU backend is missing.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from packaging.version import InvalidVersion, Version

from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, Message, check

JAX_INSTALL = "https://docs.jax.dev/en/latest/installation.html#nvidia-gpu"
JAX_VERSION_PY = "https://github.com/jax-ml/jax/blob/main/jax/version.py"
CHECKED = "2026-11-25"


def _ev(facts: Facts) -> List[Dict[str, Any]]:
    f = facts.get("framework.jax")
    return [f.to_dict()] if f is not None else []


def _v(text: Any) -> Any:
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


@check("jax.versions", requires=("framework.jax",), reads=(), layers=("frameworks",), codes=(
    CodeDoc("framework.jaxlib_too_old_for_jax", "error", "The installed jaxlib is older than the installed jax "
            "requires (jax/version.py _minimum_jaxlib_version).", "framework.jax (jaxlib, jaxlib_minimum)",
            "`import jax` fails: 'jaxlib is version X, but this version of jax requires version Y'.",
            JAX_VERSION_PY,
        messages=(Message("jaxlib is version *, but this version of jax requires version *",
                "https://github.com/jax-ml/jax/blob/main/jax/_src/lib/__init__.py"),)),
    CodeDoc("framework.jax_plugin_mismatch", "error", "The jax CUDA plugin wheels are not jaxlib's exact version.",
            "framework.jax (plugins, jaxlib)", "jax ignores the plugin ('not compatible with the installed jaxlib "
            "version'): no GPU backend, or its GPU kernels are missing.", JAX_INSTALL),
))
def jax_versions(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    jax = facts.mapping("framework.jax")
    jaxlib, minimum = jax.get("jaxlib"), jax.get("jaxlib_minimum")
    have, need = _v(jaxlib), _v(minimum)
    if have is not None and need is not None and Version(have.base_version) < need:
        yield Finding(
            code="framework.jaxlib_too_old_for_jax", severity="error", components=["jax"],
            title="jax %s requires jaxlib >= %s, but jaxlib %s is installed" % (jax.get("version"), minimum, jaxlib),
            detail="`import jax` stops with 'jaxlib is version %s, but this version of jax requires version %s'. "
                   "Typically pip upgraded jax alone and left a CUDA jaxlib behind." % (have.base_version, minimum),
            evidence=_ev(facts),
            source={"rule": "jax/version.py _minimum_jaxlib_version", "url": JAX_VERSION_PY, "checked": CHECKED},
            fix=Fix(text="Install a jax that fits the installed jaxlib, or upgrade jaxlib (with its CUDA variant) to "
                         "%s or newer." % minimum,
                    commands=["pip install 'jax<=%s'   # a jax release made for jaxlib %s" % (
                        jax.get("version"), have.base_version)]))
    mismatched = [str(p) for p in jax.get("mismatched_plugins") or []]
    if jax.get("plugins_match_jaxlib") is False and mismatched and jaxlib:
        yield Finding(
            code="framework.jax_plugin_mismatch", severity="error", components=["jax"],
            title="%s installed, but the jax CUDA plugins must be exactly jaxlib's version %s" % (
                ", ".join(mismatched), jaxlib),
            detail="jax loads the CUDA plugin only when its version equals jaxlib's; otherwise it reports the plugin "
                   "'is not compatible with the installed jaxlib version' and the GPU backend or its kernels "
                   "are missing. A loose extra constraint lets pip install a newer plugin beside an older jaxlib.",
            evidence=_ev(facts),
            source={"rule": "the jax-cudaNN-plugin/pjrt wheels are released and pinned with jaxlib's exact version",
                    "url": JAX_INSTALL, "checked": CHECKED},
            fix=Fix(text="Install the plugins of jaxlib's version (or upgrade jax, jaxlib and the plugins together).",
                    commands=["pip install %s" % " ".join("'%s==%s'" % (p.split()[0], jaxlib) for p in mismatched)]))

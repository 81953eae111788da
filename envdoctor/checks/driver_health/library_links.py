"""Driver library links naming another driver version's file, or one that is gone (left by an update)."""

from __future__ import annotations

import posixpath
from typing import List, Set

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from . import DOCS, READS, _compat_libcuda_in_use, _evidence, _installed, _source


def _compat_dirs(facts: Facts) -> Set[str]:
    """Directories holding a cuda-compat forward-compatibility libcuda, under every name the loader reaches them
    by: the toolkit's own compat/ directory and the LD_LIBRARY_PATH entries and loader choices that resolve to it
    (/usr/local/cuda/compat is /usr/local/cuda-12.4/compat)."""
    compat = [c for c in facts.items("cuda.forward_compat") if isinstance(c, dict) and c.get("path")]
    real = {posixpath.dirname(str(c.get(k))) for c in compat for k in ("path", "real") if c.get(k)}
    out = set(real)
    for e in facts.items("env.ld_library_path_resolved"):
        if isinstance(e, dict) and str(e.get("resolved") or "").rstrip("/") in real and e.get("entry"):
            out.add(str(e["entry"]).rstrip("/"))
    for res in facts.mapping("libraries.libcuda").values():
        for r in [res] + (list(res.get("others") or []) if isinstance(res, dict) else []):
            if isinstance(r, dict) and r.get("path") and posixpath.dirname(str(r.get("resolved") or "")) in real:
                out.add(posixpath.dirname(str(r["path"])))
    return out


def _library_links(facts: Facts) -> List[Finding]:
    """Driver library links naming another driver version's file, or a file that is gone (left by an update)."""
    # a cuda-compat package's own links, and a compat libcuda copied where the loader looks (container runtimes), are
    # not links an update left behind: the forward-compat question tells that root cause
    compat = _compat_dirs(facts)
    compat_libs = {str(c.get("path")) for c in _compat_libcuda_in_use(facts)}
    links = [lk for lk in facts.items("driver.library_links")
             if isinstance(lk, dict) and all(isinstance(lk.get(k), str) for k in ("link", "target", "version"))
             and posixpath.dirname(str(lk["link"])) not in compat and str(lk["target"]) not in compat_libs]
    if not links:
        return []
    running = facts.text("driver.kernel_module.version") or facts.text("driver.version")
    if running is None:
        versions = [str(lk.get("version")) for lk in links if lk.get("exists")]
        running = max(set(versions), key=versions.count) if versions else None
    out: List[Finding] = []
    stale = [lk for lk in links if not lk.get("exists") or (running and lk.get("version") != running)]
    core = [lk for lk in stale if posixpath.basename(str(lk["link"])) in ("libnvidia-ml.so.1", "libcuda.so.1")]
    if core and running:  # (yields to the library-mismatch question's finding, when it has one)
        lk = core[0]
        out.append(Finding(
            code="driver.library_mismatch", severity="error", components=["driver", "kernel"],
            title="The loaded kernel module is driver %s, but %s still links to driver %s (%s): a stale link left "
                  "by an update" % (running, posixpath.basename(str(lk["link"])), lk["version"], lk["target"]),
            detail="The loader gives programs %s, which points at the previous driver's library; it cannot talk to "
                   "the %s kernel module (NVML: 'Function Not Found' or 'Driver/library version mismatch'). A "
                   "reboot does not fix a link." % (lk["link"], running),
            evidence=_evidence(facts, "driver.library_links", "driver.kernel_module.version", "driver.nvml.status"),
            source=_source("nvml"),
            fix=Fix(text="ldconfig re-points each soname link at the newest library that carries the soname; if "
                         "the %s libraries are missing, reinstall the driver packages first." % running,
                    commands=["ls -l %s/lib*.so.1" % posixpath.dirname(str(lk["link"])), "sudo ldconfig",
                              "ls -l %s" % lk["link"]])))
    for lk in stale:
        if lk in core:
            continue
        out.append(Finding(
            code="driver.stale_library_link", severity="error", components=["driver"],
            title="%s points to %s (driver %s%s), not to driver %s" % (
                lk["link"], lk["target"], lk["version"], ", which no longer exists" if not lk.get("exists") else "",
                running or "?"),
            detail="A driver update left this link naming the previous driver's file. Whatever loads it (the "
                   "NVIDIA Container Toolkit injects every driver library into containers; CUDA's NVVM loads "
                   "libnvidia-nvvm) fails to load it or gets a library of the wrong version.",
            evidence=_evidence(facts, "driver.library_links", "driver.kernel_module.version", "driver.version"),
            source=_source("nvml"),
            fix=Fix(text="ldconfig re-points the link at the newest library carrying its soname; if that is not the "
                         "%s one, reinstall the driver packages of that version." % (running or "running driver's"),
                    commands=["sudo ldconfig", "ls -l %s" % lk["link"]])))
    return out


@check("driver-health.library-links", requires=("driver.installed", "driver.library_links"), reads=READS,
       layers=("driver",), codes=docs_for(DOCS, "driver.stale_library_link", "driver.library_mismatch"),
       yields={"driver.library_mismatch": ("driver.library_mismatch",)})
def library_links(ctx: CheckContext) -> List[Finding]:
    return _library_links(ctx.facts) if _installed(ctx.facts) else []

"""Is the driver at or above the floor an application states for itself (``driver_floors.json``), beyond the CUDA
runtime it carries? RAPIDS raised its CUDA 11 floor to 450.80.02 from 21.12 (RSN 11: its builds use a newer CUDA 11
runtime through enhanced compatibility) and states 535+/580+ per CUDA major in its platform-support table; Ollama
states its floor per GPU compute capability and release (docs/gpu.mdx)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import floors
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line
from . import DOCS, Driver, _ev, _severity, _v, gpu_ccs


def _floor(rows: List[Dict[str, Any]]) -> Optional[Tuple[Version, Dict[str, Any]]]:
    best: Optional[Tuple[Version, Dict[str, Any]]] = None
    for row in rows:
        v = _v(row.get("min_driver"))
        if v is not None and (best is None or v > best[0]):
            best = (v, row)
    return best


def _finding(facts: Facts, drv: Driver, what: str, row: Dict[str, Any], severity: str, why: str,
             fact_keys: Tuple[str, ...], components: Tuple[str, ...]) -> Finding:
    floor = str(row["min_driver"])
    branch = floor.split(".")[0]
    src = row.get("source") or {}
    return Finding(
        code="driver.too_old_for_framework", severity=severity, components=list(components),
        title="%s, but %s needs driver %s or newer" % (drv.describe(), what, floor if "." in floor else
                                                      "branch " + floor),
        detail="%s The installed driver is %s." % (why, drv.version),
        evidence=_ev(drv.version_fact, *[facts.get(k) for k in fact_keys]),
        source={"rule": "%s: driver >= %s" % (what, floor), "url": src.get("url", ""),
                "checked": src.get("checked", ""), "verified": bool(src.get("verified"))},
        fix=Fix(text="Update the NVIDIA driver to %s or newer (branch %s or later)." % (floor, branch),
                commands=["sudo ubuntu-drivers install nvidia:%s" % branch] if facts.value("os.id") == "ubuntu"
                else [], install=install_line(facts, "driver", branch, floor=True)),
    )


def _rapids(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    out: List[Finding] = []
    seen: Dict[Tuple[str, str], List[str]] = {}
    for pkg in facts.value("apps.rapids") or []:
        if isinstance(pkg, dict) and pkg.get("release") and pkg.get("cuda_major"):
            seen.setdefault((str(pkg["release"]), str(pkg["cuda_major"])), []).append(
                "%s %s" % (pkg.get("package"), pkg.get("version")))
    for (release, major), names in sorted(seen.items()):
        best = _floor(floors.floors_for("rapids", release, cuda_major=major))
        if best is None or have >= best[0]:
            continue
        what = "RAPIDS %s (CUDA %s build: %s)" % (release, major, ", ".join(sorted(names)))
        why = ("RAPIDS %s states driver >= %s for its CUDA %s packages (its support notices and platform-support "
               "table); below it they fail to start on the GPU ('CUDA driver version is insufficient for CUDA "
               "runtime version')." % (release, best[1]["min_driver"], major))
        out.append(_finding(facts, drv, what, best[1], _severity(best[1], ["min_driver"]), why, ("apps.rapids",),
                            ("driver", "python")))
    return out


def _ollama(facts: Facts, drv: Driver, have: Version) -> List[Finding]:
    app = facts.value("apps.ollama")
    if not isinstance(app, dict) or not app.get("version"):
        return []
    worst: Optional[Tuple[Version, Dict[str, Any]]] = None
    gpus: List[str] = []
    for cc, name, _fact in gpu_ccs(facts):
        best = _floor(floors.floors_for("ollama", app["version"], cc=cc))
        if best is None or have >= best[0]:
            continue
        gpus.append("%s, compute capability %s" % (name, cc))
        if worst is None or best[0] > worst[0]:
            worst = best
    if worst is None:
        return []
    what = "Ollama %s on %s" % (app["version"], "; ".join(gpus))
    why = ("Ollama %s states driver %s or newer for GPUs of this compute capability (its GPU page); with an older "
           "driver it does not use the GPU and runs models on the CPU." % (app["version"], worst[1]["min_driver"]))
    return [_finding(facts, drv, what, worst[1], "warning", why, ("apps.ollama",), ("driver",))]


@check("compat.driver-floors", requires=("driver.version",), reads=("apps.rapids", "apps.ollama", "gpu.*.name",
       "gpu.*.compute_capability") + INSTALL_LINE_READS, layers=("driver",),
       codes=docs_for(DOCS, "driver.too_old_for_framework"))
def driver_floors(ctx: CheckContext) -> List[Finding]:
    drv = Driver(ctx.facts)
    have = _v(drv.version)
    if not drv.known or have is None or drv.wsl:
        return []
    return _rapids(ctx.facts, drv, have) + _ollama(ctx.facts, drv, have)

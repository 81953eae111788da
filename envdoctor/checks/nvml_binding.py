"""Does the driver's NVML have the functions the installed NVML binding asks it for?

NVIDIA's Python binding (``nvidia-ml-py``, fact ``python.nvml_bindings``) resolves each NVML function by name from
the driver's libnvidia-ml; its unversioned process queries hand over to one versioned function (nvidia-ml-py
12.535.x: ``nvmlDeviceGetComputeRunningProcesses`` -> ``nvmlDeviceGetComputeRunningProcesses_v3``). A driver
release whose NVML lacks that function answers NVML_ERROR_FUNCTION_NOT_FOUND, so the tools built on the binding
(nvitop, gpustat, monitoring agents) list no processes. Which releases have each function is read from the driver
releases' own nvml.h (``matrix/data/nvml_functions.json``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .. import matrix, versions
from ..facts import Facts
from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

CODE = "nvml.binding_needs_missing_function"
SOURCE = "https://github.com/NVIDIA/nvidia-settings/blob/main/src/nvml.h"


def _driver(facts: Facts) -> Tuple[Optional[str], str]:
    """The release of the driver's user-space NVML (what the binding talks to), and the fact it was read from."""
    for key in ("driver.version", "driver.userspace.version", "driver.kernel_module.version"):
        text = facts.text(key)
        if text and versions.parse(text) is not None:
            return text, key
    return None, ""


def lacks(row: Dict[str, Any], release: str) -> Tuple[bool, Optional[str]]:
    """(whether driver ``release``'s NVML lacks the row's function, the release of the same branch that has it
    again, when the row names one)."""
    v, first = versions.parse(release), versions.parse(row.get("first"))
    if v is None or first is None:
        return False, None
    for gap in row.get("missing_in") or []:
        if versions.parse(gap.get("release")) == v:
            return True, str(gap.get("restored_in") or "") or None
    if v.release[0] < first.release[0] or (v.release[0] == first.release[0] and v < first):
        return True, None
    return False, None


def _judge(facts: Facts) -> List[Finding]:
    bindings = facts.get("python.nvml_bindings")
    if bindings is None or not bindings.known or not isinstance(bindings.value, list):
        return []
    release, key = _driver(facts)
    if release is None:
        return []
    rows = {str(r["function"]): r for r in matrix.load("nvml_functions")}
    out: List[Finding] = []
    for entry in bindings.value:
        calls = entry.get("calls") if isinstance(entry, dict) else None
        if not isinstance(calls, dict):
            continue
        missing: List[Tuple[str, str, Dict[str, Any]]] = []
        restored: Optional[str] = None
        for api, function in sorted(calls.items()):
            row = rows.get(str(function))
            if row is None:
                continue
            gone, back = lacks(row, release)
            if gone:
                missing.append((str(api), str(function), row))
                restored = restored or back
        if not missing:
            continue
        label = "%s %s" % (entry.get("package"), entry.get("version"))
        first = max((versions.parse(r["first"]), r["first"]) for _, _, r in missing)[1]
        upgrade = ("driver %s or newer of that branch" % restored if restored
                   else "a driver of release %s or newer" % first)
        whats = sorted({str(r.get("what")) for _, _, r in missing})
        out.append(Finding(
            code=CODE, severity="warning", components=["driver", "python"],
            title="%s asks NVML for %s, which driver %s's NVML does not have: process lists stay empty "
                  "(fixed in %s)" % (label, ", ".join(f for _, f, _ in missing), release,
                                     restored or "release %s" % first),
            detail="%s's %s hand over to %s, which libnvidia-ml of driver %s does not provide (its nvml.h declares "
                   "no such function), so each call fails with NVML_ERROR_FUNCTION_NOT_FOUND: tools built on this "
                   "binding (nvitop, gpustat, monitoring agents) cannot list %s. The function is in %s." % (
                       label, ", ".join(a for a, _, _ in missing), ", ".join(f for _, f, _ in missing), release,
                       " and ".join(whats), upgrade),
            evidence=[f.to_dict() for f in (bindings, facts.get(key)) if f is not None],
            source={"rule": "the NVML functions each driver release's nvml.h declares",
                    "url": str(missing[0][2]["source"]["url"]), "checked": str(missing[0][2]["source"]["checked"])},
            fix=Fix(text="Install %s; or use a tool release that falls back to the older NVML functions when these "
                         "are not found." % upgrade)))
    return out


@check("nvml-binding", requires=("python.nvml_bindings",),
       reads=("driver.version", "driver.userspace.version", "driver.kernel_module.version"), layers=("driver",),
       codes=(CodeDoc(CODE, "warning", "An installed NVML binding (nvidia-ml-py) asks the driver's NVML for a "
                      "function this driver release does not have (nvidia-ml-py 12.535.x's _v3 process queries on "
                      "535.98 or a driver before 510).", "python.nvml_bindings, driver.version",
                      "Tools built on the binding (nvitop, gpustat) get NVML_ERROR_FUNCTION_NOT_FOUND and list no "
                      "processes.", SOURCE),))
def nvml_binding(ctx: CheckContext) -> List[Finding]:
    return _judge(ctx.facts)

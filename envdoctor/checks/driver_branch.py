"""The installed driver's branch against NVIDIA's driver lifecycle (matrix area ``driver_branches``).

A branch past its end of life gets no more fixes (security ones included): the finding names the
supported branches that know every GPU of the machine, long-term support first.
"""

from __future__ import annotations

import datetime
from typing import Iterable, List, Optional

from packaging.version import Version

from .. import matrix
from ..facts import Facts
from ..findings import Finding, Fix
from ..matrix import hardware as hw
from . import CheckContext, CodeDoc, check

LIFECYCLE = "https://docs.nvidia.com/datacenter/tesla/drivers/index.html#lifecycle"

#: Where the driver version is read from, best first (as advise reads it).
DRIVER_KEYS = ("driver.version", "driver.kernel_module.version", "driver.userspace.version")


def _today() -> datetime.date:
    return datetime.date.today()


def _machine_ccs(ctx: CheckContext) -> List[str]:
    count = ctx.facts.value("gpu.count")
    out = []
    for i in range(count if isinstance(count, int) and 0 < count <= 64 else 0):
        cc = ctx.facts.value(f"gpu.{i}.compute_capability")
        if isinstance(cc, str) and matrix.parse_version(cc) is not None:
            out.append(cc)
    return out


def _driver(ctx: CheckContext) -> Optional[str]:
    for key in DRIVER_KEYS:
        value = ctx.facts.value(key)
        if isinstance(value, str) and matrix.parse_version(value) is not None:
            return value
    return None


#: The install recipe pins a branch only for the proprietary flavor before R590 (NVIDIA replaced the per-branch
#: metapackages with pinning packages from 590 on); Blackwell and newer GPUs need the open kernel modules.
PIN_BEFORE = 590
OPEN_ONLY_FROM_CC = "10.0"


def _install_line(branch: str, ccs: List[str], facts: Facts) -> Optional[str]:
    """The ``envdoctor install driver`` line that moves this machine to ``branch`` (or, where the recipe cannot
    pin it, to the newest driver), planned here as ``install --dry-run`` would; None when no plan is possible
    (an OS envdoctor does not install on, a branch it cannot pin there)."""
    from ..recipes import RecipeError, Request, load_recipe, target_from_facts

    lines = []
    if int(branch) < PIN_BEFORE and all(Version(cc) < Version(OPEN_ONLY_FROM_CC) for cc in ccs):
        lines.append((f"envdoctor install driver --option flavor=proprietary --version {branch}",
                      Request("driver", branch, None, options={"flavor": "proprietary"})))
    lines.append(("envdoctor install driver", Request("driver", None, None)))
    for line, request in lines:
        try:
            load_recipe("driver").plan(request, target_from_facts(facts), facts)
        except RecipeError:
            continue
        except Exception:  # noqa: BLE001 - a recipe tripping on odd facts means no line, never a crash here
            continue
        return line
    return None


@check("driver-branch", codes=(
    CodeDoc("driver.branch_end_of_life", "info",
            "The installed driver belongs to a branch NVIDIA no longer supports (past its end of life).",
            "driver.version (else the kernel module's), gpu.N.compute_capability",
            "A branch past its end of life gets no bug or security fixes; newer CUDA releases and GPUs also "
            "need newer branches. Move to a supported branch that knows every GPU of the machine, a long-term "
            "support branch where one exists.",
            LIFECYCLE),
))
def driver_branch_eol(ctx: CheckContext) -> Iterable[Finding]:
    driver = _driver(ctx)
    if driver is None:
        return []
    row = hw.driver_branch(driver)
    today = _today()
    if row is None or not hw.branch_past_eol(driver, today):
        return []
    ccs = _machine_ccs(ctx)
    newest_cc = max(ccs, key=Version) if ccs else None
    choices = hw.supported_branches(today, newest_cc)
    kind = hw.BRANCH_TYPES.get(row["type"], row["type"])
    year, mon = (int(p) for p in row["eol"].split("-"))
    month = datetime.date(year, mon, 1).strftime("%B %Y")
    detail = f"Driver {driver} is on the R{row['branch']} {kind}, whose support ended in {month}."
    fix = Fix()
    if choices:
        best = choices[0]
        listed = ", ".join("R{} ({}, until {})".format(c["branch"], hw.BRANCH_TYPES[c["type"]], c["eol"])
                           for c in choices)
        detail += f" Supported branches that know this machine's GPUs: {listed}."
        fix = Fix(text=f"Install a driver of the R{best['branch']} {hw.BRANCH_TYPES[best['type']]}.",
                  install=_install_line(best["branch"], ccs, ctx.facts))
    if matrix.unverified(row, "eol") or matrix.unverified(row, "type"):
        detail += " This branch's end of life is not confirmed from NVIDIA's tables; treat it as a hint."
    src = row["source"]
    severity = "info"  # the machine works today: advice, not a fault (a corpus of healthy machines agrees)
    return [Finding("driver.branch_end_of_life", severity, ["driver"],
                    f"NVIDIA driver branch R{row['branch']} is past its end of life ({row['eol']})", detail,
                    evidence=[f.to_dict() for f in [ctx.facts.get(k) for k in DRIVER_KEYS] if f is not None][:1],
                    source={"rule": "driver branch lifecycle", "url": src["url"], "checked": src["checked"],
                            "verified": not matrix.unverified(row)},
                    fix=fix)]

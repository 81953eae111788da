"""The installed driver's branch against NVIDIA's driver lifecycle (matrix area ``driver_branches``).

A branch past its end of life gets no more fixes (security ones included): the finding names the
supported branches that know every GPU of the machine, long-term support first.
"""

from __future__ import annotations

import datetime
from typing import Iterable, List, Optional

from .. import matrix
from ..findings import Finding, Fix
from ..matrix import hardware as hw
from . import CheckContext, CodeDoc, check
from .suggest import INSTALL_LINE_READS, install_line

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


@check("driver-branch", requires=("driver.version",), reads=("driver.*", "driver.*.*") + INSTALL_LINE_READS,
       layers=("driver",), codes=(
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
    # branches that drive every GPU of the machine: a Pascal card beside an Ampere one rules out the branches
    # after Pascal's last (R580), as the newest one rules out those before its architecture
    choices = [r for r in hw.supported_branches(today)
               if all(hw.branch_drives(r["branch"], cc) is not False for cc in ccs)]
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
                  # planned by the driver recipe for this machine: where it cannot pin the branch, the newest
                  # driver (a supported branch too) is suggested instead (issue 11, "Fixes that work")
                  install=install_line(ctx.facts, "driver", str(best["branch"]), floor=True))
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

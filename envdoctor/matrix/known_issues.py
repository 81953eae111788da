"""Defects a library's own release notes name, under a condition the machine shows (area ``known_issues``).

Each row is one Known Issue (or a later release's Fixed Issue) of NCCL, cuDNN or DALI: the releases it affects
(``first_affected`` up to ``fixed_in``), the condition under which it bites, the variables that avoid it
and the fix. The rows are data (``envdoctor/matrix/README.md``, "known_issues.json"); this module only
answers which rows a release is affected by, and whether a workaround is set. The conditions themselves are
judged by the checks (``checks/libraries/known_issues.py``), which hold the machine's facts.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from .. import lazyre
from ..versions import parse
from . import Row, load

#: The condition kinds a row may name (each judged by ``checks/libraries/known_issues.py``).
CONDITIONS = ("gpu_models_mixed", "nic_shares_pcie_switch_with_one_gpu", "nvlink_partly_down", "gpu_model",
              "driver_below_with_rdma_nic", "several_gpus", "installed", "library_below")
PRODUCTS = ("nccl", "cudnn", "dali")
#: The products installed as a Python distribution, and the (normalised) names of those distributions: DALI's
#: ``nvidia-dali-cuda120``, ``nvidia-dali-nightly-cuda120``, ``nvidia-dali-weekly-cuda120``, and the plain
#: ``nvidia-dali`` of its first releases and of a build from source (DALI's installation guide and
#: ``dali/python/setup.py.in``: ``nvidia-dali@DALI_FLAVOR_MINUS@-cuda@CUDA_VERSION_SHORT_DIGIT_ONLY@``); the TensorFlow
#: plug-in (``nvidia-dali-tf-plugin-*``) is another distribution, not DALI itself.
DISTRIBUTIONS = {"dali": lazyre.compile(r"^nvidia-dali(?:-(?:nightly|weekly))?(?:-cuda\d+)?$")}


def product_of_distribution(name: str) -> Optional[str]:
    """The product an installed distribution (normalised name) is, or None: ``nvidia-dali-cuda120`` -> ``dali``."""
    for product, pattern in DISTRIBUTIONS.items():
        if pattern.match(name):
            return product
    return None


def rows(product: Optional[str] = None) -> List[Row]:
    return [r for r in load("known_issues") if product is None or r["product"] == product]


def affects(row: Row, version: Optional[str]) -> bool:
    """Whether release ``version`` of the row's product has the defect (first_affected <= version < fixed_in)."""
    v = parse(version) if version else None
    if v is None:
        return False
    lo, hi = row.get("first_affected"), row.get("fixed_in")
    if lo and v < parse(lo):  # type: ignore[operator]
        return False
    return not (hi and v >= parse(hi))  # type: ignore[operator]


def workaround_variables() -> List[str]:
    """Every variable a row's workaround names (the environment probe records them)."""
    out: List[str] = []
    for r in load("known_issues"):
        for w in r.get("workarounds") or []:
            if w["variable"] not in out:
                out.append(w["variable"])
    return out


def _excludes(value: str, protocol: str) -> bool:
    """Whether an NCCL_PROTO value leaves ``protocol`` out: ``^LL128`` (a list to disable) or ``LL,Simple``
    (a list to enable without it); names are matched without case, as NCCL's ``parseList`` does."""
    text = value.strip()
    negate = text.startswith("^")
    names = [n.strip().lower() for n in text.lstrip("^").split(",") if n.strip()]
    named = protocol.lower() in names
    return named if negate else bool(names) and not named


def workaround_set(row: Row, variables: Mapping[str, Any]) -> Optional[str]:
    """The workaround in force (``"NCCL_PROTO=^LL128"``), or None: ``variables`` maps a name to its value (or to
    ``{"value": ...}`` as the environment probe records it)."""
    for w in row.get("workarounds") or []:
        raw = variables.get(w["variable"])
        value = raw.get("value") if isinstance(raw, dict) else raw
        if not isinstance(value, str):
            continue
        if "equals" in w and value.strip() == w["equals"]:
            return "%s=%s" % (w["variable"], value)
        if "excludes" in w and _excludes(value, w["excludes"]):
            return "%s=%s" % (w["variable"], value)
    return None


def validate(table: List[Row]) -> List[str]:
    """The area's own rules: a known product and condition; versions that parse, first_affected below
    fixed_in; a fix named (fixed_in or fixed_by); workarounds well formed; a severity."""
    problems: List[str] = []
    seen = set()
    for i, row in enumerate(table):
        where = "row %d (%s)" % (i, row.get("id"))
        if not row.get("id") or row["id"] in seen:
            problems.append("%s: id must be present and unique" % where)
        seen.add(row.get("id"))
        if row.get("product") not in PRODUCTS:
            problems.append("%s: product must be one of %s" % (where, ", ".join(PRODUCTS)))
        cond: Dict[str, Any] = row.get("condition") or {}
        if cond.get("kind") not in CONDITIONS:
            problems.append("%s: condition.kind must be one of %s" % (where, ", ".join(CONDITIONS)))
        if cond.get("kind") == "gpu_model" and not cond.get("models"):
            problems.append("%s: a gpu_model condition names its models" % where)
        if cond.get("kind") == "driver_below_with_rdma_nic" and parse(cond.get("version")) is None:
            problems.append("%s: a driver_below_with_rdma_nic condition names a driver version" % where)
        lo, hi = row.get("first_affected"), row.get("fixed_in")
        for name, v in (("first_affected", lo), ("fixed_in", hi)):
            if v is not None and parse(v) is None:
                problems.append("%s: %s must be a version or null" % (where, name))
        if lo and hi and parse(lo) is not None and parse(hi) is not None and not parse(lo) < parse(hi):  # type: ignore
            problems.append("%s: first_affected must be below fixed_in" % where)
        if not hi and not row.get("fixed_by"):
            problems.append("%s: a row without fixed_in says what fixes it (fixed_by)" % where)
        for w in row.get("workarounds") or []:
            if not (isinstance(w, dict) and w.get("variable") and (("equals" in w) != ("excludes" in w))):
                problems.append("%s: a workaround is {variable, equals} or {variable, excludes}" % where)
        if cond.get("kind") == "library_below" and (not cond.get("library") or parse(cond.get("version")) is None):
            problems.append("%s: a library_below condition names a library (soname stem) and a version" % where)
        if row.get("code") is not None and not str(row["code"]).startswith("%s." % row.get("product")):
            problems.append("%s: a row's code is one of its product's (%s.*)" % (where, row.get("product")))
        if row.get("severity") not in ("warning", "info"):
            problems.append("%s: severity must be warning or info" % where)
        for field in ("symptom", "fix"):
            if not row.get(field):
                problems.append("%s: %s is missing" % (where, field))
    return problems


VALIDATORS = {"known_issues": validate}

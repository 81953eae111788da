"""NCCL's choice of transport between two GPUs of one machine, from its own rules (``nccl_transport.json``).

Each row of the table is a range of NCCL releases and the rules ``ncclTopoCheckP2p`` applies there
(``src/graph/paths.cc``), each with the source lines it was read from. This module only interprets the
rows; the rules themselves are data (``envdoctor/matrix/README.md``, "nccl_transport.json").

Path types are NCCL's (``LOC NVL NVB PIX PXB PHB SYS``...). ``nvidia-smi topo -m``'s legend maps onto them:
``NV#`` is NVL, ``PIX``/``PXB``/``PHB`` are themselves, ``NODE`` is PHB (NCCL models a NUMA node as one CPU
node, so a path through two host bridges of one node goes through the CPU like one through one host
bridge), ``SYS`` is SYS.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from ..versions import parse
from . import Row, load

#: nvidia-smi's legend -> NCCL's path type.
SMI_TO_NCCL = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS", "NVB": "NVB"}

#: The transports, best first (``topology.min_nccl_transport`` orders by this); "abort": NCCL refuses to start.
TRANSPORTS = ("P2P/NVLink", "P2P/PCIe", "SHM", "NET", "abort")

#: The NCCL variables the rules read, each also settable in NCCL's configuration files.
VARIABLES = ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE", "NCCL_IGNORE_DISABLED_P2P", "NCCL_IB_DISABLE")

#: NCCL's P2P status names (nvmlGpuP2PStatus_t order), as ``nvidia-smi topo -p2p`` prints them.
P2P_OK = "OK"


def nccl_path(smi: str) -> str:
    """``NV18`` -> ``NVL``, ``NODE`` -> ``PHB`` (see the module docstring)."""
    return "NVL" if smi.startswith("NV") and smi[2:].isdigit() else SMI_TO_NCCL.get(smi, smi)


def rows() -> List[Row]:
    return load("nccl_transport")


def rules_for(version: Optional[str]) -> Tuple[Optional[Row], str]:
    """(the row for NCCL ``version``, a note): ``None`` and why for a release older than the table (its rules
    were not read); for an unknown version, the newest release's rules, and the note says so."""
    table = rows()
    v = parse(version) if version else None
    if v is None:
        return table[-1], "the NCCL release is not known: judged with the rules of NCCL %s and later" % (
            table[-1]["nccl_min"])
    for row in table:
        lo, hi = parse(row["nccl_min"]), parse(row["nccl_below"]) if row["nccl_below"] else None
        if lo is not None and v >= lo and (hi is None or v < hi):
            return row, ""
    if v < parse(table[0]["nccl_min"]):  # type: ignore[operator]
        return None, "NCCL %s is older than %s, the oldest release whose rules envdoctor has read" % (
            version, table[0]["nccl_min"])
    return table[-1], ""


def _strtol(text: str) -> Optional[int]:
    """C's ``strtol(text, NULL, 0)`` (what NCCL parses its integer variables with): leading blanks, a sign,
    ``0x`` hex or ``0`` octal; the digits it can read, 0 when none."""
    s = text.lstrip(" \t\n\r\f\v")
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    base = 10
    if s[:2].lower() == "0x" and len(s) > 2 and s[2].lower() in "0123456789abcdef":
        base, s = 16, s[2:]
    elif s[:1] == "0":
        base = 8
    digits = ""
    for ch in s:
        if ch.lower() in "0123456789abcdef"[:base]:
            digits += ch
        else:
            break
    return sign * int(digits, base) if digits else 0


def user_level(row: Row, env: Mapping[str, str]) -> Tuple[Optional[str], str]:
    """(the P2P level the user set, how), as ``ncclGetLevel`` reads NCCL_P2P_DISABLE and NCCL_P2P_LEVEL;
    (None, why) when neither sets one (an unknown NCCL_P2P_LEVEL is ignored by NCCL too)."""
    disable = env.get("NCCL_P2P_DISABLE")
    if disable is not None and _strtol(disable) == 1:
        return "LOC", "NCCL_P2P_DISABLE=%s" % disable
    level = env.get("NCCL_P2P_LEVEL")
    if level is None:
        return None, ""
    levels = row["levels"]
    if level in levels:
        return level, "NCCL_P2P_LEVEL=%s" % level
    if level[:1].isdigit():
        n = min(max(_strtol(level) or 0, 0), len(row["numeric_levels"]) - 1)
        return row["numeric_levels"][n], "NCCL_P2P_LEVEL=%s (old numbering: %s)" % (level, row["numeric_levels"][n])
    return None, "NCCL_P2P_LEVEL=%s is not a level this NCCL knows (%s): ignored" % (level, ", ".join(levels))


def default_level(row: Row, arch: Optional[str], vendor: Optional[str], family: Optional[int],
                  model: Optional[int], gpus: int) -> Tuple[str, str]:
    """(NCCL's P2P level for this CPU before any variable, why)."""
    for rule in row["cpu_levels"]:
        if rule.get("arch") is not None and rule["arch"] != arch:
            continue
        if rule.get("vendor") is not None and rule["vendor"].strip() != (vendor or "").strip():
            continue
        if "family" in rule and family != rule["family"]:
            continue
        if "model_below" in rule and not (isinstance(model, int) and model < rule["model_below"]):
            continue
        if "max_gpus" in rule and gpus > rule["max_gpus"]:
            continue
        what = " ".join(x for x in (vendor and vendor.strip(), arch) if x)
        extra = " with at most %d GPUs" % rule["max_gpus"] if "max_gpus" in rule else ""
        return rule["level"], "%s CPU%s" % (what, extra)
    return row["p2p_level"], "NCCL's default"


def cpu_arch(machine: Optional[str]) -> Optional[str]:
    """``uname -m`` -> the architecture name NCCL's topology uses (``x86_64``, ``arm64``, ``ppc64``)."""
    if not machine:
        return None
    m = machine.lower()
    if m in ("x86_64", "amd64"):
        return "x86_64"
    if m in ("aarch64", "arm64"):
        return "arm64"
    if m.startswith("ppc64"):
        return "ppc64"
    return m


class Choice(NamedTuple):
    transport: str  # one of TRANSPORTS
    why: str


def choose(row: Row, path: str, level: str, read: Optional[str], write: Optional[str],
           env: Mapping[str, str], nvb: bool = False) -> Choice:
    """The transport NCCL picks between two GPUs: ``path`` (NCCL's path type of the pair: ``NVL`` for a direct
    NVLink, else the PCIe one), ``nvb`` (the pair reaches each other over NVLink through a third GPU),
    ``level`` (the P2P level in force), ``read``/``write`` NVML's P2P status names (``OK``, ``CNS``...; None
    when not known: taken as OK)."""
    levels: List[str] = row["levels"]
    if path != "NVL" and nvb and "NVB" in levels:
        path = "NVB"
    if path not in levels or level not in levels:
        return Choice("unknown", "path %s or level %s is not one this NCCL knows" % (path, level))
    p2p = levels.index(path) <= levels.index(level)
    why = "path %s %s P2P level %s" % (path, "within" if p2p else "beyond", level)
    nvlink = path in ("NVL", "NVB")
    peer_ok = read in (None, P2P_OK) and write in (None, P2P_OK)
    if p2p and not peer_ok:
        ignore = _strtol(env.get("NCCL_IGNORE_DISABLED_P2P", "0") or "0")
        if row["nvml_p2p_check"] and nvlink and not ignore:
            return Choice("abort", "P2P is disabled between NVLink-connected GPUs (NVML P2P read %s, write %s): "
                                   "NCCL aborts (\"P2P is disabled between NVLINK connected GPUs\")" % (read, write))
        p2p = False
        why = "path %s within P2P level %s, but CUDA peer access is not available (read %s, write %s)" % (
            path, level, read, write)
    if p2p:
        return Choice("P2P/NVLink" if nvlink else "P2P/PCIe", why)
    shm = env.get("NCCL_SHM_DISABLE")
    if shm is not None and _strtol(shm) == 1:
        return Choice("NET", why + "; NCCL_SHM_DISABLE=%s" % shm)
    return Choice("SHM", why)


def worst(transports: List[str]) -> Optional[str]:
    """The slowest of ``transports`` (``abort`` worst); None for none or an unknown one."""
    known = [t for t in transports if t in TRANSPORTS]
    if not known or len(known) != len(transports):
        return None
    return max(known, key=TRANSPORTS.index)


def read_conf(text: str) -> Dict[str, str]:
    """An NCCL configuration file (``/etc/nccl.conf``, ``~/.nccl.conf``) as NCCL's ``setEnvFile`` reads it:
    every line with an ``=``, the name before it and the value after it, as they are (no blanks trimmed)."""
    out: Dict[str, str] = {}
    for line in text.split("\n"):
        name, sep, value = line.partition("=")
        if sep and name not in out:
            out[name] = value
    return out


def validate(table: List[Row]) -> List[str]:
    """The area's own rules: release ranges in order, contiguous, the last one open; every level named by a
    rule is one of the row's levels; transports in NCCL's order."""
    problems: List[str] = []
    prev_below: Any = None
    for i, row in enumerate(table):
        where = "row %d (NCCL %s)" % (i, row.get("nccl_min"))
        lo = parse(row.get("nccl_min")) if isinstance(row.get("nccl_min"), str) else None
        below = row.get("nccl_below")
        hi = parse(below) if isinstance(below, str) else None
        if lo is None:
            problems.append("%s: nccl_min must be a version string" % where)
            continue
        if below is not None and (hi is None or hi <= lo):
            problems.append("%s: nccl_below must be a version string above nccl_min, or null" % where)
        if below is None and i != len(table) - 1:
            problems.append("%s: only the last row may be open-ended" % where)
        if prev_below is not None and parse(prev_below) != lo:
            problems.append("%s: starts at %s, but the row before ends at %s" % (where, row["nccl_min"], prev_below))
        prev_below = below
        levels = row.get("levels")
        if not (isinstance(levels, list) and levels and levels[0] == "LOC" and levels[-1] == "SYS"):
            problems.append("%s: levels must list NCCL's path types from LOC to SYS" % where)
            continue
        named = [row.get("p2p_level")] + [r.get("level") for r in row.get("cpu_levels") or []]
        named += list(row.get("numeric_levels") or [])
        for name in named:
            if name not in levels:
                problems.append("%s: level %r is not in levels" % (where, name))
        if not isinstance(row.get("nvml_p2p_check"), bool):
            problems.append("%s: nvml_p2p_check must be true or false" % where)
        if row.get("transports") != ["P2P", "SHM", "NET"]:
            problems.append("%s: transports must be P2P, SHM, NET (NCCL's order)" % where)
    return problems


VALIDATORS = {"nccl_transport": validate}

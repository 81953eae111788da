"""Looking up the compatibility matrix: the answer ``envdoctor matrix AREA [VALUE]`` prints, as data.

:func:`document` is the JSON document of ``envdoctor matrix --format json`` (schema:
``envdoctor/schemas/matrix.schema.json``); the command line renders the same rows as text.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from .. import frameworks

#: What the user may type -> the matrix area: the hardware areas, and each framework's table by its name and
#: aliases (envdoctor/frameworks/).
ALIASES = {
    "cuda": "cuda", "cudnn": "cudnn", "gpu": "gpus", "gpus": "gpus", "cc": "gpu_arch", "arch": "gpu_arch",
    "gpu_arch": "gpu_arch", "paddlepaddle": "paddle", "trt": "tensorrt",
}
ALIASES.update({alias: fw.matrix_area for fw in frameworks.FRAMEWORKS if fw.matrix_area
                for alias in (fw.name,) + fw.aliases})

#: A value to show in a message, per area.
EXAMPLES = {"cuda": "12.4", "cudnn": "9.1", "gpus": "\"RTX 4090\"", "gpu_arch": "8.6", "torch": "2.4",
            "tensorflow": "2.16", "jax": "0.4.30", "onnxruntime": "1.18", "paddle": "3.0", "cupy": "13.0",
            "tensorrt": "10.0", "mxnet": "1.9"}

#: The field that names a row, per area.
KEY = {"gpus": "name", "gpu_arch": "cc", "jax": "jax"}


def key_of(area: str, row: Dict[str, Any]) -> str:
    return str(row[KEY.get(area, "version")])


def lookup(area: str, value: str) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """(matching rows, derived answers) for one value of an area; no rows when unknown."""
    from . import frameworks as fw
    from . import hardware as hw
    from . import load

    rows = load(area)
    derived: Dict[str, Any] = {}
    found: List[Dict[str, Any]] = []
    if area == "cuda":
        row = hw.cuda_release(value)
        if row is not None:
            found = [row]
            derived["min_driver"] = hw.min_driver_for_cuda(value)
            derived["min_driver_minor_compat"] = hw.min_driver_for_cuda(value, minor_compat=True)
    elif area == "cudnn":
        from packaging.version import Version

        from . import parse_version

        row = hw.cudnn_release(value)
        want = parse_version(value)
        if row is None and want is not None and len(want.release) >= 2:
            # a row stands for its series up to the next row (matrix/README.md): 9.1.0 -> row 9.0.0
            # (load() has validated every row's version, so Version() cannot fail here)
            older = [r for r in rows if Version(r["version"]).major == want.major
                     and Version(r["version"]) <= want]
            row = older[-1] if older else None
        found = [row] if row else [r for r in rows if r["version"].startswith(value.rstrip(".") + ".")]
        if row is not None and want is not None and Version(row["version"]) != want:
            # Answered by another row (9.1 under 9.0.0): say which releases that row stands for.
            later = [r["version"] for r in rows if Version(r["version"]) > Version(row["version"])
                     and Version(r["version"]).major == Version(row["version"]).major]
            upto = ("up to, not including, %s" % later[0]) if later else (
                "and every later %d.x release" % Version(row["version"]).major)
            if len(want.release) < 3 and Version(row["version"]).release[:2] == want.release[:2]:
                derived["covers"] = "%s: the newest row of the %s series" % (value.strip(), value.strip())
            else:
                derived["covers"] = "%s: no row of its own; the %s row stands for cuDNN %s %s" % (
                    value.strip(), row["version"], row["version"], upto)
    elif area == "gpus":
        row = hw.gpu_product(value)
        found = [row] if row else [r for r in rows if value.strip().lower() in r["name"].lower()]
        if len(found) == 1:
            arch = hw.arch_for_cc(found[0]["cc"])
            derived["arch"] = arch["arch"] if arch else None
            derived["cuda_releases"] = _span(hw.cuda_for_cc(found[0]["cc"]))
    elif area == "gpu_arch":
        row = hw.arch_for_cc(value)
        if row is not None:
            found = [row]
            derived["cuda_releases"] = _span(hw.cuda_for_cc(row["cc"]))
            derived["gpus"] = [g["name"] for g in load("gpus") if g["cc"] == row["cc"]]
    elif area == "jax":
        row = fw.jax_release(value)
        found = [r for r in rows if row is not None and r["jax"] == row["jax"]]
    elif area == "onnxruntime":
        rel = fw.onnxruntime_release(value)
        found = [r for r in rows if rel is not None and r["version"] == rel["version"]]
    else:
        query: Optional[Callable[[str], Optional[Dict[str, Any]]]] = {
            "torch": fw.torch_release, "tensorflow": fw.tensorflow_release, "paddle": fw.paddle_release,
            "cupy": fw.cupy_release, "tensorrt": fw.tensorrt_release, "mxnet": fw.mxnet_release,
        }.get(area)
        if query is not None:
            row = query(value)
            found = [r for r in rows if row is not None and r["version"] == row["version"]]
        else:  # a table without a release query of its own (a new framework's): the row so named, else that series
            named = value.strip()
            found = [r for r in rows if key_of(area, r) == named] or [
                r for r in rows if key_of(area, r).startswith(named + ".")]
    return found, derived


def _span(versions: List[str]) -> Optional[str]:
    return f"{versions[0]} .. {versions[-1]}" if versions else None


def with_flag(area: str, row: Dict[str, Any]) -> Dict[str, Any]:
    """A row for JSON output: its facts, its source (URL, date) and whether it is confirmed, in plain words."""
    from . import hint_sentence, unverified

    out = {k: v for k, v in row.items() if k != "source"}
    src = row["source"]
    out["source"] = {"url": src["url"], "checked": src["checked"], "verified": not unverified(row)}
    if src.get("unverified_fields"):
        out["source"]["unverified_fields"] = list(src["unverified_fields"])
    out["verified"] = not unverified(row)
    hint = hint_sentence(area, row)
    if hint:
        out["hint"] = hint
    return out




class NotFound(Exception):
    """The area or the value is not in the matrix; the message lists the known ones."""


def document(area: str, value: Optional[str] = None) -> Dict[str, Any]:
    """``envdoctor matrix AREA [VALUE] --format json``: the rows (each with its source and whether it is verified)
    and what is derived from them. :class:`NotFound` for an unknown area or value;
    :class:`~envdoctor.matrix.MatrixError` for a broken table."""
    name, found, derived = rows_for(area, value)
    doc: Dict[str, Any] = {"area": name, "query": value, "rows": [with_flag(name, r) for r in found]}
    if derived:
        doc["derived"] = derived
    return doc


def rows_for(area: str, value: Optional[str]) -> Tuple[str, List[Dict[str, Any]], Dict[str, Any]]:
    """(the area's name, the rows that answer, derived answers): every row of the area without ``value``."""
    from . import load

    name = ALIASES.get(area.strip().lower())
    if name is None:
        raise NotFound("unknown matrix area {!r}; known: {}".format(area, ", ".join(sorted(ALIASES))))
    if value is not None and not value.strip():
        # "" is a substring of every name: the lookup would answer with whatever row came first
        raise NotFound("matrix %s: an empty value; give one (e.g. %s) or none to list every row" % (
            area, EXAMPLES.get(name, "12.4")))
    rows = load(name)
    if value is None:
        return name, rows, {}
    found, derived = lookup(name, value)
    if not found:
        from .hardware import KNOWN_GAPS

        known = ", ".join(key_of(name, r) for r in rows)
        gap = f" ({KNOWN_GAPS[value]})" if name == "cuda" and value in KNOWN_GAPS else ""
        raise NotFound(f"{area} {value!r} is not in the matrix{gap}; known: {known}")
    return name, found, derived

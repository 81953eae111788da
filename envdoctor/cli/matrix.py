"""``envdoctor matrix AREA [VALUE]``: look up the compatibility matrix, with each row's source."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import click

from . import EXIT_USAGE, fail
from .common import echo_output, format_option

#: What the user may type -> the matrix area.
ALIASES = {
    "cuda": "cuda", "cudnn": "cudnn", "gpu": "gpus", "gpus": "gpus", "cc": "gpu_arch", "arch": "gpu_arch",
    "gpu_arch": "gpu_arch", "torch": "torch", "pytorch": "torch", "tensorflow": "tensorflow", "tf": "tensorflow",
    "jax": "jax", "onnxruntime": "onnxruntime", "ort": "onnxruntime", "paddle": "paddle",
    "paddlepaddle": "paddle", "cupy": "cupy", "tensorrt": "tensorrt", "trt": "tensorrt", "mxnet": "mxnet",
}

#: A value to show in a message, per area.
EXAMPLES = {"cuda": "12.4", "cudnn": "9.1", "gpus": "\"RTX 4090\"", "gpu_arch": "8.6", "torch": "2.4",
            "tensorflow": "2.16", "jax": "0.4.30", "onnxruntime": "1.18", "paddle": "3.0", "cupy": "13.0",
            "tensorrt": "10.0", "mxnet": "1.9"}

#: The field that names a row, per area.
KEY = {"gpus": "name", "gpu_arch": "cc", "jax": "jax"}


def key_of(area: str, row: Dict[str, Any]) -> str:
    return str(row[KEY.get(area, "version")])


# --------------------------------------------------------------------------- lookups (pure)


def _lookup(area: str, value: str) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
    """(matching rows, derived answers) for one value of an area; no rows when unknown."""
    from ..matrix import frameworks as fw
    from ..matrix import hardware as hw
    from ..matrix import load

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

        from ..matrix import parse_version

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
        query: Callable[[str], Optional[Dict[str, Any]]] = {
            "torch": fw.torch_release, "tensorflow": fw.tensorflow_release, "paddle": fw.paddle_release,
            "cupy": fw.cupy_release, "tensorrt": fw.tensorrt_release, "mxnet": fw.mxnet_release,
        }[area]
        row = query(value)
        found = [r for r in rows if row is not None and r["version"] == row["version"]]
    return found, derived


def _span(versions: List[str]) -> Optional[str]:
    return f"{versions[0]} .. {versions[-1]}" if versions else None


def _summary(area: str, row: Dict[str, Any]) -> str:
    """One compact line for the list of an area's rows."""
    if area == "cuda":
        return "driver >= {}, cc {}..{}, gcc <= {}".format(row["min_driver_linux"], row["cc_min"], row["cc_max"],
                                                          row["gcc_max"])
    if area == "cudnn":
        return "CUDA {}, cc >= {}".format(", ".join(row["cuda"]), row["cc_min"])
    if area == "gpus":
        return "cc {}, {} GB {}, {}".format(row["cc"], row["memory_gb"], row["memory_type"], row["segment"])
    if area == "gpu_arch":
        return "{}{}".format(row["arch"], ", tensor cores gen %s" % row["tensor_core_gen"]
                             if row.get("tensor_core_gen") else "")
    if area == "torch":
        return "Python {}; {}".format(row["python"], ", ".join(v["tag"] for v in row["variants"]))
    if area == "tensorflow":
        return "Python {}; CUDA {}, cuDNN {}".format(row["python"], row["cuda"], row["cudnn"])
    if area == "jax":
        return ", ".join(v["pip_extra"] for v in row["variants"])
    if area == "onnxruntime":
        return ", ".join("CUDA {} / cuDNN {}{}".format(b["cuda"], b["cudnn"], " (PyPI)" if b.get("pypi_default")
                                                       else "") for b in row["builds"])
    if area == "paddle":
        return "Python {}; {}".format(row["python"], ", ".join(v["tag"] for v in row["variants"]))
    if area == "cupy":
        return "Python {}; {}".format(row["python"], ", ".join(p["package"] for p in row["packages"]))
    if area == "tensorrt":
        return ", ".join("{} ({})".format(b["python_package"], b["cuda"]) for b in row["builds"])
    if area == "mxnet":
        return "legacy; " + ", ".join(p["package"] for p in row["packages"])
    return ""


def _fmt(value: Any) -> str:
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return "\n" + "\n".join("      - " + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) for v in value)
        return ", ".join(_fmt(v) for v in value) if value else "(none)"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_fmt(v)}" for k, v in value.items()) if value else "(none)"
    if value is None:
        return "-"
    return str(value)


def _source_lines(area: str, row: Dict[str, Any]) -> List[str]:
    from ..matrix import hint_sentence

    src = row["source"]
    lines = [f"  source: {src['url']} (checked {src['checked']})"]
    hint = hint_sentence(area, row)
    if hint:
        lines.append("  " + hint)
    return lines


def render_rows(area: str, rows: List[Dict[str, Any]], derived: Dict[str, Any]) -> str:
    out: List[str] = []
    for row in rows:
        out.append(f"{area} {key_of(area, row)}")
        if "covers" in derived and len(rows) == 1:  # the row that answers for the value asked about
            from ..render.layout import wrap

            out += wrap(str(derived["covers"]), 80, "  covers ", "    ")
        for k, v in row.items():
            if k in ("source", KEY.get(area, "version")):
                continue
            out.append(f"  {k}: {_fmt(v)}")
        out.extend(_source_lines(area, row))
        out.append("")
    shown = {k: v for k, v in derived.items() if k != "covers" or len(rows) != 1}
    if shown:
        for k, v in shown.items():
            out.append(f"{k}: {_fmt(v)}")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def render_list(area: str, rows: List[Dict[str, Any]]) -> str:
    from ..matrix import VENDORS, unverified

    width = max(len(key_of(area, r)) for r in rows)
    vendor = VENDORS.get(area, "the vendor")
    lines = [f"{area}: {len(rows)} rows ('*' = not confirmed from {vendor}'s tables; treat as a hint)"]
    for r in rows:
        lines.append("  {} {}  {}".format("*" if unverified(r) else " ", key_of(area, r).ljust(width),
                                          _summary(area, r)))
        lines.append("      {} (checked {})".format(r["source"]["url"], r["source"]["checked"]))
    return "\n".join(lines) + "\n"


def _with_flag(area: str, row: Dict[str, Any]) -> Dict[str, Any]:
    """A row for JSON output: its facts, its source (URL, date) and whether it is confirmed, in plain words."""
    from ..matrix import hint_sentence, unverified

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


@click.command("matrix", epilog="""\b
Areas: cuda, cudnn, gpu, cc (or arch), torch, tensorflow (tf), jax,
onnxruntime (ort), paddle, cupy, tensorrt, mxnet.
\b
Examples:
  envdoctor matrix cuda 12.4
  envdoctor matrix torch 2.4
  envdoctor matrix gpu "RTX 4090"
  envdoctor matrix cc 8.6
  envdoctor matrix jax 0.4.30 --format json
  envdoctor matrix tensorflow           # every row, compact
\b
Exit codes: 0 answered; 2 unknown area or value (the known ones are listed).""")
@click.argument("area")
@click.argument("value", required=False)
@format_option("text", "json")
def matrix(area: str, value: Optional[str], fmt: str) -> None:
    """Look up the compatibility matrix: one area's row for VALUE, or all its rows.

    Every answer names the vendor page the row comes from, the day it was
    checked, and marks rows not verified against that page.
    """
    from ..matrix import MatrixError, load

    name = ALIASES.get(area.strip().lower())
    if name is None:
        raise fail("unknown matrix area {!r}; known: {}".format(area, ", ".join(sorted(ALIASES))), EXIT_USAGE)
    if value is not None and not value.strip():
        # "" is a substring of every name: the lookup would answer with whatever row came first
        raise fail("matrix %s: an empty value; give one (e.g. %s) or none to list every row" % (
            area, EXAMPLES.get(name, "12.4")), EXIT_USAGE)
    derived: Dict[str, Any]
    try:
        rows = load(name)
        if value is None:
            found, derived = rows, {}
        else:
            found, derived = _lookup(name, value)
    except MatrixError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if not found:
        from ..matrix.hardware import KNOWN_GAPS

        known = ", ".join(key_of(name, r) for r in rows)
        gap = f" ({KNOWN_GAPS[value]})" if name == "cuda" and value in KNOWN_GAPS else ""
        raise fail(f"{area} {value!r} is not in the matrix{gap}; known: {known}", EXIT_USAGE)
    if fmt == "json":
        from ..render.json_out import dumps

        doc: Dict[str, Any] = {"area": name, "query": value, "rows": [_with_flag(name, r) for r in found]}
        if derived:
            doc["derived"] = derived
        echo_output(dumps(doc))
    elif value is None:
        echo_output(render_list(name, found))
    else:
        echo_output(render_rows(name, found, derived))

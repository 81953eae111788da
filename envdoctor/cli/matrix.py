"""``envdoctor matrix AREA [VALUE]``: look up the compatibility matrix, with each row's source."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import click

from ..matrix.lookup import ALIASES, KEY, key_of  # noqa: F401  (ALIASES: the names `matrix` takes)
from . import EXIT_USAGE, fail
from .common import echo_output, format_option


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
    from ..matrix import MatrixError
    from ..matrix.lookup import NotFound, document, rows_for

    try:
        if fmt == "json":
            from ..jsontext import dumps

            echo_output(dumps(document(area, value)))
            return
        name, found, derived = rows_for(area, value)
    except (NotFound, MatrixError) as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    if value is None:
        echo_output(render_list(name, found))
    else:
        echo_output(render_rows(name, found, derived))

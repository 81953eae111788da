"""The text of ``envdoctor fit``: the verdict, the model and the GPU, every term with how it was derived, the
findings with the numbers their fixes give, and what could not be read. 80 columns into a pipe."""

from __future__ import annotations

from typing import Any, Dict, List

from .layout import wrap, wrap_command
from .style import Style, printable

GiB = 1 << 30


def _size(n: float) -> str:
    if abs(n) >= GiB / 10:
        return "%.2f GiB" % (n / GiB)
    if abs(n) >= 1 << 20:
        return "%.1f MiB" % (n / (1 << 20))
    if abs(n) >= 1024:
        return "%.1f KiB" % (n / 1024)
    return "%d B" % n


def _count(n: int) -> str:
    return f"{n:,}"


def _finding(f: Dict[str, Any], style: Style, verbose: bool, width: int) -> List[str]:
    indent = " " * 8
    label = style.severity_label(f["severity"])
    lines = wrap(printable(f["title"]), width, "x ERROR ", indent)
    lines[0] = style.mark(f["severity"]) + " " + label + " " + lines[0][8:]
    detail = f.get("detail") or ""
    if not verbose and ". " in detail:
        detail = detail.split(". ", 1)[0] + "."
    if detail:
        lines += [style(ln, "dim") for ln in wrap(printable(detail), width, indent)]
    fix = f.get("fix") or {}
    text = fix.get("text") or ""
    if text:
        paras = text.split("\n")
        lines += wrap("fix: " + printable(paras[0]), width, indent, indent + "     ")
        for p in paras[1:]:
            lines += wrap(printable(p), width, indent + "  - ", indent + "    ")
    for cmd in fix.get("commands") or []:
        first = indent + ("$ ")
        lines += wrap_command(printable(cmd), width, first, " " * (len(first) + 2))
    if verbose:
        lines.append(indent + style(printable(f["code"]), "dim"))
        src = f.get("source") or {}
        if src.get("url"):
            lines += [style(ln, "dim") for ln in wrap(printable("rule source: %s" % src["url"]), width, indent)]
    return lines


def render(doc: Dict[str, Any], style: Style, width: int, verbose: bool = False) -> str:
    """The text for a fit document (``FitResult.to_dict()``)."""
    m, g, o = doc["model"], doc["gpu"] or {}, doc["options"]
    out: List[str] = []
    training = doc.get("training")
    engine = {"vllm": "vLLM", "sglang": "SGLang", "transformers": "Transformers"}.get(o["engine"], o["engine"])
    what = {"inference": "with %s" % engine, "lora": "for LoRA training", "qlora": "for QLoRA training",
            "full": "for full fine-tuning"}[o["mode"]]
    gname = "%s%s" % ("%d x " % o["tp"] if o["mode"] == "inference" and o["tp"] > 1 else "", g.get("name", "GPU"))
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    warnings = [f for f in doc["findings"] if f["severity"] == "warning"]
    if doc["fits"]:
        mark = style.mark("warning" if warnings else "ok")
        head = "%s fits %s %s" % (m["name"], gname, what)
    else:
        mark = style.mark("error")
        head = "%s does not fit %s %s" % (m["name"], gname, what)
    out += wrap(printable(head), width, "x ", "  ")
    out[0] = mark + out[0][1:]
    params = m["parameters"]
    desc = "%.2fB parameters" % (params / 1e9) if params >= 1e8 else "%.1fM parameters" % (params / 1e6)
    bits = [m.get("architecture") or m.get("model_type") or "", desc, m["dtype"]]
    if m.get("quantization"):
        bits.append(m["quantization"])
    out += wrap(printable("model: %s; read from %s" % (", ".join(b for b in bits if b), m["read_from"])),
                width, "  ", "    ")
    gpu = "%s, %s" % (g.get("name"), _size(g.get("memory_total_bytes") or 0))
    if g.get("memory_free_bytes") is not None:
        gpu += " (%s free)" % _size(g["memory_free_bytes"])
    if g.get("compute_capability"):
        gpu += ", compute capability %s" % g["compute_capability"]
    out += wrap(printable("GPU: %s; from %s" % (gpu, g.get("from"))), width, "  ", "    ")
    out.append("")
    if training is None:
        summary = ("KV cache: %s tokens (%s per token per GPU); longest context %s" % (
            _count(doc["kv_tokens"]), _size(doc["kv_bytes_per_token"]), _count(doc["max_context"])))
        if o["batch"] > 1:
            summary += " for %d sequences" % o["batch"]
        out += wrap(printable(summary), width, "  ", "    ")
        out.append("")
    for t in doc["terms"]:
        name = t["name"] + (" ~" if t["estimate"] else "")
        size = _size(t["bytes"])
        head_line = "  %-24s %12s" % (name, size)
        out.append(style(head_line, "bold") if t["name"] in ("KV cache budget", "training total") else head_line)
        deriv = t["derivation"]
        if not verbose and len(deriv) > 2 * (width - 6):
            deriv = deriv[:2 * (width - 6) - 30].rsplit(" ", 1)[0] + " ... (-v: all of it)"
        out += [style(ln, "dim") for ln in wrap(printable(deriv), width, "      ")]
    if any(t["estimate"] for t in doc["terms"]):
        out.append(style("  ~ an estimate", "dim"))
    if verbose:
        for k, v in (doc.get("derivations") or {}).items():
            out += [style(ln, "dim") for ln in wrap(printable("%s: %s" % (k.replace("_", " "), v)), width, "  ",
                                                    "    ")]
    for f in doc["findings"]:
        out.append("")
        out += _finding(f, style, verbose, width)
    if doc.get("notes"):
        out.append("")
        out.append("  Not read or assumed:")
        for n in doc["notes"]:
            out += wrap(printable(n), width, "  - ", "    ")
    if errors and not verbose:
        out.append("")
        out.append("Every derivation in full and each rule's source: add -v")
    return "\n".join(out) + "\n"

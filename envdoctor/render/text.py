"""Human report (the bar: ``flutter doctor``, ``brew doctor``).

First the verdict and the findings (errors, then warnings: title, one line of why, the fix), then one
status line per layer of the stack, a table of the GPUs (identical ones folded into one row), and the
next step. Every fact, with where it came from, only with ``-v``. Everything is wrapped to the
terminal's width (80 columns when the output is not a terminal) at spaces, with hanging indents.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..facts import NOT_SUPPORTED_DEFAULT, Fact, Facts
from ..findings import SEVERITY_RANK, AnyOf, Finding, Fix
from ..layers import (
    COMPANIONS,
    FRAMEWORK_LAYERS,
    LAYER_ROWS,
    NOT_EXAMINED,
    row_of_finding,
    row_of_probe,
    select,
    titles,
)
from ..report import Report
from .layout import DEFAULT_WIDTH, wrap, wrap_command
from .style import Style, printable

LABEL_WIDTH = 34


def human_bytes(n: float) -> str:
    if isinstance(n, int) and abs(n) >= 1 << 60:  # beyond any real machine (and maybe beyond a float: 10**400)
        return "%d B" % n
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return ("%.0f %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return str(n)  # pragma: no cover


#: Fields of a structured fact shown without -v, in this order (the rest need -v).
HEADLINE = ("summary", "version", "release", "name", "target", "path", "client", "server", "state", "kind",
            "error", "message")
_PLAIN = ("summary", "version", "release", "name", "target", "path")


def format_value(key: str, value: Any, verbose: bool = False) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)) and key.endswith("_bytes"):
        return human_bytes(value)
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, dict):
        return _format_item(value, verbose) or "-"
    if isinstance(value, list):
        if not value:
            return "none"
        if all(isinstance(v, dict) for v in value):
            return "\n".join(_format_item(v, verbose) for v in value)
        return ", ".join(format_value(key, v, verbose) for v in value)
    return str(value)


def _format_item(item: dict, verbose: bool = False) -> str:
    """A structured fact (a toolkit, a library copy, Docker...): headline fields, all of them with -v."""
    def shown(v: Any) -> bool:
        return v not in (None, "", [], {}) and (verbose or v is not False)

    head = [str(item[k]) for k in _PLAIN if k in item and shown(item[k]) and not isinstance(item[k], (dict, list))]
    extra_keys = [k for k in HEADLINE if k not in _PLAIN] if not verbose else [
        k for k in item if k not in _PLAIN and k != "source"]
    rest = ["%s: %s" % (k.replace("_", " "), format_value(k, item[k], verbose)) for k in extra_keys
            if k in item and shown(item[k])]
    if not head and not rest and not verbose:
        return _format_item(item, verbose=True)  # nothing headline-worthy: show what there is
    line = "  ".join(head)
    if rest:
        line = (line + "  (" + "; ".join(rest) + ")") if line else "; ".join(rest)
    return line


def _fact_lines(f: Fact, style: Style, verbose: bool, width: int = DEFAULT_WIDTH) -> List[str]:
    """One fact of the -v listing: label, value wrapped under the value column."""
    label = printable(f.label or f.key)
    if f.status == "ok":
        text = printable(format_value(f.key, f.value, verbose))
        mark, colour = " ", ""
    else:
        text = {"not_supported": "not supported"}.get(f.status, f.status.replace("_", " "))
        # The generic "not supported by this GPU or driver" is noise; a specific reason (WSL2: the
        # driver runs on Windows) is worth a line.
        if f.reason and (f.status != "not_supported" or verbose or f.reason != NOT_SUPPORTED_DEFAULT):
            text += ": " + printable(f.reason)
        mark, colour = f.status, ("yellow" if f.status != "not_supported" else "dim")
    col = min(LABEL_WIDTH, max(20, width // 2 - 6))
    first = "  %s %s " % ("@", label.ljust(col))
    if len(first) > col + 5:  # a long label gets its own line
        lines = wrap(label, width, "  @ ", " " * 4)
        head = " " * (col + 5)
    else:
        lines, head = [], first
    pad = " " * (col + 5)
    for n, para in enumerate(text.split("\n")):
        lines += wrap(para, width, head if n == 0 else pad, pad)
    if verbose and f.source:
        lines += [style(ln, "dim") for ln in wrap("from " + printable(f.source), width, pad)]
    sym = style.mark(mark) if mark != " " else " "
    out = []
    for i, ln in enumerate(lines):
        if i == 0:
            ln = "  " + sym + ln[3:]
            if colour and len(lines) == 1 and head == first:
                ln = ln[:len(first)] + style(ln[len(first):], colour)
        out.append(ln)
    return out


def _first_sentence(text: str) -> str:
    """The first sentence of ``text`` (the "why" line of a finding without -v)."""
    text = " ".join(text.split())
    m = re.search(r"(?<=[a-z0-9)\]])[.;:](?=\s+[A-Z(])", text)
    return text[:m.start() + 1] if m else text


def fix_lines(fix: Fix) -> List[Tuple[str, str]]:
    """A fix's commands one per line, each with the label that says how it relates to the others: none for a
    step (the steps run in order), "either " and "    or " before the alternatives of a step (any one of them
    does it), blanks under them for an alternative's further commands."""
    out: List[Tuple[str, str]] = []
    for step in fix.steps:
        if not isinstance(step, AnyOf):
            out.append(("", step))
            continue
        for n, option in enumerate(step.options):
            for k, cmd in enumerate(option):
                out.append((("either " if n == 0 else "    or ") if k == 0 else " " * 7, cmd))
    return out


def _finding_lines(fd: Finding, style: Style, verbose: bool, width: int = DEFAULT_WIDTH, brief: int = 0) -> List[str]:
    """A finding: mark and severity, the title; why (one sentence; all of it with -v); the fix.
    ``brief`` shortens it to fit a screen: 1 leaves out the why, 2 the fix too."""
    indent = " " * 8
    label = style.severity_label(fd.severity)
    lines = wrap(printable(fd.title), width, "x ERROR ", indent)
    lines[0] = style.mark(fd.severity) + " " + label + " " + lines[0][8:]
    if brief >= 2:
        return lines
    why = "" if brief else printable(fd.detail if verbose else _first_sentence(fd.detail))
    if why:
        lines += [style(ln, "dim") if not verbose else ln for ln in wrap(why, width, indent)]
    commands = ([("", fd.fix.install)] if fd.fix.install else []) + (
        fix_lines(fd.fix) if verbose or not fd.fix.install else [])
    if verbose and fd.fix.text:
        lines += wrap("fix: " + printable(fd.fix.text), width, indent, indent + "     ")
    elif not commands and fd.fix.text:
        lines += wrap("fix: " + printable(fd.fix.text), width, indent, indent + "     ")
    for i, (label, cmd) in enumerate(commands):
        if verbose and fd.fix.install and i == 1:
            lines.append(indent + style("or by hand:", "dim"))
        if verbose:
            first = indent + "  " + label + "$ "
        else:  # the commands one under the other, after "fix:"
            first = indent + ("fix: " if i == 0 else "     ") + label
        lines += wrap_command(printable(cmd), width, first, " " * (len(first) + 2))
    if verbose:
        lines.append(indent + style(printable(fd.code), "dim"))
        for ev in fd.evidence:
            lines += [style(ln, "dim") for ln in wrap(printable("evidence: %s = %s (%s)" % (
                ev.get("key"), ev.get("value"), ev.get("source"))), width, indent)]
        if fd.source.get("url"):
            lines += [style(ln, "dim") for ln in wrap(printable("rule source: %s" % fd.source["url"]), width, indent)]
    return lines


# -- one status line per layer ---------------------------------------------------------------------

def _v(item: Any, key: str) -> Optional[str]:
    """A string field of a structured fact (None when absent or of another shape)."""
    if isinstance(item, dict):
        val = item.get(key)
        if isinstance(val, (str, int, float)) and not isinstance(val, bool) and str(val):
            return str(val)
    return None


def _unique(values: Sequence[Optional[str]]) -> List[str]:
    out: List[str] = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return out


def _why_unknown(facts: Facts, *keys: str) -> Optional[str]:
    for k in keys:
        f = facts.get(k)
        if f is not None and f.status in ("unknown", "timed_out"):
            return "%s (%s)" % (f.status.replace("_", " "), f.reason) if f.reason else f.status.replace("_", " ")
    return None


def _os_line(facts: Facts) -> Tuple[str, bool]:
    name = facts.text("os.name") or " ".join(x for x in (facts.text("os.id"), facts.text("os.version")) if x)
    if not name:
        return "Operating system: " + (_why_unknown(facts, "os.name", "os.id") or "unknown"), False
    parts = [name]
    if facts.text("kernel.release"):
        parts.append("kernel " + str(facts.text("kernel.release")))
    if facts.text("os.arch"):
        parts.append(str(facts.text("os.arch")))
    extra = []
    if facts.value("os.wsl"):
        extra.append("WSL2" if "2" in str(facts.value("os.wsl")) else "WSL")
    if facts.value("os.container"):
        extra.append("in a %s container" % facts.value("os.container"))
    return ", ".join(parts) + (" (%s)" % ", ".join(extra) if extra else ""), True


def _cpu_line(facts: Facts) -> Tuple[str, bool]:
    parts = []
    if facts.text("cpu.model"):
        parts.append(str(facts.text("cpu.model")))
    cores = facts.count("cpu.cores", 1 << 20)
    threads = facts.count("cpu.threads", 1 << 20)
    if cores:
        parts.append("%d core%s" % (cores, "" if cores == 1 else "s") + (", %d threads" % threads
                                                                        if threads and threads != cores else ""))
    mem = facts.value("memory.total_bytes")
    if isinstance(mem, (int, float)) and not isinstance(mem, bool) and mem > 0:
        parts.append(human_bytes(mem) + " memory")
    return ("CPU " + ", ".join(parts)) if parts else "CPU: unknown", bool(parts)


def _driver_line(facts: Facts) -> Tuple[str, bool]:
    version = facts.text("driver.version")
    if version:
        cuda = facts.text("driver.cuda_version")
        flavour = facts.text("driver.kernel_module.flavor")
        extra = ["CUDA %s" % cuda] if cuda else []
        if flavour == "open":
            extra.append("open kernel module")
        return "Driver %s" % version + (" (%s)" % ", ".join(extra) if extra else ""), True
    module = facts.text("driver.kernel_module.version")
    lib = facts.text("driver.userspace.version")
    if module or lib:
        parts = (["kernel module %s" % module] if module else []) + (["libraries %s" % lib] if lib else [])
        return "Driver: " + ", ".join(parts) + "; the driver itself does not answer", False
    if facts.value("driver.installed") is False:
        return "Driver: not installed", True
    return "Driver: " + (_why_unknown(facts, "driver.version") or "unknown"), False


def _mig_cell(facts: Facts, pre: str) -> str:
    """"on" (with the MIG devices created, when known: "on, 0 devices"), "off -> on" for a change waiting for
    a reset, or "" (off)."""
    cur, pending = facts.value(pre + "mig_mode_current"), facts.value(pre + "mig_mode_pending")
    if isinstance(cur, bool) and isinstance(pending, bool) and cur != pending:
        return "%s -> %s" % ("on" if cur else "off", "on" if pending else "off")
    if cur is not True:
        return ""
    n = facts.value(pre + "mig_devices")
    if isinstance(n, int) and not isinstance(n, bool):
        return "on, %d device%s" % (n, "" if n == 1 else "s")
    return "on"


def gpu_rows(facts: Facts) -> List[Dict[str, str]]:
    """One row per GPU NVML described: index, model, compute capability, architecture, memory, MIG."""
    count = facts.count("gpu.count", 4096) or 0
    rows = []
    for i in range(count):
        pre = "gpu.%d." % i
        if pre + "name" not in facts and pre + "index" not in facts:
            continue
        mem = facts.value(pre + "memory_total_bytes")
        rows.append({
            "index": str(facts.value(pre + "index", i)),
            "model": printable(facts.text(pre + "name") or "?"),
            "cc": printable(facts.text(pre + "compute_capability") or "?"),
            "arch": printable(facts.text(pre + "architecture") or "?"),
            "memory": human_bytes(mem) if isinstance(mem, (int, float)) and not isinstance(mem, bool) else "?",
            "mig": _mig_cell(facts, pre),
        })
    return rows


def _gpu_line(facts: Facts) -> Tuple[str, bool]:
    count = facts.count("gpu.count", 4096)
    if count is None:
        return "GPUs: " + (_why_unknown(facts, "gpu.count", "gpu.status") or "unknown"), False
    if count == 0:
        bus = facts.value("gpu.pci_devices") or facts.value("driver.nvidia_pci_gpus")
        if isinstance(bus, list) and bus:  # on the bus, but the driver brought none of them up
            return "No NVIDIA GPU answers (%d on the PCI bus)" % len(bus), False
        return "No NVIDIA GPU", True
    models = _unique([r["model"] for r in gpu_rows(facts) if r["model"] != "?"])
    text = "%d NVIDIA GPU%s" % (count, "" if count == 1 else "s")
    return text + (" (%s)" % ", ".join(models) if models else ""), True


def _cuda_line(facts: Facts) -> Tuple[str, bool]:
    toolkits = [t for t in facts.items("cuda.toolkits") if isinstance(t, dict)]
    nvcc = facts.mapping("cuda.nvcc")
    if toolkits:
        shown = ["%s %s" % (_v(t, "version") or "(version unknown)", _v(t, "path") or "") for t in toolkits[:3]]
        more = " and %d more" % (len(toolkits) - 3) if len(toolkits) > 3 else ""
        text = "CUDA toolkit%s %s%s" % ("s" if len(toolkits) > 1 else "", ", ".join(s.strip() for s in shown), more)
        if _v(nvcc, "version"):
            text += "; nvcc %s on PATH" % _v(nvcc, "version")
        return text, True
    wheels = facts.items("cuda.pip_wheels")
    if facts.get("cuda.toolkits") is None or facts.get("cuda.toolkits").status != "ok":  # type: ignore[union-attr]
        return "CUDA: " + (_why_unknown(facts, "cuda.toolkits") or "unknown"), False
    return "No CUDA toolkit" + (" (pip wheels bring their own CUDA libraries)" if wheels else
                                " (frameworks' wheels bring their own)"), True


def _libraries_line(facts: Facts) -> Tuple[str, bool]:
    parts = []
    for key, name in (("libraries.cudnn", "cuDNN"), ("libraries.nccl", "NCCL"), ("libraries.tensorrt", "TensorRT")):
        versions = _unique([_v(c, "version") for c in facts.items(key)])
        if versions:
            parts.append("%s %s" % (name, ", ".join(versions[:3])))
    if parts:
        return "; ".join(parts), True
    why = _why_unknown(facts, "libraries.cudnn")
    return ("Libraries: " + why, False) if why else ("No system cuDNN, NCCL or TensorRT", True)


def _compilers_line(facts: Facts) -> Tuple[str, bool]:
    parts = []
    for key, name in (("compiler.gcc", "gcc"), ("compiler.clang", "clang")):
        v = _v(facts.mapping(key), "version")
        if v:
            parts.append("%s %s" % (name, v))
    return ("Compilers " + ", ".join(parts), True) if parts else ("No C/C++ compiler on PATH", True)


def _python_line(facts: Facts) -> Tuple[str, bool]:
    exe = facts.text("python.executable")
    version = facts.text("python.version")
    if not exe and not version:
        return "Python: " + (_why_unknown(facts, "python.executable", "python.version") or "unknown"), False
    kind = _v(facts.mapping("python.environment"), "kind")
    text = "Python %s %s" % (version or "?", exe or "")
    why = _v(facts.mapping("python.chosen"), "reason")  # absent from older snapshots
    notes = [n for n in (kind if kind and kind != "system" else None, why) if n]
    return text.strip() + (" (%s)" % "; ".join(notes) if notes else ""), True


def _framework_text(name: str, label: str, value: Any) -> str:
    version = _v(value, "version") if isinstance(value, dict) else (str(value) if value else None)
    text = "%s %s" % (label, version or "")
    build = _v(value, "build")
    cuda = _v(value, "cuda")
    if cuda:
        text += " (CUDA %s)" % cuda
    elif build == "cpu" or (isinstance(value, dict) and value.get("gpu") is False):
        text += " (CPU build)"
    return text.strip()


def _framework_lines(facts: Facts) -> List[Tuple[str, str, bool]]:
    """(framework, status text, known) per installed framework, companions on their framework's line."""
    rows: Dict[str, List[str]] = {}
    order: List[str] = []
    companions: Dict[str, List[str]] = {}
    for f in facts.with_prefix("framework."):
        name = f.key[len("framework."):]
        if "." in name or name in ("none", "scan") or name.endswith("_conflict") or f.status != "ok":
            continue
        text = _framework_text(name, printable(f.label or name), f.value)
        if name in COMPANIONS:
            companions.setdefault(COMPANIONS[name], []).append(text)
            continue
        rows[name] = [text]
        order.append(name)
    for parent, texts in companions.items():
        if parent in rows:
            rows[parent] += texts
        else:
            rows[parent] = texts
            order.append(parent)
    out = [(n, ", ".join(rows[n]), True) for n in order]
    if not out:
        scan = facts.get("framework.scan")
        if scan is not None and scan.status != "ok":
            out.append(("frameworks", "Frameworks: " + (_why_unknown(facts, "framework.scan") or "unknown"), False))
        else:
            exe = facts.text("python.executable")
            out.append(("frameworks", "No deep-learning framework installed" + (" for %s" % exe if exe else ""),
                        True))
    return out


def _containers_line(facts: Facts) -> Tuple[str, bool]:
    docker = facts.mapping("container.docker")
    toolkit = facts.mapping("container.toolkit")
    podman = facts.mapping("container.podman")
    parts = []
    if docker.get("installed"):
        ver = _v(docker, "server") or _v(docker, "client")
        parts.append("Docker" + (" %s" % ver if ver else ""))
    if podman.get("installed"):
        parts.append("Podman" + (" %s" % _v(podman, "version") if _v(podman, "version") else ""))
    if toolkit.get("installed"):
        parts.append("NVIDIA Container Toolkit" + (" %s" % _v(toolkit, "version") if _v(toolkit, "version") else ""))
    if not parts:
        if not docker and facts.get("container.docker") is not None and facts.get("container.docker").status != "ok":  # type: ignore[union-attr]
            return "Containers: " + (_why_unknown(facts, "container.docker") or "unknown"), False
        return "No Docker or Podman", True
    return ", ".join(parts), True


def _topology_line(facts: Facts) -> Optional[Tuple[str, bool]]:
    """The paths between the GPUs and NCCL's transports; nothing for fewer than two GPUs, or where the GPU layer
    already says why NVML gave nothing (or a snapshot did not record it)."""
    pairs = [p for p in facts.items("topology.pairs") if isinstance(p, dict)]
    if not pairs:
        return None
    paths: Dict[str, int] = {}
    for p in pairs:
        paths[str(p.get("path") or "?")] = paths.get(str(p.get("path") or "?"), 0) + 1
    order = sorted(paths, key=lambda s: (not s.startswith("NV"), ["PIX", "PXB", "PHB", "NODE", "SYS"].index(s)
                                         if s in ("PIX", "PXB", "PHB", "NODE", "SYS") else 9, s))
    if len(order) == 1:
        links = "%s between every pair" % order[0]
    else:
        links = ", ".join("%s (%d pair%s)" % (k, paths[k], "" if paths[k] == 1 else "s") for k in order)
    transports = sorted({str(p["nccl"]) for p in pairs if p.get("nccl")},
                        key=lambda t: ("P2P/NVLink", "P2P/PCIe", "SHM", "NET", "abort").index(t)
                        if t in ("P2P/NVLink", "P2P/PCIe", "SHM", "NET", "abort") else 9)
    gpus = len({p.get("a") for p in pairs} | {p.get("b") for p in pairs})
    text = "%d GPUs linked by %s" % (gpus, links)
    if transports:
        text += "; NCCL: %s" % ", ".join(transports)
    return text, all(p.get("path") and p.get("nccl") for p in pairs)


_LINES = {"os": _os_line, "cpu": _cpu_line, "driver": _driver_line, "gpu": _gpu_line, "topology": _topology_line,
          "cuda": _cuda_line,
          "libraries": _libraries_line, "compilers": _compilers_line, "python": _python_line,
          "containers": _containers_line}


def status_lines(report: Report, shown: Sequence[str]) -> List[Tuple[str, str, str]]:
    """(layer, mark, text) per layer in ``shown``: the mark is the worst finding of the layer, ``?``
    when its main fact is unknown, ``✓`` otherwise."""
    facts = report.facts
    worst: Dict[str, str] = {}
    by_component: Dict[str, str] = {}
    for fd in report.findings:
        if fd.severity == "info":
            continue
        row = row_of_finding(fd)
        if SEVERITY_RANK[fd.severity] < SEVERITY_RANK.get(worst.get(row, "info"), 2):
            worst[row] = fd.severity
        # A finding marks every framework it names (a GPU its build lacks code for marks the GPU row and the
        # framework's line alike).
        for comp in fd.components or ():
            if comp in FRAMEWORK_LAYERS and SEVERITY_RANK[fd.severity] < SEVERITY_RANK.get(
                    by_component.get(comp, "info"), 2):
                by_component[comp] = fd.severity
    failed = {p.name for p in report.probes if p.status != "ok"}
    out: List[Tuple[str, str, str]] = []
    for layer, _title, probes, _comps in LAYER_ROWS:
        if layer not in shown or not probes or not any(facts.with_prefix(pr) or True for pr in probes):
            continue
        if not any(p.name in probes for p in report.probes):
            continue
        if layer == "frameworks":
            for name, text, known in _framework_lines(facts):
                mark = by_component.get(name) or ("ok" if known else "unknown")
                out.append((layer, mark, text))
            continue
        line = _LINES[layer](facts)
        if line is None:
            if layer in worst:  # a layer with nothing to say but a finding still gets its line
                out.append((layer, worst[layer], titles([layer])[0]))
            continue
        text, known = line
        mark = worst.get(layer) or ("ok" if known and not (set(probes) & failed) else "unknown")
        out.append((layer, mark, text))
    return out


def _ranges(indices: Sequence[str]) -> str:
    """"0-3,5" for ["0", "1", "2", "3", "5"] (non-numbers listed as they are)."""
    nums = [int(i) for i in indices if i.isdigit()]
    if len(nums) != len(indices):
        return ",".join(indices)
    parts: List[str] = []
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else "%d-%d" % (start, prev))
        if n is not None:
            start = prev = n
    return ",".join(parts)


def gpu_table(facts: Facts, width: int) -> List[str]:
    """The GPUs, one row each like ``nvidia-smi``, identical ones (same model, CC, memory, MIG) folded."""
    rows = [r for r in gpu_rows(facts) if r["model"] != "?"]
    if not rows:
        return []
    groups: List[Tuple[Tuple[str, str, str, str, str], List[str]]] = []
    for r in rows:
        key = (r["model"], r["cc"], r["arch"], r["memory"], r["mig"])
        if groups and groups[-1][0] == key:
            groups[-1][1].append(r["index"])
        else:
            groups.append((key, [r["index"]]))
    cells = [["GPU", "Model", "CC", "Arch", "Memory"] + (["MIG"] if any(r["mig"] for r in rows) else [])]
    for key, idx in groups:
        model = key[0] + (" x%d" % len(idx) if len(idx) > 1 else "")
        cells.append([_ranges(idx), model, key[1], key[2], key[3]]
                     + ([key[4] or "off"] if len(cells[0]) > 5 else []))
    known = [i for i in range(len(cells[0])) if i < 2 or any(c[i] != "?" for c in cells[1:])]
    cells = [[c[i] for i in known] for c in cells]  # a column nothing is known for is left out
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]))]
    over = sum(widths) + 2 * (len(widths) - 1) + 4 - width
    if over > 0:  # the model column gives way (never below 12)
        widths[1] = max(12, widths[1] - over)
    lines = []
    for c in cells:
        vals = [v if len(v) <= widths[i] else v[:widths[i] - 1] + "~" for i, v in enumerate(c)]
        lines.append(("    " + "  ".join(v.ljust(widths[i]) for i, v in enumerate(vals))).rstrip())
    return lines


def _verdict(report: Report, findings: Sequence[Finding], style: Style) -> str:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    counts = "%d error%s, %d warning%s" % (errors, "" if errors == 1 else "s", warnings, "" if warnings == 1 else "s")
    unseen = report.unseen
    if unseen is not None:  # the first line says the node could not be seen (a pre-flight never passes it)
        # (Why is the finding's title, shown below: the line stays within the screen's width.)
        return style.mark("error") + " " + style("Not ready: %s. NOT VERIFIED: driver/GPU state unseen" % counts,
                                                 "red", "bold")
    if errors:
        return style.mark("error") + " " + style("Not ready: %s" % counts, "red", "bold")
    if warnings:
        return style.mark("warning") + " " + style("Works, with %s" % counts.split(", ")[1], "yellow", "bold")
    return style.mark("ok") + " " + style("No problems found" + (" in the layers examined" if report.not_examined
                                                                 else ""), "green", "bold")


def _next_step(findings: Sequence[Finding]) -> Optional[str]:
    """What to run first: the worst finding's one command (its install line, or its only command);
    several commands are a sequence that the finding above lists, so the step points there."""
    top = next((f for f in findings if f.severity != "info"), None)
    if top is None:
        return None
    if top.fix.install:
        return top.fix.install
    if len(top.fix.commands) == 1:
        return top.fix.commands[0]
    where = "the first ERROR above" if top.severity == "error" else "the first WARN above"
    if not top.fix.commands:
        return "the fix under %s" % where
    if len(top.fix.steps) == 1:  # one step, its alternatives: any one of them, never all in order
        return "one of the ways under %s (either ... or)" % where
    if top.fix.has_alternatives:
        return "the steps under %s (one way of each either/or)" % where
    return "the commands under %s, in order" % where


def render(report: Report, style: Style, verbose: bool = False, width: int = DEFAULT_WIDTH,
           quiet: bool = False, only: Sequence[str] = (), skip: Sequence[str] = ()) -> str:
    shown, findings = select(report, only, skip)
    problems = [f for f in findings if f.severity != "info" or verbose]
    out: List[str] = []
    if quiet:  # the findings and nothing else
        for fd in problems:
            out.extend(_finding_lines(fd, style, verbose, width))
        return "\n".join(out) + ("\n" if out else "")

    src = report.source
    out.append(_verdict(report, findings, style))
    described = " ".join(_fit_word(w, width - 4) for w in printable(str(src.get("description", "?"))).split(" "))
    out += [style(ln, "dim") for ln in wrap("envdoctor report for %s" % described, width, "  ", "    ")]
    if report.not_examined:  # a layer not looked at is not a layer that passed
        out += [style(ln, "yellow") for ln in wrap("Not examined (%s): %s" % (
            NOT_EXAMINED, ", ".join(titles(report.not_examined))), width, "  ", "    ")]
    rest = _stack_lines(report, style, verbose, width, shown, findings)
    notes = sum(1 for f in findings if f.severity == "info")
    if notes and not verbose:
        rest = ["", *wrap("%d note%s, shown with -v." % (notes, "" if notes == 1 else "s"), width)] + rest
    # The findings as full as the first screen allows: warnings lose their why first, then errors;
    # then warnings their fix. -v shows everything.
    for level in ((0, 0), (0, 1), (1, 1), (1, 2)) if not verbose else ((0, 0),):
        block: List[str] = []
        for fd in problems:
            block.append("")
            block.extend(_finding_lines(fd, style, verbose, width, level[0] if fd.severity == "error" else level[1]))
        if len(out) + len(block) + len(rest) <= SCREEN_LINES:
            break
    return "\n".join(out + block + rest) + "\n"


def _fit_word(word: str, room: int) -> str:
    """A path too long for a line, shortened from the left at a ``/`` (``.../machines/x/snapshot.json``)."""
    if len(word) <= room or "/" not in word:
        return word
    parts = word.split("/")
    kept = parts[-1]
    for part in reversed(parts[:-1]):
        if len(".../" + part + "/" + kept) > room:
            break
        kept = part + "/" + kept
    return ".../" + kept


#: The first screen: without -v the report fits in this many lines whenever it can.
SCREEN_LINES = 40


def _stack_lines(report: Report, style: Style, verbose: bool, width: int, shown: Sequence[str],
                 findings: Sequence[Finding]) -> List[str]:
    """The status line per layer, the GPU table, the next step (and every fact with -v)."""
    out: List[str] = [""]
    for _layer, mark, text in status_lines(report, shown):
        sym = style.mark(mark)
        lines = wrap(printable(text), width, "[x] ", "    ")
        lines[0] = "[" + sym + "] " + lines[0][4:]
        out.extend(lines)
    if "gpu" in shown:
        table = gpu_table(report.facts, width)
        if table:
            out.append("")
            out.append(style(table[0], "bold"))
            out.extend(table[1:])

    step = _next_step(findings)
    if step or not verbose:
        out.append("")
    if step:
        out.extend(wrap_command(printable(step), width, style("Next step: ", "bold"), " " * 13)
                   if not style.color else _styled_step(step, width, style))
    if verbose:
        out.append("")
        out.extend(_facts_listing(report, style, width, shown))
    else:
        out += wrap("Every fact and where it came from: envdoctor diagnose -v", width)
    return out


def _styled_step(step: str, width: int, style: Style) -> List[str]:
    lines = wrap_command(printable(step), width, "Next step: ", " " * 13)
    lines[0] = style("Next step: ", "bold") + lines[0][len("Next step: "):]
    return lines


def _facts_listing(report: Report, style: Style, width: int, shown: Sequence[str]) -> List[str]:
    """Every fact, grouped by probe, with where it came from (-v)."""
    out: List[str] = []
    for p in report.probes:
        if row_of_probe(p.name) not in shown:
            continue
        head = style(p.title, "bold")
        if p.status != "ok":
            head += "  " + style.mark(p.status) + " " + style(p.status.replace("_", " ") + ": " + printable(p.error),
                                                              "yellow")
        else:
            head += style("  (%.0f ms)" % (p.duration * 1000), "dim")
        out.append(head)
        for f in p.facts:
            out.extend(_fact_lines(f, style, True, width))
        out.append("")
    out.append("Took %.2fs." % report.duration)
    return out

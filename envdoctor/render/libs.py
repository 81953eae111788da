"""The text of ``envdoctor libs``: the verdict, then per program the CUDA libraries it loads (which file, its
version, why the loader takes it), the findings with their fixes, and the loader's configuration. 80 columns
into a pipe."""

from __future__ import annotations

import posixpath
from typing import Any, Dict, List

from .layout import wrap, wrap_command
from .style import Style, printable

VIA = {"RPATH": "RPATH", "LD_LIBRARY_PATH": "LD_LIBRARY_PATH", "RUNPATH": "RUNPATH", "ldconfig cache": "ld.so cache",
       "default dir": "default dir", "loaded": "already loaded", "path": "by path"}


def _verdict(doc: Dict[str, Any], style: Style) -> str:
    s = doc["summary"]
    if s["error"]:
        kind, text = "error", "%d error%s" % (s["error"], "" if s["error"] == 1 else "s")
        if s["warning"]:
            text += ", %d warning%s" % (s["warning"], "" if s["warning"] == 1 else "s")
    elif s["warning"]:
        kind, text = "warning", "Loads, with %d warning%s" % (s["warning"], "" if s["warning"] == 1 else "s")
    else:
        kind, text = "ok", "Every CUDA library it needs is found"
    return style.mark(kind) + " " + style(text, "bold")


def _library_lines(lib: Dict[str, Any], root: str, width: int, style: Style) -> List[str]:
    req = lib.get("requester")
    name = lib["soname"] if req in (None, root) else "%s > %s" % (posixpath.basename(str(req)), lib["soname"])
    if lib.get("how") == "dlopen":
        name += " (dlopen)"
    if lib.get("path"):
        where = str(lib.get("resolved") or lib["path"])
        version = " (%s)" % lib["version"] if lib.get("version") and "." in str(lib["version"]) else ""
        text = "%s%s, %s" % (where, version, VIA.get(str(lib.get("via")), str(lib.get("via"))))
        if lib.get("shadowed"):
            text += "; ships %s%s" % (lib.get("expected"), " %s" % lib["expected_version"]
                                      if lib.get("expected_version") else "")
        mark = style.mark("warning") if lib.get("shadowed") else " "
    else:
        text = style("not found", "bold")
        if not lib.get("certain", True):
            text += " outside the ld.so cache (unreadable)"
        mark = style.mark("error")
    return wrap(printable("%s: %s" % (name, text)), width, "  %s " % mark, "      ")


def _finding(f: Dict[str, Any], style: Style, verbose: bool, width: int) -> List[str]:
    indent = " " * 8
    lines = wrap(printable(f["title"]), width, "x ERROR ", indent)
    lines[0] = style.mark(f["severity"]) + " " + style.severity_label(f["severity"]) + " " + lines[0][8:]
    detail = f.get("detail") or ""
    if not verbose and ". " in detail:
        detail = detail.split(". ", 1)[0] + "."
    if detail:
        lines += [style(ln, "dim") if not verbose else ln for ln in wrap(printable(detail), width, indent)]
    fix = f.get("fix") or {}
    commands = list(fix.get("commands") or [])
    if fix.get("text") and (verbose or not commands):
        lines += wrap("fix: " + printable(fix["text"]), width, indent, indent + "     ")
    for i, cmd in enumerate(commands):
        first = indent + ("  $ " if verbose else ("fix: " if i == 0 else "     "))
        lines += wrap_command(printable(cmd), width, first, " " * (len(first) + 2))
    if verbose:
        lines.append(indent + style(printable(f["code"]), "dim"))
    return lines


def render(doc: Dict[str, Any], style: Style, width: int, verbose: bool = False) -> str:
    out = [_verdict(doc, style)]
    for prog in doc["programs"]:
        out.append("")
        out += wrap(printable(prog["path"] + (" (%s)" % prog["soname"] if prog.get("soname") and
                                              prog["soname"] != posixpath.basename(prog["path"]) else "")),
                    width, "  ", "    ")
        libs = prog.get("libraries") or []
        if not libs:
            out.append("    " + style("loads no CUDA, cuDNN, NCCL or TensorRT library", "dim"))
        shown = [lib for lib in libs if verbose or lib.get("via") != "loaded" or not lib.get("path")]
        for lib in shown:
            out += _library_lines(lib, prog["path"], width, style)
        if len(shown) < len(libs):
            out.append("    " + style("(%d more needs met by a library already loaded; -v lists them)" % (
                len(libs) - len(shown)), "dim"))
        for u in prog.get("unread") or []:
            out += [style(ln, "dim") for ln in wrap(printable("could not read %s: %s" % (u["path"], u["error"])),
                                                     width, "    ")]
        if verbose and prog.get("all"):
            out.append("    " + style("every library:", "dim"))
            for lk in prog["all"]:
                out += [style(ln, "dim") for ln in wrap(printable("%s > %s: %s (%s)" % (
                    posixpath.basename(str(lk.get("requester") or "?")), lk["soname"], lk.get("path") or "not found",
                    VIA.get(str(lk.get("via")), lk.get("via")))), width, "      ", "        ")]
    if doc["findings"]:
        out.append("")
        for f in doc["findings"]:
            out += _finding(f, style, verbose, width)
            out.append("")
        out.pop()
    ld = doc["loader"]
    cache = ld["cache"]
    out.append("")
    out += [style(ln, "dim") for ln in wrap(printable("Loader: LD_LIBRARY_PATH %s; ld.so cache %s%s%s" % (
        ":".join(ld["ld_library_path"]) or "unset",
        "%d entries" % cache["entries"] if "entries" in cache else "unknown (%s)" % cache.get("unknown"),
        "; glibc-hwcaps %s" % ", ".join(ld["glibc_hwcaps"]) if ld.get("glibc_hwcaps") else "",
        "; program %s" % ld["program"] if ld.get("program") else "")), width, "", "  ")]
    return "\n".join(out) + "\n"

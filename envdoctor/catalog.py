"""Every finding code's documentation in one catalog, and what an error message a user pasted can point to.

The codes come from their owners: the checks of ``diagnose`` (``envdoctor.checks``), the ``dockerfile`` linter,
``fit``'s and ``bench``'s judges; a command that adds codes of its own adds its module to :data:`CODE_MODULES`.
``envdoctor explain`` serves this catalog, and :func:`triage` reads the same entries: the error messages each code
explains (:class:`~envdoctor.checks.Message`, with the vendor source of each text) are part of the code's
documentation, not a second table. The driver's kernel-log lines are explained by the kernel-message catalog the
``kernel-log`` check reads (matrix area ``kernel_messages``, generated from NVIDIA's sources).
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Dict, List, Optional, Tuple

from .checks import CodeDoc, Message, all_checks
from .checks import code_docs as check_code_docs

#: Modules other than the checks whose ``CODE_DOCS`` (code -> CodeDoc) document the findings their command makes.
CODE_MODULES = ("envdoctor.dockerfile", "envdoctor.fit.judge", "envdoctor.bench.judge")

#: The command that examines what a code is about, for codes that ``diagnose`` does not make.
COMMAND_OF = {"dockerfile": "envdoctor dockerfile", "fit": "envdoctor fit MODEL"}

#: The longest pasted message triage reads (a whole traceback fits; the rest is not looked at).
MAX_MESSAGE = 16384


def code_docs() -> Dict[str, CodeDoc]:
    """Every documented finding code: the checks' and those of :data:`CODE_MODULES`."""
    docs = dict(check_code_docs())
    for name in CODE_MODULES:
        docs.update(importlib.import_module(name).CODE_DOCS)
    return docs


def layers_of() -> Dict[str, Tuple[str, ...]]:
    """code -> the report layers (``diagnose --only`` names) its findings are shown under, for the checks' codes."""
    out: Dict[str, Tuple[str, ...]] = {}
    for spec in all_checks():
        for doc in spec.codes:
            out[doc.code] = tuple(spec.layers or ())
    return out


def _normal(text: str) -> str:
    """Lower case, typographic quotes as plain ones, every run of white space one space."""
    text = text.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'").replace("\u2019", "'")
    return " ".join(text.lower().split())


def matches(pattern: str, text: str) -> bool:
    """Does the (normalized) ``text`` hold the message ``pattern`` (``*``: any text), or is it a piece of one of the
    pattern's fixed parts at least 16 characters long (a message pasted in part)?"""
    parts = [p for p in (_normal(x) for x in pattern.split("*")) if p]
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            break
        at = found + len(part)
    else:
        return bool(parts)
    return len(text) >= 16 and any(text in part for part in parts)


def _kernel_hits(message: str) -> Dict[str, List[Message]]:
    """code -> the driver's kernel messages (and Xid codes) among the pasted lines, by the kernel-message catalog the
    ``kernel-log`` check reads (matrix area ``kernel_messages``, generated from NVIDIA's sources), as Messages."""
    from .matrix import kernel

    out: Dict[str, List[Message]] = {}
    for line in message.splitlines():
        for match in kernel.classify(line):
            code = match.row.get("code")
            if code:
                row = match.row
                text = ("NVRM: Xid (PCI:*): %s, * (%s)" % (row["xid"], row.get("mnemonic") or "")
                        if row.get("kind") == "xid" else str(row.get("format") or row.get("sample") or ""))
                hit = Message(text, str(row.get("source", {}).get("url", "")))
                if hit not in out.setdefault(code, []):
                    out[code].append(hit)
    return out


def triage(message: str, docs: Optional[Dict[str, CodeDoc]] = None) -> Dict[str, Any]:
    """The finding codes that can cause the error ``message`` (any text a user pasted: a line, a traceback) and
    what to collect to tell which one it is. Pure: the catalog's :class:`~envdoctor.checks.Message` entries,
    matched as :func:`matches` says; the answer is a document (``envdoctor/schemas/triage.schema.json``)."""
    from . import __version__

    docs = code_docs() if docs is None else docs
    text = _normal(message[:MAX_MESSAGE])
    layers = layers_of()
    kernel = _kernel_hits(message[:MAX_MESSAGE])
    found: List[Dict[str, Any]] = []
    for code in sorted(docs):
        doc = docs[code]
        hits: List[Message] = [m for m in doc.messages if matches(m.text, text)] + kernel.get(code, [])
        if not hits:
            continue
        found.append({"code": code, "severity": doc.severity, "summary": doc.summary, "why": doc.why,
                      "looks_at": doc.looks_at, "layers": list(layers.get(code, ())),
                      "messages": [m._asdict() for m in hits]})
    # The most specific first: the longest fixed text matched, then the usual severity.
    rank = {"error": 0, "warning": 1, "info": 2}
    found.sort(key=lambda m: (-max(len(re.sub(r"\*", "", x["text"])) for x in m["messages"]),
                              rank.get(m["severity"], 3), m["code"]))
    wanted: List[str] = []
    for m in found:
        for layer in m["layers"]:
            if layer not in wanted:
                wanted.append(layer)
    collect: List[Dict[str, str]] = []
    if wanted:
        collect.append({"command": "envdoctor diagnose --only %s" % ",".join(wanted),
                        "why": "examines the layers these codes are judged in and says which of them applies "
                               "on this machine"})
    for prefix, command in sorted(COMMAND_OF.items()):
        if any(m["code"].startswith(prefix + ".") for m in found):
            collect.append({"command": command, "why": "these codes come from this command, not from diagnose"})
    if found:
        collect.append({"command": "envdoctor snapshot -o snapshot.json",
                        "why": "captures the evidence those checks read, to replay or attach to a bug report"})
    else:
        collect.append({"command": "envdoctor diagnose",
                        "why": "no documented code explains this message; the whole report may still show "
                               "its cause"})
    return {"schema_version": 1, "envdoctor_version": __version__, "matched": len(found), "codes": found,
            "collect": collect}

"""Findings: verdicts about the facts (see DESIGN.md, "Finding").

A finding has a stable ``code`` (documented, never reused for another
meaning), a ``severity``, the ``components`` it concerns, a one-line
``title`` naming both sides with versions, a ``detail``, the ``evidence``
(facts and where they came from), the ``source`` of the rule and a ``fix``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}

COMPONENTS = frozenset(
    "os kernel cpu driver gpu cuda cudnn nccl tensorrt compiler python conda torch tensorflow jax onnxruntime "
    "paddle cupy mxnet docker container-toolkit fabric-manager envdoctor".split()
)


@dataclass
class Fix:
    text: str = ""
    commands: List[str] = field(default_factory=list)
    install: Optional[str] = None  # an "envdoctor install ..." line where a recipe applies

    def to_dict(self) -> Dict[str, Any]:
        return {"text": self.text, "commands": list(self.commands), "install": self.install}


@dataclass
class Finding:
    code: str
    severity: str
    components: List[str]
    title: str
    detail: str = ""
    evidence: List[Dict[str, Any]] = field(default_factory=list)  # Fact.to_dict() items
    source: Dict[str, Any] = field(default_factory=dict)  # {"rule": ..., "url": ..., "checked": ...}
    fix: Fix = field(default_factory=Fix)

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError("bad severity %r" % self.severity)
        bad = [c for c in self.components if c not in COMPONENTS]
        if bad:
            raise ValueError("unknown components %r" % bad)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "code": self.code, "severity": self.severity, "components": list(self.components),
            "title": self.title, "detail": self.detail, "evidence": list(self.evidence),
            "source": dict(self.source), "fix": self.fix.to_dict(),
        }


def summarize(findings: List[Finding]) -> Dict[str, int]:
    out = {s: 0 for s in SEVERITIES}
    for f in findings:
        out[f.severity] += 1
    return out

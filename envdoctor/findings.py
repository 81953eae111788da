"""Findings: verdicts about the facts (see docs/DESIGN.md, "Finding").

A finding has a stable ``code`` (documented, never reused for another
meaning), a ``severity``, the ``components`` it concerns, a one-line
``title`` naming both sides with versions, a ``detail``, the ``evidence``
(facts and where they came from), the ``source`` of the rule and a ``fix``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import frameworks

SEVERITIES = ("error", "warning", "info")
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}

#: The stack from the bottom up: a problem lower down usually causes the ones above it, so at equal
#: severity it is shown (and fixed) first.
LAYERS = ("os", "kernel", "cpu", "driver", "fabric-manager", "gpu", "topology", "cuda", "compiler", "cudnn", "nccl",
          "tensorrt", "python", "conda") + frameworks.COMPONENTS + ("docker", "container-toolkit", "apptainer",
                                                                    "envdoctor")
LAYER_RANK = {name: i for i, name in enumerate(LAYERS)}

#: Headings for the layers in the human report.
LAYER_TITLES = {
    "os": "Operating system", "kernel": "Operating system", "cpu": "CPU", "driver": "NVIDIA driver",
    "fabric-manager": "NVIDIA driver", "gpu": "GPUs", "topology": "GPU topology", "cuda": "CUDA", "compiler": "CUDA",
    "cudnn": "Libraries",
    "nccl": "Libraries", "tensorrt": "Libraries", "python": "Python", "conda": "Python", "docker": "Containers",
    "container-toolkit": "Containers", "apptainer": "Containers", "envdoctor": "envdoctor itself",
}


def layer_of(finding: Finding) -> str:
    """The lowest layer a finding concerns (findings name their components in any order)."""
    return min(finding.components, key=lambda c: LAYER_RANK.get(c, len(LAYERS))) if finding.components else ""


def sort_key(finding: Finding) -> tuple:
    return (SEVERITY_RANK[finding.severity], LAYER_RANK.get(layer_of(finding), len(LAYERS)), finding.code)

COMPONENTS = frozenset(
    "os kernel cpu driver gpu topology cuda cudnn nccl tensorrt compiler python conda docker container-toolkit "
    "apptainer fabric-manager envdoctor".split()
) | frozenset(frameworks.COMPONENTS)


class AnyOf:
    """Alternatives in a fix: any one of them does it ("reboot, or unload and reload the module"). Each
    alternative is one command or commands run in order. Steps and alternatives are told apart so a report
    never says "run these in order" of two ways to the same end."""

    __slots__ = ("options",)

    def __init__(self, *options: Union[str, Sequence[str]]) -> None:
        self.options: List[List[str]] = [[o] if isinstance(o, str) else list(o) for o in options]
        if len(self.options) < 2 or not all(self.options):
            raise ValueError("AnyOf needs at least two alternatives, each with a command")

    def commands(self) -> List[str]:
        return [c for option in self.options for c in option]

    def map(self, fn: Callable[[str], str]) -> AnyOf:
        return AnyOf(*[[fn(c) for c in option] for option in self.options])

    def to_dict(self) -> Dict[str, Any]:
        return {"any_of": [list(o) for o in self.options]}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyOf) and self.options == other.options

    def __repr__(self) -> str:
        return "AnyOf(%s)" % ", ".join(repr(o) for o in self.options)


Step = Union[str, AnyOf]


class Fix:
    """How to fix a finding: prose, exact commands, and the ``envdoctor install ...`` line where one applies.

    ``commands`` are steps, run in order; a step may be an :class:`AnyOf` (any one of its alternatives).
    ``fix.commands`` reads every command, in order, as one flat list (what the report's JSON ``commands``
    always held); ``fix.steps`` keeps the structure (JSON ``steps``)."""

    __slots__ = ("text", "steps", "install")

    def __init__(self, text: str = "", commands: Optional[Sequence[Step]] = None,
                 install: Optional[str] = None) -> None:
        self.text = text
        self.steps: List[Step] = list(commands) if commands else []
        self.install = install

    @property
    def commands(self) -> List[str]:
        """Every command of the fix, in order (the alternatives of a step one after the other)."""
        return [c for st in self.steps for c in (st.commands() if isinstance(st, AnyOf) else [st])]

    @property
    def has_alternatives(self) -> bool:
        return any(isinstance(st, AnyOf) for st in self.steps)

    def map_commands(self, fn: Callable[[str], str]) -> None:
        """Rewrite every command in place (``pip`` aimed at the inspected interpreter)."""
        self.steps = [st.map(fn) if isinstance(st, AnyOf) else fn(st) for st in self.steps]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fix) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return "Fix(%r)" % (self.text,)

    def to_dict(self) -> Dict[str, Any]:
        return {"text": self.text, "commands": self.commands, "install": self.install,
                "steps": [st.to_dict() if isinstance(st, AnyOf) else {"run": st} for st in self.steps]}


class Finding:
    """A verdict: see the module docstring.  ``evidence`` holds Fact.to_dict() items; ``source`` the rule's
    {"rule", "url", "checked"}."""

    __slots__ = ("code", "severity", "components", "title", "detail", "evidence", "source", "fix")

    def __init__(self, code: str, severity: str, components: List[str], title: str, detail: str = "",
                 evidence: Optional[List[Dict[str, Any]]] = None, source: Optional[Dict[str, Any]] = None,
                 fix: Optional[Fix] = None) -> None:
        self.code = code
        self.severity = severity
        self.components = list(components)
        self.title = title
        self.detail = detail
        self.evidence: List[Dict[str, Any]] = list(evidence) if evidence else []
        self.source: Dict[str, Any] = dict(source) if source else {}
        self.fix = fix if fix is not None else Fix()
        if self.severity not in SEVERITIES:
            raise ValueError("bad severity %r" % self.severity)
        bad = [c for c in self.components if c not in COMPONENTS]
        if bad:
            raise ValueError("unknown components %r" % bad)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Finding) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return "Finding(%r, %r, %r)" % (self.code, self.severity, self.title)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "code": self.code, "severity": self.severity, "components": list(self.components),
            "title": self.title, "detail": self.detail, "evidence": list(self.evidence),
            "source": dict(self.source), "fix": self.fix.to_dict(),
        }


def quoted(value: Any) -> str:
    """A value read from the machine (a path, a variable's value), for a finding's title or detail: as it is when it
    is plain (letters, digits and ``/._+:@,=-``), else quoted and escaped as Python's ``repr`` writes it, so it reads
    as one value and no newline, escape or invisible character in it reaches the prose."""
    text = str(value)
    if text and all(c.isalnum() and c.isascii() or c in "/._+:@,=-~" for c in text):
        return text
    return repr(text)


def pip_for(command: str, python: Optional[str]) -> str:
    """``command`` with every ``pip`` call aimed at ``python`` (``pip --python PATH install ...``, pip >= 22.3),
    so a fix or an advice installs into the interpreter envdoctor inspected, never into envdoctor's own
    environment or whichever ``pip`` comes first on PATH. Other commands, and a missing ``python``,
    leave ``command`` as it is."""
    import re
    import shlex

    if not python or "--python" in command:
        return command
    return re.sub(r"(^|&& |; |\| )pip( +)(?=install|uninstall|download|list|show)",
                  lambda m: "%spip --python %s " % (m.group(1), shlex.quote(python)), command)


def pin_interpreter(findings: List[Finding], python: Optional[str]) -> None:
    """Every finding's pip commands aimed at ``python`` (in place; see :func:`pip_for`)."""
    if not python:
        return
    for f in findings:
        f.fix.map_commands(lambda c: pip_for(c, python))


def summarize(findings: List[Finding]) -> Dict[str, int]:
    out = {s: 0 for s in SEVERITIES}
    for f in findings:
        out[f.severity] += 1
    return out

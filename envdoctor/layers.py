"""The layers of the human report (also what ``diagnose --only/--skip`` accept), and which findings and
probes belong to each. Light to import: the command line reads :data:`LAYER_NAMES` for its choices."""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple

from . import frameworks
from .findings import Finding, layer_of

FRAMEWORK_LAYERS = frameworks.COMPONENTS

#: The layers of the report, bottom up: (name for --only/--skip, heading, the probes whose facts it
#: shows, the finding components it owns). Frameworks get one status line each.
LayerRow = Tuple[str, str, Tuple[str, ...], Tuple[str, ...]]
LAYER_ROWS: Tuple[LayerRow, ...] = (
    ("os", "Operating system", ("os",), ("os", "kernel")),
    ("cpu", "CPU and memory", ("cpu",), ("cpu",)),
    ("driver", "NVIDIA driver", ("driver",), ("driver", "fabric-manager")),
    ("gpu", "GPUs", ("gpu",), ("gpu",)),
    ("topology", "GPU topology", ("topology",), ("topology",)),
    ("cuda", "CUDA", ("cuda",), ("cuda",)),
    ("libraries", "Libraries", ("libraries",), ("cudnn", "nccl", "tensorrt")),
    ("compilers", "Compilers", ("compilers",), ("compiler",)),
    ("python", "Python", ("python", "requires"), ("python", "conda")),
    ("frameworks", "Frameworks", ("frameworks", "linkage"), FRAMEWORK_LAYERS),
    ("containers", "Containers", ("containers",), ("docker", "container-toolkit", "apptainer")),
    ("envdoctor", "envdoctor itself", (), ("envdoctor",)),
)
#: What --only/--skip accept.
LAYER_NAMES = tuple(row[0] for row in LAYER_ROWS)
_ROW_OF_COMPONENT = {c: row[0] for row in LAYER_ROWS for c in row[3]}
_ROW_OF_PROBE = {pr: row[0] for row in LAYER_ROWS for pr in row[2]}
#: Packages shown on their framework's line rather than on one of their own.
COMPANIONS = frameworks.COMPANIONS


def row_of_finding(fd: Finding) -> str:
    """The report layer a finding belongs to: that of its primary (first-named) component."""
    comp = fd.components[0] if fd.components else layer_of(fd)
    return _ROW_OF_COMPONENT.get(comp, "envdoctor")


def titles(names: Sequence[str]) -> List[str]:
    """The headings of the layers ``names`` (``diagnose --only`` names), in report order."""
    return [row[1] for row in LAYER_ROWS if row[0] in names]


NOT_EXAMINED = "left out by --only/--skip: not verified"


def row_of_probe(name: str) -> str:
    return _ROW_OF_PROBE.get(name, "envdoctor")



def select(report: Any, only: Sequence[str] = (), skip: Sequence[str] = ()) -> Tuple[List[str], List[Finding]]:
    """The layers to show (``--only``/``--skip``) and the report's findings that belong to them."""
    shown = [n for n in LAYER_NAMES if (not only or n in only) and n not in skip]
    return shown, [f for f in report.findings if row_of_finding(f) in shown]

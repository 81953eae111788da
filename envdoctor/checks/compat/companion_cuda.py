"""Were torch's companions (torchvision, torchaudio) built for the CUDA release of the installed torch?

Each companion's compiled operators record the CUDA release they were built with, and the companion compares it with
``torch.version.cuda`` when it is imported; how it compares (major and minor, or the major only) depends on its release
(``matrix/data/companion_cuda.json``, from the projects' own ``_check_cuda_version``). A companion left behind when
torch was reinstalled from another CUDA index (a preinstalled torchvision ``+cu116`` beside a pip-installed torch
``+cu117``) raises 'Detected that PyTorch and torchvision were compiled with different CUDA versions' at import.

The companion's CUDA is its local version label (``+cu116``: download.pytorch.org's builds); a build without one
(PyPI's default wheels) says nothing here, and the check says nothing of it."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ... import versions
from ...facts import Facts
from ...findings import Finding, Fix
from ...matrix import packages
from .. import CheckContext, CodeDoc, Message, check
from . import _ev, _severity, _source

COMPANIONS = ("torchvision", "torchaudio")

DOCS = (
    CodeDoc("framework.torchvision_cuda_mismatch", "error",
            "torchvision or torchaudio was built for another CUDA release than the installed torch, in the way the "
            "companion's own import-time check refuses (any other CUDA release before torchvision 0.16 and "
            "torchaudio 2.12; another CUDA major after).",
            "framework.torch (cuda), framework.torchvision / framework.torchaudio (local version label +cuNNN)",
            "Importing the companion raises RuntimeError: its compiled operators were built against another CUDA "
            "runtime than torch's. Typically a preinstalled companion left behind when torch was reinstalled from "
            "another CUDA index.",
            "companion_cuda.json: https://github.com/pytorch/vision/blob/v0.15.2/torchvision/extension.py",
            messages=(Message("Detected that PyTorch and torchvision were compiled with different CUDA versions. "
                              "PyTorch has CUDA Version=* and torchvision has CUDA Version=*",
                              "https://github.com/pytorch/vision/blob/v0.15.2/torchvision/extension.py"),
                      Message("Detected that PyTorch and TorchAudio were compiled with different CUDA versions. "
                              "PyTorch has CUDA version * whereas TorchAudio has CUDA version *",
                              "https://github.com/pytorch/audio/blob/main/src/torchaudio/_extension/utils.py"))),
)

def _local_cuda(value: Dict[str, Any]) -> Optional[str]:
    """``+cu116`` -> "11.6"; None for a build without a CUDA label."""
    return versions.cuda_of_tag(value.get("local"))


def _companion_cuda(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    torch = facts.mapping("framework.torch")
    index = versions.cuda_tag(torch.get("cuda"))
    torch_cuda = versions.release(torch.get("cuda"))
    if index is None or torch_cuda is None:
        return out
    for name in COMPANIONS:
        value = facts.mapping("framework." + name)
        version = str(value.get("version") or "")
        cuda = _local_cuda(value)
        row = packages.companion_row(name, version) if version else None
        if row is None or cuda is None or packages.companion_refuses(row, torch_cuda, cuda) is not True:
            continue
        public = str(value.get("public") or version.partition("+")[0])
        out.append(Finding(
            code="framework.torchvision_cuda_mismatch", severity=_severity(row, ("compares", "releases")),
            components=["torch"],
            title="%s %s was built for CUDA %s, but torch %s was built for CUDA %s: importing %s fails" % (
                name, version, cuda, torch.get("version"), torch_cuda, name),
            detail="%s %s compares the CUDA release its compiled operators were built with against torch's (%s) when "
                   "it is imported, and raises '%s'. It is usually a %s left behind when torch was reinstalled from "
                   "another CUDA index." % (
                       name, public, "major and minor" if row["compares"] == "major.minor" else "the major",
                       row["message"].replace("*.*", "{}").format(torch_cuda, cuda), name),
            evidence=_ev(facts.get("framework.torch"), facts.get("framework." + name)),
            source=_source("companion_cuda.json: %s %s compares CUDA %s with torch's" % (
                name, row["releases"], row["compares"]), row),
            fix=Fix(text="Install the %s release made for torch %s from the same CUDA index as torch (pip picks it "
                         "when torch is pinned)." % (name, torch.get("version")),
                    commands=["pip install 'torch==%s' '%s' --index-url https://download.pytorch.org/whl/%s" % (
                        str(torch.get("version") or "").partition("+")[0], name, index)])))
    return out


@check("compat.companion-cuda", requires=("framework.torch",), reads=("framework.torchvision", "framework.torchaudio"),
       layers=("frameworks",), codes=DOCS)
def companion_cuda(ctx: CheckContext) -> List[Finding]:
    return _companion_cuda(ctx.facts)

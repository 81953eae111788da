"""The toolkit that compiles extensions against a framework is another CUDA than the framework was built with."""

from __future__ import annotations

from typing import List, Optional, Tuple

from ...facts import Fact, Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS
from . import (
    CPP_EXTENSION,
    DOCS,
    MINOR_COMPAT,
    _cuda_home_for,
    _ev,
    _mm,
    _mm_str,
    _source,
    active_toolkit,
    has_nvidia_gpu,
)

#: The first CUDA major whose minor releases share one runtime soname (libcudart.so.11.0 for every 11.x), as
#: NVIDIA's CUDA compatibility guide (minor version compatibility) gives it.
MINOR_COMPAT_MAJOR = 11


def extension_toolkit(facts: Facts) -> Optional[Tuple[str, str, Fact]]:
    """The toolkit torch.utils.cpp_extension builds with (its CUDA_HOME, when that is a known toolkit),
    else the active one: (version, how it is chosen, fact)."""
    home = facts.get("cuda.extension_home")
    if home is not None and home.known and isinstance(home.value, dict) and home.value.get("version"):
        how = "CUDA_HOME %s, from %s" % (home.value.get("path"), home.value.get("how"))
        return str(home.value["version"]), how, home
    return active_toolkit(facts)


def _toolkit_set_up_for_builds(facts: Facts) -> bool:
    """Whether a CUDA toolkit is set up for compiling: an nvcc on PATH, or CUDA_HOME/CUDA_PATH set."""
    for key in ("cuda.nvcc", "cuda.home"):
        fact = facts.get(key)
        if fact is not None and fact.known and isinstance(fact.value, dict) and fact.value.get("path"):
            return True
    return False


def _toolkit_vs_framework(facts: Facts) -> List[Finding]:
    active = extension_toolkit(facts)
    torch = facts.get("framework.torch")
    if active is None or torch is None or not torch.known or not isinstance(torch.value, dict):
        return []
    if torch.value.get("build") != "cuda":
        return []
    tk, fwc = _mm(active[0]), _mm(torch.value.get("cuda"))
    if tk is None or fwc is None or fwc[1] is None or tk == fwc:
        return []
    major = tk[0] != fwc[0]
    # before CUDA 11 every minor release is its own runtime (libcudart.so.10.0, libcudart.so.10.1: minor version
    # compatibility begins with CUDA 11), so an extension built with another minor links another CUDA runtime
    # than torch's, and apex's setup.py (check_cuda_torch_binary_vs_bare_metal, since NVIDIA/apex#323) refuses
    # any major.minor other than torch.version.cuda; said in the detail. Still info: torch.utils.cpp_extension
    # builds it (no version check before _check_cuda_version, added by pytorch/pytorch#59665 in 2021; it warns
    # on another minor: "Most likely this shouldn't be a problem"), DeepSpeed's op builder accepts 10.0/10.1/10.2
    # together (v0.12.6 op_builder/builder.py cuda_minor_mismatch_ok), and a machine that only runs torch beside
    # such a toolkit with its nvcc on PATH is healthy
    own_runtime = not major and tk[0] < MINOR_COMPAT_MAJOR
    cmds, install, _ = _cuda_home_for(facts, fwc)
    # another major breaks extension builds; said as a warning where they would run (a GPU is here) and
    # where this toolkit is set up for building (its nvcc on PATH, or CUDA_HOME/CUDA_PATH); a toolkit that
    # is only installed (/usr/local/cuda, nvcc not on PATH) is what many healthy machines have beside a
    # wheel of another CUDA: said, as info
    warn = major and has_nvidia_gpu(facts) and _toolkit_set_up_for_builds(facts)
    return [Finding(
        code="cuda.toolkit_differs_from_framework", severity="warning" if warn else "info",
        components=["cuda", "torch"],
        title="The active CUDA toolkit is %s (%s), but torch %s was built with CUDA %s" % (
            active[0], active[1], torch.value.get("version"), _mm_str(fwc)),
        detail=("Only building CUDA extensions uses the toolkit. %s" % (
            "torch.utils.cpp_extension refuses a different CUDA major ('The detected CUDA version (%s) mismatches "
            "the version that was used to compile PyTorch (%s)')." % (active[0], _mm_str(fwc)) if major else
            "Before CUDA 11 each minor release is its own CUDA runtime (libcudart.so.%s is not libcudart.so.%s): "
            "an extension built with CUDA %s links a runtime this torch does not ship (it loads only where the "
            "loader finds that toolkit's libcudart), and apex's setup.py refuses the build ('Cuda extensions are "
            "being compiled with a version of Cuda that does not match the version used to compile Pytorch "
            "binaries')." % (_mm_str(tk), _mm_str(fwc), _mm_str(tk))
            if own_runtime else
            "torch.utils.cpp_extension warns about a different minor and builds anyway.")),
        evidence=_ev(active[2], torch),
        source=_source("CUDA minor version compatibility begins with CUDA 11: before it each minor release has "
                       "its own runtime soname", url=MINOR_COMPAT) if own_runtime else
        _source("cpp_extension compares the toolkit's CUDA with torch.version.cuda (major must match)",
                url=CPP_EXTENSION),
        fix=Fix(text="Only if you build extensions: use CUDA %s for them." % _mm_str(fwc),
                commands=cmds, install=install))]


@check("compat.toolkit-vs-framework", requires=("cuda.nvcc", "framework.*"), reads=("cuda.*",
       "driver.nvidia_pci_gpus") + INSTALL_LINE_READS, layers=("cuda",),
       codes=docs_for(DOCS, "cuda.toolkit_differs_from_framework"))
def toolkit_vs_framework(ctx: CheckContext) -> List[Finding]:
    return _toolkit_vs_framework(ctx.facts)

"""Python packages, not frameworks, whose own compiled GPU code has limits the matrix knows.

Fact ``python.gpu_packages`` = ``[{package, version, location, metadata}]``: each installed distribution that
``matrix/data/package_arch.json`` has rows for (bitsandbytes, flash-attn), with its version as its metadata
directory names it (``flash_attn-2.3.3.dist-info``), in the order the interpreter finds them. Absent when none
is installed. The check ``compat.package-arch`` judges them against the GPUs."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from ..facts import Fact, ok
from ..matrix import packages
from . import ProbeContext, register


@register("gpupackages", "Packages with GPU code of their own", order=93, produces=("python.gpu_packages",))
def probe_gpu_packages(ctx: ProbeContext) -> Iterable[Fact]:
    wanted = set(packages.arch_packages())
    found: List[Dict[str, Any]] = []
    seen = set()
    for dist in ctx.host.distributions():
        if dist.key in wanted and dist.key not in seen:
            seen.add(dist.key)  # the first one on sys.path is the one imported
            found.append({"package": dist.key, "version": dist.version, "location": dist.location,
                          "metadata": dist.metadata_dir})
    if not found:
        return []
    return [ok("python.gpu_packages", found, "dir:" + found[0]["metadata"], "Packages with GPU code of their own")]

"""Python packages whose GPU code carries its own CUDA runtime (linked statically: no ``libcudart`` in NEEDED).

CatBoost's ``catboost/gpu/_catboost.so``, XGBoost's ``libxgboost.so``, LightGBM and faiss builds link
``libcudart_static.a`` (nvcc's default ``--cudart=static``), so no linkage check sees which CUDA they need.
Their CUDA fat binary says it: nvcc writes the PTX ISA version of its own release into every PTX entry
(:mod:`envdoctor.host.fatbin`), and NVIDIA's PTX ISA release history (``cuda.json`` ``ptx_isa``) maps it back to
the CUDA that introduced it (6.1 -> CUDA 9.1).  The check is ``compat.driver-vs-cuda``.

Which files: the ``*.so`` files of each installed distribution's import packages (``top_level.txt``, else its
name), at their top and one folder down (``catboost/gpu``, ``xgboost/lib``), read through ``Host.fatbin``
(section and entry headers only) and, for those with a ``.nv_fatbin``, ``Host.elf`` (NEEDED).  Frameworks envdoctor
knows (their own CUDA checks) and NVIDIA's CUDA library wheels (``nvidia-*``) are left out.  Bounded: at most
:data:`MAX_DIRS` folders listed and :data:`MAX_LIBRARIES` libraries read; ``complete`` says whether a bound cut
the walk.

Fact ``python.static_cuda`` = ``{"libraries": [{package, version, path, ptx_isa, sass, ptx, complete}],
"complete": bool}``.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List

from .. import frameworks
from ..facts import Fact, ok
from ..host.base import Host
from . import ProbeContext, register

MAX_DIRS = 600
MAX_LIBRARIES = 200
_CUDART = re.compile(r"^libcudart\.so(\.|$)")
_SKIP_DIR = {"__pycache__", "tests", "test", "include", "data", "datasets"}


def _is_library(name: str) -> bool:
    return name.endswith(".so") or ".so." in name


def find_static_cuda(host: Host) -> Dict[str, Any]:
    dirs = libs = 0
    complete = True
    out: List[Dict[str, Any]] = []
    for dist in host.distributions():
        key = dist.key
        if key.startswith("nvidia-") or frameworks.of_distribution(key) is not None:
            continue
        names = [n.strip() for n in (host.read_text(posixpath.join(dist.metadata_dir, "top_level.txt"),
                                                    limit=4096) or "").splitlines()
                 if n.strip() and "/" not in n and not n.strip().startswith(".")]
        for top in (names or [key.replace("-", "_")])[:4]:
            queue = [(posixpath.join(dist.location, top), 0)]
            while queue:
                folder, depth = queue.pop(0)
                if dirs >= MAX_DIRS:
                    complete = False
                    break
                dirs += 1
                listing = host.list_dir(folder)
                if not listing.ok:
                    continue
                for name in listing.names():
                    path = posixpath.join(folder, name)
                    if _is_library(name):
                        if libs >= MAX_LIBRARIES:
                            complete = False
                            continue
                        libs += 1
                        fat = host.fatbin(path)
                        if not fat.ok or not fat.section or not (fat.ptx_isa or fat.sass):
                            continue
                        elf = host.elf(path)
                        if not elf.ok or any(_CUDART.match(n) for n in elf.needed):
                            continue  # dynamically linked: the linkage checks judge the libcudart it loads
                        out.append({"package": dist.name, "version": dist.version, "path": path,
                                    "ptx_isa": fat.ptx_isa, "sass": list(fat.sass), "ptx": list(fat.ptx),
                                    "complete": fat.complete})
                    elif depth == 0 and "." not in name and name not in _SKIP_DIR:
                        queue.append((path, 1))
    return {"libraries": out, "complete": complete}


@register("staticcuda", "GPU code with its own CUDA runtime", order=96, produces=("python.static_cuda",))
def probe_static_cuda(ctx: ProbeContext) -> Iterable[Fact]:
    return [ok("python.static_cuda", find_static_cuda(ctx.host), "derived",
               "Python packages with a statically linked CUDA runtime")]

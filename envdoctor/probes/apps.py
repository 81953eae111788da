"""Applications that bring their own CUDA and state their own driver floors (``data/driver_floors.json``):

* RAPIDS (cuDF, cuML, cuGraph, RMM ...), installed by conda (``<prefix>/conda-meta/<name>-<version>-<build>.json``,
  the build naming the CUDA major: ``cuda_11_py38_...``, ``cuda11_...``, ``cuda12_...``) or by pip (one wheel per
  CUDA major, named ``-cu11``/``-cu12``/``-cu13``, RSN 31). Fact ``apps.rapids`` = ``[{package, version, release,
  cuda_major, where}]`` (``release`` is RAPIDS' YY.MM).
* Ollama, a Go program, not a Python package: its install script puts ``ollama`` in ``/usr/local/bin`` (packages:
  ``/usr/bin``) and its GPU runners in ``<lib>/ollama/cuda_vNN`` (``/usr/local/lib``, ``/usr/lib``). Its version is
  what ``ollama --version`` prints ("ollama version is 0.13.0"; "client version is ..." beside a warning when no
  server answers). Fact ``apps.ollama`` = ``{path, version, libdir, runners}`` or None when it is not installed.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional

from ..facts import Fact, ok, unknown
from ..host.base import Host
from . import ProbeContext, register
from .cuda import CONDA_META_FILE, conda_prefixes

#: RAPIDS' packages (conda names; pip wheels add -cuNN).
RAPIDS_PACKAGES = frozenset({
    "rapids", "cudf", "libcudf", "dask-cudf", "cuml", "libcuml", "cugraph", "libcugraph", "pylibcugraph", "rmm",
    "librmm", "cuspatial", "libcuspatial", "cuxfilter", "cucim", "raft-dask", "pylibraft", "libraft", "cuvs",
    "libcuvs", "nx-cugraph", "cudf-polars", "pylibcudf", "libkvikio", "kvikio"})
_CONDA_CUDA = re.compile(r"(?:^|_)cuda_?(\d+)(?:[._]|$)")
_PIP_CU = re.compile(r"^(.+)-cu(\d+)$")
_RELEASE = re.compile(r"^(\d+)\.(\d+)")

OLLAMA_BINARIES = ("/usr/local/bin/ollama", "/usr/bin/ollama")
OLLAMA_LIBDIRS = ("/usr/local/lib/ollama", "/usr/lib/ollama")
_OLLAMA_VERSION = re.compile(r"version is (\d+\.\d+\.\d+(?:-rc\d+)?)")


def _release(version: str) -> Optional[str]:
    m = _RELEASE.match(version)
    return "%d.%02d" % (int(m.group(1)), int(m.group(2))) if m else None


def find_rapids(host: Host) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for prefix, _how in conda_prefixes(host):
        meta = posixpath.join(prefix, "conda-meta")
        for name in host.list_dir(meta).names():
            m = CONDA_META_FILE.match(name)
            if not m or m.group(1) not in RAPIDS_PACKAGES:
                continue
            cuda = _CONDA_CUDA.search(m.group(3))
            release = _release(m.group(2))
            if release:
                out.append({"package": m.group(1), "version": m.group(2), "release": release,
                            "cuda_major": cuda.group(1) if cuda else None, "where": posixpath.join(meta, name)})
    for dist in host.distributions():
        m = _PIP_CU.match(dist.key)
        release = _release(dist.version)
        if m and m.group(1) in RAPIDS_PACKAGES and release:
            out.append({"package": dist.name, "version": dist.version, "release": release,
                        "cuda_major": m.group(2), "where": dist.location})
    return out


def find_ollama(host: Host) -> Fact:
    label = "Ollama"
    found = host.which("ollama")
    path = found if found else next((p for p in OLLAMA_BINARIES if host.exists(p)), None)
    if path is None:
        return ok("apps.ollama", None, "dir:" + ",".join(OLLAMA_BINARIES), label)
    libdir = next((d for d in OLLAMA_LIBDIRS if host.is_dir(d)), None)
    runners = sorted(n for n in host.list_dir(libdir).names() if n.startswith("cuda_")) if libdir else []
    argv = [path, "--version"]
    res = host.run(argv, timeout=10)
    m = _OLLAMA_VERSION.search(res.stdout + "\n" + res.stderr)
    value = {"path": path, "version": m.group(1) if m else None, "libdir": libdir, "runners": runners}
    if m is None and not res.ok:
        return unknown("apps.ollama", "%s --version: %s" % (path, res.describe_failure()),
                       "command:" + " ".join(argv), label)
    return ok("apps.ollama", value, "command:" + " ".join(argv), label)


@register("apps", "Applications with their own driver floors", order=97, produces=("apps.*",))
def probe_apps(ctx: ProbeContext) -> Iterable[Fact]:
    return [ok("apps.rapids", find_rapids(ctx.host), "derived", "RAPIDS packages"), find_ollama(ctx.host)]

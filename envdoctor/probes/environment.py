"""Environment variables that decide which GPUs CUDA shows a program.

Fact ``env.cuda_visible_devices``: the raw value of ``CUDA_VISIBLE_DEVICES`` when it is set (an empty string
included: that hides every GPU), absent otherwise; with it ``env.cuda_device_order`` (``CUDA_DEVICE_ORDER``, or
None when unset: CUDA then numbers the GPUs fastest first, not in nvidia-smi's PCI order).  The checks
compare them with the GPUs NVML sees (NVML ignores the variables; CUDA applies them).

Fact ``env.torch_cuda_arch_list``: the raw value of ``TORCH_CUDA_ARCH_LIST`` when it is set: the GPU
architectures PyTorch CUDA extensions (and PyTorch itself) built in this environment are compiled for.

Fact ``env.numba_cuda_driver``: the library Numba is told to load as the CUDA driver (``NUMBA_CUDA_DRIVER``, else
the older ``NUMBAPRO_CUDA_DRIVER``), when one is set and Numba is installed: the variable, its value, whether it
names a file, the file's name once links are followed, its SONAME when readable, and Numba's version.

Fact ``env.nccl``: the NCCL variables of the catalog (``matrix/data/nccl_env.json``) as NCCL sees them (the
environment, then ``$NCCL_CONF_FILE`` or ``~/.nccl.conf``, then ``/etc/nccl.conf``; each with where it was set),
and the XML files the topology and graph variables name (and NCCL's default topology file): whether they are
there and the PCI addresses of the GPUs a topology file describes.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from .. import lazyre
from ..facts import Fact, ok
from ..host.base import Host
from . import ProbeContext, register

#: ``<pci busid="0000:0c:00.0" ...>`` opening tags and ``<gpu`` elements of an NCCL topology XML.
_PCI_TAG = lazyre.compile(r"<pci\b[^>]*\bbusid=\"([0-9A-Fa-f:.]+)\"")
_GPU_TAG = lazyre.compile(r"<gpu\b")
#: The most of an XML topology or graph file read.
_XML_LIMIT = 4 * 1024 * 1024


@register("environment", "CUDA environment variables", order=15,
          produces=("env.*",))
def probe_environment(ctx: ProbeContext) -> Iterable[Fact]:
    env = ctx.host.environ()
    facts: List[Fact] = []
    if "CUDA_VISIBLE_DEVICES" in env:
        facts.append(ok("env.cuda_visible_devices", env["CUDA_VISIBLE_DEVICES"], "env:CUDA_VISIBLE_DEVICES",
                        "CUDA_VISIBLE_DEVICES"))
        facts.append(ok("env.cuda_device_order", env.get("CUDA_DEVICE_ORDER") or None, "env:CUDA_DEVICE_ORDER",
                        "CUDA_DEVICE_ORDER"))
    if "TORCH_CUDA_ARCH_LIST" in env:
        facts.append(ok("env.torch_cuda_arch_list", env["TORCH_CUDA_ARCH_LIST"], "env:TORCH_CUDA_ARCH_LIST",
                        "TORCH_CUDA_ARCH_LIST"))
    ldp = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d.startswith("/")]
    if ldp:
        # the directories as the loader reaches them: /usr/local/cuda/compat is /usr/local/cuda-12.9/compat
        facts.append(ok("env.ld_library_path_resolved", [{"entry": d, "resolved": ctx.host.resolve(d)} for d in ldp],
                        "env:LD_LIBRARY_PATH", "LD_LIBRARY_PATH, links resolved"))
    numba = numba_cuda_driver(ctx.host, env)
    if numba is not None:
        facts.append(numba)
    facts.append(nccl_variables(ctx.host))
    return facts


#: The variables Numba reads for the path of the CUDA driver library, in the order it reads them: Numba's
#: ``find_driver`` (numba/cuda/cudadrv/driver.py) takes ``get_numba_envvar('CUDA_DRIVER')``, NUMBA_ first and
#: the NumbaPro-era NUMBAPRO_ prefix second (numba/cuda/envvars.py; from Numba 0.49 a NUMBAPRO_ variable is
#: only warned about and ignored).
NUMBA_DRIVER_VARIABLES = ("NUMBA_CUDA_DRIVER", "NUMBAPRO_CUDA_DRIVER")


def numba_cuda_driver(host: Host, env: Dict[str, str]) -> Optional[Fact]:
    """``env.numba_cuda_driver`` (see the module's description), or None when no such variable is set or Numba
    is not installed (the variable then changes nothing)."""
    setting = next(((name, env[name]) for name in NUMBA_DRIVER_VARIABLES if env.get(name)), None)
    if setting is None:
        return None
    numba = next((d for d in host.distributions() if d.key in ("numba", "numba-cuda")), None)
    if numba is None:
        return None
    name, value = setting
    value_info: Dict[str, Any] = {"variable": name, "value": value, "numba": numba.version,
                                  "package": numba.key}
    if value == "0" or not value.startswith("/"):
        value_info.update(is_file=None, file_name=None, soname=None)
    else:
        real = host.resolve(value)
        is_file = host.exists(real) and not host.is_dir(real)
        soname = None
        if is_file:
            elf = host.elf(real)
            soname = elf.soname if not elf.error else None
        value_info.update(is_file=is_file, file_name=posixpath.basename(real), soname=soname,
                          stub=posixpath.basename(posixpath.dirname(real)) == "stubs")
    return ok("env.numba_cuda_driver", value_info, "env:" + name, "Library Numba loads as the CUDA driver")


def topology_gpus(text: str) -> List[str]:
    """The PCI addresses of the GPUs an NCCL topology XML describes: each ``<gpu>``'s enclosing ``<pci busid>``
    (the nearest opening pci tag before it), lower-case."""
    out: List[str] = []
    pcis = [(m.start(), m.group(1).lower()) for m in _PCI_TAG.finditer(text)]
    for g in _GPU_TAG.finditer(text):
        before = [bus for pos, bus in pcis if pos < g.start()]
        if before and before[-1] not in out:
            out.append(before[-1])
    return out


def _xml_file(host: Host, path: str, topology: bool) -> Dict[str, Any]:
    text = host.read_text(path, limit=_XML_LIMIT)
    if text is None:
        return {"path": path, "exists": host.exists(path), "readable": False}
    info: Dict[str, Any] = {"path": path, "exists": True, "readable": True}
    if topology:
        info["gpu_bus_ids"] = topology_gpus(text)
    return info


def nccl_variables(host: Host) -> Fact:
    """``env.nccl`` (see the module docstring): the catalogued variables NCCL would see (``nccl_env.json``'s, and
    the workaround variables of NCCL's known issues, ``known_issues.json``), as NCCL's initEnv reads them, and
    the XML files the override variables name."""
    from ..matrix import known_issues, nccl_env

    wanted = nccl_env.names() + [n for n in known_issues.workaround_variables() if n not in nccl_env.names()]
    env = host.environ()
    found: Dict[str, Dict[str, str]] = {}
    for name in wanted:
        if env.get(name) is not None:
            found[name] = {"value": env[name], "from": "environment"}
    conf = env.get("NCCL_CONF_FILE")
    home = env.get("HOME")
    files = [conf] if conf else ([posixpath.join(home, ".nccl.conf")] if home and home.startswith("/") else [])
    read: List[str] = []
    for path in files + ["/etc/nccl.conf"]:
        text = host.read_text(path, limit=64 * 1024)
        if text is None:
            continue
        read.append(path)
        for name, value in nccl_env.read_conf(text).items():
            if name in wanted and name not in found:
                found[name] = {"value": value, "from": path}
    xml: List[Dict[str, Any]] = []
    for name, setting in found.items():
        r = nccl_env.row(name) or {}
        if r.get("class") in ("topology_override", "graph_override") and setting["value"].startswith("/"):
            entry = _xml_file(host, setting["value"], r.get("class") == "topology_override")
            entry["variable"] = name
            xml.append(entry)
    default: Optional[str] = (nccl_env.row("NCCL_TOPO_FILE") or {}).get("default_path")
    if default and "NCCL_TOPO_FILE" not in found and host.exists(default):
        entry = _xml_file(host, default, True)
        entry["variable"] = None  # NCCL's own default location
        xml.append(entry)
    settings = {"variables": found, "conf_files": read, "xml_files": xml}
    return ok("env.nccl", settings, "env:NCCL_*," + ",".join(["$NCCL_CONF_FILE|~/.nccl.conf", "/etc/nccl.conf"]),
              "NCCL settings")

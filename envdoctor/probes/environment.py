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

Fact ``env.numba_cuda_paths``: where Numba's built-in CUDA target (the ``numba`` package without NVIDIA's
``numba-cuda``) finds libNVVM and libdevice, walked the way the installed release walks them (its row of
``matrix/data/numba_cuda_paths.json``): for each, every place it considers (``place``, ``defined``, ``where``), the
one it takes (``by``, ``where``) and the file it finds there (``found``, None when none); and ``elsewhere``, the CUDA
toolkits on the machine that hold a libNVVM (``root``, ``nvvm``, ``libdevice``), which Numba may not reach.

Fact ``env.nccl``: the NCCL variables of the catalog (``matrix/data/nccl_env.json``) as NCCL sees them (the
environment, then ``$NCCL_CONF_FILE`` or ``~/.nccl.conf``, then ``/etc/nccl.conf``; each with where it was set),
and the XML files the topology and graph variables name (and NCCL's default topology file): whether they are
there and the PCI addresses of the GPUs a topology file describes.
"""

from __future__ import annotations

import posixpath
import re
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
    if "NVIDIA_DRIVER_CAPABILITIES" in env:
        # in a container the NVIDIA Container Toolkit started: which driver libraries it mounted (compute, utility,
        # graphics, video, display, ngx, all)
        facts.append(ok("env.nvidia_driver_capabilities", env["NVIDIA_DRIVER_CAPABILITIES"],
                        "env:NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_DRIVER_CAPABILITIES"))
    if "TORCH_CUDA_ARCH_LIST" in env:
        facts.append(ok("env.torch_cuda_arch_list", env["TORCH_CUDA_ARCH_LIST"], "env:TORCH_CUDA_ARCH_LIST",
                        "TORCH_CUDA_ARCH_LIST"))
    if env.get("JAX_SKIP_CUDA_CONSTRAINTS_CHECK"):
        # set (to anything non-empty): jax starts its CUDA backend without comparing the libraries it loads
        facts.append(ok("env.jax_skip_cuda_constraints_check", env["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"],
                        "env:JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "JAX_SKIP_CUDA_CONSTRAINTS_CHECK"))
    ldp = [d for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d.startswith("/")]
    if ldp:
        # the directories as the loader reaches them: /usr/local/cuda/compat is /usr/local/cuda-12.9/compat
        facts.append(ok("env.ld_library_path_resolved", [{"entry": d, "resolved": ctx.host.resolve(d)} for d in ldp],
                        "env:LD_LIBRARY_PATH", "LD_LIBRARY_PATH, links resolved"))
    numba = numba_cuda_driver(ctx.host, env)
    if numba is not None:
        facts.append(numba)
    paths = numba_cuda_paths(ctx.host, env)
    if paths is not None:
        facts.append(paths)
    facts.append(nccl_variables(ctx.host))
    cache = compile_cache(ctx.host, env)
    if cache is not None:
        facts.append(cache)
    return facts


#: Where torch.compile's Inductor keeps what it compiles, and loads it from (torch 2.0.0's
#: torch/_inductor/codecache.py, read from the torch-2.0.0 wheel on PyPI: ``cache_dir()`` is
#: ``os.environ.get("TORCHINDUCTOR_CACHE_DIR", f"{tempfile.gettempdir()}/torchinductor_{getpass.getuser()}")``;
#: its C++ kernels are shared objects built there and loaded with ``cdll.LoadLibrary``, whose "failed to map segment
#: from shared object" it explains as the temporary folder mounted noexec). Triton's kernels go to
#: ``TRITON_CACHE_DIR``, which Inductor sets to ``<cache_dir>/triton/<device>`` when it is unset
#: (torch/_inductor/triton_ops/autotune.py of the same wheel). Python's ``tempfile.gettempdir()`` takes TMPDIR, TEMP,
#: TMP, then /tmp; ``getpass.getuser()`` LOGNAME, USER, LNAME, USERNAME.
TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")
USER_VARIABLES = ("LOGNAME", "USER", "LNAME", "USERNAME")
def compile_cache(host: Host, env: Dict[str, str]) -> Optional[Fact]:
    """``env.compile_cache``: where torch.compile's Inductor and Triton caches go (``inductor``, ``triton``: each
    ``{"path", "from", "mount"}``, the mount ``{"point", "fstype", "noexec"}`` or None when not found) and the
    temporary folder (``temp_dir``, ``temp_from``); None when no mount table can be read."""
    from .mounts import mount_of, mount_table

    table = mount_table(host)
    if table is None:
        return None
    where, mounts = table
    temp_from = next((v for v in TEMP_VARIABLES if env.get(v, "").startswith("/")), None)
    temp = posixpath.normpath(env[temp_from]) if temp_from else "/tmp"
    user = next((env[v] for v in USER_VARIABLES if env.get(v)), None) or "<user>"

    def place(path: str, origin: str) -> Dict[str, Any]:
        m = mount_of(mounts, posixpath.normpath(path))
        return {"path": path, "from": origin, "mount": None if m is None else {
            "point": m["point"], "fstype": m["fstype"], "noexec": "noexec" in m["options"]}}

    ind_var = env.get("TORCHINDUCTOR_CACHE_DIR", "")
    inductor = place(ind_var, "TORCHINDUCTOR_CACHE_DIR") if ind_var.startswith("/") else place(
        posixpath.join(temp, "torchinductor_" + user), "default")
    tri_var = env.get("TRITON_CACHE_DIR", "")
    triton = place(tri_var, "TRITON_CACHE_DIR") if tri_var.startswith("/") else place(
        posixpath.join(inductor["path"], "triton"), "default")
    value = {"temp_dir": temp, "temp_from": temp_from, "inductor": inductor, "triton": triton}
    return ok("env.compile_cache", value, "file:%s,env:TORCHINDUCTOR_CACHE_DIR,TRITON_CACHE_DIR,TMPDIR" % where,
              "Where torch.compile's caches go")


#: The variables Numba reads for the path of the CUDA driver library, in the order it reads them: Numba's
#: ``find_driver`` (numba/cuda/cudadrv/driver.py) takes ``get_numba_envvar('CUDA_DRIVER')``, NUMBA_ first and
#: the NumbaPro-era NUMBAPRO_ prefix second (numba/cuda/envvars.py; from Numba 0.46 a NUMBAPRO_ variable is
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


#: How a place of Numba's lookup is named to a user.
_PLACE_NAMES = {"prefix_lib": "the interpreter's sys.prefix/lib", "conda": "the conda environment's lib (cudatoolkit)",
                "conda_nvidia": "the conda environment's nvvm (NVIDIA's cuda-nvcc package)",
                "system": "/usr/local/cuda"}


def _numba_file(host: Host, directory: str, pattern: str) -> Optional[str]:
    """The file Numba's ``find_file`` picks in ``directory``: the greatest path whose name matches and that is a
    file once links are followed; None when none (or the directory cannot be listed)."""
    if not directory.startswith("/"):
        return None  # relative to a working directory unknown here
    regex = re.compile(pattern)
    directory = posixpath.normpath(directory)  # "/usr/local/cuda/nvvm/libdevice/" as users write it
    found = [posixpath.join(directory, n) for n in host.list_dir(directory).names() if regex.match(n)]
    found = [f for f in found if host.exists(host.resolve(f)) and not host.is_dir(host.resolve(f))]
    return max(found) if found else None


def _numba_place(host: Host, env: Dict[str, str], prefix: str, place: Dict[str, Any], part: str,
                 nvvm_pattern: str) -> Dict[str, Any]:
    """One place of Numba's lookup: whether it is defined (Numba then takes it, found or not) and where it is."""
    kind = place.get("kind")
    out: Dict[str, Any] = {"place": place.get("variable") or _PLACE_NAMES.get(str(kind)) or place.get("path") or kind,
                           "defined": False, "where": None}
    if kind in ("env_file", "env_dir"):
        value = env.get(str(place.get("variable")))
        out.update(defined=bool(value), where=value or None)
    elif kind == "prefix_lib":
        out.update(defined=bool(prefix), where=posixpath.join(prefix, "lib") if prefix else None)
    elif kind in ("conda", "conda_nvidia") and prefix and host.is_dir(posixpath.join(prefix, "conda-meta")):
        nvvm_dir = posixpath.join(prefix, "lib") if kind == "conda" else posixpath.join(prefix, "nvvm", "lib64")
        if _numba_file(host, nvvm_dir, nvvm_pattern):
            where = nvvm_dir if part == "nvvm" or kind == "conda" else posixpath.join(prefix, "nvvm", "libdevice")
            out.update(defined=True, where=where)
    elif kind == "cuda_home":
        name = "CUDA_HOME" if "CUDA_HOME" in env or not place.get("cuda_path") else "CUDA_PATH"
        out["place"] = name
        if name in env:
            out.update(defined=True, where=posixpath.join(env[name], str(place.get("subdir"))))
    elif kind == "system" and host.exists("/usr/local/cuda"):
        out.update(defined=True, where=posixpath.join("/usr/local/cuda", str(place.get("subdir"))))
    elif kind == "fixed" and host.exists(str(place.get("path"))):
        out.update(defined=True, where=str(place.get("path")))
    return out


def _numba_toolkits(host: Host, env: Dict[str, str], py: Any, nvvm_pattern: str) -> List[Dict[str, Any]]:
    """CUDA toolkits on the machine that hold a libNVVM: /usr/local/cuda*, /opt/cuda, CUDA_HOME and CUDA_PATH,
    and the nvidia-cuda-nvcc wheels' nvidia/cuda_nvcc in the interpreter's site-packages."""
    roots = ["/usr/local/cuda"] + sorted(posixpath.join("/usr/local", n) for n in host.list_dir("/usr/local").names()
                                         if n.startswith("cuda-")) + ["/opt/cuda"]
    roots += [env[n] for n in ("CUDA_HOME", "CUDA_PATH") if env.get(n, "").startswith("/")]
    roots += [posixpath.join(d, "nvidia", "cuda_nvcc") for d in getattr(py, "sys_path", ()) or ()
              if str(d).endswith(("site-packages", "dist-packages"))]
    out: List[Dict[str, Any]] = []
    seen = set()
    for root in roots:
        real = host.resolve(root)
        if real in seen:
            continue
        seen.add(real)
        nvvm = _numba_file(host, posixpath.join(root, "nvvm", "lib64"), nvvm_pattern)
        if nvvm:
            out.append({"root": root, "nvvm": nvvm, "libdevice": posixpath.join(root, "nvvm", "libdevice")})
    return out


def numba_cuda_paths(host: Host, env: Dict[str, str]) -> Optional[Fact]:
    """``env.numba_cuda_paths`` (see the module's description), or None when Numba's built-in CUDA target is not
    what is installed (no numba, or NVIDIA's numba-cuda, whose lookup differs) or its release has no row."""
    from ..matrix import numba_paths

    dists = {d.key: d for d in host.distributions()}
    numba = dists.get("numba")
    if numba is None or "numba-cuda" in dists:
        return None
    row = numba_paths.row_for(numba.version)
    if row is None:
        return None
    py = host.python()
    prefix = str(py.prefix or "")
    nvvm_pattern = str(row["nvvm_pattern"])
    value: Dict[str, Any] = {"numba": numba.version, "package": numba.key, "prefix": prefix,
                             "source": dict(row["source"])}
    for part in ("nvvm", "libdevice"):
        places = [_numba_place(host, env, prefix, p, part, nvvm_pattern) for p in row[part]]
        taken = next((p for p in places if p["defined"]), None)
        found = None
        if taken is not None and taken["where"]:
            if row[part][places.index(taken)].get("kind") == "env_file":
                real = host.resolve(taken["where"]) if taken["where"].startswith("/") else ""
                found = taken["where"] if real and host.exists(real) and not host.is_dir(real) else None
            else:
                found = _numba_file(host, taken["where"], str(row[part + "_pattern"]))
        value[part] = {"places": places, "by": taken["place"] if taken else None,
                       "where": taken["where"] if taken else None, "found": found}
    value["elsewhere"] = _numba_toolkits(host, env, py, nvvm_pattern)
    return ok("env.numba_cuda_paths", value, "derived", "Where Numba finds libNVVM and libdevice")


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

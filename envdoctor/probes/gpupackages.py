"""Python packages, not frameworks, whose own compiled GPU code has limits: what it runs on, what it was built for.

Fact ``python.gpu_packages`` = ``[{package, version, location, metadata}]``: each installed distribution that
``matrix/data/package_arch.json`` has rows for (bitsandbytes, flash-attn), and DeepSpeed, with its version as its
metadata directory names it (``flash_attn-2.3.3.dist-info``), in the order the interpreter finds them. Absent when
none is installed. The check ``compat.package-arch`` judges them against the GPUs; the products
``known_issues.json`` has rows for that install as a distribution of their own (NVIDIA DALI's ``nvidia-dali-cuda120``)
are listed too, with ``links``: the CUDA libraries their own shared objects need, as the loader resolves them
(``{soname: {path, resolved, version, via, needed_by}}``); the check ``dali-known-issues`` judges the release and
those libraries.

DeepSpeed's entry carries ``build``: what its own build record says. DeepSpeed's setup.py writes
``deepspeed/git_version_info_installed.py`` into every build, with ``installed_ops`` (the C++/CUDA ops compiled into
the wheel; the others are built just in time on first use) and ``torch_info`` (the torch major.minor and CUDA
major.minor they were compiled with); at load time an op compiled into the wheel refuses any other torch or CUDA
(op_builder/builder.py: "PyTorch version mismatch! DeepSpeed ops were compiled and installed with a different version
than what is being used at runtime."). ``build`` = ``{"ops": [names], "torch": "2.3", "cuda": "12.1"}``, or
``build_unknown`` with the reason. The check ``prebuilt-ops`` judges it.

An entry of a package ``package_arch.json`` has rows for carries ``local_build: true`` when pip built it from a local
directory (PEP 610 ``direct_url.json`` with ``dir_info``): its GPU code was compiled on this machine, so a floor of the
project's published builds need not hold for it.

A package whose Python code opens a library by soname at run time (``matrix/data/runtime_loads.json`` rows keyed by
``package``: vLLM's NCCL wrapper opens ``libnccl.so.2`` with ctypes) carries ``opens``: per soname, the variable that
names the file instead when it is set (``set_by``, ``value``), else which file the loader's search from the
interpreter finds (``path``, ``via``, ``certain``: LD_LIBRARY_PATH, the loader cache, the default directories, and
in a conda environment its ``lib``, where conda gives every shared object of the environment a run path), and the
copies outside that search (``elsewhere``). Whether a library the framework loaded already has that soname is the
check's to say (``linkage.<framework>``). The check ``package-loads`` judges it.

Fact ``python.jit_toolkits`` = ``[{package, version, label, location, own_toolkit, nvcc, ccbin}]``: each installed
package that compiles its CUDA code at run time with a toolkit's nvcc (``matrix/data/jit_toolkits.json``: Jittor),
with what it would run: ``own_toolkit``, the directory of the toolkit of its own it prefers when that is there (else
None); ``nvcc`` = ``{path, resolved, how}``, the nvcc its search finds (the variable that names one, the first on
PATH, its fixed paths; None when none is found); ``ccbin`` = ``{path, resolved, how, version, banner}``, the host
compiler it gives nvcc as -ccbin (the variable that names one, else its default looked up on PATH; ``version``
absent when that compiler could not be asked). Absent when no such package is installed. The checks
``compat.jit-toolkit`` (the toolkit's release against the package's floor) and ``compat.host-compiler-and-os``
(that compiler against nvcc's GCC limit) judge it.

Fact ``python.nvml_bindings`` = ``[{package, version, location, file, calls}]``: NVIDIA's Python binding of NVML
(``nvidia-ml-py``, one module ``pynvml.py``) as the interpreter finds it first, with ``calls``: each unversioned API
function whose body only returns a versioned one (``def nvmlDeviceGetComputeRunningProcesses(handle): return
nvmlDeviceGetComputeRunningProcesses_v3(handle)``, nvidia-ml-py 12.535.x), unversioned name -> the NVML function it
asks the driver's libnvidia-ml for (``unread`` with the reason instead when the module cannot be read). Absent when
no binding is installed. The check ``nvml-binding`` judges it against the driver's release."""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

from .. import lazyre
from ..facts import Fact, ok
from ..host.base import FILE_SUFFIX_FILTERS
from ..matrix import known_issues, loads, packages
from . import ProbeContext, loader, register
from .compilers import parse_gcc_version
from .frameworks import read_literals
from .record import read_record

#: Packages whose build record says which framework release their compiled ops were built for: the record's path,
#: relative to the site directory.
BUILD_RECORDS = {"deepspeed": "deepspeed/git_version_info_installed.py"}


def build_record(ctx: ProbeContext, key: str, location: str) -> Dict[str, Any]:
    """``{"build": {...}}`` from the package's build record, or ``{"build_unknown": why}``."""
    path = posixpath.join(location, BUILD_RECORDS[key])
    lits, why = read_literals(ctx.host, path)
    if why is not None:
        return {"build_unknown": why}
    ops, info = lits.get("installed_ops"), lits.get("torch_info")
    if not isinstance(ops, dict) or not isinstance(info, dict):
        return {"build_unknown": "%s has no installed_ops and torch_info" % path}
    return {"build": {"ops": sorted(str(k) for k, v in ops.items() if v), "torch": str(info.get("version") or ""),
                      "cuda": str(info.get("cuda_version") or ""), "record": path}}


#: The most of a distribution's shared objects whose dynamic section is read.
MAX_LINKED = 12


def cuda_links(ctx: ProbeContext, metadata_dir: str, location: str) -> Optional[Dict[str, Any]]:
    """The CUDA libraries the distribution's own shared objects (those its ``RECORD`` lists) need, as the loader
    resolves each from the object that needs it (its RPATH/RUNPATH, ``LD_LIBRARY_PATH``, the cache):
    ``{soname: {"path", "resolved", "version", "via", "needed_by"}}``; a library the package carries itself
    (resolved inside its own directory) is left out. None when the RECORD cannot be read."""
    host = ctx.host
    record = read_record(host, metadata_dir)
    if not record.ok:
        return None
    objects = [posixpath.join(location, entry.path) for entry in record.shared_objects]
    out: Dict[str, Any] = {}
    config = None
    for path in objects[:MAX_LINKED]:
        elf = host.elf(path)
        if elf.error:
            continue
        wanted = [n for n in elf.needed if loader.CUDA_FAMILY.match(n) and n not in out]
        if not wanted:
            continue
        config = config or loader.loader_config(host)
        rpath, runpath = loader.own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(path))
        for name in wanted:
            res = loader.search(host, config, name, rpath=rpath, runpath=runpath)
            if res["path"] and posixpath.dirname(str(res["resolved"] or res["path"])).startswith(
                    posixpath.dirname(path)):
                continue  # its own copy
            out[name] = {"path": res["path"], "resolved": res["resolved"], "version": res["version"],
                         "via": res["via"], "needed_by": path}
    return out


def package_opens(ctx: ProbeContext, key: str, version: str) -> List[Dict[str, Any]]:
    """What the package opens by soname from the interpreter's process, and where the loader would find it."""
    host = ctx.host
    out: List[Dict[str, Any]] = []
    rows = loads.package_loads(key, version)
    config = loader.loader_config(host) if rows else None
    for row in rows:
        env = str(row.get("unless_env") or "")
        for so in row["loads"]:
            value = host.getenv(env) if env else None
            if value:
                out.append({"soname": so, "set_by": env, "value": value, "with": row.get("with")})
                continue
            py = host.python()
            own = [posixpath.join(py.prefix, "lib")] if py.prefix and host.is_dir(
                posixpath.join(py.prefix, "conda-meta")) else []
            assert config is not None
            out.append(dict(loader.opened_by_name(host, config, so, runpath=own), **{
                "with": row.get("with"), "unless_env": env or None}))
    return out


def _local_build(ctx: ProbeContext, metadata_dir: str) -> bool:
    """Whether pip built the distribution from a local directory (PEP 610 ``direct_url.json`` with ``dir_info``:
    ``pip install .`` or ``pip install -e .`` of a checkout), so its GPU code was compiled on this machine for the
    architectures its build chose, not taken from the project's published builds."""
    res = ctx.host.read_file(posixpath.join(metadata_dir, "direct_url.json"), limit=64 * 1024)
    if res.text is None:
        return False
    try:
        doc = json.loads(res.text)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("dir_info"), dict)


def imported_distributions(host: Any, wanted: Callable[[str], bool]) -> Iterator[Any]:
    """The installed distributions whose key ``wanted`` accepts, each key once: the first on sys.path, the one an
    import finds."""
    seen = set()
    for dist in host.distributions():
        if dist.key not in seen and wanted(dist.key):
            seen.add(dist.key)
            yield dist


@register("gpupackages", "Packages with GPU code of their own", order=93, produces=("python.gpu_packages",))
def probe_gpu_packages(ctx: ProbeContext) -> Iterable[Fact]:
    arch = set(packages.arch_packages())
    wanted = arch | set(BUILD_RECORDS) | set(loads.package_names())
    found: List[Dict[str, Any]] = []
    for dist in imported_distributions(ctx.host, lambda key: key in wanted
                                       or bool(known_issues.product_of_distribution(key))):
        entry: Dict[str, Any] = {"package": dist.key, "version": dist.version, "location": dist.location,
                                 "metadata": dist.metadata_dir}
        if dist.key in BUILD_RECORDS:
            entry.update(build_record(ctx, dist.key, dist.location))
        if dist.key in arch and _local_build(ctx, dist.metadata_dir):
            entry["local_build"] = True
        if known_issues.product_of_distribution(dist.key):
            links = cuda_links(ctx, dist.metadata_dir, dist.location)
            if links is not None:
                entry["links"] = links
        opens = package_opens(ctx, dist.key, dist.version)
        if opens:
            entry["opens"] = opens
        found.append(entry)
    if not found:
        return []
    return [ok("python.gpu_packages", found, "dir:" + found[0]["metadata"], "Packages with GPU code of their own")]


def _jit_nvcc(ctx: ProbeContext, row: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The nvcc a run-time compiling package's search finds: the variable that names one, else the places it looks
    in order (``PATH``: the first nvcc on PATH)."""
    host = ctx.host
    var = str(row["nvcc_env"])
    named = host.getenv(var)
    if named:
        path = named if named.startswith("/") else host.which(named)
        return {"path": path or named, "resolved": host.resolve(path) if path else None, "how": "$" + var}
    for place in row["nvcc_search"]:
        path = host.which("nvcc") if place == "PATH" else (place if host.exists(place) else None)
        if path:
            return {"path": path, "resolved": host.resolve(path), "how": "PATH" if place == "PATH" else place}
    return None


def _jit_ccbin(ctx: ProbeContext, row: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The host compiler a run-time compiling package gives nvcc as -ccbin, with its version when it answers."""
    host = ctx.host
    var = str(row["cc_env"])
    named = host.getenv(var)
    prog, how = (named, "$" + var) if named else (str(row["cc_default"]), "PATH")
    path = prog if prog.startswith("/") else host.which(prog)
    if not path:
        return None
    out: Dict[str, Any] = {"path": path, "resolved": host.resolve(path), "how": how}
    if "clang" in posixpath.basename(out["resolved"] or path):
        return out  # nvcc's GCC limit says nothing of a clang
    r = host.run([path, "--version"], timeout=10)
    version = parse_gcc_version(r.stdout) if r.ok else None
    if version:
        out["version"] = version
        out["banner"] = r.stdout.strip().splitlines()[0][:200]
    return out


@register("jittoolkits", "Packages compiling CUDA at run time", order=93, produces=("python.jit_toolkits",))
def probe_jit_toolkits(ctx: ProbeContext) -> Iterable[Fact]:
    wanted = set(packages.jit_packages())
    found: List[Dict[str, Any]] = []
    for dist in imported_distributions(ctx.host, wanted.__contains__):
        row = packages.jit_row(dist.key, dist.version)
        if row is None:
            continue
        own = None
        if row.get("own_toolkit"):
            home = ctx.host.getenv("HOME") or ""
            place = str(row["own_toolkit"])
            place = posixpath.join(home, place[2:]) if place.startswith("~/") else place
            if (home or not str(row["own_toolkit"]).startswith("~/")) and ctx.host.is_dir(place):
                own = place
        found.append({"package": dist.key, "version": dist.version, "label": row["label"],
                      "location": dist.location, "own_toolkit": own, "nvcc": _jit_nvcc(ctx, row),
                      "ccbin": _jit_ccbin(ctx, row)})
    if not found:
        return []
    return [ok("python.jit_toolkits", found, "dir:" + found[0]["location"], "Packages compiling CUDA at run time")]


#: NVML bindings: distribution -> its module file, relative to the site directory.
NVML_BINDINGS = {"nvidia-ml-py": "pynvml.py"}
#: An unversioned API function that only hands over to a versioned one (pynvml.py's form, ';' and all).
_DELEGATES = lazyre.compile(r"^def (nvml\w+)\(handle\):[ \t]*\r?\n[ \t]+return (nvml\w+_v\d+)\(handle\)[ \t;]*$",
                            re.MULTILINE)


def keep_delegates(text: str) -> str:
    """What a snapshot keeps of an NVML binding's module (a quarter of a megabyte of Python): the functions that only
    hand over to a versioned one, as they are written (what the probe reads); nothing else."""
    return "".join(m.group(0) + "\n" for m in _DELEGATES.finditer(text))


FILE_SUFFIX_FILTERS["/" + NVML_BINDINGS["nvidia-ml-py"]] = keep_delegates


@register("nvmlbindings", "NVML bindings", order=93, produces=("python.nvml_bindings",))
def probe_nvml_bindings(ctx: ProbeContext) -> Iterable[Fact]:
    found: List[Dict[str, Any]] = []
    for dist in imported_distributions(ctx.host, NVML_BINDINGS.__contains__):
        path = posixpath.join(dist.location, NVML_BINDINGS[dist.key])
        text = ctx.host.read_text(path, limit=4 * 1024 * 1024)
        entry: Dict[str, Any] = {"package": dist.key, "version": dist.version, "location": dist.location,
                                 "file": path}
        if text is None:
            entry["unread"] = "%s cannot be read" % path
        else:
            entry["calls"] = {m.group(1): m.group(2) for m in _DELEGATES.finditer(text)}
        found.append(entry)
    if not found:
        return []
    return [ok("python.nvml_bindings", found, "file:" + found[0]["file"], "NVML bindings")]

"""LibTorch, PyTorch's C++ distribution (the ``libtorch-*.zip`` archives of download.pytorch.org), used by C++
programs (CMake's ``find_package(Torch)``) and by Rust's tch/torch-sys: where it is installed, which release and
CUDA variant it is, and whether the programs built against it can load it.

The archives unpack to one folder ``libtorch/`` holding ``lib/`` (``libtorch.so``, ``libtorch_cpu.so``,
``libc10.so``; a CUDA build also ``libtorch_cuda.so`` and ``libc10_cuda.so``, 1.9-1.12 ``libtorch_cuda_cu.so``/
``libtorch_cuda_cpp.so``), ``include/``, ``share/cmake/Torch`` and ``build-version`` (``2.3.0+cu118``; pytorch/
pytorch ``.ci/pytorch/build.sh``/the builder's ``libtorch/build.sh``: ``echo "$PYTORCH_BUILD_VERSION" >
libtorch/build-version``). A CPU build has no ``libtorch_cuda*.so``.

Bounded look, where the loader or the user points: ``LIBTORCH`` (tch's variable), each ``LD_LIBRARY_PATH``
entry and its parent, ``/usr/local/libtorch``, ``/opt/libtorch``, ``~/libtorch``, and the working folder's Cargo
build folders (``target/{debug,release}/build/torch-sys-*/out/libtorch/libtorch``, where torch-sys unpacks the
archive it downloads). Programs: the files of the working folder's ``target/debug``, ``target/release`` and
``build`` (a Cargo or CMake project's output) whose NEEDED names LibTorch's libraries, each resolved with the
loader's rules.

Facts: ``libtorch.installs`` = ``[{root, lib, version, cuda, cuda_build, how, nvrtc_builtins, files}]``,
``libtorch.programs`` = ``[{path, needed, links: [{soname, path, via}]}]``.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import lazyre, versions
from ..facts import Fact, ok
from ..host.base import Host
from . import ProbeContext, register
from .cuda import ld_library_path_dirs
from .loader import own_search_paths, resolve_soname

#: Where LibTorch is commonly unpacked (its own tutorial: "unzip libtorch-*.zip" into a folder of the user's).
STANDARD_ROOTS = ("/usr/local/libtorch", "/opt/libtorch")
#: The most candidate folders, Cargo build folders, program folder entries and lib entries looked at.
MAX_ROOTS = 16
MAX_ENTRIES = 64
MAX_LIB_ENTRIES = 256
VERSION_LIMIT = 256
#: LibTorch's own libraries: a program needing one of them is built against LibTorch.
TORCH_SONAME = lazyre.compile(r"^lib(?:torch|torch_cpu|torch_cuda|torch_cuda_cu|torch_cuda_cpp|torch_global_deps|"
                              r"c10|c10_cuda)\.so$")
CUDA_LIBRARIES = ("libtorch_cuda.so", "libtorch_cuda_cu.so", "libc10_cuda.so")
_VERSION = lazyre.compile(r"^(\d+\.\d+(?:\.\d+)?)(?:[.a-z0-9]*)?(?:\+(cu\d{2,3}|cpu|rocm[0-9.]+))?$")
#: NVRTC's builtins library under the hashed name the archive's dependency copying gives it
#: (``libnvrtc-builtins-07fb3db5.so.11.1``).
_HASHED_BUILTINS = lazyre.compile(r"^libnvrtc-builtins-[0-9a-f]{8}\.so\.(\d+\.\d+)$")


def _candidates(host: Host) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []

    def add(path: str, how: str) -> None:
        path = posixpath.normpath(path)
        if path.startswith("/") and path not in [p for p, _ in out] and len(out) < MAX_ROOTS:
            out.append((path, how))

    env = host.getenv("LIBTORCH") or ""
    if env:
        add(env, "LIBTORCH")
    for d in ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH")):
        if posixpath.basename(d) in ("lib", "lib64"):
            add(posixpath.dirname(d), "LD_LIBRARY_PATH")
        add(d, "LD_LIBRARY_PATH")
    for root in STANDARD_ROOTS:
        add(root, "standard place")
    home = host.getenv("HOME") or ""
    if home.startswith("/"):
        add(posixpath.join(home, "libtorch"), "standard place")
    pwd = host.getenv("PWD") or ""
    if pwd.startswith("/") and host.exists(posixpath.join(pwd, "Cargo.toml")):
        for profile in ("debug", "release"):
            build = posixpath.join(pwd, "target", profile, "build")
            for name in sorted(host.list_dir(build).names())[:MAX_ENTRIES]:
                if name.startswith("torch-sys-"):
                    add(posixpath.join(build, name, "out", "libtorch", "libtorch"), "torch-sys build")
    return out


def _install(host: Host, root: str, how: str) -> Optional[Dict[str, Any]]:
    lib = posixpath.join(root, "lib")
    names = sorted(host.list_dir(lib).names())[:MAX_LIB_ENTRIES]
    if not any(n in names for n in ("libtorch.so", "libtorch_cpu.so")) or "libc10.so" not in names:
        return None
    version = tag = None
    res = host.read_file(posixpath.join(root, "build-version"), limit=VERSION_LIMIT)
    if res.data is not None:
        m = _VERSION.match(res.data.decode("utf-8", "replace").strip())
        if m:
            version, tag = res.data.decode("utf-8", "replace").strip(), m.group(2)
    builtins = []
    for n in names:
        m = _HASHED_BUILTINS.match(n)
        if m:
            # NVRTC opens its builtins library at run time by the plain soname of its release
            # (libnvrtc.so.11.1 -> libnvrtc-builtins.so.11.1), never by the hashed name a bundle gave the copy
            plain = "libnvrtc-builtins.so.%s" % m.group(1)
            r = resolve_soname(host, plain, runpath=[lib])
            builtins.append({"file": n, "soname": plain, "path": r.get("path"), "via": r.get("via"),
                             "certain": r.get("certain", True)})
    return {"root": root, "lib": lib, "version": version, "cuda": versions.cuda_of_tag(tag),
            "cuda_build": any(n in names for n in CUDA_LIBRARIES), "how": how, "nvrtc_builtins": builtins,
            "files": [n for n in names if TORCH_SONAME.match(n)]}


def find_installs(host: Host) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for root, how in _candidates(host):
        found = _install(host, root, how)
        if found is not None and found["root"] not in [o["root"] for o in out]:
            # LD_LIBRARY_PATH naming the top folder instead of its lib folder (a common slip)
            found["top_on_ld_library_path"] = root in ld_library_path_dirs(host.getenv("LD_LIBRARY_PATH"))
            out.append(found)
    return out


def find_programs(host: Host) -> List[Dict[str, Any]]:
    """The working folder's build outputs that need LibTorch's libraries, each NEEDED of them resolved."""
    pwd = host.getenv("PWD") or ""
    if not pwd.startswith("/"):
        return []
    out: List[Dict[str, Any]] = []
    for sub in ("target/release", "target/debug", "build"):
        d = posixpath.join(pwd, sub)
        for name in sorted(host.list_dir(d).names())[:MAX_ENTRIES]:
            path = posixpath.join(d, name)
            if name.startswith(".") or "." in name:
                continue  # a program has no suffix (.d, .rlib, .o, .cmake are build by-products)
            elf = host.elf(path)
            if not elf.ok:
                continue
            needed = [n for n in elf.needed if TORCH_SONAME.match(n)]
            if not needed:
                continue
            rpath, runpath = own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(path))
            links = []
            for soname in needed:
                r = resolve_soname(host, soname, runpath=runpath, rpath=rpath)
                links.append({"soname": soname, "path": r.get("path"), "via": r.get("via"),
                              "certain": r.get("certain", True)})
            out.append({"path": path, "needed": needed, "links": links})
    return out


@register("libtorch", "LibTorch (PyTorch's C++ distribution)", order=97,
          produces=("libtorch.installs", "libtorch.programs"))
def probe_libtorch(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    return [ok("libtorch.installs", find_installs(host), "derived", "LibTorch installs"),
            ok("libtorch.programs", find_programs(host), "derived", "Programs built against LibTorch")]

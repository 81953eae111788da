"""Lua rock trees (Torch7 installs): what is installed in them, what their checkout was building, and which cuDNN
Torch7's cuDNN bindings load.

A tree is a prefix with ``share/lua/5.1`` or ``lib/luarocks/rocks``: the prefix of each PATH directory outside the
system's whose tree is one (``torch-activate`` puts ``~/torch/install/bin`` there), and ``~/torch/install`` (the
prefix torch/distro's ``install.sh`` installs into). Of each, fact ``lua.trees`` =
``[{prefix, installed, checkout, building, cudnn_bindings}]``:

* ``installed``: the rocks in ``lib/luarocks/rocks`` and the modules in ``share/lua/5.1`` and
  ``lib/lua/5.1/lib<name>.so``;
* ``checkout``/``building``: where the prefix is a torch/distro checkout's ``install`` (its ``install.sh`` beside
  it), the packages of its ``pkg``/``extra`` folders whose CMake build was started (a ``build`` folder): a build
  that failed leaves that and nothing installed;
* ``cudnn_bindings``: cudnn.torch's ``share/lua/5.1/cudnn/ffi.lua`` read as the bindings themselves decide (each
  branch R4-R7 loads ``libcudnn.so.<major>`` by name, or the file ``CUDNN_PATH`` names where its code reads that
  variable, then refuses a ``cudnnGetVersion()`` outside its bounds): ``{path, libnames, min, max, cudnn_path,
  loaded: {path, resolved, version, via}}`` (``loaded.path`` None: nothing found by those names).
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Optional

from .. import lazyre
from ..facts import Fact, ok
from ..host.base import Host
from . import ProbeContext, register
from .loader import resolve_soname, version_from_name

#: The most trees read, entries of one folder looked at, and bytes of ffi.lua read (cudnn.torch's is ~70 KB).
MAX_TREES = 8
MAX_ENTRIES = 128
FFI_LIMIT = 512 * 1024
_SYSTEM_BIN = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/sbin", "/usr/games", "/snap/bin"})
_LIBNAME = lazyre.compile(r"""['"](libcudnn\.so(?:\.\d+)*)['"]""")
_MIN = lazyre.compile(r"cudnn\.version\s*<\s*(\d+)")
_MAX = lazyre.compile(r"cudnn\.version\s*>=\s*(\d+)")
_CUDNN_PATH = lazyre.compile(r"""os\.getenv\(\s*['"]CUDNN_PATH['"]\s*\)""")
_MODULE_SO = lazyre.compile(r"^lib([A-Za-z0-9_]+)\.so$")


def _is_tree(host: Host, prefix: str) -> bool:
    return host.is_dir(posixpath.join(prefix, "share", "lua", "5.1")) or host.is_dir(
        posixpath.join(prefix, "lib", "luarocks", "rocks"))


def tree_prefixes(host: Host) -> List[str]:
    out: List[str] = []
    for d in (host.getenv("PATH") or "").split(":"):
        d = posixpath.normpath(d) if d.startswith("/") else ""
        if d and d.endswith("/bin") and d not in _SYSTEM_BIN:
            prefix = posixpath.dirname(d)
            if prefix not in out and _is_tree(host, prefix):
                out.append(prefix)
    home = host.getenv("HOME") or ""
    if home.startswith("/"):
        prefix = posixpath.join(posixpath.normpath(home), "torch", "install")
        if prefix not in out and _is_tree(host, prefix):
            out.append(prefix)
    return out[:MAX_TREES]


def _names(host: Host, d: str) -> List[str]:
    return sorted(host.list_dir(d).names())[:MAX_ENTRIES]


def _installed(host: Host, prefix: str) -> List[str]:
    names = set(_names(host, posixpath.join(prefix, "lib", "luarocks", "rocks")))
    for n in _names(host, posixpath.join(prefix, "share", "lua", "5.1")):
        names.add(n[:-4] if n.endswith(".lua") else n)
    for n in _names(host, posixpath.join(prefix, "lib", "lua", "5.1")):
        m = _MODULE_SO.match(n)
        if m:
            names.add(m.group(1))
    return sorted(n for n in names if n and not n.startswith(".") and n != "manifest")


def _building(host: Host, checkout: str) -> List[Dict[str, str]]:
    out: List[Dict[str, str]] = []
    for top in ("pkg", "extra"):
        for name in _names(host, posixpath.join(checkout, top)):
            src = posixpath.join(checkout, top, name)
            if host.exists(posixpath.join(src, "CMakeLists.txt")) and host.is_dir(posixpath.join(src, "build")):
                out.append({"name": name, "path": src})
    return out


def _int(m: Any) -> Optional[int]:
    return int(m.group(1)) if m else None


def cudnn_bindings(host: Host, prefix: str) -> Optional[Dict[str, Any]]:
    path = posixpath.join(prefix, "share", "lua", "5.1", "cudnn", "ffi.lua")
    text = host.read_file(path, limit=FFI_LIMIT).text
    if not text:
        return None
    libnames = []
    for m in _LIBNAME.finditer(text):
        if m.group(1) not in libnames:
            libnames.append(m.group(1))
    out: Dict[str, Any] = {"path": path, "libnames": libnames[:8], "min": _int(_MIN.search(text)),
                           "max": _int(_MAX.search(text)), "cudnn_path": bool(_CUDNN_PATH.search(text))}
    loaded: Dict[str, Any] = {"path": None, "resolved": None, "version": None, "via": None}
    named = (host.getenv("CUDNN_PATH") or "").strip() if out["cudnn_path"] else ""
    if named:
        if "/" in named:
            if host.exists(named):
                real = host.resolve(named)
                loaded.update(path=named, resolved=real, version=version_from_name(posixpath.basename(real)))
            loaded["via"] = "CUDNN_PATH"
        else:
            res = resolve_soname(host, named)
            loaded.update({k: res.get(k) for k in ("path", "resolved", "version")}, via="CUDNN_PATH")
    else:
        for name in libnames:
            res = resolve_soname(host, name)
            if res.get("path"):
                loaded.update({k: res.get(k) for k in ("path", "resolved", "version", "via")})
                break
    out["loaded"] = loaded
    return out


def find_trees(host: Host) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for prefix in tree_prefixes(host):
        parent = posixpath.dirname(prefix)
        checkout = parent if (posixpath.basename(prefix) == "install"
                              and host.exists(posixpath.join(parent, "install.sh"))) else None
        out.append({"prefix": prefix, "installed": _installed(host, prefix), "checkout": checkout,
                    "building": _building(host, checkout) if checkout else [],
                    "cudnn_bindings": cudnn_bindings(host, prefix)})
    return out


@register("lua", "Lua rock trees (Torch7)", order=98, produces=("lua.trees",))
def probe_lua(ctx: ProbeContext) -> Iterable[Fact]:
    return [ok("lua.trees", find_trees(ctx.host), "derived", "Lua rock trees (Torch7) and what they load")]

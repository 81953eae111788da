"""Host compilers: gcc/g++, versioned gcc-N, clang, RHEL toolsets, and the compiler nvcc is told to use."""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any, Dict, Iterable, List, Optional

from ..facts import Fact, ok, timed_out, unknown
from ..host.base import Host
from . import ProbeContext, register

#: ``gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0`` / ``gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)``.
_GCC_FIRST_LINE = re.compile(r"^\S+ \(.*?\) (\d+\.\d+(?:\.\d+)?)")
_CLANG = re.compile(r"clang version (\d+\.\d+(?:\.\d+)?)")
_VERSIONED = re.compile(r"^(gcc|g\+\+|clang|clang\+\+)-(\d+(?:\.\d+)*)$")
_TOOLSET = re.compile(r"^(gcc-toolset|devtoolset)-(\d+)$")


def parse_gcc_version(text: str) -> Optional[str]:
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = _GCC_FIRST_LINE.match(first)
    if m:
        return m.group(1)
    m = re.match(r"^\S+ (\d+\.\d+\.\d+)\s*$", first)  # a gcc built from source: "gcc 13.2.0"
    return m.group(1) if m else None


def parse_clang_version(text: str) -> Optional[str]:
    m = _CLANG.search(text)
    return m.group(1) if m else None


def _compiler(host: Host, key: str, program: str, label: str, parse: Any) -> Fact:
    path = host.which(program)
    if not path:
        return ok(key, None, "env:PATH", label)
    argv = [path, "--version"]
    src = "command:" + " ".join(argv)
    r = host.run(argv, timeout=10)
    if r.timed_out:
        return timed_out(key, r.describe_failure(), src, label)
    if not r.ok:
        return unknown(key, r.describe_failure(), src, label)
    version = parse(r.stdout)
    if not version:
        first = r.stdout.strip().splitlines()[:1]
        return unknown(key, "unexpected output of {} --version: {!r}".format(path, first[0][:100] if first else ""),
                       src, label)
    return ok(key, {"path": path, "version": version, "banner": r.stdout.strip().splitlines()[0]}, src, label)


def _ccbin_from_flags(flags: str) -> Optional[str]:
    try:
        words = shlex.split(flags)
    except ValueError:
        words = flags.split()
    for i, w in enumerate(words):
        for opt in ("-ccbin", "--compiler-bindir"):
            if w == opt and i + 1 < len(words):
                return words[i + 1]
            if w.startswith(opt + "="):
                return w[len(opt) + 1:]
    return None


@register("compilers", "Host compilers", order=70,
          produces=("compiler.*",))
def probe_compilers(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    gcc = _compiler(host, "compiler.gcc", "gcc", "gcc", parse_gcc_version)
    facts.append(gcc)
    facts.append(_compiler(host, "compiler.gxx", "g++", "g++", parse_gcc_version))
    facts.append(_compiler(host, "compiler.clang", "clang", "clang", parse_clang_version))

    found: List[Dict[str, Any]] = []
    if gcc.known and gcc.value:
        found.append({"path": gcc.value["path"], "version": gcc.value["version"], "kind": "default"})
    for name in host.list_dir("/usr/bin").names():
        m = _VERSIONED.match(name)
        if m and m.group(1) == "gcc":
            found.append({"path": "/usr/bin/" + name, "version": m.group(2), "kind": "versioned",
                          "gxx": host.exists("/usr/bin/g++-" + m.group(2))})
    for name in host.list_dir("/opt/rh").names():
        m = _TOOLSET.match(name)
        if not m:
            continue
        path = posixpath.join("/opt/rh", name, "root/usr/bin/gcc")
        if host.exists(path):
            found.append({"path": path, "version": m.group(2), "kind": m.group(1),
                          "gxx": host.exists(posixpath.join("/opt/rh", name, "root/usr/bin/g++"))})
    facts.append(ok("compiler.gcc_versions", found, "dir:/usr/bin,/opt/rh", "gcc versions installed"))

    env = host.environ()
    override: Optional[Dict[str, Any]] = None
    for var in ("NVCC_CCBIN", "CUDAHOSTCXX"):
        if env.get(var):
            override = {"var": var, "path": env[var]}
            break
    if override is None:
        for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
            ccbin = _ccbin_from_flags(env.get(var, ""))
            if ccbin:
                override = {"var": var, "path": ccbin}
                break
    if override is not None:
        p = override["path"]
        override["exists"] = host.exists(p) if p.startswith("/") else host.which(p) is not None
        facts.append(ok("compiler.nvcc_host", override, "env:" + override["var"], "nvcc host-compiler override"))
    else:
        facts.append(ok("compiler.nvcc_host", None, "env:NVCC_CCBIN,CUDAHOSTCXX,NVCC_PREPEND_FLAGS,NVCC_APPEND_FLAGS",
                        "nvcc host-compiler override"))
    return facts

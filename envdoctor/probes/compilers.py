"""Host compilers: gcc/g++, versioned gcc-N, clang, RHEL toolsets, and the compiler nvcc is told to use."""

from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import lazyre
from ..facts import Fact, ok, timed_out, unknown
from ..host.base import Host
from . import ProbeContext, register

#: ``gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0`` / ``gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)``.
_GCC_FIRST_LINE = lazyre.compile(r"^\S+ \(.*?\) (\d+\.\d+(?:\.\d+)?)")
_CLANG = lazyre.compile(r"clang version (\d+\.\d+(?:\.\d+)?)")
_VERSIONED = lazyre.compile(r"^(gcc|g\+\+|clang|clang\+\+)-(\d+(?:\.\d+)*)$")
_TOOLSET = lazyre.compile(r"^(gcc-toolset|devtoolset)-(\d+)$")


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


#: ``PATH += dir:`` (prepend), ``PATH =+ dir`` (append) and ``PATH = dir`` lines of an nvcc.profile.
_PROFILE_LINE = lazyre.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*(?P<op>\+=|=\+|\?=|=)\s*(?P<value>.*?)\s*$")


def parse_nvcc_profile(text: str, here: str) -> Dict[str, List[str]]:
    """The directories an nvcc.profile puts before (``before``) and after (``after``) the caller's PATH.

    nvcc reads the nvcc.profile beside it (NVIDIA's own: ``PATH += $(CICC_PATH):$(_HERE_):``, ``+=`` prepends;
    Debian's nvidia-cuda-toolkit: ``PATH += /usr/lib/nvidia-cuda-toolkit/bin:``), ``$(_HERE_)`` being nvcc's
    directory; so a ``gcc`` beside nvcc (Arch's /opt/cuda/bin/gcc, Debian's wrapper script) is the one it runs."""
    values: Dict[str, str] = {"_HERE_": here, "_SPACE_": " "}

    def expand(value: str) -> str:
        for _ in range(5):
            new = re.sub(r"\$\((\w+)\)", lambda m: values.get(m.group(1), ""), value)
            if new == value:
                break
            value = new
        return value

    out: Dict[str, List[str]] = {"before": [], "after": []}
    for line in text.splitlines()[:200]:
        if line.lstrip().startswith("#"):
            continue
        m = _PROFILE_LINE.match(line)
        if not m:
            continue
        value = expand(m.group("value"))
        if m.group("name") != "PATH":
            if m.group("op") in ("=", "?=") or m.group("name") not in values:
                values[m.group("name")] = value
            continue
        dirs = [posixpath.normpath(d) for d in value.split(":") if d.startswith("/")]
        if m.group("op") == "+=":
            out["before"] = dirs + out["before"]
        elif m.group("op") == "=+":
            out["after"] += dirs
    return out


#: A shell wrapper around nvcc (Debian's /usr/bin/nvcc: ``export PATH="/usr/lib/nvidia-cuda-toolkit/bin:$PATH"``
#: then ``exec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"``): the nvcc it runs and the directories it puts first.
_WRAPPER_EXEC = lazyre.compile(r"^\s*exec\s+[\"']?(?P<prog>/[^\s\"']+/nvcc)[\"']?(?:\s|$)", re.M)
_WRAPPER_PATH = lazyre.compile(r"^\s*(?:export\s+)?PATH=[\"']?(?P<dirs>[^\"'\s]*?):?\$\{?PATH\}?[\"']?\s*$", re.M)
#: Debian's host-compiler selector (/usr/lib/nvidia-cuda-toolkit/bin/gcc and g++, a shell script): the first
#: ``if/elif g++-N --version >/dev/null 2>&1; then prog=gcc-N`` whose g++-N exists is the gcc nvcc runs.
_SELECTOR = lazyre.compile(r"^\s*(?:el)?if\s+(?P<check>[\w.+-]+)\s+--version\b[^\n]*\n\s*prog=(?P<prog>[\w.+-]+)\s*$",
                           re.M)
#: The most a wrapper or selector script is read (Debian's are 112 bytes and 3.5 KiB).
_SCRIPT_LIMIT = 16 * 1024


def _shell_script(host: Host, path: str) -> Optional[str]:
    """The text of a small shell script (``#!`` first), else None (a binary, a missing file)."""
    text = host.read_text(path, limit=_SCRIPT_LIMIT)
    return text if text is not None and text.startswith("#!") else None


def _unwrap_nvcc(host: Host, path: str) -> Tuple[str, List[str]]:
    """(the nvcc binary a wrapper script runs, the directories the wrapper puts before PATH); a plain nvcc is
    itself with none."""
    real = host.resolve(path)
    text = _shell_script(host, real)
    m = _WRAPPER_EXEC.search(text) if text else None
    if text is None or m is None:
        return real, []
    before: List[str] = []
    for pm in _WRAPPER_PATH.finditer(text):
        before = [posixpath.normpath(d) for d in pm.group("dirs").split(":") if d.startswith("/")] + before
    return host.resolve(m.group("prog")), before


def _selected_gcc(host: Host, gcc: str) -> Optional[str]:
    """The compiler a selector script runs (Debian's gcc wrapper picks the newest supported gcc-N whose g++-N is
    installed), None when ``gcc`` is no such script, "" when it selects none (it then fails)."""
    text = _shell_script(host, gcc)
    if text is None:
        return None
    choices = [(m.group("check"), m.group("prog")) for m in _SELECTOR.finditer(text)]
    if not choices:
        return None
    for check, prog in choices:
        if not prog.startswith("gcc"):
            continue  # the script's clang branches only print an error
        found = host.which(check) and host.which(prog)
        if found:
            return found
    return ""


def _nvcc_gcc(host: Host) -> Optional[Fact]:
    """``compiler.nvcc_gcc``: the gcc nvcc runs when nothing names one (-ccbin, NVCC_CCBIN): the first ``gcc`` on
    the PATH its nvcc.profile makes (nvcc's own directory first), which is not always the shell's. A wrapper script
    around nvcc (Debian's /usr/bin/nvcc) is followed to the nvcc it runs, with the directories it puts on PATH;
    a selector script in place of gcc (Debian's, which runs the newest supported gcc-N) is read for the gcc it
    selects."""
    nvcc = host.which("nvcc")
    if not nvcc:
        return None
    real, wrapper_dirs = _unwrap_nvcc(host, nvcc)
    here = posixpath.dirname(real)
    label = "gcc that nvcc runs"
    prof = host.read_file(posixpath.join(here, "nvcc.profile"), limit=64 * 1024)
    # NVIDIA's nvcc.profile puts nvcc's own directory first; without a readable one, assume that layout
    dirs = parse_nvcc_profile(prof.text, here) if prof.text is not None else {"before": [here], "after": []}
    path_dirs = [d for d in (host.getenv("PATH") or "").split(":") if d.startswith("/")]
    search = dirs["before"] + wrapper_dirs + path_dirs + dirs["after"]
    src = "file:" + posixpath.join(here, "nvcc.profile")
    gcc = next((posixpath.join(d, "gcc") for d in search if host.exists(posixpath.join(d, "gcc"))), None)
    if gcc is None:
        return ok("compiler.nvcc_gcc", None, src, label)
    selected = _selected_gcc(host, gcc)
    if selected == "":
        return unknown("compiler.nvcc_gcc", "%s (nvcc's own gcc) selects a gcc-N whose g++-N is installed, and "
                       "none is" % gcc, "file:" + gcc, label)
    via = "nvcc.profile" if prof.text is not None else "beside nvcc"
    if selected:
        via, gcc = "%s, which runs %s" % (gcc, selected), selected
    if gcc == host.which("gcc"):
        return ok("compiler.nvcc_gcc", {"path": gcc, "same_as_path": True}, src, label)
    argv = [gcc, "--version"]
    r = host.run(argv, timeout=10)
    if not r.ok:
        maker = timed_out if r.timed_out else unknown
        return maker("compiler.nvcc_gcc", "%s (nvcc's own gcc): %s" % (gcc, r.describe_failure()),
                     "command:" + " ".join(argv), label)
    version = parse_gcc_version(r.stdout)
    if not version:
        return unknown("compiler.nvcc_gcc", "unexpected output of %s --version" % gcc, "command:" + " ".join(argv),
                       label)
    return ok("compiler.nvcc_gcc", {"path": gcc, "version": version, "same_as_path": False,
                                    "banner": r.stdout.strip().splitlines()[0][:200], "via": via},
              "command:" + " ".join(argv), label)


def _override_version(host: Host, override: Dict[str, Any]) -> None:
    """The version of the compiler -ccbin/NVCC_CCBIN names (a program, or a directory holding gcc)."""
    p = str(override.get("path") or "")
    if not p:
        return
    prog = p if not p.startswith("/") else (posixpath.join(p, "gcc") if host.is_dir(p) else p)
    path = prog if prog.startswith("/") else host.which(prog)
    if not path or "clang" in posixpath.basename(path):
        return
    r = host.run([path, "--version"], timeout=10)
    version = parse_gcc_version(r.stdout) if r.ok else None
    if version:
        override["version"] = version


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
        if override["exists"]:
            _override_version(host, override)
        facts.append(ok("compiler.nvcc_host", override, "env:" + override["var"], "nvcc host-compiler override"))
    else:
        facts.append(ok("compiler.nvcc_host", None, "env:NVCC_CCBIN,CUDAHOSTCXX,NVCC_PREPEND_FLAGS,NVCC_APPEND_FLAGS",
                        "nvcc host-compiler override"))
    if override is None:
        own = _nvcc_gcc(host)
        if own is not None:
            facts.append(own)
    facts.append(_extension_cc(host, env))
    return facts


def _extension_cc(host: Host, env: Dict[str, str]) -> Fact:
    """``compiler.extension_cc``: the compiler CC names, which torch.utils.cpp_extension passes to nvcc as
    ``-ccbin $CC`` when it builds a CUDA extension (flash-attn, apex, DeepSpeed ops...) and the extension's own
    flags name none; so a CC newer than nvcc accepts stops those builds while plain nvcc runs still work."""
    label = "CC (the host compiler torch.utils.cpp_extension gives nvcc)"
    cc = (env.get("CC") or "").strip()
    if not cc:
        return ok("compiler.extension_cc", None, "env:CC", label)
    entry: Dict[str, Any] = {"var": "CC", "path": cc}
    entry["exists"] = host.exists(cc) if cc.startswith("/") else host.which(cc) is not None
    if entry["exists"]:
        _override_version(host, entry)
    return ok("compiler.extension_cc", entry, "env:CC", label)

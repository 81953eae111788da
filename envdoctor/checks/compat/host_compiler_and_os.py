"""Does the toolkit's nvcc accept the host GCC and the C library's headers, and is the OS one the toolkit was
built for?"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from packaging.version import Version

from ... import matrix
from ...facts import Fact, Facts
from ...findings import Finding, Fix
from ...matrix import hardware as hw
from ...matrix import packages
from ...osinfo import nvidia_distro
from .. import CheckContext, check, docs_for
from ..suggest import INSTALL_LINE_READS, install_line, rpm_tool
from . import DOCS, _active_toolkit_row, _can_compile, _ev, _severity, _source, _v


def _gcc_too_new(version: Version, gcc_max: str) -> bool:
    """Whether a GCC ``version`` is past nvcc's limit: host_config.h tests the major (``__GNUC__ > 12``), and for
    the GCC 4 era also the minor (``__GNUC__ == 4 && __GNUC_MINOR__ > 9``), which ``gcc_max`` then carries."""
    limit = Version(gcc_max).release
    have = version.release + (0,)
    return have[:len(limit)] > limit if len(limit) > 1 else have[0] > limit[0]


def _gcc_version_of(fact: Optional[Fact]) -> Optional[Version]:
    if fact is None or not fact.known or not isinstance(fact.value, dict):
        return None
    return _v(fact.value.get("version"))


def _host_compiler_and_os(facts: Facts) -> List[Finding]:
    out: List[Finding] = []
    active = _active_toolkit_row(facts)
    if active is None:
        return out
    version, how, tk_fact, row = active
    # the compiler nvcc runs by itself (-ccbin/NVCC_CCBIN/CUDAHOSTCXX, its nvcc.profile's gcc, gcc on PATH), then
    # the one torch.utils.cpp_extension hands it as -ccbin $CC when CC is set, then the one a package compiling its
    # CUDA code at run time hands it as -ccbin (Jittor: $cc_path, else g++ on PATH)
    candidates: List[Tuple[Fact, Dict[str, Any], str]] = []
    for fact in (_nvcc_host_compiler(facts), _extension_cc(facts)):
        if fact is not None and fact.known and isinstance(fact.value, dict):
            candidates.append((fact, fact.value, ""))
    candidates.extend(_jit_ccbins(facts))
    too_new = []
    for cand, value, label in candidates:
        cv = _v(value.get("version"))
        if cv is not None and _gcc_too_new(cv, row["gcc_max"]):
            too_new.append((cand, value, label))
    if too_new and _can_compile(facts, tk_fact):
        gcc, gcc_value, jit_label = too_new[0]
        gmax_text = row["gcc_max"]
        gmax = int(Version(gmax_text).release[0])
        via_cc = gcc.key == "compiler.extension_cc"
        cmds: List[str] = []
        install = None
        # one line per way the too-new compiler reaches nvcc (NVCC_CCBIN for nvcc's own, CC for extension builds,
        # a run-time compiling package's variable): a package's -ccbin outranks NVCC_CCBIN
        seen_vars = set()
        for cand, value, label in too_new:
            c_via_cc = cand.key == "compiler.extension_cc"
            var = str(value.get("var") or "cc_path") if label else "CC" if c_via_cc else "NVCC_CCBIN"
            if var in seen_vars:
                continue
            seen_vars.add(var)
            best = _fitting_compiler(facts, gmax_text, want_gxx=not c_via_cc)
            if best is None:
                install = ("sudo apt-get install gcc-%d g++-%d" % (gmax, gmax) if facts.value("os.id") == "ubuntu"
                           else "sudo yum install devtoolset-%d" % gmax if rpm_tool(facts) == "yum"
                           else "sudo dnf install gcc-toolset-%d" % gmax)
                best = "/usr/bin/%s-%d" % ("gcc" if c_via_cc else "g++", gmax)
            cmds.append("export %s=%s" % (var, best))
        if install is not None:
            cmds.insert(0, install)
        if jit_label:
            which = " (%s, which %s passes to nvcc as -ccbin)" % (gcc_value.get("path"), jit_label)
        elif via_cc:
            which = " (%s, CC: torch.utils.cpp_extension passes it to nvcc as -ccbin)" % gcc_value.get("path")
        elif gcc.key == "compiler.gcc":
            which = ""
        else:
            which = " (%s, the one nvcc runs)" % gcc_value.get("path")
        points = []
        for cand, value, label in too_new:
            if label:
                point = "%s, which %s gives nvcc as -ccbin" % (value.get("var") or "cc_path", label)
            else:
                point = "CC, which extension builds give nvcc" if cand.key == "compiler.extension_cc" \
                    else "NVCC_CCBIN, -ccbin"
            if point not in points:
                points.append(point)
        also = "".join(" %s also passes %s (GCC %s) to nvcc as -ccbin." % (label, value.get("path"), value["version"])
                       for _cand, value, label in too_new[1:] if label)
        evidence = [gcc] + [cand for cand, _value, _label in too_new[1:] if cand is not gcc]
        out.append(Finding(
            code="compiler.gcc_too_new_for_cuda", severity=_severity(row, ["gcc_max"]), components=["compiler", "cuda"],
            title="GCC %s%s is newer than CUDA %s's nvcc accepts (GCC <= %s)" % (
                gcc_value["version"], which, version, gmax_text),
            detail="nvcc stops with '#error -- unsupported GNU version! gcc versions later than %s are not "
                   "supported!'.%s Point nvcc at an older GCC (%s) or use a newer CUDA. "
                   "(-allow-unsupported-compiler exists but is unsafe.)" % (gmax_text, also, "; ".join(points)),
            evidence=_ev(*(evidence + [tk_fact])),
            source=_source("CUDA %s supports host GCC up to %s" % (row["version"], row["gcc_max"]), row),
            fix=Fix(text="Use GCC %s or older for nvcc." % gmax_text, commands=cmds)))
    os_id, os_ver = facts.value("os.id"), facts.value("os.version")
    if os_id and os_ver and not _distribution_package(tk_fact):
        dist = row.get("distributions") or {}
        key, ver = nvidia_distro(str(os_id), str(os_ver))
        if key in dist and ver not in dist[key]:
            out.append(Finding(
                code="os.unsupported_by_cuda", severity="warning", components=["os", "cuda"],
                title="%s %s is not a supported distribution of CUDA %s (%s %s)" % (
                    os_id, os_ver, version, key, ", ".join(dist[key])),
                detail="NVIDIA did not build or test CUDA %s for this release; it may work (the runfile or "
                       "redistributable tarballs often do) but packages for it may not exist." % row["version"],
                evidence=_ev(facts.get("os.id"), facts.get("os.version"), tk_fact),
                source=_source("CUDA %s supports %s %s" % (row["version"], key, ", ".join(dist[key])), row),
                fix=Fix(text="Use a CUDA release that supports %s %s, or the distribution release CUDA %s "
                             "supports." % (key, ver, row["version"]),
                        install=_cuda_for_os(facts, key, ver))))
    return out




def _at_least(cuda: Version, release: str, nvcc: str) -> bool:
    """Whether a toolkit version is at least a release: a version nvcc prints (11.5.119: its third part is a build
    number, never below 10) against the nvcc of that release, a release's own (11.5.1: an update number, below 10)
    against the release."""
    parts = cuda.release + (0, 0)
    return cuda >= Version(nvcc if parts[2] >= 10 else release)

def _glibc_too_new(facts: Facts) -> List[Finding]:
    """The system glibc's headers against the active toolkit's nvcc (matrix area ``cuda_glibc``): a construct the
    front end of CUDA releases before ``cuda_fixed_in`` cannot parse, which glibc uses from ``glibc_min`` on (for a
    host GCC from ``host_gcc_min`` on): every compilation that includes a standard header fails."""
    active = _active_toolkit_row(facts)
    glibc = _v(facts.value("os.glibc"))
    if active is None or glibc is None:
        return []
    version, _how, tk_fact, _row = active
    cuda = _v(version)
    if cuda is None or not _can_compile(facts, tk_fact):
        return []
    host = _nvcc_host_compiler(facts)
    gv = _gcc_version_of(host)
    out: List[Finding] = []
    for row in hw.glibc_conflicts():
        if glibc < Version(row["glibc_min"]) or _at_least(cuda, row["cuda_fixed_in"], row["nvcc_fixed_in"]):
            continue
        gcc_min = row.get("host_gcc_min")
        if gcc_min is not None and (gv is None or gv.release[0] < int(gcc_min)):
            continue  # glibc gives an older GCC the form nvcc parses (or the compiler nvcc runs is unknown)
        unverified = matrix.unverified(row)
        which = " with GCC %s" % host.value["version"] if host is not None and gcc_min is not None else ""
        out.append(Finding(
            code="compiler.glibc_too_new_for_cuda", severity=_severity(row, ["cuda_fixed_in"]),
            components=["compiler", "cuda", "os"],
            title="glibc %s is too new for CUDA %s's nvcc%s: CUDA %s is the first that compiles against it" % (
                facts.value("os.glibc"), version, which, row["cuda_fixed_in"]),
            detail="%s. nvcc stops with '%s' on every file that includes a C or C++ standard header.%s" % (
                row["cause"][0].upper() + row["cause"][1:], row["symptom"],
                " (Not confirmed from NVIDIA's own notes; treat as a hint.)" if unverified else ""),
            evidence=_ev(facts.get("os.glibc"), tk_fact, host),
            source=_source("glibc %s+ headers need CUDA %s or newer%s" % (
                row["glibc_min"], row["cuda_fixed_in"], " with GCC %s or newer" % gcc_min if gcc_min else ""), row),
            fix=Fix(text=row["fix"][0].upper() + row["fix"][1:] + ".")))
    return out

def _nvcc_host_compiler(facts: Facts) -> Optional[Fact]:
    """The host compiler nvcc runs: the one -ccbin names (NVCC_CCBIN, CUDAHOSTCXX, NVCC_PREPEND/APPEND_FLAGS;
    None when its version is unknown, a clang: nothing to judge), else the gcc its nvcc.profile's PATH finds first
    (a gcc beside nvcc: Arch's /opt/cuda/bin/gcc, Debian's wrapper), else gcc on PATH."""
    override = facts.get("compiler.nvcc_host")
    if override is not None and override.known and isinstance(override.value, dict):
        return override if override.value.get("version") else None
    own = facts.get("compiler.nvcc_gcc")
    if own is not None and own.known and isinstance(own.value, dict) and not own.value.get("same_as_path") \
            and own.value.get("version"):
        return own
    if own is not None and not own.known:
        return None  # nvcc runs a gcc of its own that could not be asked: not /usr/bin/gcc's to answer for
    return facts.get("compiler.gcc")


def _fitting_compiler(facts: Facts, gmax_text: str, want_gxx: bool) -> Optional[str]:
    """The newest installed compiler nvcc accepts (GCC <= ``gmax_text``): its g++ (for -ccbin, NVCC_CCBIN, a
    package's cc_path) when ``want_gxx``, its gcc otherwise (CC); None when there is none. The default gcc's g++ is
    the g++ on PATH, whose version is its own (Ubuntu's alternatives can point gcc and g++ at different releases)."""
    fitting: List[Tuple[Version, str]] = []
    for g in facts.items("compiler.gcc_versions"):
        if not isinstance(g, dict) or not g.get("path"):
            continue
        ov = _v(g.get("version"))
        if ov is None or _gcc_too_new(ov, gmax_text):
            continue
        path = str(g["path"])
        if want_gxx and g.get("kind") == "default":
            gxx = facts.get("compiler.gxx")
            gxx_value = gxx.value if gxx is not None and gxx.known and isinstance(gxx.value, dict) else {}
            gxv = _v(gxx_value.get("version"))
            if gxv is None or _gcc_too_new(gxv, gmax_text):
                continue  # the g++ beside the default gcc is another release, too new
            fitting.append((gxv, str(gxx_value.get("path") or path.replace("gcc", "g++"))))
            continue
        if want_gxx and g.get("gxx") is False:
            continue
        fitting.append((ov, path.replace("gcc", "g++") if want_gxx else path))
    return max(fitting, key=lambda vp: vp[0])[1] if fitting else None


def _jit_ccbins(facts: Facts) -> List[Tuple[Fact, Dict[str, Any], str]]:
    """The host compilers the packages compiling their CUDA code at run time pass to nvcc as -ccbin
    (``python.jit_toolkits``: Jittor's ``$cc_path``, else g++ on PATH), each as (the fact, ``{path, version, var}``,
    the package's name), when their version is known; a package using a toolkit of its own is left out (its nvcc
    is not the active toolkit's)."""
    fact = facts.get("python.jit_toolkits")
    if fact is None or not fact.known or not isinstance(fact.value, list):
        return []
    out: List[Tuple[Fact, Dict[str, Any], str]] = []
    for entry in fact.value:
        if not isinstance(entry, dict) or entry.get("own_toolkit") or not isinstance(entry.get("ccbin"), dict):
            continue
        ccbin = entry["ccbin"]
        if not ccbin.get("version"):
            continue
        row = packages.jit_row(str(entry.get("package") or ""), str(entry.get("version") or ""))
        var = str(row["cc_env"]) if row is not None else ""
        out.append((fact, {"path": ccbin.get("path"), "version": ccbin["version"], "var": var},
                    str(entry.get("label") or entry.get("package"))))
    return out


def _extension_cc(facts: Facts) -> Optional[Fact]:
    """The compiler CC names, which torch.utils.cpp_extension gives nvcc as ``-ccbin $CC`` (None when CC is unset,
    names the compiler already judged, or its version is unknown: a clang, a missing program)."""
    cc = facts.get("compiler.extension_cc")
    if cc is None or not cc.known or not isinstance(cc.value, dict) or not cc.value.get("version"):
        return None
    return cc


def _distribution_package(tk_fact: Fact) -> bool:
    """The active toolkit is the distribution's own package (Debian/Ubuntu nvidia-cuda-toolkit, Fedora/Arch
    cuda: nvcc in /usr/bin, no toolkit directory of NVIDIA's layout): the distribution built and supports it
    for its release, so NVIDIA's list of distributions for its own packages says nothing about it."""
    value = tk_fact.value if isinstance(tk_fact.value, dict) else {}
    return (tk_fact.key == "cuda.nvcc" and not value.get("toolkit")
            and str(value.get("resolved") or value.get("path") or "").startswith("/usr/bin/"))


def _cuda_for_os(facts: Facts, key: str, ver: str) -> Optional[str]:
    for r in reversed(hw.cuda_releases()):  # the newest release for this OS that the installed driver runs
        if ver in (r.get("distributions") or {}).get(key, []):
            line = install_line(facts, "cuda", r["ga"], prefix="~/cuda-%s" % r["version"])
            if line:
                return line
    return None


@check("compat.host-compiler-and-os", requires=("cuda.nvcc",),
       reads=("compiler.*", "cuda.*", "python.jit_toolkits") + INSTALL_LINE_READS,
       layers=("compilers", "os"),
       codes=docs_for(DOCS, "compiler.gcc_too_new_for_cuda", "os.unsupported_by_cuda"))
def host_compiler_and_os(ctx: CheckContext) -> List[Finding]:
    return _host_compiler_and_os(ctx.facts)


@check("compat.glibc-vs-nvcc", requires=("cuda.nvcc", "os.glibc"), reads=("compiler.*", "cuda.*", "os.*"),
       layers=("compilers", "os"), codes=docs_for(DOCS, "compiler.glibc_too_new_for_cuda"))
def glibc_vs_nvcc(ctx: CheckContext) -> List[Finding]:
    return _glibc_too_new(ctx.facts)

"""OS, kernel, C library, WSL, containers, CPU and memory."""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

import distro

from ..facts import Fact, ok, timed_out, unknown
from ..host.base import Host
from ..osinfo import family
from . import ProbeContext, register

#: distro's own notion of release files, applied to a listing of /etc.
_RELEASE_FILE = re.compile(r"(\w+)[-_](release|version)$")

def _distro_from_host(host: Host) -> Dict[str, Any]:
    """Let the ``distro`` library answer from files read through the host.

    The release files are copied into a miniature root directory (the host's scratch space), which is
    how distro's own tests feed it, so its parsing and id normalisation are used as they are.
    """
    files: Dict[str, bytes] = {}
    damaged: List[str] = []
    names = ["os-release", "lsb-release"] + [n for n in host.list_dir("/etc").names() if _RELEASE_FILE.match(n)]
    for rel in ["etc/" + n for n in sorted(set(names))] + ["usr/lib/os-release"]:
        res = host.read_file("/" + rel, limit=RELEASE_LIMIT)
        if res.data is not None:
            data = res.data
            if rel in ("etc/os-release", "usr/lib/os-release", "etc/lsb-release"):
                data, bad = _shell_lines(data)
                damaged += ["/%s line %d: %s" % (rel, n, text) for n, text in bad]
            if res.truncated:
                damaged.append("/%s: cut at %d KiB (larger than any release file: the rest is ignored)" % (
                    rel, RELEASE_LIMIT // 1024))
            files[rel] = data
    with host.scratch_root(files) as root:
        d = distro.LinuxDistribution(root_dir=root, include_lsb=False, include_uname=False)
        return {
            "id": d.id(), "name": d.name(), "version": d.version(), "version_full": d.version(best=True),
            "codename": d.codename(), "like": d.like(), "pretty": d.name(pretty=True),
            "os_release": d.os_release_attr("version_id"), "damaged": damaged,
        }


RELEASE_LIMIT = 64 * 1024


def _shell_lines(data: bytes) -> Tuple[bytes, List[Tuple[int, str]]]:
    """The lines of a KEY=value release file that parse as shell words (how distro reads them), and the
    ones that do not (an unbalanced quote...), numbered: one bad line costs that line, not the file."""
    import shlex

    kept: List[bytes] = []
    bad: List[Tuple[int, str]] = []
    for n, raw in enumerate(data.splitlines(), 1):
        line = raw.decode("utf-8", "replace")
        try:
            shlex.split(line, comments=True)
        except ValueError:
            bad.append((n, line[:120]))
            continue
        kept.append(raw)
    return b"\n".join(kept) + b"\n", bad


def os_family(distro_id: str, like: str) -> str:
    """The family (osinfo's one table, keyed by distro's normalised ids), else that of an ``ID_LIKE`` id."""
    return family(distro_id, like)


def wsl_kind(host: Host, release: str) -> Optional[str]:
    """'WSL2', 'WSL1' or None, with the evidence used."""
    proc_version = host.read_text("/proc/version") or ""
    text = (release + " " + proc_version).lower()
    if "microsoft" not in text and "wsl" not in text:
        return None
    if "wsl2" in text or host.exists("/dev/dxg") or "microsoft-standard" in text:
        return "WSL2"
    return "WSL1"


def container_kind(host: Host) -> Optional[str]:
    if host.exists("/.dockerenv"):
        return "docker"
    if host.exists("/run/.containerenv"):
        return "podman"
    env_container = host.getenv("container")
    if env_container:
        return env_container
    cgroup = host.read_text("/proc/1/cgroup") or ""
    for marker, name in (("kubepods", "kubernetes"), ("docker", "docker"), ("containerd", "containerd"),
                         ("lxc", "lxc"), ("libpod", "podman")):
        if marker in cgroup:
            return name
    return None


@register("os", "Operating system", order=10,
          produces=("os.*", "kernel.release"))
def probe_os(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    # The one command first, so it runs while distro is imported (the driver probe waits for this one).
    getconf = host.run(["getconf", "GNU_LIBC_VERSION"], timeout=3)
    os_release = host.read_file("/etc/os-release")
    if os_release.data is None:
        os_release = host.read_file("/usr/lib/os-release")
    src = "file:" + os_release.path
    try:
        info: Dict[str, Any] = _distro_from_host(host)
    except (OSError, ValueError, UnicodeError) as exc:  # no scratch space at all (read-only root, full
        # disks), or a release file distro cannot parse: say so, and go on with the rest of the layer
        why = "cannot run the distro library: %s" % (getattr(exc, "strerror", None) or exc)
        info = {"id": "", "why": why}
    if info.get("damaged"):
        facts.append(ok("os.release_damaged", info["damaged"], src, "Release file lines ignored"))
    if info["id"]:
        facts.append(ok("os.id", info["id"], src, "Distribution id"))
        facts.append(ok("os.name", info["pretty"] or info["name"], src, "Distribution"))
        if info["version"]:
            facts.append(ok("os.version", info["version"], src, "Version"))
        else:
            facts.append(unknown("os.version", "the release files name no version (rolling release?)", src,
                                 "Version"))
        if info["codename"]:
            facts.append(ok("os.codename", info["codename"], src, "Codename"))
        facts.append(ok("os.family", os_family(info["id"], info["like"]), src, "Family"))
    else:
        why = info.get("why") or (
            "/etc/os-release and /usr/lib/os-release are missing (%s)" % os_release.error
            if os_release.data is None else "/etc/os-release names no distribution (garbled?)")
        facts.append(unknown("os.id", why, src, "Distribution id"))
        facts.append(unknown("os.family", why, src, "Family"))

    u = host.uname()
    facts.append(ok("kernel.release", u.get("release", ""), "uname", "Kernel"))
    facts.append(ok("os.arch", u.get("machine", ""), "uname", "Architecture"))

    m = re.match(r"glibc\s+(\d+\.\d+(?:\.\d+)?)", getconf.stdout.strip()) if getconf.ok else None
    if m:
        facts.append(ok("os.glibc", m.group(1), "command:getconf GNU_LIBC_VERSION", "glibc"))
    elif getconf.timed_out:
        facts.append(timed_out("os.glibc", getconf.describe_failure(), "command:getconf GNU_LIBC_VERSION",
                               "glibc"))
    else:
        facts.append(unknown("os.glibc", getconf.describe_failure() if not getconf.ok else
                             "unexpected output %r" % getconf.stdout.strip()[:80],
                             "command:getconf GNU_LIBC_VERSION", "glibc"))

    wsl = wsl_kind(host, u.get("release", ""))
    facts.append(ok("os.wsl", wsl, "file:/proc/version", "WSL"))
    container = container_kind(host)
    facts.append(ok("os.container", container, "file:/.dockerenv,/run/.containerenv,/proc/1/cgroup",
                    "Inside a container"))
    return facts


def _cpuinfo(text: str) -> Dict[str, object]:
    model = None
    logical = 0
    cores = set()
    sockets = set()
    flags: List[str] = []
    block: Dict[str, str] = {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            if "processor" in block:
                logical += 1
                model = model or block.get("model name") or block.get("Model") or block.get("cpu model")
                phys = block.get("physical id", "0")
                sockets.add(phys)
                if "core id" in block:
                    cores.add((phys, block["core id"]))
                if not flags and "flags" in block:
                    flags = block["flags"].split()
            block = {}
            continue
        if ":" in line:
            k, _, v = line.partition(":")
            block[k.strip()] = v.strip()
    return {"model": model, "logical": logical, "cores": len(cores) or None, "sockets": len(sockets) or None,
            "flags": flags}


#: /proc/cpuinfo holds about 1.5 KiB per thread: 16 MiB is some 10,000 threads.
CPUINFO_LIMIT = 16 * 1024 * 1024


@register("cpu", "CPU and memory", order=20,
          produces=("cpu.*", "memory.*"))
def probe_cpu(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    res = host.read_file("/proc/cpuinfo", limit=CPUINFO_LIMIT)
    src = "file:/proc/cpuinfo"
    if res.text is None:
        facts.append(unknown("cpu.model", "cannot read /proc/cpuinfo (%s)" % res.error, src, "CPU"))
    else:
        info = _cpuinfo(res.text)
        if info["logical"]:
            facts.append(ok("cpu.model", info["model"] or "unknown model", src, "CPU"))
            if res.truncated:
                # Counting what was read would under-count: say so instead of a wrong number.
                facts.append(unknown("cpu.threads", "/proc/cpuinfo is larger than %d MiB and was cut there: at "
                                     "least %s threads" % (CPUINFO_LIMIT >> 20, info["logical"]), src, "Threads"))
            else:
                facts.append(ok("cpu.threads", info["logical"], src, "Threads"))
            if info["cores"]:
                facts.append(ok("cpu.cores", info["cores"], src, "Physical cores"))
            if info["sockets"]:
                facts.append(ok("cpu.sockets", info["sockets"], src, "Sockets"))
            flags = info["flags"]
            if isinstance(flags, list) and flags:
                level = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else (
                    "avx" if "avx" in flags else "sse")
                facts.append(ok("cpu.simd", level, src, "Widest SIMD"))
        else:
            facts.append(unknown("cpu.model", "/proc/cpuinfo lists no processor (truncated or garbled)", src,
                                 "CPU"))
    mem = host.read_file("/proc/meminfo")
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", mem.text or "", re.M)
    if m:
        facts.append(ok("memory.total_bytes", int(m.group(1)) * 1024, "file:/proc/meminfo", "Memory"))
    else:
        facts.append(unknown("memory.total_bytes", "cannot read MemTotal from /proc/meminfo (%s)" %
                             (mem.error or "no MemTotal line"), "file:/proc/meminfo", "Memory"))
    return facts

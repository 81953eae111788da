"""OS, kernel, C library, WSL, containers, CPU and memory."""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

from ..facts import Fact, ok, timed_out, unknown
from ..host.base import Host
from ..osinfo import RELEASE_FILE, RELEASE_LIMIT, ReleaseInfo, release_info
from . import ProbeContext, register


def release_files(host: Host) -> Tuple[Dict[str, Optional[bytes]], Tuple[str, ...]]:
    """The release files distro would look at, read through the host (None: absent), and those cut at
    :data:`RELEASE_LIMIT`."""
    files: Dict[str, Optional[bytes]] = {}
    cut: List[str] = []
    names = ["os-release", "lsb-release"] + [n for n in host.list_dir("/etc").names() if RELEASE_FILE.match(n)]
    for path in ["/etc/" + n for n in sorted(set(names))] + ["/usr/lib/os-release"]:
        res = host.read_file(path, limit=RELEASE_LIMIT)
        files[path] = res.data
        if res.data is not None and res.truncated:
            cut.append(path)
    return files, tuple(cut)


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
    # systemd's PID 1 writes the container manager's name ($container: lxc, docker, podman, systemd-nspawn) to
    # /run/systemd/container and systemd's own container detection reads it back (systemd 252's binaries: "Failed
    # to write /run/systemd/container", "Failed to read /run/systemd/container"): inside an LXD/LXC container with
    # cgroup namespaces /proc/1/cgroup shows only "/", so this is the marker left to read.
    written = (host.read_text("/run/systemd/container") or "").strip().splitlines()
    if written and written[0].strip() and len(written[0]) <= 64:
        return written[0].strip()
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
    # The one command first, so it runs while the release files are read (the driver probe waits for it).
    getconf = host.run(["getconf", "GNU_LIBC_VERSION"], timeout=3)
    os_release = host.read_file("/etc/os-release")
    if os_release.data is None:
        os_release = host.read_file("/usr/lib/os-release")
    src = "file:" + os_release.path
    try:
        info: Optional[ReleaseInfo] = release_info(*release_files(host))
        why = ""
    except (ValueError, UnicodeError) as exc:  # a release file distro cannot parse: say so, go on
        info, why = None, "the release files cannot be read as a distribution's: %s" % exc
    if info is not None and info.damaged:
        facts.append(ok("os.release_damaged", info.damaged, src, "Release file lines ignored"))
    if info is not None and info.id:
        facts.append(ok("os.id", info.id, src, "Distribution id"))
        facts.append(ok("os.name", info.pretty or info.name, src, "Distribution"))
        if info.version:
            facts.append(ok("os.version", info.version, src, "Version"))
        else:
            facts.append(unknown("os.version", "the release files name no version (rolling release?)", src,
                                 "Version"))
        if info.codename:
            facts.append(ok("os.codename", info.codename, src, "Codename"))
        facts.append(ok("os.family", info.family, src, "Family"))
    else:
        why = why or (
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
    facts.append(ok("os.container", container,
                    "file:/.dockerenv,/run/.containerenv,/run/systemd/container,/proc/1/cgroup", "Inside a container"))
    return facts


def _cpuinfo(text: str) -> Dict[str, object]:
    model = None
    vendor = None
    family_model = None
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
                vendor = vendor or block.get("vendor_id")
                if family_model is None and block.get("cpu family", "").isdigit() and block.get("model", "").isdigit():
                    family_model = [int(block["cpu family"]), int(block["model"])]
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
            "flags": flags, "vendor": vendor, "family_model": family_model}


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
            if info["vendor"]:
                # the CPU vendor id as the CPU names itself (GenuineIntel, AuthenticAMD...): NCCL's P2P rules
                # key on it, with the x86 family and model
                facts.append(ok("cpu.vendor", info["vendor"], src, "CPU vendor"))
            if info["family_model"]:
                facts.append(ok("cpu.family_model", info["family_model"], src, "CPU family, model"))
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

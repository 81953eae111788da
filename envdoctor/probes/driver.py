"""The NVIDIA driver: kernel module, user-space library (NVML), and what stands around them.

Evidence, in order of trust:

* the loaded kernel module: ``/proc/driver/nvidia/version`` (its first line
  names the flavour: "NVIDIA UNIX x86_64 Kernel Module" is the proprietary
  module, "NVIDIA UNIX Open Kernel Module for x86_64" the open one) and
  ``/sys/module/nvidia/version``;
* NVML (``host.nvml()``), which answers for the user-space library and fails
  with a precise error when the two halves disagree;
* ``nvidia-smi``, only when NVML gave no answer (it is NVML underneath, and can
  hang on a wedged GPU);
* the ``libnvidia-ml.so.<version>`` / ``libcuda.so.<version>`` file names in
  the usual library directories and those the loader cache holds the driver's
  sonames in (an /etc/ld.so.conf.d entry, Debian's alternatives links), which
  name the user-space version even when nothing can be loaded;
* an nvidia module installed for the running kernel (a distribution's kmod or
  DKMS package), which says a driver is installed when no module loaded and no
  library is found (its version, by modinfo, names the branch).

Around the driver: nouveau / nova (the in-kernel drivers that must not own
the GPU), ``/dev/nvidia*`` nodes, a module built for the running kernel
(DKMS or packaged), Secure Boot and module signing, NVSwitch + fabric manager,
the persistence daemon, and WSL2 (where the driver lives on Windows).

A machine with no NVIDIA driver and no NVIDIA GPU is a valid user: it gets
one plain ``driver.installed = False`` fact, not a wall of unknowns.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from packaging.version import Version

from .. import lazyre, versions
from ..facts import Fact, not_supported, ok, timed_out, unknown
from ..host.base import FILE_FILTERS, FILE_PATTERN_FILTERS, KERNEL_LOG_ARGV, CommandResult, Host
from ..host.cudainit import PROC_VERSION
from ..osinfo import DRIVER_DIRS, GPU_OPERATOR_ROOT, WSL_LIB_DIR
from . import ProbeContext, register

SYS_VERSION = "/sys/module/nvidia/version"
SYS_TAINT = "/sys/module/nvidia/taint"

#: Where the driver's user-space lives outside the loader's directories: NixOS links the driver of the running
#: system at /run/opengl-driver/lib (programs Nix builds find it through their RUNPATH; others must be told);
#: the NVIDIA GPU Operator's driver container mounts its root at /run/nvidia/driver on the host (containers get
#: the libraries from the container toolkit; the host's own loader never looks there), the driver's directories
#: of its distribution under that root.
ELSEWHERE = (("/run/opengl-driver/lib", "nixos"),) + tuple((GPU_OPERATOR_ROOT + d, "gpu-operator") for d in DRIVER_DIRS)

SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"

MODPROBE_DIRS = ("/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d")

#: Where installed kernels keep their modules (/usr/lib/modules on merged-/usr systems where /lib is a link; both
#: are read, for the running kernel and for the newer ones alike).
MODULE_ROOTS = ("/lib/modules", "/usr/lib/modules")
#: Sub-directories of <root>/<release>/ where a packaged or DKMS-built nvidia.ko lands. extramodules: Arch;
#: extra/drivers/video/nvidia: NVIDIA's precompiled kmod-nvidia packages for RHEL (NVIDIA/yum-packaging-precompiled-kmod
#: kmod-nvidia.spec: kmod_module_path /lib/modules/<kernel>.<arch>/extra/drivers/video/nvidia).
MODULE_SUBDIRS = ("updates/dkms", "updates", "kernel/drivers/video", "extra", "extra/nvidia",
                  "extra/drivers/video/nvidia", "misc", "kernel/drivers/char/drm", "weak-updates/nvidia",
                  "extramodules")

SMI_QUERY = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
SMI_PLAIN = ["nvidia-smi"]

#: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024"
#: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (...)"
_NVRM = lazyre.compile(
    r"^NVRM version:\s+NVIDIA UNIX\s+(?P<open>Open\s+)?(?:(?P<arch1>\S+)\s+)?Kernel Module"
    r"(?:\s+for\s+(?P<arch2>\S+))?\s+(?P<version>\d+\.\d+(?:\.\d+)*)\b",
    re.M,
)
_GCC = lazyre.compile(r"^GCC version:\s+(?:gcc version\s+)?(?P<text>.+?)\s*$", re.M)
_LIB_VERSION = lazyre.compile(r"^(?P<lib>libnvidia-ml|libcuda)\.so\.(?P<version>\d{3,}\.\d+(?:\.\d+)?)$")
_SMI_CUDA = lazyre.compile(r"CUDA Version:\s*(?P<version>\d+\.\d+)")
_SMI_NVML_LIB = lazyre.compile(r"NVML library version:\s*(?P<version>\d+\.\d+(?:\.\d+)?)")
_PCI_ADDR = lazyre.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
#: nvidia.ko, Debian's nvidia-current.ko, branch-named nvidia_NNN.ko / nvidia-NNN.ko, compressed (.xz, .zst, .gz)
_NVIDIA_KO = lazyre.compile(r"^nvidia(?:-current|[-_]\d+)?\.ko(?:\.(?:xz|zst|gz))?$")
_BLACKLIST = lazyre.compile(r"^\s*blacklist\s+nouveau\s*$", re.M)
#: dkms >= 3: "nvidia/550.54.15, 5.15.0-105-generic, x86_64: installed";
#: dkms 2: "nvidia, 470.82.00, 5.4.0-91-generic, x86_64: installed".
_DKMS = lazyre.compile(
    r"^(?P<module>nvidia[\w-]*)[/,]\s*(?P<version>[^,\s]+),\s*(?P<kernel>[^,\s]+),\s*(?P<arch>[^:\s]+):"
    r"\s*(?P<state>[A-Za-z][\w ]*?)\s*(?:\(.*\))?\s*$",
    re.M,
)
#: A module DKMS has added (its source registered) or built, with no kernel: ``nvidia, 418.40.04: added`` (dkms 2.x),
#: ``nvidia/418.40.04: added`` (dkms 3.x); dell/dkms dkms.in, do_status: a module is "added" until it is built for
#: a kernel.
_DKMS_ADDED = lazyre.compile(
    r"^(?P<module>nvidia[\w-]*)[/,]\s*(?P<version>[^,:\s]+):\s*(?P<state>added)\s*$",
    re.M,
)

#: NVML error names -> what they mean for the user.
NVML_REASONS = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "libnvidia-ml.so.1 not found: no NVIDIA driver user-space is installed",
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA kernel module is not loaded (libnvidia-ml is installed, but "
                                    "/dev/nvidiactl is missing or the module failed to load)",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "Driver/library version mismatch: the loaded kernel module and the "
                                          "user-space library are different driver versions (usually the driver "
                                          "was upgraded without a reboot)",
    "NVML_ERROR_NO_PERMISSION": "no permission to open the NVIDIA device files (/dev/nvidia*)",
    "NVML_ERROR_GPU_IS_LOST": "a GPU has fallen off the bus or is otherwise inaccessible (see dmesg for Xid 79)",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "libnvidia-ml is older than the binding expects (driver too old)",
    "NVML_ERROR_UNINITIALIZED": "NVML was not initialised",
    "NVML_ERROR_UNKNOWN": "NVML failed with an unknown error (driver in a bad state?)",
}
#: WSL2 has no Linux kernel module: the Windows driver's libraries answer DRIVER_NOT_LOADED when they reach no GPU.
WSL_NOT_LOADED = ("the Windows NVIDIA driver's libraries in %s reach no GPU (on WSL2 the driver runs on Windows: "
                  "no Linux kernel module is involved)" % WSL_LIB_DIR)
WORKER_REASONS = {
    "timed_out": "the driver did not answer in time (a wedged GPU or driver hangs every query)",
    "no_binding": "the NVML Python binding (nvidia-ml-py) is not available to envdoctor",
    "worker_failed": "the NVML query process failed",
    "starved": "NVML was not asked in time because the machine was too busy (not a hung driver)",
    "deadline": "NVML was not asked: the overall time limit was already spent",
}

#: ``incomplete.reason`` of a query cut off part-way (nvml_worker) -> driver.nvml.status.
INCOMPLETE_STATUS = {"timed_out": "timed_out", "starved": "starved", "crashed": "worker_failed"}

# Labels, one place.
L_KVER = "Kernel module version"
L_FLAVOR = "Kernel module flavour"
L_NVML = "NVML"
L_VERSION = "Driver version"
L_CUDA = "Highest CUDA the driver supports"
L_USER = "User-space driver library version"


_parse_version = versions.parse


def parse_proc_version(text: str) -> Optional[Dict[str, str]]:
    """Version, flavour, architecture and compiler from /proc/driver/nvidia/version."""
    m = _NVRM.search(text)
    if not m or _parse_version(m.group("version")) is None:
        return None
    out = {"version": m.group("version"), "flavor": "open" if m.group("open") else "proprietary",
           "arch": m.group("arch2") or m.group("arch1") or ""}
    g = _GCC.search(text)
    if g:
        out["gcc"] = g.group("text")
    return out


def cuda_from_int(value: object) -> Optional[str]:
    """NVML's CUDA driver version integer (12040) -> "12.4"."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def parse_dkms_status(text: str) -> List[Dict[str, str]]:
    """Each nvidia line of ``dkms status``: ``{module, version, kernel, arch, state}`` (kernel and arch empty for a
    module only added, built for no kernel)."""
    found = [(m.start(), m.groupdict()) for m in _DKMS.finditer(text)]
    found += [(m.start(), dict(m.groupdict(), kernel="", arch="")) for m in _DKMS_ADDED.finditer(text)]
    return [e for _, e in sorted(found, key=lambda p: p[0])]


def _nvml_answer(data: Dict[str, object], key: str) -> Tuple[object, Optional[str]]:
    """(value, error name) of one NVML answer."""
    ans = data.get(key)
    if not isinstance(ans, dict):
        return None, "not asked"
    if "value" in ans:
        return ans["value"], None
    return None, str(ans.get("error") or "EXCEPTION")


#: The driver's sonames whose loader-cache entries name where the driver's libraries are.
DRIVER_SONAMES = ("libcuda.so.1", "libnvidia-ml.so.1")


def _cache_dirs(host: Host) -> List[str]:
    """The directories the loader cache holds the driver's sonames in: what /etc/ld.so.conf(.d) configured
    (ld.so(8): the cache is built from the directories ldconfig reads there). RPM Fusion's
    xorg-x11-drv-nvidia installs the driver's libraries in %{_libdir}/nvidia and names that directory in
    /etc/ld.so.conf.d/nvidia-<arch>.conf; the loader finds them there, and so must envdoctor. Debian's entries are
    alternatives links into /usr/lib/<triplet>/nvidia/current, whose directory is added too."""
    from .loader import read_ld_cache

    entries, _ = read_ld_cache(host)
    out: List[str] = []
    for soname, _flags, path in entries or ():
        if soname in DRIVER_SONAMES and path.startswith("/"):
            # the entry, then the file it links to: Debian's libcuda.so.1 is an alternatives link to
            # /usr/lib/<triplet>/nvidia/current/libcuda.so.1, beside the libcuda.so.<version> it names
            out.extend((posixpath.dirname(path), posixpath.dirname(host.resolve(path))))
    return out


def lib_search_dirs(host: Host) -> List[str]:
    """Where the loader looks for the driver's libraries: LD_LIBRARY_PATH (containers put the injected driver in
    /usr/local/nvidia/lib64 and name it there), the directories the loader cache holds the driver's sonames in
    (an /etc/ld.so.conf.d entry), then the usual directories."""
    ldp = [posixpath.normpath(d) for d in (host.getenv("LD_LIBRARY_PATH") or "").split(":") if d.startswith("/")]
    # dict.fromkeys: the first of each directory, in order (a list's `in` made this quadratic in the entries)
    return list(dict.fromkeys((d.rstrip("/") or "/") for d in ldp + _cache_dirs(host) + list(DRIVER_DIRS)))


def _userspace_libs(host: Host) -> List[Tuple[str, str]]:
    """(path, version) of libnvidia-ml.so.<ver> and libcuda.so.<ver> where the loader looks."""
    found = []
    seen = set()
    for d in lib_search_dirs(host):
        for name in host.list_dir(d).names():
            m = _LIB_VERSION.match(name)
            if m and _parse_version(m.group("version")) is not None:
                path = d + "/" + name
                if path not in seen:
                    seen.add(path)
                    found.append((path, m.group("version")))
    return found


def _userspace_elsewhere(host: Host) -> Optional[Fact]:
    """``driver.userspace.elsewhere``: the driver's libraries in a layout the loader does not search (NixOS's
    /run/opengl-driver/lib, the GPU Operator's /run/nvidia/driver), with their version."""
    for d, layout in ELSEWHERE:
        versions_here = []
        for name in host.list_dir(d).names():
            m = _LIB_VERSION.match(name)
            if m and m.group("lib") == "libnvidia-ml" and _parse_version(m.group("version")) is not None:
                versions_here.append(m.group("version"))
        if versions_here:
            return ok("driver.userspace.elsewhere", {"path": d, "layout": layout,
                                                     "version": max(versions_here, key=Version)},
                      "dir:" + d, "Driver libraries outside the loader's directories")
    return None


def _nvidia_pci_gpus(host: Host) -> Optional[List[str]]:
    """PCI addresses of NVIDIA display controllers (vendor 0x10de, class 0x03xxxx); None when the bus
    cannot be listed (unknown is never "no GPU")."""
    out: List[str] = []
    base = "/sys/bus/pci/devices"
    listing = host.list_dir(base)
    if not listing.ok:
        return None
    for addr in listing.names():
        vendor = (host.read_text(f"{base}/{addr}/vendor", limit=64) or "").strip().lower()
        if vendor != "0x10de":
            continue
        cls = (host.read_text(f"{base}/{addr}/class", limit=64) or "").strip().lower()
        if cls and not cls.startswith("0x03"):
            continue  # the GPU's HDMI audio function, USB-C controller...
        out.append(addr)
    return out


def _os_context(ctx: ProbeContext) -> Tuple[bool, Optional[str]]:
    """(WSL2?, container kind), judged the way the os probe judges them (same reads, answered from the
    host's cache), without waiting for the os probe's slower distribution lookup."""
    from .system import container_kind, wsl_kind

    host = ctx.host
    return wsl_kind(host, host.uname().get("release", "")) == "WSL2", container_kind(host)


def _cmd_src(argv: List[str]) -> str:
    return "command:" + " ".join(argv)


def _state_of_service(host: Host, unit: str, key: str, label: str, optional: bool = False) -> Optional[Fact]:
    argv = ["systemctl", "is-active", unit]
    res = host.run(argv, timeout=5)
    src = _cmd_src(argv)
    if optional and res.not_found:
        return None  # no systemd here (a container): nothing to say about an optional service
    if res.timed_out:
        return timed_out(key, res.describe_failure(), src, label)
    if res.error:
        return unknown(key, res.describe_failure(), src, label)
    state = res.stdout.strip().splitlines()[0].strip() if res.stdout.strip() else ""
    if state in ("active", "inactive", "failed", "activating", "deactivating", "reloading", "unknown"):
        return ok(key, state, src, label)
    return unknown(key, "unexpected output from systemctl: %r" % (res.stdout.strip()[:80] or res.stderr.strip()[:80]),
                   src, label)


# -- parts ----------------------------------------------------------------------

def _kernel_module(host: Host, wsl: bool) -> Tuple[List[Fact], Optional[Dict[str, str]], bool]:
    """Facts about the loaded kernel module, its parsed /proc info, and whether it is loaded."""
    facts: List[Fact] = []
    proc = host.read_file(PROC_VERSION, limit=4096)
    sysv = host.read_file(SYS_VERSION, limit=256)
    sys_loaded = host.is_dir("/sys/module/nvidia")
    loaded = proc.ok or sys_loaded
    info = parse_proc_version(proc.text) if proc.text is not None else None
    sys_ver = (sysv.text or "").strip()
    sys_ok = versions.is_driver_version(sys_ver)

    facts.append(ok("driver.kernel_module.loaded", loaded,
                    "file:" + PROC_VERSION if proc.ok else "dir:/sys/module/nvidia", "Kernel module loaded"))
    if info:
        facts.append(ok("driver.kernel_module.version", info["version"], "file:" + PROC_VERSION, L_KVER))
        facts.append(ok("driver.kernel_module.flavor", info["flavor"], "file:" + PROC_VERSION, L_FLAVOR))
        if info.get("gcc"):
            facts.append(ok("driver.kernel_module.gcc", info["gcc"], "file:" + PROC_VERSION,
                            "Compiler that built the module"))
        return facts, info, loaded

    # No usable /proc line: say why, then fall back to /sys/module/nvidia.
    if wsl and not loaded:
        why = "on WSL2 the NVIDIA driver runs on Windows; Linux has no nvidia kernel module (this is normal)"
        facts.append(not_supported("driver.kernel_module.version", "file:" + PROC_VERSION, L_KVER, why))
        facts.append(not_supported("driver.kernel_module.flavor", "file:" + PROC_VERSION, L_FLAVOR, why))
        return facts, None, loaded
    if proc.text is not None:
        first = proc.text.strip().splitlines()[0][:120] if proc.text.strip() else ""
        why = f"unexpected contents of {PROC_VERSION}: {first!r}" if first else f"{PROC_VERSION} is empty"
    elif proc.missing and sys_loaded:
        why = f"{PROC_VERSION} is absent although /sys/module/nvidia shows the module loaded"
    elif proc.missing:
        why = f"the nvidia kernel module is not loaded ({PROC_VERSION} is absent)"
    else:
        why = f"cannot read {PROC_VERSION} ({proc.error})"
    if sys_ok:
        facts.append(ok("driver.kernel_module.version", sys_ver, "file:" + SYS_VERSION, L_KVER))
        info = {"version": sys_ver}
    else:
        facts.append(unknown("driver.kernel_module.version", why, "file:" + PROC_VERSION, L_KVER))
    # Flavour without /proc: the proprietary module taints the kernel with "P", the open one does not.
    taint = host.read_file(SYS_TAINT, limit=64)
    taint_text = (taint.text or "").strip()
    if taint.text is not None and re.fullmatch(r"[A-Z]*", taint_text):
        flavor = "proprietary" if "P" in taint_text else "open"
        facts.append(ok("driver.kernel_module.flavor", flavor, "file:" + SYS_TAINT, L_FLAVOR))
        if info is not None:
            info["flavor"] = flavor
    else:
        facts.append(unknown("driver.kernel_module.flavor", "cannot tell open from proprietary: %s, and %s is "
                             "unreadable (%s)" % (why, SYS_TAINT, taint.error), "file:" + PROC_VERSION, L_FLAVOR))
    return facts, info, loaded


def _nvidia_smi(host: Host) -> Tuple[Optional[str], Optional[str], Optional[str], CommandResult]:
    """(driver version, CUDA version, NVML library version from an error) from nvidia-smi."""
    res = host.run(SMI_QUERY, timeout=10)
    driver = cuda = nvml_lib = None
    text = res.stdout + "\n" + res.stderr
    m = _SMI_NVML_LIB.search(text)
    if m:
        nvml_lib = m.group(1)
    if res.ok:
        answers = {ln.strip() for ln in res.stdout.splitlines() if ln.strip()}
        if len(answers) == 1 and versions.is_driver_version(next(iter(answers))):
            driver = next(iter(answers))
    if driver is not None:  # the header's "CUDA Version: 12.4" (the table is never parsed for anything else)
        plain = host.run(SMI_PLAIN, timeout=10)
        m = _SMI_CUDA.search(plain.stdout) if plain.ok else None
        if m:
            cuda = m.group("version")
    return driver, cuda, nvml_lib, res


def _nvml_part(ctx: ProbeContext, kinfo: Optional[Dict[str, str]],
               libs: List[Tuple[str, str]], wsl: bool = False) -> Tuple[List[Fact], str]:
    """NVML status, driver version, CUDA version (with nvidia-smi as fallback); returns the status value."""
    host = ctx.host
    facts: List[Fact] = []
    nv = host.nvml()
    lib_versions = sorted({v for _, v in libs if v}, key=Version)
    if not nv.ok:
        status = nv.error or "worker_failed"
        # The query's own account (how long, where it hung) where it has one, else what the status means.
        reason = nv.message or WORKER_REASONS.get(status, "the driver gave no answer")
        facts.append(Fact("driver.nvml.status", status, "nvml:init", "ok", reason, L_NVML))
    else:
        data = nv.data or {}
        _, err = _nvml_answer(data, "init")
        status = "ok" if err is None else err
        inc = data.get("incomplete")
        if err is None and isinstance(inc, dict):
            # The query hung or died part-way: what it answered is kept, the status says where it stopped.
            status = INCOMPLETE_STATUS.get(str(inc.get("reason")), "worker_failed")
            facts.append(Fact("driver.nvml.status", status, "nvml:%s" % inc.get("call"), "ok",
                              "%s: %s" % (WORKER_REASONS.get(status, "NVML gave no answer"), inc.get("message", "")),
                              L_NVML))
        elif err is None:
            facts.append(ok("driver.nvml.status", "ok", "nvml:init", L_NVML))
        else:
            reason = NVML_REASONS.get(err, f"NVML failed to initialise ({err})")
            if wsl and not libs and err == "NVML_ERROR_DRIVER_NOT_LOADED":
                reason = WSL_NOT_LOADED
            if err == "NVML_ERROR_LIB_RM_VERSION_MISMATCH":
                kv = kinfo.get("version") if kinfo else None
                if kv or lib_versions:
                    files = ", ".join(p.rsplit("/", 1)[-1] for p, _ in libs) or "no libnvidia-ml.so.<ver> found"
                    uv = ", ".join(lib_versions) or "unknown"
                    reason = (f"Driver/library version mismatch: the loaded kernel module is {kv or 'unknown'} "
                              f"({PROC_VERSION}) but the user-space library is {uv} ({files}); usually the driver "
                              "was upgraded without a reboot: reboot, or unload and reload the nvidia modules")
            facts.append(Fact("driver.nvml.status", err, "nvml:init", "ok", reason, L_NVML))

    version: Optional[str] = None
    cuda: Optional[str] = None
    why_no_version = ""
    why_no_cuda = ""
    if nv.ok and _nvml_answer(nv.data or {}, "init")[1] is None:  # NVML started (even if it hung later)
        data = nv.data or {}
        v, err = _nvml_answer(data, "system.driver_version")
        if err is None and isinstance(v, str) and _parse_version(v.strip()) is not None:
            version = v.strip()
            facts.append(ok("driver.version", version, "nvml:system.driver_version", L_VERSION))
        else:
            why_no_version = "NVML did not report the driver version (%s)" % (err or f"unexpected {v!r}")
        c, err = _nvml_answer(data, "system.cuda_driver_version")
        cuda = cuda_from_int(c) if err is None else None
        if cuda:
            facts.append(ok("driver.cuda_version", cuda, "nvml:system.cuda_driver_version", L_CUDA))
        else:
            why_no_cuda = "NVML did not report the CUDA driver version (%s)" % (err or f"unexpected {c!r}")
        if version and cuda:
            return facts, status

    # Fallback: nvidia-smi, only because NVML gave no answer.
    smi_driver, smi_cuda, smi_lib, res = _nvidia_smi(host)
    src = _cmd_src(SMI_QUERY)
    if version is None:
        if smi_driver:
            facts.append(ok("driver.version", smi_driver, src, L_VERSION))
            version = smi_driver
        else:
            reason = "; ".join(x for x in (why_no_version or _status_reason(facts), _smi_failure(res)) if x)
            maker = timed_out if res.timed_out else unknown
            facts.append(maker("driver.version", reason, src, L_VERSION))
    if cuda is None:
        if smi_cuda:
            facts.append(ok("driver.cuda_version", smi_cuda, _cmd_src(SMI_PLAIN), L_CUDA))
        else:
            reason = why_no_cuda or _status_reason(facts)
            if res.timed_out:
                facts.append(timed_out("driver.cuda_version", f"{reason}; {res.describe_failure()}", src,
                                       L_CUDA))
            else:
                facts.append(unknown("driver.cuda_version", reason, "nvml:system.cuda_driver_version", L_CUDA))
    if smi_lib and not lib_versions:
        facts.append(ok("driver.userspace.version", smi_lib, src, L_USER))
    return facts, status


def _status_reason(facts: List[Fact]) -> str:
    for f in facts:
        if f.key == "driver.nvml.status":
            return "NVML: %s" % (f.reason or f.value)
    return ""


def _smi_failure(res: CommandResult) -> str:
    if res.ok:
        return f"nvidia-smi printed no driver version ({res.stdout.strip()[:80]!r})"
    return "fallback " + res.describe_failure()


def _userspace_facts(libs: List[Tuple[str, str]]) -> List[Fact]:
    if not libs:
        return []
    src = "dir:" + ",".join(sorted({p.rsplit("/", 1)[0] for p, _ in libs}))
    ml = [v for p, v in libs if "libnvidia-ml" in p] or [v for _, v in libs]
    newest = max(ml, key=Version)
    facts = [ok("driver.userspace.version", newest, src, L_USER),
             ok("driver.userspace.libraries", [p for p, _ in libs], src, "User-space driver libraries")]
    distinct = sorted({v for _, v in libs}, key=Version)
    if len(distinct) > 1:
        facts.append(ok("driver.userspace.versions", distinct, src, "Several driver library versions installed"))
    return facts


#: The driver's graphics libraries (GLX, EGL, and the GL core its Vulkan driver lives in) and the files that register
#: them with the Vulkan loader and glvnd's EGL: NVIDIA's Ubuntu packaging installs them together in
#: libnvidia-gl-<flavour> (https://github.com/NVIDIA/ubuntu-packaging-nvidia-driver/blob/
#: 03c8e6169c2d3525774ba7e08be4574079d8dbc8/debian/templates/libnvidia-gl-flavour.install.in: libGLX_nvidia,
#: libEGL_nvidia, libGLESv2_nvidia, libnvidia-glcore, libnvidia-eglcore, libnvidia-glsi, libnvidia-rtcore,
#: libnvoptix, usr/share/vulkan/icd.d/nvidia_icd.json, usr/share/glvnd/egl_vendor.d/10_nvidia.json); the .run
#: installer leaves them all out with --no-opengl-files, the compute libraries (libcuda, libnvidia-ml) stay.
_GRAPHICS_LIB = lazyre.compile(
    r"^(?:libGLX_nvidia|libEGL_nvidia|libnvidia-glcore|libnvidia-eglcore)\.so(?:\.[0-9.]+)?$")
VULKAN_ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d")
EGL_VENDOR_DIRS = ("/usr/share/glvnd/egl_vendor.d", "/etc/glvnd/egl_vendor.d")
NVIDIA_INSTALLER = "/usr/bin/nvidia-installer"


#: A library the driver ships that its own libraries name in NEEDED: libnvidia-<part> (libnvidia-eglcore,
#: libnvidia-glcore, libnvidia-glsi, libnvidia-tls) or any name carrying the requester's own release number.
_DRIVER_PART = lazyre.compile(r"^libnvidia-[\w.-]+\.so(?:\.[0-9.]+)?$")


def _driver_needs(needed: Iterable[str], release: Optional[str]) -> List[str]:
    """The NEEDED entries of a driver library that name other libraries of the driver: libnvidia-*, or a name
    ending in the requester's own release (``.so.550.163.01``); libglvnd's, X11's and the C runtime's are not."""
    return [n for n in needed if _DRIVER_PART.match(n) or (release and n.endswith(".so." + release))]


def _unresolved_driver_needs(host: Host, libraries: List[str]) -> List[Dict[str, Any]]:
    """Each graphics library of the driver that programs open by its soname (libglvnd dlopens libEGL_nvidia.so.0
    and libGLX_nvidia.so.0 by name), as the loader finds it, whose NEEDED entries name other libraries of the
    driver that the loader finds nowhere (glibc's rules, :func:`envdoctor.probes.loader.search`): ``{"library",
    "needed" (the driver's ones), "missing"}``. A stale file of another release that no soname leads to is not
    judged; a library whose headers cannot be read, or a search that depends on an unreadable loader cache, says
    nothing."""
    from .loader import loader_config, own_search_paths, search, version_from_name

    sonames = sorted({posixpath.basename(p) for p in libraries if re.search(r"\.so\.\d+$", p)})
    if not sonames:
        return []
    config = loader_config(host)
    out: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    for soname in sonames:
        found = search(host, config, soname)
        real = found["resolved"]
        if not real or real in seen:
            continue
        seen.add(real)
        elf = host.elf(real)
        if not elf.ok:
            continue
        wanted = _driver_needs(elf.needed, version_from_name(posixpath.basename(real)))
        rpath, runpath = own_search_paths(elf.rpath, elf.runpath, posixpath.dirname(real))
        missing = []
        for name in wanted:
            res = search(host, config, name, rpath=rpath, runpath=runpath)
            if res["path"] is None and res["certain"]:
                missing.append(name)
        if missing:
            out.append({"library": real, "soname": soname, "needed": wanted, "missing": missing})
    return out


#: The registration files that name a graphics library for libglvnd's EGL and the Vulkan loader: their
#: ``ICD.library_path`` is a soname the loader searches for (``libEGL_nvidia.so.0``) or an absolute path
#: (https://github.com/NVIDIA/libglvnd/blob/master/src/EGL/icd_enumeration.md, "library_path").
_ICD_LIMIT = 64 * 1024


def _icd_library(host: Host, path: str) -> Optional[str]:
    """The ``ICD.library_path`` a vendor JSON file names, or None (unreadable, not JSON, no such field)."""
    import json

    text = host.read_text(path, limit=_ICD_LIMIT)
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        return None
    icd = doc.get("ICD") if isinstance(doc, dict) else None
    lib = icd.get("library_path") if isinstance(icd, dict) else None
    return lib if isinstance(lib, str) and lib and len(lib) <= 4096 and "\0" not in lib else None


#: A driver release as NVIDIA numbers it (``570.195.03``, ``390.157``): the soname's major alone (``.so.0``,
#: ``.so.1``, Tegra's unversioned files) is no release.
_DRIVER_RELEASE = lazyre.compile(r"^\d{3}\.\d+(?:\.\d+)?$")


def _graphics_releases(host: Host, libraries: List[str], registered: List[str]) -> List[Dict[str, Any]]:
    """The driver release of each graphics library programs would use: the vendor libraries opened by soname
    (libEGL_nvidia.so.0, libGLX_nvidia.so.0: libglvnd dlopens them by name), as the loader finds them, and the
    libraries the EGL vendor and Vulkan ICD files name (a soname, searched the same way, or an absolute path),
    each with the release its real file's name carries (``libEGL_nvidia.so.570.195.03``): ``{"name", "library",
    "release", "via"}``. A name the loader does not find, or a file whose name carries no release, is left out."""
    from .loader import loader_config, search, version_from_name

    wanted = [(n, "loader") for n in sorted({posixpath.basename(p) for p in libraries
                                             if re.search(r"\.so\.\d+$", p)})]
    for path in registered:
        lib = _icd_library(host, path)
        if lib:
            wanted.append((lib, path))
    if not wanted:
        return []
    config = loader_config(host)
    out: List[Dict[str, Any]] = []
    seen: Set[str] = set()
    for name, via in wanted:
        if name.startswith("/"):
            real = host.resolve(name) if host.exists(name) else None
        elif "/" in name:
            real = None  # a relative path: resolved against the JSON file's directory by libglvnd; not judged
        else:
            real = search(host, config, name)["resolved"]
        if not real or real in seen:
            continue
        release = version_from_name(posixpath.basename(real))
        if not release or not _DRIVER_RELEASE.match(release):
            continue
        seen.add(real)
        out.append({"name": name, "library": real, "release": release, "via": via})
    return out


def _graphics_files(host: Host, libs: List[Tuple[str, str]]) -> Fact:
    """``driver.graphics_files``: the driver's graphics libraries where the loader looks, beside its compute ones,
    with its Vulkan ICD and EGL vendor files, and the .run installer's program when it installed the driver."""
    dirs = list(dict.fromkeys(lib_search_dirs(host) + [posixpath.dirname(p) for p, _ in libs]))
    found = sorted(posixpath.join(d, n) for d in dirs for n in host.list_dir(d).names() if _GRAPHICS_LIB.match(n))
    icd = sorted(p for d in VULKAN_ICD_DIRS for p in host.glob_dir(d, r"nvidia_icd.*\.json"))
    egl = sorted(p for d in EGL_VENDOR_DIRS for p in host.glob_dir(d, r".*nvidia.*\.json"))
    value = {"libraries": found, "vulkan_icd": icd, "egl_vendor": egl, "searched": dirs,
             "installer": NVIDIA_INSTALLER if host.exists(NVIDIA_INSTALLER) else None,
             "unresolved": _unresolved_driver_needs(host, found),
             "releases": _graphics_releases(host, found, egl + icd),
             # an Apptainer/Singularity container (its own variables; the os probe's container test does not see it)
             "apptainer": host.getenv("APPTAINER_CONTAINER") or host.getenv("SINGULARITY_CONTAINER") or None}
    return ok("driver.graphics_files", value, "dir:" + ",".join(dirs + list(VULKAN_ICD_DIRS + EGL_VENDOR_DIRS)),
              "Driver graphics libraries (OpenGL, EGL, Vulkan)")


#: Where 32-bit (i386) libraries live on x86_64 distributions: Debian's and Ubuntu's multiarch directories (Ubuntu's
#: libnvidia-gl-<branch>:i386 installs libGLX_nvidia.so.0 and libnvidia-glcore.so.<version> in
#: /usr/lib/i386-linux-gnu), Arch's and the .run installer's /usr/lib32 (its 32-bit compatibility libraries), and on
#: the systems whose 64-bit libraries are in /usr/lib64 (Fedora, RHEL, openSUSE: their -32bit/.i686 packages),
#: /usr/lib. The last is not read where it holds 64-bit objects (Arch: the loader cache flags them x86-64; without
#: the cache, where /usr/lib64 is missing or a link to it). Subfolders named nvidia* of the others (Ubuntu xenial's
#: /usr/lib32/nvidia-384, Debian's nvidia/current) are read too.
LIB32_DIRS = ("/usr/lib/i386-linux-gnu", "/lib/i386-linux-gnu", "/usr/lib32", "/lib32", "/usr/lib")
#: dpkg's list of the foreign architectures `dpkg --add-architecture` enabled (one a line).
DPKG_ARCH = "/var/lib/dpkg/arch"
#: Files only a 32-bit x86 C library installs: its dynamic loader and libc in the 32-bit directories.
LIBC32_FILES = ("/lib/ld-linux.so.2", "/usr/lib/i386-linux-gnu/libc.so.6", "/lib/i386-linux-gnu/libc.so.6",
                "/usr/lib32/libc.so.6")
APT_SOURCES_DIR = "/etc/apt/sources.list.d"
#: NVIDIA's CUDA apt repository (its packages are amd64/arm64/... only: no i386 driver libraries).
_CUDA_REPO = lazyre.compile(r"developer\.download\.nvidia\.com/compute/cuda/repos/")
_APT_SOURCE_FILE = lazyre.compile(r"^/etc/apt/sources\.list\.d/[^/]+\.(?:list|sources)$")


def keep_cuda_repo_lines(text: str) -> str:
    """What a snapshot keeps of an apt source file: the lines naming NVIDIA's CUDA repository (other lines may name
    private repositories, with credentials in their URLs)."""
    return "".join(line for line in text.splitlines(True) if _CUDA_REPO.search(line))


FILE_PATTERN_FILTERS.append((_APT_SOURCE_FILE, keep_cuda_repo_lines))
#: The loader cache's flags of a 32-bit x86 object (glibc's ldconfig prints "libc6" alone for them).
_FLAGS_32 = lazyre.compile(r"^libc6(?:,\s*hwcap:.*)?$")


def _graphics_files_32bit(host: Host) -> Fact:
    """``driver.graphics_files_32bit``: the driver's 32-bit graphics libraries (libGLX_nvidia, libnvidia-glcore ...:
    what 32-bit OpenGL/Vulkan programs load) in the 32-bit library directories and the loader cache's 32-bit
    entries, with what says i386 programs run here (dpkg's foreign architectures, a 32-bit C library) and NVIDIA's
    CUDA apt repository when it is configured (it publishes no i386 packages)."""
    from .loader import read_ld_cache

    entries, _ = read_ld_cache(host)
    if entries:  # Arch's /usr/lib holds 64-bit objects: the cache flags them "x86-64"
        usr_lib_64 = any(posixpath.dirname(path) == "/usr/lib" and "x86-64" in flags for _s, flags, path in entries)
    else:  # /usr/lib is the 32-bit directory where /usr/lib64 is a folder of its own (Fedora, openSUSE)
        usr_lib_64 = not host.is_dir("/usr/lib64") or host.read_link("/usr/lib64").ok
    dirs: List[str] = []
    for d in LIB32_DIRS:
        if d == "/usr/lib" and usr_lib_64:
            continue  # 64-bit libraries are here (Arch): not a 32-bit directory
        dirs.append(d)
        if d != "/usr/lib":  # Ubuntu's /usr/lib/nvidia-<branch> is 64-bit
            dirs += sorted(posixpath.join(d, n) for n in host.list_dir(d).names()[:4096]
                           if n.startswith("nvidia"))[:8]
    dirs += [posixpath.join(d, "current") for d in dirs if posixpath.basename(d) == "nvidia"]
    wide = {path for _s, flags, path in entries or () if "64" in flags}
    found = sorted(p for p in (posixpath.join(d, n) for d in dirs for n in host.list_dir(d).names()
                               if _GRAPHICS_LIB.match(n)) if p not in wide)
    cached = sorted({path for soname, flags, path in entries or () if _GRAPHICS_LIB.match(soname)
                     and _FLAGS_32.match(flags.strip())})
    arch_text = host.read_text(DPKG_ARCH, limit=4096)
    foreign = [a.strip() for a in arch_text.splitlines() if a.strip()] if arch_text is not None else None
    libc32 = next((p for p in LIBC32_FILES if host.exists(p)), None)
    if libc32 is None and entries:
        libc32 = next((path for soname, flags, path in entries if soname == "libc.so.6"
                       and _FLAGS_32.match(flags.strip())), None)
    repo = None
    for path in sorted(host.glob_dir(APT_SOURCES_DIR, r"[\w.+-]+\.(?:list|sources)"))[:32]:
        if _CUDA_REPO.search(host.read_text(path, limit=16 * 1024) or ""):
            repo = path
            break
    value = {"libraries": sorted(set(found) | set(cached)), "searched": dirs, "dpkg_architectures": foreign,
             "libc32": libc32, "cuda_apt_repo": repo}
    return ok("driver.graphics_files_32bit", value, "dir:" + ",".join(dirs + [DPKG_ARCH, APT_SOURCES_DIR]),
              "Driver 32-bit graphics libraries (OpenGL, EGL, Vulkan)")


#: Container runtimes that start GPU containers without root (a Slurm job through pyxis, a user's Apptainer
#: run): they cannot load nvidia_uvm or create its device node on demand, as CUDA (setuid nvidia-modprobe) and
#: Docker's toolkit (nvidia-container-cli --load-kmods) do, so the node must exist before the job starts
#: (https://github.com/NVIDIA/enroot/issues/106). Name -> its configuration directory.
UNPRIVILEGED_RUNTIMES = (("enroot", "/etc/enroot"), ("apptainer", "/etc/apptainer"),
                         ("singularity", "/etc/singularity"))


def _unprivileged_runtimes(host: Host) -> Fact:
    """``driver.unprivileged_runtimes``: the unprivileged container runtimes installed on this host (their
    program on PATH or their configuration directory)."""
    found = [name for name, conf in UNPRIVILEGED_RUNTIMES if host.which(name) or host.is_dir(conf)]
    return ok("driver.unprivileged_runtimes", found, "dir:" + ",".join(c for _, c in UNPRIVILEGED_RUNTIMES),
              "Unprivileged container runtimes")


#: The unified-memory module CUDA needs (/dev/nvidia-uvm) under the names driver packages installed it as:
#: nvidia-uvm.ko / nvidia_uvm.ko (NVIDIA's installer, today's packages), and a packager's renamed copy,
#: nvidia_NNN_uvm.ko, nvidia-NNN-updates-uvm.ko (Ubuntu's versioned packages before 18.04: their DKMS installs
#: "nvidia_346_uvm.ko" into /lib/modules/<release>/updates/dkms/ and the plain names resolve only through the
#: package's modprobe.d aliases, "alias nvidia-uvm nvidia_340-uvm" in /etc/modprobe.d/nvidia-graphics-drivers.conf;
#: a dkms.conf with DEST_MODULE_NAME="$PACKAGE_NAME-uvm" does the same elsewhere).
_UVM_KO = lazyre.compile(r"^(?P<name>nvidia(?:[-_][\w-]*?)?[-_]uvm)\.ko(?:\.(?:xz|zst|gz))?$")
#: "alias nvidia-uvm nvidia_331_updates_uvm" (modprobe treats - and _ in module names alike).
_UVM_ALIAS = lazyre.compile(r"^\s*alias\s+nvidia[-_]uvm\s+(?P<target>\S+)\s*$", re.M)
#: The setuid helper through which libcuda loads nvidia_uvm and creates its node for a user's program.
NVIDIA_MODPROBE = "/usr/bin/nvidia-modprobe"


def module_name(name: str) -> str:
    """A module's name as modprobe compares it: dashes and underscores alike."""
    return name.replace("-", "_")


def _uvm_module(host: Host) -> Fact:
    """``driver.uvm_module``: the nvidia_uvm module: loaded or not (/sys/module/nvidia_uvm), the files that hold
    it for the running kernel (under whatever name the driver's package gave it), what an ``alias nvidia-uvm``
    line of modprobe's configuration makes that name resolve to, and the nvidia-modprobe helper."""
    release = host.uname().get("release", "")
    files: List[str] = []
    seen: Set[str] = set()
    for root in MODULE_ROOTS if release else ():
        base = posixpath.join(root, release)
        if not host.is_dir(base):
            continue
        dirs = [base + "/" + s for s in MODULE_SUBDIRS]
        dirs += [base + "/kernel/" + n for n in host.list_dir(base + "/kernel").names() if n.startswith("nvidia")]
        for d in dirs:
            for n in host.list_dir(d).names():
                if _UVM_KO.match(n) and (d + "/" + n)[len(base):] not in seen:
                    seen.add((d + "/" + n)[len(base):])
                    files.append(d + "/" + n)
    aliases: List[Dict[str, str]] = []
    for d in MODPROBE_DIRS:
        for path in host.glob_dir(d, r".+\.conf"):
            text = host.read_text(path, limit=64 * 1024) or ""
            aliases += [{"file": path, "target": m.group("target")} for m in _UVM_ALIAS.finditer(text)]
    helper = host.which("nvidia-modprobe") or (NVIDIA_MODPROBE if host.exists(NVIDIA_MODPROBE) else None)
    value = {"loaded": host.is_dir("/sys/module/nvidia_uvm"), "files": files, "aliases": aliases,
             "modprobe_helper": helper}
    return ok("driver.uvm_module", value, "dir:/sys/module/nvidia_uvm," + ",".join(MODULE_ROOTS + MODPROBE_DIRS),
              "nvidia_uvm module (CUDA's unified memory)")


def _kernel_log(host: Host) -> Fact:
    """``driver.kernel_log``: the NVIDIA driver's error and warning lines of the kernel log (why a GPU failed
    to initialise, Xid errors), the last few hundred; unknown, saying why, where it cannot be read."""
    label = "NVIDIA driver messages in the kernel log"
    src = _cmd_src(list(KERNEL_LOG_ARGV))
    res = host.kernel_log()
    if res.ok:
        return ok("driver.kernel_log", [line for line in res.stdout.splitlines() if line.strip()], src, label)
    said = (res.stderr + res.stdout).lower()
    if res.not_found:
        why = "dmesg is not installed"
    elif "not permitted" in said or "permission denied" in said:
        why = "only root may read the kernel log on this machine (kernel.dmesg_restrict): run as root to have it read"
    else:
        why = res.describe_failure()
    return unknown("driver.kernel_log", why, src, label)


#: Where the kernel's firmware loader looks for a file, in its order (``fw_path[]`` of
#: drivers/base/firmware_loader/main.c): the ``firmware_class.path`` parameter, then these, ``{}`` the release.
FIRMWARE_PARAM = "/sys/module/firmware_class/parameters/path"
FIRMWARE_DIRS = ("/lib/firmware/updates/{}", "/lib/firmware/updates", "/lib/firmware/{}", "/lib/firmware")
#: The GSP firmware files of a driver version (``nvidia/<version>/gsp_ga10x.bin``; compressed by some distributions).
_GSP_FILE = lazyre.compile(r"^gsp_\w+\.bin(\.xz|\.zst)?$")
#: A kernel-log line of the firmware loader failing on an NVIDIA firmware file.
_FIRMWARE_FAILED = lazyre.compile(r"Direct firmware load for nvidia/")


def _gsp_firmware(host: Host, version: str) -> Fact:
    """``driver.gsp_firmware``: the GSP firmware files of the loaded driver's version where the kernel's firmware
    loader looks for them (``nvidia/<version>/gsp_*.bin``): ``{"version", "files", "searched"}``."""
    release = host.uname().get("release", "")
    param = (host.read_text(FIRMWARE_PARAM) or "").strip()
    roots = ([param] if param.startswith("/") else []) + [d.format(release) for d in FIRMWARE_DIRS
                                                           if release or "{}" not in d]
    searched, files = [], []
    for root in roots:
        where = posixpath.join(root, "nvidia", version)
        searched.append(where)
        files += [posixpath.join(where, n) for n in host.list_dir(where).names() if _GSP_FILE.match(n)]
    return ok("driver.gsp_firmware", {"version": version, "files": files, "searched": searched},
              "dir:" + ",".join(searched), "GSP firmware of the loaded driver")


def _in_kernel_drivers(host: Host) -> List[Fact]:
    facts: List[Fact] = []
    for name, modules, pci_drivers, label in (
        ("nouveau", ("nouveau",), ("nouveau",), "nouveau"),
        ("nova", ("nova_core", "nova_drm"), ("nova_core", "NovaCore", "nova-core"), "nova (Rust nova-core)"),
    ):
        loaded = [m for m in modules if host.is_dir("/sys/module/" + m)]
        facts.append(ok(f"driver.{name}.loaded", bool(loaded), "dir:/sys/module/" + modules[0],
                        f"{label} kernel module loaded"))
        bound: List[str] = []
        src = "dir:/sys/bus/pci/drivers/" + pci_drivers[0]
        for drv in pci_drivers:
            listing = host.list_dir("/sys/bus/pci/drivers/" + drv)
            if listing.ok:
                src = "dir:" + listing.path
                bound.extend(n for n in listing.names() if _PCI_ADDR.match(n))
        facts.append(ok(f"driver.{name}.bound", sorted(set(bound)), src, f"GPUs driven by {label}"))
    return facts


#: Where a Kubernetes node keeps its kubelet (PATH first; sudo's secure_path may leave /usr/local/bin out), and the
#: directory the NVIDIA GPU Operator's driver container works in on the host (its RUN_DIR, /run/nvidia).
KUBELET_DIRS = ("/usr/bin", "/usr/local/bin", "/usr/sbin", "/opt/bin")
GPU_OPERATOR_RUN_DIR = "/run/nvidia"


def _kubernetes_node(host: Host) -> Fact:
    """``driver.kubernetes_node``: a host without a driver of its own that is a Kubernetes node (a kubelet, or the
    GPU Operator's /run/nvidia): the NVIDIA GPU Operator's driver container may provide its driver."""
    where = host.which("kubelet") or next((posixpath.join(d, "kubelet") for d in KUBELET_DIRS
                                            if host.exists(posixpath.join(d, "kubelet"))), None)
    if where is None and host.is_dir(GPU_OPERATOR_RUN_DIR):
        where = GPU_OPERATOR_RUN_DIR
    return ok("driver.kubernetes_node", where is not None, "file:" + where if where else "path:kubelet",
              "Kubernetes node (a driver container may provide the driver)")


def _blacklist(host: Host) -> Fact:
    where: List[str] = []
    for d in MODPROBE_DIRS:
        for path in host.glob_dir(d, r".+\.conf"):
            text = host.read_text(path, limit=64 * 1024)
            if text and _BLACKLIST.search(text):
                where.append(path)
    cmdline = host.read_text("/proc/cmdline", limit=16 * 1024) or ""
    if re.search(r"(?:^|\s)modprobe\.blacklist=(?:\S*,)?nouveau(?:,|\s|$)", cmdline):
        where.append("/proc/cmdline")
    src = "file:" + ",".join(where) if where else "dir:" + ",".join(MODPROBE_DIRS)
    return ok("driver.modprobe_blacklist_nouveau", bool(where), src, "nouveau blacklisted")


def _module_on_disk(host: Host, wsl: bool) -> List[Fact]:
    key, label = "driver.module_for_running_kernel", "nvidia module built for the running kernel"
    release = host.uname().get("release", "")
    if wsl:
        return [not_supported(key, "uname", label, "on WSL2 the driver runs on Windows; no Linux module is needed")]
    facts: List[Fact] = []
    bases = [posixpath.join(root, release) for root in MODULE_ROOTS] if release else []
    present = [b for b in bases if host.is_dir(b)]
    base = present[0] if present else f"/lib/modules/{release}"
    found: List[str] = []
    seen: Set[str] = set()
    for b in present:  # on a merged-/usr system both name the same directory: each module counted once
        for m in _nvidia_modules(host, b):
            if m[len(b):] not in seen:
                seen.add(m[len(b):])
                found.append(m)

    dkms = host.run(["dkms", "status"], timeout=10)
    entries = parse_dkms_status(dkms.stdout) if dkms.ok else []
    dsrc = "command:dkms status"
    if dkms.ok:
        facts.append(ok("driver.dkms.status", entries, dsrc, "DKMS nvidia modules"))
    elif not dkms.not_found:
        maker = timed_out if dkms.timed_out else unknown
        facts.append(maker("driver.dkms.status", dkms.describe_failure(), dsrc, "DKMS nvidia modules"))
    dkms_here = [e for e in entries if e["kernel"] == release and e["state"].startswith("installed")]

    if release:
        facts.append(_newer_kernels(host, release, entries))
    if found or dkms_here:
        src = ("dir:" + found[0].rsplit("/", 1)[0]) if found else dsrc
        facts.append(ok(key, True, src, label))
    elif not release:
        facts.append(unknown(key, "the kernel release is unknown", "uname", label))
    elif not present and not entries:
        facts.append(unknown(key, f"{base} does not exist here (inside a container?)", "dir:" + base, label))
    else:
        fact = ok(key, False, "dir:" + base, label)
        others = sorted({e["kernel"] for e in entries if e["state"].startswith("installed")})
        fact.reason = ("no nvidia.ko under {}{}".format(base, "; DKMS built it only for " + ", ".join(others)
                                                       if others else ""))
        facts.append(fact)
        facts.append(_kernel_headers(host, release))
        facts.append(ok("driver.dkms.failure", _dkms_failure(host, release), "dir:" + DKMS_TREE,
                        "A failed DKMS build of the nvidia module for the running kernel"))
    return facts


#: A kernel's image, which tells an installed kernel from a modules directory left behind by a removed one:
#: /boot/vmlinuz-<release> (vmlinux on POWER, Image on some arm64 builds, kernel- on Gentoo), or the image in
#: the modules directory itself (Fedora, Arch: /usr/lib/modules/<release>/vmlinuz).
KERNEL_IMAGES = ("/boot/vmlinuz-{}", "/boot/vmlinux-{}", "/boot/Image-{}", "/boot/kernel-{}",
                 "{root}/{}/vmlinuz")
#: DKMS's tree; a build writes <module>/<version>/build/make.log, headed "DKMS make.log for <module>-<version>
#: for kernel <release> (<arch>)", and leaves it there when the build fails (dell/dkms dkms.in, do_build:
#: "consult $build_log for more information"; a successful build moves it to <release>/<arch>/log/make.log).
DKMS_TREE = "/var/lib/dkms"
_DKMS_LOG_KERNEL = lazyre.compile(r"make\.log for \S+ for kernel (\S+)")
#: The first compiler or kbuild error of a build log, else its last make error line.
_LOG_ERROR = lazyre.compile(r"^.*(?:\berror:|\bERROR:|\*\*\* Failed|\bFATAL\b).*$", re.M)
_LOG_MAKE = lazyre.compile(r"^.*\*\*\*.*Error \d+.*$", re.M)


def _kernel_key(release: str) -> Tuple[int, ...]:
    """A kernel release's numbers, in order, to tell which of two releases is newer (6.6.89_1 > 6.6.87_1,
    5.15.0-105-generic > 5.15.0-97-generic)."""
    return tuple(int(n) for n in re.findall(r"\d+", release)[:6])


def _nvidia_modules(host: Host, base: str) -> List[str]:
    dirs = [base + "/" + s for s in MODULE_SUBDIRS]
    dirs += [base + "/kernel/" + n for n in host.list_dir(base + "/kernel").names() if n.startswith("nvidia")]
    return [d + "/" + n for d in dirs for n in host.list_dir(d).names() if _NVIDIA_KO.match(n)]


def _dkms_failure(host: Host, release: str) -> Optional[Dict[str, Any]]:
    """The DKMS build log of an nvidia module left by a failed build for ``release`` (its header names that
    kernel, or, a log without its header, the log names that kernel's tree), with the line that says why."""
    for module in host.list_dir(DKMS_TREE).names():
        if not re.fullmatch(r"nvidia[\w-]*", module):
            continue
        for version in host.list_dir(posixpath.join(DKMS_TREE, module)).names():
            path = posixpath.join(DKMS_TREE, module, version, "build", "make.log")
            text = host.read_text(path, limit=512 * 1024)
            if not text:
                continue
            head = _DKMS_LOG_KERNEL.search(text[:4096])
            named = head.group(1) == release if head else re.search(
                r"(?<![\w.])%s(?![\w.])" % re.escape(release), text) is not None
            if not named:
                continue
            first = _LOG_ERROR.search(text)
            make = [m.group(0) for m in _LOG_MAKE.finditer(text)]
            line = first.group(0).strip() if first else (make[-1].strip() if make else None)
            return {"module": module, "version": version, "log": path,
                    "reason": line[:300] if line else None}
    return None


def _newer_kernels(host: Host, release: str, entries: List[Dict[str, str]]) -> Fact:
    """``driver.newer_kernels``: the installed kernels newer than the running one (boot loaders start the
    newest by default), each with its nvidia modules on disk, whether DKMS says it installed one for it, whether
    its headers are there, and the log of a failed DKMS build for it."""
    seen: Dict[str, str] = {}
    for root in MODULE_ROOTS:
        for name in host.list_dir(root).names():
            if name not in seen and name != release and _kernel_key(name) > _kernel_key(release):
                seen[name] = posixpath.join(root, name)
    out: List[Dict[str, Any]] = []
    for rel in sorted(seen, key=_kernel_key):
        base = seen[rel]
        image = next((p for p in (t.format(rel, root=posixpath.dirname(base)) for t in KERNEL_IMAGES)
                      if host.exists(p)), None)
        if image is None:
            continue
        modules = _nvidia_modules(host, base)
        dkms_installed = any(e["kernel"] == rel and e["state"].startswith("installed") for e in entries)
        item: Dict[str, Any] = {"release": rel, "image": image, "modules": modules,
                                "dkms_installed": dkms_installed, "headers": host.is_dir(base + "/build")}
        if not modules and not dkms_installed:
            item["dkms_failure"] = _dkms_failure(host, rel)
        out.append(item)
    return ok("driver.newer_kernels", out, "dir:" + ",".join(MODULE_ROOTS), "Installed kernels newer than the "
              "running one")


def _kernel_headers(host: Host, release: str) -> Fact:
    """Whether the running kernel's headers are installed (what DKMS needs to build the module for it):
    /lib/modules/<release>/build, or the distributions' header trees."""
    candidates = [f"{root}/{release}/build" for root in MODULE_ROOTS] + [f"/usr/src/linux-headers-{release}",
                                                                         f"/usr/src/kernels/{release}"]
    present = [p for p in candidates if host.is_dir(p)]
    return ok("kernel.headers", {"release": release, "present": bool(present), "path": present[0] if present
                                 else None}, "dir:" + ",".join(candidates), "Headers of the running kernel")


def _secure_boot(host: Host) -> Fact:
    key, label = "driver.secure_boot", "Secure Boot"
    if not host.is_dir("/sys/firmware/efi"):
        return not_supported(key, "dir:/sys/firmware/efi", label,
                             "legacy BIOS boot (no /sys/firmware/efi): Secure Boot does not apply")
    var = host.read_file(SECURE_BOOT_VAR, limit=64)
    # efivarfs: 4 bytes of attributes, then the variable's data (1 byte: 1 = enabled).
    if var.data is not None and len(var.data) >= 5 and var.data[4] in (0, 1):
        return ok(key, var.data[4] == 1, "file:" + SECURE_BOOT_VAR, label)
    argv = ["mokutil", "--sb-state"]
    res = host.run(argv, timeout=5)
    text = (res.stdout + "\n" + res.stderr).lower()
    if "secureboot enabled" in text:
        return ok(key, True, _cmd_src(argv), label)
    if "secureboot disabled" in text:
        return ok(key, False, _cmd_src(argv), label)
    if "doesn't support secure boot" in text or "not supported" in text:
        return not_supported(key, _cmd_src(argv), label, "the firmware does not support Secure Boot")
    why = ("{} is {}".format(SECURE_BOOT_VAR, f"unreadable ({var.error})" if var.data is None else "malformed")
           + "; " + (res.describe_failure() if not res.ok else f"mokutil said {res.stdout.strip()[:80]!r}"))
    if res.timed_out:
        return timed_out(key, why, _cmd_src(argv), label)
    return unknown(key, why, "file:" + SECURE_BOOT_VAR, label)


def _module_signer(host: Host) -> List[Fact]:
    argv = ["modinfo", "-F", "signer", "nvidia"]
    res = host.run(argv, timeout=5)
    src = _cmd_src(argv)
    label = "nvidia module signed"
    if res.ok:
        signer = res.stdout.strip()
        facts = [ok("driver.module_signed", bool(signer), src, label)]
        if signer:
            facts.append(ok("driver.module_signer", signer.splitlines()[0], src, "Module signed by"))
        return facts
    maker = timed_out if res.timed_out else unknown
    return [maker("driver.module_signed", res.describe_failure(), src, label)]


#: Where distributions keep the Machine Owner Key that DKMS/akmods sign modules with: Ubuntu/Mint
#: (update-secureboot-policy, shim-signed), DKMS 3 (mok.pub), Fedora akmods.
MOK_KEYS = ("/var/lib/shim-signed/mok/MOK.der", "/var/lib/dkms/mok.pub", "/etc/pki/akmods/certs/public_key.der")


def _mok_keys(host: Host) -> List[Fact]:
    """Whether each module-signing key present is enrolled (``mokutil --test-key``): a module signed with a key
    that is not enrolled is refused under Secure Boot just like an unsigned one."""
    keys = []
    src = "command:mokutil --test-key"
    for path in MOK_KEYS:
        if not host.exists(path):
            continue
        argv = ["mokutil", "--test-key", path]
        res = host.run(argv, timeout=5)
        text = (res.stdout + "\n" + res.stderr).lower()
        enrolled = False if "not enrolled" in text else True if "already enrolled" in text else None
        keys.append({"path": path, "enrolled": enrolled,
                     **({} if enrolled is not None else {"why": res.describe_failure() if not res.ok
                                                          else "mokutil said %r" % res.stdout.strip()[:80]})})
        src = _cmd_src(argv)
    if not keys:
        return []
    return [ok("driver.mok_keys", keys, src, "Module signing keys (MOK)")]


#: ``mokutil --list-enrolled`` prints each enrolled Machine Owner Key as a certificate (OpenSSL's text form):
#: "Issuer: C=US, O=..., CN=<name>" and "Subject: ..., CN=<name>", a long name wrapped onto more indented lines;
#: ``modinfo -F signer`` names a module's signing key by the common name of its certificate's issuer (the subject
#: too, for a self-signed key).
_NAME_FIELD = lazyre.compile(r"^\s*(?:Issuer|Subject):\s*(?P<name>.*)$")
_FIELD = lazyre.compile(r"^\s*[A-Za-z][A-Za-z0-9 ]*:(?:\s|$)")
_CN = lazyre.compile(r"(?:^|[,/]\s*)CN\s*=\s*(?P<cn>[^,/]+?)\s*(?=,|/|$)")


def mok_names(text: str) -> List[str]:
    """The common names of the issuers and subjects of the certificates ``mokutil --list-enrolled`` prints."""
    names: List[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _NAME_FIELD.match(line)
        if not m:
            continue
        parts = [m.group("name").strip()]
        indent = len(line) - len(line.lstrip())
        for nxt in lines[i + 1:i + 8]:  # the name's continuation lines: indented deeper, up to the next field
            if not nxt.strip() or len(nxt) - len(nxt.lstrip()) <= indent or _FIELD.match(nxt):
                break
            parts.append(nxt.strip())
        for cn in _CN.finditer(" ".join(parts)):
            name = cn.group("cn").strip()[:200]
            if name and name not in names:
                names.append(name)
    return names


def _mok_enrolled(host: Host) -> List[Fact]:
    """``driver.mok_enrolled``: the common names of the Machine Owner Keys enrolled (``mokutil --list-enrolled``),
    against which a module's signer is told trusted or not."""
    argv = ["mokutil", "--list-enrolled"]
    res = host.run(argv, timeout=5)
    key, label, src = "driver.mok_enrolled", "Enrolled Machine Owner Keys", _cmd_src(argv)
    text = res.stdout + "\n" + res.stderr
    if res.not_found:
        return []
    if re.search(r"MokList(?:RT)? is empty", text):
        return [ok(key, [], src, label)]
    if not res.ok:
        maker = timed_out if res.timed_out else unknown
        return [maker(key, res.describe_failure(), src, label)]
    names = mok_names(res.stdout)
    if not names:
        return [unknown(key, "mokutil listed no certificate subject (%r)" % res.stdout.strip()[:80], src, label)]
    return [ok(key, names, src, label)]


#: ``modinfo -F license``: the open kernel modules are dual-licensed, the proprietary ones are NVIDIA's.
MODULE_LICENSES = {"Dual MIT/GPL": "open", "NVIDIA": "proprietary"}


def _module_on_disk_flavor(host: Host) -> List[Fact]:
    """``driver.module_on_disk.flavor``: open or proprietary, from the license of the nvidia module installed for
    the running kernel (modinfo by name reads the file under /lib/modules/$(uname -r), loaded or not)."""
    argv = ["modinfo", "-F", "license", "nvidia"]
    res = host.run(argv, timeout=5)
    key, label = "driver.module_on_disk.flavor", "nvidia module on disk: flavour"
    if not res.ok:
        if res.not_found:
            return []
        maker = timed_out if res.timed_out else unknown
        return [maker(key, res.describe_failure(), _cmd_src(argv), label)]
    text = res.stdout.strip().splitlines()[0].strip() if res.stdout.strip() else ""
    if text in MODULE_LICENSES:
        return [ok(key, MODULE_LICENSES[text], _cmd_src(argv), label)]
    return [unknown(key, "modinfo names the license %r, neither NVIDIA's open nor its proprietary one" % text[:60],
                    _cmd_src(argv), label)]


def _module_on_disk_version(host: Host) -> List[Fact]:
    """The version of the nvidia module installed for the running kernel (what the next boot loads): modinfo
    by name reads the file under /lib/modules/$(uname -r), not the module in memory."""
    argv = ["modinfo", "-F", "version", "nvidia"]
    res = host.run(argv, timeout=5)
    text = res.stdout.strip().splitlines()[0].strip() if res.ok and res.stdout.strip() else ""
    if not re.match(r"^\d+\.\d+(\.\d+)?$", text):
        return []
    return [ok("driver.module_on_disk.version", text, _cmd_src(argv), "nvidia module on disk (next boot)")]


def _nvswitch(host: Host, dev_names: Tuple[str, ...]) -> List[Fact]:
    nodes = [n for n in dev_names if n.startswith("nvidia-nvswitch")]
    proc = host.list_dir("/proc/driver/nvidia-nvswitch/devices")
    present = bool(nodes) or bool(proc.names())
    src = "dir:/dev" if nodes else "dir:/proc/driver/nvidia-nvswitch/devices"
    facts = [ok("driver.nvswitch.present", present, src, "NVSwitch present")]
    if present:
        fm = _state_of_service(host, "nvidia-fabricmanager", "driver.fabric_manager.state", "Fabric manager service")
        if fm is not None:
            facts.append(fm)
            if fm.known and fm.value != "active":
                # why it does not run: most often another version than the driver's, which it refuses
                argv = ["nv-fabricmanager", "--version"]
                res = host.run(argv, timeout=5)
                m = re.search(r"version is\s*:\s*(\d+\.\d+(?:\.\d+)?)", res.stdout + res.stderr)
                if m:
                    facts.append(ok("driver.fabric_manager.version", m.group(1), _cmd_src(argv),
                                    "Fabric manager version"))
    return facts


# -- CUDA MPS --------------------------------------------------------------------
#
# The MPS control daemon (nvidia-cuda-mps-control -d) listens in its pipe directory (CUDA_MPS_PIPE_DIRECTORY,
# default /tmp/nvidia-mps) and writes its pid to nvidia-cuda-mps-control.pid there, a file that goes when it stops
# (its control socket stays). It starts one MPS server (nvidia-cuda-mps-server, its child) at a time, with the uid of
# the client that asked; a client of another uid waits until that server has no clients and exits (the
# nvidia-cuda-mps-control man page; https://docs.nvidia.com/deploy/mps/). Both names are cut to "nvidia-cuda-mps" in
# /proc/<pid>/comm and status (15 characters), so the server is told from the daemon by its parent.

MPS_PIPE_DEFAULT = "/tmp/nvidia-mps"
MPS_PID_FILE = "nvidia-cuda-mps-control.pid"
MPS_COMM = "nvidia-cuda-mps"
PROC_SELF_STATUS = "/proc/self/status"
PASSWD = "/etc/passwd"
#: How many /proc entries the look for MPS servers reads at most (a hostile or huge process table).
MPS_MAX_PIDS = 65536
MAX_PASSWD_BYTES = 256 * 1024
_STATUS_FIELD = lazyre.compile(r"^(?P<name>Name|PPid|Uid):[ \t]*(?P<value>[^\n]*)$", re.M)


def _proc_status(text: str) -> Dict[str, str]:
    """Name, PPid and Uid of a /proc/<pid>/status text (those present)."""
    return {m.group("name"): m.group("value").strip() for m in _STATUS_FIELD.finditer(text)}


def _status_uid(fields: Dict[str, str]) -> Optional[int]:
    """The effective uid of a status' ``Uid:`` line (real, effective, saved, filesystem), or None."""
    parts = fields.get("Uid", "").split()
    uid = parts[1] if len(parts) > 1 else (parts[0] if parts else "")
    return int(uid) if uid.isdigit() else None


def keep_status_fields(text: str) -> str:
    """What a snapshot keeps of a /proc/<pid>/status: the name, parent and uids."""
    return "".join(m.group(0) + "\n" for m in _STATUS_FIELD.finditer(text))


def keep_mps_comm(text: str) -> str:
    """What a snapshot keeps of a /proc/<pid>/comm: an MPS process' name, nothing of any other process'."""
    return text if text.strip() == MPS_COMM else ""


def keep_passwd_ids(text: str) -> str:
    """What a snapshot keeps of /etc/passwd: each entry's name and uid (no home, shell or comment)."""
    out = []
    for line in text.splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].strip().isdigit():
            out.append("%s:x:%s:" % (parts[0], parts[2].strip()))
    return "".join(x + "\n" for x in out)


FILE_FILTERS[PROC_SELF_STATUS] = keep_status_fields
FILE_FILTERS[PASSWD] = keep_passwd_ids
FILE_PATTERN_FILTERS.append((lazyre.compile(r"^/proc/\d+/status$"), keep_status_fields))
FILE_PATTERN_FILTERS.append((lazyre.compile(r"^/proc/\d+/comm$"), keep_mps_comm))


def _passwd(host: Host) -> Dict[int, str]:
    """uid -> user name, from /etc/passwd (empty where unreadable)."""
    names: Dict[int, str] = {}
    for line in (host.read_text(PASSWD, limit=MAX_PASSWD_BYTES) or "").splitlines():
        parts = line.split(":")
        if len(parts) >= 3 and parts[2].strip().isdigit() and parts[0]:
            names.setdefault(int(parts[2].strip()), parts[0][:64])
    return names


def _me(host: Host, names: Dict[int, str]) -> Tuple[Optional[int], str]:
    """(the uid envdoctor runs as, how it is known): /proc/self/status; else (a snapshot without it) the login
    name of the environment (USER, LOGNAME) in /etc/passwd."""
    text = host.read_text(PROC_SELF_STATUS, limit=16384)
    uid = _status_uid(_proc_status(text)) if text is not None else None
    if uid is not None:
        return uid, "file:" + PROC_SELF_STATUS
    env = host.environ()
    login = env.get("USER") or env.get("LOGNAME") or ""
    if login == "root":
        return 0, "env:USER"
    match = [u for u, n in names.items() if n == login] if login else []
    return (match[0], "env:USER,file:" + PASSWD) if len(match) == 1 else (None, "file:" + PROC_SELF_STATUS)


def _mps(host: Host) -> List[Fact]:
    """The MPS control daemon this user's CUDA programs would reach, its servers and their owners (no facts where
    the pipe directory holds no daemon's pid file: no MPS)."""
    env = host.environ()
    pipe = (env.get("CUDA_MPS_PIPE_DIRECTORY") or "").strip() or MPS_PIPE_DEFAULT
    pid_path = posixpath.join(pipe, MPS_PID_FILE)
    label = "MPS control daemon"
    res = host.read_file(pid_path, limit=64)
    if res.missing:
        return []
    src = "file:" + pid_path
    if not res.ok:
        return [unknown("driver.mps.control_daemon", "cannot read %s (%s)" % (pid_path, res.error), src, label)]
    text = (res.text or "").strip()
    if not text.isdigit() or not 0 < int(text) < 1 << 22:
        return [unknown("driver.mps.control_daemon", "unexpected contents of %s: %r" % (pid_path, text[:40]),
                        src, label)]
    pid = int(text)
    status = host.read_text("/proc/%d/status" % pid, limit=16384)
    fields = _proc_status(status) if status is not None else {}
    daemon: Dict[str, Any] = {"pipe_directory": pipe, "pid": pid,
                              "running": fields.get("Name") == MPS_COMM, "uid": _status_uid(fields)}
    names = _passwd(host) if daemon["running"] else {}
    if daemon["uid"] is not None and daemon["uid"] in names:
        daemon["user"] = names[daemon["uid"]]
    facts = [ok("driver.mps.control_daemon", daemon, "%s,file:/proc/%d/status" % (src, pid), label)]
    if not daemon["running"]:
        return facts  # a pid file left by a daemon that died, or one of another pid namespace (a container)
    listing = host.list_dir("/proc")
    if not listing.ok:
        facts.append(unknown("driver.mps.servers", "cannot list /proc (%s)" % listing.error, "dir:/proc",
                             "MPS servers"))
        return facts
    servers: List[Dict[str, Any]] = []
    for name in [n for n in listing.names() if n.isdigit()][:MPS_MAX_PIDS]:
        if int(name) == pid or (host.read_text("/proc/%s/comm" % name, limit=64) or "").strip() != MPS_COMM:
            continue
        st = host.read_text("/proc/%s/status" % name, limit=16384)  # None: it ended since
        f = _proc_status(st) if st is not None else {}
        if f.get("Name") == MPS_COMM and f.get("PPid") == str(pid):
            uid = _status_uid(f)
            server: Dict[str, Any] = {"pid": int(name), "uid": uid}
            if uid is not None and uid in names:
                server["user"] = names[uid]
            servers.append(server)
    facts.append(ok("driver.mps.servers", servers, "dir:/proc", "MPS servers"))
    if servers:
        uid, how = _me(host, names)
        if uid is None:
            facts.append(unknown("driver.mps.user", "the user running this is unknown", how, "User"))
        else:
            me: Dict[str, Any] = {"uid": uid}
            if uid in names:
                me["user"] = names[uid]
            facts.append(ok("driver.mps.user", me, how, "User"))
    return facts


#: nvidia_uvm's HMM switch (kernel-open/nvidia-uvm/uvm_hmm.c: ``module_param(uvm_disable_hmm, bool, 0444)``; default
#: false, HMM on where the kernel supports it, on x86_64; true elsewhere): sysfs shows a bool parameter as Y or N.
UVM_DISABLE_HMM = "/sys/module/nvidia_uvm/parameters/uvm_disable_hmm"
L_CUDA_INIT = "CUDA initialisation"


def _cuda_version_text(version: int) -> str:
    """cuDriverGetVersion's number as a CUDA version: 12040 -> "12.4"."""
    return "%d.%d" % (version // 1000, (version % 1000) // 10)


def _cuda_init_facts(host: Host) -> List[Fact]:
    """``driver.cuda_init``: whether CUDA initialises (cuInit in a child with the inspected environment), the
    devices CUDA counts and their PCI bus ids; where it fails, nvidia_uvm's HMM switch. None at all when it was
    not asked (a snapshot from before it was, a machine with nothing for CUDA to find)."""
    from ..matrix.cuda_results import name_of

    res = host.cuda_init()
    src = "cuda:cuInit"
    if res.error in ("not_recorded", "not_run"):
        return []
    facts: List[Fact] = []
    if res.answered:
        code = int(res.code or 0)
        name = name_of(code) if not res.name or res.name.startswith("CUDA error") or " " in res.name else res.name
        facts.append(ok("driver.cuda_init", "%s (%d)" % (name, code) if code else "CUDA_SUCCESS", src, L_CUDA_INIT))
        facts.append(ok("driver.cuda_init.code", code, src, "CUDA initialisation result (CUresult)"))
    elif res.error == "timed_out":
        facts.append(timed_out("driver.cuda_init", res.message, src, L_CUDA_INIT))
    else:
        facts.append(unknown("driver.cuda_init", res.message or "unverified: CUDA's answer could not be read", src,
                             L_CUDA_INIT))
    if res.error:
        facts.append(ok("driver.cuda_init.failure", {"kind": res.error, "call": res.call, "message": res.message},
                        src, "CUDA initialisation: no answer"))
    if res.driver_version:
        facts.append(ok("driver.cuda_init.driver_version", _cuda_version_text(res.driver_version),
                        "cuda:cuDriverGetVersion", "CUDA version of the driver CUDA loads"))
    if res.device_count is not None:
        facts.append(ok("driver.cuda_init.device_count", res.device_count, "cuda:cuDeviceGetCount",
                        "GPUs CUDA counts"))
        facts.append(ok("driver.cuda_init.bus_ids", list(res.bus_ids), "cuda:cuDeviceGetPCIBusId",
                        "PCI bus ids of the GPUs CUDA counts"))
    if res.answered and res.code:
        hmm = host.read_file(UVM_DISABLE_HMM, limit=16)
        text = (hmm.text or "").strip().upper()
        if hmm.ok and text in ("Y", "N", "1", "0"):
            facts.append(ok("driver.uvm_disable_hmm", text in ("Y", "1"), "file:" + UVM_DISABLE_HMM,
                            "nvidia_uvm uvm_disable_hmm"))
        else:
            facts.append(unknown("driver.uvm_disable_hmm", "cannot read %s (%s)" % (UVM_DISABLE_HMM, hmm.error or
                                 "unexpected value"), "file:" + UVM_DISABLE_HMM, "nvidia_uvm uvm_disable_hmm"))
    return facts


@register("driver", "NVIDIA driver", order=30, uses_nvml=True, uses_cuda_init=True,
          produces=("driver.*", "driver.*.*", "kernel.headers"))
def probe_driver(ctx: ProbeContext) -> Iterable[Fact]:
    facts = list(_probe_driver(ctx))
    facts.extend(_cuda_init_facts(ctx.host))
    return facts


def _probe_driver(ctx: ProbeContext) -> List[Fact]:
    host = ctx.host
    wsl, container = _os_context(ctx)
    facts: List[Fact] = []

    wsl_libs = host.glob_dir(WSL_LIB_DIR, r"libcuda\.so.*")
    if wsl_libs:
        facts.append(ok("driver.wsl_libcuda", wsl_libs, "dir:" + WSL_LIB_DIR, "WSL libcuda (Windows driver)"))

    kfacts, kinfo, loaded = _kernel_module(host, wsl)
    libs = _userspace_libs(host)
    nv = host.nvml()
    lib_missing = (nv.ok and _nvml_answer(nv.data or {}, "init")[1] == "NVML_ERROR_LIBRARY_NOT_FOUND")
    # the driver's libraries outside the loader's directories, whether or not NVML loaded here: envdoctor's own
    # process may find them (nix-ld, a wrapper) where the inspected environment's programs do not
    elsewhere = _userspace_elsewhere(host) if not libs and not wsl_libs else None
    if elsewhere is not None:
        facts.append(elsewhere)

    disk: Optional[List[Fact]] = None
    if lib_missing and not loaded and not libs and not wsl_libs and elsewhere is None and not container:
        # no library the loader finds, no module loaded: an nvidia module installed for this kernel (a distribution's
        # kmod/DKMS package, a module that refused the GPU and unloaded) still says a driver is installed
        disk = _module_on_disk(host, wsl) if _nvidia_pci_gpus(host) else []
        if not any(f.key == "driver.module_for_running_kernel" and f.value is True for f in disk):
            disk = None
    if lib_missing and not loaded and not libs and not wsl_libs and elsewhere is None and disk is None:
        listed = _nvidia_pci_gpus(host)
        gpus = listed or []
        src = "nvml:init"
        fact = ok("driver.installed", False, src, "NVIDIA driver installed")
        if gpus:
            fact.reason = f"an NVIDIA GPU is present (PCI {', '.join(gpus)}) but no NVIDIA driver is installed"
        elif listed is None:
            fact.reason = "no NVIDIA driver installed; whether an NVIDIA GPU is present is unknown (the PCI bus " \
                          "could not be listed)"
        else:
            fact.reason = "no NVIDIA driver installed, and no NVIDIA GPU found on the PCI bus"
        facts.append(fact)
        if listed is None:
            facts.append(unknown("driver.nvidia_pci_gpus", "cannot list /sys/bus/pci/devices",
                                 "dir:/sys/bus/pci/devices", "NVIDIA GPUs on the PCI bus"))
        else:
            facts.append(ok("driver.nvidia_pci_gpus", gpus, "dir:/sys/bus/pci/devices",
                            "NVIDIA GPUs on the PCI bus"))
        facts.extend(_in_kernel_drivers(host))
        facts.append(_blacklist(host))
        facts.append(_kubernetes_node(host))
        if gpus:  # what installing a driver will run into
            facts.append(_secure_boot(host))
            facts.extend(_module_on_disk(host, wsl))
        return facts

    loaded_src = next((f.source for f in kfacts if f.key == "driver.kernel_module.loaded"), "derived")
    facts.append(ok("driver.installed", True, loaded_src if loaded else "nvml:init", "NVIDIA driver installed"))
    facts.extend(kfacts)
    nfacts, status = _nvml_part(ctx, kinfo, libs, wsl)
    facts.extend(nfacts)
    have_user = any(f.key == "driver.userspace.version" for f in nfacts)
    if not have_user:
        facts.extend(_userspace_facts(libs))
    if not libs and not have_user and elsewhere is not None:
        ev = elsewhere.value
        facts.append(ok("driver.userspace.version", ev["version"], elsewhere.source, L_USER))
    elif not libs and not have_user and not wsl:
        dirs = lib_search_dirs(host)
        facts.append(unknown("driver.userspace.version", "no libnvidia-ml.so.<version> or libcuda.so.<version> in "
                             + ", ".join(dirs), "dir:" + ",".join(dirs), L_USER))

    if wsl:  # the driver is Windows': none of the Linux-side module questions apply
        # /dev/dxg: WSL 2's GPU paravirtualisation device, through which the Windows driver reaches the GPU
        facts.append(ok("driver.wsl_dxg", host.exists("/dev/dxg"), "file:/dev/dxg", "WSL GPU device /dev/dxg"))
        return facts

    dev = host.list_dir("/dev")
    dev_names = dev.names()
    if dev.ok:
        nodes = sorted(n for n in dev_names if n.startswith("nvidia"))
        facts.append(ok("driver.device_nodes", nodes, "dir:/dev", "NVIDIA device nodes"))
    else:
        facts.append(unknown("driver.device_nodes", f"cannot list /dev ({dev.error})", "dir:/dev",
                             "NVIDIA device nodes"))
    if libs or loaded:  # a container's bound compute libraries may carry no release in their names
        facts.append(_graphics_files(host, libs))
        if host.uname().get("machine") == "x86_64":
            facts.append(_graphics_files_32bit(host))
    facts.extend(_in_kernel_drivers(host))
    facts.append(_blacklist(host))
    if container:  # modules, signing and Secure Boot are the host's business, not visible from here
        why = f"inside a {container} container: the kernel module is the host's"
        facts.append(not_supported("driver.module_for_running_kernel", "derived", "nvidia module built for the "
                                   "running kernel", why))
    else:
        facts.extend(disk if disk is not None else _module_on_disk(host, wsl))
        facts.append(_secure_boot(host))
        facts.append(_unprivileged_runtimes(host))
        if loaded:
            facts.append(_uvm_module(host))
        if loaded or _nvidia_pci_gpus(host):
            klog = _kernel_log(host)
            facts.append(klog)
            version = kinfo.get("version") if kinfo else None
            if version and klog.known and any(_FIRMWARE_FAILED.search(str(x)) for x in klog.value or ()):
                # the loader named a firmware file it did not find: is the loaded version's there now?
                facts.append(_gsp_firmware(host, version))
        if loaded or any(f.key == "driver.module_for_running_kernel" and f.value for f in facts):
            facts.extend(_module_signer(host))
            if status == "NVML_ERROR_LIB_RM_VERSION_MISMATCH" or not loaded or status != "ok":
                facts.extend(_module_on_disk_version(host))
            if not loaded or status != "ok":  # what the module that does not drive the GPUs is
                facts.extend(_module_on_disk_flavor(host))
            if not loaded and any(f.key == "driver.secure_boot" and f.value is True for f in facts):
                facts.extend(_mok_keys(host))
                facts.extend(_mok_enrolled(host))
    facts.extend(_nvswitch(host, dev_names))
    if loaded:
        pd = _state_of_service(host, "nvidia-persistenced", "driver.persistenced.state", "Persistence daemon",
                               optional=True)
        if pd is not None:
            facts.append(pd)
        facts.extend(_mps(host))
    return facts

"""GPUs: what NVML says about each one, and what the PCI bus shows when NVML cannot answer.

Evidence, in order of preference:

* NVML (``host.nvml()``, answered by :mod:`envdoctor.host.nvml_worker`): one
  ``device.N.<field>`` answer per question, each ``{"value": ...}`` or
  ``{"error": "NVML_ERROR_...", "code": n}``.  ``NVML_ERROR_NOT_SUPPORTED``
  becomes a ``not_supported`` fact (the board lacks the feature: not a fault);
  any other error an ``unknown`` fact naming the NVML error.
* The PCI bus (``/sys/bus/pci/devices/*/{vendor,class,device,driver}``), read
  always: it is cheap and shows a GPU that ``nouveau`` or ``vfio-pci`` holds,
  or one the NVIDIA driver cannot talk to.
* ``/proc/driver/nvidia/gpus/*/information`` (model, bus location, UUID) when
  NVML fails, so "an NVIDIA GPU is present but the driver is not working" is
  reported with the model and bus id.

Memory bandwidth is derived, not measured.  NVML's maximum memory clock
(``nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM)``, what ``nvidia-smi -q`` prints
under "Max Clocks / Memory") is half the per-pin data rate for every memory
type NVIDIA ships, so the theoretical peak is::

    bytes/s = bus_width_bits / 8 * max_mem_clock_MHz * 1e6 * 2

Checked against NVIDIA's own figures:

* H100 SXM5 80GB HBM3: 5120-bit, 2619 MHz -> 3352 GB/s (spec sheet: 3.35 TB/s;
  2619 MHz from ``nvidia-smi -q`` in https://github.com/NVIDIA/DCGM/issues/120).
* RTX 4090 GDDR6X: 384-bit, 10501 MHz -> 1008 GB/s (spec: 1008 GB/s; nvbench
  prints "1008 GB/sec (384-bit DDR @10501MHz)",
  https://github.com/NVIDIA/nvbench/pull/207).
* A100-SXM4-40GB HBM2: 5120-bit, 1215 MHz -> 1555 GB/s (spec: 1555 GB/s; clock
  from ``nvidia-smi -q`` in https://github.com/NVIDIA/nvidia-docker/issues/1648).
* Tesla P100 HBM2: 4096-bit, 715 MHz -> 732 GB/s (spec: 732 GB/s; clock from
  https://github.com/NVIDIA/nvidia-docker/issues/1316).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

from .. import lazyre
from ..facts import Fact, not_supported, ok, timed_out, unknown
from ..host.base import Host
from ..host.nvml_worker import MAX_GPUS
from . import ProbeContext, register

PCI_DEVICES = "/sys/bus/pci/devices"
PROC_GPUS = "/proc/driver/nvidia/gpus"
NVIDIA_VENDOR = "0x10de"
#: PCI classes of a GPU: VGA compatible controller, 3D controller.  (NVIDIA
#: boards also expose audio, USB and UCSI functions, which are not GPUs.)
GPU_CLASSES = ("0x0300", "0x0302")

#: ``nvmlDeviceArchitecture_t`` (nvml.h; pynvml ``NVML_DEVICE_ARCH_*``).
NVML_ARCH = {
    2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere", 8: "Ada Lovelace",
    9: "Hopper", 10: "Blackwell", 13: "Rubin",
}

#: ``nvmlClocksEventReason*`` bits (nvml.h; pynvml ``nvmlClocksEventReason*`` and
#: ``nvmlClocksThrottleReason*``), named as ``nvidia-smi -q`` prints them.
CLOCK_EVENT_REASONS = (
    (0x001, "GPU idle"),
    (0x002, "applications clocks setting"),
    (0x004, "SW power cap"),
    (0x008, "HW slowdown"),
    (0x010, "sync boost"),
    (0x020, "SW thermal slowdown"),
    (0x040, "HW thermal slowdown"),
    (0x080, "HW power brake slowdown"),
    (0x100, "display clock setting"),
    (0x200, "board limit"),
    (0x400, "reliability"),
)

#: ``nvmlComputeMode_t``.
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}

NOT_SUPPORTED = "NVML_ERROR_NOT_SUPPORTED"


# -- small converters: raise ValueError/TypeError on an answer of the wrong shape

def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"not an integer: {v!r}")
    return v


def _nonneg(v: Any) -> int:
    v = _int(v)
    if v < 0:
        raise ValueError(f"negative: {v!r}")
    return v


def _text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise TypeError(f"not a non-empty string: {v!r}")
    return v.strip()


def _enabled(v: Any) -> bool:
    v = _int(v)
    if v not in (0, 1):
        raise ValueError(f"not 0/1: {v!r}")
    return v == 1


def _pair(v: Any) -> Tuple[Any, Any]:
    if not isinstance(v, (list, tuple)) or len(v) != 2:
        raise TypeError(f"not a pair: {v!r}")
    return v[0], v[1]


def _struct(v: Any, name: str) -> Any:
    if not isinstance(v, dict) or name not in v:
        raise TypeError(f"no {name} in {v!r}")
    return v[name]


def compute_capability(v: Any) -> str:
    major, minor = _pair(v)
    return f"{_nonneg(major)}.{_nonneg(minor)}"


def architecture_of(cc: str) -> Optional[str]:
    """``"9.0"`` -> ``"Hopper"``, from the matrix's one cc -> architecture table
    (``envdoctor/matrix/data/gpu_arch.json``, checked against https://developer.nvidia.com/cuda-gpus);
    ``None`` for a capability not in it."""
    from ..matrix import hardware

    try:
        row = hardware.arch_for_cc(cc)
    except Exception:  # noqa: BLE001 - a damaged table must not take the GPU layer down with it
        return None
    return str(row["arch"]) if row else None


def clock_event_reason_names(mask: int) -> List[str]:
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    known = 0
    for bit, _ in CLOCK_EVENT_REASONS:
        known |= bit
    if mask & ~known:
        names.append("unknown reason bits 0x%x" % (mask & ~known))
    return names


def bandwidth_gbps(bus_width_bits: int, max_mem_clock_mhz: int) -> float:
    """Theoretical peak memory bandwidth in GB/s (10^9 bytes/s); see the module docstring."""
    return round(bus_width_bits / 8.0 * max_mem_clock_mhz * 1e6 * 2 / 1e9, 1)


def _pci_id(bus_id: str) -> Optional[Tuple[int, int, int, int]]:
    """``00000000:18:00.0`` or ``0000:18:00.0`` -> (domain, bus, device, function)."""
    m = re.match(r"^\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*$", bus_id or "")
    if not m:
        return None
    return int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)


def _pci_str(bus_id: str) -> str:
    """Canonical sysfs form ``0000:18:00.0`` (NVML writes an 8-digit domain, upper case)."""
    t = _pci_id(bus_id)
    return "{:04x}:{:02x}:{:02x}.{:x}".format(*t) if t else bus_id


# -- NVML ------------------------------------------------------------------------

def _nvml_error_reason(ans: Dict[str, Any]) -> str:
    err = str(ans.get("error"))
    if err == "EXCEPTION":
        return "the NVML binding failed: {}".format(str(ans.get("message", ""))[:200])
    if err == "NVML_ERROR_FUNCTION_NOT_FOUND":
        return "this driver's NVML lacks the call (NVML_ERROR_FUNCTION_NOT_FOUND: driver older than the query)"
    if err == "NVML_ERROR_NO_PERMISSION":
        return "NVML refused (NVML_ERROR_NO_PERMISSION)"
    if err == "NVML_ERROR_GPU_IS_LOST":
        return "NVML_ERROR_GPU_IS_LOST: the GPU fell off the bus or hung; it needs a reset or reboot"
    return f"NVML answered {err}"


def _predates(err: Dict[str, Any]) -> bool:
    """The driver's NVML, or the nvidia-ml-py binding, is older than the call."""
    return err.get("error") == "NVML_ERROR_FUNCTION_NOT_FOUND" or (
        err.get("error") == "EXCEPTION" and "nvidia-ml-py has no" in str(err.get("message", "")))


def _remapped(v: Any, index: int) -> int:
    """One of nvmlDeviceGetRemappedRows' four answers (corrected rows, uncorrected rows, pending, failure)."""
    if not isinstance(v, (list, tuple)) or len(v) != 4:
        raise TypeError(f"not four numbers: {v!r}")
    return _nonneg(v[index])


def _page_count(v: Any) -> int:
    """nvmlDeviceGetRetiredPages answers the page addresses: their number."""
    if not isinstance(v, (list, tuple)):
        raise TypeError(f"not a list of pages: {v!r}")
    return len(v)


class _Device:
    """Turns one GPU's NVML answers into facts."""

    def __init__(self, data: Dict[str, Any], index: int, facts: List[Fact]) -> None:
        self.data = data
        inc = data.get("incomplete")
        #: Where a query that hung or died stopped (then the answers after it were never asked).
        self.incomplete: Dict[str, Any] = inc if isinstance(inc, dict) else {}
        self.i = index
        self.facts = facts
        #: NVML fields absent from the answers (an older or hand-made snapshot: a live run asks them all).
        self.missing: List[str] = []

    def key(self, name: str) -> str:
        return f"gpu.{self.i}.{name}"

    def src(self, field: str) -> str:
        return f"nvml:device.{self.i}.{field}"

    def answer(self, field: str) -> Tuple[Any, Optional[Dict[str, Any]]]:
        """(value, None) or (None, the error answer)."""
        ans = self.data.get(f"device.{self.i}.{field}")
        if not isinstance(ans, dict):
            return None, {"error": "missing"}
        if "error" in ans:
            return None, ans
        return ans.get("value"), None

    def add(self, name: str, field: str, label: str, convert: Callable[[Any], Any] = lambda v: v,
            newer: bool = False) -> Any:
        """Add fact ``gpu.N.name`` from NVML answer ``field``; return the value or ``None``.  ``newer``: a
        query that drivers or nvidia-ml-py releases older than the feature lack; then it is not supported
        here (with the reason), not unknown."""
        key, src = self.key(name), self.src(field)
        value, err = self.answer(field)
        hung_here = self.incomplete.get("call") == f"device.{self.i}.{field}"
        if err is not None and err.get("error") == "missing" and hung_here:
            maker = timed_out if self.incomplete.get("reason") != "crashed" else unknown
            self.facts.append(maker(key, str(self.incomplete.get("message", "NVML did not answer")), src, label))
            return None
        if err is not None and err.get("error") == "missing":
            if field not in self.missing:
                self.missing.append(field)
            return None
        if err is not None and newer and _predates(err):
            self.facts.append(not_supported(key, src, label, _nvml_error_reason(err)))
            return None
        if err is not None:
            self.facts.append(self.error_fact(key, src, label, err))
            return None
        try:
            out = convert(value)
        except (TypeError, ValueError, KeyError) as exc:
            self.facts.append(unknown(key, f"NVML gave an unexpected answer ({str(exc)[:120]})", src, label))
            return None
        self.facts.append(ok(key, out, src, label))
        return out

    @staticmethod
    def error_fact(key: str, src: str, label: str, err: Dict[str, Any]) -> Fact:
        if err.get("error") == "missing":
            return unknown(key, "NVML was not asked (envdoctor's NVML query ended early)", src, label)
        if err.get("error") == NOT_SUPPORTED:
            return not_supported(key, src, label)
        return unknown(key, _nvml_error_reason(err), src, label)


def _device_facts(data: Dict[str, Any], i: int) -> List[Fact]:
    facts: List[Fact] = []
    d = _Device(data, i, facts)
    facts.append(ok(d.key("index"), i, d.src("handle"), "NVML index"))
    d.add("name", "name", "Model", _text)
    pci = d.add("pci_bus_id", "pci", "PCI bus id", lambda v: _text(_struct(v, "busId")))
    if pci is not None:
        d.add("pci_device_id", "pci", "PCI vendor:device",
              lambda v: "{:04x}:{:04x}".format(_nonneg(_struct(v, "pciDeviceId")) & 0xFFFF,
                                       _nonneg(_struct(v, "pciDeviceId")) >> 16))
    d.add("uuid", "uuid", "UUID", _text)
    d.add("minor_number", "minor_number", "Device node /dev/nvidiaN", _nonneg)
    d.add("vbios_version", "vbios_version", "VBIOS", _text)
    # NVML's brand (nvmlBrandType_t), by its nvml.h name: what the NVIDIA Container Toolkit compares with an image's
    # brand= constraints. Added only when answered: a snapshot without the answer says nothing new.
    brand, brand_err = d.answer("brand")
    if brand_err is None:
        from ..matrix.containers import gpu_brands

        row = next((r for r in gpu_brands() if isinstance(brand, int) and r["nvml_brand"] == brand), None)
        if row is not None:
            facts.append(ok(d.key("brand"), row["nvml_name"], d.src("brand"), "Brand (NVML)"))

    cc = d.add("compute_capability", "compute_capability", "Compute capability", compute_capability)
    arch = architecture_of(cc) if cc else None
    if arch:
        facts.append(ok(d.key("architecture"), arch, d.src("compute_capability"), "Architecture"))
    else:
        why = f"compute capability {cc} is not in envdoctor's table" if cc else "no compute capability"
        enum_name = d.add("architecture_nvml", "architecture", "Architecture (NVML enum)",
                          lambda v: NVML_ARCH[_int(v)])
        if enum_name:
            facts.append(ok(d.key("architecture"), enum_name, d.src("architecture"), "Architecture"))
        else:
            facts.append(unknown(d.key("architecture"), why + ", and NVML did not name the architecture",
                                 "derived", "Architecture"))

    d.add("memory_total_bytes", "memory", "Memory", lambda v: _nonneg(_struct(v, "total")))
    # Free and used now: what other processes hold (`envdoctor fit` judges against free memory). The same NVML
    # answer as the total, so no extra call.
    if d.answer("memory")[1] is None:
        d.add("memory_free_bytes", "memory", "Memory free now", lambda v: _nonneg(_struct(v, "free")))
        d.add("memory_used_bytes", "memory", "Memory in use now", lambda v: _nonneg(_struct(v, "used")))
    width = d.add("memory_bus_width_bits", "memory_bus_width", "Memory bus width (bits)", _nonneg)
    clock = d.add("memory_clock_max_mhz", "max_clock_mem", "Max memory clock (MHz)", _nonneg)
    d.add("sm_clock_max_mhz", "max_clock_sm", "Max SM clock (MHz)", _nonneg)
    bw_key, bw_label = d.key("memory_bandwidth_gbps"), "Peak memory bandwidth (GB/s, theoretical)"
    if width and clock:
        facts.append(ok(bw_key, bandwidth_gbps(width, clock), "derived", bw_label))
    elif not {"memory_bus_width", "max_clock_mem"} & set(d.missing):
        facts.append(unknown(bw_key, "needs the memory bus width and the max memory clock from NVML",
                             "derived", bw_label))

    d.add("sm_count", "attributes", "Streaming multiprocessors",
          lambda v: _nonneg(_struct(v, "multiprocessorCount")))
    d.add("cuda_cores", "num_cores", "CUDA cores", _nonneg)

    d.add("pcie_gen_current", "pcie_gen_current", "PCIe generation (now)", _nonneg)
    d.add("pcie_gen_max", "pcie_gen_max", "PCIe generation (max of GPU and slot)", _nonneg)
    d.add("pcie_gen_gpu_max", "pcie_gen_gpu_max", "PCIe generation (max of GPU)", _nonneg)
    d.add("pcie_width_current", "pcie_width_current", "PCIe width (now)", _nonneg)
    d.add("pcie_width_max", "pcie_width_max", "PCIe width (max)", _nonneg)

    d.add("persistence_mode", "persistence_mode", "Persistence mode", _enabled)
    d.add("ecc_mode_current", "ecc_mode", "ECC (now)", lambda v: _enabled(_pair(v)[0]))
    d.add("ecc_mode_pending", "ecc_mode", "ECC (after reset)", lambda v: _enabled(_pair(v)[1]))
    d.add("ecc_errors_volatile_uncorrected", "ecc_volatile_uncorrected",
          "Uncorrected ECC errors since boot", _nonneg)
    d.add("ecc_errors_aggregate_uncorrected", "ecc_aggregate_uncorrected",
          "Uncorrected ECC errors (lifetime)", _nonneg)
    mig_on = d.add("mig_mode_current", "mig_mode", "MIG (now)", lambda v: _enabled(_pair(v)[0]))
    d.add("mig_mode_pending", "mig_mode", "MIG (after reset)", lambda v: _enabled(_pair(v)[1]))
    if mig_on:  # the worker asks only a GPU in MIG mode
        d.add("mig_devices", "mig_devices", "MIG devices (GPU + compute instances)",
              lambda v: _nonneg(_struct(v, "present")), newer=True)
        d.add("mig_devices_max", "mig_devices", "MIG device slots", lambda v: _nonneg(_struct(v, "max")),
              newer=True)
    # GPU memory health: row remapping (Ampere and newer datacenter GPUs), page retirement (older ones).
    d.add("remapped_rows_correctable", "remapped_rows", "Rows remapped (correctable errors)",
          lambda v: _remapped(v, 0), newer=True)
    d.add("remapped_rows_uncorrectable", "remapped_rows", "Rows remapped (uncorrectable errors)",
          lambda v: _remapped(v, 1), newer=True)
    d.add("remapped_rows_pending", "remapped_rows", "Row remapping pending (needs a GPU reset)",
          lambda v: _remapped(v, 2) != 0, newer=True)
    d.add("remapped_rows_failure", "remapped_rows", "Row remapping failed",
          lambda v: _remapped(v, 3) != 0, newer=True)
    d.add("retired_pages_pending", "retired_pages_pending", "Retired pages pending (needs a reboot)",
          _enabled, newer=True)
    d.add("retired_pages_sbe", "retired_pages_sbe", "Pages retired (multiple single-bit errors)", _page_count,
          newer=True)
    d.add("retired_pages_dbe", "retired_pages_dbe", "Pages retired (double-bit errors)", _page_count,
          newer=True)
    d.add("display_active", "display_active", "Display active", _enabled)
    d.add("compute_mode", "compute_mode", "Compute mode", lambda v: COMPUTE_MODES[_int(v)])

    d.add("power_limit_watts", "power_limit", "Power limit (W)", lambda v: round(_nonneg(v) / 1000.0, 2))
    d.add("power_limit_default_watts", "power_limit_default", "Default power limit (W)",
          lambda v: round(_nonneg(v) / 1000.0, 2))
    d.add("clock_event_reasons", "clock_event_reasons", "Clocks held down by",
          lambda v: clock_event_reason_names(_nonneg(v)))
    d.add("utilization_gpu_percent", "utilization", "GPU utilization (%)",
          lambda v: _nonneg(_struct(v, "gpu")))
    d.add("utilization_memory_percent", "utilization", "Memory controller utilization (%)",
          lambda v: _nonneg(_struct(v, "memory")))
    d.add("temperature_celsius", "temperature", "Temperature (C)", _nonneg)
    if f"device.{i}.nvlink" in data:  # asked since the topology layer (an older snapshot has no answer: no fact)
        from .topology import nvlinks

        links, _errors, why = nvlinks(data, i)
        key, src = d.key("nvlink_active"), d.src("nvlink")
        if links is None:
            facts.append(unknown(key, "NVLink state not known (%s)" % why, src, "Active NVLinks"))
        else:  # a GPU without NVLink has none active
            facts.append(ok(key, sum(1 for x in links if x["state"] in ("active", "sleep")), src, "Active NVLinks"))
    if d.missing and d.incomplete:
        facts.append(unknown(d.key("nvml_not_recorded"), "%d NVML questions were not asked, because the query "
                             "stopped earlier (%s): %s" % (len(d.missing), d.incomplete.get("message", ""),
                                                           ", ".join(d.missing)),
                             "nvml:device.%d" % i, "NVML answers not recorded"))
    elif d.missing:
        # One line, not one per field: a live run always records every answer, so this is a snapshot
        # written by an older envdoctor, or put together by hand.
        facts.append(unknown(d.key("nvml_not_recorded"), "%d NVML answers are not in this snapshot (%s)" % (
            len(d.missing), ", ".join(d.missing)), "nvml:device.%d" % i, "NVML answers not recorded"))
    return facts


# -- BAR1 and GPUDirect RDMA ---------------------------------------------------------

#: The kernel modules through which an RDMA adapter reaches GPU memory (GPUDirect RDMA): NVIDIA's own
#: nvidia-peermem (open-gpu-kernel-modules, kernel-open/nvidia-peermem/nvidia-peermem.Kbuild: obj-m +=
#: nvidia-peermem.o, so /sys/module/nvidia_peermem) and Mellanox's older nv_peer_mem (Mellanox/nv_peer_memory,
#: Makefile: obj-m += nv_peer_mem.o).
PEER_MEMORY_MODULES = ("nvidia_peermem", "nv_peer_mem")


def _bar1_facts(host: Host, data: Dict[str, Any], count: int,
                pci: Optional[List[Dict[str, Optional[str]]]]) -> List[Fact]:
    """``gpu.N.bar1_total_bytes``: the GPU's BAR1 aperture, NVML's answer (nvmlDeviceGetBAR1MemoryInfo), else the
    size of BAR 1 in the GPU's sysfs ``resource`` file: by NVML's PCI bus id, or the one NVIDIA GPU on the bus when
    NVML counts one GPU and its bus id is not recorded. No fact when neither says."""
    from .topology import bar1_of

    out: List[Fact] = []
    on_bus = [str(d.get("bus_id")) for d in pci or [] if d.get("bus_id")]
    for i in range(count):
        key, label = f"gpu.{i}.bar1_total_bytes", "BAR1 aperture"
        ans = data.get(f"device.{i}.bar1")
        value = ans.get("value") if isinstance(ans, dict) and "error" not in ans else None
        total = value.get("bar1Total") if isinstance(value, dict) else None
        if isinstance(total, int) and not isinstance(total, bool) and total > 0:
            out.append(ok(key, total, f"nvml:device.{i}.bar1", label))
            continue
        pans = data.get(f"device.{i}.pci")
        pval = pans.get("value") if isinstance(pans, dict) and "error" not in pans else None
        bus = pval.get("busId") if isinstance(pval, dict) else None
        name = None
        if isinstance(bus, str) and bus.strip():
            wanted = _pci_str(bus)
            name = next((b for b in on_bus if _pci_str(b) == wanted), None)
        elif count == 1 and len(on_bus) == 1:
            name = on_bus[0]
        if name is None:
            continue
        size = bar1_of(host, name)
        if size is not None:
            out.append(ok(key, size, "file:" + posixpath.join(PCI_DEVICES, name, "resource"), label))
    return out


def _gpudirect_rdma(host: Host) -> Fact:
    """``gpu.gpudirect_rdma``: the GPU peer-memory modules loaded (``/sys/module/<name>``) and the RDMA devices the
    kernel shows (``/sys/class/infiniband``): ``{"peer_memory_modules": [...], "rdma_devices": [...]}``."""
    from .containers import RDMA_DEVICES

    modules = [m for m in PEER_MEMORY_MODULES if host.is_dir("/sys/module/" + m)]
    devices = sorted(host.list_dir(RDMA_DEVICES).names())
    return ok("gpu.gpudirect_rdma", {"peer_memory_modules": modules, "rdma_devices": devices},
              "dir:" + ",".join(["/sys/module/" + m for m in PEER_MEMORY_MODULES] + [RDMA_DEVICES]),
              "GPUDirect RDMA (peer-memory module, RDMA devices)")


# -- PCI bus and /proc ---------------------------------------------------------------

def pci_scan(host: Host) -> Tuple[Optional[List[Dict[str, Optional[str]]]], str]:
    """NVIDIA GPUs on the PCI bus: ([{bus_id, device_id, driver}], "") or (None, why not)."""
    listing = host.list_dir(PCI_DEVICES)
    if not listing.ok:
        return None, f"cannot list {PCI_DEVICES} ({listing.error})"
    found: List[Dict[str, Optional[str]]] = []
    for name in listing.names():
        base = posixpath.join(PCI_DEVICES, name)
        vendor = (host.read_text(base + "/vendor", limit=64) or "").strip().lower()
        if vendor != NVIDIA_VENDOR:
            continue
        cls = (host.read_text(base + "/class", limit=64) or "").strip().lower()
        if not cls.startswith(GPU_CLASSES):
            continue
        device = (host.read_text(base + "/device", limit=64) or "").strip().lower()
        link = host.read_link(base + "/driver")
        found.append({
            "bus_id": name,
            "device_id": f"10de:{device[2:]}" if device.startswith("0x") else None,
            "driver": posixpath.basename(link.target.rstrip("/")) if link.ok and link.target else None,
        })
    return found, ""


def parse_information(text: str) -> Dict[str, str]:
    """``/proc/driver/nvidia/gpus/*/information``: ``Key: <tabs> value`` lines."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip() and v.strip():
            out[k.strip()] = " ".join(v.split())
    return out


def _proc_gpus(host: Host) -> Dict[str, Tuple[str, Dict[str, str]]]:
    """Canonical bus id -> (path, parsed information file) for GPUs the NVIDIA kernel driver knows."""
    out: Dict[str, Tuple[str, Dict[str, str]]] = {}
    for d in host.list_dir(PROC_GPUS).names():
        path = posixpath.join(PROC_GPUS, d, "information")
        text = host.read_text(path, limit=16 * 1024)
        if text is None:
            continue
        out[_pci_str(d)] = (path, parse_information(text))
    return out


def _fallback(host: Host, pci: Optional[List[Dict[str, Optional[str]]]], why_nvml: str) -> List[Fact]:
    """NVML gave nothing: report the GPUs the PCI bus and /proc show, with the model and bus id."""
    facts: List[Fact] = []
    proc = _proc_gpus(host)
    by_bus: Dict[str, Dict[str, Any]] = {}
    for dev in pci or []:
        by_bus[_pci_str(str(dev["bus_id"]))] = {"pci": dev}
    for bus, (path, info) in proc.items():
        by_bus.setdefault(bus, {})["proc"] = (path, info)
    for i, bus in enumerate(sorted(by_bus)):
        entry = by_bus[bus]
        dev = entry.get("pci") or {}
        proc_entry: Tuple[str, Dict[str, str]] = entry.get("proc") or ("", {})
        path, info = proc_entry
        k = f"gpu.{i}."
        psrc = "dir:{}/{}".format(PCI_DEVICES, dev["bus_id"]) if dev else "file:" + path
        facts.append(ok(k + "pci_bus_id", bus, psrc, "PCI bus id"))
        model = info.get("Model")
        if model and model.lower() != "unknown":
            facts.append(ok(k + "name", model, "file:" + path, "Model"))
        elif path:
            facts.append(unknown(k + "name", "the NVIDIA kernel driver names the model \"Unknown\" (it cannot "
                                 "talk to the GPU)", "file:" + path, "Model"))
        else:
            facts.append(unknown(k + "name", f"the driver gave no answer ({why_nvml}) and {PROC_GPUS} has no entry "
                                 "for this GPU", psrc, "Model"))
        uuid = info.get("GPU UUID")
        if uuid and uuid.startswith("GPU-"):
            facts.append(ok(k + "uuid", uuid, "file:" + path, "UUID"))
        if dev.get("device_id"):
            facts.append(ok(k + "pci_device_id", dev["device_id"], psrc + "/device", "PCI vendor:device"))
        if dev:
            facts.append(ok(k + "driver", dev.get("driver"), "link:{}/{}/driver".format(PCI_DEVICES, dev["bus_id"]),
                            "Bound kernel driver"))
    facts.insert(0, ok("gpu.count", len(by_bus), "derived", "NVIDIA GPUs"))
    return facts


# -- the probe -----------------------------------------------------------------

#: Environment variables through which a job scheduler tells a job which GPUs it was given (a job sees
#: only those: NVML counting fewer GPUs than the PCI bus shows is then expected).
SCHEDULER_GPU_VARS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "GPU_DEVICE_ORDINAL", "PBS_GPUFILE")


def _scheduler_allocation(host: Host) -> Dict[str, str]:
    return {name: str(host.getenv(name)) for name in SCHEDULER_GPU_VARS if host.getenv(name)}


#: An NVML answer's key about one GPU: its index and field.
_DEVICE_KEY = lazyre.compile(r"^device\.(\d+)\.(.+)$")


def gpu_fields(data: Dict[str, Any]) -> Tuple[Set[int], Dict[str, List[str]]]:
    """(the GPU indexes of the keys :data:`_DEVICE_KEY` matches, the fields answered under each ``device.N.``
    prefix), in one pass over NVML's answers without a regular expression per key."""
    indexes: Set[int] = set()
    fields: Dict[str, List[str]] = {}
    for key in data:
        if not key.startswith("device."):  # the pairs' answers and the system's: most keys of a many-GPU board
            continue
        number, dot, field = key[7:].partition(".")
        if dot:
            fields.setdefault(number, []).append(field)
            # what _DEVICE_KEY matches: the expression itself only for a field with a line break ("." matches none)
            if number.isdecimal() and field and ("\n" not in field or _DEVICE_KEY.match(key)):
                indexes.add(int(number))
    return indexes, fields


def nvml_failures(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every NVML answer about the GPUs that is an error: the count or a handle (any code), or one call of
    one GPU (any but NOT_SUPPORTED: the board lacks the feature), with that GPU's bus id and serial when
    NVML gave them (the checks judge which codes mean trouble)."""
    out: List[Dict[str, Any]] = []

    def err_of(key: str, any_error: bool = False) -> Optional[Dict[str, Any]]:
        ans = data.get(key)
        if isinstance(ans, dict) and "error" in ans and (any_error or ans.get("error") != NOT_SUPPORTED):
            return ans
        return None

    def add(gpu: Optional[int], call: str, ans: Dict[str, Any]) -> None:
        entry: Dict[str, Any] = {"gpu": gpu, "call": call, "error": str(ans.get("error"))}
        if isinstance(ans.get("code"), int):
            entry["code"] = ans["code"]
        if ans.get("error") == "EXCEPTION" and ans.get("message"):
            entry["message"] = str(ans["message"])[:200]
        if gpu is not None:
            pci = data.get(f"device.{gpu}.pci")
            bus = pci.get("value", {}).get("busId") if isinstance(pci, dict) and isinstance(pci.get("value"),
                                                                                             dict) else None
            if isinstance(bus, str):
                entry["pci_bus_id"] = _pci_str(bus)
            serial = data.get(f"device.{gpu}.serial")
            if isinstance(serial, dict) and isinstance(serial.get("value"), str):
                entry["serial"] = serial["value"]
        out.append(entry)

    count_err = err_of("device_count", any_error=True)  # no count, no GPU: every code is a failure
    if count_err is not None:
        add(None, "device_count", count_err)
    indexes, fields = gpu_fields(data)
    for i in sorted(indexes):
        handle = err_of(f"device.{i}.handle", any_error=True)
        if handle is not None:
            add(i, "handle", handle)
            continue
        for field in sorted(fields.get(str(i), ())):
            ans = err_of(f"device.{i}.{field}")
            if ans is not None:
                add(i, field, ans)
    return out

def _nvml_failure(nv: Any) -> Tuple[Optional[str], Optional[str]]:
    """(None, None) when NVML answered; else (status, reason)."""
    if not nv.ok:
        status = "timed_out" if nv.error in ("timed_out", "deadline", "starved") else "unknown"
        return status, nv.message or str(nv.error)
    init = nv.data.get("init")
    if isinstance(init, dict) and "error" in init:
        err = str(init.get("error"))
        if err == "EXCEPTION":
            return "unknown", "the driver's management library could not be started: {}".format(
                str(init.get("message", ""))[:200])
        from .driver import NVML_REASONS

        return "unknown", NVML_REASONS.get(err, f"the driver's management library failed to start ({err})")
    if not isinstance(init, dict):
        return "unknown", "NVML's answer has no init result (garbled)"
    return None, None


@register("gpu", "GPUs", order=40, uses_nvml=True,
          produces=("gpu.*", "gpu.*.*"))
def probe_gpu(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    pci, pci_why = pci_scan(host)
    if pci is None:
        facts.append(unknown("gpu.pci_devices", pci_why, "dir:" + PCI_DEVICES, "NVIDIA GPUs on the PCI bus"))
    else:
        facts.append(ok("gpu.pci_devices", pci, "dir:" + PCI_DEVICES, "NVIDIA GPUs on the PCI bus"))

    proc = host.list_dir(PROC_GPUS)
    if proc.ok or proc.error in ("ENOENT", "ENOTDIR"):
        facts.append(ok("gpu.proc_devices", [_pci_str(d) for d in proc.names()], "dir:" + PROC_GPUS,
                        "GPUs the NVIDIA kernel driver knows"))
    else:
        facts.append(unknown("gpu.proc_devices", f"cannot list {PROC_GPUS} ({proc.error})", "dir:" + PROC_GPUS,
                             "GPUs the NVIDIA kernel driver knows"))
    alloc = _scheduler_allocation(host)
    if alloc:
        facts.append(ok("gpu.scheduler_allocation", alloc, "env:" + ",".join(sorted(alloc)),
                        "GPUs allotted by a job scheduler"))

    nv = host.nvml()
    status, why = _nvml_failure(nv)
    if status is None:
        data: Dict[str, Any] = nv.data or {}
        failures = nvml_failures(data)
        facts.append(ok("gpu.nvml_failures", failures, "nvml:device", "NVML calls that failed"))
        inc = data.get("incomplete") if isinstance(data.get("incomplete"), dict) else None
        count_ans = data.get("device_count")
        count = count_ans.get("value") if isinstance(count_ans, dict) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            reason = (_nvml_error_reason(count_ans) if isinstance(count_ans, dict) and "error" in count_ans
                      else str(inc.get("message")) if inc else "NVML gave no GPU count")
            facts.append(unknown("gpu.count", reason, "nvml:device_count", "NVIDIA GPUs"))
            facts.append(unknown("gpu.status", reason, "nvml:device_count", "GPUs"))
            return facts
        if count > MAX_GPUS:
            reason = (f"NVML reported {count} GPUs, more than NVIDIA's driver can drive in one system "
                      f"(32); the answer is garbled")
            facts.append(unknown("gpu.count", reason, "nvml:device_count", "NVIDIA GPUs"))
            facts.append(unknown("gpu.status", reason, "nvml:device_count", "GPUs"))
            return facts
        facts.append(ok("gpu.count", count, "nvml:device_count", "NVIDIA GPUs"))
        if count == 0:
            held = [d for d in pci or [] if d.get("driver") != "nvidia"]
            bound = [str(d.get("bus_id")) for d in pci or [] if d.get("driver") == "nvidia"]
            drivers = ", ".join(sorted({str(d.get("driver") or "none") for d in held}))
            if bound:
                msg = (f"NVML sees no GPU, but {len(bound)} NVIDIA GPU(s) on the PCI bus are bound to the nvidia "
                       f"driver ({', '.join(bound)})")
                facts.append(unknown("gpu.status", msg, "nvml:device_count", "GPUs"))
                return facts
            msg = ("no NVIDIA GPU found" if not held else
                   f"NVML sees no GPU, but the PCI bus has {len(held)} NVIDIA GPU(s) held by other drivers "
                   f"({drivers})")
            facts.append(ok("gpu.status", msg, "nvml:device_count", "GPUs"))
            return facts
        if inc:
            maker = unknown if inc.get("reason") == "crashed" else timed_out
            facts.append(maker("gpu.status", "NVML stopped part-way (%s); the answers before that are kept" % (
                inc.get("message", "")), "nvml:%s" % inc.get("call"), "GPUs"))
        else:
            facts.append(ok("gpu.status", f"NVML answered for {count} GPU(s)", "nvml:device_count", "GPUs"))
        for i in range(count):
            handle = data.get(f"device.{i}.handle")
            if isinstance(handle, dict) and "error" in handle:
                facts.append(unknown(f"gpu.{i}.name", "NVML cannot open this GPU: " + _nvml_error_reason(handle),
                                     f"nvml:device.{i}.handle", "Model"))
                continue
            facts.extend(_device_facts(data, i))
        facts.extend(_bar1_facts(host, data, count, pci))
        facts.append(_gpudirect_rdma(host))
        return facts

    # NVML gave nothing: what does the hardware show?
    rest = _fallback(host, pci, why or "")
    count = rest[0].value
    if count == 0:
        if pci is None:
            facts.append(unknown("gpu.count", f"{why}; {pci_why}", "derived",
                                 "NVIDIA GPUs"))
            facts.append(unknown("gpu.status", "cannot tell whether an NVIDIA GPU is present", "derived", "GPUs"))
            return facts
        if status == "timed_out":
            msg = f"NVML did not answer ({why}); the PCI bus shows no NVIDIA GPU"
            facts.append(timed_out("gpu.count", msg, "nvml:init", "NVIDIA GPUs"))
            facts.append(timed_out("gpu.status", msg, "nvml:init", "GPUs"))
            return facts
        facts.append(ok("gpu.count", 0, "derived", "NVIDIA GPUs"))
        none = ok("gpu.status", "no NVIDIA GPU found", "dir:" + PCI_DEVICES, "GPUs")
        none.reason = f"no NVIDIA display or 3D controller on the PCI bus; the driver: {why}"
        facts.append(none)
        return facts
    facts.extend(rest)
    msg = f"NVIDIA GPU present, driver not working: {why}"
    if status == "timed_out":
        facts.append(timed_out("gpu.status", msg, "nvml:init", "GPUs"))
    else:
        facts.append(unknown("gpu.status", msg, "nvml:init", "GPUs"))
    return facts

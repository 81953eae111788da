"""GPU topology: the paths between the GPUs, what can travel on them, and which transport NCCL will pick.

Evidence, all read through the host:

* NVML (the GPU probe's query, :mod:`envdoctor.host.nvml_worker`): per pair of GPUs the common PCIe
  ancestor (``nvmlDeviceGetTopologyCommonAncestor``) and the P2P status for read, write, NVLink and atomics
  (``nvmlDeviceGetP2PStatus``); per GPU its NVLink links (state, version, the PCI address at the far end,
  error counters), its fabric state (``nvmlDeviceGetGpuFabricInfoV``), C2C and BAR1 size.
* sysfs (no root needed): each GPU's PCIe path (``/sys/bus/pci/devices/<bdf>`` is a link into
  ``/sys/devices/pci<domain>:<bus>/...``, one directory per bridge on the way), every bridge's link speed
  and width (``current_link_speed``, ``max_link_speed``, ``current_link_width``, ``max_link_width``), the
  GPU's ``numa_node`` and ``local_cpulist``, its IOMMU group and that group's ``type`` (``identity``: the
  IOMMU passes DMA through; ``DMA``/``DMA-FQ``: it translates every access, peer-to-peer ones included),
  the BAR1 size (``resource``, when NVML does not say) and ``/proc/cmdline``.
* As root only: the ACS control word of every bridge on a peer-to-peer path (the ACS extended capability,
  ID 0x000D, in the 4 KiB ``config`` file; without root the kernel shows 64 bytes of it). Without root the
  ACS state is "unknown", never "fine".
* NCCL: the release the frameworks use (the ``nvidia-nccl-cu*`` wheel PyTorch pins, else the ``libnccl``
  the dynamic loader picks) and the variables NCCL reads (the environment, then ``$NCCL_CONF_FILE`` or
  ``~/.nccl.conf``, then ``/etc/nccl.conf``, as NCCL's ``initEnv`` does), judged with NCCL's own rules
  (:mod:`envdoctor.matrix.nccl`).

The matrix speaks ``nvidia-smi topo -m``'s legend: ``NV#`` (# bonded NVLinks: direct links between the two
GPUs, or on an NVSwitch board the links each GPU has into the switches), ``PIX`` (at most one PCIe bridge),
``PXB`` (several bridges, no host bridge), ``PHB`` (a host bridge), ``NODE`` (host bridges within a NUMA
node), ``SYS`` (the interconnect between NUMA nodes).

A snapshot written before envdoctor asked these questions replays as "not recorded".
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .. import lazyre
from ..facts import Fact, not_supported, ok, timed_out, unknown
from ..host.base import Host
from . import ProbeContext, register

PCI_DEVICES = "/sys/bus/pci/devices"
#: The most of one sysfs attribute file read (a device's ``resource`` table is about a kilobyte).
SYSFS_LIMIT = 4096
IOMMU_GROUPS = "/sys/kernel/iommu_groups"
IB_DEVICES = "/sys/class/infiniband"

#: nvmlGpuTopologyLevel_t -> nvidia-smi's legend (INTERNAL: two GPUs on one board, which nvidia-smi shows
#: as a single bridge apart).
NVML_LEVELS = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
#: nvmlGpuP2PStatus_t -> nvidia-smi's legend (``topo -p2p``).
P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "TNS", 4: "DR", 5: "NS", 6: "U"}
#: nvmlBrandType_t values of consumer boards (GeForce, TITAN).
CONSUMER_BRANDS = {5: "GeForce", 6: "TITAN"}
#: NVML_FI_DEV_NVLINK_GET_STATE / nvmlDeviceGetNvLinkState values.
LINK_STATES = {0: "inactive", 1: "active", 2: "sleep", 3: "traffic disabled"}
#: nvmlGpuFabricState_t.
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}
#: sysfs ``*_link_speed`` (GT/s) -> PCIe generation.
GT_TO_GEN = {"2.5": 1, "5.0": 2, "5": 2, "8.0": 3, "8": 3, "16.0": 4, "16": 4, "32.0": 5, "32": 5, "64.0": 6,
             "64": 6}
#: The ACS extended capability (PCIe base spec, "Access Control Services"): its ID, and in its control
#: register (capability + 6) the P2P Request Redirect and P2P Completion Redirect bits.
ACS_CAP_ID = 0x000D
ACS_REQUEST_REDIRECT = 1 << 2
ACS_COMPLETION_REDIRECT = 1 << 3
ACS_EGRESS_CONTROL = 1 << 5
#: The kernel parameters that decide the IOMMU's mode.
IOMMU_PARAMS = ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict", "pcie_acs_override",
                "pci")

_BDF = lazyre.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")

SRC_NVML = "nvml:pair"


def canonical_bdf(bus_id: Any) -> Optional[str]:
    """``00000000:18:00.0`` (NVML) or ``0000:18:00.0`` -> ``0000:18:00.0`` (sysfs); None for anything else."""
    m = re.match(r"^\s*([0-9a-fA-F]{1,8}):([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])\s*$", str(bus_id or ""))
    if not m:
        return None
    return "%04x:%02x:%02x.%x" % tuple(int(g, 16) for g in m.groups())


def _value(ans: Any) -> Any:
    return ans.get("value") if isinstance(ans, dict) else None


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def link_gen(text: Optional[str]) -> Optional[int]:
    """``16.0 GT/s PCIe`` -> 4 (``Unknown``, garbage -> None)."""
    m = re.match(r"^\s*([\d.]+)\s*GT/s", text or "")
    return GT_TO_GEN.get(m.group(1)) if m else None


def link_width(text: Optional[str]) -> Optional[int]:
    m = re.match(r"^\s*x?(\d{1,2})\s*$", text or "")
    return int(m.group(1)) if m else None


def acs_control(config: bytes) -> Optional[int]:
    """The ACS control word from a device's PCI configuration space (the 4 KiB file root reads), or None when
    the space shown is too short to hold the extended capabilities (not root) or has no ACS capability."""
    if len(config) < 0x104:
        return None
    offset, seen = 0x100, set()
    while 0x100 <= offset <= len(config) - 8 and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            return int.from_bytes(config[offset + 6:offset + 8], "little")
        offset = (header >> 20) & 0xFFC
    return None


# -- sysfs -------------------------------------------------------------------------------------------

class _Sysfs:
    """The PCIe side of one machine, read once per device."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.chains: Dict[str, Optional[List[str]]] = {}
        self.links: Dict[str, Dict[str, Any]] = {}

    def text(self, bdf: str, name: str) -> Optional[str]:
        t = self.host.read_text(posixpath.join(PCI_DEVICES, bdf, name), limit=SYSFS_LIMIT)
        return t.strip() if t is not None else None

    def chain(self, bdf: str) -> Optional[List[str]]:
        """The devices from the root complex down to ``bdf``: ``["pci0000:17", "0000:17:01.0", ...,
        bdf]``; None when sysfs does not show the device."""
        if bdf not in self.chains:
            link = self.host.read_link(posixpath.join(PCI_DEVICES, bdf))
            parts = [p for p in (link.target or "").split("/") if p and p not in (".", "..")]
            parts = parts[parts.index("devices") + 1:] if "devices" in parts else parts
            path = [p for p in parts if p.startswith("pci") or _BDF.match(p)]
            self.chains[bdf] = [canonical_bdf(p) or p for p in path] if link.ok and path and path[-1].lower() == \
                bdf.lower() else None
        return self.chains[bdf]

    def link(self, bdf: str) -> Dict[str, Any]:
        """A device's PCIe link: generation and width, now and at most."""
        if bdf not in self.links:
            self.links[bdf] = {
                "bdf": bdf,
                "gen_current": link_gen(self.text(bdf, "current_link_speed")),
                "gen_max": link_gen(self.text(bdf, "max_link_speed")),
                "width_current": link_width(self.text(bdf, "current_link_width")),
                "width_max": link_width(self.text(bdf, "max_link_width")),
            }
        return self.links[bdf]

    def acs(self, bdf: str) -> Dict[str, Any]:
        """ACS of a bridge: ``{"redirect": bool, "control": "0x001d"}``, or ``{"redirect": None, "why": ...}``."""
        res = self.host.read_file(posixpath.join(PCI_DEVICES, bdf, "config"), limit=4096)
        if not res.ok:
            return {"redirect": None, "why": "cannot read its configuration space (%s)" % res.error}
        data = res.data or b""
        if len(data) <= 256:
            return {"redirect": None, "why": "reading a bridge's ACS control needs root"}
        ctl = acs_control(data)
        if ctl is None:
            return {"redirect": False, "control": None, "why": "no ACS capability"}
        bits = ctl & (ACS_REQUEST_REDIRECT | ACS_COMPLETION_REDIRECT | ACS_EGRESS_CONTROL)
        return {"redirect": bool(bits), "control": "0x%04x" % ctl}


def _cpulist_ok(text: Optional[str]) -> Optional[str]:
    return text if text and re.match(r"^[\d,\-]+$", text) else None


def _numa(text: Optional[str]) -> Optional[int]:
    return int(text) if text and re.match(r"^-?\d+$", text) else None


# -- NVML --------------------------------------------------------------------------------------------

def _p2p_status(ans: Any) -> str:
    v = _value(ans)
    return P2P_STATUS.get(v, "U") if isinstance(v, int) else "U"


def nvlinks(data: Dict[str, Any], i: int) -> Tuple[Optional[List[Dict[str, Any]]], Dict[str, Any], str]:
    """(links, error counters, why None): the links of GPU ``i`` (an empty list: no NVLink), None when not
    known."""
    ans = data.get("device.%d.nvlink" % i)
    if not isinstance(ans, dict):
        return None, {}, "not recorded"
    if "error" in ans:
        if ans.get("error") == "NVML_ERROR_NOT_SUPPORTED":
            return [], {}, ""
        return None, {}, "NVML answered %s" % ans.get("error")
    v = ans.get("value")
    if not isinstance(v, dict) or not isinstance(v.get("links"), list):
        return None, {}, "NVML's answer is garbled"
    links = []
    for entry in v["links"][:64]:
        if not isinstance(entry, dict):
            continue
        state = _value(entry.get("state"))
        links.append({"link": _int(entry.get("link")), "state": LINK_STATES.get(state, "unknown")
                      if isinstance(state, int) else "unknown",
                      "version": _int(_value(entry.get("version"))),
                      "remote": canonical_bdf(_value(entry.get("remote_bus_id")))})
    errors = {k: _value(a) for k, a in (v.get("errors") or {}).items() if isinstance(_value(a), int)} \
        if isinstance(v.get("errors"), dict) else {}
    return links, errors, ""


def _fabric(data: Dict[str, Any], i: int) -> Optional[Dict[str, Any]]:
    v = _value(data.get("device.%d.fabric" % i))
    if not isinstance(v, dict) or not isinstance(v.get("state"), int):
        return None
    out = {"state": FABRIC_STATES.get(v["state"], "unknown (%s)" % v["state"]),
           "status": v.get("status"), "clique": v.get("cliqueId"), "cluster": v.get("clusterUuid")}
    if isinstance(v.get("healthMask"), int):
        out["health_mask"] = v["healthMask"]
    return out


# -- NCCL --------------------------------------------------------------------------------------------

def nccl_release(frameworks: Any, libraries: Any) -> Tuple[Optional[str], str]:
    """(the NCCL release a job here loads, where it is): the ``nvidia-nccl-cu*`` wheel a framework pins and has
    installed, else a pip copy, else the ``libnccl.so.2`` the dynamic loader picks."""
    for fact in frameworks:
        if not fact.key.startswith("framework.") or not fact.known or not isinstance(fact.value, dict):
            continue
        wheels = fact.value.get("nvidia_wheels")
        for name, w in sorted(wheels.items()) if isinstance(wheels, dict) else ():
            if re.match(r"^nvidia-nccl(-cu\d+)?$", str(name)) and isinstance(w, dict) and w.get("installed"):
                return str(w["installed"]), "the %s wheel %s uses" % (name, fact.key.split(".", 1)[1])
    copies = libraries.items("libraries.nccl")
    for c in copies:
        if isinstance(c, dict) and c.get("kind") == "pip" and c.get("version"):
            return str(c["version"]), str(c.get("found_by") or "a pip wheel")
    choice = libraries.mapping("libraries.loader_choice").get("libnccl.so.2")
    if isinstance(choice, dict) and choice.get("version") and choice.get("path"):
        return str(choice["version"]), "%s (the library the loader picks)" % choice.get("resolved", choice["path"])
    return None, "no NCCL found"


def nccl_settings(host: Host) -> Dict[str, Dict[str, str]]:
    """The NCCL variables the transport rules read, as NCCL sees them: the environment first, then
    ``$NCCL_CONF_FILE`` (else ``~/.nccl.conf``), then ``/etc/nccl.conf`` (NCCL's ``initEnv``; a file never
    overrides what is already set)."""
    from ..matrix.nccl import VARIABLES, read_conf

    out: Dict[str, Dict[str, str]] = {}
    for name in VARIABLES:
        value = host.getenv(name)
        if value is not None:
            out[name] = {"value": value, "from": "environment"}
    conf = host.getenv("NCCL_CONF_FILE")
    home = host.getenv("HOME")
    # (a snapshot writes the home directory as "~", and the files read under it the same way)
    files = [conf] if conf else ([posixpath.join(home, ".nccl.conf")] if home else [])
    for path in files + ["/etc/nccl.conf"]:
        text = host.read_text(path, limit=64 * 1024)
        if text is None:
            continue
        for name, value in read_conf(text).items():
            if name in VARIABLES and name not in out:
                out[name] = {"value": value, "from": path}
    return out


def _visible(host: Host, count: int, uuids: Dict[int, str]) -> Optional[List[int]]:
    """The NVML indices CUDA_VISIBLE_DEVICES leaves a job (None: every GPU, or a value that cannot be mapped)."""
    value = host.getenv("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    out: List[int] = []
    by_uuid = {u: i for i, u in uuids.items()}
    for part in [p.strip() for p in value.split(",")]:
        if not part:
            break  # CUDA stops at the first entry it cannot use
        if part.isdigit() and int(part) < count:
            out.append(int(part))
        elif part.startswith("GPU-"):
            hit = [i for u, i in by_uuid.items() if u.startswith(part)]
            if len(hit) != 1:
                return None
            out.append(hit[0])
        elif part.startswith("MIG-"):
            return None  # a MIG device (MIG-<UUID>, or MIG-GPU-<UUID>/<GI>/<CI>): its GPU is not a fact here
        else:
            break
    return out


# -- the probe ---------------------------------------------------------------------------------------

def _not_recorded(data: Dict[str, Any], count: int) -> bool:
    """A snapshot from an envdoctor that did not ask about the interconnect (a live run always asks)."""
    return count > 0 and not any(k.startswith("pair.") or k.endswith((".nvlink", ".fabric")) for k in data)


def _path_label(links_a: List[Dict[str, Any]], links_b: List[Dict[str, Any]], bus_a: str, bus_b: str,
                gpu_buses: Set[str]) -> Tuple[int, str]:
    """(bonded NVLinks between two GPUs, how): direct links from one to the other, else (an NVSwitch board)
    the fewer of the two GPUs' active links into switches."""
    direct = sum(1 for link in links_a if link["state"] in ("active", "sleep") and link["remote"] == bus_b)
    if direct:
        return direct, "direct"
    to_switch_a = sum(1 for link in links_a if link["state"] in ("active", "sleep") and link["remote"]
                      and link["remote"] not in gpu_buses)
    to_switch_b = sum(1 for link in links_b if link["state"] in ("active", "sleep") and link["remote"]
                      and link["remote"] not in gpu_buses)
    if to_switch_a and to_switch_b:
        return min(to_switch_a, to_switch_b), "switch"
    return 0, ""


@register("topology", "GPU topology", order=98, uses_nvml=True,
          produces=("topology.*", "topology.*.*"),
          needs=("os", "cpu", "libraries", "frameworks"))
def probe_topology(ctx: ProbeContext) -> Iterable[Fact]:
    host = ctx.host
    facts: List[Fact] = []
    label = "GPU topology"
    nv = host.nvml()
    data: Dict[str, Any] = (nv.data or {}) if nv.ok else {}
    init = data.get("init")
    if not nv.ok or not isinstance(init, dict) or "error" in init:
        why = nv.message or str(nv.error) if not nv.ok else "NVML did not start (%s)" % (
            init.get("error") if isinstance(init, dict) else "no answer")
        maker = timed_out if nv.error in ("timed_out", "deadline", "starved") else unknown
        return [maker("topology.status", why, "nvml:init", label)]
    count = _int(_value(data.get("device_count")))
    if count is None or count < 0 or count > 64:
        return [unknown("topology.status", "NVML gave no GPU count", "nvml:device_count", label)]
    if count == 0:
        return [ok("topology.status", "no NVIDIA GPU", "nvml:device_count", label)]
    if _not_recorded(data, count):
        return [unknown("topology.status", "not recorded: this snapshot was taken by an envdoctor that did not "
                        "ask about the GPUs' interconnect", "nvml:pair", label)]
    inc = data.get("incomplete") if isinstance(data.get("incomplete"), dict) else None

    sysfs = _Sysfs(host)
    gpus: List[Dict[str, Any]] = []
    buses: Dict[int, str] = {}
    uuids: Dict[int, str] = {}
    for i in range(count):
        pci = _value(data.get("device.%d.pci" % i))
        bus = canonical_bdf(pci.get("busId") if isinstance(pci, dict) else None)
        name = _value(data.get("device.%d.name" % i))
        uuid = _value(data.get("device.%d.uuid" % i))
        if isinstance(uuid, str):
            uuids[i] = uuid
        entry: Dict[str, Any] = {"index": i, "pci_bus_id": bus, "name": name if isinstance(name, str) else None}
        brand = _int(_value(data.get("device.%d.brand" % i)))
        entry["consumer"] = brand in CONSUMER_BRANDS if brand is not None else (
            bool(re.search(r"GeForce|TITAN", name)) if isinstance(name, str) else None)
        links, errors, why = nvlinks(data, i)
        entry["nvlink"] = links
        if why:
            entry["nvlink_unknown"] = why
        if errors:
            entry["nvlink_errors"] = errors
        fabric = _fabric(data, i)
        if fabric is not None:
            entry["fabric"] = fabric
        c2c = _value(data.get("device.%d.c2c" % i))
        if isinstance(c2c, dict) and isinstance(c2c.get("isC2cEnabled"), int):
            entry["c2c"] = bool(c2c["isC2cEnabled"])
        bar1 = _value(data.get("device.%d.bar1" % i))
        mem = _value(data.get("device.%d.memory" % i))
        entry["bar1_bytes"] = _int(bar1.get("bar1Total")) if isinstance(bar1, dict) else None
        entry["memory_bytes"] = _int(mem.get("total")) if isinstance(mem, dict) else None
        if bus:
            buses[i] = bus
            entry["numa_node"] = _numa(sysfs.text(bus, "numa_node"))
            entry["cpulist"] = _cpulist_ok(sysfs.text(bus, "local_cpulist"))
            chain = sysfs.chain(bus)
            entry["pcie_path"] = chain
            entry["bridges"] = [sysfs.link(b) for b in chain[1:-1]] if chain else []
            group = host.read_link(posixpath.join(PCI_DEVICES, bus, "iommu_group"))
            if group.ok and group.target:
                gid = posixpath.basename(group.target.rstrip("/"))
                entry["iommu_group"] = gid
                kind = host.read_text(posixpath.join(IOMMU_GROUPS, gid, "type"), limit=64)
                entry["iommu_type"] = kind.strip() if kind and kind.strip() else None
            else:
                entry["iommu_group"] = None
            if entry["bar1_bytes"] is None:
                entry["bar1_bytes"] = bar1_from_resource(sysfs.text(bus, "resource"))
        gpus.append(entry)

    gpu_buses = set(buses.values())
    pairs = _pairs(data, gpus, buses, gpu_buses, count)
    env = nccl_settings(host)
    facts.extend(_nccl(ctx, host, pairs, gpus, env, uuids, count))
    facts.extend(_iommu(host, gpus, pairs))
    facts.extend(_acs(sysfs, gpus, pairs))
    facts.append(_nics(host, sysfs, gpus))
    fabric = {g["index"]: g["fabric"] for g in gpus if g.get("fabric") and g["fabric"]["state"] != "not supported"}
    if fabric:
        states = sorted({f["state"] for f in fabric.values()})
        facts.append(ok("topology.fabric", {"gpus": fabric}, "nvml:device.N.fabric", "GPU fabric"))
        facts.append(ok("topology.fabric.state", states[0] if len(states) == 1 else "mixed: " + ", ".join(states),
                        "nvml:device.N.fabric", "GPU fabric state"))
    else:
        failed = sorted({str(a.get("error")) for a in (data.get("device.%d.fabric" % i) for i in range(count))
                         if isinstance(a, dict) and a.get("error") not in (None, "NVML_ERROR_NOT_SUPPORTED")})
        if failed:  # a driver (or binding) that predates the question: not known, not "no fabric"
            facts.append(unknown("topology.fabric.state", "NVML cannot tell (%s)" % ", ".join(failed),
                                 "nvml:device.N.fabric", "GPU fabric state"))
        else:
            facts.append(ok("topology.fabric.state", None, "nvml:device.N.fabric", "GPU fabric state"))
    facts.append(ok("topology.gpus", gpus, "nvml:device.N.nvlink,dir:" + PCI_DEVICES, "GPUs on the interconnect"))
    facts.append(ok("topology.pairs", pairs, SRC_NVML, "GPU pairs"))
    facts.append(_status(count, pairs, inc))
    return facts


def bar1_of(host: Host, bdf: str) -> Optional[int]:
    """The BAR1 size of the PCI device ``bdf`` from its sysfs ``resource`` file, read as :class:`_Sysfs` reads it
    (one limit for one file, whichever probe asks first); None when it cannot be read."""
    return bar1_from_resource(host.read_text(posixpath.join(PCI_DEVICES, bdf, "resource"), limit=SYSFS_LIMIT))


def bar1_from_resource(text: Optional[str]) -> Optional[int]:
    """BAR1's size from a PCI device's sysfs ``resource`` file (one line per BAR: start, end, flags in hex; BAR1 is
    line 1); None when it cannot be read."""
    lines = (text or "").splitlines()
    if len(lines) < 2:
        return None
    parts = lines[1].split()
    try:
        start, end = int(parts[0], 16), int(parts[1], 16)
    except (IndexError, ValueError):
        return None
    return end - start + 1 if end > start else None


def _pairs(data: Dict[str, Any], gpus: List[Dict[str, Any]], buses: Dict[int, str], gpu_buses: Set[str],
           count: int) -> List[Dict[str, Any]]:
    pairs: List[Dict[str, Any]] = []
    # each GPU's active links once (what _path_label counts for every pair): links to each bus, links into switches
    reach: Dict[int, Tuple[Dict[Any, int], int]] = {}
    for i in buses:
        active = [link for link in gpus[i].get("nvlink") or [] if link["state"] in ("active", "sleep")]
        remotes: Dict[Any, int] = {}
        for link in active:
            remotes[link["remote"]] = remotes.get(link["remote"], 0) + 1
        reach[i] = remotes, sum(1 for link in active if link["remote"] and link["remote"] not in gpu_buses)
    for a in range(count):
        for b in range(a + 1, count):
            ans = data.get("pair.%d.%d" % (a, b))
            v = _value(ans) if isinstance(ans, dict) else None
            entry: Dict[str, Any] = {"a": a, "b": b}
            level = _int(_value(v.get("ancestor"))) if isinstance(v, dict) else None
            pcie = NVML_LEVELS.get(level) if level is not None else None
            p2p: Dict[str, Any] = v["p2p"] if isinstance(v, dict) and isinstance(v.get("p2p"), dict) else {}
            entry["p2p"] = {"read": _p2p_status(p2p.get("read")), "write": _p2p_status(p2p.get("write"))}
            entry["p2p_nvlink"] = _p2p_status(p2p.get("nvlink"))
            entry["p2p_atomics"] = _p2p_status(p2p.get("atomics"))
            n, how = 0, ""
            if a in reach and b in reach:  # _path_label's answer
                n = reach[a][0].get(buses[b], 0)
                if n:
                    how = "direct"
                elif reach[a][1] and reach[b][1]:
                    n, how = min(reach[a][1], reach[b][1]), "switch"
            entry["pcie"] = pcie
            entry["path"] = ("NV%d" % n) if n else pcie
            if n:
                entry["nvlinks"] = n
                entry["nvlink_via"] = how
            if not isinstance(ans, dict):
                entry["unknown"] = "not asked (NVML's query stopped earlier)"
            elif "error" in ans:
                entry["unknown"] = "NVML answered %s" % ans.get("error")
            pairs.append(entry)
    # NVLink through a third GPU (NCCL's NVB): a pair without its own links, each linked to the same GPU
    linked: Dict[int, Set[int]] = {}  # each GPU's directly linked peers
    for p in pairs:
        if p.get("nvlink_via") == "direct":
            linked.setdefault(p["a"], set()).add(p["b"])
            linked.setdefault(p["b"], set()).add(p["a"])
    for p in pairs if linked else ():
        if p.get("nvlinks"):
            continue
        via = (linked.get(p["a"], set()) & linked.get(p["b"], set())) - {p["a"], p["b"]}
        if via:
            p["nvb_via"] = min(via)
    return pairs


def _nccl(ctx: ProbeContext, host: Host, pairs: List[Dict[str, Any]], gpus: List[Dict[str, Any]],
          env: Dict[str, Dict[str, str]], uuids: Dict[int, str], count: int) -> List[Fact]:
    from ..matrix import nccl

    facts: List[Fact] = []
    version, where = nccl_release(ctx.facts_of("frameworks"), ctx.facts_of("libraries"))
    row, note = nccl.rules_for(version)
    osf, cpu = ctx.facts_of("os"), ctx.facts_of("cpu")
    arch = nccl.cpu_arch(osf.text("os.arch") or host.uname().get("machine"))
    vendor = cpu.text("cpu.vendor")
    fm = cpu.items("cpu.family_model")
    family, model = (fm[0], fm[1]) if len(fm) == 2 and all(isinstance(x, int) for x in fm) else (None, None)
    visible = _visible(host, count, uuids)
    job = visible if visible is not None else list(range(count))
    values = {k: v["value"] for k, v in env.items()}
    info: Dict[str, Any] = {"version": version, "from": where, "variables": env, "gpus_in_job": job}
    if note:
        info["note"] = note
    if row is None:
        facts.append(unknown("topology.nccl", note, "derived", "NCCL transport rules"))
        for p in pairs:
            p["nccl"] = None
        return facts
    info["rules"] = "NCCL %s%s" % (row["nccl_min"], " to %s" % row["nccl_below"] if row["nccl_below"] else " and later")
    info["source"] = row["source"]["url"]
    base, base_why = nccl.default_level(row, arch, vendor, family, model, len(job))
    user, user_why = nccl.user_level(row, values)
    level = user or base
    info.update({"p2p_level": level, "p2p_level_default": base, "why": user_why or base_why, "cpu": {
        "arch": arch, "vendor": vendor, "family_model": fm or None}})
    if user_why and not user:
        info["ignored"] = user_why
    for p in pairs:
        if p.get("unknown") or not p.get("path"):
            p["nccl"] = None
            continue
        path = "NVL" if p.get("nvlinks") else nccl.nccl_path(p["path"])
        choice = nccl.choose(row, path, level, p["p2p"]["read"] if p["p2p"]["read"] != "U" else None,
                             p["p2p"]["write"] if p["p2p"]["write"] != "U" else None, values,
                             nvb="nvb_via" in p)
        p["nccl"] = choice.transport if choice.transport in nccl.TRANSPORTS else None
        p["nccl_why"] = choice.why
        if user or any(k in values for k in ("NCCL_SHM_DISABLE",)):
            clean = {k: v for k, v in values.items() if k not in ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
                                                                   "NCCL_SHM_DISABLE")}
            default = nccl.choose(row, path, base, p["p2p"]["read"] if p["p2p"]["read"] != "U" else None,
                                  p["p2p"]["write"] if p["p2p"]["write"] != "U" else None, clean,
                                  nvb="nvb_via" in p)
            if default.transport != choice.transport:
                p["nccl_without_variables"] = default.transport
    facts.append(ok("topology.nccl", info, "derived", "NCCL transport rules"))
    in_job = [p for p in pairs if p["a"] in job and p["b"] in job]
    if len(job) < 2 or not in_job:
        facts.append(not_supported("topology.min_nccl_transport", "derived", "Slowest NCCL transport",
                                   "fewer than two GPUs: no pair to connect"))
    else:
        worst = nccl.worst([str(p.get("nccl")) for p in in_job])
        if worst is None:
            facts.append(unknown("topology.min_nccl_transport", "the transport of some pair is not known", "derived",
                                 "Slowest NCCL transport"))
        else:
            facts.append(ok("topology.min_nccl_transport", worst, "derived", "Slowest NCCL transport"))
    return facts


def _iommu(host: Host, gpus: List[Dict[str, Any]], pairs: List[Dict[str, Any]]) -> List[Fact]:
    """``topology.iommu_mode``: off (no IOMMU groups), identity (passthrough), DMA or DMA-FQ (translating),
    the most translating one of the GPUs'."""
    cmdline = host.read_text("/proc/cmdline", limit=16 * 1024)
    params = [w for w in (cmdline or "").split() if w.split("=", 1)[0] in IOMMU_PARAMS]
    types = [g.get("iommu_type") for g in gpus if g.get("pci_bus_id")]
    groups = [g.get("iommu_group") for g in gpus if g.get("pci_bus_id")]
    src = "dir:%s,file:/proc/cmdline" % IOMMU_GROUPS
    label = "IOMMU mode of the GPUs"
    if not types:
        return [unknown("topology.iommu_mode", "no GPU's PCI address is known", src, label)]
    if all(g is None for g in groups):
        mode: Optional[str] = "off"
    elif any(t is None for t, g in zip(types, groups) if g is not None):
        # no group type file (Linux before 5.11 has none): the kernel command line says the mode, when it names it;
        # else the groups themselves say an IOMMU driver is active, in the kernel's built-in default domain type
        release = _kernel_release(host)
        config = host.read_text("/boot/config-%s" % release, limit=512 * 1024)
        mode = mode_from_cmdline(params, config, active=True)
        where = "file:/proc/cmdline"
        if mode == IOMMU_KERNEL_DEFAULT:
            where = src
        elif not _cmdline_sets_mode(params) and config_default_domain(config) is not None:
            where = "file:/proc/cmdline,file:/boot/config-%s" % release
        if mode is None:
            return [unknown("topology.iommu_mode", "an IOMMU group's type cannot be read and the kernel command line "
                            "does not set the IOMMU's mode", src, label),
                    ok("topology.kernel_parameters", params, "file:/proc/cmdline", "IOMMU and PCI kernel parameters")]
        return [ok("topology.iommu_mode", mode, where, label),
                ok("topology.kernel_parameters", params, "file:/proc/cmdline", "IOMMU and PCI kernel parameters")]
    else:
        order = ["identity", "DMA-FQ", "DMA"]
        known = [t for t in types if t]
        mode = max(known, key=lambda t: order.index(t) if t in order else len(order))
    return [ok("topology.iommu_mode", mode, src, label),
            ok("topology.kernel_parameters", params, "file:/proc/cmdline", "IOMMU and PCI kernel parameters")]


def _kernel_release(host: Host) -> str:
    release = str(host.uname().get("release", "") or "")
    return release if re.match(r"^[A-Za-z0-9._+~-]{1,128}$", release) else "unknown"


#: ``topology.iommu_mode`` of GPUs in IOMMU groups on a kernel that reports no group type (Linux before 5.11),
#: whose command line sets no mode and whose build configuration cannot be read: the kernel's built-in default
#: domain type, translated (DMA) unless it was built with CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y (unverified).
IOMMU_KERNEL_DEFAULT = "kernel default"


def config_default_domain(config: Optional[str]) -> Optional[str]:
    """The default domain type a kernel's build configuration (``/boot/config-<release>``) gives, by
    drivers/iommu/iommu.c (``iommu_subsys_init`` in the 5.x kernels):
    ``identity`` with ``CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y``, ``DMA`` where the configuration says it is not set.
    None when the configuration is not readable or does not name the option."""
    if not config:
        return None
    if re.search(r"^CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y\s*$", config, re.M):
        return "identity"
    if re.search(r"^# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\s*$", config, re.M):
        return "DMA"
    return None


def _cmdline_sets_mode(params: Sequence[str]) -> bool:
    return mode_from_cmdline(params) is not None


def mode_from_cmdline(params: Sequence[str], config: Optional[str] = None, active: bool = False) -> Optional[str]:
    """The IOMMU's DMA mode of a kernel whose groups have no ``type`` file (Linux before 5.11), from its command
    line (Documentation/admin-guide/kernel-parameters.txt): ``iommu=pt`` or ``iommu.passthrough=1`` is
    passthrough (``identity``); ``iommu.passthrough=0`` translates (``DMA``); an IOMMU switched on
    (``intel_iommu=on``, ``amd_iommu=on``, ``iommu=force``) without passthrough translates, the kernel's default
    domain, unless the kernel was built with ``CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y`` (its ``/boot/config-*``,
    when readable). ``active``: the GPUs are in IOMMU groups, so an IOMMU driver is on though the command line
    does not switch it on (AMD-Vi is on by default where the firmware has an IVRS table): the mode is the kernel's
    default domain type, from its configuration, or :data:`IOMMU_KERNEL_DEFAULT` where that is not readable.
    None when the command line does not say and ``active`` is false."""
    values: Dict[str, str] = {}
    for word in params:
        name, _, value = word.partition("=")
        values[name] = value.lower()  # the last one given wins, as the kernel parses them in order
    iommu = {v for w in params if w.partition("=")[0] == "iommu" for v in w.partition("=")[2].lower().split(",")}
    passthrough = values.get("iommu.passthrough")
    if "pt" in iommu or passthrough in ("1", "y", "on"):
        return "identity"
    if passthrough in ("0", "n", "off") or "nopt" in iommu:
        return "DMA"
    switched_on = (values.get("intel_iommu", "").split(",")[0] == "on" or values.get("amd_iommu") == "on"
                   or "force" in iommu)
    if not switched_on and not active:
        return None
    built = config_default_domain(config)
    if built is not None:
        return built
    return "DMA" if switched_on else IOMMU_KERNEL_DEFAULT


def _below(chain: Sequence[str], other: Sequence[str]) -> List[str]:
    """The bridges of ``chain`` below its lowest common ancestor with ``other`` (the GPU itself left out)."""
    shared = 0
    for x, y in zip(chain, other):
        if x != y:
            break
        shared += 1
    return list(chain[max(shared, 1):-1])


def _p2p_path(pair: Dict[str, Any]) -> bool:
    """Whether ``pair``'s GPUs may reach each other by PCIe peer-to-peer: a path below the host bridge
    (PIX/PXB: within every NCCL release's P2P level, and what CUDA peer access uses), or any path on which
    NCCL picks P2P over PCIe (the ``nccl`` transport, by the installed release's ``ncclTopoCheckP2p``). A path
    through the root complex (PHB/NODE/SYS) thus counts only where NCCL uses P2P across it: by default on AMD
    x86 CPUs with at most two GPUs, whose P2P level is SYS (NCCL 2.23.4 and later), or where NCCL_P2P_LEVEL
    raises the level; on an Intel CPU (level PXB) it stays SHM and out."""
    if pair.get("nvlinks"):
        return False
    return pair.get("pcie") in ("PIX", "PXB") or pair.get("nccl") == "P2P/PCIe"


def _acs(sysfs: _Sysfs, gpus: List[Dict[str, Any]], pairs: List[Dict[str, Any]]) -> List[Fact]:
    """``topology.acs_redirect``: whether a bridge on a PCIe peer-to-peer path redirects peer requests up to the
    root complex (ACS P2P Request/Completion Redirect or Egress Control set); unknown without root. The
    bridges of a pair are those below the two GPUs' lowest common ancestor: the switch ports of a PIX/PXB
    path, and on a path through the root complex every bridge up to and including each GPU's root port."""
    label = "ACS redirect on a PCIe P2P path"
    src = "file:%s/*/config" % PCI_DEVICES
    bridges: Dict[str, List[Tuple[int, int]]] = {}
    for p in pairs:
        if not _p2p_path(p):
            continue
        ca, cb = gpus[p["a"]].get("pcie_path"), gpus[p["b"]].get("pcie_path")
        if not ca or not cb:
            continue
        for bdf in _below(ca, cb) + _below(cb, ca):
            bridges.setdefault(bdf, []).append((p["a"], p["b"]))
    if not bridges:
        return [ok("topology.acs", [], src, "ACS on PCIe P2P paths"),
                ok("topology.acs_redirect", False, "derived", label)]
    seen = []
    for bdf in sorted(bridges):
        entry = dict(sysfs.acs(bdf), bdf=bdf, pairs=[list(x) for x in bridges[bdf]])
        seen.append(entry)
    facts = [ok("topology.acs", seen, src, "ACS on PCIe P2P paths")]
    if any(e["redirect"] for e in seen):
        facts.append(ok("topology.acs_redirect", True, src, label))
    elif any(e["redirect"] is None for e in seen):
        why = next(e["why"] for e in seen if e["redirect"] is None)
        facts.append(unknown("topology.acs_redirect", "%s; %d bridge(s) on PCIe P2P paths not read" % (
            why, sum(1 for e in seen if e["redirect"] is None)), src, label))
    else:
        facts.append(ok("topology.acs_redirect", False, src, label))
    return facts


def _nics(host: Host, sysfs: _Sysfs, gpus: List[Dict[str, Any]]) -> Fact:
    """``topology.nics``: each RDMA network device (``/sys/class/infiniband/<dev>``: InfiniBand or RoCE, what
    NCCL's IB transport and GPU Direct RDMA use) with its PCIe path and ``gpus_under_switch``, the GPUs that
    share a PCIe switch with it (their lowest common ancestor is a bridge below the root port, NCCL's PIX or
    PXB path); an empty list when the kernel shows no RDMA device. NCCL 2.18.1's Tree/LL128 defect bites where
    a NIC shares a switch with exactly one GPU (``known_issues.json``)."""
    label = "RDMA network devices"
    listing = host.list_dir(IB_DEVICES)
    if not listing.ok:
        if listing.error in ("ENOENT", "ENOTDIR") or not host.exists(IB_DEVICES):
            return ok("topology.nics", [], "dir:" + IB_DEVICES, label)
        return unknown("topology.nics", "cannot list %s (%s)" % (IB_DEVICES, listing.message or listing.error),
                       "dir:" + IB_DEVICES, label)
    nics: List[Dict[str, Any]] = []
    for name in listing.names():
        link = host.read_link(posixpath.join(IB_DEVICES, name, "device"))
        bdf = canonical_bdf(posixpath.basename((link.target or "").rstrip("/"))) if link.ok else None
        chain = sysfs.chain(bdf) if bdf else None
        entry: Dict[str, Any] = {"name": name, "pci_bus_id": bdf, "pcie_path": chain}
        if chain:
            under = []
            for g in gpus:
                other = g.get("pcie_path")
                if not other:
                    continue
                shared = 0
                for x, y in zip(chain, other):
                    if x != y:
                        break
                    shared += 1
                if shared >= 3:  # root complex, root port, then a switch port both hang below
                    under.append(g["index"])
            entry["gpus_under_switch"] = under
        else:
            entry["gpus_under_switch"] = None
        nics.append(entry)
    return ok("topology.nics", nics, "dir:" + IB_DEVICES, label)


def _status(count: int, pairs: List[Dict[str, Any]], inc: Optional[Dict[str, Any]]) -> Fact:
    label = "GPU topology"
    if inc and any(p.get("unknown") for p in pairs):
        return timed_out("topology.status", "NVML stopped part-way (%s): the pairs after it are not known" % (
            inc.get("message", "")), "nvml:%s" % inc.get("call"), label)
    if count == 1:
        return ok("topology.status", "1 GPU: no GPU-to-GPU path", SRC_NVML, label)
    paths = sorted({str(p.get("path")) for p in pairs}, key=lambda s: (not s.startswith("NV"), s))
    transports = sorted({str(p.get("nccl")) for p in pairs if p.get("nccl")})
    return ok("topology.status", "%d GPUs: %s; NCCL %s" % (count, ", ".join(paths), ", ".join(transports) or "?"),
              SRC_NVML, label)

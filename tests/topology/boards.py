"""Multi-GPU boards for the topology tests, rebuilt from published ``nvidia-smi topo -m`` / ``-p2p`` outputs.

Each ``boards/NAME.json`` holds what was published (the matrix as printed, with its URL) and, in a compact
form, the machine behind it: the GPUs (one model, the fields the fake NVML answers), their PCI bus ids and the
PCIe bridges above each (``path``), NUMA nodes and CPU lists, NVLinks (direct counts or links into
NVSwitches), the PCIe relation NVML's common-ancestor call gives for every pair, P2P status, fabric state,
IOMMU, the CPU. ``_source`` says where each piece came from and what was rebuilt.

From that, :func:`fake_answers` writes the answer file of the stand-in NVML (``tests/fakenvml``: no GPU runs
here), the real worker (``envdoctor/host/nvml_worker.py``, through nvidia-ml-py) asks it, and
:func:`snapshot` wraps those answers with the machine's sysfs tree, ``/proc/cpuinfo`` and ``/proc/cmdline``
into a snapshot document that envdoctor replays through its Host seam like any captured machine.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
BOARDS = os.path.join(HERE, "boards")
ROOT = os.path.dirname(os.path.dirname(HERE))

#: nvidia-smi's legend -> nvmlGpuTopologyLevel_t.
LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}
#: nvidia-smi ``topo -p2p`` -> nvmlGpuP2PStatus_t.
P2P = {"OK": 0, "CNS": 1, "GNS": 2, "TNS": 3, "DR": 4, "NS": 5, "U": 6}
GEN_SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe",
             6: "64.0 GT/s PCIe"}


def names() -> List[str]:
    return sorted(n[:-5] for n in os.listdir(BOARDS) if n.endswith(".json"))


def load(name: str) -> Dict[str, Any]:
    with open(os.path.join(BOARDS, name + ".json"), encoding="utf-8") as fh:
        return json.load(fh)


def published_matrix(board: Dict[str, Any]) -> List[List[str]]:
    """The GPU x GPU cells of the published matrix (rows in GPU order; ``X`` on the diagonal)."""
    lines = [ln for ln in board["published"]["matrix"] if ln.strip()]
    rows = []
    for line in lines[1:]:
        cells = line.split()
        n = len(lines) - 1
        rows.append(cells[1:1 + n])
    return rows


def _cell(m: Any, a: int, b: int) -> Any:
    return m[a][b] if isinstance(m, list) else m


def fake_answers(board: Dict[str, Any]) -> Dict[str, Any]:
    """The stand-in NVML's answers for the board (tests/fakenvml/build.py's JSON form)."""
    gpu = board["gpu"]
    n = len(board["gpus"])
    doc: Dict[str, Any] = {"system.driver_version": board.get("driver", "550.54.15"),
                           "system.cuda_driver_version": board.get("cuda_driver", 12040),
                           "system.nvml_version": "12." + board.get("driver", "550.54.15"), "device_count": n}
    for i, g in enumerate(board["gpus"]):
        p = "device.%d." % i
        doc[p + "name"] = g.get("name", gpu["name"])
        doc[p + "uuid"] = "GPU-%08x-0000-4000-8000-%012x" % (0x5e1f0000 + i, i)
        doc[p + "minor_number"] = i
        doc[p + "pci"] = {"bus_id": "0000" + g["bus"].upper(), "device_id": gpu["pci_device_id"]}
        doc[p + "compute_capability"] = gpu["cc"]
        doc[p + "architecture"] = gpu["arch"]
        doc[p + "brand"] = gpu["brand"]
        doc[p + "memory"] = {"total": g.get("memory", gpu["memory"]), "free": g.get("memory", gpu["memory"]),
                             "used": 0}
        doc[p + "bar1"] = {"total": g.get("bar1", gpu["bar1"])}
        gen_cur, gen_max, w_cur, w_max = g.get("pcie", gpu["pcie"])
        doc[p + "pcie_gen_current"], doc[p + "pcie_gen_max"], doc[p + "pcie_gen_gpu_max"] = gen_cur, gen_max, gen_max
        doc[p + "pcie_width_current"], doc[p + "pcie_width_max"] = w_cur, w_max
        doc[p + "utilization"] = {"gpu": g.get("util", 0), "memory": 0}
        doc[p + "clock_event_reasons"] = 1 if not g.get("util") else 0
        doc[p + "ecc_mode"] = gpu.get("ecc", [1, 1])
        doc[p + "temperature"] = 35
        nv = board.get("nvlink")
        if nv and "switches" in nv:
            doc[p + "nvlink"] = {"links": nv["links"], "state": 1, "version": nv["version"]}
            for link in range(nv["links"]):
                doc[p + "nvlink.%d.remote" % link] = "0000" + nv["switches"][link % len(nv["switches"])].upper()
        elif nv and "direct" in nv:
            links = []
            for j, count in enumerate(nv["direct"][i]):
                links += [board["gpus"][j]["bus"]] * int(count)
            total = nv.get("links", len(links))
            doc[p + "nvlink"] = {"links": total, "state": 1, "version": nv["version"]}
            for link in range(total):
                if link < len(links):
                    doc[p + "nvlink.%d.remote" % link] = "0000" + links[link].upper()
                else:
                    doc[p + "nvlink.%d.state" % link] = 0
        for link, state in (g.get("nvlink_states") or {}).items():
            doc[p + "nvlink.%s.state" % link] = state
        for link, version in (g.get("nvlink_versions") or {}).items():
            doc[p + "nvlink.%s.version" % link] = version
        if board.get("fabric"):
            f = dict(board["fabric"], **(g.get("fabric") or {}))
            doc[p + "fabric"] = {"state": f["state"], "status": f.get("status", 0), "clique": f.get("clique", 0),
                                 "cluster": f.get("cluster", "00" * 16), "health": f.get("health", 0)}
    for a in range(n):
        for b in range(a + 1, n):
            key = "pair.%d.%d" % (a, b)
            rel = board["pcie"][a][b]
            p2p = {cap: P2P[_cell(board["p2p"][cap], a, b)] for cap in ("read", "write", "nvlink", "atomics")
                   if cap in board["p2p"]}
            doc[key] = {"ancestor": LEVELS[rel], "p2p": p2p}
    return doc


def _cpuinfo(cpu: Dict[str, Any]) -> str:
    """A /proc/cpuinfo of ``threads`` logical CPUs (the fields envdoctor reads), in the kernel's layout."""
    out = []
    sockets, smt = cpu.get("sockets", 1), cpu.get("smt", 1)
    cores = cpu["threads"] // smt // sockets  # per socket; Linux numbers the first thread of every core first
    for t in range(cpu["threads"]):
        core = t % (cores * sockets)
        out.append("processor\t: %d\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\nmodel name\t: %s\n"
                   "physical id\t: %d\ncore id\t\t: %d\nflags\t\t: fpu sse sse2 avx avx2\n" % (
                       t, cpu["vendor"], cpu["family"], cpu["model"], cpu["model_name"], core // cores, core % cores))
    return "\n".join(out) + "\n"


def _acs_config(control: int) -> bytes:
    """4 KiB of PCI configuration space (what root reads) holding an ACS extended capability at 0x100 with
    ``control`` in its control register (capability + 6)."""
    space = bytearray(4096)
    space[0:4] = (0x10B5 | (0x8747 << 16)).to_bytes(4, "little")  # a Broadcom/PLX switch port
    space[0x100:0x104] = (0x000D | (1 << 16) | (0 << 20)).to_bytes(4, "little")  # ACS, version 1, last capability
    space[0x104:0x106] = (0x005F).to_bytes(2, "little")  # capabilities: SV, TB, RR, CR, UF, DT
    space[0x106:0x108] = control.to_bytes(2, "little")
    return bytes(space)


def snapshot(board: Dict[str, Any], nvml: Dict[str, Any], environ: Optional[Dict[str, str]] = None,
             root: bool = False, files: Optional[Dict[str, str]] = None,
             commands: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The board as a snapshot document: ``nvml`` (the worker's answers), its sysfs tree, /proc files.
    ``root``: the run could read the bridges' extended configuration space (ACS)."""
    import base64

    gpu = board["gpu"]
    f: Dict[str, Any] = {}
    d: Dict[str, set] = {}
    links: Dict[str, str] = {}

    def put(path: str, text: str) -> None:
        f[path] = {"text": text}

    devices = "/sys/bus/pci/devices"
    bridges = board.get("bridges") or {}
    acs = board.get("acs") or {}
    for i, g in enumerate(board["gpus"]):
        bus = g["bus"]
        chain = g["path"] + [bus]
        links[devices + "/" + bus] = "../../../devices/" + "/".join(chain)
        base = devices + "/" + bus
        put(base + "/vendor", "0x10de\n")
        put(base + "/class", "0x030200\n" if not gpu.get("vga") else "0x030000\n")
        put(base + "/device", "0x%s\n" % gpu["pci_device_id"][2:6].lower())
        links[base + "/driver"] = "../../../../bus/pci/drivers/nvidia"
        # The driver's directory lists the devices it is bound to (a directory git keeps, unlike an empty one).
        links["/sys/bus/pci/drivers/nvidia/" + bus] = "../../../../devices/" + "/".join(chain)
        numa = (board.get("numa") or [None] * len(board["gpus"]))[i]
        put(base + "/numa_node", "%d\n" % (numa if numa is not None else -1))
        cpus = (board.get("cpulist") or [None] * len(board["gpus"]))[i]
        if cpus:
            put(base + "/local_cpulist", cpus + "\n")
        gen_cur, gen_max, w_cur, w_max = g.get("pcie", gpu["pcie"])
        for name, value in (("current_link_speed", GEN_SPEED[gen_cur]), ("max_link_speed", GEN_SPEED[gen_max]),
                            ("current_link_width", str(w_cur)), ("max_link_width", str(w_max))):
            put(base + "/" + name, value + "\n")
        bar1 = g.get("bar1", gpu["bar1"])
        if board.get("sysfs_bar1"):  # the BAR1 size as sysfs shows it (NVML's answer is read first)
            put(base + "/resource", "0x00000000fa000000 0x00000000faffffff 0x0000000000040200\n"
                "0x0000020000000000 0x%016x 0x000000000014220c\n" % (0x20000000000 + bar1 - 1)
                + "0x0000000000000000 0x0000000000000000 0x0000000000000000\n")
        if board.get("iommu"):
            group = 20 + i
            links[base + "/iommu_group"] = "../../../../kernel/iommu_groups/%d" % group
            put("/sys/kernel/iommu_groups/%d/type" % group, board["iommu"] + "\n")
        for bdf in g["path"][1:]:
            bb = devices + "/" + bdf
            links.setdefault(bb, "../../../devices/" + "/".join(g["path"][:g["path"].index(bdf) + 1]))
            bcur, bmax, bwc, bwm = bridges.get(bdf, [gen_max, gen_max, w_max, w_max])
            for name, value in (("current_link_speed", GEN_SPEED[bcur]), ("max_link_speed", GEN_SPEED[bmax]),
                                ("current_link_width", str(bwc)), ("max_link_width", str(bwm))):
                put(bb + "/" + name, value + "\n")
            control = int(acs.get(bdf, "0x0000"), 16)
            data = _acs_config(control) if root else _acs_config(control)[:64]
            f[bb + "/config"] = {"base64": base64.b64encode(data).decode("ascii")}
    for path in list(f) + list(links):
        parts = path.strip("/").split("/")
        for k in range(len(parts)):
            d.setdefault("/" + "/".join(parts[:k]), set()).add(parts[k])
    put("/proc/cpuinfo", _cpuinfo(board["cpu"]))
    put("/proc/meminfo", "MemTotal:       %d kB\n" % board["cpu"].get("memory_kb", 2113929216))
    put("/proc/cmdline", board.get("cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet") + "\n")
    put("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX %s Kernel Module for x86_64  %s  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Tue Feb 20 00:00:00 UTC 2024\nGCC version:  gcc version 12.3.0\n" % (
            "Open" if board.get("open_module") else "x86_64", board.get("driver", "550.54.15")))
    put("/sys/module/nvidia/version", board.get("driver", "550.54.15") + "\n")
    if board.get("nvswitch"):
        for k in range(4):
            d.setdefault("/dev", set()).add("nvidia-nvswitch%d" % k)
    d.setdefault("/dev", set()).update(["nvidiactl"] + ["nvidia%d" % i for i in range(len(board["gpus"]))])
    for path, text in (files or {}).items():
        put(path, text)
        parts = path.strip("/").split("/")
        for k in range(len(parts)):
            d.setdefault("/" + "/".join(parts[:k]), set()).add(parts[k])
    cmds = [{"argv": ["systemctl", "is-active", "nvidia-fabricmanager"], "returncode": 0,
             "stdout": board.get("fabric_manager", "active") + "\n"}] if board.get("nvswitch") else []
    doc = {
        "schema_version": 1,
        "files": f,
        "dirs": {p: {"entries": sorted(e)} for p, e in d.items()},
        "links": {p: {"target": t} for p, t in links.items()},
        "commands": [dict({"returncode": 0, "stdout": "", "stderr": "", "timed_out": False}, **c)
                     for c in cmds + list(commands or [])],
        "environ": dict({"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, **(environ or {})),
        "uname": {"sysname": "Linux", "release": "5.15.0-105-generic", "version": "#115-Ubuntu SMP",
                  "machine": board["cpu"].get("machine", "x86_64")},
        "python": {"executable": "/usr/bin/python3", "version": "3.10.12", "implementation": "cpython",
                   "prefix": "/usr", "base_prefix": "/usr", "sys_path": []},
        "nvml": {"data": copy.deepcopy(nvml), "duration": 0.1},
    }
    return doc


def collect_nvml(lib_dir: str, boards: Dict[str, Dict[str, Any]], tmp: str) -> Dict[str, Dict[str, Any]]:
    """The real NVML worker's answers for each board, asked of the stand-in library in one process
    (``tests.fakenvml.batch``)."""
    from tests.fakenvml.build import write_answers

    folder = os.path.join(tmp, "answers")
    os.makedirs(folder, exist_ok=True)
    for name, board in boards.items():
        write_answers(fake_answers(board), os.path.join(folder, name + ".txt"))
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = lib_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    r = subprocess.run([sys.executable, "-m", "tests.fakenvml.batch", folder], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout)

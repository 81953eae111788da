"""Give corpus cases (tests/corpus/<case>/) the GPU topology the topology probe reads, from the thread's evidence.

    python -m tests.topology.make_corpus            # every case of tests/topology/corpus/ (needs a C compiler)
    python -m tests.topology.make_corpus CASE ...   # some
    python scripts/make_fixture.py CASE ...         # then rebuild their snapshot.json

The interconnect cases of the corpus (batch B4) were written before snapshots recorded topology: their machines
keep the thread's raw outputs (``nvidia-smi topo -m``, ``lspci -vvv``, NCCL's log) as commands. Each
``tests/topology/corpus/CASE.json`` restates what the thread shows about the paths between the GPUs, in the
board layout of ``tests/topology/boards`` (the GPUs' bus ids and the PCIe bridges above each, the PCIe
relation NVML's common-ancestor call gives per pair, P2P status, NVLinks, fabric state, NUMA nodes and CPU
lists, ACS control words, IOMMU groups, the CPU), and its ``_source`` says which value the thread shows and
which is a stand-in. From it this script writes into the case's folder:

* ``machine.json`` ``nvml``: the answers envdoctor's real NVML worker gets, through nvidia-ml-py, from the
  stand-in NVML (tests/fakenvml, built as a driver before R535 where the case's driver is one) for
  ``device.N.pci``, ``device.N.nvlink``, ``device.N.fabric``, ``device.N.c2c`` and ``pair.A.B``; the case's
  other NVML answers are kept as they are;
* ``root/sys``: every GPU as a directory under ``/sys/devices/pci<domain>:<bus>/<bridge>/.../<bdf>`` (vendor,
  device, class, ``numa_node``, ``local_cpulist``, link speed and width, the ``driver`` and ``iommu_group``
  links), the bridges above it (link speed and width; 4 KiB of configuration space holding the ACS control
  word where the thread shows it), ``/sys/bus/pci/devices/<bdf>`` and ``/sys/bus/pci/drivers/nvidia/<bdf>``
  links into that tree, ``/sys/kernel/iommu_groups/<n>`` where the IOMMU is on;
* ``root/proc/cpuinfo`` where the case names a CPU (its socket and thread count must hold the CPU lists);
* ``machine.json`` ``sources``: where each of these came from.

``case.json`` is never touched: a case's expectations were committed before envdoctor ran on it.
``tests/test_corpus_topology.py`` checks that the committed answers and trees are what this script writes.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from . import boards

HERE = os.path.dirname(os.path.abspath(__file__))
SPECS = os.path.join(HERE, "corpus")
CORPUS = os.path.join(boards.ROOT, "tests", "corpus")

#: The NVML answers this script owns in a case's machine.json (every other answer is the case writer's).
OWNED = re.compile(r"^(pair\.\d+\.\d+|device\.\d+\.(pci|nvlink|fabric|c2c))$")
#: machine.json ``sources`` keys this script writes.
SRC_TOPOLOGY = "GPU topology (NVML interconnect answers, /sys/devices PCIe tree, /sys/bus/pci links, NUMA, IOMMU)"
SRC_NVML = "nvml (interconnect: device.N.pci, device.N.nvlink, device.N.fabric, device.N.c2c, pair.A.B)"
SRC_CPUINFO = "/proc/cpuinfo"
OLD_CPU_SOURCE = "/proc/cpuinfo, /proc/meminfo"


def names() -> List[str]:
    return sorted(n[:-5] for n in os.listdir(SPECS) if n.endswith(".json"))


def load(name: str) -> Dict[str, Any]:
    with open(os.path.join(SPECS, name + ".json"), encoding="utf-8") as fh:
        return json.load(fh)


def _cell(m: Any, a: int, b: int) -> Any:
    return m[a][b] if isinstance(m, list) else m


def fake_answers(spec: Dict[str, Any], machine: Dict[str, Any]) -> Dict[str, Any]:
    """The stand-in NVML's answers for the case: its driver, GPU names and count as the case already records
    them, and the interconnect of the spec."""
    data = machine["nvml"]["data"]
    n = len(spec["gpus"])
    doc: Dict[str, Any] = {"system.driver_version": data["system.driver_version"]["value"],
                           "system.cuda_driver_version": data["system.cuda_driver_version"]["value"],
                           "device_count": n}
    for i, g in enumerate(spec["gpus"]):
        p = "device.%d." % i
        doc[p + "name"] = data["device.%d.name" % i]["value"]
        doc[p + "minor_number"] = i
        doc[p + "pci"] = {"bus_id": "0000" + g["bus"].upper(),
                          "device_id": g.get("pci_device_id", spec["gpu"]["pci_device_id"])}
        nv = spec.get("nvlink")
        if nv and "switches" in nv:
            doc[p + "nvlink"] = {"links": nv["links"], "state": 1, "version": nv["version"]}
            for link in range(nv["links"]):
                doc[p + "nvlink.%d.remote" % link] = "0000" + nv["switches"][link % len(nv["switches"])].upper()
        elif nv and "remotes" in g:
            # direct NVLinks between GPUs, link by link as `nvidia-smi nvlink --status` shows them: the links
            # named in the GPU's ``remotes`` ({link: peer bus id}) are up, every other link is inactive
            doc[p + "nvlink"] = {"links": nv["links"], "state": 1, "version": nv["version"]}
            for link in range(nv["links"]):
                peer = g["remotes"].get(str(link))
                if peer:
                    doc[p + "nvlink.%d.remote" % link] = "0000" + peer.upper()
                else:
                    doc[p + "nvlink.%d.state" % link] = 0
        if spec.get("fabric"):
            f = spec["fabric"]
            doc[p + "fabric"] = {"state": f["state"], "status": f.get("status", 0), "clique": f.get("clique", 0),
                                 "cluster": f.get("cluster", "00" * 16), "health": f.get("health", 0)}
    for a in range(n):
        for b in range(a + 1, n):
            p2p = {cap: boards.P2P[_cell(spec["p2p"][cap], a, b)] for cap in ("read", "write", "nvlink", "atomics")}
            doc["pair.%d.%d" % (a, b)] = {"ancestor": boards.LEVELS[spec["pcie"][a][b]], "p2p": p2p}
    return doc


def worker_answers(cases: List[str]) -> Dict[str, Dict[str, Any]]:
    """envdoctor's NVML worker's answers for each case, asked of the stand-in library (built as a driver before
    R535 for the cases whose driver is one)."""
    from tests.fakenvml.build import build, write_answers

    tmp = tempfile.mkdtemp(prefix="envdoctor-corpus-topo-")
    out: Dict[str, Dict[str, Any]] = {}
    try:
        for old in (False, True):
            group = [c for c in cases if bool(load(c).get("driver_before_r535")) == old]
            if not group:
                continue
            lib = build(os.path.join(tmp, "lib-old" if old else "lib"), old=old)
            folder = os.path.join(tmp, "answers-old" if old else "answers")
            os.makedirs(folder)
            for case in group:
                write_answers(fake_answers(load(case), _machine(case)), os.path.join(folder, case + ".txt"))
            env = dict(os.environ)
            env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
            r = subprocess.run([sys.executable, "-m", "tests.fakenvml.batch", folder], capture_output=True,
                               text=True, cwd=boards.ROOT, env=env, timeout=300)
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-2000:])
            out.update(json.loads(r.stdout))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {case: {k: v for k, v in answers.items() if OWNED.match(k)} for case, answers in out.items()}


def _machine(case: str) -> Dict[str, Any]:
    with open(os.path.join(CORPUS, case, "machine.json"), encoding="utf-8") as fh:
        return json.load(fh)


# -- the sysfs tree ---------------------------------------------------------------------------------------

def acs_config(vendor_device: str, control: int) -> bytes:
    """4 KiB of a PCI bridge's configuration space (what root reads): the bridge's vendor and device ids, the
    PCI-to-PCI bridge class and header type, and an ACS extended capability (PCIe base spec, "Access Control
    Services", ID 0x000D) at 0x100 with ``control`` in its control register (capability + 6)."""
    vendor, device = (int(x, 16) for x in vendor_device.split(":"))
    space = bytearray(4096)
    space[0:4] = (vendor | (device << 16)).to_bytes(4, "little")
    space[0x0A:0x0C] = (0x0604).to_bytes(2, "little")  # class: bridge, PCI-to-PCI
    space[0x0E] = 0x01  # header type 1 (bridge)
    space[0x100:0x104] = (0x000D | (1 << 16)).to_bytes(4, "little")  # ACS, version 1, last extended capability
    space[0x104:0x106] = (0x005F).to_bytes(2, "little")  # capabilities: SV, TB, RR, CR, UF, DT
    space[0x106:0x108] = control.to_bytes(2, "little")
    return bytes(space)


def _rel(from_dir: str, to: str) -> str:
    """A relative link from directory ``from_dir`` (under /sys) to ``to`` (both absolute)."""
    return posixpath.relpath(to, from_dir)


def tree(spec: Dict[str, Any]) -> Tuple[Dict[str, bytes], Dict[str, str], List[str]]:
    """(files, links, directories) of the case's /sys, absolute paths of the machine."""
    files: Dict[str, bytes] = {}
    links: Dict[str, str] = {}
    dirs: List[str] = ["/sys/bus/pci/devices", "/sys/bus/pci/drivers/nvidia"]
    gpu = spec["gpu"]
    iommu = spec.get("iommu")
    bridges = spec.get("bridges") or {}

    def speed(gen: int) -> bytes:
        return (boards.GEN_SPEED[gen] + "\n").encode()

    def link_files(d: str, link: List[int]) -> None:
        cur, top, wcur, wtop = link
        files[d + "/current_link_speed"], files[d + "/max_link_speed"] = speed(cur), speed(top)
        files[d + "/current_link_width"], files[d + "/max_link_width"] = b"%d\n" % wcur, b"%d\n" % wtop

    for i, g in enumerate(spec["gpus"]):
        real = "/sys/devices/" + "/".join(g["path"] + [g["bus"]])
        dirs.append(real)
        links["/sys/bus/pci/devices/" + g["bus"]] = _rel("/sys/bus/pci/devices", real)
        links["/sys/bus/pci/drivers/nvidia/" + g["bus"]] = _rel("/sys/bus/pci/drivers/nvidia", real)
        links[real + "/driver"] = _rel(real, "/sys/bus/pci/drivers/nvidia")
        files[real + "/vendor"] = b"0x10de\n"
        files[real + "/device"] = ("0x%s\n" % g.get("pci_device_id", gpu["pci_device_id"])[2:6].lower()).encode()
        files[real + "/class"] = (gpu.get("class", "0x030000") + "\n").encode()
        files[real + "/numa_node"] = b"%d\n" % spec["numa"][i]
        if spec.get("cpulist"):
            files[real + "/local_cpulist"] = (spec["cpulist"][i] + "\n").encode()
        link_files(real, gpu["pcie"])
        if iommu:
            group = iommu["first_group"] + i
            links[real + "/iommu_group"] = _rel(real, "/sys/kernel/iommu_groups/%d" % group)
            # (every group lists the address ranges the IOMMU keeps for itself: on Intel VT-d, the MSI window)
            files["/sys/kernel/iommu_groups/%d/reserved_regions" % group] = (iommu["reserved"] + "\n").encode()
            if iommu.get("type"):
                files["/sys/kernel/iommu_groups/%d/type" % group] = (iommu["type"] + "\n").encode()
        for k, bdf in enumerate(g["path"][1:], start=1):
            bdir = "/sys/devices/" + "/".join(g["path"][:k + 1])
            dirs.append(bdir)
            links.setdefault("/sys/bus/pci/devices/" + bdf, _rel("/sys/bus/pci/devices", bdir))
            b = bridges.get(bdf, {})
            link_files(bdir, b.get("link", [gpu["pcie"][1], gpu["pcie"][1], gpu["pcie"][3], gpu["pcie"][3]]))
            if "id" in b:
                vendor, device = b["id"].split(":")
                files[bdir + "/vendor"] = ("0x%s\n" % vendor).encode()
                files[bdir + "/device"] = ("0x%s\n" % device).encode()
                files[bdir + "/class"] = b"0x060400\n"
            if "acs" in b:
                files[bdir + "/config"] = acs_config(b["id"], int(b["acs"], 16))
    return files, links, sorted(set(dirs))


def write_case(case: str, answers: Dict[str, Any]) -> str:
    spec = load(case)
    folder = os.path.join(CORPUS, case)
    root = os.path.join(folder, "root")
    for old in ("sys/bus/pci/devices", "sys/bus/pci/drivers/nvidia", "sys/devices", "sys/kernel/iommu_groups"):
        path = os.path.join(root, old)
        if os.path.lexists(path):
            shutil.rmtree(path)
    files, links, dirs = tree(spec)
    for d in dirs:
        os.makedirs(os.path.join(root, d.lstrip("/")), exist_ok=True)
    for path, data in files.items():
        full = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as fh:
            fh.write(data)
    for path, target in links.items():
        full = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)
    if spec.get("cpu"):
        with open(os.path.join(root, "proc", "cpuinfo"), "w", encoding="utf-8") as fh:
            fh.write(boards._cpuinfo(spec["cpu"]))

    meta = _machine(case)
    data = {k: v for k, v in meta["nvml"]["data"].items() if not OWNED.match(k)}
    data.update(answers)
    meta["nvml"]["data"] = dict(sorted(data.items()))
    sources = meta["sources"]
    spec_path = "tests/topology/corpus/%s.json" % case
    sources[SRC_TOPOLOGY] = "%s: %s" % (spec_path, " | ".join(spec["_source"]))
    sources[SRC_NVML] = ("the answers envdoctor's NVML worker gets, through nvidia-ml-py, from the stand-in library "
                         "(tests/fakenvml%s) set up with the topology of %s (python -m tests.topology.make_corpus)" % (
                             ", built as a driver before R535" if spec.get("driver_before_r535") else "", spec_path))
    if spec.get("cpu"):
        if OLD_CPU_SOURCE in sources:
            del sources[OLD_CPU_SOURCE]
            sources["/proc/meminfo"] = ("captured live from the GPU-less VM the fixtures were built on; it stands in "
                                        "for the machine's memory")
        sources[SRC_CPUINFO] = spec["cpu_source"]
    with open(os.path.join(folder, "machine.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return folder


def main(argv: Optional[List[str]] = None) -> int:
    cases = list(argv if argv is not None else sys.argv[1:]) or names()
    unknown = [c for c in cases if c not in names()]
    if unknown:
        print("no topology spec for %s (known: %s)" % (", ".join(unknown), ", ".join(names())), file=sys.stderr)
        return 2
    answers = worker_answers(cases)
    for case in cases:
        print(write_case(case, answers[case]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

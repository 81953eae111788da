"""Write tests/machines/<name>/ (root/ and machine.json) for the topology boards that are also captured
machines, then build their snapshot.json with ``python scripts/make_fixture.py NAME``.

    python -m tests.topology.make_machines            # rewrite them (needs a C compiler for the stand-in NVML)
    python scripts/make_fixture.py hgx-h100-8gpu-nvswitch dual-socket-8xk80-pcie-switches

A machine is a board (tests/topology/boards/NAME.json: its GPUs, PCIe tree, NVLinks, NUMA nodes, from a
published ``nvidia-smi topo -m``) placed on a base machine of tests/machines (its distribution, libraries,
compilers, Python: the rest of the stack), with the NVML answers the real worker gets from the stand-in
library for that board. ``tests/test_topology.py`` checks that the committed answers are still what the worker
asks and gets.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import shutil
import sys
import tempfile
from typing import Any, Dict

from . import boards

MACHINES_DIR = os.path.join(boards.ROOT, "tests", "machines")

#: machine name -> (board, base machine, description, extra machine.json fields)
MACHINES: Dict[str, Any] = {
    "hgx-h100-8gpu-nvswitch": (
        "dgx-h100", "ubuntu2204-a100-mig",
        "8x H100 SXM on NVSwitches (NV18 between every pair), two NUMA nodes, fabric manager running: the "
        "GPU topology of a DGX/HGX H100 on Ubuntu 22.04",
        {"expect_findings": ["driver.branch_end_of_life"], "findings_reviewed": True}),
    "dual-socket-8xk80-pcie-switches": (
        "pcie-switch-k80", "centos7-a100-cuda115",
        "8 GPUs of 4 Tesla K80 boards behind PCIe switches on two sockets (PIX/PXB within a socket, SYS across), "
        "CentOS 7, driver 470.57.02",
        {"expect_findings": ["driver.branch_end_of_life", "driver.too_old_for_toolkit"], "findings_reviewed": True}),
}

#: Parts of the base machine that describe its own GPUs (replaced by the board's).
_DROP = ("sys/bus/pci", "sys/devices", "proc/driver/nvidia/gpus", "dev/nvidia", "proc/driver/nvidia/version",
         "sys/module/nvidia/version", "proc/cpuinfo", "proc/cmdline")


def _real_dirs(links: Dict[str, str]) -> Dict[str, str]:
    """/sys/bus/pci/devices/<bdf> -> the real /sys/devices/... directory its link names."""
    out = {}
    for path, target in links.items():
        if path.startswith("/sys/bus/pci/devices/") and path.count("/") == 5:
            out[path] = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return out


def write_machine(name: str, nvml: Dict[str, Any]) -> str:
    board_name, base_name, description, extra = MACHINES[name]
    board = boards.load(board_name)
    base = os.path.join(MACHINES_DIR, base_name)
    dest = os.path.join(MACHINES_DIR, name)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    shutil.copytree(os.path.join(base, "root"), os.path.join(dest, "root"), symlinks=True,
                    ignore=lambda d, names: [n for n in names if posixpath.relpath(
                        os.path.join(d, n), os.path.join(base, "root")).startswith(_DROP)])
    root = os.path.join(dest, "root")
    doc = boards.snapshot(board, nvml)
    links = {p: e["target"] for p, e in doc["links"].items()}
    real = _real_dirs(links)
    for path, entry in doc["files"].items():
        where = path
        for link, target in real.items():
            if path.startswith(link + "/"):
                where = target + path[len(link):]
                break
        full = os.path.join(root, where.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        data = base64.b64decode(entry["base64"]) if "base64" in entry else entry["text"].encode("utf-8")
        with open(full, "wb") as fh:
            fh.write(data)
    for path, target in links.items():
        if any(path.startswith(link + "/") for link in real):  # a link inside a device directory
            link_dir = next(real[link] for link in real if path.startswith(link + "/"))
            where = link_dir + path[len(next(link for link in real if path.startswith(link + "/"))):]
        else:
            where = path
        full = os.path.join(root, where.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.lexists(full):
            os.remove(full)
        os.symlink(target, full)
    for d in real.values():
        os.makedirs(os.path.join(root, d.lstrip("/")), exist_ok=True)
    os.makedirs(os.path.join(root, "sys/bus/pci/drivers/nvidia"), exist_ok=True)
    dev = os.path.join(root, "dev")
    os.makedirs(dev, exist_ok=True)
    for node in doc["dirs"].get("/dev", {}).get("entries", []):
        open(os.path.join(dev, node), "w").close()
    for i, g in enumerate(board["gpus"]):
        info = os.path.join(root, "proc/driver/nvidia/gpus", g["bus"], "information")
        os.makedirs(os.path.dirname(info), exist_ok=True)
        with open(info, "w", encoding="utf-8") as fh:
            fh.write("Model: \t\t %s\nIRQ:   \t\t %d\nGPU UUID: \t %s\nVideo BIOS: \t ??.??.??.??.??\n"
                     "Bus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t %s\n"
                     "Device Minor: \t %d\nGPU Excluded:\t No\n" % (
                         board["gpu"]["name"], 100 + i, nvml["device.%d.uuid" % i]["value"], g["bus"], i))
    with open(os.path.join(base, "machine.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    meta["description"] = description
    meta["nvml"] = {"data": nvml, "duration": 0.05}
    meta["commands"] = [c for c in meta.get("commands", []) if c.get("argv", [None])[:1] != ["systemctl"]] + [
        {k: v for k, v in c.items() if k in ("argv", "returncode", "stdout")} for c in doc["commands"]]
    meta["sources"] = dict(meta.get("sources", {}))
    meta["sources"]["GPU topology (sysfs under /sys/bus/pci/devices, /proc/cpuinfo, /proc/cmdline, NVML answers)"] = (
        "board tests/topology/boards/%s.json: %s" % (board_name, " | ".join(board["_source"])))
    meta["sources"]["nvml"] = ("the answers envdoctor's NVML worker gets, through nvidia-ml-py, from the stand-in "
                               "library (tests/fakenvml) set up for board %s" % board_name)
    meta["sources"]["composite"] = ("the board's GPUs, PCIe tree and CPU placed on the %s machine (distribution, "
                                    "libraries, compilers, Python)" % base_name)
    meta["expect"] = {"gpu.count": len(board["gpus"]), "topology.pairs": None, "topology.gpus": None}
    meta.pop("expect_findings", None)
    meta.pop("findings_reviewed", None)
    meta.update(extra)
    with open(os.path.join(dest, "machine.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return dest


def worker_answers(names: Any = None) -> Dict[str, Dict[str, Any]]:
    from tests.fakenvml.build import build

    tmp = tempfile.mkdtemp(prefix="envdoctor-topo-")
    try:
        lib = build(os.path.join(tmp, "lib"))
        wanted = {MACHINES[m][0] for m in (names or MACHINES)}
        return boards.collect_nvml(lib, {b: boards.load(b) for b in wanted}, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    answers = worker_answers()
    for name in MACHINES:
        print(write_machine(name, answers[MACHINES[name][0]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

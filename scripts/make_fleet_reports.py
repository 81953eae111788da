#!/usr/bin/env python3
"""Write N realistic 8-GPU `envdoctor diagnose --format json` reports, for fleet benchmarks and tests.

The base is a real report: tests/live/h100-ubuntu2404-container/live-diagnose.json (a live run on an
H100 machine, 62 kB).  Its one GPU's facts are repeated for GPUs 1-7 with their own index, bus id,
minor number and UUID, so a report holds every
fact a real 8-GPU node's does (about 95 kB, written as diagnose writes it).  Nodes differ the way a
real fleet drifts, deterministically from the node number:

* every 50th node an older driver (550.54.15, the R550 branch's, with CUDA 12.4);
* every 37th node a GPU whose link trained at x8 (gpu.3.pcie_width_current = 8);
* every 23rd node torch 2.4.0 built for CUDA 12.4 instead of 2.11.0/13.0;
* every 101st node ECC off on one GPU.

    python scripts/make_fleet_reports.py 10000 /tmp/fleet     # node00001.json ... node10000.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.path.join(ROOT, "tests", "live", "h100-ubuntu2404-container", "live-diagnose.json")
sys.path.insert(0, ROOT)

# Eight distinct PCI buses for the eight GPUs (the first is the captured board's kind of number; the
# rest are made up in the same shape).
BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")


def eight_gpus(report: Dict[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(report)
    for probe in out["probes"]:
        facts: List[Dict[str, Any]] = probe["facts"]
        gpu0 = [f for f in facts if f["key"].startswith("gpu.0.")]
        if not gpu0:
            continue
        at = max(i for i, f in enumerate(facts) if f["key"].startswith("gpu.0.")) + 1
        extra: List[Dict[str, Any]] = []
        for n in range(1, 8):
            for f in gpu0:
                g = copy.deepcopy(f)
                g["key"] = g["key"].replace("gpu.0.", "gpu.%d." % n, 1)
                g["source"] = g["source"].replace("device.0.", "device.%d." % n)
                field = g["key"].split(".", 2)[2]
                if field in ("index", "minor_number"):
                    g["value"] = n
                elif field == "pci_bus_id":
                    g["value"] = "00000000:%s:00.0" % BUSES[n].upper()
                elif field == "uuid":
                    g["value"] = g["value"][:-2] + "%02x" % n
                extra.append(g)
        facts[at:at] = extra
        for f in facts:
            if f["key"] == "gpu.count":
                f["value"] = 8
            elif f["key"] == "gpu.status":
                f["value"] = "NVML answered for 8 GPU(s)"
            elif f["key"] == "gpu.pci_devices":
                f["value"] = [{"bus_id": "0000:%s:00.0" % b, "device_id": "10de:2330", "driver": "nvidia"}
                              for b in BUSES]
    return out


def _set(report: Dict[str, Any], key: str, value: Any) -> None:
    for probe in report["probes"]:
        for f in probe["facts"]:
            if f["key"] == key:
                f["value"] = value
                return


def node_report(base: Dict[str, Any], i: int) -> Dict[str, Any]:
    if not (i % 50 == 0 or i % 37 == 0 or i % 23 == 0 or i % 101 == 0):
        return base
    r = copy.deepcopy(base)
    if i % 50 == 0:
        _set(r, "driver.version", "550.54.15")
        _set(r, "driver.kernel_module.version", "550.54.15")
        _set(r, "driver.cuda_version", "12.4")
    if i % 37 == 0:
        _set(r, "gpu.3.pcie_width_current", 8)
    if i % 23 == 0:
        for probe in r["probes"]:
            for f in probe["facts"]:
                if f["key"] == "framework.torch":
                    f["value"] = dict(f["value"], version="2.4.0+cu124", public="2.4.0", local="cu124", cuda="12.4")
    if i % 101 == 0:
        _set(r, "gpu.5.ecc_mode_current", False)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("count", type=int)
    ap.add_argument("directory")
    args = ap.parse_args()
    from envdoctor.jsontext import dumps

    with open(BASE, encoding="utf-8") as fh:
        base = eight_gpus(json.load(fh))
    os.makedirs(args.directory, exist_ok=True)
    width = max(5, len(str(args.count)))
    plain = dumps(base)
    for i in range(1, args.count + 1):
        r = node_report(base, i)
        with open(os.path.join(args.directory, "node%0*d.json" % (width, i)), "w", encoding="utf-8") as fh:
            fh.write(plain if r is base else dumps(r))
    print("wrote %d reports of about %d kB to %s" % (args.count, len(plain.encode()) // 1000, args.directory))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Sick variants of real GPU nodes' snapshots: what a pre-flight check exists to stop.

Two bases:

* ``h100-live``: tests/live/h100-ubuntu2404-container/snapshot.json.gz, a live capture of a real
  1-GPU H100 node (driver 580.159.04) inside a container;
* ``8xh100``: tests/machines/centosstream9-8xh100/snapshot.json, an 8-GPU node rebuilt from public
  sources (see that folder's machine.json). Its NVML answers hold only names and compute
  capabilities, so the base given here adds to each GPU what a live run records and the variants
  change: the PCI bus id NVML reports (the i-th of the eight ``nvidia``-bound bus addresses of the
  snapshot, NVML's own numbering order), PCIe Gen5 x16 of x16 (NVIDIA's H100 SXM datasheet), an idle
  GPU, and a 13-digit board serial (the shape of the live capture's).

Every variant is a snapshot whose replay must exit 1 from ``diagnose`` and count as failed in
``fleet``; ``expect`` names the finding code that says why.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from typing import Any, Callable, Dict, Iterator, List, NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
LIVE = os.path.join(HERE, "live", "h100-ubuntu2404-container", "snapshot.json.gz")
EIGHT = os.path.join(HERE, "machines", "centosstream9-8xh100", "snapshot.json")

#: nvmlReturn_t codes (nvml.h) other than SUCCESS.
NVML_ERRORS = {
    "NVML_ERROR_UNINITIALIZED": 1, "NVML_ERROR_INVALID_ARGUMENT": 2, "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4, "NVML_ERROR_ALREADY_INITIALIZED": 5, "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_INSUFFICIENT_SIZE": 7, "NVML_ERROR_INSUFFICIENT_POWER": 8, "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_TIMEOUT": 10, "NVML_ERROR_IRQ_ISSUE": 11, "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13, "NVML_ERROR_CORRUPTED_INFOROM": 14, "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16, "NVML_ERROR_OPERATING_SYSTEM": 17, "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
    "NVML_ERROR_IN_USE": 19, "NVML_ERROR_MEMORY": 20, "NVML_ERROR_NO_DATA": 21,
    "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED": 22, "NVML_ERROR_INSUFFICIENT_RESOURCES": 23,
    "NVML_ERROR_FREQ_NOT_SUPPORTED": 24, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH": 25, "NVML_ERROR_DEPRECATED": 26,
    "NVML_ERROR_NOT_READY": 27, "NVML_ERROR_GPU_NOT_FOUND": 28, "NVML_ERROR_INVALID_STATE": 29,
    "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED": 30, "NVML_ERROR_UNKNOWN": 999,
}


class Variant(NamedTuple):
    name: str
    doc: Dict[str, Any]
    expect: str  # a finding code the variant must give
    exit: int = 1  # diagnose's exit code: 1 (the node fails) for all but a width warning


def load(path: str) -> Dict[str, Any]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        return json.load(fh)


def bound_bus_ids(doc: Dict[str, Any]) -> List[str]:
    out = []
    for path, link in doc.get("links", {}).items():
        if path.startswith("/sys/bus/pci/devices/") and path.endswith("/driver") and str(
                link.get("target", "")).endswith("/nvidia"):
            out.append(path.split("/")[5])
    return sorted(out)


def _err(name: str) -> Dict[str, Any]:
    return {"error": name, "code": NVML_ERRORS[name]}


def bases() -> Dict[str, Dict[str, Any]]:
    live = load(LIVE)
    eight = load(EIGHT)
    data = eight["nvml"]["data"]
    for i, bus in enumerate(bound_bus_ids(eight)):
        domain, rest = bus.split(":", 1)
        data["device.%d.pci" % i] = {"value": {"busId": "0000%s:%s" % (domain, rest.upper()),
                                               "pciDeviceId": 0x233010DE}}
        data["device.%d.serial" % i] = {"value": "17530240299%02d" % i}
        for field, value in (("pcie_width_current", 16), ("pcie_width_max", 16), ("pcie_gen_current", 5),
                             ("pcie_gen_max", 5), ("utilization", {"gpu": 0, "memory": 0}),
                             ("clock_event_reasons", 1)):
            data["device.%d.%s" % (i, field)] = {"value": value}
    return {"h100-live": live, "8xh100": eight}


def _devices(data: Dict[str, Any]) -> int:
    return int(data["device_count"]["value"])


def _drop_gpu(data: Dict[str, Any], i: int) -> None:
    for key in [k for k in data if k.startswith("device.%d." % i)]:
        del data[key]


def _mutations(n: int) -> Iterator[Any]:
    last = n - 1

    def lost_handle(d: Dict[str, Any]) -> None:
        _drop_gpu(d, last)
        d["device.%d.handle" % last] = _err("NVML_ERROR_GPU_IS_LOST")

    def lost_call(d: Dict[str, Any]) -> None:
        d["device.%d.memory" % last] = _err("NVML_ERROR_GPU_IS_LOST")

    def one_missing(d: Dict[str, Any]) -> None:
        _drop_gpu(d, last)
        d["device_count"] = {"value": last}

    def none_counted(d: Dict[str, Any]) -> None:
        for i in range(n):
            _drop_gpu(d, i)
        d["device_count"] = {"value": 0}

    def count_error(d: Dict[str, Any]) -> None:
        for i in range(n):
            _drop_gpu(d, i)
        d["device_count"] = _err("NVML_ERROR_UNKNOWN")

    def width(w: int) -> Callable[[Dict[str, Any]], None]:
        def set_width(d: Dict[str, Any]) -> None:
            d["device.%d.pcie_width_current" % last] = {"value": w}
            d["device.%d.pcie_width_max" % last] = {"value": 16}
            d["device.%d.utilization" % last] = {"value": {"gpu": 0, "memory": 0}}
        return set_width

    def call_error(name: str) -> Callable[[Dict[str, Any]], None]:
        def set_error(d: Dict[str, Any]) -> None:
            d["device.%d.temperature" % last] = _err(name)
        return set_error

    yield "lost-handle", lost_handle, "gpu.lost"
    yield "lost-in-a-call", lost_call, "gpu.lost"
    yield "%d-of-%d" % (last, n), one_missing, "gpu.missing"
    yield "0-of-%d" % n, none_counted, "gpu.missing"
    yield "count-error", count_error, "gpu.count_failed"
    yield "x1-idle", width(1), "gpu.pcie_width_degraded"
    yield "x8-idle", width(8), "gpu.pcie_width_degraded"
    for name in ("NVML_ERROR_RESET_REQUIRED", "NVML_ERROR_CORRUPTED_INFOROM", "NVML_ERROR_INSUFFICIENT_POWER",
                 "NVML_ERROR_IRQ_ISSUE", "NVML_ERROR_TIMEOUT", "NVML_ERROR_UNKNOWN"):
        yield "call-" + name[len("NVML_ERROR_"):].lower(), call_error(name), "gpu.nvml_call_failed"


def init_expect(name: str) -> str:
    return {"NVML_ERROR_LIB_RM_VERSION_MISMATCH": "driver.library_mismatch",
            "NVML_ERROR_NO_PERMISSION": "driver.nvml_no_permission",
            "NVML_ERROR_GPU_IS_LOST": "gpu.lost",
            "NVML_ERROR_DRIVER_NOT_LOADED": "driver.not_loaded",
            "NVML_ERROR_LIBRARY_NOT_FOUND": "driver.userspace_missing"}.get(name, "driver.nvml_failed")


def variants() -> Iterator[Variant]:
    for base_name, base in bases().items():
        n = _devices(base["nvml"]["data"])
        for name, mutate, expect in _mutations(n):
            doc = copy.deepcopy(base)
            mutate(doc["nvml"]["data"])
            # x8 of x16 is a warning (the node works, at half the host bandwidth): exit 0, flagged.
            yield Variant("%s/%s" % (base_name, name), doc, expect, 0 if name == "x8-idle" else 1)
        for code in NVML_ERRORS:
            doc = copy.deepcopy(base)
            doc["nvml"] = {"data": {"init": _err(code)}, "duration": 0.01}
            yield Variant("%s/init-%s" % (base_name, code[len("NVML_ERROR_"):].lower()), doc, init_expect(code))
        for nvml, expect in (({"error": "timed_out", "message": "NVML did not answer within 3.0s (driver hung or "
                                                                 "GPU lost?)", "duration": 3.0}, "driver.nvml_hung"),
                             ({"error": "worker_failed", "message": "the NVML query process crashed (signal 11) "
                                                                   "inside the NVIDIA library", "duration": 0.2},
                              "driver.nvml_failed")):
            doc = copy.deepcopy(base)
            doc["nvml"] = nvml
            yield Variant("%s/nvml-%s" % (base_name, nvml["error"]), doc, expect)

"""Whether CUDA initialises: the child that asks (:mod:`envdoctor.host.cuinit_child`), when it is worth asking, and
how its output, and a snapshot's record of it, become a :class:`~envdoctor.host.base.CudaInitResult`.

The child's output is read defensively: lines that are not JSON objects are skipped, a value of the wrong type is
ignored, and output that says nothing usable is "garbled" (a clear unknown, never an exception).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional

from .base import CudaInitResult

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuinit_child.py")
LIBRARY = "libcuda.so.1"
#: The longest the child may take: cuInit on a machine of eight GPUs without persistence mode takes seconds (the
#: driver brings every GPU up); a driver that takes longer than this hangs every CUDA program as long.
TIMEOUT = 20.0
#: What a snapshot keeps of the child's result (``cuda_init``), key by key.
ENTRY_KEYS = ("code", "name", "driver_version", "device_count", "bus_ids", "error", "message", "call", "duration")


def argv(python: str) -> List[str]:
    """The child's argument list: ``-E``/``-s`` keep the user's Python settings (PYTHONPATH, site-packages) out of
    it; the environment otherwise reaches the driver as it is."""
    return [python, "-E", "-s", CHILD]


#: The NVIDIA kernel module's own file (present while it is loaded) and its GPUs' folders.
PROC_VERSION = "/proc/driver/nvidia/version"
PROC_GPUS = "/proc/driver/nvidia/gpus"
_MINOR = "Device Minor:"


def worth_asking(dev: str = "/dev", proc_version: str = PROC_VERSION, proc_gpus: str = PROC_GPUS,
                 wsl_lib: Optional[str] = None) -> bool:
    """Whether asking CUDA can tell something and changes nothing on the machine.

    libcuda run as root creates the NVIDIA device nodes it misses, and runs nvidia-modprobe to load nvidia_uvm, as
    a CUDA program's first call does: asked where they are missing, the question would mend (for a while) what the
    device-node and driver checks report. So the child starts only where the NVIDIA kernel module is loaded and
    /dev/nvidiactl, /dev/nvidia-uvm and the node of every GPU the module lists already exist; on WSL2, where
    /dev/dxg and the Windows driver's libcuda are all CUDA uses, where those two are. Read from files only (cheap:
    elsewhere nothing starts)."""
    if os.path.exists(os.path.join(dev, "dxg")):
        from ..osinfo import WSL_LIB_DIR  # where WSL mounts the Windows driver's libraries

        return os.path.exists(os.path.join(wsl_lib or WSL_LIB_DIR, LIBRARY))
    if not (os.path.exists(proc_version) and os.path.exists(os.path.join(dev, "nvidiactl"))
            and os.path.exists(os.path.join(dev, "nvidia-uvm"))):
        return False
    try:
        gpus = os.listdir(proc_gpus)
    except OSError:
        return False
    for name in gpus[:256]:
        try:
            with open(os.path.join(proc_gpus, name, "information"), encoding="utf-8", errors="replace") as fh:
                text = fh.read(8192)
        except OSError:
            return False
        minor = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(_MINOR)), "")
        if not minor.isdigit() or not os.path.exists(os.path.join(dev, "nvidia" + minor)):
            return False
    return bool(gpus)


def _events(text: str) -> Iterable[Dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("event"), str):
            yield doc


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any, limit: int = 200) -> str:
    return value[:limit] if isinstance(value, str) else ""


def parse(stdout: str, returncode: Optional[int], timed_out: bool, duration: float, timeout: float,
          stderr: str = "", start_error: str = "") -> CudaInitResult:
    """The child's output, exit status and whether it was stopped at its time limit, as a result."""
    if start_error:
        return CudaInitResult(error="crashed", message="the question could not be asked: %s" % start_error,
                              duration=duration)
    code: Optional[int] = None
    name, call, started, done = "", "", False, False
    version: Optional[int] = None
    count: Optional[int] = None
    buses: List[str] = []
    for ev in _events(stdout):
        kind = ev["event"]
        if kind == "start":
            started = True
        elif kind == "no_library":
            return CudaInitResult(error="no_library", message="%s could not be loaded: %s" % (
                LIBRARY, _text(ev.get("message"), 300) or "no reason given"), duration=duration)
        elif kind == "doing":
            call = _text(ev.get("call"), 60)
        elif kind == "init" and _int(ev.get("code")) is not None:
            code, name = _int(ev.get("code")), _text(ev.get("name"), 80)
        elif kind == "version" and _int(ev.get("value")) is not None:
            version = _int(ev.get("value"))
        elif kind == "count" and _int(ev.get("value")) is not None:
            count = _int(ev.get("value"))
        elif kind == "device" and isinstance(ev.get("bus_id"), str):
            buses.append(_text(ev.get("bus_id"), 40))
        elif kind == "done":
            done = True
    answer = dict(code=code, name=name, driver_version=version, device_count=count, bus_ids=tuple(buses),
                  duration=duration)
    if done and code is not None:
        return CudaInitResult(**answer)  # type: ignore[arg-type]
    if timed_out:
        return CudaInitResult(error="timed_out", call=call or "cuInit", message=(
            "CUDA did not answer within %.0f s (it was in %s)" % (timeout, call or "loading %s" % LIBRARY)),
            **answer)  # type: ignore[arg-type]
    if returncode is not None and returncode < 0:
        import signal

        try:
            sig = signal.Signals(-returncode).name
        except ValueError:
            sig = "signal %d" % -returncode
        return CudaInitResult(error="crashed", call=call, message="the process asking CUDA died of %s%s" % (
            sig, " in %s" % call if call else ""), **answer)  # type: ignore[arg-type]
    if not started or code is None:
        tail = (stderr or "").strip().splitlines()
        return CudaInitResult(error="garbled", call=call, message="the answer could not be read (exit status %s%s)"
                              % (returncode, ": " + tail[-1][:200] if tail else ""), duration=duration)
    return CudaInitResult(error="crashed", call=call, message="the process asking CUDA ended (exit status %s) "
                          "before it had asked everything%s" % (returncode, " (in %s)" % call if call else ""),
                          **answer)  # type: ignore[arg-type]


def to_entry(res: CudaInitResult) -> Dict[str, Any]:
    """A snapshot's ``cuda_init`` section."""
    out: Dict[str, Any] = {}
    for key in ENTRY_KEYS:
        value = getattr(res, key)
        if key == "bus_ids":
            value = list(value)
        elif key == "duration":
            value = round(value, 4)
        if value not in (None, "", []):
            out[key] = value
    return out


def from_entry(entry: Any) -> CudaInitResult:
    """A snapshot's ``cuda_init`` section as a result (absent: not recorded; malformed values: ignored)."""
    if not isinstance(entry, dict):
        return CudaInitResult(error="not_recorded", message="the snapshot holds no CUDA-initialisation result")
    error = _text(entry.get("error"), 40) or None
    code = _int(entry.get("code"))
    if error is None and code is None:
        return CudaInitResult(error="garbled", message="the snapshot's CUDA-initialisation result names no code")
    buses = entry.get("bus_ids")
    duration = entry.get("duration")
    return CudaInitResult(code=code, name=_text(entry.get("name"), 80),
                          driver_version=_int(entry.get("driver_version")),
                          device_count=_int(entry.get("device_count")),
                          bus_ids=tuple(_text(b, 40) for b in buses if isinstance(b, str)) if isinstance(buses, list)
                          else (), error=error, message=_text(entry.get("message"), 400),
                          call=_text(entry.get("call"), 60),
                          duration=float(duration) if isinstance(duration, (int, float)) else 0.0)

"""Build the fake ``libnvidia-ml.so.1`` and write its answer files.

``build(dest)`` compiles ``fake_nvml.c`` with the system C compiler;
``write_answers(doc, path)`` turns a JSON answer document (keys as in
``envdoctor/host/nvml_worker.py``: ``"device.0.memory": {"total": ...}``,
``"init": {"error": 18}``) into the ``key=value`` lines the C code reads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fake_nvml.c")
LIBNAME = "libnvidia-ml.so.1"


def compiler() -> Optional[str]:
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cc and shutil.which(cc):
            return cc
    return None


def build(dest: str, old: bool = False) -> str:
    """Compile into ``dest/libnvidia-ml.so.1``; return ``dest``.  Raises RuntimeError on failure."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) on PATH")
    os.makedirs(dest, exist_ok=True)
    argv = [cc, "-shared", "-fPIC", "-O1", "-o", os.path.join(dest, LIBNAME), SOURCE]
    if old:
        argv.insert(1, "-DFAKE_NVML_OLD")
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)  # noqa: S603
    if res.returncode != 0:
        raise RuntimeError(f"compiling the fake NVML failed: {res.stderr.strip()[-500:]}")
    return dest


def _flatten(prefix: str, value: Any, out: List[str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(prefix + "." + k if prefix else k, v, out)
    elif isinstance(value, (list, tuple)):
        out.append("{}={}".format(prefix, ",".join(str(int(v) if isinstance(v, bool) else v) for v in value)))
    elif isinstance(value, bool):
        out.append(f"{prefix}={int(value)}")
    else:
        text = str(value)
        if "\n" in text:
            raise ValueError(f"answer {prefix} has a newline")
        out.append(f"{prefix}={text}")


def answers_text(doc: Dict[str, Any]) -> str:
    lines: List[str] = []
    for key, value in doc.items():
        if key.startswith("_"):  # "_source" and other comments
            continue
        _flatten(key, value, lines)
    return "\n".join(lines) + "\n"


def write_answers(doc: Dict[str, Any], path: str) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(answers_text(doc))
    return path


def load_answers(name: str) -> Dict[str, Any]:
    with open(os.path.join(HERE, name), encoding="utf-8") as fh:
        return json.load(fh)


def fake_env(lib_dir: str, answers_path: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment that makes pynvml load the fake library with these answers."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = lib_dir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["FAKE_NVML_ANSWERS"] = answers_path
    return env


def h100_board(count: int) -> Dict[str, Any]:
    """A board of ``count`` H100s: ``h100.json``'s GPU repeated, each with its own index, minor number, bus id
    and UUID (the stand-in machine of the benchmarks)."""
    one = load_answers("h100.json")
    out = {k: v for k, v in one.items() if not k.startswith("device.")}
    out["device_count"] = count
    for i in range(count):
        for k, v in one.items():
            if k.startswith("device.0."):
                key = "device.%d.%s" % (i, k[len("device.0."):])
                if key.endswith(".uuid"):
                    v = str(v)[:-4] + "%04x" % i
                elif key.endswith(".minor_number"):
                    v = i
                elif key.endswith(".pci") and isinstance(v, dict):
                    v = dict(v, bus_id="%08X:%02X:00.0" % (i // 8, 0x18 + 0x10 * (i % 8)))
                out[key] = v
    return out

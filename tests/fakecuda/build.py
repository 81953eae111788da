"""Build the stand-in ``libcuda.so.1`` (``fake_cuda.c``) and write its configuration files.

No GPU runs where the suite runs, so ``envdoctor bench``'s child process loads this library instead of
NVIDIA's driver: ``build(dest)`` compiles it with the system C compiler (as ``tests/fakenvml/build.py`` does
the stand-in NVML), ``write_config(doc, path)`` turns a JSON document (``{"rate": {"h2d": {"pinned": 25.9}}}``,
``{"cuMemcpyPeer": {"hang_seconds": 30}}``) into the ``key=value`` lines the C code reads.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any, Dict, Optional

from tests.fakenvml.build import answers_text, compiler

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "fake_cuda.c")
LIBNAME = "libcuda.so.1"


def build(dest: str) -> str:
    """Compile into ``dest/libcuda.so.1``; return ``dest``.  Raises RuntimeError on failure."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc or clang) on PATH")
    os.makedirs(dest, exist_ok=True)
    argv = [cc, "-shared", "-fPIC", "-O1", "-o", os.path.join(dest, LIBNAME), SOURCE]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)  # noqa: S603
    if res.returncode != 0:
        raise RuntimeError(f"compiling the stand-in libcuda failed: {res.stderr.strip()[-500:]}")
    return dest


def write_config(doc: Dict[str, Any], path: str) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(answers_text(doc))
    return path


def fake_env(lib_dirs: str, config_path: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment in which ``libcuda.so.1`` (and whatever else ``lib_dirs`` holds) is the stand-in."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = lib_dirs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["FAKE_CUDA_CONFIG"] = config_path
    return env

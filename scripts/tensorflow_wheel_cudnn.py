#!/usr/bin/env python3
"""Read, from TensorFlow GPU wheels themselves, the cuDNN each was compiled with.

TensorFlow's GPU code (stream_executor's cuda_dnn.cc, ``CudnnSupport::Init``) builds the source version from the
cuDNN headers it was compiled against (``CUDNN_MAJOR``, ``CUDNN_MINOR``, ``CUDNN_PATCHLEVEL``), compares it with
the loaded library's, and refuses an incompatible one ("Loaded runtime CuDNN library: X but source was compiled
with: Y"). The three numbers are immediates in that function's machine code; ``build_info`` says only the major.
TensorFlow 0.x and 1.0-1.7 print the single number ``CUDNN_VERSION`` (major * 1000 + minor * 100 + patch, "Loaded
runtime CuDNN library: 5005 (compatibility version 5000) but source was compiled with 5105 (compatibility version
5100)"): there the version is the first 32-bit immediate of four or five digits loaded for that message after the
call that reads the loaded library's version. This script finds the library of the wheel that carries the message,
disassembles ``CudnnSupport::Init`` with objdump and prints the version with the wheel's name and sha256, for
``envdoctor/matrix/data/framework_builds.json`` (``cudnn_built`` rows of framework ``tensorflow``)::

    pip download tensorflow-gpu==1.15.0 --no-deps --only-binary=:all: --python-version 37 \
        --platform manylinux2010_x86_64 -d /tmp/tf
    python scripts/tensorflow_wheel_cudnn.py /tmp/tf/*.whl

Needs binutils (nm, objdump). Nothing is written into the repository.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

MESSAGE = b"but source was compiled with"  # ": " from TensorFlow 1.8, " " before
INIT = re.compile(r"^([0-9a-f]+) ([0-9a-f]+) [Tt] (_ZN\w*CudnnSupport4InitEv)$")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(argv: List[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=900,
                          env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}).stdout


def _members_with_message(wheel: zipfile.ZipFile) -> List[str]:
    """The shared objects of the wheel whose data holds the version-check message."""
    out = []
    for info in wheel.infolist():
        if not re.search(r"\.so(\.\d+)*$", info.filename) or info.file_size < 1 << 20:
            continue
        with wheel.open(info) as f:
            tail = b""
            for block in iter(lambda: f.read(1 << 24), b""):
                if MESSAGE in tail + block:
                    out.append(info.filename)
                    break
                tail = block[-len(MESSAGE):]
    return out


def _source_version(lib: Path) -> Optional[Tuple[int, int, int, str]]:
    """(major, minor, patch, instructions) from the CudnnSupport::Init of ``lib``, or None."""
    for line in _run(["nm", "-S", str(lib)]).splitlines():
        m = INIT.match(line.strip())
        if m:
            start, size = int(m.group(1), 16), int(m.group(2), 16)
            break
    else:
        return None
    text = _run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % start,
                 "--stop-address=%#x" % (start + size), str(lib)])
    lines = [ln for ln in text.splitlines() if "\t" in ln]
    call = next((i for i, ln in enumerate(lines) if "GetLoadedCudnnVersion" in ln
                 or "cudnnGetProperty" in ln or "cudnnGetVersion" in ln), None)
    if call is None:
        return None
    window = lines[max(0, call - 14):call]
    single = _single_number(lines[call + 1:call + 80])
    if single is not None:
        return single
    # the source version is stored as immediates: a 64-bit store (movabs/movq) holds major and minor (low and high
    # halves), a 32-bit one (movl) one number; in order they give major, minor, patch
    numbers: List[int] = []
    for ln in window:
        m = re.search(r"\t(movabs|movq|movl)\s+\$0x([0-9a-f]+),", ln)
        if not m:
            continue
        value = int(m.group(2), 16)
        numbers += [value & 0xFFFFFFFF, value >> 32] if m.group(1) in ("movabs", "movq") else [value]
    if len(numbers) < 3 or any(n > 99 for n in numbers[-3:]):
        return None
    major, minor, patch = numbers[-3:]
    return major, minor, patch, "\n".join(window)


def _single_number(after: List[str]) -> Optional[Tuple[int, int, int, str]]:
    """TensorFlow before 1.8: ``CUDNN_VERSION`` as one 32-bit immediate (``mov $0x13f1,%edi``: 5105) passed to the
    message's number formatting after the loaded version is read; the compatibility version (5100) comes after it."""
    for i, ln in enumerate(after):
        m = re.search(r"\tmov\s+\$0x([0-9a-f]+),%edi", ln)
        if m and 1000 <= int(m.group(1), 16) < 100000:
            value = int(m.group(1), 16)
            return value // 1000, value % 1000 // 100, value % 100, "\n".join(after[max(0, i - 3):i + 1])
    return None


def main(argv: List[str]) -> int:
    results: List[Dict[str, object]] = []
    for name in argv:
        wheel_path = Path(name)
        record: Dict[str, object] = {"wheel": wheel_path.name, "sha256": _sha256(wheel_path)}
        work = Path(tempfile.mkdtemp(prefix="tfcudnn-"))
        try:
            with zipfile.ZipFile(wheel_path) as wheel:
                info = [m for m in wheel.namelist() if m.endswith("platform/build_info.py")]
                if info:
                    record["build_info"] = re.findall(r"cudnn_version\w*'?\s*[:=,]\s*'([^']*)'",
                                                      wheel.read(info[0]).decode("utf-8", "replace"))
                for member in _members_with_message(wheel):
                    lib = Path(wheel.extract(member, work))
                    found = _source_version(lib)
                    lib.unlink()
                    if found:
                        record["library"] = member
                        record["cudnn_built"] = "%d.%d.%d" % found[:3]
                        record["instructions"] = found[3]
                        break
        finally:
            shutil.rmtree(work, ignore_errors=True)
        results.append(record)
        print(json.dumps(record, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The bytes envdoctor's readers read from a large real library, kept without the rest (its code and payloads).

``python tests/data/fatbin/headers.py LIB OUT.gz`` records every byte range that ``envdoctor.host.fatbin.read_archs``
and ``envdoctor.host.elf.read_dynamic`` read from LIB (ELF header, section and program headers, section names,
dynamic section and strings, fat-binary container and entry headers) and writes them to OUT.gz: the file's size,
then (offset, length, bytes) per range.  :func:`rebuild` writes a sparse file of the same size holding those bytes
where they were, zeros elsewhere: the readers give on it what they give on the real file.
"""

from __future__ import annotations

import gzip
import io
import struct
import sys
from typing import List, Tuple


def record(path: str) -> Tuple[int, List[Tuple[int, bytes]]]:
    from envdoctor.host.elf import read_dynamic
    from envdoctor.host.fatbin import read_archs

    spans: List[Tuple[int, int]] = []

    class Recording(io.FileIO):
        def read(self, size: int = -1) -> bytes:  # type: ignore[override]
            at = self.tell()
            data = super().read(size)
            spans.append((at, len(data)))
            return data

    for reader in (read_archs, read_dynamic):
        fh = Recording(path, "rb")
        try:
            reader(fh)  # type: ignore[operator]
        finally:
            fh.close()
    merged: List[List[int]] = []
    for at, n in sorted(spans):
        if merged and at <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], at + n)
        elif n:
            merged.append([at, at + n])
    with open(path, "rb") as src:
        size = src.seek(0, 2)
        chunks = []
        for a, b in merged:
            src.seek(a)
            chunks.append((a, src.read(b - a)))
    return size, chunks


def write(out: str, size: int, chunks: List[Tuple[int, bytes]]) -> None:
    with gzip.GzipFile(out, "wb", mtime=0) as fh:
        fh.write(struct.pack("<QI", size, len(chunks)))
        for at, data in chunks:
            fh.write(struct.pack("<QI", at, len(data)) + data)


def rebuild(recorded: str, out: str) -> None:
    """A sparse copy of the recorded library at ``out``."""
    with gzip.open(recorded, "rb") as fh:
        size, count = struct.unpack("<QI", fh.read(12))
        with open(out, "wb") as dst:
            dst.truncate(size)
            for _ in range(count):
                at, n = struct.unpack("<QI", fh.read(12))
                dst.seek(at)
                dst.write(fh.read(n))


if __name__ == "__main__":
    write(sys.argv[2], *record(sys.argv[1]))

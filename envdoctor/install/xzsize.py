"""How many bytes a ``.tar.xz`` unpacks to, read from the archive's own index without decompressing it.

NVIDIA's redist manifests give each archive's compressed size and checksums, nothing about its unpacked
size, so before downloading that size can only be estimated.  Once an archive is on disk, its exact
uncompressed size is in the xz container: every stream ends with an index listing each block's
uncompressed size, and a 12-byte footer that says where the index starts (the ``.xz`` file format,
https://tukaani.org/xz/xz-file-format.txt, sections 2.1.2 "Stream Footer" and 4 "Index").  This reads the
footers and indexes from the end of the file backwards, stream by stream (concatenated streams and stream
padding allowed), checking each index's CRC32, and sums the sizes: what ``xz --list`` reports as
"Uncompressed".  The tar stream is that long; the files in it need about as much (their headers are
small).  A file that is not a well-formed ``.xz`` gives None: the caller falls back to its estimate.
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO, List, Optional, Tuple

HEADER_MAGIC = b"\xfd7zXZ\x00"
FOOTER_MAGIC = b"YZ"
#: An index larger than this is not one a real archive has (each block's record is a few bytes).
MAX_INDEX = 64 * 1024 * 1024


class _Malformed(Exception):
    pass


def _multibyte(data: bytes, pos: int) -> Tuple[int, int]:
    """The xz variable-length integer at ``pos`` (at most 9 bytes) and the position after it."""
    value = 0
    for i in range(9):
        if pos + i >= len(data):
            raise _Malformed("truncated integer")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos + i + 1
    raise _Malformed("integer too long")


def _read(f: BinaryIO, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise _Malformed("truncated")
    return data


def _index(data: bytes) -> Tuple[int, int]:
    """(uncompressed bytes, bytes the blocks occupy) of one stream's index."""
    if not data or data[0] != 0 or zlib.crc32(data[:-4]) & 0xFFFFFFFF != struct.unpack("<I", data[-4:])[0]:
        raise _Malformed("bad index")
    count, pos = _multibyte(data, 1)
    records: List[Tuple[int, int]] = []
    for _ in range(count):
        unpadded, pos = _multibyte(data, pos)
        size, pos = _multibyte(data, pos)
        records.append((unpadded, size))
    return sum(s for _u, s in records), sum((u + 3) // 4 * 4 for u, _s in records)


def _streams(f: BinaryIO, end: int) -> int:
    total = 0
    while end > 0:
        while end >= 4 and _read(f, end - 4, 4) == b"\0\0\0\0":  # stream padding
            end -= 4
        if end < 24:
            raise _Malformed("too short")
        footer = _read(f, end - 12, 12)
        if footer[10:] != FOOTER_MAGIC or zlib.crc32(footer[4:10]) & 0xFFFFFFFF != struct.unpack("<I", footer[:4])[0]:
            raise _Malformed("bad footer")
        backward = (struct.unpack("<I", footer[4:8])[0] + 1) * 4
        start = end - 12 - backward
        if backward > MAX_INDEX or start < 12:
            raise _Malformed("bad index size")
        size, blocks = _index(_read(f, start, backward))
        stream_start = start - blocks - 12
        if stream_start < 0 or _read(f, stream_start, 6) != HEADER_MAGIC:
            raise _Malformed("bad stream header")
        total += size
        end = stream_start
    return total


def unpacked_size(path: str) -> Optional[int]:
    """Bytes the ``.xz`` file at ``path`` decompresses to, from its indexes; None when it cannot say."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            return _streams(f, f.tell())
    except (OSError, _Malformed, struct.error):
        return None

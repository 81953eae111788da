"""Read which GPU architectures a shared object carries code for, from its CUDA fat binary.

A library built with nvcc keeps its device code in the ELF section ``.nv_fatbin``: a run of
fat-binary containers, each a 16-byte header (magic ``0xBA55ED50``, version 1, header size,
size of what follows) and then entries back to back, each an entry header (kind: 1 = PTX,
2 = ELF/SASS cubin; its own header size; the size of its payload; the ``sm`` number at
offset 28; flags at offset 40) followed by its payload.  A PTX entry's header holds the PTX ISA
version of its text at offset 24 (minor, then major, two 16-bit words: 0, 9 for the ``.version 9.0``
nvcc 13.0 writes; 1, 6 in CatBoost 0.10.3's CUDA 9.1 build); the highest is returned: a driver
JIT-compiles no PTX newer than its own CUDA's.  Flag 0x100000 marks arch-specific
code (``sm_90a``: runs on that exact capability only).  Family code (``sm_100f``) is reported
as plain ``sm_100``, as ``cuobjdump`` lists it: it follows the plain rule (its own major, an
equal or higher minor).  These offsets were checked against fat binaries built here with
nvcc 13.0 for known targets (tests/data/fatbin) and against ``cuobjdump --list-elf
--list-ptx`` of the real libraries of torch 2.11.0+cu130, the JAX CUDA 13 plugin, CuPy,
torchvision and torchaudio on an H100 machine (tests/data/fatbin/h100-libraries.json).

A fat binary file of its own (what ``nvcc -fatbin`` writes, loaded by a program with ``cuModuleLoadFatBinary``:
Guppy's ``data/*.fatbin``) holds the same containers from its first byte, and is read the same way.

Only the section headers and each entry's header are read, never a payload: the section of
``libtorch_cuda.so`` is ~300 MB.  Nothing is imported or executed.  Input is hostile: every
size is bounded and a garbled container ends the walk with what was read so far, marked
incomplete.
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Dict, List, Optional, Set, Tuple

from .elf import ElfError, _read_at

FATBIN_MAGIC = 0xBA55ED50
SECTION = b".nv_fatbin"
KIND_PTX, KIND_ELF = 1, 2
FLAG_ARCH_SPECIFIC = 0x100000
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, payload size
_MAX_SECTIONS = 1 << 16
_MAX_ENTRIES = 1 << 20
_SCAN_CHUNK = 1 << 20
_MAX_SCAN = 64 << 20  # bytes searched for the next container after a gap


def _sections(fh: BinaryIO) -> List[Tuple[bytes, int, int]]:
    """(name, file offset, size) of every section."""
    fh.seek(0)
    head = fh.read(64)  # the ELF header (52 bytes for 32-bit files, 64 for 64-bit ones), in one read
    if len(head) < 16 or head[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    cls, end = {1: 32, 2: 64}.get(head[4]), {1: "<", 2: ">"}.get(head[5])
    if cls is None or end is None:
        raise ElfError("unknown ELF class or byte order")
    if len(head) < (64 if cls == 64 else 52):
        raise ElfError("file truncated (ELF header of %d bytes)" % len(head))
    if cls == 64:
        shoff, = struct.unpack_from(end + "Q", head, 40)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 58)
        sh_fmt = end + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(end + "I", head, 32)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", head, 46)
        sh_fmt = end + "IIIIIIIIII"
    if shoff == 0 or shnum == 0:
        return []
    if shnum > _MAX_SECTIONS or not struct.calcsize(sh_fmt) <= shentsize <= 256 or shstrndx >= shnum:
        raise ElfError("implausible section header table")
    table = _read_at(fh, shoff, shnum * shentsize)  # the whole table in one read (at most 16 MiB)
    raw = [struct.unpack_from(sh_fmt, table, i * shentsize) for i in range(shnum)]
    # (name index, type, flags, addr, offset, size, ...)
    str_off, str_size = raw[shstrndx][4], raw[shstrndx][5]
    if str_size > 16 << 20:
        raise ElfError("implausible section name table")
    names = _read_at(fh, str_off, str_size)
    out = []
    for h in raw:
        n = h[0]
        name = names[n:names.index(b"\0", n)] if n < len(names) and b"\0" in names[n:] else b""
        out.append((name, h[4], h[5]))
    return out


def _arch(sm: int, flags: int, kind: int) -> str:
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else ""
    return ("compute_%d%s" if kind == KIND_PTX else "sm_%d%s") % (sm, suffix)


def _find_magic(fh: BinaryIO, start: int, end: int) -> int:
    """The next container header at or after ``start`` (-1 when none within the scan limit).  Containers
    usually follow each other with a few bytes of padding: the search starts small and grows."""
    magic = struct.pack("<I", FATBIN_MAGIC)
    pos, step = start, 256
    limit = min(end, start + _MAX_SCAN)
    while pos < limit:
        fh.seek(pos)
        chunk = fh.read(min(step + 3, limit - pos))
        if not chunk:
            return -1
        i = chunk.find(magic)
        if i >= 0:
            return pos + i
        pos += step
        step = min(step * 4, _SCAN_CHUNK)
    return -1


def read_archs(fh: BinaryIO) -> Dict[str, object]:
    """``{"sass": ["sm_80", "sm_90a", ...], "ptx": ["compute_90", ...], "section": bool, "complete": bool,
    "ptx_isa": "9.0" or None}``.

    ``section`` is False when the file has no ``.nv_fatbin`` (no device code of its own); ``complete``
    False when a garbled or truncated container stopped the walk early (what was read is still returned).
    """
    fh.seek(0)
    if fh.read(4) == struct.pack("<I", FATBIN_MAGIC):
        # a fat binary file of its own (``nvcc -fatbin`` output a program loads with cuModuleLoadFatBinary):
        # the same containers as a .nv_fatbin section, from the first byte to the end
        secs = [(0, fh.seek(0, 2))]
    else:
        secs = [(off, size) for name, off, size in _sections(fh) if name == SECTION]
    sass: Set[str] = set()
    ptx: Set[str] = set()
    complete = True
    entries = 0
    isa: Optional[Tuple[int, int]] = None
    for off, size in secs:
        end = off + size
        pos = _find_magic(fh, off, end)
        while 0 <= pos and pos + 16 <= end:
            magic, version, hsize, fsize = struct.unpack("<IHHQ", _read_at(fh, pos, 16))
            if magic != FATBIN_MAGIC or hsize < 16 or pos + hsize + fsize > end:
                complete = False
                break
            q, cend = pos + hsize, pos + hsize + fsize
            while q + 64 <= cend:
                head = _read_at(fh, q, 64)
                kind, _ver, ehsize, psize = _ENTRY.unpack_from(head, 0)
                sm, = struct.unpack_from("<I", head, 28)
                flags, = struct.unpack_from("<Q", head, 40)
                entries += 1
                if ehsize < 64 or q + ehsize + psize > cend or entries > _MAX_ENTRIES or not 10 <= sm < 1000:
                    complete = False
                    break
                if kind == KIND_PTX:
                    ptx.add(_arch(sm, flags, kind))
                    minor, major = struct.unpack_from("<HH", head, 24)
                    if 1 <= major < 100 and minor < 100 and (isa is None or (major, minor) > isa):
                        isa = (major, minor)
                elif kind == KIND_ELF:
                    sass.add(_arch(sm, flags, kind))
                q += ehsize + psize
            if not complete:
                break
            pos = _find_magic(fh, cend, end)  # the next container, after any padding
        if not complete:
            break
    return {"sass": sorted(sass, key=arch_sort_key), "ptx": sorted(ptx, key=arch_sort_key),
            "section": bool(secs), "complete": complete, "ptx_isa": "%d.%d" % isa if isa else None}


def arch_sort_key(arch: str) -> Tuple[int, str]:
    digits = "".join(c for c in arch.split("_", 1)[-1] if c.isdigit())
    return (int(digits) if digits else 0, arch)

"""Read an ELF shared object's dynamic section: SONAME, NEEDED, RPATH, RUNPATH.

Enough to resolve sonames the way the dynamic loader does (DT_RPATH, then
LD_LIBRARY_PATH, then DT_RUNPATH, then the cache and default dirs) without
running ``ldd`` (which can execute code) or ``readelf`` (often absent).
Reads only the headers and the dynamic string table, never the whole file
(``libtorch_cuda.so`` is over a gigabyte).
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Dict, List, Optional, Tuple

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
_MAX_PHNUM = 4096
_MAX_DYN = 1 << 20
_MAX_STRSZ = 16 << 20


class ElfError(ValueError):
    pass


def _read_at(fh: BinaryIO, offset: int, size: int) -> bytes:
    fh.seek(offset)
    data = fh.read(size)
    if len(data) != size:
        raise ElfError("file truncated (wanted %d bytes at offset %d)" % (size, offset))
    return data


def read_dynamic(fh: BinaryIO) -> Dict[str, object]:
    """``{"soname": str|None, "needed": [...], "rpath": [...], "runpath": [...], "class": 32|64, "machine": n}``."""
    ident = fh.read(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    cls = {1: 32, 2: 64}.get(ident[4])
    end = {1: "<", 2: ">"}.get(ident[5])
    if cls is None or end is None:
        raise ElfError("unknown ELF class or byte order")
    if cls == 64:
        hdr = _read_at(fh, 16, 48)
        _etype, machine, _v, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum = struct.unpack(
            end + "HHIQQQIHHH", hdr[:42])
        ph_fmt, dyn_fmt = end + "IIQQQQQQ", end + "qQ"
    else:
        hdr = _read_at(fh, 16, 36)
        _etype, machine, _v, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum = struct.unpack(
            end + "HHIIIIIHHH", hdr[:32])
        ph_fmt, dyn_fmt = end + "IIIIIIII", end + "iI"
    if phnum > _MAX_PHNUM or phentsize < struct.calcsize(ph_fmt):
        raise ElfError("implausible program header table")
    loads: List[Tuple[int, int, int]] = []  # (vaddr, filesz, offset)
    dyn: Optional[Tuple[int, int]] = None
    for i in range(phnum):
        raw = _read_at(fh, phoff + i * phentsize, struct.calcsize(ph_fmt))
        f = struct.unpack(ph_fmt, raw)
        if cls == 64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = f[0], f[1], f[2], f[3], f[4], f[5]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = f[0], f[1], f[2], f[3], f[4]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_filesz, p_offset))
        elif p_type == PT_DYNAMIC:
            dyn = (p_offset, min(p_filesz, _MAX_DYN))
    needed: List[str] = []
    out: Dict[str, object] = {"class": cls, "machine": machine, "soname": None, "needed": needed, "rpath": [],
                              "runpath": []}
    if dyn is None:
        return out  # a static executable or an object without dynamic section
    entsize = struct.calcsize(dyn_fmt)
    raw = _read_at(fh, dyn[0], dyn[1] - dyn[1] % entsize)
    tags: List[Tuple[int, int]] = []
    for i in range(0, len(raw), entsize):
        tag, val = struct.unpack(dyn_fmt, raw[i:i + entsize])
        if tag == DT_NULL:
            break
        tags.append((tag, val))
    strtab = next((v for t, v in tags if t == DT_STRTAB), None)
    strsz = next((v for t, v in tags if t == DT_STRSZ), None)
    if strtab is None or strsz is None or strsz > _MAX_STRSZ:
        raise ElfError("dynamic section has no usable string table")
    str_off = next((off + (strtab - vaddr) for vaddr, size, off in loads if vaddr <= strtab < vaddr + size), None)
    if str_off is None:
        raise ElfError("string table is outside every loadable segment")
    strings = _read_at(fh, str_off, strsz)

    def s(index: int) -> str:
        if index >= len(strings):
            raise ElfError("string index out of range")
        return strings[index:strings.index(b"\0", index) if b"\0" in strings[index:] else len(strings)].decode(
            "utf-8", "replace")

    for tag, val in tags:
        if tag == DT_NEEDED:
            needed.append(s(val))
        elif tag == DT_SONAME:
            out["soname"] = s(val)
        elif tag == DT_RPATH:
            out["rpath"] = [p for p in s(val).split(":") if p]
        elif tag == DT_RUNPATH:
            out["runpath"] = [p for p in s(val).split(":") if p]
    return out

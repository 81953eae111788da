"""Read an ELF shared object's dynamic section: SONAME, NEEDED, RPATH, RUNPATH, and its version needs.

Enough to resolve sonames the way the dynamic loader does (DT_RPATH, then
LD_LIBRARY_PATH, then DT_RUNPATH, then the cache and default dirs) without
running ``ldd`` (which can execute code) or ``readelf`` (often absent).

The version needs (``.gnu.version_r``, found through ``DT_VERNEED``/``DT_VERNEEDNUM``) are the symbol
versions the object requires of each library: ``libc.so.6: GLIBC_2.2.5 ... GLIBC_2.27``, ``libstdc++.so.6:
GLIBCXX_3.4.21, CXXABI_1.3.9``. ``ld.so`` refuses to load an object one of whose needs the library lacks
("version `GLIBC_2.27' not found"), which is how a wheel built for a newer glibc fails on an older system.

Reads only the headers, the dynamic section, the version needs and the few strings they name (never the
whole string table, nor the whole file: ``libtorch_cuda.so`` is over a gigabyte). Every count and size is
bounded; a malformed object raises :class:`ElfError`, and malformed version needs alone leave the rest of
the answer standing (``verneed`` None, ``verneed_error`` saying why).
"""

from __future__ import annotations

import struct
from typing import BinaryIO, Dict, List, Optional, Tuple

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
DT_VERNEED, DT_VERNEEDNUM = 0x6FFFFFFE, 0x6FFFFFFF
_MAX_PHNUM = 4096
_MAX_DYN = 1 << 20
_MAX_STRSZ = 256 << 20  # only the strings named are read, so a large table costs nothing more
#: One string (a soname, a version name, an RPATH): the longest real ones are RPATHs of a few KiB.
_MAX_STRING = 64 << 10
_STRING_WINDOW = 4096
#: The version needs: at most this many bytes, libraries and version names (real objects: < 2 KiB,
#: < 20 libraries, < 100 names; libtorch_cuda.so 2.11 needs 62 versions of 13 libraries).
_MAX_VERNEED_BYTES = 64 << 10
_MAX_VERNEED_FILES = 256
_MAX_VERNEED_NAMES = 2048


class ElfError(ValueError):
    pass


def _seek(fh: BinaryIO, offset: int) -> None:
    """Seek to ``offset``, a number read from the file: one no file can reach is a malformed object (seeking
    there would raise OverflowError or EINVAL)."""
    if not 0 <= offset < 1 << 48:
        raise ElfError("an offset points outside the file (%#x)" % offset)
    try:
        fh.seek(offset)
    except (OSError, OverflowError) as exc:
        raise ElfError("an offset points outside the file (%#x: %s)" % (offset, exc)) from None


def _read_at(fh: BinaryIO, offset: int, size: int) -> bytes:
    _seek(fh, offset)
    data = fh.read(size)
    if len(data) != size:
        raise ElfError("file truncated (wanted %d bytes at offset %d)" % (size, offset))
    return data


def read_dynamic(fh: BinaryIO) -> Dict[str, object]:
    """``{"soname": str|None, "needed": [...], "rpath": [...], "runpath": [...], "class": 32|64, "machine": n,
    "verneed": {library: [version names]} | None}``, with ``"verneed_error"`` when the version needs (alone)
    could not be read."""
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
        out["verneed"] = {}
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
    s = _Strings(fh, str_off, strsz)

    for tag, val in tags:
        if tag == DT_NEEDED:
            needed.append(s(val))
        elif tag == DT_SONAME:
            out["soname"] = s(val)
        elif tag == DT_RPATH:
            out["rpath"] = [p for p in s(val).split(":") if p]
        elif tag == DT_RUNPATH:
            out["runpath"] = [p for p in s(val).split(":") if p]
    verneed = next((v for t, v in tags if t == DT_VERNEED), None)
    if verneed is None:
        out["verneed"] = {}  # the object needs no symbol versions
    else:
        try:
            out["verneed"] = _read_verneed(fh, end, loads, verneed,
                                           next((v for t, v in tags if t == DT_VERNEEDNUM), None), s)
        except ElfError as exc:  # the rest of the answer stands; the version needs are unknown, and why
            out["verneed"] = None
            out["verneed_error"] = str(exc)
    return out


class _Strings:
    """Strings of the dynamic string table, read where they are (``s(index)``) through a small window, at most
    :data:`_MAX_STRING` bytes each: a few small reads instead of the whole table (megabytes in a large C++
    library, of which a dozen names are wanted; they lie close together, mostly at its end)."""

    def __init__(self, fh: BinaryIO, offset: int, size: int) -> None:
        self.fh, self.offset, self.size = fh, offset, size
        self.start, self.window = 0, b""

    def _read(self, pos: int, want: int) -> bytes:
        _seek(self.fh, self.offset + pos)
        data = self.fh.read(min(want, self.size - pos))
        if not data:
            raise ElfError("file truncated (string table)")
        return data

    def __call__(self, index: int) -> str:
        if index < 0 or index >= self.size:
            raise ElfError("string index out of range")
        rel = index - self.start
        nul = self.window.find(b"\0", rel) if 0 <= rel < len(self.window) else -1
        if nul < 0:
            # a new window starting a little before the string (its neighbours are wanted next)
            self.start = max(0, index - _STRING_WINDOW // 2)
            self.window = self._read(self.start, _STRING_WINDOW)
            rel = index - self.start
            if rel >= len(self.window):
                raise ElfError("file truncated (string table)")
            nul = self.window.find(b"\0", rel)
        if nul >= 0:
            raw = self.window[rel:nul]
        else:  # longer than the window: read on to its NUL, the table's end or the limit
            parts = [self.window[rel:]]
            pos, total = self.start + len(self.window), len(self.window) - rel
            while pos < self.size:
                chunk = self._read(pos, _STRING_WINDOW)
                cut = chunk.find(b"\0")
                parts.append(chunk if cut < 0 else chunk[:cut])
                total += len(parts[-1])
                if cut >= 0:
                    break
                pos += len(chunk)
                if total > _MAX_STRING:
                    raise ElfError("a string of the dynamic string table is longer than %d KiB" %
                                   (_MAX_STRING >> 10))
            raw = b"".join(parts)
        return raw.decode("utf-8", "replace")


def _read_verneed(fh: BinaryIO, end: str, loads: List[Tuple[int, int, int]], vaddr: int, count: Optional[int],
                  s: _Strings) -> Dict[str, List[str]]:
    """``{library: [version names]}`` of the version-needs table at ``vaddr`` (``Elf_Verneed`` entries, each
    with its ``Elf_Vernaux`` list; both 16 bytes in ELF32 and ELF64), in the object's order."""
    if count is None:
        raise ElfError("DT_VERNEED without DT_VERNEEDNUM")
    if count > _MAX_VERNEED_FILES:
        raise ElfError("implausible version needs (%d libraries)" % count)
    seg = next(((off + (vaddr - va), va + size - vaddr) for va, size, off in loads if va <= vaddr < va + size), None)
    if seg is None:
        raise ElfError("the version needs are outside every loadable segment")
    limit = min(seg[1], _MAX_VERNEED_BYTES)
    buf = bytearray()

    def have(upto: int) -> bytearray:
        """The table's first ``upto`` bytes at least (read 4 KiB at a time, never past ``limit``)."""
        if upto > len(buf) and len(buf) < limit:
            _seek(fh, seg[0] + len(buf))  # type: ignore[index]
            buf.extend(fh.read(min(limit, max(upto, len(buf) + 4096)) - len(buf)))
        if upto > len(buf):
            raise ElfError("the version needs run past the end of the file, of their segment or of the first "
                           "%d KiB" % (_MAX_VERNEED_BYTES >> 10))
        return buf

    out: Dict[str, List[str]] = {}
    names = 0
    pos = 0
    for _ in range(count):
        data = have(pos + 16)
        vn_version, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from(end + "HHIII", data, pos)
        if vn_version != 1:
            raise ElfError("unknown version-needs revision %d" % vn_version)
        versions = out.setdefault(s(vn_file), [])
        aux = pos + vn_aux
        for _ in range(vn_cnt):
            if vn_aux == 0:
                raise ElfError("a version need points outside the table")
            data = have(aux + 16)
            _hash, _flags, _other, vna_name, vna_next = struct.unpack_from(end + "IHHII", data, aux)
            names += 1
            if names > _MAX_VERNEED_NAMES:
                raise ElfError("implausible version needs (over %d names)" % _MAX_VERNEED_NAMES)
            name = s(vna_name)
            if name not in versions:
                versions.append(name)
            if vna_next == 0:
                break
            aux += vna_next
        if vn_next == 0:
            break
        pos += vn_next
    return out

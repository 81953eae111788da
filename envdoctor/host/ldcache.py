"""Read glibc's loader cache, ``/etc/ld.so.cache``, the file ``ldconfig`` writes and ``ld.so`` searches after
``LD_LIBRARY_PATH`` and a library's ``DT_RUNPATH``.

Three layouts exist (glibc ``sysdeps/generic/dl-cache.h``, ``elf/cache.c``):

* the old one, ``ld.so-1.7.0``: a header (magic, the number of entries), then 12-byte entries (``flags``,
  ``key``, ``value``: the soname and the path, as offsets into the string table that follows the entries);
* the new one, ``glibc-ld.so.cache1.1`` (the only one glibc 2.32 and later write by default): a 48-byte header
  (magic and version, the number of entries, the string table's size, a flags byte giving the byte order,
  the offset of an extension directory), then 24-byte entries (``flags``, ``key``, ``value``, an OS version,
  ``hwcap``) whose offsets count from the start of that header;
* "compat" (glibc 2.2 to 2.31 by default, e.g. CentOS 7): an old cache whose string table starts with a
  complete new one, aligned to 8 bytes; ``ld.so`` reads the new one.

An entry whose ``hwcap`` has bit 62 set (and no other bit of the upper half) is a ``glibc-hwcaps`` entry
(glibc 2.33+): its lower 32 bits index the list of subdirectory names (``x86-64-v3``...) held in the
extension section tagged 1. ``ld.so`` prefers, among the entries of one soname, the usable hwcaps
subdirectory of the highest priority, then the first plain entry whose flags match the process.

Entries come out in the file's order as ``(soname, flags, path, hwcaps)``; ``flags`` is spelt as ``ldconfig -p``
prints it (``libc6,x86-64``), so a cache read here and one listed by ``ldconfig -p`` compare equal.
Every count and offset is checked against the file; a malformed cache raises :class:`LdCacheError`.
"""

from __future__ import annotations

import struct
from typing import List, NamedTuple, Optional, Tuple

OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
_NEW_HEADER = 48
_NEW_ENTRY = 24
_OLD_ENTRY = 12
EXTENSION_MAGIC = 0xEAA42174
_TAG_GLIBC_HWCAPS = 1
HWCAP_EXTENSION = 1 << 62
#: A cache has at most this many entries (real ones: hundreds to a few thousand).
MAX_ENTRIES = 1 << 20

#: ``flags & 0xff``: the kind of library (``elf/cache.c`` print_entry).
_TYPES = {0: "libc4", 1: "ELF", 2: "libc5", 3: "libc6"}
#: ``flags & 0xff00``: the ABI it was built for.
_ABIS = {0x0100: "64bit", 0x0200: "IA-64", 0x0300: "x86-64", 0x0400: "64bit", 0x0500: "64bit", 0x0600: "N32",
         0x0700: "64bit", 0x0800: "x32", 0x0900: "hard-float", 0x0A00: "AArch64", 0x0B00: "soft-float",
         0x0C00: "nan2008", 0x0D00: "N32,nan2008", 0x0E00: "64bit,nan2008", 0x0F00: "soft-float",
         0x1000: "double-float", 0x1100: "soft-float", 0x1200: "double-float"}


class LdCacheError(ValueError):
    pass


class CacheEntry(NamedTuple):
    soname: str
    flags: str  # "libc6,x86-64" as ldconfig -p prints it
    path: str
    hwcaps: Optional[str] = None  # the glibc-hwcaps subdirectory ("x86-64-v3"), None for a plain entry


def flag_text(flags: int) -> str:
    text = _TYPES.get(flags & 0xFF, "unknown")
    abi = _ABIS.get(flags & 0xFF00)
    if abi:
        text += "," + abi
    elif flags & 0xFF00:
        text += ",%#x" % (flags & 0xFF00)
    return text


def _string(data: bytes, base: int, offset: int) -> str:
    at = base + offset
    if not 0 <= at < len(data):
        raise LdCacheError("a string offset points outside the file (%#x)" % offset)
    end = data.find(b"\0", at)
    if end < 0:
        raise LdCacheError("a string runs past the end of the file")
    return data[at:end].decode("utf-8", "replace")


def parse(data: bytes) -> List[CacheEntry]:
    """Every entry of a loader cache, in the file's order (see the module's doc)."""
    if data.startswith(NEW_MAGIC):
        return _parse_new(data, 0)
    if data.startswith(OLD_MAGIC):
        if len(data) < 16:
            raise LdCacheError("truncated header")
        nlibs, = struct.unpack_from("<I", data, 12)
        if nlibs > MAX_ENTRIES:
            raise LdCacheError("implausible number of entries (%d)" % nlibs)
        end = 16 + nlibs * _OLD_ENTRY
        if end > len(data):
            raise LdCacheError("the entries run past the end of the file")
        new_at = (end + 7) & ~7
        if data[new_at:new_at + len(NEW_MAGIC)] == NEW_MAGIC:
            return _parse_new(data, new_at)  # compat: ld.so reads the new cache inside the old one's strings
        out = []
        for i in range(nlibs):
            flags, key, value = struct.unpack_from("<iII", data, 16 + i * _OLD_ENTRY)
            out.append(CacheEntry(_string(data, end, key), flag_text(flags), _string(data, end, value)))
        return out
    raise LdCacheError("not a loader cache (unknown magic %r)" % data[:20])


def _parse_new(data: bytes, base: int) -> List[CacheEntry]:
    if len(data) < base + _NEW_HEADER:
        raise LdCacheError("truncated header")
    order = data[base + 28] & 3
    end = ">" if order == 3 else "<"  # 2: little endian; 0: written before the flag existed (native, little here)
    if order == 1:
        raise LdCacheError("the cache marks its byte order as invalid")
    nlibs, len_strings = struct.unpack_from(end + "II", data, base + 20)
    ext_offset, = struct.unpack_from(end + "I", data, base + 32)
    if nlibs > MAX_ENTRIES:
        raise LdCacheError("implausible number of entries (%d)" % nlibs)
    if base + _NEW_HEADER + nlibs * _NEW_ENTRY > len(data):
        raise LdCacheError("the entries run past the end of the file")
    hwcaps = _hwcaps_names(data, base, ext_offset, end)
    out = []
    for i in range(nlibs):
        flags, key, value, _osv, hwcap = struct.unpack_from(end + "iIIIQ", data, base + _NEW_HEADER + i * _NEW_ENTRY)
        sub = None
        if hwcap >> 32 == HWCAP_EXTENSION >> 32:
            index = hwcap & 0xFFFFFFFF
            if index >= len(hwcaps):
                raise LdCacheError("an entry names glibc-hwcaps subdirectory %d of %d" % (index, len(hwcaps)))
            sub = hwcaps[index]
        elif hwcap:
            sub = "%#018x" % hwcap  # a legacy hwcap mask (glibc before 2.37: tls, x86_64, haswell...)
        out.append(CacheEntry(_string(data, base, key), flag_text(flags), _string(data, base, value), sub))
    return out


def _hwcaps_names(data: bytes, base: int, ext_offset: int, end: str) -> Tuple[str, ...]:
    """The glibc-hwcaps subdirectory names of the extension directory (empty without one)."""
    if ext_offset == 0 or ext_offset + 8 > len(data):
        return ()
    magic, count = struct.unpack_from(end + "II", data, ext_offset)
    if magic != EXTENSION_MAGIC:
        return ()
    if count > 64 or ext_offset + 8 + 16 * count > len(data):
        raise LdCacheError("implausible extension directory (%d sections)" % count)
    for i in range(count):
        tag, _flags, offset, size = struct.unpack_from(end + "IIII", data, ext_offset + 8 + 16 * i)
        if tag != _TAG_GLIBC_HWCAPS:
            continue
        if size % 4 or size > 4096 or offset + size > len(data):
            raise LdCacheError("implausible glibc-hwcaps section")
        return tuple(_string(data, base, struct.unpack_from(end + "I", data, offset + 4 * j)[0])
                     for j in range(size // 4))
    return ()


def flags_text(entry: CacheEntry) -> str:
    """The entry's flags as ``ldconfig -p`` prints them between parentheses: ``libc6,x86-64, hwcap: "x86-64-v3"``."""
    if entry.hwcaps and not entry.hwcaps.startswith("0x"):
        return '%s, hwcap: "%s"' % (entry.flags, entry.hwcaps)
    if entry.hwcaps:
        return "%s, hwcap: %s" % (entry.flags, entry.hwcaps)
    return entry.flags


def ldconfig_line(entry: CacheEntry) -> str:
    """The entry as ``ldconfig -p`` prints it (``\\tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1``)."""
    return "\t%s (%s) => %s" % (entry.soname, flags_text(entry), entry.path)

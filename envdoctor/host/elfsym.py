"""What a shared object says about other libraries beyond its dynamic section: the library names written in its
read-only data (the sonames it opens with ``dlopen``), and its dynamic symbols.

**Library names** (:func:`read_sonames`): ``libcudnn.so.9`` holds ``libcudnn_graph.so``, ``libcudnn_ops.so`` ...
(the sub-libraries it opens, the major appended at run time), ``libnvrtc.so.13`` holds
``libnvrtc-builtins.so.13.0``, ``libcudart.so.12`` holds ``libcuda.so.1``. Only ``.rodata`` is searched, and
only when it is at most ``limit`` bytes (a large library's read-only data is tens of MiB; the caller decides
what it can afford), for NUL-terminated strings shaped like a library file name.

**Dynamic symbols** (:class:`DynamicSymbols`): the symbols an object imports (undefined in ``.dynsym``, with
the version each reference requires from ``.gnu.version``/``.gnu.version_r``) and whether another object
exports a given name (looked up through its ``.gnu.hash`` table, or ``.hash``, as ``ld.so`` does, reading only
the few entries on the way, never the whole string table: ``libtorch_cpu.so`` exports some 100,000 C++ names).

Both read through the section headers (every real shared object keeps them). Every size and offset is checked
against the file; a malformed object raises :class:`~envdoctor.host.elf.ElfError`.
"""

from __future__ import annotations

import mmap
import re
import struct
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple

from .elf import ElfError

#: A library file name: NUL-terminated, ``lib`` + name + ``.so`` + optional version numbers.
_SONAME = re.compile(rb"lib[A-Za-z0-9_+\-]{1,80}\.so(?:\.[0-9]{1,6}){0,4}(?=\x00)")
SHT_DYNSYM, SHT_HASH, SHT_DYNAMIC, SHT_GNU_HASH = 11, 5, 6, 0x6FFFFFF6
SHT_GNU_VERSYM, SHT_GNU_VERDEF, SHT_GNU_VERNEED = 0x6FFFFFFF, 0x6FFFFFFD, 0x6FFFFFFE
STB_WEAK = 2
#: ``unresolved(names=VERSIONED)``: look up the versioned imports only.
VERSIONED = "@versioned"
SHN_UNDEF = 0
_MAX_SYMBOLS = 4 << 20
_MAX_SECTIONS = 1 << 16
_MAX_NAME = 4096


class TooLarge(ElfError):
    """The section is larger than the caller's limit (``size`` says how large)."""

    def __init__(self, what: str, size: int) -> None:
        super().__init__("%s is %d KiB, more than is read" % (what, size >> 10))
        self.size = size


def _all_sections(fh: BinaryIO) -> List[Tuple[bytes, int, int, int, int, int]]:
    """(name, type, offset, size, link, entsize) of every section: the header table and the name table read in one
    piece each."""
    fh.seek(0)
    ident = fh.read(64)
    if len(ident) < 52 or ident[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    cls, end = {1: 32, 2: 64}.get(ident[4]), {1: "<", 2: ">"}.get(ident[5])
    if cls is None or end is None:
        raise ElfError("unknown ELF class or byte order")
    if cls == 64:
        if len(ident) < 64:
            raise ElfError("file truncated (ELF header)")
        shoff, = struct.unpack_from(end + "Q", ident, 40)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", ident, 58)
        fmt = end + "IIQQQQIIQQ"
    else:
        shoff, = struct.unpack_from(end + "I", ident, 32)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", ident, 46)
        fmt = end + "IIIIIIIIII"
    if shoff == 0 or shnum == 0:
        return []
    size = struct.calcsize(fmt)
    if shnum > _MAX_SECTIONS or shentsize < size or shstrndx >= shnum:
        raise ElfError("implausible section header table")
    fh.seek(shoff)
    table = fh.read(shnum * shentsize)
    if len(table) != shnum * shentsize:
        raise ElfError("file truncated (section headers)")
    raw = [struct.unpack_from(fmt, table, i * shentsize) for i in range(shnum)]
    str_off, str_size = raw[shstrndx][4], raw[shstrndx][5]
    if str_size > 16 << 20:
        raise ElfError("implausible section name table")
    fh.seek(str_off)
    names = fh.read(str_size)
    out = []
    for h in raw:
        n = h[0]
        cut = names.find(b"\0", n) if n < len(names) else -1
        out.append((names[n:cut] if cut >= 0 else b"", h[1], h[4], h[5], h[6], h[9]))
    return out


def read_sonames(fh: BinaryIO, limit: int) -> Tuple[List[str], int]:
    """The library file names in ``.rodata`` (sorted, once each) and that section's size. Raises
    :class:`TooLarge` when the section is larger than ``limit``."""
    rodata = [(off, size) for name, _t, off, size, _l, _e in _all_sections(fh) if name == b".rodata"]
    if not rodata:
        return [], 0
    off, size = rodata[0]
    if size > limit:
        raise TooLarge(".rodata", size)
    try:  # searched in place (a memory map reads only the pages the search touches, at C speed)
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, AttributeError):
        fh.seek(off)
        data = fh.read(size)
        if len(data) != size:
            raise ElfError("file truncated (.rodata)") from None
        return _names(data, 0, size), size
    try:
        if off + size > len(mm):
            raise ElfError("file truncated (.rodata)")
        return _names(mm, off, off + size), size
    finally:
        mm.close()


def _names(data: Any, start: int, end: int) -> List[str]:
    """The library names between ``start`` and ``end``: each a whole string (preceded by a NUL or the start)."""
    out = set()
    for m in _SONAME.finditer(data, start, end):
        at = m.start()
        if at == start or data[at - 1:at] == b"\0":
            out.add(m.group(0).decode("ascii"))
    return sorted(out)


def gnu_hash(name: bytes) -> int:
    h = 5381
    for c in name:
        h = (h * 33 + c) & 0xFFFFFFFF
    return h


def sysv_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


class DynamicSymbols:
    """An object's dynamic symbol table, read from a memory map of the file (only the pages touched are read)."""

    def __init__(self, fh: BinaryIO) -> None:
        secs = _all_sections(fh)
        fh.seek(0)
        ident = fh.read(16)
        self.cls = 64 if ident[4] == 2 else 32
        self.end = ">" if ident[5] == 2 else "<"
        try:
            self.mm: Optional[mmap.mmap] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            self.data: bytes = self.mm  # type: ignore[assignment]
        except (OSError, ValueError, AttributeError):  # not a real file: read it whole (small)
            self.mm = None
            fh.seek(0)
            self.data = fh.read()
        by_type: Dict[int, Tuple[int, int, int, int]] = {}
        for _name, typ, off, size, link, ent in secs:
            if typ in (SHT_DYNSYM, SHT_HASH, SHT_GNU_HASH, SHT_GNU_VERSYM, SHT_GNU_VERDEF, SHT_GNU_VERNEED):
                by_type.setdefault(typ, (off, size, link, ent))
        if SHT_DYNSYM not in by_type:
            raise ElfError("no dynamic symbol table")
        self.sym_off, sym_size, strndx, _ = by_type[SHT_DYNSYM]
        self.sym_ent = 24 if self.cls == 64 else 16
        self.nsyms = sym_size // self.sym_ent
        if self.nsyms > _MAX_SYMBOLS or self.sym_off + sym_size > len(self.data):
            raise ElfError("implausible dynamic symbol table")
        if strndx >= len(secs):
            raise ElfError("the dynamic symbol table names no string table")
        self.str_off, self.str_size = secs[strndx][2], secs[strndx][3]
        if self.str_off + self.str_size > len(self.data):
            raise ElfError("the dynamic string table runs past the end of the file")
        self.versym = by_type.get(SHT_GNU_VERSYM)
        self.gnu = by_type.get(SHT_GNU_HASH)
        self.sysv = by_type.get(SHT_HASH)
        self.verdefs = self._verdef(by_type.get(SHT_GNU_VERDEF))
        self.verneeds = self._verneed(by_type.get(SHT_GNU_VERNEED))
        self._sym_fmt = self.end + ("IBBHQQ" if self.cls == 64 else "IIIBBH")
        self.soname = self._soname(next(((off, size, link, ent) for _n, typ, off, size, link, ent in secs
                                          if typ == SHT_DYNAMIC), None))

    def _soname(self, dynamic: Optional[Tuple[int, int, int, int]]) -> Optional[str]:
        """DT_SONAME (tag 14) from the ``.dynamic`` section, named in the dynamic string table."""
        if dynamic is None:
            return None
        off, size = dynamic[0], dynamic[1]
        ent, fmt = (16, self.end + "qQ") if self.cls == 64 else (8, self.end + "iI")
        for at in range(off, min(off + size, len(self.data)) - ent + 1, ent):
            tag, val = struct.unpack_from(fmt, self.data, at)
            if tag == 0:
                break
            if tag == 14:
                return self._str(val).decode("utf-8", "replace")
        return None

    def close(self) -> None:
        if self.mm is not None:
            self.mm.close()
            self.mm = None

    # -- reading ---------------------------------------------------------------------------------------------
    def _str(self, index: int) -> bytes:
        if not 0 <= index < self.str_size:
            raise ElfError("string index out of range")
        at = self.str_off + index
        end = self.data.find(b"\0", at, min(at + _MAX_NAME, self.str_off + self.str_size))
        if end < 0:
            raise ElfError("unterminated symbol name")
        return bytes(self.data[at:end])

    def _sym(self, i: int) -> Tuple[int, int, int, int]:
        """(name index, binding, section index, value) of symbol ``i``."""
        f = struct.unpack_from(self._sym_fmt, self.data, self.sym_off + i * self.sym_ent)
        if self.cls == 64:
            name, info, _other, shndx, value = f[0], f[1], f[2], f[3], f[4]
        else:
            name, value, _size, info, _other, shndx = f
        return name, info >> 4, shndx, value

    def _ver_index(self, i: int) -> int:
        if self.versym is None:
            return 1
        off = self.versym[0] + 2 * i
        if off + 2 > len(self.data):
            raise ElfError("the symbol version table runs past the end of the file")
        return struct.unpack_from(self.end + "H", self.data, off)[0]

    def _verdef(self, sec: Optional[Tuple[int, int, int, int]]) -> Dict[int, bytes]:
        """Version index -> the version name this object defines."""
        out: Dict[int, bytes] = {}
        if sec is None:
            return out
        off, size = sec[0], sec[1]
        pos, n = off, 0
        while pos + 20 <= off + size and n < 4096:
            _ver, _flags, ndx, cnt, _hash, aux, nxt = struct.unpack_from(self.end + "HHHHIII", self.data, pos)
            if cnt and pos + aux + 8 <= len(self.data):
                vda_name, = struct.unpack_from(self.end + "I", self.data, pos + aux)
                out[ndx & 0x7FFF] = self._str(vda_name)
            if nxt == 0:
                break
            pos += nxt
            n += 1
        return out

    def _verneed(self, sec: Optional[Tuple[int, int, int, int]]) -> Dict[int, Tuple[bytes, bytes]]:
        """Version index -> (version name, library it is required of)."""
        out: Dict[int, Tuple[bytes, bytes]] = {}
        if sec is None:
            return out
        off, size = sec[0], sec[1]
        pos, n = off, 0
        while pos + 16 <= off + size and n < 4096:
            _ver, cnt, vn_file, vn_aux, vn_next = struct.unpack_from(self.end + "HHIII", self.data, pos)
            lib = self._str(vn_file)
            aux = pos + vn_aux
            for _ in range(min(cnt, 4096)):
                if aux + 16 > len(self.data):
                    break
                _h, _fl, other, name, nxt = struct.unpack_from(self.end + "IHHII", self.data, aux)
                out[other & 0x7FFF] = (self._str(name), lib)
                if nxt == 0:
                    break
                aux += nxt
            if vn_next == 0:
                break
            pos += vn_next
            n += 1
        return out

    # -- questions ---------------------------------------------------------------------------------------------
    def imports(self) -> List[Tuple[str, Optional[str], Optional[str], bool]]:
        """The symbols this object needs from others: (name, version or None, the library that version is
        required of or None, weak)."""
        out = []
        for i in range(1, self.nsyms):
            name, bind, shndx, _value = self._sym(i)
            if shndx != SHN_UNDEF or not name:
                continue
            ver = self.verneeds.get(self._ver_index(i) & 0x7FFF)
            out.append((self._str(name).decode("utf-8", "replace"), ver[0].decode("utf-8", "replace") if ver else None,
                        ver[1].decode("utf-8", "replace") if ver else None, bind == STB_WEAK))
        return out

    def defines(self, name: str, hashes: Optional[Tuple[int, int]] = None) -> Optional[List[str]]:
        """The versions under which this object exports ``name`` (``""`` for an unversioned definition; a hidden
        one is ``"!VERSION"``), or None when it does not export it. ``hashes``: the name's GNU and SysV hashes,
        when the caller looks it up in several objects."""
        raw = name.encode("utf-8")
        found: List[str] = []
        for i in self._candidates(raw, hashes):
            sname, _bind, shndx, _value = self._sym(i)
            if shndx == SHN_UNDEF or self._str(sname) != raw:
                continue
            idx = self._ver_index(i)
            ver = self.verdefs.get(idx & 0x7FFF)
            text = ver.decode("utf-8", "replace") if ver is not None and idx & 0x7FFF > 1 else ""
            found.append(("!" + text) if idx & 0x8000 else text)
        return found or None

    def _candidates(self, raw: bytes, hashes: Optional[Tuple[int, int]] = None) -> List[int]:
        """Symbol indexes whose hash matches ``raw`` (every symbol when the object has no hash table)."""
        if self.gnu is not None:
            return self._gnu_candidates(raw, hashes[0] if hashes else None)
        if self.sysv is not None:
            return self._sysv_candidates(raw)
        return list(range(1, self.nsyms))

    def _gnu_candidates(self, raw: bytes, h: Optional[int] = None) -> List[int]:
        assert self.gnu is not None
        off = self.gnu[0]
        nbuckets, symoffset, bloom_size, bloom_shift = struct.unpack_from(self.end + "IIII", self.data, off)
        word = 8 if self.cls == 64 else 4
        if nbuckets == 0 or bloom_size == 0 or bloom_size > 1 << 24 or nbuckets > 1 << 24:
            raise ElfError("implausible .gnu.hash table")
        if h is None:
            h = gnu_hash(raw)
        bloom_at = off + 16
        bits = word * 8
        mask, = struct.unpack_from(self.end + ("Q" if word == 8 else "I"), self.data,
                                   bloom_at + word * ((h // bits) % bloom_size))
        if not (mask >> (h % bits)) & 1 or not (mask >> ((h >> bloom_shift) % bits)) & 1:
            return []
        buckets_at = bloom_at + word * bloom_size
        chain_at = buckets_at + 4 * nbuckets
        i, = struct.unpack_from(self.end + "I", self.data, buckets_at + 4 * (h % nbuckets))
        out: List[int] = []
        if i < symoffset:
            return out
        steps = 0
        while steps < _MAX_SYMBOLS:
            h2, = struct.unpack_from(self.end + "I", self.data, chain_at + 4 * (i - symoffset))
            if (h2 | 1) == (h | 1):
                out.append(i)
            if h2 & 1:
                break
            i += 1
            steps += 1
        return out

    def _sysv_candidates(self, raw: bytes) -> List[int]:
        assert self.sysv is not None
        off = self.sysv[0]
        nbucket, nchain = struct.unpack_from(self.end + "II", self.data, off)
        if nbucket == 0 or nbucket > 1 << 24 or nchain > _MAX_SYMBOLS:
            raise ElfError("implausible .hash table")
        i, = struct.unpack_from(self.end + "I", self.data, off + 8 + 4 * (sysv_hash(raw) % nbucket))
        out, steps = [], 0
        while i and i < nchain and steps < nchain:
            out.append(i)
            i, = struct.unpack_from(self.end + "I", self.data, off + 8 + 4 * nbucket + 4 * i)
            steps += 1
        return out


def unresolved(obj: DynamicSymbols, providers: Sequence[DynamicSymbols],
               deadline_left: Optional[Callable[[], float]] = None,
               names: Optional[str] = None) -> Tuple[List[Tuple[str, Optional[str]]], int]:
    """The imports of ``obj`` (not weak) that no object of ``providers`` exports, and how many were looked up.

    A versioned import (``cudaMalloc@libcudart.so.12``) is looked up in the provider whose SONAME is the library
    the version is required of, and only there; one required of a library outside ``providers`` (glibc's,
    libstdc++'s: their versions are checked as version needs) is not judged. An unversioned import is looked
    up in every provider, in order. A definition matches a versioned import when it carries that version, or
    when its object defines no versions at all (``ld.so`` accepts it then: ``elf/dl-lookup.c`` check_match).
    ``names``: a regular expression; only the imports it matches (from the start) are looked up; or
    :data:`VERSIONED`: only the imports that carry a symbol version (what a CUDA library needs of another one:
    ``__nvJitLinkCreate_12_4@libnvJitLink.so.12``)."""
    versioned_only = names == VERSIONED
    wanted = re.compile(names) if names and not versioned_only else None
    by_soname: Dict[str, DynamicSymbols] = {}
    for p in providers:
        if p.soname:
            by_soname.setdefault(p.soname, p)
    missing: List[Tuple[str, Optional[str]]] = []
    checked = 0
    for n, (name, ver, vfile, weak) in enumerate(obj.imports()):
        if weak or (wanted is not None and not wanted.match(name)) or (versioned_only and ver is None):
            continue
        if deadline_left is not None and n % 256 == 0 and deadline_left() <= 0:
            raise TimeoutError("no time left to look up the symbols of the libraries it loads")
        if ver is not None:
            where = by_soname.get(vfile or "")
            if where is None:
                continue
            checked += 1
            got = where.defines(name)
            if got is None or not (ver in got or "!" + ver in got or not where.verdefs):
                missing.append((name, ver))
            continue
        checked += 1
        hashes = (gnu_hash(name.encode("utf-8")), 0)
        if not any(p.defines(name, hashes) is not None for p in providers):
            missing.append((name, None))
    return missing, checked

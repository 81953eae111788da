"""Unpacking an archive that may be hostile, into a directory it must not leave.

This one module is what both installers run: the executor imports it, and the dry-run script
(``envdoctor install ... --dry-run --format sh``) carries its source (:func:`source`) and runs it with the
machine's Python (``python3 -I - ARCHIVE DEST STRIP MARKER LICENSE_AS``, :func:`main`), so the script
refuses exactly what the executor refuses. It therefore imports only the standard library and keeps to
Python 3.6 (the python3 of CentOS 7 and RHEL 8): no ``from __future__`` imports, no newer syntax.

**Reading is bounded.** The archive is opened as the format its name promises (``.tar.xz`` is xz, never
guessed from its bytes), and the decompressed stream may not run past the size the archive records for
itself: for ``.xz``, its index, read without decompressing (:func:`unpacked_size`), the figure the space
check before unpacking was given; for a plain ``.tar``, its size; for gzip and bzip2, which record none, the
free space at the destination. Every read and seek of the stream is counted (:class:`_Bounded`), so an
archive whose index lies, or a bomb, stops at that size with nothing of it kept; the stream is read to its
end once unpacked, so the decompressor checks the index and checksum against the data (an index that
disagrees is refused, whichever way it lies). At most :data:`MAX_MEMBERS` members are read.

**Every member is checked on its own** (:func:`_checked_members`): absolute names, names that climb out
with ``..``, names more than :data:`MAX_DEPTH` directories deep or longer than a file system allows,
impossible modification times, hard links, device files, FIFOs, sparse files, setuid and setgid files are
refused with a message naming the member (and a header tarfile cannot read, however it fails); other modes are made
``0755``/``0644`` at most. Members are then unpacked one at a time, each after a check against the
directory *as it now is on disk* (:func:`_check_on_disk`): the member's resolved path, and for a symbolic
link its resolved target, must stay inside the target directory. Checking the resolved paths
(``os.path.realpath``) after the earlier members exist catches what a lexical check misses, such as a chain
of links that each look inside (``l0 -> .``, ``l1 -> l0/..``) followed by a link or a file through the chain.

Where the running Python has ``tarfile``'s extraction filters (3.12, 3.8.17, 3.9.17, 3.10.12, 3.11.4 and
later), each member is written by ``tarfile`` through the ``data`` filter; where it has none, by
:func:`_write_member`, which opens files with ``O_NOFOLLOW``/``O_EXCL`` and never writes through a link.
Finally every link in the tree is resolved again (:func:`_links_escaping`), so a link whose meaning changed
because of a later member is refused too. A refusal, or any other failure, removes the whole target
directory and the markers saying earlier archives were unpacked into it (:func:`unpack`).
"""

import os
import posixpath
import shutil
import struct
import sys
import tarfile
import zlib
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Tuple, Type

#: Deeper than any real archive (NVIDIA's deepest names are about 10 levels), shallow enough to stay far
#: from the interpreter's recursion limit and PATH_MAX.
MAX_DEPTH = 64
#: More members than any real archive holds (cuda_cccl, the largest in files, has a few thousand); each
#: costs memory while the archive is checked.
MAX_MEMBERS = 100000
#: What a file name (one component) and a path may hold on Linux (NAME_MAX, PATH_MAX - 1), in bytes.
NAME_MAX, PATH_MAX = 255, 4095
#: A modification time beyond this (about 34,000 years either side of 1970) is no real file's.
MAX_TIME = 1 << 40
#: The name suffixes this unpacks, and the format each promises.
FORMATS = ((".tar.xz", "xz"), (".txz", "xz"), (".tar.gz", "gzip"), (".tgz", "gzip"), (".tar.bz2", "bzip2"),
           (".tar", "tar"))


class UnsafeArchive(Exception):
    """The archive is refused: a member would leave the target directory or is not a plain file, directory
    or link, or the archive is not what its name says, is corrupt, or unpacks beyond what it records."""


def has_data_filter() -> bool:
    """Whether this Python's ``tarfile`` has the extraction filters (tests emulate their absence)."""
    return hasattr(tarfile, "data_filter")


def source() -> str:
    """This module's source, which the dry-run script embeds and runs (:func:`main`)."""
    import pkgutil

    data = pkgutil.get_data(__name__.rpartition(".")[0] or "envdoctor.install", "extract.py")
    if data is None:  # pragma: no cover - a loader that cannot read its own package's files
        raise OSError("cannot read envdoctor/install/extract.py")
    return data.decode("utf-8")


# -- the size an .xz records --------------------------------------------------------------------------
# NVIDIA's redist manifests give each archive's compressed size and checksums, nothing about its unpacked
# size. Once an archive is on disk, its uncompressed size is in the xz container: every stream ends with an
# index listing each block's uncompressed size, and a 12-byte footer that says where the index starts (the
# .xz file format, https://tukaani.org/xz/xz-file-format.txt, sections 2.1.2 "Stream Footer" and 4 "Index").
# The footers and indexes are read from the end of the file backwards, stream by stream (concatenated
# streams and stream padding allowed), each index's CRC32 checked, and the sizes summed: what
# ``xz --list`` reports as "Uncompressed". An index can lie; the unpacking below holds the data to it.

XZ_HEADER_MAGIC = b"\xfd7zXZ\x00"
XZ_FOOTER_MAGIC = b"YZ"
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
    records = []  # type: List[Tuple[int, int]]
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
        if footer[10:] != XZ_FOOTER_MAGIC or \
                zlib.crc32(footer[4:10]) & 0xFFFFFFFF != struct.unpack("<I", footer[:4])[0]:
            raise _Malformed("bad footer")
        backward = (struct.unpack("<I", footer[4:8])[0] + 1) * 4
        start = end - 12 - backward
        if backward > MAX_INDEX or start < 12:
            raise _Malformed("bad index size")
        size, blocks = _index(_read(f, start, backward))
        stream_start = start - blocks - 12
        if stream_start < 0 or _read(f, stream_start, 6) != XZ_HEADER_MAGIC:
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


# -- reading the stream, bounded ----------------------------------------------------------------------
def archive_format(path: str) -> str:
    """The format the name of the archive at ``path`` promises (``xz``, ``gzip``, ``bzip2``, ``tar``)."""
    name = os.path.basename(path).lower()
    for suffix, fmt in FORMATS:
        if name.endswith(suffix):
            return fmt
    raise UnsafeArchive(f"{os.path.basename(path)!r} is not named as a .tar.xz, .tar.gz, .tar.bz2 or .tar "
                        "archive; refusing it")


def _decoder_errors() -> Tuple[Type[BaseException], ...]:
    """What a decompressor raises on data that is not what it decodes (or ends too soon)."""
    errors = [EOFError, zlib.error, tarfile.TarError, OSError]  # type: List[Type[BaseException]]
    # OSError: gzip's "Not a gzipped file" (3.6, 3.7)
    try:
        import lzma

        errors.append(lzma.LZMAError)
    except ImportError:  # pragma: no cover - a Python built without liblzma
        pass
    return tuple(errors)


class _Bounded:
    """The decompressed stream, refusing to be read or sought past ``limit`` bytes (what tarfile reads from)."""

    def __init__(self, raw: Any, limit: int, what: str, name: str, fmt: str) -> None:
        self._raw, self.limit, self._what, self._name, self._fmt = raw, limit, what, name, fmt
        self._errors = _decoder_errors()

    def _over(self) -> UnsafeArchive:
        return UnsafeArchive(f"it unpacks to more than {self._what} ({self.limit} bytes); refusing it")

    def _bad(self, exc: BaseException) -> UnsafeArchive:
        why = str(exc) or type(exc).__name__
        return UnsafeArchive(f"it is not a readable {self._fmt} archive ({why}); refusing it")

    def read(self, size: Optional[int] = -1) -> bytes:
        try:
            pos = self._raw.tell()
            room = self.limit - pos
            if size is None or size < 0 or size > room:
                data = self._raw.read(max(0, room) + 1)
                if len(data) > room:
                    raise self._over()
                return bytes(data)
            return bytes(self._raw.read(size))
        except UnsafeArchive:
            raise
        except self._errors as exc:
            raise self._bad(exc) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        try:
            target = offset if whence == 0 else self._raw.tell() + offset
            if whence not in (0, 1) or target < 0:
                raise UnsafeArchive("it asks to be read out of order; refusing it")
            if target > self.limit:
                raise self._over()
            return int(self._raw.seek(target))
        except UnsafeArchive:
            raise
        except self._errors as exc:
            raise self._bad(exc) from None

    def tell(self) -> int:
        return int(self._raw.tell())

    def drain(self) -> None:
        """Read to the end of the stream, where the decompressor checks its index and checksum."""
        while self.read(1024 * 1024):
            pass

    def close(self) -> None:
        self._raw.close()


def _free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _open(archive: str, dest: str) -> _Bounded:
    fmt = archive_format(archive)
    name = os.path.basename(archive)
    if fmt == "xz":
        size = unpacked_size(archive)
        if size is None:
            raise UnsafeArchive("it is not a well-formed .xz file (its index cannot be read); refusing it")
        limit, what = size, "the size its xz index records"
    elif fmt == "tar":
        limit, what = os.path.getsize(archive), "its own size"
    else:
        limit, what = _free_bytes(dest), "the free space in " + dest
    try:
        if fmt == "xz":
            import lzma

            raw = lzma.open(archive, "rb", format=lzma.FORMAT_XZ)  # type: Any
        elif fmt == "gzip":
            import gzip

            raw = gzip.open(archive, "rb")
        elif fmt == "bzip2":
            import bz2

            raw = bz2.open(archive, "rb")
        else:
            raw = open(archive, "rb")
    except ImportError as exc:
        raise UnsafeArchive(f"this Python cannot read {fmt} ({exc}); refusing it") from None
    return _Bounded(raw, limit, what, name, fmt)


# -- the members --------------------------------------------------------------------------------------
def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _members(tf: tarfile.TarFile) -> List[tarfile.TarInfo]:
    """Every member, counted as it is read (never more than :data:`MAX_MEMBERS`)."""
    out = []  # type: List[tarfile.TarInfo]
    while True:
        m = tf.next()
        if m is None:
            return out
        out.append(m)
        if len(out) > MAX_MEMBERS:
            raise UnsafeArchive(f"it holds more than {MAX_MEMBERS} members; refusing it")


def _checked_members(members: List[tarfile.TarInfo], strip: int,
                     rename: Optional[Callable[[str], str]]) -> List[tarfile.TarInfo]:
    out = []
    for m in members:
        raw = m.name
        if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
            raise UnsafeArchive(f"archive member {raw!r} has an absolute name; refusing the archive")
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise UnsafeArchive(f"archive member {raw!r} climbs out with '..'; refusing the archive")
        if len(parts) > MAX_DEPTH:
            raise UnsafeArchive("archive member {!r} is {} directories deep (more than {}); refusing the "
                                "archive".format(raw[:60] + "...", len(parts), MAX_DEPTH))
        if any(len(p.encode("utf-8", "surrogateescape")) > NAME_MAX for p in parts) or \
                len(m.linkname.encode("utf-8", "surrogateescape")) > PATH_MAX:
            raise UnsafeArchive("archive member {!r} has a name longer than a file system allows; refusing the "
                                "archive".format(raw[:60] + "..."))
        if not (isinstance(m.mtime, (int, float)) and -MAX_TIME <= m.mtime <= MAX_TIME):
            raise UnsafeArchive(f"archive member {raw!r} has an impossible modification time ({m.mtime!r:.40}); "
                                "refusing the archive")
        if m.islnk():
            raise UnsafeArchive(f"archive member {raw!r} is a hard link (to {m.linkname!r}); NVIDIA's archives "
                                "have none, refusing the archive")
        if m.ischr() or m.isblk():
            raise UnsafeArchive(f"archive member {raw!r} is a device file; refusing the archive")
        if m.isfifo():
            raise UnsafeArchive(f"archive member {raw!r} is a FIFO; refusing the archive")
        if m.issparse():
            raise UnsafeArchive(f"archive member {raw!r} is a sparse file; NVIDIA's archives have none, refusing the "
                                "archive")
        if not (m.isfile() or m.isdir() or m.issym()):
            raise UnsafeArchive(f"archive member {raw!r} is not a file, directory or symbolic link; refusing "
                                "it")
        if not m.issym() and m.mode & 0o6000:
            raise UnsafeArchive("archive member {!r} is set{}id (mode {:04o}); refusing the archive".format(
                raw, "u" if m.mode & 0o4000 else "g", m.mode & 0o7777))
        if m.issym() and m.linkname.startswith("/"):
            raise UnsafeArchive(f"archive member {raw!r} is a link to the absolute path {m.linkname!r}; refusing it")
        if len(parts) <= strip:
            continue
        name = "/".join(parts[strip:])
        if rename is not None:
            name = rename(name)
        m = m.replace(name=name, deep=False) if hasattr(m, "replace") else _renamed(m, name)
        m.uid = m.gid = 0
        m.uname = m.gname = ""
        m.mode = (m.mode & 0o755) | 0o700 if m.isdir() else m.mode & 0o755
        out.append(m)
    return out


def _renamed(m: tarfile.TarInfo, name: str) -> tarfile.TarInfo:
    import copy

    c = copy.copy(m)
    c.name = name
    return c


def _check_on_disk(m: tarfile.TarInfo, root: str) -> str:
    """The member's path, after checking (against the tree as it is now) that it stays inside ``root``."""
    path = os.path.join(root, *m.name.split("/"))
    parent = os.path.realpath(os.path.dirname(path))
    if not _inside(parent, root):
        raise UnsafeArchive(f"archive member {m.name!r} would be written through a link to {parent}, outside the "
                            "target directory; refusing the archive")
    if m.issym():
        target = os.path.realpath(os.path.join(parent, m.linkname))
        if not _inside(target, root):
            raise UnsafeArchive(f"archive member {m.name!r} is a link to {m.linkname!r}, which resolves to "
                                f"{target}, outside the target directory; refusing the archive")
    elif not m.isdir():
        resolved = os.path.realpath(path)
        if not _inside(resolved, root):
            raise UnsafeArchive(f"archive member {m.name!r} would be written to {resolved}, outside the target "
                                "directory; refusing the archive")
    return path


#: The most links the kernel follows resolving one path (path_resolution(7): "a maximum of 40 symbolic links"; past
#: it, ELOOP): a link that needs more is one nothing can open.
MAX_LINK_HOPS = 40


def _count_hops(m: tarfile.TarInfo, root: str, hops: Dict[str, int]) -> None:
    """Refuse a link whose target is an earlier link of the archive at the end of a chain longer than the kernel
    follows (:data:`MAX_LINK_HOPS`), before resolving it: each resolution walks the whole chain, so an archive of
    thousands of chained links would cost time quadratic in their number to check."""
    path = posixpath.normpath(posixpath.join(root, m.name))
    target = posixpath.normpath(posixpath.join(posixpath.dirname(path), m.linkname))
    hops[path] = 1 + hops.get(target, 0)
    if hops[path] > MAX_LINK_HOPS:
        raise UnsafeArchive(f"archive member {m.name!r} is a link at the end of a chain of more than {MAX_LINK_HOPS} "
                            "links, more than the system follows; refusing the archive")


def _clear(path: str, m: tarfile.TarInfo) -> None:
    """Remove what an earlier member left at ``path`` (never write through it); directories stay for dirs."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        if m.isdir():
            return
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _write_member(tf: tarfile.TarFile, m: tarfile.TarInfo, path: str) -> None:
    """Write one checked member without tarfile's filters: no link is ever followed."""
    if m.isdir():
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, m.mode)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if m.issym():
        os.symlink(m.linkname, path)
        return
    src = tf.extractfile(m)
    if src is None:  # pragma: no cover - regular files always have data
        raise UnsafeArchive(f"archive member {m.name!r} has no data")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out, src:
        shutil.copyfileobj(src, out, 1024 * 1024)
    os.chmod(path, m.mode)


def _links_escaping(root: str) -> List[str]:
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) and not _inside(os.path.realpath(p), root):
                bad.append(os.path.relpath(p, root))
    return bad


def extract(archive: str, dest: str, strip: int = 0, rename: Optional[Callable[[str], str]] = None,
            use_filter: Optional[bool] = None) -> None:
    """Unpack ``archive`` into ``dest`` (created), dropping ``strip`` leading name parts.

    Raises :class:`UnsafeArchive` for an archive refused (nothing is left half-trusted: the caller removes
    ``dest``, as :func:`unpack` does) or ``OSError`` for one that could not be written (a full disk).
    """
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    filtered = has_data_filter() if use_filter is None else use_filter
    stream = _open(archive, root)
    try:
        with tarfile.open(fileobj=stream, mode="r:") as tf:  # type: ignore[call-overload]
            members = _checked_members(_members(tf), strip, rename)
            hops: Dict[str, int] = {}  # the links unpacked so far: how many links opening each one follows
            for m in members:
                if m.issym():
                    _count_hops(m, root, hops)
                else:  # a link an earlier member left here is replaced
                    hops.pop(posixpath.normpath(posixpath.join(root, m.name)), None)
                path = _check_on_disk(m, root)
                _clear(path, m)
                if filtered:
                    kwargs = {"filter": "data"}  # type: Any
                    try:
                        tf.extract(m, root, set_attrs=not m.issym(), **kwargs)
                    except tarfile.FilterError as exc:  # type: ignore[attr-defined]
                        raise UnsafeArchive(f"archive member {m.name!r} refused: {exc}") from None
                else:
                    _write_member(tf, m, path)
            stream.drain()
    except RecursionError:
        raise UnsafeArchive("its links are chained too deeply to follow; refusing it") from None
    except (tarfile.TarError, ValueError, OverflowError, LookupError, EOFError) as exc:
        # tarfile's own answers to headers it cannot read, and what its parsing raises past them (a sparse map
        # that does not parse: ValueError; a time the system cannot set: OverflowError)
        why = str(exc) or type(exc).__name__
        raise UnsafeArchive(f"it is not a readable tar archive ({why}); refusing it") from None
    finally:
        stream.close()
    try:
        escaping = _links_escaping(root)
    except RecursionError:
        raise UnsafeArchive("its links are chained too deeply to follow; refusing it") from None
    if escaping:
        raise UnsafeArchive("archive links lead outside the target directory once unpacked ({}); refusing the "
                            "archive".format(", ".join(sorted(escaping)[:5])))


def discard(dest: str, marker: str = "") -> None:
    """Remove ``dest`` and, beside ``marker``, every marker saying an archive was unpacked into it."""
    shutil.rmtree(dest, ignore_errors=True)
    mdir = os.path.dirname(marker) if marker else ""
    if mdir and os.path.isdir(mdir):
        for name in os.listdir(mdir):
            if name.endswith(".unpacked"):
                os.remove(os.path.join(mdir, name))


def unpack(archive: str, dest: str, strip: int = 0, marker: str = "", license_as: str = "",
           use_filter: Optional[bool] = None) -> None:
    """The install step "unpack ``archive`` into ``dest``": :func:`extract` (the archive's top-level
    ``LICENSE`` kept as ``license_as``), then ``marker`` is created. On a refusal or any failure, nothing of
    the tree ``dest`` is kept, nor the markers of the archives unpacked into it before (a re-run unpacks them
    again), and the exception goes on."""
    def rename(name: str) -> str:
        return license_as if license_as and name == "LICENSE" else name

    try:
        extract(archive, dest, strip, rename, use_filter)
    except Exception:
        discard(dest, marker)
        raise
    if marker:
        with open(marker, "wb"):
            pass


def main(argv: Optional[List[str]] = None) -> int:
    """``ARCHIVE DEST STRIP MARKER LICENSE_AS``: the dry-run script's unpack step (exit 2: refused)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5 or not args[2].isdigit():
        sys.stderr.write("envdoctor: usage: extract ARCHIVE DEST STRIP MARKER LICENSE_AS\n")
        return 2
    archive, dest, strip, marker, license_as = args
    try:
        unpack(archive, dest, int(strip), marker, license_as)
    except UnsafeArchive as exc:
        sys.stderr.write(f"envdoctor: refused {os.path.basename(archive)}: {exc}; nothing from it was installed\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"envdoctor: could not unpack {archive}: {exc.strerror or exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Unpacking an archive that may be hostile, into a directory it must not leave.

Every member is first checked on its own (:func:`_checked_members`): absolute
names, names that climb out with ``..``, hard links, device files and FIFOs are
refused with a message naming the member.  Members are then unpacked one at a
time, each after a check against the directory *as it now is on disk*
(:func:`_check_on_disk`): the member's resolved path, and for a symbolic link
its resolved target, must stay inside the target directory.  Checking the
resolved paths (``os.path.realpath``) after the earlier members exist catches
what a lexical check misses, such as a chain of links that each look inside
(``l0 -> .``, ``l1 -> l0/..``) followed by a link or a file through the chain.

Where the running Python has ``tarfile``'s extraction filters (3.12, 3.8.17,
3.9.17, 3.10.12, 3.11.4 and later), each member is written by ``tarfile``
through the ``data`` filter; where it has none, by :func:`_write_member`, which
opens files with ``O_NOFOLLOW``/``O_EXCL`` and never writes through a link.
Finally every link in the tree is resolved again (:func:`_links_escaping`), so a
link whose meaning changed because of a later member is refused too.
"""

from __future__ import annotations

import os
import shutil
import tarfile
from typing import Any, Callable, List, Optional


class UnsafeArchive(Exception):
    """The archive holds a member that would leave the target directory or is not a plain file, dir or link."""


def has_data_filter() -> bool:
    """Whether this Python's ``tarfile`` has the extraction filters (tests emulate their absence)."""
    return hasattr(tarfile, "data_filter")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _checked_members(tf: tarfile.TarFile, strip: int, rename: Optional[Callable[[str], str]]) -> List[tarfile.TarInfo]:
    out = []
    for m in tf.getmembers():
        raw = m.name
        if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
            raise UnsafeArchive(f"archive member {raw!r} has an absolute name; refusing the archive")
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise UnsafeArchive(f"archive member {raw!r} climbs out with '..'; refusing the archive")
        if m.islnk():
            raise UnsafeArchive(f"archive member {raw!r} is a hard link (to {m.linkname!r}); NVIDIA's archives have "
                                "none, refusing the archive")
        if m.ischr() or m.isblk():
            raise UnsafeArchive(f"archive member {raw!r} is a device file; refusing the archive")
        if m.isfifo():
            raise UnsafeArchive(f"archive member {raw!r} is a FIFO; refusing the archive")
        if not (m.isfile() or m.isdir() or m.issym()):
            raise UnsafeArchive(f"archive member {raw!r} is not a file, directory or symbolic link; refusing it")
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
        raise UnsafeArchive(f"archive member {m.name!r} would be written through a link to {parent}, outside "
                            "the target directory; refusing the archive")
    if m.issym():
        target = os.path.realpath(os.path.join(parent, m.linkname))
        if not _inside(target, root):
            raise UnsafeArchive(f"archive member {m.name!r} is a link to {m.linkname!r}, which resolves to {target}, "
                                "outside the target directory; refusing the archive")
    elif not m.isdir():
        resolved = os.path.realpath(path)
        if not _inside(resolved, root):
            raise UnsafeArchive(f"archive member {m.name!r} would be written to {resolved}, outside the target "
                                "directory; refusing the archive")
    return path


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

    Raises :class:`UnsafeArchive` (nothing is left half-trusted: the caller removes ``dest``) or
    ``tarfile.TarError``/``OSError`` for an unreadable archive.
    """
    os.makedirs(dest, exist_ok=True)
    root = os.path.realpath(dest)
    filtered = has_data_filter() if use_filter is None else use_filter
    with tarfile.open(archive, "r:*") as tf:
        members = _checked_members(tf, strip, rename)
        for m in members:
            path = _check_on_disk(m, root)
            _clear(path, m)
            if filtered:
                kwargs: Any = {"filter": "data"}
                try:
                    tf.extract(m, root, set_attrs=not m.issym(), **kwargs)
                except tarfile.FilterError as exc:  # type: ignore[attr-defined]
                    raise UnsafeArchive(f"archive member {m.name!r} refused: {exc}") from None
            else:
                _write_member(tf, m, path)
    escaping = _links_escaping(root)
    if escaping:
        raise UnsafeArchive("archive links lead outside the target directory once unpacked ({}); refusing the "
                            "archive".format(", ".join(sorted(escaping)[:5])))

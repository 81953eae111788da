"""Writing a command's output: the one home of ``-o FILE`` (``check``, ``policy init``, ``snapshot``) and of
a bounded write to standard output.

What is at ``-o FILE`` decides how it is written:

* nothing yet, or a regular file (through any symbolic links: the link stays a link): written whole to a
  temporary file beside it and renamed over it, so a reader (node_exporter's textfile collector, NFD, a
  fleet's archive) sees the old file or the new one, never half of one; an existing file keeps its
  permissions (and, as root, its owner). A new file gets the permissions the umask gives, as a shell's
  ``>`` would. The directory must exist: none is created.
* a device, a FIFO or a socket (``/dev/null``, ``/dev/stdout``, a named pipe a collector reads): written
  into, never replaced. A FIFO nobody opens, or a reader that stops taking data, is given up on at the
  deadline.
* a directory: refused.

As root, a symbolic link another user owns is never followed (see :func:`refuse_foreign_links`).

Every failure is an :class:`OSError` whose ``strerror`` says why (``No space left on device`` for
``/dev/full``): the command turns it into one line and exit 2. Nothing here imports the rest of
envdoctor.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import time
from typing import Optional, Tuple

#: The longest a write into a FIFO, device or pipe may wait, when the caller gives no deadline.
DEFAULT_WAIT = 10.0
#: How often a FIFO with no reader yet is tried again.
_RETRY = 0.05
#: The most written at once into a pipe after select() said it can take data: a pipe that is not full
#: takes a page without blocking.
_CHUNK = 4096
#: Past its deadline, how long a reader that is still taking the output may pause before it is given up.
STALL = 2.0


def write_output(path: str, data: bytes, deadline: Optional[float] = None) -> None:
    """Write ``data`` to ``path`` (see the module's description); ``deadline`` (``time.monotonic()``) bounds
    the wait for a FIFO's, device's or pipe's reader (default: :data:`DEFAULT_WAIT` from now)."""
    if deadline is None:
        deadline = time.monotonic() + DEFAULT_WAIT
    if not path:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory (an empty name)", path)
    refuse_foreign_links(path)
    try:
        st: Optional[os.stat_result] = os.stat(path)  # follows links: /dev/stdout is a pipe or a terminal
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_into(path, data, deadline)
        return
    _replace(path, data, st)


def _replace(path: str, data: bytes, st: Optional[os.stat_result]) -> None:
    """A regular file (or none yet): written beside it and renamed over it; through a symbolic link, onto the
    file it points to."""
    real = os.path.realpath(path)
    directory = os.path.dirname(real)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory (%s does not exist)" % directory, path)
    fd, tmp = _temporary(real)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))  # an existing file keeps its permissions...
            if hasattr(os, "geteuid") and os.geteuid() == 0 and (st.st_uid, st.st_gid) != (0, 0):
                os.chown(tmp, st.st_uid, st.st_gid)  # ...and, written by root, its owner
        os.replace(tmp, real)
    except BaseException:  # a full disk, a signal (TERM ends the command): no half file left behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _temporary(real: str) -> Tuple[int, str]:
    """A new file beside ``real``, created with the permissions the umask gives (as ``>`` creates one)."""
    import secrets

    base = os.path.basename(real)
    for _ in range(100):
        tmp = os.path.join(os.path.dirname(real), ".%s.%s.tmp" % (base, secrets.token_hex(4)))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "cannot create a temporary file beside it", real)


def _write_into(path: str, data: bytes, deadline: float) -> None:
    """A device, FIFO or socket: opened without blocking (a FIFO with no reader yet answers ENXIO: tried
    again until the deadline) and written into, each wait bounded by the deadline."""
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    while True:
        try:
            fd = os.open(path, flags)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or not stat.S_ISFIFO(os.stat(path).st_mode):
                raise
            if time.monotonic() >= deadline:
                raise OSError(errno.ETIMEDOUT, "nobody opened the pipe for reading in time", path) from None
            time.sleep(_RETRY)
    try:
        write_all(fd, data, deadline, path)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes, deadline: float, name: str = "") -> None:
    """Write all of ``data`` to ``fd``. A reader that takes nothing is waited for until ``deadline``; one that is
    still taking the output then (a busy machine's slow reader of a large report) is followed for as long as it
    keeps taking some every :data:`STALL` seconds. ``fd`` may be blocking (standard output, which shares its mode
    with the shell): each write is then at most :data:`_CHUNK` bytes, which a pipe that select() calls writable
    takes without blocking."""
    view = memoryview(data)
    progress = time.monotonic()
    while view:
        left = max(deadline, progress + STALL) - time.monotonic()
        if left <= 0 or not select.select([], [fd], [], left)[1]:
            raise OSError(errno.ETIMEDOUT, "its reader stopped taking it before the time limit (%d of %d bytes "
                                           "written); read the output while envdoctor runs" % (
                                               len(data) - len(view), len(data)), name or None)
        try:
            n = os.write(fd, view[:_CHUNK])
        except (BlockingIOError, InterruptedError):
            continue
        if n:
            progress = time.monotonic()
        view = view[n:]


def refuse_foreign_links(path: str) -> None:
    """Run as root, never follow a symbolic link another user owns (in the path or its directories): in a
    world-writable directory (``/tmp/snap.json``) anyone could point it at ``/etc/shadow``, and root would
    overwrite that. PermissionError naming the link and its owner."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    current = os.path.abspath(path)
    seen = 0
    while seen < 40:
        seen += 1
        parts = current.split(os.sep)
        for i in range(2, len(parts) + 1):
            prefix = os.sep.join(parts[:i]) or os.sep
            try:
                st = os.lstat(prefix)
            except OSError:
                return  # not there (yet): nothing to follow
            if stat.S_ISLNK(st.st_mode):
                if st.st_uid != 0:
                    raise PermissionError(errno.EPERM, "refusing, as root, to follow a symbolic link owned by "
                                                       "uid %d" % st.st_uid, prefix)
                target = os.readlink(prefix)
                rest = os.sep.join(parts[i:])
                current = os.path.normpath(os.path.join(os.path.dirname(prefix), target, rest))
                break
        else:
            return

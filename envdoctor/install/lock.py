"""One install at a time per prefix: an ``fcntl`` lock on ``<prefix>.envdoctor-lock``.

The lock file beside the prefix holds who took it (process id, user, time, command), so a second
run can say who holds it instead of failing on the first run's half-made files.  The lock is
released by the kernel when the holder exits, however it exits; the file itself stays (removing
it would let a third run lock a different file than a waiting second one).
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import os
import sys
from typing import Optional


class Busy(Exception):
    """Another process holds the lock; the message says who."""


class PrefixLock:
    def __init__(self, prefix: str) -> None:
        self.path = prefix.rstrip("/") + ".envdoctor-lock"
        self.fd: Optional[int] = None

    def acquire(self) -> PrefixLock:
        parent = os.path.dirname(self.path) or "/"
        os.makedirs(parent, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise Busy(f"{self.path} is a symbolic link; refusing to use it as a lock (remove it)") from None
            raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            holder = _read(fd)
            os.close(fd)
            raise Busy("another envdoctor install is running into {} ({}); wait for it to finish, then run "
                       "this again".format(self.path[: -len(".envdoctor-lock")], holder or "holder unknown")) from None
        from .validate import shown_url

        who = "pid {}, user {}, since {}, command: {}".format(
            os.getpid(), _user(), datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            shown_url(" ".join(["envdoctor"] + sys.argv[1:]))[:300])  # a --mirror's credentials never shown
        os.ftruncate(fd, 0)
        os.pwrite(fd, (who + "\n").encode("utf-8", "replace"), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            os.close(self.fd)  # closing releases the flock
            self.fd = None

    def __enter__(self) -> PrefixLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 1000, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid())

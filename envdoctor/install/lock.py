"""One install at a time per prefix: an ``fcntl`` lock on a file named after the prefix, kept where it does
not litter: the user's runtime directory (``$XDG_RUNTIME_DIR/envdoctor/locks``, a tmpfs emptied at logout),
else the user's cache directory (``$XDG_CACHE_HOME/envdoctor/locks``, ``~/.cache/envdoctor/locks``), never
beside the prefix in the user's directory.

The lock file holds who took it (process id, user, time, command), so a second run can say who holds it
instead of failing on the first run's half-made files.  It is named by the prefix's real path (the same file
for ``~/cuda`` and ``/home/u/cuda``), and released by the kernel when the holder exits, however it exits; the
file itself stays (removing it would let a third run lock a different file than a waiting second one).  Runs
of one user exclude each other; another user's run into the same prefix is told apart by the staging
directory, which is never another user's (``cuda_redist``).
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import os
import sys
from typing import Dict, Optional


class Busy(Exception):
    """Another process holds the lock; the message says who."""


def lock_dir(environ: Optional[Dict[str, str]] = None) -> str:
    """Where the locks live: the user's runtime directory when it is theirs, else their cache directory."""
    env = os.environ if environ is None else environ
    run = env.get("XDG_RUNTIME_DIR") or ""
    try:
        if os.path.isabs(run) and os.path.isdir(run) and os.stat(run).st_uid == os.getuid():
            return os.path.join(run, "envdoctor", "locks")
    except OSError:
        pass
    cache = env.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "envdoctor", "locks")


def lock_path(prefix: str, environ: Optional[Dict[str, str]] = None) -> str:
    """The lock file of ``prefix``: its last component (for a reader) and a digest of its real path."""
    import hashlib

    real = os.path.realpath(prefix.rstrip("/") or "/")
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real))[:40] or "root"
    return os.path.join(lock_dir(environ), "%s-%s.lock" % (name, hashlib.sha256(real.encode("utf-8", "replace"))
                                                          .hexdigest()[:16]))


class PrefixLock:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.rstrip("/") or "/"
        self.path = lock_path(self.prefix)
        self.fd: Optional[int] = None

    def acquire(self) -> PrefixLock:
        parent = os.path.dirname(self.path) or "/"
        os.makedirs(parent, mode=0o700, exist_ok=True)
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
                       "this again".format(self.prefix, holder or "holder unknown")) from None
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

"""A forked copy of this process that does one job and hands back its answer as bytes.

The NVML query runs in a child made by ``fork()`` (no exec, so no second
interpreter start-up): a wedged GPU or driver can hang or crash whoever asks
NVML, and that must never be the tool.

The contract: fork only while this process has one thread (where
fork is safe); the child never returns into the caller's code (it leaves with
``os._exit``, so no atexit handler or buffered output of the parent runs
twice); the parent reads the answer until a deadline, then kills the child;
whatever goes wrong in the child, the parent gets ``None`` and a reason, never
an exception.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from typing import Callable, List, Optional, Tuple

#: work(job) -> answer.  ``job`` is None for a child started without one.
Work = Callable[[Optional[bytes]], bytes]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int) -> bytes:
    chunks: List[bytes] = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def can_fork() -> bool:
    """Fork is available and safe now (Linux, a single thread)."""
    return hasattr(os, "fork") and sys.platform.startswith("linux") and threading.active_count() == 1


class Forked:
    """One child process: ``start`` it, then ``result`` (or ``cancel``)."""

    def __init__(self, pid: int, answer_fd: int) -> None:
        self.pid = pid
        self.started = time.monotonic()
        self._answer_fd: Optional[int] = answer_fd
        self._reaped = False

    @classmethod
    def start(cls, work: Work) -> Optional[Forked]:
        """Fork a child running ``work``; None when fork is unavailable, unsafe or fails."""
        if not can_fork():
            return None
        try:
            answer_r, answer_w = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(answer_r)
            os.close(answer_w)
            return None
        if pid == 0:  # the child: never returns
            try:
                os.close(answer_r)
                _write_all(answer_w, work(None))
            except BaseException:  # noqa: BLE001 - the parent sees no answer and says so
                pass
            finally:
                os._exit(0)
        os.close(answer_w)
        return cls(pid, answer_r)

    def result(self, deadline: Optional[float]) -> Tuple[Optional[bytes], str]:
        """The child's answer, read until EOF or ``deadline`` (a ``time.monotonic()`` value).

        Returns (answer, "") on success, otherwise (None, why) with why one of
        ``"timed_out"`` (the child was killed), ``"signal N"`` (it crashed) or
        ``"no answer"`` (it exited without writing one).
        """
        fd = self._answer_fd
        if fd is None:
            return None, "no answer"
        self._answer_fd = None
        chunks: List[bytes] = []
        timed_out = False
        try:
            while True:
                budget = None if deadline is None else max(0.0, deadline - time.monotonic())
                ready, _, _ = select.select([fd], [], [], budget)
                if not ready:
                    timed_out = True
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            pass
        finally:
            os.close(fd)
        if timed_out:
            self.kill()
        status = self._reap()
        if timed_out:
            return None, "timed_out"
        if chunks:
            return b"".join(chunks), ""
        if status is not None and os.WIFSIGNALED(status):
            return None, "signal %d" % os.WTERMSIG(status)
        return None, "no answer"

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def cancel(self) -> None:
        """Let the child go without an answer (it has nothing to clean up: kill it and reap it)."""
        self.kill()
        fd, self._answer_fd = self._answer_fd, None
        if fd is not None:
            os.close(fd)
        self._reap()

    def _reap(self) -> Optional[int]:
        if self._reaped:
            return None
        self._reaped = True
        try:
            return os.waitpid(self.pid, 0)[1]
        except OSError:
            return None

"""A forked copy of this process that does one job and hands back its answer as bytes.

The NVML query runs in a child made by ``fork()`` (no exec, so no
second interpreter start-up): it must not be able to hang
or crash the tool.

The contract: fork only while this process has one thread (where
fork is safe); the child never returns into the caller's code (it leaves with
``os._exit``, so no atexit handler or buffered output of the parent runs
twice); the parent reads the answer until a deadline, then kills the child;
whatever goes wrong in the child, the parent gets ``None`` and a reason, never
an exception.
"""

from __future__ import annotations

import mmap
import os
import select
import signal
import struct
import sys
import threading
import time
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

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


#: In a child: the descriptor its answer goes to (a work function may stream through it with
#: :func:`stream`; whatever it returns is written after).
child_answer_fd: Optional[int] = None

#: True in a child made here (its own children stay in its process group).
_in_child = False

#: Children started and not yet reaped, by pid: ended by :func:`end_children` (signals, exit).
_children: Dict[int, Forked] = {}

#: How long a killed child is given to be reaped before it is abandoned: a child stuck in the kernel
#: (state D: a wedged driver) cannot die until the kernel lets go of it, and nothing may wait for that.
REAP_GRACE = 0.2


#: What a child streams goes into memory it shares with its parent (an anonymous shared mapping made before
#: the fork), not through the pipe: thousands of small answers (a 64-GPU board's) cost no system call and
#: wake the parent once, at the end, yet what was written survives the child's hang or crash, as through
#: the pipe. The header holds the length written and when the last piece was (``time.monotonic()``, one
#: clock for every process); past the mapping's size the rest goes through the pipe, after it in order.
SHARED_BYTES = 16 << 20
_HEADER = struct.Struct("<Qd")
#: In a child: the shared mapping, and whether it filled up (from then on everything goes through the pipe).
_child_shared: Optional[mmap.mmap] = None
_child_overflowed = False


def stream(data: bytes) -> None:
    """In a child: send part of the answer now, so what was answered survives a later hang."""
    global _child_overflowed
    if child_answer_fd is None:
        return
    shared = _child_shared
    if shared is not None and not _child_overflowed:
        start = _HEADER.unpack_from(shared, 0)[0]
        end = start + len(data)
        if _HEADER.size + end <= len(shared):
            shared[_HEADER.size + start:_HEADER.size + end] = data
            _HEADER.pack_into(shared, 0, end, time.monotonic())  # after the data: a reader never sees it half
            return
        _child_overflowed = True
    _write_all(child_answer_fd, data)


def _shared_map() -> Optional[mmap.mmap]:
    """An anonymous mapping shared with the children forked after it (pages cost memory only once written)."""
    try:
        return mmap.mmap(-1, SHARED_BYTES, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_ANONYMOUS", 0x20))
    except (OSError, ValueError, AttributeError):
        return None


def _isolate(keep: Sequence[int]) -> None:
    """In a new child: stdin, stdout and stderr on /dev/null and every other descriptor closed but
    ``keep``, so a child that hangs holds no pipe of the caller's (``$(envdoctor ...)`` would wait for
    it) and nothing the NVIDIA library prints reaches envdoctor's output."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if devnull != fd:
            os.dup2(devnull, fd)
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def process_state(pid: int) -> Tuple[str, float, float]:
    """(state letter from /proc/PID/stat, CPU seconds used, seconds spent waiting for a CPU from
    /proc/PID/schedstat, -1 when the kernel does not say), or ("?", 0.0, -1.0) when unreadable."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as fh:
            text = fh.read().decode("ascii", "replace")
        fields = text[text.rindex(")") + 2:].split()
        ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        state, cpu = fields[0], (int(fields[11]) + int(fields[12])) / float(ticks or 100)
    except (OSError, ValueError, IndexError):
        return "?", 0.0, -1.0
    waiting = _cpu_wait("/proc/%d" % pid)
    return state, cpu, waiting / 1e9 if waiting >= 0 else -1.0


#: How long before the deadline a query that has not answered looks at the driver's other callers (see
#: :func:`driver_users`), and the most time that look may take (on a starved machine it sees what it could).
QUEUE_WINDOW = 0.3
QUEUE_SCAN_BUDGET = 0.2

#: (pid, start time) -> (state letter, nanoseconds spent waiting for a CPU so far or -1), of processes
#: running or stuck inside the NVIDIA driver.
Users = Dict[Tuple[int, bytes], Tuple[str, int]]


def _stat(pid_dir: str) -> Optional[Tuple[str, bytes]]:
    """(state letter, start time) from a /proc/PID/stat, None when it is gone or unreadable."""
    try:
        with open(os.path.join(pid_dir, "stat"), "rb") as fh:
            text = fh.read(1024)
        fields = text[text.rindex(b")") + 2:].split()
        return fields[0].decode("ascii", "replace"), fields[19]
    except (OSError, ValueError, IndexError):
        return None


def _cpu_wait(pid_dir: str) -> int:
    """Nanoseconds the process has spent runnable but waiting for a CPU (/proc/PID/schedstat), -1 unknown."""
    try:
        with open(os.path.join(pid_dir, "schedstat"), "rb") as fh:
            return int(fh.read(256).split()[1])  # the first field (time on a CPU) reads 0 on some kernels
    except (OSError, ValueError, IndexError):
        return -1


def _in_driver(pid_dir: str) -> bool:
    """The process waits on one of the NVIDIA driver's locks (its wait channel, where the kernel names it),
    or holds an NVIDIA device file open."""
    try:
        with open(os.path.join(pid_dir, "wchan"), "rb") as fh:
            if fh.read(128).startswith(b"os_acquire_"):
                return True
    except OSError:
        pass
    fd_dir = os.path.join(pid_dir, "fd")
    try:
        for fd in os.listdir(fd_dir)[:4096]:
            if os.readlink(os.path.join(fd_dir, fd)).startswith("/dev/nvidia"):
                return True
    except OSError:
        pass
    return False


def driver_users(proc: str = "/proc", budget: float = QUEUE_SCAN_BUDGET) -> Tuple[Optional[Users], bool]:
    """(the processes running (R) or stuck in the kernel (D) that are inside the NVIDIA driver (see
    :func:`_in_driver`), this one excepted, whether the look was complete). The look takes at most ``budget``
    seconds, newest processes first: a machine so loaded that this process cannot look at /proc within it
    is starved, and the look says so (partial). None when ``proc`` cannot be listed. Only processes whose
    wait channel and descriptors this user may read are seen (all of them as root)."""
    until = time.monotonic() + budget
    try:
        names = sorted((n for n in os.listdir(proc) if n.isdigit()), key=int, reverse=True)
    except OSError:
        return None, True
    found: Users = {}
    me = str(os.getpid())
    for name in names:
        if time.monotonic() > until:
            return found, False
        if name == me:
            continue
        pid_dir = os.path.join(proc, name)
        seen = _stat(pid_dir)
        if seen is not None and seen[0] in ("R", "D") and _in_driver(pid_dir):
            found[(int(name), seen[1])] = (seen[0], _cpu_wait(pid_dir) if seen[0] == "R" else -1)
    return found, True


def queue_progress(before: Optional[Users], child: int, elapsed: float, proc: str = "/proc",
                   complete: bool = True) -> Tuple[int, bool]:
    """(how many other processes were inside the NVIDIA driver beside ``child`` at the look ``elapsed``
    seconds ago, whether the driver was serving them since rather than hung). A look that could not finish
    in its time (``complete`` false) was starved itself: the machine is overloaded, whatever it saw.

    Many callers queue in the kernel one behind the other (state D) while the driver serves them one at a
    time, the one holding the driver's lock runnable (R) but, on a loaded machine, waiting for a CPU. Served
    is: one of them ended, one stuck in the kernel then is not now (``child`` included), or one running in
    the driver spent most of the time since waiting for a CPU (the driver's work starved, not hung). A hung
    driver lets nobody through, and a process that only went on running or went to sleep proves nothing.
    (0, False) when nothing was seen."""
    if not before:
        return 0, not complete
    moved = not complete
    for (pid, started), (state, waited) in before.items():
        pid_dir = os.path.join(proc, str(pid))
        now = _stat(pid_dir)
        if now is None or now[1] != started:
            moved = moved or pid != child  # ended (the query itself is killed, not through)
        elif state == "D" and now[0] != "D":
            moved = True
        elif state == "R" and waited >= 0 and elapsed > 0:
            waiting = _cpu_wait(pid_dir)
            moved = moved or (waiting >= 0 and (waiting - waited) / 1e9 >= 0.5 * elapsed)
    return len([key for key in before if key[0] != child]), moved


def end_children() -> None:
    """Kill every child still running (a signal ends the command); reap those that can be reaped."""
    for child in list(_children.values()):
        child.kill()
        child._reap()


#: Process groups of commands running now (:func:`envdoctor.host.live.run_command` starts each in its
#: own session): what a signal must end, whichever thread started them.
running_groups: Set[int] = set()

_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


class Interrupted(BaseException):
    """A signal ended the command (after its children and commands were ended). Not a
    KeyboardInterrupt, which click turns into "Aborted!" and exit 1."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def clean_up() -> None:
    """End every child and running command."""
    end_children()
    for group in list(running_groups):
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def _on_signal(signum: int, frame: object) -> None:
    clean_up()
    raise Interrupted(signum)


def install_signal_handlers(keep_int: bool = False) -> None:
    """TERM, INT and HUP end the command cleanly (from the main thread only, where Python runs handlers).
    ``keep_int`` leaves SIGINT as Python's KeyboardInterrupt, for a command that handles it itself
    (``install`` rolls back and says how to resume)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in _SIGNALS:
        if keep_int and name == "SIGINT":
            continue
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, _on_signal)
            except (OSError, ValueError):
                pass


def _forget_parent() -> None:
    """In a new child: the parent's children and commands are not its own to end."""
    _children.clear()
    running_groups.clear()
    reset_signals()


def reset_signals() -> None:
    """TERM, INT and HUP back to their default actions (in a forked helper process, which has nothing of its
    own to clean up and must end when its parent ends it)."""
    for name in _SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass


def can_fork() -> bool:
    """Fork is available and safe now (Linux, a single thread)."""
    return hasattr(os, "fork") and sys.platform.startswith("linux") and threading.active_count() == 1


class Forked:
    """One child process: ``start`` it, optionally ``send`` it a job, then ``result``."""

    def __init__(self, pid: int, answer_fd: int, job_fd: Optional[int],
                 shared: Optional[mmap.mmap] = None) -> None:
        self.pid = pid
        self._shared = shared
        self.started = time.monotonic()
        self._answer_fd: Optional[int] = answer_fd
        self._job_fd = job_fd
        self._reaped = False
        #: What the child had sent when it was cut off at the deadline (see :func:`stream`).
        self.partial = b""
        #: The child's (state, CPU seconds, seconds waiting for a CPU) when the deadline came (see
        #: :func:`process_state`): "D" is stuck in the kernel, "R" runnable, "S" asleep.
        self.state_at_deadline: Tuple[str, float, float] = ("", 0.0, -1.0)
        #: When the child's last answer arrived, and how long it had been silent when the deadline came (a
        #: query still answering, only slowly, is a busy driver; a hung one stops answering).
        self.last_answer = self.started
        self.quiet_at_deadline = -1.0
        #: At the deadline, when the child was stuck in the kernel: how many other processes were stuck in the
        #: NVIDIA driver beside it, and whether the driver let any of them out meanwhile (see :func:`driver_queue`).
        self.queue_at_deadline: Tuple[int, bool] = (0, False)
        #: The first look at the driver's queue, QUEUE_WINDOW before the deadline (the second is at it).
        self._queue_before: Optional[Users] = None
        self._queue_looked = 0.0
        self._queue_complete = True
        #: True when it could not be reaped (stuck in the kernel) and was left behind.
        self.abandoned = False
        _children[pid] = self

    @classmethod
    def start(cls, work: Work, takes_job: bool = False,
              prepare: Optional[Callable[[], None]] = None) -> Optional[Forked]:
        """Fork a child running ``work``; None when fork is unavailable, unsafe or fails.

        With ``takes_job`` the child first runs ``prepare`` (if given), then
        waits for :meth:`send` (or for the parent to go away or cancel it:
        then it leaves without doing anything).
        """
        if not can_fork():
            return None
        fds: List[int] = []
        try:
            answer_r, answer_w = os.pipe()
            fds += [answer_r, answer_w]
            if takes_job:
                job_r, job_w = os.pipe()
                fds += [job_r, job_w]
            shared = _shared_map()
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            return None
        if pid == 0:  # the child: never returns
            try:
                global child_answer_fd, _in_child, _child_shared, _child_overflowed
                child_answer_fd = answer_w
                _child_shared, _child_overflowed = shared, False
                if not _in_child:
                    # Its own process group, which its own children (the early worker's NVML query) join:
                    # killing the group ends them all, and a terminal's ^C goes to envdoctor alone.
                    try:
                        os.setpgid(0, 0)
                    except OSError:
                        pass
                _in_child = True
                _forget_parent()
                _isolate(keep=(answer_w, job_r) if takes_job else (answer_w,))
                job = None
                if takes_job:
                    if prepare is not None:
                        prepare()
                    job = _read_all(job_r)
                    os.close(job_r)
                    if not job:  # the parent cancelled it, or died
                        os._exit(0)
                _write_all(answer_w, work(job))
            except BaseException:  # noqa: BLE001 - the parent sees no answer and says so
                pass
            finally:
                os._exit(0)
        os.close(answer_w)
        if takes_job:
            os.close(job_r)
            return cls(pid, answer_r, job_w, shared)
        return cls(pid, answer_r, None, shared)

    def _streamed(self) -> bytes:
        """What the child has streamed into the shared mapping so far; its last piece's time is noted."""
        shared = self._shared
        if shared is None:
            return b""
        try:
            length, when = _HEADER.unpack_from(shared, 0)
            data = shared[_HEADER.size:_HEADER.size + min(length, len(shared) - _HEADER.size)]
        except (ValueError, struct.error):  # closed
            return b""
        if length:
            self.last_answer = max(self.last_answer, when)
        return data

    def _release(self) -> bytes:
        """The streamed bytes, and the mapping given back (once the child is gone or no longer listened to)."""
        data = self._streamed()
        if self._shared is not None:
            try:
                self._shared.close()
            except (OSError, ValueError, BufferError):
                pass
            self._shared = None
        return data

    def send(self, job: bytes) -> bool:
        """Hand the child its job (once).  False if it is already gone."""
        if self._job_fd is None:
            return False
        fd, self._job_fd = self._job_fd, None
        try:
            _write_all(fd, job)
            return True
        except OSError:  # EPIPE: the child died while warming up
            return False
        finally:
            os.close(fd)

    def result(self, deadline: Optional[float]) -> Tuple[Optional[bytes], str]:
        """The child's answer, read until EOF or ``deadline`` (a ``time.monotonic()`` value).

        Returns (answer, "") on success, otherwise (None, why) with why one of
        ``"timed_out"`` (the child was killed; what it had sent is in :attr:`partial`), ``"signal N"``
        or ``"exit code N"`` (it crashed) or ``"no answer"`` (it exited without writing one); a child
        that sent something and then crashed gives (what it sent, "signal N" / "exit code N").
        """
        fd = self._answer_fd
        if fd is None:
            self._release()
            return None, "no answer"
        self._answer_fd = None
        chunks: List[bytes] = []
        timed_out = False
        watch_at = None if deadline is None else deadline - QUEUE_WINDOW
        try:
            while True:
                now = time.monotonic()
                if watch_at is not None and now >= watch_at:
                    # No answer yet, the deadline near: look at who waits in the driver now, to tell at the
                    # deadline whether the driver let anyone out meanwhile (busy) or nobody (hung).
                    watch_at = None
                    self._queue_before, self._queue_complete = driver_users()
                    self._queue_looked = time.monotonic()
                    continue
                until = deadline if watch_at is None else watch_at
                budget = None if until is None else max(0.0, until - now)
                ready, _, _ = select.select([fd], [], [], budget)
                if not ready:
                    if watch_at is not None:
                        continue
                    timed_out = True
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
                self.last_answer = time.monotonic()
        except OSError:
            pass
        finally:
            os.close(fd)
        streamed = self._streamed()  # before the kill: what it had written when the deadline came
        if streamed:
            chunks.insert(0, streamed)
        if timed_out:
            self.partial = b"".join(chunks)
            self.quiet_at_deadline = time.monotonic() - self.last_answer
            self.state_at_deadline = process_state(self.pid)
            if self._queue_before is not None and self.state_at_deadline[0] == "D":
                self.queue_at_deadline = queue_progress(self._queue_before, self.pid,
                                                        time.monotonic() - self._queue_looked,
                                                        complete=self._queue_complete)
            self.kill()
        status = self._reap()
        self._release()
        if timed_out:
            return None, "timed_out"
        died = ""
        if status is not None and os.WIFSIGNALED(status):
            died = "signal %d" % os.WTERMSIG(status)
        elif status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
            died = "exit code %d" % os.WEXITSTATUS(status)
        if chunks:
            return b"".join(chunks), died  # what it sent, and how it ended when that was not cleanly
        return None, died or "no answer"

    def kill(self) -> None:
        """SIGKILL the child and what it started (its process group, when it leads one)."""
        try:
            if os.getpgid(self.pid) == self.pid:
                os.killpg(self.pid, signal.SIGKILL)
                return
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def cancel(self) -> None:
        """Let the child go without an answer (it has nothing to clean up: kill it and reap it)."""
        self.kill()
        self._release()
        for attr in ("_job_fd", "_answer_fd"):
            fd = getattr(self, attr)
            if fd is not None:
                os.close(fd)
                setattr(self, attr, None)
        self._reap()

    def _reap(self, grace: float = REAP_GRACE) -> Optional[int]:
        """The child's exit status, waiting at most ``grace`` seconds (never blocking longer: a child
        stuck in the kernel is abandoned, marked so, rather than waited for)."""
        if self._reaped:
            return None
        end = time.monotonic() + grace
        delay = 0.001
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except OSError:  # not our child any more (reaped elsewhere)
                pid, status = self.pid, None  # type: ignore[assignment]
            if pid == self.pid:
                self._reaped = True
                _children.pop(self.pid, None)
                return status
            if time.monotonic() >= end:
                self.abandoned = True
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

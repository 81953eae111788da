"""Writing a report into a pipe (``envdoctor diagnose | consumer``): a reader that stops taking the output is
given up about its deadline, one that is slow but still reading on a busy machine gets all of it.

A real pipe between two threads of this process; no stand-in."""
import errno
import os
import threading
import time
from typing import Optional

import pytest

from envdoctor.output import STALL, write_all


def _reader(fd: int, got: list, pause: float, stop_after: int = -1,
            writer_done: Optional[threading.Event] = None) -> None:
    """Read 4 KiB at a time, ``pause`` seconds apart; after ``stop_after`` bytes, stop reading and keep the pipe
    open until the writer is done (at most ``STALL * 5`` seconds)."""
    total = 0
    while True:
        if 0 <= stop_after <= total:
            # then closes: a write still waiting would see a broken pipe
            (writer_done or threading.Event()).wait(STALL * 5)
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        total += len(chunk)
        got.append(chunk)
        time.sleep(pause)
    os.close(fd)


def test_a_slow_reader_still_reading_past_the_deadline_gets_the_whole_report():
    """CI's loaded machine read a 5.5 MB report in 6.7 s; the write was given up after 2.2 MB because the
    run's deadline had passed, though the reader never stopped."""
    r, w = os.pipe()
    data = os.urandom(1024 * 1024)
    got: list = []
    t = threading.Thread(target=_reader, args=(r, got, 0.002))
    t.start()
    try:
        write_all(w, data, time.monotonic() + 0.05, "standard output")  # deadline long past before the end
    finally:
        os.close(w)
        t.join()
    assert b"".join(got) == data


def test_a_reader_that_stops_taking_the_output_is_given_up():
    r, w = os.pipe()
    data = os.urandom(1024 * 1024)
    got: list = []
    done = threading.Event()
    t = threading.Thread(target=_reader, args=(r, got, 0.0, 200 * 1024, done))
    t.start()
    start = time.monotonic()
    try:
        with pytest.raises(OSError) as exc:
            write_all(w, data, start + 0.2, "standard output")
    finally:
        done.set()
        os.close(w)
        t.join()
    # given up while the reader still held the pipe open (a later give-up would be EPIPE, or a hang)
    assert exc.value.errno == errno.ETIMEDOUT
    assert "reader stopped taking it" in exc.value.strerror

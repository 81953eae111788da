"""What a forked child streams reaches the parent whole and in order: through the memory the two share,
through the pipe once that is full, and what came before a hang or a crash survives it (the NVML query's
contract: the answers before a call that hung are kept, and that call is named).

No stand-in: real forked children of this test process, streaming real bytes."""

from __future__ import annotations

import os
import time
from typing import Optional

import pytest

from envdoctor import forked

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="needs fork")


def _lines(n: int, start: int = 0) -> bytes:
    return b"".join(b'{"ask": "device.%d.name"}\n' % i for i in range(start, start + n))


def test_everything_streamed_comes_back_in_order() -> None:
    def work(job: Optional[bytes]) -> bytes:
        for i in range(2000):
            forked.stream(_lines(1, i))
        return b'{"done": true}\n'

    child = forked.Forked.start(work)
    assert child is not None
    answer, why = child.result(time.monotonic() + 30)
    assert why == ""
    assert answer == _lines(2000) + b'{"done": true}\n'


def test_past_the_shared_memory_the_rest_goes_through_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "SHARED_BYTES", 4096)  # a few lines fill it

    def work(job: Optional[bytes]) -> bytes:
        for i in range(500):
            forked.stream(_lines(1, i))
        return b"end\n"

    child = forked.Forked.start(work)
    assert child is not None
    answer, why = child.result(time.monotonic() + 30)
    assert why == ""
    assert answer == _lines(500) + b"end\n"


def test_what_came_before_a_hang_survives_it_and_says_when_it_came() -> None:
    def work(job: Optional[bytes]) -> bytes:
        forked.stream(_lines(3))
        time.sleep(60)  # the call that hangs
        return b"never"

    child = forked.Forked.start(work)
    assert child is not None
    started = time.monotonic()
    answer, why = child.result(started + 1.0)
    assert (answer, why) == (None, "timed_out")
    assert child.partial == _lines(3)
    # the last answer came at the start, not at the deadline: the child went quiet (hung), it was not answering
    assert child.quiet_at_deadline >= 0.5


def test_what_came_before_a_crash_survives_it() -> None:
    def work(job: Optional[bytes]) -> bytes:
        forked.stream(_lines(2))
        os.kill(os.getpid(), 9)
        return b"never"

    child = forked.Forked.start(work)
    assert child is not None
    answer, why = child.result(time.monotonic() + 30)
    assert answer == _lines(2)
    assert why == "signal 9"

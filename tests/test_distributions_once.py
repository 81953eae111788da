"""The installed distributions are worked out once per run, by one reader: six probes ask, often at the same
moment, and a scan of a thousand distributions holds the interpreter for tens of milliseconds. A probe that asks
meanwhile waits for that answer, never past the host's bound (a first reader stuck on a hung listing)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, List

from envdoctor.host.base import DirResult

from .conftest import make_host

SITE = "/usr/lib/python3/dist-packages"
NAMES = ["numpy-1.26.4.dist-info", "torch-2.3.0.dist-info", "PyYAML-6.0.1.egg-info", "six.py"]


def _host(delay: float = 0.0, hang: Any = None):
    host = make_host(dirs={SITE: NAMES}, python={"executable": "/usr/bin/python3", "version": "3.10.12",
                                                "implementation": "cpython", "prefix": "/usr", "base_prefix": "/usr",
                                                "sys_path": [SITE]})
    listed: Counter = Counter()
    real = host.list_dir

    def list_dir(path: str) -> DirResult:
        listed[path] += 1
        if hang is not None and listed[path] == 1:
            hang.wait(10)
        time.sleep(delay)
        return real(path)

    host.list_dir = list_dir  # type: ignore[method-assign]
    return host, listed


def _ask_together(host, n: int = 8) -> List[Any]:
    got: List[Any] = [None] * n
    start = threading.Barrier(n)

    def ask(i: int) -> None:
        start.wait()
        got[i] = [d.key for d in host.distributions()]

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return got


def test_probes_asking_together_share_one_scan():
    host, listed = _host(delay=0.05)
    got = _ask_together(host)
    assert got == [["numpy", "pyyaml", "torch"]] * 8
    assert listed[SITE] == 1


def test_a_stuck_first_reader_holds_the_others_only_as_long_as_the_host_allows():
    hang = threading.Event()
    host, listed = _host(hang=hang)
    host.wait_budget = lambda: 0.2  # type: ignore[method-assign]
    first = threading.Thread(target=host.distributions)
    first.start()
    while not listed[SITE]:
        time.sleep(0.001)
    began = time.monotonic()
    assert [d.key for d in host.distributions()] == ["numpy", "pyyaml", "torch"]  # read for itself
    assert time.monotonic() - began < 5  # the bound, not the stuck reader's hang
    hang.set()
    first.join(10)

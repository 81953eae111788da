"""How the probes of one run are scheduled. A replayed snapshot answers every read from memory: its probes run one
after another in one thread (side by side they only took turns at the interpreter, which cost twice the work),
each after the probes it waits for, and the caller's deadline still ends the run. This machine's probes wait on
files and programs: each runs in a thread of its own, so that one hung read holds up no other probe."""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Tuple

import pytest

from envdoctor import probes
from envdoctor.facts import ok
from envdoctor.host.live import LiveHost

from .conftest import make_host

MODULE = (__name__,)


@pytest.fixture
def registry(monkeypatch):
    """A registry of its own for the probes a test defines (here, in this module), emptied afterwards."""
    monkeypatch.setattr(probes, "_REGISTRY", dict(probes._REGISTRY))
    monkeypatch.setattr(probes, "_IN_MODULES", {})
    monkeypatch.setattr(probes, "_PRODUCERS", {})
    return probes


def _define(ran: List[str], threads: Dict[str, Tuple[threading.Thread, str]], spin: Dict[str, float]):
    """Three probes in report order first, second, third; first waits for third (declared with needs=)."""

    def body(name: str, wait_for: str = ""):
        def fn(ctx):
            threads[name] = (threading.current_thread(), threading.current_thread().name)
            got = ctx.facts_of(wait_for).value("schedule." + wait_for) if wait_for else None
            end = time.monotonic() + spin.get(name, 0.0)
            while time.monotonic() < end:
                pass
            ran.append(name)
            yield ok("schedule." + name, "%s saw %s" % (name, got), "test", name)

        fn.__module__ = __name__
        return fn

    probes.register("first", "first", 1, produces=("schedule.first",), needs=("third",))(body("first", "third"))
    probes.register("second", "second", 2, produces=("schedule.second",))(body("second"))
    probes.register("third", "third", 3, produces=("schedule.third",))(body("third"))


def test_a_replay_runs_its_probes_in_one_thread_each_after_those_it_waits_for(registry):
    ran: List[str] = []
    threads: Dict[str, Tuple[threading.Thread, str]] = {}
    _define(ran, threads, {})
    results = probes.run_probes(make_host(), modules=MODULE)
    assert [r.name for r in results] == ["first", "second", "third"]  # the report's order is kept
    assert ran == ["third", "first", "second"]
    assert len({thread for thread, _name in threads.values()}) == 1
    assert threading.current_thread() not in {thread for thread, _name in threads.values()}
    assert all(name == "probe-" + probe for probe, (_ident, name) in threads.items())
    by_name = {r.name: r for r in results}
    assert by_name["first"].facts[0].value == "first saw third saw None"
    assert all(r.status == "ok" for r in results)


def test_a_replay_probe_still_running_at_the_deadline_is_reported_and_the_run_ends(registry):
    ran: List[str] = []
    threads: Dict[str, Tuple[threading.Thread, str]] = {}
    _define(ran, threads, {"third": 1.5})
    start = time.monotonic()
    results = probes.run_probes(make_host(), deadline=start + 0.3, modules=MODULE)
    assert time.monotonic() - start < 1.2
    by_name = {r.name: r for r in results}
    assert by_name["third"].status == "timed_out"
    assert "time limit" in (by_name["third"].error or "")


def test_this_machines_probes_each_run_in_a_thread_of_their_own(registry):
    ran: List[str] = []
    threads: Dict[str, Tuple[threading.Thread, str]] = {}
    _define(ran, threads, {})
    results = probes.run_probes(LiveHost(timeout=5), modules=MODULE)
    assert {r.name: r.facts[0].value for r in results}["first"] == "first saw third saw None"
    assert len({thread for thread, _name in threads.values()}) == 3


def test_needs_first_keeps_report_order_otherwise():
    specs = {s.name: s for s in probes.probes_in(probes.PROBE_MODULES)}
    ordered = probes._needs_first(list(specs.values()))
    assert sorted(s.name for s in ordered) == sorted(specs)
    position = {s.name: i for i, s in enumerate(ordered)}
    for spec in ordered:
        for need in spec.needs:
            assert position[need] < position[spec.name], (spec.name, need)

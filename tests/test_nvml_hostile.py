"""A driver that hangs, crashes, prints or freezes: envdoctor ends in time, keeps what was answered,
names the call that hung, and never lets the NVIDIA library's output or a stuck child reach the
caller. End to end (a real `envdoctor` process) against the fake libnvidia-ml.so.1 (tests/fakenvml),
built here with the system compiler; the H100 answers are from real machines (tests/fakenvml/h100.json)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from envdoctor.host.live import classify_timeout

from .fakenvml.build import fake_env, load_answers, write_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Python's own start-up and the imports of a cold `envdoctor` process on a busy 2-core test machine:
#: what a run may take beyond its --timeout plus the promised second.
STARTUP = 3.0



def run(lib, answers, tmp_path, *args, timeout=60, env_extra=None):
    path = write_answers(answers, str(tmp_path / "answers.txt"))
    env = dict(fake_env(lib, path), **(env_extra or {}))
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), env=env, capture_output=True,
                       cwd=ROOT, timeout=timeout)
    return r, time.monotonic() - start


def h100(**extra):
    doc = dict(load_answers("h100.json"))
    doc.update(extra)
    return doc


def facts_of(stdout):
    doc = json.loads(stdout)
    return {f["key"]: f for p in doc["probes"] for f in p["facts"]}, doc


def test_a_hang_in_a_late_call_keeps_the_earlier_answers_and_names_the_call(fake_lib, tmp_path):
    # nvmlDeviceGetTemperature is one of the last calls asked of each GPU.
    r, took = run(fake_lib, h100(**{"device.0.temperature.hang_seconds": 60}), tmp_path,
                  "diagnose", "--format", "json", "--timeout", "2")
    assert took < 2 + 1 + STARTUP, took
    facts, doc = facts_of(r.stdout)
    assert facts["gpu.0.name"]["value"] == "NVIDIA H100 80GB HBM3"  # answered before the hang: kept
    assert facts["gpu.0.memory_total_bytes"]["value"] == 85520809984
    assert facts["gpu.0.temperature_celsius"]["status"] == "timed_out"
    (hung,) = [f for f in doc["findings"] if f["code"] == "driver.nvml_hung"]
    assert hung["severity"] == "error" and "nvmlDeviceGetTemperature for GPU 0" in hung["title"]
    assert r.returncode == 1


def test_a_hung_call_replays_from_the_snapshot_as_it_was_seen(fake_lib, tmp_path):
    answers = h100(**{"device.0.ecc_mode.hang_seconds": 60})
    snap = str(tmp_path / "snap.json")
    r, took = run(fake_lib, answers, tmp_path, "snapshot", "-o", snap, "--timeout", "2")
    assert r.returncode == 0 and took < 2 + 1 + STARTUP, (r.stderr, took)
    live, _ = run(fake_lib, answers, tmp_path, "diagnose", "--format", "json", "--timeout", "2")
    replay = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--snapshot", snap, "--format", "json"],
                            capture_output=True, cwd=ROOT, timeout=60)
    lf, ld = facts_of(live.stdout)
    rf, rd = facts_of(replay.stdout)
    gpu = sorted(k for k in lf if k.startswith(("gpu.", "driver.nvml")))
    assert {k: lf[k]["status"] for k in gpu} == {k: rf.get(k, {}).get("status") for k in gpu}
    assert {f["code"] for f in ld["findings"]} == {f["code"] for f in rd["findings"]}
    assert "driver.nvml_hung" in {f["code"] for f in rd["findings"]}


@pytest.mark.parametrize("where", ["init", "device.0.memory"])
@pytest.mark.parametrize("how", ["segv", "abort", "exit"])
def test_a_crash_inside_nvml_is_reported_with_the_call(fake_lib, tmp_path, where, how):
    r, _ = run(fake_lib, h100(**{where + ".crash": how}), tmp_path, "diagnose", "--format", "json")
    assert b"Traceback" not in r.stderr
    facts, doc = facts_of(r.stdout)
    status = facts["driver.nvml.status"]
    assert status["value"] == "worker_failed"
    assert ("nvmlInit" if where == "init" else "nvmlDeviceGetMemoryInfo for GPU 0") in status["reason"]
    if where != "init":
        assert facts["gpu.0.name"]["value"] == "NVIDIA H100 80GB HBM3"  # asked before the crash
    assert "driver.nvml_failed" in {f["code"] for f in doc["findings"]}


@pytest.mark.parametrize("where", ["init", "device.0.name"])
def test_nvml_printing_on_stdout_never_reaches_envdoctors_output(fake_lib, tmp_path, where):
    answers = h100(**{where + ".stdout": "NVML-SAYS-HELLO"})
    for args in (("snapshot", "-o", "-"), ("diagnose", "--format", "json"), ("advise", "--format", "json")):
        r, _ = run(fake_lib, answers, tmp_path, *args)
        assert b"NVML-SAYS-HELLO" not in r.stdout, args
        json.loads(r.stdout)  # still one JSON document


def test_the_timeout_is_told_apart_from_a_starved_machine():
    # Stuck in the kernel, or asleep / spinning inside an NVML call: the driver hung.
    assert classify_timeout("D", 0.0, 3.0, None) == "timed_out"
    assert classify_timeout("S", 0.1, 3.0, "device.3.temperature") == "timed_out"
    assert classify_timeout("R", 2.9, 3.0, "init") == "timed_out"
    # Runnable but given little CPU, or not yet at NVML (still importing the binding): a busy machine.
    assert classify_timeout("R", 0.2, 3.0, "init") == "starved"
    assert classify_timeout("S", 0.1, 3.0, None) == "starved"
    assert classify_timeout("R", 0.1, 3.0, None) == "starved"
    # With the scheduler's statistics: asleep for most of its life inside a call is hung; caught asleep
    # for a moment (a page fault, a lock) but mostly waiting for a CPU is starved.
    assert classify_timeout("S", 0.05, 3.0, "device.0.name", waiting=0.1) == "timed_out"
    assert classify_timeout("S", 0.3, 3.0, "device.0.name", waiting=2.5) == "starved"
    assert classify_timeout("R", 2.8, 3.0, "init", waiting=0.1) == "timed_out"


def test_a_query_still_answering_is_a_busy_driver_not_a_hung_one():
    """Seen on a real H100 (driver 580.159.04, 16 cores): 100 `diagnose --timeout 2` at once. The driver answers
    one caller at a time, so each query's calls queue in the kernel (state D) yet keep answering; they were
    reported as hung drivers. A hung call stops the answers for good: silent for most of the query's time."""
    # answered 0.2 s before the deadline of a 1.1 s query, now in the kernel: busy, not hung
    assert classify_timeout("D", 0.05, 1.1, "device.0.display_mode", waiting=0.1, quiet=0.2) == "starved"
    # silent for most of its time in one call: hung, whatever the state
    assert classify_timeout("D", 0.05, 3.0, "device.0.display_mode", waiting=0.1, quiet=2.5) == "timed_out"
    assert classify_timeout("S", 0.05, 3.0, "device.3.temperature", waiting=0.1, quiet=2.0) == "timed_out"
    # NVML's start-up answers nothing before it returns: silence there proves nothing either way
    assert classify_timeout("D", 0.0, 3.0, "init", quiet=0.1) == "timed_out"


def test_a_query_queued_behind_callers_the_driver_keeps_answering_is_busy_not_hung():
    """Stuck in the kernel in NVML's start-up (where nothing is answered yet) is a hung driver, unless the
    driver let out some of the other processes queued in it meanwhile: then it is busy, one caller at a time."""
    assert classify_timeout("D", 0.0, 2.0, "init", queue=(37, True)) == "starved"
    assert classify_timeout("D", 0.0, 2.0, None, queue=(0, True)) == "starved"  # it got out itself
    assert classify_timeout("D", 0.0, 2.0, "init", queue=(37, False)) == "timed_out"  # nobody got out: hung
    assert classify_timeout("D", 0.0, 2.0, "init", queue=(0, False)) == "timed_out"


def _fake_proc(root, processes, waited=None):
    """A /proc tree of ``processes`` {pid: (state, [fd targets])}, each having waited ``waited[pid]`` ns
    for a CPU. A stand-in: no process can be put in
    the NVIDIA driver's queue on a machine without one (the real queue was watched on an H100)."""
    import shutil

    shutil.rmtree(str(root), ignore_errors=True)
    root.mkdir()
    (root / "self").mkdir()
    for pid, (state, targets) in processes.items():
        d = root / str(pid)
        (d / "fd").mkdir(parents=True)
        rest = " ".join(["0"] * 15) + " %d" % (1000 + pid) + " 0 0"  # field 22: the start time
        (d / "stat").write_text("%d (python3 (x)) %s 1 %d %d %s\n" % (pid, state, pid, pid, rest))
        for n, target in enumerate(targets):
            os.symlink(target, str(d / "fd" / str(n + 3)))
        (d / "schedstat").write_text("5000000 %d 12\n" % (waited or {}).get(pid, 1000))
    return str(root)


def test_the_driver_queue_is_seen_and_its_progress_told(tmp_path):
    from envdoctor import forked

    proc = tmp_path / "proc"
    before = {10: ("D", ["/dev/nvidiactl", "/dev/null"]), 11: ("R", ["/dev/nvidia0"]), 12: ("D", ["/tmp/x"]),
              13: ("S", ["/dev/nvidiactl"]), 16: ("D", ["/tmp/y"]), 99: ("D", ["/dev/nvidiactl"])}
    _fake_proc(proc, before)
    (proc / "12" / "wchan").write_text("os_acquire_rwlock_write")  # in the driver's lock, no descriptor yet
    (proc / "15").mkdir()
    (proc / "15" / "stat").write_text("15 (truncated")  # a process half gone: skipped
    # 10 and 12 wait in the driver, 11 runs in it (holding its lock, waiting for a CPU); 13 sleeps, 16 waits
    # on a disk; 99 is the query itself
    first, complete = forked.driver_users(str(proc))
    assert complete and first == {(10, b"1010"): ("D", -1), (11, b"1011"): ("R", 1000), (12, b"1012"): ("D", -1),
                     (99, b"1099"): ("D", -1)}

    def progress(after, waited=None):
        _fake_proc(proc, after, waited)
        return forked.queue_progress(first, 99, 0.3, str(proc))

    # a hung driver: the same processes still stuck (11 still running), and one more queued
    assert progress({**before, 14: ("D", ["/dev/nvidiactl"])}) == (3, False)
    # the driver let 10 through (it ended), a new caller 14 queued: busy
    assert progress({k: v for k, v in before.items() if k != 10}) == (3, True)
    # 12 got the lock and runs: busy; 11 only going on running (or going to sleep) proves nothing
    assert progress({**before, 12: ("R", [])}) == (3, True)
    assert progress({**before, 11: ("S", [])}) == (3, False)
    assert progress(before, {11: 1000 + 100_000_000}) == (3, False)  # ran most of the 0.3 s: hung or busy
    # 11, holding the driver, spent most of the 0.3 s waiting for a CPU: a starved machine, not a hung driver
    assert progress(before, {11: 1000 + 200_000_000}) == (3, True)
    # a pid reused by a new process is the old one ended
    _fake_proc(proc, before)
    (proc / "10" / "stat").write_text("10 (x) D 1 10 10 %s 5555 0 0\n" % " ".join(["0"] * 15))
    assert forked.queue_progress(first, 99, 0.3, str(proc)) == (3, True)
    # the query itself got out of the kernel at last: through, though it was alone; killed is not through
    alone = {(99, b"1099"): ("D", -1)}
    _fake_proc(proc, {99: ("R", ["/dev/nvidiactl"])})
    assert forked.queue_progress(alone, 99, 0.3, str(proc)) == (0, True)
    _fake_proc(proc, {})
    assert forked.queue_progress(alone, 99, 0.3, str(proc)) == (0, False)
    # a /proc that cannot be read, or nothing seen: nothing concluded
    assert forked.driver_users(str(tmp_path / "missing")) == (None, True)
    # a look that could not finish in its time: this process was starved too, the machine is overloaded
    _fake_proc(proc, before)
    assert forked.driver_users(str(proc), budget=-1.0) == ({}, False)
    assert forked.queue_progress({}, 99, 0.3, str(proc), complete=False) == (0, True)
    assert forked.queue_progress(first, 99, 0.3, str(proc), complete=False) == (3, True)
    assert forked.queue_progress(None, 99, 0.3, str(proc)) == (0, False) == forked.queue_progress({}, 99, 0.3,
                                                                                                 str(proc))


def _freezer():
    if os.geteuid() != 0:
        return None, "the cgroup freezer needs root"
    for base, v1 in (("/sys/fs/cgroup/freezer", True), ("/sys/fs/cgroup", False)):
        probe = os.path.join(base, "freezer.state" if v1 else "cgroup.controllers")
        if os.path.isdir(base) and (v1 or os.path.exists(probe)):
            return base, ""
    return None, "no cgroup freezer (v1 freezer or cgroup v2) mounted"


def test_a_child_frozen_in_the_kernel_cannot_hold_the_caller(fake_lib, tmp_path):
    base, why = _freezer()
    if base is None:
        pytest.skip(why)
    cg = os.path.join(base, "envdoctor-test-%d" % os.getpid())
    try:
        os.mkdir(cg)
    except OSError as exc:
        pytest.skip("cannot make a cgroup: %s" % exc)
    try:
        answers = h100(**{"device.0.memory.freeze": cg})
        # capture_output: the caller waits for EOF on the pipes, which a stuck child holding them would
        # delay until the driver (here: the freezer) lets go.
        r, took = run(fake_lib, answers, tmp_path, "diagnose", "--format", "json", "--timeout", "2", timeout=120)
        assert took < 2 + 1 + STARTUP, took
        facts, doc = facts_of(r.stdout)
        assert facts["gpu.0.name"]["value"] == "NVIDIA H100 80GB HBM3"
        (hung,) = [f for f in doc["findings"] if f["code"] == "driver.nvml_hung"]
        assert "nvmlDeviceGetMemoryInfo for GPU 0" in hung["title"] and "state D" in hung["detail"]
        r, took = run(fake_lib, answers, tmp_path, "snapshot", "-o", "-", "--timeout", "2", timeout=120)
        assert took < 2 + 1 + STARTUP and json.loads(r.stdout)["nvml"]["data"]["incomplete"]["reason"] == "timed_out"
    finally:
        state = "freezer.state" if os.path.exists(os.path.join(cg, "freezer.state")) else "cgroup.freeze"
        with open(os.path.join(cg, state), "w") as fh:
            fh.write("THAWED\n" if state == "freezer.state" else "0\n")
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)


def _ours(marker):
    """Processes whose environment holds ``marker`` (the answers path of one test): ours, and only ours."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/environ" % pid, "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(pid))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("command,signame", [(("snapshot", "-o", "snap.json"), "SIGTERM"),
                                             (("diagnose",), "SIGINT"), (("advise",), "SIGHUP")])
def test_a_signal_ends_every_child_and_leaves_no_scratch(fake_lib, tmp_path, command, signame):
    import signal

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    path = write_answers(h100(**{"init.hang_seconds": 60}), str(tmp_path / "answers.txt"))
    env = dict(fake_env(fake_lib, path), TMPDIR=str(scratch))
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor"] + list(command) + ["--timeout", "30"], env=env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(2.5)  # NVML is asked (and hangs) by now
        assert len(_ours(path)) >= 2  # envdoctor and its NVML query
        sig = getattr(signal, signame)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert err.decode().strip() == "envdoctor: interrupted (%s)" % signame
    time.sleep(0.3)
    assert _ours(path) == []
    assert os.listdir(str(scratch)) == []
    assert not (tmp_path / "snap.json").exists()  # no half-written snapshot


def test_install_keeps_its_own_ctrl_c_handling():
    import signal

    from envdoctor import forked

    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        forked.install_signal_handlers(keep_int=True)  # `install` rolls back on KeyboardInterrupt itself
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGTERM) is forked._on_signal
    finally:
        for s, h in old.items():
            signal.signal(s, h)

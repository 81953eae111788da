"""Hostile inputs and faults around reports, snapshots, policies and fleets (issue 21).

Every input here is refused the same way: exit 2, one line on standard error that starts with
``envdoctor:``, no traceback, within a bounded time and under a memory limit set in the child
(RLIMIT_AS). The bounds are generous (they catch a hang or a quadratic blow-up, not a slow machine);
speed itself is measured by ``scripts/bench_replay.py``.

The inputs are built from the captured machines (``tests/machines/``, ``tests/live/``) and the
reports envdoctor writes of them, then damaged or stretched the way the issue's runs did.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import subprocess
import sys
import time
import zlib
from typing import Any, Dict, List, NamedTuple, Optional

import pytest

from .conftest import HERE, machine_path

ROOT = os.path.dirname(HERE)
MACHINE = machine_path("ubuntu2204-a100-mig")
EIGHT = machine_path("centosstream9-8xh100")
#: The live H100 capture: its JSON report (77 KB) is larger than a pipe holds (64 KiB).
LIVE = os.path.join(HERE, "live", "h100-ubuntu2404-container", "snapshot.json.gz")
#: The address space each child may use: envdoctor with its probe threads needs a few hundred MiB.
MEMORY = 3 << 30
#: Seconds a child may take before the test calls it hung (generous: a loaded CI machine).
BOUND = 120
ROOT_ONLY = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                               reason="creating device nodes needs root (CI runs as root)")
POLICY = 'schema_version = 1\n[require]\n"gpu.count" = 1\n'


class Run(NamedTuple):
    code: int
    out: str
    err: str
    seconds: float


def _child_limits(close_stdout: bool = False) -> Any:
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        if close_stdout:
            os.close(1)
    return limit


def cli(*args: str, timeout: float = BOUND, env: Optional[Dict[str, str]] = None, close_stdout: bool = False,
        cwd: str = ROOT) -> Run:
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), stdin=subprocess.DEVNULL,
                       stdout=None if close_stdout else subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                       cwd=cwd,
                       env=dict(env if env is not None else os.environ, NO_COLOR="1"),
                       preexec_fn=_child_limits(close_stdout))
    out = (r.stdout or b"").decode("utf-8", "replace")
    return Run(r.returncode, out, r.stderr.decode("utf-8", "replace"), time.monotonic() - start)


def refused(r: Run, needle: str = "") -> str:
    """Exit 2 and one line on stderr naming the problem; no traceback."""
    assert r.code == 2, (r.code, r.err[-2000:])
    assert "Traceback" not in r.err and r.err.startswith("envdoctor: "), r.err[-2000:]
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert needle in r.err, (needle, r.err)
    return r.err


def ran(r: Run) -> None:
    """Ran to a verdict (0 or 1) without a traceback."""
    assert r.code in (0, 1), (r.code, r.err[-2000:])
    assert "Traceback" not in r.err and "a bug in envdoctor" not in r.err + r.out, r.err[-2000:]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory with the report of the A100 machine, of the 8x H100 server and a policy it meets."""
    d = tmp_path_factory.mktemp("hostile")
    for name, snap in (("a100.json", MACHINE), ("eight.json", EIGHT)):
        r = cli("diagnose", "--snapshot", snap, "--format", "json")
        ran(r)
        (d / name).write_text(r.out)
    (d / "policy.toml").write_text(POLICY)
    return d


def _facts(report: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {f["key"]: f for p in report["probes"] for f in p["facts"]}


# ------------------------------------------------------------------ -o FILE: one writer for every command

def _o_commands(work) -> Dict[str, List[str]]:
    return {
        "check": ["check", "--policy", str(work / "policy.toml"), "--report", str(work / "a100.json"),
                  "--format", "prometheus"],
        "policy init": ["policy", "init", "--from", str(work / "a100.json")],
        "snapshot": ["snapshot", "--timeout", "5"],
    }


def _o(work, command: str, target: str, *extra: str) -> Run:
    return cli(*(_o_commands(work)[command] + ["-o", target] + list(extra)))


@ROOT_ONLY
@pytest.mark.parametrize("command", ["check", "policy init", "snapshot"])
def test_o_writes_into_devices_fifos_and_through_links_and_keeps_the_mode(work, tmp_path, command):
    """Found by issue 21: `check -o` and `policy init -o` renamed a file over whatever was there: as root
    `-o /dev/null` turned the device into a plain 0644 file, a FIFO was replaced (its reader blocked for
    ever), `-o /dev/stdout` replaced the link, a link was replaced instead of written through, a 0600 file
    became 0644 and `-o /dev/full` "succeeded". Devices of our own (the same numbers as /dev/null and
    /dev/full), so the machine's are never at stake."""
    null, full = tmp_path / "null", tmp_path / "full"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    fifo, received = tmp_path / "fifo", tmp_path / "received"
    os.mkfifo(fifo)
    real, link = tmp_path / "real.out", tmp_path / "link.out"
    real.write_text("old")
    os.chmod(real, 0o600)
    link.symlink_to("real.out")
    to_stdout = tmp_path / "stdout"
    to_stdout.symlink_to("/proc/self/fd/1")  # what /dev/stdout is

    ran(_o(work, command, str(null)))
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    refused(_o(work, command, str(full)), "No space left on device")
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    with open(received, "wb") as sink:
        reader = subprocess.Popen(["cat", str(fifo)], stdout=sink)
        ran(_o(work, command, str(fifo)))
        reader.wait(timeout=BOUND)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and received.stat().st_size > 100
    ran(_o(work, command, str(link)))
    assert os.path.islink(link)  # written through: the link is still a link, the file it names was written
    assert real.read_text().splitlines()[0] == received.read_text().splitlines()[0]
    assert stat.S_IMODE(real.stat().st_mode) == 0o600, oct(real.stat().st_mode)
    r = _o(work, command, str(to_stdout))
    ran(r)
    assert os.path.islink(to_stdout) and len(r.out) > 100
    assert sorted(os.listdir(tmp_path)) == ["fifo", "full", "link.out", "null", "real.out", "received",
                                            "stdout"]  # no temporary file left behind


@pytest.mark.parametrize("command", ["check", "policy init", "snapshot"])
def test_o_in_a_missing_directory_or_onto_a_directory_is_refused_and_creates_nothing(work, tmp_path, command):
    """One rule for every command: the directory of -o must exist (the issue saw snapshot create it)."""
    missing = tmp_path / "nonexistent" / "dir" / "x.json"
    refused(_o(work, command, str(missing)), "No such file or directory")
    assert os.listdir(tmp_path) == []
    refused(_o(work, command, str(tmp_path)), "Is a directory")
    assert os.listdir(tmp_path) == []


def test_o_into_a_fifo_nobody_reads_gives_up_in_bounded_time(work, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = cli(*(_o_commands(work)["check"] + ["-o", str(fifo), "--timeout", "1"]))
    refused(r, "nobody opened the pipe")
    assert r.seconds < 60


def test_o_keeps_a_regular_file_whole_and_creates_a_new_one_as_the_umask_says(work, tmp_path):
    out = tmp_path / "policy.toml"
    r = cli("policy", "init", "--from", str(work / "a100.json"), "-o", str(out))
    ran(r)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~_umask()
    assert "[require]" in out.read_text() and os.listdir(tmp_path) == ["policy.toml"]


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def test_every_o_is_written_by_one_function():
    """`snapshot -o` wrote right and `check -o` did not: the writing now has one home (envdoctor/output.py),
    and no command renames files of its own."""
    pkg = os.path.join(ROOT, "envdoctor")
    offenders = []
    for folder, _, files in os.walk(pkg):
        if os.path.relpath(folder, pkg).startswith("install"):
            continue  # the installer moves what it staged into place: not a command's output
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".py") and path != os.path.join(pkg, "output.py"):
                with open(path, encoding="utf-8") as fh:
                    src = fh.read()
                if "os.replace(" in src or "mkstemp(" in src or "os.rename(" in src:
                    offenders.append(os.path.relpath(path, ROOT))
    assert offenders == []


# ------------------------------------------------------------------ standard output closed

@pytest.mark.parametrize("args", [
    ["diagnose", "--timeout", "3"],
    ["diagnose", "--snapshot", MACHINE],
    ["check", "--policy", "POLICY", "--timeout", "3"],
    ["check", "--policy", "POLICY", "--snapshot", MACHINE],
], ids=["diagnose", "diagnose --snapshot", "check", "check --snapshot"])
def test_closed_stdout_is_one_line_and_exit_2(work, args):
    """`diagnose >&-` and `check >&-` gave a traceback (the quick exit flushed a stdout that is None)."""
    args = [str(work / "policy.toml") if a == "POLICY" else a for a in args]
    refused(cli(*args, close_stdout=True), "standard output is closed")


# ------------------------------------------------------------------ numbers no float can hold, NaN

def _with_fact(report: Dict[str, Any], key: str, value: Any) -> Dict[str, Any]:
    for p in report["probes"]:
        for f in p["facts"]:
            if f["key"] == key:
                f.update(value=value, status="ok")
    return report


def test_an_integer_beyond_any_float_is_compared_not_a_crash(work, tmp_path):
    """10**400 in a report: `policy init --from` and `check --report` died with OverflowError, and
    `fleet --policy` dropped the node as "a bug in envdoctor"."""
    report = _with_fact(json.loads((work / "eight.json").read_text()), "gpu.0.pcie_gen_max", 10 ** 400)
    report = _with_fact(report, "gpu.count", 10 ** 400)
    path = tmp_path / "node.json"
    path.write_text(json.dumps(report))
    policy = tmp_path / "p.toml"
    policy.write_text('schema_version = 1\n[require]\n"gpu.*.pcie_gen_max" = {min = 4}\n"gpu.count" = 8\n')
    r = cli("policy", "init", "--from", str(path))
    ran(r)
    assert "[require]" in r.out and "1" * 30 not in r.out  # no 400-digit pin
    r = cli("check", "--policy", str(policy), "--report", str(path), "--format", "json")
    ran(r)
    verdict = {q["name"]: q for q in json.loads(r.out)["policy"]["requirements"]}
    assert verdict["gpu.count"]["status"] == "fail" and verdict["gpu.count"]["found"] == 10 ** 400
    r = cli("fleet", str(path), str(work / "eight.json"), "--policy", str(policy), "--format", "json")
    ran(r)
    assert not [n for n in json.loads(r.out)["nodes"] if n.get("unreadable")]


def test_a_huge_memory_size_in_a_snapshot_is_shown_not_a_crash(tmp_path):
    """A /proc/meminfo whose MemTotal has 400 digits: `diagnose --snapshot -v` died with OverflowError."""
    doc = json.load(open(MACHINE))
    doc["files"]["/proc/meminfo"] = {"text": "MemTotal:       %s kB\nMemFree:        1 kB\n" % ("9" * 400)}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    for args in (["diagnose", "--snapshot", str(path), "-v"], ["diagnose", "--snapshot", str(path), "--format",
                                                                 "markdown"],
                 ["policy", "init", "--from", str(path)]):
        ran(cli(*args))


def test_a_number_of_thousands_of_digits_is_refused_in_one_line(work, tmp_path):
    text = (work / "a100.json").read_text().replace('"schema_version": 1', '"schema_version": 1, "x": %s'
                                                      % ("7" * 5000), 1)
    path = tmp_path / "node.json"
    path.write_text(text)
    for args in (["check", "--policy", str(work / "policy.toml"), "--report", str(path)],
                 ["policy", "init", "--from", str(path)], ["fleet", str(path)]):
        err = refused(cli(*args), "a number of 5000 digits")
        assert "set_int_max_str_digits" not in err


@pytest.mark.parametrize("args", [
    ["policy", "init", "--from", "REPORT", "--read-timeout", "nan"],
    ["policy", "init", "--from", "REPORT", "--read-timeout", "inf"],
    ["check", "--policy", "POLICY", "--report", "REPORT", "--nfd-ttl", "nan"],
    ["check", "--policy", "POLICY", "--report", "REPORT", "--format", "nfd", "--nfd-ttl", "nan"],
])
def test_nan_is_no_number_of_seconds(work, args):
    args = [str(work / "a100.json") if a == "REPORT" else str(work / "policy.toml") if a == "POLICY" else a
            for a in args]
    r = cli(*args)
    assert r.code == 2 and "Traceback" not in r.err and "Invalid value for" in r.err, r.err


# ------------------------------------------------------------------ replaying a stretched snapshot

@pytest.fixture(scope="module")
def long_paths(tmp_path_factory):
    """The A100 machine with 200,000 entries in LD_LIBRARY_PATH and in PATH (the issue: 50,000 took 38 s
    at --timeout 2, 100,000 took 266 s: lib_search_dirs kept its list unique with `in`)."""
    doc = json.load(open(MACHINE))
    doc["environ"]["LD_LIBRARY_PATH"] = ":".join("/opt/l%d" % i for i in range(200000))
    doc["environ"]["PATH"] = ":".join("/opt/b%d" % i for i in range(200000)) + ":" + doc["environ"]["PATH"]
    path = tmp_path_factory.mktemp("long") / "long.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_replay_is_bounded_by_the_timeout_however_long_its_paths(long_paths):
    r = cli("diagnose", "--snapshot", str(long_paths), "--timeout", "0.1", "--format", "json")
    ran(r)
    late = [p for p in json.loads(r.out)["probes"] if p["status"] == "timed_out"]
    # The environment probe alone resolves 200,000 directories: not within 0.1 s, on any machine.
    assert late and all("did not finish replaying the snapshot" in p["error"] for p in late), late
    assert r.seconds < BOUND


def test_check_and_fleet_replays_are_bounded_too(long_paths, work):
    ran(cli("check", "--policy", str(work / "policy.toml"), "--snapshot", str(long_paths), "--timeout", "0.1"))
    ran(cli("fleet", str(long_paths), env=dict(os.environ, ENVDOCTOR_TIMEOUT="0.1")))
    ran(cli("policy", "init", "--from", str(long_paths), env=dict(os.environ, ENVDOCTOR_TIMEOUT="0.1")))


# ------------------------------------------------------------------ fleet and pipes

def test_forty_stalled_pipes_cost_one_read_timeout_not_forty(work, tmp_path):
    """fleet read its pipes one after another: 40 FIFOs nobody writes to took 40 s at --read-timeout 1."""
    for i in range(40):
        os.mkfifo(tmp_path / ("n%02d.json" % i))
    fifos = sorted(str(p) for p in tmp_path.iterdir())
    r = cli("fleet", *fifos, str(work / "a100.json"), "--read-timeout", "1", "--format", "json")
    ran(r)
    nodes = json.loads(r.out)["nodes"]
    assert sum(1 for n in nodes if "nothing arrived within 1s" in n.get("unreadable", "")) == 40
    assert r.seconds < 30  # 40 s and more when read one by one


def test_pipes_that_deliver_are_read_at_the_same_time(work, tmp_path):
    report = str(work / "a100.json")
    writers = []
    for i in range(12):
        fifo = tmp_path / ("n%02d.json" % i)
        os.mkfifo(fifo)
        writers.append(subprocess.Popen(["sh", "-c", "sleep 1; cat \"$0\" > \"$1\"", report, str(fifo)]))
    r = cli("fleet", *sorted(str(p) for p in tmp_path.iterdir()), "--read-timeout", "20", "--format", "json")
    for w in writers:
        w.wait(timeout=BOUND)
    ran(r)
    assert [n["name"] for n in json.loads(r.out)["nodes"] if not n.get("unreadable")] == \
        ["n%02d" % i for i in range(12)]


@pytest.mark.parametrize("args", [
    ["diagnose", "--snapshot", LIVE, "--format", "json", "--timeout", "8"],
    ["check", "--policy", "POLICY", "--snapshot", LIVE, "--format", "json", "--timeout", "8"],
], ids=["diagnose", "check"])
def test_a_report_into_a_pipe_read_only_after_exit_is_given_up_at_the_deadline(work, args):
    """A script that waits for envdoctor to exit before it reads the pipe: a report larger than the pipe
    holds (64 KiB) blocked for ever, past --timeout. (--timeout 8: the replay's probes all finish even on a
    loaded machine, so the report is whole and larger than the pipe; the write is given up about a second
    after the deadline.)"""
    args = [str(work / "policy.toml") if a == "POLICY" else a for a in args]
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor"] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT, preexec_fn=_child_limits())
    try:
        code = proc.wait(timeout=BOUND)  # nobody reads stdout until it has exited
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("envdoctor waited for its reader for ever") from None
    out, err = proc.communicate()
    refused(Run(code, out.decode(), err.decode(), time.monotonic() - start),
            "read the output while envdoctor runs")
    assert len(out) == 65536  # what the pipe held


# ------------------------------------------------------------------ privacy

def test_a_remote_docker_daemons_address_is_hidden_in_every_output(work, tmp_path):
    """DOCKER_HOST=tcp://user:pw@10.0.0.5:2376: the password was hidden but the site's internal address
    reached 15 outputs (reports, snapshots, text, JSON, markdown, fleet, every check format)."""
    env = dict(os.environ, DOCKER_HOST="tcp://user:pw@10.0.0.5:2376", HOME=str(tmp_path))
    snap = tmp_path / "snap.json"
    outputs = {}
    r = cli("snapshot", "-o", str(snap), "--timeout", "10", env=env)
    assert r.code == 0, r.err
    outputs["snapshot"] = snap.read_text()
    assert json.loads(outputs["snapshot"])["environ"]["DOCKER_HOST"] == "tcp://<redacted>@<address>:2376"
    for fmt in ("text", "json", "markdown"):
        outputs["diagnose " + fmt] = cli("diagnose", "-v", "--format", fmt, "--timeout", "10", env=env).out
    policy = str(work / "policy.toml")
    for fmt in ("text", "json", "junit", "prometheus", "nhc", "nfd"):
        outputs["check " + fmt] = cli("check", "--policy", policy, "--format", fmt, "--timeout", "10", env=env).out
    (tmp_path / "report.json").write_text(outputs["diagnose json"])
    outputs["policy init"] = cli("policy", "init", "--from", str(snap)).out
    for fmt in ("text", "json", "junit", "prometheus"):
        outputs["fleet " + fmt] = cli("fleet", str(snap), str(tmp_path / "report.json"), "--format", fmt).out
    outputs["diagnose --snapshot -v"] = cli("diagnose", "--snapshot", str(snap), "-v").out
    assert "<address>" in outputs["diagnose json"]  # the probe did report the daemon
    leaks = sorted(name for name, text in outputs.items() if "10.0.0.5" in text or "pw@" in text)
    assert leaks == []
    # replaying the snapshot says what the live run said
    live = _facts(json.loads(outputs["diagnose json"]))["container.docker"]["value"]
    replay = _facts(json.loads(cli("diagnose", "--snapshot", str(snap), "--format", "json").out))
    assert replay["container.docker"]["value"].get("endpoint") == live.get("endpoint")
    # --include-host keeps the address (the identity part), never the password
    r = cli("snapshot", "-o", "-", "--include-host", "--timeout", "10", env=env)
    assert json.loads(r.out)["environ"]["DOCKER_HOST"] == "tcp://<redacted>@10.0.0.5:2376"


def test_oldpwd_is_kept_by_name_only(tmp_path):
    """OLDPWD (the shell's previous directory: where its user has been) was kept verbatim in snapshots;
    no probe reads it."""
    env = dict(os.environ, OLDPWD="/srv/clients/acme-secret-project", PWD=ROOT)
    snap = tmp_path / "snap.json"
    assert cli("snapshot", "-o", str(snap), "--timeout", "5", env=env).code == 0
    doc = json.loads(snap.read_text())
    assert "acme-secret-project" not in snap.read_text()
    assert "OLDPWD" in doc["environ_names"] and "OLDPWD" not in doc["environ"]


# ------------------------------------------------------------------ smaller

def test_a_hang_in_nvml_shutdown_is_called_that(fake_lib, tmp_path):
    """Every question answered, then nvmlShutdown hangs: it was reported as "the machine is too busy". The
    fake libnvidia-ml (tests/fakenvml) stands in for a driver: nothing real runs here."""
    from .fakenvml.build import fake_env, load_answers, write_answers

    answers = dict(load_answers("h100.json"), **{"shutdown.hang_seconds": 60})
    env = fake_env(fake_lib, write_answers(answers, str(tmp_path / "answers.txt")))
    r = cli("diagnose", "--format", "json", "--timeout", "4", env=env)  # time to answer the rest, even loaded
    facts = _facts(json.loads(r.out))
    status = facts["driver.nvml.status"]
    assert "nvmlShutdown" in status["reason"] and "answered every question" in status["reason"], status
    assert "too busy" not in status["reason"]
    assert facts["gpu.0.name"]["value"] == "NVIDIA H100 80GB HBM3"  # what it answered is kept


@pytest.mark.parametrize("args", [["matrix", "gpu", ""], ["matrix", "gpu", "  "], ["matrix", "cuda", ""],
                                  ["matrix", "torch", "", "--format", "json"]])
def test_an_empty_matrix_value_is_refused(args):
    """`matrix gpu ""` answered with the first row ("" is in every name)."""
    refused(cli(*args), "an empty value")


def test_advise_refuses_a_distribution_nobody_makes():
    """`advise --os bogus9` was accepted (fixed by the one --os list advise and install share)."""
    refused(cli("advise", "--os", "bogus9", "--driver", "550.54.15", "--cc", "8.0"), "'bogus9'")


# ------------------------------------------------------------------ the hostile-input suite

#: Run inside one child per input (under RLIMIT_AS): each command's exit code, standard error and time.
_DRIVER = r"""
import json, os, resource, sys, time, traceback
limit, runs, where = int(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from envdoctor.cli import main
results = []
null = os.open(os.devnull, os.O_WRONLY)
for i, args in enumerate(runs):
    err_path = os.path.join(where, "err%d" % i)
    saved_out, saved_err = os.dup(1), os.dup(2)
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(null, 1)
    os.dup2(err, 2)
    start = time.monotonic()
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = -1
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(saved_out, 1)
    os.dup2(saved_err, 2)
    os.close(err)
    with open(err_path, encoding="utf-8", errors="replace") as fh:
        results.append({"args": args, "code": code, "err": fh.read(), "seconds": time.monotonic() - start})
with open(os.path.join(where, "results.json"), "w") as fh:
    json.dump(results, fh)
"""


def run_all(runs: List[List[str]], where) -> List[Run]:
    """Each argument list, run by envdoctor's command line in one child process under RLIMIT_AS."""
    subprocess.run([sys.executable, "-c", _DRIVER, str(MEMORY), json.dumps(runs), str(where)], cwd=ROOT,
                   timeout=BOUND * 2, check=True, env=dict(os.environ, NO_COLOR="1"), stdin=subprocess.DEVNULL)
    with open(os.path.join(str(where), "results.json")) as fh:
        return [Run(r["code"], "", r["err"], r["seconds"]) for r in json.load(fh)]


def _write(path, data: bytes) -> str:
    with open(path, "wb") as fh:
        fh.write(data)
    return str(path)


def _bomb(path) -> str:
    """100 MiB of zeros gzip-compressed (about 100 KiB): more than the 64 MiB a snapshot may unpack to."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with open(path, "wb") as fh:
        block = b"\0" * (1 << 20)
        for _ in range(100):
            fh.write(z.compress(block))
        fh.write(z.flush())
    return str(path)


def _hostile_inputs(d, report: str) -> Dict[str, str]:
    """name -> a file no command may take for a report or a snapshot."""
    text = open(report, encoding="utf-8").read()
    snap = json.load(open(MACHINE))
    bad_types = dict(snap, files={"/etc/os-release": {"text": 5}})
    newer = dict(snap, schema_version=99)
    deep = '{"probes": [' + "[" * 100000 + "]" * 100000 + "]}"
    many = '{"probes": [' + ",".join(["0"] * 250000) + "]}"
    inputs = {
        "empty": _write(d / "empty.json", b""),
        "blank": _write(d / "blank.json", b" \n\t\n"),
        "not JSON": _write(d / "hello.json", b"hello"),
        "a JSON array": _write(d / "array.json", b"[1, 2]"),
        "truncated": _write(d / "truncated.json", text[: len(text) // 2].encode()),
        "not UTF-8": _write(d / "latin1.json", b'{"probes": [], "x": "\xff\xfe"}'),
        "NaN": _write(d / "nan.json", text.replace('"schema_version": 1', '"schema_version": 1, "x": NaN',
                                                   1).encode()),
        "Infinity": _write(d / "inf.json", b'{"probes": [{"facts": [{"key": "gpu.count", "value": -Infinity}]}]}'),
        "5000 digits": _write(d / "digits.json", ('{"probes": [], "x": %s}' % ("9" * 5000)).encode()),
        "nested 100,000 deep": _write(d / "deep.json", deep.encode()),
        "250,000 values": _write(d / "many.json", many.encode()),
        "a gzip bomb": _bomb(d / "bomb.json.gz"),
        "truncated gzip": _write(d / "cut.json.gz", gzip.compress(text.encode())[:2000]),
        "no facts": _write(d / "nofacts.json", b'{"schema_version": 1, "probes": [{"name": "gpu", "facts": []}]}'),
        "probes not a list": _write(d / "probes.json", b'{"schema_version": 1, "probes": "gpu"}'),
        "a fleet comparison": _write(d / "fleet.json", b'{"nodes": [], "facts": [], "summary": {}}'),
        "a snapshot with wrong types": _write(d / "types.json", json.dumps(bad_types).encode()),
        "a snapshot from a newer envdoctor": _write(d / "newer.json", json.dumps(newer).encode()),
        "no file": str(d / "nowhere.json"),
        "an empty name": "",
        "a directory": str(d),
        "/dev/zero": str(d / "zero.json"),
        "a FIFO nobody writes to": str(d / "stalled.json"),
    }
    with open(d / "big.json", "wb") as fh:  # 70 MiB, sparse: "{" and then NUL bytes
        fh.write(b"{")
        fh.truncate(70 << 20)
    inputs["70 MiB"] = str(d / "big.json")
    os.symlink("/dev/zero", d / "zero.json")
    os.mkfifo(d / "stalled.json")
    return inputs


def test_hostile_reports_and_snapshots_are_refused_by_every_command(work, tmp_path):
    """Every command that reads a report or a snapshot (diagnose --snapshot, check --report/--snapshot,
    policy init --from, fleet, fleet --baseline) refuses each hostile file in one line, exit 2."""
    d = tmp_path / "in"
    d.mkdir()
    good, policy = str(work / "a100.json"), str(work / "policy.toml")
    inputs = _hostile_inputs(d, good)
    runs, what = [], []
    for name, f in sorted(inputs.items()):
        for args in (["diagnose", "--snapshot", f, "--timeout", "1"],
                     ["check", "--policy", policy, "--report", f, "--timeout", "1"],
                     ["check", "--policy", policy, "--snapshot", f, "--timeout", "1"],
                     ["policy", "init", "--from", f, "--read-timeout", "1"],
                     ["fleet", f, "--read-timeout", "1"],
                     ["fleet", good, "--baseline", f, "--read-timeout", "1"]):
            if name == "a directory" and args[0] == "fleet" and args[1] == f:
                continue  # a directory is a fleet of its *.json files: the others here
            runs.append(args)
            what.append(name)
    for name, r in zip(what, run_all(runs, tmp_path)):
        assert r.code == 2 and "Traceback" not in r.err and r.err.startswith("envdoctor: ") \
            and len(r.err.strip().splitlines()) == 1, (name, r)
        assert r.seconds < 30, (name, r)


def test_hostile_policies_are_refused_by_check_and_fleet(work, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    good = str(work / "a100.json")
    head = 'schema_version = 1\n[require]\n'
    policies = {
        "empty": b"",
        "not TOML": b"[[[ require",
        "not UTF-8": b'schema_version = 1\n[require]\n"gpu.count" = "\xff"\n',
        "NaN": (head + '"gpu.count" = nan\n').encode(),
        "inf": (head + '"gpu.count" = {min = -inf}\n').encode(),
        "an unknown key": (head + '"gpu.colour" = "blue"\n').encode(),
        "a table for a version": (head + '"driver.version" = {min = "x"}\n').encode(),
        "nested 5,000 deep": (head + '"gpu.count" = ' + "[" * 5000 + "]" * 5000 + "\n").encode(),
        "a bad specifier": (head + '"driver.version" = "~>550"\n').encode(),
        "a newer schema": b'schema_version = 99\n[require]\n"gpu.count" = 1\n',
        "JSON": b'{"require": {"gpu.count": 1}}',
        "a huge key": (head + '"%s" = 1\n' % ("g" * 200000)).encode(),
    }
    paths = {name: _write(d / ("p%d.toml" % i), data) for i, (name, data) in enumerate(sorted(policies.items()))}
    with open(d / "big.toml", "wb") as fh:
        fh.truncate(20 << 20)
    paths["20 MiB"] = str(d / "big.toml")
    os.symlink("/dev/zero", d / "zero.toml")
    paths["/dev/zero"] = str(d / "zero.toml")
    os.mkfifo(d / "stalled.toml")
    paths["a FIFO nobody writes to"] = str(d / "stalled.toml")
    paths["a directory"] = str(d)
    runs, what = [], []
    for name, p in sorted(paths.items()):
        runs += [["check", "--policy", p, "--report", good], ["fleet", good, "--policy", p]]
        what += [name, name]
    for name, r in zip(what, run_all(runs, tmp_path)):
        assert r.code == 2 and "Traceback" not in r.err and r.err.startswith("envdoctor: ") \
            and len(r.err.strip().splitlines()) == 1, (name, r)
        assert r.seconds < 60, (name, r)

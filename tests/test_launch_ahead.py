"""Programs started ahead of the probes (``Host.launch``): the probe's own ``run`` takes the launched program's
answer, the same program the probe would have run, and the NVML query is not alive while it runs (their memory
would add up: ``scripts/bench_check.py``)."""

from __future__ import annotations

import glob
import json
import os
import stat
import subprocess
import sys
from typing import Any, List, Optional, Sequence, Tuple

import pytest

from envdoctor.host.live import LiveHost
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes import LAUNCH_MODULES, ProbeContext, all_probes
from envdoctor.probes.containers import launch_docker, probe_containers

from .fakenvml.build import fake_env, load_answers, write_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MACHINES = sorted(glob.glob(os.path.join(ROOT, "tests", "machines", "*", "snapshot.json"))
                  + glob.glob(os.path.join(ROOT, "tests", "live", "*", "snapshot.json.gz"))
                  + glob.glob(os.path.join(ROOT, "tests", "corpus", "*", "snapshot.json")))


def test_a_launched_command_runs_once_and_is_what_run_answers(tmp_path):
    log = tmp_path / "runs"
    argv = ["sh", "-c", 'echo started >> "$0"; echo out; echo err >&2; exit 3', str(log)]
    host = LiveHost(timeout=10)
    host.launch(argv, timeout=10)
    res = host.run(argv, timeout=10)
    assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert tuple(res.argv) == tuple(argv)  # as the probe asked it, not the resolved path
    assert host.run(argv).stdout == "out\n"  # asked again: the recorded answer
    assert log.read_text() == "started\n"  # one process, not two
    assert host.commands[tuple(argv)].stdout == "out\n"  # recorded for a snapshot like any command


def test_a_launched_command_keeps_its_time_limit_from_its_start(tmp_path):
    host = LiveHost(timeout=10)
    argv = [sys.executable, "-c", "import time; time.sleep(30)"]
    host.launch(argv, timeout=0.5)
    res = host.run(argv, timeout=10)
    assert res.timed_out and res.duration < 5


def test_a_launched_program_that_is_not_installed_is_not_found():
    host = LiveHost(timeout=10)
    host.launch(["envdoctor-no-such-program-xyz", "--version"])
    res = host.run(["envdoctor-no-such-program-xyz", "--version"])
    assert res.not_found


class _Recording(SnapshotHost):
    """A captured machine that notes what is launched and run."""

    def __init__(self, doc: Any, name: str) -> None:
        super().__init__(doc, name)
        self.launched: List[Tuple[str, ...]] = []
        self.ran: List[Tuple[str, ...]] = []

    def launch(self, argv: Sequence[str], timeout: Optional[float] = None) -> None:
        self.launched.append(tuple(argv))

    def run(self, argv: Sequence[str], timeout: Optional[float] = None) -> Any:
        self.ran.append(tuple(argv))
        return super().run(argv, timeout)


@pytest.mark.parametrize("path", MACHINES, ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_docker_is_launched_as_the_probe_runs_it_on_every_captured_machine(path):
    host = _Recording(load_snapshot(path), "x")  # a document of its own, loaded for this test
    launch_docker(host)
    facts = list(probe_containers(ProbeContext(host)))
    docker = [argv for argv in host.ran if os.path.basename(argv[0]) == "docker"]
    assert host.launched == docker[:1]  # the probe's first docker command, or none when docker is not there
    assert facts  # and the probe still answers


def test_only_the_containers_probe_launches():
    assert [s.name for s in all_probes() if s.launch is not None] == ["containers"]
    # launch_ahead imports these modules only, before the rest of a run: every launch= hook is in one of them
    assert {s.launch.__module__ for s in all_probes() if s.launch is not None} <= set(LAUNCH_MODULES)


def test_a_whole_diagnose_launches_docker_before_it_imports_the_checks(tmp_path):
    """The programs of the launch= hooks start before the report's modules (the checks among them) are imported,
    so docker (about 20 MiB) runs beside a smaller interpreter; run_probes does not launch them again."""
    code = (
        "import sys; from envdoctor.host.live import LiveHost\n"
        "seen = []\n"
        "class R(LiveHost):\n"
        "    def launch(self, argv, timeout=None):\n"
        "        seen.append((argv[0], 'envdoctor.checks' in sys.modules)); super().launch(argv, timeout)\n"
        "from envdoctor.cli.subjects import Subject\n"
        "Subject('machine', host=R(timeout=10), deadline=None).report()\n"
        "print(seen)\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "docker"
    tool.write_text("#!/bin/sh\necho '{}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, PATH=str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[('docker', False)]"  # once, before the checks were imported


FAKE_TOOL = """#!/bin/sh
# Which other children of envdoctor are alive now (the NVML query is one: a fork of envdoctor).
siblings() {
    for k in $(cat /proc/$PPID/task/*/children 2>/dev/null); do
        [ "$k" = "$$" ] && continue
        tr '\\0' ' ' < /proc/$k/cmdline 2>/dev/null | grep -q envdoctor && echo "$1 $k" >> "%(log)s"
    done
}
siblings "$(basename "$0") start"
sleep 0.3
siblings "$(basename "$0") end"
echo "$(basename "$0") ran" >> "%(log)s"
echo '{"Client":{"Version":"27.3.1","ApiVersion":"1.47"}}'
exit 1
"""


def test_docker_and_the_nvml_query_are_never_alive_together(fake_lib, tmp_path):
    """A fake docker that takes 0.3 s and NVML whose init takes 1 s (so that the query would still be running
    when the probes start their programs): docker never sees envdoctor's NVML child beside it."""
    log = tmp_path / "siblings"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "docker"
    tool.write_text(FAKE_TOOL % {"log": log})
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    answers = dict(load_answers("h100.json"))
    answers["init"] = {"hang_seconds": 1}
    env = fake_env(fake_lib, write_answers(answers, str(tmp_path / "answers.txt")))
    env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
    env["DOCKER_HOST"] = "unix:///var/run/docker.sock"
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    report = json.loads(r.stdout)
    facts = {f["key"]: f for p in report["probes"] for f in p["facts"]}
    assert facts["gpu.count"]["value"] == 1  # the query answered
    assert facts["container.docker"]["value"]["client"] == "27.3.1"  # docker's answer reached the probe
    assert log.read_text().splitlines() == ["docker ran"]  # once, and alone


def test_a_hung_read_while_deciding_what_to_launch_does_not_hang_the_run(fake_lib, tmp_path):
    """docker's context store on a mount that hangs (a FIFO nobody writes to blocks its reader in the kernel, as
    a hung NFS home does): the decision what to launch is abandoned, the run still ends within its time limit,
    and the GPU is still described (the NVML query asked by a program, since a process with a hung thread is
    not forked)."""
    import hashlib
    import time

    meta = tmp_path / "cfg" / "contexts" / "meta" / hashlib.sha256(b"stuck").hexdigest()
    meta.mkdir(parents=True)
    os.mkfifo(str(meta / "meta.json"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "docker"
    tool.write_text("#!/bin/sh\necho '{}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    env = fake_env(fake_lib, write_answers(load_answers("h100.json"), str(tmp_path / "answers.txt")))
    env.update(PATH=str(bindir) + os.pathsep + env.get("PATH", ""), DOCKER_CONFIG=str(tmp_path / "cfg"),
               DOCKER_CONTEXT="stuck")
    env.pop("DOCKER_HOST", None)
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json", "--timeout", "3"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - start
    report = json.loads(r.stdout)
    facts = {f["key"]: f for p in report["probes"] for f in p["facts"]}
    assert facts["gpu.count"]["value"] == 1
    docker = facts.get("container.docker")
    # The context could not be read before the time limit: docker is not contacted, and the report says why
    # (or, when the probe itself was still waiting at the limit, that it timed out).
    assert (docker is not None and docker["value"]["error"] == "not_contacted"
            and "time limit" in docker["value"]["message"]) or [
        p for p in report["probes"] if p["name"] == "containers" and p["status"] == "timed_out"], docker
    assert elapsed < 3 + 1 + 5  # the time limit, its second, and the interpreter's start on a loaded machine


def test_the_driver_planner_is_loaded_while_the_probes_wait_only_where_a_driver_is(fake_lib, tmp_path):
    """On a machine with the driver's NVML library (the stand-in here), the checks' preparation during the probes
    also imports the install planner and the driver's recipe, which the driver findings' fixes plan with; where
    the library is absent (this machine without the stand-in, unless it has a driver), it does not."""
    code = ("import sys; from envdoctor.host.live import LiveHost; from envdoctor.report import load_checks\n"
            "h = LiveHost(timeout=10); load_checks(h)\n"
            "print(h.nvml_library_present(), 'envdoctor.recipes.driver' in sys.modules)\n")
    stand_in = fake_env(fake_lib, write_answers(load_answers("h100.json"), str(tmp_path / "answers.txt")))
    plain = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    for env, driver in ((stand_in, True), (plain, None)):
        r = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
        present, loaded = r.stdout.split()
        assert present == loaded, r.stderr[-2000:]
        if driver:
            assert present == "True"


def test_a_plain_diagnose_launches_its_programs_before_importing_the_bulk_of_the_run():
    """docker's command (about 20 MiB) runs beside the interpreter as it is when the programs are launched ahead;
    their memory adds up (``scripts/bench_diagnose.py`` measures the whole process tree). So a plain ``diagnose``
    of this machine launches them before it imports the framework plug-ins, the ``distro`` library (with argparse
    and logging) and ``dataclasses`` (with inspect and ast)."""
    code = ("import sys, envdoctor.probes as p\n"
            "orig = p.launch_ahead\n"
            "def spy(*a, **k):\n"
            "    sys.stderr.write('IMPORTED ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
            "    return orig(*a, **k)\n"
            "p.launch_ahead = spy\n"
            "sys.argv = ['envdoctor', 'diagnose', '--format', 'json']\n"
            "from envdoctor.launcher import main\n"
            "main()\n")
    res = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, timeout=120, cwd=ROOT)
    line = next(x for x in res.stderr.splitlines() if x.startswith("IMPORTED "))
    imported = set(line.split()[1:])
    assert {"envdoctor.host.live", "envdoctor.probes"} <= imported  # launched from where it is
    assert not {"envdoctor.frameworks", "envdoctor.target", "envdoctor.osinfo", "distro", "dataclasses",
                "envdoctor.report", "envdoctor.checks"} & imported

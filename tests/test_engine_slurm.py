"""contrib/slurm/envdoctor-healthcheck and envdoctor-prolog under the real Slurm daemons.

munged, slurmctld and slurmd run in the foreground on 127.0.0.1 with a temporary slurm.conf (their own
ports, state and spool directories under the test's temporary directory) and are stopped by their
PIDs.  The node's GPU stack is a snapshot the health check replays (``--snapshot``): the test points a
symbolic link at the broken or the healthy capture and waits for Slurm to say what it should:

* broken -> `sinfo -R` shows "envdoctor: driver.version: 535.154.05, want >=550" within 10 s;
* healthy again -> the node is resumed;
* an operator's drain reason is kept, broken or healthy;
* a prolog that fails -> the job is requeued held and the node drained with envdoctor's reason.

Needs root (slurmd runs jobs as their users) and slurmctld, slurmd, munged, sinfo, scontrol, sbatch.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
from typing import Callable, Dict, List

import pytest

from .engines import BROKEN, BROKEN_LINE, HEALTHY, ROOT, envdoctor_argv, envdoctor_env, which, write_policy

MISSING = which("slurmctld", "slurmd", "munged", "sinfo", "scontrol", "sbatch", "squeue")
pytestmark = [
    pytest.mark.engine,
    pytest.mark.slurm,
    pytest.mark.skipif(bool(MISSING), reason="Slurm not installed: no %s" % ", ".join(MISSING)),
    pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() != 0, reason="the Slurm daemons need root"),
]

NODE = "envdoctor-test"
DEADLINE = 10.0  # seconds Slurm has to show a change (the bound)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sbin(name: str) -> str:
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]:
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    raise RuntimeError(name)


class Cluster:
    def __init__(self, tmp: str) -> None:
        self.tmp = tmp
        self.procs: List[subprocess.Popen] = []
        self.node_state = os.path.join(tmp, "node-snapshot.json")  # the link the health check replays
        self.prolog_state = os.path.join(tmp, "prolog-snapshot.json")  # the prolog's (told apart to test it alone)
        self.conf = os.path.join(tmp, "slurm.conf")
        self.env = dict(envdoctor_env(), SLURM_CONF=self.conf)

    def point_at(self, snapshot: str, link: str = "") -> None:
        link = link or self.node_state
        tmp_link = link + ".new"
        if os.path.lexists(tmp_link):
            os.unlink(tmp_link)
        os.symlink(snapshot, tmp_link)
        os.replace(tmp_link, link)

    def wrapper(self, name: str, script: str, state: str) -> str:
        """A wrapper setting what the contrib script reads (slurmd gives its programs a bare environment)."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as fh:
            fh.write("#!/bin/bash\n")
            for k, v in (("SLURM_CONF", self.conf), ("PATH", os.environ.get("PATH", "") + ":/usr/sbin:/sbin"),
                         ("PYTHONPATH", self.env["PYTHONPATH"]),
                         ("ENVDOCTOR", " ".join(shlex.quote(a) for a in envdoctor_argv())),
                         ("ENVDOCTOR_POLICY", os.path.join(self.tmp, "policy.toml")),
                         ("ENVDOCTOR_NODE", NODE), ("ENVDOCTOR_TIMEOUT", "10"),
                         ("ENVDOCTOR_ARGS", "--snapshot " + state)):
                fh.write("export %s=%s\n" % (k, shlex.quote(v)))
            fh.write("exec %s \"$@\"\n" % shlex.quote(os.path.join(ROOT, "contrib", "slurm", script)))
        os.chmod(path, 0o755)
        return path

    def start(self) -> None:
        t = self.tmp
        write_policy(t)
        self.point_at(BROKEN)
        self.point_at(HEALTHY, self.prolog_state)
        key = os.path.join(t, "munge.key")
        with open(key, "wb") as fh:
            fh.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = os.path.join(t, "munge.sock")
        for d in ("state", "spool", "log"):
            os.makedirs(os.path.join(t, d), exist_ok=True)
        ctld_port, d_port = _free_port(), _free_port()
        conf = {
            "ClusterName": "envdoctortest", "SlurmctldHost": "localhost(127.0.0.1)",
            "SlurmctldPort": str(ctld_port), "SlurmdPort": str(d_port), "SlurmUser": "root",
            "SlurmdUser": "root", "AuthType": "auth/munge", "CredType": "cred/munge",
            "AuthInfo": "socket=" + sock, "StateSaveLocation": os.path.join(t, "state"),
            "SlurmdSpoolDir": os.path.join(t, "spool"), "SlurmctldPidFile": os.path.join(t, "ctld.pid"),
            "SlurmdPidFile": os.path.join(t, "slurmd.pid"), "SlurmctldLogFile": os.path.join(t, "log", "ctld.log"),
            "SlurmdLogFile": os.path.join(t, "log", "slurmd.log"), "ProctrackType": "proctrack/linuxproc",
            "TaskPlugin": "task/none", "JobAcctGatherType": "jobacct_gather/none",
            "SchedulerType": "sched/builtin", "SelectType": "select/cons_tres",
            "SelectTypeParameters": "CR_CPU", "ReturnToService": "2", "MpiDefault": "none",
            "HealthCheckProgram": self.wrapper("healthcheck", "envdoctor-healthcheck", self.node_state),
            "HealthCheckInterval": "2", "HealthCheckNodeState": "ANY",
            "Prolog": self.wrapper("prolog", "envdoctor-prolog", self.prolog_state),
            "SlurmctldTimeout": "30", "SlurmdTimeout": "30", "InactiveLimit": "0", "MinJobAge": "300",
            "KillWait": "2", "Waittime": "0", "SlurmctldDebug": "info", "SlurmdDebug": "info",
            "JobRequeue": "1", "PlugStackConfig": os.path.join(t, "plugstack.conf"),
        }
        open(os.path.join(t, "plugstack.conf"), "w").close()
        with open(self.conf, "w") as fh:
            for k, v in conf.items():
                fh.write("%s=%s\n" % (k, v))
            fh.write("NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n" % (
                NODE, socket.gethostname()))
            fh.write("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")
        log = open(os.path.join(t, "log", "daemons.out"), "ab")
        self.procs.append(subprocess.Popen(
            [_sbin("munged"), "-F", "--force", "--socket=" + sock, "--key-file=" + key,
             "--pid-file=" + os.path.join(t, "munged.pid"), "--log-file=" + os.path.join(t, "log", "munged.log"),
             "--seed-file=" + os.path.join(t, "munged.seed")], stdout=log, stderr=log, env=self.env))
        self._wait(lambda: os.path.exists(sock), 10, "munged did not start")
        self.procs.append(subprocess.Popen([_sbin("slurmctld"), "-D", "-i", "-f", self.conf], stdout=log, stderr=log,
                                           env=self.env))
        self._wait(lambda: self.run(["scontrol", "ping"]).returncode == 0, 20, "slurmctld did not answer")
        self.procs.append(subprocess.Popen([_sbin("slurmd"), "-D", "-N", NODE, "-f", self.conf], stdout=log,
                                           stderr=log, env=self.env))

    def run(self, argv: List[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=30, cwd=self.tmp, **kw)

    def _wait(self, ok: Callable[[], bool], seconds: float, why: str) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if ok():
                return
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.2)
        raise AssertionError("%s; logs:\n%s" % (why, self.logs()))

    def logs(self) -> str:
        out = []
        for name in ("daemons.out", "ctld.log", "slurmd.log"):
            path = os.path.join(self.tmp, "log", name)
            if os.path.exists(path):
                with open(path, errors="replace") as fh:
                    out.append("== %s\n%s" % (name, fh.read()[-3000:]))
        return "\n".join(out)

    def reason(self) -> str:
        return self.run(["sinfo", "-h", "-N", "-n", NODE, "-o", "%E"]).stdout.strip()

    def state(self) -> str:
        return self.run(["sinfo", "-h", "-N", "-n", NODE, "-o", "%T"]).stdout.strip()

    def wait_for(self, what: Callable[[], bool], why: str, seconds: float = DEADLINE) -> float:
        start = time.monotonic()
        self._wait(what, seconds, why + " (reason %r, state %r)" % (self.reason(), self.state()))
        return time.monotonic() - start

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("slurm")))
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_a_broken_node_is_drained_with_envdoctors_reason(cluster):
    cluster.point_at(BROKEN)
    took = cluster.wait_for(lambda: cluster.reason() == "envdoctor: " + BROKEN_LINE, "not drained")
    assert took <= DEADLINE
    assert "drain" in cluster.state()
    assert "envdoctor: " + BROKEN_LINE in cluster.run(["sinfo", "-R", "-o", "%100E %N"]).stdout


def test_a_healed_node_is_resumed(cluster):
    cluster.point_at(BROKEN)
    cluster.wait_for(lambda: cluster.reason().startswith("envdoctor: "), "not drained")
    cluster.point_at(HEALTHY)
    cluster.wait_for(lambda: cluster.reason() in ("", "none") and "drain" not in cluster.state(), "not resumed")


def test_an_operators_reason_is_kept(cluster):
    cluster.point_at(HEALTHY)
    cluster.wait_for(lambda: "drain" not in cluster.state(), "not resumed")
    assert cluster.run(["scontrol", "update", "NodeName=" + NODE, "State=DRAIN",
                        "Reason=operator: replacing a fan"]).returncode == 0
    cluster.point_at(BROKEN)
    time.sleep(6)  # three health checks
    assert cluster.reason() == "operator: replacing a fan"
    cluster.point_at(HEALTHY)
    time.sleep(6)
    assert cluster.reason() == "operator: replacing a fan" and "drain" in cluster.state()
    assert cluster.run(["scontrol", "update", "NodeName=" + NODE, "State=RESUME"]).returncode == 0
    cluster.wait_for(lambda: "drain" not in cluster.state(), "not resumed by the operator")


def _job(cluster, job_id: str) -> Dict[str, str]:
    out = cluster.run(["scontrol", "show", "job", "-o", job_id]).stdout
    fields: Dict[str, str] = {}
    for part in out.split():
        if "=" in part:
            k, v = part.split("=", 1)
            fields.setdefault(k, v)
    return fields


def test_a_failing_prolog_requeues_the_job_held(cluster):
    cluster.point_at(HEALTHY)
    cluster.point_at(HEALTHY, cluster.prolog_state)
    cluster.wait_for(lambda: cluster.state() == "idle", "not idle", seconds=20)
    out = os.path.join(cluster.tmp, "job-%j.out")
    # healthy: the job runs and writes its output in the temporary directory
    r = cluster.run(["sbatch", "--parsable", "-o", out, "-D", cluster.tmp, "--wrap", "echo ran"])
    assert r.returncode == 0, r.stderr
    ok_id = r.stdout.strip().split(";")[0]
    cluster.wait_for(lambda: _job(cluster, ok_id).get("JobState") == "COMPLETED", "healthy job did not run",
                     seconds=30)
    with open(out.replace("%j", ok_id)) as fh:
        assert fh.read() == "ran\n"
    # broken as the job starts (the health check has not run since): the prolog catches it
    cluster.wait_for(lambda: cluster.state() == "idle", "not idle", seconds=20)
    cluster.point_at(BROKEN, cluster.prolog_state)
    log_start = os.path.getsize(os.path.join(cluster.tmp, "log", "ctld.log"))
    r = cluster.run(["sbatch", "--parsable", "--requeue", "-o", out, "-D", cluster.tmp, "--wrap", "echo ran"])
    assert r.returncode == 0, r.stderr
    job_id = r.stdout.strip().split(";")[0]
    try:
        cluster.wait_for(lambda: _job(cluster, job_id).get("Priority") == "0",
                         "job not requeued held: %r" % (_job(cluster, job_id),), seconds=30)
        job = _job(cluster, job_id)
        assert job.get("JobState") == "PENDING" and int(job.get("Restarts", "0")) >= 1, job
        with open(os.path.join(cluster.tmp, "log", "ctld.log"), errors="replace") as fh:
            fh.seek(log_start)
            log = fh.read()
        assert "reason set to: envdoctor: " + BROKEN_LINE in log, log[-3000:]
        ran = out.replace("%j", job_id)
        if os.path.exists(ran):
            with open(ran) as fh:
                assert "ran" not in fh.read()  # the job's command never ran
    finally:
        cluster.run(["scancel", job_id])
        cluster.point_at(HEALTHY, cluster.prolog_state)

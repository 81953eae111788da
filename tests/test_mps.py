"""CUDA MPS: a server of another user holds the control daemon this user's CUDA programs reach (fired and quiet).

The /proc entries are those of the processes the MPS documentation describes: nvidia-cuda-mps-control -d (its pid
in <pipe directory>/nvidia-cuda-mps-control.pid) and the nvidia-cuda-mps-server it starts as its child, both named
"nvidia-cuda-mps" in comm and status (the kernel's 15 characters); the status lines are the kernel's format
(``Uid:`` real, effective, saved, filesystem).
"""

from __future__ import annotations

from typing import Dict, List, Optional

from envdoctor.checks import CheckContext
from envdoctor.checks.driver_health.mps import mps
from envdoctor.findings import Finding
from envdoctor.probes.driver import keep_mps_comm, keep_passwd_ids, keep_status_fields
from tests.conftest import probe_facts
from tests.test_probe_driver import driver_facts, healthy_550

PASSWD = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\n" \
         "bob:x:1001:1001::/home/bob:/bin/sh\n"


def status(name: str, pid: int, ppid: int, uid: int) -> str:
    return ("Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\nPPid:\t%d\n"
            "Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\n" % ((name, pid, pid, ppid) + (uid,) * 8))


def mps_machine(daemon_uid: Optional[int] = 0, server_uid: Optional[int] = 0, me: Optional[int] = 1000,
                pipe: str = "/tmp/nvidia-mps", environ: Optional[Dict[str, str]] = None,
                pid_file: Optional[str] = "2101\n", extra: Optional[Dict[str, str]] = None,
                drop: List[str] = ()):
    files = {"/etc/passwd": PASSWD, "/proc/1/comm": "systemd\n", "/proc/1/status": status("systemd", 1, 0, 0),
             "/proc/3000/comm": "python3\n", "/proc/3000/status": status("python3", 3000, 1, 1000)}
    if pid_file is not None:
        files[pipe + "/nvidia-cuda-mps-control.pid"] = pid_file
        files[pipe + "/control"] = ""
    if daemon_uid is not None:
        files["/proc/2101/comm"] = "nvidia-cuda-mps\n"
        files["/proc/2101/status"] = status("nvidia-cuda-mps", 2101, 1, daemon_uid)
    if server_uid is not None:
        files["/proc/2245/comm"] = "nvidia-cuda-mps\n"
        files["/proc/2245/status"] = status("nvidia-cuda-mps", 2245, 2101, server_uid)
    if me is not None:
        files["/proc/self/status"] = status("python3", 4242, 3000, me)
    files.update(extra or {})
    for path in drop:
        files.pop(path, None)
    host = healthy_550(files=files)
    host.doc["environ"] = dict({"PATH": "/usr/bin:/bin"}, **(environ or {}))
    return host


def findings(host) -> List[Finding]:
    return list(mps(CheckContext(probe_facts(host), [])))


def only(host) -> Finding:
    found = findings(host)
    assert [f.code for f in found] == ["mps.server_owned_by_other_user"], [(f.code, f.title) for f in found]
    f = found[0]
    assert f.severity == "warning" and f.source["url"].startswith("https://docs.nvidia.com/deploy/mps")
    return f


def test_root_server_blocks_another_user_names_both_and_the_fix():
    f = only(mps_machine())
    assert "MPS" in f.title and "root (uid 0)" in f.title and "alice (uid 1000)" in f.title
    assert "2245" in f.title and "/tmp/nvidia-mps" in f.title
    assert "queued" in f.detail and "one user's MPS server at a time" in f.detail
    assert "docker run -u" in f.fix.text
    assert f.fix.commands == ["ps -o pid,user,etime,args -p 2245", "echo quit | sudo nvidia-cuda-mps-control"]


def test_user_known_from_the_login_name_where_the_process_status_was_not_recorded():
    f = only(mps_machine(me=None, environ={"USER": "alice"}))
    assert "alice (uid 1000)" in f.title


def test_root_running_the_doctor_behind_a_user_server_at_its_own_pipe_directory():
    f = only(mps_machine(daemon_uid=1001, server_uid=1001, me=0, pipe="/run/mps pipe",
                         environ={"CUDA_MPS_PIPE_DIRECTORY": "/run/mps pipe"}))
    assert "bob (uid 1001)" in f.title and "root (uid 0)" in f.title
    assert f.fix.commands[-1] == ("echo quit | sudo -u bob env CUDA_MPS_PIPE_DIRECTORY='/run/mps pipe' "
                                  "nvidia-cuda-mps-control")


def test_quiet_without_mps():
    host = mps_machine(pid_file=None, daemon_uid=None, server_uid=None)
    assert findings(host) == []
    facts = driver_facts(host)
    assert facts.get("driver.mps.control_daemon") is None and facts.get("driver.mps.servers") is None


def test_quiet_when_the_server_is_this_users():
    assert findings(mps_machine(server_uid=1000)) == []


def test_quiet_when_no_server_started_yet():
    host = mps_machine(server_uid=None)
    assert findings(host) == []
    assert driver_facts(host).value("driver.mps.servers") == []


def test_quiet_for_a_pid_file_left_by_a_daemon_that_died_or_reused_pid():
    assert findings(mps_machine(daemon_uid=None, server_uid=None)) == []
    reused = mps_machine(extra={"/proc/2101/comm": "bash\n", "/proc/2101/status": status("bash", 2101, 1, 0)})
    assert findings(reused) == []
    assert driver_facts(reused).value("driver.mps.control_daemon")["running"] is False


def test_quiet_when_this_users_programs_reach_another_pipe_directory():
    # the user's programs reach another pipe directory, where no daemon runs: they do not use this daemon
    assert findings(mps_machine(environ={"CUDA_MPS_PIPE_DIRECTORY": "/scratch/mps"})) == []


def test_hostile_pid_file_and_vanished_processes_give_no_traceback():
    host = mps_machine(pid_file="not a pid\x00\n")
    assert findings(host) == []
    assert not driver_facts(host).get("driver.mps.control_daemon").known
    # the server ended between its comm and its status being read
    assert findings(mps_machine(drop=["/proc/2245/status"])) == []
    # who runs the doctor is unknown: no guess
    assert findings(mps_machine(me=None)) == []
    garbled = mps_machine(extra={"/proc/self/status": "Name:\tpython3\nUid:\tx y\n"})
    assert findings(garbled) == []


def test_unlistable_proc_is_an_unknown_fact():
    host = mps_machine()
    del host.doc["dirs"]["/proc"]
    facts = driver_facts(host)
    assert not facts.get("driver.mps.servers").known
    assert findings(host) == []


def test_snapshot_keeps_only_mps_process_names_status_ids_and_user_names():
    assert keep_mps_comm("nvidia-cuda-mps\n") == "nvidia-cuda-mps\n"
    assert keep_mps_comm("secret-job --token\n") == ""
    kept = keep_status_fields(status("nvidia-cuda-mps", 2245, 2101, 0) + "VmRSS:\t100 kB\n")
    assert kept == "Name:\tnvidia-cuda-mps\nPPid:\t2101\nUid:\t0\t0\t0\t0\n"
    assert keep_passwd_ids(PASSWD) == "root:x:0:\nalice:x:1000:\nbob:x:1001:\n"

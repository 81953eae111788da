"""contrib/ansible (collection envdoctor.cluster) run by the real ansible-core, and ansible-lint clean.

One inventory host per snapshot, all with ansible_connection=local (each with its own directory
standing in for its /opt/envdoctor); the playbook checks each host, fetches its report, runs `fleet
--policy` on the controller and fails exactly the hosts whose snapshot is broken: PLAY RECAP shows
failed=1 on those and failed=0 on the rest.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from .engines import BROKEN, BROKEN_LINE, HEALTHY, ROOT, envdoctor_argv, envdoctor_env, write_policy

BIN = os.path.dirname(sys.executable)


def _tool(name: str) -> str:
    return os.path.join(BIN, name) if os.path.exists(os.path.join(BIN, name)) else (shutil.which(name) or "")


pytestmark = [pytest.mark.engine,
              pytest.mark.skipif(not _tool("ansible-playbook"), reason="ansible-core not installed")]

HOSTS = {"gpu01": HEALTHY, "gpu02": BROKEN, "gpu03": HEALTHY, "gpu04": BROKEN}


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    root = tmp_path_factory.mktemp("collections")
    ns = root / "ansible_collections" / "envdoctor"
    ns.mkdir(parents=True)
    shutil.copytree(os.path.join(ROOT, "contrib", "ansible"), str(ns / "cluster"))
    return str(root)


def ansible_env(tmp: str, collections: str) -> dict:
    env = envdoctor_env()
    env.update(ANSIBLE_COLLECTIONS_PATH=collections, ANSIBLE_HOME=os.path.join(tmp, "ansible-home"),
               ANSIBLE_LOCAL_TEMP=os.path.join(tmp, "ansible-tmp"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               PATH=BIN + os.pathsep + env.get("PATH", ""))
    return env


def run_playbook(tmp_path, collection, extra, check_mode=False):
    inventory = tmp_path / "inventory.ini"
    lines = ["[gpu]"]
    for host, snap in HOSTS.items():
        lines.append("%s envdoctor_snapshot=%s envdoctor_node_dir=%s" % (host, snap, tmp_path / "nodes" / host))
    lines += ["", "[all:vars]", "ansible_connection=local", "ansible_python_interpreter=%s" % sys.executable]
    inventory.write_text("\n".join(lines) + "\n")
    playbook = os.path.join(collection, "ansible_collections", "envdoctor", "cluster", "playbooks", "preflight.yml")
    extra_vars = dict(extra, envdoctor_policy_src=write_policy(str(tmp_path)),
                      envdoctor_reports_dir=str(tmp_path / "reports"),
                      envdoctor_fleet_cmd=" ".join(envdoctor_argv()))
    argv = [_tool("ansible-playbook"), "-i", str(inventory), playbook, "-e", json.dumps(extra_vars)]
    if check_mode:
        argv.append("--check")
    return subprocess.run(argv, capture_output=True, text=True, env=ansible_env(str(tmp_path), collection),
                          timeout=600, cwd=str(tmp_path))


def recap(stdout: str) -> dict:
    out = {}
    for m in re.finditer(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", stdout, re.M):
        out[m.group(1)] = int(m.group(5))
    return out


def test_preflight_fails_exactly_the_broken_nodes(tmp_path, collection):
    cmd = " ".join(shlex.quote(a) for a in envdoctor_argv())
    r = run_playbook(tmp_path, collection, {"envdoctor_install": "none", "envdoctor_cmd": cmd})
    assert recap(r.stdout) == {"gpu01": 0, "gpu02": 1, "gpu03": 0, "gpu04": 1, "localhost": 0}, r.stdout + r.stderr
    assert r.returncode == 2  # ansible-playbook: some hosts failed
    assert "envdoctor: " + BROKEN_LINE in r.stdout
    reports = sorted(os.listdir(str(tmp_path / "reports")))
    assert reports == ["gpu01.json", "gpu02.json", "gpu03.json", "gpu04.json"]
    with open(str(tmp_path / "reports" / "gpu02.json")) as fh:
        assert json.load(fh)["policy"]["passed"] is False
    # the fleet summary, from the controller's play
    assert "Against the policy" in r.stdout and "2 of 4 nodes fail it" in r.stdout


def test_the_module_runs_in_check_mode(tmp_path, collection):
    cmd = " ".join(shlex.quote(a) for a in envdoctor_argv())
    env = ansible_env(str(tmp_path), collection)
    policy = write_policy(str(tmp_path))
    argv = [_tool("ansible"), "localhost", "-c", "local", "-i", "localhost,", "--check", "-m",
            "envdoctor.cluster.envdoctor_check", "-a",
            "policy=%s snapshot=%s envdoctor='%s' report_path=%s" % (policy, BROKEN, cmd, tmp_path / "r.json")]
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert r.returncode == 2 and "FAILED" in r.stdout, r.stdout + r.stderr
    assert "the node does not meet the policy: " + BROKEN_LINE in r.stdout
    assert not (tmp_path / "r.json").exists()  # nothing written in check mode
    argv[-1] = "policy=%s snapshot=%s envdoctor='%s'" % (policy, HEALTHY, cmd)
    r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=str(tmp_path))
    assert r.returncode == 0 and '"passed": true' in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(not _tool("ansible-lint"), reason="ansible-lint not installed")
def test_the_collection_is_ansible_lint_clean(tmp_path, collection):
    r = subprocess.run([_tool("ansible-lint"), "--offline"], capture_output=True, text=True, timeout=600,
                       env=ansible_env(str(tmp_path), collection),
                       cwd=os.path.join(collection, "ansible_collections", "envdoctor", "cluster"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "0 failure(s), 0 warning(s)" in r.stdout + r.stderr

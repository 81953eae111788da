"""CUDA MPS: an MPS server of another user holds the control daemon this user's CUDA programs reach."""

from __future__ import annotations

import shlex
from typing import Any, Dict, List

from ...facts import Facts
from ...findings import Finding, Fix
from .. import CheckContext, check, docs_for
from . import DOCS, READS, _evidence, _installed, _source

CODE = "mps.server_owned_by_other_user"


def _who(entry: Dict[str, Any]) -> str:
    uid = entry.get("uid")
    name = entry.get("user") or ("root" if uid == 0 else None)
    return "%s (uid %s)" % (name, uid) if name else "uid %s" % uid


def _quit_command(daemon: Dict[str, Any]) -> str:
    """``echo quit | nvidia-cuda-mps-control`` as the daemon's user, at its pipe directory."""
    pipe = str(daemon.get("pipe_directory") or "")
    env = "" if pipe in ("", "/tmp/nvidia-mps") else "env CUDA_MPS_PIPE_DIRECTORY=%s " % shlex.quote(pipe)
    uid = daemon.get("uid")
    if uid == 0:
        sudo = "sudo "
    elif daemon.get("user"):
        sudo = "sudo -u %s " % shlex.quote(str(daemon["user"]))
    else:
        sudo = "sudo -u '#%s' " % uid if isinstance(uid, int) else "sudo "
    return "echo quit | %s%snvidia-cuda-mps-control" % (sudo, env)


def _mps_other_user(facts: Facts) -> List[Finding]:
    daemon = facts.value("driver.mps.control_daemon")
    servers = facts.value("driver.mps.servers")
    me = facts.value("driver.mps.user")
    if not (isinstance(daemon, dict) and daemon.get("running") and isinstance(servers, list) and servers
            and isinstance(me, dict) and isinstance(me.get("uid"), int)):
        return []
    others = [s for s in servers if isinstance(s, dict) and isinstance(s.get("uid"), int) and s["uid"] != me["uid"]]
    if not others:
        return []
    pipe = daemon.get("pipe_directory") or "/tmp/nvidia-mps"
    owner = _who(others[0])
    pids = ",".join(str(s.get("pid")) for s in others)
    you = _who(me)
    quit_cmd = _quit_command(daemon)
    return [Finding(
        code=CODE, severity="warning", components=["driver"],
        title="The MPS server (pid %s) of the MPS control daemon at %s belongs to %s, not to %s: this user's CUDA "
              "programs wait until it exits" % (pids, pipe, owner, you),
        detail="An MPS control daemon (nvidia-cuda-mps-control, pid %s, run by %s) serves the CUDA programs that "
               "reach its pipe directory %s. It runs one user's MPS server at a time: a CUDA client of another user "
               "is queued until that server has no clients left and exits, so CUDA programs of %s hang at "
               "initialisation while %s's MPS clients run (a container started without -u runs its programs as "
               "root)." % (daemon.get("pid"), _who(daemon), pipe, you, owner),
        evidence=_evidence(facts, "driver.mps.control_daemon", "driver.mps.servers", "driver.mps.user"),
        source=_source("mps"),
        fix=Fix(text="Run every MPS client as one user (the server's, or start containers with "
                     "`docker run -u $(id -u):$(id -g)`), or let %s's MPS clients finish, or stop MPS as its "
                     "daemon's user and start it again where this user's programs should share the GPU." % owner,
                commands=["ps -o pid,user,etime,args -p %s" % pids, quit_cmd]),
    )]


@check("driver-health.mps", requires=("driver.installed",), reads=READS, layers=("driver",),
       codes=docs_for(DOCS, CODE))
def mps(ctx: CheckContext) -> List[Finding]:
    return _mps_other_user(ctx.facts) if _installed(ctx.facts) else []




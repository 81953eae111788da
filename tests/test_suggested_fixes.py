"""Fixes that work: every `envdoctor install ...` line a finding suggests is accepted by `envdoctor install`.

For every machine in tests/machines and tests/corpus (real captures and machines rebuilt from public reports),
`diagnose` runs on its snapshot, and each suggested install line is planned with `--dry-run --snapshot` of the
same machine, as a user would run it: exit 0.  The redist method (`--prefix`) reads NVIDIA's manifest over the
network; where NVIDIA's server cannot be reached (these test machines), the same line is planned against a
loopback mirror (`--mirror`) serving NVIDIA's real 12.4.1 manifest relabelled as the release asked for: a stand-in
for the network, which checks everything but the release's own component list.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re
import shlex
from typing import Dict, List, Optional, Tuple

import pytest
from click.testing import CliRunner

from envdoctor.checks.suggest import install_line
from envdoctor.cli import cli
from envdoctor.facts import Facts, ok

HERE = os.path.dirname(os.path.abspath(__file__))
SNAPSHOTS = sorted(glob.glob(os.path.join(HERE, "machines", "*", "snapshot.json"))
                   + glob.glob(os.path.join(HERE, "corpus", "*", "snapshot.json")))


def _suggested(snaps: List[str]) -> List[Tuple[str, str, str]]:
    out = []
    for snap in snaps:
        r = CliRunner().invoke(cli, ["diagnose", "--snapshot", snap, "--format", "json"])
        for f in json.loads(r.output)["findings"]:
            if f["fix"]["install"]:
                out.append((os.path.basename(os.path.dirname(snap)), f["code"], f["fix"]["install"]))
    return out


def test_the_machines_suggest_install_lines_at_all() -> None:
    # the captured machines alone (the corpus's lines are checked machine by machine below)
    suggested = _suggested([s for s in SNAPSHOTS if os.sep + "machines" + os.sep in s])
    assert len(suggested) >= 5 and len({line.split()[2] for _, _, line in suggested}) >= 2


class _Manifests(dict):
    """/redist/redistrib_<release>.json for any release: NVIDIA's real 12.4.1 manifest, relabelled."""

    def get(self, path: str, default: Optional[bytes] = None) -> Optional[bytes]:  # type: ignore[override]
        from .test_install_redist import REAL_CUDA_12_4_1

        m = re.match(r"^/redist/redistrib_(\d+\.\d+\.\d+)\.json$", path)
        if not m:
            return default
        doc: Dict[str, object] = copy.deepcopy(REAL_CUDA_12_4_1)
        doc["release_label"] = m.group(1)
        return json.dumps(doc).encode()


@pytest.fixture(scope="module")
def mirror():
    from .loopback import Server

    srv = Server({}, lifetime=1800.0)
    srv.files = _Manifests()
    yield srv.url + "/redist/"
    srv.close()


# One test per machine, which diagnoses it and tries each install line its findings suggest: the diagnoses run in
# the tests (spread over the workers), not at collection, where every worker would run all of them.
@pytest.mark.parametrize("snap", SNAPSHOTS, ids=[os.path.basename(os.path.dirname(s)) for s in SNAPSHOTS])
def test_every_suggested_install_line_is_accepted(snap: str, mirror: str) -> None:
    for machine, code, line in _suggested([snap]):
        _accepted(snap, machine, code, line, mirror)


def _accepted(snap: str, machine: str, code: str, line: str, mirror: str) -> None:
    argv = shlex.split(line)
    assert argv[:2] == ["envdoctor", "install"]
    offline = ["--retries", "0", "--download-timeout", "3"] if "--prefix" in argv else []  # redist: one try
    r = CliRunner().invoke(cli, argv[1:] + ["--dry-run", "--snapshot", snap] + offline)
    if r.exit_code != 0 and "--prefix" in argv and ("cannot read the manifest" in r.output
                                                    or "cannot reach developer.download.nvidia.com" in r.output):
        # NVIDIA's server is out of reach here: the same line, its manifest from the loopback mirror
        r = CliRunner().invoke(cli, argv[1:] + ["--dry-run", "--snapshot", snap, "--mirror", mirror] + offline)
        assert r.exit_code != 0 or "from mirror redist archives" in r.output, r.output[-400:]
    assert r.exit_code == 0, "%s on %s: %r refused: %s" % (code, machine, line, r.output[-400:])


def _machine(os_id: str, version: str) -> Facts:
    return Facts([ok("os.id", os_id, "file:/etc/os-release"), ok("os.version", version, "file:/etc/os-release")])


def test_a_line_is_what_the_recipe_plans_for_this_target() -> None:
    # CentOS 7 has no driver module streams; the recipe locks a branch with nvidia-driver-branch-<N> (issue 14: it
    # used to refuse a branch there, so an exact branch got no line)
    centos7 = _machine("centos", "7.9.2009")
    assert install_line(centos7, "driver", "495") == "envdoctor install driver --version 495"
    assert install_line(centos7, "driver", "495", floor=True) == "envdoctor install driver --version 495"
    # Rocky 9 pins a branch through its module stream
    rocky9 = _machine("rocky", "9.4")
    assert install_line(rocky9, "driver", "560", floor=True) == "envdoctor install driver --version 560"
    # a machine no recipe targets: no line at all (the prose fix stands alone)
    assert install_line(_machine("arch", ""), "container-toolkit") is None
    assert install_line(Facts(), "driver") is None


def test_no_redist_line_for_a_cuda_without_redistributable_archives() -> None:
    ubuntu = _machine("ubuntu", "22.04")
    assert install_line(ubuntu, "cuda", "11.1.0", prefix="~/cuda-11.1") is None
    assert install_line(ubuntu, "cuda", "12.4.1", prefix="~/cuda-12.4") == \
        "envdoctor install cuda --version 12.4.1 --prefix ~/cuda-12.4"


def test_el7_commands_use_yum() -> None:
    from envdoctor.checks.suggest import rpm_tool

    assert rpm_tool(Facts([ok("os.id", "centos", "f"), ok("os.version", "7.9.2009", "f"),
                           ok("os.family", "rhel", "f")])) == "yum"
    assert rpm_tool(Facts([ok("os.id", "rocky", "f"), ok("os.version", "9.4", "f"), ok("os.family", "rhel", "f")])) \
        == "dnf"
    # the captured CentOS 7 machine: no command any finding suggests uses dnf
    r = CliRunner().invoke(cli, ["diagnose", "--snapshot", os.path.join(HERE, "machines", "centos7-a100-cuda115",
                                                                       "snapshot.json"), "--format", "json"])
    cmds = [c for f in json.loads(r.output)["findings"] for c in f["fix"]["commands"]]
    assert not any(c.startswith("sudo dnf") for c in cmds)

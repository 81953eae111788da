"""contrib/nhc/envdoctor.nhc run by the real LBNL NHC 1.4.3 (tests/third_party/, unpacked into a
temporary directory): `check_envdoctor` passes a healthy node and `die`s with envdoctor's one line on
a broken one; NHC's exit code and its "Health check failed:  check_envdoctor: ..." line are asserted."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import pytest

from .engines import (
    BROKEN,
    BROKEN_LINE,
    HEALTHY,
    ROOT,
    envdoctor_argv,
    envdoctor_env,
    nhc_tarball,
    unpack_nhc,
    write_policy,
)

pytestmark = [pytest.mark.engine,
              pytest.mark.skipif(not nhc_tarball(), reason="NHC 1.4.3 tarball (tests/third_party/) missing or altered")]


@pytest.fixture(scope="module")
def nhc(tmp_path_factory):
    if shutil.which("bash") is None:
        pytest.skip("NHC needs bash")
    return unpack_nhc(str(tmp_path_factory.mktemp("nhc")))


def run_nhc(nhc_dir: str, tmp_path, check_line: str, timeout: int = 30):
    confdir = tmp_path / "conf"
    (confdir / "scripts").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "contrib", "nhc", "envdoctor.nhc"), str(confdir / "scripts"))
    shutil.copy(os.path.join(nhc_dir, "scripts", "common.nhc"), str(confdir / "scripts"))
    conf = confdir / "nhc.conf"
    conf.write_text("* || export MARK_OFFLINE=0\n* || %s\n" % check_line)
    log = tmp_path / "nhc.log"
    env = envdoctor_env()
    env["ENVDOCTOR"] = " ".join(shlex.quote(a) for a in envdoctor_argv())
    r = subprocess.run(["bash", os.path.join(nhc_dir, "nhc"), "-D", str(confdir), "-c", str(conf), "-l", str(log),
                        "-t", str(timeout), "NHC_RM=", "HELPERDIR=" + os.path.join(nhc_dir, "helpers")],
                       capture_output=True, text=True, env=env, timeout=timeout + 30, cwd=str(tmp_path))
    return r, log.read_text() if log.exists() else ""


def test_nhc_passes_a_healthy_node(nhc, tmp_path):
    policy = write_policy(str(tmp_path))
    r, log = run_nhc(nhc, tmp_path, "check_envdoctor --policy %s --snapshot %s" % (policy, HEALTHY))
    assert r.returncode == 0, (r.stdout, r.stderr, log)
    assert "Health check failed" not in log + r.stdout


def test_nhc_fails_a_broken_node_with_envdoctors_line(nhc, tmp_path):
    policy = write_policy(str(tmp_path))
    r, log = run_nhc(nhc, tmp_path, "check_envdoctor --policy %s --snapshot %s" % (policy, BROKEN))
    assert r.returncode == 1, (r.stdout, r.stderr, log)
    assert "Health check failed:  check_envdoctor:  %s" % BROKEN_LINE in r.stdout + log


def test_nhc_reports_a_bad_policy_as_such(nhc, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('schema_version = 1\n[require]\n"driver.versoin" = ">=550"\n')
    r, log = run_nhc(nhc, tmp_path, "check_envdoctor --policy %s --snapshot %s" % (bad, HEALTHY))
    assert r.returncode == 1
    out = r.stdout + log
    assert "check_envdoctor:  envdoctor could not run (exit 2): bad policy: require.driver.versoin: unknown key" in out


def test_nhc_line_is_one_short_line_without_quotes():
    from envdoctor.policy import parse_policy
    from envdoctor.render.engines import NHC_MAX_BYTES, nhc_line

    report = {"probes": [{"name": "x", "facts": [
        {"key": "driver.version", "value": "535.'\"$(reboot)`\n" + "9" * 400, "status": "ok", "source": "s"},
        {"key": "gpu.count", "value": 1, "status": "ok", "source": "s"}]}],
        "findings": [{"code": "gpu.lost", "severity": "error", "title": "t"}]}
    line = nhc_line(parse_policy('schema_version = 1\n[require]\n"driver.version" = ">=550"\n"gpu.count" = 8\n')
                    .evaluate(report))
    assert len(line.encode()) <= NHC_MAX_BYTES and "\n" not in line
    assert not set("'\"`$") & set(line)
    assert line.endswith(" (+2 more)")

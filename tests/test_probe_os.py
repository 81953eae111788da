"""The OS probe when the machine it runs on is short of scratch space.

distro answers from a miniature root of the release files the host read (written to the host's
private scratch directory, Host.scratch_root, as distro's own tests feed it). Where that directory
goes must not decide the report: a replay on a machine whose $TMPDIR is gone reads the same OS as anywhere else.
"""

from __future__ import annotations

from envdoctor.probes import ProbeContext
from envdoctor.probes import system as sysprobe

from .conftest import load_machine


def _os_facts():
    return {f.key: f for f in sysprobe.probe_os(ProbeContext(load_machine("rocky8-4xa100-conda")))}


def test_a_missing_tmpdir_falls_back_to_the_usual_places(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "gone"))
    facts = _os_facts()
    assert facts["os.id"].value == "rocky" and facts["os.family"].value == "rhel"


def test_no_scratch_space_anywhere_is_an_unknown_with_the_reason(monkeypatch):
    def refuse(path, mode=0o777):
        raise OSError(30, "Read-only file system", path)

    from envdoctor.host import base

    monkeypatch.setattr(base.os, "mkdir", refuse)
    facts = _os_facts()
    assert facts["os.id"].status == "unknown"
    assert "Read-only file system" in facts["os.id"].reason and "/var/tmp" in facts["os.id"].reason
    assert facts["kernel.release"].value  # the rest of the layer is still there


def test_a_hung_getconf_is_timed_out_not_unknown():
    from .conftest import make_host

    host = make_host(commands=[{"argv": ["getconf", "GNU_LIBC_VERSION"], "timed_out": True, "returncode": None,
                                "duration": 3.0}])
    facts = {f.key: f for f in sysprobe.probe_os(ProbeContext(host))}
    assert facts["os.glibc"].status == "timed_out"


def test_the_scratch_root_is_removed_after_use(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    _os_facts()
    assert list(tmp_path.iterdir()) == []

"""The OS probe on a machine with nowhere to write.

The release files are read through the host and handed to distro in memory (envdoctor.osinfo.ReleaseFiles):
nothing is written. A machine whose disks are read-only or full, or whose $TMPDIR is gone, is identified
like any other; before, the files were copied to a scratch directory for distro to read, and such a machine
came out as "distribution unknown".
"""

from __future__ import annotations

import builtins
import os

from envdoctor.probes import ProbeContext
from envdoctor.probes import system as sysprobe

from .conftest import load_machine


def _os_facts():
    return {f.key: f for f in sysprobe.probe_os(ProbeContext(load_machine("rocky8-4xa100-conda")))}


def test_a_machine_with_nowhere_to_write_is_still_identified(monkeypatch, tmp_path):
    """Every directory creation and every file opened for writing fails, as on a read-only root."""
    def refuse_mkdir(path, mode=0o777, *a, **k):
        raise OSError(30, "Read-only file system", path)

    real_open = builtins.open

    def refuse_writes(file, mode="r", *a, **k):
        if any(c in mode for c in "wax+"):
            raise OSError(30, "Read-only file system", file)
        return real_open(file, mode, *a, **k)

    monkeypatch.setenv("TMPDIR", str(tmp_path / "gone"))
    monkeypatch.setattr(os, "mkdir", refuse_mkdir)
    monkeypatch.setattr(builtins, "open", refuse_writes)
    facts = _os_facts()
    assert facts["os.id"].value == "rocky" and facts["os.family"].value == "rhel"
    assert facts["os.version"].value == "8.9" and facts["os.codename"].value == "Green Obsidian"
    assert facts["kernel.release"].value


def test_nothing_is_written_while_the_os_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    _os_facts()
    assert list(tmp_path.iterdir()) == []


def test_a_hung_getconf_is_timed_out_not_unknown():
    from .conftest import make_host

    host = make_host(commands=[{"argv": ["getconf", "GNU_LIBC_VERSION"], "timed_out": True, "returncode": None,
                                "duration": 3.0}])
    facts = {f.key: f for f in sysprobe.probe_os(ProbeContext(host))}
    assert facts["os.glibc"].status == "timed_out"

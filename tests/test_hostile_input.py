"""Hostile bytes and hostile files: any byte in the environment or a file name is captured losslessly
and replayed, outputs escape C1 and bidi controls, a malformed os-release line costs that line, and
reads cut at their limit say so."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost
from envdoctor.report import diagnose

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOGPU = os.path.join(ROOT, "tests", "machines", "debian12-nogpu", "snapshot.json")
#: Not UTF-8 (0xff), a C1 control (NEL, U+0085), a bidi override (RLO, U+202E) and a line separator.
HOSTILE = b"a\xffb\xc2\x85c\xe2\x80\xaed\xe2\x80\xa8e"
RAW = ("\x85", "\u202e", "\u2028")


def test_any_byte_in_the_environment_and_file_names_survives_snapshot_and_replay(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    name = b"tool-\xfe\xff-\xe2\x80\xae"
    with open(os.path.join(os.fsencode(str(bindir)), name), "wb"):
        pass
    env = dict(os.environ, PATH=str(bindir) + os.pathsep + os.environ.get("PATH", ""))
    envb = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    envb[b"CUDA_HOSTILE_VALUE"] = HOSTILE  # CUDA_*: a snapshot records its value
    envb[b"HOSTILE_\xfe_NAME"] = HOSTILE  # no probe reads it: its name only
    snap = str(tmp_path / "snap.json")
    r = subprocess.run([sys.executable, "-m", "envdoctor", "snapshot", "-o", snap], env=envb, cwd=ROOT,
                       capture_output=True, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    raw = open(snap, "rb").read()
    text = raw.decode("utf-8")  # valid UTF-8
    assert not any(c in text for c in RAW)  # escaped, not raw
    doc = json.loads(text)
    # Lossless: the same text Python read from the machine (undecodable bytes as surrogateescape).
    assert os.fsencode(doc["environ"]["CUDA_HOSTILE_VALUE"]) == HOSTILE
    assert os.fsdecode(b"HOSTILE_\xfe_NAME") in doc["environ_names"]
    assert os.fsdecode(name) in doc["dirs"][str(bindir)]["entries"]
    for fmt in ("json", "text", "markdown"):
        r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--snapshot", snap, "--format", fmt, "-v"],
                           cwd=ROOT, capture_output=True, timeout=120)
        assert r.returncode in (0, 1) and b"Traceback" not in r.stderr, r.stderr
        out = r.stdout.decode("utf-8")
        assert not any(c in out for c in RAW), fmt
    # The live run's own outputs, too.
    for args in (("diagnose", "--format", "json", "-v"), ("diagnose", "-v"), ("snapshot", "-o", "-")):
        r = subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), env=envb, cwd=ROOT,
                           capture_output=True, timeout=120)
        assert b"Traceback" not in r.stderr and r.returncode in (0, 1), (args, r.stderr)
        out = r.stdout.decode("utf-8")
        assert not any(c in out for c in RAW), args


def _load():
    with open(NOGPU, encoding="utf-8") as fh:
        return json.load(fh)


def _facts(doc):
    return diagnose(SnapshotHost(copy.deepcopy(doc), "t"), scrubber=Scrubber(include_host=True)).facts


def test_a_malformed_os_release_line_costs_that_line_not_the_layer():
    doc = _load()
    text = doc["files"]["/etc/os-release"]["text"]
    doc["files"]["/etc/os-release"]["text"] = text.replace("VERSION_CODENAME=bookworm", 'VERSION_CODENAME="bookworm')
    facts = _facts(doc)
    assert facts.value("os.id") == "debian" and facts.value("os.version") == "12"
    assert facts.value("os.glibc") and facts.value("kernel.release")  # the rest of the layer is there
    assert facts.value("os.release_damaged") == ['/etc/os-release line 5: VERSION_CODENAME="bookworm']


def test_a_cpuinfo_cut_at_its_limit_says_so_instead_of_undercounting():
    doc = _load()
    one = doc["files"]["/proc/cpuinfo"]["text"].split("\n\n")[0] + "\n\n"
    doc["files"]["/proc/cpuinfo"] = {"text": one * 3, "truncated": True}
    facts = _facts(doc)
    threads = facts.get("cpu.threads")
    assert threads.status == "unknown" and "at least 3 threads" in threads.reason


def _cli(args, **kw):
    return subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), cwd=ROOT, capture_output=True,
                          timeout=120, **kw)


def test_output_that_cannot_be_written_is_one_line_and_exit_2():
    cases = (("explain", "gpu.lost"), ("diagnose", "--snapshot", NOGPU), ("fleet", NOGPU))
    for args in cases:
        with open("/dev/full", "wb") as full:
            r = subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), cwd=ROOT, stdout=full,
                               stderr=subprocess.PIPE, timeout=120)
        assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"No space left" in r.stderr, (
            args, r.stderr)
        # Started with stdout closed.
        r = subprocess.run([sys.executable, "-m", "envdoctor"] + list(args), cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=120, pass_fds=(), preexec_fn=lambda: os.close(1))
        assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"closed" in r.stderr, (args, r.stderr)
        # A reader that stops on purpose (`| head -c 1`): quiet, the command's own exit code.
        p = subprocess.Popen([sys.executable, "-m", "envdoctor"] + list(args), cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        assert p.stdout is not None
        p.stdout.read(1)
        p.stdout.close()
        err = p.stderr.read() if p.stderr else b""
        assert p.wait(120) in (0, 1) and b"Traceback" not in err and err == b"", (args, err)  # 1: found errors


def test_a_huge_number_is_a_usage_error():
    r = _cli(["matrix", "cuda", "9" * 5000])
    assert r.returncode == 2 and b"Traceback" not in r.stderr


def test_snapshot_as_root_refuses_a_link_another_user_planted(tmp_path):
    import pytest

    if os.geteuid() != 0:
        pytest.skip("the refusal applies to root; the tests run as another user")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)  # like /tmp
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = shared / "snap.json"
    os.symlink(str(victim), str(link))
    os.lchown(str(link), 65534, 65534)  # planted by nobody
    r = _cli(["snapshot", "-o", str(link)])
    assert r.returncode == 2 and b"symbolic link owned by uid 65534" in r.stderr and b"Traceback" not in r.stderr
    assert victim.read_text() == "precious\n"
    # root's own link is followed as before (the file it points to is replaced, the link stays).
    os.lchown(str(link), 0, 0)
    r = _cli(["snapshot", "-o", str(link)])
    assert r.returncode == 0 and json.loads(victim.read_text())["schema_version"] >= 1 and os.path.islink(str(link))


def test_a_huge_listing_is_still_checked_item_by_item():
    from envdoctor.host.snapshot import SnapshotError, validate_document

    doc = _load()
    doc["dirs"]["/opt/junk"] = {"entries": [str(i) for i in range(200000)] + [7]}
    try:
        validate_document(doc, "crafted")
    except SnapshotError as exc:
        assert "200000" in str(exc) and "string" in str(exc)
    else:
        raise AssertionError("a number among the names was accepted")
    doc["dirs"]["/opt/junk"]["entries"].pop()
    doc["environ"]["BAD"] = 5
    try:
        validate_document(doc, "crafted")
    except SnapshotError as exc:
        assert "BAD" in str(exc)
    else:
        raise AssertionError("a number as a variable's value was accepted")

"""torch.compile's caches on a noexec filesystem (framework.compile_cache_noexec): the probe's env.compile_cache
(where Inductor and Triton cache, on which mount), what a snapshot keeps of the mount table, and the check."""

from __future__ import annotations

from envdoctor.checks import CheckContext
from envdoctor.checks.frameworks import compile_cache_noexec
from envdoctor.facts import Facts, ok
from envdoctor.host.base import Host
from envdoctor.probes.containers import keep_shm_mount
from envdoctor.probes.environment import compile_cache

from .conftest import make_host

#: A host whose /tmp is a noexec tmpfs (the mount line of pytorch/pytorch#91005's machine), / allowing exec.
MOUNTS = ("/dev/sda2 / ext4 rw,relatime 0 0\n"
          "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
          "tmpfs /tmp tmpfs rw,nosuid,nodev,noexec,relatime 0 0\n"
          "/dev/sdb1 /data ext4 rw,relatime 0 0\n"
          "/dev/sdc1 /home/u/my\\040data ext4 rw,noexec,relatime 0 0\n")


def cache_of(environ, mounts=MOUNTS, where="/proc/mounts"):
    host: Host = make_host(files={where: mounts}, environ=environ)
    fact = compile_cache(host, host.environ())
    assert fact is not None
    return fact


def run(value, torch="2.0.0.dev20221214+cu117"):
    facts = Facts([ok("env.compile_cache", value, "file:/proc/mounts"),
                   ok("framework.torch", {"version": torch, "package": "torch"}, "python:torch")])
    return list(compile_cache_noexec(CheckContext(facts, [])))


def test_inductor_cache_in_a_noexec_tmp_warns_and_names_mount_and_variable():
    value = cache_of({"USER": "alice"}).value
    assert value["inductor"] == {"path": "/tmp/torchinductor_alice", "from": "default",
                                 "mount": {"point": "/tmp", "fstype": "tmpfs", "noexec": True}}
    assert value["triton"]["path"] == "/tmp/torchinductor_alice/triton"
    found = run(value)
    assert [f.code for f in found] == ["framework.compile_cache_noexec"]
    f = found[0]
    assert f.severity == "warning" and "noexec" in f.title and "/tmp" in f.title and "2.0.0" in f.title
    assert "TORCHINDUCTOR_CACHE_DIR" in f.fix.text and "failed to map segment" in f.detail
    # TMPDIR on a noexec mount moves the default there; an escaped mount point is read as the kernel writes it
    value = cache_of({"USER": "u", "TMPDIR": "/home/u/my data/tmp"}).value
    assert value["inductor"]["mount"]["point"] == "/home/u/my data" and run(value)


def test_caches_moved_to_an_exec_filesystem_or_an_exec_tmp_or_an_old_torch_are_quiet():
    moved = cache_of({"USER": "u", "TORCHINDUCTOR_CACHE_DIR": "/data/inductor"}).value
    assert moved["inductor"]["mount"]["noexec"] is False and moved["triton"]["path"] == "/data/inductor/triton"
    assert run(moved) == []
    assert run(cache_of({"USER": "u"}, mounts=MOUNTS.replace("nodev,noexec,relatime 0 0\n/dev/sdb1",
                                                               "nodev,relatime 0 0\n/dev/sdb1")).value) == []
    assert run(cache_of({"USER": "u"}).value, torch="1.13.1+cu117") == []  # no torch.compile before 2.0
    # Triton's cache moved elsewhere but Inductor's still in /tmp: still said, for Inductor
    both = cache_of({"USER": "u", "TRITON_CACHE_DIR": "/data/triton"}).value
    found = run(both)
    assert len(found) == 1 and "Inductor" in found[0].title and "Triton" not in found[0].title


def test_no_mount_table_gives_no_fact_and_a_snapshot_keeps_the_lines_that_decide():
    assert compile_cache(make_host(environ={"USER": "u"}), {"USER": "u"}) is None
    kept = keep_shm_mount(MOUNTS + "shm /dev/shm tmpfs rw,size=65536k 0 0\n/dev/sdd1 /srv ext4 rw 0 0\n")
    points = [line.split()[1] for line in kept.splitlines()]
    assert points == ["/", "/proc", "/tmp", "/home/u/my\\040data", "/dev/shm"]  # /data and /srv: not needed


def test_a_kept_mount_line_names_no_server_and_no_credentials_and_replays_the_same():
    """A noexec /tmp on NFS and a CIFS share below it: the snapshot keeps where they are mounted and their flags,
    not the server (``10.0.0.5:/tmp``, ``//nas/share``) nor the options that name the site or a user."""
    table = ("10.0.0.5:/tmp /tmp nfs rw,noexec,vers=4.2,addr=10.0.0.5,clientaddr=10.0.0.9 0 0\n"
             "//nas.corp.example/share /tmp/x cifs rw,username=bob,domain=CORP,uid=1000 0 0\n"
             "shm /dev/shm tmpfs rw,nosuid,nodev,noexec,size=65536k 0 0\n")
    kept = keep_shm_mount(table)
    for secret in ("10.0.0", "nas.corp", "bob", "CORP", "addr="):
        assert secret not in kept, kept
    assert kept.splitlines()[0].split()[:4] == ["nfs", "/tmp", "nfs", "rw,noexec"]
    assert "size=65536k" in kept
    live, replayed = cache_of({"USER": "u"}, mounts=table), cache_of({"USER": "u"}, mounts=kept)
    assert live.value == replayed.value and live.value["inductor"]["mount"]["noexec"]

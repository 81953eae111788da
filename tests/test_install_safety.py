"""Issue 14, part 1: an installer you can trust as root, executed for real.

Hostile archives (built here with ``tarfile``, the shapes of the published tar-slip and symlink-chain
escapes), each unpacked through the executor with and without ``tarfile``'s extraction filters (their
absence is emulated by hiding ``tarfile.data_filter``, as on Python 3.8.0-3.8.16 ... 3.11.0-3.11.3);
staging, locking, free space, a full disk, Ctrl-C and a killed server, against the loopback mirror of
tests/test_install_redist.py (NVIDIA's manifest format, real 12.4.1 manifest excerpt).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from typing import Dict, List

import pytest
from click.testing import CliRunner

from envdoctor.cli.install import install
from envdoctor.install import extract as extract_mod
from envdoctor.install.archive import Extract
from envdoctor.install.download import DownloadError, DownloadOptions, download
from envdoctor.install.executor import Executor
from envdoctor.install.lock import Busy, PrefixLock
from envdoctor.install.plan import Plan, Step, render_sh
from envdoctor.recipes import cuda_redist
from tests.loopback import Server
from tests.test_install_redist import REAL_CUDA_12_4_1, _archive_bytes, make_plan, run_plan, served_manifest

ROOT = os.geteuid() == 0


# -- hostile archives ----------------------------------------------------------------
def _file(name: str, data: bytes = b"x") -> tuple:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def _special(name: str, kind: bytes) -> tuple:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info, None


def _chain(depth: int = 6) -> List[tuple]:
    """``l0 -> .``, ``lN -> l(N-1)/..`` (each lexically inside), then ``escape -> l0/l1/.../l5/etc``.

    Every link looks inside to a check that normalises the path without resolving links; resolved,
    ``lN`` is N directories above the top, so ``escape`` (and anything written through it) leaves it."""
    members = [_link("top/l0", ".")]
    for i in range(1, depth):
        members.append(_link(f"top/l{i}", f"l{i - 1}/.."))
    members.append(_link("top/escape", "/".join(f"l{i}" for i in range(depth)) + "/etc"))
    return members


HOSTILE: Dict[str, List[tuple]] = {
    "climbing member": [_file("top/../../escaped.txt")],
    "absolute member": [_file("/tmp/envdoctor-absolute-member.txt")],
    "hard link to a missing member": [_file("top/a"), _link("top/h", "top/missing", tarfile.LNKTYPE)],
    "hard link outside": [_link("top/h", "../../../etc/passwd", tarfile.LNKTYPE)],
    "device file": [_special("top/dev", tarfile.CHRTYPE)],
    "FIFO": [_special("top/fifo", tarfile.FIFOTYPE)],
    "absolute symlink": [_link("top/etc", "/etc")],
    "symlink chain": _chain(),
    "symlink chain, then a file through it": _chain()[:-1] + [_link("top/out", "l5"), _file("top/out/escaped.txt")],
    "link, then a file through the link": [_link("top/up", "l0/.."), _link("top/l0", "."),
                                          _file("top/up/escaped.txt")],
    "link whose meaning a later link changes": [_link("top/a", "b/../escaped.txt"), _link("top/b", ".")],
}


def _tar(path: str, members: List[tuple]) -> str:
    with tarfile.open(path, "w:xz") as tf:
        tf.addfile(_file("top/include/ok.h", b"ok")[0], io.BytesIO(b"ok"))
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


@pytest.fixture(params=["with the data filter", "without the data filter"])
def filter_mode(request, monkeypatch):
    if request.param == "without the data filter":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
        assert not extract_mod.has_data_filter()
    elif not extract_mod.has_data_filter():
        pytest.skip("this Python's tarfile has no extraction filters")
    return request.param


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_archive_is_refused_clearly_and_nothing_leaves_the_tree(name, filter_mode, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    tree = work / "staging" / "tree"
    archive = _tar(str(tmp_path / "evil.tar.xz"), HOSTILE[name])
    marker = work / "staging" / "markers" / "abc.unpacked"
    plan = Plan("p", "cuda", "1", "redist", "t", steps=[
        Step("x", "unpack", Extract(archive, str(tree), strip_components=1, marker=str(marker)))])
    lines: List[str] = []
    before = set(os.listdir(str(tmp_path)))
    result = Executor(lines.append, yes=True, uid=lambda: 1000, log_path=str(tmp_path / "l.log")).execute(plan)
    assert result.exit_code == 2, lines  # refused: running it again cannot help
    why = result.outcomes[0].detail
    assert "refus" in why and "Traceback" not in why and "KeyError" not in why, why
    assert "\n" not in why
    assert not tree.exists()  # nothing of it is kept
    assert not marker.exists()
    assert set(os.listdir(str(tmp_path))) == before | {"l.log"}
    assert not os.path.exists("/tmp/envdoctor-absolute-member.txt")
    for dirpath, _dirs, files in os.walk(str(tmp_path)):
        assert "escaped.txt" not in files, dirpath


def test_the_chain_is_refused_through_the_whole_redist_install(filter_mode, tmp_path):
    """The symlink chain served by the mirror as cuda_cccl's archive: the prefix never appears and
    no link to /etc is left anywhere."""
    doc, files = served_manifest()
    rel = doc["cuda_cccl"]["linux-x86_64"]["relative_path"]
    top = "cuda_cccl-linux-x86_64-12.4.127-archive"
    members = [(i.replace(name=top + i.name[3:], deep=False) if hasattr(i, "replace") else i, d)
               for i, d in _chain()]
    evil = _tar(str(tmp_path / "cccl.tar.xz"), [])
    with tarfile.open(evil, "w:xz") as tf:
        for info, data in members:
            if not hasattr(info, "replace"):
                info.name = top + info.name[3:]
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    data = open(evil, "rb").read()
    files["/redist/" + rel] = data
    doc["cuda_cccl"]["linux-x86_64"].update(sha256=hashlib.sha256(data).hexdigest(), size=str(len(data)))
    srv = Server(files)
    srv.doc = doc
    try:
        prefix = str(tmp_path / "cuda")
        result, lines = run_plan(make_plan(srv, prefix), tmp_path)
    finally:
        srv.close()
    assert result.exit_code == 2 and "outside the target directory" in result.message, lines
    assert not os.path.lexists(prefix)
    for dirpath, dirs, fls in os.walk(str(tmp_path)):
        for n in dirs + fls:
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                assert os.path.realpath(p).startswith(str(tmp_path)), p


def test_each_component_keeps_its_licence(tmp_path):
    srv = Server(served_manifest()[1])
    srv.doc = served_manifest()[0]
    try:
        prefix = tmp_path / "cuda"
        result, lines = run_plan(make_plan(srv, str(prefix)), tmp_path)
    finally:
        srv.close()
    assert result.exit_code == 0, lines
    assert (prefix / "LICENSE.cuda_nvcc").read_text() == "nvcc license\n"
    assert (prefix / "LICENSE.cuda_cudart").read_text() == "cudart license\n"
    assert (prefix / "LICENSE.cuda_cccl").read_text() == "cccl license\n"
    assert not (prefix / "LICENSE").exists()


# -- staging keyed by what the plan installs ----------------------------------------
def _manifest_12_4_0():
    """12.4.0's manifest shape (the real 12.4.0 has cuda_nvcc 12.4.99, cudart 12.4.99): different archives."""
    doc = copy.deepcopy(REAL_CUDA_12_4_1)
    doc["release_label"] = "12.4.0"
    files = {}
    for comp in ("cuda_cudart", "cuda_nvcc", "cuda_cccl"):
        entry = doc[comp]
        entry["version"] = "12.4.99" if comp != "cuda_cccl" else "12.4.99"
        plat = entry["linux-x86_64"]
        plat["relative_path"] = plat["relative_path"].replace("12.4.127", "12.4.99").replace("12.4.131", "12.4.99")
        data = _archive_bytes(comp, "12.4.99")
        plat.update(sha256=hashlib.sha256(data).hexdigest(), size=str(len(data)))
        files["/redist/" + plat["relative_path"]] = data
    files["/redist/redistrib_12.4.0.json"] = json.dumps(doc).encode()
    return doc, files


def test_a_failed_run_of_one_release_never_leaks_into_the_next(tmp_path):
    """A 12.4.1 run that fails after unpacking two archives, then a 12.4.0 run into the same prefix:
    the prefix holds 12.4.0's files only (markers were keyed by component, so 12.4.1's stayed)."""
    doc, files = served_manifest()
    rel = doc["cuda_cccl"]["linux-x86_64"]["relative_path"]
    broken = b"\xfd7zXZ\x00 not really xz"
    files["/redist/" + rel] = broken
    doc["cuda_cccl"]["linux-x86_64"].update(sha256=hashlib.sha256(broken).hexdigest(), size=str(len(broken)))
    doc0, files0 = _manifest_12_4_0()
    files.update(files0)
    srv = Server(files)
    prefix = str(tmp_path / "cuda")
    try:
        srv.doc = doc
        result, _ = run_plan(make_plan(srv, prefix), tmp_path)
        assert result.exit_code == 2 and "not a well-formed .xz file" in result.message
        assert [o.id for o in result.outcomes if o.status == "done" and o.id.startswith("unpack-")] == [
            "unpack-cuda_cudart", "unpack-cuda_nvcc"]  # 12.4.1's nvcc was unpacked before the failure...
        assert not os.path.exists(os.path.join(cuda_redist.staging_dir(prefix), "tree"))  # ... and discarded
        req = cuda_redist.RedistRequest(product="cuda", version="12.4.0", prefix=prefix, base_url=srv.url + "/redist",
                                        components=["cuda_cudart", "cuda_nvcc"], platform="linux-x86_64")
        # 12.4.1's nvcc in the staging tree, marked unpacked: a per-component marker would skip 12.4.0's
        p0 = cuda_redist.plan(req, cuda_redist.parse_manifest(doc0))
        result, lines = run_plan(p0, tmp_path)
    finally:
        srv.close()
    assert result.exit_code == 0, lines
    unpacked = [o.id for o in result.outcomes if o.status == "done" and o.id.startswith("unpack-")]
    assert unpacked == ["unpack-cuda_cudart", "unpack-cuda_nvcc"]
    assert json.load(open(os.path.join(prefix, "version.json")))["cuda_nvcc"]["version"] == "12.4.99"
    assert not os.path.exists(os.path.join(prefix, "include", "cuda", "std", "version"))  # 12.4.1's cccl: gone


def test_a_staging_link_is_never_followed(tmp_path):
    """A pre-existing ``<prefix>.envdoctor-staging`` link (e.g. planted by another user): refused."""
    srv = Server(served_manifest()[1])
    srv.doc = served_manifest()[0]
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir()
    prefix = str(tmp_path / "cuda")
    os.symlink(str(elsewhere), cuda_redist.staging_dir(prefix))
    try:
        result, _ = run_plan(make_plan(srv, prefix), tmp_path)
    finally:
        srv.close()
    assert result.exit_code == 1 and "symbolic link" in result.message
    assert os.listdir(str(elsewhere)) == []
    assert not any(r["path"].endswith(".tar.xz") for r in srv.requests)


@pytest.mark.skipif(not ROOT, reason="needs root to make a directory owned by another user")
def test_a_staging_directory_of_another_user_is_never_used(tmp_path):
    prefix = str(tmp_path / "cuda")
    theirs = cuda_redist.staging_dir(prefix)
    os.mkdir(theirs, 0o700)
    os.chown(theirs, 65534, 65534)
    srv = Server(served_manifest()[1])
    srv.doc = served_manifest()[0]
    try:
        result, _ = run_plan(make_plan(srv, prefix), tmp_path)
    finally:
        srv.close()
    assert result.exit_code == 1 and "belongs to uid 65534" in result.message
    assert os.listdir(theirs) == []
    # a real run claims its own fresh directory instead, beside the prefix, private
    fresh = cuda_redist.claim_staging(prefix, "plan-a")
    assert fresh != theirs and os.path.dirname(fresh) == str(tmp_path) and not os.path.exists(fresh)


def test_claim_staging_resumes_only_its_own_plan(tmp_path):
    prefix = str(tmp_path / "cuda")
    first = cuda_redist.claim_staging(prefix, "plan-a")
    os.mkdir(first, 0o700)
    with open(os.path.join(first, "plan"), "w") as f:
        f.write("plan-a\n")
    assert cuda_redist.claim_staging(prefix, "plan-a") == first  # resumed
    other = cuda_redist.claim_staging(prefix, "plan-b")  # a different plan: the old staging goes
    assert other != first and not os.path.exists(first)
    link = prefix + ".envdoctor-staging-deadbeef"
    os.symlink(str(tmp_path), link)
    assert cuda_redist.claim_staging(prefix, "plan-c") != link and os.path.islink(link)  # never used, never removed


# -- the command line: staging, locks, --force ----------------------------------------
@pytest.fixture
def server():
    doc, files = served_manifest()
    # a bound, not a wait: on a loaded 2-core runner a subprocess test can take most of the default 60 s before
    # its download starts, and a server that stopped itself cuts a stalled download short
    srv = Server(files, lifetime=240.0)
    srv.doc = doc
    yield srv
    srv.close()


def _cli(srv: Server, prefix: str, tmp_path, *extra: str):
    return CliRunner().invoke(install, ["cuda", "--version", "12.4.1", "--prefix", prefix, "--mirror",
                                       srv.url + "/redist", "--platform", "linux-x86_64", "--yes", "--retries", "0",
                                       "--download-timeout", "2", "--log-file", str(tmp_path / "cli.log"), *extra])


def test_cli_uses_a_fresh_private_staging_directory_and_leaves_planted_ones_alone(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    planted = tmp_path / "planted"
    planted.mkdir()
    os.symlink(str(planted), cuda_redist.staging_dir(prefix))
    os.symlink(str(planted), prefix + ".envdoctor-staging-00000000")
    res = _cli(server, prefix, tmp_path)
    assert res.exit_code == 0, res.output
    assert os.path.isfile(os.path.join(prefix, "bin", "nvcc"))
    assert os.listdir(str(planted)) == []
    steps = [ln for ln in res.output.splitlines() if "private staging directory" in ln]
    assert steps and ".envdoctor-staging-" in steps[0]


def test_a_successful_install_leaves_nothing_beside_the_prefix(server, tmp_path, monkeypatch):
    """issue 20: a redist install left PREFIX.envdoctor-lock in the user's directory. The lock lives in the
    user's runtime directory (else the cache directory), named after the prefix's real path."""
    from envdoctor.install.lock import lock_path

    home = tmp_path / "home"
    home.mkdir()
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    prefix = str(home / "cuda-12.4")
    res = _cli(server, prefix, tmp_path)
    assert res.exit_code == 0, res.output
    assert os.listdir(str(home)) == ["cuda-12.4"]  # no lock, no staging left beside it
    assert os.path.dirname(lock_path(prefix)) == str(run / "envdoctor" / "locks")
    assert os.path.exists(lock_path(prefix)) and lock_path(prefix) == lock_path(str(home) + "/./cuda-12.4/")
    # Without a runtime directory of the user's: the cache directory.
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert lock_path(prefix).startswith(str(tmp_path / "cache" / "envdoctor" / "locks") + "/")


def test_a_second_run_into_a_locked_prefix_says_who_holds_it(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom envdoctor.install.lock import PrefixLock\n"
                               "PrefixLock(sys.argv[1]).acquire()\nprint('locked', flush=True)\ntime.sleep(30)",
                               prefix], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(Busy, match=r"another envdoctor install is running into .*pid %d" % holder.pid):
            PrefixLock(prefix).acquire()
        res = _cli(server, prefix, tmp_path)
        assert res.exit_code == 2 and "pid %d" % holder.pid in res.output
        assert not os.path.exists(prefix) and not any(r["path"].endswith(".tar.xz") for r in server.requests)
    finally:
        holder.kill()
        holder.wait()
    res = _cli(server, prefix, tmp_path)  # the lock died with its holder
    assert res.exit_code == 0, res.output


def test_concurrent_runs_into_one_prefix_one_installs_the_other_is_told(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    rel = server.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    server.modes["/redist/" + rel] = ["slow"]
    cmd = [sys.executable, "-m", "envdoctor", "install", "cuda", "--version", "12.4.1", "--prefix", prefix,
           "--mirror", server.url + "/redist", "--platform", "linux-x86_64", "--yes", "--retries", "0"]
    env = dict(os.environ, ENVDOCTOR_TIMEOUT="3")
    procs = [subprocess.Popen(cmd + ["--log-file", str(tmp_path / f"{i}.log")], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for i in range(3)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    done = [o for p, o in zip(procs, outs) if p.returncode == 0]
    told = [o for p, o in zip(procs, outs) if p.returncode == 2]
    # each run either installed, found the finished install (exit 0), or was told who holds the lock
    assert codes.count(1) == 0, outs
    assert done and all("another envdoctor install is running" in o for o in told), outs
    assert json.load(open(os.path.join(prefix, "version.json")))["cuda"]["version"] == "12.4.1"


def test_force_refuses_a_directory_of_results_unless_force_any(server, tmp_path):
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    (prefix / "results.csv").write_text("weeks of work")
    res = _cli(server, str(prefix), tmp_path, "--force")
    assert res.exit_code == 2 and "not a CUDA toolkit" in res.output and "--force-any" in res.output
    assert (prefix / "results.csv").read_text() == "weeks of work"
    res = _cli(server, str(prefix), tmp_path, "--force", "--force-any")
    assert res.exit_code == 0, res.output
    (old,) = [p for p in tmp_path.iterdir() if p.name.startswith("cuda.envdoctor-old-")]
    assert (old / "results.csv").read_text() == "weeks of work"
    assert "moved aside to " + str(old) in res.output


@pytest.mark.parametrize("prefix", ["/usr/local/lib", "/var/lib", "/srv", "/home/alice"])
def test_force_never_takes_a_system_or_home_directory(server, tmp_path, prefix):
    res = _cli(server, prefix, tmp_path, "--force", "--force-any")
    assert res.exit_code == 2 and ("system directory" in res.output or "home directory" in res.output)


# -- space, a full disk ----------------------------------------------------------------
def test_not_enough_free_space_is_said_before_any_download(server, tmp_path, monkeypatch):
    from envdoctor.install import archive as actions

    monkeypatch.setattr(actions, "free_bytes", lambda path: 1000)  # the one value a test cannot make for real
    prefix = str(tmp_path / "cuda")
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 1 and "not enough free space" in result.message and "GiB" in result.message
    assert not any(r["path"].endswith(".tar.xz") for r in server.requests)


@pytest.fixture
def small_disk(tmp_path):
    """A 256 KiB tmpfs (root only)."""
    if not ROOT:
        pytest.skip("mounting a small tmpfs needs root")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + (r.stderr.strip() or "mount failed"))
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)


def test_a_full_disk_removes_the_part_file_and_says_so(server, small_disk):
    entry = server.doc["cuda_nvcc"]["linux-x86_64"]  # about 400 KiB: more than the disk holds
    dest = str(small_disk / "nvcc.tar.xz")
    with pytest.raises(DownloadError, match="disk is full.*partial download .* was deleted"):
        download(server.url + "/redist/" + entry["relative_path"], dest, entry["sha256"], int(entry["size"]),
                 DownloadOptions(timeout=5, retries=0))
    assert os.listdir(str(small_disk)) == []


def test_the_free_space_check_refuses_a_small_disk_for_real(server, small_disk, tmp_path):
    prefix = str(small_disk / "cuda")
    result, _ = run_plan(make_plan(server, prefix), tmp_path)
    assert result.exit_code == 1 and "not enough free space" in result.message
    assert not any(r["path"].endswith(".tar.xz") for r in server.requests)


# -- the unpacked size, measured --------------------------------------------------------
def test_an_xz_archive_says_how_large_it_unpacks(tmp_path):
    """The size read from the archive's own index is the length lzma decompresses it to (one stream, several
    blocks, concatenated streams with padding), and None for what is not a whole .xz file."""
    import lzma
    import shutil as sh

    from envdoctor.install.extract import unpacked_size

    data = os.urandom(200000) + bytes(1500000)
    one = tmp_path / "one.xz"
    one.write_bytes(lzma.compress(data))
    two = tmp_path / "two.xz"
    two.write_bytes(lzma.compress(b"abc" * 1000) + bytes(8) + lzma.compress(data))
    assert unpacked_size(str(one)) == len(data)
    assert unpacked_size(str(two)) == len(data) + 3000
    nvcc = tmp_path / "nvcc.tar.xz"  # the tar.xz the loopback mirror serves
    nvcc.write_bytes(_archive_bytes("cuda_nvcc", "12.4.131"))
    assert unpacked_size(str(nvcc)) == len(lzma.decompress(nvcc.read_bytes()))
    if sh.which("xz"):  # several blocks, as xz -T writes them; the figure xz --list gives
        raw = tmp_path / "blocks"
        raw.write_bytes(data)
        subprocess.run(["xz", "-k", "-T2", "--block-size=100000", str(raw)], check=True, timeout=120)
        listed = subprocess.run(["xz", "--robot", "--list", str(raw) + ".xz"], capture_output=True, text=True,
                                timeout=60).stdout
        assert unpacked_size(str(raw) + ".xz") == len(data) == int(
            [ln for ln in listed.splitlines() if ln.startswith("file")][0].split("\t")[4])
    cut = tmp_path / "cut.xz"
    cut.write_bytes(one.read_bytes()[:-7])
    garbage = tmp_path / "garbage.xz"
    garbage.write_bytes(b"not xz at all" * 50)
    for bad in (cut, garbage, tmp_path / "missing.xz"):
        assert unpacked_size(str(bad)) is None


def _bomb_server(tmp_path, unpacked: int) -> Server:
    """The mirror serving, as cuda_nvcc's archive, one that unpacks to ``unpacked`` bytes of zeros: a few KiB
    compressed, far beyond the estimate from the manifest's size."""
    doc, files = served_manifest(("cuda_nvcc",))
    rel = doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    path = _tar(str(tmp_path / "bomb.tar.xz"), [_file("cuda_nvcc-linux-x86_64-12.4.131-archive/lib/huge",
                                                        bytes(unpacked))])
    data = open(path, "rb").read()
    assert len(data) * (1 + cuda_redist.UNPACK_FACTOR) < unpacked  # the estimate would let it through
    files["/redist/" + rel] = data
    doc["cuda_nvcc"]["linux-x86_64"].update(sha256=hashlib.sha256(data).hexdigest(), size=str(len(data)))
    srv = Server(files)
    srv.doc = doc
    return srv


def test_an_archive_unpacking_beyond_the_estimate_is_refused_before_unpacking(tmp_path, monkeypatch):
    """Free space for the downloads and the estimated tree, not for what the archive really unpacks to: the
    check before unpacking measures the archive's own size and stops with the figure, nothing unpacked."""
    from envdoctor.install import archive as actions

    srv = _bomb_server(tmp_path, 8 * 1024 * 1024)
    monkeypatch.setattr(actions, "free_bytes", lambda path: 4 * 1024 * 1024)  # more than the estimate, < 8 MiB
    try:
        prefix = str(tmp_path / "cuda")
        result, lines = run_plan(make_plan(srv, prefix, components=("cuda_nvcc",)), tmp_path)
    finally:
        srv.close()
    assert result.exit_code == 1, lines
    assert "not enough free space" in result.message and "the unpacked tree needs 0.01 GiB" in result.message
    assert [o.id for o in result.outcomes if o.status == "done"][-1] == "download-cuda_nvcc"
    assert not os.path.lexists(prefix)
    tree = [os.path.join(d, n) for d, _dirs, fs in os.walk(str(tmp_path)) for n in fs if n == "huge"]
    assert tree == []  # nothing was unpacked


def test_the_unpack_check_refuses_a_small_disk_for_real_and_so_does_the_script(small_disk, tmp_path):
    """On a 256 KiB tmpfs, an archive of a few KiB that unpacks to 1 MiB: the executor and the --dry-run script
    both download it, then refuse before unpacking (without the measured check, tar filled the disk)."""
    srv = _bomb_server(tmp_path, 1024 * 1024)
    try:
        result, lines = run_plan(make_plan(srv, str(small_disk / "cuda"), components=("cuda_nvcc",)), tmp_path)
        assert result.exit_code == 1 and "not enough free space" in result.message, lines
        assert not any(os.path.exists(os.path.join(d, "huge")) for d, _x, _f in os.walk(str(small_disk)))
        script = render_sh(make_plan(srv, str(small_disk / "cuda2"), components=("cuda_nvcc",)))
        run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    finally:
        srv.close()
    assert run.returncode == 1 and "not enough free space for the unpacked tree: it needs 1 MiB" in run.stderr, (
        run.stdout[-2000:] + run.stderr[-2000:])


# -- Ctrl-C, a killed server ------------------------------------------------------------
def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT's default action and no signal blocked, as a shell started from a terminal
    gives a command (the test worker's own signal state is not the user's)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def test_ctrl_c_exits_130_with_a_log_line_and_the_resume_command(server, tmp_path):
    rel = server.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    server.modes["/redist/" + rel] = ["stall"]
    prefix = str(tmp_path / "cuda")
    log = str(tmp_path / "i.log")
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "install", "cuda", "--version", "12.4.1", "--prefix",
                             prefix, "--mirror", server.url + "/redist", "--platform", "linux-x86_64", "--yes",
                             "--retries", "0", "--download-timeout", "20", "--log-file", log],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, ENVDOCTOR_TIMEOUT="3"),
                            preexec_fn=_as_from_a_terminal)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(r["path"].endswith(rel) for r in server.requests):
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, out
    assert "interrupted (Ctrl-C)" in out and "envdoctor install cuda --version 12.4.1" in out and "--yes" in out
    assert "INTERRUPTED (Ctrl-C)" in open(log).read()
    assert not os.path.exists(prefix)


def test_a_killed_server_then_resume_from_another_mirror_continues_the_download(tmp_path):
    doc, files = served_manifest()
    rel = doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    first = Server(files)
    first.modes["/redist/" + rel] = ["cut"]
    prefix = str(tmp_path / "cuda")
    try:
        res = _cli(first, prefix, tmp_path)
    finally:
        first.close()  # the server is gone
    assert res.exit_code == 1 and "to resume" in res.output
    (staging,) = [p for p in tmp_path.iterdir() if ".envdoctor-staging-" in p.name]
    part = [os.path.join(d, n) for d, _s, names in os.walk(str(staging)) for n in names if n.endswith(".part")]
    assert part and os.path.getsize(part[0]) > 0
    kept = os.path.getsize(part[0])
    second = Server(files)
    try:
        res = _cli(second, prefix, tmp_path)
        assert res.exit_code == 0, res.output
        assert second.ranges(rel) == ["bytes=%d-" % kept]  # resumed, not restarted
        assert not any(r["path"].endswith("cuda_cudart-linux-x86_64-12.4.127-archive.tar.xz")
                       for r in second.requests)  # finished downloads kept
    finally:
        second.close()
    assert not any(".envdoctor-staging-" in p.name for p in tmp_path.iterdir())


def test_the_dry_run_script_refuses_a_staging_link_too(server, tmp_path):
    prefix = str(tmp_path / "cuda")
    os.symlink(str(tmp_path), cuda_redist.staging_dir(prefix))
    run = subprocess.run(["bash", "-c", render_sh(make_plan(server, prefix))], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1 and "refusing to use it" in run.stderr


def test_the_dry_run_script_moves_a_toolkit_aside_and_refuses_anything_else(server, tmp_path):
    prefix = tmp_path / "cuda"
    prefix.mkdir()
    (prefix / "results.csv").write_text("weeks of work")
    script = render_sh(make_plan(server, str(prefix), force=True))
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1 and "not a CUDA toolkit" in run.stderr
    assert (prefix / "results.csv").read_text() == "weeks of work"
    (prefix / "results.csv").unlink()
    (prefix / "version.json").write_text('{"cuda": {"version": "12.4.0"}}')
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    (old,) = [p for p in tmp_path.iterdir() if p.name.startswith("cuda.envdoctor-old-")]
    assert "12.4.0" in (old / "version.json").read_text() and "moved aside to" in run.stdout

"""Issue 21, "Install": hostile mirrors and archives against ``envdoctor install --method redist``, executed.

Every archive here is served by the loopback mirror of tests/loopback.py in the place of cuda_cccl's, under
NVIDIA's manifest format (the real redistrib_12.4.1.json excerpt of tests/test_install_redist.py, with the
served archive's sha256 and size), so the download is verified and then the archive itself is what is
judged. One list of archives (:data:`HOSTILE`, :data:`BENIGN`) goes through both installers:

* the executor (``envdoctor install ... --yes``, a child process with its address space and the size of any
  file it writes limited, so a bomb shows as a kill rather than a full disk);
* the dry-run script (``envdoctor install ... --dry-run --format sh``, run with bash under the same limits).

Both must refuse every hostile archive the same way (exit 2, one line saying why, no traceback, nothing left
outside the staging directory, no prefix) and unpack every benign one to the same tree. As root (CI runs as
root) the shapes that only root can unpack for real (device files, setuid-root files) are real; elsewhere the
comparison is skipped with the reason.

The mirror's other faults (credentials, another release's manifest, a trickle, redirects, nesting) and the
installer's own (--force, signals, ENVDOCTOR_TIMEOUT) are tested against the same mirror below.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import lzma
import os
import resource
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tarfile
import time
import zlib
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from .loopback import Server
from .test_install_redist import served_manifest

ROOT = os.geteuid() == 0
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = "cuda_cccl-linux-x86_64-12.4.127-archive"
#: Limits every installer runs under here: 1 GiB of address space, no file larger than 4 MiB.
MEMORY_LIMIT = 1 << 30
FILE_LIMIT = 4 << 20


# -- archives ------------------------------------------------------------------------------------
def _info(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, linkname: str = "", size: int = 0,
          devmajor: int = 0, devminor: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.size = kind, mode, linkname, size
    info.devmajor, info.devminor = devmajor, devminor
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


Member = Tuple[tarfile.TarInfo, Optional[bytes]]


def _file(name: str, data: bytes = b"x", mode: int = 0o644) -> Member:
    return _info(TOP + "/" + name, mode=mode, size=len(data)), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> Member:
    return _info(TOP + "/" + name, kind, 0o777, target), None


def _tar_bytes(members: List[Member], fmt: int = tarfile.GNU_FORMAT) -> bytes:
    """An uncompressed tar stream: the top directory's LICENSE, then ``members`` in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        for info, data in [_file("LICENSE", b"cccl license\n")] + members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def _xz(members: List[Member]) -> bytes:
    return lzma.compress(_tar_bytes(members), format=lzma.FORMAT_XZ)


def _chain(depth: int = 6) -> List[Member]:
    """``l0 -> .``, ``lN -> l(N-1)/..``: each link lexically inside, ``lN`` resolving N levels above the top."""
    return [_link("l0", ".")] + [_link(f"l{i}", f"l{i - 1}/..") for i in range(1, depth)]


def _multibyte(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lying_xz(data: bytes, claimed: int) -> bytes:
    """``data`` as .xz whose index (and so ``xz --list``) says it unpacks to ``claimed`` bytes.

    Rebuilt by the format's rules (https://tukaani.org/xz/xz-file-format.txt sections 2.1.2 and 4): the one
    stream's index gets the claimed uncompressed size and a fresh CRC32, the footer the index's new size."""
    xz = lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64)
    footer = xz[-12:]
    backward = (struct.unpack("<I", footer[4:8])[0] + 1) * 4
    index = xz[-12 - backward:-12]
    count, pos = index[1], 2  # one block
    assert count == 1
    unpadded = 0
    shift = 0
    while True:  # the record's unpadded size, kept as it is
        b = index[pos]
        unpadded |= (b & 0x7F) << shift
        shift += 7
        pos += 1
        if not b & 0x80:
            break
    body = b"\x00" + _multibyte(1) + _multibyte(unpadded) + _multibyte(claimed)
    body += b"\x00" * (-len(body) % 4)
    new_index = body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF)
    flags = footer[8:10]
    size_field = struct.pack("<I", len(new_index) // 4 - 1)
    new_footer = struct.pack("<I", zlib.crc32(size_field + flags) & 0xFFFFFFFF) + size_field + flags + b"YZ"
    return xz[:-12 - backward] + new_index + new_footer


def _sparse_pax(realsize: int) -> bytes:
    """A PAX 1.0 sparse member (GNU tar's format) whose file is ``realsize`` bytes long with one byte of data."""
    mapping = b"1\n%d\n1\n" % (realsize - 1)
    mapping += b"\x00" * (-len(mapping) % 512)
    data = mapping + b"x"
    info = tarfile.TarInfo(TOP + "/lib/sparse")
    info.size = len(data)
    info.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": TOP + "/lib/sparse",
                        "GNU.sparse.realsize": str(realsize)}
    return lzma.compress(_tar_bytes([(info, data)], tarfile.PAX_FORMAT), format=lzma.FORMAT_XZ)


def _pax_member(pax: Dict[str, str]) -> bytes:
    """One file whose PAX extended header holds ``pax`` (what a hostile tar writer may put there)."""
    info = tarfile.TarInfo(TOP + "/lib/p")
    info.size = 1
    info.pax_headers = pax
    return lzma.compress(_tar_bytes([(info, b"x")], tarfile.PAX_FORMAT), format=lzma.FORMAT_XZ)


Build = Callable[[str], bytes]  # the directory that must stay untouched -> the archive's bytes

#: Archives both installers must refuse. ``outside`` is a directory beside the install (with ``secret`` in
#: it); the staging tree an archive is unpacked into is three levels below the test's directory.
HOSTILE: Dict[str, Build] = {
    "setuid-root file": lambda outside: _xz([_file("bin/su", b"#!/bin/sh\n", 0o4755)]),
    "setgid file": lambda outside: _xz([_file("bin/sg", b"#!/bin/sh\n", 0o2755)]),
    "world-writable character device": lambda outside: _xz([(_info(TOP + "/dev/mem", tarfile.CHRTYPE, 0o666,
                                                                   devmajor=1, devminor=3), None)]),
    "world-writable block device": lambda outside: _xz([(_info(TOP + "/dev/disk", tarfile.BLKTYPE, 0o666,
                                                               devmajor=7, devminor=231), None)]),
    "FIFO": lambda outside: _xz([(_info(TOP + "/run/fifo", tarfile.FIFOTYPE, 0o666), None)]),
    "absolute name": lambda outside: _xz([(_info(outside + "/absolute.txt", size=1), b"x")]),
    "name climbing out with ..": lambda outside: _xz([(_info(TOP + "/../../../outside/escaped.txt", size=1),
                                                       b"x")]),
    "hard link to a file outside": lambda outside: _xz([_link("lib/h", outside + "/secret", tarfile.LNKTYPE)]),
    "hard link climbing out": lambda outside: _xz([_link("lib/h", TOP + "/../../../outside/secret",
                                                         tarfile.LNKTYPE)]),
    "hard link inside the archive": lambda outside: _xz([_file("lib/a"), _link("lib/h", TOP + "/lib/a",
                                                                                 tarfile.LNKTYPE)]),
    "symbolic link to a directory outside": lambda outside: _xz([_link("etc", outside)]),
    "symbolic link climbing out": lambda outside: _xz([_link("up", "../../../outside")]),
    "file written through an absolute link": lambda outside: _xz([_link("d", outside),
                                                                  _file("d/planted.txt")]),
    "symbolic link chain leading out": lambda outside: _xz(_chain() + [_link("escape", "l0/l1/l2/l3/l4/l5/outside")]),
    "file written through a link chain": lambda outside: _xz(_chain() + [_link("out", "l5"),
                                                                         _file("out/escaped.txt")]),
    "link, then a file through the link": lambda outside: _xz([_link("up", "l0/.."), _link("l0", "."),
                                                               _file("up/escaped.txt")]),
    "link whose meaning a later link changes": lambda outside: _xz([_link("a", "b/../escaped.txt"),
                                                                    _link("b", ".")]),
    "member 1,500 directories deep": lambda outside: _xz([_file("d/" * 1500 + "deep.h")]),
    "3,000 links in a chain": lambda outside: _xz([_link("c0", ".")] + [_link(f"c{i}", f"c{i - 1}")
                                                                       for i in range(1, 3000)]),
    "sparse file of 1 TiB": lambda outside: _sparse_pax(1 << 40),
    "sparse map that does not parse": lambda outside: _pax_member({"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                                                                   "GNU.sparse.name": TOP + "/lib/s",
                                                                   "GNU.sparse.realsize": "9" * 5000}),
    "modification time out of range": lambda outside: _pax_member({"mtime": "1e999999"}),
    "modification time not a number": lambda outside: _pax_member({"mtime": "nan"}),
    "name of 300 characters": lambda outside: _xz([_file("lib/" + "a" * 300)]),
    "gzip data named .tar.xz": lambda outside: gzip.compress(_tar_bytes([_file("include/ok.h", b"ok")])),
    "xz whose index says less than its data": lambda outside: lying_xz(
        _tar_bytes([_file("lib/huge", bytes(8 << 20))]), 64 << 10),
    "xz whose index says more than its data": lambda outside: lying_xz(
        _tar_bytes([_file("include/ok.h", b"ok")]), 1 << 20),
}

#: Archives both installers must unpack, to the same tree (what NVIDIA's archives hold, and modes made safe).
BENIGN: Dict[str, Build] = {
    "files, an executable and links inside": lambda outside: _xz([
        _file("bin/tool", b"#!/bin/sh\necho ok\n", 0o755), _file("lib/libcccl.so.12.4.127", b"\x7fELF"),
        _link("lib/libcccl.so.12", "libcccl.so.12.4.127"), _link("lib/libcccl.so", "libcccl.so.12"),
        _file("lib/stubs/x", b"s"), _link("lib/stubs/libcccl.so", "../libcccl.so.12")]),
    "a world-writable file and directory": lambda outside: _xz([
        (_info(TOP + "/share", tarfile.DIRTYPE, 0o777), None), _file("share/doc.txt", b"doc", 0o666)]),
    "a member 40 directories deep": lambda outside: _xz([_file("d/" * 40 + "deep.h")]),
}


# -- running both installers -------------------------------------------------------------------
def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def mirror_serving(archive: bytes, **server_args) -> Server:
    """The loopback mirror: the real 12.4.1 manifest, ``archive`` as cuda_cccl's (its sha256 and size)."""
    doc, files = served_manifest(("cuda_cccl",))
    entry = doc["cuda_cccl"]["linux-x86_64"]
    entry.update(sha256=hashlib.sha256(archive).hexdigest(), size=str(len(archive)))
    files["/redist/" + entry["relative_path"]] = archive
    files["/redist/redistrib_12.4.1.json"] = json.dumps(doc).encode()
    srv = Server(files, **server_args)
    srv.doc = doc
    return srv


def install_args(mirror: str, prefix: str, *extra: str) -> List[str]:
    return ["install", "cuda", "--version", "12.4.1", "--prefix", prefix, "--mirror", mirror, "--platform",
            "linux-x86_64", "--components", "cuda_cccl", "--retries", "0", "--download-timeout", "5", *extra]


def env(**more: str) -> Dict[str, str]:
    e = dict(os.environ, ENVDOCTOR_TIMEOUT="3", LC_ALL="C")
    e.pop("ENVDOCTOR_MIRROR", None)
    e.update(more)
    return e


def run_envdoctor(args: List[str], timeout: float = 120, **more: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True,
                          timeout=timeout, env=env(**more), cwd=REPO, preexec_fn=_limits)


def dry_run_script(mirror: str, prefix: str) -> str:
    r = run_envdoctor(install_args(mirror, prefix, "--dry-run", "--format", "sh"))
    assert r.returncode == 0, r.stderr
    return r.stdout


def run_script(script: str, cwd: str, timeout: float = 120, **more: str) -> subprocess.CompletedProcess:
    path = os.path.join(cwd, "install.sh")
    with open(path, "w") as f:
        f.write(script)
    return subprocess.run(["bash", path], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=env(**more), preexec_fn=_limits)


def one_line(stderr: str) -> str:
    """The one line an installer said why it stopped (envdoctor's last line; curl may speak before it)."""
    assert "Traceback" not in stderr and "Error:" not in stderr.replace("envdoctor:", ""), stderr[-3000:]
    lines = [ln for ln in stderr.splitlines() if ln.startswith("envdoctor: ")]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def walk(top: str) -> List[str]:
    """Every path below ``top``, links not followed (iterative: a tree 1,500 levels deep is walked too)."""
    out, todo = [], [top]
    while todo:
        for entry in os.scandir(todo.pop()):
            out.append(entry.path)
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
    return out


def left_behind(top: str, outside: str) -> List[str]:
    """What a hostile archive managed to leave: setuid/setgid files, device files, FIFOs, links leading out
    of ``top``, extra links to ``outside/secret``, anything new in ``outside``."""
    bad = []
    for p in walk(top):
        st = os.lstat(p)
        if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            bad.append("setuid/setgid: " + p)
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            bad.append("special file: " + p)
        if stat.S_ISLNK(st.st_mode):
            try:
                inside = os.path.realpath(p).startswith(top + os.sep)
            except RecursionError:
                inside = False
            if not inside:
                bad.append("link out (or a chain too deep to follow): %s -> %s" % (p, os.readlink(p)))
        if os.path.basename(p) in ("escaped.txt", "absolute.txt", "planted.txt"):
            bad.append("escaped: " + p)
    if sorted(os.listdir(outside)) != ["secret"] or os.stat(os.path.join(outside, "secret")).st_nlink != 1:
        bad.append("outside changed: %s" % sorted(os.listdir(outside)))
    if open(os.path.join(outside, "secret")).read() != "secret":
        bad.append("secret overwritten")
    return bad


def tree_of(top: str) -> Dict[str, tuple]:
    out = {}
    for p in walk(top):
        st = os.lstat(p)
        rel = os.path.relpath(p, top)
        if stat.S_ISLNK(st.st_mode):
            out[rel] = ("link", os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = ("dir", oct(stat.S_IMODE(st.st_mode)))
        else:
            out[rel] = ("file", oct(stat.S_IMODE(st.st_mode)), hashlib.sha256(open(p, "rb").read()).hexdigest())
    return out


@pytest.fixture
def layout(tmp_path):
    """``outside/secret`` and one directory per installer; returns (tmp, outside)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    (tmp_path / "executor").mkdir()
    (tmp_path / "script").mkdir()
    yield tmp_path, str(outside)
    # what an archive left (a tree 1,500 levels deep is beyond shutil.rmtree's recursion, and pytest's)
    subprocess.run(["rm", "-rf", "--one-file-system", str(tmp_path)], timeout=120)


root_only = pytest.mark.skipif(not ROOT, reason="device files and setuid-root files are unpacked for real only "
                                                 "as root (CI runs as root)")
#: What the dry-run script runs: bash, curl, sha256sum and a python3 for its extractor.
script_tools = pytest.mark.skipif(not all(shutil.which(p) for p in ("bash", "curl", "sha256sum", "python3")),
                                  reason="the dry-run script needs bash, curl, sha256sum and python3")


@root_only
@script_tools
@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_the_dry_run_script_and_the_executor_refuse_the_same_archives(shape, layout):
    tmp, outside = layout
    srv = mirror_serving(HOSTILE[shape](outside))
    try:
        prefix = str(tmp / "executor" / "cuda")
        ex = run_envdoctor(install_args(srv.url + "/redist", prefix, "--yes", "--log-file",
                                        str(tmp / "executor.log")))
        script_prefix = str(tmp / "script" / "cuda")
        sh = run_script(dry_run_script(srv.url + "/redist", script_prefix), str(tmp / "script"))
    finally:
        srv.close()
    assert ex.returncode == 2, (ex.returncode, ex.stdout[-2000:], ex.stderr[-2000:])
    said = one_line(ex.stderr)
    assert "nothing from it was installed" in said, said
    assert sh.returncode == 2, (sh.returncode, sh.stdout[-2000:], sh.stderr[-2000:])
    assert "nothing from it was installed" in one_line(sh.stderr)
    for top in ("executor", "script"):
        assert not os.path.lexists(str(tmp / top / "cuda"))
        assert left_behind(str(tmp / top), outside) == []


@root_only
@script_tools
@pytest.mark.parametrize("shape", sorted(BENIGN))
def test_the_dry_run_script_and_the_executor_unpack_the_same_tree(shape, layout):
    tmp, outside = layout
    srv = mirror_serving(BENIGN[shape](outside))
    try:
        prefix = str(tmp / "executor" / "cuda")
        ex = run_envdoctor(install_args(srv.url + "/redist", prefix, "--yes", "--log-file",
                                        str(tmp / "executor.log")))
        sh = run_script(dry_run_script(srv.url + "/redist", str(tmp / "script" / "cuda")), str(tmp / "script"))
    finally:
        srv.close()
    assert ex.returncode in (0, 1) and "Finished: " in ex.stdout, ex.stdout[-2000:] + ex.stderr[-2000:]
    assert sh.returncode == 0, sh.stderr[-2000:]
    got = tree_of(str(tmp / "executor" / "cuda"))
    assert got == tree_of(str(tmp / "script" / "cuda"))
    assert all(v[1] in ("0o755", "0o644") for v in got.values() if v[0] != "link"), got
    assert left_behind(str(tmp / "executor"), outside) == left_behind(str(tmp / "script"), outside) == []


@pytest.mark.parametrize("shape", sorted(HOSTILE) + sorted(BENIGN))
def test_with_and_without_tarfiles_filters_the_same_archives_are_refused(shape, layout):
    """The Pythons the script may meet (3.6 has no extraction filters; 3.12 has them) decide alike."""
    from envdoctor.install.extract import UnsafeArchive, unpack

    tmp, outside = layout
    archive = tmp / (TOP + ".tar.xz")
    archive.write_bytes((HOSTILE.get(shape) or BENIGN[shape])(outside))
    trees = []
    for use_filter in (True, False):
        tree = tmp / ("filtered" if use_filter else "plain") / "staging" / "tree"
        try:
            unpack(str(archive), str(tree), 1, "", "LICENSE.cccl", use_filter=use_filter)
            trees.append(("unpacked", sorted(tree_of(str(tree)).items())))
        except UnsafeArchive as exc:
            assert not tree.exists()
            trees.append(("refused", str(exc).split(",")[0][:30]))
    assert trees[0] == trees[1]
    assert trees[0][0] == ("refused" if shape in HOSTILE else "unpacked")
    assert left_behind(str(tmp), outside) == []


# -- the script's extractor is envdoctor's, and runs on old Pythons -------------------------------
def _python_named(tmp, target: str) -> str:
    """A directory whose ``python3`` is ``target`` (put first on PATH)."""
    bindir = tmp / "pybin"
    bindir.mkdir(exist_ok=True)
    os.symlink(target, str(bindir / "python3"))
    return str(bindir)


def test_the_script_carries_envdoctors_own_extractor_verbatim(tmp_path):
    from envdoctor.install import extract
    from envdoctor.install.archive import Extract
    from envdoctor.install.plan import Plan, Step, render_sh

    plan = Plan("p", "cuda", "1", "redist", "t", steps=[
        Step("u1", "unpack", Extract("/s/a.tar.xz", "/s/tree", 1, "/s/m/a.unpacked", "LICENSE.a")),
        Step("u2", "unpack", Extract("/s/b.tar.xz", "/s/tree", 1, "/s/m/b.unpacked", "LICENSE.b"))])
    script = render_sh(plan)
    assert script.count(extract.source()) == 1  # defined once, whatever the number of archives
    assert "envdoctor_unpack /s/a.tar.xz /s/tree 1 /s/m/a.unpacked LICENSE.a" in script
    assert "tar -x" not in script and "tar x" not in script


def test_the_extractor_stands_alone_so_the_script_can_carry_it():
    """The script runs extract.py's source on its own: no relative or envdoctor import, nothing newer than 3.6
    (no ``from __future__`` import: 3.6 has no ``annotations``)."""
    import ast

    from envdoctor.install import extract

    tree = ast.parse(extract.source())
    imported = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not [n for n in imported if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith(
        ("envdoctor", "__future__")))]
    names = {a.name.split(".")[0] for n in imported for a in n.names if isinstance(n, ast.Import)} | {
        (n.module or "").split(".")[0] for n in imported if isinstance(n, ast.ImportFrom)}
    assert names <= set(sys.stdlib_module_names) if hasattr(sys, "stdlib_module_names") else True, names


@script_tools
@pytest.mark.parametrize("version", ["3.6", "3.8"])
def test_the_script_unpacks_with_python_3_6_and_3_8(version, layout):
    """CentOS 7's and RHEL 8's python3 is 3.6; 3.8 is the oldest envdoctor runs on (pyenv's builds here)."""
    tmp, outside = layout
    found = [p for p in (os.path.expanduser("~/.pyenv/versions/%s/bin/python%s" % (v, version))
                         for v in sorted(os.listdir(os.path.expanduser("~/.pyenv/versions")))
                         if v.startswith(version + ".")) if os.access(p, os.X_OK)] \
        if os.path.isdir(os.path.expanduser("~/.pyenv/versions")) else []
    if not found:
        pytest.skip("no Python %s interpreter (pyenv) on this machine" % version)
    srv = mirror_serving(BENIGN["files, an executable and links inside"](outside))
    try:
        script = dry_run_script(srv.url + "/redist", str(tmp / "script" / "cuda"))
        path = _python_named(tmp, found[0]) + os.pathsep + os.environ["PATH"]
        sh = run_script(script, str(tmp / "script"), PATH=path)
        hostile = mirror_serving(HOSTILE["symbolic link climbing out"](outside))
        try:
            bad = run_script(dry_run_script(hostile.url + "/redist", str(tmp / "script" / "cuda2")),
                             str(tmp / "script"), PATH=path)
        finally:
            hostile.close()
    finally:
        srv.close()
    assert sh.returncode == 0, sh.stderr[-2000:]
    assert os.readlink(str(tmp / "script" / "cuda" / "lib" / "libcccl.so")) == "libcccl.so.12"
    assert bad.returncode == 2 and "outside the target directory" in one_line(bad.stderr)


@script_tools
def test_without_python_the_script_stops_before_downloading_anything(layout):
    tmp, outside = layout
    fake = tmp / "fake"
    fake.mkdir()
    (fake / "python3").write_text("#!/bin/sh\nexit 1\n")
    (fake / "python3").chmod(0o755)
    srv = mirror_serving(BENIGN["files, an executable and links inside"](outside))
    try:
        script = dry_run_script(srv.url + "/redist", str(tmp / "script" / "cuda"))
        sh = run_script(script.replace("/usr/libexec/platform-python", str(fake / "platform-python")),
                        str(tmp / "script"), PATH=str(fake) + os.pathsep + os.environ["PATH"])
    finally:
        srv.close()
    assert sh.returncode == 1 and "Python 3.6 or later" in one_line(sh.stderr)
    assert not any(r["path"].endswith(".tar.xz") for r in srv.requests)
    assert not os.path.lexists(str(tmp / "script" / "cuda"))


# -- bounded reading ------------------------------------------------------------------------------
def _plain_tar(tmp, members: List[Member], name: str, opener: Callable[[bytes], bytes]) -> str:
    path = str(tmp / name)
    with open(path, "wb") as f:
        f.write(opener(_tar_bytes(members)))
    return path


@pytest.mark.parametrize("name,opener", [("a.tar.gz", gzip.compress), ("a.tgz", gzip.compress),
                                         ("a.tar", lambda b: b), ("a.tar.xz", lzma.compress)])
def test_each_format_its_name_promises_is_unpacked(tmp_path, name, opener):
    from envdoctor.install.extract import unpack

    archive = _plain_tar(tmp_path, [_file("include/ok.h", b"ok")], name, opener)
    unpack(archive, str(tmp_path / "tree"), 1, str(tmp_path / "x.unpacked"), "LICENSE.x")
    assert (tmp_path / "tree" / "include" / "ok.h").read_bytes() == b"ok"
    assert (tmp_path / "tree" / "LICENSE.x").exists() and (tmp_path / "x.unpacked").exists()


@pytest.mark.parametrize("name,data,message", [
    ("a.tar.xz", b"\x1f\x8b not xz", "not a well-formed .xz file"),
    ("a.tar.gz", lzma.compress(b"x" * 1000), "not a readable gzip archive"),
    ("a.tar.bz2", gzip.compress(b"x" * 1000, mtime=0), "not a readable bzip2 archive"),
    ("a.zip", b"PK\x03\x04", "not named as a .tar.xz"),
    ("a.tar", b"garbage" * 100, "not a readable tar archive"),
], ids=["gzip-header-named-xz", "xz-named-gz", "gzip-named-bz2", "zip-named-tar-xz", "garbage-named-tar"])
# (ids that do not hold the data: a gzip header carries the time it was made, and pytest-xdist's workers, which
# collect separately, must see the same ids)
def test_an_archive_that_is_not_what_its_name_says_is_refused(tmp_path, name, data, message):
    from envdoctor.install.extract import UnsafeArchive, unpack

    (tmp_path / name).write_bytes(data)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "earlier.unpacked").write_text("")
    with pytest.raises(UnsafeArchive, match=message):
        unpack(str(tmp_path / name), str(tmp_path / "tree"), 1, str(tmp_path / "m" / "x.unpacked"))
    assert not (tmp_path / "tree").exists() and os.listdir(str(tmp_path / "m")) == []


def test_a_gzip_bomb_stops_at_the_free_space_with_nothing_kept(tmp_path, monkeypatch):
    """gzip records no unpacked size (its 32-bit ISIZE wraps): the stream is held to the free space."""
    from envdoctor.install import extract

    archive = _plain_tar(tmp_path, [_file("lib/huge", bytes(8 << 20))], "bomb.tar.gz", gzip.compress)
    monkeypatch.setattr(extract, "_free_bytes", lambda path: 1 << 20)  # the one figure a test cannot make
    with pytest.raises(extract.UnsafeArchive, match=r"more than the free space in .* \(1048576 bytes\)"):
        extract.unpack(archive, str(tmp_path / "tree"), 1)
    assert not (tmp_path / "tree").exists()


def test_an_xz_that_lies_stops_at_what_its_index_says(tmp_path):
    from envdoctor.install import extract

    path = tmp_path / "bomb.tar.xz"
    path.write_bytes(lying_xz(_tar_bytes([_file("lib/huge", bytes(8 << 20))]), 1 << 20))
    assert extract.unpacked_size(str(path)) == 1 << 20  # what the space check was told
    with pytest.raises(extract.UnsafeArchive, match=r"more than the size its xz index records \(1048576 bytes\)"):
        extract.unpack(str(path), str(tmp_path / "tree"), 1)
    assert not (tmp_path / "tree").exists()


def test_more_members_than_any_real_archive_are_refused(tmp_path, monkeypatch):
    from envdoctor.install import extract

    monkeypatch.setattr(extract, "MAX_MEMBERS", 50)
    archive = _plain_tar(tmp_path, [_file("lib/f%d" % i) for i in range(60)], "many.tar.xz", lzma.compress)
    with pytest.raises(extract.UnsafeArchive, match="more than 50 members"):
        extract.unpack(archive, str(tmp_path / "tree"), 1)


# -- --force --------------------------------------------------------------------------------------
def full_mirror(**server_args) -> Server:
    """The loopback mirror of tests/test_install_redist.py: cudart, nvcc and cccl of the real 12.4.1 manifest."""
    doc, files = served_manifest()
    srv = Server(files, **server_args)
    srv.doc = doc
    return srv


def all_args(mirror: str, prefix: str, *extra: str) -> List[str]:
    return ["install", "cuda", "--version", "12.4.1", "--prefix", prefix, "--mirror", mirror, "--platform",
            "linux-x86_64", "--retries", "0", "--download-timeout", "5", *extra]


def test_force_reinstalls_what_a_damaged_install_lacks(tmp_path):
    """libcudart* deleted and nvcc overwritten under a prefix whose version.json still says 12.4.1: --force
    installs again (it reported "0 steps done, 13 skipped"), and the damaged tree is moved aside."""
    srv = full_mirror()
    prefix = tmp_path / "cuda"
    log = str(tmp_path / "i.log")
    try:
        first = run_envdoctor(all_args(srv.url + "/redist", str(prefix), "--yes", "--log-file", log))
        assert first.returncode in (0, 1) and "Finished: " in first.stdout, first.stderr
        nvcc = (prefix / "bin" / "nvcc").read_bytes()
        for lib in (prefix / "lib").glob("libcudart*"):
            lib.unlink()
        (prefix / "bin" / "nvcc").write_text("#!/bin/sh\necho trojan\n")
        again = run_envdoctor(all_args(srv.url + "/redist", str(prefix), "--yes", "--force", "--log-file", log))
    finally:
        srv.close()
    assert again.returncode in (0, 1) and "Finished: " in again.stdout, again.stdout[-2000:] + again.stderr
    assert "0 steps done" not in again.stdout
    assert (prefix / "bin" / "nvcc").read_bytes() == nvcc
    assert (prefix / "lib" / "libcudart.so.12.4.127").is_file()
    (old,) = [p for p in tmp_path.iterdir() if p.name.startswith("cuda.envdoctor-old-")]
    assert b"trojan" in (old / "bin" / "nvcc").read_bytes()  # moved aside, never deleted


# -- --force --force-any through a link ----------------------------------------------------------
def test_force_any_never_takes_a_home_directory_reached_through_a_link(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    os.symlink(str(tmp_path), str(tmp_path / "via"))
    srv = full_mirror()
    try:
        r = run_envdoctor(all_args(srv.url + "/redist", str(tmp_path / "via" / "home"), "--yes", "--force",
                                   "--force-any", "--log-file", str(tmp_path / "i.log")), HOME=str(home))
    finally:
        srv.close()
    assert r.returncode == 2 and "home directory" in one_line(r.stderr), r.stdout[-2000:] + r.stderr
    assert (home / "thesis.tex").read_text() == "years of work"
    assert not [p for p in tmp_path.iterdir() if ".envdoctor-old-" in p.name]


def test_a_prefix_through_a_link_into_a_system_tree_is_refused(tmp_path):
    from envdoctor.install.validate import ValidationError, prefix, replaceable

    os.symlink("/usr", str(tmp_path / "u"))
    os.symlink("/var/lib", str(tmp_path / "v"))
    with pytest.raises(ValidationError, match=r"resolves to /usr/envdoctor-x.*system directory"):
        prefix(str(tmp_path / "u" / "envdoctor-x"))
    assert "system directory" in replaceable(str(tmp_path / "v" / "dpkg"), True)
    assert "system directory" in replaceable(str(tmp_path / "u"), True)  # the link itself names /usr
    r = run_envdoctor(all_args("http://127.0.0.1:9/redist", str(tmp_path / "u" / "local" / "lib"), "--dry-run"))
    assert r.returncode == 2 and "system directory" in one_line(r.stderr)


# -- mirror credentials ---------------------------------------------------------------------------
def test_mirror_credentials_are_never_shown_and_the_resume_command_still_works(tmp_path):
    from envdoctor.install.lock import lock_path

    srv = full_mirror(auth="mirroruser:s3cret-pw")
    rel = srv.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    srv.fail("/redist/" + rel, "stall")  # half the archive, then silence: the run fails while we look
    mirror = srv.url.replace("http://", "http://mirroruser:s3cret-pw@") + "/redist"
    prefix = str(tmp_path / "cuda")
    log = str(tmp_path / "i.log")
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    lock = lock_path(prefix, {"XDG_RUNTIME_DIR": str(run_dir)})
    try:
        proc = subprocess.Popen([sys.executable, "-m", "envdoctor", *all_args(mirror, prefix, "--yes", "--log-file",
                                                                             log, "--download-timeout", "2")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                                env=env(XDG_RUNTIME_DIR=str(run_dir)))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not srv.requests_for(rel):
            time.sleep(0.05)
        held = open(lock).read()  # who holds the lock, as a second run would be told
        out, err = proc.communicate(timeout=60)
        first = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        missing = run_envdoctor(all_args(mirror.replace("/redist", "/nowhere"), prefix, "--dry-run"))
        (resume,) = [ln.strip() for ln in first.stderr.splitlines() if ln.strip().startswith("envdoctor install")]
        command = resume.replace("envdoctor ", sys.executable + " -m envdoctor ", 1)
        unset = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, cwd=REPO,
                               preexec_fn=_limits, env=env())
        again = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, cwd=REPO,
                               preexec_fn=_limits, env=env(ENVDOCTOR_MIRROR=mirror))
    finally:
        srv.close()
    assert first.returncode == 1 and "to resume" in first.stderr, first.stderr
    shown = first.stdout + first.stderr + open(log).read() + held + missing.stderr + resume
    assert "s3cret" not in shown and "mirroruser" not in shown
    assert "--mirror http://<redacted>@127.0.0.1" in held
    assert "<redacted>@127.0.0.1" in first.stderr  # which URL failed, without its credentials
    assert missing.returncode == 2 and "cannot read the manifest" in missing.stderr
    assert '--mirror "$ENVDOCTOR_MIRROR"' in resume and "ENVDOCTOR_MIRROR" in resume.split("#", 1)[1]
    # never a silent switch to NVIDIA's server when the variable is not set
    assert unset.returncode == 2 and "ENVDOCTOR_MIRROR" in one_line(unset.stderr)
    assert again.returncode in (0, 1) and "Finished: " in again.stdout, again.stdout[-2000:] + again.stderr
    assert all(r["authorization"] for r in srv.requests)  # the credentials were sent every time
    assert os.path.isfile(os.path.join(prefix, "bin", "nvcc"))


# -- the mirror's manifest -------------------------------------------------------------------------
@pytest.mark.parametrize("field,value,message", [
    ("release_label", "12.3.0", "release 12.3.0, not 12.4.1"),
    ("release_product", "cudnn", "cudnn, not cuda"),
])
def test_a_manifest_of_another_release_is_refused(tmp_path, field, value, message):
    srv = full_mirror()
    doc = copy.deepcopy(srv.doc)
    doc[field] = value
    srv.files["/redist/redistrib_12.4.1.json"] = json.dumps(doc).encode()
    try:
        r = run_envdoctor(all_args(srv.url + "/redist", str(tmp_path / "cuda"), "--yes", "--log-file",
                                   str(tmp_path / "i.log")))
    finally:
        srv.close()
    assert r.returncode == 2 and message in one_line(r.stderr)
    assert not os.path.lexists(str(tmp_path / "cuda"))
    assert not any(q["path"].endswith(".tar.xz") for q in srv.requests)


@pytest.mark.parametrize("shape", ["nested 100,000 deep", "redirect to file://", "redirect to ftp://",
                                   "redirect loop"])
def test_a_hostile_manifest_is_one_line_and_exit_2(tmp_path, shape):
    srv = full_mirror(redirects={
        "/file/redistrib_12.4.1.json": "file:///etc/passwd",
        "/ftp/redistrib_12.4.1.json": "ftp://127.0.0.1/redistrib_12.4.1.json",
        "/loop/redistrib_12.4.1.json": "/loop/redistrib_12.4.1.json"})
    srv.files["/deep/redistrib_12.4.1.json"] = b'{"release_label": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    base = {"nested 100,000 deep": "/deep", "redirect to file://": "/file", "redirect to ftp://": "/ftp",
            "redirect loop": "/loop"}[shape]
    try:
        r = run_envdoctor(all_args(srv.url + base, str(tmp_path / "cuda"), "--dry-run"), timeout=60)
    finally:
        srv.close()
    assert r.returncode == 2, r.stderr[-2000:]
    said = one_line(r.stderr)
    assert ("nested too deeply" if "nested" in shape else "redirect") in said, said


def test_a_version_of_5000_digits_is_one_line_and_exit_2(tmp_path):
    for version in ("1" * 5000, "12." + "4" * 5000):
        r = run_envdoctor(["install", "cuda", "--version", version, "--prefix", str(tmp_path / "cuda"), "--mirror",
                           "http://127.0.0.1:9/redist", "--dry-run"])
        assert r.returncode == 2 and "release number" in one_line(r.stderr)
        assert len(one_line(r.stderr)) < 300


# -- a trickling mirror ---------------------------------------------------------------------------
def test_a_mirror_trickling_one_byte_every_two_seconds_is_given_up_on(tmp_path):
    """Each read gets its byte within --download-timeout, so only an overall bound ends it."""
    srv = full_mirror(trickle_interval=2.0, lifetime=120)
    rel = srv.doc["cuda_cudart"]["linux-x86_64"]["relative_path"]
    srv.fail("/redist/" + rel, "trickle")
    started = time.monotonic()
    try:
        r = run_envdoctor(all_args(srv.url + "/redist", str(tmp_path / "cuda"), "--yes", "--log-file",
                                   str(tmp_path / "i.log"), "--download-timeout", "3", "--download-deadline", "6"),
                          timeout=90)
    finally:
        srv.close()
    took = time.monotonic() - started
    assert r.returncode == 1 and "--download-deadline" in r.stderr, r.stderr[-2000:]
    assert took < 60, took  # bounded (the deadline plus start-up), where the trickle alone takes weeks


def test_a_trickling_manifest_is_given_up_on(tmp_path):
    srv = full_mirror(trickle_interval=2.0, lifetime=120)
    srv.fail("/redist/redistrib_12.4.1.json", "trickle")
    try:
        r = run_envdoctor(all_args(srv.url + "/redist", str(tmp_path / "cuda"), "--dry-run", "--download-timeout",
                                   "3", "--download-deadline", "5"), timeout=90)
    finally:
        srv.close()
    assert r.returncode == 2 and "--download-deadline" in one_line(r.stderr)


# -- signals --------------------------------------------------------------------------------------
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_leave_the_log_line_and_resume_command_ctrl_c_does(tmp_path, signame):
    srv = full_mirror()
    rel = srv.doc["cuda_nvcc"]["linux-x86_64"]["relative_path"]
    srv.fail("/redist/" + rel, "stall")
    prefix = str(tmp_path / "cuda")
    log = str(tmp_path / "i.log")
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", *all_args(srv.url + "/redist", prefix, "--yes",
                                                                         "--download-timeout", "20", "--log-file",
                                                                         log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(), cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not srv.requests_for(rel):
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        srv.close()
    signum = int(getattr(signal, signame))
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    assert "Traceback" not in err
    assert "interrupted (%s)" % signame in err and "envdoctor install cuda --version 12.4.1" in err and "--yes" in err
    assert "INTERRUPTED (%s)" % signame in open(log).read()
    assert not os.path.exists(prefix)


# -- ENVDOCTOR_TIMEOUT ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "abc", "0"])
def test_a_bad_envdoctor_timeout_is_refused_by_install_as_by_diagnose(tmp_path, value):
    r = run_envdoctor(all_args("http://127.0.0.1:9/redist", str(tmp_path / "cuda"), "--dry-run"),
                      ENVDOCTOR_TIMEOUT=value)
    assert r.returncode == 2 and "ENVDOCTOR_TIMEOUT" in one_line(r.stderr)
    d = run_envdoctor(["diagnose"], ENVDOCTOR_TIMEOUT=value)
    assert d.returncode == 2  # the command it must agree with
    listed = run_envdoctor(["install", "--list", "--os", "ubuntu22.04"], ENVDOCTOR_TIMEOUT=value)
    assert listed.returncode == 2


@pytest.mark.parametrize("use_filter", (True, False))
def test_a_chain_of_links_longer_than_the_kernel_follows_is_refused_at_its_41st_link(tmp_path, use_filter):
    """path_resolution(7): at most 40 symbolic links are followed in resolving one path. A chain of 40 unpacks (the
    last link still opens); the 41st link is refused when it is met, before its chain is resolved (each resolution
    walks the whole chain: thousands of chained links would otherwise cost quadratic time to check)."""
    from envdoctor.install.extract import MAX_LINK_HOPS, UnsafeArchive, unpack

    def chain(n):
        return [_file("lib/real", b"data")] + [_link("lib/c1", "real")] + [
            _link(f"lib/c{i}", f"c{i - 1}") for i in range(2, n + 1)]

    ok = tmp_path / "ok.tar.xz"
    ok.write_bytes(_xz(chain(MAX_LINK_HOPS)))
    unpack(str(ok), str(tmp_path / "ok"), 1, "", "LICENSE.cccl", use_filter=use_filter)
    assert (tmp_path / "ok" / "lib" / f"c{MAX_LINK_HOPS}").read_bytes() == b"data"
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(_xz(chain(MAX_LINK_HOPS + 1)))
    with pytest.raises(UnsafeArchive, match="chain of more than 40 links"):
        unpack(str(bad), str(tmp_path / "bad"), 1, "", "LICENSE.cccl", use_filter=use_filter)
    assert not (tmp_path / "bad").exists()

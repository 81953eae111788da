"""The loader model (envdoctor/probes/loader.py) and the loader cache reader (envdoctor/host/ldcache.py), held
to the real thing.

Every library here is compiled with gcc in a temporary directory (RPATH with ``--disable-new-dtags``, RUNPATH
with ``--enable-new-dtags``), and the answer of the machine's own dynamic loader is the reference: ``ld.so
--list PROGRAM`` (what ``ldd`` runs) prints the file it maps for every library, without running the program.
Loader caches are written by the machine's own ``ldconfig -C FILE -c new|old|compat`` and compared with
``ldconfig -p -C FILE``. Nothing here is a stand-in: where gcc, ldconfig or ld.so is missing the test is skipped.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from typing import Dict, List

import pytest

from envdoctor.host import ldcache
from envdoctor.host.live import LiveHost
from envdoctor.host.snapshot import SnapshotHost
from envdoctor.probes import loader

ENV = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
LDSO = next((p for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1") if os.path.exists(p)), None)


def _need(*tools: str) -> None:
    for t in tools:
        if shutil.which(t) is None and not os.path.exists(t):
            pytest.skip("%s is not installed" % t)


def _gcc(cwd: str, *args: str) -> None:
    subprocess.run(["gcc", *args], cwd=cwd, env=ENV, check=True, timeout=60, capture_output=True)


def _ldso_list(program: str, ld_library_path: str = "") -> Dict[str, str]:
    """soname -> the file the real loader maps (``ld.so --list``)."""
    if LDSO is None:
        pytest.skip("no dynamic loader at a known path")
    env = dict(ENV, LD_LIBRARY_PATH=ld_library_path)
    out = subprocess.run([LDSO, "--list", program], env=env, capture_output=True, text=True, timeout=30).stdout
    got = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\S+) => (\S+)", line)
        if m:
            got[m.group(1)] = os.path.realpath(m.group(2)) if m.group(2) != "not" else "not found"
    return got


# -- the cache file -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """Loader caches in the three layouts, written by this machine's ldconfig for two directories of libraries
    compiled here (one with glibc-hwcaps subdirectories) plus the system's own."""
    _need("gcc", "ldconfig")
    d = tmp_path_factory.mktemp("ldc")
    (d / "f.c").write_text("int f(void) { return 1; }\n")
    for sub in ("lib", "lib/glibc-hwcaps/x86-64-v2", "lib/glibc-hwcaps/x86-64-v3", "lib2"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    _gcc(str(d), "-shared", "-fPIC", "-o", "lib/libfoo.so.1", "-Wl,-soname,libfoo.so.1", "f.c")
    for level in ("x86-64-v2", "x86-64-v3"):
        shutil.copy(str(d / "lib/libfoo.so.1"), str(d / "lib/glibc-hwcaps" / level / "libfoo.so.1"))
    _gcc(str(d), "-shared", "-fPIC", "-o", "lib2/libbar.so.2", "-Wl,-soname,libbar.so.2", "f.c")
    (d / "conf").write_text("%s/lib\n%s/lib2\n" % (d, d))
    out = {}
    for fmt in ("new", "old", "compat"):
        path = str(d / ("cache." + fmt))
        r = subprocess.run(["ldconfig", "-X", "-f", str(d / "conf"), "-C", path, "-c", fmt], env=ENV,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not os.path.exists(path):
            pytest.skip("ldconfig cannot write a %s cache here: %s" % (fmt, r.stderr.strip()[:200]))
        out[fmt] = path
    out["dir"] = str(d)
    return out


def _ldconfig_p(path: str) -> List[str]:
    text = subprocess.run(["ldconfig", "-p", "-C", path], env=ENV, capture_output=True, text=True, timeout=30).stdout
    return [ln for ln in text.splitlines()[1:] if ln.startswith("\t")]


@pytest.mark.parametrize("fmt", ["new", "old"])
def test_every_entry_of_a_cache_ldconfig_wrote_reads_as_ldconfig_lists_it(caches: Dict[str, str], fmt: str) -> None:
    entries = ldcache.parse(open(caches[fmt], "rb").read())
    assert [ldcache.ldconfig_line(e) for e in entries] == _ldconfig_p(caches[fmt])
    foo = [e for e in entries if e.soname == "libfoo.so.1"]
    assert len(foo) == 3
    if fmt == "new":  # the new layout names the glibc-hwcaps subdirectory of each entry
        assert [e.hwcaps for e in foo] == ["x86-64-v2", "x86-64-v3", None]


def test_a_compat_cache_is_read_through_the_new_cache_inside_it(caches: Dict[str, str]) -> None:
    """glibc 2.2-2.31 wrote old + new together; ld.so reads the new one. (``ldconfig -p`` itself misprints the
    hwcaps names of a compat cache, so only soname, flags and path are compared with it.)"""
    entries = ldcache.parse(open(caches["compat"], "rb").read())
    plain = [re.sub(r', hwcap: "[^"]*"', "", ln) for ln in _ldconfig_p(caches["compat"])]
    assert [ldcache.ldconfig_line(e._replace(hwcaps=None)) for e in entries] == plain
    assert [e.hwcaps for e in entries if e.soname == "libfoo.so.1"] == ["x86-64-v2", "x86-64-v3", None]


def test_this_machines_own_cache_reads_as_ldconfig_p_lists_it() -> None:
    _need("ldconfig")
    if not os.path.exists("/etc/ld.so.cache"):
        pytest.skip("no /etc/ld.so.cache")
    entries = ldcache.parse(open("/etc/ld.so.cache", "rb").read())
    assert [ldcache.ldconfig_line(e) for e in entries] == _ldconfig_p("/etc/ld.so.cache")


@pytest.mark.parametrize("cut", [0, 5, 16, 40, 60, 200])
def test_a_truncated_or_garbled_cache_is_refused_with_a_reason(caches: Dict[str, str], cut: int) -> None:
    data = open(caches["new"], "rb").read()
    with pytest.raises(ldcache.LdCacheError):
        ldcache.parse(data[:cut])
    bad = bytearray(data)
    bad[20:24] = (0xFFFFFF).to_bytes(4, "little")  # more entries than any file holds
    with pytest.raises(ldcache.LdCacheError, match="implausible|past the end"):
        ldcache.parse(bytes(bad))


def test_the_probe_reads_the_file_and_falls_back_to_ldconfig_p_when_it_cannot(caches: Dict[str, str]) -> None:
    data = open(caches["new"], "rb").read()
    doc = {"schema_version": 1, "files": {"/etc/ld.so.cache": {"base64": base64.b64encode(data).decode()}},
           "dirs": {}, "links": {}, "commands": [], "environ": {}, "python": {}, "uname": {"machine": "x86_64"}}
    entries, fact = loader.read_ld_cache(SnapshotHost(json.loads(json.dumps(doc))))
    assert fact.known and fact.source == "file:/etc/ld.so.cache"
    assert entries is not None and ("libbar.so.2", "libc6,x86-64", caches["dir"] + "/lib2/libbar.so.2") in entries
    # a snapshot made before the file was read: the ldconfig -p output it holds
    doc["files"] = {}
    doc["dirs"] = {"/sbin": {"entries": ["ldconfig"]}}
    doc["commands"] = [{"argv": ["/sbin/ldconfig", "-p"], "returncode": 0, "stdout":
                        "1 libs found in cache `/etc/ld.so.cache'\n\tlibbar.so.2 (libc6,x86-64) => /x/libbar.so.2\n",
                        "stderr": "", "timed_out": False}]
    entries, fact = loader.read_ld_cache(SnapshotHost(json.loads(json.dumps(doc))))
    assert entries == [("libbar.so.2", "libc6,x86-64", "/x/libbar.so.2")] and fact.source.startswith("command:")
    # a garbled file: ldconfig -p instead, and the fact says why the file was not used when that fails too
    doc["files"] = {"/etc/ld.so.cache": {"base64": base64.b64encode(b"glibc-ld.so.cache1.1" + b"\0" * 8).decode()}}
    doc["commands"] = []
    entries, fact = loader.read_ld_cache(SnapshotHost(json.loads(json.dumps(doc))))
    assert entries is None and "truncated header" in (fact.reason or "")


def test_the_cache_prefers_the_best_usable_hwcaps_entry(caches: Dict[str, str]) -> None:
    entries = [(e.soname, ldcache.flags_text(e), e.path) for e in ldcache.parse(open(caches["new"], "rb").read())]
    base = loader.LoaderConfig((), entries, machine="x86-64")
    lib = caches["dir"] + "/lib"
    pick = lambda levels: loader._cache_hits(base._replace(hwcaps=levels), "libfoo.so.1")[0]  # noqa: E731
    assert pick(("x86-64-v4", "x86-64-v3", "x86-64-v2")) == lib + "/glibc-hwcaps/x86-64-v3/libfoo.so.1"
    assert pick(("x86-64-v2",)) == lib + "/glibc-hwcaps/x86-64-v2/libfoo.so.1"
    assert pick(()) == lib + "/libfoo.so.1"


# -- the search order, against ld.so ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """Two copies of libdep.so.1 (in a/ and b/, each saying which it is), and programs and libraries that need
    it with DT_RPATH, DT_RUNPATH, through an intermediate library with and without RUNPATH, from $ORIGIN."""
    _need("gcc")
    d = tmp_path_factory.mktemp("tree")
    for sub in ("a", "b", "c", "bin", "a/glibc-hwcaps/x86-64-v2"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "dep.c").write_text("int dep(void) { return 1; }\n")
    (d / "mid.c").write_text("int dep(void); int mid(void) { return dep(); }\n")
    (d / "main.c").write_text("int mid(void); int main(void) { return mid(); }\n")
    (d / "main2.c").write_text("int dep(void); int main(void) { return dep(); }\n")
    for sub in ("a", "b"):
        _gcc(str(d), "-shared", "-fPIC", "-o", sub + "/libdep.so.1", "-Wl,-soname,libdep.so.1", "dep.c")
    old, new = "-Wl,--disable-new-dtags", "-Wl,--enable-new-dtags"
    # libmid.so: no search path of its own / RUNPATH c (which holds nothing)
    _gcc(str(d), "-shared", "-fPIC", "-o", "c/libmid.so", "-Wl,-soname,libmid.so", "mid.c", "-La", "-l:libdep.so.1")
    _gcc(str(d), "-shared", "-fPIC", "-o", "c/libmidrun.so", "-Wl,-soname,libmidrun.so", "mid.c", "-La",
         "-l:libdep.so.1", new, "-Wl,-rpath," + str(d / "b"))
    # programs: RPATH a + libmid (no path: inherits the program's RPATH), RUNPATH a, RPATH with $ORIGIN
    _gcc(str(d), "-o", "bin/rpath_mid", "main.c", "-Lc", "-lmid", "-Wl,-rpath-link," + str(d / "a"), old,
         "-Wl,-rpath," + str(d / "a") + ":" + str(d / "c"))
    _gcc(str(d), "-o", "bin/rpath_midrun", "main.c", "-Lc", "-lmidrun", "-Wl,-rpath-link," + str(d / "a"), old,
         "-Wl,-rpath," + str(d / "a") + ":" + str(d / "c"))
    _gcc(str(d), "-o", "bin/runpath", "main2.c", "-La", "-l:libdep.so.1", new, "-Wl,-rpath," + str(d / "a"))
    _gcc(str(d), "-o", "bin/origin", "main2.c", "-La", "-l:libdep.so.1", old, "-Wl,-rpath,$ORIGIN/../b")
    return {"dir": str(d)}


def _predict(program: str, ld_library_path: str = "", hwcaps=()) -> Dict[str, str]:
    host = LiveHost(timeout=10)
    config = loader.LoaderConfig(tuple(p for p in ld_library_path.split(":") if p), [], hwcaps=tuple(hwcaps),
                                 machine="x86-64")
    graph = loader.load(host, config, [program])
    return {lk["soname"]: os.path.realpath(lk["path"]) if lk["path"] else "not found" for lk in graph["links"]
            if lk["soname"] in ("libdep.so.1", "libmid.so", "libmidrun.so")}


@pytest.mark.parametrize("program,ldp,why", [
    ("rpath_mid", "", "libmid has no path: the program's DT_RPATH is searched for its needs"),
    ("rpath_mid", "b", "the program's DT_RPATH (a) still comes before LD_LIBRARY_PATH (b)"),
    ("rpath_midrun", "", "libmidrun has RUNPATH b: the program's RPATH is no longer inherited"),
    ("runpath", "b", "DT_RUNPATH comes after LD_LIBRARY_PATH"),
    ("runpath", "", "DT_RUNPATH alone"),
    ("origin", "", "$ORIGIN is the program's directory"),
])
def test_the_model_maps_the_files_the_real_loader_maps(tree: Dict[str, str], program: str, ldp: str,
                                                       why: str) -> None:
    d = tree["dir"]
    path = os.path.join(d, "bin", program)
    ld_library_path = ":".join(os.path.join(d, p) for p in ldp.split(":") if p)
    real = {k: v for k, v in _ldso_list(path, ld_library_path).items() if k in ("libdep.so.1", "libmid.so",
                                                                                  "libmidrun.so")}
    assert real, "ld.so --list printed nothing for %s" % program
    assert _predict(path, ld_library_path) == real, why


def test_a_glibc_hwcaps_subdirectory_wins_where_the_cpu_has_the_level(tree: Dict[str, str]) -> None:
    d = tree["dir"]
    hw = os.path.join(d, "a", "glibc-hwcaps", "x86-64-v2", "libdep.so.1")
    shutil.copy(os.path.join(d, "b", "libdep.so.1"), hw)
    try:
        host = LiveHost(timeout=10)
        levels = loader.cpu_hwcaps(host)
        predicted = _predict(os.path.join(d, "bin", "runpath"), hwcaps=levels)["libdep.so.1"]
        real = _ldso_list(os.path.join(d, "bin", "runpath"))["libdep.so.1"]
        assert predicted == real
        if "x86-64-v2" in levels:
            assert predicted == os.path.realpath(hw)
    finally:
        os.unlink(hw)


def test_a_library_already_loaded_satisfies_a_later_need_by_its_soname(tree: Dict[str, str]) -> None:
    d = tree["dir"]
    host = LiveHost(timeout=10)
    config = loader.LoaderConfig((os.path.join(d, "b"),), [], machine="x86-64")
    # libdep from a/ opened first by path; libmid's need of libdep.so.1 is then that one, not b/'s
    graph = loader.load(host, config, [os.path.join(d, "a", "libdep.so.1"), os.path.join(d, "c", "libmid.so")])
    link = next(lk for lk in graph["links"] if lk["soname"] == "libdep.so.1")
    assert link["via"] == "loaded" and link["path"] == os.path.join(d, "a", "libdep.so.1")


def test_without_the_cache_a_library_found_before_it_is_certain_and_one_found_after_it_is_not(
        tree: Dict[str, str]) -> None:
    d = tree["dir"]
    host = LiveHost(timeout=10)
    config = loader.LoaderConfig((os.path.join(d, "b"),), None, cache_why="no cache", machine="x86-64")
    found = loader.search(host, config, "libdep.so.1")
    assert found["via"] == "LD_LIBRARY_PATH" and found["certain"]
    missing = loader.search(host, config, "libnosuch.so.1")
    assert missing["path"] is None and not missing["certain"]

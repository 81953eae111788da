"""A framework built for a newer glibc than the system's: the ELF version needs (``.gnu.version_r``), the wheel
tags, and ``framework.glibc_too_old``.

The ELF tests read real objects of the machine running them: the system's libstdc++/libc (compared with
binutils' ``readelf -V`` where it is installed) and small libraries compiled here with gcc and a linker
version script, so the expected version names are known exactly. The check is exercised on the corpus
machines (tests/corpus/jaxlib-centos7-glibc217-needs-glibc223, torch160-aarch64-ubuntu1804-needs-glibc228)
replayed with the evidence edited, and on hand-made facts for the wheel-tag cases.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import random
import re
import shutil
import struct
import subprocess
from typing import Any, Dict, List, Optional

import pytest

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts, ok, unknown
from envdoctor.host.elf import ElfError, read_dynamic
from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotError, SnapshotHost, document_from_host, validate_document
from envdoctor.probes.linkage import highest_needed, wheel_floor, wheel_tags

from .conftest import corpus_snapshot, probe_facts, snapshot_findings

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
JAX_CASE = "jaxlib-centos7-glibc217-needs-glibc223"
TORCH_CASE = "torch160-aarch64-ubuntu1804-needs-glibc228"
ENV = {"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _system_lib(name: str) -> str:
    found = sorted(glob.glob("/usr/lib/*/%s" % name) + glob.glob("/lib/*/%s" % name) + glob.glob("/usr/lib64/%s" % name)
                   + glob.glob("/lib64/%s" % name))
    if not found:
        pytest.skip("no %s on this machine" % name)
    return found[0]


def _readelf_verneed(path: str) -> Dict[str, List[str]]:
    """``readelf -V``'s version needs, the reference the reader is held to."""
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run(["readelf", "-V", "-W", path], capture_output=True, text=True, env=ENV, timeout=30,
                         check=True).stdout
    section = out.split(".gnu.version_r", 1)[1] if ".gnu.version_r" in out else ""
    result: Dict[str, List[str]] = {}
    current: Optional[List[str]] = None
    for line in section.splitlines():
        m = re.search(r"File: (\S+)\s+Cnt:", line)
        if m:
            current = result.setdefault(m.group(1), [])
            continue
        m = re.search(r"Name: (\S+)\s+Flags", line)
        if m and current is not None and m.group(1) not in current:
            current.append(m.group(1))
    return result


def _read(path: str) -> Dict[str, Any]:
    with open(path, "rb") as fh:
        return read_dynamic(fh)


@pytest.mark.parametrize("name", ["libstdc++.so.6", "libc.so.6"])
def test_version_needs_of_the_systems_own_libraries_match_readelf(name: str) -> None:
    path = os.path.realpath(_system_lib(name))
    got = _read(path)
    assert got["verneed"] == _readelf_verneed(path)
    assert "verneed_error" not in got
    if name == "libstdc++.so.6":  # libstdc++ is built against glibc: it needs GLIBC_ versions of libc
        need = highest_needed(got["verneed"], "GLIBC")
        assert need is not None and need[1] in got["verneed"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    """libbase.so exporting base_v1@@BASE_1.0 and base_v2@@BASE_2.0 (a linker version script), and libuser.so
    calling both (so it needs BASE_1.0 and BASE_2.0 of libbase.so), compiled here."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("elf")
    (d / "base.c").write_text("int base_v1(void) { return 1; }\nint base_v2(void) { return 2; }\n")
    (d / "base.map").write_text("BASE_1.0 { global: base_v1; local: *; };\nBASE_2.0 { global: base_v2; } BASE_1.0;\n")
    (d / "user.c").write_text("int base_v1(void); int base_v2(void);\n"
                              "int user(void) { return base_v1() + base_v2(); }\n")
    (d / "none.c").write_text("int plain(void) { return 3; }\n")

    def gcc(*args: str) -> None:
        subprocess.run(["gcc", *args], cwd=str(d), env=ENV, check=True, timeout=60, capture_output=True)

    gcc("-shared", "-fPIC", "-o", "libbase.so", "-Wl,-soname,libbase.so", "-Wl,--version-script=base.map", "base.c")
    gcc("-shared", "-fPIC", "-o", "libuser.so", "user.c", "-L.", "-lbase")
    gcc("-shared", "-fPIC", "-nostdlib", "-o", "libnone.so", "none.c")
    return {n: str(d / n) for n in ("libbase.so", "libuser.so", "libnone.so")}


def test_version_needs_of_a_library_compiled_here(built: Dict[str, str]) -> None:
    got = _read(built["libuser.so"])
    assert "libbase.so" in got["needed"]
    assert sorted(got["verneed"]["libbase.so"]) == ["BASE_1.0", "BASE_2.0"]
    assert highest_needed(got["verneed"], "BASE") == ("2.0", "libbase.so")
    assert got["verneed"] == _readelf_verneed(built["libuser.so"])
    # an object that needs no symbol versions at all says so (empty), which is not "unknown" (None)
    assert _read(built["libnone.so"])["verneed"] == {}


def test_the_live_host_reads_them_and_a_snapshot_replays_them(built: Dict[str, str]) -> None:
    host = LiveHost(timeout=5)
    res = host.elf(built["libuser.so"])
    assert res.ok and res.verneed is not None and set(res.verneed["libbase.so"]) == {"BASE_1.0", "BASE_2.0"}
    doc = document_from_host(host, Scrubber(include_host=True), "test")
    replay = SnapshotHost(json.loads(json.dumps(doc)))
    assert replay.elf(built["libuser.so"]) == res
    # a snapshot made before version needs were recorded still replays: the rest stands, the needs are unknown
    old = json.loads(json.dumps(doc))
    for entry in old["elf"].values():
        entry.pop("verneed", None)
    again = SnapshotHost(old).elf(built["libuser.so"])
    assert again.needed == res.needed and again.verneed is None


def test_a_garbled_version_needs_record_in_a_snapshot_is_refused_with_a_reason(built: Dict[str, str]) -> None:
    host = LiveHost(timeout=5)
    host.elf(built["libuser.so"])
    doc = json.loads(json.dumps(document_from_host(host, Scrubber(include_host=True), "test")))
    doc["elf"][built["libuser.so"]]["verneed"] = {"libbase.so": "BASE_1.0"}
    with pytest.raises(SnapshotError, match="verneed"):
        validate_document(doc)


def _verneed_offset(path: str) -> int:
    out = subprocess.run(["readelf", "-V", "-W", path], capture_output=True, text=True, env=ENV, timeout=30,
                         check=True).stdout
    m = re.search(r"\.gnu\.version_r' contains .*\n\s*Addr: 0x[0-9a-f]+\s+Offset: 0x([0-9a-f]+)", out)
    assert m, out
    return int(m.group(1), 16)


def _patch_verneednum(src: bytes, value: int) -> bytes:
    """``src`` (an x86-64 ELF64 object) with its DT_VERNEEDNUM set to ``value``."""
    b = bytearray(src)
    phoff, = struct.unpack_from("<Q", b, 32)
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    for i in range(phnum):
        p_type, _f, p_offset, _v, _p, p_filesz = struct.unpack_from("<IIQQQQ", b, phoff + i * phentsize)
        if p_type == 2:  # PT_DYNAMIC
            for at in range(p_offset, p_offset + p_filesz, 16):
                tag, _val = struct.unpack_from("<qQ", b, at)
                if tag == 0x6FFFFFFF:
                    struct.pack_into("<Q", b, at + 8, value)
                    return bytes(b)
    raise AssertionError("no DT_VERNEEDNUM")


def test_broken_version_needs_are_unknown_with_a_reason_never_a_crash(built: Dict[str, str], tmp_path) -> None:
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    src = open(built["libuser.so"], "rb").read()
    at = _verneed_offset(built["libuser.so"])
    host = LiveHost(timeout=5)

    def variant(name: str, data: bytes):
        p = tmp_path / name
        p.write_bytes(data)
        return host.elf(str(p))

    def patched(offset: int, fmt: str, *values: int) -> bytes:
        b = bytearray(src)
        struct.pack_into("<" + fmt, b, offset, *values)
        return bytes(b)

    # an unknown revision of the table: the rest of the dynamic section still stands
    res = variant("rev.so", patched(at, "H", 7))
    assert res.ok and "libbase.so" in res.needed and res.verneed is None
    assert "revision 7" in res.verneed_error
    # an entry whose name points past the string table
    res = variant("name.so", patched(at + 4, "I", 0x7FFFFFF0))
    assert res.ok and res.verneed is None and "string index out of range" in res.verneed_error
    # an auxiliary list that points far outside the table
    res = variant("aux.so", patched(at + 8, "I", 0x7FFFFFF0))
    assert res.ok and res.verneed is None and res.verneed_error
    # a huge auxiliary count: the chain still ends where the last entry says so (vna_next 0), as ld.so reads it
    b = bytearray(src)
    struct.pack_into("<H", b, at + 2, 0xFFFF)
    res = variant("count.so", bytes(b))
    assert res.ok and res.verneed == host.elf(built["libuser.so"]).verneed
    # a table claiming more libraries than any real object has: refused before it is walked
    res = variant("many.so", _patch_verneednum(src, 100000))
    assert res.ok and res.verneed is None and "implausible" in res.verneed_error
    # the file cut inside the version needs: unknown, with the reason
    res = variant("cut.so", src[:at + 20])
    assert res.error == "bad_elf" or (res.verneed is None and res.verneed_error)
    # random damage to the table and its neighbourhood: every answer is a result, never an exception
    rng = random.Random(20261127)
    for i in range(300):
        b = bytearray(src)
        for _ in range(rng.randint(1, 8)):
            b[at + rng.randrange(0, 96)] = rng.randrange(256)
        res = variant("fuzz%d.so" % (i % 5), bytes(b))
        assert res.ok or res.error in ("bad_elf", "not_elf")
        if res.ok:
            assert (res.verneed is None) == bool(res.verneed_error)


def test_garbage_and_truncated_files_raise_elf_error_only(tmp_path) -> None:
    lib = _system_lib("libstdc++.so.6")
    data = open(os.path.realpath(lib), "rb").read(1 << 20)
    rng = random.Random(7)
    for cut in (0, 4, 16, 63, 64, 200, 4096, 65536):
        p = tmp_path / ("cut%d.so" % cut)
        p.write_bytes(data[:cut])
        with pytest.raises(ElfError):
            _read(str(p))
    for _ in range(200):
        b = bytearray(data[:65536])
        for _j in range(16):
            b[rng.randrange(16, 4096)] = rng.randrange(256)
        p = tmp_path / "garbled.so"
        p.write_bytes(bytes(b))
        try:
            got = _read(str(p))
        except ElfError:
            continue
        assert got["verneed"] is None or isinstance(got["verneed"], dict)


def test_the_highest_glibc_release_named_and_which_library_asks_for_it() -> None:
    needs = {"libc.so.6": ["GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_PRIVATE"], "libm.so.6": ["GLIBC_2.9", "GLIBC_2.29"],
             "libstdc++.so.6": ["GLIBCXX_3.4.30", "CXXABI_1.3.13"]}
    assert highest_needed(needs, "GLIBC") == ("2.29", "libm.so.6")  # 2.29 > 2.17 > 2.9 (not string order)
    assert highest_needed(needs, "GLIBCXX") == ("3.4.30", "libstdc++.so.6")
    assert highest_needed(needs, "CXXABI") == ("1.3.13", "libstdc++.so.6")
    # DT_RELR objects (ld -z pack-relative-relocs) need glibc 2.36 through an ABI tag, not a release name
    assert highest_needed({"libc.so.6": ["GLIBC_2.34", "GLIBC_ABI_DT_RELR"]}, "GLIBC") == ("2.36", "libc.so.6")
    assert highest_needed({"libgcc_s.so.1": ["GCC_3.0"]}, "GLIBC") is None


# -- wheel tags ------------------------------------------------------------------------------------------------


def test_wheel_tags_and_the_glibc_they_promise() -> None:
    text = "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.45.1)\nRoot-Is-Purelib: false\n" \
           "Tag: cp310-cp310-manylinux_2_17_x86_64\nTag: cp310-cp310-manylinux2014_x86_64\n\n"
    tags = wheel_tags(text)
    assert tags == ["cp310-cp310-manylinux_2_17_x86_64", "cp310-cp310-manylinux2014_x86_64"]
    assert wheel_floor(tags) == (2, 17)
    assert wheel_floor(["cp312-cp312-manylinux_2_28_x86_64"]) == (2, 28)
    assert wheel_floor(["cp38-none-manylinux2010_x86_64"]) == (2, 12)
    assert wheel_floor(["cp37-cp37m-manylinux1_x86_64"]) == (2, 5)
    # a compressed tag set installs on any of its platforms: the lowest counts
    assert wheel_floor(["cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64"]) == (2, 27)
    # tags that promise no glibc
    assert wheel_floor(["cp37-cp37m-linux_aarch64"]) is None
    assert wheel_floor(["py3-none-any"]) is None
    assert wheel_floor(["cp312-cp312-musllinux_1_2_x86_64"]) is None
    assert wheel_floor([]) is None
    assert wheel_floor(["garbage"]) is None


# -- the check -------------------------------------------------------------------------------------------------


_case = corpus_snapshot


def _findings(doc: Dict[str, Any], name: str = "case") -> List[Any]:
    return [f for f in snapshot_findings(doc, name) if f.code == "framework.glibc_too_old"]


def _set_glibc(doc: Dict[str, Any], stdout: Optional[str], returncode: int = 0) -> None:
    (cmd,) = [c for c in doc["commands"] if c["argv"] == ["getconf", "GNU_LIBC_VERSION"]]
    if stdout is None:
        doc["commands"].remove(cmd)
    else:
        cmd.update(stdout=stdout, returncode=returncode)


def test_jaxlib_needing_glibc_223_on_centos7() -> None:
    (f,) = _findings(_case(JAX_CASE))
    assert f.severity == "error" and f.components == ["jax"]
    for words in ("2.23", "2.17", "xla_extension.so", "libm.so.6", "jaxlib 0.1.21"):
        assert words in f.title
    assert "version `GLIBC_2.23' not found" in f.detail
    assert "pip install --force-reinstall --only-binary=:all: jaxlib" in f.fix.commands
    assert "container" in f.fix.text and "newer OS" in f.fix.text


def test_torch_needing_glibc_228_on_ubuntu1804_aarch64() -> None:
    (f,) = _findings(_case(TORCH_CASE))
    assert "libtorch_python.so" in f.title and "2.28" in f.title and "2.27" in f.title
    assert "`import torch` fails" in f.detail


TORCH03_CASE = "b6-centos67-glibc212-conda-torch031-needs-glibc217"


def test_torch_0x_whose_extension_module_holds_all_of_torch_on_centos6() -> None:
    # pytorch/pytorch#6607: torch 0.3.1 has no libtorch_*.so; its torch/_C.cpython-36m-x86_64-linux-gnu.so asks
    # GLIBC_2.17 of CentOS 6's glibc 2.12
    doc = _case(TORCH03_CASE)
    (f,) = _findings(doc)
    assert f.severity == "error" and "_C.cpython-36m-x86_64-linux-gnu.so" in f.title
    assert "2.17" in f.title and "2.12" in f.title and "`import torch` fails" in f.detail
    enough = copy.deepcopy(doc)
    _set_glibc(enough, "glibc 2.17\n")  # CentOS 7's glibc: quiet
    assert _findings(enough) == []


def test_no_finding_when_the_system_glibc_is_new_enough_unknown_or_not_glibc() -> None:
    doc = _case(JAX_CASE)
    enough = copy.deepcopy(doc)
    _set_glibc(enough, "glibc 2.23\n")  # exactly what it needs
    assert _findings(enough) == []
    missing = copy.deepcopy(doc)
    _set_glibc(missing, None)  # getconf absent: os.glibc unknown
    assert _findings(missing) == []
    musl = copy.deepcopy(doc)  # musl's getconf knows no GNU_LIBC_VERSION
    _set_glibc(musl, "", returncode=1)
    (cmd,) = [c for c in musl["commands"] if c["argv"] == ["getconf", "GNU_LIBC_VERSION"]]
    cmd["stderr"] = "getconf: GNU_LIBC_VERSION: unknown variable\n"
    assert _findings(musl) == []


def test_the_version_needs_decide_not_the_library_name() -> None:
    doc = _case(JAX_CASE)
    (path,) = [p for p in doc["elf"] if p.endswith("xla_extension.so")]
    doc["elf"][path]["verneed"] = {"libm.so.6": ["GLIBC_2.2.5"], "libc.so.6": ["GLIBC_2.14", "GLIBC_PRIVATE"]}
    assert _findings(doc) == []
    doc["elf"][path]["verneed"] = {"libc.so.6": ["GLIBC_2.2.5", "GLIBC_2.27"], "libm.so.6": ["GLIBC_2.23"]}
    (f,) = _findings(doc)
    assert "GLIBC_2.27 of libc.so.6" in f.title


def test_an_old_snapshot_without_version_needs_raises_nothing_and_says_why() -> None:
    doc = _case(JAX_CASE)
    for entry in doc["elf"].values():
        entry.pop("verneed", None)
    host = SnapshotHost(doc, "old")
    facts = probe_facts(host)
    abi = facts.get("linkage.jax.abi")
    assert abi is not None and abi.status == "unknown" and "not recorded" in (abi.reason or "")
    assert [f for f in run_checks(CheckContext(facts, [])) if f.code == "framework.glibc_too_old"] == []


def _facts(abi: Dict[str, Any], glibc: Optional[str] = "2.17") -> Facts:
    out = [ok("framework.torch", {"version": "2.6.0+cpu", "package": "torch", "path": "/sp"}, "dir:/sp", "PyTorch"),
           ok("linkage.torch.abi", abi, "elf:/sp/torch/lib/libtorch_cpu.so", "C library torch needs")]
    out.append(ok("os.glibc", glibc, "command:getconf GNU_LIBC_VERSION", "glibc") if glibc else
               unknown("os.glibc", "getconf: not installed", "command:getconf GNU_LIBC_VERSION", "glibc"))
    return Facts(out)


def _abi(**kw: Any) -> Dict[str, Any]:
    base: Dict[str, Any] = {"libraries": [], "unread": [], "wheels": [], "glibc": None, "glibc_library": None,
                            "glibc_from": None, "glibc_package": None, "glibc_package_version": None,
                            "glibcxx": None, "cxxabi": None, "wheel_glibc": None, "wheel_package": None,
                            "wheel_package_version": None, "wheel_tags": []}
    base.update(kw)
    return base


def _check(facts: Facts) -> List[Any]:
    return [f for f in run_checks(CheckContext(facts, [])) if f.code == "framework.glibc_too_old"]


def test_a_wheel_tag_alone_is_a_floor_where_no_library_was_read() -> None:
    abi = _abi(wheel_glibc="2.28", wheel_package="torch", wheel_package_version="2.6.0+cpu",
               wheel_tags=["cp312-cp312-manylinux_2_28_x86_64"], unread=["/sp/torch/lib/libtorch_cpu.so: EACCES"])
    (f,) = _check(_facts(abi))
    assert f.severity == "error"
    assert "manylinux_2_28" in f.title and "2.28" in f.title and "2.17" in f.title and "torch 2.6.0+cpu" in f.title
    assert _check(_facts(abi, glibc="2.28")) == []
    assert _check(_facts(abi, glibc=None)) == []


def test_a_wheel_tag_above_the_system_whose_libraries_need_less_is_a_warning() -> None:
    abi = _abi(wheel_glibc="2.28", wheel_package="torch", wheel_tags=["cp312-cp312-manylinux_2_28_x86_64"],
               glibc="2.17", glibc_library="/sp/torch/lib/libtorch_cpu.so", glibc_from="libc.so.6",
               libraries=[{"path": "/sp/torch/lib/libtorch_cpu.so", "package": "torch", "version": "2.6.0",
                           "glibc": "2.17", "glibc_from": "libc.so.6", "glibcxx": None, "cxxabi": None}])
    (f,) = _check(_facts(abi))
    assert f.severity == "warning" and "may still work" in f.detail


def test_garbled_facts_give_no_finding_and_no_crash() -> None:
    for abi in (_abi(glibc="two point nine"), _abi(glibc=["2.99"]), _abi(wheel_glibc="2"), _abi(libraries="x")):
        findings = run_checks(CheckContext(_facts(abi), []))
        assert not [f for f in findings if f.code in ("framework.glibc_too_old", "envdoctor.check_crashed")]
    assert _check(_facts(_abi(glibc="2.99"), glibc="musl")) == []


TENSORRT_TARBALL_CASE = "b10-centos7-glibc217-tensorrt7011-ubuntu-tarball-needs-glibc227"


def test_a_library_the_loader_hands_a_framework_from_elsewhere_is_judged_by_its_glibc_needs_too() -> None:
    # corpus: NVIDIA/TensorRT#1124: the Ubuntu 18.04 tarball of TensorRT 7 on CentOS 7, its lib/ on LD_LIBRARY_PATH;
    # libnvinfer.so.7 requires GLIBC_2.27 of libm.so.6 (the case's ELF record), the system has glibc 2.17
    doc = corpus_snapshot(TENSORRT_TARBALL_CASE)
    found = [f for f in snapshot_findings(doc) if f.code == "framework.glibc_too_old"]
    assert len(found) == 1 and found[0].severity == "error", found
    f = found[0]
    assert "libnvinfer.so.7" in f.title and "GLIBC_2.27 of libm.so.6" in f.title and "2.17" in f.title
    assert "LD_LIBRARY_PATH" in f.detail and f.components == ["tensorrt"]

    # the same machine with glibc 2.27 (what the tarball was built for), and with a library needing 2.17 at most
    newer = copy.deepcopy(doc)
    for cmd in newer["commands"]:
        if cmd["argv"][:1] == ["getconf"]:
            cmd["stdout"] = "glibc 2.27\n"
    assert not [f for f in snapshot_findings(newer) if f.code == "framework.glibc_too_old"]
    built_for_it = copy.deepcopy(doc)
    for path, rec in built_for_it["elf"].items():
        if "libnvinfer" in path:
            rec["verneed"] = {"libm.so.6": ["GLIBC_2.2.5"], "libc.so.6": ["GLIBC_2.14", "GLIBC_2.17"]}
    assert not [f for f in snapshot_findings(built_for_it) if f.code == "framework.glibc_too_old"]


def test_several_libraries_at_the_highest_release_name_the_same_one_whatever_their_order() -> None:
    """On the live H200 (tests/live/h200-ubuntu2404-container) the live run named libm.so.6 as the library
    jax-cuda13-plugin's xla_cuda_plugin.so needs GLIBC_2.27 of, and its replay libc.so.6: several glibc libraries
    were required at that release, the live run took them in the file's order, the snapshot's JSON lists them
    sorted. Whatever the order, the same library is named (the first by name)."""
    order = [("libm.so.6", ["GLIBC_2.2.5", "GLIBC_2.27"]), ("libpthread.so.0", ["GLIBC_2.2.5", "GLIBC_2.27"]),
             ("libc.so.6", ["GLIBC_2.14", "GLIBC_2.27"])]
    assert highest_needed(dict(order), "GLIBC") == ("2.27", "libc.so.6")
    assert highest_needed(dict(reversed(order)), "GLIBC") == ("2.27", "libc.so.6")
    assert highest_needed(dict(sorted(order)), "GLIBC") == ("2.27", "libc.so.6")

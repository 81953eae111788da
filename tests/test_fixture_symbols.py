"""Symbol facts in hand-built machines: machine.json's elf entries may list an object's imports and a library's
exports (read from the real objects by scripts/symbol_facts.py); scripts/make_fixture.py answers the probes'
symbol lookups from them, and only when every object of a lookup is listed.

The machines: tests/machines/sglkernel012-old-abi-on-torch270 (sgl-kernel 0.1.2, built against torch 2.6 with
the old C++ ABI, beside torch 2.7.0: the real modules' imports, the real torch libraries' exports) and its quiet
twin tests/machines/sglkernel019-on-torch270 (sgl-kernel 0.1.9, built for torch 2.7)."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from envdoctor.host.elfsym import unresolved
from envdoctor.host.snapshot import SnapshotHost, validate_document
from envdoctor.report import diagnose

from .conftest import MACHINES, load_machine

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import make_fixture  # noqa: E402

BROKEN = "sglkernel012-old-abi-on-torch270"
QUIET = "sglkernel019-on-torch270"
SITE = "/usr/local/lib/python3.11/dist-packages"
CODE = "framework.extension_abi_mismatch"


def _abi_findings(host):
    return [f for f in diagnose(host).findings if f.code == CODE]


def test_old_abi_extension_on_newer_torch_is_an_error_naming_the_symbol():
    found = _abi_findings(load_machine(BROKEN))
    assert len(found) == 1
    f = found[0]
    assert f.severity == "error"
    assert "sgl-kernel 0.1.2 was built against another PyTorch" in f.title
    assert "common_ops.abi3.so" in f.title and "flash_ops.abi3.so" in f.title
    assert "PyTorch 2.7.0 does not export" in f.title
    assert "15 symbols" in f.title  # 8 of common_ops' torch imports, 7 of flash_ops'
    assert "undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb" in f.detail


def test_extension_built_for_the_installed_torch_is_quiet_after_a_real_lookup():
    assert _abi_findings(load_machine(QUIET)) == []
    with open(os.path.join(MACHINES, QUIET, "snapshot.json"), encoding="utf-8") as fh:
        lookups = json.load(fh)["elf_symbols"]
    # quiet because every import was found, not because nothing was looked up
    assert sorted((os.path.basename(e["path"]), e["checked"], e["missing"]) for e in lookups) == [
        ("common_ops.abi3.so", 101, []), ("flash_ops.abi3.so", 76, [])]


def test_recorded_lookups_name_the_libraries_the_probe_asked_about():
    with open(os.path.join(MACHINES, BROKEN, "snapshot.json"), encoding="utf-8") as fh:
        lookups = json.load(fh)["elf_symbols"]
    common = [e for e in lookups if e["path"].endswith("/common_ops.abi3.so")]
    assert len(common) == 1
    assert SITE + "/torch/lib/libtorch_cpu.so" in common[0]["providers"]
    assert ["_ZN5torch3jit17parseSchemaOrNameERKSsb", None] in common[0]["missing"]
    assert (common[0]["checked"], len(common[0]["missing"])) == (101, 8)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A copy of the broken machine in a folder of its own, which make_fixture builds from."""
    base = tmp_path / "machines"
    shutil.copytree(os.path.join(MACHINES, BROKEN), str(base / "m"), symlinks=True)
    monkeypatch.setattr(make_fixture, "FOLDERS", (str(base),))
    path = base / "m" / "machine.json"

    def edit(change):
        meta = json.loads(path.read_text(encoding="utf-8"))
        change(meta["elf"])
        path.write_text(json.dumps(meta), encoding="utf-8")
        doc = make_fixture.build("m")
        validate_document(doc, "m")
        return doc
    return edit


def test_a_provider_without_exports_leaves_the_lookup_unrecorded_and_the_check_quiet(scratch):
    doc = scratch(lambda elf: elf[SITE + "/torch/lib/libc10.so"].pop("exports"))
    assert "elf_symbols" not in doc  # never "missing" for want of a listing
    assert _abi_findings(SnapshotHost(doc, "m")) == []
    assert "exports" not in doc["elf"][SITE + "/torch/lib/libc10.so"]  # the facts stay out of the snapshot


def test_an_object_without_imports_is_not_looked_up(scratch):
    doc = scratch(lambda elf: elf[SITE + "/sgl_kernel/common_ops.abi3.so"].pop("imports"))
    assert [os.path.basename(e["path"]) for e in doc["elf_symbols"]] == ["flash_ops.abi3.so"]
    f, = _abi_findings(SnapshotHost(doc, "m"))
    assert "flash_ops.abi3.so imports 7 symbols" in f.title and "common_ops" not in f.title


def test_exporting_the_old_abi_names_silences_the_finding(scratch):
    def export_all(elf):
        names = [i[0] for p in ("common_ops", "flash_ops") for i in elf[SITE + "/sgl_kernel/%s.abi3.so" % p]["imports"]]
        elf[SITE + "/torch/lib/libtorch_cpu.so"]["exports"] += [[n, None] for n in names]
    doc = scratch(export_all)
    assert [e["missing"] for e in doc["elf_symbols"]] == [[], []]
    assert _abi_findings(SnapshotHost(doc, "m")) == []


@pytest.mark.parametrize("change, words", [
    (lambda e: e.update(imports="x"), "imports must be a list"),
    (lambda e: e.update(imports=[["f"]]), "is not [name, version or null]"),
    (lambda e: e.update(imports=[["memcpy", "GLIBC_2.2.5"]]), "write [name, version, library]"),
    (lambda e: e.update(imports=[["f", "NOPE_1"]]), "verneed names no library"),
    (lambda e: e.update(exports=[["f", ""]]), "exports: ['f', ''] is not [name, version or null]"),
    (lambda e: e.update(error="ENOENT", imports=[]), "holds an error"),
])
def test_malformed_symbol_facts_are_refused_with_the_reason(scratch, change, words):
    with pytest.raises(make_fixture.FixtureError) as exc:
        scratch(lambda elf: change(elf[SITE + "/sgl_kernel/common_ops.abi3.so"]))
    assert words in str(exc.value)


def test_listed_symbols_follow_envdoctors_lookup_rule_for_versions():
    """A versioned import is looked up only in the provider whose soname its version is required of."""
    obj = make_fixture._ListedSymbols({"imports": [("cudaMalloc", "libcudart.so.12", "libcudart.so.12", False),
                                                   ("memcpy", "GLIBC_2.14", "libc.so.6", False),
                                                   ("_ZN3c104impl3fooEv", None, None, False)]})
    cudart_old = make_fixture._ListedSymbols({"soname": "libcudart.so.12",
                                              "exports": {"cudaFree": ["libcudart.so.12"]}})
    c10 = make_fixture._ListedSymbols({"soname": "libc10.so", "exports": {"_ZN3c104impl3fooEv": [""]}})
    assert unresolved(obj, [cudart_old, c10]) == ([("cudaMalloc", "libcudart.so.12")], 2)  # glibc's: not judged
    cudart = make_fixture._ListedSymbols({"soname": "libcudart.so.12",
                                          "exports": {"cudaMalloc": ["libcudart.so.12"]}})
    assert unresolved(obj, [cudart, c10]) == ([], 2)

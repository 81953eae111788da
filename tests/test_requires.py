"""Installed packages against each other (envdoctor/probes/requires.py, envdoctor/checks/requires.py), held to
``pip check`` itself: a virtual environment is made here, distributions are written into its site-packages
(their METADATA as pip writes it: the real requirement lines of vllm 0.3.3, xformers 0.0.23.post1, torchvision
0.17.1 and flash-attn 2.5.6, as published on PyPI), and envdoctor's verdict is compared with what the machine's
pip reports for the same environment (``pip --python VENV check``). Then the finding a user reads, and silence
on every captured healthy machine."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List, Set, Tuple

import pytest

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Facts
from envdoctor.host.live import LiveHost
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.probes import run_probes
from envdoctor.probes.requires import check_installed, keep_headers, split_requirement

from .conftest import make_host

PY = "python%d.%d" % sys.version_info[:2]
HERE = os.path.dirname(os.path.abspath(__file__))

#: name, version, Requires-Dist lines (from each release's METADATA on PyPI, abridged to the lines that matter)
DISTS = [
    ("torch", "2.2.1+cu121", ["filelock", "typing-extensions>=4.8.0", "nvidia-cudnn-cu12==8.9.2.26; "
                              "platform_system == \"Linux\" and platform_machine == \"x86_64\"",
                              "triton==2.2.0; platform_system == \"Linux\" and platform_machine == \"x86_64\"",
                              "opt-einsum>=3.3; extra == \"opt-einsum\""]),
    ("vllm", "0.3.3", ["ninja", "psutil", "ray>=2.9", "torch==2.1.2", "xformers==0.0.23.post1",
                       "triton>=2.1.0", "pydantic>=2.0"]),
    ("xformers", "0.0.23.post1", ["numpy", "torch==2.1.2"]),
    ("torchvision", "0.17.1", ["numpy", "requests", "torch==2.2.1", "pillow!=8.3.*,>=5.3.0",
                               "scipy; extra == \"scipy\""]),
    ("flash_attn", "2.5.6", ["torch", "einops", "packaging", "ninja"]),
    ("numpy", "2.0.0rc1", []),
    ("filelock", "3.13.1", []),
    ("typing_extensions", "4.10.0", []),
    ("nvidia_cudnn_cu12", "8.9.2.26", ["nvidia-cublas-cu12"]),
    ("packaging", "24.0", []),
    ("ninja", "1.11.1.1", []),
    ("psutil", "5.9.8", []),
    ("pydantic", "1.10.14", ["typing-extensions>=4.2.0"]),
    ("oldstyle", "1.0", ["numpy[extra]>=1.20", "colorama; sys_platform == \"win32\"", "requests (>=2) ; "
                                                                                        "python_version < \"3\""]),
]


def _write(site: str, name: str, version: str, requires: List[str]) -> None:
    info = os.path.join(site, "%s-%s.dist-info" % (name, version))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as fh:
        fh.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name.replace("_", "-"), version))
        fh.write("".join("Requires-Dist: %s\n" % r for r in requires))
        fh.write("\nThe description.\nRequires-Dist: not-a-header (a line of the description)\n")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> str:
    d = tmp_path_factory.mktemp("reqvenv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d / "v")], check=True, timeout=120,
                   capture_output=True)
    site = str(d / "v" / "lib" / PY / "site-packages")
    for name, version, reqs in DISTS:
        _write(site, name, version, reqs)
    # a License header folded over several lines, some of them spaces alone, before the Requires-Dist lines: how
    # setuptools and hatchling write a license file's text (env-doctor 0.3.5's METADATA on PyPI, its MIT text
    # abridged): those lines continue the License header, the Requires-Dist after them still apply
    info = os.path.join(site, "licensed_pkg-1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as fh:
        fh.write("Metadata-Version: 2.4\nName: licensed-pkg\nVersion: 1.0\nLicense: MIT License\n        \n"
                 "        Copyright (c) 2025 Someone\n        \n        Permission is hereby granted, free of charge\n"
                 "Requires-Python: >=3.8\nLicense-File: LICENSE\nRequires-Dist: packaging<24.0,>=21.0\n"
                 "Requires-Dist: not-installed-anywhere>=1.0\n\nThe description.\n")
    # an egg: requires.txt with an extra's section and a marker's section (setuptools' layout)
    egg = os.path.join(site, "legacy_pkg-0.1-py3.egg-info")
    os.makedirs(egg)
    with open(os.path.join(egg, "PKG-INFO"), "w") as fh:
        fh.write("Metadata-Version: 1.1\nName: legacy-pkg\nVersion: 0.1\n")
    with open(os.path.join(egg, "requires.txt"), "w") as fh:
        fh.write("psutil>=6\n\n[:python_version >= \"3\"]\nninja<1.0\n\n[docs]\nsphinx\n")
    return str(d / "v" / "bin" / "python")


def _pip_check(python: str) -> Tuple[Set[Tuple[str, str, str]], Set[Tuple[str, str]]]:
    """pip's own answer: {(package, requirement name, installed version)}, {(package, missing name)}."""
    try:
        import pip  # noqa: F401
    except ImportError:
        pytest.skip("pip is not installed beside the test interpreter")
    out = subprocess.run([sys.executable, "-m", "pip", "--python", python, "check"], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")).stdout
    conflicts, missing = set(), set()
    for line in out.splitlines():
        m = re.match(r"^(\S+) \S+ has requirement ([A-Za-z0-9._-]+).*, but you have \S+ (\S+)\.$", line)
        if m:
            conflicts.add((m.group(1).lower().replace("_", "-"), m.group(2).lower().replace("_", "-"), m.group(3)))
        m = re.match(r"^(\S+) \S+ requires ([A-Za-z0-9._-]+), which is not installed\.$", line)
        if m:
            missing.add((m.group(1).lower().replace("_", "-"), m.group(2).lower().replace("_", "-")))
    return conflicts, missing


def test_the_verdict_is_pip_checks_verdict(venv: str) -> None:
    want_conflicts, want_missing = _pip_check(venv)
    got = check_installed(LiveHost(timeout=20, python_executable=venv))
    conflicts = {(c["key"], c["name"], c["installed"]) for c in got["conflicts"]}
    missing = {(m["key"], m["name"]) for m in got["missing"]}
    assert conflicts == want_conflicts
    assert missing == want_missing
    # what pip reports here, spelled out: the pins on torch, xformers' own; triton (Linux marker) and einops
    assert ("vllm", "torch", "2.2.1+cu121") in conflicts and ("xformers", "torch", "2.2.1+cu121") in conflicts
    assert ("legacy-pkg", "psutil", "5.9.8") in conflicts and ("legacy-pkg", "ninja", "1.11.1.1") in conflicts
    assert ("torch", "triton") in missing and ("flash-attn", "einops") in missing
    assert ("licensed-pkg", "packaging", "24.0") in conflicts and ("licensed-pkg", "not-installed-anywhere") in missing
    assert not any(k == "oldstyle" for k, _ in missing) and not any(c[0] == "torchvision" for c in conflicts)
    assert got["dependents"]["torch"] == ["flash-attn", "torchvision", "vllm", "xformers"]


def test_the_finding_names_both_sides_and_the_fix(venv: str) -> None:
    host = LiveHost(timeout=20, python_executable=venv)
    facts = Facts(f for r in run_probes(host, parallel=False, only=("python", "frameworks", "requires"))
                  for f in r.facts)
    found = [f for f in run_checks(CheckContext(facts, [])) if f.code.startswith("packages.requirement")]
    titles = {f.title: f for f in found}
    vllm = titles["vllm 0.3.3 requires torch==2.1.2, but torch 2.2.1+cu121 is installed"]
    assert vllm.severity == "warning" and vllm.components[0] == "torch"
    assert vllm.fix.commands == ["pip install 'torch==2.1.2'"]
    assert "xformers 0.0.23.post1 requires torch==2.1.2, but torch 2.2.1+cu121 is installed" in titles
    # vllm's own pin on xformers is met; einops (not of the GPU stack) is in the fact, not said; Triton is said
    assert not any("einops" in t for t in titles)
    triton = [f for f in found if "triton" in f.title and f.code == "packages.requirement_missing"]
    assert triton and triton[0].severity == "info"
    # torch's pin on its cuDNN wheel is the nvidia-wheels check's (here met): never said twice
    assert not any("nvidia-cudnn" in t for t in titles)


def test_the_small_parser_splits_what_metadata_holds() -> None:
    r = split_requirement("torch (==2.1.2) ; platform_system == \"Linux\"")
    assert r is not None and (r.name, r.spec, r.marker) == ("torch", "==2.1.2", 'platform_system == "Linux"')
    r = split_requirement("Pillow[extra]!=8.3.*,>=5.3.0")
    assert r is not None and (r.name, r.spec) == ("pillow", "!=8.3.*,>=5.3.0")
    r = split_requirement("pkg @ https://example.invalid/pkg.whl ; python_version >= '3.8'")
    assert r is not None and r.spec.startswith("@https://")
    assert split_requirement("=== broken") is None


def test_a_snapshot_keeps_the_headers_of_metadata_not_its_description() -> None:
    text = "Name: x\nSummary: many words\nRequires-Dist: torch\n\nA long description.\n"
    assert keep_headers(text) == "Name: x\nRequires-Dist: torch\n\n"
    host = make_host(files={"/site/x-1.0.dist-info/METADATA": keep_headers(text)},
                     python={"executable": "/usr/bin/python3", "version": "3.10.12", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": ["/site"]})
    assert check_installed(host)["missing"][0]["name"] == "torch"


def test_metadata_that_cannot_be_read_is_left_out_not_judged() -> None:
    host = make_host(dirs={"/site": ["x-1.0.dist-info"]},
                     python={"executable": "/usr/bin/python3", "version": "3.10.12", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": ["/site"]})
    got = check_installed(host)
    assert got["unread"] == ["x"] and got["conflicts"] == [] and got["missing"] == []


def _errata() -> set:
    """Corpus cases withdrawn as errata (tests/corpus/errata.txt): their records contradict a real install."""
    with open(os.path.join(HERE, "corpus", "errata.txt"), encoding="utf-8") as fh:
        return {line.split()[0] for line in fh if line.strip() and not line.startswith("#")}


def _snapshots() -> List[str]:
    healthy = []
    withdrawn = _errata()
    for case in sorted(glob.glob(os.path.join(HERE, "corpus", "*", "case.json"))):
        if os.path.basename(os.path.dirname(case)) in withdrawn:
            continue
        with open(case, encoding="utf-8") as fh:
            if json.load(fh).get("healthy"):
                healthy.append(os.path.join(os.path.dirname(case), "snapshot.json"))
    return (sorted(glob.glob(os.path.join(HERE, "machines", "*", "snapshot.json"))) + healthy
            + sorted(glob.glob(os.path.join(HERE, "live", "*", "snapshot.json.gz"))))


@pytest.mark.parametrize("path", _snapshots(), ids=lambda p: os.path.basename(os.path.dirname(p)))
def test_every_captured_healthy_machine_stays_quiet(path: str) -> None:
    host = SnapshotHost(load_snapshot(path), path)
    facts = Facts(f for r in run_probes(host, parallel=False, only=("python", "frameworks", "requires"))
                  for f in r.facts)
    loud = [f for f in run_checks(CheckContext(facts, [])) if (f.code.startswith("packages.requirement")
            or f.code == "package.no_build_for_python") and f.severity != "info"]
    assert loud == [], [f.title for f in loud]


VLLM_CASE = "b3-vllm032-pins-torch212-runs-on-torch221-undefined-symbol"
VLLM_SITE = "/usr/local/lib/python3.10/dist-packages"


def _pins(doc: Dict[str, Any]) -> Dict[str, Any]:
    from .conftest import snapshot_findings

    return {f.title.split(" requires ")[0]: f for f in snapshot_findings(doc)
            if f.code == "packages.requirement_not_met"}


def test_a_compiled_package_pinned_to_another_framework_release_is_an_error() -> None:
    # vllm#3147: vllm 0.3.2 and xformers 0.0.23.post1 (each with its _C module) pin torch==2.1.2; torch 2.2.1
    from .conftest import corpus_snapshot

    found = _pins(corpus_snapshot(VLLM_CASE))
    assert found["vllm 0.3.2"].severity == "error" and found["xformers 0.0.23.post1"].severity == "error"
    assert "_C.cpython-310-x86_64-linux-gnu.so" in found["vllm 0.3.2"].detail
    assert "undefined symbol" in found["vllm 0.3.2"].detail


def test_without_compiled_modules_or_with_a_range_it_stays_a_warning() -> None:
    from .conftest import corpus_snapshot

    doc = corpus_snapshot(VLLM_CASE)
    doc["dirs"][VLLM_SITE + "/vllm"]["entries"] = ["__init__.py"]  # a pure-Python package
    assert _pins(doc)["vllm 0.3.2"].severity == "warning"
    doc = corpus_snapshot(VLLM_CASE)
    meta = VLLM_SITE + "/vllm-0.3.2.dist-info/METADATA"
    doc["files"][meta]["text"] = doc["files"][meta]["text"].replace("torch ==2.1.2", "torch <2.2,>=2.1")
    assert _pins(doc)["vllm 0.3.2"].severity == "warning"


# -- package.no_build_for_python --------------------------------------------------------------------------------
# The layout of a DALI wheel before 0.28 (NVIDIA/DALI#4417, the maintainer: "Version 0.27 is installed as before
# 0.28 there was no proper python version specifier in the wheel manifest"): one py3-none wheel carrying the
# backend module once per CPython release it was built for (PEP 3149 tags), and no Requires-Python header. From
# 0.28 on, dali/python/setup.py.in declares python_requires (1.3.0: '<=3.9,>=3.6'; today '>=3.8, <3.13').
DALI_SITE = "/env/lib/python3.11/site-packages"
DALI_RECORD = "".join("nvidia/dali/%s,,\n" % n for n in (
    "libdali.so", "libdali_kernels.so", "backend_impl.cpython-36m-x86_64-linux-gnu.so",
    "backend_impl.cpython-37m-x86_64-linux-gnu.so", "backend_impl.cpython-38-x86_64-linux-gnu.so"))


def _dali(version: str = "3.11.0", record: str = DALI_RECORD, requires_python: str = "") -> List[Any]:
    info = DALI_SITE + "/nvidia_dali_cuda110-0.27.0.dist-info/"
    host = make_host(files={info + "METADATA": "Metadata-Version: 2.1\nName: nvidia-dali-cuda110\nVersion: 0.27.0\n"
                            + ("Requires-Python: %s\n" % requires_python if requires_python else ""),
                            info + "RECORD": record},
                     python={"executable": "/env/bin/python", "version": version, "implementation": "cpython",
                             "prefix": "/env", "base_prefix": "/env", "sys_path": [DALI_SITE]})
    facts = Facts(f for r in run_probes(host, parallel=False, only=("python", "frameworks", "requires"))
                  for f in r.facts)
    return [f for f in run_checks(CheckContext(facts, [])) if f.code == "package.no_build_for_python"]


def test_a_package_with_extension_modules_for_other_pythons_only_is_said() -> None:
    found = _dali()
    assert len(found) == 1 and found[0].severity == "warning"
    assert found[0].title == "nvidia-dali-cuda110 0.27.0 has no build for this environment's Python 3.11"
    assert "CPython 3.6, 3.7, 3.8 only" in found[0].detail and "backend_impl.cpython-38" in found[0].detail
    assert "3.6, 3.7, 3.8" in found[0].fix.text


def test_a_requires_python_that_leaves_the_interpreter_out_is_said() -> None:
    found = _dali(record="nvidia/dali/__init__.py,,\n", requires_python="<=3.9,>=3.6")
    assert len(found) == 1 and "'Requires-Python: <=3.9,>=3.6'" in found[0].detail


def test_a_package_built_for_this_python_or_for_the_stable_abi_stays_quiet() -> None:
    assert _dali(version="3.8.10") == [] and _dali(version="3.6.9") == []  # its own builds ("36m" is 3.6)
    assert _dali(record=DALI_RECORD + "nvidia/dali/backend_impl.cpython-311-x86_64-linux-gnu.so,,\n") == []
    assert _dali(record="pkg/_core.abi3.so,,\npkg/_old.cpython-37m-x86_64-linux-gnu.so,,\n") == []
    assert _dali(record="nvidia/dali/libdali.so,,\n") == []  # no tagged module: nothing says
    assert _dali(record="nvidia/dali/__init__.py,,\n", requires_python=">=3.8, <3.13") == []


def test_an_egg_without_requires_txt_is_read_as_requiring_nothing() -> None:
    host = make_host(files={"/site/legacy-0.1-py3.11.egg-info/PKG-INFO": "Name: legacy\nVersion: 0.1\n"},
                     python={"executable": "/usr/bin/python3", "version": "3.11.4", "implementation": "cpython",
                             "prefix": "/usr", "base_prefix": "/usr", "sys_path": ["/site"]})
    got = check_installed(host)
    assert got["checked"] == 1 and got["no_build"] == [] and got["missing"] == []

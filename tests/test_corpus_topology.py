"""The corpus cases' GPU topology (tests/topology/corpus/CASE.json, written into tests/corpus/CASE/ by
``python -m tests.topology.make_corpus``) is what the thread shows and what the case folder holds.

These tests check the fixtures, not envdoctor's verdict on them: the committed NVML answers are the real
worker's answers for the spec, the sysfs tree in root/ is the spec's, the spec agrees with itself (the PCIe
relation NVML gives each pair is the one its PCIe tree and NUMA nodes imply; the CPU lists exist in the case's
/proc/cpuinfo) and with the thread's own ``nvidia-smi topo -m`` where the thread shows one.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Set

import pytest

from .topology import boards, make_corpus

CASES = make_corpus.names()
CORPUS = make_corpus.CORPUS


def _root(case: str) -> str:
    return os.path.join(CORPUS, case, "root")


def _cpus(text: str) -> Set[int]:
    out: Set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _relation(spec: Dict[str, Any], a: int, b: int) -> str:
    """nvidia-smi's legend for two GPUs from their PCIe paths and NUMA nodes."""
    pa = spec["gpus"][a]["path"] + [spec["gpus"][a]["bus"]]
    pb = spec["gpus"][b]["path"] + [spec["gpus"][b]["bus"]]
    if pa[0] != pb[0]:
        return "NODE" if spec["numa"][a] == spec["numa"][b] else "SYS"
    shared = 0
    for x, y in zip(pa, pb):
        if x != y:
            break
        shared += 1
    if shared == 1:
        return "PHB"  # only the host bridge in common: two root ports
    # one switch in common: PIX when each GPU sits on a downstream port of it, PXB through more bridges
    return "PIX" if shared == len(pa) - 2 == len(pb) - 2 else "PXB"


@pytest.fixture(scope="module")
def answers() -> Dict[str, Dict[str, Any]]:
    try:
        return make_corpus.worker_answers(CASES)
    except RuntimeError as exc:
        pytest.skip("cannot build the stand-in NVML or run the worker: %s" % exc)


def test_every_spec_names_a_corpus_case_and_says_where_it_came_from() -> None:
    assert len(CASES) >= 10
    for case in CASES:
        spec = make_corpus.load(case)
        assert spec["case"] == case and os.path.isfile(os.path.join(CORPUS, case, "case.json")), case
        assert spec["_source"] and all(isinstance(s, str) and s.strip() for s in spec["_source"]), case
        assert any("stand-in" in s for s in spec["_source"]), case  # every case invents something; it says what


@pytest.mark.parametrize("case", CASES)
def test_committed_nvml_answers_are_what_the_worker_gets(case: str, answers: Dict[str, Dict[str, Any]]) -> None:
    with open(os.path.join(CORPUS, case, "machine.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    committed = {k: v for k, v in meta["nvml"]["data"].items() if make_corpus.OWNED.match(k)}
    assert committed == answers[case]
    assert make_corpus.SRC_TOPOLOGY in meta["sources"] and make_corpus.SRC_NVML in meta["sources"]


def _on_disk(case: str) -> Dict[str, Any]:
    """The case's sysfs PCI and IOMMU trees as they are in root/: path -> bytes or ("link", target)."""
    root = _root(case)
    out: Dict[str, Any] = {}
    for top in ("sys/devices", "sys/bus/pci/devices", "sys/bus/pci/drivers/nvidia", "sys/kernel/iommu_groups"):
        base = os.path.join(root, top)
        for cur, dirs, files in os.walk(base):
            for name in dirs + files:
                full = os.path.join(cur, name)
                path = "/" + os.path.relpath(full, root)
                if os.path.islink(full):
                    out[path] = ("link", os.readlink(full))
                elif os.path.isfile(full):
                    with open(full, "rb") as fh:
                        out[path] = fh.read()
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(cur, d))]
    return out


@pytest.mark.parametrize("case", CASES)
def test_root_holds_the_spec_tree_and_nothing_else(case: str) -> None:
    files, links, _dirs = make_corpus.tree(make_corpus.load(case))
    want: Dict[str, Any] = dict(files)
    want.update({p: ("link", t) for p, t in links.items()})
    assert _on_disk(case) == want


@pytest.mark.parametrize("case", CASES)
def test_every_link_of_the_tree_resolves_inside_the_machine(case: str) -> None:
    root = _root(case)
    _files, links, _dirs = make_corpus.tree(make_corpus.load(case))
    for path, target in links.items():
        if "/iommu_group" in path:
            continue  # the group directory holds only its reserved_regions (checked with the tree)
        real = os.path.normpath(os.path.join(os.path.dirname(path), target))
        assert os.path.isdir(os.path.join(root, real.lstrip("/"))), (path, target)


@pytest.mark.parametrize("case", CASES)
def test_pcie_relations_follow_from_the_tree_and_numa_nodes(case: str) -> None:
    spec = make_corpus.load(case)
    n = len(spec["gpus"])
    for a in range(n):
        assert spec["pcie"][a][a] == "X"
        for b in range(n):
            if a != b:
                assert spec["pcie"][a][b] == spec["pcie"][b][a] == _relation(spec, min(a, b), max(a, b)), (a, b)


@pytest.mark.parametrize("case", [c for c in CASES if make_corpus.load(c).get("published")])
def test_the_threads_matrix_is_the_spec(case: str) -> None:
    spec = make_corpus.load(case)
    n = len(spec["gpus"])
    rows = boards.published_matrix(spec)
    assert [r[:n] for r in rows[:n]] == spec["pcie"]
    header = spec["published"]["matrix"][0].split()
    extra = len([h for h in header if re.match(r"^(NIC\d+|mlx\S+)$", h)])  # NICs between the GPUs and CPU Affinity
    for i, line in enumerate(spec["published"]["matrix"][1:1 + n]):
        cells = line.split()
        assert cells[1 + n + extra] == spec["cpulist"][i] and int(cells[2 + n + extra]) == spec["numa"][i], i


@pytest.mark.parametrize("case", CASES)
def test_cpu_lists_and_numa_nodes_fit_the_cases_cpu(case: str) -> None:
    spec = make_corpus.load(case)
    with open(os.path.join(_root(case), "proc", "cpuinfo"), encoding="utf-8") as fh:
        text = fh.read()
    threads = len(re.findall(r"^processor\s*:", text, re.M))
    socket_of: Dict[int, int] = {}
    for block in text.split("\n\n"):
        p = re.search(r"^processor\s*:\s*(\d+)", block, re.M)
        s = re.search(r"^physical id\s*:\s*(\d+)", block, re.M)
        if p and s:
            socket_of[int(p.group(1))] = int(s.group(1))
    nodes: Dict[int, List[int]] = {}
    cpus_of: Dict[int, Set[int]] = {}
    for i, (numa, cpus) in enumerate(zip(spec["numa"], spec["cpulist"])):
        listed = _cpus(cpus)
        assert max(listed) < threads, (i, cpus, threads)
        if numa >= 0:
            # a NUMA node's CPUs lie on one socket; a socket may hold several NUMA nodes (AMD EPYC in NPS2/NPS4)
            assert len({socket_of[c] for c in listed}) == 1, (i, cpus)
            nodes.setdefault(numa, []).append(i)
            cpus_of.setdefault(numa, set()).update(listed)
    for a in cpus_of:  # two NUMA nodes never share a CPU
        for b in cpus_of:
            assert a == b or not cpus_of[a] & cpus_of[b], (a, b)
    if spec.get("cpu"):
        assert threads == spec["cpu"]["threads"]

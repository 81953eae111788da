"""The GPU topology layer (``envdoctor topo``, the ``topology`` layer of diagnose) on boards rebuilt from
published ``nvidia-smi topo -m`` outputs (tests/topology/boards/*.json, each naming its source).

No GPU runs here: the boards' NVML answers come from the stand-in library (tests/fakenvml, compiled by the
``fake_lib`` fixture) asked by envdoctor's real NVML worker through nvidia-ml-py; the boards' sysfs trees are
rebuilt from the published matrices. Variants of a board (a link down, ACS on, an NCCL variable set) change
one thing of it and say which.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.matrix import nccl
from envdoctor.render.topology import document, matrix_rows
from envdoctor.report import diagnose

from .conftest import machine_path
from .topology import boards

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = boards.names()


def _variants() -> Dict[str, Dict[str, Any]]:
    """Boards changed in one respect, asked of the stand-in NVML like the published ones."""
    out = {}
    b = boards.load("dgx-h100")
    b["gpus"][3]["nvlink_states"] = {"16": 0, "17": 0}  # two of GPU 3's 18 links do not train
    b["gpus"][2]["nvlink_versions"] = {"5": 3}  # one of GPU 2's links trained at a lower version
    out["dgx-h100+links"] = b
    b = boards.load("dgx-h100")
    b["fabric"] = dict(b["fabric"], state=2)  # fabric registration still in progress
    out["dgx-h100+fabric"] = b
    return out


@pytest.fixture(scope="session")
def nvml(fake_lib, tmp_path_factory) -> Dict[str, Dict[str, Any]]:
    every = {n: boards.load(n) for n in NAMES}
    every.update(_variants())
    return boards.collect_nvml(fake_lib, every, str(tmp_path_factory.mktemp("topology")))


def board(name: str) -> Dict[str, Any]:
    return _variants()[name] if "+" in name else boards.load(name)


def replay(doc: Dict[str, Any], layers: Any = ("topology",)):
    return diagnose(SnapshotHost(doc, "board"), layers=list(layers) if layers else None)


def report_of(nvml: Dict[str, Dict[str, Any]], name: str, **kw: Any):
    return replay(boards.snapshot(board(name), nvml[name], **kw))


def codes(rep) -> Dict[str, str]:
    return {f.code: f.severity for f in rep.findings}


# -- the published matrices, cell for cell -------------------------------------------------------------

def _published(b: Dict[str, Any]) -> Dict[str, Any]:
    lines = [ln for ln in b["published"]["matrix"] if ln.strip()]
    header = lines[0].split()
    gpus = [h for h in header if h.startswith("GPU") and h[3:].isdigit()]
    others = [h for h in header if h.startswith(("NIC", "mlx"))]
    numa = "NUMA" in header
    rows = []
    for line in lines[1:]:
        t = line.split()
        n = len(gpus)
        rows.append({"cells": t[1:1 + n], "cpus": t[1 + n + len(others)],
                     "numa": t[2 + n + len(others)] if numa else None})
    return {"gpus": len(gpus), "rows": rows}


@pytest.mark.parametrize("name", NAMES)
def test_published_topo_matrix_is_reproduced_cell_for_cell(name, nvml):
    b = boards.load(name)
    pub = _published(b)
    rep = report_of(nvml, name)
    mine = matrix_rows(rep.facts)
    assert mine[0][1:1 + pub["gpus"]] == ["GPU%d" % i for i in range(pub["gpus"])]
    for i, row in enumerate(pub["rows"]):
        assert mine[i + 1][1:1 + pub["gpus"]] == row["cells"], (name, i)
        assert mine[i + 1][1 + pub["gpus"]] == row["cpus"], (name, i)
        if row["numa"] is not None:
            assert mine[i + 1][2 + pub["gpus"]] == row["numa"], (name, i)
    assert len(NAMES) >= 6


def test_published_p2p_matrix_is_reproduced(nvml):
    b = boards.load("two-5090-phb")
    published = [ln.split() for ln in b["published"]["p2p_rw"][1:]]
    pairs = {(p["a"], p["b"]): p for p in report_of(nvml, "two-5090-phb").facts.value("topology.pairs")}
    for a, row in enumerate(published):
        for b_, cell in enumerate(row[1:]):
            if a != b_:
                p = pairs[(min(a, b_), max(a, b_))]["p2p"]
                assert p["read"] == p["write"] == cell


# -- the layer's facts and the topo view ---------------------------------------------------------------

def test_pairs_carry_path_p2p_and_nccl_transport(nvml):
    facts = report_of(nvml, "pcie-switch-k80").facts
    pairs = facts.value("topology.pairs")
    assert len(pairs) == 28
    for p in pairs:
        assert {"a", "b", "path", "p2p", "nccl"} <= set(p) and set(p["p2p"]) == {"read", "write"}
        assert p["nccl"] in nccl.TRANSPORTS
    by = {(p["a"], p["b"]): p for p in pairs}
    # NCCL's default on an Intel CPU: P2P under a common PCIe switch (PIX, PXB), host memory across sockets
    assert by[(0, 1)]["path"] == "PIX" and by[(0, 1)]["nccl"] == "P2P/PCIe"
    assert by[(0, 2)]["path"] == "PXB" and by[(0, 2)]["nccl"] == "P2P/PCIe"
    assert by[(0, 4)]["path"] == "SYS" and by[(0, 4)]["nccl"] == "SHM"
    gpus = facts.value("topology.gpus")
    assert gpus[0]["numa_node"] == 0 and gpus[7]["cpulist"] == "14-27"
    assert gpus[0]["pcie_path"][0] == "pci0000:00" and len(gpus[0]["bridges"]) == 5


def test_nvswitch_board_links_fabric_and_policy_facts(nvml):
    facts = report_of(nvml, "dgx-h100").facts
    assert {p["path"] for p in facts.value("topology.pairs")} == {"NV18"}
    assert {p["nccl"] for p in facts.value("topology.pairs")} == {"P2P/NVLink"}
    assert facts.value("gpu.5.nvlink_active") == 18
    assert facts.value("topology.fabric.state") == "completed"
    assert facts.value("topology.min_nccl_transport") == "P2P/NVLink"
    assert facts.value("topology.iommu_mode") == "off"
    # beneath NVLink the PCIe relation NVML gives: NODE within a NUMA node, SYS across
    pairs = {(p["a"], p["b"]): p for p in facts.value("topology.pairs")}
    assert pairs[(0, 1)]["pcie"] == "NODE" and pairs[(0, 7)]["pcie"] == "SYS"


def test_topo_command_text_and_json(nvml, tmp_path):
    path = tmp_path / "dgx.json"
    path.write_text(json.dumps(boards.snapshot(board("dgx-h100"), nvml["dgx-h100"])))
    r = subprocess.run([sys.executable, "-m", "envdoctor", "topo", "--snapshot", str(path)], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["GPU%d" % i for i in range(8)] + ["CPU", "Affinity", "NUMA", "Affinity"]
    assert lines[1].split()[:9] == ["GPU0", "X"] + ["NV18"] * 7 and "0-47,96-143" in lines[1]
    assert "P2P/NVLink: every pair" in r.stdout and "Fabric: completed" in r.stdout
    j = subprocess.run([sys.executable, "-m", "envdoctor", "topo", "--snapshot", str(path), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    doc = json.loads(j.stdout)
    import jsonschema

    with open(os.path.join(ROOT, "envdoctor", "schemas", "topology.schema.json"), encoding="utf-8") as fh:
        jsonschema.validate(doc, json.load(fh))
    topo = doc["topology"]
    assert len(topo["pairs"]) == 28 and topo["pairs"][0]["nccl"] == "P2P/NVLink"
    assert topo["gpus"][0]["pcie"] == {"gen_current": 5, "gen_max": 5, "width_current": 16, "width_max": 16}
    assert topo["gpus"][0]["nvlink"][0]["state"] == "active" and topo["fabric"]["gpus"]
    assert doc["summary"] == {"error": 0, "warning": 0, "info": 0}


def test_one_gpu_is_one_line_and_no_noise(fake_lib, tmp_path):
    from .fakenvml.build import load_answers

    b = boards.load("two-l4-sys")
    b["gpus"] = b["gpus"][:1]
    b["numa"], b["cpulist"] = b["numa"][:1], b["cpulist"][:1]
    data = boards.collect_nvml(fake_lib, {"one": b}, str(tmp_path))["one"]
    rep = replay(boards.snapshot(b, data), layers=None)
    assert not [f for f in rep.findings if f.components[0] == "topology"]
    from envdoctor.render.style import Style
    from envdoctor.render.text import render
    from envdoctor.render.topology import render as render_topo

    assert "GPU topology" not in render(rep, Style(None, False)) and "linked by" not in render(rep, Style(None, False))
    out = render_topo(rep, Style(None, False)).splitlines()
    assert out == ["1 GPU: no GPU-to-GPU path (NVIDIA L4)"]
    assert load_answers("h100.json")  # the stand-in's single-GPU answers stay as they were


def test_old_snapshot_replays_with_topology_not_recorded():
    rep = diagnose(SnapshotHost(load_snapshot(machine_path("centosstream9-8xh100")), "old"))
    status = rep.facts.get("topology.status")
    assert status.status == "unknown" and "not recorded" in status.reason
    assert not [f for f in rep.findings if f.components[0] == "topology"]
    from envdoctor.render.style import Style
    from envdoctor.render.text import render

    assert "linked by" not in render(rep, Style(None, False))


def test_captured_machines_nvml_is_what_the_worker_gets(nvml):
    """The NVML answers committed in tests/machines/<topology machine>/machine.json are the worker's answers
    for their boards today (python -m tests.topology.make_machines rewrites them)."""
    from .topology.make_machines import MACHINES

    for name, (board_name, *_rest) in MACHINES.items():
        with open(os.path.join(ROOT, "tests", "machines", name, "machine.json"), encoding="utf-8") as fh:
            committed = json.load(fh)["nvml"]["data"]
        assert committed == nvml[board_name], name


# -- NCCL's transport, from its own rules -----------------------------------------------------------------

@pytest.mark.parametrize("version,vendor,model,gpus,level", [
    ("2.7.8", "GenuineIntel", 79, 8, "PXB"),    # Broadwell: PXB
    ("2.7.8", "GenuineIntel", 85, 8, "PHB"),    # Skylake and later: PHB
    ("2.8.4", "CentaurHauls", 0, 8, "PXB"),     # Zhaoxin from 2.8.4
    ("2.10.3", "GenuineIntel", 143, 8, "PXB"),  # every Intel from 2.9.6
    ("2.18.3", "AuthenticAMD", 1, 8, "SYS"),    # AMD: P2P everywhere before 2.23
    ("2.23.4", "AuthenticAMD", 1, 8, "PXB"),    # 2.23: PXB by default...
    ("2.23.4", "AuthenticAMD", 1, 2, "SYS"),    # ... but two GPUs on AMD keep SYS
    ("2.28.9", "GenuineIntel", 143, 2, "PXB"),
])
def test_p2p_level_by_release_and_cpu(version, vendor, model, gpus, level):
    row, _ = nccl.rules_for(version)
    family = 6 if vendor == "GenuineIntel" else 25
    assert nccl.default_level(row, "x86_64", vendor, family, model, gpus)[0] == level


def test_p2p_level_variables_and_transport_choice():
    row, note = nccl.rules_for("2.21.5")
    assert row["nccl_min"] == "2.12.7" and not note
    assert nccl.user_level(row, {"NCCL_P2P_DISABLE": "1"})[0] == "LOC"
    assert nccl.user_level(row, {"NCCL_P2P_DISABLE": "0", "NCCL_P2P_LEVEL": "NVL"})[0] == "NVL"
    assert nccl.user_level(row, {"NCCL_P2P_LEVEL": "3"})[0] == "PHB"  # the old numbering
    assert nccl.user_level(row, {"NCCL_P2P_LEVEL": "NODE"})[0] is None  # not an NCCL level: ignored
    assert nccl.choose(row, "NVL", "LOC", "OK", "OK", {}).transport == "SHM"
    assert nccl.choose(row, "NVL", "PXB", "NS", "NS", {}).transport == "abort"
    assert nccl.choose(row, "NVL", "PXB", "NS", "NS", {"NCCL_IGNORE_DISABLED_P2P": "1"}).transport == "SHM"
    assert nccl.choose(row, "PHB", "PXB", "OK", "OK", {"NCCL_SHM_DISABLE": "1"}).transport == "NET"
    assert nccl.choose(row, "SYS", "PXB", "OK", "OK", {}, nvb=True).transport == "P2P/NVLink"
    old, _ = nccl.rules_for("2.10.3")  # no NVML check before 2.12.7: falls back, does not abort
    assert nccl.choose(old, "NVL", "SYS", "NS", "NS", {}).transport == "SHM"
    assert nccl.rules_for("2.4.8")[0] is None
    assert "not known" in nccl.rules_for(None)[1]


def test_nccl_release_comes_from_the_framework_wheel_then_the_loader(nvml):
    b = board("dgx-h100")
    doc = boards.snapshot(b, nvml["dgx-h100"], files={"/etc/nccl.conf": "NCCL_P2P_LEVEL=SYS\n"})
    info = replay(doc).facts.value("topology.nccl")
    assert info["version"] is None and info["variables"]["NCCL_P2P_LEVEL"] == {"value": "SYS",
                                                                               "from": "/etc/nccl.conf"}
    facts = diagnose(SnapshotHost(load_snapshot(os.path.join(ROOT, "tests", "live", "h100-ubuntu2404-container",
                                                             "snapshot.json.gz")), "live")).facts
    from envdoctor.probes.topology import nccl_release

    assert nccl_release([f for f in facts if f.key.startswith("framework.")], facts) == (
        "2.28.9", "the nvidia-nccl-cu13 wheel torch uses")


# -- each check: fires, and stays quiet -------------------------------------------------------------------

def _set_p2p(data: Dict[str, Any], pair: str, status: int) -> Dict[str, Any]:
    data = copy.deepcopy(data)
    data[pair]["value"]["p2p"]["read"] = {"value": status}
    data[pair]["value"]["p2p"]["write"] = {"value": status}
    return data


def test_nccl_abort_on_nvlink_pair_without_p2p(nvml):
    bad = _set_p2p(nvml["dgx-h100"], "pair.0.1", 5)  # NVML: P2P not supported between two NVLinked GPUs
    rep = replay(boards.snapshot(board("dgx-h100"), bad))
    assert codes(rep)["topology.nccl_abort"] == "error"
    f = next(f for f in rep.findings if f.code == "topology.nccl_abort")
    assert "0-1" in f.title and "NVLink" in f.title
    # NCCL_IGNORE_DISABLED_P2P=1: no abort, the pair goes through host memory
    quiet = replay(boards.snapshot(board("dgx-h100"), bad, environ={"NCCL_IGNORE_DISABLED_P2P": "1"}))
    assert "topology.nccl_abort" not in codes(quiet)
    assert "topology.nccl_abort" not in codes(report_of(nvml, "dgx-h100"))


def test_nccl_variables_forcing_a_slow_transport(nvml):
    rep = report_of(nvml, "dgx-h100", environ={"NCCL_P2P_DISABLE": "1"})
    f = next(f for f in rep.findings if f.code == "topology.nccl_slow_transport")
    assert f.severity == "warning" and "NCCL_P2P_DISABLE=1 (environment)" in f.title
    assert "SHM instead of P2P/NVLink" in f.title and "unset NCCL_P2P_DISABLE" in f.fix.commands
    conf = report_of(nvml, "pcie-switch-k80", files={"/etc/nccl.conf": "NCCL_SHM_DISABLE=1\n"})
    f = next(f for f in conf.findings if f.code == "topology.nccl_slow_transport")
    assert "/etc/nccl.conf" in f.title and "NET instead of SHM" in f.title
    # ~/.nccl.conf as a snapshot records it (the home directory written "~"); the environment wins over it
    home = report_of(nvml, "dgx-h100", environ={"HOME": "~"}, files={"~/.nccl.conf": "NCCL_P2P_DISABLE=1\n"})
    assert home.facts.value("topology.nccl")["variables"]["NCCL_P2P_DISABLE"]["from"] == "~/.nccl.conf"
    assert "topology.nccl_slow_transport" in codes(home)
    env_wins = report_of(nvml, "dgx-h100", environ={"HOME": "~", "NCCL_P2P_DISABLE": "0"},
                         files={"~/.nccl.conf": "NCCL_P2P_DISABLE=1\n"})
    assert "topology.nccl_slow_transport" not in codes(env_wins)
    # a variable that changes nothing slower stays quiet; an unknown level is a note
    assert "topology.nccl_slow_transport" not in codes(report_of(nvml, "dgx-h100",
                                                                 environ={"NCCL_P2P_LEVEL": "SYS"}))
    note = report_of(nvml, "dgx-h100", environ={"NCCL_P2P_LEVEL": "NODE"})
    assert codes(note) == {"topology.nccl_level_ignored": "info"}


def test_acs_redirect_on_a_p2p_path(nvml):
    b = board("pcie-switch-k80")
    # the board switches' downstream ports above GPUs 0 and 1 with Request and Completion Redirect on
    b["acs"] = {b["gpus"][0]["path"][-1]: "0x001d", b["gpus"][1]["path"][-1]: "0x001d"}
    rep = replay(boards.snapshot(b, nvml["pcie-switch-k80"], root=True))
    f = next(f for f in rep.findings if f.code == "topology.acs_redirect")
    assert f.severity == "warning" and "0-1" in f.title and any("ECAP_ACS+0x6.w=0000" in c for c in f.fix.commands)
    assert rep.facts.value("topology.acs_redirect") is True
    # as root with ACS clear: no; without root: unknown, never "fine", and no finding
    clear = replay(boards.snapshot(board("pcie-switch-k80"), nvml["pcie-switch-k80"], root=True))
    assert clear.facts.value("topology.acs_redirect") is False and "topology.acs_redirect" not in codes(clear)
    unread = replay(boards.snapshot(b, nvml["pcie-switch-k80"], root=False))
    assert unread.facts.get("topology.acs_redirect").status == "unknown"
    assert "root" in unread.facts.get("topology.acs_redirect").reason
    assert "topology.acs_redirect" not in codes(unread)


def test_acs_redirect_on_root_ports_where_nccl_uses_p2p_across_the_root_complex(nvml):
    # two L4s on root ports of two host bridges of an AMD EPYC (SYS): NCCL's P2P level is SYS on AMD x86 with
    # at most two GPUs (ncclTopoCheckP2p, NCCL 2.23.4 and later), so the root ports are on their P2P path
    b = board("two-l4-sys")
    ports = [g["path"][-1] for g in b["gpus"]]
    b["acs"] = {bdf: "0x001d" for bdf in ports}  # Request and Completion Redirect on both root ports
    rep = replay(boards.snapshot(b, nvml["two-l4-sys"], root=True))
    assert [p["nccl"] for p in rep.facts.items("topology.pairs")] == ["P2P/PCIe"]
    f = next(f for f in rep.findings if f.code == "topology.acs_redirect")
    assert f.severity == "warning" and "ACS" in f.title and all(bdf in f.title for bdf in ports)
    assert "ncclTopoCheckP2p" in f.detail and "nvidia/nccl" in f.detail.lower()
    assert ["sudo setpci -s %s ECAP_ACS+0x6.w=0000" % bdf for bdf in ports] == f.fix.commands[:2]
    # (a) ACS redirect off on the root ports (Source Validation alone): read, and quiet
    clear = replay(boards.snapshot(board("two-l4-sys"), nvml["two-l4-sys"], root=True))
    assert clear.facts.value("topology.acs_redirect") is False
    assert [e["bdf"] for e in clear.facts.items("topology.acs")] == ports
    assert "topology.acs_redirect" not in codes(clear)
    # (b) the same board on an Intel Xeon: NCCL's level is PXB there, the pair goes by SHM through the CPU,
    # and the root ports' ACS is on no P2P path: not read, no finding
    intel = board("two-l4-sys")
    intel["acs"] = dict(b["acs"])
    intel["cpu"] = {"vendor": "GenuineIntel", "family": 6, "model": 106, "threads": 64, "sockets": 2,
                    "model_name": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"}
    shm = replay(boards.snapshot(intel, nvml["two-l4-sys"], root=True))
    assert [p["nccl"] for p in shm.facts.items("topology.pairs")] == ["SHM"]
    assert shm.facts.value("topology.acs_redirect") is False and shm.facts.items("topology.acs") == []
    assert "topology.acs_redirect" not in codes(shm)
    # NCCL_P2P_LEVEL=SYS on that Intel machine puts the root complex back on the P2P path
    forced = replay(boards.snapshot(intel, nvml["two-l4-sys"], root=True, environ={"NCCL_P2P_LEVEL": "SYS"}))
    assert "topology.acs_redirect" in codes(forced)


CORPUS_ACS = "b4-2x-rtx5880ada-amd-root-ports-acs-redirect-nccl-allreduce-deadlock"


def test_acs_redirect_on_the_amd_root_ports_of_the_corpus_machine():
    """NVIDIA/nccl#2079's machine (tests/corpus, its topology restated in tests/topology/corpus/): two GPUs on
    root ports of two AMD host bridges (NODE), ACS redirect on the root ports; and the same machine with ACS
    redirect cleared there (Source Validation left on), as the reporter's setpci fix leaves it."""
    from .topology import make_corpus

    path = os.path.join(ROOT, "tests", "corpus", CORPUS_ACS, "snapshot.json")
    rep = diagnose(SnapshotHost(load_snapshot(path), "corpus"), layers=["topology"])
    f = next(f for f in rep.findings if f.code == "topology.acs_redirect")
    assert "0000:40:01.1" in f.title and "0000:60:01.1" in f.title and "root complex" in f.detail
    doc = load_snapshot(path)
    spec = make_corpus.load(CORPUS_ACS)
    for bdf, bridge in spec["bridges"].items():
        cleared = make_corpus.acs_config(bridge["id"], 0x0001)
        for name in [k for k in doc["files"] if k.endswith("/%s/config" % bdf)]:
            doc["files"][name] = {"base64": base64.b64encode(cleared).decode("ascii")}
    fixed = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
    assert fixed.facts.value("topology.acs_redirect") is False
    assert "topology.acs_redirect" not in codes(fixed)


def test_iommu_translating_p2p(nvml):
    b = board("pcie-switch-k80")
    b["iommu"], b["cmdline"] = "DMA-FQ", "BOOT_IMAGE=/vmlinuz ro intel_iommu=on"
    rep = replay(boards.snapshot(b, nvml["pcie-switch-k80"]))
    f = next(f for f in rep.findings if f.code == "topology.iommu_translates_p2p")
    assert "DMA-FQ" in f.title and "intel_iommu=on" in f.detail and rep.facts.value("topology.iommu_mode") == "DMA-FQ"
    b["iommu"] = "identity"  # iommu=pt: quiet
    assert "topology.iommu_translates_p2p" not in codes(replay(boards.snapshot(b, nvml["pcie-switch-k80"])))
    d = board("dgx-h100")
    d["iommu"] = "DMA"  # NVLink only: the IOMMU does not see P2P traffic
    assert "topology.iommu_translates_p2p" not in codes(replay(boards.snapshot(d, nvml["dgx-h100"])))


CORPUS_IOMMU = "b4-4x-gtx1080ti-intel-iommu-on-nccl-allreduce-hang-p2p"


def test_iommu_mode_of_a_kernel_without_group_types_from_its_command_line():
    # NVIDIA/nccl#257's machine (kernel 4.15: groups, no type file; intel_iommu=on): CUDA peer access is on between
    # GPUs 0-1 and 2-3 (NVML's P2P status OK; the thread's p2pBandwidthLatencyTest) though NCCL's newest rules pick
    # SHM for those PHB pairs: the IOMMU translating is named, from the kernel command line
    path = os.path.join(ROOT, "tests", "corpus", CORPUS_IOMMU, "snapshot.json")
    doc = load_snapshot(path)
    rep = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
    f = next(f for f in rep.findings if f.code == "topology.iommu_translates_p2p")
    assert f.severity == "warning" and "DMA mode" in f.title and "CUDA peer access" in f.title
    assert "0-1, 2-3" in f.title and "kernel command line" in f.detail and "intel_iommu=on" in f.detail
    assert rep.facts.get("topology.iommu_mode").source == "file:/proc/cmdline"
    cmdline = doc["files"]["/proc/cmdline"]["text"]
    for words, mode in (("intel_iommu=on iommu=pt", "identity"), ("intel_iommu=on iommu.passthrough=1", "identity")):
        doc["files"]["/proc/cmdline"]["text"] = cmdline.replace("intel_iommu=on", words)
        quiet = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
        assert quiet.facts.value("topology.iommu_mode") == mode
        assert "topology.iommu_translates_p2p" not in codes(quiet)
    # no parameter, the GPUs still in IOMMU groups (an IOMMU on by the kernel's build): the kernel's default domain,
    # named as unverified, never "fine"
    doc["files"]["/proc/cmdline"]["text"] = cmdline.replace("intel_iommu=on", "")
    rep = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
    assert rep.facts.value("topology.iommu_mode") == "kernel default"
    assert "unverified" in next(f for f in rep.findings if f.code == "topology.iommu_translates_p2p").title


CORPUS_AMD_IOMMU = "b46-ubuntu2004-threadripper-x399-3x-gtx1080ti-driver45523-amd-iommu-translating-simplep2p-hangs"


def _no_group_types(doc: Dict[str, Any]) -> Dict[str, Any]:
    """A board's snapshot as a kernel before 5.11 shows it: IOMMU groups without a ``type`` file."""
    for name in [k for k in doc["files"] if k.startswith("/sys/kernel/iommu_groups/") and k.endswith("/type")]:
        del doc["files"][name]
    return doc


def test_iommu_on_by_default_on_a_kernel_that_does_not_say_its_mode():
    # an AMD host (AMD-Vi on wherever the firmware has it), Linux 5.4: the GPUs are in IOMMU groups with no type
    # file, the command line sets no mode and /boot/config is not there: the default domain (translated unless
    # built with CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y) is named, as unverified, with how to check it
    path = os.path.join(ROOT, "tests", "corpus", CORPUS_AMD_IOMMU, "snapshot.json")
    doc = load_snapshot(path)
    rep = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
    assert rep.facts.value("topology.iommu_mode") == "kernel default"
    f = next(f for f in rep.findings if f.code == "topology.iommu_translates_p2p")
    assert f.severity == "warning" and "IOMMU" in f.title and "unverified" in f.title and "CUDA peer access" in f.title
    assert "CONFIG_IOMMU_DEFAULT_PASSTHROUGH" in f.detail and "default domain type" in f.detail
    assert any("default domain type" in c for c in f.fix.commands) and any("iommu=pt" in c for c in f.fix.commands)
    cmdline = doc["files"]["/proc/cmdline"]["text"]
    release = doc["uname"]["release"]
    # the kernel's configuration readable: it decides, and the finding no longer says unverified
    unset = copy.deepcopy(doc)
    unset["files"]["/boot/config-%s" % release] = {"text": "# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\n"}
    unset["dirs"].setdefault("/boot", {"entries": []})["entries"].append("config-%s" % release)
    rep = diagnose(SnapshotHost(unset, "corpus"), layers=["topology"])
    assert rep.facts.value("topology.iommu_mode") == "DMA"
    f = next(f for f in rep.findings if f.code == "topology.iommu_translates_p2p")
    assert "DMA mode" in f.title and "unverified" not in f.title and "CONFIG_IOMMU_DEFAULT_PASSTHROUGH" in f.detail
    built_pt = copy.deepcopy(unset)
    built_pt["files"]["/boot/config-%s" % release] = {"text": "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y\n"}
    quiet = diagnose(SnapshotHost(built_pt, "corpus"), layers=["topology"])
    assert quiet.facts.value("topology.iommu_mode") == "identity"
    assert "topology.iommu_translates_p2p" not in codes(quiet)
    # passthrough on the command line: quiet
    doc["files"]["/proc/cmdline"]["text"] = cmdline.rstrip() + " iommu=pt\n"
    quiet = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
    assert quiet.facts.value("topology.iommu_mode") == "identity"
    assert "topology.iommu_translates_p2p" not in codes(quiet)
    # amd_iommu=off: the kernel makes no IOMMU groups: off, quiet
    doc["files"]["/proc/cmdline"]["text"] = cmdline.rstrip() + " amd_iommu=off\n"
    for name in [k for k in doc["links"] if k.endswith("/iommu_group")]:
        del doc["links"][name]
    quiet = diagnose(SnapshotHost(doc, "corpus"), layers=["topology"])
    assert quiet.facts.value("topology.iommu_mode") == "off"
    assert "topology.iommu_translates_p2p" not in codes(quiet)


def test_iommu_kernel_default_stays_quiet_without_pcie_peers(nvml):
    # an Intel host, groups without type files, no parameter: warned where its GPUs do PCIe P2P...
    b = board("pcie-switch-k80")
    b["iommu"] = "DMA"
    rep = replay(_no_group_types(boards.snapshot(b, nvml["pcie-switch-k80"])))
    assert rep.facts.value("topology.iommu_mode") == "kernel default"
    assert codes(rep).get("topology.iommu_translates_p2p") == "warning"
    # ...not with iommu=pt on its command line
    b["cmdline"] = "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt"
    quiet = replay(_no_group_types(boards.snapshot(b, nvml["pcie-switch-k80"])))
    assert quiet.facts.value("topology.iommu_mode") == "identity"
    assert "topology.iommu_translates_p2p" not in codes(quiet)
    # ...nor where the job has one GPU
    del b["cmdline"]
    one = replay(_no_group_types(boards.snapshot(b, nvml["pcie-switch-k80"], environ={"CUDA_VISIBLE_DEVICES": "0"})))
    assert one.facts.value("topology.iommu_mode") == "kernel default"
    assert "topology.iommu_translates_p2p" not in codes(one)
    # ...nor between GPUs joined by NVLink only (the IOMMU does not see that traffic)
    d = board("dgx-h100")
    d["iommu"] = "DMA"
    nv = replay(_no_group_types(boards.snapshot(d, nvml["dgx-h100"])))
    assert nv.facts.value("topology.iommu_mode") == "kernel default"
    assert "topology.iommu_translates_p2p" not in codes(nv)


def test_mode_from_cmdline_follows_the_kernel_parameters():
    from envdoctor.probes.topology import mode_from_cmdline
    assert mode_from_cmdline(["intel_iommu=on"]) == "DMA"
    assert mode_from_cmdline(["amd_iommu=on"]) == "DMA"
    assert mode_from_cmdline(["iommu=force"]) == "DMA"
    assert mode_from_cmdline(["intel_iommu=on,sm_on"]) == "DMA"
    assert mode_from_cmdline(["intel_iommu=on", "iommu=pt"]) == "identity"
    assert mode_from_cmdline(["iommu.passthrough=0"]) == "DMA"
    assert mode_from_cmdline(["iommu.passthrough=1", "iommu.passthrough=0"]) == "DMA"  # the last one wins
    assert mode_from_cmdline(["intel_iommu=on"], "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y\n") == "identity"
    assert mode_from_cmdline(["intel_iommu=on"], "# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\n") == "DMA"
    assert mode_from_cmdline([]) is None and mode_from_cmdline(["intel_iommu=off"]) is None
    # the GPUs in IOMMU groups though the command line does not switch it on: the kernel's default domain
    assert mode_from_cmdline([], active=True) == "kernel default"
    assert mode_from_cmdline([], "# CONFIG_IOMMU_DEFAULT_PASSTHROUGH is not set\n", active=True) == "DMA"
    assert mode_from_cmdline([], "CONFIG_IOMMU_DEFAULT_PASSTHROUGH=y\n", active=True) == "identity"
    assert mode_from_cmdline([], "CONFIG_IOMMU_SUPPORT=y\n", active=True) == "kernel default"
    assert mode_from_cmdline(["iommu=pt"], active=True) == "identity"


def test_small_bar1_on_a_gpu_doing_pcie_p2p(nvml):
    data = copy.deepcopy(nvml["pcie-switch-k80"])
    data["device.0.bar1"]["value"]["bar1Total"] = 256 << 20
    rep = replay(boards.snapshot(board("pcie-switch-k80"), data))
    f = next(f for f in rep.findings if f.code == "topology.small_bar1")
    assert "256 MiB BAR1" in f.title and "GPU 0" in f.title
    assert "topology.small_bar1" not in codes(report_of(nvml, "pcie-switch-k80"))
    # the RTX 4090s of the dual-socket board have a 256 MiB BAR1 but no P2P: quiet
    assert "topology.small_bar1" not in codes(report_of(nvml, "dual-socket-4090"))


def test_nvlink_inactive_and_trained_down(nvml):
    rep = report_of(nvml, "dgx-h100+links")
    found = {f.code: f for f in rep.findings}
    assert "2 of 18 NVLinks are down" in found["topology.nvlink_inactive"].title
    assert "GPU 3" in found["topology.nvlink_inactive"].title
    assert "GPU 2" in found["topology.nvlink_trained_down"].title and "version 3" in found[
        "topology.nvlink_trained_down"].title
    assert rep.facts.value("gpu.3.nvlink_active") == 16
    assert not {"topology.nvlink_inactive", "topology.nvlink_trained_down"} & set(codes(report_of(nvml, "dgx-h100")))
    # boards without NVLink never hear about it
    for name in ("dual-socket-4090", "two-l4-sys", "pcie-switch-k80"):
        assert not {"topology.nvlink_inactive", "topology.nvlink_trained_down"} & set(codes(report_of(nvml, name)))


def test_nvlink_all_down_without_switch_or_peers_is_a_board_without_bridges(nvml):
    data = copy.deepcopy(nvml["dgx-h100"])
    for i in range(8):
        for link in data["device.%d.nvlink" % i]["value"]["links"]:
            link["state"] = {"value": 0}
            link.pop("remote_bus_id", None)
    b = board("dgx-h100")
    b["nvswitch"] = False
    quiet = replay(boards.snapshot(b, data))
    assert "topology.nvlink_inactive" not in codes(quiet)
    loud = replay(boards.snapshot(board("dgx-h100"), data))  # the same on an NVSwitch system: every GPU
    assert len([f for f in loud.findings if f.code == "topology.nvlink_inactive"]) == 8


def _links_up(data, up_per_gpu):
    """Mark the first N links of each GPU active and the rest inactive (unwired links read as inactive)."""
    for i, n in up_per_gpu.items():
        for k, link in enumerate(data["device.%d.nvlink" % i]["value"]["links"]):
            if k >= n:
                link["state"] = {"value": 0}
                link.pop("remote_bus_id", None)


def test_nvlink_partly_wired_alike_on_every_gpu_without_switches_is_quiet(nvml):
    # the dgx-h100 board's answers with the NVSwitches taken away and 2 links up per GPU: a board that wires 2 of
    # each GPU's links (two V100-SXM2 joined by NV2 read the same way: 2 active, 4 inactive per GPU)
    data = copy.deepcopy(nvml["dgx-h100"])
    _links_up(data, {i: 2 for i in range(8)})
    b = board("dgx-h100")
    b["nvswitch"] = False
    assert "topology.nvlink_inactive" not in codes(replay(boards.snapshot(b, data)))
    # one GPU with a link fewer than its siblings of the same model: that GPU, and only it, is named
    data = copy.deepcopy(nvml["dgx-h100"])
    _links_up(data, {i: (1 if i == 5 else 2) for i in range(8)})
    found = [f for f in replay(boards.snapshot(b, data)).findings if f.code == "topology.nvlink_inactive"]
    assert len(found) == 1 and "GPU 5" in found[0].title
    assert "1 NVLinks up where another GPU of this model has 2" in found[0].title
    # on the NVSwitch baseboard the same partial wiring is a fault on every GPU
    data = copy.deepcopy(nvml["dgx-h100"])
    _links_up(data, {i: 2 for i in range(8)})
    loud = replay(boards.snapshot(board("dgx-h100"), data))
    assert len([f for f in loud.findings if f.code == "topology.nvlink_inactive"]) == 8


def test_fabric_not_ready_while_the_fabric_manager_runs(nvml):
    rep = report_of(nvml, "dgx-h100+fabric")
    f = next(f for f in rep.findings if f.code == "topology.fabric_not_ready")
    assert f.severity == "error" and "in progress" in f.title
    b = board("dgx-h100+fabric")
    b["fabric_manager"] = "inactive"  # not running: the driver layer's fabric_manager_not_running says so
    full = replay(boards.snapshot(b, nvml["dgx-h100+fabric"]), layers=None)
    assert "topology.fabric_not_ready" not in codes(full)
    assert "topology.fabric_not_ready" not in codes(report_of(nvml, "dgx-h100"))


def test_consumer_boards_without_p2p_are_a_note(nvml):
    rep = report_of(nvml, "two-5090-phb")
    assert codes(rep) == {"topology.p2p_unsupported_consumer": "info"}
    f = rep.findings[0]
    assert "GNS/GNS" in f.title and "SHM" in f.title
    assert "topology.p2p_unsupported_consumer" not in codes(report_of(nvml, "dgx-h100"))


def test_p2p_patched_driver(nvml):
    rep = report_of(nvml, "five-5060ti-p2p-patched")
    f = next(f for f in rep.findings if f.code == "topology.p2p_patched_driver")
    assert f.severity == "info" and "Blackwell GeForce" in f.title
    # the same with the IOMMU translating and a small BAR1: what the patch needs is missing
    b = board("five-5060ti-p2p-patched")
    b["iommu"] = "DMA"
    data = copy.deepcopy(nvml["five-5060ti-p2p-patched"])
    data["device.2.bar1"]["value"]["bar1Total"] = 256 << 20
    warn = replay(boards.snapshot(b, data))
    f = next(f for f in warn.findings if f.code == "topology.p2p_patched_driver")
    assert f.severity == "warning" and "DMA" in f.title and "GPU 2" in f.title
    assert "topology.p2p_patched_driver" not in codes(report_of(nvml, "two-5090-phb"))


def test_job_split_across_numa_nodes(nvml):
    split = report_of(nvml, "dgx-h100", environ={"CUDA_VISIBLE_DEVICES": "0,4"})
    f = next(f for f in split.findings if f.code == "topology.numa_split")
    assert "CUDA_VISIBLE_DEVICES=0,4" in f.title and "GPUs 0,1 share node 0" in f.title
    assert "topology.numa_split" not in codes(report_of(nvml, "dgx-h100", environ={"CUDA_VISIBLE_DEVICES": "0,1"}))
    assert "topology.numa_split" not in codes(report_of(nvml, "dgx-h100"))
    # two GPUs on two nodes, and no node holds two: nothing better to suggest
    assert "topology.numa_split" not in codes(report_of(nvml, "two-l4-sys", environ={"CUDA_VISIBLE_DEVICES": "0,1"}))


def test_pcie_bridge_trained_below_both_ends(nvml):
    b = board("pcie-switch-k80")
    root_port, switch_up = b["gpus"][0]["path"][1], b["gpus"][0]["path"][2]
    b["bridges"] = {root_port: [3, 3, 8, 16], switch_up: [3, 3, 8, 16]}  # the socket's link to the switch at x8
    rep = replay(boards.snapshot(b, nvml["pcie-switch-k80"]))
    found = [f for f in rep.findings if f.code == "gpu.pcie_bridge_degraded"]
    assert len(found) == 1 and "x8" in found[0].title and "Gen3 x16" in found[0].title
    # a link slower but not narrower while the GPUs idle: power saving, quiet
    b["bridges"] = {root_port: [1, 3, 16, 16], switch_up: [1, 3, 16, 16]}
    assert "gpu.pcie_bridge_degraded" not in codes(replay(boards.snapshot(b, nvml["pcie-switch-k80"])))
    # ... and the same under load is reported
    b["gpus"][0]["util"] = 95
    data = copy.deepcopy(nvml["pcie-switch-k80"])
    data["device.0.utilization"]["value"]["gpu"] = 95
    data["device.0.clock_event_reasons"]["value"] = 0
    assert "gpu.pcie_bridge_degraded" in codes(replay(boards.snapshot(b, data)))


# -- hostile and old answers ------------------------------------------------------------------------------

def test_garbled_and_missing_topology_answers_are_unknown_not_a_crash(nvml):
    data = copy.deepcopy(nvml["dgx-h100"])
    data["pair.0.1"] = {"value": "garbage"}
    data["device.2.nvlink"] = {"value": {"links": "nope"}}
    data["device.3.fabric"] = {"error": "NVML_ERROR_FUNCTION_NOT_FOUND", "code": 13}
    del data["pair.5.6"]
    rep = replay(boards.snapshot(board("dgx-h100"), data))
    assert not [f for f in rep.findings if f.code == "envdoctor.check_crashed"]
    pairs = {(p["a"], p["b"]): p for p in rep.facts.value("topology.pairs")}
    assert pairs[(5, 6)]["nccl"] is None and "not asked" in pairs[(5, 6)]["unknown"]
    assert rep.facts.get("gpu.2.nvlink_active").status == "unknown"
    assert rep.facts.get("topology.min_nccl_transport").status == "unknown"


def test_worker_on_a_driver_without_the_newer_calls(tmp_path):
    """A driver before the NVLink field values, the fabric and C2C calls (the stand-in built as an old driver):
    NVLinks are asked link by link, the rest is unknown."""
    from .fakenvml.build import build, fake_env, write_answers

    try:
        lib = build(str(tmp_path / "old"), old=True)
    except RuntimeError as exc:
        pytest.skip(str(exc))
    answers = boards.fake_answers(boards.load("dgx-h100"))
    path = write_answers(answers, str(tmp_path / "a.txt"))
    code = "import json; from envdoctor.host import nvml_worker as w; print(json.dumps(w.collect()))"
    r = subprocess.run([sys.executable, "-c", code], env=fake_env(lib, path), capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    data = json.loads(r.stdout)
    nv = data["device.0.nvlink"]["value"]
    assert nv["via"] == "calls" and len(nv["links"]) == 18 and nv["links"][0]["remote_bus_id"]["value"]
    assert data["device.0.fabric"]["error"] in ("NVML_ERROR_FUNCTION_NOT_FOUND", "EXCEPTION")
    facts = replay(boards.snapshot(boards.load("dgx-h100"), data)).facts
    assert {p["path"] for p in facts.value("topology.pairs")} == {"NV18"}
    assert facts.get("topology.fabric.state").status == "unknown"


def _worker_calls(lib: str, answers: Dict[str, Any], tmp_path: Any, name: str, walk_from: int = 0):
    """The worker's answers for ``answers`` and the pair and topology calls it made of the stand-in NVML
    (``walk_from``: the fewest GPUs for which it walks the nearest-GPU sets; 0: its own)."""
    from .fakenvml.build import fake_env, write_answers

    path = write_answers(answers, str(tmp_path / (name + ".txt")))
    counts = tmp_path / (name + ".calls")
    env = dict(fake_env(lib, path), FAKE_NVML_CALLS=str(counts))
    code = "import json; from envdoctor.host import nvml_worker as w; %sprint(json.dumps(w.collect()))" % (
        "w.WALK_FROM_GPUS = %d; " % walk_from if walk_from else "")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    calls = dict(line.split("=") for line in counts.read_text().split())
    return json.loads(r.stdout), {k: int(v) for k, v in calls.items()}


@pytest.mark.parametrize("name", NAMES)
def test_common_ancestors_from_the_nearest_gpu_sets_are_those_of_the_pair_calls(fake_lib, tmp_path, name):
    """The common ancestor of every pair settled by nvmlDeviceGetTopologyNearestGpus (one walk up the levels per
    GPU, here on every published board however few its GPUs) is the one nvmlDeviceGetTopologyCommonAncestor
    gives for the pair (the driver answering NearestGpus NOT_SUPPORTED): the worker's answers are the same."""
    answers = boards.fake_answers(boards.load(name))
    n = answers["device_count"]
    walked, calls = _worker_calls(fake_lib, answers, tmp_path, "walk", walk_from=2)
    without = dict(answers, **{"device.%d.nearest.error" % i: 3 for i in range(n)})
    asked, calls_before = _worker_calls(fake_lib, without, tmp_path, "per-pair", walk_from=2)
    assert walked == asked
    assert calls["nvmlDeviceGetTopologyCommonAncestor"] == 0
    assert calls_before["nvmlDeviceGetTopologyCommonAncestor"] == n * (n - 1) // 2


def _switched_board(n: int) -> Dict[str, Any]:
    """A stand-in board of ``n`` H100s (tests/fakenvml's) whose pairs' common ancestors follow dgx-h100's layout
    repeated: two GPUs per PCIe switch (SINGLE), four per host bridge (HOSTBRIDGE), eight per NUMA node (NODE),
    the rest across the system (SYSTEM); P2P statuses as NVML's for GPUs on one switch (OK) or not (not
    supported by the chipset). No machine has this many GPUs in one system (the driver drives at most 32):
    it counts calls."""
    from .fakenvml.build import h100_board

    doc = h100_board(n)
    for a in range(n):
        for b in range(a + 1, n):
            level = 10 if a // 2 == b // 2 else 30 if a // 4 == b // 4 else 40 if a // 8 == b // 8 else 50
            doc["pair.%d.%d.ancestor" % (a, b)] = level
            for cap in ("read", "write", "nvlink", "atomics"):
                doc["pair.%d.%d.p2p.%s" % (a, b, cap)] = 0 if level == 10 and cap != "nvlink" else 1
    return doc


@pytest.mark.parametrize("n", [8, 32, 64])
def test_common_ancestors_cost_fewer_calls_per_pair_on_a_large_board(fake_lib, tmp_path, n):
    """From 25 GPUs on, the walk asks fewer NVML calls per pair than one common-ancestor call per pair (and the
    answers are the same); below, every pair is asked as before. P2P statuses are asked for every pair: NVML
    documents nothing that implies one from another, nor that a pair's two orders agree (each pair is asked
    once, lower index first, as before)."""
    answers = _switched_board(n)
    pairs = n * (n - 1) // 2
    walked, calls = _worker_calls(fake_lib, answers, tmp_path, "walk")
    without = dict(answers, **{"device.%d.nearest.error" % i: 3 for i in range(n)})
    asked, calls_before = _worker_calls(fake_lib, without, tmp_path, "per-pair")
    assert walked == asked
    assert calls["nvmlDeviceGetP2PStatus"] == calls_before["nvmlDeviceGetP2PStatus"] == 4 * pairs
    assert calls_before["nvmlDeviceGetTopologyCommonAncestor"] == pairs
    if n < 25:
        assert calls == calls_before
        return
    assert calls["nvmlDeviceGetTopologyCommonAncestor"] == 0
    assert calls["nvmlDeviceGetTopologyNearestGpus"] <= 2 * 6 * (n - 1)
    assert sum(calls.values()) / pairs < sum(calls_before.values()) / pairs < 5.1


def test_a_pair_the_walk_does_not_settle_is_asked_by_itself(fake_lib, tmp_path):
    """A pair NearestGpus leaves out (its ancestor unknown to the stand-in's sets: asked per pair, an error
    kept as NVML gives it) and a GPU whose walk fails part-way: those pairs are asked one by one."""
    answers = boards.fake_answers(boards.load("dgx-h100"))
    answers["pair.2.5.ancestor.error"] = 999
    answers["device.6.nearest.error"] = 2  # INVALID_ARGUMENT from GPU 6's first level on
    data, calls = _worker_calls(fake_lib, answers, tmp_path, "partial", walk_from=2)
    assert data["pair.2.5"]["value"]["ancestor"] == {"error": "NVML_ERROR_UNKNOWN", "code": 999}
    assert data["pair.6.7"]["value"]["ancestor"] == {"value": answers["pair.6.7"]["ancestor"]}
    assert calls["nvmlDeviceGetTopologyCommonAncestor"] == 2  # pairs (2, 5) and (6, 7)


def _topology_facts_in_2s(fake_lib, answers, tmp_path):
    """The topology layer's facts of ``diagnose --timeout 2`` on the stand-in NVML answering ``answers``."""
    from .fakenvml.build import fake_env, write_answers

    path = write_answers(answers, str(tmp_path / "a.txt"))
    r = subprocess.run([sys.executable, "-m", "envdoctor", "diagnose", "--format", "json", "--timeout", "2",
                        "--only", "topology"], env=fake_env(fake_lib, path), capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    doc = json.loads(r.stdout)
    return {f["key"]: f for p in doc["probes"] for f in p["facts"]}


def test_a_nearest_gpu_walk_that_hangs_is_named(fake_lib, tmp_path):
    """NVML hanging in nvmlDeviceGetTopologyNearestGpus (a board large enough for the walk): the run ends at its
    time limit and the topology is timed out, naming the call and the GPU."""
    answers = _switched_board(32)
    answers["device.0.nearest.hang_seconds"] = 30
    facts = _topology_facts_in_2s(fake_lib, answers, tmp_path)
    assert facts["topology.status"]["status"] == "timed_out"
    assert "nvmlDeviceGetTopologyNearestGpus for GPU 0" in facts["topology.status"]["reason"]


def test_a_pair_call_that_hangs_keeps_the_answers_before_it(fake_lib, tmp_path):
    answers = boards.fake_answers(boards.load("two-l4-sys"))
    answers["pair.0.1.hang_seconds"] = 30
    facts = _topology_facts_in_2s(fake_lib, answers, tmp_path)
    assert facts["topology.status"]["status"] == "timed_out"
    assert "nvmlDeviceGetTopologyCommonAncestor/nvmlDeviceGetP2PStatus for GPUs 0 and 1" in facts[
        "topology.status"]["reason"]


@pytest.mark.parametrize("where", ["pair.2.5", "pair.6.7"])
def test_a_pair_call_that_hangs_midway_on_a_larger_board_keeps_every_pair_before_it(fake_lib, tmp_path, where):
    """The pairs answered before a hang in the middle (and at the end) of an 8-GPU board's pairs are kept and
    known, the pair that hung is named, the pairs after it are not known."""
    answers = _switched_board(8)
    answers[where + ".hang_seconds"] = 30
    facts = _topology_facts_in_2s(fake_lib, answers, tmp_path)
    a, b = (int(x) for x in where.split(".")[1:])
    assert facts["topology.status"]["status"] == "timed_out"
    assert ("nvmlDeviceGetTopologyCommonAncestor/nvmlDeviceGetP2PStatus for GPUs %d and %d" % (a, b)
            in facts["topology.status"]["reason"])
    pairs = {(p["a"], p["b"]): p for p in facts["topology.pairs"]["value"]}
    assert len(pairs) == 28
    for (i, j), p in pairs.items():
        if (i, j) < (a, b):
            assert "unknown" not in p and p["pcie"] == ("PIX" if i // 2 == j // 2 else "PHB" if i // 4 == j // 4
                                                         else "NODE"), p
        else:
            assert p["unknown"] == "not asked (NVML's query stopped earlier)", p


@pytest.mark.parametrize("how", ["segv", "exit"])
def test_a_pair_call_that_crashes_midway_keeps_every_pair_before_it_and_names_the_pair(fake_lib, tmp_path, how):
    answers = _switched_board(8)
    answers["pair.3.4.crash"] = how
    facts = _topology_facts_in_2s(fake_lib, answers, tmp_path)
    assert facts["topology.status"]["status"] == "timed_out"  # the query stopped part-way (topology._status)
    assert "nvmlDeviceGetTopologyCommonAncestor/nvmlDeviceGetP2PStatus for GPUs 3 and 4" in facts[
        "topology.status"]["reason"]
    assert "crashed" in facts["topology.status"]["reason"]
    pairs = {(p["a"], p["b"]): p for p in facts["topology.pairs"]["value"]}
    assert [k for k, p in pairs.items() if "unknown" not in p] == [k for k in sorted(pairs) if k < (3, 4)]


def test_topology_document_has_every_pair_and_gpu(nvml):
    doc = document(report_of(nvml, "five-5060ti-p2p-patched"))
    assert len(doc["topology"]["pairs"]) == 10 and len(doc["topology"]["gpus"]) == 5
    assert doc["topology"]["min_nccl_transport"] == "SHM"
    assert doc["findings"][0]["code"] == "topology.p2p_patched_driver"


def _keys(rows: List[Dict[str, Any]]) -> List[str]:
    return sorted({k for r in rows for k in r})


# -- policy keys and fleet -----------------------------------------------------------------------------

def _write(tmp_path, name: str, doc: Dict[str, Any]) -> str:
    path = tmp_path / (name + ".json")
    path.write_text(json.dumps(doc))
    return str(path)


POLICY = """schema_version = 1
[require]
"gpu.*.nvlink_active" = 18
"topology.fabric.state" = "completed"
"topology.iommu_mode" = "off"
"topology.min_nccl_transport" = "P2P/NVLink"
"topology.acs_redirect" = false
"""


def test_policy_topology_keys(nvml, tmp_path):
    from click.testing import CliRunner

    from envdoctor.cli import cli

    policy = tmp_path / "p.toml"
    policy.write_text(POLICY)
    dgx = _write(tmp_path, "dgx", boards.snapshot(board("dgx-h100"), nvml["dgx-h100"]))
    r = CliRunner().invoke(cli, ["check", "--policy", str(policy), "--snapshot", dgx, "--format", "json"])
    assert r.exit_code == 0, r.output
    down = _write(tmp_path, "down", boards.snapshot(board("dgx-h100+links"), nvml["dgx-h100+links"]))
    r = CliRunner().invoke(cli, ["check", "--policy", str(policy), "--snapshot", down])
    assert r.exit_code == 1 and "gpu.*.nvlink_active" in r.output and "3:16" in r.output
    k80 = _write(tmp_path, "k80", boards.snapshot(board("pcie-switch-k80"), nvml["pcie-switch-k80"]))
    r = CliRunner().invoke(cli, ["check", "--policy", str(policy), "--snapshot", k80, "--format", "json"])
    results = {x["name"]: x for x in json.loads(r.output)["policy"]["requirements"]}
    assert results["topology.min_nccl_transport"]["status"] == "fail"
    assert results["topology.acs_redirect"]["status"] == "unknown"  # not root: never "fine"
    assert results["gpu.*.nvlink_active"]["status"] == "fail"  # no NVLink: 0 active
    from envdoctor.policy import PolicyError, parse_policy

    loose = parse_policy('schema_version = 1\n[require]\n"topology.min_nccl_transport" = "SHM"\n')
    assert [x.status for x in loose.evaluate(diagnose(SnapshotHost(json.load(open(k80)), "k")).to_dict()).results] \
        == ["pass"]
    with pytest.raises(PolicyError, match="not an NCCL transport"):
        parse_policy('schema_version = 1\n[require]\n"topology.min_nccl_transport" = "NVLink"\n')
    keys = CliRunner().invoke(cli, ["policy", "keys"]).output
    for key in ("gpu.*.nvlink_active", "topology.fabric.state", "topology.acs_redirect", "topology.iommu_mode",
                "topology.min_nccl_transport"):
        assert key in keys


def test_fleet_shows_the_topology_facts(nvml, tmp_path):
    from click.testing import CliRunner

    from envdoctor.cli import cli

    folder = tmp_path / "nodes"
    folder.mkdir()
    for n, name in enumerate(("dgx-h100", "dgx-h100", "dgx-h100+links")):
        (folder / ("node%d.json" % n)).write_text(json.dumps(boards.snapshot(board(name), nvml[name])))
    r = CliRunner().invoke(cli, ["fleet", str(folder), "--format", "json"])
    doc = json.loads(r.output)
    facts = {f["label"]: f for f in doc["facts"]}
    nvl = facts["NVLinks active"]
    assert nvl["uniform"] is False and {"value": "0:18 1:18 2:18 3:16 4:18 5:18 6:18 7:18",
                                        "nodes": ["node2"]} in nvl["values"]
    assert facts["GPU fabric"]["uniform"] is True and facts["NCCL's slowest transport"]["uniform"] is True
    # an older report (no topology facts) is "absent", not a difference
    old = diagnose(SnapshotHost(load_snapshot(machine_path("centosstream9-8xh100")), "old")).to_dict()
    for p in old["probes"]:
        p["facts"] = [f for f in p["facts"] if not f["key"].startswith("topology.") and "nvlink" not in f["key"]]
    (folder / "node9.json").write_text(json.dumps(old))
    doc = json.loads(CliRunner().invoke(cli, ["fleet", str(folder), "--format", "json"]).output)
    fabric = {f["label"]: f for f in doc["facts"]}["GPU fabric"]
    assert fabric.get("absent") == ["node9"] or "node9" in json.dumps(fabric)


def test_bar1_from_sysfs_when_nvml_does_not_say(nvml):
    b = board("pcie-switch-k80")
    b["sysfs_bar1"] = True
    data = copy.deepcopy(nvml["pcie-switch-k80"])
    data["device.1.bar1"] = {"error": "NVML_ERROR_NOT_SUPPORTED", "code": 3}
    gpus = replay(boards.snapshot(b, data)).facts.value("topology.gpus")
    assert gpus[1]["bar1_bytes"] == b["gpu"]["bar1"]  # from the resource file's BAR1 line

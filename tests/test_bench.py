"""envdoctor bench: the arithmetic, the verdicts, the child's binding, hangs and crashes bounded by --timeout, a
machine with no driver.

No GPU runs here: the child process loads a stand-in ``libcuda.so.1`` (``tests/fakecuda``, compiled by the
suite) whose copy rates, errors, hangs, crashes and corrupted peer copies come from a file, and the stand-in
NVML (``tests/fakenvml``). Copy times follow bytes / rate on the clock the CUDA events read; the tests that need
NVML to see a copy in flight make the stand-in sleep that long too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, Optional

import pytest

from envdoctor.bench import judge as judging
from envdoctor.bench import plan, runner
from envdoctor.facts import Facts, ok
from envdoctor.matrix import hardware as hw
from tests.fakecuda.build import build as build_cuda
from tests.fakecuda.build import write_config
from tests.fakenvml.build import build as build_nvml
from tests.fakenvml.build import compiler, load_answers, write_answers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "envdoctor", "schemas", "bench.schema.json")
MiB = 1 << 20

needs_cc = pytest.mark.skipif(compiler() is None, reason="no C compiler to build the stand-in libraries")


@pytest.fixture(scope="module")
def libs(tmp_path_factory: Any) -> str:
    if compiler() is None:
        pytest.skip("no C compiler to build the stand-in libraries")
    d = str(tmp_path_factory.mktemp("benchlibs"))
    build_cuda(d)
    build_nvml(d)
    return d


def a100_pcie(**extra: Any) -> Dict[str, Any]:
    """The stand-in NVML's H100 answers made an A100 PCIe 80GB on a PCIe 4.0 x16 link (NVML's names for it)."""
    a = load_answers("h100.json")
    a.update({"device.0.name": "NVIDIA A100 80GB PCIe", "device.0.compute_capability": [8, 0],
              "device.0.architecture": 7, "device.0.pcie_gen_current": 4, "device.0.pcie_gen_max": 4,
              "device.0.pcie_gen_gpu_max": 4, "device.0.pcie_width_current": 16, "device.0.pcie_width_max": 16})
    a.update(extra)
    return a


def two_gpus(answers: Dict[str, Any]) -> Dict[str, Any]:
    a = dict(answers)
    a["device_count"] = 2
    for k, v in list(answers.items()):
        if k.startswith("device.0."):
            a["device.1." + k[len("device.0."):]] = v
    a["device.1.pci"] = {"bus_id": "00000000:3B:00.0", "device_id": "0x20B510DE"}
    a["device.1.uuid"] = "GPU-11111111-2222-3333-4444-555555555555"
    return a


def cuda_config(gpus: int = 1, **extra: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {"device_count": gpus, "device": {"0": {"bus_id": "0000:18:00.0"},
                                                             "1": {"bus_id": "0000:3b:00.0"}}}
    doc.update(extra)
    return doc


def environ(libs: str, tmp: Any, answers: Dict[str, Any], config: Optional[Dict[str, Any]]) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_", "ENVDOCTOR_"))}
    nvml = write_answers(answers, str(tmp / "nvml.txt"))
    lib_dir = libs
    if config is None:  # a machine with NVML but without the CUDA driver library
        lib_dir = str(tmp / "nvml-only")
        os.makedirs(lib_dir, exist_ok=True)
        target = os.path.join(lib_dir, "libnvidia-ml.so.1")
        if not os.path.exists(target):
            os.symlink(os.path.join(libs, "libnvidia-ml.so.1"), target)
    else:
        env["FAKE_CUDA_CONFIG"] = write_config(config, str(tmp / "cuda.txt"))
    env["LD_LIBRARY_PATH"] = lib_dir
    env["FAKE_NVML_ANSWERS"] = nvml
    env["PYTHONPATH"] = ROOT
    return env


def bench(env: Dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", "bench", *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def as_json(res: subprocess.CompletedProcess) -> Dict[str, Any]:
    doc = json.loads(res.stdout)
    import jsonschema

    with open(SCHEMA, encoding="utf-8") as fh:
        jsonschema.validate(doc, json.load(fh))
    return doc


def codes(doc: Dict[str, Any]) -> Dict[str, str]:
    return {f["code"]: f["severity"] for f in doc["findings"]}


# -- the arithmetic ------------------------------------------------------------------------------------

def test_pcie_rates_after_encoding() -> None:
    """x16 per direction: 8b/10b for Gen1-2, 128b/130b for Gen3-5, 1b/1b for Gen6 (links.json)."""
    want = {1: 4.0, 2: 8.0, 3: 15.754, 4: 31.508, 5: 63.015, 6: 128.0}
    for gen, gbs in want.items():
        got = hw.pcie_rate(gen, 16)
        assert got is not None and round(got[0], 3) == gbs, gen
    assert round(hw.pcie_rate(4, 4)[0], 3) == 7.877  # type: ignore[index]
    assert hw.pcie_rate(7, 16) is None and hw.pcie_rate(4, 0) is None and hw.pcie_rate(True, 16) is None


def test_nvlink_rate_per_link_times_links() -> None:
    assert hw.nvlink_rate("Hopper", 18)[0] == 450  # type: ignore[index]
    assert hw.nvlink_rate("Ampere", 12)[0] == 300  # type: ignore[index]
    assert hw.nvlink_rate("Blackwell", 18)[0] == 900  # type: ignore[index]
    assert hw.nvlink_rate("Ada Lovelace", 4) is None and hw.nvlink_rate("Hopper", 0) is None


def test_gbps_and_the_median() -> None:
    assert judging.gbps(256 * MiB, 10.0) == pytest.approx(26.8435456)
    assert judging.gbps(256 * MiB, 10.0, 2.0) == pytest.approx(53.6870912)  # D2D: read and written
    assert judging.gbps(256 * MiB, 0.0) is None and judging.gbps(0, 1.0) is None
    # a slow outlier and a fast one do not move the median
    trials, med = judging._median(1000 * 1000 * 1000, [40.0, 40.0, 20.0, 40.0, 400.0], 1.0)
    assert med == 25.0 and trials == [25.0, 25.0, 50.0, 25.0, 2.5]


@pytest.mark.parametrize("ratio,verified,want", [
    (0.75, True, "ok"), (0.7499, True, "warning"), (0.5, True, "warning"), (0.4999, True, "error"),
    (0.4999, False, "warning"), (1.3, True, "ok"), (None, True, "not_judged")])
def test_verdict_boundaries(ratio: Optional[float], verified: bool, want: str) -> None:
    assert judging.verdict(ratio, verified) == want


def _target(name: str = "NVIDIA A100 80GB PCIe", gen: int = 4, width: int = 16, arch: str = "Ampere",
            index: int = 0) -> plan.Target:
    facts = Facts([ok("gpu.%d.name" % index, name, "nvml"), ok("gpu.%d.pcie_gen_max" % index, gen, "nvml"),
                   ok("gpu.%d.pcie_width_max" % index, width, "nvml"),
                   ok("gpu.%d.architecture" % index, arch, "derived"),
                   ok("gpu.%d.pci_bus_id" % index, "00000000:%02X:00.0" % (0x18 + index), "nvml")])
    return plan.Target(index, facts)


def _result(gpu: int, test: str, memory: str, gbs: float, nbytes: int = 10 ** 9, numa: str = "local",
            node: int = 0) -> Dict[str, Any]:
    weight = 2.0 if test == "d2d" else 1.0
    return {"event": "result", "gpu": gpu, "test": test, "memory": memory, "numa": numa, "node": node,
            "bytes": nbytes, "ms": [weight * nbytes / (gbs * 1e9) * 1e3] * 5}


def test_the_result_line_reads_as_the_issue_says() -> None:
    from envdoctor.render.bench import line
    from envdoctor.render.style import Style

    class Utf8:
        encoding = "utf-8"

        def isatty(self) -> bool:
            return False

    t = _target()
    judged = judging.judge([t], Facts(), [_result(0, "h2d", "pinned", 25.9)])
    r = judged.results[0]
    assert (r["ratio"], r["verdict"]) == (0.822, "ok")
    assert line(r, Style(Utf8(), color=False)) == "GPU0 H2D pinned 25.9 GB/s = 0.82 × PCIe 4.0 x16 ✓"  # type: ignore[arg-type]


def test_d2d_against_the_products_memory_bandwidth() -> None:
    """A100 80GB PCIe: 1935 GB/s in gpus.json (NVIDIA's datasheet, verified): 900 GB/s is an error."""
    judged = judging.judge([_target()], Facts(), [_result(0, "d2d", "device", 1600.0),
                                                  _result(0, "d2d", "device", 900.0)])
    good, bad = judged.results
    assert good["reference"]["label"].startswith("1935 GB/s memory (A100 PCIe 80GB)")
    assert (good["verdict"], bad["verdict"]) == ("ok", "error")
    assert [f.code for f in judged.findings] == ["bench.memory_slow"]


def test_an_unverified_reference_never_errs() -> None:
    """H100 SXM5's bandwidth row is not verified against NVIDIA's table: a slow D2D is a warning."""
    t = _target("NVIDIA H100 80GB HBM3", 5, 16, "Hopper")
    judged = judging.judge([t], Facts(), [_result(0, "d2d", "device", 1000.0)])
    assert judged.results[0]["ratio"] < 0.5 and judged.results[0]["verdict"] == "warning"
    assert "not verified" in judged.findings[0].detail


def test_peer_copies_judged_against_the_topology_layers_path() -> None:
    a, b = _target("NVIDIA H100 80GB HBM3", 5, 16, "Hopper", 0), _target("NVIDIA H100 80GB HBM3", 5, 16, "Hopper", 1)
    facts = Facts([ok("topology.pairs", [{"a": 0, "b": 1, "path": "NV18", "nvlinks": 18, "pcie": "SYS"}], "nvml")])
    events = [{"event": "p2p", "src": 0, "dst": 1, "access": True, "bytes": 10 ** 9, "ms": [2.5] * 5, "verified": 6,
               "corrupt": 0},
              {"event": "p2p", "src": 1, "dst": 0, "access": True, "bytes": 10 ** 9, "ms": [10.0] * 5, "verified": 6,
               "corrupt": 0}]
    judged = judging.judge([a, b], facts, events)
    fast, slow = judged.results
    assert fast["reference"]["label"] == "NV18 (NVLink 4 x 18)" and fast["ratio"] == 0.889 and fast["verdict"] == "ok"
    assert slow["ratio"] == 0.222 and slow["verdict"] == "error"
    assert [f.code for f in judged.findings] == ["bench.peer_slow"]
    fact = {f.key: f.value for f in judged.facts}
    assert fact["bench.p2p_ratio"] == 0.222 and fact["bench.p2p_data_ok"] is True
    # without the topology layer: what the child asked NVML. NVLink: shown, verified, not judged (no link count)
    nvlink = judging.judge([a, b], Facts(), [{"event": "pair", "a": 0, "b": 1, "ancestor": 50, "p2p_nvlink": 0}]
                           + events[:1]).results[0]
    assert nvlink["verdict"] == "not_judged" and "needs the topology layer" in nvlink["why"]
    # a PCIe path from NVML's common ancestor (30: a host bridge, PHB): against the slower link
    c, d = _target(index=0), _target(gen=3, index=1)
    phb = judging.judge([c, d], Facts(), [{"event": "pair", "a": 0, "b": 1, "ancestor": 30, "p2p_nvlink": 4},
                                          dict(events[0], ms=[100.0] * 5)]).results[0]
    assert phb["reference"]["label"] == "PHB over PCIe 3.0 x16"
    assert (phb["ratio"], phb["verdict"]) == (0.635, "warning")
    # nothing known of the path: not judged
    none = judging.judge([a, b], Facts(), events[:1]).results[0]
    assert none["verdict"] == "not_judged" and "topology" in none["why"]


def test_remote_numa_penalty() -> None:
    judged = judging.judge([_target()], Facts(), [
        {"event": "bind", "gpu": 0, "cpus": [0, 1], "cpus_why": "", "memory_how": "libnuma's set_mempolicy",
         "memory_why": "", "node": 0},
        _result(0, "h2d", "pinned", 25.0), _result(0, "h2d", "pinned", 15.0, numa="remote", node=1)])
    f = judged.findings[0]
    assert f.code == "bench.remote_numa" and f.severity == "info"
    assert "NUMA node 1" in f.title and "0.60" in f.title
    assert f.fix.commands == ["numactl --cpunodebind=0 --membind=0 -- YOUR_COMMAND"]
    assert judged.results[1]["verdict"] == "not_judged"  # compared with the local copy, not with the link


# -- where the GPUs sit (read through the host) ---------------------------------------------------------

def test_plan_reads_the_gpus_local_cpus_and_numa_node() -> None:
    from envdoctor.host.snapshot import SnapshotHost

    host = SnapshotHost({"schema_version": 1, "files": {
        "/sys/bus/pci/devices/0000:18:00.0/local_cpulist": {"text": "0-3,8\n"},
        "/sys/bus/pci/devices/0000:18:00.0/numa_node": {"text": "0\n"},
        "/sys/devices/system/node/has_memory": {"text": "0-1\n"}}}, "test", validated=True)
    facts = Facts([ok("gpu.count", 1, "nvml"), ok("gpu.0.index", 0, "nvml"),
                   ok("gpu.0.pci_bus_id", "00000000:18:00.0", "nvml"), ok("gpu.0.name", "NVIDIA A100 80GB PCIe", "n")])
    (t,) = plan.targets(facts, host)
    assert (t.cpus, t.cpus_text, t.numa_node, t.remote_node) == ([0, 1, 2, 3, 8], "0-3,8", 0, 1)
    assert plan.parse_cpulist("0-99999") is None and plan.parse_cpulist("a-b") is None


def test_no_usable_gpu_is_refused_before_anything_runs() -> None:
    with pytest.raises(plan.BenchError, match="no NVIDIA GPU"):
        plan.targets(Facts([ok("gpu.count", 0, "derived")]), None)  # type: ignore[arg-type]
    with pytest.raises(plan.BenchError, match="no GPU 3"):
        plan.targets(Facts([ok("gpu.count", 1, "nvml"), ok("gpu.0.index", 0, "nvml"),
                            ok("gpu.0.pci_bus_id", "0000:18:00.0", "nvml")]), None, gpu=3)  # type: ignore[arg-type]


# -- the child process --------------------------------------------------------------------------------

def _run_child(libs: str, tmp: Any, monkeypatch: Any, job_gpu: Dict[str, Any], config: Dict[str, Any],
               tests: Any = ("h2d",), deadline: float = 30.0) -> runner.Outcome:
    env = environ(libs, tmp, a100_pcie(), config)
    for k in ("FAKE_CUDA_CONFIG", "FAKE_NVML_ANSWERS", "LD_LIBRARY_PATH"):
        monkeypatch.setenv(k, env[k])
    job = {"size": 4 * MiB, "p2p_size": 4 * MiB, "trials": 3, "tests": list(tests), "force": False,
           "gpus": [dict({"index": 0, "bus_id": "0000:18:00.0", "cpus": None, "numa_node": None,
                          "remote_node": None}, **job_gpu)], "pairs": []}
    return runner.run(job, time.monotonic() + deadline)


@needs_cc
def test_the_child_binds_to_the_gpus_local_cpus_before_it_allocates(libs: str, tmp_path: Any,
                                                                      monkeypatch: Any) -> None:
    allowed = sorted(os.sched_getaffinity(0))
    want = allowed[-1:]  # the last CPU this process may use: not where it would run unbound
    out = _run_child(libs, tmp_path, monkeypatch, {"cpus": want, "numa_node": 0}, cuda_config())
    assert out.ended == "done", out.message
    kinds = [e["event"] for e in out.events]
    bind = next(e for e in out.events if e["event"] == "bind")
    assert bind["cpus"] == want and bind["cpus_why"] == ""
    assert kinds.index("bind") < kinds.index("driver") < kinds.index("result")  # before CUDA starts and allocates
    assert bind["memory_why"] == "" or "set_mempolicy" in bind["memory_why"] or "NUMA" in bind["memory_why"]


@needs_cc
def test_cpus_outside_the_processes_allowed_set_are_not_bound(libs: str, tmp_path: Any, monkeypatch: Any) -> None:
    out = _run_child(libs, tmp_path, monkeypatch, {"cpus": [4095]}, cuda_config())
    bind = next(e for e in out.events if e["event"] == "bind")
    assert bind["cpus"] is None and "none of the GPU's local CPUs (4095) is allowed" in bind["cpus_why"]


@needs_cc
def test_a_hang_is_cut_at_the_deadline_and_named(libs: str, tmp_path: Any, monkeypatch: Any) -> None:
    started = time.monotonic()
    out = _run_child(libs, tmp_path, monkeypatch, {}, cuda_config(cuMemcpyHtoD_v2={"hang_seconds": 60}),
                     deadline=2.0)
    assert time.monotonic() - started < 6
    assert out.ended == "timed_out" and out.during == "GPU0 H2D pinned"


# -- the command ---------------------------------------------------------------------------------------

@needs_cc
def test_healthy_gpu_text_and_json(libs: str, tmp_path: Any) -> None:
    cfg = cuda_config(rate={"h2d": {"pinned": 25.9, "pageable": 9.8}, "d2h": {"pinned": 26.3}, "d2d": 1600})
    env = environ(libs, tmp_path, a100_pcie(), cfg)
    res = bench(env, "--size", "16M")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "GPU0 H2D pinned 25.9 GB/s = 0.82 × PCIe 4.0 x16 ✓" in res.stdout or \
        "GPU0 H2D pinned 25.9 GB/s = 0.82 x PCIe 4.0 x16 +" in res.stdout
    assert "GPU0 D2D 1600 GB/s = 0.83" in res.stdout and "pageable: not judged" in res.stdout
    doc = as_json(bench(env, "--size", "16M", "--format", "json"))
    facts = {f["key"]: f["value"] for f in doc["probes"][0]["facts"]}
    assert facts["bench.h2d_ratio"] == 0.822 and facts["bench.d2d_ratio"] == 0.827
    assert doc["summary"] == {"error": 0, "warning": 0, "info": 0}
    assert doc["notes"] == ["peer copies need two GPUs: this machine has one"]


@needs_cc
def test_a_slow_link_is_an_error_and_fails_a_policy(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(rate={"h2d": {"pinned": 12.0}, "d2h": {"pinned": 20.0}}))
    res = bench(env, "h2d", "d2h", "--size", "8M", "--format", "json")
    assert res.returncode == 1
    doc = as_json(res)
    assert [(r["test"], r["memory"], r["verdict"]) for r in doc["results"] if r["memory"] == "pinned"] == [
        ("h2d", "pinned", "error"), ("d2h", "pinned", "warning")]
    report = tmp_path / "bench.json"
    report.write_text(res.stdout)
    policy = tmp_path / "p.toml"
    policy.write_text('schema_version = 1\n[require]\n"bench.h2d_ratio" = {min = 0.7}\n'
                      '[findings]\nfail_on = "never"\n')
    check = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--policy", str(policy), "--report",
                            str(report), "--format", "json"], env=env, capture_output=True, text=True, timeout=60,
                           cwd=ROOT)
    assert check.returncode == 1
    (req,) = json.loads(check.stdout)["policy"]["requirements"]
    assert req["status"] == "fail" and req["found"] == 0.381


@needs_cc
def test_link_trained_down_under_load(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(**{"device.0.pcie_gen_current": 1}),
                  cuda_config(sleep=1, rate={"h2d": {"pinned": 0.8, "pageable": 0.8}}))
    doc = as_json(bench(env, "h2d", "--size", "8M", "--trials", "2", "--format", "json"))
    assert codes(doc)["bench.link_trained_down"] == "warning"
    assert doc["gpus"][0]["link"]["gen_loaded"] == 1


@needs_cc
def test_an_idle_downshift_is_not_a_fault(libs: str, tmp_path: Any) -> None:
    """NVML says Gen1 idle (the diagnose-time reading and the child's first one), Gen4 while data flows."""
    env = environ(libs, tmp_path, a100_pcie(**{"device.0.pcie_gen_current": "1;4"}),
                  cuda_config(sleep=1, rate={"h2d": {"pinned": 0.8, "pageable": 0.8}}))
    doc = as_json(bench(env, "h2d", "--size", "8M", "--trials", "2", "--format", "json"))
    assert "bench.link_trained_down" not in codes(doc)
    assert (doc["gpus"][0]["link"]["gen_idle"], doc["gpus"][0]["link"]["gen_loaded"]) == (1, 4)
    res = bench(env, "h2d", "--size", "8M", "--trials", "2")
    assert "idle 1.0 x16, under load 4.0 x16 (an idle link saves power: not a fault)" in " ".join(res.stdout.split())


@needs_cc
def test_replays_growing_during_the_copies(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(**{"device.0.pcie_replay_counter": "3;9"}),
                  cuda_config(rate={"h2d": {"pinned": 26.0}}))
    doc = as_json(bench(env, "h2d", "--size", "8M", "--format", "json"))
    f = next(f for f in doc["findings"] if f["code"] == "bench.pcie_replays")
    assert f["severity"] == "warning" and "replayed 6 packets" in f["title"]


@needs_cc
def test_corrupt_peer_copies_are_an_error(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, two_gpus(a100_pcie()), cuda_config(2, p2p={"0": {"1": {"corrupt": 1}}}))
    res = bench(env, "p2p", "--size", "4M", "--format", "json")
    assert res.returncode == 1
    doc = as_json(res)
    by_pair = {(r["gpu"], r["peer"]): r for r in doc["results"]}
    assert by_pair[(0, 1)]["corrupt_copies"] == 6 and by_pair[(0, 1)]["verdict"] == "error"
    assert by_pair[(1, 0)]["corrupt_copies"] == 0 and by_pair[(1, 0)]["verified_copies"] == 6
    f = next(f for f in doc["findings"] if f["code"] == "bench.p2p_corrupt")
    assert f["severity"] == "error" and "GPU0 to GPU1" in f["title"]
    assert {x["key"]: x["value"] for x in doc["probes"][0]["facts"]}["bench.p2p_data_ok"] is False


@needs_cc
def test_a_busy_gpu_is_refused_without_force(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(**{"device.0.processes": "4242:1073741824"}), cuda_config())
    res = bench(env, "h2d", "--size", "4M")
    assert res.returncode == 2 and res.stdout == ""
    assert "GPU0 in use by other processes (GPU0: pid 4242)" in res.stderr and "--force" in res.stderr
    doc = as_json(bench(env, "h2d", "--size", "4M", "--force", "--format", "json"))
    assert codes(doc)["bench.gpu_busy"] == "warning" and doc["results"]


@needs_cc
@pytest.mark.parametrize("where,config,during", [
    ("cuInit", {"cuInit": {"hang_seconds": 60}}, "cuInit"),
    ("a copy", {"cuMemcpyDtoH_v2": {"hang_seconds": 60}}, "GPU0 D2H pinned"),
    ("a peer copy", {"cuMemcpyPeer": {"hang_seconds": 60}}, "GPU0 -> GPU1 peer copy"),
])
def test_every_hang_is_bounded_by_timeout(libs: str, tmp_path: Any, where: str, config: Dict[str, Any],
                                          during: str) -> None:
    env = environ(libs, tmp_path, two_gpus(a100_pcie()), cuda_config(2, **config))
    started = time.monotonic()
    res = bench(env, "--size", "4M", "--timeout", "4", "--format", "json")
    took = time.monotonic() - started
    assert took < 4 + 5, took  # --timeout plus the interpreter's start-up, with room for a loaded machine
    assert res.returncode == 1
    doc = as_json(res)
    assert doc["incomplete"]["reason"] == "timed_out" and doc["incomplete"]["during"] == during
    f = next(f for f in doc["findings"] if f["code"] == "bench.timed_out")
    assert during in f["title"]


@needs_cc
@pytest.mark.parametrize("how", ["segv", "abort", "exit"])
def test_a_crash_keeps_what_was_measured(libs: str, tmp_path: Any, how: str) -> None:
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(cuMemcpyDtoD_v2={"crash": how}))
    res = bench(env, "--size", "4M", "--format", "json")
    assert res.returncode == 1
    doc = as_json(res)
    assert doc["incomplete"]["reason"] == "crashed" and doc["incomplete"]["during"] == "GPU0 D2D device"
    assert [r["test"] for r in doc["results"]] == ["h2d", "h2d", "d2h", "d2h"]  # measured before the crash
    assert codes(doc)["bench.crashed"] == "error"


@needs_cc
def test_a_failing_driver_call_is_a_finding(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(cuMemAlloc_v2={"error": 2}))
    doc = as_json(bench(env, "--size", "4M", "--format", "json"))
    f = next(f for f in doc["findings"] if f["code"] == "bench.cuda_error")
    assert f["title"] == "GPU0: cuMemAlloc_v2 failed with CUDA_ERROR_OUT_OF_MEMORY"


@needs_cc
def test_no_cuda_driver_library(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(), None)
    res = bench(env, "--size", "4M")
    assert res.returncode == 2 and res.stdout == ""
    assert "no usable NVIDIA GPU: the CUDA driver library libcuda.so.1 cannot be loaded" in res.stderr


@needs_cc
def test_no_driver_at_all(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(), cuda_config())
    env["LD_LIBRARY_PATH"] = str(tmp_path)  # neither NVML nor CUDA
    res = bench(env)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.startswith("envdoctor: no usable NVIDIA GPU") or "no NVIDIA GPU" in res.stderr
    assert "Traceback" not in res.stderr


@needs_cc
def test_cuinit_without_a_device(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(init={"error": 100}))
    res = bench(env)
    assert res.returncode == 2 and "CUDA_ERROR_NO_DEVICE" in res.stderr


def test_diagnose_never_measures() -> None:
    """bench is opt-in: no probe produces bench facts and no check reads them."""
    from envdoctor.checks import all_checks
    from envdoctor.probes import all_probes

    assert not any(k.startswith("bench.") for s in all_probes() for k in s.produces)
    assert not any(c.code.startswith("bench.") for s in all_checks() for c in s.codes)


def test_bench_codes_are_explained_and_keys_are_policy_keys() -> None:
    from envdoctor.policy import key_kind

    for code, doc in judging.CODE_DOCS.items():
        assert code.startswith("bench.") and doc.summary and doc.why
    res = subprocess.run([sys.executable, "-m", "envdoctor", "explain", "bench.p2p_corrupt"], capture_output=True,
                         text=True, timeout=60, cwd=ROOT)
    assert res.returncode == 0 and "byte for byte" in res.stdout
    assert key_kind("bench.h2d_ratio") == "number" and key_kind("bench.d2d_ratio") == "number"
    assert key_kind("bench.p2p_data_ok") == "bool"


@needs_cc
def test_fleet_shows_the_bench_ratios(libs: str, tmp_path: Any) -> None:
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(rate={"h2d": {"pinned": 26.0}}))
    good = bench(env, "h2d", "--size", "4M", "--format", "json").stdout
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(rate={"h2d": {"pinned": 9.0}}))
    bad = bench(env, "h2d", "--size", "4M", "--format", "json").stdout
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "node1.json").write_text(good)
    (tmp_path / "reports" / "node2.json").write_text(bad)
    res = subprocess.run([sys.executable, "-m", "envdoctor", "fleet", str(tmp_path / "reports")], env=env,
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    text = " ".join(res.stdout.split())
    assert "Bench: H2D / PCIe link" in text and "0.8" in text and "0.3" in text and "node2" in text


@needs_cc
def test_the_real_gpu_check_script_runs_against_the_stand_in(libs: str, tmp_path: Any) -> None:
    """scripts/bench_transfer_check.py is for a real GPU; here it runs the bench on the stand-in, where torch (if
    installed at all) sees no GPU, and says so."""
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(rate={"h2d": {"pinned": 25.9}, "d2h": {"pinned": 26.3},
                                                                 "d2d": 1600.0}))
    res = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "bench_transfer_check.py"), "--size", "4M",
                          "--json"], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(res.stdout)
    assert [(r["test"], r["envdoctor_gbps"]) for r in doc["rows"]] == [("h2d", 25.9), ("d2h", 26.3), ("d2d", 1600.0)]
    assert all(r["torch_gbps"] is None and ("torch" in r["why"]) for r in doc["rows"])
    assert doc["wall_seconds"] < 60 and doc["bench_exit"] == 0


@needs_cc
def test_a_live_check_runs_the_bench_when_its_policy_names_a_bench_key(libs: str, tmp_path: Any) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('schema_version = 1\n[require]\n"bench.h2d_ratio" = {min = 0.6}\n"gpu.count" = 1\n'
                      '[findings]\nfail_on = "never"\n')
    argv = [sys.executable, "-m", "envdoctor", "check", "--policy", str(policy), "--format", "json"]
    env = environ(libs, tmp_path, a100_pcie(), cuda_config(rate={"h2d": {"pinned": 9.0}}))
    doc = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT).stdout)
    req = {r["name"]: r for r in doc["policy"]["requirements"]}
    assert req["bench.h2d_ratio"]["status"] == "fail" and req["gpu.count"]["status"] == "pass"
    assert any(f["code"] == "bench.host_link_slow" for f in doc["findings"])
    # a GPU another process uses: the bench refuses, the requirement is unknown with the reason
    env = environ(libs, tmp_path, a100_pcie(**{"device.0.processes": "4242:1"}), cuda_config())
    doc = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=ROOT).stdout)
    req = {r["name"]: r for r in doc["policy"]["requirements"]}
    assert req["bench.h2d_ratio"]["status"] == "unknown" and "in use by other processes" in req["bench.h2d_ratio"][
        "found"]


@needs_cc
def test_nvml_hanging_in_the_child_is_bounded_too(libs: str, tmp_path: Any) -> None:
    """The child asks NVML who else uses the GPU before it loads CUDA: a driver hanging there is cut the same way."""
    env = environ(libs, tmp_path, a100_pcie(**{"device.0.processes": "4242:1", "device.0.processes.hang_seconds": 60}),
                  cuda_config())
    started = time.monotonic()
    res = bench(env, "--size", "4M", "--timeout", "4", "--format", "json")
    assert time.monotonic() - started < 4 + 5
    doc = as_json(res)
    assert res.returncode == 1 and doc["incomplete"]["reason"] == "timed_out" and doc["results"] == []
    assert doc["incomplete"]["during"] == "asking NVML which processes use the GPUs"

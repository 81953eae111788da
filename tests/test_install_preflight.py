"""``install``'s pre-flight is the checks' own units on the facts after the plan (``envdoctor/preflight.py``).

Every machine here is a captured one (tests/machines, tests/corpus): its snapshot is replayed by ``install ...
--dry-run --snapshot``, and what the pre-flight says is held to what ``diagnose``'s checks say of the same facts
with the plan's over them (:attr:`Plan.provides`).
"""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

import envdoctor.checks as checks_mod
from envdoctor import preflight
from envdoctor.checks import CheckContext, find_check, run_checks
from envdoctor.cli import cli
from envdoctor.findings import Finding
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.recipes import Request, load_recipe, target_from_facts
from envdoctor.report import diagnose

HERE = os.path.dirname(os.path.abspath(__file__))
# driver 520.61.05 (CUDA 11.8), an RTX 3060, CUDA 11.8 installed (tests/machines/ubuntu2004-rtx3060-cuda118)
OLD_DRIVER = os.path.join(HERE, "machines", "ubuntu2004-rtx3060-cuda118", "snapshot.json")
# four Tesla K80 (compute capability 3.7), driver 470.57.02 (tests/machines/dual-socket-8xk80-pcie-switches)
KEPLER = os.path.join(HERE, "machines", "dual-socket-8xk80-pcie-switches", "snapshot.json")
# two RTX 5090 (sm_120) on Ubuntu 24.04, driver 570 (tests/corpus, from NVIDIA/nccl's issue tracker)
BLACKWELL = os.path.join(HERE, "corpus", "b4-2x-rtx5090-nccl2251-too-old-for-blackwell-maxsharedmem", "snapshot.json")
# eight H100 on an NVSwitch, a current driver (tests/machines/hgx-h100-8gpu-nvswitch)
HEALTHY = os.path.join(HERE, "machines", "hgx-h100-8gpu-nvswitch", "snapshot.json")


def _install(*args: str):
    return CliRunner().invoke(cli, ["install", *args, "--dry-run"])


def _after_the_plan(snapshot: str, version: str, method: str = "repo"):
    """The findings ``diagnose`` would give once CUDA ``version`` is installed: every check, on the snapshot's
    whole report's facts with the plan's over them."""
    report = diagnose(SnapshotHost(load_snapshot(snapshot), "t"))
    cuda = load_recipe("cuda")
    plan = cuda.plan(Request("cuda", version, method), target_from_facts(report.facts), report.facts)
    return run_checks(CheckContext(preflight.after_plan(report.facts, plan.provides), []))


def test_a_driver_too_old_for_the_toolkit_is_refused_with_the_finding_diagnose_would_show():
    r = _install("cuda", "--version", "12.4", "--snapshot", OLD_DRIVER)
    assert r.exit_code == 2, r.output
    (f,) = [f for f in _after_the_plan(OLD_DRIVER, "12.4") if f.code == "driver.too_old_for_toolkit"]
    assert f.severity == "error"
    assert "ERROR driver.too_old_for_toolkit: " + f.title in r.output
    assert "Driver 520.61.05 supports CUDA up to 11.8" in f.title and "needs CUDA 12.4" in f.title
    # the ways out are still given: this CUDA with its driver, the driver, the CUDA this driver runs
    assert "envdoctor install cuda --version 12.4.1 --with-driver" in r.output
    assert "envdoctor install cuda --version 11.8   (runs on the installed driver)" in r.output
    # with the driver it needs, the plan brings no such finding: planned (a reboot follows)
    r = _install("cuda", "--version", "12.4", "--with-driver", "--snapshot", OLD_DRIVER)
    assert r.exit_code == 0, r.output
    assert "REBOOT REQUIRED" in r.output


def test_a_gpu_the_toolkit_cannot_target_is_refused_with_the_checks_code():
    # CUDA 12 dropped Kepler (cuda.json cc_min 5.0): even with the driver it needs, its nvcc cannot build for sm_37
    r = _install("cuda", "--version", "12.4", "--with-driver", "--snapshot", KEPLER)
    assert r.exit_code == 2, r.output
    assert "ERROR cuda.toolkit_cannot_target_gpu: CUDA 12.4.1" in r.output
    assert "Tesla K80 (sm_37, compute capability 3.7)" in r.output


def test_a_gpu_newer_than_the_toolkit_is_said_with_the_checks_code():
    # sm_120 and CUDA 12.4 (cc_max 9.0): the check's verdict is a warning (code for older architectures still
    # runs through PTX JIT), so the plan is made and says it, as diagnose would after it
    r = _install("cuda", "--version", "12.4", "--method", "runfile", "--snapshot", BLACKWELL)
    assert r.exit_code == 0, r.output
    titles = [f.title for f in _after_the_plan(BLACKWELL, "12.4", "runfile")
              if f.code == "cuda.gpu_newer_than_toolkit"]
    assert titles and all(("cuda.gpu_newer_than_toolkit: " + t) in r.output.replace("\n# ", " ") for t in titles)
    assert "NVIDIA GeForce RTX 5090 (sm_120, compute capability 12.0)" in r.output
    # CUDA 12.8 targets it: nothing said
    r = _install("cuda", "--version", "12.8", "--method", "runfile", "--snapshot", BLACKWELL)
    assert "gpu_newer_than_toolkit" not in r.output


def test_a_healthy_machine_gets_no_preflight_finding_and_the_plan_it_had(monkeypatch):
    said = _install("cuda", "--version", "12.4", "--snapshot", HEALTHY)
    assert said.exit_code == 0, said.output
    assert "diagnose` would" not in said.output
    monkeypatch.setattr(preflight, "judge", lambda *a, **k: preflight.Verdict([], []))
    assert _install("cuda", "--version", "12.4", "--snapshot", HEALTHY).output == said.output


def _replace_check(monkeypatch, name: str, fn) -> None:
    spec = find_check(name)
    assert spec is not None
    monkeypatch.setitem(checks_mod._REGISTRY, name, spec._replace(fn=fn))


def test_installs_verdict_follows_the_check_unit_not_a_rule_of_its_own(monkeypatch):
    # Without compat.driver-vs-cuda's verdict, nothing refuses CUDA 12.4 over driver 520: install has no copy of it
    _replace_check(monkeypatch, "compat.driver-vs-cuda", lambda ctx: [])
    r = _install("cuda", "--version", "12.4", "--snapshot", OLD_DRIVER)
    assert r.exit_code == 0, r.output

    # and what the check says after the plan is what install refuses with
    def says(ctx):
        nvcc = ctx.facts.mapping("cuda.nvcc")
        if str(nvcc.get("version", "")).startswith("12.4"):
            yield Finding(code="driver.too_old_for_toolkit", severity="error", components=["driver", "cuda"],
                          title="the check's own verdict on %s" % nvcc.get("path"))

    _replace_check(monkeypatch, "compat.driver-vs-cuda", says)
    r = _install("cuda", "--version", "12.4", "--snapshot", HEALTHY)
    assert r.exit_code == 2
    assert "ERROR driver.too_old_for_toolkit: the check's own verdict on /usr/local/cuda-12.4/bin/nvcc" in r.output


def test_a_finding_the_machine_already_has_is_not_the_plans():
    # A finding present before and after the plan (same code and title) is the machine's, never the plan's.
    report = diagnose(SnapshotHost(load_snapshot(OLD_DRIVER), "t"))
    facts = report.facts
    same = {"cuda.nvcc": facts.value("cuda.nvcc")}  # a plan that changes nothing
    assert preflight.judge(facts, same) == preflight.Verdict([], [])


@pytest.mark.parametrize("keys,wanted", [
    (("cuda.nvcc", "cuda.toolkits"), {"compat.driver-vs-cuda", "compat.toolkit-vs-gpu", "compat.host-compiler-and-os"}),
    (("driver.version",), {"compat.driver-vs-cuda", "driver-branch"}),
])
def test_the_checks_are_chosen_by_the_facts_they_name(keys, wanted):
    chosen = {s.name for s in preflight.checks_for(keys)}
    assert wanted <= chosen
    assert "kernel-log" not in chosen and "driver-health.library-mismatch" not in chosen


def test_a_libraries_only_plan_runs_and_probes_only_what_its_checks_need(monkeypatch):
    """NCCL's build check yields to the driver checks (one root cause, one finding); a plan that brings only NCCL's
    libraries leaves their facts alone, so they say the same before and after it: neither they nor the programs'
    and static CUDA runtimes' probes they read run. A plan that installs CUDA (and a driver) changes what they say:
    they still run."""
    from envdoctor.recipes import cuda

    nccl = ("libraries.nccl",)
    assert "nccl-cuda-build" in {s.name for s in preflight.run_for(nccl)}
    assert not {"compat.driver-vs-cuda", "compat.program-ptx", "compat.program-nvrtc"} & {
        s.name for s in preflight.run_for(nccl)}
    assert "staticcuda" not in preflight.probes_for(nccl) and "programs" not in preflight.probes_for(nccl)
    assert {"compat.driver-vs-cuda", "compat.program-nvrtc"} <= {s.name for s in preflight.run_for(cuda.PROVIDES)}
    assert {"staticcuda", "programs"} <= set(preflight.probes_for(cuda.PROVIDES))

    facts = diagnose(SnapshotHost(load_snapshot(HEALTHY), "t")).facts
    ran = []
    _replace_check(monkeypatch, "compat.driver-vs-cuda", lambda ctx: ran.append(1) or [])
    nccl_now = facts.value("libraries.nccl")
    assert preflight.judge(facts, {"libraries.nccl": nccl_now}) == preflight.Verdict([], []) and ran == []
    preflight.judge(facts, {"driver.version": facts.value("driver.version")})
    assert ran


# -- the framework recipes (pytorch, tensorflow, jax): their plans provide framework.<name>, the checks judge it --
# two GeForce GTX 1080 Ti (sm_61), driver 440.82 (CUDA 10.2) in a container (tests/corpus, from nvidia-htop's tracker)
DRIVER_440 = os.path.join(HERE, "corpus", "b3-healthy-container-2x1080ti-driver44082-smi-no-pids-breaks-nvidia-htop",
                          "snapshot.json")
# the A100 with pip's CUDA wheels in a venv, driver 565 (tests/machines/pipwheels-ubuntu2204-a100)
A100_WHEELS = os.path.join(HERE, "machines", "pipwheels-ubuntu2204-a100", "snapshot.json")


def _framework_after(snapshot: str, component: str, version: str):
    """The findings ``diagnose`` would give once the framework plan ran (every check, the plan's facts over the
    snapshot's whole report's), and the plan."""
    report = diagnose(SnapshotHost(load_snapshot(snapshot), "t"))
    plan = load_recipe(component).plan(Request(component, version, "pip"), target_from_facts(report.facts),
                                       report.facts)
    return run_checks(CheckContext(preflight.after_plan(report.facts, plan.provides), [])), plan


def test_a_framework_on_a_driver_too_old_for_its_cuda_is_refused_with_the_checks_code_and_title():
    r = _install("pytorch", "--version", "1.13", "--snapshot", DRIVER_440)
    assert r.exit_code == 2, r.output
    found, plan = _framework_after(DRIVER_440, "pytorch", "1.13")
    assert plan.provides["framework.torch"]["cuda"] == "11.6"  # the build advise would choose but for the driver
    (f,) = [f for f in found if f.code == "driver.too_old_for_framework"]
    assert "ERROR driver.too_old_for_framework: " + f.title in r.output
    assert "Driver 440.82 supports CUDA up to 10.2, but torch 1.13+cu116 needs CUDA 11.6" in f.title
    # the release this driver runs is planned, and nothing is said of the driver
    r = _install("pytorch", "--version", "1.12", "--snapshot", DRIVER_440)
    assert r.exit_code == 0, r.output
    assert "driver.too_old_for_framework" not in r.output


def test_a_gpu_the_framework_build_lacks_is_refused_with_the_checks_code():
    # torch 1.13's wheels carry sm_37..sm_86: no H100 (sm_90) code, and no PTX to JIT from
    r = _install("pytorch", "--version", "1.13", "--snapshot", HEALTHY)
    assert r.exit_code == 2, r.output
    assert "ERROR gpu.arch_not_in_build: NVIDIA H100 80GB HBM3 (sm_90, compute capability 9.0) is not supported by " \
           "torch 1.13+cu116" in r.output
    # TensorFlow 2.4 (CUDA 11.0, which targets sm_35 on) on the K80s is planned: a check's rule holds it there too
    r = _install("tensorflow", "--version", "2.4", "--snapshot", KEPLER)
    assert "gpu.arch_not_in_build" not in r.output


@pytest.mark.parametrize("component", ["pytorch", "tensorflow", "jax"])
def test_a_healthy_machine_keeps_the_framework_plan_it_had(monkeypatch, component):
    said = _install(component, "--snapshot", A100_WHEELS)
    assert said.exit_code == 0, said.output
    assert "diagnose` would report" not in said.output
    _, plan = _framework_after(A100_WHEELS, component, None)
    assert plan.provides  # the pre-flight judged it ...
    monkeypatch.setattr(preflight, "judge", lambda *a, **k: preflight.Verdict([], []))
    without = _install(component, "--snapshot", A100_WHEELS).output  # ... and changed nothing but its notes
    assert [line for line in said.output.splitlines() if "diagnose` would warn" not in line] == without.splitlines()


def test_a_framework_install_follows_the_check_unit_not_a_rule_of_its_own(monkeypatch):
    # Without compat.driver-vs-cuda's verdict, nothing refuses torch 1.13 (CUDA 11.6) over driver 440
    _replace_check(monkeypatch, "compat.driver-vs-cuda", lambda ctx: [])
    r = _install("pytorch", "--version", "1.13", "--snapshot", DRIVER_440)
    assert r.exit_code == 0, r.output
    assert "install PyTorch 1.13 (cu116, CUDA 11.6)" in r.output

    # and what the check says of the framework after the plan is what install refuses with
    def says(ctx):
        torch = ctx.facts.mapping("framework.torch")
        if torch.get("cuda") == "12.8":
            yield Finding(code="driver.too_old_for_framework", severity="error", components=["driver", "torch"],
                          title="the check's own verdict on torch %s" % torch.get("version"))

    _replace_check(monkeypatch, "compat.driver-vs-cuda", says)
    r = _install("pytorch", "--version", "2.8", "--option", "cuda=12.8", "--snapshot", HEALTHY)
    assert r.exit_code == 2, r.output
    assert "ERROR driver.too_old_for_framework: the check's own verdict on torch 2.8+cu128" in r.output


def test_the_framework_plans_name_the_checks_that_judge_them():
    chosen = {s.name for s in preflight.checks_for(("framework.torch",))}
    assert {"compat.driver-vs-cuda", "compat.arch-vs-builds"} <= chosen


# a GPU on the PCI bus and no NVIDIA driver installed (nouveau bound; Ubuntu 18.04 with the GPU Operator; from
# tests/corpus, rebuilt from NVIDIA/gpu-operator's tracker); planned for Ubuntu 22.04
NO_DRIVER = os.path.join(HERE, "corpus", "b6-gpu-operator-node-ubuntu1804-nouveau-bound-driver-container-fails",
                         "snapshot.json")


def test_a_framework_on_a_machine_without_a_driver_is_refused_and_with_driver_plans_one():
    r = _install("pytorch", "--snapshot", NO_DRIVER, "--os", "ubuntu22.04")
    assert r.exit_code == 2, r.output
    assert "ERROR driver.missing_for_framework: No NVIDIA driver is installed" in r.output
    assert "--with-driver" in r.output.split("alternatives:")[1]  # the refusal says how to get one
    r = _install("pytorch", "--snapshot", NO_DRIVER, "--os", "ubuntu22.04", "--with-driver")
    assert r.exit_code == 0, r.output
    assert "reboot required afterwards: yes" in r.output and "cuda-keyring" in r.output  # the driver is planned
    # a recipe without --with-driver names the driver's own install
    r = _install("tensorflow", "--snapshot", NO_DRIVER, "--os", "ubuntu22.04")
    assert r.exit_code == 2 and "envdoctor install driver" in r.output, r.output

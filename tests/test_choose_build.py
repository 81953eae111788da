"""One decision of "which torch build fits this driver and these GPUs": ``advise`` answers it, the pytorch
recipe installs it, and the compatibility check's fix suggests it, all through ``advise.choose_build``.

The machines are every GPU compute capability of gpus.json on the GA driver of each CUDA release from 11.4
on, read by the probes from an NVML answer (no GPU runs in CI: tests/conftest.make_host is the seam the
live probes use), plus mixed-GPU machines; the three callers must name the same release and variant."""

from __future__ import annotations

import dataclasses
import functools
import os
import shlex
from typing import Dict, FrozenSet, List, Optional, Tuple

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor import matrix, preflight
from envdoctor.advise import advise, candidates, python_admits, target_from_facts
from envdoctor.checks import compat
from envdoctor.facts import Facts
from envdoctor.host.snapshot import SnapshotHost, load_snapshot
from envdoctor.matrix import hardware as hw
from envdoctor.probes import run_probes
from envdoctor.recipes import RecipeError, Request, Target, load_recipe, parse_target
from tests.conftest import make_host

#: the framework recipes (recipes/framework.py with each plug-in's build hooks)
pytorch, tensorflow, jax = (load_recipe(n) for n in ("pytorch", "tensorflow", "jax"))

OS_RELEASE = 'ID=ubuntu\nVERSION_ID="22.04"\nNAME="Ubuntu"\n'
PY = "/opt/venv/bin/python"


def machine(driver: str, ccs: List[str], python: Optional[str] = None) -> Facts:
    """Facts the probes read from an NVML answer (and, given ``python``, from an interpreter of that version)."""
    data = {"init": {"value": True}, "system.driver_version": {"value": driver}, "device_count": {"value": len(ccs)}}
    for i, cc in enumerate(ccs):
        data["device.%d.handle" % i] = {"value": True}
        data["device.%d.name" % i] = {"value": "NVIDIA GPU"}
        data["device.%d.compute_capability" % i] = {"value": [int(p) for p in cc.split(".")]}
    interpreter = {"executable": "/usr/bin/python3", "version": python, "implementation": "cpython",
                   "prefix": "/usr", "base_prefix": "/usr", "sys_path": []} if python else None
    host = make_host(files={"/etc/os-release": OS_RELEASE, "/sys/module/nvidia/version": driver + "\n"},
                     nvml={"data": data}, python=interpreter)
    only = ["os", "driver", "gpu"] + (["python"] if python else [])
    return Facts(f for r in run_probes(host, only=only, parallel=False) for f in r.facts)


def drivers() -> List[str]:
    return sorted({r["min_driver_linux"] for r in hw.cuda_releases() if Version(r["version"]) >= Version("11.4")},
                  key=Version)


def ccs() -> List[str]:
    return sorted({g["cc"] for g in matrix.load("gpus")}, key=Version)


def _recipe_choice(facts: Facts) -> Optional[tuple]:
    """What `install pytorch` installs: the recipe's plan (the builds judged by the pre-flight, as the command line
    asks the recipe), if the pre-flight's checks let it through."""
    try:
        plan = pytorch.plan(Request(component="pytorch", version=None, method="pip", python=PY,
                                    accept=preflight.build_judge(facts)), parse_target("ubuntu22.04"), facts)
        preflight.check(plan, facts)
    except RecipeError:
        return None
    return plan.version, plan.title.split("(")[1].split(",")[0]  # "install PyTorch 2.7 (cu126, CUDA 12.6)"


def _cases():
    out = [(d, [cc]) for d in drivers() for cc in ccs()]
    out += [("570.124.06", ["6.1", "12.0"]), ("550.54.15", ["3.7", "8.0"]), ("580.65.06", ["7.0", "10.0"])]
    return out


@pytest.mark.parametrize("driver,gpus", _cases(), ids=lambda x: x if isinstance(x, str) else "+".join(x))
def test_advise_the_recipe_and_the_check_choose_the_same_torch_build(driver, gpus):
    facts = machine(driver, gpus)
    t = target_from_facts(facts)
    assert t.gpu_ccs == tuple(sorted(set(gpus), key=Version))
    # advise judges the builds with install's pre-flight (as the command line asks it on a machine's facts): a build
    # only a check refuses (torch 1.5's CUDA 10.2 reaching Blackwell through PTX JIT only, compat.arch-vs-builds)
    # is neither recommended nor installed
    answer = advise(t.merged(python=None), ["torch"], preflight.build_judge(facts)).frameworks[0]
    chosen = (answer.release, answer.variant) if answer.command else None
    got = _recipe_choice(facts)
    assert got == chosen
    suggested = compat.suggest_torch(facts, compat.Driver(facts), gpus)
    if chosen is not None and suggested is not None and suggested[0] == chosen[0]:
        assert suggested[1]["tag"] == chosen[1]


def test_a_build_must_carry_code_for_every_gpu_of_a_mixed_machine():
    # A Pascal card beside a Blackwell one: cu128 builds have no sm_61, cu126 ones no sm_120.
    facts = machine("570.124.06", ["6.1", "12.0"])
    answer = advise(target_from_facts(facts), ["torch"]).frameworks[0]
    single = advise(target_from_facts(machine("570.124.06", ["6.1"])), ["torch"]).frameworks[0]
    assert (answer.release, answer.variant) != (single.release, single.variant)
    if answer.command:
        var = next(v for r in matrix.load("torch") if r["version"] == answer.release for v in r["variants"]
                   if v["tag"] == answer.variant)
        from envdoctor.matrix.frameworks import torch_supports_arch

        assert torch_supports_arch(var, "6.1") and torch_supports_arch(var, "12.0")


def test_there_is_one_target_class():
    from envdoctor import advise as advise_module
    from envdoctor import target

    assert advise_module.Target is target.Target is Target


# --------------------------------------------------------------------------- jax, TensorFlow and PyTorch
# `envdoctor advise` and `envdoctor install jax|tensorflow|pytorch --dry-run` on the same machine must install the same
# build: the same release, the same pip requirements (the CUDA extra, a cuDNN pin an older GPU needs) and the
# same package source.  The machines are every capture in tests/machines (rebuilt from public reports, see its
# README) and tests/live (captured on a real H100), plus advise-style ones from the probes over an NVML answer:
# a K80 on driver 470 (R470 is the last branch for Kepler), an A100 on 535 (CUDA 12.2) and a machine with no
# NVIDIA GPU (no NVML, an empty PCI bus), and an H100 on driver 580 whose interpreter is Python 3.10.

HERE = os.path.dirname(os.path.abspath(__file__))


def _captures() -> List[str]:
    out = []
    for folder in ("machines", "live"):
        for name in sorted(os.listdir(os.path.join(HERE, folder))):
            for file in ("snapshot.json", "snapshot.json.gz"):
                if os.path.isfile(os.path.join(HERE, folder, name, file)):
                    out.append(f"{folder}/{name}/{file}")
    return out


def no_gpu_machine() -> Facts:
    host = make_host(files={"/etc/os-release": OS_RELEASE}, dirs={"/sys/bus/pci/devices": []})
    return Facts(f for r in run_probes(host, only=["os", "driver", "gpu"], parallel=False) for f in r.facts)


SYNTHETIC = {"k80-driver470": lambda: machine("470.82.01", ["3.7"]),
             "a100-driver535": lambda: machine("535.54.03", ["8.0"]), "no-gpu": no_gpu_machine,
             # Python 3.10 (Ubuntu 22.04's) on a current driver: the newest torch (2.15) needs Python >= 3.11
             "h100-driver580-python3.10": lambda: machine("580.65.06", ["9.0"], python="3.10.12")}


@functools.lru_cache(maxsize=None)
def _facts(name: str) -> Facts:
    if name in SYNTHETIC:
        return SYNTHETIC[name]()
    path = os.path.join(HERE, name)
    return Facts(f for r in run_probes(SnapshotHost(load_snapshot(path), name)) for f in r.facts)


def _pip(tokens: List[str]) -> Tuple[FrozenSet[Tuple[str, FrozenSet[str]]], FrozenSet[str], Dict[str, str]]:
    """(the framework requirements as (name, extras), the extra pins, where pip looks) of `pip install ...`."""
    names, pins, where = set(), set(), {}
    it = iter(tokens)
    for tok in it:
        if tok in ("-f", "--find-links", "--index-url", "-i", "--extra-index-url"):
            where[{"-f": "--find-links", "-i": "--index-url"}.get(tok, tok)] = next(it)
        elif not tok.startswith("-"):
            r = Requirement(tok)
            if r.name.startswith("nvidia-"):
                pins.add(str(r))
            else:
                names.add((r.name, frozenset(r.extras)))
    return frozenset(names), frozenset(pins), where


def _advised(facts: Facts, framework: str, interpreter: bool):
    t = target_from_facts(facts)
    if not interpreter:  # --python names the interpreter: its version is checked when the plan runs
        t = dataclasses.replace(t, python=None)
    answer = advise(t, [framework])
    if answer.cpu_builds is not None:
        cmd = next(c["command"] for c in answer.cpu_builds if c["framework"] == framework)
        return "cpu", None, _pip(shlex.split(cmd)[2:])
    f = answer.frameworks[0]
    if not f.command:
        return None
    return "cuda", f.release, _pip(shlex.split(f.command)[2:])


def _python_admits(framework: str, release: str, python: str) -> bool:
    """Whether the matrix's Python range of that release admits ``python`` (unknown range: yes)."""
    spec = next((c.python_spec for c in candidates(framework) if c.release == release), None)
    return python_admits(spec, python) is not False


def _planned(facts: Facts, component: str, interpreter: bool):
    request = Request(component=component, version=None, method="pip", python=None if interpreter else PY)
    try:
        recipe = {"jax": jax, "tensorflow": tensorflow, "pytorch": pytorch}[component]
        plan = recipe.plan(request, parse_target("ubuntu22.04"), facts)
        preflight.check(plan, facts)  # what `install` refuses on the facts after the plan
    except RecipeError:
        return None
    argv = next(s.action.argv for s in plan.steps if s.id == "pip-install")
    # the plan also reinstalls torch's companions found beside it (torchvision, torchaudio), unpinned, from the same
    # index; advise's line names the framework: the build compared is the framework's
    companions = {"framework." + n for n in ("torchvision", "torchaudio")}
    args = [a for a in argv[argv.index("install") + 1:] if "framework." + a not in companions]
    names, pins, where = _pip(args)
    if "CPU" in plan.title:  # a CPU plan may pin a release; advise says plain `pip install jax`/`tensorflow`/`torch`
        pinned = any(Requirement(a).specifier for a in argv[argv.index("install") + 1:] if not a.startswith("-")
                     and "://" not in a)
        return "cpu", plan.version if pinned else None, (names, pins, where)
    return "cuda", plan.version, (names, pins, where)


@pytest.mark.parametrize("interpreter", [True, False], ids=["interpreter-from-facts", "python-given"])
@pytest.mark.parametrize("framework,component", [("jax", "jax"), ("tensorflow", "tensorflow"), ("torch", "pytorch")])
@pytest.mark.parametrize("name", _captures() + sorted(SYNTHETIC))
def test_advise_and_the_install_plan_choose_the_same_build(name, framework, component, interpreter):
    facts = _facts(name)
    advised, planned = _advised(facts, framework, interpreter), _planned(facts, component, interpreter)
    if advised is None or planned is None:
        assert advised == planned, (name, advised, planned)
        return
    assert advised[0] == planned[0], (name, advised, planned)
    if advised[0] == "cpu":
        assert advised[2][0] == planned[2][0] and not planned[2][1], (name, advised, planned)
        assert advised[2][2] == planned[2][2], (name, advised, planned)  # the same index (torch: .../whl/cpu)
        py = facts.value("python.version") if interpreter else None
        if planned[1] is not None and py:  # advise's unpinned line lets pip pick one for the interpreter: so must a pin
            assert _python_admits(framework, planned[1], py), (name, planned, py)
        return
    if framework == "jax":  # advise names a jax row by its version range
        assert SpecifierSet(advised[1]) == SpecifierSet(planned[1]), (name, advised, planned)
    else:
        assert advised[1] == planned[1], (name, advised, planned)
    assert advised[2] == planned[2], (name, advised, planned)


def test_the_comparison_covers_old_drivers_cpu_machines_and_a_cudnn_pin():
    """The machines above include ones where the two used to disagree: the recipes planned the newest release
    for drivers that cannot run it (R470, R520), which advise never named."""
    seen = {name: (_advised(_facts(name), "tensorflow", True), _advised(_facts(name), "jax", True))
            for name in ("machines/centos7-a100-cuda115/snapshot.json",
                         "machines/ubuntu2004-rtx3060-cuda118/snapshot.json", "k80-driver470", "no-gpu")}
    assert seen["machines/centos7-a100-cuda115/snapshot.json"][0][1] == "2.6"  # Python 3.6, driver 470
    assert seen["machines/ubuntu2004-rtx3060-cuda118/snapshot.json"][1][1] == "<0.4.14,>=0.4.7"  # Python 3.8
    assert seen["k80-driver470"][0][1] == "2.14" and seen["k80-driver470"][1] is None  # jax needs sm 5.2
    assert seen["no-gpu"][0][0] == seen["no-gpu"][1][0] == "cpu"
    pascal = machine("580.65.06", ["6.1"])  # cuDNN 9.11+ dropped Pascal: advise pins it, so must the plan
    assert _advised(pascal, "tensorflow", False) == _planned(pascal, "tensorflow", False)
    assert "nvidia-cudnn-cu12<9.11" in _planned(pascal, "tensorflow", False)[2][1]

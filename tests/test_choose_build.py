"""One decision of "which torch build fits this driver and these GPUs": ``advise`` answers it, the pytorch
recipe installs it, and the compatibility check's fix suggests it, all through ``advise.choose_build``.

The machines are every GPU compute capability of gpus.json on the GA driver of each CUDA release from 11.4
on, read by the probes from an NVML answer (no GPU runs in CI: tests/conftest.make_host is the seam the
live probes use), plus mixed-GPU machines; the three callers must name the same release and variant."""

from __future__ import annotations

from typing import List, Optional

import pytest
from packaging.version import Version

from envdoctor import matrix
from envdoctor.advise import advise, target_from_facts
from envdoctor.checks import compat
from envdoctor.facts import Facts
from envdoctor.matrix import hardware as hw
from envdoctor.probes import run_probes
from envdoctor.recipes import RecipeError, Request, Target, parse_target, pytorch
from tests.conftest import make_host

OS_RELEASE = 'ID=ubuntu\nVERSION_ID="22.04"\nNAME="Ubuntu"\n'
PY = "/opt/venv/bin/python"


def machine(driver: str, ccs: List[str]) -> Facts:
    data = {"init": {"value": True}, "system.driver_version": {"value": driver}, "device_count": {"value": len(ccs)}}
    for i, cc in enumerate(ccs):
        data["device.%d.handle" % i] = {"value": True}
        data["device.%d.name" % i] = {"value": "NVIDIA GPU"}
        data["device.%d.compute_capability" % i] = {"value": [int(p) for p in cc.split(".")]}
    host = make_host(files={"/etc/os-release": OS_RELEASE, "/sys/module/nvidia/version": driver + "\n"},
                     nvml={"data": data})
    return Facts(f for r in run_probes(host, only=["os", "driver", "gpu"], parallel=False) for f in r.facts)


def drivers() -> List[str]:
    return sorted({r["min_driver_linux"] for r in hw.cuda_releases() if Version(r["version"]) >= Version("11.4")},
                  key=Version)


def ccs() -> List[str]:
    return sorted({g["cc"] for g in matrix.load("gpus")}, key=Version)


def _recipe_choice(facts: Facts) -> Optional[tuple]:
    try:
        plan = pytorch.plan(Request(component="pytorch", version=None, method="pip", python=PY),
                            parse_target("ubuntu22.04"), facts)
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
    answer = advise(t.merged(python=None), ["torch"]).frameworks[0]
    chosen = (answer.release, answer.variant) if answer.command else None
    assert _recipe_choice(facts) == chosen
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

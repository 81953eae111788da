"""The install recipes and the checks answer the same rules from one home (docs/DESIGN.md, "One home per fact").

Each grid is generated from the matrix itself (every GPU architecture of ``gpu_arch.json`` x every driver branch
the driver recipe knows x both module flavours; every CUDA major of ``cudnn.json`` / the NCCL builds x the CUDA
versions of Table 3): a recipe refusing what the check accepts, or the reverse, fails here naming the cell. No
machine is replayed: the recipes and checks are pure functions of the facts, given here as a GPU and a driver
would report them (NVML's ``compute_capability``, ``driver.cuda_version``).
"""

from __future__ import annotations

from typing import List, Optional

import pytest
from packaging.version import Version

from envdoctor.checks import driver_support
from envdoctor.checks.compat import Driver
from envdoctor.facts import Facts, ok
from envdoctor.findings import Finding
from envdoctor.matrix import gpu_support, load
from envdoctor.matrix import hardware as hw
from envdoctor.recipes import RecipeError, Request, cuda_redist, driver_cuda_major, driver_runs_build, parse_target
from envdoctor.recipes import cudnn as cudnn_recipe
from envdoctor.recipes import driver as driver_recipe
from envdoctor.recipes import nccl as nccl_recipe

UBUNTU = parse_target("ubuntu22.04")
RHEL = parse_target("rhel9")


def _facts(**kv) -> Facts:
    return Facts([ok(k, v, "test") for k, v in kv.items()])


def _ccs() -> List[str]:
    return sorted({str(r["cc"]) for r in load("gpu_arch")}, key=Version)


def _gpu_facts(cc: str) -> Facts:
    return _facts(**{"gpu.count": 1, "gpu.0.compute_capability": cc})


def _refusal(request: Request, target, facts: Facts) -> Optional[str]:
    try:
        driver_recipe.plan(request, target, facts)
    except RecipeError as e:
        return str(e)
    return None


def _judged(gpu: gpu_support.Gpu, flavor: Optional[str], where: str, branch: int, version: str) -> List[Finding]:
    """driver-support's findings for a GPU the installed driver (``branch``, modules of ``flavor``) does not drive:
    the check asks gpu_support.support (checks.gpus.refusals) and words its answer (driver_support._judge)."""
    return driver_support._judge(Facts(), gpu, gpu_support.support(gpu, branch, flavor), where, branch, version)


def _check_codes(cc: str, branch: str, flavor: Optional[str]) -> List[str]:
    """driver-support's verdict on a GPU of ``cc`` that a driver of ``branch`` with modules of ``flavor`` does not
    drive, from its architecture alone (no PCI device ID: NVIDIA's per-GPU lists are not asked)."""
    gpu = driver_support._Gpu("0000:01:00.0", None, cc, None)
    found = _judged(gpu, flavor, "the nvidia module installed for this kernel", int(branch),
                                  branch + ".00.00")
    return [f.code for f in found]


@pytest.mark.parametrize("cc", _ccs())
def test_driver_branch_vs_gpu_generation_recipe_and_check_agree(cc):
    """Every branch the recipe knows, on a GPU of every architecture: the recipe refuses a branch exactly where the
    matrix's one rule (hardware.branch_drives) says it cannot drive the GPU, the rule the driver-branch check's
    suggestions and the recipe's own choice use; where the branch is past the architecture's last
    (hardware.past_last_branch), driver-support says driver.gpu_needs_legacy_branch and the recipe refuses."""
    facts = _gpu_facts(cc)
    for branch in driver_recipe.versions():
        refused = _refusal(Request("driver", branch, "repo", options={"flavor": "proprietary"}), RHEL, facts)
        drives = hw.branch_drives(branch, cc)
        assert (refused is not None and "cannot drive this machine's GPUs" in refused) == (drives is False), (
            cc, branch, refused)
        too_new = hw.past_last_branch(int(branch), cc) is not None
        check_says = "driver.gpu_needs_legacy_branch" in _check_codes(cc, branch, "proprietary")
        assert check_says == too_new, (cc, branch)
        if too_new:
            assert refused is not None, (cc, branch)
    # the branch the recipe chooses itself drives the GPU (by the same rule), or it refuses to choose
    for target in (UBUNTU, RHEL):
        try:
            chosen, _ = driver_recipe.choose_branch(target, [cc])
        except RecipeError as e:
            assert "drives this machine's GPUs" in str(e), (cc, str(e))
            continue
        assert chosen is None or hw.branch_drives(chosen, cc) is not False, (cc, target.label, chosen)


@pytest.mark.parametrize("cc", _ccs())
def test_pinned_branch_refused_in_the_checks_words_for_a_gpu_nvml_reports(cc):
    """A GPU NVML reports (its address, name and compute capability) and every branch the recipe knows: where the
    branch cannot drive it by its architecture, ``install driver --version B`` refuses naming that GPU in the words
    driver-support's finding uses for it (matrix.gpu_support's reason), and where the branch drives it, neither
    refuses on the branch."""
    facts = _facts(**{"gpu.count": 1, "gpu.0.compute_capability": cc, "gpu.0.name": "NVIDIA Test GPU",
                      "gpu.0.pci_bus_id": "00000000:3B:00.0"})
    gpu = gpu_support.machine_gpus(facts)[0]
    for branch in driver_recipe.versions():
        refused = _refusal(Request("driver", branch, "repo", options={"flavor": "proprietary"}), RHEL, facts)
        said = gpu_support.branch_support(gpu, int(branch))
        found = _judged(gpu, "proprietary", "the nvidia module installed for this kernel",
                                      int(branch), branch + ".00.00")
        if said is None:
            assert refused is None or "does not support this machine's" not in refused, (cc, branch, refused)
            assert not [f for f in found if f.code in (gpu_support.LEGACY, gpu_support.TOO_NEW)], (cc, branch)
            continue
        assert refused is not None and f"driver branch {branch} does not support this machine's {gpu.label()}: " \
            f"{said.why}" in refused, (cc, branch, refused)
        assert [f.code for f in found] == [said.code] and said.why in found[0].detail, (cc, branch, found)


@pytest.mark.parametrize("cc", _ccs())
def test_open_modules_before_turing_recipe_and_check_agree(cc):
    """flavor=open on every architecture, with a branch that drives it: the recipe refuses the open modules exactly
    where driver-support finds driver.open_modules_unsupported_gpu (both: hardware.open_modules_drive), and
    without --option flavor it plans the proprietary ones there."""
    facts = _gpu_facts(cc)
    branches = [b for b in driver_recipe.versions() if hw.branch_drives(b, cc) is not False]
    assert branches, cc
    branch = branches[-1]
    refused = _refusal(Request("driver", branch, "repo", options={"flavor": "open"}), RHEL, facts)
    recipe_refuses = refused is not None and "open kernel modules cannot drive" in refused
    check_refuses = "driver.open_modules_unsupported_gpu" in _check_codes(cc, branch, "open")
    assert recipe_refuses == check_refuses == (hw.open_modules_drive(cc) is False), (cc, branch, refused)
    plan = driver_recipe.plan(Request("driver", branch, "repo"), RHEL, facts)
    flavor_chosen = "proprietary" if any(s.title.startswith("install the NVIDIA driver (proprietary")
                                         for s in plan.steps) else "open"
    if hw.open_modules_drive(cc) is False:
        assert flavor_chosen == "proprietary", (cc, branch)
        assert "driver.open_modules_unsupported_gpu" not in _check_codes(cc, branch, flavor_chosen)


@pytest.mark.parametrize("cc", _ccs())
def test_open_only_gpus_recipe_and_check_agree(cc):
    """flavor=proprietary on every architecture, with a branch that drives it: the recipe refuses the proprietary
    modules exactly where driver-support finds driver.open_modules_required (both: hardware.proprietary_modules_drive,
    Blackwell on), and without --option flavor it plans the open ones there."""
    facts = _gpu_facts(cc)
    branches = [b for b in driver_recipe.versions() if hw.branch_drives(b, cc) is not False]
    assert branches, cc
    branch = branches[-1]
    refused = _refusal(Request("driver", branch, "repo", options={"flavor": "proprietary"}), RHEL, facts)
    recipe_refuses = refused is not None and "proprietary kernel modules cannot drive" in refused
    check_refuses = "driver.open_modules_required" in _check_codes(cc, branch, "proprietary")
    assert recipe_refuses == check_refuses == (hw.proprietary_modules_drive(cc) is False), (cc, branch, refused)
    if hw.proprietary_modules_drive(cc) is False:
        plan = driver_recipe.plan(Request("driver", branch, "repo"), RHEL, facts)
        assert any(s.title.startswith("install the NVIDIA driver (open") for s in plan.steps), (cc, branch)


def test_a_machine_no_single_flavor_drives_is_refused():
    """A Pascal and a Blackwell GPU in one machine: the open modules do not drive the first, the proprietary ones
    not the second, so no plan installs a driver that leaves one GPU undriven."""
    facts = _facts(**{"gpu.count": 2, "gpu.0.compute_capability": "6.1", "gpu.1.compute_capability": "12.0"})
    for options in ({}, {"flavor": "open"}, {"flavor": "proprietary"}):
        refused = _refusal(Request("driver", None, "repo", options=options), RHEL, facts)
        assert refused is not None, options


def _driver_cudas() -> List[Optional[str]]:
    """Every CUDA major.minor of Table 3 (what a driver reports as its CUDA version), and none reported."""
    return sorted({"%d.%d" % Version(r["version"]).release[:2] for r in hw.cuda_releases()}, key=Version) + [None]


def _cudnn_majors() -> List[str]:
    return sorted({str(Version(c).major) for r in load("cudnn") for c in r["cuda"]}, key=int)


@pytest.mark.parametrize("supports", _driver_cudas())
def test_library_cuda_major_vs_driver_recipes_and_check_agree(supports):
    """Every CUDA major a cuDNN or NCCL build is made for, against every CUDA a driver reports: the recipes'
    "this driver runs that build" is compat.driver-vs-cuda's verdict on a need of that major (its Driver, of the
    same facts), both hardware.driver_runs; cuDNN and NCCL plan the newest build the driver runs, or refuse when
    it runs none."""
    _library_recipes_agree_with_check(_facts(**({"driver.cuda_version": supports} if supports else {})))


def _driver_versions() -> List[str]:
    """Every Linux driver Table 3 names (each CUDA release's minimum and its updates'), one below the oldest, and
    a version Table 3 cannot place (garbled)."""
    drivers = {str(d) for r in hw.cuda_releases()
               for d in [r["min_driver_linux"], *r.get("driver_by_update", {}).values()]}
    return sorted(drivers, key=Version) + ["340.108", "not-a-version"]


@pytest.mark.parametrize("version", _driver_versions())
def test_library_recipes_read_table_3_as_the_check_does(version):
    """A driver that reports no CUDA version (NVML's answer missing, or a driver installed but not loaded), of
    every version Table 3 names: the recipes read Table 3 for it as compat.driver-vs-cuda does (one reading,
    hardware.driver_of), so a 470 driver (CUDA 11.4) gets cuDNN's CUDA 11 build, not a CUDA 12 one it cannot run;
    on WSL, whose driver version Table 3 does not place, neither knows."""
    facts = _facts(**{"driver.version": version})
    _library_recipes_agree_with_check(facts)
    assert driver_cuda_major(facts) == (Driver(facts).cuda[0] if Driver(facts).known else 0), version
    wsl = _facts(**{"driver.version": version, "os.wsl": "WSL2"})
    assert not Driver(wsl).known and driver_cuda_major(wsl) == 0
    _library_recipes_agree_with_check(wsl)


def _library_recipes_agree_with_check(facts: Facts) -> None:
    supports = facts.value("driver.cuda_version") or facts.value("driver.version")
    check = Driver(facts)
    for major in _cudnn_majors() + sorted({m for b in nccl_recipe.RELEASES.values() for m in b}, key=int):
        recipe_runs = driver_runs_build(facts, major)
        check_runs = not check.known or check.verdict((int(major), None)) != "too_old"
        assert recipe_runs == check_runs, (supports, major)
    for row in load("cudnn"):
        majors = sorted({str(Version(c).major) for c in row["cuda"]}, key=int)
        runs = [m for m in majors if not check.known or check.verdict((int(m), None)) != "too_old"]
        request = Request("cudnn", row["version"], "pip", python="/usr/bin/python3")
        try:
            plan = cudnn_recipe.plan(request, UBUNTU, facts)
        except RecipeError as e:
            assert not runs, (supports, row["version"], str(e))
            assert "the installed driver runs CUDA" in str(e)
            continue
        assert runs, (supports, row["version"])
        # a driver that reports no CUDA: CUDA 12 (the frameworks' wheels), else the newest build
        want = runs[-1] if check.known else ("12" if "12" in majors else majors[-1])
        assert plan.title.endswith("CUDA %s)" % want), (supports, row["version"], plan.title)
    for version, builds in nccl_recipe.RELEASES.items():
        runs = [m for m in sorted(builds, key=int) if not check.known or check.verdict((int(m), None)) != "too_old"]
        try:
            plan = nccl_recipe.plan(Request("nccl", version, "repo"), UBUNTU, facts)
        except RecipeError as e:
            assert not runs, (supports, version, str(e))
            continue
        assert runs and plan.title.endswith("+cuda%s (repo) on %s" % (builds[runs[-1]], UBUNTU.describe)), (
            supports, version, plan.title)


def test_a_470_driver_reporting_no_cuda_gets_cuda_11_builds():
    """What a user notices: driver 470.82.01 (Table 3: CUDA 11.4) that reports no CUDA version. diagnose says a
    CUDA 12 build is too new for it, and install now plans cuDNN's CUDA 11 build and the cuDNN archive's cuda11
    variant instead of the CUDA 12 ones it planned before."""
    facts = _facts(**{"driver.version": "470.82.01"})
    assert Driver(facts).verdict((12, None)) == "too_old"
    assert not driver_runs_build(facts, "12") and driver_runs_build(facts, "11")
    assert "CUDA 11" in cudnn_recipe.plan(Request("cudnn", "9.1.0", "pip", python="/usr/bin/python3"), UBUNTU,
                                          facts).title
    assert cuda_redist.variant_for_driver(facts) == 11


@pytest.mark.parametrize("variants", [("cuda11", "cuda12"), ("cuda11", "cuda12", "cuda13"), ("cuda12",),
                                      ("cuda11.8", "cuda12.9")])
def test_cuda_redist_variant_by_the_check_rule(variants):
    """The cuDNN archives' variants (redistrib JSON: ``cuda11``, ``cuda12``; an ``X.Y`` spelling too) against every
    CUDA major a driver runs: the archive chosen is the newest variant compat.driver-vs-cuda says the driver runs
    (compared as versions, never digits glued into an int: ``cuda11.8`` is CUDA 11, not 118), or none."""
    for drv in range(10, 15):
        check = Driver(_facts(**{"driver.cuda_version": "%d.0" % drv}))
        runs = [v for v in variants if check.verdict((cuda_redist.variant_cuda(v).major, None)) != "too_old"]
        assert [v for v in variants if cuda_redist.variant_runs(v, drv)] == runs, (variants, drv)
    assert cuda_redist.variant_cuda("cudaX") is None and not cuda_redist.variant_runs("cudaX", 12)


# -- NVIDIA's per-GPU lists: every device ID they name x every branch ------------------------------------------------

def _listed_ids() -> List[str]:
    """Every device ID NVIDIA's lists name (the matrix's ``gpu_pci_ids``), each once."""
    return sorted({dev for r in load("gpu_pci_ids") for dev in r["devices"]})


_CHUNKS = 8


def _pci_facts(device: str) -> Facts:
    """A machine whose GPU the driver does not drive yet (no NVML answer): only the PCI listing names it, with its
    device ID as the GPU probe writes it (``10de:XXXX``, from /sys/bus/pci/devices/*/device)."""
    return _facts(**{"gpu.pci_devices": [{"bus_id": "0000:01:00.0", "device_id": "10de:" + device,
                                          "driver": None}]})


@pytest.mark.parametrize("chunk", range(_CHUNKS))
def test_every_listed_gpu_recipe_and_check_agree(chunk):
    """Every PCI device ID of NVIDIA's lists (the open modules' "Compatible GPUs", the README's current list and its
    legacy lists) x every branch the driver recipe knows x both flavours: the recipe refuses to plan a driver exactly
    where driver-support says that driver does not support the GPU (both: matrix.gpu_support), and says why in the
    check's own words. Without --option flavor, the recipe plans a flavour the check does not object to."""
    for device in _listed_ids()[chunk::_CHUNKS]:
        facts = _pci_facts(device)
        gpu = driver_support._Gpu("0000:01:00.0", "10de:" + device, None, None)
        for branch in driver_recipe.versions():
            for flavor in ("open", "proprietary"):
                refused = _refusal(Request("driver", branch, "repo", options={"flavor": flavor}), RHEL, facts)
                found = _judged(gpu, flavor, "the nvidia module installed for this kernel",
                                              int(branch), branch + ".00.00")
                assert (refused is not None) == bool(found), (device, branch, flavor, refused, found)
                if found:
                    said = gpu_support.support(gpu, int(branch), flavor)
                    assert said is not None and said.code == found[0].code, (device, branch, flavor)
                    assert said.why in refused and said.why in found[0].detail, (device, branch, flavor)
            try:
                plan = driver_recipe.plan(Request("driver", branch, "repo"), RHEL, facts)
            except RecipeError as e:
                assert "does not support this machine's" in str(e), (device, branch, str(e))
                continue
            chosen = "proprietary" if any(s.title.startswith("install the NVIDIA driver (proprietary")
                                          for s in plan.steps) else "open"
            assert not _judged(gpu, chosen, "the nvidia module installed for this kernel",
                                             int(branch), branch + ".00.00"), (device, branch, chosen)


def test_a_legacy_listed_gpu_is_refused_a_newer_branch_in_the_readme_s_words():
    """What a user notices: a GeForce GTX 680 (10de:1180, Kepler; the 555.58.02 README's Appendix A lists it
    under the 470.xx legacy driver) asked to install R535 with the driver not loaded: install refuses, saying what
    diagnose would say, and points at R470."""
    facts = _pci_facts("1180")
    with pytest.raises(RecipeError) as e:
        driver_recipe.plan(Request("driver", "535", "repo", options={"flavor": "proprietary"}), RHEL, facts)
    assert "NVIDIA's README lists it under the 470.xx legacy driver" in str(e.value)
    assert e.value.alternatives == ["envdoctor install driver --version 470"]


@pytest.mark.parametrize("target", ["rhel8", "ubuntu22.04", "ubuntu20.04"])
def test_every_listed_gpu_unpinned_plan_is_one_the_check_accepts(target):
    """``install driver`` without --version, for every device ID of NVIDIA's lists: the branch and flavour it plans
    are ones driver-support accepts for that GPU (a GPU the README lists under a legacy driver gets that branch where
    the repository carries it), or it refuses, saying why in the check's words."""
    system = parse_target(target)
    for device in _listed_ids():
        gpu = driver_support._Gpu("0000:01:00.0", "10de:" + device, None, None)
        try:
            plan = driver_recipe.plan(Request("driver", None, "repo"), system, _pci_facts(device))
        except RecipeError as e:
            # the check too says no branch the repository carries supports it: in its words, or (a GPU of a known
            # architecture) choose_branch's, which names the architecture's last branch and the repository's range
            said = gpu_support.branch_support(gpu, driver_recipe.planned_branch(system, None))
            assert said is not None and (said.why in str(e) or "is packaged for this system" in str(e)), (
                device, target, str(e))
            continue
        # "newest": the newest branch the system's repository carries (Ubuntu 20.04's: R575)
        branch = plan.version if plan.version != "latest" else str(driver_recipe.planned_branch(system, None))
        chosen = "proprietary" if any(s.title.startswith("install the NVIDIA driver (proprietary")
                                      for s in plan.steps) else "open"
        assert not _judged(gpu, chosen, "the nvidia module installed for this kernel",
                                         int(branch), branch + ".00.00"), (device, target, branch, chosen)


def test_a_legacy_listed_gpu_gets_its_legacy_branch_where_the_repository_carries_it():
    """GeForce GTX 680 (10de:1180), driver not loaded, ``install driver`` without --version: R470 on RHEL 8, whose
    CUDA repository carries it (cuda.json: CUDA 11.4's distributions), told in the README's words; on Ubuntu 22.04,
    whose repository starts at R515, a refusal that says so."""
    plan = driver_recipe.plan(Request("driver", None, "repo"), parse_target("rhel8"), _pci_facts("1180"))
    assert plan.version == "470"
    assert any("NVIDIA's README lists it under the 470.xx legacy driver" in n for n in plan.notes)
    with pytest.raises(RecipeError) as e:
        driver_recipe.plan(Request("driver", None, "repo"), UBUNTU, _pci_facts("1180"))
    assert "NVIDIA's README lists it under the 470.xx legacy driver" in str(e.value) and "515" in str(e.value)


def test_a_pascal_gpu_on_ubuntu_2004_gets_the_newest_driver_its_repository_carries():
    """A Tesla P100 (10de:15f9) the driver does not drive, Ubuntu 20.04 (NVIDIA's repository: R450 to R575):
    ``install driver`` plans the repository's newest, R575, which drives Pascal (R580 is its last branch), with the
    proprietary modules (the open modules' list does not name the P100): not a refusal measured against R620, a
    branch the repository does not carry (the corpus machine torch1121-cu102-on-driver390-cuda91-aliyun)."""
    system = parse_target("ubuntu20.04")
    assert driver_recipe.planned_branch(system, None) == 575
    plan = driver_recipe.plan(Request("driver", None, "repo"), system, _pci_facts("15f9"))
    assert plan.version == "latest"
    assert any(s.title == "install the NVIDIA driver (proprietary, newest)" for s in plan.steps)

"""Driver branches (matrix area driver_branches) and the driver.branch_end_of_life check.

Branch types and ends of life are NVIDIA's Table 2 "CUDA and Drivers" of the R615 and R620 editions of
https://docs.nvidia.com/datacenter/tesla/drivers/ (R535 LTSB June 2026, R580 LTSB June 2028, R595 PB March
2027, R610 NFB August 2026, R620 LTSB September 2029). Machines are the captured ones in tests/machines
and the live H100 capture; the conftest pins "today" to 2026-11-25.
"""

from __future__ import annotations

import datetime

from envdoctor.matrix import hardware as hw
from envdoctor.report import diagnose
from tests.test_machines import load_machine


def _codes(name):
    return {f.code: f for f in diagnose(load_machine(name)).findings}


def test_support_ends_with_the_eol_month():
    assert hw.branch_past_eol("535.104.05", datetime.date(2026, 6, 30)) is False
    assert hw.branch_past_eol("535.104.05", datetime.date(2026, 7, 1)) is True
    assert hw.branch_past_eol("580.65.06", datetime.date(2026, 11, 25)) is False
    assert hw.branch_past_eol("560.35.03", datetime.date(2026, 11, 25)) is None  # not a row: unknown


def test_supported_branches_prefer_long_term_support_and_know_the_gpu():
    day = datetime.date(2026, 11, 25)
    assert [r["branch"] for r in hw.supported_branches(day)] == ["580", "620", "595"]
    # Rubin (cc 10.7) is first targeted by CUDA 13.4 (driver 615): only R620 knows it
    assert [r["branch"] for r in hw.supported_branches(day, "10.7")] == ["620"]


def test_an_r535_machine_is_told_its_branch_ended_and_where_to_go():
    f = _codes("ubuntu2204-a100-mig")["driver.branch_end_of_life"]
    assert f.severity == "info"
    assert "R535 long-term support branch, whose support ended in June 2026" in f.detail
    # planned by the driver recipe for this machine (Ubuntu 22.04 pins R580 with NVIDIA's pinning package)
    assert f.fix.install == "envdoctor install driver --version 580"
    assert f.source["url"].startswith("https://docs.nvidia.com/datacenter/tesla/drivers/615/")


def test_a_supported_branch_gets_no_finding():
    # the live H100 capture runs 580.159.04 (R580 LTSB until June 2028)
    from envdoctor.checks import CheckContext
    from envdoctor.checks.driver_branch import driver_branch_eol
    from envdoctor.facts import Fact, Facts

    facts = Facts([Fact("driver.version", "580.159.04"), Fact("gpu.count", 1),
                   Fact("gpu.0.compute_capability", "9.0")])
    assert list(driver_branch_eol(CheckContext(facts, []))) == []
    facts = Facts([Fact("driver.version", "garbled!")])
    assert list(driver_branch_eol(CheckContext(facts, []))) == []


def test_an_ended_branch_on_a_mixed_machine_is_pointed_at_a_branch_that_drives_every_gpu():
    """A GTX 1080 (Pascal, last branch R580) beside an RTX 3090 (Ampere) on driver 535: R620 and R595 know the
    Ampere card but not the Pascal one, so only R580 may be named (they were, when only the newest GPU counted)."""
    from envdoctor.checks import CheckContext
    from envdoctor.checks.driver_branch import driver_branch_eol
    from envdoctor.facts import Fact, Facts

    mixed = Facts([Fact("driver.version", "535.183.01"), Fact("gpu.count", 2),
                   Fact("gpu.0.compute_capability", "6.1"), Fact("gpu.1.compute_capability", "8.6")])
    (f,) = driver_branch_eol(CheckContext(mixed, []))
    assert "Supported branches that know this machine's GPUs: R580 (" in f.detail
    assert "R620" not in f.detail and "R595" not in f.detail
    assert f.fix.text.startswith("Install a driver of the R580 ")
    ampere = Facts([Fact("driver.version", "535.183.01"), Fact("gpu.count", 1),
                    Fact("gpu.0.compute_capability", "8.6")])
    (g,) = driver_branch_eol(CheckContext(ampere, []))
    assert "R620" in g.detail and "R595" in g.detail


def test_advise_names_supported_branches_for_an_ended_one():
    from envdoctor.advise import Target, advise

    notes = advise(Target(driver="535.104.05", cc="8.0", python="3.12")).cuda.notes
    assert any("branch R535 is past its end of life (2026-06); supported branches that drive this GPU: "
               "R580 (long-term support branch)" in n for n in notes)
    # and names the branch to install, the one diagnose's driver.branch_end_of_life suggests too
    assert any(n.startswith("Recommended driver branch: R580 is the oldest long-term support branch still supported")
               and n.endswith("envdoctor install driver --version 580.") for n in notes)


# --------------------------------------------------------------------------- the last branch of an architecture
# NVIDIA's Unix graphics feature deprecation schedule: R470 is the last branch for Kepler, R580 for Maxwell, Pascal
# and Volta (gpu_arch.json last_driver_branch). Machines: the corpus cases rebuilt from public bug reports.

def _corpus_facts(case):
    from envdoctor.facts import Facts
    from envdoctor.host.snapshot import SnapshotHost, load_snapshot
    from envdoctor.probes import run_probes

    host = SnapshotHost(load_snapshot(f"tests/corpus/{case}/snapshot.json"), case)
    return Facts([f for r in run_probes(host, only=["os", "driver", "gpu"], parallel=False) for f in r.facts])


KEPLER = "torch131-conda-k80-plus-2x-k40c"    # one Tesla K80 (two sm_37 GPUs) and two Tesla K40c (sm_35)
PASCAL = "paddle251-post116-on-gtx1080-pascal"  # a GeForce GTX 1080 (sm_61)


def test_a_branch_drives_a_gpu_between_its_first_and_its_last_branch():
    assert hw.branch_drives("470", "3.7") is True
    assert hw.branch_drives("495", "3.7") is False      # after R470, Kepler's last
    assert hw.branch_drives("580", "6.1") is True
    assert hw.branch_drives("590", "6.1") is False      # after R580, Pascal's last
    assert hw.branch_drives("470", "12.0") is False     # Blackwell needs R570 (CUDA 12.8)
    assert hw.branch_drives("620", "8.0") is True
    assert hw.branch_drives("not a branch", "8.0") is None
    day = datetime.date(2026, 11, 25)
    assert [r["branch"] for r in hw.supported_branches(day, "6.1")] == ["580"]
    assert hw.supported_branches(day, "3.7") == []


def test_recommended_branch_is_supported_drives_every_gpu_and_is_packaged():
    day = datetime.date(2026, 11, 25)
    row, why = hw.recommend_branch(["6.1", "8.6"], day)
    assert row["branch"] == "580" and "last branch for Pascal" in why
    row, why = hw.recommend_branch(["3.7", "3.5"], day)
    assert row["branch"] == "470" and "past its end of life (2024-07)" in why
    # Ubuntu 22.04's NVIDIA repository starts at R515: nothing there drives Kepler
    row, why = hw.recommend_branch(["3.7"], day, packaged=hw.branches_packaged("ubuntu", "22.04"))
    assert row is None and "R515" in why
    # Ubuntu 20.04's repository ends at R575, before any supported branch: its newest still drives Pascal
    row, why = hw.recommend_branch(["6.1"], day, packaged=hw.branches_packaged("ubuntu", "20.04"))
    assert row is None and "R575, which does" in why


def _plan(target, facts, version=None, **options):
    from envdoctor.recipes import Request, load_recipe, parse_target

    return load_recipe("driver").plan(Request("driver", version, None, options=options), parse_target(target), facts)


def _argv(plan):
    return [" ".join(s.action.argv) for s in plan.steps if hasattr(s.action, "argv")]


def test_install_driver_for_a_pascal_gpu_pins_r580_with_the_proprietary_modules():
    facts = _corpus_facts(PASCAL)
    plan = _plan("ubuntu22.04", facts)
    argv = _argv(plan)
    assert "apt-get install -y nvidia-driver-pinning-580" in argv
    assert "apt-get install -y cuda-drivers" in argv and not any("nvidia-open" in a for a in argv)
    assert any(n.startswith("Driver branch 580 chosen: R580") for n in plan.notes)
    assert any("predates Turing" in n for n in plan.notes)


def test_install_driver_refuses_what_cannot_drive_the_gpu():
    import pytest

    from envdoctor.recipes import RecipeError

    facts = _corpus_facts(PASCAL)
    with pytest.raises(RecipeError) as err:
        _plan("ubuntu22.04", facts, "590")
    # in driver-support's words for this GPU (matrix.gpu_support), naming it and the branch that still drives it
    said = str(err.value)
    assert "does not support this machine's GPU 0000:01:00.0 (NVIDIA GeForce GTX 1080, Pascal" in said, said
    assert "R580 is the last driver branch for Pascal GPUs" in said, said
    assert "--version 580" in " ".join(err.value.alternatives)
    with pytest.raises(RecipeError) as err:
        _plan("ubuntu22.04", facts, "580", flavor="open")
    assert "open kernel modules" in str(err.value)
    with pytest.raises(RecipeError) as err:
        _plan("ubuntu22.04", _corpus_facts(KEPLER))  # NVIDIA's 22.04 repository starts after R470
    assert "R470" in str(err.value)


def test_install_driver_for_kepler_gpus_on_rhel8_pins_r470():
    plan = _plan("rhel8", _corpus_facts(KEPLER))
    argv = _argv(plan)
    assert "dnf module install -y nvidia-driver:470-dkms" in argv
    assert "dnf versionlock add *nvidia*470*" in argv
    assert any("past its end of life (2024-07)" in n for n in plan.notes)


def test_advise_refuses_every_build_on_a_driver_past_the_gpus_last_branch():
    from envdoctor.advise import Target, advise

    a = advise(Target(driver="590.44.01", cc="6.1", python="3.12"))
    assert a.cuda.driver_branch["branch"] == "580"
    assert any(n.startswith("Recommended driver branch: R580") for n in a.cuda.notes)
    assert all(f.command is None for f in a.frameworks)
    assert all(any("newer than R580, the last driver branch that supports Pascal" in r for r in p["reasons"])
               for f in a.frameworks for p in f.passed_over)

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


def test_advise_names_supported_branches_for_an_ended_one():
    from envdoctor.advise import Target, advise

    notes = advise(Target(driver="535.104.05", cc="8.0", python="3.12")).cuda.notes
    assert any("branch R535 is past its end of life (2026-06); supported branches that know this GPU: "
               "R580 (long-term support branch)" in n for n in notes)

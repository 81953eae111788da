""""Is the driver too old for this CUDA" is decided in one place (envdoctor.matrix.hardware.driver_runs, over
Table 3 of NVIDIA's CUDA release notes in matrix cuda.json): diagnose's compat.driver-vs-cuda and install's
pre-flight (the cuda recipe: recipes.driver.too_old_for) give the same answer on every captured machine.

The drivers are the captured machines' (tests/machines: real snapshots replayed) and Table 3's own rows."""

from __future__ import annotations

import pytest

from envdoctor.checks.compat import Driver
from envdoctor.matrix import hardware as hw
from envdoctor.matrix import load
from envdoctor.recipes.driver import too_old_for

from .conftest import load_machine, machine_names, probe_facts

CUDAS = ("10.2", "11.0", "11.8", "12.0", "12.2", "12.4", "12.8", "13.0")


@pytest.mark.parametrize("name", machine_names())
def test_diagnose_and_install_agree_on_every_captured_machine(name):
    facts = probe_facts(load_machine(name))
    drv = Driver(facts)
    for cuda in CUDAS:
        old = too_old_for(cuda, facts)
        if not drv.known:
            assert old is None  # nothing to judge by: neither refuses
            continue
        mm = tuple(int(p) for p in cuda.split("."))
        assert (drv.verdict(mm) == "ok") == (old is None), (cuda, drv.verdict(mm), old)


def _row_with_a_later_update():
    for row in load("cuda"):
        for update, driver in sorted((row.get("driver_by_update") or {}).items()):
            if driver != row["min_driver_linux"] and row.get("minor_compat_min_driver"):
                return row, update, driver
    raise AssertionError("cuda.json has no update needing a newer driver than its release")


def test_an_update_that_needs_a_newer_driver_than_its_release():
    row, update, driver = _row_with_a_later_update()  # 11.0.3 needs 450.51.06 where 11.0 needs 450.51.05
    ga, mm = row["min_driver_linux"], row["version"]
    supports = mm  # the release's own driver reports its CUDA
    assert hw.driver_runs(mm, ga, supports) == "ok"
    # the update's driver is newer: the release's own runs it only through minor-version compatibility, when it is
    # at or above the major's floor
    floor = hw.min_driver_for_cuda(mm, minor_compat=True)
    assert hw.driver_runs(update, ga, supports) == ("minor_compat" if hw.parse_version(ga) >= hw.parse_version(floor)
                                                    else "too_old")
    assert hw.driver_runs(update, driver, supports) == "ok"


def test_the_rule_across_majors_floors_and_what_is_not_known():
    assert hw.driver_runs("12.4", "550.54.14", "12.4") == "ok"
    assert hw.driver_runs("12.8", "550.54.14", "12.4") == "minor_compat"  # 12.x floor 525.60.13
    assert hw.driver_runs("12.4", "470.82.01", "11.4") == "too_old"  # minor-version compatibility stays in a major
    assert hw.driver_runs("11.8", "450.36.06", "11.0") == "too_old"  # below 11.x's floor, 450.80.02
    assert hw.driver_runs("12", "535.104.05", "12.2") == "ok"
    # no version (a WSL2 driver's is Windows'): by the CUDA it reports
    assert hw.driver_runs("12.8", "566.36", "12.7", wsl=True) == "minor_compat"
    assert hw.driver_runs("12.4", None, None) is None
    assert hw.driver_runs("12.4", "550.54.14", None) == "ok"  # Table 3 gives the version's CUDA

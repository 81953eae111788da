"""Properties of the whole set of checks (every registered check, not one module at a time).

1. Hostile facts never crash a check: the facts of every captured machine, with random keys replaced by
   values of the wrong type or status, go through `run_checks`; no `envdoctor.check_crashed` comes out.
2. What the matrix declares supported is quiet: for every torch release and CUDA variant in the matrix,
   a GPU of an architecture that variant's wheels carry and the driver that variant's CUDA needs
   (NVIDIA's Table 3 minimum, from the matrix) produce no error from any check.
"""

from __future__ import annotations

from typing import Any, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.checks import CheckContext, run_checks
from envdoctor.facts import Fact, Facts, ok
from envdoctor.matrix import hardware, load

from .conftest import machine_names, machine_path, snapshot_probes

MACHINE_FACTS = {name: [f for r in snapshot_probes(machine_path(name)) for f in r.facts] for name in machine_names()}

junk = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True) | st.text(max_size=20)
    | st.sampled_from(["", "12.4", "550.54.15", "9.0", "+cu121", "garbage", "-1", "1.2.3.4.5.6", "∞"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=8,
)


def _crashes(facts: List[Fact]) -> List[str]:
    findings = run_checks(CheckContext(Facts(facts), []))
    return [f.title for f in findings if f.code == "envdoctor.check_crashed"]


@pytest.mark.parametrize("machine", sorted(MACHINE_FACTS))
def test_real_machines_never_crash_a_check(machine):
    assert _crashes(MACHINE_FACTS[machine]) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machine=st.sampled_from(sorted(MACHINE_FACTS)), data=st.data())
def test_garbled_facts_never_crash_a_check(machine, data):
    facts = [Fact(f.key, f.value, f.source, f.status, f.reason, f.label) for f in MACHINE_FACTS[machine]]
    n = data.draw(st.integers(1, 12))
    for _ in range(n):
        i = data.draw(st.integers(0, len(facts) - 1))
        f = facts[i]
        status = data.draw(st.sampled_from(["ok", "ok", "unknown", "not_supported", "timed_out"]))
        value: Any = data.draw(junk) if status == "ok" else None
        facts[i] = Fact(f.key, value, f.source, status, "" if status == "ok" else "test", f.label)
    assert _crashes(facts) == []


@pytest.mark.parametrize("count", [10**12, -1, True, 65])
def test_a_garbled_gpu_count_sizes_nothing(count):
    # Found by the property test: a check built one "/dev/nvidiaN" string per GPU the count claimed,
    # and 10**12 of them took every byte of memory.
    facts = [f for f in MACHINE_FACTS["centosstream9-8xh100"] if f.key != "gpu.count"]
    facts.append(ok("gpu.count", count, "test"))
    assert _crashes(facts) == []


def _supported_combinations():
    for rel in load("torch"):
        for var in rel.get("variants", []):
            cuda = var.get("cuda")
            arches = var.get("arch_list") or []
            driver = hardware.min_driver_for_cuda(cuda) if cuda else None
            if not cuda or not arches or not driver:
                continue
            yield rel["version"], var["tag"], cuda, arches[-1], driver


COMBOS = list(_supported_combinations())


@pytest.mark.parametrize("release,tag,cuda,cc,driver", COMBOS, ids=["%s-%s" % (c[0], c[1]) for c in COMBOS])
def test_a_combination_the_matrix_supports_yields_no_error(release, tag, cuda, cc, driver):
    version = "%s.0+%s" % (release, tag)
    facts = [
        ok("driver.installed", True, "test"), ok("driver.version", driver, "test"),
        ok("driver.cuda_version", cuda, "test"), ok("driver.nvml.status", "ok", "test"),
        ok("gpu.count", 1, "test"), ok("gpu.0.name", "NVIDIA test GPU", "test"),
        ok("gpu.0.compute_capability", cc, "test"),
        ok("framework.torch", {"version": version, "public": "%s.0" % release, "local": tag, "package": "torch",
                               "path": "/venv/lib/python3.11/site-packages", "cuda": cuda, "build": "cuda"}, "test"),
    ]
    errors = [(f.code, f.title) for f in run_checks(CheckContext(Facts(facts), [])) if f.severity == "error"]
    assert errors == []


def test_the_supported_combinations_are_many():
    # The property above is only worth something if the matrix gives it many cases to check.
    assert len(COMBOS) >= 30


def test_every_finding_produced_has_an_explain_entry():
    # `envdoctor explain CODE` must know every code a user can see (codes built at run time included).
    from envdoctor.checks import code_docs

    docs = code_docs()
    seen = set()
    for facts in MACHINE_FACTS.values():
        seen |= {f.code for f in run_checks(CheckContext(Facts(facts), []))}
    for release, tag, cuda, _cc, _driver in COMBOS:
        facts = [ok("driver.version", "450.80.02", "test"), ok("driver.cuda_version", "11.0", "test"),
                 ok("gpu.count", 1, "test"), ok("gpu.0.compute_capability", "3.5", "test"),
                 ok("framework.torch", {"version": "%s.0+%s" % (release, tag), "local": tag, "cuda": cuda,
                                        "build": "cuda"}, "test")]
        seen |= {f.code for f in run_checks(CheckContext(Facts(facts), []))}
    assert len(seen) >= 8
    assert sorted(c for c in seen if c not in docs) == []


ALL_KEYS = sorted({f.key for facts in MACHINE_FACTS.values() for f in facts})


@pytest.mark.parametrize("junk_value", [7, "garbage", {"x": 1}, [3, "x"]], ids=["int", "str", "dict", "list"])
def test_every_fact_any_machine_records_garbled_one_at_a_time_crashes_no_check(junk_value):
    # Found by the property test above (2026-11-30): compat.gpu-floors iterated `apps.rapids` and
    # `libraries.tensorrt` as lists and crashed on an int. The random search reaches such a key only now and
    # then; this walks every key any captured machine records (set on the richest one, in place or added), each
    # replaced by one value of each type.
    base = MACHINE_FACTS["centosstream9-8xh100"]
    where = {f.key: i for i, f in enumerate(base)}
    crashed = []
    for key in ALL_KEYS:
        garbled = list(base)
        fact = Fact(key, junk_value, "test", "ok", "", "")
        if key in where:
            garbled[where[key]] = fact
        else:
            garbled.append(fact)
        crashed += ["%s <- %r: %s" % (key, junk_value, t) for t in _crashes(garbled)]
    assert crashed == []

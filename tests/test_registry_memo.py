"""The answers computed from the registered checks alone (their order, what checks yield to, which checks judge a
plan's facts, the probes those need) are worked out once per process and kept while the registry holds the very
same checks: a check registered, or one swapped in or out, is in the next answer."""

from __future__ import annotations

import pytest

import envdoctor.checks as checks
from envdoctor import preflight
from envdoctor.checks import CodeDoc, all_checks, check, yielded_to
from envdoctor.findings import Finding

KEY = "os.zz_memo_fact"
DOC = CodeDoc("os.zz_memo", "info", "A test of the memo.", KEY, "A test.")


def _register(name, **kw):
    @check(name, codes=[DOC], layers=("os",), **kw)
    def question(ctx):
        return [Finding(code="os.zz_memo", severity="info", components=["os"], title="asked")]

    return question


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(checks, "_REGISTRY", dict(checks._REGISTRY))
    yield checks._REGISTRY
    monkeypatch.undo()
    assert "zz-memo" not in [s.name for s in all_checks()]


def test_a_check_registered_after_a_question_is_in_the_next_answer(registry):
    before = [s.name for s in all_checks()]
    assert preflight.checks_for([KEY]) == [] and preflight.probes_for([KEY]) == []
    assert all_checks() == all_checks() and all_checks() is not all_checks()  # a fresh list each time
    _register("zz-memo", requires=(KEY,), reads=("os.id",))
    assert "zz-memo" not in before and "zz-memo" in [s.name for s in all_checks()]
    assert [s.name for s in preflight.checks_for([KEY])] == ["zz-memo"]
    assert preflight.probes_for([KEY]) == ["os"]


def test_a_check_swapped_in_by_monkeypatch_changes_what_yields(registry, monkeypatch):
    _register("zz-memo", requires=(), reads=())
    _register("zz-memo-yielding", requires=(), reads=())
    spec = registry["zz-memo-yielding"]
    assert [s.name for s in yielded_to([spec])] == ["zz-memo-yielding"]
    monkeypatch.setitem(registry, spec.name, spec._replace(yields=(("*", ("zz-memo:os.zz_memo",)),)))
    assert sorted(s.name for s in yielded_to([registry[spec.name]])) == ["zz-memo", "zz-memo-yielding"]
    monkeypatch.delitem(registry, "zz-memo")
    assert [s.name for s in yielded_to([registry[spec.name]])] == ["zz-memo-yielding"]


def test_clear_memo_discovers_again():
    names = [s.name for s in all_checks()]
    checks.clear_memo()
    assert [s.name for s in all_checks()] == names

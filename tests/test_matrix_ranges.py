"""A row's release range is read one way in every table (``envdoctor.matrix.in_range``, over ``packaging``).

The cases are the versions envdoctor meets on real machines: a wheel's local label (torch ``2.4.1+cu121``, as
``pip list`` prints it), release candidates (``2.6.0rc1``), post releases (``nvidia-cudnn-cu12 9.1.0.70`` is a
plain release, ``onnxruntime-gpu 1.17.0.post1`` style), and garbled text from a damaged ``METADATA``.
"""

from __future__ import annotations

import ast
import os

import pytest

from envdoctor.matrix import floors, in_range, load, packages, release_range

MATRIX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "envdoctor", "matrix")


@pytest.mark.parametrize("spec, version, expected", [
    (">=2.4,<2.6", "2.5.1", True),
    (">=2.4,<2.6", "2.6.0", False),
    # pre-releases: a row speaks for the release candidates of its releases
    (">=2.5", "2.6.0rc1", True),
    ("<2.6", "2.6.0rc1", False),  # 2.6.0rc1 comes before 2.6.0, but a "<" excludes the pre-releases of its bound
    (">=2.5,<2.7", "2.6.0.dev20240601", True),
    # local labels: compared as packaging (and pip) compare them
    ("==2.4.1", "2.4.1+cu121", True),
    ("<=2.4.1", "2.4.1+cu121", True),
    (">2.4.1", "2.4.1+cu121", False),
    ("==2.4.*", "2.4.1+cu121", True),
    # post releases: after their release, yet not "greater than" it (PEP 440)
    (">=2.4.1", "2.4.1.post1", True),
    ("<=2.4.1", "2.4.1.post1", False),
    (">2.4.1", "2.4.1.post1", False),
    ("", "1.0", True),  # an empty range admits every release
])
def test_in_range_edge_cases(spec, version, expected):
    assert in_range(spec, version) is expected


@pytest.mark.parametrize("spec, version", [
    ("bogus", "1.0"), (">=1.0", "garbage"), (">=1.0", ""), (None, "1.0"), (">=1.0", None), (3, "1.0"),
    (">=1.0", ["1.0"]), (">=1.0,<", "1.0"), (">=1.0", "1.0\x00"),
])
def test_unreadable_range_or_version_is_unknown_never_a_traceback(spec, version):
    assert in_range(spec, version) is None


def test_release_range_reads_a_specifier_or_says_none():
    assert str(release_range(">=2.4,<2.6")) in ("<2.6,>=2.4", ">=2.4,<2.6")
    assert release_range("not a range") is None and release_range(None) is None
    spec = release_range(">=1")
    assert release_range(spec) is spec


def test_tables_answer_through_it():
    """What a user notices: a torch wheel with a local label and a damaged version both get an answer from the
    tables (the matching row, or none), never a traceback."""
    for row in load("package_arch"):
        if row.get("ecosystem") == "luarocks":
            continue  # a Lua rock's row has no releases (scm builds)
        low = next(s.version for s in release_range(row["releases"]) if s.operator in (">=", "=="))
        assert packages.arch_row(row["package"], low + "+cu121") is not None, row
        assert packages.arch_row(row["package"], "not-a-version") is None
    assert floors.floors_for("tensorrt", "garbage") == []


def test_no_matrix_module_tests_a_range_inline():
    """One home: every ``SpecifierSet.contains`` of the matrix is the one in ``in_range`` (a module parsing a
    specifier to validate a row is fine; asking it about a version goes through the helper)."""
    offenders = []
    for name in sorted(os.listdir(MATRIX)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        tree = ast.parse(open(os.path.join(MATRIX, name), encoding="utf-8").read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "contains":
                offenders.append("%s:%d" % (name, node.lineno))
    assert offenders == []


def test_range_problem_is_every_validators_one_sentence() -> None:
    """The validators' shared wording for a release-range field (matrix.range_problem): a range or "" passes, a
    garbled one or a missing one (read as text, "None") is named with its value, and a required one must not be
    empty."""
    from envdoctor.matrix import range_problem

    assert range_problem("row 0", "releases", ">=2.4,<2.6") is None
    assert range_problem("row 0", "releases", "") is None
    assert range_problem("row 0", "releases", ">=two") == "row 0: releases '>=two' is not a version specifier"
    assert range_problem("row 1", "jax", None) == "row 1: jax None is not a version specifier"
    assert range_problem("row 2", "releases", "", required=True) == "row 2: releases must be a version specifier"
    assert range_problem("row 2", "releases", None, required=True) == "row 2: releases must be a version specifier"

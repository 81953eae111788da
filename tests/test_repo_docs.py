"""The repository explains itself: its design document and contributor checklists are in the tree, every
reference to a design document points inside it, and every file those documents name exists."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", "CONTRIBUTING.md", "docs/DESIGN.md")
#: A path the documents name: `envdoctor/...`, `recipes/...`, `tests/...`, `scripts/...`, `docs/...`.
PATH = re.compile(r"`((?:envdoctor|recipes|tests|scripts|docs|\.ci)/[A-Za-z0-9_./-]*[A-Za-z0-9_/])`")


def _text(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as fh:
        return fh.read()


def _tracked_sources():
    for base in ("envdoctor", "recipes", "tests", "scripts", "docs"):
        for dirpath, dirs, files in os.walk(os.path.join(ROOT, base)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "corpus", "machines", "live")]
            for name in files:
                if name.endswith((".py", ".md")):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)
    yield from ("README.md", "CONTRIBUTING.md", "pyproject.toml")


def test_design_and_contributing_are_in_the_tree_and_licence_beside_them():
    for rel in DOCS + ("LICENSE",):
        assert os.path.isfile(os.path.join(ROOT, rel)), rel
    assert "Apache License" in _text("LICENSE") and "Version 2.0" in _text("LICENSE")


def test_every_design_reference_points_inside_the_repository():
    outside = []
    shared = "../" + "shared"  # spelled apart so this file does not match itself
    for rel in _tracked_sources():
        if rel == os.path.join("tests", "test_repo_docs.py"):
            continue
        text = _text(rel)
        if re.search(re.escape(shared) + r"/(DESIGN|STYLE)", text):  # a design document outside the tree
            outside.append(rel)
        for m in re.finditer(r"([\w./-]*)DESIGN\.md", text):
            if m.group(1) != "docs/":
                outside.append("%s: %s" % (rel, m.group(0)))
    assert not outside, outside


def test_the_four_common_changes_each_have_a_checklist():
    text = _text("CONTRIBUTING.md")
    for change in ("a new check", "a GPU product or architecture", "an install target", "a framework"):
        assert re.search(r"^## Checklist: %s" % re.escape(change), text, re.M), change
        section = text.split("## Checklist: " + change, 1)[1].split("\n## ", 1)[0]
        assert re.search(r"^1\. ", section, re.M), change


def test_every_file_the_documents_name_exists():
    missing = []
    for rel in DOCS:
        for m in PATH.finditer(_text(rel)):
            path = m.group(1).rstrip("/")
            if "*" in path or "NAME" in path or "<" in path:
                continue
            if not os.path.exists(os.path.join(ROOT, path)):
                missing.append("%s: %s" % (rel, path))
    assert not missing, missing


def test_the_readme_has_no_relative_link_that_breaks_on_the_package_index():
    """The README is the package's page on PyPI, where a link relative to the repository leads nowhere:
    files are named in code spans ("in the source tree"), links are absolute."""
    relative = [m.group(0) for m in re.finditer(r"\]\((?!https?://|#|mailto:)[^)]+\)", _text("README.md"))]
    assert not relative, relative

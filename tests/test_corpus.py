"""The real-world corpus (tests/corpus/<case>/): machines rebuilt from public bug reports.

Each case's case.json is well formed (a public thread's URL, the confirmed cause, finding codes that
envdoctor documents or that tests/corpus/PROPOSED_CODES.md proposes), each snapshot.json is what
scripts/make_fixture.py builds today, the scorer runs, and every healthy-but-confusing machine stays
quiet (no warning, no error): those tests carry the ``corpus`` marker so they can be deselected
(``-m "not corpus"``) while envdoctor still misses some.  The score itself is printed by
scripts/score_corpus.py, not asserted here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from types import ModuleType
from typing import Any, Dict, List

import pytest

from envdoctor.checks import code_docs
from envdoctor.host.snapshot import SnapshotHost

from .conftest import snapshot_report

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("_corpus_" + name, os.path.join(REPO, "scripts", name + ".py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


score_corpus = _script("score_corpus")
make_fixture = _script("make_fixture")
CASES = score_corpus.case_names()


def _case(name: str) -> Dict[str, Any]:
    with open(os.path.join(CORPUS, name, "case.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _proposed_codes() -> Dict[str, str]:
    """code -> its line in PROPOSED_CODES.md (``code — meaning — cases``)."""
    out: Dict[str, str] = {}
    path = os.path.join(CORPUS, "PROPOSED_CODES.md")
    if not os.path.isfile(path):
        return out
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = re.match(r"^\s*[-*]?\s*`?([a-z0-9_-]+\.[a-z0-9_]+)`?\s+—\s+\S", line)
            if m:
                out[m.group(1)] = line.strip()
    return out


def test_every_case_folder_is_complete() -> None:
    for name in sorted(os.listdir(CORPUS)) if os.path.isdir(CORPUS) else []:
        folder = os.path.join(CORPUS, name)
        if not os.path.isdir(folder):
            continue
        for part in ("case.json", "machine.json", "snapshot.json"):
            assert os.path.isfile(os.path.join(folder, part)), "tests/corpus/%s has no %s" % (name, part)


@pytest.mark.parametrize("name", CASES)
def test_case_is_well_formed(name: str) -> None:
    case = _case(name)
    assert score_corpus.case_problems(case) == [], name
    assert re.match(r"^https://[a-z0-9.-]+\.[a-z]{2,}/\S+$", case["url"]), case["url"]
    assert case["root_cause"].strip() and case["title"].strip() and case["notes"].strip()
    known = set(code_docs()) | set(_proposed_codes())
    for entry in case["expect"]:
        for code in entry["codes"]:
            assert code in known, ("%s expects %s, which `envdoctor explain` does not list and "
                                   "tests/corpus/PROPOSED_CODES.md does not propose" % (name, code))


def test_proposed_codes_are_used_and_new() -> None:
    """Each proposed code is one no check documents yet, and some case expects it."""
    proposed = _proposed_codes()
    documented = set(code_docs())
    used = {c for n in CASES for e in _case(n)["expect"] for c in e["codes"]}
    for code, line in proposed.items():
        assert code not in documented or code in used, "%s is documented now; drop it from PROPOSED_CODES.md" % code
        assert code in used, "PROPOSED_CODES.md proposes %s but no case expects it: %s" % (code, line)


#: test_corpus_snapshots_are_fresh's shares of the cases (one test each, so that the test workers share them)
FRESH_SHARES = 8


@pytest.mark.parametrize("share", range(FRESH_SHARES))
def test_corpus_snapshots_are_fresh(share: int) -> None:
    names = make_fixture.corpus_names()
    assert len(names) > FRESH_SHARES
    assert make_fixture.stale(names[share::FRESH_SHARES]) == [], \
        "run python scripts/make_fixture.py to regenerate the corpus snapshots"


def test_corpus_case_names_do_not_collide_with_machines() -> None:
    assert not set(make_fixture.corpus_names()) & set(make_fixture._names_in(make_fixture.MACHINES))


@pytest.fixture(scope="module")
def scored() -> Dict[str, Any]:
    """The scorer run once as CI runs it (the script, ``--json``, in its own process): its exit code and document.
    The tests below read this one run (scoring every case takes seconds of CPU per run); the thresholds and the
    text are then the script's ``main`` over that same document."""
    r = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "score_corpus.py"), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def _main(monkeypatch: Any, capsys: Any, doc: Dict[str, Any], *argv: str) -> Any:
    """score_corpus.main(argv) over the scored document (not scored again): (exit code, stdout, stderr)."""
    monkeypatch.setattr(score_corpus, "score", lambda names=None, errata=None: doc)
    code = score_corpus.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.xdist_group("corpus-scorer")
def test_scorer_runs_and_prints_the_score(scored: Dict[str, Any], monkeypatch: Any, capsys: Any) -> None:
    code, out, err = _main(monkeypatch, capsys, scored)
    assert code == 0, err
    assert re.match(r"^score: \d+/%d right \(\d+\.\d%%\), \d+ false alarms$" % len(CASES),
                    out.splitlines()[0]), out[:200]


@pytest.mark.xdist_group("corpus-scorer")
def test_scorer_json_and_thresholds(scored: Dict[str, Any], monkeypatch: Any, capsys: Any) -> None:
    doc = scored
    assert doc["total"] == len(CASES)
    assert sorted(c["case"] for c in doc["cases"]) == CASES
    code, out, err = _main(monkeypatch, capsys, scored, "--json")
    assert code == 0, err
    assert json.loads(out) == doc
    # an impossible threshold fails, a trivial one passes
    code, _, err = _main(monkeypatch, capsys, scored, "--min-score", "0", "--max-false-alarms", "100000")
    assert code == 0, err
    if CASES:
        code, _, err = _main(monkeypatch, capsys, scored, "--min-score", "101")
        assert code == 1 and "below --min-score" in err


def test_the_false_alarm_gate_passes_over_only_the_known_misses_it_is_given(monkeypatch: Any, capsys: Any,
                                                                             tmp_path: Any) -> None:
    """--max-false-alarms with --known-misses: a healthy case the list names (its line argues for the finding) is
    scored and printed, and not held to the gate; the same false alarm on a case not listed fails it."""
    doc = {"total": 2, "right": 1, "percent": 50.0, "false_alarms": 1, "errata": 0, "cases": [
        {"case": "healthy-a", "healthy": True, "right": False, "erratum": False, "url": "u", "category": "healthy",
         "false_alarms": [{"severity": "warning", "code": "x.y", "title": "t"}], "missed": [], "said": []},
        {"case": "b", "healthy": False, "right": True, "erratum": False, "url": "u", "category": "c",
         "false_alarms": [], "missed": [], "said": []}]}
    listed = tmp_path / "known.txt"
    listed.write_text("healthy-a  # x.y is right here: ...\n")
    empty = tmp_path / "none.txt"
    empty.write_text("")
    code, out, err = _main(monkeypatch, capsys, doc, "--max-false-alarms", "0", "--known-misses", str(listed))
    assert code == 0, err
    assert "1 false alarms" in out
    code, _, err = _main(monkeypatch, capsys, doc, "--max-false-alarms", "0")
    assert code == 1 and "1 false alarms, more than --max-false-alarms 0" in err
    code, _, err = _main(monkeypatch, capsys, doc, "--max-false-alarms", "0", "--known-misses", str(empty))
    assert code == 1 and "1 false alarms, more than --max-false-alarms 0" in err


def test_scorer_matches_code_severity_and_words() -> None:
    entry = {"codes": ["driver.too_old_for_framework"], "min_severity": "error", "words": ["470", "CU121"]}
    finding: Dict[str, Any] = {"code": "driver.too_old_for_framework", "severity": "error",
                               "title": "driver 470.57.02 is too old for torch 2.4.0+cu121", "detail": "",
                               "evidence": []}
    assert score_corpus.entry_matched_by(entry, finding)
    assert not score_corpus.entry_matched_by(entry, dict(finding, severity="warning"))
    assert not score_corpus.entry_matched_by(entry, dict(finding, code="cuda.shadowed"))
    assert not score_corpus.entry_matched_by(entry, dict(finding, title="driver too old"))
    # words may come from the evidence
    assert score_corpus.entry_matched_by(entry, dict(finding, title="too old", evidence=[
        {"name": "driver.version", "value": "470.57.02"}, {"name": "framework.torch", "value": {"cuda": "cu121"}}]))
    assert "severity warning < error" in score_corpus.why_not(entry, [dict(finding, severity="warning")])
    assert "no finding with code" in score_corpus.why_not(entry, [])


ERRATA = score_corpus.read_known_misses(os.path.join(REPO, "tests", "corpus", "errata.txt"))


def _known_misses() -> Dict[str, str]:
    """tests/corpus/known-misses.txt: case name -> the reason written after its '#'."""
    out: Dict[str, str] = {}
    with open(os.path.join(REPO, "tests", "corpus", "known-misses.txt"), encoding="utf-8") as fh:
        for line in fh:
            name, _, why = line.partition("#")
            if name.strip():
                out[name.strip()] = why.strip()
    return out


KNOWN_MISSES = _known_misses()
#: healthy cases; an erratum (withdrawn with its evidence, tests/corpus/errata.txt) is not held to it, and a known
#: miss is held to the findings its line names (below)
HEALTHY = [n for n in CASES if _case(n)["healthy"] and n not in ERRATA and n not in KNOWN_MISSES]
HEALTHY_MISSES = [n for n in CASES if _case(n)["healthy"] and n not in ERRATA and n in KNOWN_MISSES]


def _loud(name: str) -> List[Any]:
    return [f for f in snapshot_report(os.path.join(CORPUS, name, "snapshot.json")).findings
            if f.severity in ("warning", "error")]


@pytest.mark.corpus
@pytest.mark.parametrize("name", HEALTHY)
def test_healthy_case_raises_no_warning_or_error(name: str) -> None:
    loud = ["%s %s: %s" % (f.severity, f.code, f.title) for f in _loud(name)]
    assert loud == [], "%s is healthy (%s) but envdoctor says:\n%s" % (name, _case(name)["url"], "\n".join(loud))


@pytest.mark.corpus
@pytest.mark.parametrize("name", HEALTHY_MISSES)
def test_a_healthy_known_miss_says_only_what_its_line_names(name: str) -> None:
    """A healthy case kept as a known miss (a warning its known-misses.txt line argues for) gets no other warning
    or error: each loud finding's code is named in that line."""
    unnamed = ["%s %s: %s" % (f.severity, f.code, f.title) for f in _loud(name) if f.code not in KNOWN_MISSES[name]]
    assert unnamed == [], "%s is healthy (%s) but envdoctor also says:\n%s" % (
        name, _case(name)["url"], "\n".join(unnamed))


# -- make_fixture: what a live snapshot records, expressed by hand-built machines ---------------------


def test_fixture_directories_seen_through_symlinks(tmp_path: Any) -> None:
    """root/usr/local/cuda -> cuda-12.4: /usr/local/cuda/bin and /usr/local/cuda/include are listable
    and nvcc is found on PATH=/usr/local/cuda/bin, as on a live machine."""
    root = tmp_path / "root"
    (root / "usr/local/cuda-12.4/bin").mkdir(parents=True)
    (root / "usr/local/cuda-12.4/include").mkdir(parents=True)
    (root / "usr/local/cuda-12.4/targets/x86_64-linux/lib").mkdir(parents=True)
    (root / "usr/local/cuda-12.4/bin/nvcc").write_text("")
    (root / "usr/local/cuda-12.4/include/cuda.h").write_text("#define CUDA_VERSION 12040\n")
    (root / "usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127").write_text("")
    os.symlink("libcudart.so.12.4.127", str(root / "usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12"))
    os.symlink("targets/x86_64-linux/lib", str(root / "usr/local/cuda-12.4/lib64"))
    os.symlink("cuda-12.4", str(root / "usr/local/cuda"))
    os.symlink("/usr/local/cuda", str(root / "usr/local/cuda-12"))  # absolute: a path of the machine
    tree = make_fixture._walk_root(str(root), "t")
    doc = dict(tree, schema_version=1, environ={"PATH": "/usr/local/cuda/bin:/usr/bin"})
    host = SnapshotHost(doc, "t")
    assert host.list_dir("/usr/local/cuda/bin").names() == ("nvcc",)
    assert host.list_dir("/usr/local/cuda/include").names() == ("cuda.h",)
    assert host.list_dir("/usr/local/cuda-12/include").names() == ("cuda.h",)
    assert host.which("nvcc") == "/usr/local/cuda/bin/nvcc"
    assert host.read_text("/usr/local/cuda/include/cuda.h") == "#define CUDA_VERSION 12040\n"
    # a link inside a linked directory stays a link under the linked name, and resolves the same way
    assert host.read_link("/usr/local/cuda/lib64/libcudart.so.12").target == "libcudart.so.12.4.127"
    assert "libcudart.so.12" in host.list_dir("/usr/local/cuda/lib64").names()
    assert host.resolve("/usr/local/cuda/lib64/libcudart.so.12") == \
        "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127"
    # the real paths are unchanged
    assert host.read_link("/usr/local/cuda").target == "cuda-12.4"
    assert host.list_dir("/usr/local/cuda-12.4/bin").names() == ("nvcc",)


def test_fixture_link_loops_end(tmp_path: Any) -> None:
    """A link back into its own directory (Debian's /usr/bin/X11 -> .) is listed, not followed forever;
    a loop of links reads as absent, as the machine answers ELOOP."""
    root = tmp_path / "root"
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/gcc").write_text("")
    os.symlink(".", str(root / "usr/bin/X11"))
    os.symlink("x", str(root / "y"))
    os.symlink("y", str(root / "x"))
    tree = make_fixture._walk_root(str(root), "t")
    host = SnapshotHost(dict(tree, schema_version=1), "t")
    assert host.list_dir("/usr/bin/X11").names() == ("X11", "gcc")
    assert "/usr/bin/X11/gcc" in tree["files"]
    assert "/usr/bin/X11/X11/X11" not in tree["dirs"]
    assert host.read_link("/x").target == "y" and not host.list_dir("/x").ok


def test_fixture_elf_map_becomes_the_snapshot_elf_section(tmp_path: Any) -> None:
    root = tmp_path / "root"
    lib = root / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / "libcudnn.so.8.9.7").write_text("")
    os.symlink("libcudnn.so.8.9.7", str(lib / "libcudnn.so.8"))
    os.symlink("usr/lib", str(root / "lib"))
    tree = make_fixture._walk_root(str(root), "t")
    elf = make_fixture._elf({"elf": {"/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7": {
        "soname": "libcudnn.so.8", "needed": ["libc.so.6"]}}}, tree, str(root), "t")
    want = {"soname": "libcudnn.so.8", "needed": ["libc.so.6"], "rpath": [], "runpath": []}
    # recorded under every path that reaches the library, as a live capture asked through any of them
    assert elf["/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7"] == want
    assert elf["/usr/lib/x86_64-linux-gnu/libcudnn.so.8"] == want
    assert elf["/lib/x86_64-linux-gnu/libcudnn.so.8"] == want
    host = SnapshotHost(dict(tree, elf=elf, schema_version=1), "t")
    assert host.elf("/lib/x86_64-linux-gnu/libcudnn.so.8").soname == "libcudnn.so.8"
    with pytest.raises(make_fixture.FixtureError, match="not a file in root"):
        make_fixture._elf({"elf": {"/usr/lib/libnope.so": {"needed": []}}}, tree, str(root), "t")
    with pytest.raises(make_fixture.FixtureError, match="list of strings"):
        make_fixture._elf({"elf": {"/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7": {"needed": "libc.so.6"}}},
                          tree, str(root), "t")


def test_fixture_program_answers_through_links(tmp_path: Any) -> None:
    """machine.json lists nvcc once, by its real path; with PATH=/usr/local/cuda/bin the probes run
    /usr/local/cuda/bin/nvcc, which must answer the same, as it does on the machine."""
    root = tmp_path / "root"
    (root / "usr/local/cuda-12.4/bin").mkdir(parents=True)
    (root / "usr/local/cuda-12.4/bin/nvcc").write_text("")
    os.symlink("cuda-12.4", str(root / "usr/local/cuda"))
    tree = make_fixture._walk_root(str(root), "t")
    listed = [{"argv": ["/usr/local/cuda-12.4/bin/nvcc", "--version"], "stdout": "release 12.4, V12.4.131\n"},
              {"argv": ["/usr/bin/gcc", "--version"], "stdout": "gcc 13\n"}]
    extra = make_fixture._command_aliases(listed, tree, str(root))
    assert [c["argv"] for c in extra] == [["/usr/local/cuda/bin/nvcc", "--version"]]
    assert extra[0]["stdout"] == "release 12.4, V12.4.131\n"
    # a path machine.json lists itself keeps its own answer
    listed.append({"argv": ["/usr/local/cuda/bin/nvcc", "--version"], "stdout": "hung"})
    assert make_fixture._command_aliases(listed, tree, str(root)) == []


def test_no_case_holds_an_empty_directory() -> None:
    """git keeps no empty directory: a snapshot made from a root/ holding one is stale in every clean clone (CI).
    Record the directory's absence instead, or put the file the machine has in it."""
    empty = []
    for name in CASES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(CORPUS, name, "root")):
            if not dirnames and not filenames:
                empty.append(os.path.relpath(dirpath, CORPUS))
    assert empty == [], empty


def test_known_misses_file_names_corpus_cases_with_reasons() -> None:
    path = os.path.join(REPO, "tests", "corpus", "known-misses.txt")
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.split("#", 1)[0].strip()]
    for line in lines:
        name, _, why = line.partition("#")
        assert name.strip() in CASES, line
        assert why.strip(), "no reason given: %s" % line


def test_errata_file_names_corpus_cases_with_evidence_and_no_known_miss() -> None:
    path = os.path.join(REPO, "tests", "corpus", "errata.txt")
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.split("#", 1)[0].strip()]
    for line in lines:
        name, _, why = line.partition("#")
        assert name.strip() in CASES, line
        assert len(why.strip()) > 20, "no evidence given: %s" % line
    misses = score_corpus.read_known_misses(os.path.join(REPO, "tests", "corpus", "known-misses.txt"))
    assert not (ERRATA & misses), sorted(ERRATA & misses)


def test_scorer_errata_are_printed_but_not_counted(tmp_path: Any) -> None:
    if not ERRATA:
        pytest.skip("no erratum")
    erratum = sorted(ERRATA)[0]
    right = next(c for c in CASES if c.startswith("healthy-") and c not in ERRATA)
    script = os.path.join(REPO, "scripts", "score_corpus.py")
    f = tmp_path / "errata.txt"
    f.write_text("%s  # evidence\n" % erratum, encoding="utf-8")
    counted = subprocess.run([sys.executable, script, erratum, right, "--json"], capture_output=True, text=True,
                             timeout=600)
    withdrawn = subprocess.run([sys.executable, script, erratum, right, "--json", "--errata", str(f)],
                               capture_output=True, text=True, timeout=600)
    a, b = json.loads(counted.stdout), json.loads(withdrawn.stdout)
    assert a["total"] == 2 and b["total"] == 1 and b["right"] == 1 and b["errata"] == [erratum]
    assert b["false_alarms"] == 0 and any(c["case"] == erratum and c["erratum"] for c in b["cases"])
    both = tmp_path / "misses.txt"
    both.write_text("%s  # why\n" % erratum, encoding="utf-8")
    clash = subprocess.run([sys.executable, script, erratum, "--errata", str(f), "--known-misses", str(both)],
                           capture_output=True, text=True, timeout=600)
    assert clash.returncode == 2 and "in both" in clash.stderr


def test_scorer_known_misses_fails_on_a_regression_and_on_a_stale_entry(tmp_path: Any) -> None:
    listed = sorted(score_corpus.read_known_misses(os.path.join(REPO, "tests", "corpus", "known-misses.txt")))
    if not listed:
        pytest.skip("no known miss to score")
    miss = listed[0]
    right = next(c for c in CASES if c not in listed and c.startswith("healthy-"))
    script = os.path.join(REPO, "scripts", "score_corpus.py")

    def run(file_text: str) -> subprocess.CompletedProcess[str]:
        f = tmp_path / "misses.txt"
        f.write_text(file_text, encoding="utf-8")
        return subprocess.run([sys.executable, script, miss, right, "--known-misses", str(f)],
                              capture_output=True, text=True, timeout=600)

    ok = run("%s  # why\n" % miss)
    assert ok.returncode == 0, ok.stderr
    regressed = run("# nothing listed\n")
    assert regressed.returncode == 1 and ("not right and not in" in regressed.stderr) and miss in regressed.stderr
    stale = run("%s\n%s  # now right\n" % (miss, right))
    assert stale.returncode == 1 and "take off" in stale.stderr and right in stale.stderr

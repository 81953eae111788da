#!/usr/bin/env python3
"""Score envdoctor on the real-world corpus (tests/corpus/<case>/).

Each case is a machine rebuilt from a public bug report, with the verdict a correct doctor gives
(case.json, written from the thread before envdoctor was run on it; see tests/corpus/README.md).
Every case's snapshot.json is replayed through envdoctor's own diagnose pipeline, in this process,
exactly as ``envdoctor diagnose --snapshot tests/corpus/<case>/snapshot.json`` would.

Scoring:
  * a broken case is RIGHT when every ``expect`` entry is matched by a finding whose code is one of
    the entry's ``codes``, whose severity is at least ``min_severity`` and whose title, detail or
    evidence contains every one of the entry's ``words`` (case-insensitive);
  * a healthy case is RIGHT when no finding of severity warning or error is raised; each warning or
    error on a healthy case is a FALSE ALARM;
  * an ERRATUM (a case listed in ``--errata FILE`` with its evidence: the rebuilt machine contradicts its own
    entry, e.g. a file every real install of that kind has is missing and that absence is what is reported) is
    still run and printed, but counts neither in the score nor in the false alarms. Cases are never edited
    after their batch's blind commit; a case shown wrong is withdrawn this way, in the open.

Usage::

    python scripts/score_corpus.py                     # score, then list each miss
    python scripts/score_corpus.py CASE ...            # score some cases only
    python scripts/score_corpus.py --json              # the same as one JSON document
    python scripts/score_corpus.py --min-score 95 --max-false-alarms 0 \
        --known-misses tests/corpus/known-misses.txt --errata tests/corpus/errata.txt   # CI gate

Exit codes: 0 scored (and, with thresholds, every threshold met); 1 a threshold was not met;
2 a case cannot be read (the message says why).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Set

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
CORPUS = os.path.join(REPO, "tests", "corpus")

SEVERITY_ORDER = {"info": 0, "warning": 1, "error": 2}
REQUIRED_KEYS = ("url", "title", "category", "root_cause", "written", "healthy", "expect", "notes")
CATEGORIES = (
    "driver-vs-runtime", "arch-vs-build", "cudnn-version", "cudnn-shadowing", "cublas-nccl", "missing-library",
    "conda-vs-system-vs-pip", "extension-build", "nouveau-nova", "secure-boot", "dkms", "library-mismatch", "wsl2",
    "containers", "fabric-manager", "forward-compat", "onnxruntime", "old-framework", "new-framework",
    "environment", "gpu-health", "interconnect", "healthy",
)


class CaseError(Exception):
    """A corpus case cannot be scored; the message says why."""


def case_names() -> List[str]:
    if not os.path.isdir(CORPUS):
        return []
    return sorted(n for n in os.listdir(CORPUS) if os.path.isfile(os.path.join(CORPUS, n, "case.json")))


def case_problems(case: Any) -> List[str]:
    """What is wrong with a case.json document (empty when it is well formed)."""
    if not isinstance(case, dict):
        return ["case.json must hold a JSON object"]
    out = ["missing key %r" % k for k in REQUIRED_KEYS if k not in case]
    url = case.get("url")
    if not (isinstance(url, str) and url.startswith("https://") and len(url) > len("https://x.y/")):
        out.append("url must be the https:// address of the public thread")
    if case.get("category") not in CATEGORIES:
        out.append("category %r is not one of %s" % (case.get("category"), ", ".join(CATEGORIES)))
    if not isinstance(case.get("healthy"), bool):
        out.append("healthy must be true or false")
    expect = case.get("expect")
    if not isinstance(expect, list):
        out.append("expect must be a list")
        return out
    if case.get("healthy") is False and not expect:
        out.append("a broken case must expect at least one finding")
    if case.get("healthy") is True and expect:
        out.append("a healthy case expects no finding (expect must be [])")
    for i, entry in enumerate(expect):
        where = "expect[%d]" % i
        if not isinstance(entry, dict):
            out.append("%s must be an object" % where)
            continue
        codes = entry.get("codes")
        if not (isinstance(codes, list) and codes and all(isinstance(c, str) and "." in c for c in codes)):
            out.append("%s.codes must be a non-empty list of layer.question codes" % where)
        if entry.get("min_severity") not in SEVERITY_ORDER:
            out.append("%s.min_severity must be info, warning or error" % where)
        words = entry.get("words", [])
        if not (isinstance(words, list) and all(isinstance(w, str) and w for w in words)):
            out.append("%s.words must be a list of non-empty strings" % where)
        unknown = set(entry) - {"codes", "min_severity", "words"}
        if unknown:
            out.append("%s has unknown keys %s" % (where, ", ".join(sorted(unknown))))
    return out


def load_case(name: str) -> Dict[str, Any]:
    path = os.path.join(CORPUS, name, "case.json")
    try:
        with open(path, encoding="utf-8") as fh:
            case = json.load(fh)
    except OSError as exc:
        raise CaseError("%s: cannot read case.json (%s)" % (name, exc.strerror or exc)) from None
    except ValueError as exc:
        raise CaseError("%s: case.json is not valid JSON (%s)" % (name, exc)) from None
    problems = case_problems(case)
    if problems:
        raise CaseError("%s: case.json: %s" % (name, "; ".join(problems)))
    return case


def finding_text(finding: Dict[str, Any]) -> str:
    """The text a finding's words are looked for in: its title, detail and evidence."""
    return "\n".join([str(finding.get("title", "")), str(finding.get("detail", "")),
                      json.dumps(finding.get("evidence", []), ensure_ascii=False)]).lower()


def entry_matched_by(entry: Dict[str, Any], finding: Dict[str, Any]) -> bool:
    if finding.get("code") not in entry["codes"]:
        return False
    if SEVERITY_ORDER.get(finding.get("severity", ""), -1) < SEVERITY_ORDER[entry["min_severity"]]:
        return False
    text = finding_text(finding)
    return all(w.lower() in text for w in entry.get("words", []))


def why_not(entry: Dict[str, Any], findings: List[Dict[str, Any]]) -> str:
    """Why no finding matched ``entry``: the closest finding's shortfall."""
    same_code = [f for f in findings if f.get("code") in entry["codes"]]
    if not same_code:
        return "no finding with code %s" % " or ".join(entry["codes"])
    reasons = []
    for f in same_code:
        parts = []
        if SEVERITY_ORDER.get(f.get("severity", ""), -1) < SEVERITY_ORDER[entry["min_severity"]]:
            parts.append("severity %s < %s" % (f.get("severity"), entry["min_severity"]))
        text = finding_text(f)
        missing = [w for w in entry.get("words", []) if w.lower() not in text]
        if missing:
            parts.append("words missing: %s" % ", ".join(missing))
        reasons.append("%s: %s" % (f.get("code"), "; ".join(parts)))
    return " | ".join(reasons)


def diagnose_snapshot(path: str) -> List[Dict[str, Any]]:
    """The findings envdoctor gives on the snapshot at ``path`` (its own reader and pipeline)."""
    from envdoctor.host.snapshot import SnapshotError, SnapshotHost, load_snapshot
    from envdoctor.report import diagnose

    try:
        doc = load_snapshot(path)
    except SnapshotError as exc:
        raise CaseError(str(exc)) from None
    host = SnapshotHost(doc, path)
    report = diagnose(host, source={"kind": "snapshot", "description": host.description})
    return [f.to_dict() for f in report.findings]


def score_case(name: str) -> Dict[str, Any]:
    case = load_case(name)
    snap = os.path.join(CORPUS, name, "snapshot.json")
    if not os.path.isfile(snap):
        raise CaseError("%s: no snapshot.json; run python scripts/make_fixture.py %s" % (name, name))
    findings = diagnose_snapshot(snap)
    said = [{"code": f["code"], "severity": f["severity"], "title": f["title"]} for f in findings]
    result: Dict[str, Any] = {"case": name, "url": case["url"], "category": case["category"],
                              "healthy": case["healthy"], "said": said}
    if case["healthy"]:
        alarms = [s for s in said if s["severity"] in ("warning", "error")]
        result.update(right=not alarms, false_alarms=alarms, missed=[])
    else:
        missed = [{"expected": e, "why": why_not(e, findings)} for e in case["expect"]
                  if not any(entry_matched_by(e, f) for f in findings)]
        result.update(right=not missed, false_alarms=[], missed=missed)
    return result


def score(names: Optional[List[str]] = None, errata: Optional[Set[str]] = None) -> Dict[str, Any]:
    """Every named case scored; ``errata`` (withdrawn cases) are run and kept in ``cases`` with ``erratum``
    true, but counted in neither the score nor the false alarms."""
    withdrawn = errata or set()
    results = [score_case(n) for n in (names or case_names())]
    for r in results:
        r["erratum"] = r["case"] in withdrawn
    counted = [r for r in results if not r["erratum"]]
    right = sum(1 for r in counted if r["right"])
    total = len(counted)
    return {"right": right, "total": total, "percent": round(100.0 * right / total, 1) if total else 0.0,
            "false_alarms": sum(len(r["false_alarms"]) for r in counted),
            "healthy_total": sum(1 for r in counted if r["healthy"]),
            "errata": sorted(r["case"] for r in results if r["erratum"]), "cases": results}


def render_text(doc: Dict[str, Any]) -> str:
    lines = ["score: %d/%d right (%.1f%%), %d false alarms" % (doc["right"], doc["total"], doc["percent"],
                                                              doc["false_alarms"])]
    if doc.get("errata"):
        lines[0] += "; %d errata withdrawn, not counted" % len(doc["errata"])
    for r in doc["cases"]:
        if r["right"] and not r.get("erratum"):
            continue
        lines.append("")
        lines.append("%s %s [%s] %s" % ("ERRATUM" if r.get("erratum") else "MISS", r["case"], r["category"], r["url"]))
        if r.get("erratum") and r["right"]:
            lines.append("  (right as it stands)")
            continue
        if r["healthy"]:
            lines.append("  expected: no warning or error (a healthy machine)")
            for a in r["false_alarms"]:
                lines.append("  false alarm: %s %s: %s" % (a["severity"], a["code"], a["title"]))
            continue
        for m in r["missed"]:
            e = m["expected"]
            lines.append("  expected: %s >= %s with words %s" % (" or ".join(e["codes"]), e["min_severity"],
                                                                 ", ".join(e.get("words", [])) or "(none)"))
            lines.append("    why not: %s" % m["why"])
        if r["said"]:
            lines.append("  envdoctor said:")
            for s in r["said"]:
                lines.append("    %s %s: %s" % (s["severity"], s["code"], s["title"]))
        else:
            lines.append("  envdoctor said: nothing")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="cases to score (default: all of tests/corpus)")
    ap.add_argument("--json", action="store_true", help="print the score and every case's result as JSON")
    ap.add_argument("--min-score", type=float, metavar="PERCENT",
                    help="exit 1 when fewer than PERCENT%% of the cases are right")
    ap.add_argument("--max-false-alarms", type=int, metavar="N",
                    help="exit 1 when there are more than N false alarms (with --known-misses: on cases it does not "
                         "list)")
    ap.add_argument("--known-misses", metavar="FILE",
                    help="exit 1 when a case missing from FILE (one case name per line, '#' starts a comment) is not "
                         "right, or when a case FILE lists is now right (take it off the list)")
    ap.add_argument("--errata", metavar="FILE",
                    help="cases FILE lists (one per line, '#' then the evidence) are withdrawn: run and printed, "
                         "but counted neither in the score nor in the false alarms")
    args = ap.parse_args(argv)
    errata: Set[str] = set()
    if args.errata is not None:
        try:
            errata = read_known_misses(args.errata)
        except OSError as exc:
            print("cannot read --errata %s: %s" % (args.errata, exc.strerror or exc), file=sys.stderr)
            return 2
    known = case_names()
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print("no such corpus case: %s" % ", ".join(unknown), file=sys.stderr)
        return 2
    try:
        doc = score(args.names or None, errata)
    except CaseError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    failed = False
    if args.min_score is not None and doc["percent"] < args.min_score:
        print("score %.1f%% is below --min-score %g" % (doc["percent"], args.min_score), file=sys.stderr)
        failed = True
    listed: Set[str] = set()
    if args.known_misses is not None:
        try:
            listed = read_known_misses(args.known_misses)
        except OSError as exc:
            print("cannot read --known-misses %s: %s" % (args.known_misses, exc.strerror or exc), file=sys.stderr)
            return 2
    if args.max_false_alarms is not None:
        # a healthy case listed as a known miss (its line argues why the finding stands) is counted in the score
        # and printed, not held to the gate: a false alarm anywhere else is
        unlisted = sum(len(r["false_alarms"]) for r in doc["cases"] if not r["erratum"] and r["case"] not in listed)
        if unlisted > args.max_false_alarms:
            print("%d false alarms%s, more than --max-false-alarms %d" % (
                unlisted, " outside %s" % args.known_misses if listed else "", args.max_false_alarms),
                file=sys.stderr)
            failed = True
    if args.known_misses is not None:
        both = sorted(listed & errata)
        if both:
            print("in both %s and %s (a case is a known miss or an erratum): %s" % (
                args.known_misses, args.errata, ", ".join(both)), file=sys.stderr)
            return 2
        wrong = {r["case"] for r in doc["cases"] if not r["right"] and not r["erratum"]}
        scored = {r["case"] for r in doc["cases"] if not r["erratum"]}
        regressed = sorted(wrong - listed)
        mended = sorted((listed & scored) - wrong)
        if regressed:
            print("not right and not in %s: %s" % (args.known_misses, ", ".join(regressed)), file=sys.stderr)
            failed = True
        if mended:
            print("right now, take off %s: %s" % (args.known_misses, ", ".join(mended)), file=sys.stderr)
            failed = True
    return 1 if failed else 0


def read_known_misses(path: str) -> Set[str]:
    """The case names a known-misses (or errata) file lists: one per line, text after '#' ignored."""
    names = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            name = line.split("#", 1)[0].strip()
            if name:
                names.add(name)
    return names


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    sys.exit(main())

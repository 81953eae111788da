#!/usr/bin/env python3
"""How much smaller a snapshot is now that a capture keeps only what the probes use.

For each snapshot (default: the live captures in tests/live and the captured machines in tests/machines)
it replays the snapshot, rewrites it as a capture writes it today (``envdoctor.host.snapshot.trim_document``:
the environment variables the replay's probes read plus CUDA_*, NVIDIA_*, NCCL_*, LD_*, CONDA_* and search
paths keep their values, the others their names; the dpkg status file and ``rpm -qa`` keep the CUDA-related
packages), replays that too, and prints both sizes (as ``envdoctor snapshot`` writes the file, and gzipped),
their ratio, and whether both replays give the same report (facts and findings).

    python scripts/snapshot_size.py
    python scripts/snapshot_size.py path/to/snapshot.json.gz
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import sys
from typing import Any, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from envdoctor.host.privacy import Scrubber  # noqa: E402
from envdoctor.host.snapshot import SnapshotHost, load_snapshot, trim_document  # noqa: E402
from envdoctor.report import diagnose  # noqa: E402


def _size(doc: Dict[str, Any]) -> Tuple[int, int]:
    text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n"
    return len(text), len(gzip.compress(text, mtime=0))


def _verdict(doc: Dict[str, Any]) -> Tuple[Any, Any]:
    report = diagnose(SnapshotHost(doc, "replay"), scrubber=Scrubber(include_host=True)).to_dict()
    facts = sorted((f["key"], json.dumps(f.get("value"), sort_keys=True), f["status"])
                   for p in report["probes"] for f in p["facts"])
    findings = sorted((f["code"], f["severity"], f["title"]) for f in report["findings"])
    return facts, findings


def measure(path: str) -> Dict[str, Any]:
    doc = load_snapshot(path)
    host = SnapshotHost(json.loads(json.dumps(doc)), path)
    diagnose(host, scrubber=Scrubber(include_host=True))
    trimmed = trim_document(doc, sorted(host.environ().read))  # type: ignore[attr-defined]
    before, after = _size(doc), _size(trimmed)
    return {"snapshot": os.path.relpath(path, ROOT), "before": before[0], "after": after[0],
            "before_gz": before[1], "after_gz": after[1], "same_report": _verdict(doc) == _verdict(trimmed),
            "environ_before": len(doc.get("environ") or {}), "environ_after": len(trimmed.get("environ") or {})}


def main(argv: List[str]) -> int:
    paths = argv or (sorted(glob.glob(os.path.join(ROOT, "tests", "live", "*", "snapshot.json.gz")))
                     + sorted(glob.glob(os.path.join(ROOT, "tests", "machines", "*", "snapshot.json"))))
    print("%-58s %9s %9s %6s %8s %8s %6s %7s %s" % ("snapshot", "bytes", "now", "ratio", "gz", "gz now", "ratio",
                                                     "vars", "same report"))
    for path in paths:
        m = measure(path)
        print("%-58s %9d %9d %6.2f %8d %8d %6.2f %3d->%-3d %s" % (
            m["snapshot"][-58:], m["before"], m["after"], m["after"] / m["before"], m["before_gz"], m["after_gz"],
            m["after_gz"] / m["before_gz"], m["environ_before"], m["environ_after"],
            "yes" if m["same_report"] else "NO"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

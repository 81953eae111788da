#!/usr/bin/env python3
"""Check the compatibility matrix's data files (run in CI).

For every file in envdoctor/matrix/data/ (or --data-dir): the shared
envelope (area, description, rows, each row's source URL / checked date /
verified flag) and the area's own rules (VALIDATORS in
envdoctor/matrix/hardware.py and frameworks.py: ordered ranges, no overlaps,
no unexplained gaps, cross-table references).  Prints every problem and
exits 1 when there is any.  Unverified rows are warnings only (exit 0);
--list-unverified names them.  Also prints how long loading every table
takes, since diagnose loads them at start-up.

    python scripts/check_matrix.py [--data-dir DIR] [--list-unverified]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from envdoctor import matrix  # noqa: E402


def _row_label(row: dict, index: int) -> str:
    for key in ("version", "cc", "name", "package"):
        if key in row:
            return f"{key}={row[key]}"
    return f"row {index}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", help="check this folder instead of the package's data")
    parser.add_argument("--list-unverified", action="store_true", help="name every unverified row and field")
    args = parser.parse_args(argv)

    if args.data_dir:
        matrix.DATA_DIR = os.path.abspath(args.data_dir)
    matrix.clear_cache()

    areas = matrix.areas()
    if not areas:
        print(f"error: no data files in {matrix.DATA_DIR}")
        return 1
    failed = 0
    unverified_rows = 0
    total_rows = 0
    for area in areas:
        path = matrix.data_path(area)
        try:
            doc = matrix.read_document(area)
        except matrix.MatrixError as exc:
            print(f"error: {exc}")
            failed += 1
            continue
        problems = matrix.problems_of(area, doc)
        for problem in problems:
            print(f"error: {os.path.basename(path)}: {problem}")
        if problems:
            failed += 1
            continue
        rows = doc["rows"]
        total_rows += len(rows)
        loose = [(i, r) for i, r in enumerate(rows) if matrix.unverified(r)]
        partial = [
            (i, r) for i, r in enumerate(rows) if not matrix.unverified(r) and r["source"].get("unverified_fields")
        ]
        unverified_rows += len(loose)
        checker = "own rules" if area in matrix.validators() else "envelope only"
        print(f"ok: {area}: {len(rows)} rows ({checker}), {len(loose)} unverified, {len(partial)} partly verified")
        if args.list_unverified:
            for i, r in loose:
                print(f"  warning: {area} {_row_label(r, i)} unverified: {r['source'].get('note', '')}")
            for i, r in partial:
                fields = ", ".join(r["source"]["unverified_fields"])
                print(f"  warning: {area} {_row_label(r, i)} fields not verified: {fields}")

    matrix.clear_cache()
    start = time.perf_counter()
    if not failed:
        for area in areas:
            matrix.load(area)
    elapsed = (time.perf_counter() - start) * 1000
    print(f"{total_rows} rows in {len(areas)} files; {unverified_rows} rows unverified (warnings)")
    if not failed:
        print(f"loading and validating every table took {elapsed:.1f} ms")
    if failed:
        print(f"{failed} file(s) with problems")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Write envdoctor/matrix/data/cuda_results.json: every ``CUresult`` of NVIDIA's ``cuda.h`` (name, number and
NVIDIA's own description, the doc comment above it joined into one line), read from the header's text.

    python scripts/make_cuda_results.py CUDA_H URL [CHECKED]

``CUDA_H``: a copy of ``cuda.h`` (the one cited: include/cuda.h of CUDA 12.6, NVIDIA's header as vendored by
github.com/zspace/system.cuda-12.6 at commit b3d92c837713411301ae5df45b0c7758df7d931e); ``URL``: where that
copy is published (named in every row's note); ``CHECKED``: the date it was read (default: today). Each row's
``source.url`` is NVIDIA's Driver API reference page of the CUresult enum, which renders the same doc comments
(NVIDIA's own copy of that page's descriptions, github.com/NVIDIA/cuda-python at commit
20bbd4ed528c28759c03823b42647f6af782bff8, cuda_core/cuda/core/experimental/_utils/driver_cu_result_explanations.py,
CUDA 12.8, agrees word for word on the results the checks name: 3, 34, 46, 100, 802, 803, 804, 999).
"""

import datetime
import json
import os
import re
import sys

#: NVIDIA's page of the CUresult enum (the Driver API reference's data types, generated from cuda.h).
DOCS = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html"

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "envdoctor", "matrix", "data",
                   "cuda_results.json")

_ENUM = re.compile(r"typedef\s+enum\s+cudaError_enum\s*\{(?P<body>.*?)\}\s*CUresult\s*;", re.S)
_ITEM = re.compile(r"(?:/\*\*(?P<doc>(?:(?!\*/).)*)\*/\s*)?(?P<name>CUDA_(?:SUCCESS|ERROR_[A-Z0-9_]+))\s*=\s*"
                   r"(?P<value>\d+)", re.S)


def _one_line(doc):
    lines = [re.sub(r"^\s*\*\s?", "", line).strip() for line in (doc or "").splitlines()]
    text = " ".join(line for line in lines if line)
    text = re.sub(r"\\deprecated\s*", "Deprecated: ", text)
    text = text.replace("::", "")
    return re.sub(r"\s+", " ", text).strip()


def parse(header):
    """[(name, number, description)] of the CUresult enum, in the header's order."""
    m = _ENUM.search(header)
    if m is None:
        raise SystemExit("no `typedef enum cudaError_enum { ... } CUresult;` in this file")
    return [(i.group("name"), int(i.group("value")), _one_line(i.group("doc")))
            for i in _ITEM.finditer(m.group("body"))]


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    with open(argv[1], encoding="utf-8", errors="replace") as fh:
        header = fh.read()
    version = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", header)
    checked = argv[3] if len(argv) > 3 else datetime.date.today().isoformat()
    cuda = "%d.%d" % (int(version.group(1)) // 1000, int(version.group(1)) % 1000 // 10) if version else "?"
    rows = [{"name": name, "code": code, "description": text,
             "source": {"url": DOCS, "checked": checked, "verified": True,
                        "note": "name, number and description read from cuda.h of CUDA %s (%s), the header whose doc "
                                "comments NVIDIA's Driver API reference renders" % (cuda, argv[2])}}
            for name, code, text in parse(header)]
    doc = {
        "area": "cuda_results",
        "description": "Every CUresult of NVIDIA's cuda.h (CUDA_VERSION %s): its name, its number and NVIDIA's own "
                       "description of it (the header's doc comment, joined into one line). Written by "
                       "scripts/make_cuda_results.py from the header's text: %s" % (
                           version.group(1) if version else "?", argv[2]),
        "rows": rows,
    }
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    print("%d results -> %s" % (len(rows), OUT))


if __name__ == "__main__":
    main(sys.argv)

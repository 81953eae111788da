#!/usr/bin/env python3
"""Generate the ``cdi_engines`` rows of ``envdoctor/matrix/data/cdi_engines.json`` from a clone of Podman.

Podman reads CDI specs with the container-device-interface library it vendors; for every stable release tag this
reads, from that tag's ``vendor/`` tree, which spec files the library loads (JSON only in ``/etc/cdi`` before the
``pkg/cdi`` registry; ``.json`` and ``.yaml`` in ``/etc/cdi`` and ``/var/run/cdi`` with it) and the newest
``cdiVersion`` it accepts (``specs-go``'s ``CurrentVersion``, else the newest of ``validSpecVersions``), and folds
consecutive releases that read specs alike into one row.

Usage: python scripts/gen_cdi_engines.py PATH-TO-PODMAN-GIT-DIR > rows.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any, Dict, List, Optional

from packaging.version import Version

ROOTS = ("vendor/tags.cncf.io/container-device-interface",
         "vendor/github.com/container-orchestrated-devices/container-device-interface")


def git(repo: str, *args: str) -> Optional[str]:
    r = subprocess.run(["git", "--git-dir", repo] + list(args), capture_output=True, text=True, timeout=60)
    return r.stdout if r.returncode == 0 else None


def reading(repo: str, tag: str) -> Dict[str, Any]:
    for root in ROOTS:
        config = git(repo, "show", "%s:%s/specs-go/config.go" % (tag, root))
        if config is None:
            continue
        config += git(repo, "show", "%s:%s/specs-go/version.go" % (tag, root)) or ""
        spec = git(repo, "show", "%s:%s/pkg/cdi/spec.go" % (tag, root))
        versions = re.findall(r'CurrentVersion\s*=\s*"(\d+\.\d+\.\d+)"', config)
        if not versions and spec and "struct{}{" in spec:
            block = spec.split("validSpecVersions", 1)[-1].split("struct{}{", 1)[-1].split("\n\t}", 1)[0]
            versions = re.findall(r'"(\d+\.\d+\.\d+)"', block)
        if spec is None:  # the first library: devices.go, JSON files in /etc/cdi
            return {"formats": ["json"], "dirs": ["/etc/cdi"], "max_cdi_version": None}
        return {"formats": ["json", "yaml"], "dirs": ["/etc/cdi", "/var/run/cdi"],
                "max_cdi_version": max(versions, key=Version) if versions else None}
    return {"formats": [], "dirs": [], "max_cdi_version": None}


def main(repo: str) -> int:
    tags = [t for t in (git(repo, "tag") or "").split() if re.fullmatch(r"v\d+\.\d+\.\d+", t)]
    tags = sorted((t for t in tags if Version(t[1:]) >= Version("3.0.0")), key=lambda t: Version(t[1:]))
    rows: List[Dict[str, Any]] = []
    for tag in tags:
        r = reading(repo, tag)
        if rows and {k: rows[-1][k] for k in r} == r:
            rows[-1]["last"] = tag[1:]
            continue
        rows.append(dict({"engine": "podman", "first": tag[1:], "last": tag[1:]}, **r))
    json.dump(rows, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

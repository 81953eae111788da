"""The pkg-config files a CUDA toolkit installs (``cuda.pkgconfig``): NVIDIA's packages put one per library
(``cuda-X.Y.pc``, ``cudart-X.Y.pc`` ...) in ``<toolkit>/pkgconfig`` and in pkg-config's own directories, each
defining ``cudaroot``, ``libdir`` and ``includedir``. A build that takes its flags from ``pkg-config --libs cuda-X.Y``
gets ``-L${libdir}`` as written: when a path variable names a directory that does not exist (CUDA 11.0's files
said ``${cudaroot}/x86_64-linux/lib`` where the libraries lie in ``${cudaroot}/targets/x86_64-linux/lib``), the
link fails or finds another copy of the library.

* ``toolkit.pkgconfig_bad_path`` (warning): one finding per directory of such files, naming the files, the
  variable, the path that does not exist and, where the toolkit has it, the directory that holds what it means.
"""

from __future__ import annotations

import posixpath
from typing import Any, Dict, Iterable, List, Tuple

from ..findings import Finding, Fix
from . import CheckContext, CodeDoc, check

PKGCONFIG_RULE = {"rule": "pkg-config prints a .pc file's Libs and Cflags with its variables expanded, "
                          "without checking that the directories exist",
                  "url": "https://people.freedesktop.org/~dbn/pkg-config-guide.html", "checked": "2026-11-30"}


@check("toolkit-pkgconfig", requires=("cuda.pkgconfig",), reads=(), layers=("cuda",), codes=(
    CodeDoc("toolkit.pkgconfig_bad_path", "warning",
            "A CUDA toolkit's pkg-config file (`cuda-X.Y.pc`, `cudart-X.Y.pc` ...) names a directory that does not "
            "exist in a path variable (libdir, includedir, cudaroot), so `pkg-config --libs`/`--cflags` hands builds "
            "a wrong -L/-I path.", "cuda.pkgconfig",
            "Builds that take their flags from pkg-config (Meson, autotools, CMake's FindPkgConfig, FFmpeg's "
            "configure) fail to link ('cannot find -lcudart') or pick up another copy of the library.",
            PKGCONFIG_RULE["url"]),
))
def toolkit_pkgconfig(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    # one finding per directory of files: the variables that name nothing, each with the files that say so
    groups: Dict[str, Dict[Tuple[str, str], List[Dict[str, Any]]]] = {}
    for e in facts.items("cuda.pkgconfig"):
        if not isinstance(e, dict):
            continue
        for var in e.get("missing") or []:
            value = str((e.get("paths") or {}).get(var) or "")
            if value:
                groups.setdefault(posixpath.dirname(str(e.get("file"))), {}).setdefault((var, value), []).append(e)
    ev = [f.to_dict() for f in (facts.get("cuda.pkgconfig"),) if f is not None]
    for directory, bad in sorted(groups.items()):
        # a missing directory explains every path under it (a missing cudaroot, its libdir and includedir)
        values = sorted({v for _, v in bad})
        told = [(var, value, es) for (var, value), es in sorted(bad.items(), key=lambda b: (len(b[0][1]), b[0]))
                if not any(value != v and value.startswith(v.rstrip("/") + "/") for v in values)]
        files = sorted({str(e.get("file")) for _, _, es in told for e in es})
        names = [posixpath.basename(f) for f in files]
        shown = ", ".join(names[:3]) + (" and %d more" % (len(names) - 3) if len(names) > 3 else "")
        instead = {var: (es[0].get("instead") or {}).get(var) for var, _, es in told}
        flags = ", ".join("%s%s" % ("-L" if var == "libdir" else "-I" if var == "includedir" else var + "=", value)
                          for var, value, _ in told)
        where = " ".join("The toolkit keeps what %s means in %s." % (var, d) for var, d in instead.items() if d)
        fixable = [(var, d) for var, d in instead.items() if d]
        commands = ["sudo sed -i %s %s" % (" ".join("-e 's|^%s=.*|%s=%s|'" % (var, var, d) for var, d in fixable),
                                           " ".join(files))] if fixable else []
        yield Finding(
            code="toolkit.pkgconfig_bad_path", severity="warning", components=["cuda"],
            title="CUDA's pkg-config file%s %s name%s %s, which do%s not exist" % (
                "s" if len(names) > 1 else "", shown, "" if len(names) > 1 else "s",
                ", ".join("%s=%s" % (var, value) for var, value, _ in told), "" if len(told) > 1 else "es"),
            detail=("`pkg-config --libs`/`--cflags` of %s hand a build %s, which %s not on this machine, so builds "
                    "that take their flags from pkg-config fail to find the toolkit's libraries and headers.%s" % (
                        shown, flags, "are" if len(told) > 1 else "is", (" " + where) if where else "")),
            evidence=ev, source=dict(PKGCONFIG_RULE),
            fix=Fix(text=("Point %s in %s at the toolkit's own directories." % (
                " and ".join(var for var, _ in fixable), directory)) if fixable and len(fixable) == len(told)
                    else "Correct %s in the files of %s to the directories the toolkit really has, or reinstall its "
                         "development packages." % (" and ".join(var for var, _, _ in told), directory),
                    commands=commands))

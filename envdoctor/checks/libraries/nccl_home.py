"""An NCCL named for builds (NCCL_HOME and the like) that the loader does not pick: programs linked against it
(nccl-tests, a source build of a framework) load another libnccl.so.2 when they run."""

from __future__ import annotations

from typing import Any, Dict, Iterable

from ...findings import Finding, Fix
from .. import CheckContext, CodeDoc, check
from . import _evidence

NCCL_TESTS_MAKEFILE = "https://github.com/NVIDIA/nccl-tests/blob/master/src/Makefile"
LD_SO = "https://man7.org/linux/man-pages/man8/ld.so.8.html"
CHECKED = "2026-11-29"


@check("nccl-build-home", requires=("libraries.nccl_build_homes", "libraries.loader_choice"),
       reads=("libraries.*",), layers=("libraries",), codes=(
    CodeDoc("nccl.home_not_on_loader_path", "warning",
            "NCCL_HOME (or NCCL_ROOT, NCCL_ROOT_DIR, NCCL_LIB_DIR) names an NCCL whose libnccl the dynamic loader "
            "does not pick: it resolves that soname to another copy, or to none.",
            "libraries.nccl_build_homes, libraries.loader_choice",
            "These variables only steer the link (-L): a program built against that NCCL (nccl-tests, a source "
            "build) has no RPATH to it and loads the loader's copy at run time; an older one lacks the newer API "
            "(\"undefined symbol: ncclCommWindowRegister\"), another release behaves differently.",
            NCCL_TESTS_MAKEFILE),
))
def nccl_build_home(ctx: CheckContext) -> Iterable[Finding]:
    facts = ctx.facts
    choices = facts.mapping("libraries.loader_choice")
    for home in facts.items("libraries.nccl_build_homes"):
        if not isinstance(home, dict):
            continue
        for copy in home.get("copies") or []:
            if not isinstance(copy, dict) or not copy.get("soname"):
                continue
            found = choices.get(copy["soname"])
            choice: Dict[str, Any] = found if isinstance(found, dict) else {}
            if not choice or choice.get("certain") is False:
                continue  # what the loader takes is not known: no verdict
            mine = copy.get("resolved") or copy.get("path")
            theirs = choice.get("resolved") or choice.get("path")
            if theirs and mine and theirs == mine:
                continue
            version = copy.get("version") or "of unknown version"
            var, d = home.get("variable"), home.get("dir")
            if theirs:
                got = "%s (NCCL %s, found through the %s)" % (theirs, choice.get("version") or "of unknown version",
                                                             choice.get("via") or "loader's search")
                title = "%s names NCCL %s (%s), but the loader resolves %s to NCCL %s (%s)" % (
                    var, version, d, copy["soname"], choice.get("version") or "of unknown version", theirs)
            else:
                got = "no file at all"
                title = "%s names NCCL %s (%s), but the loader finds no %s" % (var, version, d, copy["soname"])
            yield Finding(
                code="nccl.home_not_on_loader_path", severity="warning", components=["nccl"],
                title=title,
                detail="%s only tells a build where to link (-L%s): a program built against NCCL %s keeps just the "
                       "name %s, and at run time the loader gives it %s. Symbols the newer NCCL added are then "
                       "missing (\"undefined symbol\"), or the job runs on the other release." % (
                           var, d, version, copy["soname"], got),
                evidence=_evidence(facts, "libraries.nccl_build_homes", "libraries.loader_choice"),
                source={"rule": "nccl-tests link NCCL with -L$(NCCL_HOME)/lib and no RPATH; ld.so searches "
                                "LD_LIBRARY_PATH, RUNPATH, its cache and the default directories",
                        "url": NCCL_TESTS_MAKEFILE, "checked": CHECKED, "also": LD_SO},
                fix=Fix(text="Put that NCCL first on the loader's path where its programs run (or link them with an "
                             "RPATH to it), or point %s at the NCCL the loader finds." % var,
                        commands=["export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" % d]))

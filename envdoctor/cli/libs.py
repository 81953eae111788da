"""``envdoctor libs PATH...``: the CUDA, cuDNN, NCCL and TensorRT libraries a program or shared object loads."""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

import click

from . import EXIT_FOUND_ERRORS, EXIT_OK, EXIT_USAGE, fail
from .common import echo_output, format_option, snapshot_option, subject, timeout_option

EPILOG = """\b
Examples:
  envdoctor libs ./my_inference_server
  envdoctor libs $(python -c 'import onnxruntime, os; print(os.path.dirname(onnxruntime.__file__))')/capi
  envdoctor libs /usr/lib/x86_64-linux-gnu/libcudnn.so.9 --format json
  envdoctor libs ./ext.so --program "$(command -v python3)"
  envdoctor libs ./app --snapshot node17.json      # as that machine's loader would
\b
Each PATH is an ELF program or shared object, or a directory (its shared
objects). Nothing is run or loaded: the ELF headers are read and the
dynamic loader's rules applied (RPATH of the object and of what loaded it,
LD_LIBRARY_PATH, RUNPATH, /etc/ld.so.cache, the default directories,
glibc-hwcaps), transitively, with the libraries each one names for dlopen.
\b
Exit codes: 0 no errors; 1 a library is missing, of the wrong major, or an
older copy than the one shipped is taken; 2 could not run as asked (no such
file, not ELF, bad snapshot)."""

#: The most objects a directory contributes (a site-packages/torch/lib has about 20).
MAX_DIR_OBJECTS = 200


@click.command("libs", epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--program", metavar="PATH", help="The executable that loads these objects (its DT_RPATH is searched "
              "for their needs, e.g. conda's python: $ORIGIN/../lib).")
@click.option("--ld-library-path", "ldp", metavar="DIRS", default=None,
              help="Judge with this LD_LIBRARY_PATH instead of the environment's (an empty string: none).")
@snapshot_option(note="The files must be in it.")
@click.option("-v", "--verbose", is_flag=True, help="Every library, not only the CUDA ones; each finding in full.")
@format_option("text", "json")
@timeout_option
def libs(paths: Tuple[str, ...], program: Optional[str], ldp: Optional[str], snapshot_path: Optional[str],
         verbose: bool, fmt: str, timeout: float) -> None:
    """Which CUDA, cuDNN, NCCL and TensorRT files PATH loads, why those, and what is wrong with them."""
    subj = subject(snapshot_path, None, timeout)
    host: Any = subj.host
    if subj.snapshot:
        source = {"kind": "snapshot", "description": snapshot_path}
    else:
        import os

        host.names_limit = 64 * 1024 * 1024  # libnvrtc's 13 MiB of read-only data is affordable here
        source = {"kind": "live", "description": "this machine"}
        paths = tuple(os.path.abspath(p) for p in paths)
        program = os.path.abspath(program) if program else None
    import threading

    done: Dict[str, Any] = {}

    def work() -> None:
        try:
            done["doc"] = _collect(host, paths, ldp, program, verbose)
        except _Refused as exc:
            done["refused"] = str(exc)
        except Exception as exc:  # noqa: BLE001 - raised again below, in the command's own thread
            done["error"] = exc

    # A path that blocks when opened (a FIFO, a hung mount) must not hang the command: the work runs in a thread
    # the deadline abandons.
    worker = threading.Thread(target=work, name="libs", daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    if "error" in done:
        raise done["error"]
    if "refused" in done:
        raise fail(done["refused"], EXIT_USAGE)
    if "doc" not in done:
        raise fail("did not finish within --timeout %g s (a file that blocks when read: a FIFO, a hung network "
                   "mount?); nothing judged" % timeout, EXIT_USAGE)
    doc = done["doc"]
    doc["source"] = source
    if fmt == "json":
        from ..jsontext import dumps

        echo_output(dumps(doc))
    else:
        from ..render.layout import terminal_width
        from ..render.libs import render
        from ..render.style import Style

        echo_output(render(doc, Style(sys.stdout), terminal_width(sys.stdout), verbose))
    sys.exit(EXIT_FOUND_ERRORS if doc["summary"]["error"] else EXIT_OK)


class _Refused(Exception):
    """A path that cannot be judged (exit 2 with this message)."""


def _collect(host: Any, paths: Tuple[str, ...], ldp: Optional[str], program: Optional[str],
             verbose: bool) -> Dict[str, Any]:
    import posixpath

    from ..probes import loader
    from ..probes.cuda import ld_library_path_dirs

    roots: List[str] = []
    for p in paths:
        p = posixpath.normpath(p)
        listing = host.list_dir(p)
        if listing.ok:
            # its shared objects (a name with ".so"), else whatever ELF files it holds (programs)
            names = [n for n in listing.names() if ".so" in n] or list(listing.names())
            found = [f for f in (posixpath.join(p, n) for n in names[:4 * MAX_DIR_OBJECTS])
                     if host.elf(f).ok][:MAX_DIR_OBJECTS]
            if not found:
                raise _Refused("%s holds no ELF program or shared object" % p)
            roots += found
            continue
        elf = host.elf(p)
        if not elf.ok:
            why = {"ENOENT": "no such file", "not_elf": "not an ELF program or shared object",
                   "not_recorded": "the snapshot holds no ELF headers for it"}.get(str(elf.error), "%s%s" % (
                       elf.error, ": " + elf.message if elf.message else ""))
            raise _Refused("%s: %s" % (p, why))
        roots.append(p)
    config = loader.loader_config(host, None if ldp is None else ld_library_path_dirs(ldp))
    return build(host, config, roots, program, verbose)


def build(host: Any, config: Any, roots: List[str], program: Optional[str], verbose: bool = False) -> Dict[str, Any]:
    """The ``libs`` document (``envdoctor/schemas/libs.schema.json``): the loader's configuration, each root's
    CUDA libraries, the findings."""
    from .. import __version__
    from ..checks import closure as judge
    from ..probes import loader

    programs: List[Dict[str, Any]] = []
    findings: List[Any] = []
    for root in roots:
        c = loader.cuda_closure(host, config, [root], main=program)
        elf = host.elf(root)
        entry: Dict[str, Any] = {"path": root, "soname": elf.soname if elf.ok else None,
                                 "libraries": c["links"], "unread": [u for u in c["unread"] if u["path"] != root],
                                 "truncated": c["truncated"]}
        if verbose:
            graph = loader.load(host, config, [root], dlopens=lambda p, e: loader.dlopen_names(host, p, e),
                                main=program, runtime=True)
            entry["all"] = [{"requester": graph["objects"][lk["from"]]["path"] if lk.get("from") is not None
                             else program, "soname": lk["soname"], "how": lk["how"], "path": lk.get("path"),
                             "via": lk.get("via")} for lk in graph["links"]]
        programs.append(entry)
        for f in judge.judge(c):
            if all(f.title != g.title for g in findings):
                findings.append(f)
    from ..findings import sort_key

    findings.sort(key=sort_key)
    cache: Dict[str, Any] = ({"entries": len(config.cache)} if config.cache is not None
                             else {"unknown": config.cache_why or "could not be read"})
    return {
        "schema_version": 1, "envdoctor_version": __version__,
        "loader": {"ld_library_path": list(config.ld_library_path), "preload": list(config.preload),
                   "cache": cache, "glibc_hwcaps": list(config.hwcaps), "program": program},
        "programs": programs,
        "findings": [f.to_dict() for f in findings],
        "summary": judge.count(findings),
    }

#!/usr/bin/env python3
"""Build envdoctor.pyz: one file to copy onto a node, run by any Python 3.8+ with nothing installed.

    python scripts/build_zipapp.py                       # dist/envdoctor.pyz, dependencies from PyPI
    python scripts/build_zipapp.py --wheelhouse wheels/  # offline: pure-Python wheels already there
    python3 envdoctor.pyz check --policy policy.toml

Made with the standard library's ``zipapp``.  Inside: envdoctor (with its recipes, schemas and
matrix data) and its dependencies vendored as pure-Python wheels chosen for Python 3.8 (click,
nvidia-ml-py, packaging, distro, requests and its own, tomli for Pythons before 3.11).  envdoctor
reads its data files and starts its NVML helper as files, so on the first run the archive unpacks
itself into a per-user cache directory (``$XDG_CACHE_HOME/envdoctor/pyz/<build id>``, else
``~/.cache/...``; ``ENVDOCTOR_PYZ_CACHE`` to choose another), owned by the user and not writable by
others, and runs from there; where no such directory can be made it unpacks into a private
temporary directory removed at exit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
import zipfile
from typing import List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The runtime dependencies (pyproject.toml's), pinned to releases that still run on Python 3.8.
REQUIREMENTS = ["click>=8.0,<8.2", "nvidia-ml-py>=11.450", "packaging>=21.0", "distro>=1.8", "requests>=2.25",
                "urllib3<2.3", "tomli>=1.1"]
MARKER = ".envdoctor-pyz"

MAIN = r'''"""envdoctor as one file: unpack once into a private cache directory, then run from there."""
import atexit
import os
import shutil
import stat
import sys
import tempfile
import zipfile

BUILD = %(build)r


def _private_dir(path):
    """``path`` made (mode 0700) if missing; None unless it is a directory of ours that others cannot write."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return path


def _unpack(archive, dest):
    with zipfile.ZipFile(archive) as zf:
        for name in zf.namelist():
            if name.startswith("/") or ".." in name.split("/"):
                raise SystemExit("envdoctor.pyz: unsafe path in the archive: %%s" %% name)
        zf.extractall(dest)
    with open(os.path.join(dest, ".complete"), "w") as fh:
        fh.write(BUILD)


def _home(archive):
    base = os.environ.get("ENVDOCTOR_PYZ_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "envdoctor", "pyz")
    if _private_dir(base):
        target = os.path.join(base, BUILD)
        if os.path.isfile(os.path.join(target, ".complete")) and _private_dir(target):
            return target
        work = tempfile.mkdtemp(prefix=".unpack-", dir=base)
        try:
            _unpack(archive, work)
            os.rename(work, target)
            return target
        except OSError:
            shutil.rmtree(work, ignore_errors=True)
            if os.path.isfile(os.path.join(target, ".complete")) and _private_dir(target):
                return target  # another run unpacked it first
    work = tempfile.mkdtemp(prefix="envdoctor-pyz-")
    atexit.register(shutil.rmtree, work, True)
    _unpack(archive, work)
    return work


def main():
    archive = os.path.dirname(os.path.abspath(__file__))
    home = _home(archive)
    sys.path[:] = [home] + [p for p in sys.path if os.path.abspath(p) != archive]
    from envdoctor.launcher import main as envdoctor_main

    return envdoctor_main()


if __name__ == "__main__":
    sys.exit(main())
'''


def download(wheelhouse: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--dest", wheelhouse, "--only-binary=:all:",
                    "--python-version", "3.8", "--implementation", "py", "--abi", "none", "--platform", "any"]
                   + REQUIREMENTS, check=True)


def wheels(wheelhouse: str) -> List[str]:
    found = sorted(os.path.join(wheelhouse, n) for n in os.listdir(wheelhouse) if n.endswith(".whl"))
    impure = [w for w in found if not w.endswith(("-py3-none-any.whl", "-py2.py3-none-any.whl"))]
    if impure:
        raise SystemExit("not pure-Python wheels (they would not run everywhere): %s" % ", ".join(impure))
    return found


def build(output: str, wheelhouse: str) -> str:
    with tempfile.TemporaryDirectory(prefix="envdoctor-pyz-build-") as tmp:
        src = os.path.join(tmp, "app")
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        # envdoctor/recipes (a link to recipes/) is copied as the files it points to, as the wheel holds them
        shutil.copytree(os.path.join(ROOT, "envdoctor"), os.path.join(src, "envdoctor"), ignore=ignore)
        for whl in wheels(wheelhouse):
            with zipfile.ZipFile(whl) as zf:
                zf.extractall(src)
        with open(os.path.join(src, MARKER), "w") as fh:
            fh.write("envdoctor unpacked from envdoctor.pyz (scripts/build_zipapp.py)\n")
        digest = hashlib.sha256()
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                digest.update(os.path.relpath(path, src).encode() + b"\0")
                with open(path, "rb") as fh:
                    digest.update(fh.read())
        from importlib import util

        spec = util.spec_from_file_location("envdoctor_version", os.path.join(ROOT, "envdoctor", "__init__.py"))
        version = "unknown"
        if spec and spec.loader:
            module = util.module_from_spec(spec)
            spec.loader.exec_module(module)
            version = getattr(module, "__version__", "unknown")
        build_id = "%s-%s" % (version, digest.hexdigest()[:16])
        with open(os.path.join(src, "__main__.py"), "w") as fh:
            fh.write(MAIN % {"build": build_id})
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
        zipapp.create_archive(src, output, interpreter="/usr/bin/env python3", compressed=True)
    return build_id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", default=os.path.join(ROOT, "dist", "envdoctor.pyz"))
    ap.add_argument("--wheelhouse", help="take the dependencies' wheels from here instead of downloading them")
    args = ap.parse_args()
    if args.wheelhouse:
        build_id = build(args.output, args.wheelhouse)
    else:
        with tempfile.TemporaryDirectory(prefix="envdoctor-wheels-") as wheelhouse:
            download(wheelhouse)
            build_id = build(args.output, wheelhouse)
    print("%s (%d kB, build %s)" % (args.output, os.path.getsize(args.output) // 1024, build_id))
    return 0


if __name__ == "__main__":
    sys.exit(main())

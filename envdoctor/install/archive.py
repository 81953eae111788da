"""The actions of an install from archives (NVIDIA's redistributable tarballs into a prefix, no root): a private
staging directory, the free-space check, the verified download, the unpacking by envdoctor's own extractor, the move
into place and the removal of what is left.

Apart from :mod:`envdoctor.install.plan`, whose :class:`~envdoctor.install.plan.Plan` carries them like any action:
the package managers' plans (the driver's, the container toolkit's, whose install lines ``diagnose`` shows in its
fixes) never make these classes.
"""

from __future__ import annotations

import datetime
import os
import stat
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import validate
from .plan import StepError, StepRefused, WriteFile, _dirname, _write, os_error_text, q


@dataclass(frozen=True)
class Download:
    """Fetch ``url`` to ``dest``, verified by its sha256 (and its size, when known)."""
    url: str
    dest: str
    sha256: str
    size: Optional[int] = None
    kind: str = "download"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "url": self.url, "dest": self.dest, "sha256": self.sha256, "size": self.size}

    def describe(self) -> str:
        """What it does, in one line (the executor's log; a URL's credentials are never shown)."""
        from .validate import shown_url

        return f"download {shown_url(self.url)} -> {self.dest} (sha256 {self.sha256}, {self.size} bytes)"

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        part = q(self.dest + ".part")
        mismatch = "sha256 mismatch: the download was deleted, nothing was installed"
        from .download import DEFAULT_DEADLINE

        lines = [f"mkdir -p -- {q(_dirname(self.dest))}",
                 f"curl -fL --retry 3 --connect-timeout 30 --max-time {DEFAULT_DEADLINE:.0f} -C - -o {part} "
                 f"{q(self.url)}",
                 f"printf '%s  %s\\n' {q(self.sha256)} {part} | sha256sum -c - || "
                 f"{{ rm -f -- {part}; echo {q(mismatch)} >&2; exit 1; }}",
                 f"mv -f -- {part} {q(self.dest)}"]
        return lines

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        from .download import download

        download(self.url, self.dest, self.sha256, self.size, ex.download_options, log=lambda m: ex.log("    " + m))


@dataclass(frozen=True)
class Extract:
    """Unpack a ``.tar.xz``/``.tar.gz`` ``archive`` into ``dest``."""
    archive: str
    dest: str
    strip_components: int = 0
    #: Touched once the archive is fully unpacked, so a re-run can skip it.
    marker: str = ""
    #: The archive's top-level ``LICENSE`` is kept under this name (``LICENSE.cuda_nvcc``), so the
    #: licences of several archives unpacked into one tree do not overwrite each other.
    license_as: str = ""
    kind: str = "extract"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "archive": self.archive, "dest": self.dest,
                "strip_components": self.strip_components, "marker": self.marker, "license_as": self.license_as}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return f"extract {self.archive} -> {self.dest}"

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``): envdoctor's own
        extractor, which the script carries (:meth:`sh_prelude`), with the arguments the executor passes it."""
        return [f"envdoctor_unpack {q(self.archive)} {q(self.dest)} {int(self.strip_components)} "
                f"{q(self.marker)} {q(self.license_as)}"]

    def sh_prelude(self) -> List[str]:
        """What the script defines once, before any step: ``envdoctor_unpack``, which runs the source of
        :mod:`envdoctor.install.extract` with the machine's Python 3."""
        return unpack_prelude()

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        _extract(self)


@dataclass(frozen=True)
class PrivateDir:
    """Create (or reuse) a directory only its owner can enter, with ``subdirs`` inside.

    Never reused when it is a symbolic link, not a directory, owned by someone else or open to
    others: the step fails instead (a staging directory another user controls could swap verified
    downloads before they are unpacked).
    """

    path: str
    subdirs: Tuple[str, ...] = ()
    #: What the directory is for: kept in its ``plan`` file; when that file says otherwise, the
    #: ``reset`` subdirectories are emptied first (what another plan left is never mixed in).
    plan_id: str = ""
    reset: Tuple[str, ...] = ()
    kind: str = "private_dir"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "subdirs": list(self.subdirs), "plan_id": self.plan_id,
                "reset": list(self.reset)}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return f"private directory {self.path} (mode 0700)"

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        p = q(self.path)
        bad = q(f"{self.path} is a link, not a directory, or not yours: refusing to use it (remove it)")
        lines = [f"if [ -L {p} ] || {{ [ -e {p} ] && {{ [ ! -d {p} ] || [ ! -O {p} ]; }}; }}; then echo {bad} >&2; "
                 "exit 1; fi",
                 f"mkdir -p -m 0700 -- {p}", f"chmod 0700 -- {p}"]
        base = self.path.rstrip("/") + "/"
        if self.plan_id:
            pf, want = q(base + "plan"), q(self.plan_id)
            lines.append(f'if [ "$(cat -- {pf} 2>/dev/null)" != {want} ]; then rm -rf -- '
                         + " ".join(q(base + d) for d in self.reset) + f"; printf '%s\\n' {want} > {pf}; fi")
        if self.subdirs:
            lines.append("mkdir -p -- " + " ".join(q(base + d) for d in self.subdirs))
        return lines

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        import os

        _private_dir(self, os.geteuid())


@dataclass(frozen=True)
class SpaceCheck:
    """Fail unless the filesystem holding ``path`` has ``needed`` bytes free (``what`` says for what).

    With ``archives`` (``(archive, marker, estimate)`` each), what is needed is measured instead: the sum of
    the unpacked sizes the ``.xz`` archives record in their own indexes
    (:func:`envdoctor.install.extract.unpacked_size`), ``estimate`` for one whose index cannot be read, nothing
    for one whose ``marker`` says it is unpacked; ``needed`` is then the sum of the estimates, shown before the
    archives exist.
    """

    path: str
    needed: int
    what: str = ""
    archives: Tuple[Tuple[str, str, int], ...] = ()
    kind: str = "space_check"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "needed": self.needed, "what": self.what,
                "archives": [{"archive": a, "marker": m, "estimate": e} for a, m, e in self.archives]}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return "check the free space at %s%s" % (self.path, " for " + self.what if self.what else "")

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        p = q(_existing_hint(self.path))
        free = [f"free_kib=$(df -Pk -- {p} | awk 'NR==2 {{print $4}}')"]
        if not self.archives:
            msg = q(f"not enough free space for {self.what or 'this install'}: it needs about "
                    f"{self.needed / 1073741824.0:.1f} GiB")
            return free + [f'if [ "$free_kib" -lt {(self.needed + 1023) // 1024} ]; then echo {msg} >&2; exit 1; fi']
        # the unpacked sizes the archives record (xz --list's "uncompressed"), the estimate where unreadable
        lines = ["need=0"]
        for archive, marker, estimate in self.archives:
            size = (f"$(xz --robot --list -- {q(archive)} 2>/dev/null | awk -F'\\t' '$1 == \"file\" "
                    "{print $5}' || true)")
            lines.append(f'if [ ! -e {q(marker)} ]; then size={size}; need=$((need + ${{size:-{estimate}}})); fi')
        msg = q(f"not enough free space for {self.what or 'this install'}")
        return lines + free + [f'if [ "$free_kib" -lt $(((need + 1023) / 1024)) ]; then echo {msg}": it needs '
                               f'$((need / 1048576)) MiB" >&2; exit 1; fi']

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        needed = space_needed(self)
        ex.log("    free space at %s: %d bytes, %d needed" % (self.path, free_bytes(self.path), needed))
        _space(self, needed)


@dataclass(frozen=True)
class Move:
    """Rename the directory ``src`` into place at ``dest`` (atomic on one filesystem)."""
    src: str
    dest: str
    #: Replace an existing ``dest`` (only with ``--force``): it is moved aside to
    #: ``<dest>.envdoctor-old-<date>``, and only when it is a toolkit (or ``replace_any``: ``--force-any``).
    replace: bool = False
    replace_any: bool = False
    kind: str = "move"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "src": self.src, "dest": self.dest, "replace": self.replace,
                "replace_any": self.replace_any}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return "move {} -> {}{}".format(self.src, self.dest, " (replacing)" if self.replace else "")

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        src, dest = q(self.src), q(self.dest)
        if self.replace:
            old = q(self.dest.rstrip("/") + ".envdoctor-old-") + '"$(date +%Y%m%d-%H%M%S)"'
            said = q("the previous " + self.dest + " was moved aside to")
            lines = []
            if not self.replace_any:  # --force replaces a toolkit only (as the executor's validate.replaceable)
                d = self.dest.rstrip("/")
                toolkit = " || ".join(f"[ -e {q(d + '/' + f)} ]" for f in ("version.json", "bin/nvcc",
                                                                           "include/cudnn_version.h"))
                refuse = q(f"{self.dest} is not a CUDA toolkit or NVIDIA library tree; --force replaces only "
                           "those (--force-any for any directory)")
                lines.append(f"if [ -e {dest} ] && ! {{ {toolkit} || [ -z \"$(ls -A -- {dest})\" ]; }}; then "
                             f"echo {refuse} >&2; exit 1; fi")
            return lines + [f"if [ -e {dest} ] || [ -L {dest} ]; then old={old}; mv -T -- {dest} \"$old\"; "
                            f"printf '%s %s\\n' {said} \"$old\"; fi",
                            f"mv -T -- {src} {dest}"]
        return ["if [ -e {} ]; then echo {} >&2; exit 1; fi".format(dest, q(f"{self.dest} already exists")),
                f"mv -T -- {src} {dest}"]

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        said = _move(self, ex.clock())
        if said:
            ex.log("    " + said)
            ex.out(said)


@dataclass(frozen=True)
class Remove:
    """Delete a file or directory tree."""
    path: str
    kind: str = "remove"

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "path": self.path}

    def describe(self) -> str:
        """What it does, in one line (the executor's log)."""
        return f"remove {self.path}"

    def sh(self) -> List[str]:
        """The shell lines that do it (the dry-run script, under ``set -euo pipefail``)."""
        return [f"rm -rf -- {q(self.path)}"]

    def run(self, ex: Any) -> None:
        """Do it (the executor ``ex`` calls this: its log, output and download options)."""
        _remove(self)


# -- carrying them out (each action's ``run``; the executor calls it) ----------------------------------------

def _extract(action: Extract) -> None:
    from .extract import UnsafeArchive, unpack

    try:
        unpack(action.archive, action.dest, action.strip_components, action.marker, action.license_as)
    except UnsafeArchive as exc:
        raise StepRefused(f"refused {os.path.basename(action.archive)}: {exc}; nothing from it was installed") \
            from None
    except OSError as exc:
        raise StepError(f"could not unpack {action.archive}: {os_error_text(exc)}") from None


def _private_dir(action: PrivateDir, uid: int) -> None:
    path = action.path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        os.mkdir(path, 0o700)
        st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise StepError(f"{path} is a symbolic link (to {os.readlink(path)}); refusing to use it as a staging "
                        "directory: remove it, or install into another --prefix")
    if not stat.S_ISDIR(st.st_mode):
        raise StepError(f"{path} exists and is not a directory; remove it")
    if st.st_uid != uid:
        raise StepError(f"{path} belongs to uid {st.st_uid}, not to you (uid {uid}); refusing to use a directory "
                        "someone else controls: remove it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    if action.plan_id:
        plan_file = os.path.join(path, "plan")
        try:
            with open(plan_file, encoding="utf-8") as f:
                same = f.read().strip() == action.plan_id
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:
            import shutil

            for sub in action.reset:
                shutil.rmtree(os.path.join(path, sub), ignore_errors=True)
            _write(WriteFile(plan_file, action.plan_id + "\n", 0o600))
    for sub in action.subdirs:
        os.makedirs(os.path.join(path, sub), exist_ok=True)


def free_bytes(path: str) -> int:
    """Free bytes (for an unprivileged user) on the filesystem holding ``path`` or its nearest existing parent."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and p != "/":
        p = os.path.dirname(p)
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


def space_needed(action: SpaceCheck) -> int:
    """The bytes ``action`` asks for: ``needed``, or with ``archives`` the unpacked sizes the archives record
    (their estimate where unreadable; none for an archive already unpacked)."""
    if not action.archives:
        return action.needed
    from .extract import unpacked_size

    total = 0
    for archive, marker, estimate in action.archives:
        if marker and os.path.lexists(marker):
            continue
        size = unpacked_size(archive)
        total += estimate if size is None else size
    return total


def _space(action: SpaceCheck, needed: int) -> None:
    free = free_bytes(action.path)
    if free < needed:
        gib = 1073741824.0
        raise StepError("not enough free space on the filesystem of {}: {} needs {}{:.2f} GiB, {:.2f} GiB is "
                        "free; free some space (or choose another --prefix) and resume".format(
                            action.path, action.what or "this install", "" if action.archives else "about ",
                            needed / gib, free / gib))


def _move(action: Move, now: datetime.datetime) -> str:
    """Rename ``src`` onto ``dest``; with ``replace``, the old ``dest`` is moved aside, never deleted.

    Returns what was done with an old ``dest`` ("" when there was none)."""
    if not os.path.lexists(action.src):
        raise StepError(f"{action.src} does not exist (an earlier step did not produce it)")
    said = ""
    if os.path.lexists(action.dest):
        if not action.replace:
            raise StepError(f"{action.dest} already exists; it is never overwritten without --force")
        why = validate.replaceable(action.dest, action.replace_any)
        if why:
            raise StepError(why)
        old = aside_name(action.dest, now)
        os.rename(action.dest, old)
        said = f"the previous {action.dest} was moved aside to {old} (delete it when the new one works)"
    os.makedirs(os.path.dirname(action.dest) or "/", exist_ok=True)
    os.rename(action.src, action.dest)  # atomic: staging lives beside the destination
    return said


def aside_name(dest: str, now: datetime.datetime) -> str:
    """``<dest>.envdoctor-old-YYYYmmdd-HHMMSS`` (``-2``, ``-3`` ... when taken)."""
    base = "{}.envdoctor-old-{}".format(dest.rstrip("/"), now.strftime("%Y%m%d-%H%M%S"))
    name, n = base, 1
    while os.path.lexists(name):
        n += 1
        name = f"{base}-{n}"
    return name


def _remove(action: Remove) -> None:
    import shutil

    if os.path.isdir(action.path) and not os.path.islink(action.path):
        shutil.rmtree(action.path)
    elif os.path.lexists(action.path):
        os.remove(action.path)


def _existing_hint(path: str) -> str:
    """The directory ``df`` is asked about: the path's parent (the path itself may not exist yet)."""
    return _dirname(path.rstrip("/")) or "/"


#: Ends the extractor's source in the script (a here-document); the source never holds this line.
_UNPACK_END = "ENVDOCTOR_EXTRACT_PY"


def unpack_prelude() -> List[str]:
    """The shell function ``envdoctor_unpack ARCHIVE DEST STRIP MARKER LICENSE_AS`` and the search for the
    Python 3 that runs it: the dry-run script unpacks with the very code the executor runs
    (:mod:`envdoctor.install.extract`, carried whole), so both refuse the same archives."""
    from .extract import source

    code = source().rstrip("\n").split("\n")
    if _UNPACK_END in code:  # pragma: no cover - a guard on this module's own source
        raise ValueError("the extractor's source holds its here-document's end line")
    missing = ("envdoctor: this script unpacks the archives with Python 3.6 or later (with its lzma module) and "
               "none was found: install python3, or run the same envdoctor install command with --yes instead of "
               "--dry-run")
    return ["# Archives are unpacked by envdoctor's own extractor, the Python program in envdoctor_unpack below",
            "# (envdoctor/install/extract.py, the code 'envdoctor install --yes' runs): it refuses absolute names,",
            "# '..', links leading out of the tree, hard links, device files, FIFOs, sparse, setuid and setgid files,",
            "# and an archive that is not what its name says or unpacks beyond the size it records; a refusal",
            "# removes the tree and exits 2. It runs with Python 3.6 or later (python3, or RHEL's platform-python).",
            "envdoctor_python=",
            "for candidate in python3 /usr/libexec/platform-python; do",
            "  if command -v \"$candidate\" >/dev/null 2>&1 && \"$candidate\" -I -c 'import sys, lzma, tarfile; "
            "sys.exit(sys.version_info < (3, 6))' >/dev/null 2>&1; then",
            "    envdoctor_python=$candidate",
            "    break",
            "  fi",
            "done",
            f"if [ -z \"$envdoctor_python\" ]; then echo {q(missing)} >&2; exit 1; fi",
            "envdoctor_unpack() {",
            f"  \"$envdoctor_python\" -I - \"$@\" <<'{_UNPACK_END}'"] + code + [_UNPACK_END, "}"]

"""An installed distribution's ``RECORD``: the files pip (or another installer) put in place, one
``path,hash,size`` line each (PEP 376; the wheel spec, "The .dist-info directory"; pip writes it with the
:mod:`csv` module, so a path holding a comma or a quote is written quoted).

Read once per host and metadata directory (:func:`read_record`, through ``Host.once``), at most
:data:`RECORD_LIMIT` bytes, and split by one rule for every probe that asks what a distribution installed:

* a line is what lies between two ``\\n`` (one ``\\r`` before it is dropped: pip on Windows, or a RECORD
  rewritten by hand); a line cut by the limit (the read was truncated and the data does not end in ``\\n``) is
  left out: its path or size may be cut short;
* its path is its first field, relative to the distribution's location (the ``sys.path`` entry it was found
  in); a path that is absolute, has a ``..`` component (a script or data file pip installed outside the site
  directory: ``../../../bin/tool``) or is quoted (it holds a comma or a quote) is left out;
* its size is its third field: ``None`` when that field is empty (pip's line of the RECORD itself, or a RECORD
  written without sizes); ``garbled`` when the line does not have exactly three fields or the size is not a
  number (the line's path still counts; a caller that needs the size passes it over).

The questions asked: the shared objects it lists (:attr:`Record.shared_objects`, each with its size, in the
order listed; each caller keeps its own filter on top: a size floor, a soname pattern), and its text
(:attr:`Record.text`, for a search of the whole file, such as the CPython tags of its extension modules).

:func:`keep_libraries` is what a snapshot keeps of a RECORD: the lines of its shared objects, and of the ``.pth``
files and finders through which an editable install reaches its source tree (:func:`editable_files`).
"""

from __future__ import annotations

import posixpath
import re
from typing import List, NamedTuple, Optional, Tuple

from .. import lazyre
from ..host.base import FILE_SUFFIX_FILTERS, FileResult, Host
from .loader import SHARED_OBJECT, SHARED_SUFFIX

#: The most bytes of one RECORD read (a framework's lists tens of thousands of files in about 2 MiB).
RECORD_LIMIT = 4 * 1024 * 1024


class Entry(NamedTuple):
    """One file a RECORD lists."""

    path: str  # relative to the distribution's location
    size: Optional[int]  # None: no size recorded (or ``garbled``)
    garbled: bool = False  # the line's size field is missing or not a number


def safe_path(path: str) -> bool:
    """Whether a RECORD path names a file inside the distribution's location: relative, no ``..`` component,
    not quoted."""
    return bool(path) and not path.startswith(("/", '"')) and ".." not in path.split("/")


def shared_objects(data: bytes, truncated: bool = False) -> List[Entry]:
    """The shared objects (``.so``, ``.so.N``...) a RECORD's bytes list at a safe path, in order.  Only the lines
    holding ``.so`` are split (a RECORD can list tens of thousands of files); ``truncated``: the bytes are the
    start of a longer file, so a last line without its ``\\n`` is cut and left out."""
    out: List[Entry] = []
    pos = data.find(b".so")
    while pos >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        if end < 0:
            if truncated:
                break
            end = len(data)
        line = data[start:end]
        if line.endswith(b"\r"):
            line = line[:-1]
        fields = line.split(b",")
        path = fields[0].decode("utf-8", "replace")
        if SHARED_OBJECT.search(path) and safe_path(path):
            size = fields[2].strip() if len(fields) == 3 else b"?"
            if not size:
                out.append(Entry(path, None))
            elif size.isdigit():
                out.append(Entry(path, int(size)))
            else:
                out.append(Entry(path, None, garbled=True))
        pos = data.find(b".so", end)
    return out


class Record(NamedTuple):
    """A distribution's RECORD as read (:func:`read_record`)."""

    file: FileResult
    shared_objects: Tuple[Entry, ...]

    @property
    def ok(self) -> bool:
        """Whether it could be read at all."""
        return self.file.ok

    @property
    def truncated(self) -> bool:
        """Whether :data:`RECORD_LIMIT` cut it."""
        return self.file.truncated

    @property
    def text(self) -> Optional[str]:
        """Its text (UTF-8, an undecodable byte replaced), None when it could not be read."""
        return self.file.text


def _read(host: Host, metadata_dir: str) -> Record:
    res = host.read_file(posixpath.join(metadata_dir, "RECORD"), limit=RECORD_LIMIT)
    return Record(res, tuple(shared_objects(res.data, res.truncated)) if res.data is not None else ())


def read_record(host: Host, metadata_dir: str) -> Record:
    """The RECORD in ``metadata_dir`` (a ``.dist-info`` folder), read and split once per host."""
    record: Record = host.once("record:" + metadata_dir, lambda: _read(host, metadata_dir))
    return record


#: A RECORD line of a shared object (its path, then a comma).
_RECORD_LIBRARY = lazyre.compile(SHARED_SUFFIX + ",")
#: A RECORD line of a file an editable install (PEP 660) puts at the top of the site directory to reach its
#: source tree: a ``.pth`` file (a path line: setuptools' ``__editable__.<name>-<version>.pth`` in its lax/static
#: mode, hatchling's ``_<name>.pth``, flit's and pdm's ``<name>.pth``) or setuptools' import finder
#: (``__editable___<name>_<version>_finder.py``, whose ``MAPPING`` names each top-level package's folder).
_EDITABLE_LINE = lazyre.compile(r'^(?P<path>[^,/"\r\n]+\.pth|__editable__[^,/"\r\n]*_finder\.py),', re.M)


def editable_files(text: Optional[str]) -> List[str]:
    """The paths (relative to the distribution's location) of the ``.pth`` files and setuptools finders a RECORD
    lists at the top of the site directory, in order, at most 8."""
    return [m.group("path") for m in _EDITABLE_LINE.finditer(text or "")][:8]


def _kept(line: str) -> bool:
    return bool(_RECORD_LIBRARY.search(line) or _EDITABLE_LINE.search(line))


def keep_libraries(text: str) -> str:
    """What a snapshot keeps of a RECORD file: the lines of the shared objects and of an editable install's
    ``.pth`` files and finders (what the probes read); a last line without its line break (a read cut by the
    limit) is kept without one, so that a replay reads it cut."""
    lines = text.splitlines()
    kept = "".join(line + "\n" for line in lines if _kept(line))
    if kept and not text.endswith(("\n", "\r")) and _kept(lines[-1]):
        kept = kept[:-1]
    return kept


FILE_SUFFIX_FILTERS[".dist-info/RECORD"] = keep_libraries

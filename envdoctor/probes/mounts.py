"""The mount table (``/proc/self/mounts``, else its older name ``/proc/mounts``), read once per host with one limit
and split by one rule, for every probe that asks what is mounted where: /dev/shm's size (``container.shm``) and the
mount under torch.compile's caches (``env.compile_cache``).

A line is ``source point fstype options dump pass``; the point is written with octal escapes for a space, tab,
newline or backslash (proc(5)); a line of fewer than four fields, or whose point is not absolute, is passed over.
"""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

from .. import lazyre
from ..host.base import Host

MOUNTS = "/proc/self/mounts"
#: The same table under its older name (a link to self/mounts since Linux 2.4.19): read where the first is not.
MOUNTS_LINK = "/proc/mounts"
MOUNT_TABLES = (MOUNTS, MOUNTS_LINK)
#: The most of the table read (a Kubernetes node's can run to thousands of lines).
LIMIT = 1024 * 1024
_OCTAL = lazyre.compile(r"\\([0-7]{3})")


class Table(NamedTuple):
    where: str  # the file it was read from
    mounts: List[Dict[str, Any]]  # {"point", "fstype", "options": [..]} in the table's order


def unescape(field: str) -> str:
    """A mount table's path field (space, tab, newline and backslash written as octal escapes)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def _read(host: Host) -> Optional[Table]:
    for where in MOUNT_TABLES:
        text = host.read_text(where, limit=LIMIT)
        if text is None:
            continue
        out = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 4 and parts[1].startswith("/"):
                out.append({"point": unescape(parts[1]), "fstype": parts[2], "options": parts[3].split(",")})
        return Table(where, out)
    return None


def mount_table(host: Host) -> Optional[Table]:
    """The host's mount table, read and split once per host; None when neither file can be read."""
    table: Optional[Table] = host.once("mounts", lambda: _read(host))
    return table


def mount_of(mounts: List[Dict[str, Any]], path: str) -> Optional[Dict[str, Any]]:
    """The mount a path lies on: the last-mounted entry whose mount point is the longest prefix of the path."""
    best: Optional[Dict[str, Any]] = None
    for m in mounts:
        point = m["point"].rstrip("/") or "/"
        if path == point or path.startswith(point + "/") or point == "/":
            if best is None or len(point) >= len(best["point"].rstrip("/") or "/"):
                best = m
    return best

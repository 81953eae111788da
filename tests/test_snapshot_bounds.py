"""A crafted snapshot cannot make envdoctor take memory out of proportion to what it holds.

Issue 13 measured a 59 MB crafted snapshot taking 67 s and 2.8 GB.  Here snapshots of about 59 MB are
built from a real machine (tests/machines/ubuntu2004-rtx3060-cuda118) plus junk of the shapes that cost
the most per byte: a million tiny file entries, millions of names in one directory listing, a section
envdoctor does not know holding millions of tiny nested arrays, and one giant string in a file no probe
reads.  ``diagnose --snapshot`` and ``fleet`` run on each in a subprocess; the peak resident memory of
the run is read with ``resource.getrusage(RUSAGE_CHILDREN)`` in a small wrapper process (so that what
pytest holds is not inherited into the figure).  Each must be refused with a reason (exit 2) or replayed
(exit 0/1) within a generous bound: four times the file's size.  Measured on a 2-core VM: refused in
about 2 s at 65-75 MB, the giant string replayed in about 3 s at 135 MB; before, the million files took
26-44 s and 656 MB and the directory 14 s and 367 MB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Callable, Dict, Iterator

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.path.join(ROOT, "tests", "machines", "ubuntu2004-rtx3060-cuda118", "snapshot.json")
SIZE = 59 * 1000 * 1000
#: The bound asserted: the file's size four times over (the bytes read, the text, the parsed values).
FACTOR = 4


def _write(path: str, section: str, opening: str, pieces: Iterator[str], closing: str) -> None:
    """The base machine's snapshot with ``section`` (a new top-level key, or files/dirs) holding junk,
    written piece by piece so this process never holds the crafted document."""
    with open(BASE, encoding="utf-8") as fh:
        doc = json.load(fh)
    if section in doc:  # a member of an existing section
        doc[section]["@@JUNK@@"] = None
        cut = '"@@JUNK@@": null'
    else:  # a section of its own
        doc[section] = "@@JUNK@@"
        cut = '"@@JUNK@@"'
    head, tail = json.dumps(doc).split(cut, 1)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(head + opening)
        written = 0
        for piece in pieces:
            fh.write(piece)
            written += len(piece)
            if written >= SIZE:
                break
        fh.write(closing + tail)


def _tiny_files() -> Iterator[str]:
    i = 0
    while True:
        yield '"/junk/f%d": {"text": "y"}, ' % i
        i += 1


def _names() -> Iterator[str]:
    i = 0
    while True:
        yield '"lib%07d.so", ' % i
        i += 1


def _nested() -> Iterator[str]:
    while True:
        yield "[[1, [2]], [3, 4], [[]]], "


def _giant() -> Iterator[str]:
    while True:
        yield "x" * 65536


SHAPES: Dict[str, Callable[[str], None]] = {
    "a million tiny files": lambda p: _write(p, "files", "", _tiny_files(), '"/junk/last": {"text": "y"}'),
    "millions of names in one directory": lambda p: _write(p, "dirs", '"/usr/lib/junk": {"entries": [', _names(),
                                                           '"last"]}'),
    "an unknown section of nested arrays": lambda p: _write(p, "x_junk", "[", _nested(), "[]]"),
    "a giant string no probe reads": lambda p: _write(p, "files", '"/var/log/unused.log": {"text": "', _giant(),
                                                      '"}'),
}


def _peak(args) -> Dict[str, float]:
    """Exit code and peak RSS (MB) of ``python -m envdoctor ARGS``, from a small wrapper process."""
    wrapper = ("import json, resource, subprocess, sys; "
               "r = subprocess.run([sys.executable, '-m', 'envdoctor'] + sys.argv[1:], capture_output=True); "
               "print(json.dumps({'rc': r.returncode, 'rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN)"
               ".ru_maxrss / 1024.0, 'err': r.stderr.decode('utf-8', 'replace')[-300:], "
               "'out': r.stdout.decode('utf-8', 'replace')}))")
    r = subprocess.run([sys.executable, "-c", wrapper] + list(args), capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_crafted_snapshot_is_read_within_bounded_memory(shape, tmp_path):
    path = str(tmp_path / "crafted.json")
    SHAPES[shape](path)
    size_mb = os.path.getsize(path) / 1e6
    assert size_mb > 55
    with open(path, "rb") as fh:  # the crafted file is valid JSON: refusing it is a choice, not a parse error
        assert fh.read(1) == b"{"
    got = _peak(["diagnose", "--snapshot", path, "--format", "json"])
    assert got["rc"] in (0, 1, 2) and "Traceback" not in got["err"], got
    if got["rc"] == 2:
        assert "values" in got["err"], got  # refused, saying why
    assert got["rss_mb"] < FACTOR * size_mb, (shape, size_mb, got)
    if shape == "a million tiny files":
        fleet = tmp_path / "fleet"
        fleet.mkdir()
        os.rename(path, str(fleet / "crafted.json"))
        os.symlink(BASE, str(fleet / "healthy.json"))
        got = _peak(["fleet", str(fleet), "--format", "json"])
        unreadable = [n.get("unreadable", "") for n in json.loads(got["out"])["nodes"] if n["name"] == "crafted"]
        assert got["rc"] in (0, 1) and "values" in unreadable[0], got
        assert got["rss_mb"] < FACTOR * size_mb, ("fleet", size_mb, got)


def test_a_real_capture_is_far_below_the_limit_on_values():
    import gzip

    from envdoctor.host.snapshot import MAX_SNAPSHOT_VALUES, _count_values

    with gzip.open(os.path.join(ROOT, "tests", "live", "h100-ubuntu2404-container", "snapshot.json.gz")) as fh:
        raw = fh.read()
    # About 7,000 values (13,000 counted loosely, with the commas of its files' text): room for far bigger machines.
    assert _count_values(raw) * 8 < MAX_SNAPSHOT_VALUES
    # Commas in a file's text do not count against a snapshot small enough to be counted exactly.
    doc = json.loads(raw)
    doc["files"]["/var/lib/dpkg/status"] = {"text": "Depends: a, b, c\n" * 80000}
    text = json.dumps(doc).encode()
    assert _count_values(text) < MAX_SNAPSHOT_VALUES


def _documented_bound(raw: bytes) -> int:
    """The bound _count_values documents: 1 + 2 commas + arrays + 2 objects, counted again without the strings'
    contents when that is over the limit on a file small enough."""
    import re

    from envdoctor.host.snapshot import _EXACT_COUNT_BYTES, MAX_SNAPSHOT_VALUES

    def bound(data: bytes) -> int:
        return 1 + 2 * data.count(b",") + data.count(b"[") + 2 * data.count(b"{")

    loose = bound(raw)
    if loose <= MAX_SNAPSHOT_VALUES or len(raw) > _EXACT_COUNT_BYTES:
        return loose
    return bound(re.sub(rb'"[^"\\]*(?:\\.[^"\\]*)*"', b'""', raw))


def _decides_as_documented(raw: bytes, doc: object) -> None:
    """The count and the reader decide ``raw`` as the documented bound does: a refusal names the documented count,
    a file under the limit reads as ``doc``."""
    from envdoctor.host.snapshot import MAX_SNAPSHOT_VALUES, SnapshotError, _count_values, read_document

    want = _documented_bound(raw)
    got = _count_values(raw)
    assert (got <= MAX_SNAPSHOT_VALUES) == (want <= MAX_SNAPSHOT_VALUES)
    if want > MAX_SNAPSHOT_VALUES:
        assert got == want
        with pytest.raises(SnapshotError, match="holds up to %d values" % want):
            read_document("crafted.json", raw=raw)
    else:
        assert read_document("crafted.json", raw=raw) == doc


@pytest.mark.parametrize("doc", [
    {"a": [0] * 99_000},  # just under the limit, counted either way
    {"a": [[]] * 66_000},  # arrays: the one-pass bound counts them twice, the documented one once
    {"a": [[]] * 67_000},  # over the one-pass bound only: decided by the documented one (read)
    {"a": [0] * 100_001},  # over the limit: refused, with the documented count
    {"a": [{}] * 70_000},  # objects: over the limit
    {"t": "a, b, [c], {d}" * 40_000},  # punctuation in a string: counted out exactly, read
])
@pytest.mark.parametrize("compact", [False, True], ids=["spaced", "compact"])
def test_the_value_bound_decides_as_documented(doc: Dict[str, object], compact: bool) -> None:
    raw = json.dumps(doc, separators=(",", ":") if compact else None).encode()
    _decides_as_documented(raw, doc)


@pytest.mark.parametrize("where", ["leading", "trailing", "none"])
@pytest.mark.parametrize("items", [66_000, 99_000, 100_001])
def test_spaces_counted_in_part_decide_as_the_whole_count(where: str, items: int) -> None:
    """The spaces are counted only until the quick bound is under the limit: wherever they lie in the file (all
    before the values, all after them, none), the decision and a refusal's count are the documented ones."""
    body = json.dumps({"a": [0] * items}, separators=(",", ":")).encode()
    pad = b" " * 150_000 if where != "none" else b""
    raw = pad + body if where == "leading" else body + pad
    _decides_as_documented(raw, {"a": [0] * items})


@pytest.mark.parametrize("indent", [1, 2, 8])
@pytest.mark.parametrize("items", [20_000, 49_000, 66_000, 100_001])
def test_indented_files_above_the_parse_first_size_decide_as_the_whole_count(indent: int, items: int) -> None:
    """An indented document larger than the parse-first size (a many-GPU report), its spaces a large share of it
    but not enough to settle the bound: counting them stops once the bytes left could not make up the rest, and
    the decision and a refusal's count are the documented ones."""
    doc = {"a": [{"k": n % 7} for n in range(items // 2)] + [0] * (items - items // 2)}
    raw = json.dumps(doc, indent=indent).encode()
    from envdoctor.host.snapshot import _PARSE_FIRST_BYTES

    assert len(raw) > _PARSE_FIRST_BYTES
    _decides_as_documented(raw, doc)


def test_a_regular_file_is_read_whole_at_its_size(tmp_path) -> None:
    """A regular file is read at its size (one read of it and a byte more), small or large, to its end."""
    from envdoctor.host.snapshot import read_raw

    for items in (3, 50_000):
        doc = (json.dumps({"a": list(range(items))}) + "\n").encode()
        path = tmp_path / ("r%d.json" % items)
        path.write_bytes(doc)
        assert read_raw(str(path)) == doc


@pytest.mark.parametrize("number", ["7" * 4299, "-" + "7" * 4299, "7" * 4300, "-" + "7" * 4300, "7" * 4301,
                                    "-" + "7" * 5000, "12", "-0"])
def test_long_integers_are_read_or_refused_as_the_digit_limit_says(number: str) -> None:
    """At most MAX_INT_DIGITS characters (the sign included) make a number; longer, the file is refused with the
    number of digits, whatever limit the interpreter itself puts on turning text into an int."""
    from envdoctor.host.snapshot import MAX_INT_DIGITS, SnapshotError, read_document

    raw = ('{"schema_version": 1, "n": %s}' % number).encode()
    if len(number) > MAX_INT_DIGITS:
        with pytest.raises(SnapshotError, match="a number of %d digits" % len(number.lstrip("-"))):
            read_document("crafted.json", raw=raw)
    else:
        assert read_document("crafted.json", raw=raw)["n"] == int(number)
    if hasattr(sys, "get_int_max_str_digits"):
        assert sys.get_int_max_str_digits() == 4300  # the interpreter's own limit is left as it was


# -- the count folded into the parse (files up to _PARSE_FIRST_BYTES) ------------------------------------------------

def _json_values():
    from hypothesis import strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(allow_nan=False,
                        allow_infinity=False), st.text(alphabet=',[]{}" \\ax\u00e9', max_size=6))
    return st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=6),
                                                         st.dictionaries(st.text(alphabet=',[{a"', max_size=3), inner,
                                                                         max_size=5)), max_leaves=60)


def test_valid_json_never_holds_more_than_four_thirds_of_its_bytes() -> None:
    """What lets a small file be parsed before it is counted: valid JSON of L bytes is at most 1 + 4L/3 by the
    documented bound (the densest text, a list of empty objects, comes within a few values of it)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=400, deadline=None)
    @given(doc=_json_values(), compact=st.booleans())
    def check(doc: object, compact: bool) -> None:
        raw = json.dumps(doc, separators=(",", ":") if compact else None, ensure_ascii=False).encode()
        assert _documented_bound(raw) <= 1 + 4 * len(raw) / 3

    check()
    densest = json.dumps([{}] * 1000, separators=(",", ":")).encode()
    assert _documented_bound(densest) > 1 + 4 * len(densest) / 3 - 3


@pytest.mark.parametrize("shape", ["list of empty objects", "list of zeros", "nested lists"])
def test_the_largest_file_parsed_first_is_read_whatever_it_holds(shape: str) -> None:
    """A valid document of _PARSE_FIRST_BYTES, of the shapes that hold the most values a byte, is under the limit
    by the documented count, and read."""
    from envdoctor.host.snapshot import _PARSE_FIRST_BYTES, MAX_SNAPSHOT_VALUES, _count_values, read_document

    item = {"list of empty objects": "{}", "list of zeros": "0", "nested lists": "[[]]"}[shape]
    n = (_PARSE_FIRST_BYTES - len('{"a":[]}') + 1) // (len(item) + 1)
    raw = ('{"a":[' + ",".join([item] * n) + "]}").encode()
    raw += b" " * (_PARSE_FIRST_BYTES - len(raw))
    assert len(raw) == _PARSE_FIRST_BYTES
    assert _documented_bound(raw) <= MAX_SNAPSHOT_VALUES and _count_values(raw) <= MAX_SNAPSHOT_VALUES
    assert len(read_document("crafted.json", raw=raw)["a"]) == n


@pytest.mark.parametrize("body", [
    b"[" + b"," * 100_001,  # commas: two values a byte, not JSON
    b"{" * 100_001,  # objects that never close
    b"\xff" + b"," * 100_001,  # not UTF-8
    b"[" * 50_000 + b"{" * 75_001,  # nested too deep for the parse, and over the limit
    b"[" + b"{}," * 40_000 + b"," * 20_001,  # forty thousand objects parsed, then a comma where a value goes
])
def test_a_small_file_that_does_not_parse_is_refused_for_its_values_first(body: bytes) -> None:
    """A file parsed before it is counted, that does not parse, is counted then: over the limit, the refusal is
    the one a count before the parse gives (the values), not the parse's complaint."""
    from envdoctor.host.snapshot import _PARSE_FIRST_BYTES, MAX_SNAPSHOT_VALUES, SnapshotError, read_document

    raw = body
    assert len(raw) <= _PARSE_FIRST_BYTES
    want = _documented_bound(raw)
    assert want > MAX_SNAPSHOT_VALUES
    with pytest.raises(SnapshotError, match="holds up to %d values, more than the %d" % (want, MAX_SNAPSHOT_VALUES)):
        read_document("crafted.json", raw=raw)


@pytest.mark.parametrize("raw, why", [
    (b'{"a": [1, 2', "not valid JSON .the file looks truncated.: Expecting"),
    (b"\xff{}", "not UTF-8 text"),
    (b"[" * 50_000, "nested far deeper"),
    (b"[1, 2]", "must be a JSON object"),
])
def test_a_small_file_under_the_limit_that_does_not_parse_says_why(raw: bytes, why: str) -> None:
    from envdoctor.host.snapshot import SnapshotError, read_document

    with pytest.raises(SnapshotError, match=why):
        read_document("crafted.json", raw=raw)


@pytest.mark.parametrize("where", ["small", "large"])
def test_a_hostile_report_is_refused_within_bounded_memory(where: str) -> None:
    """Millions of tiny values: a large file is refused before it is parsed, a small one (parsed first, or counted
    once its parse fails) costs a few times its size; the message is the count's."""
    import gc
    import tracemalloc

    from envdoctor.host.snapshot import _PARSE_FIRST_BYTES, MAX_SNAPSHOT_VALUES, SnapshotError, read_document

    if where == "large":
        raw = b'{"a": [' + b"[]," * 3_000_000 + b"[]]}"  # 9 MB: parsed, about 200 MB of lists
    else:
        raw = b"[" + b"{}," * 40_000 + b"," * 20_001  # forty thousand objects parsed, the parse fails, then counted
    want = _documented_bound(raw)
    assert want > MAX_SNAPSHOT_VALUES and (len(raw) <= _PARSE_FIRST_BYTES) == (where == "small")
    gc.collect()
    tracemalloc.start()
    try:
        with pytest.raises(SnapshotError, match="holds up to %d values" % want):
            read_document("hostile.json", raw=raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * len(raw) + (8 << 20), peak  # the bytes counted, a copy without strings; never the values

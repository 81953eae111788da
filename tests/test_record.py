"""A distribution's RECORD, read once per host by one rule (envdoctor.probes.record): which lines count, their
paths and sizes, the limit, and what a snapshot keeps of it."""

from __future__ import annotations

from typing import Any, List

from envdoctor.host.base import FileResult
from envdoctor.host.live import LiveHost
from envdoctor.host.privacy import Scrubber
from envdoctor.host.snapshot import SnapshotHost, document_from_host
from envdoctor.probes import record
from envdoctor.probes.record import Entry, keep_libraries, read_record, safe_path, shared_objects


def test_safe_paths() -> None:
    assert safe_path("pkg/_C.so") and safe_path("..pkg/x.so") and safe_path("./pkg/x.so")
    assert not safe_path("/usr/lib/libfoo.so")  # absolute
    assert not safe_path("../../../lib/libfoo.so") and not safe_path("pkg/../../x.so")  # outside the site
    assert not safe_path('"pkg/a,b.so"') and not safe_path("")  # quoted (holds a comma or a quote); none


def test_lines_that_count() -> None:
    data = (b"pkg/__init__.py,sha256=a,10\n"
            b"pkg/_C.cpython-311-x86_64-linux-gnu.so,sha256=b,40960\r\n"  # CRLF
            b"pkg/lib/libfoo.so.12,sha256=c,1048576\n"
            b"/opt/abs/libbar.so,,\n"  # absolute
            b"../../../lib/libdata.so,sha256=d,5\n"  # a data file outside the site directory
            b"pkg/../../escape.so,sha256=e,5\n"
            b'"pkg/a,b.so",sha256=f,5\n'  # quoted: pip's csv writer quotes a path with a comma
            b"pkg/solver.py,sha256=g,5\n"  # ".so" inside a name, not a shared object
            b"pkg/libfoo.so.bak,sha256=h,5\n"
            b"pkg/last.so,,")  # the file's last line, no line break: kept
    assert shared_objects(data) == [Entry("pkg/_C.cpython-311-x86_64-linux-gnu.so", 40960),
                                    Entry("pkg/lib/libfoo.so.12", 1048576), Entry("pkg/last.so", None)]
    assert shared_objects(b"") == [] and shared_objects(b"\n\n,.so\n\n") == []


def test_sizes_missing_or_garbled() -> None:
    data = (b"a/none.so,,\n"  # no size recorded
            b"a/spaces.so,sha256=x, 77 \n"
            b"a/letters.so,sha256=x,12ab\n"  # garbled
            b"a/two.so,sha256=x\n"  # no size field
            b"a/one.so\n"
            b"a/four.so,sha256=x,12,extra\n")  # a field too many: the size is not known
    assert shared_objects(data) == [Entry("a/none.so", None), Entry("a/spaces.so", 77),
                                    Entry("a/letters.so", None, True), Entry("a/two.so", None, True),
                                    Entry("a/one.so", None, True), Entry("a/four.so", None, True)]


def test_a_line_cut_by_the_limit_is_left_out() -> None:
    data = b"pkg/whole.so,sha256=x,300000\npkg/cut.so,sha256=y,12"  # "123456" cut after two digits
    assert [e.path for e in shared_objects(data, truncated=True)] == ["pkg/whole.so"]
    assert [e.path for e in shared_objects(data + b"\n", truncated=True)] == ["pkg/whole.so", "pkg/cut.so"]
    assert [e.path for e in shared_objects(data)] == ["pkg/whole.so", "pkg/cut.so"]


class _Counting(LiveHost):
    def __init__(self) -> None:
        super().__init__()
        self.reads: List[str] = []

    def read_file(self, path: str, limit: int = 1 << 20) -> FileResult:
        self.reads.append(path)
        return super().read_file(path, limit)


def _dist(tmp_path: Any, text: bytes) -> str:
    meta = tmp_path / "site-packages" / "pkg-1.0.dist-info"
    meta.mkdir(parents=True)
    (meta / "RECORD").write_bytes(text)
    return str(meta)


def test_read_once_per_host_and_folder(tmp_path: Any) -> None:
    meta = _dist(tmp_path, b"pkg/_C.so,sha256=x,300000\npkg/__init__.py,,\n")
    host = _Counting()
    first = read_record(host, meta)
    assert first.ok and not first.truncated and first.shared_objects == (Entry("pkg/_C.so", 300000),)
    assert first.text == "pkg/_C.so,sha256=x,300000\npkg/__init__.py,,\n"
    assert read_record(host, meta) is first and host.reads == [meta + "/RECORD"]
    assert read_record(_Counting(), meta) is not first  # another host reads its own
    missing = read_record(host, str(tmp_path))
    assert not missing.ok and missing.text is None and missing.shared_objects == ()


def test_over_the_limit(tmp_path: Any, monkeypatch: Any) -> None:
    lines = b"".join(b"pkg/m%03d.so,sha256=abcdef,300000\n" % i for i in range(20))
    meta = _dist(tmp_path, lines)
    monkeypatch.setattr(record, "RECORD_LIMIT", 80)  # 2 whole lines (33 bytes each) and a cut one
    got = read_record(LiveHost(), meta)
    assert got.truncated and [e.path for e in got.shared_objects] == ["pkg/m000.so", "pkg/m001.so"]
    assert got.text is not None and len(got.text) == 80


def test_a_snapshot_keeps_the_shared_objects_and_reads_the_same(tmp_path: Any, monkeypatch: Any) -> None:
    assert keep_libraries("a/x.so,h,1\r\na/y.py,h,2\na/z.so.1,h,3\n") == "a/x.so,h,1\na/z.so.1,h,3\n"
    assert keep_libraries("a/x.so,h,1\na/cut.so,h,12") == "a/x.so,h,1\na/cut.so,h,12"  # the last line as read
    assert keep_libraries("a/x.so,h,1\na/y.py,h") == "a/x.so,h,1\n" and keep_libraries("") == ""
    meta = _dist(tmp_path, b"".join(b"pkg/m%03d.so,sha256=abcdef,300000\n" % i for i in range(20)))
    monkeypatch.setattr(record, "RECORD_LIMIT", 80)
    live = LiveHost()
    first = read_record(live, meta)
    replay = read_record(SnapshotHost(document_from_host(live, Scrubber(include_host=True), "test"), "test"), meta)
    assert replay.truncated and replay.shared_objects == first.shared_objects

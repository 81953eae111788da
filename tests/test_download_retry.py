"""The downloader does what the dry-run script's curl does: it retries the answers curl's ``--retry`` retries
(HTTP 408, 429, 500, 502, 503, 504), and a resumed download sends ``If-Range``, so a file that changed on
the server since is fetched whole instead of spliced onto the old bytes.

The loopback server of tests/loopback.py plays the mirror: it honours Range and If-Range with a strong ETag
the way RFC 9110 13.1.5 says, and can answer a request with a status, or cut its body off halfway."""

from __future__ import annotations

import hashlib
import os

import pytest

from envdoctor.install.archive import Download
from envdoctor.install.download import DownloadError, DownloadOptions, download
from envdoctor.install.plan import action_sh

from .loopback import Server

PAYLOAD = bytes(range(256)) * 512  # 128 KiB
PATH = "/file.tar.xz"


class Mirror(Server):
    """One file, with a strong ETag."""

    def __init__(self) -> None:
        super().__init__({PATH: PAYLOAD}, etags={PATH: '"v1"'})
        self.file_url = self.url + PATH

    def answer(self, *modes: str) -> None:
        self.fail(PATH, *modes)

    def replace(self, data: bytes, etag: str) -> None:
        self.files[PATH], self.etags[PATH] = data, etag

    def asked(self):
        """What each request asked for: its Range and If-Range."""
        return [{"range": r["range"], "if_range": r["if_range"]} for r in self.requests_for(PATH)]


@pytest.fixture
def mirror():
    m = Mirror()
    yield m
    m.close()


def _opts(retries: int) -> DownloadOptions:
    return DownloadOptions(timeout=5, retries=retries, backoff=0)


def test_the_dry_run_script_retries_server_errors_and_so_does_the_downloader(mirror, tmp_path):
    # curl --retry N retries 5xx (the script's line); the downloader must too, not give up at once.
    script = action_sh(Download(mirror.file_url, str(tmp_path / "s"), "0" * 64, 1))
    line = next(x for x in script if x.startswith("curl"))
    assert "--retry 3" in line
    mirror.answer("503", "502")
    dest = str(tmp_path / "f.tar.xz")
    download(mirror.file_url, dest, hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(retries=3))
    with open(dest, "rb") as fh:
        assert fh.read() == PAYLOAD
    assert len(mirror.asked()) == 3


def test_a_server_error_past_the_retries_is_reported_with_its_status(mirror, tmp_path):
    mirror.answer("503", "503")
    with pytest.raises(DownloadError, match="HTTP 503"):
        download(mirror.file_url, str(tmp_path / "f"), hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(1))
    assert len(mirror.asked()) == 2
    mirror.answer("404")  # not transient: asked once
    mirror.requests.clear()
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(mirror.file_url, str(tmp_path / "g"), hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(3))
    assert len(mirror.asked()) == 1


def test_a_resume_sends_if_range_and_a_file_changed_since_is_fetched_whole(mirror, tmp_path):
    dest = str(tmp_path / "f.tar.xz")
    mirror.answer("cut")
    with pytest.raises(DownloadError, match="cut off"):
        download(mirror.file_url, dest, hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(0))
    kept = os.path.getsize(dest + ".part")
    assert 0 < kept < len(PAYLOAD)
    # The mirror now serves a new build of the file (same size, other bytes, a new ETag).
    new = bytes(reversed(PAYLOAD))
    mirror.replace(new, '"v2"')
    download(mirror.file_url, dest, hashlib.sha256(new).hexdigest(), len(PAYLOAD), _opts(0))
    with open(dest, "rb") as fh:
        assert fh.read() == new  # not the old half with the new file's second half
    assert mirror.asked()[-1] == {"range": "bytes=%d-" % kept, "if_range": '"v1"'}
    assert not os.path.exists(dest + ".part") and not os.path.exists(dest + ".part.validator")


def test_an_unchanged_file_is_resumed_where_it_stopped(mirror, tmp_path):
    dest = str(tmp_path / "f.tar.xz")
    mirror.answer("cut")
    download(mirror.file_url, dest, hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(1))
    with open(dest, "rb") as fh:
        assert fh.read() == PAYLOAD
    first, second = mirror.asked()
    assert first == {"range": None, "if_range": None}
    assert second["range"].startswith("bytes=") and second["if_range"] == '"v1"'

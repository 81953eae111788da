"""The downloader does what the dry-run script's curl does: it retries the answers curl's ``--retry`` retries
(HTTP 408, 429, 500, 502, 503, 504), and a resumed download sends ``If-Range``, so a file that changed on
the server since is fetched whole instead of spliced onto the old bytes.

A local HTTP server (http.server, on 127.0.0.1) plays the mirror: it honours Range and If-Range with a
strong ETag the way RFC 9110 13.1.5 says, and can answer with a status, or cut the body off halfway."""

from __future__ import annotations

import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional

import pytest

from envdoctor.install.download import DownloadError, DownloadOptions, download
from envdoctor.install.plan import Download, action_sh

PAYLOAD = bytes(range(256)) * 512  # 128 KiB


class Mirror:
    def __init__(self) -> None:
        self.data = PAYLOAD
        self.etag = '"v1"'
        self.queue: List[str] = []  # the next answers: "503", "cut" ...
        self.requests: List[Dict[str, Optional[str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                rng, if_range = self.headers.get("Range"), self.headers.get("If-Range")
                outer.requests.append({"range": rng, "if_range": if_range})
                mode = outer.queue.pop(0) if outer.queue else ""
                if mode.isdigit():
                    self.send_response(int(mode))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data, start = outer.data, 0
                partial = rng and rng.startswith("bytes=") and (if_range is None or if_range == outer.etag)
                if partial:
                    start = int(rng[6:].rstrip("-"))
                    self.send_response(206)
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("ETag", outer.etag)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "cut":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d/file.tar.xz" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def mirror():
    m = Mirror()
    yield m
    m.close()


def _opts(retries: int) -> DownloadOptions:
    return DownloadOptions(timeout=5, retries=retries, backoff=0)


def test_the_dry_run_script_retries_server_errors_and_so_does_the_downloader(mirror, tmp_path):
    # curl --retry N retries 5xx (the script's line); the downloader must too, not give up at once.
    line = next(x for x in action_sh(Download(mirror.url, str(tmp_path / "s"), "0" * 64, 1)) if x.startswith("curl"))
    assert "--retry 3" in line
    mirror.queue = ["503", "502"]
    dest = str(tmp_path / "f.tar.xz")
    download(mirror.url, dest, hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(retries=3))
    with open(dest, "rb") as fh:
        assert fh.read() == PAYLOAD
    assert len(mirror.requests) == 3


def test_a_server_error_past_the_retries_is_reported_with_its_status(mirror, tmp_path):
    mirror.queue = ["503", "503"]
    with pytest.raises(DownloadError, match="HTTP 503"):
        download(mirror.url, str(tmp_path / "f"), hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(1))
    assert len(mirror.requests) == 2
    mirror.queue = ["404"]  # not transient: asked once
    mirror.requests.clear()
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(mirror.url, str(tmp_path / "g"), hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(3))
    assert len(mirror.requests) == 1


def test_a_resume_sends_if_range_and_a_file_changed_since_is_fetched_whole(mirror, tmp_path):
    dest = str(tmp_path / "f.tar.xz")
    mirror.queue = ["cut"]
    with pytest.raises(DownloadError, match="cut off"):
        download(mirror.url, dest, hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(0))
    kept = os.path.getsize(dest + ".part")
    assert 0 < kept < len(PAYLOAD)
    # The mirror now serves a new build of the file (same size, other bytes, a new ETag).
    mirror.data, mirror.etag = bytes(reversed(PAYLOAD)), '"v2"'
    download(mirror.url, dest, hashlib.sha256(mirror.data).hexdigest(), len(PAYLOAD), _opts(0))
    with open(dest, "rb") as fh:
        assert fh.read() == mirror.data  # not the old half with the new file's second half
    assert mirror.requests[-1] == {"range": "bytes=%d-" % kept, "if_range": '"v1"'}
    assert not os.path.exists(dest + ".part") and not os.path.exists(dest + ".part.validator")


def test_an_unchanged_file_is_resumed_where_it_stopped(mirror, tmp_path):
    dest = str(tmp_path / "f.tar.xz")
    mirror.queue = ["cut"]
    download(mirror.url, dest, hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), _opts(1))
    with open(dest, "rb") as fh:
        assert fh.read() == PAYLOAD
    first, second = mirror.requests
    assert first == {"range": None, "if_range": None}
    assert second["range"].startswith("bytes=") and second["if_range"] == '"v1"'

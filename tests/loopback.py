"""The loopback HTTP server the download and install tests use as a mirror (http.server on 127.0.0.1).

It serves ``files`` (path -> bytes) and answers ``Range: bytes=N-`` with 206 and a Content-Range, or 416 past
the end. A path given a strong ETag (``etags``) sends it, and honours ``If-Range`` the way RFC 9110 13.1.5
says: the rest of the file (206) only while the validator still matches, the whole file (200) once it changed.
Each request takes the next entry of its path's ``modes`` queue, so a test can make request N fail:

* ``""``: answer normally;
* ``"503"`` (any number): that status, with an empty body;
* ``"cut"``: half the body, then the connection is closed;
* ``"slow"``: the whole body over about two seconds;
* ``"stall"``: half the body, then nothing for up to 10 s;
* ``"trickle"``: one byte every ``trickle_interval`` seconds (2 s by default), until the server closes.

``redirects`` (path -> Location) answers those paths with 302 and that Location (another path, a
``file://`` or ``ftp://`` URL, or a loop). With ``auth`` (``"user:password"``), a request without that
HTTP Basic authorisation is answered 401.

A closed range (``Range: bytes=N-M``, how safetensors headers are read) answers 206 with those bytes, unless
``ignore_ranges`` is set (then the whole file, 200, as a server that does not do ranges). A path ending in
``/`` or ``.html`` is sent as text/html (a package index page, a pip find-links page). Every request is
recorded (path, Range, If-Range, Authorization); ``sent`` counts the body bytes written per path. The server
stops itself after ``lifetime`` seconds.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional
from urllib.parse import unquote

__all__ = ["Server"]


class Server:
    def __init__(self, files: Dict[str, bytes], lifetime: float = 60.0,
                 etags: Optional[Dict[str, str]] = None, redirects: Optional[Dict[str, str]] = None,
                 auth: Optional[str] = None, trickle_interval: float = 2.0) -> None:
        self.files = dict(files)
        self.redirects: Dict[str, str] = dict(redirects or {})
        self.auth = auth
        self.trickle_interval = trickle_interval
        self.etags: Dict[str, str] = dict(etags or {})  # path -> strong ETag, e.g. '"v1"'
        self.modes: Dict[str, List[str]] = {}  # path -> modes for the next requests ("", "503", "cut"...)
        self.requests: List[Dict[str, Optional[str]]] = []  # path, range, if_range, authorization
        self.sent: Dict[str, int] = {}
        self.ignore_ranges = False
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                path = unquote(self.path.split("?", 1)[0])  # torch-1.7.1%2Bcu110-... is torch-1.7.1+cu110-...
                rng, if_range = self.headers.get("Range"), self.headers.get("If-Range")
                outer.requests.append({"path": path, "range": rng, "if_range": if_range,
                                       "authorization": self.headers.get("Authorization")})
                if outer.auth is not None:
                    import base64

                    want = "Basic " + base64.b64encode(outer.auth.encode()).decode()
                    if self.headers.get("Authorization") != want:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="mirror"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                if path in outer.redirects:
                    self.send_response(302)
                    self.send_header("Location", outer.redirects[path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = outer.files.get(path)
                if data is None:
                    self.send_error(404)
                    return
                queue = outer.modes.get(path) or []
                mode = queue.pop(0) if queue else ""
                if mode.isdigit():
                    self.send_response(int(mode))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                etag = outer.etags.get(path)
                closed = re.match(r"^bytes=(\d+)-(\d+)$", rng or "")
                if closed and not outer.ignore_ranges:
                    lo, hi = int(closed.group(1)), min(int(closed.group(2)), len(data) - 1)
                    if lo >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", "bytes */%d" % len(data))
                        self.end_headers()
                        return
                    part = data[lo:hi + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (lo, hi, len(data)))
                    self.send_header("Content-Length", str(len(part)))
                    self.end_headers()
                    # counted before it is written: the client may have read it all, and the test asked, before
                    # this thread runs again
                    outer.sent[path] = outer.sent.get(path, 0) + len(part)
                    self.wfile.write(part)
                    return
                start = 0
                partial = rng and not outer.ignore_ranges and rng.startswith("bytes=") and rng.endswith("-") and (
                    if_range is None or (etag is not None and if_range == etag))
                if partial:
                    start = int(rng[6:-1])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", "bytes */%d" % len(data))
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                else:
                    self.send_response(200)
                body = data[start:]
                if etag is not None:
                    self.send_header("ETag", etag)
                if path.endswith(("/", ".html")):  # an index page (pip reads only text/html ones)
                    self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "cut":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if mode == "slow":  # the whole file, over about two seconds
                    step = max(1, len(body) // 20)
                    for i in range(0, len(body), step):
                        self.wfile.write(body[i:i + step])
                        self.wfile.flush()
                        outer.stop.wait(0.1)
                    return
                if mode == "trickle":  # one byte at a time, slower than any reasonable mirror
                    for i in range(len(body)):
                        if outer.stop.wait(outer.trickle_interval):
                            break
                        try:
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                        except OSError:
                            break
                    self.close_connection = True
                    return
                if mode == "stall":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    outer.stop.wait(10)  # bounded: never longer than 10 s
                    self.close_connection = True
                    return
                try:
                    self.wfile.write(body)
                    outer.sent[path] = outer.sent.get(path, 0) + len(body)
                except OSError:  # the client read what it needed and closed the connection
                    outer.sent[path] = outer.sent.get(path, 0)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.timer = threading.Timer(lifetime, self.close)
        self.timer.daemon = True
        self.timer.start()

    def close(self) -> None:
        self.stop.set()
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def fail(self, path: str, *modes: str) -> None:
        """The next requests for ``path`` answer with these modes, in order (then normally)."""
        self.modes[path] = list(modes)

    def requests_for(self, suffix: str) -> List[Dict[str, Optional[str]]]:
        return [r for r in self.requests if (r["path"] or "").endswith(suffix)]

    def ranges(self, suffix: str) -> List[Optional[str]]:
        return [r["range"] for r in self.requests_for(suffix)]

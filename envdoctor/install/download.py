"""Downloads: streamed, resumable, verified.

* ``requests`` is imported inside the functions (``diagnose`` never imports it);
  proxies come from the usual ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``
  variables, which ``requests`` honours.
* A download goes to ``DEST.part``; an interrupted one is resumed with an
  HTTP ``Range`` request (on a retry, or on the next run), sent with ``If-Range`` and the
  validator (strong ETag, else Last-Modified) the first response gave, kept in
  ``DEST.part.validator``: a file that changed on the server since is sent whole, never
  spliced onto the old bytes.
* Answers a retry may cure (HTTP 408, 429, 500, 502, 503, 504: what ``curl --retry`` in the
  dry-run script retries) are retried by ``urllib3.Retry`` mounted on the session, with the same
  backoff; connection errors and cut-off transfers by the resuming loop below.
* Two bounds: ``timeout`` is how long one read may wait for data, ``deadline`` how long one file may take,
  every attempt included (a server trickling a byte every few seconds satisfies every read and would never be
  given up on). Each attempt runs in a worker thread (:func:`_within`) the caller waits on no longer than the
  deadline; past it, the connection is shut down, what arrived stays in ``DEST.part`` for a later resume.
* Redirects are followed (at most :data:`MAX_REDIRECTS`) to http:// and https:// only; a loop, or a redirect
  elsewhere (``file://``, ``ftp://``), is a :class:`DownloadError` naming it.
* A URL's credentials (``https://user:password@mirror/...``) are sent, never shown: every message and log
  line names the URL as :func:`envdoctor.install.validate.shown_url` writes it.
* The finished file is checked against its size and sha256 before it is
  renamed to ``DEST``; a mismatch deletes it, so nothing unverified remains.
* A progress bar is drawn on a terminal only.
"""

from __future__ import annotations

import errno
import functools
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, TextIO

from .. import __version__
from .validate import shown_url

USER_AGENT = f"envdoctor/{__version__}"
CHUNK = 64 * 1024
DEFAULT_TIMEOUT = 30.0
#: How long one file may take, every attempt included (``install --download-deadline``; the script's
#: ``curl --max-time``): an hour is 1.4 GB at 400 kB/s; what arrived is kept, so a re-run resumes.
DEFAULT_DEADLINE = 3600.0
DEFAULT_RETRIES = 3
MAX_REDIRECTS = 10
#: Largest manifest accepted (NVIDIA's CUDA manifests are about 60 KB).
MAX_MANIFEST_BYTES = 8 * 1024 * 1024


class DownloadError(Exception):
    """A download failed; the message says what and why, in one or two lines. ``unreachable``: the server was
    never reached (no network, no DNS, refused, a proxy down), as opposed to an answer that was wrong."""

    def __init__(self, message: str, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass
class DownloadOptions:
    timeout: float = DEFAULT_TIMEOUT  # seconds without data before giving up on an attempt
    retries: int = DEFAULT_RETRIES  # further attempts after the first
    backoff: float = 1.0  # seconds before the first retry, doubled each time
    progress: Optional[TextIO] = None  # where to draw a progress bar (None: quiet)
    deadline: float = DEFAULT_DEADLINE  # seconds one file may take, every attempt included


def default_progress_stream() -> Optional[TextIO]:
    """stderr when it is a terminal, else None (no progress bars in logs and pipes)."""
    try:
        return sys.stderr if sys.stderr.isatty() else None
    except (AttributeError, ValueError):
        return None


def sha256_of(path: str) -> str:
    import hashlib  # here: OpenSSL's library is loaded with it, and planning an install never hashes

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1024 * 1024), b""):
            h.update(block)
    return h.hexdigest()


#: HTTP statuses retried: curl's "transient" answers (``curl --retry``, which the dry-run script uses).
RETRY_STATUSES = (408, 429, 500, 502, 503, 504)


def _session(opts: Optional[DownloadOptions] = None) -> Any:
    """A requests session whose adapters retry :data:`RETRY_STATUSES` ``opts.retries`` times (GET only, the
    backoff doubling from ``opts.backoff``; a ``Retry-After`` is not waited for, so a run stays bounded)."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    o = opts or DownloadOptions()
    kwargs: Dict[str, Any] = dict(total=None, connect=0, read=0, redirect=None, status=max(0, o.retries),
                                  status_forcelist=RETRY_STATUSES, backoff_factor=o.backoff,
                                  raise_on_status=False, respect_retry_after_header=False)
    try:
        retry = Retry(other=0, **kwargs)
    except TypeError:  # urllib3 before 1.26 has no "other" count
        retry = Retry(**kwargs)
    s = requests.Session()
    s.max_redirects = MAX_REDIRECTS
    s.headers["User-Agent"] = USER_AGENT
    adapter = HTTPAdapter(max_retries=retry)
    s.mount("https://", adapter)
    s.mount("http://", adapter)
    return s


def _validator_path(part: str) -> str:
    return part + ".validator"


def _validator(headers: Any) -> Optional[str]:
    """What ``If-Range`` may carry for this response: a strong ETag, else its Last-Modified (RFC 9110 13.1.5)."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return str(etag)
    modified = headers.get("Last-Modified")
    return str(modified) if modified else None


def _forget(part: str) -> None:
    """Remove ``part`` and its validator (a partial download proven wrong, or finished)."""
    for path in (part, _validator_path(part)):
        try:
            os.remove(path)
        except OSError:
            pass


def _transient_errors() -> tuple:
    import requests

    return (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
            requests.exceptions.ChunkedEncodingError)


def _describe(exc: BaseException, timeout: float) -> str:
    import requests

    text = str(exc)
    if isinstance(exc, (requests.exceptions.ReadTimeout,)) or "Read timed out" in text:
        return f"the server stopped sending data (no data for {timeout:.1f}s)"
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return f"could not connect within {timeout:.1f}s"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError) or "IncompleteRead" in text:
        return "the connection was cut off before the file was complete"
    if isinstance(exc, requests.exceptions.ConnectionError):
        why = unreachable_reason(exc)
        return ("could not connect: " + why) if why else "the server closed the connection before it answered"
    return _short(text)


def unreachable_reason(exc: BaseException) -> Optional[str]:
    """Why a connection was never made, in words (never the HTTP library's own text, which quotes its
    internals): the cause found in the chain of exceptions requests and urllib3 wrap it in. None when a
    connection was made (and then lost)."""
    import errno
    import socket

    import requests

    seen = set()
    todo: List[Any] = [exc]
    host = ""
    fallback = False
    proxy = isinstance(exc, requests.exceptions.ProxyError)
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        host = host or str(getattr(e, "host", "") or getattr(getattr(e, "pool", None), "host", "") or "")
        if type(e).__name__ == "ProxyError":
            proxy = True
        if isinstance(e, socket.gaierror):
            return ("the name %s does not resolve, which means no network or no DNS" % (host or "of the server")
                    if not proxy else "the name of the proxy HTTPS_PROXY/HTTP_PROXY names does not resolve")
        if isinstance(e, ConnectionRefusedError):
            return ("the proxy HTTPS_PROXY/HTTP_PROXY names refused the connection" if proxy else
                    "%s refused the connection" % (host or "the server"))
        if isinstance(e, OSError) and e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return "there is no route to %s, which means no network" % (host or "the server")
        if isinstance(e, requests.exceptions.SSLError):
            return "the TLS handshake with %s failed" % (host or "the server")
        if isinstance(e, requests.exceptions.ConnectTimeout):
            return "%s did not answer in time" % (host or "the server")
        if type(e).__name__ in ("NewConnectionError", "NameResolutionError"):
            fallback = True
        todo += [getattr(e, "reason", None), e.__cause__, e.__context__] + [a for a in getattr(e, "args", ())
                                                                           if isinstance(a, BaseException)]
    if proxy:
        return "the proxy HTTPS_PROXY/HTTP_PROXY names could not be reached"
    return "%s could not be reached" % (host or "the server") if fallback else None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:197] + "..."


class _PastDeadline(Exception):
    """An attempt was still running when the download's deadline came."""


class _Attempt:
    """What the caller needs of an attempt running in a worker: a flag that stops it writing, and the
    response whose connection is shut down at the deadline (a read blocked on it then returns at once)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.response: Any = None

    def cut(self) -> None:
        self.stop.set()
        sock = _socket_of(self.response)
        if sock is not None:
            import socket

            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _socket_of(response: Any) -> Any:
    """The socket a streamed ``requests`` response reads from (http.client's file over it), or None."""
    try:
        return response.raw._fp.fp.raw._sock
    except AttributeError:
        return None


def _within(deadline_at: float, work: Callable[[_Attempt], Any]) -> Any:
    """``work(attempt)`` in a worker thread, waited for until ``deadline_at`` (time.monotonic) at most.

    Past it, or when the caller is interrupted (Ctrl-C, a signal), the attempt is cut: it writes nothing more
    and its connection is shut down. Raises :class:`_PastDeadline`, or what ``work`` raised."""
    attempt = _Attempt()
    box: Dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work(attempt)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=run, name="envdoctor-download", daemon=True)
    worker.start()
    try:
        worker.join(max(0.0, deadline_at - time.monotonic()))
    except BaseException:
        attempt.cut()
        raise
    if worker.is_alive():
        attempt.cut()
        worker.join(2.0)  # a body being read ends at once; headers still trickling are left behind
        raise _PastDeadline()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _request_failed(exc: BaseException, shown: str) -> DownloadError:
    """A request error no retry cures (a redirect loop, a redirect to file:// or ftp://, a bad URL)."""
    import requests

    if isinstance(exc, requests.exceptions.TooManyRedirects):
        return DownloadError(f"{shown}: the server redirects in a loop (more than {MAX_REDIRECTS} redirects)")
    if isinstance(exc, requests.exceptions.InvalidSchema):
        return DownloadError(f"{shown}: the server redirected to a URL that is not http:// or https:// "
                             f"({shown_url(_short(str(exc)))}); refusing to follow it")
    return DownloadError(f"{shown}: {shown_url(_short(str(exc)))}")


def _too_slow(shown: str, opts: DownloadOptions, got: int) -> str:
    return (f"{shown}: gave up after {opts.deadline:g}s (--download-deadline): the server sends too slowly "
            f"({got} bytes in that time)")


def fetch_bytes(url: str, options: Optional[DownloadOptions] = None, max_bytes: int = MAX_MANIFEST_BYTES) -> bytes:
    """A small document (a manifest) in memory, with timeouts, retries and the deadline."""
    import requests

    opts = options or DownloadOptions()
    shown = shown_url(url)
    transient = _transient_errors()
    deadline_at = time.monotonic() + opts.deadline
    got = [0]

    def work(attempt: _Attempt) -> Optional[bytes]:
        with _session(opts) as s:
            r = s.get(url, stream=True, timeout=(opts.timeout, opts.timeout))
            attempt.response = r
            with r:
                if attempt.stop.is_set():
                    return None
                if r.status_code != 200:
                    raise DownloadError("%s: HTTP %d %s" % (shown, r.status_code, r.reason or ""))
                data = bytearray()
                for chunk in r.iter_content(CHUNK):
                    if attempt.stop.is_set():
                        return None
                    data += chunk
                    got[0] = len(data)
                    if len(data) > max_bytes:
                        raise DownloadError("%s: larger than %d bytes, refusing it" % (shown, max_bytes))
                return bytes(data)

    last = ""
    unreachable = False
    for attempt in range(opts.retries + 1):
        if attempt:
            time.sleep(max(0.0, min(opts.backoff * (2 ** (attempt - 1)), deadline_at - time.monotonic())))
        try:
            return bytes(_within(deadline_at, work))
        except _PastDeadline:
            raise DownloadError(_too_slow(shown, opts, got[0])) from None
        except transient as exc:
            last = _describe(exc, opts.timeout)
            unreachable = last.startswith("could not connect")
        except requests.exceptions.RequestException as exc:
            raise _request_failed(exc, shown) from None
        if time.monotonic() >= deadline_at:
            raise DownloadError(_too_slow(shown, opts, got[0]))
    raise DownloadError("%s: %s (tried %d times)" % (shown, last, opts.retries + 1), unreachable=unreachable)


def download(url: str, dest: str, sha256: str, size: Optional[int] = None,
             options: Optional[DownloadOptions] = None, log: Optional[Callable[[str], None]] = None) -> str:
    """Fetch ``url`` to ``dest`` through ``dest.part``, resuming and verifying; returns ``dest``.

    Raises :class:`DownloadError` with a clear message on failure.  A partial
    file is kept for the next attempt unless it is proven wrong (too big, or a
    complete file with the wrong sha256), in which case it is deleted.
    """
    import requests

    opts = options or DownloadOptions()
    say = log or (lambda _m: None)
    shown = shown_url(url)
    part = dest + ".part"
    os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
    transient = _transient_errors()
    deadline_at = time.monotonic() + opts.deadline
    start = os.path.getsize(part) if os.path.exists(part) else 0
    last = ""
    for attempt in range(opts.retries + 1):
        if attempt:
            time.sleep(max(0.0, min(opts.backoff * (2 ** (attempt - 1)), deadline_at - time.monotonic())))
        have = os.path.getsize(part) if os.path.exists(part) else 0
        if size is not None and have > size:
            _forget(part)
            have = 0
        try:
            if size is None or have < size:
                _within(deadline_at, functools.partial(_fetch_into, url, part, have, size, opts, say))
            return _finish(url, part, dest, sha256, size)
        except _PastDeadline:
            kept = os.path.getsize(part) if os.path.exists(part) else 0
            raise DownloadError("%s; %d bytes kept in %s, a re-run resumes from there"
                                % (_too_slow(shown, opts, max(0, kept - start)), kept, part)) from None
        except transient as exc:
            last = _describe(exc, opts.timeout)
            now = os.path.getsize(part) if os.path.exists(part) else 0
            say("download attempt %d of %s failed after %d bytes: %s" % (attempt + 1, shown, now, last))
        except requests.exceptions.RequestException as exc:
            raise _request_failed(exc, shown) from None
        if time.monotonic() >= deadline_at:
            break
    kept = os.path.getsize(part) if os.path.exists(part) else 0
    raise DownloadError("%s: %s (tried %d times); %d bytes kept in %s, a re-run resumes from there"
                        % (shown, last, attempt + 1, kept, part))


def _fetch_into(url: str, part: str, have: int, size: Optional[int], opts: DownloadOptions,
                say: Callable[[str], None], attempt: Optional[_Attempt] = None) -> None:
    shown = shown_url(url)
    stop = attempt.stop if attempt is not None else threading.Event()
    headers = {"Range": "bytes=%d-" % have} if have else {}
    known = _read_validator(part) if have else None
    if known:
        headers["If-Range"] = known  # changed on the server since: the whole new file (200), not the rest
    with _session(opts) as s:
        r = s.get(url, stream=True, timeout=(opts.timeout, opts.timeout), headers=headers)
        if attempt is not None:
            attempt.response = r
        with r:
            if stop.is_set():
                return  # past the deadline already: nothing is written
            if r.status_code == 416 and have:
                return  # nothing left to send: the .part is complete (verified next)
            if r.status_code == 206 and have:
                mode = "ab"
                say("resuming %s at byte %d" % (shown, have))
            elif r.status_code == 200:
                if have:
                    say("%s: the server sent the whole file (it changed since, or ignores ranges): starting over"
                        % shown)
                mode, have = "wb", 0
                _write_validator(part, _validator(r.headers))
            else:
                raise DownloadError("%s: HTTP %d %s" % (shown, r.status_code, r.reason or ""))
            total = size
            if total is None:
                length = r.headers.get("Content-Length")
                total = have + int(length) if length and length.isdigit() else None
            bar = _Progress(opts.progress, os.path.basename(part[:-5]), total, have)
            try:
                with open(part, mode) as f:
                    for chunk in r.iter_content(CHUNK):
                        if stop.is_set():
                            break
                        if not chunk:
                            continue
                        f.write(chunk)
                        have += len(chunk)
                        if size is not None and have > size:
                            break
                        bar.update(have)
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                # A full disk: the partial file is what filled it, so it goes (nothing else can be written).
                _forget(part)
                raise DownloadError("%s: the disk is full (%s) after %d bytes; the partial download %s was "
                                    "deleted. Free some space, then resume"
                                    % (shown, os.strerror(exc.errno), have, part)) from None
            finally:
                bar.close()


def _read_validator(part: str) -> Optional[str]:
    try:
        with open(_validator_path(part), encoding="ascii") as f:
            text = f.read(1024).strip()
    except (OSError, ValueError):
        return None
    return text if text and text.isprintable() else None


def _write_validator(part: str, validator: Optional[str]) -> None:
    try:
        if validator and validator.isascii() and validator.isprintable():
            with open(_validator_path(part), "w", encoding="ascii") as f:
                f.write(validator)
        elif os.path.exists(_validator_path(part)):
            os.remove(_validator_path(part))
    except OSError:
        pass  # without it a later resume sends Range alone (the sha256 still catches a changed file)


def _finish(url: str, part: str, dest: str, sha256: str, size: Optional[int]) -> str:
    url = shown_url(url)
    got_size = os.path.getsize(part) if os.path.exists(part) else 0
    if size is not None and got_size != size:
        if got_size > size:
            _forget(part)
        raise DownloadError("%s: got %d bytes, expected %d; the file was deleted" % (url, got_size, size)
                            if got_size > size else
                            "%s: got %d of %d bytes" % (url, got_size, size))
    digest = sha256_of(part)
    if digest != sha256.lower():
        _forget(part)
        raise DownloadError(f"{url}: sha256 mismatch (expected {sha256.lower()}, got {digest}); "
                            "the download was deleted, nothing was installed. "
                            "The server or mirror holds a corrupted or different file.")
    os.replace(part, dest)
    _forget(part)  # its validator
    return dest


class _Progress:
    def __init__(self, stream: Optional[TextIO], name: str, total: Optional[int], start: int) -> None:
        self.stream = stream
        self.name = name[:40]
        self.total = total
        self.last = 0.0
        self.update(start)

    def update(self, have: int) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        if now - self.last < 0.1 and (self.total is None or have < self.total):
            return
        self.last = now
        if self.total:
            frac = min(1.0, have / float(self.total))
            bar = "#" * int(frac * 30)
            self.stream.write("\r%-40s [%-30s] %5.1f%% %s" % (self.name, bar, frac * 100, _mib(have)))
        else:
            self.stream.write("\r%-40s %s" % (self.name, _mib(have)))
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()


def _mib(n: int) -> str:
    return "%.1f MiB" % (n / 1048576.0)

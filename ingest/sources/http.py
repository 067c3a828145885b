"""HTTP GET with a hard deadline, a response-size cap, retries with back-off and clear errors.

Every ingest fetcher goes through :func:`get`.  Each attempt has a **total** deadline of
``timeout_s`` seconds covering connect, request, status line, headers and body: every
socket read is given only the time left, so a server that trickles its body, or sends
headers forever, cannot hold the caller longer than the deadline (a per-read timeout
alone would be re-armed by every byte).  ``deadline_s`` bounds all attempts and back-off
sleeps together.  A body longer than ``max_bytes`` (announced by ``Content-Length`` or
counted while reading) fails at once without retry, before it is held in memory.

A transport error, a timeout or an HTTP status in :data:`RETRY_STATUS` is retried
``retries`` times, sleeping ``backoff_s * 2**attempt`` plus up to 50 % random jitter
(capped at ``max_backoff_s`` and at the time left).  Other statuses fail at once unless
listed in ``accept_status``.  Failure raises :class:`FetchError` naming the URL, the
attempts and the cause; fetchers turn it into a result object instead of crashing.

The client is :mod:`http.client` (not requests) because the deadline must reach the
socket while headers are read; responses are never decompressed (``Accept-Encoding:
identity``), so the size cap is the size held.  A :class:`Session` keeps one
keep-alive connection per origin (the Redfish crawler reads thousands of pages).
``http+unix://%2Fpath%2Fto.sock/path`` speaks HTTP over a Unix socket (slurmrestd with
``rest_auth/local``), under the same deadline and cap.
"""

from __future__ import annotations

import base64
import codecs
import functools
import http.client
import io
import logging
import math
import random
import re
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlencode, urljoin, urlsplit

from ingest.sources.samples import redact_text, redact_url

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF_S = 0.2
DEFAULT_MAX_BYTES = 64 * 2**20  # sources pass their own documented cap; this is for ad-hoc calls
MAX_REDIRECTS = 5
_CHUNK_BYTES = 1 << 16
_CHARSET = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9._:-]+)", re.IGNORECASE)


class FetchError(RuntimeError):
    """A fetch failed after all attempts.  ``attempts`` and ``status`` say how."""

    def __init__(self, message: str, *, attempts: int, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status = status


class _DeadlineExceeded(Exception):
    """Raised inside a socket read when the attempt's deadline has passed."""


class _TooLarge(Exception):
    """The body is (or announces it will be) larger than the cap."""


@dataclass
class Response:
    """What :func:`get` returns: body text, status, how many attempts it took."""

    url: str
    status: int
    text: str
    attempts: int
    elapsed_s: float
    n_bytes: int = 0


def backoff_delay_s(attempt: int, backoff_s: float, max_backoff_s: float, rng: random.Random | None = None) -> float:
    """Sleep before retry ``attempt`` (0-based): ``backoff_s·2^attempt`` + ≤50 % jitter, capped."""
    base = min(max_backoff_s, backoff_s * (2**attempt))
    jitter = (rng or random).uniform(0.0, 0.5 * base)
    return min(max_backoff_s, base + jitter)


# --- sockets that know their deadline -------------------------------------------------
class _Deadline:
    """A monotonic instant shared by a connection's socket wrapper and its caller."""

    def __init__(self) -> None:
        self.at_s = math.inf

    def left_s(self) -> float:
        return self.at_s - time.monotonic()


class _DeadlineReader(io.RawIOBase):
    """Raw reads from a socket, each one allowed only the time left before the deadline."""

    def __init__(self, owner: _DeadlineSocket) -> None:
        super().__init__()
        self._owner = owner

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        left = self._owner._deadline.left_s()
        if left <= 0:
            raise _DeadlineExceeded
        sock = self._owner._sock
        sock.settimeout(left)
        try:
            return sock.recv_into(buf)
        except TimeoutError as exc:  # socket.timeout
            raise _DeadlineExceeded from exc

    def close(self) -> None:
        if not self.closed:
            self._owner._release()
        super().close()


class _DeadlineSocket:
    """Wraps a connected socket so that http.client's reads and writes obey the deadline.

    Like :meth:`socket.socket.makefile`, the socket stays open until the connection and
    every reader made from it are closed (http.client closes the connection of a
    ``Connection: close`` answer before the body is read).
    """

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock, self._deadline = sock, deadline
        self._readers = 0
        self._closed = False

    def makefile(self, mode: str = "rb", *args, **kwargs):
        self._readers += 1
        return io.BufferedReader(_DeadlineReader(self))

    def _release(self) -> None:
        self._readers -= 1
        if self._closed and self._readers <= 0:
            self._sock.close()

    def sendall(self, data) -> None:
        left = self._deadline.left_s()
        if left <= 0:
            raise _DeadlineExceeded
        self._sock.settimeout(left)
        try:
            self._sock.sendall(data)
        except TimeoutError as exc:
            raise _DeadlineExceeded from exc

    def close(self) -> None:
        self._closed = True
        if self._readers <= 0:
            self._sock.close()

    def __getattr__(self, name):
        return getattr(self._sock, name)


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int | None, deadline: _Deadline) -> None:
        super().__init__(host, port)
        self.deadline = deadline

    def connect(self) -> None:
        self.timeout = max(self.deadline.left_s(), 0.001)
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self.deadline)


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket (``http+unix://%2Frun%2Fslurmrestd.sock/path``), same deadline rules."""

    def __init__(self, socket_path: str, deadline: _Deadline) -> None:
        super().__init__("localhost")
        self.socket_path, self.deadline = socket_path, deadline

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(max(self.deadline.left_s(), 0.001))
        try:
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = _DeadlineSocket(sock, self.deadline)


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int | None, deadline: _Deadline, context: ssl.SSLContext) -> None:
        super().__init__(host, port, context=context)
        self.deadline = deadline

    def connect(self) -> None:
        self.timeout = max(self.deadline.left_s(), 0.001)
        super().connect()  # TCP connect and TLS handshake, each socket operation within the time left
        self.sock = _DeadlineSocket(self.sock, self.deadline)


@functools.lru_cache(maxsize=8)
def _ssl_context(verify: bool | str) -> ssl.SSLContext:
    """TLS context: ``True`` verifies against the system store, ``False`` not at all, a path is a CA file/dir."""
    if verify is False:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    if isinstance(verify, str):
        import os

        return (
            ssl.create_default_context(capath=verify)
            if os.path.isdir(verify)
            else ssl.create_default_context(cafile=verify)
        )
    return ssl.create_default_context()


class Session:
    """Keeps one keep-alive connection per (scheme, host, port) between calls of :func:`get`."""

    def __init__(self) -> None:
        self._conns: dict[tuple[str, str, int | None, bool | str], http.client.HTTPConnection] = {}

    def _take(self, key):
        return self._conns.pop(key, None)

    def _give(self, key, conn) -> None:
        old = self._conns.pop(key, None)
        if old is not None and old is not conn:
            old.close()
        self._conns[key] = conn

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- one attempt ------------------------------------------------------------------------
def _decode(body: bytes, content_type: str) -> str:
    """Body bytes → text with the declared charset (UTF-8 if none or unknown); bad bytes become U+FFFD."""
    m = _CHARSET.search(content_type or "")
    encoding = "utf-8"
    if m:
        try:
            encoding = codecs.lookup(m.group(1)).name
        except LookupError:
            pass
    return body.decode(encoding, errors="replace")


def _read_body(resp: http.client.HTTPResponse, max_bytes: int) -> bytes:
    length = resp.getheader("Content-Length")
    if length is not None:
        try:
            announced = int(length)
        except ValueError:
            announced = -1
        if announced > max_bytes:
            raise _TooLarge(f"Content-Length {announced} exceeds the {max_bytes}-byte cap")
    buf = bytearray()
    while True:
        chunk = resp.read(min(_CHUNK_BYTES, max_bytes + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > max_bytes:
            raise _TooLarge(f"body exceeds the {max_bytes}-byte cap")


def _request_once(
    url: str, headers: dict, verify: bool | str, deadline: _Deadline, max_bytes: int, session: Session | None
) -> tuple[int, str, bytes, str, str]:
    """One GET (following redirects) → (status, reason, body, content type, final url)."""
    for _ in range(MAX_REDIRECTS + 1):
        parts = urlsplit(url)
        unix = parts.scheme == "http+unix"
        if not unix and (parts.scheme not in ("http", "https") or not parts.hostname):
            raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
        if unix and not parts.netloc:
            raise ValueError(f"not an http+unix URL (http+unix://%2Fpath%2Fto.sock/…): {redact_url(url)!r}")
        key = (parts.scheme, parts.netloc if unix else parts.hostname, None if unix else parts.port, verify)
        conn = session._take(key) if session is not None else None
        reused = conn is not None
        if conn is None:
            if unix:
                conn = _UnixHTTPConnection(unquote(parts.netloc), deadline)
            elif parts.scheme == "https":
                conn = _HTTPSConnection(parts.hostname, parts.port, deadline, _ssl_context(verify))
            else:
                conn = _HTTPConnection(parts.hostname, parts.port, deadline)
        conn.deadline = deadline
        if isinstance(conn.sock, _DeadlineSocket):
            conn.sock._deadline = deadline
        req_headers = dict(headers)
        if parts.username is not None and "Authorization" not in req_headers:
            cred = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            req_headers["Authorization"] = "Basic " + base64.b64encode(cred).decode()
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            try:
                conn.request("GET", path, headers=req_headers)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                if not reused:
                    raise
                conn.close()  # the server closed an idle keep-alive connection: one fresh try
                conn.request("GET", path, headers=req_headers)
                resp = conn.getresponse()
            body = _read_body(resp, max_bytes)
        except BaseException:
            conn.close()
            raise
        if session is not None and not resp.will_close:
            session._give(key, conn)
        else:
            conn.close()
        location = resp.getheader("Location")
        if resp.status in REDIRECT_STATUS and location:
            new = urljoin(url, location)
            if urlsplit(new).hostname != parts.hostname:
                headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            url = new
            continue
        return resp.status, resp.reason or "", body, resp.getheader("Content-Type") or "", url
    raise http.client.HTTPException(f"more than {MAX_REDIRECTS} redirects")


def get(
    url: str,
    *,
    params: dict | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    retries: int = DEFAULT_RETRIES,
    backoff_s: float = DEFAULT_BACKOFF_S,
    max_backoff_s: float = 5.0,
    deadline_s: float | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    session: Session | None = None,
    auth: tuple[str, str] | None = None,
    verify: bool | str = True,
    headers: dict | None = None,
    accept_status: frozenset[int] = frozenset({200}),
    sleep: Callable[[float], None] = time.sleep,
) -> Response:
    """GET ``url`` and return the body, retrying transient failures (see module docstring).

    ``timeout_s`` bounds each attempt in total, ``deadline_s`` (default: no overall bound
    beyond the attempts) bounds the whole call including back-off.  ``max_bytes`` caps the
    body.  ``accept_status`` lists statuses returned rather than raised (the Prometheus
    API answers 400/422 with a JSON error body worth reading).
    """
    if params:
        url = url + ("&" if urlsplit(url).query else "?") + urlencode(params)
    req_headers = {"User-Agent": "clustertwin-ingest", "Accept-Encoding": "identity", **(headers or {})}
    if auth is not None:
        cred = f"{auth[0]}:{auth[1]}".encode()
        req_headers["Authorization"] = "Basic " + base64.b64encode(cred).decode()
    start = time.monotonic()
    end_s = math.inf if deadline_s is None else start + deadline_s
    last_cause = ""
    status: int | None = None
    attempts = 0
    for attempt in range(retries + 1):
        attempts = attempt + 1
        deadline = _Deadline()
        deadline.at_s = min(time.monotonic() + timeout_s, end_s)
        budget_s = deadline.left_s()
        try:
            status, reason, body, ctype, final_url = _request_once(
                url, req_headers, verify, deadline, max_bytes, session
            )
        except _DeadlineExceeded:
            last_cause, status = f"timed out: no complete answer within {budget_s:.3g} s", None
        except TimeoutError:
            last_cause, status = f"timed out: could not connect within {budget_s:.3g} s", None
        except _TooLarge as exc:
            raise FetchError(f"GET {redact_url(url)}: response too large: {exc}", attempts=attempts) from exc
        except ValueError as exc:  # unparsable URL or port
            raise FetchError(
                f"GET {redact_url(url)}: invalid request: {redact_text(str(exc))}", attempts=attempts
            ) from exc
        except (OSError, http.client.HTTPException) as exc:
            last_cause, status = f"connection failed ({type(exc).__name__}: {exc})", None
        else:
            if status in accept_status:
                return Response(final_url, status, _decode(body, ctype), attempts, time.monotonic() - start, len(body))
            last_cause = f"HTTP {status} {reason}".strip()
            if status not in RETRY_STATUS:
                break
        if attempt < retries:
            delay = min(backoff_delay_s(attempt, backoff_s, max_backoff_s), end_s - time.monotonic())
            if delay < 0 or end_s - time.monotonic() - delay < 0.01:
                break  # no time left for another attempt
            log.debug("GET %s failed (%s); retry %d in %.2f s", redact_url(url), last_cause, attempt + 1, delay)
            sleep(delay)
    raise FetchError(
        f"GET {redact_url(url)} failed after {attempts} attempt(s): {redact_text(last_cause)}",
        attempts=attempts,
        status=status,
    )

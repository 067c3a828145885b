"""Notifications out: a real Alertmanager receives and groups ClusterTwin's episodes; a JSON webhook; dead receivers."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ingest.live.alert_rules import Condition
from ingest.live.notify import MAX_BODY_BYTES, Episode, Notifier, Receiver, capped_body, check_url
from ingest.live.runtime import build_hub
from tests.ingest.servers import alertmanager as alertmanager_peer
from tests.ingest.servers.readiness import poll_until


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    server = alertmanager_peer.start(tmp_path_factory.mktemp("alertmanager"))
    yield server
    server.stop()


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.bodies.append(json.loads(body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def webhook():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.bodies, server.lock = [], threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _hub_with_fault(tmp_path, fault: str, seconds: int):
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=seconds + 1)
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'hub.db'}", record=False, start=start, faults=(fault,))
    return hub, start


@pytest.mark.alertmanager
def test_alertmanager_receives_groups_and_inhibits_by_cause(alertmanager, tmp_path):
    hub, start = _hub_with_fault(tmp_path, "cdu:H1-R01-K02-CDU", 20)
    hub.live_alerts.notifier = Notifier(
        "demo", [Receiver("alertmanager", alertmanager.url, "demo")], "http://localhost:8050"
    )
    try:
        for t_s in range(20):
            hub.step(start + timedelta(seconds=t_s))
        keys = {c.key for c in hub.live_alerts.conditions}
        assert "pump:cdu:1" in keys
        caused = {c.key for c in hub.live_alerts.conditions if c.group_key == "pump:cdu:1"}
        assert len(caused) >= 2, "the CDU loss has effects grouped under it"

        def cause_group():
            for group in alertmanager.groups():
                if group["labels"].get("cause") == "pump:cdu:1" and len(group["alerts"]) == len(caused):
                    return group
            return None

        group = poll_until(cause_group, 20.0)
        assert group, f"no Alertmanager group of the CDU loss with {len(caused)} alerts: {alertmanager.groups()}"
        assert group["labels"] == {"site": "demo", "cause": "pump:cdu:1"}
        by_key = {a["labels"]["alert_key"]: a for a in group["alerts"]}
        assert set(by_key) == caused
        root = by_key["pump:cdu:1"]
        assert root["labels"]["severity"] == "critical" and root["labels"]["alertname"] == "pump"
        stored = {a["key"]: a["id"] for a in hub.live_alerts.listing()}
        assert root["labels"]["alert_id"] == str(stored["pump:cdu:1"])
        assert root["generatorURL"] == f"http://localhost:8050/alerts?alert={stored['pump:cdu:1']}"
        for alert in group["alerts"]:  # a warning of the cause is inhibited by its critical alerts
            inhibited = bool(alert["status"]["inhibitedBy"])
            assert inhibited == (alert["labels"]["severity"] == "warning"), alert
        # the episodes end: Alertmanager resolves them
        hub.live_alerts.notifier.offer(datetime.now(UTC), [])
        assert poll_until(lambda: not [a for a in alertmanager.alerts() if a["labels"]["site"] == "demo"], 20.0)
    finally:
        hub.live_alerts.close()
        hub.db.dispose()


def _cond(key: str, severity: str = "warning") -> Condition:
    return Condition(key, severity, "twin", "cdu", 1, "CDU-1", "m", 1.0, "text")


def test_webhook_gets_every_change_once(webhook):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    notifier = Notifier("demo", [Receiver("webhook", f"http://127.0.0.1:{webhook.server_port}/hook", "demo")])
    try:
        ep = Episode(_cond("pump:cdu:1"), 7, t0)
        notifier.offer(t0, [ep])
        assert poll_until(lambda: len(webhook.bodies) == 1, 10.0)
        notifier.offer(t0 + timedelta(seconds=1), [ep])  # nothing changed: no post
        notifier.offer(t0 + timedelta(seconds=2), [])  # cleared
        assert poll_until(lambda: len(webhook.bodies) == 2, 10.0)
    finally:
        notifier.stop()
    first, second = webhook.bodies
    assert first["version"] == "1" and first["site"] == "demo"
    assert [(a["labels"]["alert_id"], a["status"]) for a in first["alerts"]] == [("7", "firing")]
    assert [(a["labels"]["alert_id"], a["status"]) for a in second["alerts"]] == [("7", "resolved")]
    assert second["alerts"][0]["endsAt"] == (t0 + timedelta(seconds=2)).isoformat()


def test_a_dead_receiver_is_logged_once_per_outage_and_never_blocks(caplog):
    dead = Receiver("alertmanager", "http://127.0.0.1:9", "demo")  # discard port: refused
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    with caplog.at_level(logging.ERROR, logger="ingest.live.notify"):
        for i in range(3):
            assert not dead.send([{"labels": {"n": str(i)}}])
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "alertmanager http://127.0.0.1:9" in errors[0].getMessage()
    assert dead.outage.lost["notifications dropped"] == 3
    notifier = Notifier("demo", [dead])
    try:
        notifier.offer(t0, [Episode(_cond("pump:cdu:1"), 1, t0)])  # returns at once, posts in its thread
    finally:
        notifier.stop()


def test_bodies_are_capped_and_urls_checked():
    alerts = [{"labels": {"i": str(i)}, "annotations": {"summary": "x" * 2000}} for i in range(2000)]
    body = capped_body(alerts)
    assert len(body) <= MAX_BODY_BYTES and 0 < len(json.loads(body)) < 2000
    with pytest.raises(ValueError, match="--alertmanager 'ftp://x': expected an http"):
        check_url("ftp://x", "--alertmanager")

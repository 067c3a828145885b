"""Notifications out under maintenance windows and scoped silences: a real Alertmanager inhibits the muted
episodes and notifies them again once the window ends; the JSON webhook gets them as suppressed."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ingest.live.alert_rules import Condition
from ingest.live.mute_scope import MuteRule, Scope
from ingest.live.notify import MUTE_ALERTNAME, Episode, Notifier, Receiver, alertmanager_alert, mute_alert
from ingest.live.runtime import build_hub
from tests.ingest.servers import alertmanager as alertmanager_peer
from tests.ingest.servers.readiness import poll_until

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WINDOW = MuteRule(3, "maintenance", Scope("entity", "H1-R01-K02"), "pump swap", "otto", T0, T0 + timedelta(hours=1))
SILENCE = MuteRule(7, "silence", Scope("hall", "H1"), "noisy", "ada", T0, T0 + timedelta(hours=2))


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
def sink():
    """An HTTP receiver on 127.0.0.1 keeping every JSON body posted to it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.bodies, server.lock = [], threading.Lock()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _cond(key: str, severity: str = "critical") -> Condition:
    return Condition(key, severity, "twin", "rack", 1, "H1-R01-K02", "rack_max_gpu_temp_c", 95.0, "hot")


def test_a_muted_episode_is_labelled_and_its_window_stands_as_an_alert():
    ep = Episode(_cond("gpu_hot:rack:1"), 11, T0, mute=WINDOW)
    alert = alertmanager_alert(ep, "demo", T0)
    assert alert["labels"]["muted_by"] == "maintenance-3" and alert["labels"]["maintenance"] == "true"
    assert alert["status"] == "suppressed"
    assert alert["annotations"]["muted"] == "in maintenance: pump swap (H1-R01-K02, until 2026-01-01 01:00 UTC)"
    silenced = alertmanager_alert(Episode(_cond("gpu_hot:rack:1"), 11, T0, mute=SILENCE), "demo", T0)
    assert "maintenance" not in silenced["labels"] and silenced["labels"]["muted_by"] == "silence-7"
    assert silenced["annotations"]["muted"] == "silenced by H1 until 2026-01-01 02:00 UTC (ada: noisy)"
    plain = alertmanager_alert(Episode(_cond("gpu_hot:rack:1"), 11, T0), "demo", T0)
    assert "muted_by" not in plain["labels"] and plain["status"] == "firing"
    source = mute_alert(WINDOW, "demo", T0 + timedelta(minutes=59))
    assert source["labels"] == {
        "alertname": MUTE_ALERTNAME,
        "site": "demo",
        "muted_by": "maintenance-3",
        "mute_kind": "maintenance",
        "severity": "none",
    }
    assert source["endsAt"] == WINDOW.ends_at.isoformat()  # never past the window's end
    assert mute_alert(WINDOW, "demo", T0, ended=True)["endsAt"] == T0.isoformat()


def test_the_webhook_gets_muted_episodes_as_suppressed_then_firing_again(sink):
    url = f"http://127.0.0.1:{sink.server_port}/hook"
    notifier = Notifier("demo", [Receiver("webhook", url, "demo")])
    raised = _cond("gpu_hot:rack:1")
    try:
        notifier.offer(T0, [Episode(raised, 11, T0, mute=WINDOW)])  # raised during the window
        assert poll_until(lambda: len(sink.bodies) == 1, 10.0)
        notifier.offer(T0 + timedelta(seconds=1), [Episode(raised, 11, T0, mute=WINDOW)])  # nothing changed
        notifier.offer(T0 + timedelta(seconds=2), [Episode(raised, 11, T0)])  # the window ended
        assert poll_until(lambda: len(sink.bodies) == 2, 10.0)
    finally:
        notifier.stop()
    first, second = sink.bodies
    assert [(a["status"], a["labels"].get("muted_by")) for a in first["alerts"]] == [("suppressed", "maintenance-3")]
    assert [(a["status"], a["labels"].get("muted_by")) for a in second["alerts"]] == [
        ("firing", None),
        ("resolved", "maintenance-3"),  # the muted identity ends
    ]


@pytest.mark.slow
def test_the_tick_mutes_what_the_store_holds_and_the_webhook_hears_it(sink, tmp_path):
    """An alert's own silence, then a window over its rack, reach the notifier on the next tick."""
    start = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
    hub = build_hub(
        "demo", f"sqlite:///{tmp_path / 'hub.db'}", record=False, start=start, faults=("cdu:H1-R01-K02-CDU",)
    )
    url = f"http://127.0.0.1:{sink.server_port}/hook"
    hub.live_alerts.notifier = Notifier("demo", [Receiver("webhook", url, "demo")])
    try:
        for t_s in range(20):
            hub.step(start + timedelta(seconds=t_s))
        assert poll_until(lambda: sink.bodies and _keys(sink.bodies[-1]["alerts"]) >= {"pump:cdu:1"}, 10.0)
        stored = {a["key"]: a["id"] for a in hub.view.alerts()}
        hub.alert_actions.silence(stored["pump:cdu:1"], 3600)  # by the wall clock: hours after these ticks
        seen = len(sink.bodies)
        hub.step(_next_second())
        assert poll_until(lambda: len(sink.bodies) > seen, 10.0)
        by_key = {a["labels"]["alert_key"]: a for a in sink.bodies[-1]["alerts"] if a["status"] != "resolved"}
        assert by_key["pump:cdu:1"]["labels"]["muted_by"] == f"alert-{stored['pump:cdu:1']}"
        assert by_key["pump:cdu:1"]["status"] == "suppressed"
        assert by_key["gpu_hot:rack:1"]["status"] == "firing"
        window = hub.alert_actions.add_maintenance(
            {"kind": "entity", "value": "H1-R01-K02"}, start, datetime.now(UTC) + timedelta(hours=1), "pump swap"
        )
        seen = len(sink.bodies)
        hub.step(_next_second())
        assert poll_until(lambda: len(sink.bodies) > seen, 10.0)
        by_key = {a["labels"]["alert_key"]: a for a in sink.bodies[-1]["alerts"] if a["status"] != "resolved"}
        label = f"maintenance-{window['id']}"
        assert by_key["pump:cdu:1"]["labels"]["muted_by"] == label  # a window outranks the alert's own silence
        assert by_key["gpu_hot:rack:1"]["labels"]["muted_by"] == label
        assert by_key["job_stalled:job:0"]["status"] == "firing"  # the job lies outside the window's scope
    finally:
        hub.live_alerts.close()
        hub.db.dispose()


def _firing(body: dict) -> list[dict]:
    return [a for a in body["alerts"] if a["status"] == "firing"]


@pytest.mark.alertmanager
def test_alertmanager_inhibits_what_a_window_mutes_and_notifies_it_after(sink, tmp_path):
    """A CDU loss under way; a window on its rack (the CDU and the rack's alerts, not the stalled job) starts:
    Alertmanager inhibits those and notifies the job's alone; cancelled, it notifies them firing again."""
    server = alertmanager_peer.start(tmp_path, webhook_url=f"http://127.0.0.1:{sink.server_port}/am")
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=20)
    hub = build_hub(
        "demo", f"sqlite:///{tmp_path / 'hub.db'}", record=False, start=start, faults=("cdu:H1-R01-K02-CDU",)
    )
    hub.live_alerts.notifier = Notifier("demo", [Receiver("alertmanager", server.url, "demo")])
    try:
        for t_s in range(20):
            hub.step(start + timedelta(seconds=t_s))
        keys = {c.key: c for c in hub.live_alerts.conditions}
        muted = {k for k, c in keys.items() if c.group_key == "pump:cdu:1" and c.entity_name.startswith("H1-R01-K02")}
        assert "pump:cdu:1" in muted and "job_stalled:job:0" in keys and "job_stalled:job:0" not in muted
        assert poll_until(lambda: any(_keys(_firing(b)) >= muted for b in sink.bodies), 30.0), sink.bodies

        window = hub.alert_actions.add_maintenance(
            {"kind": "entity", "value": "H1-R01-K02"}, start, datetime.now(UTC) + timedelta(hours=1), "pump swap"
        )
        label = f"maintenance-{window['id']}"
        seen = len(sink.bodies)
        hub.step(_next_second())  # the first tick in the window
        muted &= _open(hub)

        def suppressed():
            alerts = [a for a in server.alerts() if a["labels"].get("muted_by") == label]
            done = {a["labels"]["alert_key"] for a in alerts if a["status"]["inhibitedBy"]}
            return done if done == muted else None

        assert poll_until(suppressed, 30.0), server.alerts()
        # the group's next notification resolves the old identities and fires none of the muted ones
        assert poll_until(lambda: any(_keys(_resolved(b)) >= muted for b in sink.bodies[seen:]), 30.0), sink.bodies
        during = sink.bodies[seen:]
        assert all(not (_keys(_firing(b)) & muted) for b in during), during
        assert all(a["labels"].get("muted_by") is None for b in during for a in _firing(b))

        hub.alert_actions.expire_mute(window["id"])  # cancelled: the window ends now
        seen = len(sink.bodies)
        hub.step(_next_second())
        muted &= _open(hub)
        assert muted, "the CDU loss still holds"
        again = lambda: any(_keys(_firing(b), unmuted=True) >= muted for b in sink.bodies[seen:])  # noqa: E731
        assert poll_until(again, 30.0), sink.bodies[seen:]
    finally:
        hub.live_alerts.close()
        hub.db.dispose()
        server.stop()


def _resolved(body: dict) -> list[dict]:
    return [a for a in body["alerts"] if a["status"] == "resolved"]


def _keys(alerts: list[dict], unmuted: bool = False) -> set[str]:
    return {
        a["labels"]["alert_key"]
        for a in alerts
        if "alert_key" in a["labels"] and not (unmuted and "muted_by" in a["labels"])
    }


def _next_second() -> datetime:
    """The next whole second, once the clock has passed it: after every change made so far, and never ahead
    of Alertmanager's clock (an ``endsAt`` still in the future when it arrives does not resolve an alert)."""
    tick = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    time.sleep(max(0.0, (tick - datetime.now(UTC)).total_seconds()))
    return tick


def _open(hub) -> set[str]:
    return {c.key for c in hub.live_alerts.conditions}

"""An app over a real live twin (SQLite) with a viewer, an operator and an admin, and a logged-in client."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlmodel import Session

from dashboard import ids
from dashboard.views.context import screen_data
from ingest.store.models import Event
from ingest.store.users import add_user

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
PASSWORDS = {"vera": "viewer-password-1", "otto": "operator-password-1", "ada": "admin-password-1"}
ROLES = {"vera": "viewer", "otto": "operator", "ada": "admin"}
CALLBACK_PATH = "/_dash-update-component"


@pytest.fixture(scope="module")
def live_twin(tmp_path_factory):
    """A demo live twin on SQLite with stored alerts (an XID stalls the job), stepped by hand."""
    from ingest.live.runtime import build_hub

    url = f"sqlite:///{tmp_path_factory.mktemp('auth') / 'live.db'}"
    hub = build_hub("demo", url, start=T0, faults=("xid:h1-r01-k02-n0/5@1=79",))
    for i in range(4):
        hub.step(T0 + timedelta(seconds=i))
    return hub


@pytest.fixture()
def fresh_alerts(live_twin):
    """Every alert open, unacknowledged and not silenced, before the test."""
    with Session(live_twin.db) as session:
        session.exec(
            update(Event).values(
                acknowledged=False, acknowledged_at=None, ack_comment="", acknowledged_by="", silenced_until=None
            )
        )
        session.commit()
    return live_twin


@pytest.fixture(scope="module")
def users(live_twin):
    for name, role in ROLES.items():
        add_user(live_twin.db, name, role, PASSWORDS[name])
    return ROLES


@pytest.fixture()
def auth_app(live_twin, users):
    """The dashboard over the live twin, with users (so every request needs a login)."""
    from dashboard.app import app_for_hub

    return app_for_hub(live_twin, tick_ms=60_000)


class Client:
    """A Flask test client that can log in and send Dash callback requests with or without the CSRF token."""

    def __init__(self, app):
        self.app, self.http = app, app.server.test_client()

    def csrf_from_form(self, path: str = "/login") -> str:
        page = self.http.get(path).get_data(as_text=True)
        return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)

    def login(self, name: str, password: str | None = None, follow: bool = False):
        token = self.csrf_from_form()
        return self.http.post(
            "/login",
            data={"username": name, "password": password or PASSWORDS[name], "csrf_token": token},
            follow_redirects=follow,
        )

    def csrf_cookie(self) -> str | None:
        self.http.get("/")
        cookie = self.http.get_cookie("_csrf_token")
        return cookie.value if cookie else None

    def callback(self, body: dict, csrf: bool = True, headers: dict | None = None):
        headers = dict(headers or {})
        if csrf:
            headers["X-CSRFToken"] = self.csrf_cookie() or ""
        return self.http.post(CALLBACK_PATH, json=body, headers=headers)


@pytest.fixture()
def client(auth_app):
    return lambda: Client(auth_app)


def alert_action_body(alert_id, kind: str, duration_s=3600, comment: str = "") -> dict:
    """The callback request the alerts page sends when ``kind`` (ack/silence/unsilence) of ``alert_id`` is clicked."""
    button = {"alert": alert_id, "type": kind}
    clicks = {
        t: ([{"id": button, "property": "n_clicks", "value": 1}] if t == kind else [])
        for t in (ids.ALERT_ACK, ids.ALERT_SILENCE, ids.ALERT_UNSILENCE)
    }
    return {
        "output": f"{ids.Alerts.ACTION_RESULT}.children",
        "outputs": {"id": ids.Alerts.ACTION_RESULT, "property": "children"},
        "inputs": [clicks[ids.ALERT_ACK], clicks[ids.ALERT_SILENCE], clicks[ids.ALERT_UNSILENCE]],
        "state": [
            [{"id": ids.alert_comment(alert_id), "property": "value", "value": comment}],
            [{"id": ids.alert_silence_for(alert_id), "property": "value", "value": duration_s}],
            {"id": ids.Shell.SCREEN, "property": "data", "value": screen_data("/alerts")},
        ],
        "changedPropIds": [json.dumps(button, separators=(",", ":"), sort_keys=True) + ".n_clicks"],
    }


def alert_rows(hub) -> dict:
    """What the database holds of each alert's operator state."""
    return {
        a["id"]: (a["acknowledged"], a["ack_comment"], a["silenced_until"]) for a in hub.view.alerts(active_only=False)
    }

"""Other websites against the default no-users server on loopback: DNS rebinding and cross-site posts.

The app is built as ``serve`` builds it (bound to 127.0.0.1, no user): a request naming
another host is refused before anything runs, a state-changing request whose Origin or
Referer is another site is refused, and an import needs a content type a foreign page
cannot send without a CORS preflight.  Same-site requests and scripts keep working.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from dashboard.auth import AuthSettings
from dashboard.auth.origin import allowed_hosts, request_host_name
from tests.dashboard.auth.conftest import T0
from twin.site.catalogue import DATA_DIR

BUNDLE = DATA_DIR / "incidents" / "colossus-generator-trip.ctincident"
ME = "127.0.0.1:8050"


@pytest.fixture(scope="module")
def open_twin(tmp_path_factory):
    """A demo live twin on SQLite without any user, with open alerts."""
    from ingest.live.runtime import build_hub

    url = f"sqlite:///{tmp_path_factory.mktemp('open') / 'live.db'}"
    hub = build_hub("demo", url, start=T0, faults=("xid:h1-r01-k02-n0/5@1=79",))
    for i in range(4):
        hub.step(T0 + timedelta(seconds=i))
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def app(open_twin, tmp_path_factory):
    from dashboard.app import app_for_hub

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLUSTERTWIN_INCIDENTS", str(tmp_path_factory.mktemp("library")))
        settings = AuthSettings(bind_host="127.0.0.1", allowed_hosts=("twin.example.org",))
        yield app_for_hub(open_twin, tick_ms=60_000, auth=settings)


def _ack(client, alert_id, **headers):
    return client.post(f"/api/v1/alerts/{alert_id}/acknowledge", json={"comment": "x"}, headers={"Host": ME, **headers})


def _acknowledged(hub, alert_id) -> bool:
    return next(a for a in hub.view.alerts(active_only=False) if a["id"] == alert_id)["acknowledged"]


def test_dns_rebinding_a_foreign_host_is_refused_and_nothing_changes(app, open_twin):
    client = app.server.test_client()
    alert = next(a for a in open_twin.view.alerts() if not a["acknowledged"])
    r = _ack(client, alert["id"], Host="attacker.example:8050")
    assert r.status_code == 421 and "attacker.example" in r.get_json()["error"]
    assert not _acknowledged(open_twin, alert["id"])
    assert client.get("/api/v1/live/kpis", headers={"Host": "attacker.example:8050"}).status_code == 421
    for host in (ME, "localhost:8050", "[::1]:8050", "twin.example.org"):
        assert client.get("/api/v1/live/kpis", headers={"Host": host}).status_code == 200, host
    assert _ack(client, alert["id"]).status_code == 200 and _acknowledged(open_twin, alert["id"])


@pytest.mark.parametrize(
    "headers",
    [{"Origin": "http://attacker.example"}, {"Referer": "http://attacker.example/page"}, {"Origin": "null"}],
)
def test_a_cross_site_post_is_refused(app, open_twin, headers):
    client = app.server.test_client()
    alert = next(a for a in open_twin.view.alerts() if not a["acknowledged"])
    r = _ack(client, alert["id"], **headers)
    assert r.status_code == 403 and "cross-site" in r.get_json()["error"]
    assert not _acknowledged(open_twin, alert["id"])


@pytest.mark.slow
def test_a_cross_site_text_plain_import_is_refused_and_a_same_site_one_needs_a_file_type(app):
    from ingest.replay.library import user_dir

    client = app.server.test_client()
    data = BUNDLE.read_bytes()
    url = "/api/v1/incidents/import?name=from-afar"
    foreign = {"Host": ME, "Origin": "http://attacker.example"}
    assert client.post(url, data=data, content_type="text/plain", headers=foreign).status_code == 403
    same = {"Host": ME, "Origin": f"http://{ME}"}
    for kind in ("text/plain", None):
        r = client.post(url, data=data, content_type=kind, headers=same)
        assert r.status_code == 415, (kind, r.get_json())
    assert not any(user_dir().iterdir())
    r = client.post(url, data=data, content_type="application/octet-stream", headers=same)
    assert r.status_code == 200, r.get_json()


def test_safe_methods_and_scripts_without_origin_pass(app):
    client = app.server.test_client()
    r = client.get("/api/v1/live/kpis", headers={"Host": ME, "Origin": "http://attacker.example"})
    assert r.status_code == 200  # reading: the browser's same-origin policy keeps the answer from the page
    assert client.post("/api/v1/project", json={}, headers={"Host": ME}).status_code in (200, 400, 422)


@pytest.mark.parametrize(
    ("bind", "extra", "host", "ok"),
    [
        ("127.0.0.1", (), "127.0.0.1:1", True),
        ("127.0.0.1", (), "localhost", True),
        ("::ffff:127.0.0.1", (), "127.0.0.1:8050", True),
        ("::1", (), "[::1]:8050", True),
        ("127.0.0.1", (), "attacker.example:8050", False),
        ("127.0.0.1", (), "127.0.0.1.attacker.example", False),
        ("10.1.2.3", (), "10.1.2.3:8050", True),
        ("10.1.2.3", (), "evil.example", False),
        ("0.0.0.0", ("twin.example.org",), "TWIN.example.org.:443", True),
        ("0.0.0.0", ("twin.example.org",), "other.example", False),
    ],
)
def test_host_names_allowed(bind, extra, host, ok):
    assert (request_host_name(host) in allowed_hosts(bind, extra)) is ok


def test_a_wildcard_bind_without_names_checks_no_host():
    assert allowed_hosts("0.0.0.0") is None and allowed_hosts("::") is None and allowed_hosts(None) is None

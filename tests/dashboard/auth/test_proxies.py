"""Behind a reverse proxy: the client address and scheme from trusted X-Forwarded-* hops only."""

from __future__ import annotations

import pytest

from dashboard.auth import AuthSettings
from dashboard.auth.access import auth_state
from ingest.store.audit import AuditFilter, list_entries
from ingest.store.users import new_token
from tests.dashboard.auth.conftest import PASSWORDS, Client, alert_action_body

LIMITS = dict(login_failures_per_address=3, login_failures_per_user=100)


def proxied_app(live_twin, trusted_proxies: int):
    from dashboard.app import app_for_hub

    return app_for_hub(live_twin, tick_ms=60_000, auth=AuthSettings(trusted_proxies=trusted_proxies, **LIMITS))


def fail_login(c: Client, name: str, forwarded_for: str):
    token = c.csrf_from_form()
    return c.http.post(
        "/login",
        data={"username": name, "password": "wrong password!", "csrf_token": token},
        headers={"X-Forwarded-For": forwarded_for},
    )


def acknowledge_as(c: Client, live_twin, headers: dict) -> dict:
    """Acknowledge an alert with otto's API token and ``headers``; the audit entry it wrote."""
    token = new_token(live_twin.db, "otto")
    auth_state(c.app.server).directory.invalidate()
    alert = live_twin.view.alerts()[0]
    response = c.callback(
        alert_action_body(alert["id"], "alert-ack", comment="proxied"),
        csrf=False,
        headers={"Authorization": f"Bearer {token}", **headers},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return list_entries(live_twin.db, AuditFilter(action="alert.acknowledge", limit=1))[0]


def session_cookie_header(response) -> str:
    return next(h for h in response.headers.getlist("Set-Cookie") if h.startswith("clustertwin_session="))


@pytest.mark.slow
def test_without_trusted_proxies_forged_forwarded_headers_change_nothing(live_twin, users, fresh_alerts):
    c = Client(proxied_app(live_twin, 0))
    state = auth_state(c.app.server)
    state.by_address.clear("127.0.0.1")
    try:
        for i in range(LIMITS["login_failures_per_address"]):
            assert fail_login(c, f"forger{i}", f"198.51.100.{i}").status_code == 401
        refused = fail_login(c, "forger9", "198.51.100.99")  # a new forged address each time: still one client
        assert refused.status_code == 429
        assert state.by_address.retry_after_s("198.51.100.1") == 0
    finally:
        state.by_address.clear("127.0.0.1")
    entry = acknowledge_as(c, live_twin, {"X-Forwarded-For": "203.0.113.9"})
    assert entry["address"] == "127.0.0.1"
    login = c.http.post(
        "/login",
        data={"username": "vera", "password": PASSWORDS["vera"], "csrf_token": c.csrf_from_form()},
        headers={"X-Forwarded-Proto": "https"},
    )
    assert login.status_code == 302 and "Secure" not in session_cookie_header(login)


@pytest.mark.slow
def test_one_trusted_proxy_gives_the_client_address_to_the_limits_and_the_audit_log(live_twin, users, fresh_alerts):
    c = Client(proxied_app(live_twin, 1))
    state = auth_state(c.app.server)
    try:
        for i in range(LIMITS["login_failures_per_address"]):
            assert fail_login(c, f"guess{i}", "203.0.113.7").status_code == 401
        assert fail_login(c, "guess9", "203.0.113.7").status_code == 429
        assert fail_login(c, "guess9", "203.0.113.8").status_code == 401  # another client behind the proxy
        # the proxy appends the address it saw: what a client wrote before it is not trusted
        assert fail_login(c, "guess9", "203.0.113.8, 203.0.113.7").status_code == 429
        assert state.by_address.retry_after_s("127.0.0.1") == 0  # the proxy itself is not blamed
    finally:
        for address in ("203.0.113.7", "203.0.113.8"):
            state.by_address.clear(address)
    entry = acknowledge_as(c, live_twin, {"X-Forwarded-For": "6.6.6.6, 203.0.113.9"})
    assert entry["address"] == "203.0.113.9"


@pytest.mark.parametrize("proto, secure", [("https", True), ("http", False), (None, False)])
@pytest.mark.slow
def test_cookies_are_secure_when_the_trusted_proxy_forwarded_https(live_twin, users, proto, secure):
    c = Client(proxied_app(live_twin, 1))
    headers = {"X-Forwarded-Proto": proto} if proto else {}
    if proto == "https":  # over HTTPS the CSRF check also wants a same-origin Referer, as browsers send
        headers["Referer"] = "https://localhost/login"
    token = c.csrf_from_form()
    login = c.http.post(
        "/login", data={"username": "vera", "password": PASSWORDS["vera"], "csrf_token": token}, headers=headers
    )
    assert login.status_code == 302
    assert ("; Secure" in session_cookie_header(login)) == secure
    page = c.http.get("/", headers=headers)
    csrf = next(h for h in page.headers.getlist("Set-Cookie") if h.startswith("_csrf_token="))
    assert ("; Secure" in csrf) == secure

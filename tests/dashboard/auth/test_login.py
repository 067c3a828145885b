"""Login, logout, session expiry, the login rate limit, CSRF, API tokens and what anonymous requests get."""

from __future__ import annotations

import pytest

from dashboard.auth.access import auth_state
from ingest.store.users import new_token
from tests.dashboard.auth.conftest import PASSWORDS, alert_action_body, alert_rows


@pytest.mark.slow
def test_anonymous_pages_redirect_to_login_and_api_calls_get_401(client):
    c = client()
    page = c.http.get("/alerts?severity=critical")
    assert page.status_code == 302 and page.headers["Location"].startswith("/login?next=/alerts")
    for path in ("/_dash-layout", "/_dash-dependencies", "/api/v1/site", "/anything"):
        response = c.http.get(path, headers={"Accept": "application/json"})
        assert response.status_code == 401, path
        assert response.json["error"].startswith("login required")
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert c.http.post("/_dash-update-component", json={}).status_code == 401
    assert c.http.get("/login").status_code == 200
    assert c.http.get("/assets/clustertwin.css").status_code == 200


@pytest.mark.slow
def test_login_opens_the_pages_and_logout_closes_them(client):
    c = client()
    response = c.login("vera")
    assert response.status_code == 302 and response.headers["Location"] == "/"
    assert c.http.get("/").status_code == 200
    assert c.http.get("/_dash-layout").status_code == 200
    token = c.csrf_cookie()
    assert c.http.post("/logout", data={"csrf_token": token}).status_code == 302
    assert c.http.get("/", headers={"Accept": "application/json"}).status_code == 401


@pytest.mark.slow
def test_wrong_passwords_and_unknown_users_get_the_same_answer(client):
    c = client()
    wrong = c.login("vera", "not-her-password")
    unknown = c.login("nobody", "not-her-password")
    assert wrong.status_code == unknown.status_code == 401
    assert "Wrong user name or password." in wrong.get_data(as_text=True)
    assert c.http.get("/", headers={"Accept": "application/json"}).status_code == 401


@pytest.mark.slow
def test_next_never_leaves_the_site(client):
    for target, expected in (
        ("/floor?rack=3", "/floor?rack=3"),
        ("//evil.example/x", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
    ):
        c = client()
        token = c.csrf_from_form()
        response = c.http.post(
            "/login", data={"username": "vera", "password": PASSWORDS["vera"], "csrf_token": token, "next": target}
        )
        assert response.headers["Location"] == expected, target


def test_login_without_csrf_token_is_refused(client):
    c = client()
    c.http.get("/login")
    response = c.http.post("/login", data={"username": "vera", "password": PASSWORDS["vera"]})
    assert response.status_code == 400 and "CSRF" in response.get_data(as_text=True)


@pytest.mark.slow
def test_login_is_rate_limited_per_user_and_per_address(client, auth_app):
    state = auth_state(auth_app.server)
    state.by_user.clear("127.0.0.1 otto")
    c = client()
    for _ in range(state.settings.login_failures_per_user):
        assert c.login("otto", "wrong password!").status_code == 401
    refused = c.login("otto")  # the right password, but too late
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "Too many failed attempts" in refused.get_data(as_text=True)
    state.by_user.clear("127.0.0.1 otto")
    assert c.login("otto").status_code == 302
    # per address: many names from one address
    state.by_address.clear("127.0.0.1")
    for i in range(state.settings.login_failures_per_address):
        c.login(f"guess{i}", "wrong password!")
    assert c.login("ada").status_code == 429
    state.by_address.clear("127.0.0.1")


@pytest.mark.slow
def test_an_idle_session_ends(client, auth_app):
    state = auth_state(auth_app.server)
    now = [1_000_000.0]
    state.clock = lambda: now[0]
    try:
        c = client()
        c.login("vera")
        now[0] += state.settings.session_idle_s - 60
        assert c.http.get("/_dash-layout").status_code == 200  # used: the idle time starts again
        now[0] += state.settings.session_idle_s - 60
        assert c.http.get("/_dash-layout").status_code == 200
        now[0] += state.settings.session_idle_s + 1
        assert c.http.get("/_dash-layout").status_code == 401
    finally:
        state.clock = __import__("time").time


@pytest.mark.slow
def test_a_password_change_ends_open_sessions(client, auth_app, live_twin):
    from ingest.store.users import set_password

    c = client()
    c.login("ada")
    assert c.http.get("/_dash-layout").status_code == 200
    set_password(live_twin.db, "ada", PASSWORDS["ada"])  # same password, new epoch
    auth_state(auth_app.server).directory.invalidate()
    assert c.http.get("/_dash-layout").status_code == 401


@pytest.mark.slow
def test_callbacks_without_the_csrf_token_are_refused(client, fresh_alerts):
    c = client()
    c.login("otto")
    alert = fresh_alerts.view.alerts()[0]
    before = alert_rows(fresh_alerts)
    for headers in ({}, {"X-CSRFToken": "forged"}):
        response = c.callback(alert_action_body(alert["id"], "alert-ack"), csrf=False, headers=headers)
        assert response.status_code == 400 and "CSRF" in response.get_data(as_text=True)
    assert alert_rows(fresh_alerts) == before


def test_api_tokens_authenticate_scripts_without_csrf(client, auth_app, live_twin, fresh_alerts):
    token = new_token(live_twin.db, "otto")
    auth_state(auth_app.server).directory.invalidate()  # else known to this process within users_cache_s
    c = client()
    bearer = {"Authorization": f"Bearer {token}"}
    assert c.http.get("/_dash-layout", headers=bearer).status_code == 200
    for wrong in ("Bearer ct_wrong", "Bearer " + token + "x", "Basic " + token, token, "Bearer ct_" + "a" * 500):
        assert c.http.get("/_dash-layout", headers={"Authorization": wrong}).status_code == 401, wrong
    alert = fresh_alerts.view.alerts()[0]
    response = c.callback(alert_action_body(alert["id"], "alert-ack", comment="scripted"), csrf=False, headers=bearer)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert alert_rows(fresh_alerts)[alert["id"]][:2] == (True, "scripted")


def test_security_headers_on_every_response(client):
    c = client()
    c.login("vera")
    for path in ("/", "/login", "/assets/clustertwin.css", "/_dash-layout", "/nowhere"):
        response = c.http.get(path)
        csp = response.headers["Content-Security-Policy"]
        assert (
            "frame-ancestors 'none'" in csp
            and "default-src 'self'" in csp
            and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]
        ), path
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "same-origin"
    index = c.http.get("/")
    assert "'sha256-" in index.headers["Content-Security-Policy"]  # Dash's inline scripts, by hash


@pytest.mark.parametrize("field, value", [("username", "x" * 10_000), ("password", "y" * 100_000)])
def test_oversized_login_fields_are_refused_quickly(client, field, value):
    c = client()
    data = {"username": "vera", "password": "whatever-it-is", "csrf_token": c.csrf_from_form(), field: value}
    assert c.http.post("/login", data=data).status_code == 401


def test_a_deeply_nested_callback_body_from_a_logged_in_user_is_a_400(client):
    c = client()
    c.login("vera")
    depth = 100_000
    raw = '{"output": "x", "inputs": ' + "[" * depth + "]" * depth + "}"
    response = c.http.post(
        "/_dash-update-component",
        data=raw,
        headers={"Content-Type": "application/json", "X-CSRFToken": c.csrf_cookie()},
    )
    assert response.status_code == 400 and "nested too deeply" in response.get_data(as_text=True)


@pytest.mark.slow
def test_a_guesser_elsewhere_cannot_lock_the_user_out(client, auth_app):
    """Five bad tries for otto from another address: otto, from his own, logs in with his password."""
    state = auth_state(auth_app.server)
    guesser, otto = client(), client()
    guesser.http.environ_base["REMOTE_ADDR"] = "192.0.2.66"
    for _ in range(state.settings.login_failures_per_user):
        assert guesser.login("otto", "wrong password!").status_code == 401
    assert guesser.login("otto", "wrong password!").status_code == 429  # the guesser is stopped
    assert otto.login("otto").status_code == 302  # the user is not
    state.by_user.clear("192.0.2.66 otto")
    state.by_address.clear("192.0.2.66")


@pytest.mark.slow
def test_logout_ends_the_session_on_the_server(client, auth_app):
    """A copy of the session cookie taken before logging out is refused afterwards, and not refreshed."""
    c, thief = client(), client()
    c.login("vera")
    assert c.http.get("/_dash-layout").status_code == 200
    copied = c.http.get_cookie("clustertwin_session").value
    token = c.csrf_cookie()
    assert c.http.post("/logout", data={"csrf_token": token}).status_code == 302
    thief.http.set_cookie("clustertwin_session", copied)
    response = thief.http.get("/_dash-layout")
    assert response.status_code == 401
    assert "clustertwin_session=" not in "".join(response.headers.getlist("Set-Cookie")).replace(
        "clustertwin_session=;", ""
    )
    assert c.login("vera").status_code == 302 and c.http.get("/_dash-layout").status_code == 200  # logs in again

"""``/login`` and ``/logout``: plain Flask routes (no Dash), so they work before anyone is let in.

The login form carries a CSRF token; attempts are counted per client address and per
client address and user name (:mod:`dashboard.auth.ratelimit`: in the database, shared by
every process) before the password is checked, forgotten when they succeed, and refused
with HTTP 429 once over the limit.  Counting per address and name, not per name alone,
keeps a guesser elsewhere from locking the real user out.  ``next`` only ever leads back
into this site.  Logging out ends the user's sessions on the server (their session epoch
moves on), so a copy of the cookie taken before is worth nothing after.
"""

from __future__ import annotations

import logging
import math
from urllib.parse import urlsplit

import flask
import flask_login
from flask_wtf.csrf import generate_csrf
from sqlalchemy.exc import SQLAlchemyError

from dashboard.auth.access import LOGIN_PATH, LOGOUT_PATH, auth_state
from dashboard.auth.principal import SessionUser
from ingest.store.outage import one_line
from ingest.store.users import MAX_NAME_CHARS, MAX_PASSWORD_BYTES, end_sessions, verify_password

log = logging.getLogger(__name__)
LOGIN_RETRY_AFTER_S = 30  # a database outage: when to try logging in again

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Log in · ClusterTwin</title>
<link rel="stylesheet" href="{{ assets }}/clustertwin.css"><link rel="stylesheet" href="{{ assets }}/access.css">
</head><body><main class="login-page"><form class="login-card" method="post" action="{{ action }}">
<span class="brand">ClusterTwin</span><p class="login-sub">{{ site }} · operator dashboard</p>
{% if error %}<p class="login-error" role="alert">{{ error }}</p>{% endif %}
<input type="hidden" name="csrf_token" value="{{ csrf }}"><input type="hidden" name="next" value="{{ next }}">
<label for="username">User name</label>
<input id="username" name="username" type="text" autocomplete="username" maxlength="{{ max_name }}" value="{{ name }}" required autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Log in</button>
<p class="login-note">Accounts are created by an administrator with <code>clustertwin users add</code>.</p>
</form></main></body></html>"""


def safe_next(target: str | None) -> str:
    """``target`` when it is a path on this site, else ``/`` (no open redirect)."""
    if not isinstance(target, str) or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc and len(target) <= 2000 else "/"


def _page(error: str = "", name: str = "", status: int = 200, site: str = ""):
    html = flask.render_template_string(
        PAGE,
        assets=flask.request.script_root + "/assets",
        action=flask.request.script_root + LOGIN_PATH,
        site=site,
        error=error,
        name=name[:MAX_NAME_CHARS],
        csrf=generate_csrf(),
        max_name=MAX_NAME_CHARS,
        next=safe_next(flask.request.values.get("next")),
    )
    response = flask.make_response(html, status)
    response.headers["Cache-Control"] = "no-store"
    return response


def _reserve(state, address: str, name: str) -> tuple[float, tuple]:
    """Count this attempt against the address and the name: (0, tickets), or (seconds to wait, ()) when refused."""
    wait_s, by_address = state.by_address.reserve(address)
    if wait_s > 0:
        return wait_s, ()
    wait_s, by_user = state.by_user.reserve(pair_key(address, name))
    if wait_s > 0:
        state.by_address.release(by_address)
        return wait_s, ()
    return 0.0, ((state.by_address, by_address), (state.by_user, by_user))


def pair_key(address: str, name: str) -> str:
    """The counter key of one user name tried from one address."""
    return f"{address} {name}"


def _release(state, tickets: tuple) -> None:
    for limiter, ticket in tickets:
        limiter.release(ticket)


def _attempt(state, name: str, password: str, address: str, key: str, site_name: str):
    """One counted login attempt: 429 over the limit, 401 wrong, else the session and a redirect."""
    wait_s, tickets = _reserve(state, address, key)
    if wait_s > 0:
        log.warning("login refused (too many failures) for %r from %s", key, address)
        response = _page(f"Too many failed attempts: try again in {math.ceil(wait_s)} s.", name, 429, site_name)
        response.headers["Retry-After"] = str(math.ceil(wait_s))
        return response
    if len(password.encode()) > MAX_PASSWORD_BYTES:
        password = ""
    try:
        info = verify_password(state.engine, name, password) if name and password else None
    except BaseException:
        _release(state, tickets)  # not the client's failure
        raise
    if info is None:  # the attempts stay counted
        log.warning("login failed for %r from %s", key, address)
        return _page("Wrong user name or password.", name, 401, site_name)
    _release(state, tickets)
    state.by_user.clear(pair_key(address, key))
    flask.session.clear()  # a fresh session (and CSRF token) for the new user
    flask_login.login_user(SessionUser(info))
    flask.session.permanent = True
    flask.session["seen_at_s"] = state.clock()
    log.info("login: %s (%s) from %s", info.name, info.role, address)
    return flask.redirect(flask.request.script_root + safe_next(flask.request.form.get("next")))


def register_routes(server: flask.Flask, site_name: str) -> None:
    """Add ``/login`` (GET: the form; POST: log in) and ``/logout`` (POST) to ``server``."""

    @server.route(LOGIN_PATH, methods=["GET", "POST"])
    def login():
        state = auth_state()
        if flask.request.method == "GET":
            return _page(site=site_name)
        state.csrf.protect()
        name = str(flask.request.form.get("username", ""))[:100].strip().lower()
        password = flask.request.form.get("password", "")
        address = flask.request.remote_addr or "?"  # the client's, behind --trusted-proxies hops (see setup)
        key = name[:MAX_NAME_CHARS]
        try:
            return _attempt(state, name, password, address, key, site_name)
        except SQLAlchemyError as exc:  # counting attempts and checking passwords need the database
            log.error("login of %r from %s refused: the database cannot be reached (%s)", key, address, one_line(exc))
            response = _page("The user database cannot be reached: try again in a minute.", name, 503, site_name)
            response.headers["Retry-After"] = str(LOGIN_RETRY_AFTER_S)
            return response

    @server.route(LOGOUT_PATH, methods=["POST"])
    def logout():
        state = auth_state()
        state.csrf.protect()
        user = flask_login.current_user
        if user.is_authenticated:
            log.info("logout: %s", user.info.name)
            if user.via == "session" and state.engine is not None:
                end_sessions(state.engine, user.info.name)  # a copied cookie ends with this one
                state.directory.invalidate()
        flask_login.logout_user()
        flask.session.clear()
        return flask.redirect(flask.request.script_root + LOGIN_PATH)

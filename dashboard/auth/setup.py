"""Wire the access layer into a Dash app: sessions, tokens, CSRF, the login gate, roles, headers.

Order of the checks on every request (a ``before_request`` hook registered before any other):

0. with or without users: the ``Host`` the request names, and for a state-changing request
   its ``Origin``/``Referer`` (:mod:`dashboard.auth.origin`: DNS rebinding, cross-site posts);
1. no database or no users: nothing more to check (``serve`` allows that only on loopback);
2. public paths (``/login``, ``/assets/…``, the favicon) pass;
3. a session unused for ``session_idle_s`` ends;
4. anonymous requests: 401 JSON or a redirect to ``/login`` (:func:`~dashboard.auth.access.unauthorized`);
5. state-changing methods of a logged-in browser session need the CSRF token (Flask-WTF);
   requests authenticated by an API token carry no cookie and need none;
6. ``/_dash-update-component``: the callback's role (:mod:`dashboard.auth.callbacks`), else 403.

Every response gets the security headers (:mod:`dashboard.auth.headers`); a logged-in
browser gets the CSRF token in the ``_csrf_token`` cookie, which Dash's renderer sends back
as the ``X-CSRFToken`` header of every callback request.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta

import dash
import flask
import flask_login
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFProtect, generate_csrf
from sqlalchemy.engine import Engine
from werkzeug.middleware.proxy_fix import ProxyFix

from dashboard.auth import callbacks, headers, login, origin
from dashboard.auth.access import EXTENSION_KEY, current_user, forbidden, unauthorized
from dashboard.auth.directory import UserDirectory
from dashboard.auth.principal import SessionUser
from dashboard.auth.ratelimit import make_limiter
from dashboard.auth.settings import AuthSettings
from ingest.store.appsecrets import session_key

log = logging.getLogger(__name__)

CALLBACK_PATH = "/_dash-update-component"
PUBLIC_PREFIXES = ("/assets/",)
PUBLIC_PATHS = (login.LOGIN_PATH, "/_favicon.ico", "/favicon.ico")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
CSRF_COOKIE = "_csrf_token"  # the cookie name Dash's renderer reads (header X-CSRFToken)
SESSION_COOKIE = "clustertwin_session"
SEEN_REFRESH_S = 30.0  # the session's last-seen time is rewritten at most this often


@dataclass
class AuthState:
    """The access layer of one app."""

    engine: Engine | None
    settings: AuthSettings
    directory: UserDirectory
    by_address: object  # a limiter of dashboard.auth.ratelimit (in the database when there is one)
    by_user: object  # per client address and user name (dashboard.auth.login.pair_key)
    csrf: CSRFProtect
    callback_map: dict
    clock: callable = time.time
    _registry: dict | None = None
    _registry_size: int = -1

    @property
    def registry(self) -> dict[str, callbacks.CallbackRule]:
        """Callback key → rule, rebuilt if callbacks were added since."""
        if self._registry is None or self._registry_size != len(self.callback_map):
            self._registry = callbacks.build_registry(self.callback_map)
            self._registry_size = len(self.callback_map)
        return self._registry


def cookies_secure(settings: AuthSettings) -> bool:
    """Whether this request's cookies are marked Secure: always with ``secure_cookies``, else over HTTPS.

    Behind ``trusted_proxies`` hops the scheme is the one the nearest trusted proxy forwarded
    (``X-Forwarded-Proto``); otherwise forwarded headers are ignored.
    """
    return settings.secure_cookies or (flask.has_request_context() and flask.request.is_secure)


class _SessionInterface(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, with the Secure flag decided per request (:func:`cookies_secure`)."""

    def __init__(self, settings: AuthSettings) -> None:
        self.settings = settings

    def get_cookie_secure(self, app: flask.Flask) -> bool:
        return cookies_secure(self.settings)


def _is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def init_auth(app: dash.Dash, engine: Engine | None, site_name: str, settings: AuthSettings | None = None) -> AuthState:
    """Install the access layer on ``app`` (after every callback is registered)."""
    settings = settings or AuthSettings()
    server = app.server
    server.secret_key = session_key(engine) if engine is not None else secrets.token_hex(32)
    server.config.update(
        SESSION_COOKIE_NAME=SESSION_COOKIE,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(seconds=settings.session_idle_s),
        SESSION_REFRESH_EACH_REQUEST=False,  # the idle check rewrites the cookie (and its expiry) every 30 s
        WTF_CSRF_CHECK_DEFAULT=False,
        WTF_CSRF_TIME_LIMIT=None,
    )
    server.session_interface = _SessionInterface(settings)
    if settings.trusted_proxies:
        server.wsgi_app = ProxyFix(server.wsgi_app, x_for=settings.trusted_proxies, x_proto=settings.trusted_proxies)
    manager = flask_login.LoginManager(server)
    state = AuthState(
        engine=engine,
        settings=settings,
        directory=UserDirectory(engine, settings.users_cache_s),
        by_address=make_limiter(engine, "address", settings.login_failures_per_address, settings.login_window_s),
        by_user=make_limiter(engine, "address_user", settings.login_failures_per_user, settings.login_window_s),
        csrf=CSRFProtect(server),
        callback_map=app.callback_map,
    )
    server.extensions[EXTENSION_KEY] = state

    @manager.user_loader
    def _load_session_user(session_id: str):
        user_id, _, epoch = str(session_id).partition(":")
        info = state.directory.get(int(user_id)) if user_id.isdigit() else None
        return SessionUser(info) if info is not None and str(info.session_epoch) == epoch else None

    @manager.request_loader
    def _load_token_user(request: flask.Request):
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or engine is None:
            return None
        info = state.directory.by_token(token.strip())
        return SessionUser(info, via="token") if info is not None else None

    if settings.bind_host is not None and origin.allowed_hosts(settings.bind_host, settings.allowed_hosts) is None:
        log.warning(
            "serving on every address (%s) without --allowed-host: the Host header of requests is not checked",
            settings.bind_host,
        )
    login.register_routes(server, site_name)
    server.before_request_funcs.setdefault(None, []).insert(0, _gate(state))
    server.after_request(_after(state))
    return state


def _expire_idle_session(state: AuthState) -> None:
    if "_user_id" not in flask.session:
        return
    now, seen = state.clock(), flask.session.get("seen_at_s")
    if not isinstance(seen, (int, float)) or now - seen > state.settings.session_idle_s:
        log.info(
            "session of user id %s ended after %.0f s idle",
            str(flask.session.get("_user_id"))[:20],
            now - seen if isinstance(seen, (int, float)) else -1,
        )
        flask_login.logout_user()
        flask.session.clear()
    elif now - seen > SEEN_REFRESH_S:
        flask.session["seen_at_s"] = now


def _gate(state: AuthState):
    hosts = origin.allowed_hosts(state.settings.bind_host, state.settings.allowed_hosts)

    def gate():
        request = flask.request
        refusal = origin.host_refusal(hosts) or origin.origin_refusal()
        if refusal is not None:
            return refusal
        if state.engine is None or not state.directory.logins_required() or _is_public(request.path):
            return None
        _expire_idle_session(state)
        user = current_user()
        if user is None:
            return unauthorized()
        if request.method not in SAFE_METHODS and user.via == "session":
            state.csrf.protect()
        if request.path == CALLBACK_PATH and request.method == "POST":
            try:
                body = request.get_json(silent=True)
            except RecursionError:
                return flask.jsonify(error="bad callback request: the JSON is nested too deeply"), 400
            role = callbacks.required_role(state.registry, body)
            if role is not None and not user.has_role(role):
                log.warning(
                    "refused callback %s for %s (%s): needs %s",
                    str(body.get("output"))[:120],
                    user.name,
                    user.role,
                    role,
                )
                return forbidden(role)
        return None

    return gate


def _after(state: AuthState):
    def after(response: flask.Response) -> flask.Response:
        headers.add_headers(response)
        request = flask.request
        if (
            request.method == "GET"
            and response.mimetype == "text/html"
            and state.engine is not None
            and flask_login.current_user.is_authenticated
            and flask_login.current_user.via == "session"
        ):
            response.set_cookie(
                CSRF_COOKIE, generate_csrf(), samesite="Strict", secure=cookies_secure(state.settings), httponly=False
            )
        return response

    return after

"""Who is asking and what they may do: the functions pages, callbacks and API routes call.

* :func:`current_user` — the :class:`~dashboard.auth.principal.Principal` of the request, or
  None for an anonymous request once users exist (with no users, everyone is ``local``/admin).
* :func:`has_role` — for Dash layouts and callbacks (e.g. hide a button); :func:`needs_role` the
  props that disable a control the user may not use.
* :func:`require_role` — decorator for Flask views: 401 (JSON) or a redirect to the login
  page for anonymous requests, 403 for a role too low.
* :func:`audit` — record a change made in this request in the audit log.
"""

from __future__ import annotations

import logging
from functools import wraps

import flask
import flask_login

from dashboard.auth.principal import LOCAL, Principal
from ingest.store import audit as audit_log

log = logging.getLogger(__name__)
EXTENSION_KEY = "clustertwin_auth"
LOGIN_PATH = "/login"
LOGOUT_PATH = "/logout"


def auth_state(app: flask.Flask | None = None):
    """The :class:`dashboard.auth.setup.AuthState` of ``app`` (the current app by default), or None."""
    app = app or flask.current_app
    return app.extensions.get(EXTENSION_KEY)


def login_required_now() -> bool:
    """Whether this app asks for a login: it has a database and has seen a user (never turned off again)."""
    state = auth_state()
    return state is not None and state.directory.logins_required()


def current_user() -> Principal | None:
    """The request's user; :data:`~dashboard.auth.principal.LOCAL` when no users exist; None when anonymous."""
    if not flask.has_request_context() or not login_required_now():
        return LOCAL
    user = flask_login.current_user
    return user.principal if user.is_authenticated else None


def has_role(role: str) -> bool:
    """Whether the request's user has ``role`` or above."""
    user = current_user()
    return user is not None and user.has_role(role)


def needs_role(role: str) -> dict:
    """Props for a control whose callback needs ``role``: disabled, with a tooltip saying why, for a user
    without it; empty otherwise (the server refuses the callback either way)."""
    if has_role(role):
        return {}
    return {"disabled": True, "title": f"needs the {role} role"}


def wants_json() -> bool:
    """API, metrics, Dash-internal and scripted requests get JSON errors; a browser page gets a redirect or a page."""
    request = flask.request
    # /metrics is read by scrapers, which expect 401, not a login page
    if request.path.startswith(("/api/", "/_dash-", "/_reload-hash", "/metrics")) or "Authorization" in request.headers:
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


def unauthorized() -> flask.Response:
    """401 JSON (with ``WWW-Authenticate: Bearer``) for API calls, else a redirect to the login page."""
    if wants_json():
        response = flask.jsonify(error="login required: log in at /login or send 'Authorization: Bearer <token>'")
        response.status_code = 401
        response.headers["WWW-Authenticate"] = 'Bearer realm="clustertwin"'
        return response
    target = flask.request.full_path.rstrip("?") if flask.request.method == "GET" else "/"
    return flask.redirect(f"{LOGIN_PATH}?next={flask.request.script_root}{target}" if target != "/" else LOGIN_PATH)


def forbidden(role: str) -> flask.Response:
    """403 naming the role needed."""
    user = current_user()
    message = f"this needs the {role} role; {user.name} is {user.role}" if user else f"this needs the {role} role"
    if wants_json():
        response = flask.jsonify(error=message)
    else:
        response = flask.make_response(
            flask.render_template_string(
                "<!doctype html><title>Forbidden · ClusterTwin</title><p>{{ message }}</p><p><a href='/'>back</a></p>",
                message=message,
            )
        )
    response.status_code = 403
    return response


def role_refusal(role: str) -> flask.Response | None:
    """The response refusing this request for lack of ``role`` (None when it may go on)."""
    user = current_user()
    if user is None:
        return unauthorized()
    if not user.has_role(role):
        log.warning(
            "refused %s %s: %s (%s) lacks the %s role",
            flask.request.method,
            flask.request.path[:200],
            user.name,
            user.role,
            role,
        )
        return forbidden(role)
    return None


def require_role(role: str):
    """Decorator for Flask views (API routes): the request needs a user with ``role`` or above."""

    def decorate(view):
        @wraps(view)
        def guarded(*args, **kwargs):
            refusal = role_refusal(role)
            return refusal if refusal is not None else view(*args, **kwargs)

        return guarded

    return decorate


def audit(action: str, target: str, before=None, after=None) -> None:
    """Record that the request's user changed ``target`` (``before``/``after``: JSON-able, secrets masked).

    ``action`` is a dotted name (``alert.acknowledge``, ``scenario.edit``…).  Without a database
    (a stand-in hub) the change is only logged.
    """
    user = current_user()
    name = user.name if user else "anonymous"
    address = (flask.request.remote_addr or "") if flask.has_request_context() else ""
    log.info("audit: %s %s %s", name, action, target)
    state = auth_state() if flask.has_app_context() else None
    if state is not None and state.engine is not None:
        audit_log.record(state.engine, name, action, target, before, after, address=address)

"""Who may call an API route: the API's one link to the dashboard's access control (:mod:`dashboard.auth`).

Every API request has already passed the access layer's gate (a login or a bearer token
once users exist, CSRF for browser sessions); :func:`authorize` adds the role each route
declares, answering 401 or 403 as JSON like the rest of the app.
"""

from __future__ import annotations

import flask

from dashboard.auth import audit, current_user
from dashboard.auth.access import role_refusal

__all__ = ["audit", "authorize", "current_user_name"]


def authorize(role: str) -> flask.Response | None:
    """The refusal of this request for lack of ``role`` (401 or 403, JSON), or None when it may go on."""
    return role_refusal(role)


def current_user_name() -> str:
    """Name of the caller, recorded with what they change ('' when anonymous)."""
    user = current_user()
    return user.name if user is not None else ""

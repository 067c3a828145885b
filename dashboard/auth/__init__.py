"""Access control of the dashboard and the API: users and roles, login, CSRF, audit, headers.

The stable interface other parts of the app use:

* :func:`init_auth` — installed by :func:`dashboard.app.create_app`;
* :func:`current_user` → :class:`Principal` (``name``, ``role``, ``via``, ``has_role(role)``) or None;
* :func:`has_role` — for layouts and callbacks (hide what a role cannot use); :func:`needs_role`
  the props that disable a control for a user without the role;
* :func:`require_role` — decorator for Flask routes (API): 401 JSON / login redirect, 403;
* :func:`callback_requires` — mark a Dash callback that changes state with the role it needs;
* :func:`audit` — record a change (who, when, what, before, after).

How clients authenticate: browsers log in at ``/login`` (session cookie, CSRF token in the
``_csrf_token`` cookie sent back as ``X-CSRFToken``); scripts send
``Authorization: Bearer <token>`` with a token from ``clustertwin users token NAME`` (no
CSRF token needed: no cookie is involved).  See docs/security.md.
"""

from dashboard.auth.access import audit, current_user, has_role, needs_role, require_role
from dashboard.auth.callbacks import callback_requires
from dashboard.auth.principal import Principal
from dashboard.auth.settings import AuthSettings
from dashboard.auth.setup import init_auth

__all__ = [
    "AuthSettings",
    "Principal",
    "audit",
    "callback_requires",
    "current_user",
    "has_role",
    "needs_role",
    "init_auth",
    "require_role",
]

"""The header's account block: who is logged in, their role, a link to the audit log (admins), log out."""

from __future__ import annotations

import flask
from dash import dcc, html
from flask_wtf.csrf import generate_csrf

from dashboard.auth.access import LOGOUT_PATH, current_user, login_required_now


def account_block() -> html.Div | None:
    """The block for the request's user (None when nobody logs in: no users exist)."""
    if not flask.has_request_context() or not login_required_now():
        return None
    user = current_user()
    if user is None:
        return None
    items = [html.Span(user.name, className="account-name"), html.Span(user.role, className="account-role")]
    if user.has_role("admin"):
        items.append(html.A("audit log", href="/audit", className="account-audit"))
    if user.via == "session":
        items.append(
            html.Form(
                [
                    dcc.Input(type="hidden", name="csrf_token", value=generate_csrf()),
                    html.Button("log out", type="submit", className="account-logout"),
                ],
                method="post",
                action=LOGOUT_PATH,
            )
        )
    return html.Div(items, className="account", id="account")

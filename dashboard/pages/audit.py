"""``/audit`` (admins only): who changed what and when, with the state before and after.

Filters: user, kind of action (alerts, users, scenarios, incidents, sources) and time
window; newest first, at most :data:`SHOWN` entries.  Other roles get a one-line refusal,
and the filter callback itself needs the admin role on the server.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import dash
from dash import Input, Output, dcc, html

from dashboard import ids
from dashboard.auth import callback_requires, has_role
from dashboard.auth.access import auth_state
from ingest.store.audit import AuditFilter, list_entries

dash.register_page(__name__, path="/audit", name="Audit", title="Audit log · ClusterTwin", order=90)

ROLE = "admin"
SHOWN = 500
ACTIONS = (
    ("all changes", ""),
    ("alerts", "alert."),
    ("scenarios", "scenario."),
    ("incidents", "incident."),
    ("users", "user."),
    ("sources", "source."),
)
WINDOWS_S = (("last hour", 3600), ("last day", 86_400), ("last 7 days", 7 * 86_400), ("all", 0))
MAX_USER_CHARS = 100


def _state_text(value) -> str:
    if value is None:
        return "–"
    return json.dumps(value, sort_keys=True, ensure_ascii=False) if not isinstance(value, str) else value


def entries_table(entries: list[dict]) -> html.Table | html.Div:
    """The entries as a table (newest first)."""
    if not entries:
        return html.Div("no changes match the filter", className="empty")
    head = html.Thead(
        html.Tr(
            [
                html.Th("time (UTC)", className="num"),
                html.Th("user"),
                html.Th("action"),
                html.Th("what"),
                html.Th("before"),
                html.Th("after"),
                html.Th("from"),
            ]
        )
    )
    rows = [
        html.Tr(
            [
                html.Td(f"{e['at'].astimezone(UTC):%Y-%m-%d %H:%M:%S}", className="num"),
                html.Td(e["user_name"]),
                html.Td(e["action"]),
                html.Td(e["target"]),
                html.Td(_state_text(e["before"]), className="muted"),
                html.Td(_state_text(e["after"])),
                html.Td(e["address"] or "command line", className="muted"),
            ]
        )
        for e in entries
    ]
    return html.Table([head, html.Tbody(rows)], className="data audit")


def audit_view(user: str | None, action: str | None, window_s, now: datetime | None = None) -> tuple:
    """(count text, table) for the filter; entries are read from the app's database."""
    state = auth_state()
    if state is None or state.engine is None:
        return "", html.Div("this dashboard has no database, hence no audit log", className="empty")
    now = now or datetime.now(UTC)
    window_s = window_s if isinstance(window_s, int) and window_s in dict(WINDOWS_S).values() else 0
    user = user.strip()[:MAX_USER_CHARS] if isinstance(user, str) and user.strip() else None
    action = action if action in dict(ACTIONS).values() and action else None
    entries = list_entries(
        state.engine,
        AuditFilter(
            user_name=user, action=action, limit=SHOWN, since=now - timedelta(seconds=window_s) if window_s else None
        ),
    )
    more = " (the newest shown)" if len(entries) == SHOWN else ""
    return f"{len(entries)} change{'s' if len(entries) != 1 else ''}{more}", entries_table(entries)


def layout(**_kwargs) -> html.Div:
    if not has_role(ROLE):
        return html.Div(
            [html.H1("Audit log"), html.P("The audit log is for administrators only.", className="empty")],
            className="page page-audit",
        )
    count, table = audit_view(None, None, WINDOWS_S[1][1])
    return html.Div(
        [
            html.Div(
                [
                    html.H1("Audit log"),
                    html.Div(
                        [
                            html.Div(
                                [
                                    html.Label("user", htmlFor=ids.Audit.USER),
                                    dcc.Input(
                                        id=ids.Audit.USER,
                                        type="text",
                                        placeholder="any user",
                                        debounce=True,
                                        maxLength=MAX_USER_CHARS,
                                    ),
                                ],
                                className="audit-user",
                            ),
                            dcc.RadioItems(
                                id=ids.Audit.ACTION,
                                value="",
                                inline=True,
                                className="segmented",
                                options=[{"label": label, "value": value} for label, value in ACTIONS],
                            ),
                            dcc.RadioItems(
                                id=ids.Audit.WINDOW,
                                value=WINDOWS_S[1][1],
                                inline=True,
                                className="segmented",
                                options=[{"label": label, "value": value} for label, value in WINDOWS_S],
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            html.Div(count, id=ids.Audit.COUNT, className="muted"),
            html.Div(html.Div(table, id=ids.Audit.TABLE), className="panel"),
        ],
        className="page page-audit",
    )


@dash.callback(
    Output(ids.Audit.COUNT, "children"),
    Output(ids.Audit.TABLE, "children"),
    Input(ids.Audit.USER, "value"),
    Input(ids.Audit.ACTION, "value"),
    Input(ids.Audit.WINDOW, "value"),
    prevent_initial_call=True,
)
@callback_requires(ROLE)
def filter_audit(user, action, window_s):
    return audit_view(user, action, window_s)

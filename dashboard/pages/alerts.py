"""``/alerts``: active and past alerts; acknowledge, silence, jump to the entity's page.

Deep link: ``/alerts?severity=critical,warning&past=1`` restores the severity filter
and whether cleared alerts are listed.  Tables are re-sent only when an alert changes.
"""

from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import urlencode

import dash
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from dashboard import compare, ids
from dashboard.components.data_age import format_age
from dashboard.entity_links import entity_href
from dashboard.deep_link import keep_view
from dashboard.views import current_screen, current_view, view_layout
from dashboard.timestamps import normalise_alert

dash.register_page(__name__, path="/alerts", name="Alerts", title="Alerts · ClusterTwin", order=6)

SEVERITIES = ("critical", "warning", "info")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
SILENCE_OPTIONS_S = (900, 3600, 4 * 3600, 24 * 3600)
PAST_LIMIT = 200


def parse_severities(value) -> list[str]:
    """Severity filter from the URL (comma list) or a checklist value; all when empty/invalid."""
    items = value.split(",") if isinstance(value, str) else list(value or [])
    chosen = [s for s in SEVERITIES if s in items]
    return chosen or list(SEVERITIES)


def parse_past(value) -> bool:
    if isinstance(value, list):
        return "past" in value
    return str(value).lower() in ("1", "true", "yes")


def url_search(severities: list[str], show_past: bool) -> str:
    params = {}
    if set(severities) != set(SEVERITIES):
        params["severity"] = ",".join(severities)
    if show_past:
        params["past"] = "1"
    return "?" + urlencode(params) if params else ""


def _utc(ts: datetime | None) -> str:
    return f"{ts.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S}" if ts else "–"


def alert_status(alert: dict, now: datetime) -> str:
    """``cleared``, ``silenced``, ``acknowledged`` or ``open``."""
    if alert.get("cleared_at") is not None:
        return "cleared"
    until = alert.get("silenced_until")
    if until is not None and until > now:
        return "silenced"
    return "acknowledged" if alert.get("acknowledged") else "open"


def sort_alerts(alerts: list[dict]) -> list[dict]:
    """Critical first, then newest first."""
    return sorted(alerts, key=lambda a: (SEVERITY_RANK.get(a.get("severity"), 9), -a["ts"].timestamp()))


def alerts_signature(alerts: list[dict], now: datetime) -> list:
    """What a table shows, compactly: re-render only when it changes."""
    return sorted([str(a["id"]), alert_status(a, now), a.get("severity"), a.get("message")] for a in alerts)


def _entity_cell(state, alert: dict):
    label = f"{alert.get('entity_kind', '')} {alert.get('entity_name') or alert.get('entity_id', '')}".strip()
    href = entity_href(state, alert.get("entity_kind"), alert.get("entity_id"), alert.get("entity_name"))
    return dcc.Link(label, href=href) if href else label


def active_table(state, alerts: list[dict], now: datetime, actions: bool = True) -> html.Table | html.Div:
    """Open alerts, with acknowledge and silence buttons when ``actions`` (live views only)."""
    if not alerts:
        return html.Div("no active alerts match the filter", className="empty")
    head = html.Tr([html.Th("severity"), html.Th("raised (UTC)", className="num"), html.Th("age", className="num"), html.Th("source"), html.Th("entity"),
                    html.Th("message"), html.Th("status"), html.Th("actions")])
    rows = []
    for alert in sort_alerts(alerts):
        status = alert_status(alert, now)
        until = alert.get("silenced_until")
        status_text = f"silenced until {until.astimezone(timezone.utc):%H:%M} UTC" if status == "silenced" else status
        rows.append(html.Tr(
            [
                html.Td(html.Span(alert["severity"], className=f"sev sev-{alert['severity']}")),
                html.Td(_utc(alert["ts"]), className="num"),
                html.Td(format_age((now - alert["ts"]).total_seconds()), className="num"),
                html.Td(alert.get("source", "")),
                html.Td(_entity_cell(state, alert)),
                html.Td(alert.get("message", "")),
                html.Td(status_text, className="muted" if status != "open" else ""),
                html.Td(
                    [
                        html.Button("acknowledge", id=ids.alert_ack(alert["id"]), n_clicks=0,
                                    disabled=bool(alert.get("acknowledged"))),
                        " ",
                        html.Button("silence", id=ids.alert_silence(alert["id"]), n_clicks=0),
                    ] if actions else html.Span("read-only", className="muted"),
                    className="actions",
                ),
            ],
            className=f"alert-row status-{status}",
            **{"data-alert": str(alert["id"])},
        ))
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data alerts")


def past_table(state, alerts: list[dict]) -> html.Table | html.Div:
    """Cleared alerts, newest first (at most :data:`PAST_LIMIT`)."""
    if not alerts:
        return html.Div("no cleared alerts match the filter", className="empty")
    head = html.Tr([html.Th("severity"), html.Th("raised (UTC)", className="num"), html.Th("cleared (UTC)", className="num"), html.Th("lasted", className="num"),
                    html.Th("source"), html.Th("entity"), html.Th("message")])
    newest = sorted(alerts, key=lambda a: -a["ts"].timestamp())[:PAST_LIMIT]
    rows = [
        html.Tr([
            html.Td(html.Span(a["severity"], className=f"sev sev-{a['severity']}")),
            html.Td(_utc(a["ts"]), className="num"),
            html.Td(_utc(a["cleared_at"]), className="num"),
            html.Td(format_age((a["cleared_at"] - a["ts"]).total_seconds()), className="num"),
            html.Td(a.get("source", "")),
            html.Td(_entity_cell(state, a)),
            html.Td(a.get("message", "")),
        ], **{"data-alert": str(a["id"])})
        for a in newest
    ]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data alerts")


def summary(alerts: list[dict], now: datetime) -> str:
    active = [a for a in alerts if a.get("cleared_at") is None]
    by_sev = {s: sum(1 for a in active if a["severity"] == s) for s in SEVERITIES}
    unacked = sum(1 for a in active if alert_status(a, now) == "open")
    return (f"{len(active)} active: {by_sev['critical']} critical, {by_sev['warning']} warning, {by_sev['info']} info · "
            f"{unacked} need attention (not acknowledged or silenced)")


def alerts_view(hub, severities: list[str], show_past: bool, now: datetime | None = None) -> dict:
    """Summary, active table, past table and the change signature for the current filter."""
    now = now or datetime.now(timezone.utc)
    everything = [normalise_alert(a) for a in hub.alerts(active_only=False)]
    chosen = [a for a in everything if a.get("severity") in severities]
    active = [a for a in chosen if a.get("cleared_at") is None]
    past = [a for a in chosen if a.get("cleared_at") is not None] if show_past else []
    return {
        "summary": summary(everything, now),
        "active": active_table(hub.state, active, now, actions=hub.is_live),
        "past": past_table(hub.state, past) if show_past else html.Div("cleared alerts hidden", className="empty"),
        "signature": [alerts_signature(active, now), alerts_signature(past, now), severities, show_past],
    }


def comparison(screen) -> list:
    """Compare mode: open alerts per severity in A against B."""
    a = [normalise_alert(x) for x in screen.view.alerts(active_only=True)]
    b = [normalise_alert(x) for x in screen.compare.alerts(active_only=True)]
    rows = [(f"open {sev}", "alerts", 0, float(sum(x["severity"] == sev for x in a)), float(sum(x["severity"] == sev for x in b)))
            for sev in SEVERITIES]
    return [compare.header(screen), html.Div([html.H3("Open alerts"), compare.numbers_table(rows, screen)], className="panel")]


compare.register(ids.Alerts.PAGE, comparison)


@view_layout
def layout(severity=None, past=None, **_kwargs) -> html.Div:
    severities = parse_severities(severity)
    show_past = parse_past(past)
    screen = current_screen(**_kwargs)
    view = alerts_view(screen.view, severities, show_past)
    return html.Div(
        [
            dcc.Location(id=ids.Alerts.URL, refresh=False),
            dcc.Store(id=ids.Alerts.SIGNATURE, data=view["signature"]),
            html.Div(
                [
                    html.H1("Alerts"),
                    html.Div(
                        [
                            html.Label("severity"),
                            dcc.Checklist(id=ids.Alerts.SEVERITY, value=severities, inline=True, className="segmented",
                                          options=[{"label": s, "value": s} for s in SEVERITIES]),
                            dcc.Checklist(id=ids.Alerts.SHOW_CLEARED, value=["past"] if show_past else [], inline=True,
                                          className="segmented", options=[{"label": "show cleared", "value": "past"}]),
                            html.Label("silence for", htmlFor=ids.Alerts.SILENCE_DURATION),
                            dcc.RadioItems(
                                id=ids.Alerts.SILENCE_DURATION, value=SILENCE_OPTIONS_S[1], inline=True, className="segmented",
                                options=[{"label": format_age(s).replace(".0", ""), "value": s} for s in SILENCE_OPTIONS_S],
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            compare.section(ids.Alerts.PAGE, screen),
            html.Div(view["summary"], id=ids.Alerts.SUMMARY, className="muted"),
            html.Div(id=ids.Alerts.ACTION_RESULT, className="action-result", role="status"),
            html.Div([html.H3("Active"), html.Div(view["active"], id=ids.Alerts.ACTIVE_TABLE)], className="panel"),
            html.Div([html.H3("Cleared"), html.Div(view["past"], id=ids.Alerts.PAST_TABLE)], className="panel"),
        ],
        className="page page-alerts",
    )


def apply_action(hub, triggered_id, silence_s: float) -> str:
    """Acknowledge or silence the alert of the clicked button; returns a message for the page.

    Only a live view's alerts can be acknowledged or silenced; other views' are read-only.
    """
    if not isinstance(triggered_id, dict):
        return ""
    if not hub.is_live:
        return f"alerts of {hub.label} are read-only"
    alert_id = triggered_id.get("alert")
    if triggered_id.get("type") == ids.ALERT_ACK:
        hub.acknowledge(alert_id)
        return f"alert {alert_id} acknowledged"
    if triggered_id.get("type") == ids.ALERT_SILENCE:
        hub.silence(alert_id, float(silence_s))
        return f"alert {alert_id} silenced for {format_age(float(silence_s))}"
    return ""


@dash.callback(
    Output(ids.Alerts.SUMMARY, "children"),
    Output(ids.Alerts.ACTIVE_TABLE, "children"),
    Output(ids.Alerts.PAST_TABLE, "children"),
    Output(ids.Alerts.SIGNATURE, "data"),
    Output(ids.Alerts.ACTION_RESULT, "children"),
    Output(ids.Alerts.URL, "search"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.alert_ack(ALL), "n_clicks"),
    Input(ids.alert_silence(ALL), "n_clicks"),
    Input(ids.Alerts.SEVERITY, "value"),
    Input(ids.Alerts.SHOW_CLEARED, "value"),
    State(ids.Alerts.SILENCE_DURATION, "value"),
    State(ids.Alerts.SIGNATURE, "data"),
    prevent_initial_call=True,
)
def update_alerts(_n, _acks, _silences, severity, show_cleared, silence_s, signature):
    hub = current_view()
    message = no_update
    triggered = ctx.triggered_id
    if isinstance(triggered, dict):
        if not (ctx.triggered and ctx.triggered[0].get("value")):
            return (no_update,) * 6  # a button appeared (table re-render), nobody clicked it
        message = apply_action(hub, triggered, silence_s or SILENCE_OPTIONS_S[1])
    severities, show_past = parse_severities(severity), parse_past(show_cleared)
    view = alerts_view(hub, severities, show_past)
    search = keep_view(url_search(severities, show_past)) if triggered in (ids.Alerts.SEVERITY, ids.Alerts.SHOW_CLEARED) else no_update
    if view["signature"] == signature and message is no_update:
        return no_update, no_update, no_update, no_update, no_update, search
    return view["summary"], view["active"], view["past"], view["signature"], message, search

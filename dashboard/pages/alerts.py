"""``/alerts``: open alerts grouped by cause with their impact and first action; acknowledge, silence;
scoped silences and maintenance windows.

Each cause (a CDU loss, a dead busway, a stalled job…) is one block: its root alert, what
it costs (GPUs, jobs, throughput, MW), a runbook line, and the alerts it explains
underneath.  Acknowledge takes a comment; the silence duration is chosen per alert and a
silence can be lifted; confirmations name the alert.  The panel of
:mod:`dashboard.components.mute_panel` silences a scope (a hall, an entity glob, a cause)
or schedules a maintenance window; each row says what mutes it ("silenced by H1 until …",
"in maintenance: <reason>"), and such alerts need no attention.

Deep link: ``/alerts?severity=critical,warning&past=1`` restores the severity filter
and whether cleared alerts are listed.  Tables are re-sent only when an alert changes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

import dash
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from dashboard import ids
from dashboard.auth import audit, callback_requires, current_user, has_role
from dashboard.callbacks import inputs
from dashboard.components import mute_panel
from dashboard.components.data_age import format_age
from dashboard.present.timestamps import normalise_alert
from dashboard.shell.deep_link import keep_view
from dashboard.shell.entity_links import entity_href
from dashboard.shell.status import AlertGroup, alert_counts, group_alerts, view_now
from dashboard.views import compare
from dashboard.views.context import alert_actions
from dashboard.views.registry import callback_view, layout_screen, view_layout
from ingest.store.mutes import alert_audit_state

PATH = "/alerts"
dash.register_page(__name__, path=PATH, name="Alerts", title="Alerts · ClusterTwin", order=6)

SEVERITIES = ("critical", "warning", "info")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
SILENCE_OPTIONS_S = (900, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600)
MAX_COMMENT_CHARS = 500
CHILDREN_SHOWN = 8  # alerts listed under a cause before "… and N more"
PAST_LIMIT = 200
ACTION_ROLE = "operator"  # acknowledge, silence and lift a silence
ACTION_TYPES = (ids.ALERT_ACK, ids.ALERT_SILENCE, ids.ALERT_UNSILENCE)


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
    return f"{ts.astimezone(UTC):%Y-%m-%d %H:%M:%S}" if ts else "–"


def _own_silence(alert: dict, now: datetime) -> bool:
    until = alert.get("silenced_until")
    return until is not None and until > now


def _mute_mark(alert: dict, now: datetime) -> dict | None:
    """The maintenance window, else the scoped silence, the alert is under at ``now`` (None: neither)."""
    for key in ("maintenance", "silence"):
        mark = alert.get(key)
        if mark and mark["starts_at"] <= now < mark["ends_at"]:
            return mark
    return None


def alert_status(alert: dict, now: datetime) -> str:
    """``cleared``, ``maintenance``, ``silenced`` (by itself or by a scope), ``acknowledged`` or ``open``."""
    if alert.get("cleared_at") is not None:
        return "cleared"
    mark = _mute_mark(alert, now)
    if mark is not None:
        return "maintenance" if mark["kind"] == "maintenance" else "silenced"
    if _own_silence(alert, now):
        return "silenced"
    return "acknowledged" if alert.get("acknowledged") else "open"


def status_text(alert: dict, now: datetime) -> str:
    """What the status column says: ``in maintenance: <reason> …``, ``silenced by H1 until …``, ``open`` …"""
    status = alert_status(alert, now)
    mark = _mute_mark(alert, now) if status in ("maintenance", "silenced") else None
    if mark is not None:
        return mute_panel.mute_status(mark, now)
    if status == "silenced":
        return f"silenced until {alert['silenced_until'].astimezone(UTC):%H:%M} UTC"
    if status == "acknowledged" and alert.get("ack_comment"):
        return f"acknowledged: {alert['ack_comment']}"
    return status


def sort_alerts(alerts: list[dict]) -> list[dict]:
    """Critical first, then newest first."""
    return sorted(alerts, key=lambda a: (SEVERITY_RANK.get(a.get("severity"), 9), -a["ts"].timestamp()))


def alerts_signature(alerts: list[dict], now: datetime) -> list:
    """What a table shows, compactly: re-render only when it changes.

    An episode's impact figures move with every tick (the swing); they are left out, so the
    table, its buttons and a comment being typed are not replaced every second (a click on a
    button being replaced was lost).  They are shown afresh whenever an alert opens, clears,
    changes severity, text or status.
    """
    return sorted(
        [str(a["id"]), status_text(a, now), a.get("severity"), a.get("message"), str(a.get("group"))] for a in alerts
    )


def _entity_cell(state, alert: dict):
    label = f"{alert.get('entity_kind', '')} {alert.get('entity_name') or alert.get('entity_id', '')}".strip()
    href = entity_href(state, alert.get("entity_kind"), alert.get("entity_id"), alert.get("entity_name"))
    return dcc.Link(label, href=href) if href else label


def _impact_text(gpus: int, jobs, tokens_per_s: float, power_mw: float) -> str:
    parts = [f"{gpus:,} GPUs"] if gpus else []
    parts += [f"{len(jobs)} job{'s' if len(jobs) != 1 else ''}"] if jobs else []
    parts += [f"−{tokens_per_s:,.0f} tokens/s"] if tokens_per_s >= 1 else []
    parts += [f"{power_mw:,.2f} MW"] if power_mw >= 0.005 else []
    return " · ".join(parts) or "no measurable impact"


def _actions(alert: dict, own_silence: bool):
    """Comment, acknowledge, silence-for and silence (or lift the alert's own silence) of one alert."""
    alert_id = alert["id"]
    silence = (
        html.Button("lift silence", id=ids.alert_unsilence(alert_id), n_clicks=0)
        if own_silence
        else html.Button("silence", id=ids.alert_silence(alert_id), n_clicks=0)
    )
    return html.Div(
        [
            dcc.Input(
                id=ids.alert_comment(alert_id),
                placeholder="comment",
                maxLength=MAX_COMMENT_CHARS,
                debounce=False,
                className="alert-comment",
                disabled=bool(alert.get("acknowledged")),
            ),
            html.Button(
                "acknowledge", id=ids.alert_ack(alert_id), n_clicks=0, disabled=bool(alert.get("acknowledged"))
            ),
            dcc.Dropdown(
                id=ids.alert_silence_for(alert_id),
                value=SILENCE_OPTIONS_S[1],
                clearable=False,
                searchable=False,
                className="silence-for",
                options=[{"label": format_age(v).replace(".0", ""), "value": v} for v in SILENCE_OPTIONS_S],
            ),
            silence,
        ],
        className="actions",
    )


def _alert_row(state, alert: dict, now: datetime, actions: bool, child: bool) -> html.Tr:
    status = alert_status(alert, now)
    impact = alert.get("impact") or {}
    return html.Tr(
        [
            html.Td(html.Span(alert["severity"], className=f"sev sev-{alert['severity']}")),
            html.Td(
                ["↳ ", _entity_cell(state, alert)] if child else _entity_cell(state, alert),
                className="child-entity" if child else "",
            ),
            html.Td(alert.get("message", ""), className="alert-text"),
            html.Td(
                _impact_text(
                    int(impact.get("gpus", 0)),
                    impact.get("jobs", ()),
                    float(impact.get("tokens_per_s", 0.0)),
                    float(impact.get("power_mw", 0.0)),
                ),
                className="num",
            ),
            html.Td(
                [
                    _utc(alert["ts"]),
                    html.Br(),
                    html.Span(format_age((now - alert["ts"]).total_seconds()), className="muted"),
                ],
                className="num",
            ),
            html.Td(status_text(alert, now), className="alert-status" + (" muted" if status != "open" else "")),
            html.Td(
                _actions(alert, _own_silence(alert, now))
                if actions
                else html.Div("read-only", className="actions muted")
            ),
        ],
        className=f"alert-row status-{status}" + (" child" if child else ""),
        **{"data-alert": str(alert["id"])},
    )


def _group_block(state, group: AlertGroup, now: datetime, actions: bool) -> html.Div:
    """One cause: its root alert (with the whole group's impact), its first action, the alerts it explains."""
    root = dict(
        group.root,
        impact={
            "gpus": group.gpus,
            "jobs": list(group.jobs),
            "tokens_per_s": group.tokens_per_s,
            "power_mw": group.power_mw,
        },
    )
    children = group.children
    rows = [_alert_row(state, root, now, actions, child=False)]
    if root.get("runbook"):
        rows.append(html.Tr(html.Td(["first action: ", root["runbook"]], colSpan=7), className="runbook"))
    rows += [_alert_row(state, a, now, actions, child=True) for a in children[:CHILDREN_SHOWN]]
    if len(children) > CHILDREN_SHOWN:
        rows.append(
            html.Tr(
                html.Td(f"… and {len(children) - CHILDREN_SHOWN} more alerts under this cause", colSpan=7),
                className="muted more",
            )
        )
    return html.Tbody(rows, className=f"alert-group sev-border-{group.severity}", **{"data-group": group.key})


def active_table(state, alerts: list[dict], now: datetime, actions: bool = True) -> html.Table | html.Div:
    """Open alerts grouped by cause, most urgent first, with per-alert actions when ``actions`` (live only)."""
    if not alerts:
        return html.Div("no active alerts match the filter", className="empty")
    head = html.Thead(
        html.Tr(
            [
                html.Th("severity"),
                html.Th("entity"),
                html.Th("alert"),
                html.Th("impact", className="num"),
                html.Th("raised (UTC)", className="num"),
                html.Th("status"),
                html.Th("actions"),
            ]
        )
    )
    return html.Table(
        [head, *[_group_block(state, g, now, actions) for g in group_alerts(alerts)]], className="data alerts grouped"
    )


def past_table(state, alerts: list[dict]) -> html.Table | html.Div:
    """Cleared alerts, newest first (at most :data:`PAST_LIMIT`)."""
    if not alerts:
        return html.Div("no cleared alerts match the filter", className="empty")
    head = html.Tr(
        [
            html.Th("severity"),
            html.Th("raised (UTC)", className="num"),
            html.Th("cleared (UTC)", className="num"),
            html.Th("lasted", className="num"),
            html.Th("source"),
            html.Th("entity"),
            html.Th("message"),
        ]
    )
    newest = sorted(alerts, key=lambda a: -a["ts"].timestamp())[:PAST_LIMIT]
    rows = [
        html.Tr(
            [
                html.Td(html.Span(a["severity"], className=f"sev sev-{a['severity']}")),
                html.Td(_utc(a["ts"]), className="num"),
                html.Td(_utc(a["cleared_at"]), className="num"),
                html.Td(format_age((a["cleared_at"] - a["ts"]).total_seconds()), className="num"),
                html.Td(a.get("source", "")),
                html.Td(_entity_cell(state, a)),
                html.Td(a.get("message", "")),
            ],
            **{"data-alert": str(a["id"])},
        )
        for a in newest
    ]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data alerts")


def summary(alerts: list[dict], now: datetime) -> str:
    """The same counts the overview shows (:func:`dashboard.shell.status.alert_counts`)."""
    c = alert_counts(alerts, now)
    text = (
        f"{c['open']} open in {c['groups']} causes: {c['critical']} critical, {c['warning']} warning, "
        f"{c['info']} info · {c['need_attention']} need attention (not acknowledged, silenced or in maintenance)"
    )
    return text + (f" · {c['in_maintenance']} in maintenance" if c["in_maintenance"] else "")


def alerts_view(view, severities: list[str], show_past: bool, now: datetime | None = None, actions=None) -> dict:
    """Summary, active table, past table and the change signature for the current filter, of ``view``'s alerts.

    The active table has action buttons when ``actions`` (the app's alert actions) can change them.
    """
    now = now or view_now(view)
    everything = [normalise_alert(a) for a in view.alerts(active_only=False)]
    chosen = [a for a in everything if a.get("severity") in severities]
    active = [a for a in chosen if a.get("cleared_at") is None]
    past = [a for a in chosen if a.get("cleared_at") is not None] if show_past else []
    mutes = actions.mutes() if mute_panel.supports_mutes(actions) else []
    return {
        "summary": summary(everything, now),
        "active": active_table(view.state, active, now, actions=_can_change(view, actions) and has_role(ACTION_ROLE)),
        "past": past_table(view.state, past) if show_past else html.Div("cleared alerts hidden", className="empty"),
        "mutes": mute_panel.mute_list(actions, mutes, datetime.now(UTC), _can_change(view, actions)),
        "signature": [
            alerts_signature(active, now),
            alerts_signature(past, now),
            severities,
            show_past,
            mute_panel.mutes_signature(mutes),
        ],
    }


def comparison(screen) -> list:
    """Compare mode: open alerts per severity in A against B."""
    a = [normalise_alert(x) for x in screen.view.alerts(active_only=True)]
    b = [normalise_alert(x) for x in screen.compare.alerts(active_only=True)]
    rows = [
        (
            f"open {sev}",
            "alerts",
            0,
            float(sum(x["severity"] == sev for x in a)),
            float(sum(x["severity"] == sev for x in b)),
        )
        for sev in SEVERITIES
    ]
    return [
        compare.header(screen),
        html.Div([html.H3("Open alerts"), compare.numbers_table(rows, screen)], className="panel"),
    ]


compare.register(ids.Alerts.PAGE, comparison)


@view_layout
@inputs.query_layout()
def layout(severity=None, past=None, **_kwargs) -> html.Div:
    severities = parse_severities(severity)
    show_past = parse_past(past)
    screen = layout_screen(**_kwargs)
    shown = alerts_view(screen.view, severities, show_past, actions=alert_actions())
    return html.Div(
        [
            dcc.Location(id=ids.Alerts.URL, refresh=False),
            dcc.Store(id=ids.Alerts.SIGNATURE, data=shown["signature"]),
            html.Div(
                [
                    html.H1("Alerts"),
                    html.Div(
                        [
                            html.Label("severity"),
                            dcc.Checklist(
                                id=ids.Alerts.SEVERITY,
                                value=severities,
                                inline=True,
                                className="segmented",
                                options=[{"label": s, "value": s} for s in SEVERITIES],
                            ),
                            dcc.Checklist(
                                id=ids.Alerts.SHOW_CLEARED,
                                value=["past"] if show_past else [],
                                inline=True,
                                className="segmented",
                                options=[{"label": "show cleared", "value": "past"}],
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            compare.section(ids.Alerts.PAGE, screen),
            html.Div(shown["summary"], id=ids.Alerts.SUMMARY, className="muted"),
            html.Div(id=ids.Alerts.ACTION_RESULT, className="action-result", role="status"),
            html.Div([html.H3("Active"), html.Div(shown["active"], id=ids.Alerts.ACTIVE_TABLE)], className="panel"),
            mute_panel.mute_panel(alert_actions(), datetime.now(UTC), _can_change(screen.view, alert_actions())),
            html.Div([html.H3("Cleared"), html.Div(shown["past"], id=ids.Alerts.PAST_TABLE)], className="panel"),
        ],
        className="page page-alerts",
    )


def _can_change(view, actions) -> bool:
    """Whether ``actions`` can acknowledge and silence the alerts of ``view``: only a live view's."""
    return view.is_live and actions is not None


def _alert_name(view, alert_id) -> str:
    """How a confirmation names an alert: its entity and text, not its database id."""
    for alert in view.alerts(active_only=False):
        if str(alert["id"]) == str(alert_id):
            return f"{alert.get('entity_kind', '')} {alert.get('entity_name', '')} — {alert.get('message', '')}".strip()
    return "that alert (no longer listed)"


def apply_action(view, actions, triggered_id, silence_s=SILENCE_OPTIONS_S[1], comment: str = "") -> str:
    """Acknowledge, silence or lift the silence of the clicked alert of ``view``; returns a message naming it.

    Only a live view's alerts can be acknowledged or silenced (through ``actions``, the app's
    alert actions), by an operator or admin (the request hook refuses others before this runs;
    this check is the second line); other views' are read-only.  Each change goes to the
    audit log with the alert's state before and after.
    """
    if not isinstance(triggered_id, dict):
        return ""
    if not _can_change(view, actions):
        return f"alerts of {view.label} are read-only"
    if not has_role(ACTION_ROLE):
        return f"not done: acknowledging and silencing alerts needs the {ACTION_ROLE} role"
    try:
        alert_id = inputs.alert_id(triggered_id.get("alert"))
        kind = triggered_id.get("type")
        name = _alert_name(view, alert_id)
        before = _audit_state(view, alert_id)
        if kind == ids.ALERT_ACK:
            comment = (comment or "").strip()[:MAX_COMMENT_CHARS] if isinstance(comment, str) else ""
            actions.acknowledge(alert_id, comment=comment, user=_user_name())
            audit("alert.acknowledge", f"alert {alert_id}: {name}", before, _audit_state(view, alert_id))
            return f"acknowledged: {name}" + (f" (“{comment}”)" if comment else "")
        if kind == ids.ALERT_SILENCE:
            seconds = inputs.silence_duration_s(silence_s)
            actions.silence(alert_id, seconds)
            audit("alert.silence", f"alert {alert_id}: {name}", before, _audit_state(view, alert_id))
            return f"silenced for {format_age(seconds)}: {name}"
        if kind == ids.ALERT_UNSILENCE:
            actions.unsilence(alert_id)
            audit("alert.unsilence", f"alert {alert_id}: {name}", before, _audit_state(view, alert_id))
            return f"silence lifted: {name}"
    except (inputs.InputError, KeyError, PermissionError) as exc:
        return f"not done: {exc.args[0] if exc.args else exc}"
    return ""


def _user_name() -> str:
    user = current_user()
    return user.name if user else ""


def _audit_state(view, alert_id) -> dict | None:
    """What the audit log keeps of an alert before and after a change."""
    for alert in view.alerts(active_only=False):
        if str(alert["id"]) == str(alert_id):
            return alert_audit_state(alert)
    return None


def _state_for(alert_id, states: list) -> object:
    """The value of the per-alert input (comment or silence duration) of ``alert_id``."""
    for item in states or []:
        if isinstance(item, dict) and str((item.get("id") or {}).get("alert")) == str(alert_id):
            return item.get("value")
    return None


@dash.callback(
    Output(ids.Alerts.SUMMARY, "children"),
    Output(ids.Alerts.ACTIVE_TABLE, "children"),
    Output(ids.Alerts.PAST_TABLE, "children"),
    Output(ids.AlertMutes.LIST, "children"),
    Output(ids.Alerts.SIGNATURE, "data"),
    Output(ids.Alerts.URL, "search"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Alerts.ACTION_RESULT, "children"),
    Input(ids.AlertMutes.RESULT, "children"),
    Input(ids.Alerts.SEVERITY, "value"),
    Input(ids.Alerts.SHOW_CLEARED, "value"),
    State(ids.Alerts.SIGNATURE, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def update_alerts(_n, _action_result, _mute_result, severity, show_cleared, signature, screen):
    """The tables, re-rendered when what they show changed (after a tick, or at once after an action)."""
    view = callback_view(screen, PATH)
    severities, show_past = parse_severities(severity), parse_past(show_cleared)
    shown = alerts_view(view, severities, show_past, actions=alert_actions())
    search = (
        keep_view(url_search(severities, show_past), screen)
        if ctx.triggered_id in (ids.Alerts.SEVERITY, ids.Alerts.SHOW_CLEARED)
        else no_update
    )
    if shown["signature"] == signature:
        return no_update, no_update, no_update, no_update, no_update, search
    return shown["summary"], shown["active"], shown["past"], shown["mutes"], shown["signature"], search


# An action has a callback of its own: were it answered by the tick's callback, a tick sent while
# the click's request is in flight would make the browser drop the click's (older) answer.
@dash.callback(
    Output(ids.Alerts.ACTION_RESULT, "children"),
    Input(ids.alert_ack(ALL), "n_clicks"),
    Input(ids.alert_silence(ALL), "n_clicks"),
    Input(ids.alert_unsilence(ALL), "n_clicks"),
    State(ids.alert_comment(ALL), "value"),
    State(ids.alert_silence_for(ALL), "value"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
@callback_requires(ACTION_ROLE, on=ACTION_TYPES)
def act_on_alert(_acks, _silences, _unsilences, _comments, _durations, screen):
    """Acknowledge, silence or lift the silence of the clicked alert; its message makes the tables re-render."""
    triggered = ctx.triggered_id
    if not isinstance(triggered, dict) or not (ctx.triggered and ctx.triggered[0].get("value")):
        return no_update  # a button appeared (table re-render), nobody clicked it
    view = callback_view(screen, PATH)
    comments, durations = (ctx.states_list or [[], [], None])[:2]
    alert_id = triggered.get("alert")
    message = apply_action(
        view,
        alert_actions(),
        triggered,
        _state_for(alert_id, durations) or SILENCE_OPTIONS_S[1],
        _state_for(alert_id, comments) or "",
    )
    return message


@dash.callback(
    Output(ids.AlertMutes.RESULT, "children"),
    Input(ids.AlertMutes.ADD, "n_clicks"),
    Input(ids.mute_end(ALL), "n_clicks"),
    State(ids.AlertMutes.KIND, "value"),
    State(ids.AlertMutes.SCOPE_KIND, "value"),
    State(ids.AlertMutes.SCOPE_VALUE, "value"),
    State(ids.AlertMutes.RULE, "value"),
    State(ids.AlertMutes.START, "value"),
    State(ids.AlertMutes.DURATION, "value"),
    State(ids.AlertMutes.COMMENT, "value"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
@callback_requires(mute_panel.ROLE, on=(ids.AlertMutes.ADD, ids.MUTE_END))
def act_on_mutes(_add, _ends, kind, scope_kind, value, rule, start, duration_s, comment, screen):
    """Add the silence or window of the form, or expire / cancel the clicked one; its message re-renders the page."""
    if not (ctx.triggered and ctx.triggered[0].get("value")):
        return no_update  # a button appeared (list re-render), nobody clicked it
    view, actions = callback_view(screen, PATH), alert_actions()
    if not (_can_change(view, actions) and mute_panel.supports_mutes(actions)):
        return "not done: silences and windows apply to the live alerts"
    if not has_role(mute_panel.ROLE):
        return f"not done: silences and windows need the {mute_panel.ROLE} role"
    triggered = ctx.triggered_id
    if isinstance(triggered, dict):
        return mute_panel.apply_end(actions, triggered.get("mute"), _user_name())
    form = {
        "kind": kind,
        "scope_kind": scope_kind,
        "value": value,
        "rule": rule,
        "start": start,
        "duration_s": duration_s,
        "comment": comment,
    }
    return mute_panel.apply_add(actions, form, _user_name())


@dash.callback(
    Output(ids.AlertMutes.START, "disabled"),
    Input(ids.AlertMutes.KIND, "value"),
    prevent_initial_call=True,
)
def window_start_enabled(kind):
    """A window's start is chosen; a silence starts now (the field stays off for a viewer)."""
    return kind != "maintenance" or not has_role(mute_panel.ROLE)

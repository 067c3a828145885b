"""API routes of the alerts: list, acknowledge and silence (operator), as the alerts page does."""

from __future__ import annotations

from dashboard.api import models as m
from dashboard.api.access import audit, current_user_name
from dashboard.api.live import database_reachable
from dashboard.api.routing import ApiError, NotFound, api
from dashboard.views.context import alert_actions, live_view

MAX_ALERTS = 500  # the live view lists the newest 500, as the alerts page shows


TEXT_FIELDS = (
    "key",
    "source",
    "entity_kind",
    "entity_name",
    "metric",
    "message",
    "group",
    "runbook",
    "acknowledged_by",
    "ack_comment",
)


def _alert(a: dict) -> m.Alert:
    values = {k: a.get(k) for k in m.Alert.model_fields}
    values.update({k: values[k] or "" for k in TEXT_FIELDS})
    values["acknowledged"] = bool(values["acknowledged"])
    return m.Alert.model_validate(values)


@api.route(
    "GET",
    "/alerts",
    summary="Alerts newest first (the newest 500), open ones by default",
    tag="alerts",
    query=m.AlertQuery,
    response=m.AlertPage,
)
def list_alerts(query: m.AlertQuery = m.AlertQuery()) -> m.AlertPage:
    view = live_view()
    alerts = view.alerts(query.active_only)[:MAX_ALERTS]
    if query.severity is not None:
        alerts = [a for a in alerts if a.get("severity") == query.severity]
    page = alerts[query.offset : query.offset + query.limit]
    return m.AlertPage(
        total_count=len(alerts),
        offset=query.offset,
        limit=query.limit,
        items=[_alert(a) for a in page],
        database_reachable_flag=database_reachable(view),
    )


def _find(alert_id: int) -> dict:
    for alert in live_view().alerts(False)[:MAX_ALERTS]:
        if alert.get("id") == alert_id:
            return alert
    raise NotFound(f"no alert with id {alert_id}")


@api.route(
    "GET", "/alerts/{alert_id}", summary="One alert", tag="alerts", params=m.AlertId, response=m.Alert, errors=(404,)
)
def get_alert(params: m.AlertId) -> m.Alert:
    return _alert(_find(params.alert_id))


def _audit_state(alert: dict) -> dict:
    until = alert.get("silenced_until")
    return {
        "acknowledged": bool(alert.get("acknowledged")),
        "ack_comment": alert.get("ack_comment") or "",
        "silenced_until": until.isoformat() if hasattr(until, "isoformat") else until,
    }


def _changed(alert_id: int, action: str, change) -> m.Alert:
    """Apply ``change(actions)`` to an alert and record it in the audit log, as the alerts page does."""
    actions = alert_actions()
    if actions is None or not live_view().is_live:
        raise ApiError(409, "this server shows no live alerts to change")
    before = _find(alert_id)
    try:
        change(actions)
    except ValueError as exc:  # the actions refuse a value on purpose (a silence over its limit)
        raise ApiError(400, str(exc)) from None
    after = _find(alert_id)
    audit(action, f"alert {alert_id}: {before.get('entity_name', '')}", _audit_state(before), _audit_state(after))
    return _alert(after)


@api.route(
    "POST",
    "/alerts/{alert_id}/acknowledge",
    summary="Acknowledge an alert with a comment",
    role="operator",
    tag="alerts",
    params=m.AlertId,
    body=m.Acknowledge,
    response=m.Alert,
    errors=(404, 409),
)
def acknowledge_alert(params: m.AlertId, body: m.Acknowledge) -> m.Alert:
    return _changed(
        params.alert_id,
        "alert.acknowledge",
        lambda actions: actions.acknowledge(params.alert_id, body.comment, user=current_user_name()),
    )


@api.route(
    "POST",
    "/alerts/{alert_id}/silence",
    summary="Silence an alert for up to 7 days",
    role="operator",
    tag="alerts",
    params=m.AlertId,
    body=m.Silence,
    response=m.Alert,
    errors=(404, 409),
)
def silence_alert(params: m.AlertId, body: m.Silence) -> m.Alert:
    return _changed(params.alert_id, "alert.silence", lambda actions: actions.silence(params.alert_id, body.duration_s))

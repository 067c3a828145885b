"""API routes of the alerts: list, acknowledge and silence (operator), as the alerts page does; scoped
silences and maintenance windows: list (viewer), add, expire or cancel (operator), each change audited."""

from __future__ import annotations

from dashboard.api import models as m
from dashboard.api.access import audit, current_user_name
from dashboard.api.live import database_reachable
from dashboard.api.routing import ApiError, NotFound, Unprocessable, api
from dashboard.views.context import alert_actions, live_view
from ingest.store.mutes import alert_audit_state, audit_entry

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
    audit(
        action,
        f"alert {alert_id}: {before.get('entity_name', '')}",
        alert_audit_state(before),
        alert_audit_state(after),
    )
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


# ------------------------------------------------------------------ scoped silences and maintenance windows
def _mute_actions():
    """The alert actions, when they can change this server's live alerts (else 409)."""
    actions = alert_actions()
    if actions is None or not live_view().is_live or not callable(getattr(actions, "add_silence", None)):
        raise ApiError(409, "this server shows no live alerts to silence")
    return actions


def _mute(row: dict) -> m.Mute:
    return m.Mute.model_validate(row)


def _listed(kind: str, query: m.MuteQuery) -> m.MuteList:
    rows = _mute_actions().mutes(ended_within_s=query.ended_within_s)
    return m.MuteList(items=[_mute(r) for r in rows if r["kind"] == kind])


def _added(kind: str, add) -> m.Mute:
    """Store a silence or window through ``add(actions, user)`` and audit it; a refused one is 422."""
    actions = _mute_actions()
    try:
        row = add(actions, current_user_name())
    except ValueError as exc:  # a bad pattern, an unknown hall, bad times, too many
        raise Unprocessable(str(exc)) from None
    audit(*audit_entry("add", None, row))
    return _mute(row)


def _expired(kind: str, mute_id: int) -> m.Mute:
    actions = _mute_actions()
    found = [r for r in actions.mutes(ended_within_s=m.MAX_MUTE_S) if r["id"] == mute_id and r["kind"] == kind]
    if not found:
        raise NotFound(f"no {'maintenance window' if kind == 'maintenance' else 'silence'} with id {mute_id}")
    try:
        before, after = actions.expire_mute(mute_id, current_user_name())
    except ValueError as exc:  # it ended meanwhile
        raise Unprocessable(str(exc)) from None
    audit(*audit_entry("end", before, after))
    return _mute(after)


@api.route(
    "GET",
    "/silences",
    summary="Scoped silences active now (and those ended within ended_within_s)",
    tag="alerts",
    query=m.MuteQuery,
    response=m.MuteList,
    errors=(409,),
)
def list_silences(query: m.MuteQuery = m.MuteQuery()) -> m.MuteList:
    return _listed("silence", query)


@api.route(
    "POST",
    "/silences",
    summary="Silence every alert of a scope (entity glob, cause group or hall) for up to 7 days",
    role="operator",
    tag="alerts",
    body=m.SilenceScopeBody,
    response=m.Mute,
    errors=(409, 422),
)
def add_silence(body: m.SilenceScopeBody) -> m.Mute:
    scope = body.scope.model_dump()
    return _added("silence", lambda actions, user: actions.add_silence(scope, body.duration_s, body.comment, user))


@api.route(
    "POST",
    "/silences/{mute_id}/expire",
    summary="End a scoped silence now",
    role="operator",
    tag="alerts",
    params=m.MuteId,
    response=m.Mute,
    errors=(404, 409, 422),
)
def expire_silence(params: m.MuteId) -> m.Mute:
    return _expired("silence", params.mute_id)


@api.route(
    "GET",
    "/maintenance-windows",
    summary="Maintenance windows active or upcoming (and those ended within ended_within_s)",
    tag="alerts",
    query=m.MuteQuery,
    response=m.MuteList,
    errors=(409,),
)
def list_maintenance_windows(query: m.MuteQuery = m.MuteQuery()) -> m.MuteList:
    return _listed("maintenance", query)


@api.route(
    "POST",
    "/maintenance-windows",
    summary="Schedule a maintenance window of a scope: its alerts are not paged and need no attention",
    role="operator",
    tag="alerts",
    body=m.MaintenanceBody,
    response=m.Mute,
    errors=(409, 422),
)
def add_maintenance_window(body: m.MaintenanceBody) -> m.Mute:
    scope = body.scope.model_dump()
    return _added(
        "maintenance",
        lambda actions, user: actions.add_maintenance(scope, body.starts_at, body.ends_at, body.reason, user),
    )


@api.route(
    "POST",
    "/maintenance-windows/{mute_id}/cancel",
    summary="Cancel a maintenance window (one under way ends now)",
    role="operator",
    tag="alerts",
    params=m.MuteId,
    response=m.Mute,
    errors=(404, 409, 422),
)
def cancel_maintenance_window(params: m.MuteId) -> m.Mute:
    return _expired("maintenance", params.mute_id)

"""Scoped silences and maintenance windows of a site's alerts, in the ``alert_mute`` table.

:func:`add_mute` stores one after checking its times (it ends after it starts, in the
future, at most :data:`MAX_MUTE_S` after its start; a window starts at most
:data:`MAX_AHEAD_S` ahead) and the count of those not ended yet (at most
:data:`MAX_OPEN_MUTES` per site); :func:`expire_mute` ends one now (a silence expired, a
window cancelled: one that has not started never will).  Every change notifies the
site's other processes in its transaction (:data:`ingest.store.livestate.ALERTS_CHANNEL`),
as alert acknowledgements do.  What a scope may name is checked by the caller
(:func:`ingest.live.mute_scope.parse_scope`).  What the audit log keeps of a change is
:func:`audit_entry` (of a silence or window) and :func:`alert_audit_state` (of one alert's
own acknowledgement and silence), so that the API and the command line record the same.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, func, or_, select

from ingest.store.livestate import ALERTS_CHANNEL, notify
from ingest.store.models import AlertMute, Event

MAX_MUTE_S = 7 * 24 * 3600.0  # as a single alert's silence: longer, and nobody would see the alerts again
MAX_AHEAD_S = 90 * 24 * 3600.0  # a window is scheduled at most this far ahead
MAX_OPEN_MUTES = 200  # silences and windows of a site not ended yet (active or upcoming)
MAX_LISTED = 500  # rows one listing returns
MAX_COMMENT_CHARS = 500
MAX_USER_CHARS = 100


class MuteError(ValueError):
    """A silence or window refused (bad times, too many, unknown id); the message is one line."""


def _when(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")


def check_times(starts_at: datetime, ends_at: datetime, now: datetime) -> datetime:
    """The start to store (``starts_at``, or ``now`` when it lies in the past); :class:`MuteError` for bad times."""
    for name, ts in (("start", starts_at), ("end", ends_at)):
        if not isinstance(ts, datetime) or ts.tzinfo is None:
            raise MuteError(f"{name} {ts!r}: expected a timezone-aware time")
    start = max(starts_at, now)
    if ends_at <= start:
        raise MuteError(f"end {_when(ends_at)} is not after the start {_when(start)}")
    if (ends_at - start).total_seconds() > MAX_MUTE_S:
        raise MuteError(f"from {_when(start)} to {_when(ends_at)} is longer than {MAX_MUTE_S / 86400:g} days")
    if (start - now).total_seconds() > MAX_AHEAD_S:
        raise MuteError(f"start {_when(start)} is more than {MAX_AHEAD_S / 86400:g} days ahead")
    return start


def mute_dict(row: AlertMute, now: datetime) -> dict:
    """One silence or window as the API and the pages show it; ``state``: upcoming, active or ended."""
    ends = min(row.ends_at, row.expired_at) if row.expired_at is not None else row.ends_at
    state = "ended" if now >= ends else ("upcoming" if now < row.starts_at else "active")
    return {
        "id": row.id,
        "site": row.site_name,
        "kind": row.kind,
        "scope_kind": row.scope_kind,
        "scope_value": row.scope_value,
        "rule_name": row.rule_name,
        "metric": row.metric,
        "comment": row.comment,
        "created_by": row.created_by,
        "created_at": row.created_at,
        "starts_at": row.starts_at,
        "ends_at": ends,
        "expired_at": row.expired_at,
        "expired_by": row.expired_by,
        "state": state,
    }


AUDIT_KEYS = ("kind", "scope_kind", "scope_value", "rule_name", "metric", "comment", "starts_at", "ends_at", "state")


def _audited(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def audit_state(row: dict) -> dict:
    """What the audit log keeps of a silence or window (:func:`mute_dict`): its scope, comment, times (ISO 8601), state."""
    return {k: _audited(row[k]) for k in AUDIT_KEYS}


def audit_entry(change: str, before: dict | None, after: dict) -> tuple[str, str, dict | None, dict]:
    """(action, target, before, after) of the audit entry of a change of a silence or window.

    ``change``: ``add`` (``before`` None) or ``end`` (an expiry or a cancellation);
    ``after`` (and ``before``) are rows of :func:`mute_dict` with their ``scope`` label.  The
    action is ``silence.add``, ``silence.expire``, ``maintenance.add`` or ``maintenance.cancel``.
    """
    kind = after["kind"]
    verb = "add" if change == "add" else ("cancel" if kind == "maintenance" else "expire")
    return (
        f"{kind}.{verb}",
        f"{kind} {after['id']}: {after['scope']}",
        audit_state(before) if before is not None else None,
        audit_state(after),
    )


def alert_audit_state(alert: dict) -> dict:
    """What the audit log keeps of one alert before and after an acknowledgement or its own silence."""
    return {
        "acknowledged": bool(alert.get("acknowledged")),
        "ack_comment": alert.get("ack_comment") or "",
        "silenced_until": _audited(alert.get("silenced_until")),
    }


def _not_ended(site_name: str, now: datetime):
    return (
        AlertMute.site_name == site_name,
        AlertMute.ends_at > now,
        or_(AlertMute.expired_at.is_(None), AlertMute.expired_at > now),
    )


def add_mute(
    engine: Engine,
    site_name: str,
    *,
    kind: str,
    scope: tuple[str, str, str, str],
    comment: str,
    created_by: str,
    starts_at: datetime,
    ends_at: datetime,
    now: datetime,
) -> dict:
    """Store a silence or window of ``scope`` (kind, value, rule, metric, already checked); its :func:`mute_dict`."""
    if kind not in ("silence", "maintenance"):
        raise MuteError(f"kind {kind!r}: expected silence or maintenance")
    comment = " ".join((comment or "").split())
    if not comment:
        raise MuteError(
            f"a {'maintenance window needs a reason' if kind == 'maintenance' else 'silence needs a comment'}"
        )
    if len(comment) > MAX_COMMENT_CHARS:
        raise MuteError(f"comment is longer than {MAX_COMMENT_CHARS} characters")
    start = check_times(starts_at, ends_at, now)
    scope_kind, scope_value, rule_name, metric = scope
    with Session(engine) as session:
        count = session.exec(select(func.count()).select_from(AlertMute).where(*_not_ended(site_name, now))).one()
        if count >= MAX_OPEN_MUTES:
            raise MuteError(
                f"site {site_name} has {count} silences and windows not ended yet, the most allowed: "
                "expire or cancel some first"
            )
        row = AlertMute(
            site_name=site_name,
            kind=kind,
            scope_kind=scope_kind,
            scope_value=scope_value,
            rule_name=rule_name,
            metric=metric,
            comment=comment,
            created_by=(created_by or "anonymous")[:MAX_USER_CHARS],
            created_at=now,
            starts_at=start,
            ends_at=ends_at,
        )
        session.add(row)
        session.flush()
        notify(session.connection(), ALERTS_CHANNEL, site_name)
        session.commit()
        session.refresh(row)
        return mute_dict(row, now)


def expire_mute(engine: Engine, site_name: str, mute_id: int, user: str, now: datetime) -> tuple[dict, dict]:
    """End silence or window ``mute_id`` of the site now; its :func:`mute_dict` before and after.

    One that has ended already is refused (:class:`MuteError`), as is an id of another site.
    """
    if isinstance(mute_id, bool) or not isinstance(mute_id, int):
        raise MuteError(f"no silence or maintenance window with id {mute_id!r}")
    with Session(engine) as session:
        row = session.get(AlertMute, mute_id)
        if row is None or row.site_name != site_name:
            raise MuteError(f"no silence or maintenance window with id {mute_id} on site {site_name}")
        before = mute_dict(row, now)
        if before["state"] == "ended":
            raise MuteError(f"{row.kind} {mute_id} ended at {_when(before['ends_at'])} already")
        row.expired_at, row.expired_by = now, (user or "anonymous")[:MAX_USER_CHARS]
        session.add(row)
        session.flush()
        notify(session.connection(), ALERTS_CHANNEL, site_name)
        session.commit()
        session.refresh(row)
        return before, mute_dict(row, now)


def list_mutes(
    engine: Engine, site_name: str, now: datetime, *, ended_since: timedelta | None = None, limit: int = MAX_LISTED
) -> list[dict]:
    """The site's silences and windows not ended yet, soonest start first (:func:`mute_dict`).

    ``ended_since`` also lists those that ended within that long before ``now``.
    """
    since = now - ended_since if ended_since is not None else now
    query = select(AlertMute).where(*_not_ended(site_name, since)).order_by(AlertMute.starts_at, AlertMute.id)
    with Session(engine) as session:
        rows = session.exec(query.limit(max(1, min(int(limit), MAX_LISTED)))).all()
    return [mute_dict(r, now) for r in rows]


def silenced_alerts(
    engine: Engine, site_name: str, now: datetime, limit: int = 10_000
) -> list[tuple[int, str, datetime, datetime]]:
    """The site's open alerts silenced by themselves (the alert's own silence) at ``now``: (id, key, raised, until)."""
    query = (
        select(Event.id, Event.key, Event.raised_at, Event.silenced_until)
        .where(Event.site_name == site_name, Event.cleared_at.is_(None), Event.silenced_until > now)
        .limit(limit)
    )
    with Session(engine) as session:
        return [(int(i), k, raised, until) for i, k, raised, until in session.exec(query).all()]

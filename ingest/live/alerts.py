"""Alert episodes in the store: raised once, updated while they last, cleared once.

:class:`AlertTracker` turns the conditions of successive snapshots (from
:mod:`ingest.live.alert_rules`) into :class:`Event` rows.  The database sees only what
changed: one row when a condition starts; an update, with a history row
(:class:`EventChange`), when its severity or text changes; an impact update when what it
costs changes; one update when it clears.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ingest.live.alert_rules import Condition
from ingest.store.models import Event, EventChange


def _impact_columns(c: Condition) -> dict:
    return {
        "group_key": c.group_key,
        "impact_gpus": int(c.impact.gpus),
        "impact_jobs": ",".join(c.impact.jobs),
        "impact_tokens_per_s": round(float(c.impact.tokens_per_s), 1),
        "impact_power_mw": round(float(c.impact.power_mw), 3),
    }


class AlertTracker:
    """Records the transitions and changes of alert episodes (see module docstring)."""

    def __init__(self, engine: Engine, site_name: str) -> None:
        self.engine, self.site_name = engine, site_name
        with Session(engine) as session:
            rows = session.exec(select(Event).where(Event.site_name == site_name, Event.cleared_at.is_(None))).all()
        self.open: dict[str, int] = {row.key: row.id for row in rows}
        # what was last written per open key: (severity, message) and the impact columns
        self._text: dict[str, tuple[str, str]] = {row.key: (row.severity, row.message) for row in rows}
        self._impact: dict[str, dict] = {
            row.key: {
                k: getattr(row, k)
                for k in ("group_key", "impact_gpus", "impact_jobs", "impact_tokens_per_s", "impact_power_mw")
            }
            for row in rows
        }

    def update(self, ts: datetime, conditions: list[Condition]) -> tuple[int, int]:
        """Record what changed at ``ts``; returns (raised, cleared) counts."""
        now = {c.key: c for c in conditions}
        new = [c for key, c in now.items() if key not in self.open]
        gone = [key for key in self.open if key not in now]
        changed = [
            c
            for key, c in now.items()
            if key in self.open
            and ((c.severity, c.message) != self._text[key] or _impact_columns(c) != self._impact[key])
        ]
        if not new and not gone and not changed:
            return 0, 0
        with Session(self.engine) as session:
            rows = [
                Event(
                    site_name=self.site_name,
                    key=c.key,
                    raised_at=ts,
                    updated_at=ts,
                    severity=c.severity,
                    source=c.source,
                    entity_kind=c.entity_kind,
                    entity_id=c.entity_id,
                    entity_name=c.entity_name,
                    metric=c.metric,
                    value=c.value,
                    message=c.message,
                    runbook=c.runbook,
                    **_impact_columns(c),
                )
                for c in new
            ]
            session.add_all(rows)
            for c in changed:
                event = session.get(Event, self.open[c.key])
                if event is None:
                    continue
                if (c.severity, c.message) != self._text[c.key]:
                    session.add(
                        EventChange(
                            event_id=event.id, changed_at=ts, severity=c.severity, message=c.message, value=c.value
                        )
                    )
                    event.severity, event.message, event.value = c.severity, c.message, c.value
                for column, value in _impact_columns(c).items():
                    setattr(event, column, value)
                event.updated_at = ts
                session.add(event)
            for key in gone:
                event = session.get(Event, self.open[key])
                if event is not None:
                    event.cleared_at = ts
                    session.add(event)
            session.commit()
            for row in rows:
                self.open[row.key] = row.id
        for c in new + changed:
            self._text[c.key] = (c.severity, c.message)
            self._impact[c.key] = _impact_columns(c)
        for key in gone:
            del self.open[key], self._text[key], self._impact[key]
        return len(new), len(gone)


def history(engine: Engine, event_id: int) -> list[dict]:
    """The changes of one alert, oldest first: ``changed_at``, ``severity``, ``message``, ``value``."""
    with Session(engine) as session:
        rows = session.exec(
            select(EventChange).where(EventChange.event_id == event_id).order_by(EventChange.changed_at, EventChange.id)
        ).all()
    return [{"changed_at": r.changed_at, "severity": r.severity, "message": r.message, "value": r.value} for r in rows]


def list_alerts(engine: Engine, site_name: str | None = None, active_only: bool = True, limit: int = 500) -> list[dict]:
    """Stored alerts newest first (``site_name`` None: every site); ``active_only`` keeps uncleared ones."""
    query = select(Event)
    if site_name is not None:
        query = query.where(Event.site_name == site_name)
    if active_only:
        query = query.where(Event.cleared_at.is_(None))
    with Session(engine) as session:
        rows = session.exec(query.order_by(Event.raised_at.desc(), Event.id.desc()).limit(limit)).all()
    return [alert_dict(e) for e in rows]


def alert_dict(e: Event) -> dict:
    """One stored alert as the dashboard, the API and ``clustertwin alerts list`` show it."""
    return {
        "id": e.id,
        "site": e.site_name,
        "key": e.key,
        "ts": e.raised_at,
        "raised_at": e.raised_at,
        "updated_at": e.updated_at or e.raised_at,
        "severity": e.severity,
        "source": e.source,
        "entity_kind": e.entity_kind,
        "entity_id": e.entity_id,
        "entity_name": e.entity_name,
        "metric": e.metric,
        "value": e.value,
        "message": e.message,
        "group": e.group_key or e.key,
        "impact": {
            "gpus": e.impact_gpus,
            "jobs": [j for j in e.impact_jobs.split(",") if j],
            "tokens_per_s": e.impact_tokens_per_s,
            "power_mw": e.impact_power_mw,
        },
        "runbook": e.runbook,
        "acknowledged": e.acknowledged,
        "acknowledged_at": e.acknowledged_at,
        "ack_comment": e.ack_comment,
        "acknowledged_by": e.acknowledged_by,
        "silenced_until": e.silenced_until,
        "cleared_at": e.cleared_at,
    }


def condition_alert(c: Condition, ts: datetime, site_name: str = "") -> dict:
    """A condition that was never stored (a scenario's or a replay's) in the shape of :func:`alert_dict`."""
    return {
        "id": c.key,
        "site": site_name,
        "key": c.key,
        "ts": ts,
        "raised_at": ts,
        "updated_at": ts,
        "severity": c.severity,
        "source": c.source,
        "entity_kind": c.entity_kind,
        "entity_id": c.entity_id,
        "entity_name": c.entity_name,
        "metric": c.metric,
        "value": c.value,
        "message": c.message,
        "group": c.group_key,
        "impact": c.impact.as_dict(),
        "runbook": c.runbook,
        "acknowledged": False,
        "acknowledged_at": None,
        "ack_comment": "",
        "acknowledged_by": "",
        "silenced_until": None,
        "cleared_at": None,
    }

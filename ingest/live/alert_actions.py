"""What an operator may change of a site's alerts: acknowledge, silence, lift a silence; silence a
scope, schedule a maintenance window, expire or cancel either.

:class:`AlertActions` writes the change to the alert's row (or to the ``alert_mute`` table,
:mod:`ingest.store.mutes`) and notifies every other process of the site in the same
transaction (:data:`ingest.store.livestate.ALERTS_CHANNEL`), on a leader or a follower
alike.  The dashboard and the API get this object beside the read-only live view; nothing
else of the hub.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session

from ingest.live.alert_rules import RUNBOOK
from ingest.live.mute_scope import Scope, parse_scope
from ingest.store import mutes as mute_store
from ingest.store.livestate import ALERTS_CHANNEL, notify
from ingest.store.models import Event, utcnow

MAX_SILENCE_S = 7 * 24 * 3600.0  # longer silences are refused: nobody would see the alert again
RULES = tuple(RUNBOOK)  # the rule names a scope's rule filter may name


class AlertActions:
    """Operator changes of the alerts of site ``site_name``; ``changed()`` runs after each one.

    ``halls`` are the site's hall names, which a hall scope must name.
    """

    def __init__(
        self, db: Engine, site_name: str, changed: Callable[[], None] = lambda: None, halls: Sequence[str] = ()
    ) -> None:
        self.db, self.site_name, self.halls = db, site_name, tuple(halls)
        self._changed = changed

    def acknowledge(self, alert_id: int, comment: str = "", user: str = "") -> None:
        """Mark an alert acknowledged with the operator's comment."""
        self._update_event(
            alert_id, acknowledged=True, acknowledged_at=utcnow(), ack_comment=comment[:500], acknowledged_by=user[:100]
        )

    def silence(self, alert_id: int, duration_s: float) -> None:
        """Silence an alert for ``duration_s`` seconds (0 < duration ≤ 7 days)."""
        if not 0 < duration_s <= MAX_SILENCE_S:
            raise ValueError(
                f"silence duration must be positive and at most {MAX_SILENCE_S:g} s (7 days), not {duration_s!r} s"
            )
        self._update_event(alert_id, silenced_until=utcnow() + timedelta(seconds=duration_s))

    def unsilence(self, alert_id: int) -> None:
        """Lift an alert's silence."""
        self._update_event(alert_id, silenced_until=None)

    def add_silence(self, scope: dict, duration_s: float, comment: str, user: str = "") -> dict:
        """Silence every alert of ``scope`` for ``duration_s`` seconds from now (0 < duration ≤ 7 days).

        ``scope``: ``kind`` (entity, group, hall), ``value``, optional ``rule`` and ``metric``
        (:func:`ingest.live.mute_scope.parse_scope`).  Returns the stored silence
        (:func:`ingest.store.mutes.mute_dict`); a ValueError (one line) names what is refused.
        """
        if not isinstance(duration_s, (int, float)) or not 0 < duration_s <= MAX_SILENCE_S:
            raise ValueError(
                f"silence duration must be positive and at most {MAX_SILENCE_S:g} s (7 days), not {duration_s!r} s"
            )
        now = utcnow()
        return self._add("silence", scope, now, now + timedelta(seconds=float(duration_s)), comment, user)

    def add_maintenance(self, scope: dict, starts_at: datetime, ends_at: datetime, reason: str, user: str = "") -> dict:
        """Schedule a maintenance window of ``scope`` (as :meth:`add_silence`) from ``starts_at`` to ``ends_at``."""
        return self._add("maintenance", scope, starts_at, ends_at, reason, user)

    def _add(self, kind: str, scope: dict, starts_at: datetime, ends_at: datetime, comment: str, user: str) -> dict:
        checked = parse_scope(
            scope.get("kind", ""),
            scope.get("value", ""),
            scope.get("rule", ""),
            scope.get("metric", ""),
            halls=self.halls,
            rules=RULES,
        )
        row = mute_store.add_mute(
            self.db,
            self.site_name,
            kind=kind,
            scope=(checked.kind, checked.value, checked.rule, checked.metric),
            comment=comment,
            created_by=user,
            starts_at=starts_at,
            ends_at=ends_at,
            now=utcnow(),
        )
        self._changed()
        return _labelled(row)

    def expire_mute(self, mute_id: int, user: str = "") -> tuple[dict, dict]:
        """End a scoped silence or cancel a maintenance window now; the row before and after."""
        before, after = mute_store.expire_mute(self.db, self.site_name, mute_id, user, utcnow())
        self._changed()
        return _labelled(before), _labelled(after)

    def mutes(self, ended_within_s: float = 0.0) -> list[dict]:
        """The site's silences and windows active or upcoming (and those ended within ``ended_within_s``),
        soonest start first; each row (:func:`ingest.store.mutes.mute_dict`) with its ``scope`` as pages name it."""
        since = timedelta(seconds=ended_within_s) if ended_within_s > 0 else None
        return [_labelled(r) for r in mute_store.list_mutes(self.db, self.site_name, utcnow(), ended_since=since)]

    def _update_event(self, alert_id: int, **values) -> None:
        """Write an operator's change of one alert and notify every other process of the site."""
        if isinstance(alert_id, bool) or not isinstance(alert_id, int):
            raise KeyError(f"no alert with id {alert_id!r}")
        with Session(self.db) as session:
            event = session.get(Event, alert_id)
            if event is None:
                raise KeyError(f"no alert with id {alert_id}")
            if event.site_name != self.site_name:
                raise KeyError(f"no alert with id {alert_id} on site {self.site_name}")
            for key, value in values.items():
                setattr(event, key, value)
            session.add(event)
            session.flush()
            notify(session.connection(), ALERTS_CHANNEL, self.site_name)
            session.commit()
        self._changed()


def _labelled(row: dict) -> dict:
    """``row`` with ``scope``: how pages name its scope (``H1``, ``cause pump:cdu:1`` …)."""
    return dict(row, scope=Scope(row["scope_kind"], row["scope_value"], row["rule_name"], row["metric"]).label())

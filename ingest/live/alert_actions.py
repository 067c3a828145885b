"""What an operator may change of a site's alerts: acknowledge, silence, lift a silence.

:class:`AlertActions` writes the change to the alert's row and notifies every other
process of the site in the same transaction (:data:`ingest.store.livestate.ALERTS_CHANNEL`),
on a leader or a follower alike.  The dashboard and the API get this object beside the
read-only live view; nothing else of the hub.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session

from ingest.store.livestate import ALERTS_CHANNEL, notify
from ingest.store.models import Event, utcnow

MAX_SILENCE_S = 7 * 24 * 3600.0  # longer silences are refused: nobody would see the alert again


class AlertActions:
    """Operator changes of the alerts of site ``site_name``; ``changed()`` runs after each one."""

    def __init__(self, db: Engine, site_name: str, changed: Callable[[], None] = lambda: None) -> None:
        self.db, self.site_name = db, site_name
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

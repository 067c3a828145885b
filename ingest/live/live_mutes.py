"""The silences and windows a live process matches its alerts against, read back from the store.

:class:`LiveMutes` keeps the site's silences and windows not ended yet as one
:class:`~ingest.live.mute_scope.MuteSet` and reads them again when told they changed
(:meth:`LiveMutes.invalidate`: a change through this process, or one another process
notified) and at least every :data:`RELOAD_S` seconds (a change made by a process that
could not notify this one: another shard, SQLite).  Windows that start or end later need
no reload: each match checks the time.  A read that finds the same rows keeps the set, with
the matches it remembers.  With the database down the last set read is kept.
The alerts silenced by themselves (an alert's own silence, ``silenced_until``) are read with
them, so that the notifier mutes those too (:meth:`LiveMutes.alert_silence`).
"""

from __future__ import annotations

import threading
import time
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ingest.live.mute_scope import HallIndex, MuteRule, MuteSet, Scope
from ingest.store.models import utcnow
from ingest.store.mutes import list_mutes, silenced_alerts

RELOAD_S = 5.0  # read the stored silences and windows at least this often


def rules_of(rows: list[dict]) -> list[MuteRule]:
    """The :class:`MuteRule` of each row of :func:`ingest.store.mutes.list_mutes`."""
    return [
        MuteRule(
            id=int(r["id"]),
            kind=r["kind"],
            scope=Scope(r["scope_kind"], r["scope_value"], r["rule_name"], r["metric"]),
            comment=r["comment"],
            created_by=r["created_by"],
            starts_at=r["starts_at"],
            ends_at=r["ends_at"],
        )
        for r in rows
    ]


class LiveMutes:
    """The current :class:`MuteSet` of one site (see module docstring)."""

    def __init__(self, db: Engine, site_name: str, halls: HallIndex, reload_s: float = RELOAD_S) -> None:
        self.db, self.site_name, self.halls, self.reload_s = db, site_name, halls, reload_s
        self._set = MuteSet([], halls)
        self._own: dict[str, MuteRule] = {}  # alert key → its own silence
        self._read_at = float("-inf")  # monotonic time of the last read
        self._lock = threading.Lock()
        self.read_failed = False

    def invalidate(self) -> None:
        """The stored silences or windows changed: read them again before the next match."""
        self._read_at = float("-inf")

    def current(self, now: datetime | None = None) -> MuteSet:
        """The set to match against (read again when invalidated or older than ``reload_s``)."""
        if time.monotonic() - self._read_at < self.reload_s:
            return self._set
        with self._lock:
            if time.monotonic() - self._read_at >= self.reload_s:
                self._read(now or utcnow())
        return self._set

    def alert_silence(self, key: str, at: datetime) -> MuteRule | None:
        """The alert's own silence as a rule (kind ``alert``, its id the alert's) when it holds at ``at``."""
        rule = self._own.get(key)
        return rule if rule is not None and rule.active(at) else None

    def _read(self, now: datetime) -> None:
        started, since = time.monotonic(), min(now, utcnow())
        try:
            rows = list_mutes(self.db, self.site_name, since)
            own = silenced_alerts(self.db, self.site_name, since)
        except SQLAlchemyError:
            self.read_failed = True  # keep the last set; try again after reload_s
            self._read_at = started
            return
        self.read_failed = False
        rules = rules_of(rows)
        if sorted(rules, key=lambda r: r.id) != sorted(self._set.rules, key=lambda r: r.id):
            self._set = MuteSet(rules, self.halls)  # else keep the set and the matches it remembers
        self._own = {
            key: MuteRule(alert_id, "alert", Scope("alert", key), "the alert's own silence", "", raised, until)
            for alert_id, key, raised, until in own
        }
        self._read_at = started

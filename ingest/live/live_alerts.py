"""The alerts of a live hub: each tick's conditions written through :class:`AlertTracker`, the stored list read back.

:meth:`LiveAlerts.tick` evaluates the alert rules (:mod:`ingest.live.alert_rules`) on a
snapshot, keeps the conditions this shard raises (GPU and rack alerts by block of GPUs,
the rest on shard 0) and records their transitions; with the database down the changes
are retried on the next tick.  :meth:`LiveAlerts.listing` reads the stored alerts for the
pages and keeps the last list of each kind for a database outage; any change (an
operator's here, a notified one of another process) drops those lists.  Scoped silences
and maintenance windows (:class:`~ingest.live.live_mutes.LiveMutes`) mark the listed
alerts (``silence``, ``maintenance``) and the episodes offered to the notifier, as an
alert's own silence does.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ingest.live.alert_rules import Condition, SiteFacts, evaluate
from ingest.live.alerts import AlertTracker, list_alerts
from ingest.live.episodes import EpisodeFilter, SwingEnvelope
from ingest.live.live_mutes import LiveMutes
from ingest.live.mute_scope import HallIndex, annotate
from ingest.live.notify import Episode, Notifier
from ingest.live.writes import GuardedWrites
from ingest.store.layouts import GPU_BLOCK
from ingest.store.models import utcnow
from ingest.store.outage import remembered_alerts
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables


class LiveAlerts:
    """Alert writes of one site and shard, and the stored alerts read back (see module docstring).

    ``conditions`` are the conditions of the last tick this shard raises (e.g. for a
    flight recorder); ``changes_total`` counts the alert changes other processes notified.
    """

    def __init__(self, state: SiteTables, db: Engine, writes: GuardedWrites, shard: tuple[int, int] = (0, 1)) -> None:
        self.state, self.site_name, self.db, self.shard = state, state.name, db, shard
        self.tracker = AlertTracker(db, state.name)
        self.episodes = EpisodeFilter(set(self.tracker.open))
        self.envelope = SwingEnvelope()
        self.notifier: Notifier | None = None  # receivers of the open episodes (serve --alertmanager/--webhook)
        self._started: dict[str, datetime] = {}  # when each open episode started
        self.conditions: list[Condition] = []
        self.changes_total = 0
        self._writes = writes
        self.mutes = LiveMutes(db, state.name, HallIndex(state))
        self._rack_block = np.searchsorted(state.gpu_rack, np.arange(state.n_racks)) // GPU_BLOCK
        self._last: dict[tuple[bool, int], list[dict]] = {}
        self.read_failed = False

    def tick(self, ts: datetime, snap: Snapshot, facts: SiteFacts) -> None:
        """Evaluate the rules on ``snap`` and record the episodes that changed (retried on the next tick when the write fails).

        The rules see the swing's envelope and windowed means (:class:`SwingEnvelope`) and
        hold open episodes to their clear thresholds; :class:`EpisodeFilter` applies the
        minimum durations and severity hysteresis.
        """
        facts = replace(facts, open_keys=self.episodes.open_keys, open_critical_keys=self.episodes.open_critical_keys)
        held = [c for c in evaluate(self.state, self.envelope.steady(snap), facts) if self.owns(c)]
        conditions = self.episodes.update(ts, held)
        self.conditions = conditions
        self._writes.run(
            "alert updates delayed",
            lambda: self.tracker.update(ts, conditions),
            reached_db=lambda counts: counts != (0, 0),  # no transition: the tracker did not write
        )
        self._started = {c.key: self._started.get(c.key, ts) for c in conditions}
        if self.notifier is not None:
            mutes = self.mutes.current(ts)
            self.notifier.offer(
                ts,
                [
                    Episode(
                        c,
                        self.tracker.open.get(c.key),
                        self._started[c.key],
                        mute=mutes.condition_mute(c, ts) or self.mutes.alert_silence(c.key, ts),
                    )
                    for c in conditions
                ],
            )

    def owns(self, condition: Condition) -> bool:
        """Whether this shard raises ``condition``: GPU and rack alerts by block, the rest on shard 0."""
        index, count = self.shard
        if condition.entity_kind == "rack":
            return int(self._rack_block[condition.entity_id]) % count == index
        if condition.entity_kind == "gpu":
            return (condition.entity_id // GPU_BLOCK) % count == index
        return index == 0

    def take_over(self) -> None:
        """Continue the episodes the previous leader opened or cleared instead of raising them again."""
        self.tracker = AlertTracker(self.db, self.site_name)
        self.episodes = EpisodeFilter(set(self.tracker.open))

    def listing(self, active_only: bool = True, limit: int = 500) -> list[dict]:
        """Alerts newest first; ``active_only`` keeps the ones not cleared yet (fields: :func:`alert_dict`,
        with ``maintenance`` and ``silence``: the window and the scoped silence muting the alert now, or None).

        With the database down, the lists last read are returned (:func:`remembered_alerts`), never an error.
        """
        try:
            result = list_alerts(self.db, self.site_name, active_only, limit)
        except SQLAlchemyError:
            self.read_failed = True
            result = remembered_alerts(self._last, active_only, limit)
        else:
            self.read_failed = False
            self._last[(active_only, limit)] = result
        now = utcnow()
        return annotate(result, self.mutes.current(now), now)

    def close(self) -> None:
        """Stop the notifier's thread, if any (after at most one post in flight)."""
        if self.notifier is not None:
            self.notifier.stop()
            self.notifier = None

    def database_reachable(self) -> bool:
        """False while writes fail or the last alert read failed (pages and the API show it)."""
        return not (self._writes.outage.active or self.read_failed)

    def forget(self) -> None:
        """Drop the alert lists kept for a database outage (they may lack changes not notified to us),
        and read the silences and windows again."""
        self._last.clear()
        self.mutes.invalidate()

    def changed(self, changes_count: int = 1) -> None:
        """Another process changed ``changes_count`` alerts: forget the lists kept for a database outage."""
        self.changes_total += changes_count
        self.forget()

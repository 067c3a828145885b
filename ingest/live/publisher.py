"""The live state of a site for its followers: what the leader publishes each tick, and the trend it stores.

The leader of shard 0 (``holder`` set: its lease holder name) publishes the latest tick
(snapshot and detail) with the jobs' timelines at a cadence of ``every_s`` seconds
(:mod:`ingest.store.livestate`), together with the trend points stored since its last
publication (:mod:`ingest.store.livetrend`).  A follower, or a new leader before its first
tick, reads the stored trend back with :meth:`LivePublisher.catch_up_trend`.  A twin field
the payload format cannot hold is logged once; followers keep the last state meanwhile.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.engine import Engine

from ingest.live.job_runs import JobRuns
from ingest.live.latest import LatestTick
from ingest.live.writes import GuardedWrites
from ingest.store.livestate import LiveStateError, encode_state, publish
from ingest.store.livetrend import read_trend

log = logging.getLogger(__name__)
PUBLISH_EVERY_S = 1.0  # the leader publishes its live state for followers at this cadence (every tick)


class LivePublisher:
    """Publishes the live state of one site while ``holder`` is set (see module docstring).

    ``bytes`` is the size of the last published live state.
    """

    def __init__(
        self,
        db: Engine,
        site_name: str,
        latest: LatestTick,
        jobs: JobRuns,
        writes: GuardedWrites,
        every_s: float = PUBLISH_EVERY_S,
    ) -> None:
        self.db, self.site_name, self.every_s = db, site_name, every_s
        self.holder: str | None = None  # set on the leader of shard 0: it publishes each tick's live state
        self.bytes = 0
        self._latest, self._jobs, self._writes = latest, jobs, writes
        self._published_at: datetime | None = None
        self._trend_stored_at: datetime | None = None  # newest trend point known to be in the database
        self._refused = False

    def live_state(self) -> dict:
        """What a follower needs to show the latest tick: snapshot, detail, job timelines."""
        return {"tick": self._latest.get(), "timelines": self._jobs.timelines()}

    def tick(self, ts: datetime) -> None:
        """Publish the latest tick when this process publishes and one is due."""
        holder = self.holder
        if holder is None or (
            self._published_at is not None and (ts - self._published_at).total_seconds() < self.every_s
        ):
            return
        self._writes.run("live states not published", lambda: self._publish(ts, holder))
        self._published_at = ts

    def _publish(self, ts: datetime, holder: str) -> None:
        """Store this tick's live state for the followers (:mod:`ingest.store.livestate`)."""
        try:
            payload = encode_state(self.live_state())
        except LiveStateError as exc:  # a twin field the format cannot hold: followers keep the last state
            if not self._refused:
                log.error("live state of %s not published: %s", self.site_name, exc)
            self._refused = True
            return
        self._refused = False
        trend = self._latest.trend.rows_after(self._trend_stored_at)
        publish(
            self.db,
            self.site_name,
            self._latest.seq,
            ts,
            holder,
            payload,
            trend=trend,
            trend_keep_from=ts - self._latest.trend.window,
        )
        self.bytes = len(payload)
        if trend:
            self._trend_stored_at = trend[-1][0]

    def catch_up_trend(self) -> int:
        """Add the trend points the leader stored since this hub's last one (:mod:`ingest.store.livetrend`).

        A follower calls it when it starts (the trend's history) and before adopting a live
        state (ticks whose notifications it missed); a new leader before its first tick.
        Returns how many points were added; raises SQLAlchemyError when the database fails.
        """
        trend = self._latest.trend
        rows = read_trend(self.db, self.site_name, after=trend.last_ts())
        added = trend.extend(rows)
        if rows and (self._trend_stored_at is None or rows[-1][0] > self._trend_stored_at):
            self._trend_stored_at = rows[-1][0]
        return added

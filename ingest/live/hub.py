"""The live twin of one site: its parts, one step per second, and the scheduler jobs that run them.

:class:`LiveHub` assembles the parts and runs them in order on every step:

* the tick loop (:class:`ingest.live.tick_loop.TickLoop`): readings → twin tick →
  snapshot, the jobs evaluated on it;
* the recorder of frames (:class:`ingest.live.recording.FrameRecorder`);
* the alert writes (:class:`ingest.live.live_alerts.LiveAlerts`);
* the latest tick as readers see it (:class:`ingest.live.latest.LatestTick`);
* the publisher of the live state for followers (:class:`ingest.live.publisher.LivePublisher`).

The pages and the API get only the read-only :attr:`LiveHub.view`
(:class:`ingest.live.view.LiveView`, the ``live`` view of :mod:`twin.engine.view`) and the
operator's :attr:`LiveHub.alert_actions` (:class:`ingest.live.alert_actions.AlertActions`).
A follower (:mod:`ingest.live.follower`) runs no step: it :meth:`LiveHub.adopt`\\ s the
leader's live state instead.  Every database write goes through one
:class:`ingest.live.writes.GuardedWrites`: with the database down the tick goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine

from ingest.live.alert_actions import AlertActions
from ingest.live.fleet import LiveFleet
from ingest.live.latest import LatestTick
from ingest.live.live_alerts import LiveAlerts
from ingest.live.pollers import Poller
from ingest.live.publisher import PUBLISH_EVERY_S, LivePublisher
from ingest.live.recording import RECORD_EVERY_S, RETENTION_S, FrameRecorder
from ingest.live.tick_loop import TickLoop
from ingest.live.view import LiveView
from ingest.live.writes import GuardedWrites
from ingest.store.models import utcnow
from ingest.store.outage import WriteOutage
from ingest.synthetic.plant import SyntheticSource
from twin.engine.snapshot import Snapshot
from twin.engine.tick import PlacedJob
from twin.engine.view import ViewTick
from twin.site.tables import SiteTables

log = logging.getLogger(__name__)
PRUNE_EVERY_S = 300.0  # the scheduler prunes old frames at this cadence


@dataclass
class StepTiming:
    """Where the time of the last step went (milliseconds), and the reading-to-state lag."""

    synthetic_ms: float = 0.0
    twin_ms: float = 0.0
    record_ms: float = 0.0
    alerts_ms: float = 0.0
    publish_ms: float = 0.0  # encoding and storing the live state for followers (leader of shard 0)
    total_ms: float = 0.0
    lag_ms: float = 0.0  # from a reading being taken (the synthetic plant's sensors, else the buffer) to publication


class LiveHub:
    """See module docstring.  ``writable`` is False on a follower: it runs no ingest, writes no frames."""

    def __init__(
        self,
        state: SiteTables,
        db: Engine,
        *,
        synthetic: SyntheticSource | None = None,
        pollers: list[Poller] | None = None,
        jobs: list[PlacedJob] | None = None,
        fleet: LiveFleet | None = None,
        record: bool = True,
        start: datetime | None = None,
        shard: tuple[int, int] = (0, 1),
        record_every_s: float = RECORD_EVERY_S,
        retention_s: float = RETENTION_S,
        publish_every_s: float = PUBLISH_EVERY_S,
    ) -> None:
        self.state, self.site_name, self.db, self.shard = state, state.name, db, shard
        start = start or (synthetic.start if synthetic else utcnow())
        self.outage = WriteOutage(log, f"database of site {state.name}")
        writes = GuardedWrites(self.outage)
        self.ticker = TickLoop(state, start=start, synthetic=synthetic, pollers=pollers, jobs=jobs, fleet=fleet)
        self.latest = LatestTick()
        self.recorder = FrameRecorder(
            state, db, writes, shard=shard, record=record, every_s=record_every_s, retention_s=retention_s
        )
        self.live_alerts = LiveAlerts(state, db, writes, shard)
        self.publisher = LivePublisher(db, state.name, self.latest, self.ticker.jobs, writes, publish_every_s)
        self.alert_actions = AlertActions(db, state.name, changed=self.live_alerts.forget, halls=state.hall_name)
        self.view = LiveView(self.latest, self.ticker, self.recorder, self.live_alerts, lambda: not self.writable)
        self.writable = True  # False on a follower (see ingest.live.runtime)
        self.timing = StepTiming()
        self._step_lock = threading.Lock()

    def step(self, ts: datetime | None = None) -> Snapshot | None:
        """One live tick at ``ts`` (default: now, whole seconds); the snapshot shown after it."""
        with self._step_lock:
            return self._step(ts or utcnow().replace(microsecond=0))

    def _step(self, ts: datetime) -> Snapshot | None:
        t0 = time.perf_counter()
        dt_s = self.ticker.advance(ts)
        if dt_s is None:  # no time passed since the last tick
            return self.latest.snapshot
        t1 = time.perf_counter()
        snap = self.ticker.tick(ts, dt_s)
        t2 = time.perf_counter()
        self.recorder.tick(ts, snap)
        t3 = time.perf_counter()
        self.live_alerts.tick(ts, snap, self.ticker.facts(snap))
        self.latest.show(ViewTick(snap, self.ticker.twin.detail))
        t4 = time.perf_counter()
        self.publisher.tick(ts)
        t5 = time.perf_counter()
        self.timing = StepTiming(
            synthetic_ms=(t1 - t0) * 1e3,
            twin_ms=(t2 - t1) * 1e3,
            record_ms=(t3 - t2) * 1e3,
            alerts_ms=(t4 - t3) * 1e3,
            publish_ms=(t5 - t4) * 1e3,
            total_ms=(t5 - t0) * 1e3,
            lag_ms=((t4 - t0) if self.ticker.synthetic is not None else (t4 - t1)) * 1e3,
        )
        return snap

    def adopt(self, seq: int, state: dict) -> None:
        """Show a leader's live state (from :meth:`LivePublisher.live_state`) as the latest tick; no twin work."""
        tick = state["tick"]
        snap = tick.snapshot
        with self._step_lock:
            if snap is None or not self.ticker.follow(snap.ts):
                return
            self.ticker.jobs.adopt_timelines(state["timelines"])
            self.latest.adopt(tick, seq)

    def prune(self) -> int:
        """Delete recorded frames older than the retention window; returns the chunks deleted."""
        last_ts = self.ticker.last_ts
        if last_ts is None or not self.writable:
            return 0
        return self.recorder.prune(last_ts)

    def jobs_for_scheduler(self, tick_s: float = 1.0):
        """The scheduler jobs of this hub: the twin step, frame pruning and one poll job per source."""
        from ingest.live.scheduler import ScheduledTask

        buffer = self.ticker.buffer
        specs = [
            ScheduledTask("twin-step", self.step, tick_s),
            ScheduledTask("prune-frames", self.prune, PRUNE_EVERY_S),
        ]
        specs += [
            ScheduledTask(
                f"poll-{p.name}", lambda p=p: p.run(buffer), p.interval_s, jitter_s=min(0.2 * p.interval_s, 2.0)
            )
            for p in self.ticker.pollers
        ]
        return specs

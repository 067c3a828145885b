"""The live twin: readings in, one twin tick per second, snapshots out to storage and the dashboard.

:class:`LiveHub` owns the twin engine of one site, the latest readings of every source
(:class:`ingest.live.readings.ReadingsBuffer`), the frame store, the alert tracker and a
trend buffer.  :meth:`LiveHub.step` is the job the scheduler runs every second; the
dashboard only calls the read methods (``latest``, ``trend``, ``rack_history``,
``alerts`` …), which never block on a tick for long.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from ingest.live.alert_rules import SiteFacts, evaluate
from ingest.live.alerts import AlertTracker, list_alerts
from ingest.live.job_runs import JobRun
from ingest.live.readings import ReadingsBuffer
from ingest.live.trend import TrendBuffer
from ingest.store.frames import FrameStore
from ingest.store.layouts import CDU_FIELDS, GPU_BLOCK, GPU_FIELDS, site_layouts, snapshot_frames
from ingest.store.livestate import ALERTS_CHANNEL, LiveStateError, encode_state, notify, publish
from ingest.store.livetrend import read_trend
from ingest.store.models import Event, utcnow
from ingest.store.outage import WriteOutage, remembered_alerts
from ingest.synthetic.plant import XID_DOWN, SyntheticSource
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.engine.tick import PlacedJob, TickInputs, TwinEngine
from twin.engine.view import EMPTY_TICK, ViewTick
from twin.physics.thermal import HW_SLOWDOWN_CLOCK_FRAC
from twin.site.tables import SiteTables
from twin.training.sitejob import evaluate_site_job

log = logging.getLogger(__name__)
READING_MAX_AGE_S = 30.0  # readings older than this are stale: the twin falls back on its model
PUBLISH_EVERY_S = 1.0  # the leader publishes its live state for followers at this cadence (every tick)
RECORD_EVERY_S = 5.0  # frames are stored at this cadence: 2.9 MB per colossus frame is 2 GB an hour at 5 s
RETENTION_S = 3600.0  # frames older than this are pruned (the embedded default keeps an hour)
JOB_EVERY_S = 5.0  # job throughput is re-evaluated at this cadence (a 100k-GPU job costs ~0.1 s)
# [E] a powered GPU draws at least its idle power; one measured below half of it is not running
# (shut down, fallen off the bus), whatever the twin's own state says
DEAD_POWER_FRAC = 0.5
MAX_SILENCE_S = 7 * 24 * 3600.0  # longer silences are refused: nobody would see the alert again


@dataclass
class Poller:
    """A polled source: ``poll(buffer)`` fetches, maps and stores readings; returns True when good."""

    name: str
    interval_s: float
    poll: Callable[[ReadingsBuffer], bool]
    last_ok_s: float = float("-inf")
    failures: int = 0
    stale_logged: bool = False

    def run(self, buffer: ReadingsBuffer) -> None:
        """One poll; failures are counted and logged once per episode, never raised."""
        try:
            ok = bool(self.poll(buffer))
        except Exception as exc:  # noqa: BLE001 — a dead source must not stop the twin
            ok = False
            if not self.stale_logged:
                log.warning("source %s failed: %s", self.name, exc)
        if ok:
            if self.stale_logged:
                log.info("source %s recovered after %d failed polls", self.name, self.failures)
            self.last_ok_s, self.failures, self.stale_logged = time.time(), 0, False
        else:
            self.failures += 1
            self.stale_logged = True


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
    """See module docstring.  It is the ``live`` view of :mod:`twin.engine.view`."""

    key = "live"
    label = "live"
    is_live = True

    def __init__(
        self,
        state: SiteTables,
        db: Engine,
        *,
        synthetic: SyntheticSource | None = None,
        pollers: list[Poller] | None = None,
        jobs: list[PlacedJob] | None = None,
        record: bool = True,
        start: datetime | None = None,
        shard: tuple[int, int] = (0, 1),
        record_every_s: float = RECORD_EVERY_S,
        retention_s: float = RETENTION_S,
        publish_every_s: float = PUBLISH_EVERY_S,
    ) -> None:
        self.state, self.site_name, self.db = state, state.name, db
        self.synthetic = synthetic
        self.pollers = pollers or []
        self.jobs = jobs or []
        self.record = record
        self.record_every_s, self.retention_s = record_every_s, retention_s
        self._recorded_at: datetime | None = None
        self.reading_max_age_s = READING_MAX_AGE_S
        self.shard = shard
        first_gpu = np.searchsorted(state.gpu_rack, np.arange(state.n_racks))
        self._rack_block = first_gpu // GPU_BLOCK
        start = start or (synthetic.start if synthetic else utcnow())
        self.twin = TwinEngine(state, start=start, settle=False)  # settled on the first step's readings
        self.buffer = ReadingsBuffer(state)
        self.store = FrameStore(db, state.name, site_layouts(state))
        self.tracker = AlertTracker(db, state.name)
        self.trend_buffer = TrendBuffer()
        self.timing = StepTiming()
        self.predicted_gpu_temp_c: np.ndarray | None = None
        self._latest: Snapshot | None = None
        self._settled = False  # the twin engine settles on the first step this process runs
        self._published: ViewTick = EMPTY_TICK  # snapshot and its detail, replaced together under _publish_lock
        self._publish_lock = threading.Lock()
        self._prev_ts: datetime | None = None
        self._synthetic_ok_s = float("-inf")
        self._jobs_at: datetime | None = None
        self._job_base: list = []  # each job at full pace on the current state (before its restart phase)
        self.job_runs = [JobRun.start(state, job) for job in self.jobs]
        self._swapped_at_jobs = 0
        self._job_best: dict[str, float] = {}  # best throughput seen per job [tokens/s], the alerts' baseline
        self.conditions: list = []  # the alert conditions of the last step (this shard's), e.g. for a recorder
        self._down_at_jobs = np.zeros(state.n_gpus, dtype=bool)
        self._step_lock = threading.Lock()
        self._gpu_idle_w = state.gpu_spec_array("idle_power_w")
        self._gpu_slowdown_c = state.gpu_spec_array("slowdown_temp_c")
        self.writable = True  # False on a follower: it runs no ingest, writes no frames (see ingest.live.runtime)
        self.publish_holder: str | None = None  # set on the leader of shard 0: it publishes each tick's live state
        self.seq = 0  # tick counter of the published (leader) or adopted (follower) live state
        self.adopted_total = 0  # live states taken over from the leader while following
        self.alerts_changes_total = 0  # alert changes (acknowledge, silence) notified by any process
        self.publish_bytes = 0  # size of the last published live state
        self.publish_every_s = publish_every_s
        self._live_published_at: datetime | None = None
        self._trend_stored_at: datetime | None = None  # newest trend point known to be in the database
        self._publish_refused = False
        self.outage = WriteOutage(log, f"database of site {state.name}")
        self._last_alerts: dict[tuple[bool, int], list[dict]] = {}

    # ------------------------------------------------------------------ step
    def step(self, ts: datetime | None = None) -> Snapshot:
        """One live tick at ``ts`` (default: now, whole seconds)."""
        with self._step_lock:
            return self._step(ts or utcnow().replace(microsecond=0))

    def _step(self, ts: datetime) -> Snapshot:
        t0 = time.perf_counter()
        dt_s = 1.0 if self._prev_ts is None else max((ts - self._prev_ts).total_seconds(), 0.0)
        if self._prev_ts is not None and dt_s == 0.0:
            return self._latest
        self._prev_ts = ts
        now_s = ts.timestamp()
        if self.synthetic is not None:
            self.synthetic.step(ts, dt_s, self.buffer)
            self._synthetic_ok_s = now_s
        t1 = time.perf_counter()
        inputs = self._inputs(ts, now_s)
        if not self._settled:
            self.twin.settle(inputs)
            self._settled = True
        snap = self.twin.tick(dt_s, inputs)
        snap = self._overlay(snap, now_s)
        snap.jobs = self._evaluate_jobs(ts, snap, dt_s)
        t2 = time.perf_counter()
        if self.record and (
            self._recorded_at is None or (ts - self._recorded_at).total_seconds() >= self.record_every_s
        ):
            self._write("frames dropped", lambda: self.store.write_frame(ts, snapshot_frames(snap), shard=self.shard))
            self._recorded_at = ts
        t3 = time.perf_counter()
        conditions = [c for c in evaluate(self.state, snap, self._facts(snap)) if self._owns(c)]
        self.conditions = conditions
        self._write(
            "alert updates delayed",
            lambda: self.tracker.update(ts, conditions),
            reached_db=lambda counts: counts != (0, 0),
        )  # no transition: the tracker did not write
        self.trend_buffer.append(snap)
        self._latest = snap
        with self._publish_lock:
            self._published = ViewTick(snap, self.twin.detail)
        self.seq += 1
        t4 = time.perf_counter()
        if self.publish_holder is not None and (
            self._live_published_at is None or (ts - self._live_published_at).total_seconds() >= self.publish_every_s
        ):
            self._write("live states not published", lambda: self._publish(ts))
            self._live_published_at = ts
        t5 = time.perf_counter()
        self.timing = StepTiming(
            synthetic_ms=(t1 - t0) * 1e3,
            twin_ms=(t2 - t1) * 1e3,
            record_ms=(t3 - t2) * 1e3,
            alerts_ms=(t4 - t3) * 1e3,
            publish_ms=(t5 - t4) * 1e3,
            total_ms=(t5 - t0) * 1e3,
            lag_ms=((t4 - t0) if self.synthetic is not None else (t4 - t1)) * 1e3,
        )
        return snap

    def _publish(self, ts: datetime) -> None:
        """Store this tick's live state for the followers (:mod:`ingest.store.livestate`)."""
        try:
            payload = encode_state(self.live_state())
        except LiveStateError as exc:  # a twin field the format cannot hold: followers keep the last state
            if not self._publish_refused:
                log.error("live state of %s not published: %s", self.site_name, exc)
            self._publish_refused = True
            return
        self._publish_refused = False
        trend = self.trend_buffer.rows_after(self._trend_stored_at)
        publish(
            self.db,
            self.site_name,
            self.seq,
            ts,
            self.publish_holder,
            payload,
            trend=trend,
            trend_keep_from=ts - self.trend_buffer.window,
        )
        self.publish_bytes = len(payload)
        if trend:
            self._trend_stored_at = trend[-1][0]

    def catch_up_trend(self) -> int:
        """Add the trend points the leader stored since this hub's last one (:mod:`ingest.store.livetrend`).

        A follower calls it when it starts (the trend's history) and before adopting a live
        state (ticks whose notifications it missed); a new leader before its first tick.
        Returns how many points were added; raises SQLAlchemyError when the database fails.
        """
        rows = read_trend(self.db, self.site_name, after=self.trend_buffer.last_ts())
        added = self.trend_buffer.extend(rows)
        if rows and (self._trend_stored_at is None or rows[-1][0] > self._trend_stored_at):
            self._trend_stored_at = rows[-1][0]
        return added

    def live_state(self) -> dict:
        """What a follower needs to show this hub's latest tick: snapshot, detail, job timelines."""
        return {
            "tick": self.latest_tick(),
            "timelines": {run.job.spec.name: list(run.timeline) for run in self.job_runs},
        }

    def adopt(self, seq: int, state: dict) -> None:
        """Show a leader's live state (from :meth:`live_state`) as this hub's latest tick; no twin work."""
        tick = state["tick"]
        snap = tick.snapshot
        with self._step_lock:
            if snap is None or (self._prev_ts is not None and snap.ts <= self._prev_ts):
                return
            for run in self.job_runs:
                run.timeline[:] = state["timelines"].get(run.job.spec.name, [])
            self.trend_buffer.append(snap)
            self._latest, self._prev_ts, self.seq = snap, snap.ts, seq
            with self._publish_lock:
                self._published = tick
            self.adopted_total += 1

    def alerts_changed(self, changes_count: int = 1) -> None:
        """Another process changed ``changes_count`` alerts: forget the alert lists kept for a database outage."""
        self.alerts_changes_total += changes_count
        self.forget_alerts()

    def forget_alerts(self) -> None:
        """Drop the alert lists kept for a database outage (they may lack changes not notified to us)."""
        self._last_alerts.clear()

    def _write(
        self, cost: str, write: Callable[[], object], reached_db: Callable[[object], bool] = lambda _result: True
    ) -> None:
        """Run a database write; when the database is down the tick goes on and the outage is logged once.

        ``cost`` names what a failure loses; ``reached_db(result)`` says whether the write
        touched the database (only then does its success end an outage).  A failed frame
        is lost; failed alert changes are retried on the next tick (the tracker only
        records what it committed).
        """
        try:
            result = write()
        except SQLAlchemyError as exc:
            self.outage.failed(cost, exc)
        else:
            if reached_db(result):
                self.outage.succeeded()

    def _inputs(self, ts: datetime, now_s: float) -> TickInputs:
        """Twin inputs from the readings (NaN where nothing fresh: the twin keeps its model)."""
        b, s = self.buffer, self.state
        cur = lambda kind, metric: b.current(kind, metric, now_s, self.reading_max_age_s)  # noqa: E731
        pumps = cur("cdu", "pumps_running_count")
        installed = s.cdu_spec_array("pumps")
        facility = cur("cdu", "facility_supply_temp_c")
        loop_supply = np.full(len(s.loop_name), np.nan)
        seen = np.isfinite(facility)
        if seen.any():
            sums = np.bincount(s.cdu_loop[seen], weights=facility[seen], minlength=len(s.loop_name))
            counts = np.bincount(s.cdu_loop[seen], minlength=len(s.loop_name))
            loop_supply = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        limit = cur("gpu", "power_limit_w")
        return TickInputs(
            ts=ts,
            gpu_util_frac=cur("gpu", "gpu_util_frac"),
            gpu_power_limit_w=limit if np.isfinite(limit).any() else None,
            pumps_running_count=np.where(np.isfinite(pumps), pumps, installed).astype(np.int64),
            cdu_flow_lpm=cur("cdu", "coolant_flow_lpm"),
            loop_supply_temp_c=loop_supply,
            failed_power=b.failed("power"),
            failed_sources=b.failed("source"),
            failed_links=b.failed("link"),
            nodes_off=b.nodes_off(),
            jobs=self.jobs,  # the placed jobs' phases drive the swing
        )

    def _overlay(self, snap: Snapshot, now_s: float) -> Snapshot:
        """Measured GPU values replace the twin's where fresh; the prediction is kept aside.

        GPU health follows the measured numbers the pages show: a GPU drawing less than
        :data:`DEAD_POWER_FRAC` of its idle power is down, one measured at or above its
        slowdown temperature is throttled to the hardware-slowdown clock.
        """
        cur = lambda metric: self.buffer.current("gpu", metric, now_s, self.reading_max_age_s)  # noqa: E731
        self.predicted_gpu_temp_c = snap.gpu_temp_c.copy()
        temp, power, hbm, xid = cur("gpu_temp_c"), cur("gpu_power_w"), cur("hbm_temp_c"), cur("last_xid_code")
        gpu_temp = np.where(np.isfinite(temp), temp, snap.gpu_temp_c)
        last_xid_code = np.where(np.isfinite(xid), xid, snap.last_xid_code).astype(np.int16)
        powered = snap.gpu_state != GPU_OFF
        dead = powered & np.isfinite(power) & (power < DEAD_POWER_FRAC * self._gpu_idle_w)
        down = np.isin(last_xid_code, list(XID_DOWN)) | (snap.gpu_state == GPU_DOWN) | dead
        hot = powered & ~down & np.isfinite(temp) & (temp >= self._gpu_slowdown_c)
        gpu_state = np.where(down, GPU_DOWN, np.where(hot, GPU_THROTTLED, snap.gpu_state)).astype(np.int8)
        throttle = np.where(hot, np.minimum(snap.throttle_frac, HW_SLOWDOWN_CLOCK_FRAC), snap.throttle_frac)
        rack_max = self.twin.by_rack.max(np.where(np.isfinite(gpu_temp), gpu_temp, -np.inf))
        return replace(
            snap,
            gpu_temp_c=gpu_temp,
            hbm_temp_c=np.where(np.isfinite(hbm), hbm, snap.hbm_temp_c),
            gpu_power_w=np.where(down, 0.0, np.where(np.isfinite(power), power, snap.gpu_power_w)),
            last_xid_code=last_xid_code,
            gpu_state=gpu_state,
            throttle_frac=np.where(down, 0.0, throttle),
            rack_max_gpu_temp_c=np.where(np.isfinite(rack_max), rack_max, np.nan),
            source_age_s=self.source_ages(now_s),
        )

    def _facts(self, snap: Snapshot) -> SiteFacts:
        """What the alert rules need beyond the snapshot; remembers each job's best throughput."""
        for job in snap.jobs:
            if np.isfinite(job.tokens_per_s) and job.tokens_per_s > self._job_best.get(job.name, 0.0):
                self._job_best[job.name] = float(job.tokens_per_s)
        detail = self.twin.detail
        return SiteFacts(
            power_live=detail.power_live,
            source_live=detail.source_live,
            job_best_tokens_per_s=dict(self._job_best),
            generation=detail.generation,
        )

    def _owns(self, condition) -> bool:
        """Whether this shard raises ``condition``: GPU and rack alerts by block, the rest on shard 0."""
        index, count = self.shard
        if condition.entity_kind == "rack":
            return int(self._rack_block[condition.entity_id]) % count == index
        if condition.entity_kind == "gpu":
            return (condition.entity_id // GPU_BLOCK) % count == index
        return index == 0

    def _evaluate_jobs(self, ts: datetime, snap: Snapshot, dt_s: float) -> list:
        """Job throughput on the measured state, run through the restart cycle (:mod:`ingest.live.job_runs`).

        The full-pace figures are re-evaluated every JOB_EVERY_S, or at once when a GPU goes
        down or a rank is swapped for a spare; the restart phase steps every tick.
        """
        down_now = snap.gpu_state == GPU_DOWN
        swapped = sum(int(run.swapped.sum()) for run in self.job_runs)
        changed = (
            self._jobs_at is None
            or (ts - self._jobs_at).total_seconds() >= JOB_EVERY_S
            or bool((down_now != self._down_at_jobs).any())
            or swapped != self._swapped_at_jobs
        )
        if self.jobs and changed:
            self._job_base = [
                evaluate_site_job(
                    self.state, run.job.spec, run.job.gpu_ids, run.running_frac(snap), snap.link_up_flag
                ).status
                for run in self.job_runs
            ]
            self._jobs_at, self._down_at_jobs, self._swapped_at_jobs = ts, down_now, swapped
        statuses = []
        for run, base in zip(self.job_runs, self._job_base):
            run.step(ts, dt_s, snap, XID_DOWN, self._job_best.get(base.name, base.tokens_per_s))
            statuses.append(run.status(base))
        return statuses

    def job_timeline(self, job_name: str) -> list[dict]:
        """Phase changes of a job (failures, restarts, checkpoints), oldest first."""
        for run in self.job_runs:
            if run.job.spec.name == job_name:
                return list(run.timeline)
        return []

    # ------------------------------------------------------------ read side
    def latest_tick(self) -> ViewTick:
        """The last published snapshot with the detail of the same tick, read together."""
        with self._publish_lock:
            return self._published

    def latest(self) -> Snapshot | None:
        return self.latest_tick().snapshot

    def detail(self):
        """The twin's results beyond the Snapshot contract of the published tick (site balance, N-1 causes)."""
        return self.latest_tick().detail

    def trend(self, window_s: float = 900.0) -> pd.DataFrame:
        return self.trend_buffer.frame(window_s)

    def source_ages(self, now_s: float | None = None) -> dict[str, float]:
        """Seconds since each source's last good reading (inf when never); a follower ages the leader's."""
        now_s = time.time() if now_s is None else now_s
        if not self.writable and self._latest is not None:
            since_s = now_s - self._latest.ts.timestamp()
            return {name: age + since_s for name, age in self._latest.source_age_s.items()}
        ages = {p.name: now_s - p.last_ok_s for p in self.pollers}
        if self.synthetic is not None:
            ages[self.synthetic.name] = now_s - self._synthetic_ok_s
        return ages

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """Recorded GPU values of one rack over the last ``window_s`` s, long format (ts, gpu, metric, value)."""
        if not 0 <= rack_id < self.state.n_racks:
            raise ValueError(f"rack id {rack_id} is not in 0..{self.state.n_racks - 1}")
        end = self._prev_ts or utcnow()
        gpus = np.flatnonzero(self.state.gpu_rack == rack_id)
        try:
            ts, values = self.store.read_window("gpu", gpus, end - timedelta(seconds=window_s), end)
        except SQLAlchemyError:  # database down: no history (the outage is logged by the writes)
            return pd.DataFrame(
                {
                    "ts": pd.Series([], dtype="datetime64[ns, UTC]"),
                    "gpu": pd.Series([], dtype=np.int64),
                    "metric": pd.Series([], dtype=str),
                    "value": pd.Series([], dtype=np.float64),
                }
            )
        n_ts, n_fields, n_gpus = values.shape
        return pd.DataFrame(
            {
                "ts": pd.to_datetime(np.repeat(ts, n_fields * n_gpus)).tz_localize(UTC),
                "gpu": np.tile(gpus, n_ts * n_fields),
                "metric": np.tile(np.repeat(np.array(GPU_FIELDS), n_gpus), n_ts),
                "value": values.reshape(-1).astype(np.float64),
            }
        )

    def placed_jobs(self) -> list[PlacedJob]:
        """The training jobs the live twin evaluates, as placed on the site."""
        return list(self.jobs)

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """Recorded values of one CDU over the last ``window_s`` s, one column per CDU field, indexed by UTC time."""
        if not 0 <= cdu_id < self.state.n_cdus:
            raise ValueError(f"CDU id {cdu_id} is not in 0..{self.state.n_cdus - 1}")
        end = self._prev_ts or utcnow()
        try:
            ts, values = self.store.read_window("cdu", np.array([cdu_id]), end - timedelta(seconds=window_s), end)
        except SQLAlchemyError:  # database down: no history (the outage is logged by the writes)
            ts, values = np.zeros(0, dtype="datetime64[ms]"), np.zeros((0, len(CDU_FIELDS), 1), dtype=np.float32)
        index = pd.DatetimeIndex(pd.to_datetime(ts).tz_localize(UTC), name="ts")
        return pd.DataFrame(values[:, :, 0].astype(np.float64), index=index, columns=list(CDU_FIELDS))

    def alerts(self, active_only: bool = True, limit: int = 500) -> list[dict]:
        """Alerts newest first; ``active_only`` keeps the ones not cleared yet (fields: :func:`alert_dict`).

        With the database down, the last list read is returned (the outage is logged by writes).
        """
        try:
            result = list_alerts(self.db, self.site_name, active_only, limit)
        except SQLAlchemyError:
            self.alerts_read_failed = True
            return remembered_alerts(self._last_alerts, active_only, limit)
        self.alerts_read_failed = False
        self._last_alerts[(active_only, limit)] = result
        return result

    def database_reachable(self) -> bool:
        """False while writes fail or the last alert read failed (pages and the API show it)."""
        return not (self.outage.active or getattr(self, "alerts_read_failed", False))

    def acknowledge(self, alert_id: int, comment: str = "", user: str = "") -> None:
        """Mark an alert acknowledged with the operator's comment (on a leader or a follower alike)."""
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

    def prune(self) -> int:
        """Delete recorded frames older than the retention window; returns the chunks deleted."""
        if self._prev_ts is None or not self.writable:
            return 0
        deleted = []
        self._write(
            "prunes skipped",
            lambda: deleted.append(self.store.prune_before(self._prev_ts - timedelta(seconds=self.retention_s))),
        )
        return deleted[0] if deleted else 0

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
        self._last_alerts.clear()

    # ------------------------------------------------------------- scheduling
    def jobs_for_scheduler(self, tick_s: float = 1.0):
        """The scheduler jobs of this hub: the twin step and one poll job per source."""
        from ingest.live.scheduler import ScheduledTask

        specs = [ScheduledTask("twin-step", self.step, tick_s), ScheduledTask("prune-frames", self.prune, 300.0)]
        specs += [
            ScheduledTask(
                f"poll-{p.name}", lambda p=p: p.run(self.buffer), p.interval_s, jitter_s=min(0.2 * p.interval_s, 2.0)
            )
            for p in self.pollers
        ]
        return specs

"""The frames of a live hub: each tick's snapshot stored at a cadence, pruned after a retention, read back by window.

:class:`FrameRecorder` writes one columnar frame (:mod:`ingest.store.frames`) every
``every_s`` seconds of this hub's shard, deletes frames older than ``retention_s``, and
reads a rack's GPU values or a CDU's values back over a window for the drill-downs.
Writes go through the hub's :class:`ingest.live.writes.GuardedWrites`: with the
database down a frame is dropped and the tick goes on; reads then give empty history.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ingest.live.writes import GuardedWrites
from ingest.store.frames import FrameStore
from ingest.store.layouts import CDU_FIELDS, GPU_FIELDS, site_layouts, snapshot_frames
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables

RECORD_EVERY_S = 5.0  # frames are stored at this cadence: 2.9 MB per colossus frame is 2 GB an hour at 5 s
RETENTION_S = 3600.0  # frames older than this are pruned (the embedded default keeps an hour)


def _empty_rack_history() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts": pd.Series([], dtype="datetime64[ns, UTC]"),
            "gpu": pd.Series([], dtype=np.int64),
            "metric": pd.Series([], dtype=str),
            "value": pd.Series([], dtype=np.float64),
        }
    )


class FrameRecorder:
    """Stores the frames of one site and shard (``record`` False: none) and reads them back (see module docstring)."""

    def __init__(
        self,
        state: SiteTables,
        db: Engine,
        writes: GuardedWrites,
        *,
        shard: tuple[int, int] = (0, 1),
        record: bool = True,
        every_s: float = RECORD_EVERY_S,
        retention_s: float = RETENTION_S,
    ) -> None:
        self.state, self.shard, self.record = state, shard, record
        self.every_s, self.retention_s = every_s, retention_s
        self.store = FrameStore(db, state.name, site_layouts(state))
        self._writes = writes
        self._recorded_at: datetime | None = None

    def tick(self, ts: datetime, snap: Snapshot) -> None:
        """Store ``snap`` as the frame of ``ts`` when one is due (a failed write is dropped, not retried)."""
        if not self.record or (
            self._recorded_at is not None and (ts - self._recorded_at).total_seconds() < self.every_s
        ):
            return
        self._writes.run("frames dropped", lambda: self.store.write_frame(ts, snapshot_frames(snap), shard=self.shard))
        self._recorded_at = ts

    def prune(self, now: datetime) -> int:
        """Delete the frames older than the retention window before ``now``; returns the chunks deleted."""
        deleted = []
        self._writes.run(
            "prunes skipped",
            lambda: deleted.append(self.store.prune_before(now - timedelta(seconds=self.retention_s))),
        )
        return deleted[0] if deleted else 0

    def rack_history(self, rack_id: int, end: datetime, window_s: float = 600.0) -> pd.DataFrame:
        """Recorded GPU values of one rack over ``window_s`` s up to ``end``, long format (ts, gpu, metric, value)."""
        if not 0 <= rack_id < self.state.n_racks:
            raise ValueError(f"rack id {rack_id} is not in 0..{self.state.n_racks - 1}")
        gpus = np.flatnonzero(self.state.gpu_rack == rack_id)
        try:
            ts, values = self.store.read_window("gpu", gpus, end - timedelta(seconds=window_s), end)
        except SQLAlchemyError:  # database down: no history (the outage is logged by the writes)
            return _empty_rack_history()
        n_ts, n_fields, n_gpus = values.shape
        return pd.DataFrame(
            {
                "ts": pd.to_datetime(np.repeat(ts, n_fields * n_gpus)).tz_localize(UTC),
                "gpu": np.tile(gpus, n_ts * n_fields),
                "metric": np.tile(np.repeat(np.array(GPU_FIELDS), n_gpus), n_ts),
                "value": values.reshape(-1).astype(np.float64),
            }
        )

    def cdu_history(self, cdu_id: int, end: datetime, window_s: float = 600.0) -> pd.DataFrame:
        """Recorded values of one CDU over ``window_s`` s up to ``end``, one column per CDU field, indexed by UTC time."""
        if not 0 <= cdu_id < self.state.n_cdus:
            raise ValueError(f"CDU id {cdu_id} is not in 0..{self.state.n_cdus - 1}")
        try:
            ts, values = self.store.read_window("cdu", np.array([cdu_id]), end - timedelta(seconds=window_s), end)
        except SQLAlchemyError:  # database down: no history (the outage is logged by the writes)
            ts, values = np.zeros(0, dtype="datetime64[ms]"), np.zeros((0, len(CDU_FIELDS), 1), dtype=np.float32)
        index = pd.DatetimeIndex(pd.to_datetime(ts).tz_localize(UTC), name="ts")
        return pd.DataFrame(values[:, :, 0].astype(np.float64), index=index, columns=list(CDU_FIELDS))

"""In-memory ring buffer of site-level scalars per tick, for the live trend charts.

The leader appends its snapshots; a follower also merges the rows the leader stored
(:mod:`ingest.store.livetrend`), so its trend has the leader's history and no gaps.
"""

from __future__ import annotations

import threading
from collections import deque
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED, Snapshot

TREND_WINDOW_S = 3600.0  # the longest trend a page shows (the jobs page's throughput)
TREND_COLUMNS = (
    "it_power_mw",
    "facility_power_mw",
    "generation_capacity_mw",
    "pue_ratio",
    "gpus_throttled",
    "gpus_down",
    "max_gpu_temp_c",
    "tokens_per_s",
    "mfu_frac",
)


def trend_row(snap: Snapshot) -> tuple:
    """The trend values of one snapshot, in :data:`TREND_COLUMNS` order."""
    job = snap.jobs[0] if snap.jobs else None
    temps = snap.gpu_temp_c[np.isfinite(snap.gpu_temp_c)]
    return (
        snap.it_power_mw,
        snap.facility_power_mw,
        snap.generation_capacity_mw,
        snap.pue_ratio,
        int((snap.gpu_state == GPU_THROTTLED).sum()),
        int((snap.gpu_state == GPU_DOWN).sum()),
        float(temps.max()) if temps.size else float("nan"),
        job.tokens_per_s if job else float("nan"),
        job.mfu_frac if job else float("nan"),
    )


COUNT_COLUMNS = ("gpus_throttled", "gpus_down")


def _stored_value(column: str, value: float | None):
    """A stored value as :func:`trend_row` gives it: counts as int, NaN where unknown."""
    if value is None or not np.isfinite(value):
        return float("nan")
    return int(value) if column in COUNT_COLUMNS else float(value)


class TrendBuffer:
    """The last ``window_s`` seconds of :func:`trend_row` values, in time order."""

    def __init__(self, window_s: float = TREND_WINDOW_S) -> None:
        self.window = timedelta(seconds=window_s)
        self._rows: deque[tuple[datetime, tuple]] = deque()
        self._lock = threading.Lock()

    def _add(self, ts: datetime, row: tuple) -> bool:
        """Append one row if it is newer than the last (caller holds the lock); whether it was."""
        if self._rows and ts <= self._rows[-1][0]:
            return False
        self._rows.append((ts, row))
        while self._rows[0][0] < ts - self.window:
            self._rows.popleft()
        return True

    def append(self, snap: Snapshot) -> None:
        """Add ``snap``'s values (ignored when not newer than the last point)."""
        row = trend_row(snap)
        with self._lock:
            self._add(snap.ts, row)

    def extend(self, rows: list[tuple[datetime, dict[str, float]]]) -> int:
        """Add stored rows (time, values by column name; missing columns are NaN), oldest first.

        Rows not newer than the last point are skipped; returns how many were added.
        """
        with self._lock:
            return sum(
                self._add(ts, tuple(_stored_value(c, values.get(c)) for c in TREND_COLUMNS)) for ts, values in rows
            )

    def last_ts(self) -> datetime | None:
        """Time of the newest point, or None when empty."""
        with self._lock:
            return self._rows[-1][0] if self._rows else None

    def rows_after(self, ts: datetime | None) -> list[tuple[datetime, dict[str, float]]]:
        """Points newer than ``ts`` (all when None), oldest first, as (time, values by column name)."""
        with self._lock:
            rows = []
            for r in reversed(self._rows):  # the newest few, usually: stop at the first old one
                if ts is not None and r[0] <= ts:
                    break
                rows.append(r)
        rows.reverse()
        return [(t, dict(zip(TREND_COLUMNS, (float(v) for v in row)))) for t, row in rows]

    def frame(self, window_s: float = 900.0) -> pd.DataFrame:
        """Rows of the last ``window_s`` seconds, indexed by UTC timestamp."""
        with self._lock:
            rows = list(self._rows)
        if rows:
            cutoff = rows[-1][0] - timedelta(seconds=window_s)
            rows = [r for r in rows if r[0] >= cutoff]
        index = (
            pd.DatetimeIndex([r[0] for r in rows], tz=UTC, name="ts")
            if rows
            else pd.DatetimeIndex([], tz=UTC, name="ts")
        )
        return pd.DataFrame([r[1] for r in rows], index=index, columns=list(TREND_COLUMNS))

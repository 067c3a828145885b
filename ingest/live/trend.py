"""In-memory ring buffer of site-level scalars per tick, for the live trend charts."""

from __future__ import annotations

import threading
from collections import deque
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED, Snapshot

TREND_COLUMNS = ("it_power_mw", "facility_power_mw", "generation_capacity_mw", "pue_ratio", "gpus_throttled",
                 "gpus_down", "max_gpu_temp_c", "tokens_per_s", "mfu_frac")


def trend_row(snap: Snapshot) -> tuple:
    """The trend values of one snapshot, in :data:`TREND_COLUMNS` order."""
    job = snap.jobs[0] if snap.jobs else None
    temps = snap.gpu_temp_c[np.isfinite(snap.gpu_temp_c)]
    return (snap.it_power_mw, snap.facility_power_mw, snap.generation_capacity_mw, snap.pue_ratio,
            int((snap.gpu_state == GPU_THROTTLED).sum()), int((snap.gpu_state == GPU_DOWN).sum()),
            float(temps.max()) if temps.size else float("nan"),
            job.tokens_per_s if job else float("nan"), job.mfu_frac if job else float("nan"))


class TrendBuffer:
    """The last ``window_s`` seconds of :func:`trend_row` values."""

    def __init__(self, window_s: float = 3600.0) -> None:
        self.window = timedelta(seconds=window_s)
        self._rows: deque[tuple[datetime, tuple]] = deque()
        self._lock = threading.Lock()

    def append(self, snap: Snapshot) -> None:
        row = trend_row(snap)
        with self._lock:
            self._rows.append((snap.ts, row))
            while self._rows and self._rows[0][0] < snap.ts - self.window:
                self._rows.popleft()

    def frame(self, window_s: float = 900.0) -> pd.DataFrame:
        """Rows of the last ``window_s`` seconds, indexed by UTC timestamp."""
        with self._lock:
            rows = list(self._rows)
        if rows:
            cutoff = rows[-1][0] - timedelta(seconds=window_s)
            rows = [r for r in rows if r[0] >= cutoff]
        index = pd.DatetimeIndex([r[0] for r in rows], tz=timezone.utc, name="ts") if rows else \
            pd.DatetimeIndex([], tz=timezone.utc, name="ts")
        return pd.DataFrame([r[1] for r in rows], index=index, columns=list(TREND_COLUMNS))

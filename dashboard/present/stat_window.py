"""Stable KPI numbers: a short moving mean with its min/max band, like a Grafana stat panel.

A 100k-GPU site's IT load swings by tens of MW within a training step, so a tile that
shows the latest tick flips between values every refresh and two pages opened seconds
apart disagree.  Tiles show the mean over the last :data:`STAT_WINDOW_S` seconds of the
trend instead, with the band it moved in and a sparkline of the samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

STAT_WINDOW_S = 30.0  # 15 training steps of ~2 s: long enough to average a swing, short enough to follow a trip
SPARK_POINTS = 60  # at most this many points in a tile's sparkline


@dataclass(frozen=True)
class WindowStat:
    """Mean, min and max of one trend column over the window, and the samples for a sparkline."""

    mean: float
    low: float
    high: float
    samples: tuple[float, ...]

    @property
    def steady(self) -> bool:
        """Whether the band is narrow (within 2 % of the mean): a single number tells the story."""
        return math.isfinite(self.mean) and self.high - self.low <= 0.02 * max(abs(self.mean), 1e-9)


def window_stat(
    trend: pd.DataFrame, column: str, window_s: float = STAT_WINDOW_S, latest: float = math.nan
) -> WindowStat:
    """Stat of ``column`` over the last ``window_s`` of ``trend`` (indexed by UTC time); ``latest`` if empty."""
    if trend is None or trend.empty or column not in trend:
        return WindowStat(latest, latest, latest, ())
    end = trend.index[-1]
    recent = trend.loc[trend.index >= end - pd.Timedelta(seconds=window_s), column].to_numpy(dtype=np.float64)
    recent = recent[np.isfinite(recent)]
    if recent.size == 0:
        return WindowStat(latest, latest, latest, ())
    step = max(1, recent.size // SPARK_POINTS)
    return WindowStat(
        float(recent.mean()), float(recent.min()), float(recent.max()), tuple(float(v) for v in recent[::step])
    )

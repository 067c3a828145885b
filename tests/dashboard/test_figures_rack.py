"""Rack drill-down history figure: max/mean/min over the rack's GPUs per timestamp."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.figures.rack import rack_history_figure


def test_history_shows_max_mean_min_per_timestamp():
    ts = pd.date_range("2026-07-15", periods=2, freq="10s", tz="UTC")
    frame = pd.DataFrame(
        {"ts": np.repeat(ts, 2), "gpu": [0, 1, 0, 1], "metric": "gpu_temp_c", "value": [50.0, 70.0, 52.0, 72.0]}
    )
    fig = rack_history_figure(frame, "gpu_temp_c", "GPU temperature", "°C")
    by_name = {t.name: list(t.y) for t in fig.data}
    assert by_name == {"max": [70.0, 72.0], "mean": [60.0, 62.0], "min": [50.0, 52.0]}
    assert fig.layout.yaxis.title.text == "GPU temperature [°C]"

"""Rack drill-down figures: elevation by slot, per-GPU grids with units, history aggregates."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.figures.rack import elevation_figure, gpu_grid_figure, rack_history_figure


def test_elevation_orders_slots_bottom_up_with_the_cdu_below():
    rows = [{"name": f"n{s}", "slot": s, "max_gpu_temp_c": 60.0 + s, "gpu_power_kw": 5.0, "gpus_throttled": 0, "gpus_down": int(s == 1)}
            for s in (2, 0, 1)]
    fig = elevation_figure(rows, "CDU-1", True, (25.0, 87.0))
    assert list(fig.layout.yaxis.categoryarray) == ["CDU", "slot 0", "slot 1", "slot 2"]
    assert "1 down" in fig.data[0].text[1]
    assert list(fig.data[0].marker.color) == [60.0, 61.0, 62.0]


def test_gpu_grid_has_unit_in_title_and_marks_annotations():
    grid = np.array([[50.0, 60.0], [np.nan, 70.0]])
    notes = np.array([["", "XID 79"], ["", ""]])
    fig = gpu_grid_figure(grid, ["a", "b"], "GPU temperature", "°C", (25, 87), annotations=notes)
    assert fig.layout.title.text == "GPU temperature [°C]"
    assert fig.data[0].text[0][1] == "60<br>XID 79"
    assert fig.data[0].z[1][0] is None


def test_history_shows_max_mean_min_per_timestamp():
    ts = pd.date_range("2026-07-15", periods=2, freq="10s", tz="UTC")
    frame = pd.DataFrame({"ts": np.repeat(ts, 2), "gpu": [0, 1, 0, 1], "metric": "gpu_temp_c", "value": [50.0, 70.0, 52.0, 72.0]})
    fig = rack_history_figure(frame, "gpu_temp_c", "GPU temperature", "°C")
    by_name = {t.name: list(t.y) for t in fig.data}
    assert by_name == {"max": [70.0, 72.0], "mean": [60.0, 62.0], "min": [50.0, 52.0]}
    assert fig.layout.yaxis.title.text == "GPU temperature [°C]"

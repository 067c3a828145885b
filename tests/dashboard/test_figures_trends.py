"""Trend figures: units on the axes, downsampling keeps spikes, patches replace only x/y."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.figures.trends import MAX_POINTS, downsample, trend_figure, trend_patch


def _frame(n: int) -> pd.DataFrame:
    index = pd.date_range("2026-07-15 12:00", periods=n, freq="1s", tz="UTC")
    return pd.DataFrame({"it_power_mw": np.linspace(80, 90, n), "max_gpu_temp_c": np.full(n, 70.0)}, index=index)


def test_downsample_caps_points_and_keeps_the_maximum_of_max_columns():
    frame = _frame(3600)
    frame.iloc[1234, 1] = 95.0
    small = downsample(frame)
    assert len(small) <= MAX_POINTS + 1
    assert small["max_gpu_temp_c"].max() == 95.0
    assert abs(small["it_power_mw"].mean() - 85.0) < 0.1


def test_trend_figure_labels_units_and_keeps_zoom_key():
    fig = trend_figure(_frame(100), [("it_power_mw", "IT")], "power", "MW", "Load", uirevision="k")
    assert fig.layout.yaxis.title.text == "power [MW]"
    assert fig.layout.xaxis.title.text == "time (UTC)"
    assert fig.layout.uirevision == "k"
    assert "MW" in fig.data[0].hovertemplate
    assert fig.data[0].x[0] == "2026-07-15 12:00:00"


def test_trend_patch_only_touches_trace_data():
    ops = trend_patch(_frame(10), ["it_power_mw", "missing_column"]).to_plotly_json()["operations"]
    assert {tuple(op["location"]) for op in ops} == {
        ("data", 0, "x"),
        ("data", 0, "y"),
        ("data", 1, "x"),
        ("data", 1, "y"),
    }
    values = {tuple(op["location"]): op["params"]["value"] for op in ops}
    assert len(values[("data", 0, "y")]) == 10 and values[("data", 1, "y")] == []


def test_pin_line_and_its_patch():
    from dashboard.figures.trends import pin_patch

    fig = trend_figure(
        _frame(10), [("it_power_mw", "IT")], "power", "MW", "Load", uirevision="k", pinned="2026-07-15 12:00:05"
    )
    assert fig.layout.shapes[0].x0 == "2026-07-15 12:00:05" and fig.layout.shapes[0].yref == "paper"
    ops = pin_patch(None).to_plotly_json()["operations"]
    assert ops == [{"operation": "Assign", "location": ["layout", "shapes"], "params": {"value": []}}]

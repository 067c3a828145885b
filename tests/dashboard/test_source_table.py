"""The power page's table of generation sources (demo: GRID, GEN-01, GEN-02, BESS)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dashboard.components.source_table import source_rows


def test_lost_sources_first_then_the_focused_one_marked(demo_state, demo_snapshot):
    live = np.array([True, True, False, True])  # GEN-02 tripped
    rows = source_rows(demo_state, demo_snapshot, SimpleNamespace(source_live=live), focus="GEN-01")
    assert [r["source"] for r in rows] == ["GEN-02", "GEN-01", "BESS", "GRID"]
    assert rows[0]["state"] == "lost" and rows[0]["row_class"] == "row-critical"
    assert rows[1]["row_class"] == "row-focus" and rows[2]["row_class"] is None
    battery = rows[2]
    assert battery["kind"] == "battery" and battery["capacity_mw"] == 0.5
    assert battery["soc_pct"] is None or 0.0 <= battery["soc_pct"] <= 100.0
    assert all(r["soc_pct"] is None for r in rows if r["kind"] != "battery")


def test_load_is_output_over_capacity(demo_state, demo_snapshot):
    rows = {r["source"]: r for r in source_rows(demo_state, demo_snapshot)}
    grid = rows["GRID"]
    assert grid["load_pct"] == 100.0 * grid["output_mw"] / 0.6

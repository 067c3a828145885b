"""Cooling-page figure builders: heat conservation, drill-down grouping, NaN handling, risk classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.dashboard import page_snapshots

from dashboard import theme
from dashboard.figures import cooling


@pytest.fixture(scope="module")
def demo():
    state = page_snapshots.site("demo")
    return state, page_snapshots.snapshot(state, seed=3)


@pytest.fixture(scope="module")
def colossus():
    state = page_snapshots.site("colossus")
    return state, page_snapshots.snapshot(state, seed=4)


def test_site_flow_conserves_heat_from_cdus_to_loops(colossus):
    state, snap = colossus
    fig = cooling.cooling_flow_figure(state, snap)
    sankey = fig.data[0]
    n_nodes = len(sankey.node.label)
    assert n_nodes == len(state.plant_name) + len(state.loop_name) + len(state.loop_name)  # one hall per loop here
    first_group = len(state.plant_name) + len(state.loop_name)
    from_groups = [v for s, v in zip(sankey.link.source, sankey.link.value) if s >= first_group]
    assert sum(from_groups) == pytest.approx(float(np.nansum(snap.cdu_heat_kw)), rel=1e-9)


def test_site_groups_are_loop_by_hall(colossus):
    state, _ = colossus
    group, labels, group_loop = cooling.cdu_groups(state, None)
    assert (group >= 0).all()
    for g, loop in enumerate(group_loop):
        assert set(state.cdu_loop[group == g].tolist()) == {loop}
    assert sum(int(label.split(" · ")[1].split()[0]) for label in labels) == state.n_cdus


def test_big_loop_drill_down_groups_cdus_by_row(colossus):
    state, snap = colossus
    loop = 0
    members = np.flatnonzero(state.cdu_loop == loop)
    assert members.size > cooling.MAX_CDU_NODES
    group, labels, _ = cooling.cdu_groups(state, loop)
    assert (group[members] >= 0).all() and (np.delete(group, members) == -1).all()
    rows = np.unique(cooling.cdu_row(state)[members])
    assert len(labels) <= cooling.MAX_ROW_NODES
    per_node = -(-rows.size // cooling.MAX_ROW_NODES)
    assert len(labels) == -(-rows.size // per_node)
    assert labels[0].startswith(state.row_name[rows[0]])
    assert sum(int(label.split(" · ")[1].split()[0]) for label in labels) == members.size
    fig = cooling.cooling_flow_figure(state, snap, loop)
    assert len(fig.data[0].node.label) == 1 + 1 + len(labels)
    assert state.loop_name[loop] in fig.layout.title.text


def test_small_loop_drill_down_shows_each_cdu(demo):
    state, snap = demo
    group, labels, _ = cooling.cdu_groups(state, 0)
    members = np.flatnonzero(state.cdu_loop == 0)
    assert members.size <= cooling.MAX_CDU_NODES
    assert labels == [state.cdu_name[c] for c in members]


def test_flow_figure_survives_unknown_readings(demo):
    state, snap = demo
    broken = page_snapshots.snapshot(state, seed=3)
    broken.cdu_heat_kw[:3] = np.nan
    broken.cdu_supply_temp_c[:] = np.nan
    fig = cooling.cooling_flow_figure(state, broken)
    assert all(math.isfinite(v) for v in fig.data[0].link.value)
    hist = cooling.cdu_use_histogram(state, broken)
    assert sum(hist.data[0].y) == state.n_cdus - 3
    assert "3 unknown" in hist.layout.title.text


def test_use_histogram_counts_and_marks_overload(demo):
    state, snap = demo
    over = page_snapshots.snapshot(state, seed=3)
    over.cdu_heat_kw[0] = over.cdu_capacity_kw[0] * 1.1
    fig = cooling.cdu_use_histogram(state, over)
    bar = fig.data[0]
    assert sum(bar.y) == state.n_cdus
    over_index = int(np.searchsorted(cooling.USE_BINS_FRAC, 1.1, side="right") - 1)
    assert bar.y[over_index] >= 1
    assert bar.marker.color[over_index] == theme.STATUS_CRITICAL
    assert bar.marker.color[0] != theme.STATUS_CRITICAL


def test_worst_cdus_sorted_and_filtered(colossus):
    state, snap = colossus
    rows = cooling.worst_cdus(state, snap, n=5, loop=2)
    assert len(rows) == 5
    uses = [r["use_pct"] for r in rows]
    assert uses == sorted(uses, reverse=True)
    assert {r["loop"] for r in rows} == {state.loop_name[2]}
    top = float(np.nanmax(cooling.cdu_use_frac(snap)[state.cdu_loop == 2])) * 100
    assert uses[0] == pytest.approx(top, abs=0.05)


def test_throttle_classes_by_hand():
    ttt = np.array([10.0, 45.0, 90.0, 200.0, 400.0, 1000.0, np.inf, np.nan])
    counts, never, unknown = cooling.throttle_classes(ttt)
    assert counts.tolist() == [1, 1, 1, 1, 1, 1]
    assert (never, unknown) == (1, 1)


def test_throttle_rows_soonest_first_across_scenarios(demo):
    state, _ = demo
    pump = np.full(state.n_racks, np.inf)
    pump[[3, 1, 7]] = [50.0, 20.0, 35.0]
    cdu = np.full(state.n_racks, np.nan)
    cdu[3] = 10.0
    rows = cooling.throttle_risk_rows(state, {"pump": pump, "cdu": cdu}, n=10)
    assert [r["rack"] for r in rows] == [state.rack_name[3], state.rack_name[1], state.rack_name[7]]
    assert [r["scenario"] for r in rows] == ["cdu", "pump", "pump"]
    assert rows[0]["time_to_throttle_s"] == 10.0
    assert rows[1]["cdu"] == state.cdu_name[state.rack_cdu[1]]
    only = cooling.throttle_risk_rows(state, {"pump": pump, "cdu": cdu}, n=10, racks=np.array([7, 9]))
    assert [r["rack"] for r in only] == [state.rack_name[7]]


def test_throttle_figure_one_trace_per_scenario():
    fig = cooling.throttle_risk_figure({"pump": np.array([10.0, np.inf]), "cdu": np.array([40.0, 50.0])})
    assert [t.name for t in fig.data] == ["pump", "cdu"]
    assert list(fig.data[0].y) == [1, 0, 0, 0, 0, 0, 1]

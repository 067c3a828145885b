"""Cooling-page figure builders: heat conservation, drill-down grouping, NaN handling, risk classes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dashboard.figures import cooling
from dashboard.present import theme
from tests.dashboard import page_snapshots


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
    broken.coolant_supply_temp_c[:] = np.nan
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


def _with_lost_and_off(state, snap, lost_cdu: int, off_rack: int):
    from dataclasses import replace

    from twin.engine.snapshot import GPU_OFF

    pumps = snap.pumps_running_count.copy()
    pumps[lost_cdu] = 0
    gpu_state = snap.gpu_state.copy()
    gpu_state[state.gpu_rack == off_rack] = GPU_OFF
    return replace(snap, pumps_running_count=pumps, gpu_state=gpu_state)


def test_lost_cdu_tops_the_table_with_critical_styling_and_no_headroom(demo):
    state, snap = demo
    use = cooling.cdu_use_frac(snap)
    coolest = int(np.nanargmin(use))  # sorted last by use: it must still come first once lost
    rows = cooling.worst_cdus(state, _with_lost_and_off(state, snap, coolest, 0), n=3)
    assert rows[0]["cdu"] == state.cdu_name[coolest]
    assert rows[0]["state"] == "LOST" and rows[0]["row_class"] == "row-critical"
    assert rows[0]["use_pct"] is None and rows[0]["capacity_kw"] == 0.0
    assert all(r["row_class"] is None and r["state"] == "" for r in rows[1:])
    off_rack = int(np.flatnonzero(state.rack_cdu != coolest)[0])
    everything = cooling.worst_cdus(state, _with_lost_and_off(state, snap, coolest, off_rack), n=state.n_cdus)
    assert [r["state"] for r in everything if r["state"]] == ["LOST", "racks off"]
    assert (
        next(r for r in everything if r["state"] == "racks off")["cdu"] == state.cdu_name[int(state.rack_cdu[off_rack])]
    )


def test_use_histogram_leaves_out_lost_and_off_cdus(demo):
    state, snap = demo
    assert (np.bincount(state.rack_cdu, minlength=state.n_cdus) == 1).all()  # demo: one in-rack CDU per rack
    before = cooling.cdu_use_histogram(state, snap)
    after = cooling.cdu_use_histogram(state, _with_lost_and_off(state, snap, 2, 5))
    assert int(np.sum(before.data[0].y)) == state.n_cdus
    assert int(np.sum(after.data[0].y)) == state.n_cdus - 2
    assert "· 1 lost · 1 off" in after.layout.title.text


def test_lost_cdu_makes_its_sankey_group_critical(demo):
    state, snap = demo
    fig = cooling.cooling_flow_figure(state, _with_lost_and_off(state, snap, 2, 5))
    node = fig.data[0].node
    lost_nodes = [i for i, h in enumerate(node.customdata) if "lost" in h]
    assert lost_nodes and all(node.color[i] == theme.STATUS_CRITICAL for i in lost_nodes)


def test_throttle_rows_break_ties_by_rack_name(demo):
    state, _snap = demo
    same = np.full(state.n_racks, 120.0)
    rows = cooling.throttle_risk_rows(state, {"pump": same}, n=state.n_racks)
    assert [r["rack"] for r in rows] == sorted(state.rack_name)

"""Power-page figure builders: diagram grouping and focus, headroom table, generation limits, swing."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from dashboard.figures import power
from dashboard.present import theme
from tests.dashboard import page_snapshots
from twin.site.tables import POWER_KINDS


@pytest.fixture(scope="module")
def colossus():
    state = page_snapshots.site("colossus")
    return state, page_snapshots.snapshot(state, seed=5)


@pytest.fixture(scope="module")
def demo():
    state = page_snapshots.site("demo")
    return state, page_snapshots.snapshot(state, seed=6)


def _element_nodes(nodes):
    return [n for n in nodes if n.column > 0]


def test_site_diagram_groups_busways_and_covers_every_element_once(colossus):
    state, snap = colossus
    nodes = power.diagram_nodes(state, snap)
    members = np.concatenate([n.members for n in _element_nodes(nodes)])
    assert sorted(members.tolist()) == list(range(state.n_power))
    busway = POWER_KINDS.index("busway")
    busway_nodes = [n for n in _element_nodes(nodes) if state.power_kind[n.members[0]] == busway]
    ups_count = int((state.power_kind == POWER_KINDS.index("ups")).sum())
    assert len(busway_nodes) <= ups_count
    assert all(n.key.startswith("g") for n in busway_nodes)
    assert all(sum(1 for n in nodes if n.column == c) <= power.MAX_NODES_PER_COLUMN for c in {n.column for n in nodes})


def test_group_colour_is_worst_member(colossus):
    state, snap = colossus
    nodes = power.diagram_nodes(state, snap, metric="load_frac")
    group = next(n for n in nodes if n.key.startswith("g"))
    assert group.value_frac == pytest.approx(float(np.nanmax(snap.load_frac[group.members])))


def test_focus_shows_path_and_subtree_only(colossus):
    state, snap = colossus
    ups = int(np.flatnonzero(state.power_kind == POWER_KINDS.index("ups"))[3])
    nodes = power.diagram_nodes(state, snap, focus=ups)
    shown = set(np.concatenate([n.members for n in _element_nodes(nodes)]).tolist())
    children = set(np.flatnonzero(state.power_parent == ups).tolist())
    ancestors, parent = set(), int(state.power_parent[ups])
    while parent >= 0:
        ancestors.add(parent)
        parent = int(state.power_parent[parent])
    assert shown == {ups} | children | ancestors
    assert all(n.key == f"p{c}" for n in nodes for c in n.members if c in children)  # busways shown one by one


def test_click_keys_map_back_to_elements():
    assert power.element_from_key("p12") == 12
    assert power.element_from_key("gp7:4") == 7
    assert power.element_from_key("s3") is None
    assert power.element_from_key(None) is None


def test_tree_figure_marks_overload_critical(demo):
    state, snap = demo
    hot = page_snapshots.snapshot(state, seed=6)
    hot.power_n1_load_frac[:] = 0.5
    e = int(np.flatnonzero(state.power_parent < 0)[0])
    hot.power_n1_load_frac[e] = 1.3
    fig = power.power_tree_figure(state, hot)
    colours = {
        cd[0]: c
        for trace in fig.data
        if trace.customdata is not None
        for cd, c in zip(trace.customdata, trace.marker.color)
    }
    assert colours[f"p{e}"] == theme.STATUS_CRITICAL
    other = next(k for k in colours if k.startswith("p") and k != f"p{e}")
    assert colours[other] != theme.STATUS_CRITICAL


def test_worst_elements_by_n1(colossus):
    state, snap = colossus
    rows = power.worst_elements(state, snap, n=6)
    assert [r["n1_pct"] for r in rows] == sorted((r["n1_pct"] for r in rows), reverse=True)
    assert rows[0]["n1_pct"] == pytest.approx(float(np.nanmax(snap.power_n1_load_frac)) * 100, abs=0.05)


def test_generation_limits_by_hand(demo):
    state, snap = demo
    tdp = float(state.gpu_specs[0].tdp_w)
    base_share = float(state.node_base_power_w[0]) / 8
    live = snap.gpu_state != 2
    snap2 = page_snapshots.snapshot(state, seed=6)
    snap2.pue_ratio = 1.25
    k = 100
    snap2.generation_capacity_mw = k * (tdp + base_share) * 1.25 / 1e6 + state.site_overhead_mw + 1e-9
    lim = power.generation_limits(state, snap2)
    assert lim["gpus_runnable_full_power"] == k
    assert lim["gpus_live"] == int(live.sum())
    assert not lim["cap_feasible"]  # 100 GPUs' worth cannot run every GPU even at the minimum
    detail = SimpleNamespace(
        balance=SimpleNamespace(gpus_at_full_power=7, power_cap_w=321.0, cap_fits=True, generation_n1_capacity_mw=1.0)
    )
    twin = power.generation_limits(state, snap2, detail)
    assert (twin["gpus_runnable_full_power"], twin["gpu_cap_w"], twin["source"]) == (7, 321.0, "twin")


def test_follow_capability_fallback_by_hand(demo):
    state, snap = demo
    snap2 = page_snapshots.snapshot(state, seed=6)
    job = snap2.jobs[0]
    job.breakdown_s = {"compute": 1.5, "dp_comm": 0.5}
    job.step_time_s = 2.0
    battery = state.source_kind == 2
    snap2.battery_soc_frac = np.where(battery, 0.5, np.nan)
    snap2.source_power_mw = np.where(battery, 0.0, snap2.source_power_mw)
    gen_ramp = float(state.source_ramp_mw_per_s[~battery & (state.source_capacity_mw > 0)].sum())
    expected = gen_ramp * 0.5 + float(state.source_capacity_mw[battery].sum())  # phase = 2 s × min(0.75, 0.25)
    can = power.follow_capability(state, snap2)
    assert can["followable_mw"] == pytest.approx(expected)
    assert can["generation_ramp_mw_per_s"] == pytest.approx(gen_ramp)


def test_swing_bar_turns_critical_when_supply_cannot_follow(demo):
    state, snap = demo
    detail = SimpleNamespace(swing=SimpleNamespace(followable_mw=1.0, generation_ramp_mw_per_s=2.0))
    snap2 = page_snapshots.snapshot(state, seed=6)
    snap2.swing_amplitude_mw, snap2.swing_ramp_mw_per_s = 0.5, 5.0
    fig = power.swing_figure(state, snap2, detail)
    swing_bars = [t for t in fig.data if list(t.y) == ["swing"]]
    assert [t.marker.color for t in swing_bars] == [theme.STATUS_OK, theme.STATUS_CRITICAL]


def test_generation_figure_totals(colossus):
    state, snap = colossus
    fig = power.generation_figure(state, snap)
    output, spare = fig.data[0], fig.data[1]
    assert sum(output.x) == pytest.approx(float(np.nansum(snap.source_power_mw)))
    assert sum(output.x) + sum(spare.x) == pytest.approx(float(state.source_capacity_mw.sum()))
    assert all(math.isfinite(v) for v in spare.x)


def test_supply_trend_thins_and_keeps_three_traces():
    import pandas as pd

    index = pd.date_range("2026-07-15 12:00", periods=1000, freq="1s", tz="UTC")
    trend = pd.DataFrame(
        {
            "it_power_mw": np.linspace(80, 90, 1000),
            "facility_power_mw": np.linspace(100, 110, 1000),
            "generation_capacity_mw": np.full(1000, 43.0),
        },
        index=index,
    )
    fig = power.supply_trend_figure(trend, max_points=300)
    assert [t.name for t in fig.data] == ["facility load", "IT load", "available generation"]
    assert 250 <= len(fig.data[0].x) <= 300
    assert fig.data[2].y[0] == 43.0
    empty = power.supply_trend_figure(None)
    assert len(empty.data) == 3 and len(empty.data[0].x) == 0


def _dead_busway_detail(state):
    live = np.ones(state.n_power, dtype=bool)
    live[state.power_name.index("H1-BW-R01-A")] = False
    sources = np.ones(state.n_sources, dtype=bool)
    sources[state.source_name.index("GEN-01")] = False
    return SimpleNamespace(power_live=live, source_live=sources)


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_dead_busway_and_lost_generator_are_marked_with_legend_entries(demo):
    state, snap = demo
    detail = _dead_busway_detail(state)
    ups = state.power_name.index("H1-UPS1-A")
    fig = power.power_tree_figure(state, snap, focus=ups, detail=detail)
    busways = _trace(fig, "busway")
    names = [c[1] for c in busways.customdata]
    dead_at = names.index("H1-BW-R01-A")
    assert busways.marker.color[dead_at] == theme.EQUIPMENT_DEAD
    assert busways.marker.line.color[dead_at] == theme.STATUS_CRITICAL and busways.marker.line.width[dead_at] == 2
    assert busways.marker.color[names.index("H1-BW-R02-A")] != theme.EQUIPMENT_DEAD
    cross = _trace(fig, power.DEAD_LEGEND)
    assert cross.showlegend and (busways.x[dead_at], busways.y[dead_at]) in set(zip(cross.x, cross.y))
    site = power.power_tree_figure(state, snap, detail=detail)
    sources = _trace(site, "source")
    source_names = [c[1] for c in sources.customdata]
    assert sources.marker.color[source_names.index("GEN-01")] == theme.EQUIPMENT_DEAD
    assert sources.marker.color[source_names.index("GEN-02")] != theme.EQUIPMENT_DEAD
    assert len(_trace(site, power.DEAD_LEGEND).x) == 2  # the busway (in its group) and the generator


@pytest.mark.slow
def test_surviving_feed_wears_the_no_redundancy_badge_in_the_site_view(demo):
    state, snap = demo
    fig = power.power_tree_figure(state, snap, detail=_dead_busway_detail(state))
    badge = _trace(fig, power.ALONE_LEGEND)
    assert badge.showlegend and len(badge.x) == 1
    assert "1 without redundancy" in badge.customdata[0]
    busway_groups = _trace(fig, "busway")
    b_group = next(
        i for i, c in enumerate(busway_groups.customdata) if "H1-BW-R01-B" in c[2] and "no redundancy" in c[2]
    )
    assert badge.x[0] == pytest.approx(busway_groups.x[b_group] + power.BADGE_OFFSET[0])
    # the A side group holds one dead busway: crossed and labelled, but not all dead
    a_group = next(i for i, c in enumerate(busway_groups.customdata) if "de-energised: H1-BW-R01-A" in c[2])
    assert busway_groups.marker.color[a_group] != theme.EQUIPMENT_DEAD
    assert "1 dead" in busway_groups.customdata[a_group][1]


def test_healthy_site_has_empty_overlays_and_patch_fields_cover_them(demo):
    state, snap = demo
    fig = power.power_tree_figure(
        state,
        snap,
        detail=SimpleNamespace(power_live=np.ones(state.n_power, bool), source_live=np.ones(state.n_sources, bool)),
    )
    assert len(_trace(fig, power.DEAD_LEGEND).x) == 0 and len(_trace(fig, power.ALONE_LEGEND).x) == 0
    fields = power.tree_patch_fields(fig)
    n = len(fig.data)
    assert fields[n - 3] == ("x", "y", "customdata") and fields[n - 2] == ("x", "y", "customdata")
    assert n - 1 not in fields and 0 not in fields


def test_worst_elements_break_ties_by_name(demo):
    state, snap = demo
    flat = replace(snap, power_n1_load_frac=np.full(state.n_power, 0.5))
    rows = power.worst_elements(state, flat, n=state.n_power)
    assert [r["element"] for r in rows] == sorted(state.power_name)


def test_dead_element_tops_the_headroom_table_without_headroom(demo):
    state, snap = demo
    rows = power.worst_elements(state, snap, n=3, detail=_dead_busway_detail(state))
    assert rows[0]["element"] == "H1-BW-R01-A" and rows[0]["state"] == "DEAD"
    assert rows[0]["n1_headroom_kw"] is None and rows[0]["row_class"] == "row-critical"
    assert all(r["state"] == "" and r["row_class"] is None for r in rows[1:])


def test_generation_mix_names_the_lost_generator_and_drops_its_capacity(demo):
    state, snap = demo
    healthy = power.generation_figure(state, snap)
    lost = power.generation_figure(state, snap, _dead_busway_detail(state))
    gen = next(i for i, y in enumerate(lost.data[0].y) if y.startswith("generator"))
    assert "1 lost" in lost.data[0].y[gen] and "lost" not in healthy.data[0].y[gen]
    gen01 = state.source_name.index("GEN-01")
    assert (
        lost.data[1].text[gen]
        == f"of {power._num(float(state.source_capacity_mw[state.source_kind == state.source_kind[gen01]].sum() - state.source_capacity_mw[gen01]))} MW"
    )


def test_source_stacks_of_neighbouring_switchgear_do_not_interleave(demo):
    state, snap = demo
    nodes = power.diagram_nodes(state, snap)
    y = power._positions(nodes)
    by_bus: dict = {}
    for n in nodes:
        if n.column == 0:
            by_bus.setdefault(n.parent_key, []).append(y[n.key])
    assert len(by_bus) == 2
    (lo_a, hi_a), (lo_b, hi_b) = sorted((min(v), max(v)) for v in by_bus.values())
    assert hi_a < lo_b
    every = sorted(v for ys in by_bus.values() for v in ys)
    assert min(np.diff(every)) > 0.5  # room for a marker and its label between any two sources


def test_runnable_tile_never_reads_more_than_all_of_the_live_gpus(page_module, demo):
    """The twin's count of GPUs its generation carries may exceed the live ones (the rest are off): the
    tile said "28,963 of 24,576 live (118 %)"; it now says they all fit and how many more would."""
    state, snap = demo
    live = int((snap.gpu_state < 2).sum())
    power_page = page_module("power")

    def note(runnable: int) -> str:
        detail = SimpleNamespace(
            balance=SimpleNamespace(
                gpus_at_full_power=runnable, power_cap_w=700.0, cap_fits=True, generation_n1_capacity_mw=1.0
            ),
            source_live=np.ones(state.n_sources, dtype=bool),
            policy=None,
        )
        card = next(
            c for c in power_page.kpis(state, snap, detail) if c.children[1].children[0].id["name"] == "runnable"
        )
        return card.children[2].children

    assert note(live + 50) == f"all {live:,} live fit · room for 50 more"
    assert note(live) == f"all {live:,} live fit"
    assert note(live // 2) == f"of {live:,} live ({live // 2 / live:.0%})"

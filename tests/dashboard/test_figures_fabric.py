"""Fabric-page figure builders: per-switch uplink reduction, matrix layout, tiers, switch detail, job bandwidth."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.figures import fabric
from tests.dashboard import page_snapshots
from twin.site.tables import TIER_LEAF, TIER_SPINE


@pytest.fixture(scope="module")
def demo():
    state = page_snapshots.site("demo")
    return state, page_snapshots.snapshot(state, seed=7)


@pytest.fixture(scope="module")
def colossus():
    state = page_snapshots.site("colossus")
    return state, page_snapshots.snapshot(state, seed=8)


def _with_links(state, snap, up, util):
    snap2 = page_snapshots.snapshot(state, seed=7)
    snap2.link_up_flag, snap2.link_util_frac = up, util
    return snap2


def test_uplink_stats_by_hand(demo):
    state, _ = demo
    leaf = 2
    uplinks = np.flatnonzero(state.link_a == leaf)
    up = np.ones(state.n_links, bool)
    up[uplinks[:2]] = False
    util = np.full(state.n_links, 0.1)
    util[uplinks[2:]] = np.linspace(0.2, 0.6, uplinks.size - 2)
    installed, down, mean = fabric.uplink_stats(state, _with_links(state, demo[1], up, util))
    assert installed[leaf] == uplinks.size and down[leaf] == 2
    assert mean[leaf] == pytest.approx(0.4)
    cores_without_uplinks = installed == 0
    assert np.isnan(mean[cores_without_uplinks]).all()


def test_pod_positions_are_unique_cells(colossus):
    state, _ = colossus
    for tier in (TIER_LEAF, TIER_SPINE):
        ids, row, col = fabric.pod_positions(state, tier)
        assert ids.size == int((state.switch_tier == tier).sum())
        assert np.unique(row * 10_000 + col).size == ids.size
        assert col.min() == 0


def test_matrix_cell_and_down_marker_match_switch(demo):
    state, _ = demo
    up = np.ones(state.n_links, bool)
    util = np.full(state.n_links, 0.25)
    leaf = 5
    up[np.flatnonzero(state.link_a == leaf)[0]] = False
    fig = fabric.switch_matrix_figure(state, _with_links(state, demo[1], up, util), TIER_LEAF)
    ids, row, col = fabric.pod_positions(state, TIER_LEAF)
    k = int(np.flatnonzero(ids == leaf)[0])
    heat, marks = fig.data[0], fig.data[1]
    assert heat.z[row[k]][col[k]] == pytest.approx(25.0)
    assert heat.customdata[row[k]][col[k]] == leaf
    assert list(marks.x) == [col[k]] and list(marks.y) == [row[k]]
    assert marks.customdata[0][1] == 1


def test_matrix_keeps_marker_trace_when_all_links_up(demo):
    state, _ = demo
    fig = fabric.switch_matrix_figure(
        state, _with_links(state, demo[1], np.ones(state.n_links, bool), np.zeros(state.n_links))
    )
    assert len(fig.data) == 2 and len(fig.data[1].x) == 0


def test_tier_rows_add_up(colossus):
    state, snap = colossus
    rows = fabric.tier_rows(state, snap)
    assert sum(r["links"] for r in rows) == state.n_links
    assert sum(r["links_down"] for r in rows) == int((~snap.link_up_flag).sum())
    assert all(0 <= r["mean_util_pct"] <= r["p99_util_pct"] <= 100 for r in rows)


def test_leaf_detail_lists_its_nics_and_uplinks(demo):
    state, snap = demo
    leaf = 1
    fig = fabric.switch_detail_figure(state, snap, leaf)
    uplinks, nics = fig.data[0], fig.data[1]
    assert len(uplinks.x) == int((state.link_a == leaf).sum())
    assert len(nics.x) == int((state.gpu_leaf == leaf).sum())


def test_spine_detail_shows_downlinks(demo):
    state, snap = demo
    spine = int(np.flatnonzero(state.switch_tier == TIER_SPINE)[0])
    fig = fabric.switch_detail_figure(state, snap, spine)
    assert len(fig.data[1].x) == int((state.link_b == spine).sum())


def test_job_bandwidth_full_rate_then_cut_at_a_leaf(demo):
    state, snap = demo
    job = snap.jobs[0]
    healthy = _with_links(state, snap, np.ones(state.n_links, bool), np.zeros(state.n_links))
    bw = fabric.job_bandwidth(state, healthy, job)
    assert bw["per_gpu_gbps"] == pytest.approx(state.nic_gbps) and bw["limiting_tier"] == "none"
    leaf = int(state.gpu_leaf[job.gpu_ids[0]])
    up = np.ones(state.n_links, bool)
    up[state.link_a == leaf] = False
    cut = fabric.job_bandwidth(state, _with_links(state, snap, up, np.zeros(state.n_links)), job)
    assert cut["per_gpu_gbps"] < state.nic_gbps
    assert cut["limiting_tier"] == "leaf" and cut["worst"] == state.switch_name[leaf]


def test_core_matrix_uses_downlinks(colossus):
    state, snap = colossus
    fig = fabric.switch_matrix_figure(state, snap, 2)
    assert "downlink" in fig.layout.title.text
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isfinite(z).sum() == int((state.switch_tier == 2).sum())


def test_a_link_to_a_switch_opens_its_own_tier(page_module, demo_view, view_request, find):
    """``/fabric?switch=<spine>`` (what search links to) shows the spine tier; an explicit tier is kept."""
    from dashboard import ids

    fabric = page_module("fabric")
    spine = demo_view.state.switch_name[int(np.flatnonzero(demo_view.state.switch_tier == TIER_SPINE)[0])]
    with view_request(demo_view):
        assert find(fabric.layout(switch=spine), ids.Fabric.TIER).value == "spine"
        assert find(fabric.layout(tier="leaf", switch=spine), ids.Fabric.TIER).value == "leaf"
        assert find(fabric.layout(), ids.Fabric.TIER).value == "leaf"

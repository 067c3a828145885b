"""Which equipment is dead, off or alone: from the twin's detail, or inferred from loads."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from dashboard.analysis.equipment import cdu_lost, cdu_off, inferred_power_live, no_redundancy, power_status, rack_off
from dashboard.present.ordering import order_by
from tests.dashboard import page_snapshots
from twin.engine.snapshot import GPU_OFF


@pytest.fixture(scope="module")
def demo():
    state = page_snapshots.site("demo")
    return state, page_snapshots.snapshot(state, seed=6)


def test_twin_detail_wins_and_the_surviving_feed_is_alone(demo):
    state, snap = demo
    bw_a, bw_b = state.power_name.index("H1-BW-R01-A"), state.power_name.index("H1-BW-R01-B")
    live = np.ones(state.n_power, dtype=bool)
    live[bw_a] = False
    sources = np.array([True, False, True, True])
    status = power_status(state, snap, SimpleNamespace(power_live=live, source_live=sources))
    assert status.from_twin and not status.power_live[bw_a] and not status.source_live[1]
    # the racks of row 1 are fed by BW-R01-A and BW-R01-B: B now carries them alone, nothing else does
    assert np.flatnonzero(status.no_redundancy).tolist() == [bw_b]


def test_without_detail_a_dead_element_is_unloaded_below_a_dead_one(demo):
    state, snap = demo
    swgr = state.power_name.index("H1-SWGR-A")
    below = np.flatnonzero(
        np.isin(state.power_name, ["H1-SWGR-A", "H1-TX1-A", "H1-UPS1-A", "H1-BW-R01-A", "H1-BW-R02-A"])
    )
    load = snap.feed_power_kw.copy()
    load[below] = 0.0
    # H1-SWGR-A hangs off MV-A, which is loaded: an idle subtree under a live parent is not dead
    assert inferred_power_live(state, replace(snap, feed_power_kw=load)).all()
    mv_a = state.power_name.index("MV-A")
    assert state.power_parent[swgr] == mv_a
    load[mv_a] = 0.0
    fed = state.source_bus == mv_a
    sources = snap.source_power_mw.copy()
    sources[fed] = 0.0
    live = inferred_power_live(state, replace(snap, feed_power_kw=load, source_power_mw=sources))
    assert sorted(np.flatnonzero(~live).tolist()) == sorted([mv_a, *below.tolist()])
    status = power_status(state, replace(snap, feed_power_kw=load, source_power_mw=sources), detail=None)
    assert not status.from_twin and status.source_live.all()


def test_no_redundancy_needs_one_live_and_one_dead_feed(demo):
    state, _snap = demo
    live = np.ones(state.n_power, dtype=bool)
    assert not no_redundancy(state, live).any()
    live[state.rack_feed_a[0]] = False
    live[state.rack_feed_b[0]] = False  # both feeds dead: the racks are dark, nobody carries them
    assert not no_redundancy(state, live).any()


def test_lost_cdus_and_off_racks(demo):
    state, snap = demo
    pumps = snap.pumps_running_count.copy()
    pumps[3] = 0
    assert np.flatnonzero(cdu_lost(state, replace(snap, pumps_running_count=pumps))).tolist() == [3]
    gpu_state = snap.gpu_state.copy()
    gpu_state[state.gpu_rack == 5] = GPU_OFF
    gpu_state[np.flatnonzero(state.gpu_rack == 6)[0]] = GPU_OFF  # one GPU off does not make the rack off
    off_snap = replace(snap, gpu_state=gpu_state)
    assert np.flatnonzero(rack_off(state, off_snap)).tolist() == [5]
    cdu = int(state.rack_cdu[5])
    expected = [cdu] if (state.rack_cdu == cdu).sum() == 1 else []
    assert np.flatnonzero(cdu_off(state, off_snap)).tolist() == expected


def test_ties_are_broken_by_name():
    names = ["c", "a", "b", "d"]
    values = np.array([1.0, 2.0, 1.0, np.nan])
    assert order_by([-values], names).tolist() == [1, 2, 0, 3]  # 2.0, then the 1.0 tie b before c, NaN last
    assert order_by([-values], names, np.array([0, 2])).tolist() == [2, 0]

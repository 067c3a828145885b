"""The overview's "GPUs running" is the fleet's allocation less the GPUs down, at the same tick."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from dashboard.analysis.aggregates import gpus_running
from ingest.live.fleet import LiveFleet, LiveMix
from ingest.live.runtime import build_hub
from ingest.synthetic.faults import parse_fault
from twin.engine.snapshot import GPU_DOWN, GPU_OFF

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
SMALL_MIX = LiveMix(jobs_per_day=400_000.0, n_pretrain=0, warmup_s=3600.0, median_run_s=600.0, mean_run_s=3600.0)


def _xid(state, gpu: int, start_s: float):
    return parse_fault(state, f"xid:{state.node_name[state.gpu_node[gpu]]}/{state.gpu_index[gpu]}@{start_s:g}=79")


@pytest.mark.slow
def test_gpus_running_follow_the_fleet_occupancy_tick_by_tick(tmp_path, page_module):
    tiles_of = page_module("overview").tiles_of  # what the page renders
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'o.db'}", start=T0, seed=1, record=False)
    hub.ticker.fleet = LiveFleet(hub.state, T0, mix=SMALL_MIX)  # small jobs: part of the site stays free
    hub.ticker.synthetic.in_job[:] = False
    fleet = hub.ticker.fleet
    busy = np.flatnonzero(fleet.occupancy.gpu_job >= 0)
    free = np.flatnonzero(fleet.occupancy.gpu_job < 0)
    assert busy.size > 100 and free.size > 10
    # one GPU of a running job and one free GPU fall off the bus at 3 s
    hub.ticker.synthetic.faults.extend([_xid(hub.state, int(busy[0]), 3.0), _xid(hub.state, int(free[0]), 3.0)])
    seen_down = 0
    for s in range(0, 14):
        hub.step(T0 + timedelta(seconds=s))
        snap = hub.view.latest_tick().snapshot
        occ = fleet.occupancy
        allocated = occ.gpu_job >= 0
        down = (snap.gpu_state == GPU_DOWN) | (snap.gpu_state == GPU_OFF)
        expected = occ.gpus_allocated_count - int((allocated & down).sum())
        tile = tiles_of(hub.view)["gpus_ok"]
        assert tile.value == f"{expected:,}", s
        assert f"of {occ.gpus_allocated_count:,} allocated" in tile.note
        assert expected < int((snap.gpu_state != GPU_OFF).sum())  # idle GPUs are on, not running
        seen_down += int((allocated & down).sum())
        assert tile.status == ("warning" if (allocated & down).any() else "ok")
    assert seen_down > 0  # the failed GPU of the job counted out


def test_without_a_fleet_the_placed_jobs_are_the_allocation(demo_snapshot):
    job = demo_snapshot.jobs[0]
    running, allocated = gpus_running(demo_snapshot)
    assert allocated == np.unique(job.gpu_ids).size
    state = demo_snapshot.gpu_state.copy()
    up = job.gpu_ids[(state[job.gpu_ids] != GPU_DOWN) & (state[job.gpu_ids] != GPU_OFF)]
    assert running == up.size
    state[up[:3]] = GPU_DOWN
    state[up[3]] = GPU_OFF
    assert gpus_running(replace(demo_snapshot, gpu_state=state)) == (running - 4, allocated)


@pytest.mark.slow
def test_on_colossus_the_twin_sheds_the_racks_without_fleet_jobs_first(tmp_path, page_module):
    # the 43 MW supply binds: the shortfall policy powers off racks; it used to take the fleet's jobs for
    # idle racks (only the placed job counted), and the plant got the fleet's occupancy 5 s late
    tiles_of = page_module("overview").tiles_of
    hub = build_hub("colossus", f"sqlite:///{tmp_path / 'c.db'}", start=T0, seed=0, record=False)
    fleet = hub.ticker.fleet
    for s in range(0, 11):
        hub.step(T0 + timedelta(seconds=s))
        snap = hub.view.latest_tick().snapshot
        allocated = fleet.occupancy.gpu_job >= 0
        out = (snap.gpu_state == GPU_DOWN) | (snap.gpu_state == GPU_OFF)
        assert not (allocated & out).any(), s
        assert (snap.gpu_state == GPU_OFF).sum() > 50_000  # racks without work are off
        assert tiles_of(hub.view)["gpus_ok"].value == f"{int(allocated.sum()):,}"
        assert all(job.tokens_per_s > 0 for job in snap.jobs)

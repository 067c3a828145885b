"""The occupancy updated job by job equals the occupancy rebuilt from scratch, through starts, ends,
node failures, restarts and a demand-response cut of the caps."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.live import fleet_occupancy
from ingest.live.fleet import LiveFleet, LiveMix
from ingest.live.fleet_occupancy import REBUILD_JOBS, OccupancyBuilder
from twin.fleet import failures
from twin.fleet.policy import DemandResponse, Policy
from twin.fleet.state import RUNNING
from twin.site.load import load_site

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
MIX = LiveMix(jobs_per_day=400_000.0, n_pretrain=0, warmup_s=3600.0, median_run_s=600.0, mean_run_s=3600.0)


def _from_scratch(run):
    """Per GPU: utilisation of its job (0 free or restarting) and its cap (NaN none)."""
    gj = run.cluster.gpu_job
    job = np.maximum(gj, 0)
    on = (gj >= 0) & (run.status[job] == RUNNING)
    util = np.where(on & (run.resume_s[job] <= run.now_s), run.table.util_frac[job], 0.0)
    cap = np.where(on & np.isfinite(run.cap_w[job]), run.cap_w[job], math.nan)
    return util, cap


class _Counted(OccupancyBuilder):
    """Counts its rebuilds and its updates that changed something."""

    def __init__(self, run) -> None:
        super().__init__(run)
        self.paths = {"rebuild": 0, "update": 0}

    def _rebuild(self, *args) -> None:
        self.paths["rebuild"] += 1
        super()._rebuild(*args)

    def _update(self, gone, changed, *args) -> None:
        self.paths["update"] += int(gone.size + changed.size > 0)
        super()._update(gone, changed, *args)


@pytest.mark.parametrize("rebuild_jobs", [REBUILD_JOBS, 12, 0])
@pytest.mark.slow
def test_updates_job_by_job_equal_a_rebuild(monkeypatch, rebuild_jobs):
    monkeypatch.setattr(fleet_occupancy, "REBUILD_JOBS", rebuild_jobs)
    state = load_site("demo")
    dr = DemandResponse(start_s=MIX.warmup_s + 40.0, duration_s=60.0, cut_mw=0.4 * state.source_capacity_mw.sum())
    fleet = LiveFleet(state, T0, mix=MIX, policy=Policy(demand_response=(dr,)))
    sim = fleet.sim
    busy_nodes = np.unique(state.gpu_node[sim.run.cluster.gpu_job >= 0])[:6]
    times = MIX.warmup_s + np.arange(5.0, 35.0, 5.0)  # six nodes fail, one every 5 s
    sim._fails = failures.FailureDraw(
        times, busy_nodes, np.zeros(6, np.int64), np.full(6, 600.0), np.zeros(sim.run.topo.n_nodes, bool)
    )
    sim._next_fail = 0
    every_tick, every_7 = _Counted(sim.run), _Counted(sim.run)
    before = sim.counts["node_failures_count"]
    for s in range(1, 151):
        fleet.advance(T0 + timedelta(seconds=s))
        rows = sim.running_rows()
        ticks = [every_tick] + ([every_7] if s % 7 == 0 else [])
        for builder in ticks:
            occ = builder.refresh(rows, s)
            util, cap = _from_scratch(sim.run)
            assert np.array_equal(occ.gpu_util_frac, util), s
            assert np.array_equal(occ.gpu_power_limit_w, cap, equal_nan=True), s
        live = fleet.occupancy  # the fleet's own, refreshed at most every 5 s
        assert live.gpus_allocated_count == int((sim.run.cluster.gpu_job >= 0).sum())
    assert sim.counts["node_failures_count"] - before == 6
    assert int(sim.run.restarts.sum()) > 0 and sim.dr_reports  # jobs restarted; the cut capped or requeued
    for builder in (every_tick, every_7):
        assert set(builder._gpus) == set(builder.rows.tolist())  # it keeps the GPUs of its own rows only
        done = builder.paths
        assert done["rebuild"] > 0 if rebuild_jobs < 76 else done["rebuild"] == 0  # demo: ~76 jobs running
        assert done["update"] > 0 if rebuild_jobs > 0 else done["update"] == 0

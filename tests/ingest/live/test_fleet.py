"""The live fleet: the model beside the tick, its occupancy in the twin, its frame, Slurm's queue instead."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from dashboard.analysis.fleet_query import query_jobs
from ingest.live.fleet import LiveFleet, LiveMix
from ingest.live.fleet_slurm import frame_from_slurm
from ingest.live.runtime import build_hub, place_default_job
from ingest.sources.slurm_records import SlurmJob, SlurmNode, SlurmSnapshot
from twin.engine.snapshot import GPU_OFF
from twin.fleet.power import supply_mw
from twin.fleet.state import RUNNING
from twin.site.load import load_site

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
# the demo site's default job fills it: a mix without pretraining shows the small jobs
SMALL_MIX = LiveMix(jobs_per_day=400_000.0, n_pretrain=0, warmup_s=3600.0, median_run_s=600.0, mean_run_s=3600.0)


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def test_first_pretraining_run_is_the_placed_job(demo):
    placed = place_default_job(demo)[0]
    fleet = LiveFleet(demo, T0, placed_gpu_ids=placed.gpu_ids, mix=LiveMix(warmup_s=1800.0))
    run = fleet.sim.run
    j = run.table.index["pretrain-0"]
    assert run.status[j] == RUNNING
    assert np.array_equal(np.sort(run.gpus[j]), np.sort(placed.gpu_ids))
    frame = fleet.frame()
    row = int(np.flatnonzero(frame.jobs["job_id"] == "pretrain-0")[0])
    assert frame.jobs["state"][row] == "running"
    assert (frame.gpu_job[placed.gpu_ids] == row).all()


def test_the_placed_job_runs_at_full_power_budgeted_at_its_peak(demo):
    placed = place_default_job(demo)[0]
    fleet = LiveFleet(demo, T0, placed_gpu_ids=placed.gpu_ids, mix=LiveMix(warmup_s=1800.0))
    sim, run = fleet.sim, fleet.sim.run
    power = sim.power
    j = run.table.index["pretrain-0"]
    # the budget is the sustained generation: the grid's 0.6 MW and two 0.25 MW generators, not the battery
    assert supply_mw(demo) == pytest.approx(1.1) and power.base_supply_mw == pytest.approx(1.1)
    training = run.table.jobs[j].training
    # budgeted at its GPUs' busy power (the swing's peak), more than the whole IT budget of the demo
    assert power.full_w[j] > int(run.table.n_gpus[j]) * training.hardware.busy_power_w
    assert power.full_w[j] > power.it_budget_w()
    for s in range(0, 600, 5):
        fleet.advance(T0 + timedelta(seconds=s))
        assert run.status[j] == RUNNING and run.cap_w[j] == math.inf  # pinned: never capped nor requeued
    assert power.running_floor_w == pytest.approx(float(power.floor_w[sim.running_rows()].sum()))


@pytest.mark.slow
def test_occupancy_agrees_with_the_frame_and_moves_with_time(demo):
    fleet = LiveFleet(demo, T0, mix=SMALL_MIX)
    frame = fleet.frame()
    running = frame.jobs["state"] == "running"
    assert running.sum() > 20 and (frame.jobs["state"] == "pending").sum() > 0
    assert int((frame.gpu_job >= 0).sum()) == int(frame.jobs["n_gpus"][running].sum())
    occ = fleet.occupancy
    assert occ.gpus_allocated_count == int((frame.gpu_job >= 0).sum())
    assert (occ.gpu_util_frac[occ.gpu_job < 0] == 0).all()
    before = set(frame.jobs["job_id"][running].tolist())
    for s in range(1, 121):
        fleet.advance(T0 + timedelta(seconds=s))
    after = fleet.frame()
    assert after.ts_s == pytest.approx(T0.timestamp() + 120)
    assert set(after.jobs["job_id"][after.jobs["state"] == "running"].tolist()) != before
    pending = after.jobs["state"] == "pending"
    assert all(after.jobs["reason"][pending])  # every pending job says why


@pytest.mark.slow
def test_hub_twin_runs_the_fleet(tmp_path):
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'h.db'}", start=T0, seed=1, record=False, fleet=False)
    bare = hub.step(T0)
    hub2 = build_hub("demo", f"sqlite:///{tmp_path / 'f.db'}", start=T0, seed=1, record=False)
    hub2.ticker.fleet = LiveFleet(hub2.state, T0, mix=SMALL_MIX)  # small jobs, not the site-filling default
    hub2.ticker.synthetic.in_job[:] = False
    for s in range(0, 12):
        snap = hub2.step(T0 + timedelta(seconds=s))
    assert hub.view.fleet() is None and hub2.view.fleet() is not None
    occ = hub2.ticker.fleet.occupancy
    busy = occ.gpu_util_frac > 0.5
    # the twin's GPUs draw power where the fleet runs jobs, idle elsewhere; none is powered off for idling
    assert snap.gpu_power_w[busy].mean() > 1.5 * snap.gpu_power_w[occ.gpu_job < 0].mean()
    assert (snap.gpu_state != GPU_OFF).sum() >= (bare.gpu_state != GPU_OFF).sum()


@pytest.mark.slow
def test_query_pages_sorts_and_searches(demo):
    frame = LiveFleet(demo, T0, mix=SMALL_MIX).frame()
    desc = query_jobs(frame, "all", "", [{"column_id": "n_gpus", "direction": "desc"}], 0, 10)
    assert desc.total_count == frame.n_jobs and len(desc.rows) == 10
    assert desc.rows[0]["n_gpus"] == frame.jobs["n_gpus"].max()
    gpus = [r["n_gpus"] for r in desc.rows]
    assert gpus == sorted(gpus, reverse=True)
    pages = [query_jobs(frame, "all", "", None, p, 10).rows for p in range(desc.page_count)]
    assert sum(len(p) for p in pages) == frame.n_jobs
    assert len({r["job_id"] for p in pages for r in p}) == frame.n_jobs
    team = frame.teams[1]["team"]
    hit = query_jobs(frame, "pending", team, None, 0, 200)
    expected = int(((frame.jobs["team"] == team) & (frame.jobs["state"] == "pending")).sum())
    assert hit.total_count == expected and all(r["team"] == team for r in hit.rows)
    assert query_jobs(frame, "all", "no-such-job-anywhere", None, 5).rows == []
    assert query_jobs(frame, "bogus", "", [{"column_id": "nope"}], -3).page == 0  # bad input: first page of all


@pytest.mark.slow
def test_slurm_queue_replaces_the_model(demo):
    node = demo.node_name
    snap = SlurmSnapshot(
        jobs=[
            SlurmJob(1, account="vision", user="ana", state="running", n_gpus_allocated=16, node_ids=(0, 1)),
            SlurmJob(2, account="vision", user="ana", state="pending", reason="Priority", n_gpus_requested=64),
            SlurmJob(3, account="speech", user="bo", state="pending", reason="Resources", n_gpus_requested=8),
            SlurmJob(4, account="speech", user="bo", state="completed", n_gpus_allocated=8),
        ],
        nodes=[
            SlurmNode(node[0], state="allocated", n_gpus_configured=8, n_gpus_allocated=8, node_id=0),
            SlurmNode(node[1], state="allocated", n_gpus_configured=8, n_gpus_allocated=8, node_id=1),
            SlurmNode(node[2], state="idle", state_flags=("drain",), reason="bad HBM", n_gpus_configured=8, node_id=2),
            SlurmNode(node[3], state="mixed", n_gpus_configured=8, n_gpus_allocated=3, node_id=3),
        ],
        read_at=T0,
    )
    frame = frame_from_slurm(demo, snap)
    assert frame.source == "slurm" and frame.n_jobs == 3
    assert list(frame.jobs["reason"]) == ["", "Priority", "Resources"]
    assert int((frame.gpu_job >= 0).sum()) == 16
    assert [n["state"] for n in frame.nodes] == ["drained"] and frame.nodes[0]["reason"] == "bad HBM"
    assert frame.fragmentation["stranded_gpus_count"] == 5
    teams = {t["team"]: t for t in frame.teams}
    assert teams["vision"]["gpus_now_count"] == 16 and teams["speech"]["pending_count"] == 1

    class Poller:
        latest = snap

    fleet = LiveFleet(demo, T0, mix=SMALL_MIX, slurm=Poller())
    assert fleet.frame().source == "slurm"


@pytest.mark.slow
def test_the_plant_runs_the_fleet_from_the_first_tick(tmp_path):
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'first.db'}", start=T0, seed=1, record=False)
    hub.ticker.fleet = LiveFleet(hub.state, T0, mix=SMALL_MIX)
    hub.ticker.synthetic.in_job[:] = False
    assert hub.ticker.synthetic.fleet_util_frac is None
    hub.step(T0)  # the warm-up's occupancy, not 5 s later
    occ = hub.ticker.fleet.occupancy
    assert np.array_equal(hub.ticker.synthetic.fleet_util_frac, occ.gpu_util_frac)
    assert not hub.ticker.fleet.advance(T0 + timedelta(seconds=1))  # then only when it changed

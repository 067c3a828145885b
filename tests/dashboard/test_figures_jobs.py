"""Jobs-page figure builders: step-time breakdown, placement on the floor, bottleneck racks."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.figures import jobs
from tests.dashboard import page_snapshots


@pytest.fixture(scope="module")
def demo():
    state = page_snapshots.site("demo")
    return state, page_snapshots.snapshot(state, seed=9)


@pytest.fixture(scope="module")
def engine_demo():
    return page_snapshots.engine_snapshot("demo")


def test_breakdown_stacks_to_step_time(engine_demo):
    _, snap, _ = engine_demo
    job = snap.jobs[0]
    fig = jobs.breakdown_figure(snap.jobs)
    assert sum(t.x[0] for t in fig.data) == pytest.approx(sum(job.breakdown_s.values()))
    assert fig.data[0].name == "compute"
    names = [t.name for t in fig.data]
    assert names.index("tp comm") < names.index("dp comm") < names.index("bubble") < names.index("throttle loss")


def test_component_labels():
    assert jobs.component_label("dp_comm_s") == "dp comm"
    assert jobs.component_label("throttle_loss") == "throttle loss"


def test_placement_highlights_job_racks(demo):
    state, snap = demo
    job = snap.jobs[0]
    fig = jobs.placement_figure(state, snap, job)
    per_rack = jobs.job_rack_gpus(state, job)
    others, used, bottleneck = fig.data[0], fig.data[1], fig.data[2]
    assert len(used.x) == int((per_rack > 0).sum())
    assert len(others.x) + len(used.x) == state.n_racks
    assert sorted(c[0] for c in used.customdata) == np.flatnonzero(per_rack > 0).tolist()
    assert len(bottleneck.x) == np.asarray(job.bottleneck_racks).size


def test_placement_keeps_bottleneck_trace_when_none(engine_demo):
    state, snap, _ = engine_demo
    job = snap.jobs[0]
    job.bottleneck_racks = np.zeros(0, np.int32)
    fig = jobs.placement_figure(state, snap, job, selected_rack=0)
    assert fig.data[2].name == "bottleneck racks" and len(fig.data[2].x) == 0
    assert fig.data[3].name == "selected"


def test_placement_key_follows_gpus(demo):
    state, snap = demo
    job = snap.jobs[0]
    key = jobs.placement_key(state, job)
    moved = page_snapshots.snapshot(state, seed=9, job_gpu_frac=0.5).jobs[0]
    assert jobs.placement_key(state, job) == key
    assert jobs.placement_key(state, moved) != key


def test_bottleneck_rows_by_hand(demo):
    state, snap = demo
    job = snap.jobs[0]
    rows = jobs.bottleneck_rows(state, snap, job)
    assert [r["rack"] for r in rows] == [state.rack_name[r] for r in job.bottleneck_racks]
    r0 = int(job.bottleneck_racks[0])
    in_rack = job.gpu_ids[state.gpu_rack[job.gpu_ids] == r0]
    assert rows[0]["job_gpus"] == in_rack.size
    assert rows[0]["slowest_pct"] == pytest.approx(float(snap.throttle_frac[in_rack].min()) * 100, abs=0.05)


def test_stalled_job_is_said_not_drawn_empty(engine_demo):
    _, snap, _ = engine_demo
    job = snap.jobs[0]
    stalled = type(job)(**{**job.__dict__, "step_time_s": float("inf"), "breakdown_s": {}})
    fig = jobs.breakdown_figure([stalled])
    assert "stalled" in fig.layout.annotations[0].text
    assert not jobs.breakdown_figure([job]).layout.annotations

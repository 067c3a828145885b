"""The engine's swing phase: placed jobs' phase shapes at the throttled busy power, cached by job status."""

from __future__ import annotations

import numpy as np
import pytest

from twin.engine.tick import PlacedJob, TickInputs, TwinEngine
from twin.physics import swing
from twin.site.load import DATA_DIR, load_site
from twin.training import jobgoodput, jobphases, phases
from twin.training.jobfile import load_job


@pytest.fixture(scope="module")
def demo():
    state = load_site("demo")
    job = load_job(DATA_DIR / "jobs" / "demo-70b-1k.toml")
    return state, PlacedJob(job, np.arange(state.n_gpus))


def test_placed_job_swing_comes_from_its_phases(demo):
    state, placed = demo
    eng = TwinEngine(state)
    status = eng.tick(1.0, TickInputs(jobs=[placed])).jobs[0]
    sw = eng.detail.swing
    shape = next(v for v in eng.jobs.shape_cache.values())
    n = state.n_gpus
    busy = float(np.max(state.gpu_spec_array("tdp_w")))  # nothing throttles on the nominal demo site
    idle = float(np.mean(state.gpu_spec_array("idle_power_w")))
    k = sw.amplitude_mw / (n * shape.swing_frac * (busy - idle) / 1e6)  # facility W per GPU W
    assert 1.0 < k < 1.2  # PSU and distribution losses
    assert sw.period_s == pytest.approx(status.step_time_s)
    # a checkpoint and a restart drop the job from its mean to idle: the same depth
    assert sw.checkpoint_dip_mw == pytest.approx(n * shape.mean_frac * (busy - idle) * k / 1e6)
    assert sw.restart_dip_mw == pytest.approx(sw.checkpoint_dip_mw)
    write_s, restore_s = jobgoodput.checkpoint_times_s(placed.spec, state.n_nodes, jobgoodput.site_storage(state))
    assert sw.checkpoint_dip_s == pytest.approx(write_s)
    assert sw.checkpoint_period_s == pytest.approx(status.checkpoint_interval_s + write_s)
    assert sw.restart_dip_s == pytest.approx(30.0 + 120.0 + restore_s)  # XID detection, drain and swap, restore
    assert sw.restart_surge_mw_per_s == pytest.approx(sw.restart_dip_mw / 120.0)  # back over the 120 s warm-up
    assert sw.dominant_period_s == pytest.approx(status.step_time_s)


def test_job_shape_is_computed_once_per_status(demo, monkeypatch):
    state, placed = demo
    eng = TwinEngine(state)
    calls = []
    real = jobphases.job_shape
    monkeypatch.setattr(jobphases, "job_shape", lambda *a: calls.append(1) or real(*a))
    for _ in range(3):
        eng.tick(1.0, TickInputs(jobs=[placed]))
    assert len(calls) == 1


def test_busy_power_is_the_throttled_power(demo):
    """A power cap of 500 W lowers the swing per unit of shape in proportion to (cap − idle).

    The shape itself moves too: slower compute against the same per-layer communication raises the
    plateau the communication shares.
    """
    state, placed = demo
    idle = float(np.mean(state.gpu_spec_array("idle_power_w")))
    tdp = float(np.max(state.gpu_spec_array("tdp_w")))
    eng = TwinEngine(state)
    eng.tick(1.0, TickInputs(jobs=[placed]))
    full, full_shape = eng.detail.swing.amplitude_mw, list(eng.jobs.shape_cache.values())[-1]
    eng.tick(1.0, TickInputs(jobs=[placed], gpu_power_limit_w=500.0))
    capped, capped_shape = eng.detail.swing.amplitude_mw, list(eng.jobs.shape_cache.values())[-1]
    assert capped_shape.step_s > full_shape.step_s
    per_shape = (capped / capped_shape.swing_frac) / (full / full_shape.swing_frac)
    assert per_shape == pytest.approx((500.0 - idle) / (tdp - idle), rel=0.02)  # k moves a little with load


def test_alignment_is_an_input(demo):
    state, placed = demo
    eng = TwinEngine(state)
    half = np.arange(state.n_gpus // 2)
    shape = phases.profile_stats(phases.two_phase_profile(2.0, 0.8))
    jobs = [swing.SwingJob(half.size, 700.0, 80.0, shape)] * 2
    eng.tick(1.0, TickInputs(swing_jobs=jobs))
    sync = eng.detail.swing
    eng.tick(1.0, TickInputs(swing_jobs=jobs, swing_alignment="independent"))
    indep = eng.detail.swing
    assert indep.amplitude_mw == pytest.approx(sync.amplitude_mw / np.sqrt(2.0), rel=1e-3)
    assert sync.jobs_in_phase and not indep.jobs_in_phase


def test_evaluations_of_the_job_file_dip_the_swing(demo):
    import dataclasses

    state, placed = demo
    rel = dataclasses.replace(placed.spec.reliability, eval_interval_s=600.0, eval_s=30.0)
    job = PlacedJob(dataclasses.replace(placed.spec, reliability=rel), placed.gpu_ids)
    eng = TwinEngine(state)
    eng.tick(1.0, TickInputs(jobs=[job]))
    sw = eng.detail.swing
    assert sw.eval_dip_s == 30.0
    # evaluation at power fraction 0.5: dip = (mean − 0.5) / mean of the checkpoint dip (mean − 0)
    shape = next(v for v in eng.jobs.shape_cache.values())
    assert sw.eval_dip_mw == pytest.approx(
        sw.checkpoint_dip_mw * (shape.mean_frac - phases.EVAL_POWER_FRAC) / shape.mean_frac
    )


def test_a_capped_job_draws_its_mean_under_the_cap_and_swings_from_the_cap(demo):
    """A 300 W cap on the demo job: each GPU computes at 300 W and waits near idle, so its board power over the
    tick is P_idle + u (300 − P_idle), below the cap; the swing's busy level is the cap itself."""
    state, placed = demo
    idle = float(np.mean(state.gpu_spec_array("idle_power_w")))
    eng = TwinEngine(state)
    snap = eng.tick(1.0, TickInputs(jobs=[placed], gpu_power_limit_w=300.0, gpu_util_frac=0.9))
    assert snap.gpu_power_w == pytest.approx(idle + 0.9 * (300.0 - idle))
    shape = list(eng.jobs.shape_cache.values())[-1]
    sw = eng.detail.swing
    k = sw.amplitude_mw / (state.n_gpus * shape.swing_frac * (300.0 - idle) / 1e6)
    assert 1.0 < k < 1.2  # the facility factor of PSU and distribution losses, as at full power


def test_a_job_is_evaluated_again_only_when_its_gpus_or_links_change(demo, monkeypatch):
    from twin.training import sitejob

    state, placed = demo
    eng = TwinEngine(state)
    calls = []
    real = sitejob.evaluate_site_job
    monkeypatch.setattr(sitejob, "evaluate_site_job", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(3):
        eng.tick(1.0, TickInputs(jobs=[placed]))
    assert len(calls) == 1
    eng.tick(1.0, TickInputs(jobs=[placed], failed_links=[0]))
    eng.tick(1.0, TickInputs(jobs=[placed], gpu_power_limit_w=400.0))
    assert len(calls) == 3


def test_the_projection_puts_the_placed_job_into_the_swing():
    """colossus: the 405B job's 2.84 s checkpoint every 150.5 s of training drops the whole job, ~10 MW."""
    from twin.scenario.conditions import Scenario
    from twin.scenario.projection import project

    rep = project(load_site("colossus"), Scenario())
    sw = rep.swing
    assert sw.swing_period_s == pytest.approx(rep.job.step_time_s)
    assert sw.checkpoint_dip_s == pytest.approx(2.84, abs=0.01)
    assert sw.checkpoint_period_s == pytest.approx(rep.job.checkpoint_interval_s + sw.checkpoint_dip_s)
    assert 8.0 < sw.checkpoint_dip_mw < 12.0 and sw.restart_dip_mw == pytest.approx(sw.checkpoint_dip_mw)
    # the pipeline's fill and drain: far below the 10 × amplitude of a 0.1 s edge
    assert sw.swing_ramp_mw_per_s < 3.0 * sw.swing_amplitude_mw

"""Tests of twin/physics/swing.py: amplitude, ramp, frequency content, dips and what supply can follow."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.physics import swing as sw
from twin.training import phases

KIND = np.array([0, 1, 2])  # grid, generator, battery
CAP = np.array([10.0, 5.0, 2.0])
RAMP = np.array([1.0, 0.5, 100.0])


def _job(
    n: int,
    busy_w: float = 700.0,
    idle_w: float = 100.0,
    step_s: float = 2.0,
    compute_frac: float = 0.8,
    schedule: phases.JobSchedule | None = None,
) -> sw.SwingJob:
    """A 2-phase job: compute at busy power, the rest at idle (low fraction 0)."""
    profile = phases.two_phase_profile(step_s, compute_frac, low_power_frac=0.0)
    return sw.SwingJob(n, busy_w, idle_w, phases.profile_stats(profile, schedule))


def test_amplitude_and_ramp_hand_point():
    job = _job(1000)  # 1000 × (700 − 100) W = 0.6 MW
    assert sw.job_amplitude_mw(job) == pytest.approx(0.6)
    assert sw.job_amplitude_mw(job, facility_w_per_gpu_w=1.1) == pytest.approx(0.66)
    # the grid imports 9.6 of its 10 MW: it follows 0.4 MW at once (stiff), within its contract
    rep = sw.project_swing([job], KIND, CAP, RAMP, np.array([9.6, 0.0, 0.0]), np.array([True, True, False]))
    assert rep.ramp_mw_per_s == pytest.approx(0.6 / sw.EDGE_S)
    assert rep.phase_s == pytest.approx(0.4)  # the shorter (communication) phase
    # the generator follows 0.5 MW/s × 0.4 s = 0.2 MW, the grid its 0.4 MW of headroom: exactly enough
    assert rep.followable_mw == pytest.approx(0.6) and rep.within_limits


def test_two_phase_amplitude_from_the_waveform_equals_the_hand_value():
    """1,000 GPUs, busy 650 W, idle 80 W, communication at 0.15: ΔP = 1000 · 0.85 · 570 W · 1.1 = 0.53295 MW."""
    job = phases.two_phase_swing_job(1000, 2.0, 0.85, 650.0, 80.0)
    assert sw.job_amplitude_mw(job, 1.1) == pytest.approx(0.53295)
    _, w = phases.waveform_w(phases.two_phase_profile(2.0, 0.85), None, 20.0, 0.01, 650.0, 80.0)
    assert 1000 * (w.max() - w.min()) * 1.1 / 1e6 == pytest.approx(0.53295, rel=1e-9)


def test_battery_buffers_the_shortfall():
    job = _job(10_000)  # 6 MW swing
    at_limit = np.array([10.0, 0.0, 0.0])  # the grid at its import limit: no room to follow
    no_battery = sw.project_swing([job], KIND, CAP, RAMP, at_limit, np.array([True, True, False]))
    assert no_battery.shortfall_mw == pytest.approx(6.0 - 0.2) and not no_battery.within_limits
    with_battery = sw.project_swing(
        [job], KIND, CAP, RAMP, at_limit, np.ones(3, bool), battery_soc_frac=np.array([np.nan, np.nan, 0.5])
    )
    assert with_battery.battery_headroom_mw == pytest.approx(2.0)
    assert with_battery.shortfall_mw == pytest.approx(6.0 - 0.2 - 2.0)
    empty = sw.project_swing(
        [job], KIND, CAP, RAMP, at_limit, np.ones(3, bool), battery_soc_frac=np.array([np.nan, np.nan, 0.0])
    )
    assert empty.battery_headroom_mw == 0.0


def test_alignment_synchronised_adds_independent_adds_in_quadrature():
    jobs = [_job(1000), _job(1000, step_s=3.0)]  # 0.6 MW each
    live = np.ones(3, bool)
    sync = sw.project_swing(jobs, KIND, CAP, RAMP, np.zeros(3), live)
    indep = sw.project_swing(jobs, KIND, CAP, RAMP, np.zeros(3), live, alignment="independent")
    assert sync.amplitude_mw == pytest.approx(1.2) and sync.jobs_in_phase
    assert indep.amplitude_mw == pytest.approx(0.6 * math.sqrt(2.0)) and not indep.jobs_in_phase
    assert indep.ramp_mw_per_s == pytest.approx(indep.amplitude_mw / sw.EDGE_S)
    with pytest.raises(ValueError, match="alignment"):
        sw.project_swing(jobs, KIND, CAP, RAMP, np.zeros(3), live, alignment="random")


def test_checkpoint_and_restart_dips_hand_computed():
    """Mean power fraction 0.8 (duty 0.8, low 0): a checkpoint drops 1000 × 0.8 × 600 W = 0.48 MW for the write."""
    sch = phases.JobSchedule(checkpoint_interval_s=600.0, checkpoint_write_s=12.0, restart_down_s=300.0, warmup_s=120.0)
    jobs = [_job(1000, schedule=sch), _job(2000, schedule=sch)]
    rep = sw.project_swing(jobs, KIND, CAP, RAMP, np.zeros(3), np.ones(3, bool))
    assert rep.checkpoint_dip_mw == pytest.approx(0.48 + 0.96)  # in phase: both jobs write at once
    assert rep.checkpoint_dip_s == 12.0 and rep.checkpoint_period_s == pytest.approx(612.0)
    assert rep.restart_dip_mw == pytest.approx(0.96)  # one job (the largest) restarts
    assert rep.restart_dip_s == 300.0 and rep.restart_surge_mw_per_s == pytest.approx(0.96 / 120.0)
    indep = sw.project_swing(jobs, KIND, CAP, RAMP, np.zeros(3), np.ones(3, bool), alignment="independent")
    assert indep.checkpoint_dip_mw == pytest.approx(0.96)


def test_dominant_line_is_the_step_fundamental():
    """Square wave of height 0.6 MW and duty 0.8: fundamental 2 · 0.6 · sin(0.8 π) / π."""
    rep = sw.project_swing([_job(1000)], KIND, CAP, RAMP, np.zeros(3), np.ones(3, bool))
    assert rep.dominant_period_s == pytest.approx(2.0)
    assert rep.dominant_line_mw == pytest.approx(2 * 0.6 * math.sin(0.8 * math.pi) / math.pi)


def test_invalid_job_raises():
    with pytest.raises(ValueError):
        phases.two_phase_swing_job(10, 0.0, 0.5, 700.0, 100.0)

"""Tests of twin/physics/swing.py: amplitude, ramp and what supply can follow."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import swing as sw
KIND = np.array([0, 1, 2])  # grid, generator, battery
CAP = np.array([10.0, 5.0, 2.0])
RAMP = np.array([1.0, 0.5, 100.0])


def test_amplitude_and_ramp_hand_point():
    job = sw.SwingJob(n_gpus=1000, step_time_s=2.0, compute_frac=0.8, busy_w=700.0, comm_w=100.0)
    assert sw.job_amplitude_mw(job) == pytest.approx(0.6)
    assert sw.job_amplitude_mw(job, facility_w_per_gpu_w=1.1) == pytest.approx(0.66)
    rep = sw.project_swing([job], KIND, CAP, RAMP, np.zeros(3), np.array([True, True, False]))
    assert rep.ramp_mw_per_s == pytest.approx(0.6 / sw.EDGE_S)
    assert rep.phase_s == pytest.approx(0.4)  # the shorter (communication) phase
    # generation follows 1.5 MW/s × 0.4 s = 0.6 MW: exactly enough
    assert rep.followable_mw == pytest.approx(0.6) and rep.within_limits


def test_battery_buffers_the_shortfall():
    job = sw.SwingJob(10_000, 2.0, 0.8, 700.0, 100.0)  # 6 MW swing
    no_battery = sw.project_swing([job], KIND, CAP, RAMP, np.zeros(3), np.array([True, True, False]))
    assert no_battery.shortfall_mw == pytest.approx(6.0 - 0.6) and not no_battery.within_limits
    with_battery = sw.project_swing([job], KIND, CAP, RAMP, np.zeros(3), np.ones(3, bool),
                                    battery_soc_frac=np.array([np.nan, np.nan, 0.5]))
    assert with_battery.battery_headroom_mw == pytest.approx(2.0)
    assert with_battery.shortfall_mw == pytest.approx(6.0 - 0.6 - 2.0)
    empty = sw.project_swing([job], KIND, CAP, RAMP, np.zeros(3), np.ones(3, bool),
                             battery_soc_frac=np.array([np.nan, np.nan, 0.0]))
    assert empty.battery_headroom_mw == 0.0


def test_invalid_job_raises():
    with pytest.raises(ValueError):
        sw.job_amplitude_mw(sw.SwingJob(10, 0.0, 0.5, 700.0, 100.0))

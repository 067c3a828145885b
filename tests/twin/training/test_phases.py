"""Tests of twin/training/phases.py: the job's GPU power through its phases, by hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.errors import InputError
from twin.training import phases as ph

BUSY_W, IDLE_W = 650.0, 80.0


def _three_segment() -> ph.StepProfile:
    """0.6 s compute (1.0), 0.2 s communication (0.15), 0.2 s optimizer (0.5): mean 0.73."""
    return ph.StepProfile((("compute", 0.6, 1.0), ("comm", 0.2, 0.15), ("optimizer", 0.2, 0.5)))


def test_waveform_mean_is_the_duty_weighted_phase_power():
    # 80 + (0.6 · 1 + 0.2 · 0.15 + 0.2 · 0.5) · 570 = 80 + 0.73 · 570 = 496.1 W
    t, w = ph.waveform_w(_three_segment(), None, 10.0, 0.01, BUSY_W, IDLE_W)
    assert t.size == 1000 and t[1] == pytest.approx(0.01)
    assert w.mean() == pytest.approx(496.1, rel=1e-12)
    assert w.max() == pytest.approx(650.0) and w.min() == pytest.approx(80.0 + 0.15 * 570.0)
    # the phases in time order inside the step
    assert w[30] == pytest.approx(650.0) and w[70] == pytest.approx(165.5) and w[90] == pytest.approx(365.0)


def test_sample_means_keep_a_segment_shorter_than_the_sample():
    """At 0.5 s samples the 0.2 s segments are averaged, not skipped: the mean is still 496.1 W."""
    _, w = ph.waveform_w(_three_segment(), None, 10.0, 0.5, BUSY_W, IDLE_W)
    assert w.mean() == pytest.approx(496.1, rel=1e-12)
    assert w[1] == pytest.approx(80.0 + (0.1 * 1.0 + 0.2 * 0.15 + 0.2 * 0.5) / 0.5 * 570.0)


def test_checkpoint_dip_depth_and_duration():
    """Checkpoint every 20 s of training, written in 4 s: idle over [20, 24) and [44, 48)."""
    profile = ph.two_phase_profile(2.0, 0.85)  # mean fraction 0.85 + 0.15 · 0.15 = 0.8725
    sch = ph.JobSchedule(checkpoint_interval_s=20.0, checkpoint_write_s=4.0)
    t, w = ph.waveform_w(profile, sch, 60.0, 0.01, BUSY_W, IDLE_W)
    at_idle = np.isclose(w, IDLE_W)
    assert at_idle.sum() * 0.01 == pytest.approx(8.0)
    assert t[at_idle].min() == pytest.approx(20.0) and t[at_idle].max() == pytest.approx(47.99)
    assert not at_idle[(t >= 24.0) & (t < 44.0)].any()
    stats = ph.profile_stats(profile, sch)
    assert stats.checkpoint_dip_frac == pytest.approx(0.8725) and stats.checkpoint_dip_s == 4.0
    assert stats.checkpoint_period_s == 24.0
    # after the write the step resumes where it stopped: compute at busy power (the surge)
    assert w[t.searchsorted(24.0)] == pytest.approx(BUSY_W)
    # over whole checkpoint periods the mean is (20 · 0.8725 + 4 · 0) / 24 of the way to busy
    _, w2 = ph.waveform_w(profile, sch, 48.0, 0.01, BUSY_W, IDLE_W)
    assert w2.mean() == pytest.approx(IDLE_W + 20.0 * 0.8725 / 24.0 * (BUSY_W - IDLE_W), rel=1e-9)


def test_restart_dips_to_idle_then_ramps_back():
    profile = ph.two_phase_profile(1.0, 1.0)  # always busy: the ramp is visible on its own
    sch = ph.JobSchedule(restarts_at_s=(10.0,), restart_down_s=30.0, warmup_s=20.0)
    t, w = ph.waveform_w(profile, sch, 80.0, 0.1, BUSY_W, IDLE_W)
    assert np.allclose(w[(t >= 10.0) & (t < 40.0)], IDLE_W)
    mid = 499  # sample [49.9, 50.0): midpoint 49.95, ramp (49.95 − 40) / 20
    assert w[mid] == pytest.approx(IDLE_W + (9.95 / 20.0) * (BUSY_W - IDLE_W))
    assert np.allclose(w[t >= 60.0], BUSY_W) and np.allclose(w[t < 10.0], BUSY_W)


def test_spectral_peak_at_the_step_period():
    """FFT of the sampled waveform: peak at the 2 s step, amplitude 2 · 0.85 · sin(0.85 π) / π of the swing."""
    profile = ph.two_phase_profile(2.0, 0.85)
    _, f = ph.waveform_frac(profile, None, 64.0, 0.01)
    spectrum = 2.0 * np.abs(np.fft.rfft(f - f.mean())) / f.size
    freq = np.fft.rfftfreq(f.size, 0.01)
    peak = int(np.argmax(spectrum))
    assert 1.0 / freq[peak] == pytest.approx(2.0)
    hand = 2.0 * 0.85 * math.sin(0.85 * math.pi) / math.pi
    assert spectrum[peak] == pytest.approx(hand, rel=1e-3)  # sampling at 10 ms
    periods, amps = ph.fourier_lines(profile)
    assert periods[0] == 2.0 and amps[0] == pytest.approx(hand, rel=1e-12)
    assert 1.0 / freq[np.argsort(spectrum)[-2]] == pytest.approx(1.0)  # the second harmonic next


def test_dominant_line_moves_to_the_checkpoint_train_when_it_is_larger():
    """A step with almost no swing (duty 0.99) and long checkpoints: the checkpoint line dominates."""
    profile = ph.two_phase_profile(2.0, 0.99)
    sch = ph.JobSchedule(checkpoint_interval_s=100.0, checkpoint_write_s=50.0)
    stats = ph.profile_stats(profile, sch)
    assert stats.dominant_period_s == 150.0
    assert stats.dominant_line_frac == pytest.approx(
        2.0 * profile.mean_frac * math.sin(math.pi * 50.0 / 150.0) / math.pi
    )


_BREAKDOWN = {
    "compute": 1.0,
    "throttle_loss": 0.1,
    "tp_comm": 0.2,
    "pp_comm": 0.05,
    "bubble": 0.3,
    "stage_imbalance": 0.05,
    "dp_comm": 0.1,
}


def test_step_profile_from_a_breakdown_splits_off_the_optimizer():
    """Without a pipeline: 0.9 s compute and 0.25 s of per-layer comm share one plateau, optimizer last."""
    p = ph.step_profile(_BREAKDOWN, optimizer_s=0.2)
    assert [s[0] for s in p.segments] == ["compute", "bubble", "dp_comm", "optimizer"]
    assert [s[1] for s in p.segments] == pytest.approx([1.15, 0.35, 0.1, 0.2])
    # the plateau at the duty-weighted power of compute (1.0) and TP/PP comm (0.15)
    assert p.segments[0][2] == pytest.approx((0.9 + 0.25 * 0.15) / 1.15)
    assert p.step_s == pytest.approx(sum(_BREAKDOWN.values()))
    assert p.mean_frac == pytest.approx((0.9 + 0.15 * 0.7 + 0.5 * 0.2) / 1.8)


def test_pipeline_bubble_is_a_staircase_of_stages_with_the_same_mean():
    """4 stages, waits W = 0.35 s: 4 stairs up and 4 down of W/4 each at busy shares 1/8, 3/8, 5/8, 7/8."""
    p = ph.step_profile(_BREAKDOWN, optimizer_s=0.2, pp_stages=4)
    names = [s[0] for s in p.segments]
    assert names == ["fill"] * 4 + ["compute"] + ["drain"] * 4 + ["dp_comm", "optimizer"]
    plateau = (0.9 + 0.25 * 0.15) / 1.15
    fill = [0.15 + (k + 0.5) / 4 * (plateau - 0.15) for k in range(4)]
    assert [s[2] for s in p.segments[:4]] == pytest.approx(fill)
    assert [s[2] for s in p.segments[5:9]] == pytest.approx(fill[::-1])
    assert [s[1] for s in p.segments[:4]] == pytest.approx([0.35 / 4] * 4)
    assert p.segments[4][1] == pytest.approx(1.15 - 0.35)  # the plateau keeps the busy time the ramps do not
    assert p.step_s == pytest.approx(sum(_BREAKDOWN.values()))
    assert p.mean_frac == pytest.approx((0.9 + 0.15 * 0.7 + 0.5 * 0.2) / 1.8)  # the same energy per step
    # the bubble no longer drops the whole job at once: the lowest level is the DP exchange, the highest the plateau
    assert p.max_frac == pytest.approx(plateau) and p.min_frac == pytest.approx(0.15)


def test_short_busy_time_never_reaches_a_full_plateau():
    """Busy 0.2 s per stage, waits 0.6 s: ramps of (0.2 + 0.6)/2 = 0.4 s each peaking at 0.2/0.4 of the stages."""
    p = ph.step_profile({"compute": 0.2, "bubble": 0.6}, pp_stages=2)
    assert [s[1] for s in p.segments if s[0] in ("fill", "drain")] == pytest.approx([0.2] * 4)
    assert [s[2] for s in p.segments[:2]] == pytest.approx([0.15 + 0.25 * 0.5 * 0.85, 0.15 + 0.75 * 0.5 * 0.85])
    assert p.mean_frac == pytest.approx((0.2 + 0.6 * 0.15) / 0.8)


def test_ramp_of_a_full_swing_in_one_change_is_the_swing_over_the_edge_time():
    stats = ph.profile_stats(ph.two_phase_profile(2.0, 0.85))
    assert stats.ramp_frac_per_s == pytest.approx(0.85 / 0.1)
    assert stats.edge_s == pytest.approx(0.1)


def test_ramp_of_stairs_farther_apart_than_the_edge_time_is_one_stair_over_it():
    """Four stairs of 0.25 up, 0.5 s apart: each ramps alone, 0.25 / 0.1 s; the drop at the end is the swing."""
    up = ph.StepProfile(tuple(("fill", 0.5, 0.25 * k) for k in range(1, 5)))
    assert ph.ramp_frac_per_s(up, 0.1) == pytest.approx(0.75 / 0.1)  # the fall from 1.0 to 0.25 at the wrap
    ramp = ph.StepProfile(
        tuple(("fill", 0.5, 0.25 * k) for k in range(1, 5)) + tuple(("drain", 0.5, 0.25 * k) for k in range(4, 0, -1))
    )
    assert ph.ramp_frac_per_s(ramp, 0.1) == pytest.approx(0.25 / 0.1)
    # from 0 to 1 in four stairs 0.02 s apart, back down slowly: the stairs add up within one edge time.
    # f(u) − f(u − 0.1) climbs 0.25, 0.5, 0.75 over [0, 0.06), holds 1 to 0.1 and falls back by 0.16; its
    # largest mean over 0.1 s (the window [0.03, 0.13)) is 0.08 / 0.1 = 0.8: a ramp of 0.8 / 0.1 s, 80 % of a
    # single step's
    fast = ph.StepProfile(
        (("low", 1.0, 0.0),)
        + tuple(("fill", 0.02, 0.25 * k) for k in range(1, 5))
        + (("compute", 1.0, 1.0),)
        + tuple(("drain", 0.5, 0.25 * k) for k in range(3, 0, -1))
    )
    assert ph.ramp_frac_per_s(fast, 0.1) == pytest.approx(8.0)


def test_a_pulse_shorter_than_the_edge_time_ramps_only_by_the_power_it_carries():
    """A 20 ms pulse of 0.5 on a flat step: the smoothed power rises by 0.5 · 0.02/0.1 within an edge time."""
    pulse = ph.StepProfile((("compute", 1.0, 0.2), ("optimizer", 0.02, 0.7)))
    assert ph.ramp_frac_per_s(pulse, 0.1) == pytest.approx(0.5 * 0.02 / 0.1 / 0.1)


def test_pipeline_job_ramps_far_slower_than_a_synchronous_bubble():
    """The 405B colossus job (PP 16): its fill and drain climb stage by stage."""
    from pathlib import Path

    from twin.training import steptime
    from twin.training.jobfile import load_job

    job = load_job(Path(__file__).resolve().parents[3] / "data" / "jobs" / "colossus-405b-24k.toml")
    step = steptime.step_time(job.model, job.parallel, job.hardware)
    staggered = ph.profile_stats(ph.step_profile(step.breakdown_s, step.ops_s["optimizer"], job.parallel.pp))
    synchronous = ph.profile_stats(ph.step_profile(step.breakdown_s, step.ops_s["optimizer"]))
    assert staggered.mean_frac == pytest.approx(synchronous.mean_frac)
    assert synchronous.edge_s == pytest.approx(0.1)
    assert staggered.ramp_frac_per_s < synchronous.ramp_frac_per_s / 4
    assert staggered.edge_s > 0.4


def test_evaluation_pauses_at_given_times_at_the_evaluation_power():
    profile = ph.two_phase_profile(1.0, 1.0)
    sch = ph.JobSchedule(evals_at_s=((5.0, 3.0), (20.0, 2.0)))
    t, f = ph.waveform_frac(profile, sch, 30.0, 0.5)
    assert np.allclose(f[(t >= 5.0) & (t < 8.0)], ph.EVAL_POWER_FRAC)
    assert np.allclose(f[(t >= 20.0) & (t < 22.0)], ph.EVAL_POWER_FRAC)
    assert np.isclose(f, ph.EVAL_POWER_FRAC).sum() == 10
    stats = ph.profile_stats(profile, sch)
    assert stats.eval_dip_frac == pytest.approx(1.0 - ph.EVAL_POWER_FRAC) and stats.eval_dip_s == 3.0


@pytest.mark.parametrize(
    "make",
    [
        lambda: ph.StepProfile((("compute", -1.0, 1.0),)),
        lambda: ph.StepProfile((("compute", 1.0, 1.5),)),
        lambda: ph.StepProfile((("compute", 0.0, 1.0),)),
        lambda: ph.StepProfile(()),
        lambda: ph.JobSchedule(checkpoint_interval_s=0.0),
        lambda: ph.JobSchedule(checkpoint_write_s=float("nan")),
        lambda: ph.JobSchedule(evals_at_s=((float("inf"), 1.0),)),
        lambda: ph.waveform_frac(ph.two_phase_profile(1.0, 0.5), None, 1e9, 0.001),  # too many samples
        lambda: ph.waveform_frac(ph.two_phase_profile(1.0, 0.5), ph.JobSchedule(checkpoint_interval_s=1e-3), 1e5, 1.0),
        lambda: ph.waveform_frac(ph.two_phase_profile(1.0, 0.5), None, 10.0, 0.0),
    ],
)
def test_bad_input_is_refused_with_one_clear_error(make):
    with pytest.raises(InputError) as info:
        make()
    assert "\n" not in str(info.value)


def test_exact_statistics_match_the_sampled_waveform_of_a_modelled_step():
    """Llama 3 405B step from the step-time model: mean, peak-to-peak and the first lines from 1 ms samples."""
    from pathlib import Path

    from twin.training import steptime
    from twin.training.jobfile import load_job

    job = load_job(Path(__file__).resolve().parents[3] / "data" / "jobs" / "llama3-405b-16k.toml")
    step = steptime.step_time(job.model, job.parallel, job.hardware)
    profile = ph.step_profile(step.breakdown_s, step.ops_s["optimizer"])
    stats = ph.profile_stats(profile)
    n_steps, dt = 16, profile.step_s / 4000.0
    _, f = ph.waveform_frac(profile, None, n_steps * profile.step_s, dt)
    f = f[: n_steps * 4000]
    assert f.mean() == pytest.approx(stats.mean_frac, rel=1e-9)
    assert f.max() - f.min() == pytest.approx(stats.swing_frac, rel=1e-9)
    spectrum = 2.0 * np.abs(np.fft.rfft(f - f.mean())) / f.size
    _, lines = ph.fourier_lines(profile, 3)
    assert spectrum[[n_steps, 2 * n_steps, 3 * n_steps]] == pytest.approx(lines, abs=2e-3)
    assert stats.dominant_period_s == pytest.approx(profile.step_s)


def test_after_a_restart_the_next_checkpoint_is_a_full_interval_later():
    """Checkpoints every 20 s of training (2 s writes); a failure at 30 s, 5 s down, 4 s warm-up."""
    profile = ph.two_phase_profile(1.0, 1.0)
    sch = ph.JobSchedule(
        checkpoint_interval_s=20.0, checkpoint_write_s=2.0, restarts_at_s=(30.0,), restart_down_s=5.0, warmup_s=4.0
    )
    t, f = ph.waveform_frac(profile, sch, 80.0, 0.5)
    idle = np.isclose(f, 0.0)
    # checkpoint [20, 22), restart [30, 35), warm-up to 39, then 20 s of training: checkpoint [59, 61)
    assert t[idle].tolist() == [
        20.0,
        20.5,
        21.0,
        21.5,
        30.0,
        30.5,
        31.0,
        31.5,
        32.0,
        32.5,
        33.0,
        33.5,
        34.0,
        34.5,
        59.0,
        59.5,
        60.0,
        60.5,
    ]

"""Tests of twin/training/restart.py: hand-computed restart timelines of one job."""

from __future__ import annotations

import numpy as np
import pytest

from twin.training import restart

IDS = np.array([100, 101, 102, 103])
T = restart.RestartTimings(
    checkpoint_interval_s=100,
    checkpoint_write_s=10,
    restore_s=20,
    hang_timeout_s=60,
    xid_detection_s=5,
    drain_swap_s=30,
    warmup_s=10,
    idle_power_frac=0.2,
)


def run(n_ticks, fail_at=None, xid=True, swap=True, state=None, ids=IDS, timings=T):
    """Tick at 1 Hz; GPU 102 fails at tick ``fail_at`` and stays down until swapped for 900."""
    state = state or restart.new_state()
    ids = ids.copy()
    ticks = []
    for k in range(n_ticks):
        down = (ids == 102) & (fail_at is not None and k >= fail_at)
        state, tick = restart.step(state, ids, down, down & xid, 1.0, timings, tokens_per_s=1000.0)
        if swap and tick.phase == "draining" and 102 in tick.drain_gpu_ids:
            ids[ids == 102] = 900  # the caller binds a hot spare
        ticks.append(tick)
    return state, ticks


def test_healthy_job_checkpoints_on_its_interval():
    _, ticks = run(230)
    phases = [t.phase for t in ticks]
    # progress reaches 100 s after tick 99: ticks 100–109 write, running again from 110; next write at 210
    assert phases[99] == "running" and phases[100:110] == ["checkpointing"] * 10 and phases[110] == "running"
    assert phases[210:220] == ["checkpointing"] * 10
    assert ticks[105].tokens_frac == 0.0 and ticks[105].power_frac == 0.2
    assert ticks[-1].lost_work_s == 0.0 and ticks[-1].failures_total == 0


def test_xid_failure_runs_detection_drain_restore_warmup_with_hand_computed_lost_work():
    _, ticks = run(300, fail_at=140)
    phases = [t.phase for t in ticks]
    # 30 s of progress since the checkpoint that finished at tick 110 is lost at tick 140
    assert phases[140:145] == ["detecting"] * 5
    assert phases[145:175] == ["draining"] * 30
    assert phases[175:195] == ["restoring"] * 20
    assert phases[195:205] == ["warming_up"] * 10
    assert phases[205] == "running"
    assert list(ticks[150].drain_gpu_ids) == [102]
    # warm-up ramps tokens and power: mean over tick k is (k + ½)/10
    assert ticks[195].tokens_frac == pytest.approx(0.05) and ticks[204].tokens_frac == pytest.approx(0.95)
    assert ticks[195].power_frac == pytest.approx(0.2 + 0.8 * 0.05)
    lost = 30 + 5 + 30 + 20 + (10 - 5)  # rollback + detect + drain + restore + warm-up deficit
    assert ticks[205].lost_work_s == pytest.approx(lost)
    assert ticks[205].lost_tokens == pytest.approx(lost * 1000.0)
    assert ticks[-1].failures_total == 1 and ticks[-1].drain_gpu_ids.size == 0
    # power dip while stopped, surge back to full at the end of warm-up
    assert ticks[160].power_frac == 0.2 and ticks[205].power_frac == 1.0


def test_silent_failure_waits_for_the_hang_timeout():
    _, ticks = run(300, fail_at=140, xid=False)
    phases = [t.phase for t in ticks]
    assert phases[140:200] == ["detecting"] * 60 and phases[200] == "draining"


def test_unswapped_gpu_sends_the_restart_back_to_detection():
    _, ticks = run(260, fail_at=140, swap=False)
    phases = [t.phase for t in ticks]
    assert phases[194] == "restoring" and phases[195] == "detecting"  # restarted job hangs on the dead GPU
    assert ticks[-1].failures_total == 2
    assert all(t.tokens_frac == 0.0 for t in ticks[140:])  # without a spare the job never resumes


def test_failure_during_checkpoint_loses_the_unsaved_interval():
    _, ticks = run(120, fail_at=105)
    assert ticks[105].phase == "detecting"
    assert ticks[105].lost_work_s == pytest.approx(100 + 1)  # the whole unsaved interval, plus this tick


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        restart.step(restart.new_state(), IDS, np.zeros(3, bool), np.zeros(4, bool), 1.0, T)
    with pytest.raises(ValueError, match="dt_s"):
        restart.step(restart.new_state(), IDS, np.zeros(4, bool), np.zeros(4, bool), -1.0, T)
    with pytest.raises(ValueError, match="checkpoint_interval_s"):
        restart.RestartTimings(checkpoint_interval_s=0, checkpoint_write_s=1, restore_s=1)


def test_timings_of_a_job_file_come_from_its_goodput():
    from pathlib import Path

    from twin.training import jobgoodput
    from twin.training.jobfile import load_job

    job = load_job(Path(__file__).resolve().parents[3] / "data" / "jobs" / "llama3-405b-16k.toml")
    t = jobgoodput.restart_timings(job, 2048)
    good = jobgoodput.job_goodput(job, 0.0, 2048)
    assert t.checkpoint_interval_s == good["checkpoint_interval_s"]
    assert t.restore_s == good["checkpoint_restore_s"] > 0
    assert t.idle_power_frac == pytest.approx(85.0 / 700.0)

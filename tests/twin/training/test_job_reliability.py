"""A job file's failure rates: catalogue rates per GPU type, an explicit total, the software term, one restart time."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from twin.training import goodput, jobgoodput, restart
from twin.training.jobfile import JobFileError, load_job

REPO = Path(__file__).resolve().parents[3]
LLAMA = REPO / "data" / "jobs" / "llama3-405b-16k.toml"
OPT = REPO / "data" / "jobs" / "opt-175b-992.toml"


def with_reliability(tmp_path, extra: str, base: Path = LLAMA) -> Path:
    text = base.read_text()
    assert "\n[reliability]\n" in text
    path = tmp_path / "job.toml"
    path.write_text(text.replace("\n[reliability]\n", "\n[reliability]\n" + extra + "\n", 1))
    return path


def test_catalogue_rates_per_gpu_type():
    llama, opt = load_job(LLAMA), load_job(OPT)
    assert llama.hw_failures_per_1000_gpu_days == pytest.approx(0.4024)  # Llama 3: 356 / (54 · 16.384)
    assert opt.hw_failures_per_1000_gpu_days == pytest.approx(6.50 / 8)  # RSC-1 A100
    hw, sw = jobgoodput.node_rates_per_1000_node_days(llama)
    assert hw == pytest.approx(8 * 0.4024) and sw == pytest.approx(63 / (54 * 2.048))


def test_llama3_interruptions_come_out_at_the_published_419():
    good = jobgoodput.job_goodput(load_job(LLAMA), 1e6, 2048)
    assert good["interruptions_expected_count"] == pytest.approx(419, rel=1e-3)  # 54-day duration in the file


def test_an_explicit_rate_is_the_jobs_total_rate(tmp_path):
    # 24 h MTTF on 2,048 nodes: 1000 / 2048 per 1,000 node-days; nothing may be added on top
    rate = 1000.0 / 2048.0
    job = load_job(with_reliability(tmp_path, f"failures_per_1000_node_days = {rate!r}"))
    good = jobgoodput.job_goodput(job, 1e6, 2048)
    assert good["job_mttf_h"] == pytest.approx(24.0)
    assert sum(good["interruptions_per_day_by_cause"].values()) == pytest.approx(1.0)
    assert good["interruptions_per_day_by_cause"]["software"] == pytest.approx(63 / 419)
    # Young's interval is that of a 24 h MTTF: √(2 δ · 86,400 s)
    assert good["young_interval_s"] == pytest.approx(math.sqrt(2 * good["checkpoint_write_s"] * 86_400.0))


def test_software_rate_beside_a_total_is_refused(tmp_path):
    path = with_reliability(tmp_path, "failures_per_1000_node_days = 3.0\nsoftware_failures_per_1000_node_days = 1.0")
    with pytest.raises(JobFileError, match="reliability.software_failures_per_1000_node_days"):
        load_job(path)


def test_explicit_software_rate_scales_with_the_job(tmp_path):
    job = load_job(with_reliability(tmp_path, "software_failures_per_1000_node_days = 2.0"))
    big = jobgoodput.job_goodput(job, 1e6, 2048)["interruptions_per_day_by_cause"]["software"]
    small = jobgoodput.job_goodput(job, 1e6, 256)["interruptions_per_day_by_cause"]["software"]
    assert big == pytest.approx(2.0 * 2.048) and small == pytest.approx(big / 8)


def test_one_restart_time_for_goodput_and_the_state_machine(tmp_path):
    assert goodput.DEFAULT_RESTART_S == pytest.approx(30 + 120 + 120 / 2)
    job = load_job(LLAMA)
    assert job.reliability.restart_s == goodput.DEFAULT_RESTART_S
    t = jobgoodput.restart_timings(job, 2048)
    assert restart.restart_overhead_s(t.xid_detection_s, t.drain_swap_s, t.warmup_s) == pytest.approx(210.0)
    slow = jobgoodput.restart_timings(load_job(with_reliability(tmp_path, "restart_s = 630")), 2048)
    assert restart.restart_overhead_s(slow.xid_detection_s, slow.drain_swap_s, slow.warmup_s) == pytest.approx(630.0)
    assert slow.hang_timeout_s == t.hang_timeout_s  # silent failures keep the collective timeout


def test_state_machine_loses_the_goodput_models_restart_work():
    """Drive the state machine through one XID failure: the lost work is rollback + restart + restore."""
    t = restart.RestartTimings(checkpoint_interval_s=1e9, checkpoint_write_s=0.0, restore_s=40.0)
    state, ids = restart.new_state(), np.arange(4)
    ok, bad = np.zeros(4, bool), np.array([False, True, False, False])
    dt = 0.5
    for _ in range(200):  # 100 s of progress, then the failure
        state, _ = restart.step(state, ids, ok, ok, dt, t)
    state, tick = restart.step(state, ids, bad, bad, dt, t)
    for _ in range(int(1000 / dt)):
        state, tick = restart.step(state, ids, ok, ok, dt, t)
    # 100 s rolled back + 210 s restart + 40 s restore (the failing tick itself is lost too)
    assert tick.lost_work_s == pytest.approx(100.0 + goodput.DEFAULT_RESTART_S + 40.0, abs=2 * dt)

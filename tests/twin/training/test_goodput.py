"""Tests of twin/training/goodput.py: series MTTF, Young/Daly intervals, ETTR."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.training import goodput


def test_job_mttf_hand_computed():
    # 2,048 nodes at 6.50 failures per 1,000 node-days: 1000/(6.5·2048) days
    assert goodput.job_mttf_s(2048, 6.5) == pytest.approx(1000.0 / (6.5 * 2048) * 86400.0)
    assert goodput.job_mttf_s(2048, 6.5) / 3600 == pytest.approx(1.8029, abs=1e-4)
    both = goodput.job_mttf_s(np.array([1, 2]), 1.0)
    assert both[0] == pytest.approx(2 * both[1])
    assert goodput.job_mttf_s(10, 0.0) == math.inf


def test_job_mttf_rejects_bad_input():
    with pytest.raises(goodput.ReliabilityError, match="node"):
        goodput.job_mttf_s(0, 1.0)
    with pytest.raises(goodput.ReliabilityError, match="failures_per_1000_node_days"):
        goodput.job_mttf_s(8, -1.0)


def test_young_and_daly_hand_computed():
    assert goodput.young_interval_s(10.0, 3600.0) == pytest.approx(math.sqrt(72000.0))
    # x = δ/2M = 1/720; √(2δM)·(1 + √x/3 + x/9) − δ
    x = 10.0 / 7200.0
    expected = math.sqrt(72000.0) * (1 + math.sqrt(x) / 3 + x / 9) - 10.0
    assert goodput.daly_interval_s(10.0, 3600.0) == pytest.approx(expected)
    assert goodput.daly_interval_s(10.0, 3600.0) == pytest.approx(261.70, abs=0.01)
    assert goodput.daly_interval_s(100.0, 40.0) == 40.0  # δ ≥ 2M → M


def test_ettr_hand_computed_and_limits():
    assert goodput.ettr_frac(100.0, 10.0, 0.0, math.inf) == pytest.approx(1 / 1.1)
    # (1 − (60 + 50)/3600)/(1 + 10/100)
    assert goodput.ettr_frac(100.0, 10.0, 60.0, 3600.0) == pytest.approx((1 - 110 / 3600) / 1.1)
    assert goodput.ettr_frac(100.0, 10.0, 5000.0, 3600.0) == 0.0
    with pytest.raises(goodput.ReliabilityError, match="checkpoint_interval_s"):
        goodput.ettr_frac(0.0, 1.0, 1.0, 10.0)


def test_daly_interval_is_near_the_ettr_optimum():
    write, restart, mttf = 30.0, 300.0, 3.0 * 3600
    tau = goodput.daly_interval_s(write, mttf)
    best = goodput.ettr_frac(tau, write, restart, mttf)
    for other in (0.5 * tau, 0.8 * tau, 1.25 * tau, 2 * tau):
        assert goodput.ettr_frac(other, write, restart, mttf) <= best + 1e-4


def test_more_restart_time_lowers_ettr():
    a = goodput.ettr_frac(600.0, 20.0, 100.0, 7200.0)
    b = goodput.ettr_frac(600.0, 20.0, 900.0, 7200.0)
    assert b < a


def test_checkpoint_write_hand_computed():
    # 1e9 params × 14 B at 16,000 Gbit/s (2 TB/s) → 14e9/2e12 s
    assert goodput.checkpoint_write_s(1e9, 16_000.0) == pytest.approx(0.007)
    with pytest.raises(goodput.ReliabilityError, match="storage_write_gbps"):
        goodput.checkpoint_write_s(1e9, 0.0)


def test_goodput_summary_consistent():
    s = goodput.goodput_summary(1e6, 2048, 6.5, 10.0, 600.0, 54 * 86400.0)
    assert s["interruptions_expected_count"] == pytest.approx(54 * 86400.0 / (s["job_mttf_h"] * 3600))
    assert s["goodput_tokens_per_s"] == pytest.approx(1e6 * s["ettr_frac"])
    assert s["checkpoint_interval_s"] == pytest.approx(goodput.daly_interval_s(10.0, s["job_mttf_h"] * 3600))
    fixed = goodput.goodput_summary(1e6, 2048, 6.5, 10.0, 600.0, 86400.0, interval_s=1800.0)
    assert fixed["checkpoint_interval_s"] == 1800.0 and fixed["ettr_frac"] < s["ettr_frac"]


def test_interruptions_by_cause_hand_computed():
    rates = goodput.interruptions_per_day_by_cause(2048, 6.5, software_failures_per_job_day=63 / 54)
    hw = 6.5 * 2048 / 1000
    assert rates["gpu_nvlink"] == pytest.approx(hw * 196 / 356)
    assert rates["hbm"] == pytest.approx(hw * 72 / 356)
    assert rates["nic_optics"] == pytest.approx(hw * 42 / 356)
    assert rates["host"] == pytest.approx(hw * 46 / 356)
    assert sum(rates[c] for c in goodput.HARDWARE_CAUSES) == pytest.approx(hw)  # the node rate is split, not changed
    assert goodput.mttf_from_rates_s(rates) == pytest.approx(86400 / (hw + 63 / 54))
    assert sum(goodput.LLAMA3_INTERRUPTIONS_BY_CAUSE.values()) == 419


def test_burn_in_doubles_a_new_fleet_and_fades():
    assert goodput.burn_in_factor(0.0) == pytest.approx(2.0)
    assert goodput.burn_in_factor(60.0) == pytest.approx(1.0 + math.exp(-1.0))
    assert goodput.burn_in_factor(math.inf) == 1.0
    young = goodput.interruptions_per_day_by_cause(100, 5.0, 0.0, fleet_age_days=0.0)
    assert young["hbm"] == pytest.approx(2 * 5.0 * 0.1 * 72 / 356)
    with pytest.raises(goodput.ReliabilityError):
        goodput.burn_in_factor(-1.0)


def test_checkpoint_transfer_takes_the_narrower_of_storage_and_node_nics():
    # 1e9 params × 14 B = 14 GB = 112 Gbit
    assert goodput.checkpoint_transfer_s(1e9, 100, 16_000, 400) == pytest.approx(112 / 16_000)
    assert goodput.checkpoint_transfer_s(1e9, 2, 16_000, 400) == pytest.approx(112 / 800)  # 2 nodes × 400 Gb/s
    assert goodput.checkpoint_transfer_s(1e9, 100, 16_000, 400, share_frac=0.25) == pytest.approx(112 / 4_000)
    with pytest.raises(goodput.ReliabilityError):
        goodput.checkpoint_transfer_s(1e9, 100, 16_000, 400, share_frac=0.0)


def test_slow_storage_lowers_goodput_and_lengthens_the_daly_interval():
    fast = goodput.goodput_summary(1e6, 2048, 6.5, write_s=3.0, restart_s=600, duration_s=86400, restore_s=1.0)
    slow = goodput.goodput_summary(1e6, 2048, 6.5, write_s=300.0, restart_s=600, duration_s=86400, restore_s=100.0)
    assert slow["ettr_frac"] < fast["ettr_frac"]
    assert slow["checkpoint_interval_s"] > fast["checkpoint_interval_s"]
    assert slow["checkpoint_restore_s"] == 100.0 and slow["restart_s"] == 600

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
    # Daly: τ / (M e^(R/M) (e^((τ+δ)/M) − 1)) = 100 / (3600 · e^(1/60) · (e^(110/3600) − 1)) = 0.88048
    assert goodput.ettr_frac(100.0, 10.0, 60.0, 3600.0) == pytest.approx(0.880475, abs=1e-6)
    # first order: (1 − (60 + 50)/3600)/(1 + 10/100) = 0.88131, within 0.1 % of the exact value here
    assert goodput.ettr_first_order_frac(100.0, 10.0, 60.0, 3600.0) == pytest.approx((1 - 110 / 3600) / 1.1)
    # a restart longer than the MTTF: first order gives nothing, Daly still finishes some work
    assert goodput.ettr_first_order_frac(100.0, 10.0, 5000.0, 3600.0) == 0.0
    assert 0.0 < goodput.ettr_frac(100.0, 10.0, 5000.0, 3600.0) < 0.25
    assert goodput.ettr_frac(100.0, 10.0, 1e6, 1.0) == 0.0  # no overflow: the job never finishes an interval
    for f in (goodput.ettr_frac, goodput.ettr_first_order_frac):
        with pytest.raises(goodput.ReliabilityError, match="checkpoint_interval_s"):
            f(0.0, 1.0, 1.0, 10.0)


def test_ettr_exact_against_first_order_near_a_restart_sized_mttf():
    # M = R = 600 s, τ = 100 s, δ = 10 s.  First order: 1 − (600 + 50)/600 < 0 → 0.
    # Exact: 100 / (600 · e · (e^(110/600) − 1)) = 100 / (600 · 2.71828 · 0.201215) = 0.30472.
    assert goodput.ettr_first_order_frac(100.0, 10.0, 600.0, 600.0) == 0.0
    assert goodput.ettr_frac(100.0, 10.0, 600.0, 600.0) == pytest.approx(0.304715, abs=1e-6)
    # M = 1200 s: first order (1 − 650/1200)/1.1 = 0.4167; exact 100/(1200 e^0.5 (e^(110/1200) − 1)) = 0.5265
    assert goodput.ettr_first_order_frac(100.0, 10.0, 600.0, 1200.0) == pytest.approx(0.416667, abs=1e-6)
    assert goodput.ettr_frac(100.0, 10.0, 600.0, 1200.0) == pytest.approx(0.526505, abs=1e-6)


def test_ettr_exact_tends_to_first_order_for_rare_failures():
    # To first order in 1/M, Daly's form is τ/(τ+δ) · (1 − (R + (τ+δ)/2)/M): a failure during the
    # write loses the write too, which the first-order form leaves out, so the two differ by
    # τ/(τ+δ) · δ/(2M) = 300/303 · 1.5/M.
    gaps = []
    for mttf in (1e4, 1e5, 1e6, 1e7):
        exact = goodput.ettr_frac(300.0, 3.0, 210.0, mttf)
        first = goodput.ettr_first_order_frac(300.0, 3.0, 210.0, mttf)
        assert exact <= 1.0 / (1.0 + 3.0 / 300.0)
        gaps.append(abs(exact - first))
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[-1] == pytest.approx(300.0 / 303.0 * 1.5 / 1e7, rel=0.01)


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


def test_software_rate_scales_with_the_job_and_reproduces_llama3():
    # 63 software interruptions in 54 days on 2,048 nodes: 63 / 110.592 = 0.5697 per 1,000 node-days
    sw = goodput.DEFAULT_SOFTWARE_FAILURES_PER_1000_NODE_DAYS
    assert sw == pytest.approx(63 / (54 * 2.048))
    assert goodput.LLAMA3_HW_FAILURES_PER_1000_NODE_DAYS == pytest.approx(356 / (54 * 2.048))
    big = goodput.interruptions_per_day_by_cause(2048, 0.0, 0.0, software_failures_per_1000_node_days=sw)
    small = goodput.interruptions_per_day_by_cause(124, 0.0, 0.0, software_failures_per_1000_node_days=sw)
    assert big["software"] == pytest.approx(63 / 54)
    assert small["software"] == pytest.approx(big["software"] * 124 / 2048)
    hw = goodput.LLAMA3_HW_FAILURES_PER_1000_NODE_DAYS
    llama = goodput.interruptions_per_day_by_cause(2048, hw, 0.0, software_failures_per_1000_node_days=sw)
    assert 54 * sum(llama.values()) == pytest.approx(419)


def test_a_total_rate_is_split_not_added_to():
    hw, sw = goodput.split_total_rate(10.0)
    assert hw + sw == pytest.approx(10.0) and sw == pytest.approx(10.0 * 63 / 419)
    # a 24 h MTTF: 1 failure per day on 1,000 nodes = 1 per 1,000 node-days, all causes
    hw, sw = goodput.split_total_rate(1.0)
    by_cause = goodput.interruptions_per_day_by_cause(1000, hw, 0.0, software_failures_per_1000_node_days=sw)
    assert goodput.mttf_from_rates_s(by_cause) / 3600 == pytest.approx(24.0)


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

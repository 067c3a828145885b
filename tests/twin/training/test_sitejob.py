"""Tests of twin/training/sitejob.py on the demo site: placement, fabric failures, throttling, stalls."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.site.load import load_site
from twin.training import sitejob
from twin.training import steptime as training
from twin.training.jobfile import parse_job


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def make_job(tp=8, pp=16, dp=8):
    return parse_job(
        {
            "name": "t",
            "model": {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 32000, "seq_len": 4096},
            "parallel": {"tp": tp, "pp": pp, "dp": dp, "global_batch": dp * 16, "dp_overlap_frac": 0.0},
            "hardware": {"gpu": "H100-SXM5-80GB"},
        }
    )


def test_rank_groups_follow_tp_cp_pp_dp_order():
    par = training.ParallelSpec(tp=2, cp=2, pp=2, dp=2, global_batch=2)
    g = sitejob.rank_groups(par)
    assert g["tp"][0] == g["tp"][1] and g["tp"][0] != g["tp"][2]
    assert g["cp"][0] == g["cp"][2] and g["cp"][0] != g["cp"][4]
    assert g["pp"][0] == g["pp"][4] and g["pp"][0] != g["pp"][8]
    assert g["dp"][0] == g["dp"][8] and g["dp"][0] != g["dp"][1]
    for dim, size in (("tp", 2), ("cp", 2), ("pp", 2), ("dp", 2)):
        assert (np.bincount(g[dim]) == size).all()


def test_healthy_job_matches_the_analytic_model(demo):
    job = make_job()
    ids = sitejob.contiguous_placement(demo, 1024)
    res = sitejob.evaluate_site_job(demo, job, ids)
    ref = training.step_time(job.model, job.parallel, job.hardware)
    assert res.status.step_time_s == pytest.approx(ref.step_time_s)
    assert all(r.factor_frac == 1.0 for r in res.fabric.values())
    assert res.status.bottleneck_racks.size == 0


def test_failed_uplinks_of_one_leaf_bound_the_dp_ring(demo):
    job = make_job()
    ids = sitejob.contiguous_placement(demo, 1024)
    link_up_flag = np.ones(demo.n_links, bool)
    leaf0_uplinks = np.flatnonzero(demo.link_a == 0)
    link_up_flag[leaf0_uplinks[:60]] = False  # 4 of 64 uplinks left
    res = sitejob.evaluate_site_job(demo, job, ids, link_up_flag=link_up_flag)
    # leaf 0 (rail 0, 64 nodes) holds members of 16 DP groups (one per pipeline stage): 16 flows on 4 links
    assert res.fabric["dp"].factor_frac == pytest.approx(4 / 16)
    assert res.fabric["dp"].worst_leaf == 0
    healthy = sitejob.evaluate_site_job(demo, job, ids)
    assert res.status.breakdown_s["dp_comm"] == pytest.approx(4 * healthy.status.breakdown_s["dp_comm"])


def test_throttled_gpu_sets_the_pace_and_names_its_rack(demo):
    job = make_job()
    ids = sitejob.contiguous_placement(demo, 1024)
    throttle = np.ones(demo.n_gpus)
    throttle[300] = 0.5
    res = sitejob.evaluate_site_job(demo, job, ids, throttle_frac=throttle)
    assert list(res.status.bottleneck_racks) == [demo.gpu_rack[300]]
    assert res.status.drain_gain_frac == pytest.approx(1.0)
    assert res.status.breakdown_s["throttle_loss"] > 0


def test_down_gpu_or_leaf_stalls_the_job(demo):
    job = make_job()
    ids = sitejob.contiguous_placement(demo, 1024)
    throttle = np.ones(demo.n_gpus)
    throttle[7] = 0.0
    res = sitejob.evaluate_site_job(demo, job, ids, throttle_frac=throttle)
    assert math.isinf(res.status.step_time_s) and res.status.tokens_per_s == 0.0
    switch_up = np.ones(demo.n_switches, bool)
    switch_up[3] = False
    res = sitejob.evaluate_site_job(demo, job, ids, switch_up=switch_up)
    assert math.isinf(res.status.step_time_s) and res.fabric["dp"].limiting_tier == "disconnected"


def test_placement_errors(demo):
    with pytest.raises(sitejob.PlacementError):
        sitejob.contiguous_placement(demo, 2048)
    with pytest.raises(sitejob.PlacementError, match="needs 1024"):
        sitejob.evaluate_site_job(demo, make_job(), np.arange(512))


def test_site_storage_sets_checkpoint_times_and_goodput(demo):
    import dataclasses

    job = make_job()
    ids = sitejob.contiguous_placement(demo, 1024)
    fast = sitejob.evaluate_site_job(demo, job, ids)
    slow_site = dataclasses.replace(demo, storage_write_gbps=100.0, storage_read_gbps=200.0)
    slow = sitejob.evaluate_site_job(slow_site, job, ids)
    # 128 nodes × 400 Gb/s of storage NICs is wider than 100 Gb/s of storage: the storage limits
    bits = training.parameter_count(job.model) * 14 * 8
    from twin.training import jobgoodput

    write_s, restore_s = jobgoodput.checkpoint_times_s(job, 128, jobgoodput.site_storage(slow_site))
    assert write_s == pytest.approx(bits / 100e9) and restore_s == pytest.approx(bits / 200e9)
    assert slow.status.ettr_frac < fast.status.ettr_frac
    assert slow.status.checkpoint_interval_s > fast.status.checkpoint_interval_s  # Young/Daly grows with the write

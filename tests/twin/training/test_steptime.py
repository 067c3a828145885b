"""Tests of twin/training/steptime.py: FLOP accounting, step-time composition, pace and bottlenecks."""

from __future__ import annotations

import numpy as np
import pytest

from twin.training import steptime as training
from twin.training.steptime import HardwareSpec, ModelSpec, ParallelSpec, TrainingConfigError

GPT = ModelSpec(layers=24, hidden=2048, heads=16, vocab=50_000, seq_len=2048)
HW = HardwareSpec(peak_tflops=1000.0, nvlink_gbps=3600.0, nic_gbps=400.0, gpus_per_node=8)


def par(**kw) -> ParallelSpec:
    base = dict(tp=1, pp=1, dp=1, global_batch=8)
    base.update(kw)
    return ParallelSpec(**base)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_flops_reduce_to_megatron_formula(recompute):
    batch = 32
    ours = (training.model_flops_per_sequence(GPT) + training.recompute_flops_per_sequence(GPT, recompute)) * batch
    ref = training.megatron_flops_per_step(batch, GPT.seq_len, GPT.layers, GPT.hidden, GPT.vocab, recompute == "full")
    assert ours == pytest.approx(ref, rel=1e-12)


def test_selective_recompute_adds_only_attention_scores():
    s, h, l = GPT.seq_len, GPT.hidden, GPT.layers
    assert training.recompute_flops_per_sequence(GPT, "selective") == pytest.approx(4.0 * s * s * h * l)
    assert training.recompute_flops_per_sequence(GPT, "none") == 0.0


def test_gqa_and_gated_mlp_flops_hand_computed():
    m = ModelSpec(layers=1, hidden=64, heads=8, kv_heads=2, vocab=10, seq_len=4, ffn_hidden=96, gated_mlp=True)
    f = training.layer_forward_flops(m)
    # QKV: 2·s·h·(h + 2·h·2/8) = 2·4·64·(64 + 32)
    assert f["qkv"] == 2 * 4 * 64 * 96
    assert f["mlp"] == 3 * 2 * 4 * 64 * 96
    assert f["attn_scores"] == 4 * 4 * 4 * 64
    assert training.logits_forward_flops(m) == 2 * 4 * 64 * 10


def test_parameter_count_hand_computed():
    m = ModelSpec(layers=2, hidden=8, heads=2, vocab=10, seq_len=4)  # ffn 32, MHA
    per_layer = 8 * 24 + 64 + 2 * 8 * 32 + 4 * 8
    assert training.parameter_count(m) == 2 * per_layer + 2 * 10 * 8


def test_bubble_fraction():
    p = par(pp=4, virtual_stages=2, dp=1, global_batch=8, micro_batch=1)
    assert training.bubble_frac(p) == pytest.approx(3 / 16)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(tp=3), "parallel.tp"),
        (dict(pp=5), "parallel.pp·virtual_stages"),
        (dict(dp=3), "parallel.global_batch"),
        (dict(recompute="some"), "parallel.recompute"),
        (dict(dp_overlap_frac=1.5), "parallel.dp_overlap_frac"),
    ],
)
def test_inconsistent_configs_name_the_field(kwargs, field):
    with pytest.raises(TrainingConfigError, match=field.replace(".", r"\.")):
        training.validate(GPT, par(**kwargs), HW)


def test_uneven_stages_allowed_when_asked():
    training.validate(GPT, par(pp=5, allow_uneven_stages=True, global_batch=10), HW)


def test_single_gpu_step_is_pure_compute_at_modelled_efficiency():
    p = par(global_batch=4)
    r = training.step_time(GPT, p, HW)
    flops = training.model_flops_per_sequence(GPT) * 4
    eff = 0.8 * 2048 / (2048 + 128)
    assert r.step_time_s == pytest.approx(flops / (1000e12 * eff))
    assert r.mfu_frac == pytest.approx(eff)
    assert r.breakdown_s["dp_comm"] == 0.0 and r.breakdown_s["bubble"] == 0.0


def test_breakdown_sums_and_tokens():
    p = par(tp=2, pp=2, dp=4, global_batch=64, virtual_stages=2, recompute="full")
    r = training.step_time(GPT, p, HW)
    assert sum(r.breakdown_s.values()) == pytest.approx(r.step_time_s)
    assert r.tokens_per_s == pytest.approx(64 * 2048 / r.step_time_s)
    assert r.gpu_hw_tflops > r.gpu_model_tflops  # recompute counted in hardware FLOPs only
    assert all(v >= 0 for v in r.breakdown_s.values())


def test_dp_comm_hand_computed():
    # dp = 16 spans two nodes: NIC 400 Gb/s × 0.8 = 40 GB/s busbw; all-reduce of BF16 grads
    p = par(dp=16, global_batch=16)
    r = training.step_time(GPT, p, HW)
    grad_bytes = training.parameter_count(GPT) * 2.0
    expected = grad_bytes * 2 * 15 / 16 / 40e9
    assert r.breakdown_s["dp_comm"] == pytest.approx(expected)
    half = training.step_time(GPT, p, HW, training.FabricFactors(dp=0.5))
    assert half.breakdown_s["dp_comm"] == pytest.approx(2 * expected)
    overlapped = training.step_time(GPT, par(dp=16, global_batch=16, dp_overlap_frac=0.75), HW)
    assert overlapped.breakdown_s["dp_comm"] == pytest.approx(expected / 4)


def test_tp_comm_hand_computed_on_nvlink():
    p = par(tp=8, global_batch=1)
    r = training.step_time(GPT, p, HW)
    act = 2048 * 2048 * 2.0
    one = act * 2 * 7 / 8 / (3600e9 * 0.8 / 8)
    assert r.breakdown_s["tp_comm"] == pytest.approx(4 * 24 * one)


def test_tp_beyond_node_uses_the_nic():
    inside = training.step_time(GPT, par(tp=8, global_batch=1), HW)
    outside = training.step_time(GPT, par(tp=16, global_batch=1), HW)
    ratio = outside.breakdown_s["tp_comm"] / inside.breakdown_s["tp_comm"]
    # per-call time ∝ 2(n-1)/n / bandwidth; 16 ranks on 400G vs 8 ranks on 3600G
    assert ratio == pytest.approx((30 / 16) / (14 / 8) * 3600 / 400)


def test_more_microbatches_shrink_the_bubble_share():
    few = training.step_time(GPT, par(pp=4, global_batch=4), HW)
    many = training.step_time(GPT, par(pp=4, global_batch=64), HW)
    assert many.breakdown_s["bubble"] / many.step_time_s < few.breakdown_s["bubble"] / few.step_time_s


def test_pace_factor_stretches_compute_and_bubble():
    p = par(pp=2, dp=2, global_batch=16)
    full = training.step_time(GPT, p, HW)
    slow = training.step_time(GPT, p, HW, pace_factor_frac=0.5)
    b = full.breakdown_s
    assert slow.breakdown_s["throttle_loss"] == pytest.approx(b["compute"] + b["bubble"])
    assert slow.tokens_per_s < full.tokens_per_s
    with pytest.raises(TrainingConfigError):
        training.step_time(GPT, p, HW, pace_factor_frac=0.0)


def test_power_and_tokens_per_joule():
    p = par(global_batch=4)
    r = training.step_time(GPT, p, HW)  # busy all the time: 700 W + 1900/8 W
    assert r.avg_gpu_power_w == pytest.approx(700.0)
    assert r.tokens_per_j == pytest.approx(r.tokens_per_s / (700.0 + 1900.0 / 8))


def test_pace_factor_min_nan_as_one():
    f = np.array([1.0, 0.9, np.nan, 0.7, 0.5])
    assert training.pace_factor(f, np.array([0, 1, 2, 3])) == 0.7
    assert training.pace_factor(f, np.array([2])) == 1.0


def test_bottleneck_analysis_hand_example():
    throttle = np.ones(16)
    throttle[5] = 0.8  # GPU 5 in rack 2 (two GPUs per rack)
    rack = np.arange(16) // 2
    rep = training.bottleneck_analysis(throttle, np.arange(16), rack, gpus_per_replica=4)
    assert rep.pace_factor_frac == 0.8
    assert list(rep.bottleneck_gpus) == [5]
    assert list(rep.bottleneck_racks) == [2]
    assert rep.drain_gain_frac == pytest.approx(0.25)
    assert rep.replicas_dropped == 1
    assert rep.shrink_dp_gain_frac == pytest.approx(3 / 4 / 0.8 - 1)


def test_bottleneck_analysis_uniform_job_has_nothing_to_drain():
    rep = training.bottleneck_analysis(np.full(8, 0.9), np.arange(8), np.arange(8) // 4, gpus_per_replica=4)
    assert rep.bottleneck_racks.size == 0 and rep.drain_gain_frac == 0.0

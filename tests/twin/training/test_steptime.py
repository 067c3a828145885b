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


def _megatron_flops_per_step(batch: int, seq_len: int, layers: int, hidden: int, vocab: int, recompute: bool) -> float:
    """Megatron's closed form [Megatron-SC21 eq. 3].

    ``72·B·s·n_layers·h²·(1 + s/(6h) + V/(12·n_layers·h))`` without recomputation and
    ``96·B·s·n_layers·h²·(1 + s/(6h) + V/(16·n_layers·h))`` with full recomputation.
    """
    b, s, n_layers, h, v = (float(x) for x in (batch, seq_len, layers, hidden, vocab))
    if recompute:
        return 96.0 * b * s * n_layers * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * n_layers * h))
    return 72.0 * b * s * n_layers * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * n_layers * h))


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_flops_reduce_to_megatron_formula(recompute):
    batch = 32
    ours = (training.model_flops_per_sequence(GPT) + training.recompute_flops_per_sequence(GPT, recompute)) * batch
    ref = _megatron_flops_per_step(batch, GPT.seq_len, GPT.layers, GPT.hidden, GPT.vocab, recompute == "full")
    assert ours == pytest.approx(ref, rel=1e-12)


def test_selective_recompute_adds_only_attention_scores():
    s, h, n_layers = GPT.seq_len, GPT.hidden, GPT.layers
    assert training.recompute_flops_per_sequence(GPT, "selective") == pytest.approx(4.0 * s * s * h * n_layers)
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
        (dict(pp=32), "parallel.pp·virtual_stages"),
        (dict(schedule="gpipe"), "parallel.schedule"),
        (dict(ep=2), "parallel.ep"),
        (dict(dp=3), "parallel.global_batch"),
        (dict(recompute="some"), "parallel.recompute"),
        (dict(dp_overlap_frac=1.5), "parallel.dp_overlap_frac"),
    ],
)
def test_inconsistent_configs_name_the_field(kwargs, field):
    with pytest.raises(TrainingConfigError, match=field.replace(".", r"\.")):
        training.validate(GPT, par(**kwargs), HW)


def test_uneven_stages_are_accepted_without_a_flag():
    training.validate(GPT, par(pp=5, global_batch=10), HW)


def test_single_gpu_step_hand_computed_per_op_class():
    # one GPU, 4 micro-batches of one 2,048-token sequence; every GEMM's narrowest dimension is
    # h = 2048, so each runs compute-bound at 0.8 · 1000 TFLOP/s · 2048/(2048 + 128)
    p = par(global_batch=4)
    r = training.step_time(GPT, p, HW)
    t, h, s, v, n_layers, f = 2048.0, 2048.0, 2048.0, 50_000.0, 24, 8192.0
    rate = 0.8e15 * h / (h + 128)
    hbm = 3350e9
    gemm = 3 * n_layers * 24 * t * h * h / rate + 3 * 2 * t * v * h / rate  # layers (24·T·h² fwd) + logits, fwd+bwd
    # causal flash attention, head dim 128: of 16 × 16 blocks of 128 tokens it computes 16·17/2 = 136
    attention = 3 * n_layers * 4 * t * s * h * (136 / 256) / (0.8e15 * 128 / 256)
    elementwise = 3 * n_layers * 2 * (10 * h + 2 * f) * t / hbm + 12 * t * v / hbm + 12 * t * h / hbm
    optimizer = 30 * training.parameter_count(GPT) / hbm
    assert r.ops_s["gemm"] == pytest.approx(4 * gemm)
    assert r.ops_s["attention"] == pytest.approx(4 * attention)
    assert r.ops_s["elementwise"] == pytest.approx(4 * elementwise)
    assert r.ops_s["optimizer"] == pytest.approx(optimizer)
    assert r.step_time_s == pytest.approx(4 * (gemm + attention + elementwise) + optimizer)
    assert r.breakdown_s["dp_comm"] == 0.0 and r.breakdown_s["bubble"] == 0.0


def test_attention_without_flash_adds_score_traffic():
    flash = training.step_time(GPT, par(global_batch=1), HW)
    plain = training.step_time(GPT, par(global_batch=1, flash_attention=False), HW)
    # per layer forward: QKᵀ and P·V per head (M = s, N or K = s, head dim 128) write/read
    # the s² scores, plus 9 B per score of softmax and dropout; fwd + bwd = 3× forward
    s, heads, d = 2048.0, 16.0, 128.0
    rate = 0.8e15 * d / (d + 128)
    qk = max(2 * s * s * d / rate, 2 * (s * d + d * s + s * s) / 3350e9)
    pv = max(2 * s * d * s / rate, 2 * (s * s + s * d + s * d) / 3350e9)
    per_layer = heads * (qk + pv) + 9 * s * s * heads / 3350e9
    assert plain.ops_s["attention"] == pytest.approx(3 * 24 * per_layer)
    assert plain.step_time_s > flash.step_time_s


def test_power_limit_lowers_the_clock_through_the_dvfs_law():
    from twin.physics import thermal

    capped = HardwareSpec(peak_tflops=1000.0, nvlink_gbps=3600.0, nic_gbps=400.0, power_limit_w=400.0)
    full = training.step_time(GPT, par(global_batch=1), HW)
    slow = training.step_time(GPT, par(global_batch=1), capped)
    clock = float(thermal.clock_at_power_frac(400.0, 700.0, 85.0))
    assert slow.clock_frac == pytest.approx(clock) and clock < 1.0
    assert slow.ops_s["gemm"] == pytest.approx(full.ops_s["gemm"] / clock)
    assert slow.ops_s["elementwise"] == pytest.approx(full.ops_s["elementwise"])  # HBM does not follow the SM clock
    assert slow.avg_gpu_power_w < full.avg_gpu_power_w


def test_uneven_stages_slowest_sets_the_pace():
    # 26 layers on 4 stages: default split 6, 7, 7, 6 (ends take the smaller share)
    m = ModelSpec(layers=26, hidden=2048, heads=16, vocab=50_000, seq_len=2048)
    r = training.step_time(m, par(pp=4, global_batch=8, schedule="1f1b"), HW)
    assert r.stage_layers == [6, 7, 7, 6]
    slowest, mean = max(r.stage_time_s), sum(r.stage_time_s) / 4
    assert r.breakdown_s["stage_imbalance"] == pytest.approx(8 * (slowest - mean))
    assert r.breakdown_s["bubble"] == pytest.approx(3 / 8 * 8 * slowest)
    fixed = training.step_time(m, par(pp=4, global_batch=8, first_stage_layers=2, last_stage_layers=2), HW)
    assert fixed.stage_layers == [2, 11, 11, 2]


@pytest.mark.parametrize(
    "schedule, v, expected",
    [("1f1b", 1, 3 / 8), ("interleaved", 2, 3 / 16), ("interleaved", 4, 3 / 32), ("zero_bubble", 1, 1 / 8)],
)
def test_bubble_by_schedule(schedule, v, expected):
    p = par(pp=4, global_batch=8, schedule=schedule, virtual_stages=v if v > 1 else 0)
    r = training.step_time(GPT, p, HW)
    assert r.bubble_frac == pytest.approx(expected)
    assert r.breakdown_s["bubble"] == pytest.approx(expected * 8 * max(r.stage_time_s))


def test_default_schedule_is_interleaved_with_two_chunks_when_it_fits():
    assert training.step_time(GPT, par(pp=4, global_batch=8), HW).virtual_stages == 2
    # 6 micro-batches do not divide among 4 stages: plain 1F1B
    assert training.step_time(GPT, par(pp=4, global_batch=6), HW).virtual_stages == 1


def test_breakdown_sums_and_tokens():
    p = par(tp=2, pp=2, dp=4, global_batch=64, virtual_stages=2, recompute="full")
    r = training.step_time(GPT, p, HW)
    assert sum(r.breakdown_s.values()) == pytest.approx(r.step_time_s)
    assert r.tokens_per_s == pytest.approx(64 * 2048 / r.step_time_s)
    assert r.gpu_hw_tflops > r.gpu_model_tflops  # recompute counted in hardware FLOPs only
    assert all(v >= 0 for v in r.breakdown_s.values())


def test_dp_comm_hand_computed():
    # dp = 16 spans two nodes: NIC 400 Gb/s × 0.8 = 40 GB/s busbw; all-reduce of BF16 grads
    p = par(dp=16, global_batch=16, dp_overlap_frac=0.0)
    r = training.step_time(GPT, p, HW)
    grad_bytes = training.parameter_count(GPT) * 2.0
    expected = grad_bytes * 2 * 15 / 16 / 40e9
    assert r.breakdown_s["dp_comm"] == pytest.approx(expected)
    half = training.step_time(GPT, p, HW, training.FabricFactors(dp=0.5))
    assert half.breakdown_s["dp_comm"] == pytest.approx(2 * expected)
    overlapped = training.step_time(GPT, par(dp=16, global_batch=16, dp_overlap_frac=0.75), HW)
    assert overlapped.breakdown_s["dp_comm"] == pytest.approx(expected / 4)


@pytest.mark.parametrize("factor", [1.0, 0.05])
def test_dp_overlap_derived_from_buckets_and_prefetch(factor):
    grad_bytes = training.parameter_count(GPT) * 2.0
    raw = grad_bytes * 2 * 15 / 16 / (40e9 * factor)
    fab = training.FabricFactors(dp=factor)
    ddp = training.step_time(GPT, par(dp=16, global_batch=16), HW, fab)
    window = 2 / 3 * ddp.stage_time_s[0]  # backward of the last (only) micro-batch
    assert ddp.breakdown_s["dp_comm"] == pytest.approx(max(raw * 25e6 / grad_bytes, raw - window))
    fsdp = training.step_time(GPT, par(dp=16, global_batch=16, dp_mode="fsdp"), HW, fab)
    unit = training.layer_parameter_count(GPT) * 2.0
    assert fsdp.breakdown_s["dp_comm"] == pytest.approx(max(raw * unit / grad_bytes, raw - 3 / 2 * window))


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
    assert slow.breakdown_s["throttle_loss"] == pytest.approx(b["compute"] + b["stage_imbalance"] + b["bubble"])
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


MIXTRAL = ModelSpec(
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    vocab=32000,
    seq_len=4096,
    ffn_hidden=14336,
    gated_mlp=True,
    experts=8,
    experts_per_token=2,
)


def test_moe_active_and_total_parameters_hand_computed():
    h, f, n_layers, e = 4096, 14336, 32, 8
    attn = h * (h + 2 * 1024) + h * h
    total = n_layers * (attn + 3 * h * f * e + h * e + 4 * h) + 2 * 32000 * h
    assert training.parameter_count(MIXTRAL) == total
    assert training.active_parameter_count(MIXTRAL) == total - n_layers * 3 * h * f * 6
    # Mixtral 8x7B: 46.7 B total, 12.9 B active (Jiang et al., arXiv:2401.04088 §2)
    assert training.parameter_count(MIXTRAL) / 1e9 == pytest.approx(46.7, rel=0.01)
    assert training.active_parameter_count(MIXTRAL) / 1e9 == pytest.approx(12.9, rel=0.01)
    flops = training.layer_forward_flops(MIXTRAL)
    assert flops["mlp"] == 3 * 2 * 4096 * h * f * 2 and flops["router"] == 2 * 4096 * h * e


def test_expert_parallel_all_to_all_hand_computed():
    # ep = 8 beyond one node (span tp·ep = 2·8 = 16 GPUs): NIC 400 Gb/s × 0.8 = 40 GB/s busbw;
    # 4 all-to-alls per layer per micro-batch of T·k·h·2/tp bytes, factor (n−1)/n
    p = par(tp=2, dp=8, ep=8, global_batch=8)
    r = training.step_time(MIXTRAL, p, HW)
    one = 4096 * 2 * 4096 * 2.0 / 2 * 7 / 8 / 40e9
    assert r.breakdown_s["ep_comm"] == pytest.approx(4 * 32 * one)
    dense = training.step_time(MIXTRAL, par(tp=2, dp=8, global_batch=8), HW)
    assert dense.breakdown_s["ep_comm"] == 0.0

"""Tests of twin/training/opcost.py: the GEMM roofline and memory-bound terms, hand-computed."""

from __future__ import annotations

import pytest

from twin.training import opcost

DEV = opcost.Device(flops_per_s=800e12, hbm_bytes_per_s=3350e9)


def test_large_gemm_is_compute_bound_with_the_tile_factor():
    t = opcost.gemm_s(8192, 8192, 8192, DEV)
    assert t == pytest.approx(2 * 8192**3 / (800e12 * 8192 / (8192 + 128)))


def test_skinny_gemm_is_memory_bound():
    # M = 8192 tokens, N = 1, K = 8192: 2·M·N·K FLOPs, bytes 2·(MK + KN + MN)
    t = opcost.gemm_s(8192, 1, 8192, DEV)
    assert t == pytest.approx(2 * (8192 * 8192 + 8192 + 8192) / 3350e9)


def test_optimizer_and_embedding_bytes():
    assert opcost.optimizer_s(1e9, DEV) == pytest.approx(30e9 / 3350e9)
    assert opcost.embedding_s(1000, 4096, 2, DEV) == pytest.approx(3 * 2 * 2 * 1000 * 4096 / 2 / 3350e9)


def _shape(seq_len: float, cp: float = 1.0) -> opcost.LayerShape:
    h = 2048.0
    return opcost.LayerShape(
        tokens=seq_len / cp,
        seq_len=seq_len,
        hidden=h,
        kv_hidden=h,
        ffn=4 * h,
        heads=16,
        tp=1,
        micro_batch=1,
        gated_mlp=False,
    )


def test_causal_flash_attention_computes_the_blocks_on_and_below_the_diagonal():
    # n blocks of 128 tokens: n(n+1)/2 of the n² score blocks
    assert opcost.causal_block_frac(128) == 1.0
    assert opcost.causal_block_frac(256) == pytest.approx(3 / 4)
    assert opcost.causal_block_frac(2048) == pytest.approx(136 / 256)
    assert opcost.causal_block_frac(131072) == pytest.approx(1025 / 2048)
    dev = opcost.Device(flops_per_s=1e15, hbm_bytes_per_s=3e12)
    for s in (2048.0, 131072.0):
        t = opcost.layer_forward_s(_shape(s), dev, flash_attention=True)["attention"]
        # 4·s²·h FLOPs of QKᵀ and softmax·V, at the head-dim-128 tile factor 128/256, times the causal share
        assert t == pytest.approx(4 * s * s * 2048 * opcost.causal_block_frac(s) / (1e15 * 128 / 256))
    # context parallelism splits the causal work evenly: each of 16 ranks does a sixteenth
    whole = opcost.layer_forward_s(_shape(131072.0), dev, True)["attention"]
    assert opcost.layer_forward_s(_shape(131072.0, cp=16), dev, True)["attention"] == pytest.approx(whole / 16)


def test_unfused_attention_computes_the_whole_score_matrix():
    dev = opcost.Device(flops_per_s=1e15, hbm_bytes_per_s=3e12)
    t = opcost.layer_forward_s(_shape(2048.0), dev, flash_attention=False)["attention"]
    gemms = 2 * opcost.gemm_s(2048, 2048, 128, dev, 16)  # QKᵀ and softmax·V over all s × s scores
    assert t == pytest.approx(gemms + opcost.SOFTMAX_BYTES_PER_SCORE * 2048 * 2048 * 16 / 3e12)

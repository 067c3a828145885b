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

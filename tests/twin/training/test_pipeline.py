"""Tests of twin/training/pipeline.py: stage split and bubble by schedule."""

from __future__ import annotations

import pytest

from twin.training import pipeline


def test_llama3_405b_split_matches_the_paper():
    # arXiv:2407.21783 §3.3.2: 126 layers on 16 stages, first and last stage one layer less
    assert pipeline.stage_layers(126, 16) == (7,) + (8,) * 14 + (7,)


def test_even_split_and_fixed_ends():
    assert pipeline.stage_layers(32, 4) == (8, 8, 8, 8)
    assert pipeline.stage_layers(30, 4, first=6, last=6) == (6, 9, 9, 6)
    assert pipeline.stage_layers(10, 1) == (10,)
    assert sum(pipeline.stage_layers(127, 16)) == 127


@pytest.mark.parametrize("schedule, expected", [("1f1b", 7 / 32), ("interleaved", 7 / 128), ("zero_bubble", 7 / 96)])
def test_bubble_fractions(schedule, expected):
    assert pipeline.bubble_frac(schedule, 8, 32, 4) == pytest.approx(expected)


def test_default_chunks():
    assert pipeline.resolve_virtual_stages("interleaved", 0, 16, 16, 126) == 2
    assert pipeline.resolve_virtual_stages("interleaved", 0, 16, 12, 126) == 1  # m not a multiple of pp
    assert pipeline.resolve_virtual_stages("interleaved", 4, 16, 16, 126) == 4
    assert pipeline.resolve_virtual_stages("1f1b", 0, 16, 16, 126) == 1
    with pytest.raises(ValueError, match="parallel.schedule"):
        pipeline.bubble_frac("gpipe", 4, 8)

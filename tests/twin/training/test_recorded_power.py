"""Tests of twin/training/recorded_power.py on a hand-written log and the MLPerf fixture."""

from __future__ import annotations

import pytest

from twin.training import recorded_power
from twin.training.validation import MLPERF_POWER_DIR

RUN = """0: :::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}
0: :::MLLOG {"time_ms": 5000, "key": "run_stop", "value": 0.9}
"""
NODE = (
    "".join(
        f':::MLLOG {{"time_ms": {t}, "key": "power_reading", "value": {w}}}\n'
        for t, w in [(0, 3000), (1000, 8000), (2000, 9000), (3000, 7000), (6000, 3000)]
    )
    + ":::MLLOG {trunc"
)


def test_node_power_inside_the_run_hand_computed(tmp_path):
    (tmp_path / "run.txt").write_text(RUN)
    (tmp_path / "node_0.txt").write_text(NODE)
    rec = recorded_power.recorded_power(tmp_path / "run.txt", [tmp_path / "node_0.txt"])
    assert rec.mean_node_w == pytest.approx(8000.0)  # samples at 1, 2, 3 s: 8, 9, 7 kW
    assert rec.peak_node_w == 9000.0 and rec.duration_s == 4.0 and rec.nodes == 1


def test_mlperf_fixture_is_in_the_recorded_range():
    rec = recorded_power.recorded_power(
        MLPERF_POWER_DIR / "result_0.txt", sorted((MLPERF_POWER_DIR / "result_0").glob("node_*.txt"))
    )
    # fixture notes: 2.9 kW idle to 8.4–9.9 kW in training, 8 nodes, about 5 minutes
    assert rec.nodes == 8 and 250 < rec.duration_s < 350
    assert 2900 < rec.mean_node_w < 9900 and 8400 <= rec.peak_node_w <= 9950

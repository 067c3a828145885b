"""Tests of twin/training/mlperf_profile.py: phases from a run log, clock alignment, level/swing/dip figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from twin.training import mlperf_profile as mp
from twin.training import phases
from twin.training.validation import MLPERF_POWER_DIR, profile_rows

T0_MS = 1_700_000_000_000


def _line(key: str, t_s: float, value=None, **meta) -> str:
    return ":::MLLOG " + json.dumps(
        {"time_ms": T0_MS + int(round(t_s * 1000)), "key": key, "value": value, "metadata": meta}
    )


def _run_log(tmp_path):
    """Blocks [0, 40), [50, 90), [100, 140); evaluations [40, 50), [90, 100), [140, 150)."""
    lines = [_line("global_batch_size", -1.0, 8), _line("run_start", 0.0)]
    for k, start in enumerate((0.0, 50.0, 100.0)):
        lines += [
            _line("block_start", start),
            _line("train_loss", start + 10.0, 1.0, samples_count=80 * (2 * k + 1)),
            _line("train_loss", start + 15.0, 1.0, samples_count=80 * (2 * k + 2)),
            _line("block_stop", start + 40.0),
            _line("eval_start", start + 40.0),
            _line("eval_stop", start + 50.0),
        ]
    lines.append(_line("run_stop", 150.0))
    path = tmp_path / "result_0.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _node_log(tmp_path, offset_s: float, train_w: float = 8000.0, eval_w: float = 6000.0):
    """One sample a second; the node's clock runs ``offset_s`` behind the run log."""
    lines = []
    for t in np.arange(0.0, 150.0, 1.0):
        w = eval_w if (t % 50.0) >= 40.0 else train_w
        lines.append(_line("power_reading", t - offset_s, w))
    path = tmp_path / f"node_{int(offset_s)}.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_phases_and_step_time_from_the_run_log(tmp_path):
    run = mp.run_phases(_run_log(tmp_path))
    assert run.run_s == 150.0
    assert run.blocks_s == ((0.0, 40.0), (50.0, 90.0), (100.0, 140.0))
    assert run.evals_s == ((40.0, 50.0), (90.0, 100.0), (140.0, 150.0))
    # 80 samples of global batch 8 = 10 steps in 5 s
    assert mp.recorded_step_s(_run_log(tmp_path)) == pytest.approx(0.5)


def test_clock_offset_is_found_and_the_figures_are_the_hand_values(tmp_path):
    run = mp.run_phases(_run_log(tmp_path))
    series = mp.aligned_node_power_w(_node_log(tmp_path, 7.0), run)
    assert series[45] == 6000.0 and series[55] == 8000.0  # shifted back by the 7 s offset
    figs = mp.reduce_profile([series], run)
    assert figs.train_mean_w == pytest.approx(8000.0) and figs.train_std_w == pytest.approx(0.0)
    assert figs.train_p95_p5_w == pytest.approx(0.0)
    assert figs.eval_dip_w == pytest.approx(2000.0) and figs.eval_dip_s == pytest.approx(10.0)


def test_twin_node_power_is_averaged_over_each_recorded_interval(tmp_path):
    """A 0.5 s step of half compute (1.0) and half communication (0.15): every 1-s sample holds one step."""
    run = mp.run_phases(_run_log(tmp_path))
    node = mp.NodeModel(gpus=8, base_power_w=1900.0, idle_base_power_w=900.0, psus=4, psu_rating_w=5250.0)
    profile = phases.two_phase_profile(0.5, 0.5)
    w = mp.twin_node_power_w(profile, run, 700.0, 100.0, node)
    assert w.size == 150
    figs = mp.reduce_profile([w], run)
    assert figs.train_p95_p5_w == pytest.approx(0.0, abs=1e-6)  # the step is averaged out at 1 s
    assert figs.eval_dip_s == pytest.approx(10.0)
    assert figs.eval_dip_w > 0


def test_recorded_fixture_step_period():
    assert mp.recorded_step_s(MLPERF_POWER_DIR / "result_0.txt") == pytest.approx(0.552, abs=0.005)


def test_profile_rows_state_an_error_and_a_source():
    rows = profile_rows()
    assert len(rows) == 12
    for row in rows:
        assert row[-1] and row[-2].endswith("%")

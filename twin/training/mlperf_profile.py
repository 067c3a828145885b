"""The job power profile of the twin against recorded MLPerf node power: level, swing, evaluation dips.

An MLPerf Training run log marks its training blocks (``block_start``/``block_stop``) and
evaluations (``eval_start``/``eval_stop``) [MLPerf-Logging]; each node's power log holds
AC input power about once a second.  The node clocks are not aligned with the run log, so
each node is shifted by the whole second that best matches its power to the run's phases
(the correlation of the samples with a training-block indicator times the share of the
run they cover, over ±``MAX_OFFSET_S``).

Both sides are reduced the same way on the same 1-s grid (the twin's waveform is
averaged over each interval of the recorded sampling, as an integrating meter reports):

* level: mean node power inside the steady training blocks (every block after the first,
  which holds the start-up and the first evaluation's set-up);
* swing: standard deviation and p95 − p5 of node power inside those blocks;
* evaluation dips: training mean minus the mean inside the steady evaluations, and the
  time per evaluation below the midpoint of the two levels (within ±``DIP_MARGIN_S``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twin.arrays import BoolArray, FloatArray
from twin.physics import power
from twin.training import phases
from twin.training.recorded_power import mllog_events, power_samples

MAX_OFFSET_S = 60  # search range of a node's clock offset
DIP_MARGIN_S = 5.0  # window around an evaluation in which its dip is timed
SAMPLE_S = 1.0  # the power logs' sampling interval


@dataclass(frozen=True)
class RunPhases:
    """Training blocks and evaluations of one run, seconds from ``run_start``."""

    run_start_ms: float
    run_s: float
    blocks_s: tuple[tuple[float, float], ...]  # (start, stop)
    evals_s: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class ProfileFigures:
    """Reduced node power of a run (means over the nodes) [W, s]."""

    train_mean_w: float
    train_std_w: float
    train_p95_p5_w: float
    eval_dip_w: float
    eval_dip_s: float


def run_phases(run_log: Path) -> RunPhases:
    """Blocks and evaluations of an MLPerf run log."""
    events = mllog_events(run_log.read_text())
    marks = [
        (e["key"], float(e["time_ms"]))
        for e in events
        if e.get("key") in ("run_start", "run_stop", "block_start", "block_stop", "eval_start", "eval_stop")
    ]
    start = next((t for k, t in marks if k == "run_start"), None)
    stop = next((t for k, t in marks if k == "run_stop"), None)
    if start is None or stop is None:
        raise ValueError(f"{run_log.name}: run log lacks run_start or run_stop")
    spans: dict[str, list[tuple[float, float]]] = {"block": [], "eval": []}
    opened: dict[str, float] = {}
    for key, t in marks:
        kind, edge = key.rsplit("_", 1)
        if kind in spans and edge == "start":
            opened[kind] = t
        elif kind in spans and edge == "stop" and kind in opened:
            spans[kind].append(((opened.pop(kind) - start) / 1e3, (t - start) / 1e3))
    return RunPhases(start, (stop - start) / 1e3, tuple(spans["block"]), tuple(spans["eval"]))


def recorded_step_s(run_log: Path) -> float:
    """Median step time of a run: time between ``train_loss`` reports over the steps between them
    (``samples_count`` difference over ``global_batch_size``), reports inside one block only."""
    events = mllog_events(run_log.read_text())
    batch = next((float(e["value"]) for e in events if e.get("key") == "global_batch_size"), None)
    run = run_phases(run_log)
    start = run.run_start_ms
    rows = [
        ((float(e["time_ms"]) - start) / 1e3, float(e["metadata"]["samples_count"]))
        for e in events
        if e.get("key") == "train_loss" and "samples_count" in (e.get("metadata") or {})
    ]
    if not batch or len(rows) < 2:
        raise ValueError(f"{run_log.name}: needs global_batch_size and two train_loss reports")
    steps = []
    for (t0, n0), (t1, n1) in zip(rows, rows[1:]):
        same_block = any(a <= t0 and t1 <= b for a, b in run.blocks_s)
        if same_block and n1 > n0:
            steps.append((t1 - t0) / ((n1 - n0) / batch))
    return float(np.median(steps))


def _grid(run: RunPhases) -> np.ndarray:
    return np.arange(0.0, run.run_s, SAMPLE_S)


def _inside(t: FloatArray, spans: Iterable[tuple[float, float]]) -> BoolArray:
    mask = np.zeros(t.size, dtype=bool)
    for a, b in spans:
        mask |= (t >= a) & (t < b)
    return mask


def aligned_node_power_w(node_log: Path, run: RunPhases) -> np.ndarray:
    """A node's power on the run's 1-s grid (NaN where no sample), shifted by its best clock offset."""
    t_ms, w = power_samples(mllog_events(node_log.read_text()))
    t = (t_ms - run.run_start_ms) / 1e3
    grid = _grid(run)
    training = _inside(grid, run.blocks_s).astype(np.float64)
    best, best_score = None, -np.inf
    for offset in sorted(range(-MAX_OFFSET_S, MAX_OFFSET_S + 1), key=abs):  # ties go to the smaller shift
        idx = np.round(t + offset).astype(np.int64)
        ok = (idx >= 0) & (idx < grid.size)
        if ok.sum() < 0.5 * grid.size:
            continue
        series = np.full(grid.size, np.nan)
        series[idx[ok]] = w[ok]
        have = np.isfinite(series)
        score = np.corrcoef(series[have], training[have])[0, 1] * have.mean()  # weighed by coverage
        if score > best_score:
            best, best_score = series, score
    if best is None:
        raise ValueError(f"{node_log.name}: too few power samples inside the run")
    return best


def reduce_profile(series_w: list[np.ndarray], run: RunPhases) -> ProfileFigures:
    """Level, swing and evaluation dips of node power series on the run's grid (see module docstring)."""
    grid = _grid(run)
    steady_blocks, steady_evals = run.blocks_s[1:], run.evals_s[1:]
    train = _inside(grid, steady_blocks)
    figs = []
    for w in series_w:
        tw = w[train & np.isfinite(w)]
        ev = w[_inside(grid, steady_evals) & np.isfinite(w)]
        mean_t, mean_e = float(tw.mean()), float(ev.mean())
        mid = (mean_t + mean_e) / 2.0
        below = [
            float(np.sum(w[_inside(grid, [(a - DIP_MARGIN_S, b + DIP_MARGIN_S)]) & np.isfinite(w)] < mid)) * SAMPLE_S
            for a, b in steady_evals
        ]
        figs.append(
            (
                mean_t,
                float(tw.std()),
                float(np.percentile(tw, 95) - np.percentile(tw, 5)),
                mean_t - mean_e,
                float(np.mean(below)),
            )
        )
    m = np.mean(np.array(figs), axis=0)
    return ProfileFigures(*(float(x) for x in m))


def recorded_profile(run_log: Path, node_logs: list[Path]) -> ProfileFigures:
    """Reduced recorded node power of one MLPerf result."""
    run = run_phases(run_log)
    return reduce_profile([aligned_node_power_w(p, run) for p in node_logs], run)


@dataclass(frozen=True)
class NodeModel:
    """What turns GPU board power into node AC input power (a catalogue node type)."""

    gpus: int
    base_power_w: float
    idle_base_power_w: float
    psus: int
    psu_rating_w: float


def twin_node_power_w(
    profile: phases.StepProfile, run: RunPhases, busy_w: float, idle_w: float, node: NodeModel, dt_s: float = 0.01
) -> np.ndarray:
    """The twin's node AC power on the run's 1-s grid: the phase waveform at ``dt_s`` with the
    run log's evaluations, through the node and PSU model, averaged over each 1-s interval."""
    schedule = phases.JobSchedule(evals_at_s=tuple((a, b - a) for a, b in run.evals_s))
    n = _grid(run).size
    _, frac = phases.waveform_frac(profile, schedule, n * SAMPLE_S, dt_s)
    gpu_w = phases.to_watts(frac, busy_w, idle_w)
    dc = power.node_dc_power_w(node.gpus * gpu_w, frac, node.base_power_w, node.idle_base_power_w)
    ac, _ = power.node_input_power_w(dc, np.full(dc.size, node.psus), node.psu_rating_w)
    per = int(round(SAMPLE_S / dt_s))
    mean_w: np.ndarray = ac[: n * per].reshape(n, per).mean(axis=1)
    return mean_w

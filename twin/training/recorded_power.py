"""Recorded node power of an MLPerf Training run, for validating the twin's job power.

MLPerf power logs (mlcommons training_results, ``power/result_N/node_K.txt``) are lines
``:::MLLOG {json}`` with key ``power_reading`` (value in W, AC input) and ``time_ms``
(epoch milliseconds); the run's own log (``result_N.txt``) marks ``run_start`` and
``run_stop``.  Node clocks are not aligned and samples go missing, so each node is
reduced on its own samples inside the run interval; nodes are then averaged (mean) or
maxed (peak).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_PREFIX = ":::MLLOG "


def mllog_events(text: str) -> list[dict[str, Any]]:
    """The JSON events of an MLPerf log (lines may carry a rank prefix such as ``0: ``)."""
    out = []
    for line in text.splitlines():
        i = line.find(_PREFIX)
        if i < 0:
            continue
        try:
            out.append(json.loads(line[i + len(_PREFIX) :]))
        except json.JSONDecodeError:
            continue  # a truncated line is skipped, not guessed
    return out


def power_samples(events: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """``(time_ms, power_w)`` of the ``power_reading`` events."""
    rows = [
        (e["time_ms"], e["value"]) for e in events if e.get("key") == "power_reading" and e.get("value") is not None
    ]
    arr = np.array(rows, dtype=np.float64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def run_interval_ms(events: list[dict[str, Any]]) -> tuple[float, float]:
    """``(run_start, run_stop)`` times of a run log [ms]."""
    times = {e["key"]: float(e["time_ms"]) for e in events if e.get("key") in ("run_start", "run_stop")}
    if set(times) != {"run_start", "run_stop"}:
        raise ValueError("run log lacks run_start or run_stop")
    return times["run_start"], times["run_stop"]


@dataclass(frozen=True)
class RecordedPower:
    """Node power of one recorded run inside its training interval [W]."""

    nodes: int
    mean_node_w: float  # mean over nodes of each node's mean
    peak_node_w: float  # highest single-node sample
    duration_s: float


def recorded_power(run_log: Path, node_logs: list[Path]) -> RecordedPower:
    """Reduce one MLPerf result's node power logs over its run interval."""
    start, stop = run_interval_ms(mllog_events(run_log.read_text()))
    means, peaks = [], []
    for path in node_logs:
        t, w = power_samples(mllog_events(path.read_text()))
        inside = (t >= start) & (t <= stop)
        if not inside.any():
            raise ValueError(f"{path.name}: no power samples inside the run")
        means.append(float(w[inside].mean()))
        peaks.append(float(w[inside].max()))
    return RecordedPower(
        nodes=len(node_logs),
        mean_node_w=float(np.mean(means)),
        peak_node_w=float(np.max(peaks)),
        duration_s=(stop - start) / 1000.0,
    )

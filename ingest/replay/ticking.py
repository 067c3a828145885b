"""One shard's replay loop: the twin ticked every ``tick_s`` seconds between the recorded frames.

A recording holds frames every few seconds; the twin ticks at its own cadence in between.
For a tick at ``t`` between frames ``i-1`` and ``i`` (``t_{i-1} < t ≤ t_i``) the inputs
are those of frame ``i`` for what changes in steps (pumps running, failed elements,
sources and links, nodes off): a change that frame ``i`` reports happened during the
interval before it, and the live twin that recorded it applied it over that interval.
What varies continuously (GPU utilisation, measured CDU flow, facility supply
temperature, outdoor conditions) is interpolated linearly between the two frames.  The projected signals are kept at the frame instants only,
where the recording has readings to score them against.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta

import numpy as np

from ingest.replay.engine import ReplayEngine
from ingest.replay.shards import Shard
from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED
from twin.engine.tick import TickInputs, TwinEngine

GPU_SIGNALS = ("gpu_temp_c", "hbm_temp_c", "gpu_power_w")  # detail GPUs of the shard
RACK_SIGNALS = ("rack_max_gpu_temp_c", "rack_mean_gpu_power_w", "rack_power_kw")
CDU_SIGNALS = ("coolant_supply_temp_c", "coolant_return_temp_c")
SUMMED = ("it_power_mw", "gpus_throttled", "gpus_down")  # per frame, summed over shards
PER_TICK = ("tick_gpus_throttled", "tick_gpus_down", "tick_max_gpu_temp_c")  # every tick, for the outcome


def shard_inputs(inp: TickInputs, shard: Shard) -> TickInputs:
    """The full site's inputs ``inp`` cut to ``shard`` (its GPUs, CDUs and nodes; failed links left out).

    No swing jobs: the training power swing against the supply is not replayed.
    """
    return dataclasses.replace(
        inp,
        swing_jobs=[],
        gpu_util_frac=inp.gpu_util_frac[shard.gpus],
        pumps_running_count=inp.pumps_running_count[shard.cdus],
        coolant_flow_lpm=inp.coolant_flow_lpm[shard.cdus],
        nodes_off=None if inp.nodes_off is None else inp.nodes_off[shard.nodes],
        failed_links=[],
    )


def _ramp(a, b):
    """(start, change) of a reading from ``a`` to ``b``: None when it does not change (or is missing)."""
    if a is None or b is None:
        return None
    if np.ndim(b) == 0:
        return None if a == b else (a, b - a)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.array_equal(a, b, equal_nan=True):
        return None
    return a, b - a


class Between:
    """Inputs between two frames (see module docstring), with each reading's change computed once per frame."""

    CONTINUOUS = ("gpu_util_frac", "coolant_flow_lpm", "loop_supply_temp_c", "outdoor_dry_bulb_c", "outdoor_wet_bulb_c")

    def __init__(self, prev: TickInputs, cur: TickInputs) -> None:
        self.prev, self.cur = prev, cur
        self.ramps = {k: r for k in self.CONTINUOUS if (r := _ramp(getattr(prev, k), getattr(cur, k))) is not None}

    def at(self, frac: float) -> TickInputs:
        """Inputs at ``frac`` (0–1) of the way from the earlier frame to the later one."""
        moved = {k: start + change * frac for k, (start, change) in self.ramps.items()}
        return dataclasses.replace(self.cur, ts=self.prev.ts + (self.cur.ts - self.prev.ts) * frac, **moved)


def between(prev: TickInputs, cur: TickInputs, frac: float) -> TickInputs:
    """Inputs at ``frac`` (0–1) of the way from ``prev`` to ``cur`` (see module docstring)."""
    return Between(prev, cur).at(frac)


@dataclasses.dataclass
class ShardRun:
    """What one shard's loop needs: the shard, its detail GPUs and job GPUs, the frame inputs and the cadence."""

    shard: Shard
    detail_gpus: np.ndarray  # site GPU ids of the recording's detail GPUs in this shard
    job_gpus: np.ndarray | None  # site GPU ids of the replayed job in this shard (None: no job)
    tick_s: float
    speed: float | None = None  # pace at this many times real time (None: as fast as possible)
    engine: type[TwinEngine] = ReplayEngine


def run_shard(run: ShardRun, frame_inputs, frames: range) -> dict[str, object]:
    """Tick ``run.shard`` over ``frames``; ``frame_inputs(i)`` gives the full site's inputs of frame ``i``.

    Returns per frame: the shard's rack, CDU and detail-GPU signals (arrays [n_frames, n]),
    its share of the summed signals, its hottest GPU, and per frame the job GPUs running
    below full clock as (site ids, clock fraction, 0 when down).
    """
    shard, tick_s = run.shard, run.tick_s
    engine = run.engine(shard.tables, start=frame_inputs(frames[0]).ts, settle=False)
    local = run.detail_gpus - shard.gpus.start
    job_local = None if run.job_gpus is None else run.job_gpus - shard.gpus.start
    by_rack = engine.by_rack
    out: dict[str, list] = {
        k: [] for k in (*GPU_SIGNALS, *RACK_SIGNALS, *CDU_SIGNALS, *SUMMED, "max_gpu_temp_c", "job_slow", *PER_TICK)
    }

    def count(snap) -> None:
        out["tick_gpus_throttled"].append(np.count_nonzero(snap.gpu_state == GPU_THROTTLED))
        out["tick_gpus_down"].append(np.count_nonzero(snap.gpu_state == GPU_DOWN))
        out["tick_max_gpu_temp_c"].append(float(np.nanmax(snap.gpu_temp_c)))

    t_start = time.perf_counter()
    prev = None
    for n, i in enumerate(frames):
        cur = shard_inputs(frame_inputs(i), shard)
        if prev is None:
            snap = engine.settle(cur)
        else:
            dt_s = (cur.ts - prev.ts).total_seconds()
            steps = max(1, int(round(dt_s / tick_s)))
            ramp = Between(prev, cur) if steps > 1 else None
            for k in range(1, steps):
                count(engine.tick(dt_s / steps, ramp.at(k / steps)))
            snap = engine.tick(dt_s / steps, cur)
        count(snap)
        prev = cur
        live = snap.gpu_state != GPU_DOWN
        out["gpu_temp_c"].append(snap.gpu_temp_c[local])
        out["hbm_temp_c"].append(snap.hbm_temp_c[local])
        out["gpu_power_w"].append(snap.gpu_power_w[local])
        out["rack_max_gpu_temp_c"].append(snap.rack_max_gpu_temp_c)
        out["rack_mean_gpu_power_w"].append(
            by_rack.sum(np.where(live, snap.gpu_power_w, 0.0)) / np.maximum(by_rack.sum(live), 1)
        )
        out["rack_power_kw"].append(snap.rack_power_kw)
        out["coolant_supply_temp_c"].append(snap.coolant_supply_temp_c)
        out["coolant_return_temp_c"].append(snap.coolant_return_temp_c)
        out["it_power_mw"].append(float(snap.rack_power_kw.sum()) / 1e3)
        out["gpus_throttled"].append(np.count_nonzero(snap.gpu_state == GPU_THROTTLED))
        out["gpus_down"].append(np.count_nonzero(~live))
        out["max_gpu_temp_c"].append(float(np.nanmax(snap.gpu_temp_c)))
        if job_local is not None:
            clock = np.where(live[job_local], snap.throttle_frac[job_local], 0.0)
            slow = np.flatnonzero(clock < 1.0)
            out["job_slow"].append((run.job_gpus[slow], clock[slow]))
        if run.speed is not None and n > 0:
            ahead_s = (cur.ts - frame_inputs(frames[0]).ts) / timedelta(seconds=1) / run.speed - (
                time.perf_counter() - t_start
            )
            if ahead_s > 0:
                time.sleep(ahead_s)
    arrays = {k: np.stack(out[k]) for k in (*GPU_SIGNALS, *RACK_SIGNALS, *CDU_SIGNALS)}
    arrays.update({k: np.asarray(out[k], dtype=np.float64) for k in (*SUMMED, "max_gpu_temp_c", *PER_TICK)})
    arrays["job_slow"] = out["job_slow"]
    return arrays

"""What the live fleet runs where, for the twin: per GPU its job, utilisation and power cap; per node out of service.

:class:`OccupancyBuilder` keeps the per-GPU arrays of one :class:`twin.fleet.state.FleetRun`
and brings them up to date from one refresh to the next by rewriting only the GPUs of the
jobs that changed since: a job that started, stopped, moved to spares, got a new cap or
went from restarting to progressing (its ``epoch``, cap and phase differ from the last
refresh), and the GPUs of the jobs gone.  On colossus a 5 s refresh touches a handful of
jobs instead of looking up 100,352 GPUs twice; when many jobs changed (the first refresh,
a demand-response cut) it rebuilds every GPU from per-job tables in one pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.fleet.cluster import UP
from twin.fleet.state import FleetRun

REBUILD_JOBS = 256  # more changed jobs than this: rebuild every GPU instead of the jobs' GPUs


@dataclass
class Occupancy:
    """What the fleet runs where, for the twin: per GPU and per node.

    ``gpu_job`` the fleet's job row per GPU (-1 free); ``gpu_util_frac`` utilisation (0 free or
    restarting); ``gpu_power_limit_w`` the job's power cap (NaN: none); ``nodes_out`` nodes out of
    service (down, in repair, lemon, drained).  ``gpu_job`` is the model's own array and the two
    per-GPU values are updated in place at every refresh: read them, never keep them.
    """

    gpu_job: np.ndarray
    gpu_util_frac: np.ndarray
    gpu_power_limit_w: np.ndarray
    nodes_out: np.ndarray
    version: int = 0

    @property
    def gpus_allocated_count(self) -> int:
        return int((self.gpu_job >= 0).sum())


class OccupancyBuilder:
    """Per-GPU utilisation and cap of a run's jobs, refreshed by the jobs that changed (module docstring)."""

    def __init__(self, run: FleetRun) -> None:
        self.run = run
        n = run.topo.n_gpus
        self.util = np.zeros(n)
        self.cap = np.full(n, math.nan)
        self.rows = np.zeros(0, np.int64)  # running rows at the last refresh, ascending
        self._epoch = np.zeros(0, np.int64)
        self._cap_w = np.zeros(0)
        self._progressing = np.zeros(0, bool)
        self._gpus: dict[int, np.ndarray] = {}  # GPU ids of each running row at the last refresh

    def refresh(self, rows: np.ndarray, version: int) -> Occupancy:
        """The occupancy now; ``rows`` the running jobs' rows, ascending."""
        run = self.run
        epoch, cap_w = run.epoch[rows], run.cap_w[rows]
        progressing = run.resume_s[rows] <= run.now_s
        at = np.minimum(np.searchsorted(self.rows, rows), max(self.rows.size - 1, 0))
        kept = self.rows.size > 0
        same = (
            (self.rows[at] == rows) & (self._epoch[at] == epoch) & (self._cap_w[at] == cap_w)
            if kept
            else np.zeros(rows.size, bool)
        )
        if kept:
            same &= self._progressing[at] == progressing
        changed = rows[~same]
        keep = np.zeros(self.rows.size, bool)
        keep[at[same]] = True
        gone = self.rows[~keep]  # stopped, or changed
        if changed.size + gone.size > REBUILD_JOBS:
            self._rebuild(rows, cap_w, progressing)
        else:
            self._update(gone, changed, progressing[~same], cap_w[~same])
        self.rows, self._epoch, self._cap_w, self._progressing = rows, epoch, cap_w, progressing
        return Occupancy(
            gpu_job=run.cluster.gpu_job,
            gpu_util_frac=self.util,
            gpu_power_limit_w=self.cap,
            nodes_out=run.cluster.node_state != UP,
            version=version,
        )

    def _update(self, gone: np.ndarray, changed: np.ndarray, progressing: np.ndarray, cap_w: np.ndarray) -> None:
        """Clear the GPUs the ``gone`` rows held, then write the ``changed`` rows' values on theirs."""
        run = self.run
        for j in gone.tolist():
            old = self._gpus.pop(j)
            self.util[old] = 0.0
            self.cap[old] = math.nan
        util_frac = run.table.util_frac
        for j, prog, cap in zip(changed.tolist(), progressing.tolist(), cap_w.tolist(), strict=True):
            gpus = run.gpus[j]
            self._gpus[j] = gpus
            self.util[gpus] = util_frac[j] if prog else 0.0
            self.cap[gpus] = cap if math.isfinite(cap) else math.nan

    def _rebuild(self, rows: np.ndarray, cap_w: np.ndarray, progressing: np.ndarray) -> None:
        """Every GPU from per-job tables (the free GPUs' -1 reads the last slot: 0 and NaN)."""
        run = self.run
        lut_util = np.zeros(run.n_jobs + 1)
        lut_cap = np.full(run.n_jobs + 1, math.nan)
        lut_util[rows] = np.where(progressing, run.table.util_frac[rows], 0.0)
        lut_cap[rows] = np.where(np.isfinite(cap_w), cap_w, math.nan)
        gj = run.cluster.gpu_job
        self.util[:] = lut_util[gj]
        self.cap[:] = lut_cap[gj]
        self._gpus = {j: run.gpus[j] for j in rows.tolist()}

"""Figures of a fleet run: per job, per team and for the fleet.

Per job: wait (first start − submit), JCT (end − submit), bounded slowdown
``max(1, JCT / max(run, τ))`` with ``τ = 10 s`` ([Feitelson-Metrics]), GPU-hours allocated,
tokens kept, goodput (tokens kept per second of JCT), ETTR (progress over the wall time
it held GPUs: the Meta definition of effective training time, [Kokolis-HPCA25]),
preemptions and restarts.

Fleet signals are piecewise constant between events and integrated exactly: allocated
GPUs, GPUs making progress, pending jobs, fragmented GPUs and facility power; energy
[MWh], cost from an hourly tariff and carbon from an hourly grid intensity (each a
repeating series starting at hour 0 of the run), tokens per MWh.  The queueing figures
RAPS reports ([RAPS-2024]): mean wait, mean turnaround and the area-weighted response time
``Σ (nodes · run · turnaround) / Σ (nodes · run)`` over finished jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from twin.fleet.state import DONE, KILLED, NEVER, PENDING, RUNNING, FleetRun

BOUNDED_SLOWDOWN_TAU_S = 10.0


@dataclass
class HourlySeries:
    """A value per hour, repeated when the run is longer than the series; cumulative integral cached."""

    values: np.ndarray

    def __post_init__(self) -> None:
        v = np.asarray(self.values, dtype=np.float64)
        if v.size == 0 or not np.all(np.isfinite(v)):
            raise ValueError("an hourly series needs at least one finite value")
        self.values = v
        self._cum_h = np.concatenate(([0.0], np.cumsum(v)))

    def integral(self, t0_s: float, t1_s: float) -> float:
        """∫ value dt over ``[t0_s, t1_s]`` in value·hours."""
        return self._at(t1_s / 3600.0) - self._at(t0_s / 3600.0)

    def _at(self, h: float) -> float:
        n = self.values.size
        cycles, rest = divmod(h, n)
        i = int(rest)
        return cycles * self._cum_h[-1] + self._cum_h[i] + (rest - i) * self.values[min(i, n - 1)]


class Recorder:
    """Integrates the fleet's signals over time.

    The levels (allocated GPUs, GPUs making progress, pending jobs, fragmented GPUs, facility power [MW])
    are attributes, set together by :meth:`set_levels`; each has its integral over time in ``<level>_area``
    [level·s], which :meth:`mean` reads by name.
    """

    def __init__(self, n_gpus: int, tariff: HourlySeries | None, carbon: HourlySeries | None) -> None:
        self.n_gpus = n_gpus
        self.tariff, self.carbon = tariff, carbon
        self.t = 0.0
        self.alloc = self.busy = self.queue = self.frag = self.power_mw = 0.0
        self.alloc_area = self.busy_area = self.queue_area = self.frag_area = self.power_mw_area = 0.0
        self.cost_usd = 0.0
        self.carbon_kg = 0.0
        self.peak_power_mw = 0.0
        self.min_power_mw = math.inf

    def advance(self, t: float) -> None:
        t0 = self.t
        if t <= t0:
            return
        dt = t - t0
        self.alloc_area += self.alloc * dt
        self.busy_area += self.busy * dt
        self.queue_area += self.queue * dt
        self.frag_area += self.frag * dt
        self.power_mw_area += self.power_mw * dt
        if self.tariff is not None:
            self.cost_usd += self.power_mw * self.tariff.integral(t0, t)
        if self.carbon is not None:
            self.carbon_kg += self.power_mw * self.carbon.integral(t0, t)
        self.t = t

    def set_levels(self, alloc: float, queue: float, frag: float, power_mw: float) -> None:
        """The levels from now on (GPUs, jobs, GPUs, MW)."""
        self.alloc, self.queue, self.frag, self.power_mw = alloc, queue, frag, power_mw
        if power_mw > self.peak_power_mw:
            self.peak_power_mw = power_mw
        if power_mw < self.min_power_mw:
            self.min_power_mw = power_mw

    def mean(self, key: str) -> float:
        return getattr(self, key + "_area") / self.t if self.t > 0 else 0.0


def _stats(x: np.ndarray) -> tuple[float, float]:
    return (float(x.mean()), float(np.median(x))) if x.size else (math.nan, math.nan)


def job_rows(run: FleetRun, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per-job figures of ``rows`` (arrays)."""
    tab = run.table
    end = np.where(np.isnan(run.end_s[rows]), run.now_s, run.end_s[rows])
    wait = run.first_start_s[rows] - tab.submit_s[rows]
    jct = end - tab.submit_s[rows]
    held = np.maximum(run.gpu_s[rows] / np.maximum(tab.n_gpus[rows], 1), 1e-9)
    return {
        "wait_s": wait,
        "jct_s": jct,
        "bounded_slowdown_ratio": np.maximum(1.0, jct / np.maximum(tab.run_s[rows], BOUNDED_SLOWDOWN_TAU_S)),
        "gpu_h": run.gpu_s[rows] / 3600.0,
        "tokens_count": run.tokens[rows],
        "goodput_tokens_per_s": np.where(jct > 0, run.tokens[rows] / np.maximum(jct, 1e-9), 0.0),
        "ettr_frac": np.minimum(run.done_s[rows] / held, 1.0),
        "preemptions_count": run.preemptions[rows],
        "restarts_count": run.restarts[rows],
    }


def team_rows(run: FleetRun) -> list[dict[str, Any]]:
    """One row per team: jobs, finished, mean wait and JCT, bounded slowdown, GPU-hours, tokens, ETTR."""
    tab = run.table
    out = []
    finished = np.isin(run.status, (DONE, KILLED))
    for t, name in enumerate(tab.team_names):
        mine = np.flatnonzero(tab.team == t)
        if mine.size == 0:
            continue
        fin = mine[finished[mine]]
        started = mine[~np.isnan(run.first_start_s[mine])]
        f = job_rows(run, fin)
        s = job_rows(run, started)
        out.append(
            {
                "team": name,
                "jobs_count": int(mine.size),
                "jobs_completed_count": int(fin.size),
                "mean_wait_s": _stats(s["wait_s"])[0],
                "mean_jct_s": _stats(f["jct_s"])[0],
                "mean_bounded_slowdown_ratio": _stats(f["bounded_slowdown_ratio"])[0],
                "gpu_h": float(run.gpu_s[mine].sum() / 3600.0),
                "tokens_count": float(run.tokens[mine].sum()),
                "ettr_frac": _ettr(run, started),
                "preemptions_count": int(run.preemptions[mine].sum()),
                "restarts_count": int(run.restarts[mine].sum()),
                "gpus_held_count": int(run.acct.team_gpus[t]),
            }
        )
    return out


def _ettr(run: FleetRun, rows: np.ndarray) -> float:
    """Progress over the GPU-held wall time, weighted by GPUs."""
    if rows.size == 0:
        return math.nan
    g = run.table.n_gpus[rows]
    held = run.gpu_s[rows] / np.maximum(g, 1)
    return float((run.done_s[rows] * g).sum() / max((held * g).sum(), 1e-9))


def fleet_report(run: FleetRun, rec: Recorder, wall_s: float) -> dict[str, Any]:
    """The fleet's figures as a JSON-ready dict (see the module docstring)."""
    tab = run.table
    finished = np.flatnonzero(np.isin(run.status, (DONE, KILLED)))
    started = np.flatnonzero(~np.isnan(run.first_start_s))
    f = job_rows(run, finished)
    s = job_rows(run, started)
    mean_wait, median_wait = _stats(s["wait_s"])
    mean_turn, _ = _stats(f["jct_s"])
    area = tab.n_gpus[finished] * tab.run_s[finished]
    energy = rec.power_mw_area / 3600.0
    tokens = float(run.tokens.sum())
    return {
        "jobs_count": int(tab.n_jobs),
        "jobs_completed_count": int((run.status == DONE).sum()),
        "jobs_killed_count": int((run.status == KILLED).sum()),
        "jobs_running_count": int((run.status == RUNNING).sum()),
        "jobs_pending_count": int((run.status == PENDING).sum()),
        "jobs_never_count": int((run.status == NEVER).sum()),
        "mean_wait_s": mean_wait,
        "median_wait_s": median_wait,
        "mean_turnaround_s": mean_turn,
        "mean_bounded_slowdown_ratio": _stats(f["bounded_slowdown_ratio"])[0],
        "area_weighted_response_s": float((area * f["jct_s"]).sum() / area.sum()) if area.sum() > 0 else math.nan,
        "allocated_frac": rec.mean("alloc") / max(rec.n_gpus, 1),
        "utilisation_frac": rec.mean("busy") / max(rec.n_gpus, 1),
        "fragmentation_frac": rec.mean("frag") / max(rec.n_gpus, 1),
        "mean_queue_count": rec.mean("queue"),
        "energy_mwh": energy,
        "mean_power_mw": rec.mean("power_mw"),
        "peak_power_mw": rec.peak_power_mw,
        "tokens_count": tokens,
        "tokens_per_mwh": tokens / energy if energy > 0 else math.nan,
        "gpu_h": float(run.gpu_s.sum() / 3600.0),
        "lost_work_gpu_h": float((run.lost_work_s * tab.n_gpus).sum() / 3600.0),
        "cost_usd": rec.cost_usd if rec.tariff is not None else math.nan,
        "carbon_kg": rec.carbon_kg if rec.carbon is not None else math.nan,
        "preemptions_count": int(run.preemptions.sum()),
        "restarts_count": int(run.restarts.sum()),
        "simulated_s": rec.t,
        "sim_wall_s": wall_s,
    }

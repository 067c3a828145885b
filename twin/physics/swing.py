"""Site power swings of synchronous training and whether generation can follow them.

Every training step has a compute phase (GPUs near their busy power) and a
communication/checkpoint phase (near idle); with thousands of GPUs in lock-step the
whole site load swings by tens of MW every step ([Llama3-2024 §3.3.4]; [Choukse-2025]; Uptime Intelligence: swings beyond 100 % of the low point every
1–2 s).

Model (units in names):

* amplitude of a job ``ΔP = n_gpus · (P_busy − P_comm) · k_node`` where ``k_node`` is
  the facility power per watt of GPU board power (PSU and distribution losses); jobs
  are summed in phase (worst case);
* ramp rate ``ΔP / t_edge`` with ``t_edge`` the time the GPUs take to move between the
  two power levels (``EDGE_S``, [E]: the board power controller settles in tens of
  milliseconds; fleets are not perfectly aligned, so 0.1 s for the site);
* what supply can follow within the shorter phase ``t_phase``: generators and grid
  change output by at most ``Σ ramp_mw_per_s · t_phase``; batteries respond at once up
  to their spare power; the rest is the shortfall (to be absorbed by ride-through,
  frequency excursions or GPU-side smoothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.site.tables import SOURCE_KINDS

EDGE_S = 0.1  # [E] compute ↔ communication power transition time of a synchronous job
_BATTERY = SOURCE_KINDS.index("battery")


@dataclass(frozen=True)
class SwingJob:
    """Power profile of one synchronous training job."""

    n_gpus: int
    step_time_s: float
    compute_frac: float  # fraction of the step at busy power
    busy_w: float  # GPU board power in the compute phase
    comm_w: float  # GPU board power in the communication phase


@dataclass(frozen=True)
class SwingReport:
    """Swing amplitude, ramp and the comparison with what supply can follow."""

    amplitude_mw: float
    ramp_mw_per_s: float
    period_s: float
    phase_s: float  # shorter of the two phases of the fastest job
    followable_mw: float  # swing that generation ramp + battery can track within one phase
    generation_ramp_mw_per_s: float
    battery_headroom_mw: float
    shortfall_mw: float
    within_limits: bool


def job_amplitude_mw(job: SwingJob, facility_w_per_gpu_w: float = 1.0) -> float:
    """Swing amplitude of one job [MW]: ``n · (P_busy − P_comm) · k_node``."""
    if job.n_gpus < 0 or job.step_time_s <= 0 or not 0.0 <= job.compute_frac <= 1.0:
        raise ValueError(f"invalid swing job {job!r}: need n_gpus >= 0, step_time_s > 0, compute_frac in [0, 1]")
    return job.n_gpus * max(job.busy_w - job.comm_w, 0.0) * facility_w_per_gpu_w / 1e6


def project_swing(
    jobs: list[SwingJob],
    source_kind: np.ndarray,
    source_capacity_mw: np.ndarray,
    source_ramp_mw_per_s: np.ndarray,
    source_power_mw: np.ndarray,
    source_live: np.ndarray,
    battery_soc_frac: np.ndarray | None = None,
    facility_w_per_gpu_w: float = 1.0,
    edge_s: float = EDGE_S,
) -> SwingReport:
    """Swing of ``jobs`` against the live sources (see module docstring).

    ``source_power_mw`` is what each source delivers now (a battery's spare power is its
    capacity minus its present output); a battery with no charge left gives nothing.
    """
    if edge_s <= 0:
        raise ValueError("edge_s: must be > 0")
    amplitude = float(sum(job_amplitude_mw(j, facility_w_per_gpu_w) for j in jobs))
    active = [j for j in jobs if j.n_gpus > 0 and 0.0 < j.compute_frac < 1.0]
    if active:
        fastest = min(active, key=lambda j: j.step_time_s)
        period = fastest.step_time_s
        phase = period * min(fastest.compute_frac, 1.0 - fastest.compute_frac)
    else:
        period, phase = float("inf"), float("inf")
    live = np.asarray(source_live, dtype=bool)
    battery = (np.asarray(source_kind) == _BATTERY) & live
    if battery_soc_frac is not None:
        battery &= np.nan_to_num(battery_soc_frac, nan=0.0) > 0.0
    gen = live & ~(np.asarray(source_kind) == _BATTERY)
    gen_ramp = float(np.sum(source_ramp_mw_per_s[gen]))
    headroom = float(np.sum(np.maximum(source_capacity_mw[battery] - source_power_mw[battery], 0.0)))
    gen_follow = gen_ramp * phase if np.isfinite(phase) else float("inf")
    followable = gen_follow + headroom
    shortfall = max(amplitude - followable, 0.0)
    if shortfall <= 1e-9 * max(amplitude, 1.0):  # rounding, not a shortfall
        shortfall = 0.0
    return SwingReport(
        amplitude_mw=amplitude,
        ramp_mw_per_s=amplitude / edge_s,
        period_s=period,
        phase_s=phase,
        followable_mw=float(min(followable, 1e12)),
        generation_ramp_mw_per_s=gen_ramp,
        battery_headroom_mw=headroom,
        shortfall_mw=shortfall,
        within_limits=shortfall <= 0.0,
    )

"""Site power swings of synchronous training and whether generation can follow them.

Every training step has a compute phase (GPUs near their busy power) and a
communication/checkpoint phase (near idle); with thousands of GPUs in lock-step the
whole site load swings by tens of MW every step ([Llama3-2024 §3.3.4]; [Choukse-2025]; Uptime Intelligence: swings beyond 100 % of the low point every
1–2 s).  The shape of each job's power comes from its phases
(:mod:`twin.training.phases`: step segments, checkpoints, evaluations, restarts) as a
:class:`ProfileStats` in the power-fraction space; a
:class:`SwingJob` scales it by the job's GPUs and its throttled busy and idle power.

Model (units in names):

* amplitude of a job ``ΔP = n · Δf · (P_busy − P_idle) · k_node``: ``Δf`` the
  peak-to-peak power fraction within a step, ``P_busy`` the throttled board power while
  computing, ``k_node`` the facility power per watt of GPU board power (PSU and
  distribution losses);
* jobs combine by ``alignment``: ``"synchronised"`` (worst case: steps, checkpoints and
  evaluations of all jobs in phase, amplitudes and dips add) or ``"independent"`` (steps
  not in phase: amplitudes add in quadrature, exact for the RMS of independent signals and
  used for the peak-to-peak too; checkpoints and evaluations never coincide: the largest
  single dip);
* ramp rate: the steepest edge of each job's step when every level change of its power
  takes ``EDGE_S`` ([E]: the board power controller settles in tens of milliseconds; fleets
  are not perfectly aligned, so 0.1 s for the site), ``ProfileStats.ramp_frac_per_s``
  scaled like the amplitude; a two-phase step ramps its whole swing in ``EDGE_S``, a
  pipeline-parallel job's fill and drain climb stage by stage (its effective edge time
  ``edge_s`` is the swing over that ramp); jobs' ramps combine like their amplitudes;
* frequency content: the dominant line (largest Fourier line among step harmonics,
  checkpoint and evaluation trains; lines of the same period add like the amplitudes);
* dips: a checkpoint (or evaluation) drops the job from its mean power to the checkpoint
  (evaluation) power for the write (evaluation) time, then surges back within ``EDGE_S``;
  a restart drops one job (failures are independent: the largest job) to idle through
  detection, drain and restore, then ramps back over the warm-up;
* what supply can follow within the shorter phase ``t_phase``: generators change output by
  at most ``Σ ramp_mw_per_s · t_phase``; a grid is stiff and follows at once up to its
  contract's import limit; batteries respond at once up to their spare power; the rest is
  the shortfall (to be absorbed by ride-through, frequency excursions or GPU-side
  smoothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.site.tables import SOURCE_KINDS

EDGE_S = 0.1  # [E] compute ↔ communication power transition time of a synchronous job
ALIGNMENTS = ("synchronised", "independent")
DEFAULT_ALIGNMENT = "synchronised"
_BATTERY = SOURCE_KINDS.index("battery")
_GRID = SOURCE_KINDS.index("grid")


@dataclass(frozen=True)
class ProfileStats:
    """Shape of one job's power in the fraction space (scale by ``busy − idle`` for W).

    Peak-to-peak, dips and line amplitudes are differences of fractions; the mean is a level.
    """

    step_s: float
    high_s: float  # time per step above the midpoint (compute side)
    mean_frac: float  # duty-weighted mean over the step
    swing_frac: float  # peak-to-peak within a step
    dominant_period_s: float  # period of the largest Fourier line (step harmonics, checkpoints, evaluations)
    dominant_line_frac: float  # amplitude of that line
    step_line_frac: float  # amplitude of the line at the step period
    checkpoint_period_s: float
    checkpoint_dip_frac: float  # training mean minus checkpoint power
    checkpoint_dip_s: float
    eval_dip_frac: float
    eval_dip_s: float
    restart_dip_frac: float  # training mean minus restart (idle) power, then the warm-up surge
    restart_dip_s: float
    restart_warmup_s: float
    ramp_frac_per_s: float = 0.0  # steepest edge of the step, each level change taking EDGE_S [1/s]
    edge_s: float = EDGE_S  # the swing over that ramp: the job's effective edge time [s]
    step_lines_frac: tuple[float, ...] = ()  # amplitudes of the step's harmonics n = 1, 2, … (period step_s / n)
    checkpoint_line_frac: float = 0.0  # fundamental of the checkpoint train (period checkpoint_period_s)


@dataclass(frozen=True)
class SwingJob:
    """Power of one synchronous training job: its GPUs, power levels and phase shape."""

    n_gpus: int
    busy_w: float  # throttled GPU board power while computing
    idle_w: float  # GPU board power while waiting
    shape: ProfileStats

    def mw(self, frac: float, facility_w_per_gpu_w: float = 1.0) -> float:
        """A power-fraction difference of this job as facility MW."""
        return self.n_gpus * frac * (self.busy_w - self.idle_w) * facility_w_per_gpu_w / 1e6


@dataclass(frozen=True)
class SwingReport:
    """Swing amplitude, ramp, frequency content and dips, and the comparison with what supply can follow."""

    amplitude_mw: float
    ramp_mw_per_s: float
    period_s: float
    phase_s: float  # shorter of the two phases of the fastest job
    followable_mw: float  # swing that generation ramp + battery can track within one phase
    generation_ramp_mw_per_s: float
    battery_headroom_mw: float
    shortfall_mw: float
    within_limits: bool
    jobs_in_phase: bool = True  # alignment: True = synchronised worst case
    dominant_period_s: float = math.inf  # period of the largest Fourier line of the jobs' power
    dominant_line_mw: float = 0.0  # amplitude of that line (sinusoid peak)
    checkpoint_period_s: float = math.inf  # shortest checkpoint period among the jobs
    checkpoint_dip_mw: float = 0.0  # drop of site power during a checkpoint write
    checkpoint_dip_s: float = 0.0
    eval_dip_mw: float = 0.0
    eval_dip_s: float = 0.0
    restart_dip_mw: float = 0.0  # drop while the largest job restarts
    restart_dip_s: float = 0.0
    restart_surge_mw_per_s: float = 0.0  # ramp back to training power over the warm-up
    edge_s: float = EDGE_S  # amplitude over ramp: the effective time of a full swing edge
    lines_mw: tuple[tuple[float, float], ...] = ()  # (period_s, amplitude_mw) of the jobs' lines, largest first


def job_amplitude_mw(job: SwingJob, facility_w_per_gpu_w: float = 1.0) -> float:
    """Swing amplitude of one job [MW]: ``n · Δf · (P_busy − P_idle) · k_node``."""
    return job.mw(job.shape.swing_frac, facility_w_per_gpu_w)


def _combine(values: list[float], in_phase: bool) -> float:
    return float(sum(values)) if in_phase else float(math.sqrt(sum(v * v for v in values)))


def _dominant_line(jobs: list[SwingJob], k: float, in_phase: bool) -> tuple[float, float]:
    """(period_s, amplitude_mw) of the largest line; lines of equal period combine like amplitudes."""
    by_period: dict[float, list[float]] = {}
    for j in jobs:
        lines = {round(j.shape.step_s, 6): j.shape.step_line_frac}
        lines[round(j.shape.dominant_period_s, 6)] = j.shape.dominant_line_frac  # the same line if the step's
        for period, frac in lines.items():
            if math.isfinite(period) and frac > 0:
                by_period.setdefault(period, []).append(j.mw(frac, k))
    if not by_period:
        return math.inf, 0.0
    period, amps = max(by_period.items(), key=lambda pa: _combine(pa[1], in_phase))
    return float(period), _combine(amps, in_phase)


def job_ramp_mw_per_s(job: SwingJob, facility_w_per_gpu_w: float = 1.0) -> float:
    """Steepest site power ramp of one job's step [MW/s] (``ProfileStats.ramp_frac_per_s`` scaled)."""
    return job.mw(job.shape.ramp_frac_per_s, facility_w_per_gpu_w)


def lines_mw(
    jobs: list[SwingJob], facility_w_per_gpu_w: float = 1.0, in_phase: bool = True
) -> tuple[tuple[float, float], ...]:
    """``(period_s, amplitude_mw)`` of every job's step harmonics and checkpoint line, largest first.

    Lines of the same period combine like the amplitudes (added in phase, in quadrature
    otherwise); they are what drives the frequency of an island through its governors
    (:func:`twin.physics.island.line_freq_pp_frac`).
    """
    by_period: dict[float, list[float]] = {}
    for j in jobs:
        lines = [(j.shape.step_s / (n + 1), a) for n, a in enumerate(j.shape.step_lines_frac)]
        lines.append((j.shape.checkpoint_period_s, j.shape.checkpoint_line_frac))
        for period, frac in lines:
            if math.isfinite(period) and frac > 0:
                by_period.setdefault(round(period, 6), []).append(j.mw(frac, facility_w_per_gpu_w))
    out = [(float(p), _combine(a, in_phase)) for p, a in by_period.items()]
    return tuple(sorted(out, key=lambda pa: -pa[1]))


def dips(
    jobs: list[SwingJob], facility_w_per_gpu_w: float = 1.0, alignment: str = DEFAULT_ALIGNMENT, edge_s: float = EDGE_S
) -> dict[str, float]:
    """Frequency content and whole-job dips of ``jobs`` in facility MW, MW/s and s (see module docstring)."""
    if alignment not in ALIGNMENTS:
        raise ValueError(f"alignment: must be one of {ALIGNMENTS}, got {alignment!r}")
    k, in_phase = facility_w_per_gpu_w, alignment == "synchronised"
    period, line = _dominant_line(jobs, k, in_phase)
    out = {"dominant_period_s": period, "dominant_line_mw": line}
    for kind in ("checkpoint", "eval"):
        hit = [j for j in jobs if getattr(j.shape, f"{kind}_dip_s") > 0]
        depth = [j.mw(getattr(j.shape, f"{kind}_dip_frac"), k) for j in hit]
        out[f"{kind}_dip_mw"] = (sum(depth) if in_phase else max(depth)) if hit else 0.0
        out[f"{kind}_dip_s"] = max((getattr(j.shape, f"{kind}_dip_s") for j in hit), default=0.0)
    out["checkpoint_period_s"] = min((j.shape.checkpoint_period_s for j in jobs), default=math.inf)
    big = max(jobs, key=lambda j: j.mw(j.shape.restart_dip_frac, k), default=None)
    restart = big.mw(big.shape.restart_dip_frac, k) if big is not None else 0.0
    out["restart_dip_mw"] = restart
    out["restart_dip_s"] = big.shape.restart_dip_s if big is not None else 0.0
    out["restart_surge_mw_per_s"] = restart / max(big.shape.restart_warmup_s, edge_s) if big is not None else 0.0
    return out


def project_swing(
    jobs: list[SwingJob],
    source_kind: np.ndarray,
    source_capacity_mw: np.ndarray,
    source_ramp_mw_per_s: np.ndarray,
    source_power_mw: np.ndarray,
    source_live: np.ndarray,
    battery_soc_frac: np.ndarray | None = None,
    facility_w_per_gpu_w: float = 1.0,
    alignment: str = DEFAULT_ALIGNMENT,
) -> SwingReport:
    """Swing of ``jobs`` against the live sources (see module docstring).

    ``source_power_mw`` is what each source delivers now (a battery's spare power is its
    capacity minus its present output); a battery with no charge left gives nothing.
    """
    extra = dips(jobs, facility_w_per_gpu_w, alignment)
    in_phase = alignment == "synchronised"
    amplitude = _combine([job_amplitude_mw(j, facility_w_per_gpu_w) for j in jobs], in_phase)
    ramp = _combine([job_ramp_mw_per_s(j, facility_w_per_gpu_w) for j in jobs], in_phase)
    active = [j for j in jobs if j.n_gpus > 0 and 0.0 < j.shape.high_s < j.shape.step_s]
    if active:
        fastest = min(active, key=lambda j: j.shape.step_s)
        period = fastest.shape.step_s
        phase = min(fastest.shape.high_s, period - fastest.shape.high_s)
    else:
        period, phase = float("inf"), float("inf")
    live = np.asarray(source_live, dtype=bool)
    battery = (np.asarray(source_kind) == _BATTERY) & live
    if battery_soc_frac is not None:
        battery &= np.nan_to_num(battery_soc_frac, nan=0.0) > 0.0
    grid = live & (np.asarray(source_kind) == _GRID)
    gen = live & ~(np.asarray(source_kind) == _BATTERY) & ~grid
    gen_ramp = float(np.sum(source_ramp_mw_per_s[gen]))
    headroom = float(np.sum(np.maximum(source_capacity_mw[battery] - source_power_mw[battery], 0.0)))
    grid_room = float(np.sum(np.maximum(source_capacity_mw[grid] - source_power_mw[grid], 0.0)))
    gen_follow = (gen_ramp * phase if np.isfinite(phase) else float("inf")) + grid_room
    followable = gen_follow + headroom
    shortfall = max(amplitude - followable, 0.0)
    if shortfall <= 1e-9 * max(amplitude, 1.0):  # rounding, not a shortfall
        shortfall = 0.0
    return SwingReport(
        amplitude_mw=amplitude,
        ramp_mw_per_s=ramp,
        edge_s=amplitude / ramp if ramp > 0 else EDGE_S,
        lines_mw=lines_mw(jobs, facility_w_per_gpu_w, in_phase),
        period_s=period,
        phase_s=phase,
        followable_mw=float(min(followable, 1e12)),
        generation_ramp_mw_per_s=gen_ramp,
        battery_headroom_mw=headroom,
        shortfall_mw=shortfall,
        within_limits=shortfall <= 0.0,
        jobs_in_phase=alignment == "synchronised",
        **extra,
    )

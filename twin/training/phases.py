"""GPU power of a training job through its phases, at sub-second resolution.

A synchronous job repeats one step: forward/backward compute near the (throttled) power
limit, the pipeline's fill and drain, then the data-parallel gradient exchange and the
optimizer update ([Choukse-2025]: every iteration alternates compute-heavy phases near TDP
with communication-heavy phases near idle).  Not every wait is one synchronous low segment:

* tensor-, context- and expert-parallel collectives run inside every layer (two all-reduces
  per layer forward and two backward for tensor parallelism [Megatron-SC21 §2.3]) and the
  pipeline's point-to-point sends once per micro-batch, so they alternate with compute every
  few milliseconds: at the time scales of the power supply they lower the compute plateau
  to its duty-weighted mean instead of dipping it;
* the pipeline bubble is staggered: stage ``i`` starts its first forward ``i`` slots after
  stage 0 and finishes its last backward ``p − 1 − i`` slots before it [Megatron-SC21 §2.2],
  so the job's busy share climbs stage by stage over the fill and falls stage by stage over
  the drain (:func:`step_profile`: a staircase of ``p`` steps each way, the bubble's idle
  time exactly the missing area under it).  On top of the steps the schedule adds whole-job pauses: checkpoint writes (the
GPUs wait on storage, [Llama3-2024 §3.3.4]), evaluation (forward passes only: a lower
plateau, as the MLPerf power logs show [MLPerf-Logging]) and restarts after a failure
(idle through detection, drain and restore, then a warm-up ramp back to full power, see
:mod:`twin.training.restart`).

Power is written ``P = P_idle + f · (P_busy − P_idle)`` with a *power fraction* ``f`` per
phase (:data:`PHASE_POWER_FRAC`), so the shape of a job's power depends only on its
durations and is cached by them; ``P_busy`` is the board power the GPUs hold while
computing under the power limit and thermal throttling (the engine's throttled power,
not the TDP) and ``P_idle`` their idle power.

* :func:`step_profile` — the ordered segments of one step from the step-time breakdown;
* :func:`ramp_frac_per_s` — the steepest edge of the step, each level change taking ``EDGE_S``;
* :func:`waveform_frac` / :func:`waveform_w` — the sampled waveform over a window;
* :func:`fourier_lines` — exact Fourier lines of the periodic step (step period and its
  harmonics) and of the pause trains (checkpoint or evaluation period);
* :func:`profile_stats` — mean, peak-to-peak, dominant period and dips, all in the
  fraction space (scale them with :func:`to_watts`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import overload

import numpy as np

from twin.errors import InputError
from twin.physics.swing import EDGE_S, ProfileStats, SwingJob

# Power fraction of each phase between idle (0) and the throttled busy power (1).
COMPUTE_POWER_FRAC = 1.0  # forward/backward GEMMs near the power limit [Choukse-2025]
COMM_POWER_FRAC = 0.15  # exposed communication, bubble, imbalance: near idle [Choukse-2025] [Est-Job-Phase-Power]
OPTIMIZER_POWER_FRAC = 0.5  # memory-bound elementwise update (Adam) [Est-Job-Phase-Power]
CHECKPOINT_POWER_FRAC = 0.0  # all GPUs wait on the checkpoint write [Llama3-2024 §3.3.4]
EVAL_POWER_FRAC = 0.5  # forward passes only, with the evaluation loop's host work [Est-Job-Phase-Power]
RESTART_POWER_FRAC = 0.0  # detection, drain and restore: GPUs idle (twin.training.restart)

PHASE_POWER_FRAC = {
    "compute": COMPUTE_POWER_FRAC,
    "comm": COMM_POWER_FRAC,
    "bubble": COMM_POWER_FRAC,
    "dp_comm": COMM_POWER_FRAC,
    "optimizer": OPTIMIZER_POWER_FRAC,
    "checkpoint": CHECKPOINT_POWER_FRAC,
    "eval": EVAL_POWER_FRAC,
    "restart": RESTART_POWER_FRAC,
}
# breakdown_s keys of twin.training.steptime.step_time by what they do to the step's power
_COMPUTE_KEYS = ("compute", "throttle_loss")  # the GPUs compute (throttle loss: only slower)
_FINE_COMM_KEYS = ("tp_comm", "cp_comm", "ep_comm", "pp_comm")  # per layer / micro-batch: inside the plateau
_WAIT_KEYS = ("bubble", "stage_imbalance")  # pipeline fill and drain, staggered over the stages
MAX_STAIRS = 32  # pipeline stages resolved per fill or drain ramp (more stages: equal groups of them)
MAX_SAMPLES = 4_000_000  # bound on a sampled waveform (32 MB of float64)
MAX_PAUSES = 100_000  # bound on the checkpoints, evaluations and restarts of one window
HARMONICS = 8  # step harmonics reported by fourier_lines


class PhaseProfileError(InputError):
    """A step profile or schedule that cannot describe a job's power."""


@dataclass(frozen=True)
class StepProfile:
    """One training step as ordered segments ``(name, duration_s, power_frac)``."""

    segments: tuple[tuple[str, float, float], ...]

    def __post_init__(self) -> None:
        if not self.segments:
            raise PhaseProfileError("step profile: needs at least one segment")
        for name, dur, frac in self.segments:
            if not (math.isfinite(dur) and dur >= 0.0):
                raise PhaseProfileError(f"step profile: segment {name} duration_s must be finite and >= 0, got {dur!r}")
            if not (math.isfinite(frac) and 0.0 <= frac <= 1.0):
                raise PhaseProfileError(f"step profile: segment {name} power_frac must be in [0, 1], got {frac!r}")
        if not self.step_s > 0.0:
            raise PhaseProfileError("step profile: segments must add up to a positive step time")

    @property
    def step_s(self) -> float:
        return float(sum(d for _, d, _ in self.segments))

    @property
    def mean_frac(self) -> float:
        """Duty-weighted power fraction of the step."""
        return float(sum(d * f for _, d, f in self.segments)) / self.step_s

    @property
    def high_s(self) -> float:
        """Time of the step above the midpoint of its lowest and highest power."""
        lo, hi = self.min_frac, self.max_frac
        return float(sum(d for _, d, f in self.segments if f > (lo + hi) / 2.0)) if hi > lo else self.step_s

    @property
    def max_frac(self) -> float:
        return max(f for _, d, f in self.segments if d > 0)

    @property
    def min_frac(self) -> float:
        return min(f for _, d, f in self.segments if d > 0)


def two_phase_profile(step_s: float, compute_frac: float, low_power_frac: float = COMM_POWER_FRAC) -> StepProfile:
    """A step of ``compute_frac · step_s`` at busy power and the rest at ``low_power_frac``."""
    if not 0.0 <= compute_frac <= 1.0:
        raise PhaseProfileError(f"compute_frac must be in [0, 1], got {compute_frac!r}")
    return StepProfile(
        (
            ("compute", step_s * compute_frac, COMPUTE_POWER_FRAC),
            ("comm", step_s * (1.0 - compute_frac), low_power_frac),
        )
    )


def step_profile(breakdown_s: dict[str, float], optimizer_s: float = 0.0, pp_stages: int = 1) -> StepProfile:
    """Segments of one step from a step-time breakdown (:func:`twin.training.steptime.step_time`).

    ``breakdown_s["compute"]`` includes the optimizer (``StepResult.ops_s["optimizer"]``),
    which is split off and placed last, after the data-parallel exchange.  Throttle loss
    counts as compute (the GPUs compute, only slower).  Fine-grained communication (TP, CP,
    EP, PP sends) shares the compute plateau at its duty-weighted power.  With
    ``pp_stages`` > 1 the bubble and stage-imbalance waits become the pipeline's fill and
    drain: ``min(p, MAX_STAIRS)`` stairs each way at busy shares ``(k + ½)/n``, each over
    ``W/n`` of the wait ``W`` (when the busy time ``B`` per stage is shorter than ``W``, the
    ramps take ``(B + W)/2`` each and never reach a full plateau).  The mean power of the
    step is the same as with one synchronous low segment; its edges are not.
    """
    opt = min(max(float(optimizer_s), 0.0), float(breakdown_s.get("compute", 0.0)))
    total: Callable[[tuple[str, ...]], float] = lambda keys: float(sum(max(breakdown_s.get(k, 0.0), 0.0) for k in keys))  # noqa: E731
    compute, fine, wait = total(_COMPUTE_KEYS) - opt, total(_FINE_COMM_KEYS), total(_WAIT_KEYS)
    busy = max(compute, 0.0) + fine
    plateau = (max(compute, 0.0) * COMPUTE_POWER_FRAC + fine * COMM_POWER_FRAC) / busy if busy > 0 else COMM_POWER_FRAC
    if pp_stages > 1 and wait > 0.0:
        n = int(min(pp_stages, MAX_STAIRS))
        ramp_s, peak = (wait, 1.0) if busy >= wait else ((busy + wait) / 2.0, busy / ((busy + wait) / 2.0))
        levels = [COMM_POWER_FRAC + (k + 0.5) / n * peak * (plateau - COMM_POWER_FRAC) for k in range(n)]
        segs = [("fill", ramp_s / n, f) for f in levels]
        segs.append(("compute", busy - ramp_s if busy >= wait else 0.0, plateau))
        segs += [("drain", ramp_s / n, f) for f in reversed(levels)]
    else:
        segs = [("compute", busy, plateau), ("bubble", wait, COMM_POWER_FRAC)]
    segs += [("dp_comm", total(("dp_comm",)), COMM_POWER_FRAC), ("optimizer", opt, OPTIMIZER_POWER_FRAC)]
    return StepProfile(tuple(segs))


def ramp_frac_per_s(profile: StepProfile, edge_s: float = EDGE_S) -> float:
    """Steepest edge of the periodic step when every level change takes ``edge_s`` [power fraction per s].

    The power the supply sees is the step smoothed over ``edge_s`` (a moving mean ``m``: a level
    change becomes a linear ramp of ``edge_s``).  The ramp is the largest change of ``m``
    within one ``edge_s``, over ``edge_s``: ``max |m(t) − m(t − e)| / e``, i.e.
    ``|F(t) − 2F(t − e) + F(t − 2e)| / e²`` with ``F`` the integral of the step, exact at the
    level changes and ``e`` and ``2e`` after them.  A full swing in one change ramps at
    ``Δf / e``; stairs farther apart than ``e`` (a pipeline's fill) each ramp on their own,
    closer ones add up; a pulse shorter than ``e`` ramps only by the power it carries.
    """
    if not (math.isfinite(edge_s) and edge_s > 0):
        raise PhaseProfileError(f"edge_s must be finite and > 0, got {edge_s!r}")
    bounds = np.concatenate([[0.0], np.cumsum([d for _, d, _ in profile.segments])])[:-1]
    t = np.concatenate([bounds, bounds + edge_s, bounds + 2.0 * edge_s])
    integral: Callable[[np.ndarray], np.ndarray] = lambda x: _step_integral(x, profile, 0.0)  # noqa: E731
    second = integral(t) - 2.0 * integral(t - edge_s) + integral(t - 2.0 * edge_s)
    return float(np.max(np.abs(second))) / (edge_s * edge_s)


@dataclass(frozen=True)
class JobSchedule:
    """Whole-job pauses on top of the steps [s of wall time unless named training time].

    A checkpoint is written after every ``checkpoint_interval_s`` of training, an
    evaluation of ``eval_s`` runs after every ``eval_interval_s`` of training (``evals_at_s``
    adds explicit ``(start_s, duration_s)`` evaluations, e.g. from a run log); ``restarts_at_s`` are failure
    instants: the job idles for ``restart_down_s`` (detection, drain and swap, restore)
    and then ramps linearly back over ``warmup_s``; its progress restarts from the last
    checkpoint, so the next checkpoint comes a full interval after the warm-up.
    """

    checkpoint_interval_s: float = math.inf
    checkpoint_write_s: float = 0.0
    eval_interval_s: float = math.inf
    eval_s: float = 0.0
    evals_at_s: tuple[tuple[float, float], ...] = ()
    restarts_at_s: tuple[float, ...] = ()
    restart_down_s: float = 0.0
    warmup_s: float = 0.0

    def __post_init__(self) -> None:
        for name in ("checkpoint_interval_s", "eval_interval_s"):
            if not getattr(self, name) > 0.0:
                raise PhaseProfileError(f"schedule: {name} must be > 0 (inf for none), got {getattr(self, name)!r}")
        for name in ("checkpoint_write_s", "eval_s", "restart_down_s", "warmup_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0.0):
                raise PhaseProfileError(f"schedule: {name} must be finite and >= 0, got {v!r}")
        for t, d in self.evals_at_s:
            if not (math.isfinite(t) and math.isfinite(d) and d >= 0.0):
                raise PhaseProfileError(f"schedule: evaluation ({t!r}, {d!r}) needs a finite start and duration >= 0")

    @property
    def checkpoint_period_s(self) -> float:
        """Wall time between checkpoint starts (interval + write), inf without checkpoints."""
        return (
            self.checkpoint_interval_s + self.checkpoint_write_s
            if math.isfinite(self.checkpoint_interval_s)
            else math.inf
        )


def _pauses(schedule: JobSchedule, window_s: float) -> list[tuple[float, float, str]]:
    """Whole-job pauses ``(start_s, duration_s, kind)`` in wall time inside ``[0, window_s)``."""
    out: list[tuple[float, float, str]] = []
    explicit = [(float(t), float(d), "eval") for t, d in schedule.evals_at_s]
    restarts = [(float(t), schedule.restart_down_s, "restart") for t in schedule.restarts_at_s]
    # walk training time: the next periodic checkpoint/evaluation, delayed by earlier pauses
    fixed = sorted(explicit + restarts)
    wall, train = 0.0, 0.0
    next_ckpt, next_eval = schedule.checkpoint_interval_s, schedule.eval_interval_s
    limit = window_s / min(schedule.checkpoint_interval_s, schedule.eval_interval_s) + len(fixed) + 2
    if limit > MAX_PAUSES:
        raise PhaseProfileError(f"schedule gives about {limit:,.0f} pauses in {window_s:g} s (at most {MAX_PAUSES:,})")
    for _ in range(int(limit)):
        due = min(next_ckpt, next_eval)
        t_due = wall + (due - train)
        pending = [p for p in fixed if p[0] >= wall and p[0] < t_due]
        if pending:
            start, dur, kind = pending[0]
            fixed.remove(pending[0])
            train += start - wall
        elif math.isfinite(due):
            kind = "checkpoint" if next_ckpt <= next_eval else "eval"
            start, dur = t_due, schedule.checkpoint_write_s if kind == "checkpoint" else schedule.eval_s
            train = due
            if kind == "checkpoint":
                next_ckpt += schedule.checkpoint_interval_s
            else:
                next_eval += schedule.eval_interval_s
        else:
            break
        if start >= window_s:
            break
        out.append((start, dur, kind))
        wall = start + dur + (schedule.warmup_s if kind == "restart" else 0.0)
        if kind == "restart":  # progress restarts from the last checkpoint: the next one is a full interval on
            train += schedule.warmup_s
            next_ckpt = train + schedule.checkpoint_interval_s
    return out


def waveform_frac(
    profile: StepProfile, schedule: JobSchedule | None, window_s: float, dt_s: float, step_offset_s: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(t_s, power_frac)`` sampled every ``dt_s`` over ``[0, window_s)``.

    Each sample is the mean of the piecewise-constant waveform over its interval
    ``[t, t + dt)`` (what an integrating power meter reports), so a short segment is not
    lost between samples.  ``step_offset_s`` shifts the step phase (jobs not in phase).
    During a warm-up after a restart the power is the step power times a linear ramp,
    taken at each sample's midpoint.
    """
    if not (math.isfinite(window_s) and window_s > 0 and math.isfinite(dt_s) and dt_s > 0):
        raise PhaseProfileError(f"window_s and dt_s must be finite and > 0, got {window_s!r}, {dt_s!r}")
    n = int(math.ceil(window_s / dt_s - 1e-9))
    if n > MAX_SAMPLES:
        raise PhaseProfileError(
            f"waveform of {n:,} samples exceeds {MAX_SAMPLES:,}: use a longer dt_s or a shorter window"
        )
    edges = np.arange(n + 1, dtype=np.float64) * dt_s
    schedule = schedule or JobSchedule()
    pauses = _pauses(schedule, window_s)
    frac = np.diff(_integral_frac(edges, profile, pauses, step_offset_s)) / dt_s
    if schedule.restarts_at_s and schedule.warmup_s > 0:
        frac *= _warmup_ramp(edges[:-1] + dt_s / 2.0, pauses, schedule.warmup_s)
    return edges[:-1], frac


def _step_integral(tau: np.ndarray, profile: StepProfile, step_offset_s: float) -> np.ndarray:
    """∫₀^τ f_step(u) du of the periodic step waveform (exact, piecewise linear in τ)."""
    durs = np.array([d for _, d, _ in profile.segments])
    fracs = np.array([f for _, _, f in profile.segments])
    bounds = np.concatenate([[0.0], np.cumsum(durs)])
    cum_at = np.concatenate([[0.0], np.cumsum(durs * fracs)])
    period, per_step = bounds[-1], cum_at[-1]

    def prim(x: np.ndarray) -> np.ndarray:
        k = np.floor(x / period)
        r = x - k * period
        i = np.clip(np.searchsorted(bounds, r, side="right") - 1, 0, len(durs) - 1)
        value: np.ndarray = k * per_step + cum_at[i] + (r - bounds[i]) * fracs[i]
        return value

    integral: np.ndarray = prim(tau + step_offset_s) - prim(np.zeros(1) + step_offset_s)
    return integral


def _integral_frac(
    t: np.ndarray, profile: StepProfile, pauses: list[tuple[float, float, str]], step_offset_s: float
) -> np.ndarray:
    """∫₀^t f(u) du of the job waveform with its pauses (warm-up ramps not applied)."""
    train = t.copy()  # training time elapsed at wall time t
    out = np.zeros_like(t)
    for start, dur, kind in pauses:
        frac = PHASE_POWER_FRAC[kind]
        inside = np.clip(t - start, 0.0, dur)
        train -= inside
        out += frac * inside
    total: np.ndarray = out + _step_integral(train, profile, step_offset_s)
    return total


def _warmup_ramp(mid_s: np.ndarray, pauses: list[tuple[float, float, str]], warmup_s: float) -> np.ndarray:
    """Multiplier of the step power after restarts: rises linearly 0 → 1 over ``warmup_s``."""
    ramp = np.ones_like(mid_s)
    if warmup_s <= 0:
        return ramp
    for start, dur, kind in pauses:
        if kind == "restart":
            x = mid_s - (start + dur)
            inside = (x >= 0.0) & (x < warmup_s)
            ramp[inside] = x[inside] / warmup_s
    return ramp


def waveform_w(
    profile: StepProfile,
    schedule: JobSchedule | None,
    window_s: float,
    dt_s: float,
    busy_w: float,
    idle_w: float,
    step_offset_s: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``(t_s, gpu_power_w)`` of one GPU of the job (see :func:`waveform_frac`)."""
    t, f = waveform_frac(profile, schedule, window_s, dt_s, step_offset_s)
    return t, to_watts(f, busy_w, idle_w)


@overload
def to_watts(frac: np.ndarray, busy_w: float, idle_w: float) -> np.ndarray: ...
@overload
def to_watts(frac: float, busy_w: float, idle_w: float) -> float: ...
def to_watts(frac: np.ndarray | float, busy_w: float, idle_w: float) -> np.ndarray | float:
    """Board power [W] of a power fraction between ``idle_w`` and ``busy_w``."""
    return idle_w + np.asarray(frac) * (busy_w - idle_w) if np.ndim(frac) else idle_w + float(frac) * (busy_w - idle_w)


def fourier_lines(profile: StepProfile, harmonics: int = HARMONICS) -> tuple[np.ndarray, np.ndarray]:
    """``(period_s, amplitude_frac)`` of the step's first ``harmonics`` Fourier lines.

    For the periodic piecewise-constant step ``f`` of period ``T``, the complex coefficient
    ``c_n = Σ_k f_k (e^{−i2πn t_{k+1}/T} − e^{−i2πn t_k/T}) / (−i2πn)``; the amplitude of the
    sinusoid at period ``T/n`` is ``2 |c_n|`` (a square wave of height ``h`` and duty ``d``
    has ``2h |sin(πnd)| / (πn)``).
    """
    durs = np.array([d for _, d, _ in profile.segments])
    fracs = np.array([f for _, _, f in profile.segments])
    bounds = np.concatenate([[0.0], np.cumsum(durs)])
    period = bounds[-1]
    n = np.arange(1, harmonics + 1, dtype=np.float64)[:, None]
    phase = np.exp(-2j * np.pi * n * bounds[None, :] / period)
    c = (fracs[None, :] * (phase[:, 1:] - phase[:, :-1])).sum(axis=1) / (-2j * np.pi * n[:, 0])
    return period / n[:, 0], 2.0 * np.abs(c)


def pulse_line_frac(depth_frac: float, duration_s: float, period_s: float) -> float:
    """Fundamental amplitude of a train of dips of ``depth_frac`` × ``duration_s`` every ``period_s``."""
    if not (math.isfinite(period_s) and period_s > 0 and duration_s > 0):
        return 0.0
    return 2.0 * abs(depth_frac) * abs(math.sin(math.pi * min(duration_s / period_s, 1.0))) / math.pi


def profile_stats(profile: StepProfile, schedule: JobSchedule | None = None, edge_s: float = EDGE_S) -> ProfileStats:
    """Mean, swing, steepest edge, dominant line and dips of a job (exact, no sampling)."""
    sch = schedule or JobSchedule()
    ramp = ramp_frac_per_s(profile, edge_s)
    swing_frac = profile.max_frac - profile.min_frac
    periods, amps = fourier_lines(profile)
    mean = profile.mean_frac
    ck_dip = (
        mean - CHECKPOINT_POWER_FRAC if sch.checkpoint_write_s > 0 and math.isfinite(sch.checkpoint_interval_s) else 0.0
    )
    eval_s = max([sch.eval_s if math.isfinite(sch.eval_interval_s) else 0.0] + [d for _, d in sch.evals_at_s])
    ev_dip = mean - EVAL_POWER_FRAC if eval_s > 0 else 0.0
    lines = [(float(p), float(a)) for p, a in zip(periods, amps)]
    lines.append((sch.checkpoint_period_s, pulse_line_frac(ck_dip, sch.checkpoint_write_s, sch.checkpoint_period_s)))
    if math.isfinite(sch.eval_interval_s):
        ev_period = sch.eval_interval_s + sch.eval_s
        lines.append((ev_period, pulse_line_frac(ev_dip, sch.eval_s, ev_period)))
    dom_period, dom_amp = max(lines, key=lambda pa: pa[1])
    return ProfileStats(
        step_s=profile.step_s,
        high_s=profile.high_s,
        mean_frac=mean,
        swing_frac=swing_frac,
        ramp_frac_per_s=ramp,
        edge_s=swing_frac / ramp if ramp > 0 else edge_s,
        step_lines_frac=tuple(float(a) for a in amps),
        checkpoint_line_frac=lines[len(periods)][1] if ck_dip else 0.0,
        dominant_period_s=dom_period if dom_amp > 0 else math.inf,
        dominant_line_frac=dom_amp,
        step_line_frac=float(amps[0]),
        checkpoint_period_s=sch.checkpoint_period_s if ck_dip else math.inf,
        checkpoint_dip_frac=ck_dip,
        checkpoint_dip_s=sch.checkpoint_write_s if ck_dip else 0.0,
        eval_dip_frac=ev_dip,
        eval_dip_s=eval_s,
        restart_dip_frac=mean - RESTART_POWER_FRAC if sch.restart_down_s > 0 else 0.0,
        restart_dip_s=sch.restart_down_s,
        restart_warmup_s=sch.warmup_s,
    )


def two_phase_swing_job(
    n_gpus: int,
    step_time_s: float,
    compute_frac: float,
    busy_w: float,
    idle_w: float,
    low_power_frac: float = COMM_POWER_FRAC,
) -> SwingJob:
    """A swing job whose step is ``compute_frac`` at busy power, the rest at ``low_power_frac``."""
    if n_gpus < 0 or not step_time_s > 0 or not 0.0 <= compute_frac <= 1.0:
        raise ValueError(
            f"invalid swing job: need n_gpus >= 0, step_time_s > 0, compute_frac in [0, 1] "
            f"(got {n_gpus}, {step_time_s}, {compute_frac})"
        )
    profile = two_phase_profile(step_time_s, compute_frac, low_power_frac)
    return SwingJob(int(n_gpus), float(busy_w), float(idle_w), profile_stats(profile))

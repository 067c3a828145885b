"""Restart state machine of a synchronous training job: failure → detection → drain and swap →
restore from the last checkpoint → warm-up → running.

A pure step function, :func:`step`, advances one job by ``dt_s`` given which of its GPUs
failed at this tick.  It returns the new :class:`RestartState` and a :class:`RestartTick`
with the phase, the multipliers of the job's tokens/s and GPU power, the work lost so far
and the GPU ids to drain (site GPU ids, not hostnames).  The caller swaps those GPUs for
hot spares while the job is in ``draining``; a GPU that is still reported failed when the
job restarts sends it back to detection.

Phases and their physics:

* ``running`` — full speed; progress since the last checkpoint accumulates.  Every
  ``checkpoint_interval_s`` of progress the job enters ``checkpointing``.
* ``checkpointing`` — blocking write of ``checkpoint_write_s``: no tokens, GPUs near idle
  (the whole-job power dip Llama 3 reports when all GPUs wait on checkpoints, Dubey et al.,
  arXiv:2407.21783 §3.3.4).  Progress is safe once the write completes.
* ``detecting`` — the job has stopped making progress.  A GPU that raised an XID is
  seen after ``xid_detection_s``; a silent failure (hang) only after the collective
  timeout ``hang_timeout_s``.  The progress since the last completed checkpoint is lost.
* ``draining`` — the scheduler drains the failed GPUs' nodes and swaps in hot spares
  (``drain_swap_s``).
* ``restoring`` — every rank reads the last checkpoint (``restore_s``, from the storage
  model of :mod:`twin.training.goodput`).
* ``warming_up`` — ``warmup_s`` of start-up (NCCL initialisation, compilation, data-loader
  fill): tokens/s and GPU power ramp linearly from 0 and from idle to full; the end of the
  ramp is the power surge.

Lost work is wall time without progress because of failures: the progress rolled back at
each failure plus the time spent detecting, draining, restoring and warming up, weighted by
the missing tokens/s (checkpoint writes are overhead, not lost work); lost tokens are lost
work times the job's tokens/s.  One phase change happens per tick, so ``dt_s`` should be
short against the phases (the live twin ticks at 1 Hz).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

PHASES = ("running", "checkpointing", "detecting", "draining", "restoring", "warming_up")
RUNNING, CHECKPOINTING, DETECTING, DRAINING, RESTORING, WARMING_UP = range(len(PHASES))
# PyTorch ProcessGroupNCCL default collective timeout: 10 minutes (torch.distributed docs,
# init_process_group "timeout").
DEFAULT_HANG_TIMEOUT_S = 600.0
# [E] an XID is seen by DCGM/the node health agent within seconds; the scheduler reacts on
# its next poll.  30 s.
DEFAULT_XID_DETECTION_S = 30.0
# [E] drain the failed node and bind a hot spare: scheduler requeue and node allocation.
DEFAULT_DRAIN_SWAP_S = 120.0
# [E] NCCL communicator set-up, compilation and data-loader fill before full speed.
DEFAULT_WARMUP_S = 120.0


def restart_overhead_s(
    xid_detection_s: float = DEFAULT_XID_DETECTION_S,
    drain_swap_s: float = DEFAULT_DRAIN_SWAP_S,
    warmup_s: float = DEFAULT_WARMUP_S,
) -> float:
    """Work one XID-detected interruption costs beyond the rolled-back progress and the checkpoint read [s].

    Detection and drain deliver no tokens; the warm-up ramps tokens linearly from 0, so it
    misses half of them: ``detection + drain + warm-up/2`` (30 + 120 + 60 = 210 s by default; the
    wall time until full speed is 270 s).  This is the restart time of the goodput model
    (:data:`twin.training.goodput.DEFAULT_RESTART_S`), so both models lose the same work.
    """
    return xid_detection_s + drain_swap_s + warmup_s / 2.0


def scaled_phase_durations_s(restart_s: float) -> dict[str, float]:
    """Detection, drain and warm-up durations scaled so :func:`restart_overhead_s` gives ``restart_s``.

    A job file's ``reliability.restart_s`` thus drives the state machine too; the hang
    timeout (silent failures) is a separate figure and not scaled.
    """
    if not restart_s >= 0:
        raise ValueError(f"restart_s must be >= 0, got {restart_s}")
    k = restart_s / restart_overhead_s()
    return {
        "xid_detection_s": DEFAULT_XID_DETECTION_S * k,
        "drain_swap_s": DEFAULT_DRAIN_SWAP_S * k,
        "warmup_s": DEFAULT_WARMUP_S * k,
    }


@dataclass(frozen=True)
class RestartTimings:
    """Durations of the restart phases and the checkpoint cadence [s]."""

    checkpoint_interval_s: float
    checkpoint_write_s: float
    restore_s: float
    hang_timeout_s: float = DEFAULT_HANG_TIMEOUT_S
    xid_detection_s: float = DEFAULT_XID_DETECTION_S
    drain_swap_s: float = DEFAULT_DRAIN_SWAP_S
    warmup_s: float = DEFAULT_WARMUP_S
    idle_power_frac: float = 0.15  # GPU power while stopped over training power (85 W / 700 W at H100 TDP ≈ 0.12–0.15)

    def __post_init__(self) -> None:
        if self.checkpoint_interval_s <= 0:
            raise ValueError(f"checkpoint_interval_s must be positive, got {self.checkpoint_interval_s}")
        for name in (
            "checkpoint_write_s",
            "restore_s",
            "hang_timeout_s",
            "xid_detection_s",
            "drain_swap_s",
            "warmup_s",
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.idle_power_frac <= 1.0:
            raise ValueError(f"idle_power_frac must be in [0, 1], got {self.idle_power_frac}")


@dataclass(frozen=True)
class RestartState:
    """Where one job is in the restart cycle (all times in seconds)."""

    phase: int = RUNNING
    phase_elapsed_s: float = 0.0
    phase_duration_s: float = 0.0  # length of the current timed phase (inf while running)
    progress_since_checkpoint_s: float = 0.0  # full-speed-equivalent progress not yet saved
    lost_work_s: float = 0.0
    failures_total: int = 0
    drain_gpu_ids: tuple[int, ...] = ()

    @property
    def phase_name(self) -> str:
        return PHASES[self.phase]


@dataclass(frozen=True)
class RestartTick:
    """What the job does during this tick (multipliers apply to the healthy-job figures)."""

    phase: str  # the phase during this tick
    tokens_frac: float  # tokens/s multiplier, 0–1
    power_frac: float  # GPU power multiplier relative to training power, idle_power_frac–1
    lost_work_s: float
    lost_tokens: float
    failures_total: int
    drain_gpu_ids: np.ndarray  # int64 site GPU ids to drain and swap for spares


def _enter(state: RestartState, phase: int, duration_s: float) -> RestartState:
    return replace(state, phase=phase, phase_elapsed_s=0.0, phase_duration_s=duration_s)


def _ramp(state: RestartState) -> float:
    if state.phase_duration_s <= 0:
        return 1.0
    return min(1.0, state.phase_elapsed_s / state.phase_duration_s)


def step(
    state: RestartState,
    gpu_ids: np.ndarray,
    failed: np.ndarray,
    xid: np.ndarray,
    dt_s: float,
    timings: RestartTimings,
    tokens_per_s: float = 0.0,
) -> tuple[RestartState, RestartTick]:
    """Advance one job by ``dt_s``.

    Parameters
    ----------
    state : the job's state after the previous tick.
    gpu_ids : site GPU ids of the job's ranks (int array).
    failed : per rank, True if the GPU is down or hung at this tick (bool, same shape).
    xid : per rank, True if the GPU raised an XID (fast detection); an XID alone counts
        as a failure.
    dt_s : tick length [s], >= 0.
    timings : phase durations and checkpoint cadence.
    tokens_per_s : the healthy job's throughput, to express lost work in tokens.
    """
    if dt_s < 0:
        raise ValueError(f"dt_s must be >= 0, got {dt_s}")
    ids = np.asarray(gpu_ids, dtype=np.int64)
    failed = np.asarray(failed, dtype=bool)
    xid = np.asarray(xid, dtype=bool)
    if failed.shape != ids.shape or xid.shape != ids.shape:
        raise ValueError(f"failed and xid must have the shape of gpu_ids {ids.shape}, got {failed.shape}, {xid.shape}")
    bad = failed | xid
    new_bad = bad & ~np.isin(ids, state.drain_gpu_ids)
    s = state
    if new_bad.any() and s.phase in (RUNNING, CHECKPOINTING, RESTORING, WARMING_UP):
        detect_s = timings.xid_detection_s if (xid & new_bad).any() else timings.hang_timeout_s
        lost = s.progress_since_checkpoint_s
        s = _enter(s, DETECTING, detect_s)
        s = replace(
            s, lost_work_s=s.lost_work_s + lost, progress_since_checkpoint_s=0.0, failures_total=s.failures_total + 1
        )
    if new_bad.any():
        s = replace(s, drain_gpu_ids=tuple(sorted(set(s.drain_gpu_ids) | set(ids[new_bad].tolist()))))

    tokens_frac, power_frac = _advance_within_phase(s, dt_s, timings)
    lost_now = 0.0 if s.phase == CHECKPOINTING else dt_s * (1.0 - tokens_frac)  # checkpoints cost goodput, not work
    s = replace(s, phase_elapsed_s=s.phase_elapsed_s + dt_s, lost_work_s=s.lost_work_s + lost_now)
    if s.phase in (RUNNING, WARMING_UP):
        s = replace(s, progress_since_checkpoint_s=s.progress_since_checkpoint_s + dt_s * tokens_frac)
    during = s.phase_name
    s = _transition(s, timings, bad)
    tick = RestartTick(
        phase=during,
        tokens_frac=tokens_frac,
        power_frac=power_frac,
        lost_work_s=s.lost_work_s,
        lost_tokens=s.lost_work_s * tokens_per_s,
        failures_total=s.failures_total,
        drain_gpu_ids=np.asarray(s.drain_gpu_ids, dtype=np.int64),
    )
    return s, tick


def _advance_within_phase(s: RestartState, dt_s: float, t: RestartTimings) -> tuple[float, float]:
    """Mean tokens and power multipliers over this tick (warm-up ramps at the tick's midpoint)."""
    if s.phase == RUNNING:
        return 1.0, 1.0
    if s.phase == WARMING_UP:
        if s.phase_duration_s <= 0:
            return 1.0, 1.0
        mid = min(1.0, (s.phase_elapsed_s + dt_s / 2.0) / s.phase_duration_s)
        return mid, t.idle_power_frac + (1.0 - t.idle_power_frac) * mid
    return 0.0, t.idle_power_frac


def _transition(s: RestartState, t: RestartTimings, bad: np.ndarray) -> RestartState:
    """Leave timed phases whose time is up; start a checkpoint when the interval is reached."""
    if s.phase == RUNNING:
        if s.progress_since_checkpoint_s >= t.checkpoint_interval_s:
            return _enter(s, CHECKPOINTING, t.checkpoint_write_s)
        return s
    if s.phase_elapsed_s < s.phase_duration_s:
        return s
    if s.phase == CHECKPOINTING:
        return replace(_enter(s, RUNNING, float("inf")), progress_since_checkpoint_s=0.0)
    if s.phase == DETECTING:
        return _enter(s, DRAINING, t.drain_swap_s)
    if s.phase == DRAINING:
        return _enter(s, RESTORING, t.restore_s)
    if s.phase == RESTORING:
        if bad.any():  # a GPU was not swapped: the restarted job hangs again
            return replace(_enter(s, DETECTING, t.hang_timeout_s), failures_total=s.failures_total + 1)
        return replace(_enter(s, WARMING_UP, t.warmup_s), drain_gpu_ids=())
    if s.phase == WARMING_UP:
        return _enter(s, RUNNING, float("inf"))
    return s


def new_state() -> RestartState:
    """A running job with nothing saved yet and nothing lost."""
    return RestartState(phase=RUNNING, phase_duration_s=float("inf"))

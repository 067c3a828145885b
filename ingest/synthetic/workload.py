"""Synthetic workload: GPU utilisation of a synchronous training job, step by step.

Synchronous data-parallel training alternates a compute phase (GPUs near TDP) and a
communication phase (near idle) every step, and stalls every GPU at once while a
checkpoint is written ([Llama3-2024 §3.3.4]; [Choukse-2025]).
Sampled at 1 Hz with steps of a few seconds, the site load therefore swings; this
module gives the per-GPU utilisation at an instant, vectorised over GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrainingWorkload:
    """Timing of one synchronous training job (seconds)."""

    step_time_s: float = 6.0
    compute_frac: float = 0.8  # fraction of a step spent in compute (the rest: exposed communication)
    busy_util_frac: float = 0.97
    comm_util_frac: float = 0.25
    checkpoint_interval_s: float = 1800.0
    checkpoint_write_s: float = 40.0
    idle_util_frac: float = 0.0

    def __post_init__(self) -> None:
        if self.step_time_s <= 0 or not 0 < self.compute_frac <= 1:
            raise ValueError("step_time_s must be > 0 and compute_frac in (0, 1]")


def job_util_frac(workload: TrainingWorkload, t_s: float, in_job: np.ndarray, jitter_frac: np.ndarray) -> np.ndarray:
    """Utilisation of every GPU at ``t_s`` seconds after the job started.

    ``in_job`` marks GPUs of the job (others idle); ``jitter_frac`` is a per-GPU phase
    offset in fractions of a step (collectives keep GPUs within a few percent).
    """
    interval = workload.checkpoint_interval_s
    if interval > 0 and (t_s % interval) >= interval - workload.checkpoint_write_s:
        util = np.full(in_job.shape, workload.comm_util_frac * 0.4)
    else:
        phase = (t_s / workload.step_time_s + jitter_frac) % 1.0
        util = np.where(phase < workload.compute_frac, workload.busy_util_frac, workload.comm_util_frac)
    return np.where(in_job, util, workload.idle_util_frac)

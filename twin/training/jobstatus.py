"""The status of one running training job, as the engine publishes it in every snapshot.

:func:`twin.training.sitejob.evaluate_site_job` makes it; the live hub's restart cycle
updates its restart fields.  Units are in the field names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class JobStatus:
    """Throughput and goodput of one running training job."""

    name: str
    gpu_ids: np.ndarray  # int32, GPUs the job runs on
    step_time_s: float
    tokens_per_s: float
    gpu_model_tflops: float
    mfu_frac: float
    goodput_tokens_per_s: float
    ettr_frac: float
    checkpoint_interval_s: float
    breakdown_s: dict[str, float]  # step-time components, seconds
    bottleneck_racks: np.ndarray  # int32, racks whose GPUs set the pace
    drain_gain_frac: float  # throughput recovered by draining the bottleneck racks
    # restart cycle (live twin): phase, unsaved progress, losses so far, GPU power relative to training
    restart_phase: str = "running"  # running | checkpointing | detecting | draining | restoring | warming_up
    checkpoint_age_s: float = float("nan")  # training progress since the last completed checkpoint
    lost_work_s: float = 0.0
    lost_tokens_count: float = 0.0
    interruptions_total: int = 0
    job_power_frac: float = 1.0  # GPU power of the job over its training power (dips while stopped)

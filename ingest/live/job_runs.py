"""Training jobs in the live twin run through failures: detection, drain and swap, restore, warm-up.

:class:`JobRun` drives one placed job with the pure restart state machine of
:mod:`twin.training.restart`, one step per live tick.  A rank whose GPU is down (or raised a
fatal XID) is a failure; while the job drains, its failed GPUs are swapped for hot spares,
modelled as healthy stand-ins: the job's pace no longer includes them, as if their ranks ran
on spare nodes (the spares themselves are not placed on the site).  The job's status then
carries its phase, the age of its last checkpoint, the work and tokens lost so far and its
interruptions, and its throughput follows the phase (none while stopped, a ramp while
warming up).  Phase changes are kept as the job's timeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from twin.engine.snapshot import GPU_DOWN, JobStatus, Snapshot
from twin.engine.tick import PlacedJob
from twin.site.tables import SiteTables
from twin.training import restart
from twin.training.jobgoodput import restart_timings, site_storage

TIMELINE_LIMIT = 500  # phase changes kept per job (oldest dropped)


@dataclass
class JobRun:
    """One placed job's restart state, the GPUs swapped for spares and its timeline."""

    job: PlacedJob
    timings: restart.RestartTimings
    state: restart.RestartState = field(default_factory=restart.new_state)
    swapped: np.ndarray | None = None  # bool per job rank: replaced by a spare
    last: restart.RestartTick | None = None
    timeline: list[dict] = field(default_factory=list)

    @classmethod
    def start(cls, site: SiteTables, job: PlacedJob, tokens_per_s: float = 0.0) -> JobRun:
        """A running job with the checkpoint cadence and restore time of ``site``'s storage."""
        n_nodes = int(np.unique(site.gpu_node[np.asarray(job.gpu_ids, dtype=np.int64)]).size)
        timings = restart_timings(job.spec, n_nodes, site_storage(site), tokens_per_s)
        return cls(job, timings, swapped=np.zeros(np.asarray(job.gpu_ids).size, dtype=bool))

    def running_frac(self, snap: Snapshot) -> np.ndarray:
        """Per site GPU speed for the job's pace: down GPUs 0, swapped ranks at full speed."""
        frac = np.where(snap.gpu_state == GPU_DOWN, 0.0, snap.throttle_frac)
        ids = np.asarray(self.job.gpu_ids, dtype=np.int64)
        if self.swapped is not None and self.swapped.any():
            frac = frac.copy()
            frac[ids[self.swapped]] = 1.0
        return frac

    def step(self, ts: datetime, dt_s: float, snap: Snapshot, xid_down: set[int], tokens_per_s: float) -> None:
        """Advance the job by ``dt_s`` given the GPUs down (or with a fatal XID) in ``snap``."""
        ids = np.asarray(self.job.gpu_ids, dtype=np.int64)
        failed = (snap.gpu_state[ids] == GPU_DOWN) & ~self.swapped
        xid = np.isin(snap.last_xid_code[ids], list(xid_down)) & ~self.swapped
        before = self.state.phase_name
        self.state, self.last = restart.step(self.state, ids, failed, xid, dt_s, self.timings, tokens_per_s)
        if self.last.phase == "draining" and self.last.drain_gpu_ids.size:
            self.swapped |= np.isin(ids, self.last.drain_gpu_ids)
        after = self.state.phase_name
        if after != before:
            event = {
                "ts": ts,
                "phase": after,
                "from": before,
                "failures_total": self.state.failures_total,
                "lost_work_s": self.state.lost_work_s,
            }
            if after == "detecting":
                event["gpus"] = int(failed.sum() + xid.sum())
            self.timeline.append(event)
            del self.timeline[:-TIMELINE_LIMIT]

    def status(self, base: JobStatus) -> JobStatus:
        """``base`` (the job evaluated at full pace on the current state) as the restart phase has it."""
        tick, s = self.last, self.state
        if tick is None:
            return replace(base, restart_phase=s.phase_name)
        frac = tick.tokens_frac
        return replace(
            base,
            tokens_per_s=base.tokens_per_s * frac,
            goodput_tokens_per_s=base.goodput_tokens_per_s * frac,
            mfu_frac=base.mfu_frac * frac,
            step_time_s=base.step_time_s if frac > 0 else math.inf,
            restart_phase=tick.phase,
            checkpoint_age_s=s.progress_since_checkpoint_s,
            lost_work_s=tick.lost_work_s,
            lost_tokens_count=tick.lost_tokens,
            interruptions_total=tick.failures_total,
            job_power_frac=tick.power_frac,
        )

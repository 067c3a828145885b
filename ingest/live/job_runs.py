"""Training jobs in the live twin run through failures: detection, drain and swap, restore, warm-up.

:class:`JobRun` drives one placed job with the pure restart state machine of
:mod:`twin.training.restart`, one step per live tick.  A rank whose GPU is down (or raised a
fatal XID) is a failure; while the job drains, its failed GPUs are swapped for hot spares,
modelled as healthy stand-ins: the job's pace no longer includes them, as if their ranks ran
on spare nodes (the spares themselves are not placed on the site).  The job's status then
carries its phase, the age of its last checkpoint, the work and tokens lost so far and its
interruptions, and its throughput follows the phase (none while stopped, a ramp while
warming up).  Phase changes are kept as the job's timeline.

:class:`JobRuns` holds every placed job of the live twin: it re-evaluates their full-pace
throughput on the measured state when needed and steps each run every tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from ingest.synthetic.plant import XID_DOWN
from twin.engine.snapshot import GPU_DOWN, JobStatus, Snapshot
from twin.engine.tick import PlacedJob
from twin.site.tables import SiteTables
from twin.training import restart
from twin.training.jobgoodput import restart_timings, site_storage
from twin.training.sitejob import evaluate_site_job

TIMELINE_LIMIT = 500  # phase changes kept per job (oldest dropped)
JOB_EVERY_S = 5.0  # job throughput is re-evaluated at this cadence (a 100k-GPU job costs ~0.1 s)


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


class JobRuns:
    """The placed jobs of a live twin (``placed``), their runs, and each job's best throughput seen.

    ``best_tokens_per_s`` (tokens/s per job name) is the baseline of the job alerts and
    of the restart cycle's lost-token count.
    """

    def __init__(self, state: SiteTables, jobs: list[PlacedJob]) -> None:
        self.state = state
        self.placed = list(jobs)
        self.runs = [JobRun.start(state, job) for job in self.placed]
        self.best_tokens_per_s: dict[str, float] = {}
        self._evaluated_at: datetime | None = None
        self._base: list[JobStatus] = []  # each job at full pace on the current state (before its restart phase)
        self._down_at_evaluation = np.zeros(state.n_gpus, dtype=bool)
        self._swapped_at_evaluation = 0

    def evaluate(self, ts: datetime, snap: Snapshot, dt_s: float) -> list[JobStatus]:
        """Job throughput on the measured state, run through the restart cycle.

        The full-pace figures are re-evaluated every :data:`JOB_EVERY_S`, or at once when a
        GPU goes down or a rank is swapped for a spare; the restart phase steps every tick.
        """
        down_now = snap.gpu_state == GPU_DOWN
        swapped = sum(int(run.swapped.sum()) for run in self.runs)
        changed = (
            self._evaluated_at is None
            or (ts - self._evaluated_at).total_seconds() >= JOB_EVERY_S
            or bool((down_now != self._down_at_evaluation).any())
            or swapped != self._swapped_at_evaluation
        )
        if self.placed and changed:
            self._base = [
                evaluate_site_job(
                    self.state, run.job.spec, run.job.gpu_ids, run.running_frac(snap), snap.link_up_flag
                ).status
                for run in self.runs
            ]
            self._evaluated_at, self._down_at_evaluation, self._swapped_at_evaluation = ts, down_now, swapped
        statuses = []
        for run, base in zip(self.runs, self._base):
            run.step(ts, dt_s, snap, XID_DOWN, self.best_tokens_per_s.get(base.name, base.tokens_per_s))
            statuses.append(run.status(base))
        return statuses

    def remember_best(self, statuses: list[JobStatus]) -> dict[str, float]:
        """Keep each job's best throughput of ``statuses``; returns a copy of the best figures."""
        for job in statuses:
            if np.isfinite(job.tokens_per_s) and job.tokens_per_s > self.best_tokens_per_s.get(job.name, 0.0):
                self.best_tokens_per_s[job.name] = float(job.tokens_per_s)
        return dict(self.best_tokens_per_s)

    def timeline(self, job_name: str) -> list[dict]:
        """Phase changes of a job (failures, restarts, checkpoints), oldest first."""
        for run in self.runs:
            if run.job.spec.name == job_name:
                return list(run.timeline)
        return []

    def timelines(self) -> dict[str, list[dict]]:
        """Every job's timeline by job name (for a follower)."""
        return {run.job.spec.name: list(run.timeline) for run in self.runs}

    def adopt_timelines(self, timelines: dict[str, list[dict]]) -> None:
        """Show a leader's timelines (from :meth:`timelines`) as this process's own."""
        for run in self.runs:
            run.timeline[:] = timelines.get(run.job.spec.name, [])

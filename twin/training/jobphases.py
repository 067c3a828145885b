"""The power shape of a placed job: its step breakdown and restart timings as phases.

Joins :mod:`twin.training.sitejob` (step time and its breakdown, checkpoint interval),
:mod:`twin.training.jobgoodput` (checkpoint write and restore through the site's storage)
and :mod:`twin.training.restart` (detection, drain and warm-up times) into the
:class:`~twin.physics.swing.ProfileStats` the swing model scales.  The shape changes only
when the job's status does, so the engine keeps it in a cache keyed by that status.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from twin.physics.swing import ProfileStats
from twin.site.tables import SiteTables
from twin.training import jobgoodput, phases, restart
from twin.training.jobfile import TrainingJob
from twin.training.sitejob import SiteJobResult

MAX_CACHED = 256  # shapes kept per engine (a cache, not a history)


def job_schedule(state: SiteTables, job: TrainingJob, res: SiteJobResult) -> phases.JobSchedule:
    """Checkpoints, evaluations and a restart after an XID failure of ``job`` on ``state`` [s]."""
    n_nodes = int(np.unique(state.gpu_node[res.status.gpu_ids]).size)
    write_s, restore_s = jobgoodput.checkpoint_times_s(job, n_nodes, jobgoodput.site_storage(state))
    interval = res.status.checkpoint_interval_s
    rel = job.reliability
    return phases.JobSchedule(
        checkpoint_interval_s=interval if np.isfinite(interval) and interval > 0 else np.inf,
        checkpoint_write_s=float(write_s),
        eval_interval_s=rel.eval_interval_s if rel.eval_interval_s > 0 and rel.eval_s > 0 else np.inf,
        eval_s=rel.eval_s if rel.eval_interval_s > 0 else 0.0,
        restart_down_s=restart.DEFAULT_XID_DETECTION_S + restart.DEFAULT_DRAIN_SWAP_S + float(restore_s),
        warmup_s=restart.DEFAULT_WARMUP_S,
    )


def job_shape(state: SiteTables, job: TrainingJob, res: SiteJobResult) -> ProfileStats | None:
    """Phase shape of a placed job, None when it is stalled (no steps)."""
    if res.step is None:
        return None
    profile = phases.step_profile(res.step.breakdown_s, res.step.ops_s.get("optimizer", 0.0), job.parallel.pp)
    return phases.profile_stats(profile, job_schedule(state, job, res))


def cached_job_shape(
    cache: dict[tuple[Any, ...], ProfileStats | None], state: SiteTables, job: TrainingJob, res: SiteJobResult
) -> ProfileStats | None:
    """:func:`job_shape`, computed once per distinct job status (step breakdown, checkpoint cadence, the job
    file's reliability inputs)."""
    st = res.status
    key = (
        st.name,
        tuple(sorted((k, round(v, 9)) for k, v in st.breakdown_s.items())),
        round(st.checkpoint_interval_s, 6),
        None if res.step is None else round(res.step.ops_s.get("optimizer", 0.0), 9),
        st.gpu_ids.size,
        job.parallel.pp,
        job.reliability,
    )
    if key not in cache:
        if len(cache) >= MAX_CACHED:
            cache.clear()
        cache[key] = job_shape(state, job, res)
    return cache[key]

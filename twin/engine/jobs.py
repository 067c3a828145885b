"""The jobs phase: the placed jobs' status and power shapes, and the training swing they make.

* :meth:`JobsPhase.run` → :class:`JobsResult`: each placed job evaluated on the site
  (:mod:`twin.training.sitejob`) and the shape of its GPU power through the training phases
  (:mod:`twin.training.jobphases`, kept per job status).  An evaluation of a large job costs
  tens of milliseconds, so it is kept until the job's GPUs or links change state or its
  slowest or fastest clock moves by more than :data:`CLOCK_QUANTUM_FRAC`;
* :meth:`JobsPhase.swing` → ``SwingReport``: swing amplitude and ramp, dominant line and dips
  of the running jobs' phases at the throttled busy power, against what the supply can
  follow (:func:`twin.physics.swing.project_swing`; see ``docs/physics.md``).

Without placed jobs, one nominal job on every GPU (:data:`DEFAULT_STEP_TIME_S`,
:data:`~twin.engine.network.DEFAULT_COMPUTE_FRAC`) makes the swing.
"""

from __future__ import annotations

import numpy as np

from twin.engine.constants import SiteConstants
from twin.engine.inputs import TickInputs
from twin.engine.network import DEFAULT_COMPUTE_FRAC
from twin.engine.phases import (
    DemandResult,
    FabricResult,
    GpuThermalResult,
    ItPowerResult,
    JobsResult,
    PowerStateResult,
    PowerTreeResult,
    SiteResult,
)
from twin.physics import swing, thermal
from twin.training import phases as job_phases

DEFAULT_STEP_TIME_S = 2.0  # [E] step time of the nominal job (swing period), Uptime: 1–2 s
CLOCK_QUANTUM_FRAC = 1e-3  # a job is re-evaluated when its slowest or fastest clock moves by this much


class JobsPhase:
    """Placed jobs and the swing (see module docstring)."""

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        self.shape_cache: dict = {}  # job phase shapes by job status (twin.training.jobphases)
        self._evaluations: dict = {}  # job index -> (spec, GPU ids, key of their state, SiteJobResult)
        self.default_shape = job_phases.profile_stats(
            job_phases.two_phase_profile(DEFAULT_STEP_TIME_S, DEFAULT_COMPUTE_FRAC)
        )

    def run(self, inp: TickInputs, gt: GpuThermalResult, fab: FabricResult) -> JobsResult:
        """Status of the placed jobs and the shape of their power through the phases (cached by status)."""
        if not inp.jobs:
            return JobsResult(statuses=[], power_shapes=[])
        from twin.training import jobphases, sitejob  # imported only when jobs are placed

        s = self.const.state
        failed = np.sort(np.asarray(inp.failed_links, dtype=np.int64).ravel()).tobytes()
        statuses, shapes = [], []
        for i, job in enumerate(inp.jobs):
            clock = gt.gpu_clock_frac[job.gpu_ids]
            q = CLOCK_QUANTUM_FRAC
            key = (failed, round(float(clock.min()) / q), round(float(clock.max()) / q))
            kept = self._evaluations.get(i)  # (spec, GPU ids, key, result): the same job objects, the same state
            if kept is None or kept[0] is not job.spec or kept[1] is not job.gpu_ids or kept[2] != key:
                res = sitejob.evaluate_site_job(s, job.spec, job.gpu_ids, gt.gpu_clock_frac, fab.link_up_flag)
                kept = self._evaluations[i] = (job.spec, job.gpu_ids, key, res)
            res = kept[3]
            statuses.append(res.status)
            shapes.append(jobphases.cached_job_shape(self.shape_cache, s, job.spec, res))
        for i in [i for i in self._evaluations if i >= len(inp.jobs)]:
            del self._evaluations[i]
        return JobsResult(statuses=statuses, power_shapes=shapes)

    @staticmethod
    def mean_w(busy_w, running: np.ndarray | None, ids: np.ndarray | None) -> float:
        """Mean busy power over the running GPUs of ``ids`` (all GPUs when None) [W]."""
        if np.ndim(busy_w) == 0:
            return float(busy_w)
        if ids is not None and ids.size > 1 and ids[-1] - ids[0] == ids.size - 1 and np.all(np.diff(ids) == 1):
            ids = slice(int(ids[0]), int(ids[-1]) + 1)  # contiguous placement: a view, no gather
        values = busy_w if ids is None else busy_w[ids]
        n_running = values.size if running is None else int(np.count_nonzero(running if ids is None else running[ids]))
        return float(np.sum(values)) / n_running if n_running else 0.0

    def swing_jobs(
        self, dem: DemandResult, gt: GpuThermalResult, itp: ItPowerResult, jobs: JobsResult
    ) -> list[swing.SwingJob]:
        """The running jobs as the swing sees them: GPUs, mean busy power (throttled or capped), idle, shape.

        A throttled GPU's board power is its mean over its work and its waits; its busy power is
        ``P_idle + (P − P_idle) / u`` (under a cap: the cap, :func:`twin.physics.thermal.mean_power_limit_w`).
        """
        c = self.const
        n_run = c.state.n_gpus - (int(np.count_nonzero(gt.gpu_down)) if gt.any_gpu_down else 0)
        cap = np.minimum(dem.gpu_power_limit_w, c.tdp_w)
        idle = c.idle_mean_w
        throttled = gt.gpu_clock_frac < 0.999  # down GPUs (clock 0) included: their power is 0
        n_throttled = int(np.count_nonzero(throttled))
        if n_throttled == c.state.n_gpus and not jobs.statuses:  # every GPU capped or down: busy power from board power
            running = itp.node_dc_power_w > 0.0
            u = float(dem.node_util_frac[running].mean()) if running.any() else 1.0
            mean = float(itp.rack_gpu_power_w.sum()) / n_run if n_run else 0.0
            busy = idle + (mean - idle) / u if u > thermal.IDLE_UTIL_FRAC and mean > idle else mean
        elif n_throttled:
            util = np.maximum(dem.gpu_util_frac, thermal.IDLE_UTIL_FRAC)
            busy = np.where(throttled, np.maximum(gt.gpu_power_w, idle) - idle, 0.0)
            busy = np.where(throttled, idle + busy / util, cap)
            if gt.any_gpu_down:
                np.copyto(busy, 0.0, where=gt.gpu_down)
        else:
            busy = cap
        running = ~gt.gpu_down if gt.any_gpu_down and np.ndim(busy) else None
        if jobs.statuses:
            return [
                swing.SwingJob(int(st.gpu_ids.size), self.mean_w(busy, running, st.gpu_ids), idle, shape)
                for st, shape in zip(jobs.statuses, jobs.power_shapes)
                if shape is not None
            ]
        return [swing.SwingJob(n_run, self.mean_w(busy, running, None), idle, self.default_shape)] if n_run else []

    def swing(
        self,
        inp: TickInputs,
        ps: PowerStateResult,
        dem: DemandResult,
        gt: GpuThermalResult,
        itp: ItPowerResult,
        tree: PowerTreeResult,
        site: SiteResult,
        jobs: JobsResult,
    ) -> swing.SwingReport:
        """Swing of the running jobs (or ``inp.swing_jobs``) against what the live sources can follow."""
        s = self.const.state
        swing_jobs = inp.swing_jobs if inp.swing_jobs is not None else self.swing_jobs(dem, gt, itp, jobs)
        node_dc = float(itp.node_dc_power_w.sum())
        rack_kw = float(itp.rack_power_kw.sum())
        k_node = (float(itp.node_input_power_w.sum()) / node_dc if node_dc > 0 else 1.0) * (
            tree.tree_input_kw / rack_kw if rack_kw > 0 else 1.0
        )
        return swing.project_swing(
            swing_jobs,
            s.source_kind,
            s.source_capacity_mw,
            s.source_ramp_mw_per_s,
            site.source_power_mw,
            ps.source_live,
            site.battery_soc_frac,
            k_node,
            alignment=inp.swing_alignment,
        )


def snapshot_swing(
    state, snap, jobs: list, results: list, alignment: str = swing.DEFAULT_ALIGNMENT
) -> swing.SwingReport:
    """The swing that placed ``jobs`` make on a recorded :class:`~twin.engine.snapshot.Snapshot` (a replay).

    ``results`` are the jobs' :class:`twin.training.sitejob.SiteJobResult` on the snapshot's
    throttling and links; each job's shape comes from its step breakdown as in the live tick,
    its busy power from the recorded GPU power and utilisation of its running GPUs
    (``P_idle + (P − P_idle) / u``), and the facility factor from the catalogue's PSU curve
    at the recorded node load (distribution losses, which no recording keeps, are left out).
    """
    from twin.physics import power
    from twin.training import jobphases

    idle = float(np.mean(state.gpu_spec_array("idle_power_w")))
    p = np.nan_to_num(np.asarray(snap.gpu_power_w, dtype=np.float64), nan=0.0)
    u = np.nan_to_num(np.asarray(snap.gpu_util_frac, dtype=np.float64), nan=0.0)
    gpu_sum = np.bincount(state.gpu_node, weights=p, minlength=state.n_nodes)
    node_util = np.bincount(state.gpu_node, weights=u, minlength=state.n_nodes) / np.maximum(
        np.bincount(state.gpu_node, minlength=state.n_nodes), 1
    )
    dc = power.node_dc_power_w(gpu_sum, node_util, state.node_base_power_w, state.node_idle_base_power_w)
    dc = np.where(gpu_sum > 0, dc, 0.0)
    ac, _ = power.node_input_power_w(dc, state.node_psus, state.node_psu_rating_w, state.psu_efficiency_points_frac)
    k = float(ac.sum()) / float(dc.sum()) if dc.sum() > 0 else 1.0
    out = []
    for job, res in zip(jobs, results):
        shape = jobphases.job_shape(state, job.spec, res)
        ids = job.gpu_ids[(snap.gpu_state[job.gpu_ids] != 2) & (u[job.gpu_ids] > thermal.IDLE_UTIL_FRAC)]
        if shape is None or not ids.size:
            continue
        busy = idle + np.maximum(p[ids] - idle, 0.0) / np.maximum(u[ids], thermal.IDLE_UTIL_FRAC)
        out.append(swing.SwingJob(int(job.gpu_ids.size), float(busy.mean()), idle, shape))
    live = np.ones(state.n_sources, dtype=bool)
    live &= np.isfinite(np.asarray(snap.source_power_mw, dtype=np.float64))
    return swing.project_swing(
        out,
        state.source_kind,
        state.source_capacity_mw,
        state.source_ramp_mw_per_s,
        np.nan_to_num(np.asarray(snap.source_power_mw, dtype=np.float64), nan=0.0),
        live,
        snap.battery_soc_frac,
        k,
        alignment=alignment,
    )

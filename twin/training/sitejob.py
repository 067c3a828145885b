"""A training job placed on a site: fabric factors from its placement, pace from throttling.

Joins :mod:`twin.training.steptime` (step time), :mod:`twin.physics.fabric` (what the placement and failed
links/switches leave of the NIC bandwidth), :mod:`twin.training.goodput` (failures, checkpoints)
and the per-GPU ``throttle_frac`` of the thermal model into the
:class:`twin.training.jobstatus.JobStatus` the engine publishes.

Ranks follow the ``[TP, CP, PP, DP]`` order of :mod:`twin.training.steptime`: rank ``r`` of the
job runs on ``gpu_ids[r]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.physics import fabric
from twin.site.tables import SiteTables
from twin.training import jobgoodput
from twin.training import steptime as training
from twin.training.jobfile import TrainingJob
from twin.training.jobstatus import JobStatus
from twin.training.ranks import rank_groups


class PlacementError(ValueError):
    """The job does not fit the site or its GPU list is inconsistent."""


def contiguous_placement(state: SiteTables, n_gpus: int, first_gpu: int = 0) -> np.ndarray:
    """GPU ids ``first_gpu … first_gpu + n_gpus − 1`` (node-major, so TP groups share a node)."""
    if n_gpus <= 0 or first_gpu < 0 or first_gpu + n_gpus > state.n_gpus:
        raise PlacementError(f"cannot place {n_gpus} GPUs from GPU {first_gpu} on {state.name} ({state.n_gpus} GPUs)")
    return np.arange(first_gpu, first_gpu + n_gpus, dtype=np.int32)


def _no_collective_report(state: SiteTables, dp: fabric.JobFabricReport, eff: float) -> fabric.JobFabricReport:
    """Report of a parallel dimension of size 1: full rate unless the job's GPUs are cut off."""
    if dp.disconnected_gpus.size:
        return dp
    return fabric.JobFabricReport(
        factor_frac=1.0,
        busbw_gbps=state.nic_gbps * eff,
        limiting_tier="none",
        worst_leaf=-1,
        worst_pod=-1,
        leaf_factor_frac=1.0,
        pod_factor_frac=1.0,
        disconnected_gpus=dp.disconnected_gpus,
    )


@dataclass
class SiteJobResult:
    """Everything the twin knows about one placed job."""

    status: JobStatus
    step: training.StepResult | None  # None when the job is stalled
    fabric: dict[str, fabric.JobFabricReport]
    bottleneck: training.BottleneckReport


def evaluate_site_job(
    state: SiteTables,
    job: TrainingJob,
    gpu_ids: np.ndarray,
    throttle_frac: np.ndarray | None = None,
    link_up_flag: np.ndarray | None = None,
    switch_up: np.ndarray | None = None,
) -> SiteJobResult:
    """Throughput and goodput of ``job`` running on ``gpu_ids`` of ``state``.

    ``throttle_frac`` (per site GPU, 1 = full speed, 0 = down) sets the synchronous pace;
    ``link_up_flag``/``switch_up`` masks set the fabric factors per parallel dimension.  A job
    with a down GPU or a GPU whose leaf is down is stalled: step time ``inf``, no tokens.
    """
    par = job.parallel
    ids = np.asarray(gpu_ids, dtype=np.int64)
    if ids.size != par.n_gpus:
        raise PlacementError(f"job {job.name} needs {par.n_gpus} GPUs, got {ids.size}")
    if ids.size and (ids.min() < 0 or ids.max() >= state.n_gpus):
        raise PlacementError(f"job {job.name}: GPU ids outside 0..{state.n_gpus - 1}")
    throttle = np.ones(state.n_gpus) if throttle_frac is None else np.asarray(throttle_frac, dtype=np.float64)

    groups = rank_groups(par)
    sizes = {"dp": par.dp, "pp": par.pp, "cp": par.cp}
    # a dimension of size 1 has no collective: its groups never span domains, so only DP (which
    # also finds GPUs cut off by a down leaf) is evaluated for it; PP and CP then copy its
    # verdict on disconnection and otherwise get the full rate
    eff = job.hardware.collective_efficiency_frac
    reports = {
        "dp": fabric.job_fabric_report(
            state, ids, groups["dp"] if sizes["dp"] > 1 else np.arange(ids.size), link_up_flag, switch_up, eff
        )
    }
    for dim in ("pp", "cp"):
        if sizes[dim] > 1:
            reports[dim] = fabric.job_fabric_report(state, ids, groups[dim], link_up_flag, switch_up, eff)
        else:
            reports[dim] = _no_collective_report(state, reports["dp"], eff)
    factors = training.FabricFactors(
        dp=reports["dp"].factor_frac, pp=reports["pp"].factor_frac, cp=reports["cp"].factor_frac
    )
    bottle = training.bottleneck_analysis(throttle, ids, state.gpu_rack, par.tp * par.cp * par.pp)
    pace = bottle.pace_factor_frac
    n_nodes = int(np.unique(state.gpu_node[ids]).size)

    needs_fabric = {"dp": par.dp * par.cp > 1, "pp": par.pp > 1, "cp": par.cp > 1}
    stalled = pace <= 0.0 or any(reports[d].factor_frac <= 0.0 and needs_fabric[d] for d in reports)
    stalled = stalled or (reports["dp"].disconnected_gpus.size > 0 and n_nodes > 1)
    step = None if stalled else training.step_time(job.model, par, job.hardware, factors, pace)

    tokens = 0.0 if step is None else step.tokens_per_s
    good = jobgoodput.job_goodput(job, tokens, n_nodes, jobgoodput.site_storage(state))
    status = JobStatus(
        name=job.name,
        gpu_ids=ids.astype(np.int32),
        step_time_s=math.inf if step is None else step.step_time_s,
        tokens_per_s=tokens,
        gpu_model_tflops=0.0 if step is None else step.gpu_model_tflops,
        mfu_frac=0.0 if step is None else step.mfu_frac,
        goodput_tokens_per_s=good["goodput_tokens_per_s"],
        ettr_frac=good["ettr_frac"],
        checkpoint_interval_s=good["checkpoint_interval_s"],
        breakdown_s={} if step is None else dict(step.breakdown_s),
        bottleneck_racks=bottle.bottleneck_racks,
        drain_gain_frac=bottle.drain_gain_frac,
    )
    return SiteJobResult(status=status, step=step, fabric=reports, bottleneck=bottle)

"""A training job's throughput and goodput figures as one flat report (``clustertwin throughput``).

:func:`throughput_report` evaluates a job file on its own regular layout (:func:`fabric_factors`);
:func:`site_report` places it on the first GPUs of a healthy site and takes the fabric
factors and checkpoint storage from the site.  Keys carry their units (``twin/quantities.py``).
"""

from __future__ import annotations

import math
from typing import Any

from twin.physics import fabric
from twin.training import jobgoodput, memory
from twin.training import steptime as training
from twin.training.jobfile import TrainingJob


def fabric_factors(job: TrainingJob) -> training.FabricFactors:
    """Ring factors per dimension for the job's regular layout (rank order TP, CP, PP, DP)."""
    par = job.parallel
    pod, over = job.pod_gpus, job.oversubscription
    return training.FabricFactors(
        tp=1.0,
        cp=fabric.analytic_factor(par.tp, par.cp, pod, over),
        pp=fabric.analytic_factor(par.tp * par.cp, par.pp, pod, over),
        dp=fabric.analytic_factor(par.tp * par.cp * par.pp, par.dp, pod, over),
    )


def throughput_report(
    job: TrainingJob, factors: training.FabricFactors | None = None, storage: jobgoodput.StorageSystem | None = None
) -> dict[str, Any]:
    """All throughput and goodput figures of a job as a flat JSON-ready dict.

    ``factors`` (fabric fractions per dimension) default to the job file's regular
    layout (:func:`fabric_factors`); pass the ones a site placement gives instead, and
    the site's checkpoint ``storage``.
    """
    par, model = job.parallel, job.model
    factors = factors or fabric_factors(job)
    step = training.step_time(model, par, job.hardware, factors)
    n_nodes = math.ceil(par.n_gpus / job.hardware.gpus_per_node)
    n_params = training.parameter_count(model)
    good = jobgoodput.job_goodput(job, step.tokens_per_s, n_nodes, storage)
    mem = memory.job_memory(model, par, job.hardware)
    return {
        "job": job.name,
        "gpu": job.gpu,
        "n_gpus": par.n_gpus,
        "n_nodes": n_nodes,
        "n_params": n_params,
        "n_active_params": training.active_parameter_count(model),
        "n_micro_batches": par.micro_batches,
        "step_time_s": step.step_time_s,
        "tokens_per_s": step.tokens_per_s,
        "gpu_model_tflops": step.gpu_model_tflops,
        "gpu_hw_tflops": step.gpu_hw_tflops,
        "mfu_frac": step.mfu_frac,
        "tokens_per_j": step.tokens_per_j,
        "avg_gpu_power_w": step.avg_gpu_power_w,
        "bubble_frac": step.bubble_frac,
        "schedule": step.schedule,
        "n_virtual_stages": step.virtual_stages,
        "n_stage_layers": step.stage_layers,
        "stage_time_s": step.stage_time_s,
        "stage_imbalance_frac": max(step.stage_time_s) / (sum(step.stage_time_s) / len(step.stage_time_s)) - 1.0,
        "dp_overlap_frac": step.dp_overlap_frac,
        "clock_frac": step.clock_frac,
        "fabric_factor_dp_frac": factors.dp,
        "breakdown_s": step.breakdown_s,
        "ops_s": step.ops_s,
        **memory.report_fields(mem),
        "memory_warning": memory.warning(mem),
        **good,
    }


def site_report(job: TrainingJob, site: str) -> dict[str, Any]:
    """The job placed on GPUs 0..n−1 of a healthy site: fabric factors from the site's fabric."""
    from twin.site.load import load_site
    from twin.training import sitejob

    state = load_site(site)
    ids = sitejob.contiguous_placement(state, job.parallel.n_gpus)
    result = sitejob.evaluate_site_job(state, job, ids)
    f = result.fabric
    factors = training.FabricFactors(dp=f["dp"].factor_frac, pp=f["pp"].factor_frac, cp=f["cp"].factor_frac)
    report = throughput_report(job, factors, jobgoodput.site_storage(state))
    report["site"] = state.name
    report["fabric_limiting_tier_dp"] = f["dp"].limiting_tier
    return report

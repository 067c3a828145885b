"""Benchmarks of the throughput model: one step-time evaluation and a 100k-GPU site job."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twin.training import sitejob, steptime as training
from twin.bench import benchmark, best_of
from twin.training.jobfile import load_job

JOBS_DIR = Path(__file__).resolve().parents[2] / "data" / "jobs"


@benchmark("throughput_model")
def throughput_model() -> dict:
    """Time the analytic step model and a degraded 98,304-GPU job on the colossus site."""
    from twin.site.load import load_site  # the site loader is only needed here

    job = load_job(JOBS_DIR / "colossus-405b-98k.toml")
    step_s = best_of(lambda: training.step_time(job.model, job.parallel, job.hardware), repeat=50)

    state = load_site("colossus")
    ids = sitejob.contiguous_placement(state, job.parallel.n_gpus)
    rng = np.random.default_rng(0)
    throttle = np.ones(state.n_gpus)
    slow = rng.choice(state.n_gpus, 100, replace=False)
    throttle[slow] = rng.uniform(0.6, 0.95, slow.size)
    link_up_flag = np.ones(state.n_links, bool)
    link_up_flag[rng.choice(state.n_links, 200, replace=False)] = False

    def site_eval() -> None:
        sitejob.evaluate_site_job(state, job, ids, throttle, link_up_flag)

    site_s = best_of(site_eval, repeat=5)
    bottleneck_s = best_of(
        lambda: training.bottleneck_analysis(throttle, ids, state.gpu_rack, job.parallel.n_gpus // job.parallel.dp),
        repeat=5,
    )
    return {
        "step_time_eval_us": step_s * 1e6,
        "site_job_eval_ms": site_s * 1e3,
        "bottleneck_analysis_ms": bottleneck_s * 1e3,
        "job_gpus_total": float(job.parallel.n_gpus),
        "site_links_total": float(state.n_links),
    }

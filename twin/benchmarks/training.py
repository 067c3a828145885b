"""Benchmarks of the throughput model: one step-time evaluation and a 100k-GPU site job."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from twin.bench import benchmark, best_of
from twin.training import sitejob
from twin.training import steptime as training
from twin.training.jobfile import load_job

JOBS_DIR = Path(__file__).resolve().parents[2] / "data" / "jobs"


@benchmark("throughput_model")
def throughput_model() -> dict[str, Any]:
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


@benchmark("job_swing")
def job_swing(site: str = "colossus", repeat: int = 8) -> dict[str, Any]:
    """Cost of the swing from job phases in the engine tick, against the same tick with a fixed swing job.

    The 98,304-GPU job is placed on ``site``; ``tick_with_phases_ms`` lets the swing come
    from the job's phase shape (cached by status) at the throttled busy power,
    ``tick_with_fixed_swing_ms`` hands the engine a ready swing job instead (the peer), so
    their ratio is the overhead of the phase-driven swing per tick; ``*_capped`` repeat
    this under a 600 W power cap (GPUs throttled: the busy power is a mean over the job's
    GPUs).  ``job_shape_ms`` is one cache miss, next to one ``evaluate_site_job``.
    """
    from twin.engine.tick import PlacedJob, TickInputs, TwinEngine
    from twin.site.load import load_site
    from twin.training import jobphases, phases

    job = load_job(JOBS_DIR / "colossus-405b-98k.toml")
    state = load_site(site)
    ids = sitejob.contiguous_placement(state, job.parallel.n_gpus)
    engine = TwinEngine(state)
    placed = PlacedJob(job, ids)
    fixed_job = [phases.two_phase_swing_job(ids.size, 2.0, 0.85, 700.0, 85.0)]
    out = {}
    for label, limit in (("", None), ("_capped", 600.0)):
        phased = TickInputs(jobs=[placed], gpu_power_limit_w=limit)
        fixed = TickInputs(jobs=[placed], gpu_power_limit_w=limit, swing_jobs=fixed_job)
        engine.tick(1.0, phased)  # fills the shape cache, as the first tick of a job does
        t_phase, t_fixed = float("inf"), float("inf")
        for _ in range(repeat):  # interleaved, so machine noise hits both alike
            t_phase = min(t_phase, best_of(partial(engine.tick, 1.0, phased), repeat=1))
            t_fixed = min(t_fixed, best_of(partial(engine.tick, 1.0, fixed), repeat=1))
        out[f"tick_with_phases{label}_ms"] = t_phase * 1e3
        out[f"tick_with_fixed_swing{label}_ms"] = t_fixed * 1e3
        out[f"phase_swing_overhead{label}_ratio"] = t_phase / t_fixed
    res = sitejob.evaluate_site_job(state, job, ids)
    out["job_shape_ms"] = best_of(lambda: jobphases.job_shape(state, job, res), repeat=20) * 1e3
    out["site_job_eval_ms"] = best_of(lambda: sitejob.evaluate_site_job(state, job, ids), repeat=3) * 1e3
    return out

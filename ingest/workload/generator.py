"""A seeded generator of an LLM lab's job mix: pretraining, fine-tuning, evaluation, debugging.

Defaults resemble the published LLM-development clusters of Acme ([Acme-NSDI24],
``cluster_summary.csv``: Seren 663,813 GPU jobs): the median GPU job uses 1 GPU and runs about
2 minutes, the largest take 1,024 GPUs, run times are heavy-tailed (Seren: median 122 s,
mean 1,414 s), and by count 49.7 % of jobs complete, 7.5 % are cancelled and 42.9 % fail.

* sizes: GPUs ∈ {1, 2, …, 1024} with the probabilities of ``SIZE_PROBS`` [E] (median 1,
  mean ≈ 10.7 GPUs, between Seren's 5.7 and Kalos's 26.8);
* run times: log-normal with Seren's median and mean (σ = √(2 ln(mean/median)) = 2.21),
  clipped to [10 s, 14 days] (Seren's longest job ran 1,209,604 s);
* end states drawn with Seren's shares by count;
* requested wall time: the run time × U(1, 3), rounded up to whole minutes [E];
* arrivals: a Poisson process over the horizon;
* kinds by size: 1–8 GPUs debugging or evaluation, larger fine-tuning [E];
* ``n_pretrain`` pretraining runs (QoS ``high``, which may preempt ``normal``) of a training job
  file, submitted in the first hour, each for the whole horizon, checkpointing at Daly's interval;
* ``teams`` teams in one cohort, with nominal quotas that split the site by ``TEAM_SHARES``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.fleet.policy import QosSpec, TeamQuota
from twin.fleet.workload import FleetJob
from twin.training import goodput, jobgoodput

SIZES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
SIZE_PROBS = np.array([0.60, 0.08, 0.08, 0.14, 0.04, 0.025, 0.015, 0.01, 0.005, 0.003, 0.002])  # [E]
SEREN_MEDIAN_RUN_S = 122.0  # [Acme-NSDI24] med_run_time_gpu
SEREN_MEAN_RUN_S = 1414.335  # [Acme-NSDI24] avg_run_time_gpu
SEREN_MAX_RUN_S = 1_209_604.0  # [Acme-NSDI24] max_run_time_gpu
SEREN_END_SHARES = {"completed": 0.497, "cancelled": 0.075, "failed": 0.429}  # [Acme-NSDI24] by count
TEAM_SHARES = (0.30, 0.20, 0.15, 0.10, 0.10, 0.07, 0.05, 0.03)  # [E]


@dataclass(frozen=True)
class MixSpec:
    """What to generate (defaults: the Acme-like lab above)."""

    jobs: int = 50_000
    days: float = 30.0
    seed: int = 0
    teams: int = 8
    n_pretrain: int = 2
    pretrain_job: object = None  # a TrainingJob for the pretraining runs (None: no pretraining)
    site_gpus: int = 100_352
    median_run_s: float = SEREN_MEDIAN_RUN_S
    mean_run_s: float = SEREN_MEAN_RUN_S
    max_run_s: float = SEREN_MAX_RUN_S


def lognormal_sigma(median_s: float, mean_s: float) -> float:
    """σ of a log-normal with this median and mean: ``mean = median · e^(σ²/2)``."""
    return math.sqrt(2.0 * math.log(mean_s / median_s)) if mean_s > median_s else 0.0


def generate(
    spec: MixSpec, storage: jobgoodput.StorageSystem | None = None
) -> tuple[list[FleetJob], list[TeamQuota], list[QosSpec]]:
    """Jobs, team quotas and QoS definitions of one lab (seeded: the same spec gives the same jobs)."""
    rng = np.random.default_rng(spec.seed)
    n = spec.jobs
    horizon = spec.days * 86_400.0
    teams = [f"team{i}" for i in range(spec.teams)]
    shares = np.array([TEAM_SHARES[i % len(TEAM_SHARES)] for i in range(spec.teams)])
    shares = shares / shares.sum()
    size = rng.choice(SIZES, size=n, p=SIZE_PROBS / SIZE_PROBS.sum())
    sigma = lognormal_sigma(spec.median_run_s, spec.mean_run_s)
    run = np.clip(spec.median_run_s * np.exp(sigma * rng.standard_normal(n)), 10.0, spec.max_run_s)
    wall = np.ceil(run * rng.uniform(1.0, 3.0, n) / 60.0) * 60.0
    submit = np.sort(rng.uniform(0.0, horizon, n))
    states = list(SEREN_END_SHARES)
    p_state = np.array([SEREN_END_SHARES[s] for s in states])
    end = rng.choice(len(states), size=n, p=p_state / p_state.sum())
    team = rng.choice(spec.teams, size=n, p=shares)
    small_kind = np.where(rng.random(n) < 0.7, "debug", "eval")
    kind = np.where(size <= 8, small_kind, "finetune")
    jobs = [
        FleetJob(
            job_id=f"j{i}",
            team=teams[team[i]],
            user=f"{teams[team[i]]}-u{int(rng.integers(0, 12))}",
            submit_s=float(submit[i]),
            n_gpus=int(size[i]),
            wall_s=float(wall[i]),
            run_s=float(run[i]),
            kind=str(kind[i]),
            end_state=states[end[i]],
        )
        for i in range(n)
    ]
    jobs += _pretraining(spec, rng, teams, horizon, storage)
    quotas = [TeamQuota(t, int(spec.site_gpus * s), cohort="lab") for t, s in zip(teams, shares)]
    qos = [
        QosSpec("high", priority=100.0, preempt=("normal",), min_power_cap_w=600.0),
        QosSpec("normal", priority=10.0),
    ]
    return jobs, quotas, qos


def _pretraining(spec: MixSpec, rng, teams: list[str], horizon: float, storage) -> list[FleetJob]:
    job = spec.pretrain_job
    if job is None or spec.n_pretrain <= 0:
        return []
    n_nodes = math.ceil(job.parallel.n_gpus / job.hardware.gpus_per_node)
    store = storage or jobgoodput.job_storage(job)
    write_s, restore_s = jobgoodput.checkpoint_times_s(job, n_nodes, store)
    hardware, software = jobgoodput.node_rates_per_1000_node_days(job)
    rates = goodput.interruptions_per_day_by_cause(
        n_nodes, hardware, job.reliability.software_failures_per_job_day, job.reliability.fleet_age_days, software
    )
    mttf = goodput.mttf_from_rates_s(rates)
    interval = goodput.daly_interval_s(write_s, mttf) if math.isfinite(mttf) else 3600.0
    return [
        FleetJob(
            job_id=f"pretrain-{i}",
            team=teams[i % len(teams)],
            user=f"{teams[i % len(teams)]}-pretrain",
            submit_s=float(rng.uniform(0.0, 3600.0)),
            n_gpus=job.parallel.n_gpus,
            wall_s=horizon * 2.0,
            run_s=horizon,
            kind="pretrain",
            qos="high",
            training=job,
            checkpoint_interval_s=float(interval),
            checkpoint_write_s=float(write_s),
            restore_s=float(restore_s),
            topology="any",
        )
        for i in range(spec.n_pretrain)
    ]

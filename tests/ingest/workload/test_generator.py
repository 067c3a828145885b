"""The LLM-lab generator's statistics against Acme's published Seren figures, within stated tolerances."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from ingest.workload import generator


def _seren(fixtures_dir) -> dict:
    with open(fixtures_dir / "job-traces" / "acme-cluster-summary.csv") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == "Seren")


@pytest.mark.slow
def test_default_mix_resembles_seren(fixtures_dir):
    seren = _seren(fixtures_dir)
    jobs, quotas, qos = generator.generate(generator.MixSpec(jobs=50_000, days=30, seed=3, n_pretrain=0))
    g = np.array([j.n_gpus for j in jobs])
    run = np.array([j.run_s for j in jobs])
    assert np.median(g) == float(seren["med_gpu_num"]) == 1.0
    assert g.max() == float(seren["max_gpu"]) == 1024
    # median run time within 5 %, mean within 15 % (a log-normal with σ = 2.2 has a noisy mean)
    assert abs(np.median(run) / float(seren["med_run_time_gpu"]) - 1) < 0.05
    assert abs(run.mean() / float(seren["avg_run_time_gpu"]) - 1) < 0.15
    for state, key in (
        ("completed", "complete_rate_gpu"),
        ("cancelled", "cancel_rate_gpu"),
        ("failed", "fail_rate_gpu"),
    ):
        share = np.mean([j.end_state == state for j in jobs])
        assert abs(share - float(seren[key])) < 0.01, state
    assert len(quotas) == 8 and {q.cohort for q in quotas} == {"lab"}
    assert [q.name for q in qos] == ["high", "normal"]


def test_the_generator_is_seeded():
    a, _, _ = generator.generate(generator.MixSpec(jobs=500, seed=7, n_pretrain=0))
    b, _, _ = generator.generate(generator.MixSpec(jobs=500, seed=7, n_pretrain=0))
    c, _, _ = generator.generate(generator.MixSpec(jobs=500, seed=8, n_pretrain=0))
    assert a == b and a != c


def test_pretraining_runs_checkpoint_at_dalys_interval():
    from ingest.workload.ctfile import job_file

    jobs, _, _ = generator.generate(generator.MixSpec(jobs=10, n_pretrain=2, pretrain_job=job_file("llama3-405b-16k")))
    pre = [j for j in jobs if j.kind == "pretrain"]
    assert len(pre) == 2 and all(j.n_gpus == 16384 and j.qos == "high" for j in pre)
    assert all(0 < j.checkpoint_interval_s < 86_400 and j.restore_s > 0 for j in pre)

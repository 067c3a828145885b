"""Predictions on a recorded Slurm 22.05 read (no controller): the mapping's rules, the figures' definitions."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from servers.readiness import load_scaled_s

from ingest.slurm.predict import order_accuracy, predict, start_errors_s
from ingest.slurm.runtime import estimator, history
from ingest.sources.inventory import Inventory
from ingest.sources.slurm import SlurmTarget, read_slurm
from ingest.sources.slurm_config import scheduler_config
from ingest.sources.slurm_records import SlurmJob
from twin.fleet.topology import fleet_topology
from twin.site.load import load_site

V22 = Path(__file__).resolve().parents[1] / "data" / "slurm-22.05"


@pytest.fixture(scope="module")
def read():
    site = load_site("demo")
    result = read_slurm(SlurmTarget(mode="recorded", path=str(V22)), Inventory.from_site(site))
    assert result.ok, result.error
    return result.snapshot, fleet_topology(site)


def test_every_pending_job_is_predicted_or_said_never(read):
    snap, topo = read
    for method in ("simulate", "plan"):
        pred = predict(snap, topo, method=method)
        doc = pred.as_dict()
        json.dumps(doc, allow_nan=False)
        pending = {j.display_id for j in snap.jobs if j.state == "pending"}
        keys = {p.key for p in pred.jobs}
        # every pending record is there, an array record as its tasks
        assert {k.split("_")[0] for k in keys} >= {p.split("_")[0] for p in pending}
        for p in pred.jobs:
            assert (p.predicted_start_at is None) == (p.predicted_order is None)
            if p.predicted_start_at is None:
                assert p.why_not
            else:
                assert p.predicted_start_at >= pred.now
        orders = sorted(p.predicted_order for p in pred.jobs if p.predicted_order)
        assert orders == list(range(1, len(orders) + 1))


def test_a_dependency_starts_after_the_job_it_waits_on(read):
    snap, topo = read
    pred = predict(snap, topo, method="simulate")
    by_key = {p.key: p for p in pred.jobs}
    waiting = [j for j in snap.jobs if j.state == "pending" and j.depends_on]
    assert waiting
    for job in waiting:
        p = by_key[job.display_id]
        for dep in job.depends_on:
            other = by_key.get(str(dep))
            if other is not None and other.predicted_start_at and p.predicted_start_at:
                assert p.predicted_start_at > other.predicted_start_at


def test_order_accuracy_counts_pairs_leaves_true_ties_out_and_halves_predicted_ties():
    truth = {"a": 0.0, "b": 10.0, "c": 20.0, "d": 20.0}
    assert order_accuracy({"a": 1, "b": 2, "c": 3, "d": 4}, truth) == 1.0  # c~d tie in truth: not judged
    assert order_accuracy({"a": 3, "b": 2, "c": 1, "d": 1}, truth) == 0.0
    assert order_accuracy({"a": 1, "b": 1, "c": 3, "d": 3}, truth) == pytest.approx(4.5 / 5)
    assert math.isnan(order_accuracy({"a": 1}, {"a": 0.0}))
    assert start_errors_s({"a": 1.5, "x": 0.0}, {"a": 0.0, "b": 3.0}).tolist() == [1.5]


def test_run_times_are_the_mean_of_the_last_two_runs_capped_at_the_limit():
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def done(i, run_s):
        start = t0 + timedelta(seconds=10_000 * i)  # ended in id order
        return SlurmJob(
            job_id=i,
            name="train",
            user="ann",
            state="completed",
            started_at=start,
            ended_at=start + timedelta(seconds=run_s),
        )

    jobs = [done(1, 1000), done(2, 30), done(3, 50)]
    assert history(jobs)[("ann", "train")] == 40.0
    est = estimator(jobs)
    assert est(SlurmJob(job_id=9, name="train", user="ann", state="pending", time_limit_s=35)) == 35
    assert est(SlurmJob(job_id=9, name="other", user="ann", state="pending")) is None
    assert estimator(jobs, "limit")(jobs[0]) is None
    with pytest.raises(ValueError, match="run-time mode"):
        estimator(jobs, "guess")


def test_scheduler_settings_from_scontrol_show_config():
    cfg = scheduler_config(
        {
            "SchedulerType": "sched/backfill",
            "SchedulerParameters": "bf_interval=1,bf_resolution=1,default_queue_depth=50,bf_continue",
            "PriorityType": "priority/multifactor",
            "PriorityWeightAge": "1000",
            "PriorityMaxAge": "7-00:00:00",
            "PreemptType": "preempt/qos",
            "PreemptMode": "REQUEUE",
            "AccountingStorageEnforce": "associations,limits,qos",
        }
    )
    assert (cfg.bf_interval_s, cfg.bf_resolution_s, cfg.queue_depth_count) == (1.0, 1.0, 50)
    assert cfg.priority_weights["age"] == 1000.0 and cfg.priority_max_age_s == 7 * 86400.0
    assert (cfg.preempt_type, cfg.preempt_mode, cfg.limits_enforced_flag) == ("qos", "requeue", 1)
    assert scheduler_config({}).source == "defaults" and scheduler_config({}).bf_interval_s == 30.0


@pytest.mark.slow
def test_predict_needs_a_site_one_line_exit_2():
    argv = [sys.executable, "-m", "twin.cli", "ingest", "once", "--source", "slurm", "--target", str(V22), "--predict"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=load_scaled_s(60.0))
    assert (
        r.returncode == 2
        and r.stderr.strip() == "error: --predict needs --site: the fleet model plans on the site's nodes"
    )


@pytest.mark.slow
def test_predict_json_from_a_recorded_directory():
    argv = [sys.executable, "-m", "twin.cli", "ingest", "once", "--source", "slurm", "--target", str(V22)]
    r = subprocess.run(
        argv + ["--site", "demo", "--predict", "--json"], capture_output=True, text=True, timeout=load_scaled_s(120.0)
    )
    assert r.returncode == 0, r.stderr
    pred = json.loads(r.stdout)["prediction"]
    assert pred["scheduler"]["config_source"] == "defaults"  # a recorded directory without scontrol-config.txt
    assert pred["n_jobs_predicted"] + pred["n_jobs_never"] == len(pred["jobs"]) > 0

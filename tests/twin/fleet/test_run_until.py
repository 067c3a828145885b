"""One loop: :meth:`FleetSim.simulate` is ``run_until(horizon)``; stepping it gives the same run, batching does not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.twin.fleet.tiny_fleet import ends, job, make_sim, starts, tiny_fleet_site
from twin.fleet import failures
from twin.fleet.policy import Policy, QosSpec, TeamQuota
from twin.fleet.topology import fleet_topology

HORIZON_S = 6 * 3600.0


def _mixed_jobs(n: int = 160, seed: int = 3) -> list:
    """Jobs of three teams, 1 GPU to the whole tiny site, some checkpointed, some of a preempting QoS."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        gpus = int(rng.choice([1, 2, 4, 8, 16, 24, 32, 64], p=[0.2, 0.15, 0.15, 0.2, 0.1, 0.08, 0.07, 0.05]))
        run_s = float(np.round(rng.lognormal(6.5, 1.0)))
        extra = dict(team=f"t{i % 3}", user=f"u{i % 5}", checkpoint_interval_s=120.0, restore_s=5.0)
        if i % 11 == 0:
            extra["qos"] = "high"
        submit_s = float(np.round(rng.uniform(0, HORIZON_S * 0.7), 1))
        out.append(job(f"j{i}", gpus, submit_s, run_s, wall_s=run_s * 1.5, **extra))
    return out


def _policy() -> Policy:
    return Policy(
        ordering="priority",
        backfill="easy",
        placement="tree",
        power="per_job",
        bf_interval_s=30.0,
        qos=(QosSpec("normal"), QosSpec("high", priority=10, preempt=("normal",))),
        quotas=tuple(TeamQuota(f"t{k}", 24, cohort="lab", shares=1.0 + k) for k in range(3)),
    )


def _sim():
    site = tiny_fleet_site()
    gpu = fleet_topology(site).gpu_type_names[0]
    model = failures.FailureModel(rate_per_1000_node_days={gpu: 4000.0})  # a few node failures over the run
    return make_sim(_mixed_jobs(), _policy(), horizon_s=HORIZON_S, site=site, failures=True, failure_model=model)


def _same_schedule(a, b) -> None:
    """Starts, ends, restarts, preemptions, placements now and the scheduler's counts are equal."""
    for key in ("first_start_s", "last_start_s", "end_s", "status", "restarts", "preemptions", "done_s"):
        assert np.array_equal(getattr(a.run, key), getattr(b.run, key), equal_nan=True), key
    assert np.array_equal(a.run.cluster.gpu_job, b.run.cluster.gpu_job)
    assert a.counts == b.counts


@pytest.fixture(scope="module")
def reference():
    sim = _sim()
    res = sim.simulate()
    return sim, res


def test_the_reference_run_exercises_the_loop(reference):
    sim, res = reference
    c = sim.counts
    assert c["node_failures_count"] >= 2 and c["full_passes_count"] > 50 and c["passes_count"] > c["full_passes_count"]
    assert int(sim.run.preemptions.sum()) > 0 and int(sim.run.restarts.sum()) > 0
    assert res.fleet["jobs_completed_count"] > 100


@pytest.mark.parametrize("step_s", [1.0, 60.0, 997.0])
def test_stepping_run_until_gives_the_schedule_of_one_run(reference, step_s):
    ref, res = reference
    sim = _sim()
    seen = []
    for t in np.arange(step_s, HORIZON_S, step_s):
        sim.run_until(float(t), observe=seen.append)
        assert sim.run.now_s == t
    sim.run_until(HORIZON_S)
    got = sim._result(0.0).fleet  # the report brings the running jobs' progress up to the horizon
    _same_schedule(sim, ref)
    assert np.array_equal(sim.run.acct.team_usage_gpu_s, ref.run.acct.team_usage_gpu_s)
    assert seen == sorted(seen)  # every event instant and every step end, in time order
    assert {float(t) for t in np.arange(step_s, HORIZON_S, step_s)} <= set(seen)
    for key in ("mean_wait_s", "energy_mwh", "allocated_frac", "utilisation_frac"):
        assert got[key] == pytest.approx(res.fleet[key], rel=1e-9), key


def test_run_until_refuses_to_go_back():
    sim = _sim()
    sim.run_until(100.0)
    sim.run_until(100.0)  # the same instant again: nothing to do
    with pytest.raises(ValueError, match=r"run_until\(99.0 s\): the simulation is already at 100.0 s"):
        sim.run_until(99.0)


def _blocked_b(**kw):
    # A holds the whole site until 8; B, submitted at 1, can start only when A ends
    return make_sim([job("A", 64, 0, 8), job("B", 64, 1, 10)], **kw)


def test_batched_steps_start_jobs_at_the_step_end_at_most_every_batch_s():
    ref = _blocked_b()
    ref.simulate()
    assert starts(ref) == {"A": 0, "B": 8}
    # 1 s steps, the scheduler at most every 5 s and only after a change: it runs at 0 (A starts) and at 5
    # (B, submitted at 1, is blocked); A's end at 8 waits for the run at 10.  60 s steps: the first step's end
    for step_s, batch_s, b_start in ((1.0, 5.0, 10.0), (0.5, 5.0, 10.0), (1.0, 0.0, 8.0), (60.0, 5.0, 60.0)):
        sim = _blocked_b()
        for t in np.arange(0.0, 100.0 + step_s, step_s):
            sim.run_until(float(t), batch_s=batch_s)
        assert starts(sim) == {"A": 0, "B": b_start}, (step_s, batch_s)
        assert ends(sim)["B"] == b_start + 10
        assert sim.planned_start_s == {}


def test_batched_steps_keep_the_backfill_plan():
    sim = _blocked_b(policy=Policy(ordering="fcfs", backfill="easy", placement="flat", power="off", bf_interval_s=0))
    for t in range(0, 8):
        sim.run_until(float(t), batch_s=5.0)
    b = sim.run.table.index["B"]
    assert sim.planned_start_s == {b: 8.0} and math.isnan(sim.run.first_start_s[b])
    sim.run_until(10.0, batch_s=5.0)
    assert sim.run.first_start_s[b] == 10.0 and sim.planned_start_s == {}

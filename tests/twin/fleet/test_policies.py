"""Each policy against a schedule computed by hand on the 8-node tiny fleet (times in seconds)."""

from __future__ import annotations

import math

from tests.twin.fleet.tiny_fleet import ends, job, make_sim, starts
from twin.fleet.policy import Policy, QosSpec, TeamQuota


def _policy(**kw) -> Policy:
    base = dict(ordering="fcfs", backfill="easy", placement="flat", power="off", bf_interval_s=0.0, preemption=False)
    base.update(kw)
    return Policy(**base)


def _run(jobs, **kw):
    sim = make_sim(jobs, _policy(**kw))
    sim.simulate()
    return sim


ABC = [job("A", 48, 0, 100), job("B", 32, 1, 10), job("C", 8, 2, 10)]


def test_fcfs_without_backfill_waits_in_order():
    # A holds 6 of 8 nodes until 100; B (4 nodes) waits; C (1 node) may not pass B
    assert starts(_run(ABC, backfill="none")) == {"A": 0, "B": 100, "C": 100}


def test_easy_backfills_a_job_that_ends_before_the_reservation():
    # B is reserved at 100; C fits the 2 free nodes and ends at 12 < 100
    assert starts(_run(ABC, backfill="easy")) == {"A": 0, "B": 100, "C": 2}


def test_easy_extra_nodes_rule_and_the_strict_variant():
    # C runs 1,000 s: it ends after B's reservation at 100, but B leaves 4 nodes over at 100
    jobs = [job("A", 48, 0, 100), job("B", 32, 1, 10), job("C", 8, 2, 1000)]
    assert starts(_run(jobs, backfill="easy"))["C"] == 2
    # the strict variant (RAPS's) lets C wait for the next chance: at 100 B takes 4 nodes and C one of the rest
    assert starts(_run(jobs, backfill="easy", bf_extra_nodes=False))["C"] == 100


def test_conservative_protects_every_reservation_easy_only_the_first():
    # A 6 nodes until 100; B 4 nodes reserved [100,200); D 8 nodes; E 2 nodes for 250 s
    jobs = [job("A", 48, 0, 100), job("B", 32, 1, 100), job("D", 64, 2, 100), job("E", 16, 3, 250)]
    assert starts(_run(jobs, backfill="easy")) == {"A": 0, "B": 100, "D": 253, "E": 3}
    assert starts(_run(jobs, backfill="conservative")) == {"A": 0, "B": 100, "D": 200, "E": 300}


def test_fair_share_puts_the_team_that_used_less_first():
    jobs = [
        job("X1", 64, 0, 100, team="x"),
        job("X2", 64, 50, 100, team="x"),
        job("Y1", 64, 60, 100, team="y"),
    ]
    quotas = (TeamQuota("x", 64, shares=1.0), TeamQuota("y", 64, shares=1.0))
    fair = make_sim(jobs, _policy(ordering="priority", quotas=quotas))
    fair.simulate()
    assert starts(fair) == {"X1": 0, "Y1": 100, "X2": 200}
    fcfs = make_sim(jobs, _policy(ordering="fcfs", quotas=quotas))
    fcfs.simulate()
    assert starts(fcfs) == {"X1": 0, "X2": 100, "Y1": 200}


def test_quota_borrowing_and_reclaim_with_checkpoint_loss():
    # A borrows 16 of B's idle quota; B's job reclaims it: A is requeued at 10, keeps its checkpoint at 8 s
    # of progress (2 s lost), waits until B ends at 30 and pays a 1 s restore: 92 s of work left ends at 123
    quotas = (TeamQuota("a", 32, cohort="lab"), TeamQuota("b", 32, cohort="lab"))
    jobs = [
        job("A", 48, 0, 100, wall_s=1000, team="a", checkpoint_interval_s=4.0, restore_s=1.0),
        job("B", 32, 10, 20, team="b"),
    ]
    sim = make_sim(jobs, _policy(quotas=quotas, preemption=True))
    sim.simulate()
    run = sim.run
    assert starts(sim) == {"A": 0, "B": 10}
    assert ends(sim) == {"A": 123, "B": 30}
    assert run.preemptions[0] == 1 and math.isclose(run.lost_work_s[0], 2.0)


def test_a_team_without_a_cohort_cannot_borrow():
    quotas = (TeamQuota("a", 32),)
    sim = make_sim([job("A", 48, 0, 100, team="a")], _policy(quotas=quotas))
    sim.simulate()
    assert math.isnan(sim.run.first_start_s[0])
    from twin.fleet.state import reason_of

    assert reason_of(sim.run, 0) == "AssocGrpGRES"


def test_qos_preemption_requeues_the_lower_qos_job_and_it_loses_work_since_its_checkpoint():
    qos = (QosSpec("high", priority=100, preempt=("normal",)), QosSpec("normal"))
    jobs = [
        job("N", 64, 0, 100, wall_s=1000, qos="normal", checkpoint_interval_s=10.0, restore_s=5.0),
        job("H", 32, 25, 50, qos="high"),
    ]
    sim = make_sim(jobs, _policy(qos=qos, preemption=True))
    sim.simulate()
    # H preempts N at 25 (N saved 20 s, loses 5); N restarts at 75, restores until 80, 80 s left: ends at 160
    assert starts(sim) == {"N": 0, "H": 25}
    assert ends(sim)["H"] == 75 and ends(sim)["N"] == 160
    assert sim.run.lost_work_s[0] == 5.0


def test_gang_never_starts_part_of_a_job():
    jobs = [job("A", 24, 0, 100), job("B", 48, 1, 10)]  # B needs 6 nodes, 5 are free
    sim = _run(jobs, backfill="none")
    assert starts(sim)["B"] == 100
    assert sim.run.n_alloc.max() == 0  # everything released at the end


def test_no_preemption_when_the_victims_gpus_would_not_place_the_job():
    # X holds rack 0 from 0 to 100; Y1 (node 2, rack 1) and Y2 (node 4, rack 2) started at 1 are the most
    # recent normal jobs, so they are the victims by count for H (2 nodes inside one leaf = one rack) at 10;
    # freed, they would leave nodes 2 and 4 on two racks: nobody is requeued and H starts when X ends
    qos = (QosSpec("high", priority=100, preempt=("normal",)), QosSpec("normal"))
    jobs = [
        job("X", 16, 0, 100, qos="normal"),
        job("Y1", 8, 1, 1000, qos="normal"),
        job("P1", 8, 1, 1000, qos="high"),
        job("Y2", 8, 1, 1000, qos="normal"),
        job("P2", 24, 1, 1000, qos="high"),
        job("H", 16, 10, 50, qos="high", topology="leaf"),
    ]
    sim = make_sim(jobs, _policy(qos=qos, preemption=True))
    sim.simulate()
    assert starts(sim) == {"X": 0, "Y1": 1, "P1": 1, "Y2": 1, "P2": 1, "H": 100}
    assert sim.run.preemptions.sum() == 0

"""A node failure and its requeue or spare, the drained node's repair, a lemon; a demand-response event."""

from __future__ import annotations

import math

import numpy as np

from tests.twin.fleet.tiny_fleet import job, make_sim, starts, tiny_fleet_site
from twin.fleet import failures
from twin.fleet.policy import DemandResponse, Policy
from twin.fleet.state import reason_of


def _inject(sim, t, node, repair_s=1000.0, cause=0):
    sim._fails = failures.FailureDraw(
        np.array([t]), np.array([node]), np.array([cause]), np.array([repair_s]), np.zeros(sim.run.topo.n_nodes, bool)
    )


def _policy(**kw):
    return Policy(**{**dict(ordering="fcfs", backfill="easy", placement="flat", power="off", bf_interval_s=0.0), **kw})


def test_a_failure_without_spares_requeues_the_job_to_its_last_checkpoint():
    jobs = [job("A", 64, 0, 100, wall_s=500, checkpoint_interval_s=10.0, restore_s=2.0)]
    sim = make_sim(jobs, _policy())
    _inject(sim, 35.0, node=3, repair_s=100.0)
    sim.simulate()
    run = sim.run
    # node 3 is down until 135 + 900 s of health checks: 7 nodes never hold 8; the job waits for it (1,035 s),
    # restores 2 s and runs the 70 s its checkpoint at 30 s left: ends at 1,107
    assert run.failures[0] == 1 and run.lost_work_s[0] == 5.0
    assert math.isclose(run.end_s[0], 135.0 + failures.HEALTH_CHECK_S + 2.0 + 70.0)
    assert run.restarts[0] == 1


def test_a_failure_with_a_spare_restarts_in_place_after_detection_swap_restore_and_warm_up():
    jobs = [job("A", 48, 0, 100, wall_s=2000, checkpoint_interval_s=10.0, restore_s=2.0)]
    sim = make_sim(jobs, _policy())
    _inject(sim, 35.0, node=2, repair_s=100.0)
    sim.simulate()
    run = sim.run
    overhead = failures.restart_overhead_s(0, 2.0)  # XID: 30 s + 120 s swap + 2 s restore + 60 s warm-up
    assert math.isclose(run.end_s[0], 35.0 + overhead + 70.0)
    assert 2 not in set(sim.run.topo.site.gpu_node[np.flatnonzero(run.cluster.gpu_job == 0)].tolist())


def test_the_failed_node_is_drained_repaired_checked_and_back():
    sim = make_sim([job("A", 8, 0, 50)], _policy(), horizon_s=120.0)
    _inject(sim, 10.0, node=0, repair_s=50.0)
    sim.simulate()
    iso = sim.run.cluster.isolation()
    assert iso and iso[0]["node_state"] == "check" and iso[0]["since_s"] == 60.0


def test_a_lemon_is_kept_out():
    sim = make_sim([], _policy(), horizon_s=1e6)
    model = failures.FailureModel()
    sim.node_history[5] = [0.0, 10.0, 20.0]
    from twin.fleet import events

    events.node_repaired(sim, 5, 30.0)
    assert sim.run.cluster.node_state[5] == 3 and "lemon" in sim.run.cluster.node_reason[5]
    assert failures.is_lemon([0.0, 1.0], 2.0, model) is False


def test_demand_response_caps_jobs_in_power_order_and_requeues_what_no_floor_fits():
    # two 4-node fine-tuning jobs (floor 21.9 kW each at 420 W, 29 kW at full power) on 79.2 kW of supply less
    # 20.2 kW of switches and overhead: both run, B a little capped; a 29 kW cut leaves 28.8 kW of IT power:
    # A keeps its floor and what is left over, B (later in power order) is requeued
    site = tiny_fleet_site(grid_mw=0.08, gen_mw=0.0)
    dr = DemandResponse(start_s=100.0, duration_s=3600.0, cut_mw=0.029)
    pol = _policy(power="per_job", demand_response=(dr,), cooling_overhead_frac=0.0, idle_nodes_off=True)
    jobs = [job("A", 32, 0, 10_000, kind="finetune"), job("B", 32, 1, 10_000, kind="finetune")]
    sim = make_sim(jobs, pol, site=site, horizon_s=200.0)
    sim.simulate()
    rep = sim.dr_reports[0]
    assert rep["requeued"] == ["B"] and rep["capped"][0]["job"] == "A"
    assert 420.0 <= sim.run.cap_w[0] < 700.0
    assert math.isclose(rep["dr_lost_gpu_h"], 32 * 1.0 + 32 * (1 - sim.run.speed_frac[0]), rel_tol=1e-9)
    assert reason_of(sim.run, 1) == "PowerCap"


def test_per_job_admission_holds_a_job_with_powercap():
    site = tiny_fleet_site(grid_mw=0.055, gen_mw=0.0)  # room for one 32-GPU job at its floor cap
    pol = _policy(power="per_job", cooling_overhead_frac=0.0)
    sim = make_sim(
        [job("A", 32, 0, 1000, kind="finetune"), job("B", 32, 1, 1000, kind="finetune")], pol, site=site, horizon_s=50.0
    )
    sim.simulate()
    assert starts(sim)["A"] == 0.0 and math.isnan(starts(sim)["B"])
    assert reason_of(sim.run, 1) == "PowerCap"


def test_a_pinned_job_keeps_full_power_and_runs_while_the_others_make_room():
    # 45 kW of grid less 1 % and 20.2 kW of switches and overhead: 24.4 kW of IT power, less than B's full
    # 29 kW alone; B is pinned (the twin's own job): it starts, runs at full power, and A is requeued
    site = tiny_fleet_site(grid_mw=0.045, gen_mw=0.0)
    pol = _policy(power="per_job", cooling_overhead_frac=0.0, idle_nodes_off=True, power_rebalance_s=0.0)
    jobs = [job("A", 32, 0, 10_000, kind="finetune"), job("B", 32, 1, 10_000, kind="finetune")]
    sim = make_sim(jobs, pol, site=site, horizon_s=200.0)
    sim.power.pin(1)
    sim.simulate()
    run = sim.run
    assert sim.power.full_w[1] > sim.power.it_budget_w()
    assert starts(sim)["B"] == 1.0 and run.cap_w[1] == math.inf and math.isnan(run.end_s[1])
    assert reason_of(run, 0) == "PowerCap" and run.preemptions[0] == 1
    assert sim.power.admits(1) and not sim.power.admits(0)


def test_a_pinned_job_yields_to_a_demand_response_event():
    # the demand-response case above with B pinned: an order from outside the site; B, whose full 29 kW
    # is more than the 28.8 kW left, is requeued, and A keeps its floor and what is left over
    site = tiny_fleet_site(grid_mw=0.08, gen_mw=0.0)
    dr = DemandResponse(start_s=100.0, duration_s=3600.0, cut_mw=0.029)
    pol = _policy(power="per_job", demand_response=(dr,), cooling_overhead_frac=0.0, idle_nodes_off=True)
    jobs = [job("A", 32, 0, 10_000, kind="finetune"), job("B", 32, 1, 10_000, kind="finetune")]
    sim = make_sim(jobs, pol, site=site, horizon_s=200.0)
    sim.power.pin(1)
    sim.simulate()
    assert sim.dr_reports[0]["requeued"] == ["B"] and reason_of(sim.run, 1) == "PowerCap"
    assert 420.0 <= sim.run.cap_w[0] <= math.inf


def test_a_pinned_job_keeps_full_power_under_the_uniform_cap():
    site = tiny_fleet_site(grid_mw=0.08, gen_mw=0.0)
    dr = DemandResponse(start_s=100.0, duration_s=3600.0, cut_mw=0.008)
    pol = _policy(power="uniform", demand_response=(dr,), cooling_overhead_frac=0.0, idle_nodes_off=True)
    jobs = [job("A", 32, 0, 10_000, kind="finetune"), job("B", 32, 1, 10_000, kind="finetune")]
    sim = make_sim(jobs, pol, site=site, horizon_s=200.0)
    sim.power.pin(1)
    sim.simulate()
    run = sim.run
    assert run.cap_w[1] == math.inf and run.cap_w[0] < 700.0  # A alone takes the cap for both
    assert sim.dr_reports[0]["requeued"] == []

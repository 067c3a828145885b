"""A demand-response event on the tiny fleet, against figures worked out by hand."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests.twin.fleet.tiny_fleet import job, make_sim, tiny_fleet_site
from twin.fleet.policy import DemandResponse, Policy, QosSpec
from twin.fleet.state import PENDING, RUNNING, reason_of

HOURS = 2.0
DR_START_S = 1000.0


def _fleet():
    site = dataclasses.replace(tiny_fleet_site(grid_mw=0.08, gen_mw=0.0), psu_efficiency_points_frac=np.full(4, 0.95))
    qos = (QosSpec("high", priority=100.0, min_power_cap_w=600.0), QosSpec("normal", priority=10.0))
    dr = DemandResponse(start_s=DR_START_S, duration_s=HOURS * 3600.0, cut_mw=0.030)
    pol = Policy(
        ordering="fcfs",
        backfill="easy",
        placement="flat",
        power="per_job",
        bf_interval_s=0.0,
        preemption=False,
        qos=qos,
        demand_response=(dr,),
        cooling_overhead_frac=0.0,
        idle_nodes_off=True,
    )
    common = dict(run_s=1e6, wall_s=2e6, kind="finetune", util_frac=1.0)
    jobs = [
        job("A", 16, 0.0, qos="high", tokens_per_s=500.0, **common),
        job("B", 16, 0.0, tokens_per_s=1000.0, **common),
        job("C", 16, 0.0, tokens_per_s=2000.0, checkpoint_interval_s=600.0, **common),
    ]
    return make_sim(jobs, pol, site=site, horizon_s=DR_START_S + HOURS * 3600.0)


def test_a_cut_of_30_kw_for_two_hours_caps_b_and_requeues_c():
    """Three 2-node jobs at full utilisation on the tiny fleet; a 30 kW cut for 2 h at t = 1,000 s.

    Node power, with a flat 95 % PSU curve: DC = 8 c + 900 W + 1.0 × (1,900 − 900) W = 8 c + 1,900 W
    at GPU cap c (demand 700 W: full utilisation), input = DC / 0.95; a 2-node job draws
    P(c) = (16 c + 3,800) / 0.95:  P(700) = 15,789.47 W, P(600) = 14,105.26 W (A's QoS floor),
    P(420) = 11,073.68 W (0.6 × 700 W, B's and C's floor), P(475) = 12,000.00 W.

    Budget: η = 0.97 (UPS) × 0.99 (transformer) = 0.9603 down a feed, cooling 0; fixed load
    6 switches × 1.7 kW + 10 kW = 20.2 kW.  Before: 80 kW × 0.99 = 79.2 kW → IT budget
    (79.2 − 20.2) × 0.9603 = 56,657.7 W ≥ 3 × 15,789.47 = 47,368.4 W: all three at full power.
    During: 79.2 − 30 = 49.2 kW → IT budget (49.2 − 20.2) × 0.9603 = 27,848.7 W.

    Power order: A (QoS high), then B, C (same start, row order).  Floors: A 14,105.26, A + B
    25,178.95 ≤ 27,848.7, A + B + C 36,252.63 > 27,848.7: **C is requeued**.  Left above the floors:
    27,848.7 − 25,178.95 = 2,669.75 W; A to full power takes 15,789.47 − 14,105.26 = 1,684.21 W
    (A keeps full power), 985.54 W are left for B: B may draw 11,073.68 + 985.54 = 12,059.23 W, i.e.
    16 c + 3,800 ≤ 11,456.27, c ≤ 478.5 W: the highest cap of the 25 W grid is **475 W for B**.

    Speed at 475 W (DVFS law, exponent 2.5): ((475 − 85) / (700 − 85))^(1/2.5) = 0.634146^0.4 = 0.833443.
    Over the 2 h: B loses 16 GPUs × (1 − 0.833443) × 2 h = 5.32983 GPU·h and 1,000 × 0.166557 × 7,200 s
    = 1,199,212 tokens; C loses 16 × 2 h = 32 GPU·h and 2,000 × 7,200 = 14,400,000 tokens; in all
    37.32983 GPU·h and 15,599,212 tokens.  C also rolls back to its checkpoint at 600 s of its 1,000 s:
    400 s × 16 GPUs = 1.77778 GPU·h and 400 s × 2,000 = 800,000 tokens.
    """
    sim = _fleet()
    sim.simulate()
    run = sim.run
    (rep,) = sim.dr_reports
    assert rep["requeued"] == ["C"] and rep["jobs_requeued_count"] == 1
    assert [c["job"] for c in rep["capped"]] == ["B"]
    assert rep["capped"][0]["cap_before_w"] == math.inf and rep["capped"][0]["cap_w"] == 475.0
    assert rep["budget_mw"] == pytest.approx(0.0492)
    assert rep["dr_lost_gpu_h"] == pytest.approx(37.32983, abs=1e-5)
    assert rep["dr_tokens_lost_count"] == pytest.approx(15_599_212, abs=1.0)
    assert rep["dr_rolled_back_gpu_h"] == pytest.approx(1.77778, abs=1e-5)
    assert rep["dr_rolled_back_tokens_count"] == pytest.approx(800_000, abs=1e-3)
    # what the run made agrees: B at 0.833443 for the 2 h, C back at its checkpoint and held by power
    assert run.tokens[1] == pytest.approx(1000.0 * DR_START_S + 1000.0 * 0.833443 * 7200.0, rel=1e-6)
    assert run.tokens[2] == pytest.approx(2000.0 * 600.0) and run.done_s[2] == pytest.approx(600.0)
    assert run.tokens[0] == pytest.approx(500.0 * (DR_START_S + 7200.0))


def test_c_waits_with_powercap_during_the_event_and_restarts_after_it():
    sim = _fleet()
    sim.opts = dataclasses.replace(sim.opts, horizon_s=DR_START_S + 3600.0)  # an hour into the event
    sim.simulate()
    assert sim.run.status[2] == PENDING and reason_of(sim.run, 2) == "PowerCap"
    assert sim.run.cap_w[1] == 475.0 and sim.run.speed_frac[1] == pytest.approx(0.833443, abs=1e-6)
    assert sim.run.cap_w[0] == math.inf and sim.run.speed_frac[0] == 1.0
    after = _fleet()
    after.opts = dataclasses.replace(after.opts, horizon_s=DR_START_S + HOURS * 3600.0 + 60.0)
    after.simulate()
    assert after.run.status[2] == RUNNING and after.run.cap_w[1] == math.inf
    assert after.run.last_start_s[2] == pytest.approx(DR_START_S + HOURS * 3600.0)

"""The fleet what-if of an edit on the demo site: each kind of edit changes what it should, the baseline nothing.

One day of a busy LLM-lab mix without pretraining (1,000 jobs, runs of a median hour and a
mean of four hours: the 1,024 GPUs about 80 % allocated, so quotas and power bind).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ingest.workload import generator
from twin.fleet.edit_whatif import (
    FleetEdit,
    Maintenance,
    QuotaChange,
    fleet_edit_whatif,
    hall_nodes,
    run_side,
    scenario_policy,
)
from twin.fleet.policy import DemandResponse, Policy
from twin.fleet.simulate import SimOptions
from twin.fleet.whatif import Conversion, WhatIfError
from twin.site.load import load_site

DAY_S = 86_400.0


@pytest.fixture(scope="module")
def case():
    """(site, jobs, policy, options, baseline side)."""
    state = load_site("demo")
    jobs, quotas, qos = generator.generate(
        generator.MixSpec(
            jobs=1000, days=1.0, seed=0, n_pretrain=0, site_gpus=state.n_gpus, median_run_s=3600.0, mean_run_s=14_400.0
        )
    )
    policy = Policy(quotas=tuple(quotas), qos=tuple(qos))
    opts = SimOptions(horizon_s=DAY_S, seed=0)
    return state, jobs, policy, opts, run_side(state, jobs, policy, opts)


def _ask(case, edit: FleetEdit) -> dict:
    state, jobs, policy, opts, base = case
    return fleet_edit_whatif(state, jobs, policy, opts, edit, baseline_side=base)


@pytest.mark.slow
def test_the_baseline_is_busy_and_its_hourly_series_add_up(case):
    state, *_, base = case
    assert base["allocated_frac"] > 0.6  # a busy site, or no edit would matter
    hourly = np.asarray(base["hourly"]["allocated_gpu_count"])
    assert hourly.size == 24
    assert hourly.mean() == pytest.approx(base["allocated_frac"] * state.n_gpus, rel=1e-6)
    power = np.asarray(base["hourly"]["facility_power_mw"])
    assert power.mean() * 24 == pytest.approx(base["energy_mwh"], rel=1e-6)
    assert math.isnan(base["cost_usd"]) and math.isnan(base["carbon_kg"])  # no tariff or intensity given


@pytest.mark.slow
def test_the_baseline_does_not_depend_on_the_edit(case):
    state, jobs, policy, opts, base = case
    out = fleet_edit_whatif(state, jobs, policy, opts, FleetEdit(ordering="fcfs"))  # baseline run afresh
    for key in ("mean_wait_s", "allocated_frac", "energy_mwh", "jobs_completed_count", "jobs_power_capped_count"):
        assert out["baseline"][key] == base[key], key


@pytest.mark.slow
def test_a_conversion_adds_gpus_of_the_new_type(case):
    out = _ask(case, FleetEdit(conversion=Conversion("GB200-NVL72", rows=("H1-R01",)), retarget_kinds=("eval",)))
    b, s = out["baseline"], out["scenario"]
    # 8 racks of 64 H100 become 8 racks of 72 GB200
    assert out["diff"]["n_gpus"] == 64
    assert s["gpus_by_type"] == {"B200-GB200-NVL72": 576, "H100-SXM5-80GB": 512}
    assert b["gpus_by_type"] == {"H100-SXM5-80GB": 1024}
    assert s["design_warnings_count"] > 0
    assert out["edit"] == ["convert H1-R01 to GB200-NVL72", "eval jobs ask for the converted racks' GPUs"]


@pytest.mark.slow
def test_a_new_hall_runs_jobs_once_the_quotas_grow_with_it(case):
    # demo's H1 (16 racks of 64 H100) copied as H2: twice the GPUs on the same 1.1 MW supply
    hall = Conversion("demo-dlc-h100", add_hall_like="H1")
    grown = _ask(case, FleetEdit(conversion=hall, grow_quotas=True))
    b, s = grown["baseline"], grown["scenario"]
    assert grown["diff"]["n_gpus"] == 1024 and s["supply_mw"] == b["supply_mw"]
    assert grown["edit"] == ["add a hall like H1 as demo-dlc-h100", "every team's quota grows with the GPUs added"]
    assert s["mean_wait_all_s"] < 0.7 * b["mean_wait_all_s"]  # what the capacity buys: half the waiting
    assert s["allocated_frac"] * s["n_gpus"] > 1.05 * b["allocated_frac"] * b["n_gpus"]
    assert s["jobs_power_capped_count"] > 5 * b["jobs_power_capped_count"]  # and what the supply costs it
    # as Kueue lends only unused quota, without grown quotas the new GPUs mostly stay idle
    kept = _ask(case, FleetEdit(conversion=hall))["scenario"]
    assert kept["allocated_frac"] * kept["n_gpus"] < s["allocated_frac"] * s["n_gpus"]
    assert kept["mean_wait_all_s"] > s["mean_wait_all_s"]


def test_grown_quotas_share_the_added_gpus_as_the_quotas_share_the_site():
    from twin.fleet.edit_whatif import grown_quotas
    from twin.fleet.policy import TeamQuota

    policy = Policy(quotas=(TeamQuota("a", 600), TeamQuota("b", 424, borrowing_limit_gpus=100)))
    out = grown_quotas(policy, 1024, 2048).quotas
    assert [(q.nominal_gpus, q.borrowing_limit_gpus) for q in out] == [(1200, -1), (848, 200)]
    assert grown_quotas(policy, 1024, 1000) is policy  # a site that shrinks keeps its quotas


@pytest.mark.slow
def test_a_maintenance_window_empties_its_hall_in_it(case):
    out = _ask(case, FleetEdit(maintenance=Maintenance(("H1",), 6 * 3600.0, 6 * 3600.0)))
    b = np.asarray(out["baseline"]["hourly"]["allocated_gpu_count"])
    s = np.asarray(out["scenario"]["hourly"]["allocated_gpu_count"])
    assert (s[6:12] == 0).all() and (b[6:12] > 100).all()  # demo has one hall: nothing runs in the window
    assert s[:5].sum() < b[:5].sum()  # before it, jobs that would run into the window do not start
    assert out["diff"]["mean_wait_s"] > 1800.0
    teams = {t["team"]: t for t in out["teams"]}
    assert all(t["scenario"]["mean_wait_s"] > t["baseline"]["mean_wait_s"] for t in teams.values())


@pytest.mark.slow
def test_a_demand_response_cut_lowers_energy_and_lists_the_capped_jobs(case):
    state, *_ = case
    cut = DemandResponse(start_s=6 * 3600.0, duration_s=4 * 3600.0, cut_mw=0.5)
    out = _ask(case, FleetEdit(demand_response=cut))
    b, s = out["baseline"], out["scenario"]
    assert s["energy_mwh"] < b["energy_mwh"] - 0.5
    power = np.asarray(s["hourly"]["facility_power_mw"])
    budget_mw = 1.1 * (1 - 0.01) - 0.5  # demo's 1.1 MW of sustained generation (no battery) less the margin and the cut
    assert (power[6:10] <= budget_mw + 1e-6).all() and np.asarray(b["hourly"]["facility_power_mw"])[6:10].min() > 0.9
    assert s["jobs_power_capped_count"] > b["jobs_power_capped_count"]
    assert s["jobs_power_capped_count"] + s["jobs_preempted_count"] > 0 and s["jobs"]
    listed = s["jobs"]
    assert all(j["capped_flag"] or j["preempted_count"] > 0 for j in listed)
    assert [j["n_gpus"] for j in listed] == sorted((j["n_gpus"] for j in listed), reverse=True)
    assert {j["team"] for j in listed} <= {q.team for q in case[2].quotas}


@pytest.mark.slow
def test_a_quota_cut_makes_that_team_wait(case):
    """team1 (204 GPUs nominal) left with no quota of its own only borrows what the cohort leaves over."""
    out = _ask(case, FleetEdit(quota=QuotaChange("team1", 0)))
    t1 = {t["team"]: t for t in out["teams"]}["team1"]
    assert t1["scenario"]["mean_wait_s"] > t1["baseline"]["mean_wait_s"] + 600.0
    assert t1["scenario"]["gpu_h"] <= t1["baseline"]["gpu_h"]
    assert out["edit"] == ["team1's nominal quota 0 GPUs"]


@pytest.mark.slow
def test_a_policy_change_reaches_the_scheduler(case):
    state, _, policy, *_ = case
    edited = scenario_policy(policy, FleetEdit(ordering="fcfs", backfill="none"), state)
    assert (edited.ordering, edited.backfill) == ("fcfs", "none") and edited.quotas == policy.quotas
    out = _ask(case, FleetEdit(ordering="fcfs", backfill="none"))
    assert out["scenario"]["mean_wait_s"] != out["baseline"]["mean_wait_s"]


@pytest.mark.slow
def test_maintenance_reserves_the_halls_nodes(case):
    state, _, policy, *_ = case
    nodes = hall_nodes(state, ("H1",))
    assert nodes == tuple(range(state.n_nodes))
    edited = scenario_policy(policy, FleetEdit(maintenance=Maintenance(("H1",), 3600.0, 7200.0)), state)
    (resv,) = edited.reservations
    assert (resv.start_s, resv.end_s, resv.maintenance, resv.nodes) == (3600.0, 10_800.0, True, nodes)


@pytest.mark.parametrize(
    "edit, horizon_days, message",
    [
        (FleetEdit(ordering="fcfs"), 0.5, "horizon must be 1 to 30 days, got 0.5 days"),
        (FleetEdit(ordering="fcfs"), 31, "horizon must be 1 to 30 days"),
        (FleetEdit(), 1, "the edit changes nothing"),
        (FleetEdit(conversion=Conversion("NOPE", halls=("H1",))), 1, "conversion: unknown rack type 'NOPE'"),
        (FleetEdit(conversion=Conversion("GB200-NVL72", halls=("H9",))), 1, "conversion: unknown hall 'H9'"),
        (FleetEdit(conversion=Conversion("GB200-NVL72", add_hall_like="H9")), 1, "new hall like: unknown hall 'H9'"),
        (FleetEdit(quota=QuotaChange("nobody", 10)), 1, "quota: unknown team 'nobody'"),
        (FleetEdit(maintenance=Maintenance(("H7",), 0.0, 3600.0)), 1, "maintenance: unknown hall 'H7'"),
        (FleetEdit(maintenance=Maintenance(("H1",), 90_000.0, 3600.0)), 1, "maintenance: start must be within"),
        (FleetEdit(demand_response=DemandResponse(0.0, 0.0, cut_mw=1.0)), 1, "demand response: duration must be"),
        (FleetEdit(demand_response=DemandResponse(0.0, 3600.0, cut_mw=-1.0)), 1, "the cut must be a positive"),
        (FleetEdit(ordering="lifo"), 1, "ordering must be one of"),
    ],
)
def test_bad_edits_are_refused_in_one_line(case, edit, horizon_days, message):
    state, jobs, policy, _, base = case
    opts = SimOptions(horizon_s=horizon_days * DAY_S)
    with pytest.raises(WhatIfError, match=message) as err:
        fleet_edit_whatif(state, jobs, policy, opts, edit, baseline_side=base)
    assert "\n" not in str(err.value)


@pytest.mark.slow
def test_every_key_of_the_answer_is_a_listed_quantity(case):
    from tests.twin.test_quantities import _report_keys
    from twin.quantities import BY_NAME, NOT_QUANTITIES

    out = _ask(case, FleetEdit(demand_response=DemandResponse(6 * 3600.0, 4 * 3600.0, cut_mw=1.0)))
    keys = _report_keys(out, set())
    assert out["scenario"]["jobs"] and out["scenario"]["teams_by_name"]
    assert sorted(k for k in keys if k not in BY_NAME and k not in NOT_QUANTITIES) == []

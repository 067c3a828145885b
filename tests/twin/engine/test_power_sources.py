"""End to end: a generator trip flows through the battery, the UPSs and the shortfall policy to the job's step time.

The demo site (2 × 0.25 MW generators, 0.6 MW grid) is given a 0.3 MW battery so that the
trip of one generator leaves more demand than the sources and the battery can carry.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.conftest import REPO_DIR
from twin.engine.snapshot import GPU_OFF
from twin.engine.tick import TickInputs, TwinEngine
from twin.scenario.conditions import Scenario
from twin.scenario.load import load_scenario
from twin.scenario.projection import _placed_job, project
from twin.site.load import load_site
from twin.training.jobfile import load_job
from twin.training.report import site_report


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def _engine(state):
    job = _placed_job(state, None)
    inputs = TickInputs(jobs=[job], outdoor_dry_bulb_c=20.0)  # below the generators' rating temperature
    engine = TwinEngine(state)
    engine.settle(inputs)
    return engine, inputs


def test_generator_trip_flows_through_battery_ups_and_cap_to_step_time(demo):
    state = dataclasses.replace(
        demo, source_capacity_mw=np.array([0.56, 0.25, 0.25, 0.3]), source_energy_mwh=np.array([0.0, 0.0, 0.0, 0.1])
    )
    engine, inputs = _engine(state)
    before = engine.tick(1.0, inputs)
    assert not engine.detail.policy_in_force.active  # 1.06 MW of generation + 0.3 MW of battery carry the site
    nominal_step_s = before.jobs[0].step_time_s
    # the inputs keep the chillers running (a reading overrides the power state): without them the
    # trip would stop the chillers and their load would fit (test_chiller_restart.py)
    tripped = dataclasses.replace(inputs, failed_sources=[1], plant_chillers_running=np.array([2.0]))

    snap = engine.tick(1.0, tripped)
    sup = engine.detail.supply
    # the other generator is at its rating already: the battery takes the lost unit up to its 0.3 MW limit
    assert snap.source_power_mw[[0, 1, 2]] == pytest.approx([0.56, 0.0, 0.25])
    assert snap.source_power_mw[3] == pytest.approx(0.3)
    # the UPSs carry the rest of the IT load until the policy acts; nothing is left unserved
    assert sup.ups_power_mw == pytest.approx(snap.facility_power_mw - 1.11)
    assert sup.ups_power_mw > 0 and sup.unserved_mw == 0.0
    assert snap.jobs[0].step_time_s == pytest.approx(nominal_step_s)

    response_s = state.policy_response_s
    for _ in range(int(response_s) - 1):  # within the response time the GPUs keep their limit
        snap = engine.tick(1.0, tripped)
        assert not np.isfinite(snap.policy_gpu_cap_w)
    snap = engine.tick(1.0, tripped)
    assert 200.0 <= snap.policy_gpu_cap_w < 700.0  # the cap is in force after 5 s
    job_gpus = _placed_job(state, None).gpu_ids
    assert snap.gpu_power_w[job_gpus].max() <= snap.policy_gpu_cap_w + 1e-9
    assert snap.throttle_frac[job_gpus].max() < 1.0  # the SW power cap lowers the clocks
    assert snap.jobs[0].step_time_s > nominal_step_s * 1.02  # and the job slows
    for _ in range(3):
        snap = engine.tick(1.0, tripped)
    assert snap.facility_power_mw <= snap.generation_capacity_mw + 1e-9
    assert engine.detail.supply.ups_power_mw == 0.0


def test_an_exhausted_ups_drops_its_racks(demo):
    # no battery, 1 kWh per UPS, and a policy slower than the UPSs last
    state = dataclasses.replace(
        demo,
        source_capacity_mw=np.array([0.6, 0.25, 0.25, 0.0]),
        power_ride_through_kwh=np.where(demo.power_ride_through_kwh > 0, 1.0, 0.0),
        policy_response_s=600.0,
    )
    engine, inputs = _engine(state)
    both_gens_lost = dataclasses.replace(inputs, failed_sources=[1, 2])
    snap = engine.tick(1.0, both_gens_lost)
    sup = engine.detail.supply
    assert engine.detail.dark_racks.size == 0 and sup.ups_power_mw > 0  # short, but the UPSs carry it
    assert sup.ups_power_mw == pytest.approx(snap.facility_power_mw - 0.6)
    # 2 kWh left minus the first second, at the UPSs' share of the deficit
    ride_s = engine.detail.supply.ups_ride_through_s
    assert 0 < ride_s < 60
    for _ in range(int(np.ceil(2 * 3600 / (sup.ups_power_mw * 1e3))) + 1):
        snap = engine.tick(1.0, both_gens_lost)
    assert engine.detail.dark_racks.size == state.n_racks  # both UPSs ran out: every rack is dark
    assert snap.it_power_mw == 0.0 and (snap.gpu_power_w == 0.0).all()


def test_shed_policy_switches_off_racks_without_the_job_first(demo):
    state = dataclasses.replace(demo, source_capacity_mw=np.array([0.6, 0.25, 0.25, 0.0]), shortfall_policy="shed")
    engine, inputs = _engine(state)
    snap = engine.tick(1.0, inputs)
    shed = engine.detail.racks_shed
    assert shed.size > 0 and snap.n_gpus_shed == 64 * shed.size
    shed_gpus = np.isin(state.gpu_rack, shed)
    assert (snap.gpu_state[shed_gpus] == GPU_OFF).all() and (snap.gpu_power_w[shed_gpus] == 0.0).all()
    assert (snap.pumps_running_count[state.rack_cdu[shed]] > 0).all()  # powered off, not dark: the CDUs run
    job_racks = np.unique(state.gpu_rack[_placed_job(state, None).gpu_ids])
    assert not np.isin(shed, job_racks).any() or shed.size > state.n_racks - job_racks.size
    assert snap.facility_power_mw <= snap.generation_capacity_mw + 1e-9
    assert not np.isfinite(snap.policy_gpu_cap_w)


def colossus_job_full_power_step_s() -> float:
    """Step time of colossus's default job on a healthy site at full power (`throughput --site colossus`)."""
    job = load_job(REPO_DIR / "data" / "jobs" / "colossus-405b-24k.toml")
    return site_report(job, "colossus")["step_time_s"]


@pytest.mark.parametrize("scenario", [None, "colossus-generator-trip.toml"])
@pytest.mark.slow
def test_a_projection_never_draws_more_than_the_sources_deliver(scenario):
    state = load_site("colossus")
    sc = load_scenario(REPO_DIR / "data" / "scenarios" / scenario, state) if scenario else Scenario()
    report = project(state, sc)
    pol = report.shortfall_policy
    assert report.facility_power_mw <= report.generation_capacity_mw + 1e-9
    assert report.shortfall_mw == 0.0 and pol.unserved_mw == 0.0
    # the site powers off the nodes without work: the job alone fits 43 MW at full power (the step
    # of `throughput --site colossus`, 8.37 s); after the trip (35.5 MW) it is capped, its racks shed last
    if scenario is None:
        assert not pol.policy_active_flag
        assert report.job.step_time_s == pytest.approx(colossus_job_full_power_step_s(), rel=1e-6)
    else:
        assert pol.policy_active_flag and 200.0 < pol.policy_gpu_cap_w < 700.0 and pol.n_gpus_shed == 0
        assert colossus_job_full_power_step_s() < report.job.step_time_s < 30.0
    assert sum(s.source_power_mw for s in report.sources) == pytest.approx(report.facility_power_mw)

"""The site's energy balance closes every tick, and cooling failures play out as chains over time.

Boundary of the balance: electrical power into the site (facility power: IT, distribution
losses, cooling, switches, site overhead) in; heat leaving at the cooling towers (the
water-side heat plus chiller compressor and tower fan work) out; the difference is the
change of heat held in GPU packages, secondary coolant, facility water and plant water.
Fuel energy of on-site generators (exhaust, jacket heat) is outside: the site is fed
electricity.  Tolerance: 1e-9 of facility power (float64 rounding of the node updates).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from twin.engine.snapshot import GPU_THROTTLED
from twin.engine.tick import PlacedJob, TickInputs, TwinEngine
from twin.site.load import DATA_DIR, load_site
from twin.training.jobfile import load_job

TOLERANCE_FRAC = 1e-9


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def _assert_closes(snap):
    assert snap.facility_power_mw == pytest.approx(
        snap.heat_rejected_mw + snap.heat_stored_mw, rel=TOLERANCE_FRAC, abs=1e-12
    )


@pytest.mark.slow
def test_balance_closes_every_tick_through_transients(demo):
    eng = TwinEngine(demo)
    pumps = np.full(demo.n_cdus, 2.0)
    tripped = pumps.copy()
    tripped[0] = 1.0
    degraded = np.ones(demo.n_gpus)
    degraded[:100] = 1.6
    psus_failed = np.zeros(demo.n_nodes)
    psus_failed[::7] = 4.0
    nodes_off = np.zeros(demo.n_nodes, dtype=bool)
    nodes_off[3::11] = True
    no_flow = np.full(demo.n_cdus, np.nan)
    no_flow[2] = 0.0
    schedule = (
        [(1.0, TickInputs())] * 20
        + [(1.0, TickInputs(gpu_r_th_factor=degraded, node_psus_failed=psus_failed, nodes_off=nodes_off))] * 10
        + [(1.0, TickInputs(failed_power=[10, 11], coolant_flow_lpm=no_flow))] * 20  # a dark row, a CDU without flow
        + [(1.0, TickInputs(gpu_util_frac=0.3))] * 30  # load step down
        + [(1.0, TickInputs(gpu_util_frac=1.0, pumps_running_count=tripped))] * 30  # load up, a CDU pump trips
        + [(1.0, TickInputs(plant_chillers_running=np.array([0.0]), outdoor_wet_bulb_c=27.0))] * 60  # power dip
        + [(1.0, TickInputs(outdoor_wet_bulb_c=27.0))] * 30  # chillers restarting
        + [(1.0, TickInputs(loop_flow_lpm=np.array([1000.0])))] * 30  # facility flow halved
        + [(0.1, TickInputs())] * 10
        + [(30.0, TickInputs())] * 10
        + [(600.0, TickInputs())] * 3  # any step
    )
    stored = []
    for dt, inp in schedule:
        snap = eng.tick(dt, inp)
        _assert_closes(snap)
        stored.append(snap.heat_stored_mw)
    assert max(np.abs(stored)) > 0.01  # the transients did move heat in and out of storage
    # no heat is created or lost between the nodes: rejected heat ≈ facility power once settled
    settled = eng.tick(3600.0)
    assert settled.heat_stored_mw == pytest.approx(0.0, abs=1e-3 * settled.facility_power_mw)


def test_plant_rejects_switch_power_losses_and_overhead_too(demo):
    eng = TwinEngine(demo)
    snap = eng.tick(3600.0)
    bal, parts = eng.detail.balance, eng.detail.cooling_kw
    # everything released indoors reaches the towers, plus the chillers' and fans' work
    indoor_mw = bal.it_mw + bal.distribution_loss_mw + bal.network_mw + bal.overhead_mw
    indoor_mw += (parts["cdu_pumps_kw"] + parts["facility_pumps_kw"]) / 1e3
    outdoor_mw = (parts["chillers_kw"] + parts["tower_fans_kw"]) / 1e3
    assert snap.heat_rejected_mw == pytest.approx(indoor_mw + outdoor_mw - snap.heat_stored_mw, rel=1e-9)
    assert bal.distribution_loss_mw + bal.network_mw + bal.overhead_mw > 0.1  # not a rounding term at demo


def test_chiller_restart_lets_the_facility_water_rise_then_recover(demo):
    eng = TwinEngine(demo)
    hot = TickInputs(outdoor_wet_bulb_c=27.0)  # towers alone cannot reach the 25 °C setpoint
    base = eng.tick(1.0, hot).loop_supply_temp_c[0]
    trace = [
        eng.tick(10.0, replace(hot, plant_chillers_running=np.array([0.0]))).loop_supply_temp_c[0] for _ in range(12)
    ]  # 2 minutes without chillers
    assert trace[-1] > base + 0.5 and all(b >= a - 1e-9 for a, b in zip(trace, trace[1:]))  # ramps, no step
    restart = [eng.tick(10.0, hot).loop_supply_temp_c[0] for _ in range(60)]  # 10 minutes after the dip
    restart_s = float(eng.cooling.plant_restart_s[0])
    peak = int(np.argmax(restart))
    # nothing improves before the chillers are back (restart time, then the loop's transport delay)
    assert 10.0 * (peak + 1) > restart_s
    assert restart[-1] < restart[peak] - 0.3


def _placed(demo):
    job = load_job(DATA_DIR / "jobs" / "demo-70b-1k.toml")
    return [PlacedJob(job, np.arange(demo.n_gpus))]


def test_cdu_pump_trip_fails_over_without_throttling(demo):
    eng = TwinEngine(demo)
    jobs = _placed(demo)
    before = eng.tick(1.0, TickInputs(jobs=jobs))
    pumps = np.full(demo.n_cdus, 2.0)
    pumps[3] = 1.0
    flows = [eng.tick(1.0, TickInputs(jobs=jobs, pumps_running_count=pumps)).coolant_flow_lpm[3] for _ in range(6)]
    design = before.coolant_flow_lpm[3]
    assert flows[0] < design and flows[4] == pytest.approx(design)  # back at design flow within 5 s
    snap = eng.tick(1.0, TickInputs(jobs=jobs, pumps_running_count=pumps))
    assert not (snap.gpu_state == GPU_THROTTLED).any()
    assert snap.jobs[0].step_time_s == pytest.approx(before.jobs[0].step_time_s)


@pytest.mark.slow
def test_facility_pump_trip_ramps_the_coolant_throttles_the_gpus_and_slows_the_job(demo):
    eng = TwinEngine(demo)
    jobs = _placed(demo)
    before = eng.tick(1.0, TickInputs(jobs=jobs))
    trip = TickInputs(jobs=jobs, loop_flow_lpm=np.array([0.0]))  # the hall's facility pumps trip
    trace = [eng.tick(5.0, trip) for _ in range(60)]  # 5 minutes
    supply = np.array([s.coolant_supply_temp_c.mean() for s in trace])
    # the coolant ramps: no step, rising at about Q / (C_coolant + C_gpus) per second at first
    rate = (supply[2] - supply[1]) / 5.0
    q_w = before.cdu_heat_kw.mean() * 1e3
    c_j_per_k = eng.cooling.cdu_heat_capacity_j_per_k.mean() + 64 * 750.0
    assert rate == pytest.approx(q_w / c_j_per_k, rel=0.35)
    assert np.all(np.diff(supply[:30]) > 0) and supply[1] - supply[0] < 2.0
    # the GPUs throttle once the coolant nears their limits, and the job slows
    throttled = [i for i, s in enumerate(trace) if (s.gpu_state == GPU_THROTTLED).any()]
    assert throttled, "no GPU throttled within 5 minutes of losing facility water"
    first = trace[throttled[0]]
    assert first.jobs[0].step_time_s > before.jobs[0].step_time_s
    assert trace[-1].jobs[0].step_time_s > first.jobs[0].step_time_s
    for s in trace:
        _assert_closes(s)

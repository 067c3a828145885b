"""Chillers lose their power with the bus that feeds them and restart after their restart time.

The demo site (0.6 MW grid, 2 × 0.25 MW generators, a battery) is given a 0.3 MW / 0.1 MWh
battery, so that the trip of one generator leaves more load than the other sources and the
battery pick up within the tick: every bus dips, the UPSs carry the IT racks, and the plant's
two chillers (not on UPS) stop.  They come back ``chiller_restart_s`` (300 s) after the power
does; meanwhile the plant's water warms, and it recovers once they run again, soft-loading
over 10 minutes (:func:`twin.physics.plant.chillers_soft_loaded`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twin.engine.tick import TickInputs, TwinEngine
from twin.physics import plant
from twin.scenario.projection import _placed_job
from twin.site.load import load_site

DT_S = 10.0


@pytest.fixture(scope="module")
def demo():
    state = load_site("demo")
    return dataclasses.replace(
        state, source_capacity_mw=np.array([0.6, 0.25, 0.25, 0.3]), source_energy_mwh=np.array([0.0, 0.0, 0.0, 0.1])
    )


def _engine(state, **conditions):
    inputs = TickInputs(
        jobs=[_placed_job(state, None)], outdoor_dry_bulb_c=20.0, outdoor_wet_bulb_c=27.0, **conditions
    )  # a humid day: the chillers, not the economiser, hold the setpoint
    engine = TwinEngine(state)
    engine.settle(inputs)
    engine.tick(DT_S, inputs)
    return engine, inputs


@pytest.mark.slow
def test_a_trip_the_others_cannot_carry_stops_the_chillers_until_their_restart(demo):
    engine, inputs = _engine(demo)
    setpoint = float(demo.plant_supply_setpoint_c[0])
    assert engine.cooling.state.chillers_online.tolist() == [2.0] and engine.cooling.state.plant_temp_c[
        0
    ] == pytest.approx(setpoint)
    tripped = dataclasses.replace(inputs, failed_sources=[1])
    snap = engine.tick(DT_S, tripped)
    assert engine.detail.supply.dispatch.unmet_mw > 0 and engine.detail.supply.ups_power_mw > 0  # the UPSs carry IT
    chillers_kw = engine.detail.cooling_kw["chillers_kw"]
    assert chillers_kw > 0  # this tick's dispatch decides: the chillers stop from the next tick
    plant_c, loop_c = [], []
    restart_s = float(engine.cooling.plant_restart_s[0])
    for _ in range(int(restart_s / DT_S)):  # the dip tick, then the restart time (counted from the next tick)
        snap = engine.tick(DT_S, tripped)
        assert engine.cooling.state.chillers_online.tolist() == [0.0] and engine.detail.cooling_kw["chillers_kw"] == 0.0
        plant_c.append(float(engine.cooling.state.plant_temp_c[0]))
        loop_c.append(float(snap.loop_supply_temp_c[0]))
    assert engine.detail.supply.unserved_mw == 0.0
    assert np.all(np.diff(plant_c) > 0) and plant_c[-1] > setpoint + 1.0  # the plant water warms ...
    assert loop_c[-1] > setpoint + 1.0  # ... and the halls see it after the pipe run
    snap = engine.tick(DT_S, tripped)
    assert engine.cooling.state.chillers_online.tolist() == [
        2.0
    ]  # restarted: the generator is still out, the bus is up
    # they soft-load: the first tick draws less than before the trip, then the limit rises over
    # 10 minutes and they pull the plant back down harder than the steady load needed
    drawn_kw = [engine.detail.cooling_kw["chillers_kw"]]
    assert 0.0 < drawn_kw[0] < chillers_kw
    for _ in range(int(plant.SOFTLOAD_S / DT_S)):
        snap = engine.tick(DT_S, tripped)
        drawn_kw.append(engine.detail.cooling_kw["chillers_kw"])
    assert max(drawn_kw[:6]) < chillers_kw < max(drawn_kw)  # the first minute under, then above
    for _ in range(30):
        snap = engine.tick(DT_S, tripped)
    assert engine.cooling.state.plant_temp_c[0] == pytest.approx(setpoint, abs=0.01)  # recovered
    assert engine.cooling.state.chillers_online.tolist() == [2.0]  # and the chillers' return did not dip the bus again


def test_a_dead_bus_stops_its_half_of_the_chillers(demo):
    engine, inputs = _engine(demo)
    bus_b = demo.power_name.index("MV-B")
    snap = engine.tick(DT_S, dataclasses.replace(inputs, failed_power=[bus_b]))
    assert engine.cooling.state.chillers_online.tolist() == [1.0]  # chiller 1 of 2 is on bus B
    assert engine.detail.dark_racks.size == 0  # the racks run on their A feeds
    for _ in range(3):
        engine.tick(DT_S, inputs)
    assert (
        engine.cooling.state.chillers_online.tolist() == [1.0] and engine.cooling.state.chiller_restart_left_s[0] > 0
    )  # restarting
    assert snap.facility_power_mw > 0


def test_a_reading_of_the_chillers_overrides_the_power_state(demo):
    engine, inputs = _engine(demo, plant_chillers_running=np.array([2.0]))
    engine.tick(DT_S, dataclasses.replace(inputs, failed_sources=[1]))
    engine.tick(DT_S, dataclasses.replace(inputs, failed_sources=[1]))
    assert engine.cooling.state.chillers_online.tolist() == [2.0]


def test_settling_under_a_trip_leaves_the_chillers_running(demo):
    engine, inputs = _engine(demo, failed_sources=[1])  # the site was settled with the generator already out
    for _ in range(3):
        engine.tick(DT_S, inputs)
    assert engine.cooling.state.chillers_online.tolist() == [2.0]

"""The pump-loss projection against the engine stepping through the same pump trip.

The demo site's racks are run at full power on a 40 °C secondary supply (the CDU setpoint
an operator can raise), so a lost pump moves the dies without reaching the 87 °C at which
the engine's SW thermal controller would hold them.  The projection is asked for the time
to a level between the die now and its steady state at the lowest flow of the fail-over
(the engine's ``rack_max_op_c`` set to that level; the GPUs keep their real limits), then
the engine is stepped through the trip at 0.05 s and the first tick whose hottest die of
the rack reaches the level is found.

Tolerance: 0.15 s with a spare (the engine holds each tick's flow at its end-of-tick value,
at most one step of the ramp ahead of the continuous flow, and the projection's pieces add
< 0.03 s), 2 % without one (the engine's supply and leakage move a little).  Both follow the
two-node die model (junction and cold plate, :func:`twin.physics.thermal.two_node_coefficients`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twin.engine.tick import TickInputs, TwinEngine
from twin.physics import thermal
from twin.site.load import load_site

DT_S = 0.05
SUPPLY_C = 40.0


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def _hot_engine(state):
    inputs = TickInputs(gpu_util_frac=1.0, cdu_supply_setpoint_c=np.full(state.n_cdus, SUPPLY_C))
    engine = TwinEngine(state)
    engine.settle(inputs)
    snap = engine.tick(DT_S, inputs)
    return engine, inputs, snap


def _engine_crossing_s(engine, inputs, pumps, rack, level_c, horizon_s):
    """Time after the trip at which the rack's hottest die reaches ``level_c`` (interpolated between ticks)."""
    tripped = dataclasses.replace(inputs, pumps_running_count=pumps)
    before = float(engine.by_rack.max(engine.gpu_temp_c)[rack])
    for i in range(int(horizon_s / DT_S)):
        engine.tick(DT_S, tripped)
        now = float(engine.by_rack.max(engine.gpu_temp_c)[rack])
        if now >= level_c:
            return (i + (level_c - before) / (now - before)) * DT_S
        before = now
    return np.inf


def _projected_s(engine, inputs, level_c, rack):
    engine.projections.rack_max_op_c = np.full(engine.state.n_racks, level_c)  # project the time to this level
    engine.tick(DT_S, inputs)
    return float(engine.detail.projections_s["pump_loss_throttle_s"][rack])


@pytest.mark.slow
def test_projection_with_a_spare_matches_the_engine_through_the_fail_over(demo):
    engine, inputs, snap = _hot_engine(demo)
    rack = 0
    temp = float(snap.rack_max_gpu_temp_c[rack])
    thermal_bits = thermal.CLOCK_EVENT_SW_THERMAL | thermal.CLOCK_EVENT_HW_SLOWDOWN
    assert not (engine.detail.clock_event_mask & thermal_bits).any() and temp < 80.0  # no thermal limit acts
    assert (snap.gpu_power_w == 700.0).all()  # the power cap holds every GPU at TDP, leakage included
    level = temp + 0.1  # crossed while the remaining pump ramps (2.5 s), not after: back at design it cools
    projected = _projected_s(engine, inputs, level, rack)
    assert 0.2 < projected < 2.5
    pumps = np.full(demo.n_cdus, 2.0)
    pumps[demo.rack_cdu[rack]] = 1.0
    seen = _engine_crossing_s(engine, inputs, pumps, rack, level, 10.0)
    print(f"with a spare: projected {projected:.3f} s, engine {seen:.3f} s")
    assert seen == pytest.approx(projected, abs=0.15)
    snap = engine.tick(3.0, dataclasses.replace(inputs, pumps_running_count=pumps))
    assert snap.coolant_flow_lpm[demo.rack_cdu[rack]] == pytest.approx(150.0)  # the spare carries the design flow again
    snap = engine.tick(30.0, dataclasses.replace(inputs, pumps_running_count=pumps))
    assert snap.rack_max_gpu_temp_c[rack] < level  # and the die cools back (with its plate's ~17 s time constant)


@pytest.mark.slow
def test_projection_without_a_spare_matches_the_engine(demo):
    spec = dataclasses.replace(demo.cdu_specs[0], pumps_required=2)  # both pumps needed: no spare
    state = dataclasses.replace(demo, cdu_specs=[spec] + list(demo.cdu_specs[1:]))
    engine, inputs, snap = _hot_engine(state)
    rack = 3
    level = float(snap.rack_max_gpu_temp_c[rack]) + 4.0
    projected = _projected_s(engine, inputs, level, rack)
    assert 5.0 < projected < 120.0
    pumps = np.full(state.n_cdus, 2.0)
    pumps[state.rack_cdu[rack]] = 1.0
    seen = _engine_crossing_s(engine, inputs, pumps, rack, level, 200.0)
    print(f"without a spare: projected {projected:.3f} s, engine {seen:.3f} s")
    assert seen == pytest.approx(projected, rel=0.02)
    flows = engine.tick(DT_S, dataclasses.replace(inputs, pumps_running_count=pumps)).coolant_flow_lpm
    assert flows[state.rack_cdu[rack]] == pytest.approx(75.0)  # settles at half the design flow

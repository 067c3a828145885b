"""End to end: on a site whose shortfall policy is ``power_brake``, a generator trip asserts the
power brake on every GPU once the policy's response time has run, the facility falls under what
the sources deliver, the job slows, and all of it is undone when the generator is back.

The demo site is given a 0.15 MW battery, so that after one generator trips the grid, the other
generator and the battery (1.0 MW) carry less than the site draws even with its chillers stopped
by the dip (about 1.13 MW).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from twin.engine.snapshot import GPU_THROTTLED
from twin.engine.tick import TickInputs, TwinEngine
from twin.physics import policy, thermal
from twin.scenario.projection import _placed_job
from twin.site.load import load_site

BRAKE_BITS = thermal.CLOCK_EVENT_HW_SLOWDOWN | thermal.CLOCK_EVENT_HW_POWER_BRAKE


@pytest.fixture(scope="module")
def braking_demo():
    demo = load_site("demo")
    return dataclasses.replace(
        demo,
        shortfall_policy="power_brake",
        source_capacity_mw=np.array([0.6, 0.25, 0.25, 0.15]),
        source_energy_mwh=np.array([0.0, 0.0, 0.0, 0.1]),
    )


def _braked(engine) -> bool:
    """The policy's brake in force, and every GPU reporting HW slowdown by the power brake."""
    mask = engine.detail.clock_event_mask
    return engine.detail.policy_in_force.brake and bool(((mask & BRAKE_BITS) == BRAKE_BITS).all())


def test_generator_trip_brakes_the_gpus_slows_the_job_and_releases(braking_demo):
    state = braking_demo
    job = _placed_job(state, None)
    inputs = TickInputs(jobs=[job], outdoor_dry_bulb_c=20.0)
    engine = TwinEngine(state)
    engine.settle(inputs)
    snap = engine.tick(1.0, inputs)
    assert not engine.detail.policy_in_force.active and snap.facility_power_mw < snap.generation_capacity_mw
    assert not (engine.detail.clock_event_mask & thermal.CLOCK_EVENT_HW_POWER_BRAKE).any()
    nominal_step_s, nominal_mw = snap.jobs[0].step_time_s, snap.facility_power_mw

    tripped = dataclasses.replace(inputs, failed_sources=[1])
    response_ticks = int(state.policy_response_s)  # 1-s ticks
    for _ in range(response_ticks):  # the policy waits its response time; the UPSs carry the gap meanwhile
        snap = engine.tick(1.0, tripped)
        assert not _braked(engine) and (snap.throttle_frac == 1.0).all()
        assert engine.detail.supply.ups_power_mw > 0 and engine.detail.supply.unserved_mw == 0.0
        assert snap.facility_power_mw > snap.generation_capacity_mw
    assert engine.policy.applied.brake  # decided after response_s of shortfall: in force from the next tick

    snap = engine.tick(1.0, tripped)
    # every GPU: HW slowdown by the power brake (NVML 0x08 + 0x80), clocks cut by 2x, board power with them
    assert _braked(engine)
    assert (snap.throttle_frac <= thermal.HW_SLOWDOWN_CLOCK_FRAC).all() and (snap.gpu_state == GPU_THROTTLED).all()
    busy = thermal.power_at_clock_w(thermal.HW_SLOWDOWN_CLOCK_FRAC, 700.0, engine.const.idle_w)
    assert snap.gpu_power_w.max() <= busy + 1e-9
    # the facility falls under what the sources deliver: no UPS, nothing unserved, within the policy's margin
    sup = engine.detail.supply
    assert sup.ups_power_mw == 0.0 and sup.unserved_mw == 0.0
    assert snap.facility_power_mw == pytest.approx(float(sup.dispatch.source_power_mw.sum()))
    assert snap.facility_power_mw <= snap.generation_capacity_mw * (1.0 - policy.MARGIN_FRAC)
    assert snap.facility_power_mw < 0.7 * nominal_mw
    # and the job's step takes longer: its compute runs at half the clock
    assert snap.jobs[0].step_time_s > 1.5 * nominal_step_s
    assert snap.n_gpus_shed == 0  # the brake was enough

    for _ in range(5):  # holds while the generator is out
        snap = engine.tick(1.0, tripped)
        assert _braked(engine) and engine.detail.supply.ups_power_mw == 0.0

    # generator back: the release waits until the last braking wish has left the policy's window
    # (29 more 1-s ticks), then the response time
    for _ in range(int(policy.ENVELOPE_S) - 1 + response_ticks):
        snap = engine.tick(1.0, inputs)
        assert _braked(engine)
    snap = engine.tick(1.0, inputs)
    assert not engine.detail.policy_in_force.active
    assert not (engine.detail.clock_event_mask & BRAKE_BITS).any() and (snap.throttle_frac == 1.0).all()
    assert snap.jobs[0].step_time_s == pytest.approx(nominal_step_s)
    assert snap.facility_power_mw <= snap.generation_capacity_mw

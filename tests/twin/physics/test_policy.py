"""The shortfall policy: the cap that fits, its response time, shedding order and no oscillation."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import policy
from twin.physics.policy import PolicyAction, PolicyState


def test_cap_solves_the_sum_of_capped_demands():
    demand = np.array([700.0] * 4 + [300.0] * 4)
    # Σ min(p, c) = 4c + 4·300 = 3200 → c = 500
    assert policy.cap_for_gpu_power_w(demand, 3200.0, 200.0, 700.0) == (500.0, True)
    # below what the minimum limit allows: the minimum, and it does not fit
    assert policy.cap_for_gpu_power_w(demand, 1000.0, 200.0, 700.0) == (200.0, False)
    assert policy.cap_for_gpu_power_w(demand, 1e9, 200.0, 700.0) == (700.0, True)


def test_the_cap_removes_the_excess_through_the_facility_factor():
    demand = np.full(1000, 700.0)  # 0.7 MW of GPU power
    # 0.1 MW over the supply at 1.5 MW of facility per MW of GPU power: remove 0.0667 MW of GPU power
    act = policy.wanted_action("cap", 0.1, 1.5, 0.7, demand, 200.0, 700.0, 0.05, PolicyAction())
    assert act.gpu_cap_w == pytest.approx(700.0 - 0.1 / 1.5 * 1e6 / 1000, abs=1.0)
    assert not act.brake and act.racks_shed == 0
    # room again (0.2 MW under the supply with that cap in force): released
    assert policy.wanted_action("cap", -0.2, 1.5, 0.6333, demand, 200.0, 700.0, 0.05, act) == PolicyAction()


def test_cap_below_the_minimum_limit_sheds_racks_as_well():
    demand = np.full(1000, 700.0)
    act = policy.wanted_action("cap", 0.9, 1.5, 0.7, demand, 200.0, 700.0, 0.05, PolicyAction())
    # at 200 W the GPUs remove 0.5 MW × 1.5 = 0.75 MW; 0.15 MW more is 3 racks of 0.05 MW
    assert act == PolicyAction(gpu_cap_w=200.0, racks_shed=3)


def test_shedding_adds_racks_while_over_and_restores_only_whole_racks_that_fit():
    current = PolicyAction(racks_shed=10)
    assert policy.wanted_action("shed", 0.12, 1.5, 0.7, np.zeros(1), 200.0, 700.0, 0.05, current).racks_shed == 13
    assert policy.wanted_action("shed", -0.12, 1.5, 0.7, np.zeros(1), 200.0, 700.0, 0.05, current).racks_shed == 8
    assert policy.wanted_action("shed", -0.01, 1.5, 0.7, np.zeros(1), 200.0, 700.0, 0.05, current).racks_shed == 10


def test_power_brake_engages_on_a_shortfall_and_releases_only_when_full_power_fits():
    demand = np.full(1000, 700.0)
    on = policy.wanted_action("power_brake", 0.1, 1.5, 0.7, demand, 200.0, 700.0, 0.05, PolicyAction())
    assert on == PolicyAction(brake=True)
    # braked GPUs at 0.3 MW, 0.2 MW under the supply: full power (+0.6 MW facility) would not fit
    assert policy.wanted_action("power_brake", -0.2, 1.5, 0.3, demand, 200.0, 700.0, 0.05, on).brake
    assert policy.wanted_action("power_brake", -0.7, 1.5, 0.3, demand, 200.0, 700.0, 0.05, on) == PolicyAction()


def test_a_change_takes_effect_after_the_response_time():
    state = PolicyState()
    cap = PolicyAction(gpu_cap_w=500.0)
    for _ in range(4):  # 4 s of a 5 s response: still pending
        state = policy.advance(state, cap, 5.0, 1.0)
        assert state.applied == PolicyAction()
    state = policy.advance(state, cap, 5.0, 1.0)
    assert state.applied == cap and state.pending_s == 0.0
    # one long step past the response time applies at once
    assert policy.advance(PolicyState(), cap, 5.0, 60.0).applied == cap


def test_racks_without_job_gpus_are_shed_first_halls_taking_turns_from_their_last_rack():
    assert policy.shed_order(np.array([8, 0, 8, 0]), np.zeros(4, dtype=int)).tolist() == [3, 1, 2, 0]
    # two halls of three racks; the job on racks 0 and 3
    order = policy.shed_order(np.array([8, 0, 0, 8, 0, 0]), np.array([0, 0, 0, 1, 1, 1]))
    assert order.tolist() == [2, 5, 1, 4, 0, 3]


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="policy"):
        policy.wanted_action("pray", 0.1, 1.0, 1.0, np.zeros(1), 200.0, 700.0, 0.1, PolicyAction())


@pytest.mark.parametrize("name", policy.POLICIES)
@pytest.mark.parametrize(
    "current",
    [
        PolicyAction(),
        PolicyAction(gpu_cap_w=300.0),
        PolicyAction(brake=True),
        PolicyAction(gpu_cap_w=200.0, racks_shed=3),
        PolicyAction(racks_shed=2),
    ],
)
@pytest.mark.parametrize("over_mw", [0.3, -0.3])
def test_the_action_needs_the_gpu_demand_only_where_reads_gpu_demand_says(name, current, over_mw):
    demand = np.full(1000, 700.0)
    args = (name, over_mw, 1.5, 0.7)
    rest = (200.0, 700.0, 0.05, current)
    with_demand = policy.wanted_action(*args, demand, *rest)
    if policy.reads_gpu_demand(name, current):
        with pytest.raises(TypeError):
            policy.wanted_action(*args, None, *rest)
    else:
        assert policy.wanted_action(*args, None, *rest) == with_demand


def test_racks_without_work_are_shed_before_the_job_is_capped():
    demand = np.full(1000, 700.0)
    # 0.12 MW over, 10 racks without work at 0.05 MW each: three of them, no cap
    act = policy.wanted_action("cap", 0.12, 1.5, 0.7, demand, 200.0, 700.0, 0.08, PolicyAction(), 10, 0.05)
    assert act == PolicyAction(racks_shed=3)
    # 0.7 MW over: all ten (0.5 MW) and a cap for the other 0.2 MW (0.1333 MW of GPU power)
    act = policy.wanted_action("cap", 0.7, 1.5, 0.7, demand, 200.0, 700.0, 0.08, PolicyAction(), 10, 0.05)
    assert act.racks_shed == 10 and act.gpu_cap_w == pytest.approx(700.0 - 0.2 / 1.5 * 1e6 / 1000, abs=1.0)
    # a cap in force while racks without work still run: they go instead (the job at full power needs
    # 0.1 MW more than now: 0.05 + 1.5 × 0.0333 MW → two racks)
    capped = PolicyAction(gpu_cap_w=666.0)
    act = policy.wanted_action("cap", 0.05, 1.5, 0.6667, demand, 200.0, 700.0, 0.08, capped, 10, 0.05)
    assert act == PolicyAction(racks_shed=2)
    brake = policy.wanted_action("power_brake", 0.3, 1.5, 0.7, demand, 200.0, 700.0, 0.08, PolicyAction(), 10, 0.05)
    assert brake == PolicyAction(racks_shed=6)


def test_relief_lifts_the_cap_first_then_brings_the_idle_racks_back_one_at_a_time():
    demand = np.full(1000, 700.0)
    current = PolicyAction(gpu_cap_w=600.0, racks_shed=10)
    # 0.2 MW of room: full power needs 1.5 × 0.1 = 0.15 MW of it, the 0.05 MW left brings back no 0.08 MW rack
    act = policy.wanted_action("cap", -0.2, 1.5, 0.6, demand, 200.0, 700.0, 0.08, current, 10, 0.05)
    assert act == PolicyAction(racks_shed=10)
    act = policy.wanted_action("cap", -0.17, 1.5, 0.7, demand, 200.0, 700.0, 0.08, PolicyAction(racks_shed=10), 10)
    assert act == PolicyAction(racks_shed=8)


def test_the_cap_holds_the_busy_power_of_a_gpu_that_also_waits():
    """Four GPUs at 90 % utilisation drawing 638.5 W (busy 700 W, idle 85 W); to bring them to 1,600 W in
    all, the cap on the busy power is 85 + (400 − 85)/0.9 = 435 W, not the 400 W a mean cap would give."""
    demand = np.full(4, 85.0 + 0.9 * 615.0)
    assert policy.cap_for_gpu_power_w(demand, 1600.0, 200.0, 700.0) == (400.0, True)
    cap, fits = policy.cap_for_gpu_power_w(demand, 1600.0, 200.0, 700.0, np.full(4, 0.9), 85.0)
    assert fits and cap == pytest.approx(435.0, abs=1.0)
    # an idle GPU (no work) adds its idle power whatever the cap
    with_idle = policy.cap_for_gpu_power_w(
        np.append(demand, 85.0), 1685.0, 200.0, 700.0, np.append(np.full(4, 0.9), 0.0), 85.0
    )
    assert with_idle[0] == pytest.approx(435.0, abs=1.0)


def test_the_strictest_wish_of_the_window_is_pursued_so_a_trough_does_not_lift_a_cap():
    cap = PolicyAction(gpu_cap_w=400.0)
    state = policy.advance(PolicyState(), cap, 5.0, 6.0)
    assert state.applied == cap
    # a communication phase wants no cap for one tick, then compute wants the cap again
    state = policy.advance(state, PolicyAction(), 5.0, 1.0)
    assert state.wanted == cap and state.applied == cap and state.pending_s == 0.0
    # the relief is pursued once the last strict wish is 30 s old, and applied after the response time
    for _ in range(int(policy.ENVELOPE_S) - 2):
        state = policy.advance(state, PolicyAction(), 5.0, 1.0)
        assert state.wanted == cap
    state = policy.advance(state, PolicyAction(), 5.0, 1.0)
    assert state.wanted == PolicyAction() and state.applied == cap
    for _ in range(4):
        state = policy.advance(state, PolicyAction(), 5.0, 1.0)
    assert state.applied == PolicyAction()
    # a stricter wish is answered after the response time, whatever the window holds
    state = policy.advance(state, PolicyAction(gpu_cap_w=300.0), 5.0, 5.0)
    assert state.applied == PolicyAction(gpu_cap_w=300.0)


def test_strictest_orders_racks_then_brake_then_cap():
    a, b, c = PolicyAction(gpu_cap_w=250.0), PolicyAction(brake=True), PolicyAction(gpu_cap_w=600.0, racks_shed=1)
    assert policy.strictest([a, b, c]) == c
    assert policy.strictest([a, b]) == b
    assert policy.strictest([PolicyAction(), a]) == a


def test_the_window_is_bounded():
    state = PolicyState()
    for i in range(policy.MAX_RECENT + 50):
        state = policy.advance(state, PolicyAction(gpu_cap_w=300.0 + i), 5.0, 0.01)
    assert len(state.recent) == policy.MAX_RECENT

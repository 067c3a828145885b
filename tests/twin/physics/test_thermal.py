"""Tests of twin/physics/thermal.py: hand-computed points, monotonicity, stability, throttling bits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.physics import thermal as th

R_DIE, R_HBM, C = 0.035, 0.030, 750.0


def test_steady_die_temperature_hand_point():
    # 0.025 kg/s of PG25 (cp 3940) through the plate: R_cal = 0.5 / (0.025 * 3940) = 5.076e-3 K/W
    r_cal = th.caloric_resistance_c_per_w(0.025, 3940.0)
    assert r_cal == pytest.approx(5.0761e-3, rel=1e-4)
    t = th.die_temp_steady_c(700.0, 30.0, R_DIE, r_cal)
    assert t == pytest.approx(30.0 + 700.0 * (0.035 + 0.5 / (0.025 * 3940.0)), rel=1e-12)  # 58.05 °C


def test_temperature_rises_with_power_and_falls_with_flow():
    powers = np.array([100.0, 300.0, 500.0, 700.0])
    t = th.die_temp_steady_c(powers, 30.0, R_DIE, th.caloric_resistance_c_per_w(0.025, 3940.0))
    assert np.all(np.diff(t) > 0)
    flows = np.array([0.005, 0.01, 0.02, 0.05])
    t = th.die_temp_steady_c(700.0, 30.0, R_DIE, th.caloric_resistance_c_per_w(flows, 3940.0))
    assert np.all(np.diff(t) < 0)


@pytest.mark.parametrize("flow", [0.0, -0.01, float("nan")])
def test_zero_negative_or_nan_flow_raises(flow):
    with pytest.raises(ValueError, match="mass_flow_kg_s"):
        th.caloric_resistance_c_per_w(np.array([0.02, flow]), 3940.0)


def test_nonsense_inputs_raise_not_nan():
    with pytest.raises(ValueError):
        th.die_temp_steady_c(-5.0, 30.0, R_DIE)
    with pytest.raises(ValueError):
        th.die_temp_steady_c(700.0, float("nan"), R_DIE)
    with pytest.raises(ValueError):
        th.decay_frac(0.0, 1.0)
    with pytest.raises(ValueError):
        th.decay_frac(30.0, -1.0)


def _step(temp_c, steady_c, tau_s, dt_s):
    return th.relax_temp_c(temp_c, steady_c, th.decay_frac(tau_s, dt_s))


def test_exact_step_is_stable_and_composes():
    tau = th.time_constant_s(C, 0.04)  # 30 s
    assert tau == pytest.approx(30.0)
    assert _step(40.0, 60.0, tau, tau) == pytest.approx(60.0 - 20.0 / math.e)
    # any dt: no overshoot, converges to the steady state
    for dt in (1e-3, 1.0, 1e3, 1e9):
        t = _step(40.0, 60.0, tau, dt)
        assert 40.0 <= t <= 60.0
    assert _step(40.0, 60.0, tau, 1e9) == pytest.approx(60.0)
    # one step of 10 s equals ten steps of 1 s (exact solution for constant inputs)
    t = 40.0
    for _ in range(10):
        t = _step(t, 60.0, tau, 1.0)
    assert t == pytest.approx(_step(40.0, 60.0, tau, 10.0))
    assert th.decay_frac(tau, 0.0) == 1.0


def test_relax_broadcasts_a_shared_decay_over_gpus():
    decay = th.decay_frac(np.array([30.0, 60.0]), 30.0)  # one time constant per CDU
    temps = th.relax_temp_c(np.array([[40.0, 40.0], [50.0, 50.0]]), 60.0, decay)
    assert temps[0] == pytest.approx([60.0 - 20.0 / math.e, 60.0 - 20.0 * math.exp(-0.5)])
    assert temps[1] == pytest.approx([60.0 - 10.0 / math.e, 60.0 - 10.0 * math.exp(-0.5)])


def test_plate_coolant_sits_half_the_plate_rise_above_the_supply():
    r_cal = th.caloric_resistance_c_per_w(0.025, 3940.0)
    rise = 700.0 / (0.025 * 3940.0)  # Q / (ṁ cp) across the plate
    assert th.plate_coolant_temp_c(700.0, 30.0, r_cal) == pytest.approx(30.0 + rise / 2.0)


def test_adiabatic_step_hand_point():
    # 700 W into 750 J/K for 10 s: +9.33 K
    assert th.adiabatic_step_c(50.0, 700.0, C, 10.0) == pytest.approx(50.0 + 7000.0 / 750.0)


def test_hbm_temperature_from_hbm_power_not_board_power():
    # 600 W board, 15 % in the HBM: 90 W through 0.2 K/W above 33 °C plate coolant = 51 °C,
    # whatever the die does
    assert th.hbm_temp_c(33.0, 0.15 * 600.0, 0.2) == pytest.approx(51.0)


def test_convective_resistance_follows_flow_to_the_laminar_one_third():
    # half of 0.035 K/W convective; in the plate's laminar channels h ∝ ṁ^(1/3): at half the design flow
    # h falls by 2^(1/3) = 1.260 (turbulent pipe flow would give 2^0.8 = 1.741)
    assert th.CONVECTION_FLOW_EXPONENT == pytest.approx(1.0 / 3.0)
    r = th.die_resistance_c_per_w(0.035, 0.5, np.array([1.0, 0.5, 2.0]))
    assert r == pytest.approx([0.035, 0.0175 + 0.0175 * 2 ** (1 / 3), 0.0175 + 0.0175 * 2 ** (-1 / 3)])
    with pytest.raises(ValueError, match="flow_ratio"):
        th.die_resistance_c_per_w(0.035, 0.5, 0.0)


def test_leakage_rises_linearly_with_die_temperature():
    assert th.leakage_power_w(np.array([30.0, 60.0, 20.0]), 0.5) == pytest.approx([0.0, 15.0, -5.0])


def _throttle(demand=700.0, limit=700.0, temp=60.0, thermal_limit=np.inf, util=0.9, brake=False):
    p, clock, mask = th.throttle(
        np.array([demand]), limit, 85.0, np.array([temp]), thermal_limit, 87.0, 89.0, util, brake
    )
    return float(p[0]), float(clock[0]), int(mask[0])


def test_nominal_gpu_is_not_throttled():
    assert _throttle(demand=640.0) == (640.0, 1.0, 0)


def test_power_cap_sets_sw_power_cap_bit_and_clock():
    p, clock, mask = _throttle(demand=700.0, limit=500.0)
    assert p == pytest.approx(500.0)
    assert clock == pytest.approx(((500.0 - 85.0) / (700.0 - 85.0)) ** (1 / th.DVFS_POWER_EXPONENT))
    assert mask == th.CLOCK_EVENT_SW_POWER_CAP


def test_sw_thermal_slowdown_holds_max_operating():
    # coolant at 70 °C, R_total 0.04 K/W: the die reaches 87 °C at (87 − 70)/0.04 = 425 W
    lim = th.sw_thermal_power_limit_w(70.0, 0.04, 0.01, 0.0, 87.0, 95.0, 0.15)
    assert lim == pytest.approx(425.0)
    p, clock, mask = _throttle(demand=700.0, thermal_limit=lim)
    assert p == pytest.approx(425.0) and clock < 1.0
    assert mask == th.CLOCK_EVENT_SW_THERMAL
    # the HBM limit binds when its own power heats it more: 25 K over 0.5 × 0.2 K/W of HBM power
    assert th.sw_thermal_power_limit_w(70.0, 0.02, 0.2, 0.0, 87.0, 95.0, 0.5) == pytest.approx(25.0 / 0.1)


def test_hw_slowdown_at_slowdown_temperature_cuts_clocks_2x():
    p, clock, mask = _throttle(demand=700.0, temp=89.5)
    assert clock <= th.HW_SLOWDOWN_CLOCK_FRAC
    assert mask & th.CLOCK_EVENT_HW_SLOWDOWN and mask & th.CLOCK_EVENT_HW_THERMAL
    assert p == pytest.approx(85.0 + 615.0 * 0.5**th.DVFS_POWER_EXPONENT)


def test_power_brake_and_idle_bits():
    _, clock, mask = _throttle(brake=True)
    assert clock <= 0.5 and mask == th.CLOCK_EVENT_HW_SLOWDOWN | th.CLOCK_EVENT_HW_POWER_BRAKE
    p, _, mask = _throttle(demand=85.0, util=0.0)
    assert p == 85.0 and mask == th.CLOCK_EVENT_GPU_IDLE


def test_throttle_rejects_nan_demand():
    with pytest.raises(ValueError, match="demand_w"):
        _throttle(demand=float("nan"))


def test_throttle_changes_nothing_but_the_idle_bit_where_no_mechanism_is_active():
    rng = np.random.default_rng(4)
    n = 2000
    demand = rng.uniform(0.0, 800.0, n)
    limit = rng.choice([500.0, 700.0], n)
    temp = rng.uniform(30.0, 95.0, n)
    p_lim = rng.uniform(300.0, 900.0, n)
    util = rng.uniform(0.0, 1.0, n)
    brake = rng.uniform(size=n) < 0.05
    active = th.throttle_active(demand, limit, temp, p_lim, 87.0, brake)
    assert 0 < active.sum() < n
    power, clock, mask = th.throttle(demand, limit, 85.0, temp, p_lim, 87.0, 89.0, util, brake)
    quiet = ~active
    assert power[quiet] == pytest.approx(np.minimum(demand, limit)[quiet])
    assert (clock[quiet] == 1.0).all()
    assert (mask[quiet] & ~th.CLOCK_EVENT_GPU_IDLE == 0).all()
    assert ((clock[active] < 1.0) | (mask[active] & ~th.CLOCK_EVENT_GPU_IDLE != 0)).all()


@pytest.mark.parametrize("limit_w", [200.0, 500.0, 0.5, 60.0])
@pytest.mark.parametrize("idle", ["scalar", "array"])
def test_power_cap_only_equals_throttle_bit_for_bit_where_only_the_cap_acts(limit_w, idle):
    """All GPUs capped (a policy cap of 200 W), some capped, a cap below idle, none capped."""
    rng = np.random.default_rng(7)
    n = 3000
    demand = rng.uniform(0.0, 760.0, n)
    demand[:5] = 0.0
    idle_w = 85.0 if idle == "scalar" else rng.uniform(60.0, 90.0, n)
    temp = rng.uniform(25.0, 86.9, n)  # below max operating (87 °C)
    p_lim = limit_w + rng.uniform(0.0, 400.0, n)  # every SW thermal operating point at or above the cap
    power, clock, mask = th.throttle(demand, limit_w, idle_w, temp, p_lim, 87.0, 89.0, 1.0, False)
    fast_power, fast_clock, fast_mask = th.power_cap_only(demand, limit_w, idle_w)
    assert np.array_equal(fast_power, power)
    assert np.array_equal(fast_clock, clock)
    assert np.array_equal(fast_mask, mask)
    capped = th.power_cap_only(np.full(n, 700.0), 200.0, idle_w)
    assert (capped[2] == th.CLOCK_EVENT_SW_POWER_CAP).all() and (capped[1] < 1.0).all()


@pytest.mark.parametrize("limit_w", [200.0, 60.0])  # above idle (the in-place path), below idle
@pytest.mark.parametrize("idle", ["scalar", "array"])
def test_power_cap_only_equals_throttle_bit_for_bit_when_every_gpu_is_capped(limit_w, idle):
    rng = np.random.default_rng(8)
    n = 3000
    demand = rng.uniform(limit_w + 1e-9, 760.0, n)
    idle_w = 85.0 if idle == "scalar" else rng.uniform(60.0, 90.0, n)
    p_lim = np.full(n, 900.0)
    power, clock, mask = th.throttle(demand, limit_w, idle_w, np.full(n, 40.0), p_lim, 87.0, 89.0, 1.0, False)
    fast = th.power_cap_only(demand, limit_w, idle_w)
    assert np.array_equal(fast[0], power) and np.array_equal(fast[1], clock) and np.array_equal(fast[2], mask)
    assert (mask == th.CLOCK_EVENT_SW_POWER_CAP).all()


def test_adiabatic_heating_stops_at_the_shutdown_temperature():
    """700 W into 600 J/K for an hour would be +4,200 K; the hardware shutdown at 92 °C cuts it."""
    from twin.physics.thermal import adiabatic_step_c

    assert adiabatic_step_c(40.0, 700.0, 600.0, 10.0) == pytest.approx(40.0 + 700.0 * 10.0 / 600.0)
    assert adiabatic_step_c(40.0, 700.0, 600.0, 3600.0, shutdown_c=92.0) == 92.0
    assert adiabatic_step_c(95.0, 0.0, 600.0, 60.0, shutdown_c=92.0) == 95.0  # already past: kept, not cooled
    assert adiabatic_step_c(40.0, 700.0, 600.0, 1.0, shutdown_c=92.0) == pytest.approx(40.0 + 700.0 / 600.0)


def test_power_cap_only_solves_the_clocks_where_asked_and_the_rest_equals_throttle():
    rng = np.random.default_rng(9)
    demand = rng.uniform(300.0, 760.0, 2000)
    solve = rng.uniform(size=2000) < 0.6
    power, clock, mask = th.throttle(demand, 200.0, 85.0, np.full(2000, 40.0), np.full(2000, 900.0), 87.0, 89.0)
    fast = th.power_cap_only(demand, 200.0, 85.0, solve)
    assert np.array_equal(fast[0], power) and np.array_equal(fast[2], mask)
    assert np.array_equal(fast[1][solve], clock[solve])


# --- the few-pass forms the engine uses equal the checked functions -------------------------------
def _per_gpu_arrays(n: int = 4096, seed: int = 3):
    rng = np.random.default_rng(seed)
    temp = rng.uniform(20.0, 95.0, n)
    power = rng.uniform(0.0, 750.0, n)
    supply = rng.uniform(20.0, 45.0, n)
    r_die = rng.uniform(0.02, 0.08, n)
    r_cal = rng.uniform(0.0, 0.01, n)
    decay = rng.uniform(0.0, 1.0, n)
    return temp, power, supply, r_die, r_cal, decay


def test_die_temp_step_equals_relaxing_to_the_steady_temperature():
    temp, power, supply, r_die, r_cal, decay = _per_gpu_arrays()
    pure = th.relax_temp_c(temp, th.die_temp_steady_c(power, supply, r_die + r_cal), decay)
    assert np.array_equal(th.die_temp_step_c(temp, power, supply, r_die + r_cal, decay), pure)
    # per-CDU columns against a [n_cdus, gpus_per_cdu] view, as the engine calls it
    cols = lambda v: v[::64][:, None]  # noqa: E731
    grid = lambda v: v.reshape(-1, 64)  # noqa: E731
    step = th.die_temp_step_c(grid(temp), grid(power), cols(supply), cols(r_die), cols(decay)).reshape(-1)
    expanded = lambda v: np.repeat(v[::64], 64)  # noqa: E731
    pure = th.relax_temp_c(temp, th.die_temp_steady_c(power, expanded(supply), expanded(r_die)), expanded(decay))
    assert np.array_equal(step, pure)


def test_hbm_from_its_rise_equals_hbm_on_the_plate_coolant():
    _, power, supply, _, r_cal, _ = _per_gpu_arrays()
    f_hbm, r_hbm = 0.12, 0.35
    pure = th.hbm_temp_c(th.plate_coolant_temp_c(power, supply, r_cal), f_hbm * power, r_hbm)
    fast = th.hbm_temp_from_rise_c(power, supply, th.hbm_rise_c_per_w(r_cal, f_hbm, r_hbm))
    np.testing.assert_allclose(fast, pure, rtol=1e-14, atol=1e-12)


def test_demand_with_leakage_equals_demand_plus_leakage_floored_at_zero():
    temp, power, *_ = _per_gpu_arrays()
    power[::7] = 0.0  # GPUs that draw nothing: a cold die must not make their demand negative
    temp[::7] = 10.0
    pure = np.maximum(power + th.leakage_power_w(temp, 1.3), 0.0)
    assert np.array_equal(th.demand_with_leakage_w(power, temp, 1.3), pure)
    assert (th.demand_with_leakage_w(power, temp, 1.3)[::7] == 0.0).all()


def test_a_capped_gpu_draws_its_mean_under_the_cap():
    """200 W cap at 90 % utilisation, idle 85 W: busy power held at 200 W, mean 85 + 0.9 × 115 = 188.5 W; the
    clocks fall only as far as the busy power needs, ((200 − 85)/(700 − 85))^(1/α)."""
    demand = np.array([85.0 + 0.9 * 615.0])
    assert th.mean_power_limit_w(200.0, 0.9, 85.0) == pytest.approx(188.5)
    p, clock, mask = th.throttle(demand, 200.0, 85.0, np.array([50.0]), np.inf, 87.0, 89.0, 0.9, False, 0.9)
    assert p[0] == pytest.approx(188.5) and mask[0] == th.CLOCK_EVENT_SW_POWER_CAP
    assert clock[0] == pytest.approx((115.0 / 615.0) ** (1 / th.DVFS_POWER_EXPONENT))
    fast = th.power_cap_only(demand, 200.0, 85.0, None, 0.9)
    assert fast[0][0] == p[0] and fast[1][0] == clock[0] and fast[2][0] == mask[0]


@pytest.mark.parametrize("limit_w", [200.0, 500.0, 60.0])
def test_power_cap_only_with_a_duty_equals_throttle_bit_for_bit(limit_w):
    rng = np.random.default_rng(7)
    n = 500
    demand = rng.uniform(0.0, 800.0, n)
    duty = rng.uniform(0.0, 1.0, n)
    temp = rng.uniform(30.0, 80.0, n)
    slow = th.throttle(demand, limit_w, 85.0, temp, np.inf, 87.0, 89.0, 1.0, False, duty)
    fast = th.power_cap_only(demand, limit_w, 85.0, None, duty)
    for a, b in zip(slow, fast):
        assert np.array_equal(a, b)
    active = th.throttle_active(demand, limit_w, temp, np.inf, 87.0, False, duty, 85.0)
    assert np.array_equal(active, slow[2] != 0)


def _rk4_two_node(tj, tp, p, ts, cj, cp, rjp, rpc, t_end, dt=1e-3):
    f = lambda x: np.array([(p - (x[0] - x[1]) / rjp) / cj, ((x[0] - x[1]) / rjp - (x[1] - ts) / rpc) / cp])  # noqa: E731
    x = np.array([tj, tp], dtype=np.float64)
    for _ in range(int(round(t_end / dt))):
        k1 = f(x)
        k2 = f(x + dt / 2 * k1)
        k3 = f(x + dt / 2 * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


@pytest.mark.parametrize("dt_s", [0.05, 1.0, 7.5])
def test_two_node_step_is_the_exact_solution(dt_s):
    """45 J/K junction over 0.0175 K/W to a 705 J/K plate, 0.021 K/W to a 30 °C coolant: 400 → 690 W."""
    args = (45.0, 705.0, 0.0175, 0.021)
    co = th.two_node_coefficients(*args, 30.0, dt_s)
    new = th.two_node_step_few_pass_c(np.array([50.0]), np.array([45.0]), np.array([690.0]), co)
    ref = _rk4_two_node(50.0, 45.0, 690.0, 30.0, *args, dt_s)
    assert new[0][0] == pytest.approx(ref[0], abs=1e-6) and new[1][0] == pytest.approx(ref[1], abs=1e-6)


def test_two_node_step_limits_and_steady_state():
    args = (45.0, 705.0, 0.0175, 0.021)
    assert th.two_node_coefficients(*args, 30.0, 0.0)[:4] == pytest.approx((1.0, 0.0, 0.0, 1.0))
    long = th.two_node_coefficients(*args, 30.0, 1e5)  # no overflow: the steady state
    tj, tp = th.two_node_step_few_pass_c(np.array([80.0]), np.array([20.0]), np.array([600.0]), long)
    assert (tj[0], tp[0]) == pytest.approx(th.two_node_steady_c(600.0, 30.0, 0.0175, 0.021))
    assert th.two_node_steady_c(600.0, 30.0, 0.0175, 0.021) == pytest.approx((30.0 + 600 * 0.0385, 30.0 + 600 * 0.021))
    # the junction leads: after a 400 → 690 W step it rises ~5 K in 2 s, where one lumped node of the same
    # total capacity and resistance (τ = 750 × 0.0385 = 29 s) rises 1.8 K
    steady = th.two_node_steady_c(400.0, 30.0, 0.0175, 0.021)
    co = th.two_node_coefficients(*args, 30.0, 2.0)
    tj, _ = th.two_node_step_few_pass_c(np.array([steady[0]]), np.array([steady[1]]), np.array([690.0]), co)
    lumped = steady[0] + 290.0 * 0.0385 * (1.0 - np.exp(-2.0 / (750.0 * 0.0385)))
    assert tj[0] - steady[0] > 4.5 and lumped - steady[0] < 2.0


def test_two_node_adiabatic_step_conserves_energy_and_stops_at_shutdown():
    tj, tp, p = th.two_node_adiabatic_step_c(60.0, 55.0, 700.0, 45.0, 705.0, 0.0175, 2.0)
    assert 45.0 * (tj - 60.0) + 705.0 * (tp - 55.0) == pytest.approx(700.0 * 2.0)
    assert tj - tp == pytest.approx(
        _rk4_two_node(60.0, 55.0, 700.0, 0.0, 45.0, 705.0, 0.0175, 1e12, 2.0)[0]
        - _rk4_two_node(60.0, 55.0, 700.0, 0.0, 45.0, 705.0, 0.0175, 1e12, 2.0)[1],
        abs=1e-4,
    )
    tj, tp, p = th.two_node_adiabatic_step_c(90.0, 80.0, 700.0, 45.0, 705.0, 0.0175, 60.0, 92.0)
    assert tj[()] == pytest.approx(92.0) and 0.0 <= p < 700.0
    assert 45.0 * (tj - 90.0) + 705.0 * (tp - 80.0) == pytest.approx(p * 60.0)

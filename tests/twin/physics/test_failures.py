"""Tests of twin/physics/failures.py: time to throttle and to shutdown after cooling failures."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import failures as fl
from twin.physics import loops
from twin.physics import thermal as th

CP, RHO = 3940.0, 1019.2
C_EFF = 750.0 + fl.PLATE_COOLANT_L / 1000.0 * RHO * CP
LIMITS = (87.0, 89.0, 92.0)


def test_adiabatic_and_exponential_hand_points():
    assert float(fl.time_to_temp_adiabatic_s(50.0, 700.0, 950.0, 87.0)) == pytest.approx(37.0 * 950.0 / 700.0)
    assert float(fl.time_to_temp_adiabatic_s(90.0, 700.0, 950.0, 87.0)) == 0.0
    assert np.isinf(fl.time_to_temp_adiabatic_s(50.0, 0.0, 950.0, 87.0))
    # τ ln((T_ss − T0)/(T_ss − T_lim)) = 30 ln(50/10)
    assert float(fl.time_to_temp_exponential_s(50.0, 100.0, 30.0, 90.0)) == pytest.approx(30.0 * np.log(5.0))
    assert np.isinf(fl.time_to_temp_exponential_s(50.0, 80.0, 30.0, 87.0))


def test_cdu_loss_hand_point_and_shorter_with_power():
    thr, shut = fl.cdu_loss(np.array([50.0, 50.0]), np.array([400.0, 700.0]), 85.0, 750.0, CP, RHO, *LIMITS)
    assert thr[1] == pytest.approx(37.0 * C_EFF / 700.0)
    assert thr[1] < thr[0] and shut[1] < shut[0] and np.all(shut > thr)
    p_hw = 85.0 + 615.0 * 0.5**2.5
    assert shut[1] == pytest.approx(39.0 * C_EFF / 700.0 + 3.0 * C_EFF / p_hw)


def _pump(temp, power, running, required, conv_frac=0.0, supply=30.0, flow_frac=1.0):
    return fl.pump_loss(
        np.array([temp]),
        np.array([power]),
        85.0,
        supply,
        0.035,
        0.005,
        conv_frac,
        flow_frac,
        750.0,
        CP,
        RHO,
        np.array([running]),
        np.array([required]),
        5.0,
        *LIMITS,
    )


def _reference_crossing_s(temp, power, supply, conv_frac, running, required, limit, dt_s=1e-3, horizon_s=120.0):
    """Independent reference: RK4 of ``C dT/dt = P − (T − T_s)/R(t)`` with the fail-over flow ramp."""
    f_end = min(1.0, (running - 1) / required)
    f_drop = min((running - 1) / running, f_end)

    def rate(t, temp_c):
        f = min(f_end, f_drop + t / 5.0)
        r = 0.035 * (1.0 - conv_frac + conv_frac * f**-th.CONVECTION_FLOW_EXPONENT) + 0.005 / f
        return (power - (temp_c - supply) / r) / 750.0

    t, temp_c = 0.0, temp
    while t < horizon_s:
        k1 = rate(t, temp_c)
        k2 = rate(t + dt_s / 2, temp_c + dt_s / 2 * k1)
        k3 = rate(t + dt_s / 2, temp_c + dt_s / 2 * k2)
        k4 = rate(t + dt_s, temp_c + dt_s * k3)
        new = temp_c + dt_s / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        if new >= limit:
            return t + dt_s * (limit - temp_c) / (new - temp_c)
        t, temp_c = t + dt_s, new
    return np.inf


def test_failover_flow_follows_the_pump_ramp():
    # 2 running, 1 required: half the flow at once, back at design after 2.5 s at design/5 s
    f = fl.failover_flow_frac(1.0, 2, 1, 5.0, np.array([0.0, 1.0, 2.5, 10.0]))
    assert f == pytest.approx([0.5, 0.7, 1.0, 1.0])
    # 3 running, 3 required: 2/3 at once and no spare to ramp to
    assert fl.failover_flow_frac(1.0, 3, 3, 5.0, np.array([0.0, 10.0])) == pytest.approx([2 / 3, 2 / 3])
    # the engine's pump model stepped finely gives the same flow
    flow, before = np.array([150.0]), np.array([2.0])
    for t_s in np.arange(0.1, 3.01, 0.1):
        flow = loops.pump_flow_lpm(
            flow, before, np.array([1.0]), np.array([1.0]), np.array([150.0]), np.array([5.0]), 0.1
        )
        before = np.array([1.0])
        assert flow[0] / 150.0 == pytest.approx(fl.failover_flow_frac(1.0, 2, 1, 5.0, t_s), abs=1e-9)


def test_pump_loss_with_a_spare_heats_only_while_the_flow_is_low():
    # 83 °C at 55 °C supply is the steady state at design flow (55 + 700 × 0.04): the spare brings the
    # flow back before the die gets near 87 °C
    thr, shut = _pump(83.0, 700.0, 2, 1, conv_frac=0.5, supply=55.0)
    assert np.isinf(thr[0]) and np.isinf(shut[0])
    # 0.01 K short of the limit, the 2.5 s ramp is enough: the crossing lies inside it (with the plate's
    # laminar h ∝ ṁ^(1/3) the half flow heats the die only ~0.03 K before the ramp turns it round)
    thr, _ = _pump(86.99, 700.0, 2, 1, conv_frac=0.5, supply=55.0)
    ref = _reference_crossing_s(86.99, 700.0, 55.0, 0.5, 2, 1, 87.0)
    assert 0.0 < ref < 2.5 and thr[0] == pytest.approx(ref, abs=0.03)
    # no flow through the whole fail-over gap (the bound this replaces) would cross after 0.014 s
    assert thr[0] > 3 * (0.01 * C_EFF / 700.0)


def test_pump_loss_with_a_spare_on_a_die_heading_for_the_limit():
    # steady 30 + 1500 × 0.04 = 90 °C at design flow: the ramp only brings the crossing forward
    thr, _ = _pump(80.0, 1500.0, 2, 1, conv_frac=0.5)
    ref = _reference_crossing_s(80.0, 1500.0, 30.0, 0.5, 2, 1, 87.0)
    design = 750.0 * 0.04 * np.log((90.0 - 80.0) / (90.0 - 87.0))  # no pump lost at all
    assert thr[0] == pytest.approx(ref, abs=0.03) and thr[0] < design


def test_pump_loss_without_spare_is_no_flow():
    thr, _ = _pump(55.0, 700.0, 1, 1)
    assert thr[0] == pytest.approx(32.0 * C_EFF / 700.0)


def test_pump_loss_degraded_flow_relaxes_to_new_steady_state():
    # 2 of 2 required running, one lost: half flow doubles R_cal (0.005 → 0.010) at once, no ramp
    thr, shut = _pump(55.0, 1400.0, 2, 2)
    steady = 30.0 + 1400.0 * (0.035 + 0.010)
    tau = 750.0 * 0.045
    assert thr[0] == pytest.approx(tau * np.log((steady - 55.0) / (steady - 87.0)))
    assert np.isinf(shut[0])  # idle power holds the die far below shutdown
    thr_low, _ = _pump(55.0, 1000.0, 2, 2)
    assert np.isinf(thr_low[0]) or thr_low[0] > thr[0]
    # with half the die resistance convective, R_die at half flow is 0.035 (0.5 + 0.5 · 2^(1/3))
    thr, _ = _pump(55.0, 1400.0, 2, 2, conv_frac=0.5)
    r = 0.035 * (0.5 + 0.5 * 2.0 ** (1 / 3)) + 0.010
    steady = 30.0 + 1400.0 * r
    assert thr[0] == pytest.approx(750.0 * r * np.log((steady - 55.0) / (steady - 87.0)))


def test_pump_loss_shutdown_only_when_idle_power_cannot_hold_the_die():
    # at half flow (R = 0.049 K/W) idle power (85 W) holds the die at 80 + 4.2 °C on an 80 °C supply,
    # but not on an 88 °C supply (92.2 °C): then full power runs on to shutdown
    _, shut = _pump(89.0, 700.0, 2, 2, conv_frac=0.5, supply=88.0)
    r = 0.035 * (0.5 + 0.5 * 2.0 ** (1 / 3)) + 0.010
    steady = 88.0 + 700.0 * r
    assert shut[0] == pytest.approx(750.0 * r * np.log((steady - 89.0) / (steady - 92.0)))
    _, shut = _pump(82.0, 700.0, 2, 2, conv_frac=0.5, supply=80.0)
    assert np.isinf(shut[0])


def test_pump_loss_vectorised_matches_single_racks():
    temps = np.array([55.0, 86.9, 80.0, 55.0, 83.0])
    powers = np.array([1400.0, 700.0, 1500.0, 700.0, 700.0])
    supply = np.array([30.0, 55.0, 30.0, 30.0, 55.0])
    running, required = np.array([2, 2, 2, 1, 3]), np.array([2, 1, 1, 1, 2])
    thr, shut = fl.pump_loss(
        temps, powers, 85.0, supply, 0.035, 0.005, 0.5, 1.0, 750.0, CP, RHO, running, required, 5.0, *LIMITS
    )
    for i in range(temps.size):
        t1, s1 = _pump(temps[i], powers[i], running[i], required[i], conv_frac=0.5, supply=supply[i])
        assert thr[i] == pytest.approx(t1[0]) and shut[i] == pytest.approx(s1[0])


def test_facility_water_loss_hand_point():
    n, p, q_w = 64, 600.0, 64 * 600.0 + 5000.0
    thr, shut = fl.facility_water_loss(
        np.array([55.0]),
        np.array([30.0]),
        np.array([q_w]),
        np.array([p]),
        85.0,
        np.array([n]),
        750.0,
        np.array([60.0]),
        CP,
        RHO,
        87.0,
        92.0,
    )
    c_loop = 0.060 * RHO * CP + n * 750.0
    assert thr[0] == pytest.approx(32.0 * c_loop / q_w)
    assert shut[0] > thr[0]
    thr_hot, _ = fl.facility_water_loss(
        np.array([55.0]),
        np.array([30.0]),
        np.array([2 * q_w]),
        np.array([2 * p]),
        85.0,
        np.array([n]),
        750.0,
        np.array([60.0]),
        CP,
        RHO,
        87.0,
        92.0,
    )
    assert thr_hot[0] < thr[0]


def test_supply_excursion():
    args = (np.array([50.0]), np.array([700.0]), 85.0, 30.0)
    thr, _ = fl.supply_excursion(*args, 5.0, 0.04, 750.0, 87.0, 92.0)  # steady 63 °C: never
    assert np.isinf(thr[0])
    thr, shut = fl.supply_excursion(*args, 35.0, 0.04, 750.0, 87.0, 92.0)  # steady 93 °C
    assert thr[0] == pytest.approx(30.0 * np.log((93.0 - 50.0) / (93.0 - 87.0)))
    assert np.isinf(shut[0])  # at idle the die would sit at 68.4 °C: the driver holds it
    thr2, _ = fl.supply_excursion(np.array([50.0]), np.array([900.0]), 85.0, 30.0, 35.0, 0.04, 750.0, 87.0, 92.0)
    assert thr2[0] < thr[0]


@pytest.mark.slow
def test_two_node_crossing_matches_a_fine_time_domain_solution():
    """A junction at 60 °C on a 50 °C plate at 1300 W (steady 80.05 °C) reaches 80 °C; at 690 W (56.6 °C) never."""
    cj, cp, rjp, rpc = 45.0, 705.0, 0.0175, 0.021
    t = fl.two_node_crossing_s(60.0, 50.0, 1300.0, 30.0, cj, cp, rjp, rpc, 80.0)
    dt, x, now = 1e-3, np.array([60.0, 50.0]), 0.0
    while x[0] < 80.0:
        f = lambda y: np.array([(1300.0 - (y[0] - y[1]) / rjp) / cj, ((y[0] - y[1]) / rjp - (y[1] - 30.0) / rpc) / cp])  # noqa: E731
        k1 = f(x)
        k2 = f(x + dt / 2 * k1)
        k3 = f(x + dt / 2 * k2)
        k4 = f(x + dt * k3)
        x, now = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4), now + dt
    assert float(t) == pytest.approx(now, abs=2e-3)
    assert np.isinf(fl.two_node_crossing_s(60.0, 50.0, 690.0, 30.0, cj, cp, rjp, rpc, 80.0))  # steady 56.6 °C
    assert float(fl.two_node_crossing_s(81.0, 50.0, 690.0, 30.0, cj, cp, rjp, rpc, 80.0)) == 0.0


def test_two_node_supply_excursion_and_pump_loss_lead_the_lumped_node():
    """The junction follows its plate within ~1 s; the plate relaxes with ≈ C R_pc, not C R: earlier crossings."""
    args = (np.array([50.0]), np.array([700.0]), 85.0, 30.0, 35.0, 0.04, 750.0, 87.0, 92.0)
    lumped, _ = fl.supply_excursion(*args)
    two, _ = fl.supply_excursion(*args, 0.06, 0.0175)
    assert two[0] < lumped[0]
    thr_lumped, _ = _pump(55.0, 1400.0, 2, 2, conv_frac=0.5)
    thr_two, _ = fl.pump_loss(
        np.array([55.0]),
        np.array([1400.0]),
        85.0,
        30.0,
        0.035,
        0.005,
        0.5,
        1.0,
        750.0,
        CP,
        RHO,
        np.array([2.0]),
        np.array([2.0]),
        5.0,
        *LIMITS,
        0.06,
    )
    assert thr_two[0] < thr_lumped[0] and thr_two[0] > 0.5 * thr_lumped[0]

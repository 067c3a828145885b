"""Tests of twin/physics/failures.py: time to throttle and to shutdown after cooling failures."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import failures as fl
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


def _pump(temp, power, running, required):
    return fl.pump_loss(np.array([temp]), np.array([power]), 85.0, 30.0, 0.035, 0.005, 750.0, CP, RHO,
                        np.array([running]), np.array([required]), 5.0, *LIMITS)


def test_pump_loss_redundant_only_failover_matters():
    thr, shut = _pump(55.0, 700.0, 2, 1)
    assert np.isinf(thr[0]) and np.isinf(shut[0])
    thr, _ = _pump(84.0, 700.0, 2, 1)  # 3 K from the limit heats through in < 5 s with no flow
    assert thr[0] == pytest.approx(3.0 * C_EFF / 700.0) and thr[0] <= 5.0


def test_pump_loss_without_spare_is_no_flow():
    thr, _ = _pump(55.0, 700.0, 1, 1)
    assert thr[0] == pytest.approx(32.0 * C_EFF / 700.0)


def test_pump_loss_degraded_flow_relaxes_to_new_steady_state():
    # 2 of 2 required running, one lost: half flow doubles R_cal (0.005 → 0.010)
    thr, shut = _pump(55.0, 1400.0, 2, 2)
    steady = 30.0 + 1400.0 * (0.035 + 0.010)
    tau = 750.0 * 0.045
    assert thr[0] == pytest.approx(tau * np.log((steady - 55.0) / (steady - 87.0)))
    assert np.isinf(shut[0])  # idle power holds the die far below shutdown
    thr_low, _ = _pump(55.0, 1000.0, 2, 2)
    assert np.isinf(thr_low[0]) or thr_low[0] > thr[0]


def test_facility_water_loss_hand_point():
    n, p, q_w = 64, 600.0, 64 * 600.0 + 5000.0
    thr, shut = fl.facility_water_loss(np.array([55.0]), np.array([30.0]), np.array([q_w]), np.array([p]), 85.0,
                                       np.array([n]), 750.0, np.array([60.0]), CP, RHO, 87.0, 92.0)
    c_loop = 0.060 * RHO * CP + n * 750.0
    assert thr[0] == pytest.approx(32.0 * c_loop / q_w)
    assert shut[0] > thr[0]
    thr_hot, _ = fl.facility_water_loss(np.array([55.0]), np.array([30.0]), np.array([2 * q_w]),
                                        np.array([2 * p]), 85.0, np.array([n]), 750.0, np.array([60.0]), CP, RHO,
                                        87.0, 92.0)
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

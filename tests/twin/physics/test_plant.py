"""Tests of twin/physics/plant.py: tower approach, chiller COP from lift, series economiser, restart."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import plant


def test_saturation_humidity_and_enthalpy_slope():
    # Magnus at 20 °C: 610.94 exp(17.625 · 20 / 263.04) = 2,333 Pa (tables: 2,339 Pa); W_s = 0.01466
    # (tables: 0.014758) — within 1 %
    ps = float(plant.saturation_pressure_pa(20.0))
    assert ps == pytest.approx(2333.4, rel=1e-3)
    w = 0.622 * ps / (plant.STANDARD_PRESSURE_PA - ps)
    assert w == pytest.approx(0.014758, rel=0.01)

    def h(t):  # saturated moist-air enthalpy, kJ/kg dry air
        p = plant.saturation_pressure_pa(t)
        ws = 0.622 * p / (plant.STANDARD_PRESSURE_PA - p)
        return 1.006 * t + ws * (2501.0 + 1.86 * t)

    for t in (10.0, 20.0, 26.0):
        assert plant.saturated_enthalpy_slope_kj_per_kg_k(t) == pytest.approx(
            (h(t + 1e-4) - h(t - 1e-4)) / 2e-4, rel=1e-6
        )


def test_tower_approach_scales_with_load_and_grows_on_cold_days():
    assert plant.tower_approach_k(1.0, 26.0, 4.0, 26.0) == pytest.approx(4.0)  # design point
    assert plant.tower_approach_k(0.5, 26.0, 4.0, 26.0) == pytest.approx(2.0)
    # at 10 °C wet bulb saturated air takes up 2.33 instead of 4.37 kJ/(kg K): 1.88 × the approach
    cold = float(plant.tower_approach_k(1.0, 10.0, 4.0, 26.0))
    assert cold == pytest.approx(4.0 * 4.37 / 2.33, rel=0.02)
    assert plant.tower_approach_k(0.0, 26.0, 4.0, 26.0) == plant.MIN_TOWER_APPROACH_K


def test_chiller_cop_from_lift_holds_the_rating_and_rises_as_the_towers_cool():
    # design: 25 °C chilled water on 30 °C tower water; refrigerant at 23.5 °C and 37.1 °C:
    # Carnot 296.65 / 13.6 = 21.81, so η = 6 / 21.81 = 0.275
    eta = float(plant.carnot_frac_from_rating(6.0, 25.0, 30.0))
    assert eta == pytest.approx(6.0 / (296.65 / 13.6), rel=1e-6)
    assert plant.chiller_cop_ratio(25.0, 30.0, eta) == pytest.approx(6.0)
    assert plant.chiller_cop_ratio(25.0, 20.0, eta) == pytest.approx(eta * 296.65 / 3.6, rel=1e-6)
    assert plant.chiller_cop_ratio(25.0, 34.0, eta) < 6.0


def _step(tower_c, chiller_w=20e6, temp=25.0, heat_w=8e6, dt=1.0):
    # 1 MW/K of facility water returning at 33 °C to a 25 °C setpoint: 8 MW to remove
    return plant.plant_step(
        np.array([temp]),
        np.array([heat_w]),
        np.array([33.0]),
        np.array([1e6]),
        np.array([25.0]),
        np.array([tower_c]),
        np.array([chiller_w]),
        np.array([5e9]),
        dt,
    )


def test_series_economiser_takes_what_the_towers_can_and_chillers_the_rest():
    temp, econ, chill = _step(26.0)  # economiser leaves at 27.5 °C: 5.5 MW free, 2.5 MW chilled
    assert (temp[0], econ[0], chill[0]) == pytest.approx((25.0, 5.5e6, 2.5e6))
    temp, econ, chill = _step(15.0)  # cold day: all free cooling
    assert (econ[0], chill[0]) == pytest.approx((8e6, 0.0))
    temp, econ, chill = _step(32.0)  # hot day: towers warmer than the return, chillers only
    assert (econ[0], chill[0]) == pytest.approx((0.0, 8e6))


def test_plant_short_of_chillers_ramps_its_supply():
    temp, econ, chill = _step(32.0, chiller_w=1e6, dt=10.0)
    assert chill[0] == pytest.approx(1e6)
    assert temp[0] == pytest.approx(25.0 + (8e6 - 1e6) * 10.0 / 5e9)  # 7 MW into 5 GJ/K for 10 s: +0.014 K


def test_chillers_restart_after_their_restart_time():
    online, left = np.array([2.0]), np.array([0.0])
    online, left = plant.chillers_online_count(online, np.array([0.0]), left, np.array([300.0]), 1.0)  # power dip
    assert online[0] == 0.0
    t = 0.0
    while online[0] == 0.0:
        online, left = plant.chillers_online_count(online, np.array([2.0]), left, np.array([300.0]), 1.0)
        t += 1.0
    assert t == 300.0 and online[0] == 2.0


def test_chillers_spread_over_the_buses():
    assert plant.chillers_by_bus_count(np.array([32, 5, 2]), 2).tolist() == [[16, 16], [3, 2], [1, 1]]
    assert plant.chillers_by_bus_count(np.array([2]), 3).tolist() == [[1, 1, 0]]


def test_chillers_with_power_follow_their_buses_and_a_dip():
    by_bus = plant.chillers_by_bus_count(np.array([5, 2]), 2)
    assert plant.chillers_powered_count(by_bus, np.array([True, True]), False).tolist() == [5, 2]
    assert plant.chillers_powered_count(by_bus, np.array([True, False]), False).tolist() == [3, 1]  # bus B dead
    assert plant.chillers_powered_count(by_bus, np.array([True, True]), True).tolist() == [0, 0]  # every bus dips


def _curve_cop_by_hand(te: float, tc: float, plr: float) -> float:
    """The cited curve (Trane CVHF 2,567 kW VSD, EnergyPlus Chillers.idf) typed out: COP = PLR·COP_ref/(EIRFT·EIRFPLR)."""
    eirft = 0.4561990 - 0.03333063 * te - 0.001763576 * te**2 + 0.05624520 * tc - 8.535085e-05 * tc**2
    eirft += 3.567604e-04 * te * tc
    eirfplr = 0.1039419 + 0.4184975 * plr + 0.4774210 * plr**2
    return plr * 11.77 / (eirft * eirfplr)


def test_chiller_cop_reproduces_the_cited_curve_at_two_lifts():
    # Inside the curve's range the twin's COP is the curve's, scaled from its AHRI point to the rating:
    # at 7.5 °C chilled water on 20 °C (lift 12.5 K) and on 27 °C (lift 19.5 K) condenser water, full load
    ahri = _curve_cop_by_hand(6.67, 29.44, 1.0)
    assert ahri == pytest.approx(6.513, abs=0.001)  # the curve's own COP at the AHRI 550/590 rating point
    for tower in (20.0, 27.0):
        expected = 6.0 * _curve_cop_by_hand(7.5, tower, 1.0) / ahri
        assert plant.chiller_cop(7.5, tower, 6.0) == pytest.approx(expected, rel=1e-9)
    assert plant.chiller_cop(7.5, 20.0, 6.0) == pytest.approx(8.67, abs=0.01)
    assert plant.chiller_cop(7.5, 27.0, 6.0) == pytest.approx(6.63, abs=0.01)
    assert plant.chiller_cop(plant.AHRI_CHILLED_C, plant.AHRI_CONDENSER_C, 6.0) == pytest.approx(6.0)


def test_chiller_cop_at_warm_water_lift_and_part_load():
    # colossus: 25 °C chilled water on 30 °C tower water.  The curve at its warmest chilled water (8.89 °C)
    # with the same 5-K lift, times the evaporating temperatures' ratio (296.65 K / 280.54 K).
    at_lift = 6.0 * _curve_cop_by_hand(8.89, 13.89, 1.0) / _curve_cop_by_hand(6.67, 29.44, 1.0)
    assert plant.chiller_cop(25.0, 30.0, 6.0) == pytest.approx(at_lift * 296.65 / 280.54, rel=1e-9)
    assert plant.chiller_cop(25.0, 30.0, 6.0) == pytest.approx(13.83, abs=0.01)
    carnot = plant.carnot_cop_ratio(25.0, 30.0)
    assert 0.6 < plant.chiller_cop(25.0, 30.0, 6.0) / carnot < 0.7  # centrifugal chillers at low lift
    # part load: PLR / EIRFPLR(PLR), the VSD machine is best near half load; held below the minimum 0.11
    half = plant.chiller_cop(25.0, 30.0, 6.0, 0.5) / plant.chiller_cop(25.0, 30.0, 6.0)
    assert half == pytest.approx(_curve_cop_by_hand(8.0, 20.0, 0.5) / _curve_cop_by_hand(8.0, 20.0, 1.0), rel=1e-9)
    assert half == pytest.approx(1.156, abs=0.001)
    assert plant.chiller_cop(25.0, 30.0, 6.0, 0.01) == plant.chiller_cop(25.0, 30.0, 6.0, plant.CURVE_MIN_PLR)
    # COP falls as the lift grows, everywhere
    cops = plant.chiller_cop(25.0, np.array([26.0, 30.0, 35.0, 40.0, 45.0]), 6.0)
    assert np.all(np.diff(cops) < 0)


def test_chillers_are_staged_to_the_duty():
    plr = plant.staged_part_load_frac(np.array([0.0, 1.0, 3.5, 5.0, 500.0]), np.full(5, 3.5), np.full(5, 32.0))
    assert plr == pytest.approx([0.0, 1.0 / 3.5, 1.0, 5.0 / 7.0, 1.0])


def test_restarted_chillers_soft_load_from_40_percent_to_full_over_10_minutes():
    args = (np.array([0.0]), np.array([2.0]), np.array([0.0]), np.array([0.0]), 1.0)
    cap, loading, t = plant.chillers_soft_loaded(*args)
    assert cap[0] == pytest.approx(2.0 * plant.SOFTLOAD_START_FRAC) and loading[0] == 2.0 and t[0] == 0.0
    online = np.array([2.0])
    caps = []
    for _ in range(int(plant.SOFTLOAD_S)):
        cap, loading, t = plant.chillers_soft_loaded(online, online, loading, t, 1.0)
        caps.append(cap[0])
    assert np.all(np.diff(caps) >= 0.0)  # the limit only rises
    assert caps[299] == pytest.approx(2.0 * (0.4 + 0.6 * 300.0 / 600.0))  # halfway: 70 %
    assert caps[-1] == 2.0 and loading[0] == 0.0 and t[0] == 0.0  # full after 10 min, the ramp done


def test_chillers_that_never_stopped_keep_their_capacity_while_others_soft_load():
    cap, loading, _ = plant.chillers_soft_loaded(np.array([3.0]), np.array([4.0]), np.zeros(1), np.zeros(1), 1.0)
    assert loading[0] == 1.0 and cap[0] == pytest.approx(3.0 + plant.SOFTLOAD_START_FRAC)
    # a chiller lost while loading: the loading ones cannot outnumber those online
    cap, loading, _ = plant.chillers_soft_loaded(np.array([4.0]), np.array([0.0]), loading, np.zeros(1), 1.0)
    assert cap[0] == 0.0 and loading[0] == 0.0

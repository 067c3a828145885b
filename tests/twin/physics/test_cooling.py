"""Tests of twin/physics/cooling.py: PG25 properties, loop energy balance, CDU capacity, plant, pumps."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import cooling as co


def test_pg25_properties_interpolate_the_facts_table():
    cp, rho = co.coolant_properties(np.array([20.0, 25.0, 30.0, 40.0]))
    assert cp == pytest.approx([3910.0, 3925.0, 3940.0, 3960.0])
    assert rho == pytest.approx([1023.7, 1021.45, 1019.2, 1014.3])
    cp_w, rho_w = co.coolant_properties(30.0, "water")
    assert (float(cp_w), float(rho_w)) == pytest.approx((4180.0, 995.6))


@pytest.mark.parametrize("temp", [-20.0, 120.0, float("nan")])
def test_coolant_outside_liquid_range_raises(temp):
    with pytest.raises(ValueError):
        co.coolant_properties(temp)


def test_unknown_coolant_raises():
    with pytest.raises(ValueError, match="unknown coolant"):
        co.coolant_properties(30.0, "R134a")


def test_delta_t_hand_point_facts_b5():
    # [Est-Coolant-Flow]: PG25 at 30 °C, 10 K rise needs 1.49 L/min per kW
    assert float(co.coolant_delta_t_k(1000.0, 1.49, 30.0)) == pytest.approx(10.0, abs=0.05)


def test_delta_t_energy_balance_round_trip():
    heat_w, flow = 48_000.0, 150.0
    dt = float(co.coolant_delta_t_k(heat_w, flow, 30.0))
    cp, rho = co.coolant_properties(30.0)
    assert float(co.mass_flow_kg_s(flow, rho) * cp * dt) == pytest.approx(heat_w)


def test_zero_flow_raises():
    with pytest.raises(ValueError, match="flow_lpm"):
        co.coolant_delta_t_k(1000.0, np.array([10.0, 0.0]))


def test_cdu_capacity_curve():
    xs, ys = np.array([25.0, 32.0, 40.0, 45.0]), np.array([120.0, 100.0, 60.0, 35.0])
    t = np.array([20.0, 32.0, 36.0, 40.0, 50.0, 60.0])
    cap = co.cdu_capacity_kw(t, np.tile(xs, (6, 1)), np.tile(ys, (6, 1)))
    # held below the curve, interpolated inside, extended (and floored at 0) above
    assert cap == pytest.approx([120.0, 100.0, 80.0, 60.0, 10.0, 0.0])
    assert co.cdu_capacity_kw(36.0, xs, ys) == pytest.approx([80.0])


def test_cdu_flow_from_pumps():
    assert co.coolant_flow_lpm(np.array([2, 1, 0]), 1, 150.0) == pytest.approx([150.0, 150.0, 0.0])
    assert co.coolant_flow_lpm(1, 2, 150.0) == pytest.approx(75.0)


def test_pump_and_cooling_power():
    assert float(co.pump_power_kw(60_000.0, 300.0, 0.75)) == pytest.approx(400.0)
    facility_pumps_kw = co.pump_power_kw(np.array([60_000.0]), 300.0, 0.75)
    parts = co.cooling_power_kw(10.0, facility_pumps_kw, np.array([1000.0]), np.array([600.0]), np.array([6.0]))
    assert parts["chillers_kw"] == pytest.approx(100.0)
    assert parts["tower_fans_kw"] == pytest.approx(13.0)
    assert parts["total_kw"] == pytest.approx(10.0 + 400.0 + 100.0 + 13.0)


def test_cdu_pumps_follow_the_affinity_laws():
    # closed loop, Δp = k V̇²: power ∝ V̇³, shared by the pumps running
    one = co.cdu_pump_power_w(1, 150.0, 150.0, 750.0)
    two = co.cdu_pump_power_w(2, 150.0, 150.0, 750.0)
    assert one == pytest.approx(750.0) and two == pytest.approx(750.0)  # two pumps share the design flow
    assert co.cdu_pump_power_w(2, 75.0, 150.0, 750.0) == pytest.approx(750.0 / 8)  # half the speed: an eighth
    assert co.cdu_pump_power_w(0, 0.0, 150.0, 750.0) == 0.0
    # colossus: 1,568 in-rack CDUs with both pumps on the design flow draw 1,568 × 750 W, not twice that
    site = co.cdu_pump_power_w(np.full(1568, 2.0), np.full(1568, 150.0), 150.0, 750.0)
    assert site.sum() == pytest.approx(1.176e6)
    with pytest.raises(ValueError, match="pumps_running_count"):
        co.cdu_pump_power_w(-1, 1.0, 1.0, 1.0)

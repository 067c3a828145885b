"""Tests of twin/physics/loops.py: first-order loop transients against the analytic response, CDU control,
pump fail-over, transport delay."""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.physics import loops

# a facility loop by hand: 10 m³ of water (C = 10,000 kg × 4,180 J/(kg K) = 41.8 MJ/K) at
# 1,000 L/min (ṁ cp = 1,000/60 kg/s × 4,180 = 69,667 W/K): τ = C / (ṁ cp) = 600 s, the
# residence time V / V̇ = 10,000 L / 1,000 L/min = 10 min.  1 MW in on 25 °C supply:
# T_ss = 25 + 1e6 / 69,667 = 39.354 °C.
C_J_PER_K = 10_000.0 * 4180.0
G_W_PER_K = 1000.0 / 60.0 * 4180.0
TAU_S = 600.0
T_SS_C = 25.0 + 1e6 / G_W_PER_K


def _run(dt_s: float, t_end_s: float) -> tuple[float, float]:
    temp, heat_j = np.array([25.0]), 0.0
    for _ in range(round(t_end_s / dt_s)):
        new, out_w = loops.facility_loop_step(
            temp, np.array([1e6]), np.array([G_W_PER_K]), np.array([25.0]), np.array([C_J_PER_K]), dt_s
        )
        heat_j += float(out_w[0]) * dt_s
        temp = new
    return float(temp[0]), heat_j


@pytest.mark.parametrize("dt_s", [1.0, 60.0, 600.0, 1800.0])
def test_loop_transient_is_the_analytic_first_order_response_at_any_step(dt_s):
    assert C_J_PER_K / G_W_PER_K == pytest.approx(TAU_S)
    for t in (t for t in (600.0, 1800.0) if t % dt_s == 0):
        temp, heat_out_j = _run(dt_s, t)
        analytic = T_SS_C + (25.0 - T_SS_C) * math.exp(-t / TAU_S)  # 600 s: 34.43 °C (63.2 % of the rise)
        assert temp == pytest.approx(analytic, abs=1e-9)
        # energy: what came in = what left + what the water holds
        assert 1e6 * t == pytest.approx(heat_out_j + C_J_PER_K * (temp - 25.0), rel=1e-12)


def test_loop_without_flow_accumulates_its_heat():
    new, out_w = loops.facility_loop_step(
        np.array([30.0]), np.array([418_000.0]), np.array([0.0]), np.array([25.0]), np.array([C_J_PER_K]), 100.0
    )
    assert new[0] == pytest.approx(30.0 + 418_000.0 * 100.0 / C_J_PER_K)  # +1 K
    assert out_w[0] == pytest.approx(0.0, abs=1e-6)


# a CDU by hand: 60 L of PG25 (1,019 kg/m³, 3,940 J/(kg K): C = 240.9 kJ/K) at 150 L/min
# (ṁ cp = 10,035 W/K, τ = 24 s); rated 100 kW at 4 K approach → ΔT = 9.965 K, ε = 0.7136.
CDU_C = 0.060 * 1019.0 * 3940.0
CDU_G = 150.0 / 60_000.0 * 1019.0 * 3940.0
EPS = float(loops.hx_effectiveness_frac(100e3, CDU_G, 4.0))


def test_effectiveness_from_rated_duty_and_approach():
    rise = 100e3 / CDU_G
    assert EPS == pytest.approx(rise / (rise + 4.0))
    assert 0.70 < EPS < 0.72


def test_cdu_holds_its_setpoint_and_the_return_follows_with_the_residence_time():
    temp = np.array([29.0])
    for _ in range(24):  # 24 s = one τ
        temp, supply, out = loops.cdu_loop_step(
            temp,
            np.array([60e3]),
            np.array([CDU_G]),
            np.array([29.0]),
            np.array([25.0]),
            np.array([EPS]),
            np.array([CDU_C]),
            1.0,
        )
    assert supply[0] == 29.0  # valve throttled: the setpoint holds
    ss = 29.0 + 60e3 / CDU_G
    assert temp[0] == pytest.approx(ss + (29.0 - ss) * math.exp(-24.0 * CDU_G / CDU_C), rel=1e-12)


def test_cdu_on_warm_facility_water_loses_its_setpoint():
    # facility water at 30 °C cannot give a 29 °C supply: the valve is wide open and
    # T_sup = T − ε (T − T_fw); steady: Q = ε ṁ cp (T − T_fw)
    temp, supply, out = loops.cdu_loop_step(
        np.array([29.0]),
        np.array([60e3]),
        np.array([CDU_G]),
        np.array([29.0]),
        np.array([30.0]),
        np.array([EPS]),
        np.array([CDU_C]),
        3600.0,
    )
    assert temp[0] == pytest.approx(30.0 + 60e3 / (EPS * CDU_G))
    assert supply[0] == pytest.approx(temp[0] - EPS * (temp[0] - 30.0))
    assert supply[0] > 30.0
    assert out[0] == pytest.approx(60e3 - CDU_C * (temp[0] - 29.0) / 3600.0)  # what came in, less what it stored


def test_pump_trip_fails_over_within_five_seconds():
    # two pumps, one required: one trips; the other keeps its speed (half the flow) and ramps
    # at design / 5 s, so the CDU is back at design flow within the fail-over time
    flow, before, t = np.array([150.0]), np.array([2.0]), 0.0
    history = []
    for _ in range(10):
        flow = loops.pump_flow_lpm(
            flow, before, np.array([1.0]), np.array([1.0]), np.array([150.0]), np.array([5.0]), 1.0
        )
        before = np.array([1.0])
        t += 1.0
        history.append((t, float(flow[0])))
    assert history[0][1] == pytest.approx(75.0 + 30.0)  # 50 % at once, then +30 L/min per second
    assert min(t for t, f in history if f >= 150.0) <= 5.0
    # both pumps lost: no flow at once
    assert (
        loops.pump_flow_lpm(
            np.array([150.0]),
            np.array([2.0]),
            np.array([0.0]),
            np.array([1.0]),
            np.array([150.0]),
            np.array([5.0]),
            1.0,
        )[0]
        == 0.0
    )
    with pytest.raises(ValueError, match="pumps_running_count"):
        loops.pump_flow_lpm(flow, before, np.array([-1.0]), np.array([1.0]), np.array([150.0]), np.array([5.0]), 1.0)


def test_transport_delay_of_a_pipe_run():
    # 100 m of 300 mm pipe hold 7,069 L; at 43,200 L/min the water takes 9.8 s
    vol = loops.pipe_volume_l(100.0, 300.0)
    assert vol == pytest.approx(100.0 * math.pi * 0.15**2 * 1e3)
    assert loops.transport_delay_s(vol, 43_200.0) == pytest.approx(vol / 720.0)
    assert loops.transport_delay_s(vol, 0.0) == np.inf


def test_delay_line_reads_the_signal_in_the_past():
    line = loops.DelayLine(np.array([25.0, 25.0]), depth=8)
    for k in range(1, 6):
        line.push(np.array([25.0 + k, 25.0 - k]), 1.0)  # t = 1 … 5 s
    assert line.read(np.array([0.0, 0.0])) == pytest.approx([30.0, 20.0])
    assert line.read(np.array([2.0, 2.5])) == pytest.approx([28.0, 22.5])
    assert line.read(np.array([100.0, 100.0])) == pytest.approx([25.0, 25.0])  # older than the history: oldest

"""The island's frequency model, spinning reserve and N-1, load rejection and the grid contract (twin/physics/island.py).

Hand-computed cases, and the transfer function and step response against a fine Runge–Kutta
solution of the same two equations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from twin.physics import island
from twin.physics.swing import SwingReport
from twin.site.tables import SOURCE_KINDS

GRID, GEN, BAT = (SOURCE_KINDS.index(k) for k in ("grid", "generator", "battery"))
MODEL = island.IslandModel(online_mw=35.0, inertia_h_s=1.0, droop_frac=0.05, governor_s=1.0)


def _rk4(model: island.IslandModel, load_pu, t_end: float, dt: float = 1e-3) -> tuple[np.ndarray, np.ndarray]:
    """Δf(t) of ``2H Δf' = Pm − Pe(t)``, ``Tg Pm' = −Δf/R − Pm`` by RK4 at ``dt``."""
    h, r, tg = model.inertia_h_s, model.droop_frac, model.governor_s
    f = lambda t, x: np.array([(x[1] - load_pu(t)) / (2 * h), (-x[0] / r - x[1]) / tg])  # noqa: E731
    x, out = np.zeros(2), []
    ts = np.arange(0.0, t_end, dt)
    for t in ts:
        out.append(x[0])
        k1 = f(t, x)
        k2 = f(t + dt / 2, x + dt / 2 * k1)
        k3 = f(t + dt / 2, x + dt / 2 * k2)
        k4 = f(t + dt, x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return ts, np.array(out)


def test_mode_and_damping_of_the_equivalent_machine():
    # ω_n = 1/√(2 · 1 · 0.05 · 1) = 3.162 rad/s → 0.503 Hz; ζ = √(1 · 0.05 / 2) = 0.158
    assert MODEL.mode_hz == pytest.approx(1.0 / math.sqrt(0.1) / (2 * math.pi))
    assert MODEL.damping_ratio == pytest.approx(math.sqrt(0.025))
    assert MODEL.gain(math.inf) == pytest.approx(0.05)  # at 0 Hz the droop


@pytest.mark.parametrize("period_s", [1.0, 2.0, 6.85, 60.0])
def test_gain_is_the_steady_sinusoidal_response(period_s):
    """A 0.01 pu sinusoid of load: the frequency's steady amplitude over 0.01 is |G(jω)|."""
    w = 2 * math.pi / period_s
    ts, df = _rk4(MODEL, lambda t: 0.01 * math.sin(w * t), 25.0 + 2 * period_s, dt=5e-3)
    settled = df[ts > 25.0]
    assert (settled.max() - settled.min()) / 2 / 0.01 == pytest.approx(MODEL.gain(period_s), rel=2e-3)


def test_step_extreme_and_recovery_match_the_time_domain_solution():
    ts, df = _rk4(MODEL, lambda t: 0.25, 20.0, dt=2e-3)
    assert island.step_extreme_frac(MODEL, 0.25) == pytest.approx(df.min(), rel=1e-3)
    assert island.step_extreme_frac(MODEL, -0.25) == pytest.approx(-df.min(), rel=1e-3)  # a rejection rises
    assert df[-1] == pytest.approx(-0.05 * 0.25, rel=1e-3)  # settles on the droop line
    off = np.abs(df + 0.05 * 0.25) > 0.015 / 2  # G2 band ±0.75 %
    assert island.step_recovery_s(MODEL, 0.25, 0.015) == pytest.approx(ts[np.flatnonzero(off)[-1]], abs=0.02)


def test_the_swing_lines_drive_the_frequency_through_the_governors():
    """Two lines in phase: peak to peak 2 Σ |G| a / S."""
    lines = ((2.0, 1.0), (6.85, 3.0))
    expected = 2 * (MODEL.gain(2.0) * 1.0 + MODEL.gain(6.85) * 3.0) / 35.0
    assert island.line_freq_pp_frac(MODEL, lines) == pytest.approx(expected)
    # a 2 s step sits near the island's 0.5 Hz mode: per MW it moves the frequency 7× more than a 6.85 s one
    assert MODEL.gain(2.0) / MODEL.gain(6.85) > 7.0


def _colossus_like():
    """8 MW grid at 7.9 MW and 14 units of 2.5 MW at 2.47 MW with a 0.625 MW step each."""
    kind = np.array([GRID] + [GEN] * 14)
    cap = np.array([8.0] + [2.5] * 14)
    out = np.array([7.9] + [2.47] * 14)
    step = np.array([np.inf] + [0.625] * 14)
    return kind, cap, out, step


def test_reserve_and_n1_of_a_site_at_its_limit():
    kind, cap, out, step = _colossus_like()
    demand = float(out.sum())  # 42.48 MW
    r = island.reserve_figures(demand, kind, cap, out, np.ones(15, bool), step, np.ones(15), cap)
    assert r.spinning_reserve_mw == pytest.approx(0.1 + 14 * 0.03)
    assert r.largest_source == 0 and r.largest_source_mw == pytest.approx(7.9)
    assert r.n1_capacity_mw == pytest.approx(35.0) and r.n1_deficit_mw == pytest.approx(demand - 35.0)
    # the units pick up at most their 0.03 MW of headroom each at once
    assert r.n1_step_deficit_mw == pytest.approx(7.9 - 14 * 0.03)


def test_n1_step_deficit_counts_the_ready_steps_and_the_batteries():
    kind = np.array([GEN, GEN, GEN, BAT])
    cap = np.array([2.5, 2.5, 2.5, 1.0])
    out = np.array([1.5, 1.0, 1.0, 0.0])
    step = np.array([0.625, 0.625, 0.625, np.inf])
    ready = np.array([1.0, 1.0, 0.2, 1.0])  # unit 2 still recovering from a step
    r = island.reserve_figures(3.5, kind, cap, out, np.ones(4, bool), step, ready, cap)
    # unit 0 (1.5 MW) trips: unit 1 takes 0.625, unit 2 0.125, the battery 1.0: 1.75 ≥ 1.5
    assert r.largest_source == 0 and r.n1_step_deficit_mw == 0.0 and r.n1_deficit_mw == 0.0
    ready[1] = 0.0
    r = island.reserve_figures(3.5, kind, cap, out, np.ones(4, bool), step, ready, cap)
    assert r.n1_step_deficit_mw == pytest.approx(1.5 - 0.125 - 1.0)


def test_grid_contract_import_export_ramp_and_voltage_change():
    contract = island.GridContract(8.0, 0.0, 1.0, 150.0, 0.03)
    ok = island.grid_figures(contract, 5.0, 2.0, 3.0, 0.5)
    assert ok.peak_import_mw == 6.0 and ok.min_import_mw == 2.0 and ok.within_contract
    assert ok.voltage_change_frac == pytest.approx(3.0 / 150.0)
    reverse = island.grid_figures(contract, 5.0, 2.0, 9.0, 0.5)  # a 9 MW drop exports 4 MW
    assert reverse.min_import_mw == -4.0 and not reverse.within_contract
    assert reverse.voltage_change_frac == pytest.approx(0.06)
    assert not island.grid_figures(contract, 5.0, 2.0, 3.0, 5.0).within_contract  # ramp over the contract's
    unknown = island.grid_figures(island.GridContract(8.0, 0.0, math.nan, math.nan, math.nan), 5.0, 2.0, 3.0, 50.0)
    assert unknown.within_contract and math.isnan(unknown.voltage_change_frac)


def _units(kind, cap, step):
    n = kind.size
    return island.SupplyUnits(
        kind=kind,
        iso_class=["" if k != GEN else "G2" for k in kind],
        unit_mw=cap,
        step_mw=step,
        inertia_h_s=np.ones(n),
        droop_frac=np.full(n, 0.05),
        governor_s=np.ones(n),
        overspeed_trip_frac=np.full(n, 0.10),
        export_limit_mw=np.zeros(n),
        short_circuit_mva=np.full(n, 150.0),
        voltage_change_max_frac=np.full(n, 0.03),
        ramp_mw_per_s=np.full(n, 1.0),
    )


def test_islanded_checks_judge_the_swing_the_drop_and_the_surge_on_the_units():
    """14 units of 2.5 MW islanded (the grid tripped); a 10.5 MW checkpoint drop, 12 MW swing at 6.85 s."""
    kind, cap, out, step = _colossus_like()
    live = np.ones(15, bool)
    live[0] = False
    swing = SwingReport(12.0, 20.0, 6.85, 2.0, 0, 0, 0, 12.0, False, checkpoint_dip_mw=10.5, lines_mw=((6.85, 5.6),))
    g = island.generation_checks(
        _units(kind, cap, step),
        live,
        np.where(live, cap, 0),
        np.where(live, out, 0),
        np.full(15, np.nan),
        np.ones(15),
        None,
        34.6,
        swing,
    )
    assert g.islanded_flag and g.island_online_mw == pytest.approx(35.0)
    assert g.rejection_frac == pytest.approx(10.5 / 35.0) and g.surge_frac == pytest.approx(10.5 / 35.0)
    assert g.rejection_freq_rise_frac == pytest.approx(island.step_extreme_frac(MODEL, -0.3))
    assert not g.surge_ok  # 30 % of rating against a 25 % load step
    assert g.swing_freq_pp_hz == pytest.approx(2 * MODEL.gain(6.85) * 5.6 / 35.0 * 60.0)
    assert g.freq_band_hz == pytest.approx(0.015 * 60.0) and not g.frequency_ok
    assert g.rocof_hz_per_s == pytest.approx(10.5 / 35.0 / 2.0 * 60.0)
    assert g.grid is None


def test_batteries_absorb_before_the_units_and_a_live_grid_takes_the_rest():
    kind = np.array([GRID, GEN, BAT])
    cap = np.array([8.0, 2.5, 4.0])
    out = np.array([5.0, 2.0, 0.0])
    swing = SwingReport(6.0, 10.0, 6.85, 2.0, 0, 0, 0, 6.0, False, checkpoint_dip_mw=7.0, lines_mw=((6.85, 3.0),))
    g = island.generation_checks(
        _units(kind, cap, np.array([np.inf, 0.625, np.inf])),
        np.ones(3, bool),
        cap,
        out,
        np.array([np.nan, np.nan, 0.5]),
        np.ones(3),
        None,
        7.0,
        swing,
    )
    # the battery (4 MW spare, 4 MW of charge) leaves 2 MW of swing and 3 MW of the drop
    assert not g.islanded_flag and g.swing_on_units_mw == pytest.approx(2.0) and g.rejection_mw == pytest.approx(3.0)
    assert g.grid.peak_import_mw == pytest.approx(6.0) and g.grid.min_import_mw == pytest.approx(2.0)
    assert g.grid.ramp_mw_per_s == pytest.approx(10.0 * 2.0 / 6.0) and not g.grid.within_contract  # 3.3 > 1 MW/s

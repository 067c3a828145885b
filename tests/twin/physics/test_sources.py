"""Generator units, batteries, UPS ride-through and the swing split, against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from twin.physics import sources
from twin.site.tables import SOURCE_KINDS

GEN, BAT = SOURCE_KINDS.index("generator"), SOURCE_KINDS.index("battery")


def test_derating_above_the_rating_temperature_only():
    cap = sources.derated_capacity_mw(np.array([2.5, 2.5]), np.array([0.01, 0.01]), np.array([25.0, 25.0]), 35.0)
    assert cap == pytest.approx([2.25, 2.25])  # 10 K × 1 %/K
    assert sources.derated_capacity_mw(np.array([2.5]), np.array([0.01]), np.array([25.0]), 20.0) == pytest.approx(
        [2.5]
    )


def test_a_unit_picks_up_at_most_one_load_step_plus_its_ramp():
    # 2.5 MW unit at 1.0 MW, ISO 8528-5 step 0.625 MW, 0.05 MW/s over 2 s: 1.0 + 0.625 + 0.1
    assert sources.reachable_mw(
        np.array([2.5]), np.array([1.0]), np.array([0.625]), np.array([0.05]), 2.0
    ) == pytest.approx([1.725])
    assert sources.reachable_mw(
        np.array([2.5]), np.array([2.2]), np.array([0.625]), np.array([0.05]), 2.0
    ) == pytest.approx([2.5])  # never above the rating


def _three_gens_and_a_battery(battery_mw: float):
    kind = np.array([GEN, GEN, GEN, BAT])
    cap = np.array([2.5, 2.5, 2.5, battery_mw])
    step = np.array([0.25, 0.25, 0.25, np.inf])
    ramp = np.array([0.05, 0.05, 0.05, 100.0])
    energy = np.array([0.0, 0.0, 0.0, 1.0])
    eff = np.array([1.0, 1.0, 1.0, 0.81])
    soc = np.array([np.nan, np.nan, np.nan, 1.0])
    return kind, cap, step, ramp, energy, eff, soc


def test_a_unit_trip_moves_its_load_onto_the_others_within_their_step_and_the_rest_onto_the_battery():
    kind, cap, step, ramp, energy, eff, soc = _three_gens_and_a_battery(1.5)
    prev = np.array([1.0, 1.0, 1.0, 0.0])  # 3 MW shared before the trip
    live = np.array([False, True, True, True])  # unit 0 trips
    d = sources.dispatch(3.0, kind, cap, live, prev, step, ramp, energy, eff, soc, 1.0)
    # each survivor reaches 1.0 + 0.25 + 0.05 = 1.3 MW; the battery covers 3 − 2.6 = 0.4 MW
    assert d.source_power_mw == pytest.approx([0.0, 1.3, 1.3, 0.4])
    assert d.unmet_mw == pytest.approx(0.0)
    # one second at 0.4 MW from 1 MWh at a one-way efficiency of 0.9
    assert d.battery_soc_frac[3] == pytest.approx(1.0 - 0.4 / 3600.0 / 0.9)
    # a second later the survivors reach 1.3 + 0.25 + 0.05 = 1.6 MW each: they carry the 3 MW and
    # recharge the battery with the 0.2 MW of spare reach
    d2 = sources.dispatch(3.0, kind, cap, live, d.source_power_mw, step, ramp, energy, eff, d.battery_soc_frac, 1.0)
    assert d2.source_power_mw == pytest.approx([0.0, 1.6, 1.6, -0.2])
    assert d2.battery_soc_frac[3] == pytest.approx(d.battery_soc_frac[3] + 0.2 / 3600.0 * 0.9)


def test_the_battery_covers_the_step_only_within_its_power_limit():
    kind, cap, step, ramp, energy, eff, soc = _three_gens_and_a_battery(0.3)
    d = sources.dispatch(
        3.0,
        kind,
        cap,
        np.array([False, True, True, True]),
        np.array([1.0, 1.0, 1.0, 0.0]),
        step,
        ramp,
        energy,
        eff,
        soc,
        1.0,
    )
    assert d.source_power_mw[3] == pytest.approx(0.3)
    assert d.unmet_mw == pytest.approx(0.1)  # 3 − 2.6 − 0.3: left to the UPSs and the shortfall policy


def test_battery_state_of_charge_integrates_exactly_with_efficiency():
    # η = 0.81 round trip → 0.9 each way; 1 MWh store
    p, soc = sources.battery_step(0.9, 1.0, 1.0, 1.0, 0.81, 3600.0)
    assert (p, soc) == (pytest.approx(0.9), pytest.approx(0.0))  # 0.9 MWh out takes 1 MWh from the store
    p, soc = sources.battery_step(-0.5, 0.0, 1.0, 1.0, 0.81, 3600.0)
    assert (p, soc) == (pytest.approx(-0.5), pytest.approx(0.45))  # 0.5 MWh in stores 0.45 MWh
    # limits: power rating, then the energy left (the store lands exactly on empty or full)
    assert sources.battery_step(2.0, 1.0, 1.0, 1.0, 0.81, 1.0)[0] == pytest.approx(1.0)
    p, soc = sources.battery_step(0.9, 0.5, 1.0, 1.0, 0.81, 3600.0)
    assert (p, soc) == (pytest.approx(0.45), 0.0)
    p, soc = sources.battery_step(-1.0, 0.9, 1.0, 1.0, 0.81, 3600.0)
    assert (p, soc) == (pytest.approx(-0.1 / 0.9), pytest.approx(1.0))
    # a round trip returns η of the energy put in
    _, soc = sources.battery_step(-0.5, 0.2, 1.0, 1.0, 0.81, 3600.0)
    out, _ = sources.battery_step(1.0, soc, 1.0, 1.0, 0.81, 3600.0 * 10)
    assert out * 10 - 0.2 * 0.9 == pytest.approx(0.5 * 0.81)


def test_ups_ride_through_is_energy_over_load():
    energy_kwh = np.array([400.0 * 5 / 60, 400.0 * 5 / 60])  # 400 kW UPSs with 5 minutes at rated load
    frac = np.array([1.0, 1.0])
    assert sources.ride_through_s(energy_kwh, frac, np.array([200.0, 100.0])) == pytest.approx(600.0)
    carried, new = sources.ups_discharge(0.1, np.array([200.0, 200.0]), energy_kwh, frac, 60.0)
    assert carried == pytest.approx(0.1)
    assert new == pytest.approx(1.0 - 50.0 * 60 / 3600 / energy_kwh)  # 50 kW each for a minute
    # an empty UPS gives nothing; the other carries only its own share
    carried, new = sources.ups_discharge(0.1, np.array([200.0, 200.0]), energy_kwh, np.array([0.0, 1.0]), 60.0)
    assert carried == pytest.approx(0.1)  # the loaded one carries the deficit in proportion to its load
    assert new[0] == 0.0
    # more than it holds: it gives what it has and ends empty
    carried, new = sources.ups_discharge(1.0, np.array([200.0]), energy_kwh[:1], np.array([0.1]), 600.0)
    assert carried == pytest.approx(0.1 * energy_kwh[0] * 3600 / 600 / 1e3)
    assert new == pytest.approx([0.0])


def test_iso_8528_5_classes_are_ordered():
    g1, g2, g3 = (sources.ISO_8528_5_CLASSES[c] for c in ("G1", "G2", "G3"))
    assert g1.freq_dip_frac > g2.freq_dip_frac > g3.freq_dip_frac
    assert g1.freq_recovery_s > g2.freq_recovery_s > g3.freq_recovery_s


def test_swing_share_batteries_take_the_fast_part_and_generators_the_rest():
    kind = np.array([GEN, GEN, BAT])
    cap = np.array([10.0, 10.0, 2.0])
    power = np.array([5.0, 5.0, 0.0])
    live = np.ones(3, dtype=bool)
    step = np.array([0.5, 0.5, np.inf])
    ramp = np.array([0.1, 0.1, 50.0])
    sh = sources.swing_share(
        3.0,
        30.0,
        1.0,
        kind,
        cap,
        power,
        live,
        step,
        ramp,
        np.array([0.0, 0.0, 1.0]),
        np.array([1.0, 1.0, 0.81]),
        np.array([np.nan, np.nan, 0.5]),
    )
    assert sh.share_mw == pytest.approx([0.5, 0.5, 2.0])  # battery up to its spare 2 MW, the rest by capacity
    assert sh.limit_mw == pytest.approx([0.6, 0.6, 2.0])  # step 0.5 + 0.1 MW/s × 1 s phase
    assert not sh.over_limit.any() and sh.within_limits
    assert sh.ramp_mw_per_s == pytest.approx(np.array([0.5, 0.5, 2.0]) / 0.1)  # edge = 3 MW / 30 MW/s
    assert sh.battery_exhaust_s == pytest.approx(0.5 * 0.9 * 3600 / 2.0)  # idle battery: only its share drains it
    busy = sources.swing_share(
        3.0,
        30.0,
        1.0,
        kind,
        cap,
        np.array([5.0, 5.0, 1.0]),
        live,
        step,
        ramp,
        np.array([0.0, 0.0, 1.0]),
        np.array([1.0, 1.0, 0.81]),
        np.array([np.nan, np.nan, 0.5]),
    )
    assert busy.share_mw == pytest.approx([1.0, 1.0, 1.0])  # 1 MW of spare battery power
    assert busy.battery_exhaust_s == pytest.approx(0.5 * 0.9 * 3600 / 2.0)  # 1 MW output + 1 MW share
    # a battery asked to ramp faster than its inverters is past its limits
    slow = sources.swing_share(
        3.0,
        30.0,
        1.0,
        kind,
        cap,
        power,
        live,
        step,
        np.array([0.1, 0.1, 5.0]),
        np.array([0.0, 0.0, 1.0]),
        np.array([1.0, 1.0, 0.81]),
        np.array([np.nan, np.nan, 0.5]),
    )
    assert slow.over_limit.tolist() == [False, False, True] and not slow.within_limits  # 20 MW/s asked of it
    # a bigger swing runs the generators past their step and ramp
    big = sources.swing_share(
        5.0,
        50.0,
        1.0,
        kind,
        cap,
        power,
        live,
        step,
        ramp,
        np.array([0.0, 0.0, 1.0]),
        np.array([1.0, 1.0, 0.81]),
        np.array([np.nan, np.nan, 0.5]),
    )
    assert big.over_limit.tolist() == [True, True, False]
    assert big.unfollowed_mw == pytest.approx(2 * (1.5 - 0.6))


def test_a_unit_takes_its_next_full_step_only_after_its_recovery_time():
    """A G2 unit (recovery 6 s: the voltage's, longer than the frequency's 5 s), 25 % step of 2.5 MW, 0.05 MW/s.

    From idle to a 2.5 MW demand at 1-s ticks: the first tick takes the full 0.625 MW step; after
    it the bucket refills at 1/6 step a second, so the unit climbs 0.625/6 + 0.05 = 0.154 MW/s and
    reaches full load at the 13th tick, not the 4th of a full step every tick.
    """
    kind, cap, step, ramp = np.array([GEN]), np.array([2.5]), np.array([0.625]), np.array([0.05])
    rec = sources.recovery_s(["G2"], 1)
    assert rec == pytest.approx([6.0])
    out, ready, outputs = np.zeros(1), np.ones(1), []
    for _ in range(14):
        d = sources.dispatch(
            2.5,
            kind,
            cap,
            np.ones(1, bool),
            out,
            step,
            ramp,
            np.zeros(1),
            np.ones(1),
            np.full(1, np.nan),
            1.0,
            rec,
            ready,
        )
        out, ready = d.source_power_mw, d.step_ready_frac
        outputs.append(float(out[0]))
    assert outputs[0] == pytest.approx(0.675) and outputs[1] == pytest.approx(0.675 + 0.625 / 6 + 0.05)
    assert outputs[11] < 2.5 and outputs[12] == pytest.approx(2.5)
    # without the recovery time (the old behaviour): 0.675 MW a tick, full load at the 4th
    old = np.zeros(1)
    for _ in range(4):
        old = sources.dispatch(
            2.5, kind, cap, np.ones(1, bool), old, step, ramp, np.zeros(1), np.ones(1), np.full(1, np.nan), 1.0
        ).source_power_mw
    assert old == pytest.approx([2.5])


def test_a_unit_held_back_by_its_recovering_step_is_flagged_and_long_ticks_take_many_steps():
    kind, cap, step, ramp = np.array([GEN]), np.array([2.5]), np.array([0.625]), np.array([0.05])
    rec, args = np.array([6.0]), (np.zeros(1), np.ones(1), np.full(1, np.nan))
    d = sources.dispatch(2.5, kind, cap, np.ones(1, bool), np.array([0.5]), step, ramp, *args, 1.0, rec, np.zeros(1))
    assert d.step_limited[0] and d.source_power_mw[0] == pytest.approx(0.5 + 0.625 / 6 + 0.05)
    assert d.step_ready_frac[0] == pytest.approx(0.0)
    # a 60 s tick refills ten steps: the unit reaches its rating within the tick
    d = sources.dispatch(2.5, kind, cap, np.ones(1, bool), np.zeros(1), step, ramp, *args, 60.0, rec, np.zeros(1))
    assert d.source_power_mw[0] == pytest.approx(2.5) and not d.step_limited[0]


def test_the_grid_is_stiff_up_to_its_import_limit():
    """A grid with a 1 MW/s (contract) ramp still carries a 6 MW jump in one tick, up to its 8 MW."""
    grid = SOURCE_KINDS.index("grid")
    kind, cap = np.array([grid]), np.array([8.0])
    d = sources.dispatch(
        6.0,
        kind,
        cap,
        np.ones(1, bool),
        np.zeros(1),
        np.array([np.inf]),
        np.array([1.0]),
        np.zeros(1),
        np.ones(1),
        np.full(1, np.nan),
        1.0,
        np.zeros(1),
        np.ones(1),
    )
    assert d.source_power_mw == pytest.approx([6.0]) and d.unmet_mw == 0.0
    d = sources.dispatch(
        9.0,
        kind,
        cap,
        np.ones(1, bool),
        np.zeros(1),
        np.array([np.inf]),
        np.array([1.0]),
        np.zeros(1),
        np.ones(1),
        np.full(1, np.nan),
        1.0,
    )
    assert d.source_power_mw == pytest.approx([8.0]) and d.unmet_mw == pytest.approx(1.0)


def test_with_a_live_grid_the_swing_lands_on_the_grid_not_on_the_units():
    grid = SOURCE_KINDS.index("grid")
    kind = np.array([grid, GEN, GEN])
    cap, power = np.array([8.0, 2.5, 2.5]), np.array([5.0, 2.0, 2.0])
    share = sources.swing_share(
        2.0,
        4.0,
        1.0,
        kind,
        cap,
        power,
        np.ones(3, bool),
        np.array([np.inf, 0.625, 0.625]),
        np.array([1.0, 0.05, 0.05]),
        np.zeros(3),
        np.ones(3),
        np.full(3, np.nan),
    )
    assert share.share_mw == pytest.approx([2.0, 0.0, 0.0])
    assert share.over_limit.tolist() == [True, False, False]  # 4 MW/s against the contract's 1 MW/s
    islanded = sources.swing_share(
        2.0,
        4.0,
        1.0,
        kind,
        cap,
        power,
        np.array([False, True, True]),
        np.array([np.inf, 0.625, 0.625]),
        np.array([1.0, 0.05, 0.05]),
        np.zeros(3),
        np.ones(3),
        np.full(3, np.nan),
    )
    assert islanded.share_mw == pytest.approx([0.0, 1.0, 1.0])

"""Tests of twin/engine/tick.py: energy balance, failure scenarios, stability, snapshot contract."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from tests.twin.tiny_site import A2, B1, tiny_site
from twin.engine import tick as en
from twin.engine.snapshot import GPU_DOWN, GPU_OK, GPU_THROTTLED
from twin.engine.tick import TickInputs, TwinEngine
from twin.site.load import load_site


@pytest.fixture()
def tiny():
    return TwinEngine(tiny_site())


def test_snapshot_has_every_field_with_the_right_shapes(tiny):
    snap = tiny.tick(1.0)
    s = tiny.state
    sizes = {
        "gpu": s.n_gpus,
        "rack": s.n_racks,
        "cdu": s.n_cdus,
        "loop": len(s.loop_name),
        "power": s.n_power,
        "source": s.n_sources,
        "link": s.n_links,
    }
    prefixes = {
        "gpu_": "gpu",
        "hbm_": "gpu",
        "sm_": "gpu",
        "throttle_": "gpu",
        "last_xid_": "gpu",
        "rack_": "rack",
        "cdu_": "cdu",
        "coolant_": "cdu",
        "pumps_": "cdu",
        "loop_": "loop",
        "power_": "power",
        "feed_": "power",
        "load_": "power",
        "source_": "source",
        "battery_": "source",
        "link_": "link",
    }
    for f in dataclasses.fields(snap):
        value = getattr(snap, f.name)
        if isinstance(value, np.ndarray):
            kind = next(k for p, k in prefixes.items() if f.name.startswith(p))
            assert value.shape == (sizes[kind],), f.name
            if f.name != "battery_soc_frac":
                assert np.isfinite(value.astype(float)).all() or f.name == "rack_time_to_throttle_s", f.name
    assert snap.ts.tzinfo is not None and snap.jobs == []
    assert (snap.gpu_state == GPU_OK).all() and (snap.throttle_frac == 1.0).all()
    assert 40.0 < snap.gpu_temp_c.mean() < 60.0  # liquid-cooled H100 under load: 41–50 °C [CoolingMatters-2025]


def test_facility_power_is_it_losses_cooling_network_and_overhead(tiny):
    snap = tiny.tick(1.0)
    assert snap.it_power_mw == pytest.approx(snap.rack_power_kw.sum() / 1e3)
    b = tiny.detail.balance
    assert snap.facility_power_mw == pytest.approx(
        b.it_mw + b.distribution_loss_mw + b.cooling_mw + b.network_mw + b.overhead_mw
    )
    assert snap.pue_ratio > 1.0 and b.distribution_loss_mw > 0.0
    assert snap.source_power_mw.sum() == pytest.approx(snap.facility_power_mw)
    # CDU pumps by the affinity laws: the pumps running share the design flow, so each CDU draws one
    # pump's rated power at its design flow, (flow / design)³ of it below
    design = tiny.cooling.cdu_design_flow_lpm
    expected = np.where(snap.pumps_running_count > 0, 0.75 * (snap.coolant_flow_lpm / design) ** 3, 0.0).sum()
    assert tiny.detail.cooling_kw["cdu_pumps_kw"] == pytest.approx(expected)
    assert expected == pytest.approx(0.75 * tiny.state.n_cdus)


def test_temperature_rises_with_utilisation(tiny):
    low = tiny.tick(3600.0, TickInputs(gpu_util_frac=0.3)).gpu_temp_c.mean()
    high = tiny.tick(3600.0, TickInputs(gpu_util_frac=1.0)).gpu_temp_c.mean()
    assert high > low + 10.0


def test_loss_of_a_cdu_heats_its_rack_to_throttle_then_shutdown(tiny):
    pumps = np.array([0, 2, 2, 2])
    times = []
    for step in range(120):
        snap = tiny.tick(1.0, TickInputs(pumps_running_count=pumps))
        rack0 = snap.gpu_state[:16]
        if (rack0 == GPU_THROTTLED).any() and not times:
            times.append(step + 1)
    assert snap.coolant_flow_lpm[0] == 0.0
    assert (snap.gpu_state[:16] == GPU_DOWN).all() and (snap.last_xid_code[:16] == 79).all()
    assert (snap.gpu_state[16:] == GPU_OK).all()
    assert snap.gpu_power_w[:16].sum() == 0.0
    assert 20 < times[0] < 60  # adiabatic at ~640 W into ~950 J/K from ~50 °C: about 55 s to 87 °C
    assert tiny.detail.clock_event_mask[16] == 0


def test_failed_busway_darkens_its_single_fed_rack(tiny):
    snap = tiny.tick(1.0, TickInputs(failed_power=[A2]))
    assert list(tiny.detail.dark_racks) == [3]
    assert snap.rack_power_kw[3] == 0.0 and (snap.gpu_state[48:] == GPU_DOWN).all()
    assert snap.feed_power_kw[A2] == 0.0
    assert snap.rack_power_kw[2] > 0.0 and (snap.gpu_state[32:48] == GPU_OK).all()
    assert snap.last_xid_code.max() == 0  # dark, not thermally shut down


def test_n1_fraction_and_failed_busway_moves_load(tiny):
    healthy = tiny.tick(1.0)
    assert (healthy.power_n1_load_frac >= healthy.load_frac - 1e-12).all()
    usable = tiny.const.topo.usable_kw
    assert tiny.detail.power_headroom_kw == pytest.approx(usable - healthy.feed_power_kw)
    assert tiny.detail.power_n1_headroom_kw == pytest.approx(usable * (1.0 - healthy.power_n1_load_frac))
    failed = tiny.tick(1.0, TickInputs(failed_power=[B1]))
    a1 = 6  # racks 0 and 1 now draw everything from A1 (on half their PSUs: slightly different losses)
    assert failed.feed_power_kw[a1] == pytest.approx(failed.rack_power_kw[:2].sum())
    assert failed.feed_power_kw[a1] == pytest.approx(2 * healthy.feed_power_kw[a1], rel=0.02)


def test_site_balance_gives_a_power_cap_when_supply_is_short():
    """80 kW of sources for 64 GPUs at full load: the site's cap policy finds the cap (settling included)."""
    eng = TwinEngine(tiny_site(grid_mw=0.04, gen_mw=0.04))
    full = TickInputs(gpu_util_frac=1.0)
    eng.settle(full)
    snap = eng.tick(1.0, full)
    b = eng.detail.balance
    assert b.gpus_at_full_power < 64 and b.cap_fits
    assert 200.0 < snap.policy_gpu_cap_w < 700.0 and snap.n_gpus_shed == 0
    assert snap.gpu_power_w.max() <= snap.policy_gpu_cap_w
    # the policy aims 1 % under the supply; the linear estimate of the balance agrees within a few watts
    assert 0.08 * 0.985 <= snap.facility_power_mw <= 0.08
    assert b.power_cap_w == pytest.approx(snap.policy_gpu_cap_w, abs=15.0)
    assert (eng.detail.clock_event_mask & 0x4).all()  # SW power cap everywhere
    tight = TwinEngine(tiny_site(grid_mw=0.02, gen_mw=0.02))
    snap = tight.tick(1.0)
    assert tight.detail.balance.power_cap_w == 200.0 and not tight.detail.balance.cap_fits
    assert snap.policy_gpu_cap_w == 200.0 and snap.n_gpus_shed > 0  # the minimum cap is not enough: racks shed


def test_colossus_start_supply_cannot_run_every_gpu_at_full_power():
    eng = TwinEngine(load_site("colossus"))
    snap = eng.tick(1.0)
    b = eng.detail.balance
    assert snap.generation_capacity_mw == pytest.approx(43.0)  # 8 MW grid + 14 × 2.5 MW [Colossus-Power-2024]
    assert 20_000 < b.gpus_at_full_power < 50_000
    assert b.power_cap_w == 200.0 and not b.cap_fits
    # the cap policy of the site file: every GPU at its 200 W minimum and racks shed until the site fits
    assert snap.policy_gpu_cap_w == 200.0 and 30_000 < snap.n_gpus_shed < 60_000
    assert snap.facility_power_mw <= snap.generation_capacity_mw


def test_stable_at_any_time_step(tiny):
    for dt in (1e-3, 0.5, 60.0, 1e6):
        snap = tiny.tick(dt, TickInputs(gpu_util_frac=np.random.default_rng(0).uniform(0, 1, 64)))
        assert np.isfinite(snap.gpu_temp_c).all() and snap.gpu_temp_c.max() < 87.0
    with pytest.raises(ValueError, match="dt_s"):
        tiny.tick(-1.0)


def test_missing_utilisation_holds_the_previous_reading(tiny):
    tiny.tick(1.0, TickInputs(gpu_util_frac=0.5))
    util = np.full(64, 0.8)
    util[:8] = np.nan
    snap = tiny.tick(1.0, TickInputs(gpu_util_frac=util))
    assert snap.gpu_util_frac[:8] == pytest.approx(0.5) and snap.gpu_util_frac[8:] == pytest.approx(0.8)


def test_supply_override_and_link_failure(tiny):
    hot = TickInputs(loop_supply_temp_c=np.array([65.0]), failed_links=[0])
    tiny.tick(600.0, hot)  # the secondary loops warm up to the facility water first
    snap = tiny.tick(600.0, hot)
    assert (snap.gpu_state == GPU_THROTTLED).all()
    assert (tiny.detail.clock_event_mask & 0x20).all()  # SW thermal slowdown
    assert snap.gpu_temp_c.max() <= 87.0 + 1e-6
    assert not snap.link_up_flag[0] and snap.link_util_frac[0] == 0.0 and snap.link_up_flag[1:].all()
    assert np.isfinite(snap.rack_time_to_throttle_s).all()  # already throttling: 0 s


def test_clock_advances_and_explicit_ts_wins(tiny):
    t0 = tiny.ts
    assert tiny.tick(10.0).ts == t0 + timedelta(seconds=10)
    ts = t0 + timedelta(hours=6)
    assert tiny.tick(1.0, TickInputs(ts=ts)).ts == ts


def test_placed_job_reports_status_and_drives_the_swing():
    from twin.site.load import DATA_DIR
    from twin.training.jobfile import load_job

    state = load_site("demo")
    job = load_job(DATA_DIR / "jobs" / "demo-70b-1k.toml")
    eng = TwinEngine(state)
    snap = eng.tick(1.0, TickInputs(jobs=[en.PlacedJob(job, np.arange(state.n_gpus))]))
    assert len(snap.jobs) == 1 and snap.jobs[0].tokens_per_s > 0
    assert eng.detail.swing.period_s == pytest.approx(snap.jobs[0].step_time_s)


def test_twin_tick_benchmark_reports_ratio():
    from twin.benchmarks.engine import twin_tick

    out = twin_tick("demo", repeat=2)
    assert out["gpus"] == 1024 and out["tick_ms"] > 0 and out["tick_to_floor_ratio"] > 1


def test_warmer_facility_water_shrinks_cdu_capacity_and_widens_the_approach(tiny):
    cool = tiny.tick(600.0, TickInputs(loop_supply_temp_c=np.array([25.0])))
    assert cool.coolant_supply_temp_c == pytest.approx(29.0)  # the valve holds the setpoint (25 °C + 4 K approach)
    warm = tiny.tick(600.0, TickInputs(loop_supply_temp_c=np.array([38.0])))  # the secondary loop follows
    hot = tiny.tick(600.0, TickInputs(loop_supply_temp_c=np.array([42.0])))
    assert (hot.cdu_capacity_kw < warm.cdu_capacity_kw).all() and (warm.cdu_capacity_kw < cool.cdu_capacity_kw).all()
    assert (warm.coolant_supply_temp_c > 38.0).all()  # valve wide open: above the facility water
    assert ((hot.coolant_supply_temp_c - 42.0) > (warm.coolant_supply_temp_c - 38.0)).all()


def test_nonsense_inputs_raise(tiny):
    with pytest.raises(ValueError, match="gpu_util_frac"):
        tiny.tick(1.0, TickInputs(gpu_util_frac=np.ones(3)))
    with pytest.raises(ValueError, match="pumps_running_count"):
        tiny.tick(1.0, TickInputs(pumps_running_count=np.array([-1, 2, 2, 2])))
    with pytest.raises(ValueError, match="failed_power"):
        tiny.tick(1.0, TickInputs(failed_power=[99]))
    with pytest.raises(ValueError, match="liquid range"):
        tiny.tick(1.0, TickInputs(loop_supply_temp_c=np.array([150.0])))


def test_nodes_powered_off_draw_nothing_and_are_not_faults():
    from twin.engine.snapshot import GPU_DOWN, GPU_OFF
    from twin.site.load import load_site

    demo = load_site("demo")
    engine = TwinEngine(demo)
    on = engine.tick(1.0)
    off = np.zeros(demo.n_nodes, dtype=bool)
    off[demo.node_rack >= 8] = True  # the second row
    snap = engine.tick(1.0, TickInputs(nodes_off=off))
    gpus_off = off[demo.gpu_node]
    assert (snap.gpu_state[gpus_off] == GPU_OFF).all() and not (snap.gpu_state == GPU_DOWN).any()
    assert (snap.gpu_power_w[gpus_off] == 0).all() and (snap.rack_power_kw[8:] == 0).all()
    assert snap.it_power_mw == pytest.approx(on.it_power_mw / 2, rel=0.02)
    with pytest.raises(ValueError, match="nodes_off: expected shape"):
        engine.tick(1.0, TickInputs(nodes_off=off[:5]))


def test_a_degraded_thermal_interface_heats_only_its_gpus():
    from twin.site.load import load_site

    demo = load_site("demo")
    engine = TwinEngine(demo)
    base = engine.tick(3600.0)
    factor = np.ones(demo.n_gpus)
    factor[demo.gpu_rack == 3] = 2.0
    worse = engine.tick(3600.0, TickInputs(gpu_r_th_factor=factor))
    rise = worse.gpu_temp_c - base.gpu_temp_c
    assert (rise[demo.gpu_rack == 3] > 10).all() and np.allclose(rise[demo.gpu_rack != 3], 0, atol=0.5)
    assert worse.rack_time_to_throttle_s[3] <= base.rack_time_to_throttle_s[3]
    with pytest.raises(ValueError, match="gpu_r_th_factor"):
        engine.tick(1.0, TickInputs(gpu_r_th_factor=-factor))


def test_a_site_psu_curve_sets_the_racks_input_power():
    """A calibrated PSU curve (site [calibration]) is the engine's: one point less efficiency everywhere
    draws ``eff / (eff − 0.01)`` more AC input for the same DC load."""
    from twin.physics import power

    catalogue = power.PSU_EFFICIENCY_POINTS_FRAC
    lossier = dataclasses.replace(tiny_site(), psu_efficiency_points_frac=catalogue - 0.01)
    inputs = TickInputs(gpu_util_frac=0.9)
    base, site = TwinEngine(tiny_site()).tick(1.0, inputs), TwinEngine(lossier).tick(1.0, inputs)
    ratio = site.rack_power_kw / base.rack_power_kw
    lo, hi = min(catalogue / (catalogue - 0.01)), max(catalogue / (catalogue - 0.01))
    assert ((ratio > lo - 1e-9) & (ratio < hi + 1e-9)).all() and (ratio > 1.0).all()

"""Replay at the twin's 1 s cadence: inputs between frames, hall shards in parallel processes, the lean engine."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.replay.bundle import read_bundle
from ingest.replay.library import SHIPPED_DIR, validate
from ingest.replay.replay import Replayer, load_recording, recorded_job
from ingest.replay.shards import hall_shards
from ingest.replay.ticking import between
from twin.engine.tick import TickInputs, TwinEngine
from twin.site.calibration import SiteCalibration, apply_calibration
from twin.site.load import load_site, site_path

FRAMES = range(0, 13)  # the first minute: 60 one-second ticks


@pytest.fixture(scope="module")
def pump():
    bundle = read_bundle(SHIPPED_DIR / "colossus-cdu-pump-failure.ctincident")
    state = validate(bundle)
    return bundle, state, load_recording(bundle, state)


def test_between_frames_steps_switch_at_once_and_readings_are_interpolated():
    t0 = datetime(2024, 7, 22, 15, tzinfo=UTC)
    prev = TickInputs(
        ts=t0,
        gpu_util_frac=np.array([0.2, 0.9]),
        pumps_running_count=np.array([2]),
        coolant_flow_lpm=np.array([100.0]),
        loop_supply_temp_c=np.array([25.0]),
        outdoor_dry_bulb_c=30.0,
    )
    cur = TickInputs(
        ts=t0 + timedelta(seconds=5),
        gpu_util_frac=np.array([0.6, np.nan]),
        pumps_running_count=np.array([0]),
        coolant_flow_lpm=np.array([0.0]),
        loop_supply_temp_c=np.array([35.0]),
        outdoor_dry_bulb_c=None,
        failed_power=[3],
    )
    mid = between(prev, cur, 0.2)
    assert mid.ts == t0 + timedelta(seconds=1)
    assert mid.gpu_util_frac[0] == pytest.approx(0.28) and np.isnan(mid.gpu_util_frac[1])  # no reading stays none
    assert mid.coolant_flow_lpm[0] == pytest.approx(80.0) and mid.loop_supply_temp_c[0] == pytest.approx(27.0)
    assert list(mid.pumps_running_count) == [0] and mid.failed_power == [3]  # stepped: the frame that reports it
    assert mid.outdoor_dry_bulb_c is None


def test_colossus_cuts_into_two_hall_shards_covering_every_entity(pump):
    bundle, state, _ = pump
    shards = hall_shards(state, bundle.site_toml, 2)
    assert shards is not None and len(shards) == 2
    assert shards[0].gpus.start == 0 and shards[0].gpus.stop == shards[1].gpus.start
    assert shards[1].gpus.stop == state.n_gpus and shards[1].racks.stop == state.n_racks
    assert shards[1].cdus.stop == state.n_cdus and shards[1].nodes.stop == state.n_nodes
    assert [s.tables.n_gpus for s in shards] == [state.n_gpus // 2] * 2
    assert all(s.tables.power_name == state.power_name for s in shards)


def test_a_site_of_one_hall_is_not_cut():
    state = load_site("demo")
    assert hall_shards(state, site_path("demo").read_text(encoding="utf-8"), 2) is None


def _run(state, rec, bundle, workers, **kwargs):
    player = Replayer(state, rec, job=recorded_job(state, rec), workers=workers, site_toml=bundle.site_toml, **kwargs)
    return player, player.run(FRAMES)


@pytest.mark.slow
def test_shards_in_two_processes_replay_exactly_what_one_process_does(pump):
    bundle, state, rec = pump
    one_player, one = _run(state, rec, bundle, 1)
    two_player, two = _run(state, rec, bundle, 2)
    assert len(one_player.shards) == 1 and len(two_player.shards) == 2
    assert one_player.n_ticks(FRAMES) == 60
    for name in one:
        np.testing.assert_array_equal(one[name], two[name], err_msg=name)
    assert np.isfinite(one["job_tokens_per_s"]).all()


@pytest.mark.slow
def test_shards_keep_the_calibration_of_the_site(pump):
    bundle, state, rec = pump
    cal = SiteCalibration.neutral(state)
    cal.cdu_approach_delta_k[: state.n_cdus // 2] = 3.0  # the first shard's CDUs (the job runs in hall 1)
    cal.gpu_r_th_factor[: state.n_gpus // 2] = 1.5
    calibrated = apply_calibration(state, cal)
    _, one = _run(calibrated, rec, bundle, 1)
    _, two = _run(calibrated, rec, bundle, 2)
    _, plain = _run(state, rec, bundle, 1)
    np.testing.assert_array_equal(one["coolant_supply_temp_c"], two["coolant_supply_temp_c"])
    np.testing.assert_array_equal(one["rack_max_gpu_temp_c"], two["rack_max_gpu_temp_c"])
    half = state.n_cdus // 2
    rise = one["coolant_supply_temp_c"][-1] - plain["coolant_supply_temp_c"][-1]
    assert np.max(rise[:half]) > 1.0 and np.all(rise[half:] == 0.0)


@pytest.mark.slow
def test_the_lean_replay_engine_projects_what_the_twin_engine_does(pump):
    bundle, state, rec = pump
    lean = Replayer(state, rec, workers=1, site_toml=bundle.site_toml).run(FRAMES)
    full = Replayer(state, rec, workers=1, site_toml=bundle.site_toml, engine=TwinEngine).run(FRAMES)
    for name in lean:
        np.testing.assert_array_equal(lean[name], full[name], err_msg=name)


def test_a_failed_source_keeps_the_replay_in_one_process(pump):
    """With a source down the shortfall policy may cap every hall from the whole site's balance."""
    from twin.scenario.conditions import Scenario

    bundle, state, rec = pump
    assert len(Replayer(state, rec, workers=2, site_toml=bundle.site_toml).shards) == 2
    failing = Scenario(inputs=TickInputs(failed_sources=[state.source_name.index("GEN-A-01")]))
    assert len(Replayer(state, rec, workers=2, site_toml=bundle.site_toml, scenario=failing).shards) == 1
    trip = read_bundle(SHIPPED_DIR / "colossus-generator-trip.ctincident")
    trip_state = validate(trip)
    assert len(Replayer(trip_state, load_recording(trip, trip_state), workers=2, site_toml=trip.site_toml).shards) == 1

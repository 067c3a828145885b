"""Headless replay on the demo site: twin versus recording, a scenario on top, calibration on held-out frames."""

import json
import math

import numpy as np
import pytest

from ingest.replay.bundle import read_bundle
from ingest.replay.calibrate import calibrate_and_score
from ingest.replay.library import validate
from ingest.replay.metrics import fit_errors
from ingest.replay.replay import load_recording, replay
from ingest.replay.session import RecordSpec, record_synthetic
from twin.cli import main
from twin.scenario.load import parse_scenario


def test_fit_errors_match_a_hand_computed_case():
    measured, projected = np.array([10.0, 12.0, 14.0, np.nan]), np.array([11.0, 12.0, 12.0, 5.0])
    out = fit_errors(measured, projected)  # residuals -1, 0, 2; n = 3, p = 1, mean 12
    assert out["n"] == 3 and out["mean"] == 12.0
    assert out["cv_rmse"] == pytest.approx(100 * math.sqrt(5 / 2) / 12)
    assert out["nmbe"] == pytest.approx(100 * 1 / (2 * 12))
    assert math.isnan(fit_errors([1.0], [1.0])["cv_rmse"])


@pytest.fixture(scope="module")
def tim_incident(tmp_path_factory):
    """A thermal interface degrading 3× per hour on rack H1-R01-K03: the twin does not know it."""
    spec = RecordSpec(
        "demo",
        "tim-demo",
        faults=("tim:H1-R01-K03@0=3",),
        duration_s=600,
        tick_s=5,
        detail_racks=("H1-R01-K03",),
        max_detail_racks=2,
    )
    path = record_synthetic(spec, tmp_path_factory.mktemp("incidents"))
    bundle = read_bundle(path)
    return path, bundle, validate(bundle)


@pytest.mark.slow
def test_replay_follows_the_recording_where_the_twin_knows_the_physics(tim_incident):
    _, bundle, state = tim_incident
    result = replay(bundle, state)
    s = result.signals
    assert result.frames == 121 and result.duration_s == 600 and result.speed_x > 1
    assert abs(s["gpu_power_w"]["nmbe"]) < 1 and s["gpu_power_w"]["cv_rmse"] < 3
    assert s["rack_mean_gpu_power_w"]["cv_rmse"] < 1
    # the degrading interface makes the recorded temperatures run hotter than the twin projects
    assert s["gpu_temp_c"]["nmbe"] > 3
    recorded, projected = result.series["gpu_temp_c"]
    gap = np.nanmean(recorded - projected, axis=1)
    assert gap[-10:].mean() > gap[1:11].mean() + 2  # and the gap grows as the interface degrades


@pytest.mark.slow
def test_scenario_on_top_of_the_recording_changes_the_outcome(tim_incident):
    _, bundle, state = tim_incident
    base = replay(bundle, state)
    hot = parse_scenario(
        '[scenario]\nname = "no cooling on K03"\n[conditions]\ncdus_failed = ["H1-R01-K03-CDU"]\n', state
    )
    worse = replay(bundle, state, scenario=hot)
    assert base.outcome.max_gpus_down == 0
    assert worse.outcome.max_gpus_down >= 64 and worse.outcome.max_gpu_temp_c > base.outcome.max_gpu_temp_c


@pytest.mark.slow
def test_calibration_lowers_the_held_out_error(tim_incident):
    _, bundle, state = tim_incident
    out = calibrate_and_score(state, load_recording(bundle, state), 0.5)
    assert out["fit_frames"] == 60 and out["heldout_frames"] == 61  # 121 frames (both ends included)
    before, after = out["heldout_before"]["gpu_temp_c"], out["heldout_after"]["gpu_temp_c"]
    assert after["cv_rmse"] < before["cv_rmse"] - 2 and abs(after["nmbe"]) < abs(before["nmbe"])
    factors = out["calibration"].gpu_r_th_factor
    k03 = np.asarray(state.gpu_rack) == state.rack_name.index("H1-R01-K03")
    assert factors[k03].mean() > 1.05 and np.all(factors[~k03] == 1.0)  # only detail GPUs are fitted


@pytest.mark.slow
def test_replay_command_prints_speed_and_errors(tim_incident, capsys):
    path = tim_incident[0]
    assert main(["replay", str(path), "--speed", "max", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["speed_x"] > 1 and set(out["signals"]["gpu_temp_c"]) >= {"cv_rmse", "nmbe"}
    assert main(["replay", str(path), "--calibrate", "1.5"]) == 1
    assert "strictly between 0 and 1" in capsys.readouterr().err


@pytest.mark.slow
def test_speed_paces_the_replay(tim_incident):
    _, bundle, state = tim_incident
    result = replay(bundle, state, speed=300.0)  # 600 s of recording in about 2 s
    assert result.wall_s >= 600 / 300 * 0.95 and result.speed_x <= 300 * 1.05

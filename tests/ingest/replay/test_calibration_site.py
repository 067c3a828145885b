"""Calibration saved as a site version: the [calibration] block, its validation, and a replay that reproduces the fit."""

import json

import numpy as np
import pytest

from ingest.replay.session import RecordSpec, record_synthetic
from twin.cli import main
from twin.site.calibration import SiteCalibration, apply_calibration, from_block, to_block, with_block
from twin.site.catalogue import load_catalogue
from twin.site.errors import SiteError
from twin.site.load import build_site, load_site, site_path
from twin.site.schema import parse_site_file


@pytest.fixture(scope="module")
def tim_incident(tmp_path_factory):
    """A thermal interface degrading 3× per hour on rack H1-R01-K03, which the site file does not know."""
    spec = RecordSpec(
        "demo",
        "tim-cal",
        faults=("tim:H1-R01-K03@0=3",),
        duration_s=300,
        tick_s=5,
        detail_racks=("H1-R01-K03",),
        max_detail_racks=2,
    )
    return record_synthetic(spec, tmp_path_factory.mktemp("incidents"))


def _demo_text() -> str:
    return site_path("demo").read_text(encoding="utf-8")


def test_the_block_round_trips_through_the_site_file_and_applies_as_catalogue_variants():
    state = load_site("demo")
    cal = SiteCalibration.neutral(state)
    cal.cdu_approach_delta_k[2] = 1.25
    cal.gpu_r_th_factor[[0, 1, 9]] = [1.5, 1.5, 0.8]
    cal.heat_capacity_factor = 1.5
    loaded = build_site(with_block(_demo_text(), state, cal), "demo+cal", load_catalogue())
    assert len(loaded.gpu_specs) == len(state.gpu_specs) + 2  # one variant per distinct factor
    r = loaded.gpu_spec_array("r_th_die_c_per_w") / state.gpu_spec_array("r_th_die_c_per_w")
    np.testing.assert_allclose(r, cal.gpu_r_th_factor)
    np.testing.assert_allclose(
        loaded.gpu_spec_array("heat_capacity_j_per_k"), 1.5 * state.gpu_spec_array("heat_capacity_j_per_k")
    )
    np.testing.assert_allclose(
        loaded.cdu_spec_array("approach_k") - state.cdu_spec_array("approach_k"), cal.cdu_approach_delta_k
    )
    spec, _ = parse_site_file(with_block(_demo_text(), state, cal), "x")
    again = from_block(state, spec.calibration, "x")
    np.testing.assert_array_equal(again.gpu_r_th_factor, cal.gpu_r_th_factor)
    assert with_block(with_block(_demo_text(), state, cal), state, cal).count("[calibration]") == 1
    np.testing.assert_array_equal(apply_calibration(state, SiteCalibration.neutral(state)).gpu_spec, state.gpu_spec)


@pytest.mark.parametrize(
    "block, message",
    [
        ('cdus = ["NOPE"]\ncdu_approach_delta_k = [1.0]\n', "unknown CDU 'NOPE'"),
        ('gpus = ["nohost/0"]\ngpu_r_th_factor = [1.0]\n', "unknown GPU 'nohost/0'"),
        ('cdus = ["H1-R01-K01-CDU"]\ncdu_approach_delta_k = []\n', "1 cdus but 0 cdu_approach_delta_k"),
        ("gpus = []\ngpu_r_th_factor = []\nheat_capacity_factor = 50.0\n", "heat_capacity_factor"),
        ('gpus = ["x/0"]\ngpu_r_th_factor = [0.0]\n', "gpu_r_th_factor"),
        ("gpus = [" + ", ".join(['"h/0"'] * 20000) + "]\ngpu_r_th_factor = []\n", "gpus"),
    ],
)
def test_a_bad_calibration_block_is_one_clear_error(block, message):
    with pytest.raises(SiteError) as err:
        build_site(_demo_text() + "\n[calibration]\n" + block, "bad.toml", load_catalogue())
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_saved_calibration_is_a_new_site_version_that_replays_to_the_held_out_errors(tim_incident, tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'store.db'}"
    path = str(tim_incident)
    assert main(["replay", path, "--calibrate", "0.5", "--save-calibration", "--db", db, "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["saved_site_version"] == 1 and fitted["site"] == "demo"
    assert fitted["calibration"]["parameters"]["gpu_r_th_factor"]["max"] > 1.03  # the degrading interface is seen
    assert main(["replay", path, "--site-version", "1", "--heldout", "0.5", "--db", db, "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    for name, errors in fitted["signals"].items():
        for key in ("cv_rmse", "nmbe"):
            if errors[key] is None:
                assert saved["signals"][name][key] is None
            else:
                assert saved["signals"][name][key] == pytest.approx(errors[key], rel=1e-9, abs=1e-9), name
    assert main(["replay", path, "--site-version", "7", "--db", db]) == 1
    assert "no such version of site 'demo'" in capsys.readouterr().err
    assert main(["replay", path, "--save-calibration"]) == 1
    assert "needs --calibrate" in capsys.readouterr().err


def test_to_block_names_only_fitted_entities():
    state = load_site("demo")
    cal = SiteCalibration.neutral(state)
    cal.gpu_r_th_factor[8] = 1.2
    text = to_block(state, cal)
    assert f'gpus = ["{state.node_name[1]}/0"]' in text and "cdus = []" in text

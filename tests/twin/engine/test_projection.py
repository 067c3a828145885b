"""Scenario files and the site projection behind ``clustertwin project``."""

import json

import numpy as np
import pytest

from tests.twin.engine.test_power_sources import colossus_job_full_power_step_s
from twin.cli import main
from twin.scenario.conditions import Scenario, ScenarioError
from twin.scenario.load import parse_scenario
from twin.scenario.projection import project
from twin.site.load import load_site


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


@pytest.fixture(scope="module")
def baseline(demo):
    return project(demo, Scenario())


def test_baseline_balance_closes(baseline):
    b = baseline
    parts = b.it_power_mw + b.distribution_loss_mw + b.cooling_power_mw + b.network_power_mw
    assert b.facility_power_mw == pytest.approx(parts + 0.02, rel=1e-6)  # + site overhead of the demo file
    assert b.pue_ratio == pytest.approx(b.facility_power_mw / (b.it_power_mw + b.network_power_mw))
    assert b.generation_capacity_mw == pytest.approx(0.6 + 2 * 0.25 + 0.5)
    assert 0 < b.n_gpus_runnable_at_full_power <= 1024
    assert b.job.name == "demo-70b-1k" and b.job.tokens_per_s > 0


def test_losing_one_side_keeps_racks_up_losing_both_darkens_them(demo, baseline):
    sc = parse_scenario('[conditions]\nfailed_power = ["H1-UPS1-A"]\n', demo, "ups.toml")
    out = project(demo, sc)
    assert out.dark_racks == []  # B side carries every rack
    assert out.it_power_mw == pytest.approx(baseline.it_power_mw, rel=0.01)
    both = parse_scenario('[conditions]\nfailed_power = ["H1-BW-R01-A", "H1-BW-R01-B"]\n', demo, "row.toml")
    dark = project(demo, both).dark_racks
    assert dark == [f"H1-R01-K{k:02d}" for k in range(1, 9)]


def test_cooling_loss_shortens_time_to_throttle(demo, baseline):
    sc = parse_scenario(
        "[scenario]\nsettle_s = 120\n[conditions]\nloop_supply_temp_c = { FW-H1 = 40.0 }\n", demo, "hot.toml"
    )
    hot = project(demo, sc)
    assert hot.hottest_racks[0].rack_max_gpu_temp_c > baseline.hottest_racks[0].rack_max_gpu_temp_c + 5
    base_t = baseline.time_to_throttle_s["cdu_loss_throttle_s"].min_s
    assert hot.time_to_throttle_s["cdu_loss_throttle_s"].min_s < base_t


def test_a_power_cap_lowers_it_load(demo, baseline):
    capped = project(demo, parse_scenario("[conditions]\ngpu_power_limit_w = 400\n", demo, "cap.toml"))
    assert capped.it_power_mw < baseline.it_power_mw * 0.85


@pytest.mark.parametrize(
    "text, message",
    [
        ("[conditions]\nfailed_power = ['H9-UPS']\n", "conditions.failed_power: 'H9-UPS' is not in this site"),
        ("[conditions]\ngpu_util_frac = 1.5\n", r"conditions.gpu_util_frac: expected a number in \[0.0, 1.0\]"),
        ("[conditions]\ngpu_power_limit_w = 900\n", "gpu_power_limit_w"),
        ("[conditions]\nfans = 3\n", "conditions.fans: unknown key"),
        ("[weather]\n", "unknown section 'weather'"),
        ("[scenario]\ntime = '2024-07-22T20:00:00'\n", "needs a time zone"),
        ("[conditions\n", "not valid TOML"),
    ],
)
def test_bad_scenarios_name_the_key(demo, text, message):
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(text, demo, "bad.toml")


def test_project_command_prints_json_with_the_issue_fields(tmp_path, capsys):
    path = tmp_path / "trip.toml"
    path.write_text('[scenario]\nname = "trip"\n[conditions]\nfailed_sources = ["GEN-01"]\n')
    assert main(["project", "--site", "demo", "--scenario", str(path), "--json"]) == 0
    both = json.loads(capsys.readouterr().out)
    out = both["scenario"]
    for key in (
        "it_power_mw",
        "facility_power_mw",
        "generation_capacity_mw",
        "n_gpus_runnable_at_full_power",
        "power_cap_for_all_gpus_w",
        "n1_violations",
        "hottest_gpus",
        "hottest_racks",
        "time_to_throttle_s",
        "swing",
        "fabric",
        "job",
    ):
        assert key in out and key in both["baseline"], key
    assert out["scenario"] == "trip" and out["generation_capacity_mw"] == pytest.approx(1.35)
    assert both["diff"]["headline"]["generation_capacity_mw"]["change"] == "worse"
    path.write_text('[conditions]\nfailed_sources = ["GEN-9"]\n')
    assert main(["project", "--site", "demo", "--scenario", str(path)]) == 2
    assert "'GEN-9' is not in this site" in capsys.readouterr().err


@pytest.mark.slow
def test_colossus_at_training_start_runs_its_job_at_full_power():
    """43 MW cannot carry 100k GPUs, but the GPUs outside the job have no work: they go before the job slows.

    The site file powers the idle nodes off; without that, the cap policy sheds their racks
    first and never caps the job.  Either way the job runs at its full-power step (8.37 s, the
    step of `throughput --site colossus`); before this order the policy capped every GPU at 200 W.
    """
    colossus = load_site("colossus")
    assert colossus.idle_nodes_off
    lean = project(colossus, Scenario())
    assert lean.gpus.n_gpus_off == colossus.n_gpus - lean.job.n_gpus
    assert not lean.shortfall_policy.policy_active_flag and lean.shortfall_mw == 0
    assert lean.job.step_time_s == pytest.approx(colossus_job_full_power_step_s(), rel=1e-6)
    assert 20_000 < lean.n_gpus_runnable_at_full_power < 40_000
    on = project(colossus, parse_scenario("[conditions]\nidle_nodes_off = false\n", colossus, "on.toml"))
    policy = on.shortfall_policy
    assert policy.policy_active_flag and policy.policy_gpu_cap_w is None and policy.n_racks_shed > 0
    job_racks = {colossus.rack_name[r] for r in np.unique(colossus.gpu_rack[np.arange(lean.job.n_gpus)])}
    assert on.gpus.n_gpus_throttled == 0 and on.job.step_time_s == pytest.approx(lean.job.step_time_s)
    assert on.facility_power_mw <= on.generation_capacity_mw and on.shortfall_mw == 0
    assert len(job_racks) == 384 and on.gpus.n_gpus_off == 64 * policy.n_racks_shed

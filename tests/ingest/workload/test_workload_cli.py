"""``clustertwin workload``: strict JSON with the promised fields, comparisons, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO_DIR


def _cli(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "twin.cli", *args], cwd=REPO_DIR, capture_output=True, text=True, timeout=timeout
    )


REQUIRED = (
    "jobs_count",
    "jobs_completed_count",
    "mean_wait_s",
    "median_wait_s",
    "mean_turnaround_s",
    "utilisation_frac",
    "fragmentation_frac",
    "energy_mwh",
    "sim_wall_s",
    "teams",
)


@pytest.mark.slow
def test_simulate_a_generated_mix_on_demo_as_strict_json():
    done = _cli(
        "workload", "simulate", "--site", "demo", "--generate", "llm-lab:jobs=400,n_pretrain=0", "--days", "1", "--json"
    )
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)  # json.loads accepts NaN: check the text too
    assert "NaN" not in done.stdout and "Infinity" not in done.stdout
    assert all(k in rep for k in REQUIRED)
    assert rep["jobs_count"] == 400 and rep["teams"] and rep["energy_mwh"] > 0


@pytest.mark.slow
def test_compare_runs_two_policies_on_the_same_workload(fixtures_dir):
    trace = fixtures_dir / "job-traces" / "tiresias-60_job.csv"
    done = _cli(
        "workload",
        "simulate",
        "--site",
        "demo",
        "--workload",
        str(trace),
        "--days",
        "1",
        "--policy",
        "fcfs",
        "--backfill",
        "none",
        "--power",
        "off",
        "--failures",
        "off",
        "--compare",
        "backfill=easy",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    assert rep["a"]["policy"]["backfill"] == "none" and rep["b"]["policy"]["backfill"] == "easy"
    assert rep["a"]["jobs_count"] == rep["b"]["jobs_count"] == 60


@pytest.mark.slow
def test_scenario_with_reservation_dr_and_tariff(tmp_path, fixtures_dir):
    sc = tmp_path / "s.toml"
    sc.write_text(
        "[policy]\nbf_interval_s = 0\n"
        '[[reservations]]\nname = "maint"\nstart_h = 1\nend_h = 3\nracks = ["*"]\n'
        "[[demand_response]]\nstart_h = 4\nduration_h = 1\ncut_mw = 0.1\n"
        "[tariff]\nusd_per_mwh = [40, 60]\n[carbon]\nkg_per_mwh = [400]\n"
    )
    trace = fixtures_dir / "job-traces" / "tiresias-60_job.csv"
    done = _cli(
        "workload",
        "simulate",
        "--site",
        "demo",
        "--workload",
        str(trace),
        "--days",
        "0.5",
        "--scenario",
        str(sc),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    assert rep["cost_usd"] > 0 and rep["carbon_kg"] == pytest.approx(400 * rep["energy_mwh"])
    assert len(rep["demand_response"]) == 1


@pytest.mark.slow
def test_import_and_show(tmp_path, fixtures_dir):
    out = tmp_path / "g.parquet"
    done = _cli("workload", "import", str(fixtures_dir / "job-traces" / "gavel-msr-seed0"), "--out", str(out), "--json")
    assert done.returncode == 0, done.stderr and out.is_file()
    assert json.loads(done.stdout)["jobs_count"] == 15264
    shown = _cli("workload", "show", str(out), "--json")
    assert json.loads(shown.stdout)["jobs_count"] == 15264


@pytest.mark.parametrize(
    "args, message",
    [
        (("workload", "simulate", "--site", "demo", "--workload", "/nonexistent.swf", "--days", "1"), "file not found"),
        (("workload", "simulate", "--site", "demo", "--generate", "llm-lab", "--days", "0"), "--days"),
        (("workload", "simulate", "--site", "demo", "--generate", "other", "--days", "1"), "unknown mix"),
        (("workload", "simulate", "--site", "demo", "--generate", "llm-lab:jobs=x", "--days", "1"), "whole number"),
        (("workload", "show", "/dev/null", "--format", "tiresias"), "not a Tiresias trace"),
    ],
)
@pytest.mark.slow
def test_bad_input_is_one_error_line_and_exit_2(args, message):
    done = _cli(*args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


@pytest.mark.slow
def test_a_job_larger_than_the_site_is_reported_not_crashed_on(tmp_path):
    p = tmp_path / "big.toml"
    p.write_text('[[jobs]]\nid = "huge"\nteam = "a"\nuser = "u"\nsubmit_s = 0\ngpus = 200000\nwall_s = 10\nrun_s = 5\n')
    done = _cli("workload", "simulate", "--site", "demo", "--workload", str(p), "--days", "1", "--json")
    assert done.returncode == 0, done.stderr
    rep = json.loads(done.stdout)
    assert rep["jobs_never_count"] == 1 and rep["jobs_too_large_count"] == 1

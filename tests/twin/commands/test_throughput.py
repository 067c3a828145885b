"""Tests of the ``throughput`` sub-command, run through the ``clustertwin`` entry point."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from twin.cli import main
from twin.training import goodput, report
from twin.training import steptime as training
from twin.training.jobfile import load_job

REPO = Path(__file__).resolve().parents[3]
LLAMA = REPO / "data" / "jobs" / "llama3-405b-16k.toml"
KEYS = {
    "step_time_s",
    "tokens_per_s",
    "gpu_model_tflops",
    "mfu_frac",
    "tokens_per_j",
    "breakdown_s",
    "job_mttf_h",
    "checkpoint_interval_s",
    "interruptions_expected_count",
    "ettr_frac",
    "goodput_tokens_per_s",
}


def run(argv: list[str]) -> int:
    return main(argv)


def strict_json(text: str):
    """Parse JSON refusing NaN and ±Infinity, which Python's parser accepts by default."""

    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_json_output_has_the_contract_keys(capsys):
    assert run(["throughput", "--job", str(LLAMA), "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert KEYS <= set(out)
    assert set(out["breakdown_s"]) == {
        "compute",
        "stage_imbalance",
        "tp_comm",
        "pp_comm",
        "dp_comm",
        "cp_comm",
        "ep_comm",
        "bubble",
        "throttle_loss",
    }
    assert sum(out["ops_s"].values()) == pytest.approx(out["breakdown_s"]["compute"])
    assert out["n_stage_layers"] == [7] + [8] * 14 + [7]  # 126 layers on 16 stages, as published
    assert out["schedule"] == "interleaved" and out["n_virtual_stages"] == 6  # fitted (twin/training/fit.py)
    assert sum(out["breakdown_s"].values()) == pytest.approx(out["step_time_s"])
    assert out["goodput_tokens_per_s"] == pytest.approx(out["tokens_per_s"] * out["ettr_frac"])
    # the catalogue's H100 rate (Llama 3's 356 hardware interruptions in 54 days, 0.4024 per 1,000
    # GPU-days) plus the software rate per node (63 in 54 days on 2,048 nodes): 419 in 54 days
    assert out["job_mttf_h"] == pytest.approx(24 / (0.4024 * 16.384 + 63 / 54), rel=1e-4)
    assert out["job_mttf_h"] == pytest.approx(54 * 24 / 419, rel=1e-3)
    causes = out["interruptions_per_day_by_cause"]
    assert set(causes) == {"gpu_nvlink", "hbm", "nic_optics", "host", "software"}
    assert causes["hbm"] == pytest.approx(0.4024 * 16.384 * 72 / 356)
    assert causes["software"] == pytest.approx(63 / 54)
    # 405.9 B parameters × 14 B over 2 TB/s write and 7 TB/s read (the job file's storage)
    assert out["checkpoint_write_s"] == pytest.approx(out["n_params"] * 14 / 2e12)
    assert out["checkpoint_restore_s"] == pytest.approx(out["n_params"] * 14 / 7e12)


def test_report_matches_the_models():
    job = load_job(LLAMA)
    rep = report.throughput_report(job)
    step = training.step_time(job.model, job.parallel, job.hardware, report.fabric_factors(job))
    assert rep["step_time_s"] == step.step_time_s
    write = goodput.checkpoint_write_s(training.parameter_count(job.model), job.reliability.storage_write_gbps)
    assert rep["checkpoint_write_s"] == pytest.approx(write)


def test_oversubscription_slows_cross_pod_dp():
    job = load_job(REPO / "data" / "jobs" / "llama3-405b-128k-context.toml")
    # DP groups stride 8·16·16 = 2,048 GPUs: one member per 3,072-GPU pod → 1/7 at 1:7
    assert report.fabric_factors(job).dp == pytest.approx(1 / 7)


def test_table_output(capsys):
    assert run(["throughput", "--job", str(LLAMA)]) == 0
    out = capsys.readouterr().out
    assert "MFU" in out and "dp_comm" in out and "goodput tokens/s" in out


def test_bad_job_file_returns_2_and_names_field(tmp_path, capsys):
    text = LLAMA.read_text().replace("global_batch = 2048", "global_batch = 2047")
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    assert run(["throughput", "--job", str(bad), "--json"]) == 2
    assert "parallel.global_batch" in capsys.readouterr().err


def test_site_option_places_the_job_on_the_demo_site(tmp_path, capsys):
    text = (REPO / "data" / "jobs" / "megatron-18b-a100.toml").read_text()
    job = tmp_path / "small.toml"
    job.write_text(text.replace("dp = 32", "dp = 128").replace("global_batch = 1024", "global_batch = 1024"))
    assert run(["throughput", "--job", str(job), "--site", "demo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["site"] == "demo" and out["fabric_factor_dp_frac"] == 1.0 and out["n_gpus"] == 1024


def test_site_too_small_is_an_error(capsys):
    assert run(["throughput", "--job", str(LLAMA), "--site", "demo"]) == 2
    assert "16384" in capsys.readouterr().err


def _zero_failure_job(tmp_path) -> Path:
    text = LLAMA.read_text()
    assert "\n[reliability]\n" in text
    job = tmp_path / "no-failures.toml"
    # an explicit total rate of 0: nothing added for software
    text = text.replace("\n[reliability]\n", "\n[reliability]\nfailures_per_1000_node_days = 0\n", 1)
    job.write_text(text)
    return job


def test_zero_failure_rate_gives_strict_json_with_null_mttf(tmp_path, capsys):
    assert run(["throughput", "--job", str(_zero_failure_job(tmp_path)), "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["job_mttf_h"] is None and out["interruptions_expected_count"] == 0.0
    # no failures: only the one checkpoint write over the whole run is lost
    assert out["ettr_frac"] == pytest.approx(1.0, abs=1e-5)
    assert out["goodput_tokens_per_s"] == pytest.approx(out["tokens_per_s"], rel=1e-5)
    assert all(v is None or math.isfinite(v) for v in out.values() if isinstance(v, float))


def test_zero_failure_rate_table_says_never(tmp_path, capsys):
    assert run(["throughput", "--job", str(_zero_failure_job(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "never (no failures)" in out and "inf" not in out and "nan" not in out


@pytest.mark.parametrize(
    "field, value",
    [
        ("failures_per_1000_node_days", "nan"),
        ("failures_per_1000_node_days", "inf"),
        ("failures_per_1000_node_days", "1e308"),
        ("nic_gbps_per_gpu", "nan"),
        ("nic_gbps_per_gpu", "inf"),
        ("nic_gbps_per_gpu", "1e308"),
        ("peak_tflops", "inf"),
        ("peak_tflops", "-inf"),
        ("oversubscription", "nan"),
        ("oversubscription", "1e308"),
    ],
)
def test_non_finite_and_absurd_numbers_are_one_line_errors(tmp_path, capsys, field, value):
    section = {
        "failures_per_1000_node_days": "reliability",
        "nic_gbps_per_gpu": "hardware",
        "peak_tflops": "hardware",
        "oversubscription": "fabric",
    }[field]
    lines = [ln for ln in LLAMA.read_text().splitlines() if not ln.startswith(f"{field} ")]
    text = "\n".join(lines).replace(f"[{section}]", f"[{section}]\n{field} = {value}", 1)
    assert f"[{section}]" in text
    job = tmp_path / "bad.toml"
    job.write_text(text)
    assert run(["throughput", "--job", str(job), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and f"{section}.{field} must be in" in captured.err


def test_job_path_that_is_a_directory(tmp_path, capsys):
    assert run(["throughput", "--job", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err


def test_non_utf8_job_file(tmp_path, capsys):
    job = tmp_path / "latin1.toml"
    job.write_bytes(b'name = "caf\xe9"\n')
    assert run(["throughput", "--job", str(job)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not UTF-8" in err


def test_deeply_nested_job_file(tmp_path, capsys):
    job = tmp_path / "deep.toml"
    job.write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert run(["throughput", "--job", str(job)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err

"""Tests of twin/training/memory.py: the memory of a known layout by hand, pipelines, refusal and warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twin.cli import main as run
from twin.training import memory
from twin.training import steptime as training
from twin.training.jobfile import JobFileError, load_job
from twin.training.steptime import HardwareSpec, ModelSpec, ParallelSpec

REPO = Path(__file__).resolve().parents[3]
GPT = ModelSpec(layers=24, hidden=2048, heads=16, vocab=50_000, seq_len=2048)
HW = HardwareSpec(peak_tflops=1000.0, nvlink_gbps=3600.0, nic_gbps=400.0, hbm_gb=80.0)


def par(**kw) -> ParallelSpec:
    base = dict(tp=1, pp=1, dp=1, global_batch=1)
    base.update(kw)
    return ParallelSpec(**base)


def test_single_gpu_layout_by_hand():
    est = memory.job_memory(GPT, par(), HW)
    # weights: 24 layers × (12 h² + 4 h) + 2 V h (embedding and output layer) = 1,412,956,160 × 16 B
    assert est.model_states_gb == pytest.approx(1_412_956_160 * 16 / 1e9)
    # activations: s·b·h·34 per layer (Korthikanti, flash attention: no s² term) = 2048 · 2048 · 34 B × 24 layers
    assert est.activations_gb == pytest.approx(24 * 2048 * 2048 * 34 / 1e9)
    assert est.logits_gb == pytest.approx(6 * 2048 * 50_000 / 1e9)  # BF16 logits + FP32 softmax
    assert est.total_gb == pytest.approx(22.60730 + 3.42255 + 0.61440, abs=1e-4)
    assert est.usable_gb == pytest.approx(76.0) and est.fits_flag and est.states_fit_flag


def test_recompute_and_unfused_attention_by_hand():
    full = memory.job_memory(GPT, par(recompute="full"), HW)
    # each layer's input 2·s·h, plus one layer's whole set while it is recomputed
    assert full.activations_gb == pytest.approx((24 * 2 * 2048 * 2048 + 2048 * 2048 * 34) / 1e9)
    unfused = memory.job_memory(GPT, par(flash_attention=False), HW)
    # Korthikanti: s·b·h·(34 + 5·a·s/h) per layer
    assert unfused.activations_gb == pytest.approx(24 * 2048 * 2048 * (34 + 5 * 16 * 2048 / 2048) / 1e9)
    selective = memory.job_memory(GPT, par(flash_attention=False, recompute="selective"), HW)
    assert selective.activations_gb == pytest.approx(24 * 2048 * 2048 * 34 / 1e9)


def test_tensor_and_data_parallel_divide_what_they_shard():
    one = memory.job_memory(GPT, par(), HW)
    tp4 = memory.job_memory(GPT, par(tp=4), HW)
    assert tp4.model_states_gb == pytest.approx(one.model_states_gb / 4)
    assert tp4.activations_gb == pytest.approx(one.activations_gb / 4)
    fsdp = memory.job_memory(GPT, par(dp=8, global_batch=8, dp_mode="fsdp"), HW)
    assert fsdp.model_states_gb == pytest.approx(one.model_states_gb * (2 + 14 / 8) / 16)


def test_pipeline_in_flight_micro_batches():
    # 4 stages of 6 layers, 8 micro-batches: 1F1B holds 4 on the first stage; interleaved v = 2 holds
    # Megatron's warm-up 2·3 + 1·4 chunks plus one = 11 chunks of 3 layers
    p = par(pp=4, global_batch=8, schedule="1f1b")
    assert memory.job_memory(GPT, p, HW).in_flight_layers_count == 4 * 6
    q = par(pp=4, global_batch=8, schedule="interleaved", virtual_stages=2)
    assert memory.job_memory(GPT, q, HW).in_flight_layers_count == 11 * 3
    few = par(pp=4, global_batch=2, schedule="1f1b")  # only 2 micro-batches exist
    assert memory.job_memory(GPT, few, HW).in_flight_layers_count == 2 * 6


def test_published_layouts_of_the_validation_fit_their_hbm():
    for name in ("megatron-18b-a100", "megatron-145b-a100", "megatron-1t-a100", "opt-175b-992", "megascale-175b-12k"):
        job = load_job(REPO / "data" / "jobs" / f"{name}.toml")
        assert memory.job_memory(job.model, job.parallel, job.hardware).fits_flag, name


def test_a_layout_whose_model_states_cannot_fit_is_refused(tmp_path):
    text = (REPO / "data" / "jobs" / "llama3-405b-16k.toml").read_text()
    bad = tmp_path / "405b-on-tp8.toml"
    bad.write_text(text.replace("pp = 16", "pp = 1").replace("virtual_stages = 6\n", ""))
    with pytest.raises(JobFileError, match="parallel: weights, gradients and optimizer state need .* GB per GPU"):
        load_job(bad)
    assert run(["throughput", "--job", str(bad)]) == 2


def test_throughput_reports_the_estimate_and_warns_when_activations_overflow(tmp_path, capsys):
    text = (REPO / "data" / "jobs" / "demo-70b-1k.toml").read_text()
    assert "seq_len = 8192" in text
    fits = load_job(REPO / "data" / "jobs" / "demo-70b-1k.toml")
    assert memory.job_memory(fits.model, fits.parallel, fits.hardware).fits_flag
    job = tmp_path / "long.toml"
    job.write_text(text.replace("seq_len = 8192", "seq_len = 32768"))  # 4× the activations
    long = load_job(job)
    est = memory.job_memory(long.model, long.parallel, long.hardware)
    assert not est.fits_flag and est.states_fit_flag
    assert run(["throughput", "--job", str(job), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory_total_gb"] == pytest.approx(est.total_gb)
    assert out["memory_fits_flag"] == 0 and out["memory_warning"] == memory.warning(est)


def test_llama3_8k_is_reported_over_the_limit_with_a_warning(capsys, caplog):
    job = REPO / "data" / "jobs" / "llama3-405b-8k.toml"
    assert run(["throughput", "--job", str(job), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory_fits_flag"] == 0 and "GB usable of 80 GB" in out["memory_warning"]
    assert any("GB per GPU on its fullest stage" in r.getMessage() for r in caplog.records)


def test_layer_parameters_match_the_step_model():
    assert training.layer_parameter_count(GPT) == 12 * 2048**2 + 4 * 2048

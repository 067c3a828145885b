"""Tests of twin/training/jobfile.py: parsing, defaults, catalogue lookup and field-naming errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.training import jobfile
from twin.training.jobfile import JobFileError

REPO = Path(__file__).resolve().parents[3]
JOBS = sorted((REPO / "data" / "jobs").glob("*.toml"))

# Minimal catalogue for tests only (the real one is data/catalogue.toml).
TEST_CATALOGUE = """
[gpu."TEST-GPU"]
tdp_w = 500.0
min_power_limit_w = 100.0
idle_power_w = 50.0
peak_bf16_tflops = 400.0
max_sm_clock_mhz = 1500.0
max_operating_temp_c = 85.0
slowdown_temp_c = 89.0
shutdown_temp_c = 92.0
hbm_max_temp_c = 95.0
r_th_die_c_per_w = 0.04
r_th_hbm_c_per_w = 0.04
heat_capacity_j_per_k = 500.0
hbm_gb = 80.0
nvlink_gbps = 2000.0
hbm_gbyte_per_s = 2000.0
r_th_conv_frac = 0.5
hbm_power_frac = 0.15
leakage_w_per_k = 0.3

[node."TEST-NODE"]
gpu = "TEST-GPU"
base_power_w = 1234.0
"""

MINIMAL = """
[model]
layers = 8
hidden = 1024
heads = 16
vocab = 32000
seq_len = 2048

[parallel]
tp = 2
pp = 2
dp = 4
global_batch = 32

[hardware]
gpu = "TEST-GPU"
"""


@pytest.fixture
def catalogue(tmp_path) -> Path:
    path = tmp_path / "catalogue.toml"
    path.write_text(TEST_CATALOGUE)
    return path


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "job.toml"
    path.write_text(text)
    return path


def test_minimal_job_gets_defaults(tmp_path, catalogue):
    job = jobfile.load_job(write(tmp_path, MINIMAL), catalogue)
    assert job.name == "job"
    assert job.model.ffn == 4096 and job.model.kv == 16
    assert job.parallel.cp == 1 and job.parallel.recompute == "none" and job.parallel.micro_batches == 8
    assert job.hardware.peak_tflops == 400.0 and job.hardware.busy_power_w == 500.0
    assert job.hardware.idle_power_w == 50.0 and job.hardware.node_base_power_w == 1234.0
    assert job.hardware.nvlink_gbps == 2000.0 and job.hardware.nic_gbps == 400.0
    assert job.reliability.checkpoint_write_s is None and job.reliability.checkpoint_interval_s is None
    assert job.pod_gpus == 4096 and job.oversubscription == 1.0


def test_overrides(tmp_path, catalogue):
    text = MINIMAL.replace('gpu = "TEST-GPU"', 'gpu = "TEST-GPU"\npeak_tflops = 123.0\nidle_power_w = 60') + (
        "\n[reliability]\ncheckpoint_write_s = 12.5\ncheckpoint_interval_s = 900\n"
    )
    job = jobfile.load_job(write(tmp_path, text), catalogue)
    assert job.hardware.peak_tflops == 123.0 and job.hardware.idle_power_w == 60.0
    assert job.reliability.checkpoint_write_s == 12.5 and job.reliability.checkpoint_interval_s == 900.0


@pytest.mark.parametrize(
    "old, new, field",
    [
        ("seq_len = 2048\n", "\n", "model.seq_len"),
        ("global_batch = 32", "global_batch = 30", "parallel.global_batch"),
        ("heads = 16", "heads = 15", "model.hidden"),
        ("tp = 2", "tp = 32", "parallel.tp"),
        ("pp = 2", "pp = 16", "parallel.pp·virtual_stages"),
        ("[hardware]", "[hardware]\n[parallel.x]", "parallel.x"),
        ("tp = 2", 'tp = "two"', "parallel.tp must be int"),
        ("tp = 2", "tp = 2\nflux = 1", "parallel.flux"),
        ('gpu = "TEST-GPU"', 'gpu = "B200"', "hardware.gpu"),
        ("[hardware]", "[fabric]\noversubscription = 0.5\n[hardware]", "fabric.oversubscription"),
        (
            "[hardware]",
            '[reliability]\ncheckpoint_interval_s = "often"\n[hardware]',
            "reliability.checkpoint_interval_s",
        ),
        ("[hardware]", "[reliability]\nrestart_s = -1\n[hardware]", "reliability.restart_s"),
        ("[hardware]", "[hardware.extra]\n[hardware]", "hardware.extra"),
    ],
)
def test_errors_name_the_field(tmp_path, catalogue, old, new, field):
    text = MINIMAL.replace(old, new, 1)
    assert text != MINIMAL
    with pytest.raises(JobFileError) as err:
        jobfile.load_job(write(tmp_path, text), catalogue)
    assert field in str(err.value)
    assert "job.toml" in str(err.value)


def test_unknown_section_and_bad_toml(tmp_path, catalogue):
    with pytest.raises(JobFileError, match="modle"):
        jobfile.load_job(write(tmp_path, MINIMAL + "\n[modle]\nx = 1\n"), catalogue)
    with pytest.raises(JobFileError, match="invalid TOML"):
        jobfile.load_job(write(tmp_path, "[model\n"), catalogue)
    with pytest.raises(JobFileError, match="not found"):
        jobfile.load_job(tmp_path / "missing.toml", catalogue)


def test_catalogue_missing_field_is_named(tmp_path):
    path = tmp_path / "cat.toml"
    path.write_text('[gpu."X"]\ntdp_w = 1.0\n')
    with pytest.raises(JobFileError, match="peak_bf16_tflops"):
        jobfile.load_gpu_catalogue(path)


def test_real_catalogue_has_both_gpus():
    cat = jobfile.load_gpu_catalogue()
    assert cat["H100-SXM5-80GB"].peak_bf16_tflops == 989.0
    assert cat["A100-SXM4-80GB"].nvlink_gbps == 2400.0


@pytest.mark.parametrize("path", JOBS, ids=[p.stem for p in JOBS])
def test_shipped_job_files_load(path):
    job = jobfile.load_job(path)
    assert job.parallel.n_gpus > 0 and job.name == path.stem


def test_shipped_jobs_exist():
    assert len(JOBS) >= 3


def test_named_model_at_top_level_and_with_overrides(tmp_path):
    from twin.training import models

    presets = models.load_models()
    text = 'model = "llama3-405b"\n[parallel]\ntp = 8\npp = 16\ndp = 8\nglobal_batch = 128\n'
    job = jobfile.load_job(write(tmp_path, text))
    assert job.model.layers == 126 and job.model.gated_mlp and job.model.kv_heads == 8
    assert job.model.seq_len == presets["llama3-405b"]["seq_len"] == 8192
    text = '[model]\nname = "llama3-405b"\nseq_len = 131072\n[parallel]\ntp = 8\ncp = 16\npp = 16\ndp = 1\nglobal_batch = 16\n'
    job = jobfile.load_job(write(tmp_path, text))
    assert job.model.seq_len == 131072 and job.model.hidden == 16384


def test_every_named_model_is_a_valid_model():
    from twin.training import models

    for name in models.load_models():
        # on one GPU with room for any model: this checks the presets, not the memory check
        job = jobfile.parse_job({"model": name, "parallel": {"dp": 1, "global_batch": 1}, "hardware": {"hbm_gb": 1e5}})
        assert job.model.layers > 0


def test_unknown_model_name_lists_the_known_ones(tmp_path):
    with pytest.raises(JobFileError, match="llama3-405b"):
        jobfile.load_job(write(tmp_path, 'model = "llama9"\n[parallel]\ndp = 1\nglobal_batch = 1\n'))


@pytest.mark.parametrize(
    "extra, field",
    [
        ('[parallel]\ndp = 4\nglobal_batch = 32\ndp_overlap_frac = "some"\n', "parallel.dp_overlap_frac"),
        ('[reliability]\nfleet_age_days = "old"\n', "reliability.fleet_age_days"),
        ("[reliability]\nstorage_share_frac = 1.5\n", "reliability.storage_share_frac"),
        ("[reliability]\nstorage_read_gbps = 0\n", "reliability.storage_read_gbps"),
    ],
)
def test_new_keys_name_the_field(tmp_path, catalogue, extra, field):
    text = (
        MINIMAL + extra
        if not extra.startswith("[parallel]")
        else MINIMAL.replace(
            "[parallel]\ntp = 2\npp = 2\ndp = 4\nglobal_batch = 32\n",
            "[parallel]\ntp = 2\npp = 2\n" + extra.split("\n", 1)[1],
        )
    )
    with pytest.raises(JobFileError, match=field.replace(".", r"\.")):
        jobfile.load_job(write(tmp_path, text), catalogue)


def test_new_keys_parse(tmp_path, catalogue):
    text = MINIMAL.replace(
        "global_batch = 32",
        'global_batch = 32\nschedule = "zero_bubble"\ndp_mode = "fsdp"\nflash_attention = false\ndp_overlap_frac = 0.5',
    ) + ("\n[reliability]\nfleet_age_days = 10\nstorage_share_frac = 0.5\ncheckpoint_restore_s = 42\n")
    text = text.replace('gpu = "TEST-GPU"', 'gpu = "TEST-GPU"\npower_limit_w = 400')
    job = jobfile.load_job(write(tmp_path, text), catalogue)
    p, r = job.parallel, job.reliability
    assert (p.schedule, p.dp_mode, p.flash_attention, p.dp_overlap_frac) == ("zero_bubble", "fsdp", False, 0.5)
    assert (r.fleet_age_days, r.storage_share_frac, r.checkpoint_restore_s) == (10.0, 0.5, 42.0)
    assert job.hardware.power_limit_w == 400.0 and job.hardware.hbm_gbyte_per_s == 2000.0
    assert jobfile.load_job(write(tmp_path, MINIMAL), catalogue).parallel.dp_overlap_frac is None  # "auto"


def test_every_number_of_a_job_file_has_a_documented_finite_range():
    from twin.training.jobfile import _RANGES, _SCHEMA

    docs = (Path(__file__).resolve().parents[3] / "docs" / "jobfile.md").read_text().split("## Ranges")[1]
    for section, schema in _SCHEMA.items():
        for key, (types, _) in schema.items():
            if int in types or float in types:
                lo, hi, _ = _RANGES[f"{section}.{key}"]
                assert -1e12 < lo < hi < 1e12
                assert f"`{section}.{key}`" in docs, f"{section}.{key} missing from docs/jobfile.md"

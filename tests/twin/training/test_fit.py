"""The fitted step-time parameters in the catalogue and the Llama 3 job files are what twin/training/fit.py fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin.training import fit
from twin.training.jobfile import load_gpu_catalogue, load_job

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def fitted() -> dict[str, float]:
    return fit.fitted()


def test_catalogue_holds_the_fitted_gemm_efficiencies(fitted):
    gpus = load_gpu_catalogue()
    assert gpus["H100-SXM5-80GB"].gemm_efficiency_frac == pytest.approx(fitted["h100_gemm_efficiency_frac"], abs=0.001)
    assert gpus["A100-SXM4-80GB"].gemm_efficiency_frac == pytest.approx(fitted["a100_gemm_efficiency_frac"], abs=0.001)


def test_llama3_job_files_hold_the_fitted_interleaving(fitted):
    for name in ("llama3-405b-8k", "llama3-405b-16k", "llama3-405b-128k-context"):
        job = load_job(REPO / "data" / "jobs" / f"{name}.toml")
        assert job.parallel.virtual_stages == fitted["llama3_virtual_stages"], name


def test_the_two_fits_separate():
    """The 8K → 16K ratio that fixes v hardly moves with the GEMM efficiency (so v is fitted on its own)."""
    j8, j16 = (load_job(REPO / "data" / "jobs" / f"llama3-405b-{n}.toml") for n in ("8k", "16k"))
    ratios = []
    for eff in (0.5, 0.8):
        r8 = fit._tflops(fit._with(j8, 6, eff), "gpu_model_tflops")
        r16 = fit._tflops(fit._with(j16, 6, eff), "gpu_model_tflops")
        ratios.append(r16 / r8)
    assert abs(ratios[0] - ratios[1]) < 0.005

"""The step-time parameters fitted to published runs, and the cases each is fitted on.

Two things the model cannot know from a datasheet are fitted, each on its own evidence,
and every other case stays held out (``docs/validation.md`` says which is which):

* **The pipeline schedule of Llama 3** (its interleaving ``v``, which the paper does not
  give): from 8K to 16K GPUs Table 4 halves the micro-batches per replica (32 → 16) at the
  same model, layout within a replica and batch, so the compute per micro-batch is the
  same and the fall in TFLOP/s per GPU (430 → 400, ratio 0.930) measures the bubble.  ``v``
  is the integer whose predicted ratio is closest; the ratio barely moves with the GEMM
  efficiency (both steps scale alike), so the two fits separate.
* **The GEMM efficiency of each GPU type** (``gemm_efficiency_frac`` in the catalogue):
  the level.  H100 on the two Llama 3 cases with the fitted ``v`` (the mean of their log
  errors set to zero); A100 on Megatron-LM's 18.4B run, the one A100 case without
  pipeline parallelism, data-parallel overlap choices or flash attention, so nothing but
  the kernels' speed and the TP all-reduces sets it.

Held out: Llama 3 at 128K context (same hardware, ``v``; causal attention dominates), the
Megatron 145.6B and 1T runs, OPT-175B and MegaScale.  ``tests/twin/training/test_fit.py``
checks that the catalogue and the Llama 3 job files hold what this module fits.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from twin.training.jobfile import TrainingJob, load_job
from twin.training.report import throughput_report

JOBS_DIR = Path(__file__).resolve().parents[2] / "data" / "jobs"
# Llama 3 405B, Table 4 [Llama3-2024]: TFLOP/s per GPU at 8,192 and 16,384 GPUs.
LLAMA3_8K_TFLOPS, LLAMA3_16K_TFLOPS = 430.0, 400.0
# Megatron-LM 18.4B on 256 A100, Table 1 [Megatron-SC21]: TFLOP/s per GPU incl. recomputation.
MEGATRON_18B_TFLOPS = 135.0
MAX_VIRTUAL_STAGES = 7  # 126 layers on 16 stages: the end stages' 7 layers bound the chunks


def _with(job: TrainingJob, virtual_stages: int | None = None, gemm: float | None = None) -> TrainingJob:
    par = job.parallel if virtual_stages is None else dataclasses.replace(job.parallel, virtual_stages=virtual_stages)
    hw = job.hardware if gemm is None else dataclasses.replace(job.hardware, gemm_efficiency_frac=gemm)
    return dataclasses.replace(job, parallel=par, hardware=hw)


def _tflops(job: TrainingJob, metric: str) -> float:
    return float(throughput_report(job)[metric])


def fit_virtual_stages(small: TrainingJob, large: TrainingJob, published_ratio: float) -> int:
    """Interleaving ``v`` whose TFLOP/s ratio ``large/small`` is closest to ``published_ratio``."""
    best, best_err = 1, math.inf
    for v in range(1, MAX_VIRTUAL_STAGES + 1):
        ratio = _tflops(_with(large, v), "gpu_model_tflops") / _tflops(_with(small, v), "gpu_model_tflops")
        if abs(ratio - published_ratio) < best_err:
            best, best_err = v, abs(ratio - published_ratio)
    return best


def fit_gemm_efficiency(cases: list[tuple[TrainingJob, str, float]], lo: float = 0.2, hi: float = 1.0) -> float:
    """GEMM efficiency at which the mean log error of ``(job, metric, published)`` cases is zero (bisection)."""

    def mean_log_error(eff: float) -> float:
        return sum(math.log(_tflops(_with(j, gemm=eff), m) / p) for j, m, p in cases) / len(cases)

    for _ in range(40):  # the error rises monotonically with the efficiency
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mean_log_error(mid) < 0.0 else (lo, mid)
    return 0.5 * (lo + hi)


def fitted() -> dict[str, float]:
    """The fitted values: Llama 3's ``v``, and the H100 and A100 GEMM efficiencies."""
    j8, j16 = load_job(JOBS_DIR / "llama3-405b-8k.toml"), load_job(JOBS_DIR / "llama3-405b-16k.toml")
    v = fit_virtual_stages(j8, j16, LLAMA3_16K_TFLOPS / LLAMA3_8K_TFLOPS)
    h100 = fit_gemm_efficiency(
        [
            (_with(j8, v), "gpu_model_tflops", LLAMA3_8K_TFLOPS),
            (_with(j16, v), "gpu_model_tflops", LLAMA3_16K_TFLOPS),
        ]
    )
    a100 = fit_gemm_efficiency([(load_job(JOBS_DIR / "megatron-18b-a100.toml"), "gpu_hw_tflops", MEGATRON_18B_TFLOPS)])
    return {"llama3_virtual_stages": float(v), "h100_gemm_efficiency_frac": h100, "a100_gemm_efficiency_frac": a100}


if __name__ == "__main__":
    for key, value in fitted().items():
        print(f"{key} = {value:.4f}")

"""Validation cases of the throughput and goodput models against published runs.

Each case names its inputs (a job file in ``data/jobs/`` or explicit reliability inputs),
the published figure and its source.  :func:`markdown_tables` regenerates the tables of
``docs/validation.md``; ``tests/twin/training/test_validation.py`` checks the document is current.
Run ``python -m twin.training.validation`` to print them.  No model parameter is fitted to any case.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from twin.training import goodput
from twin.commands.throughput import throughput_report
from twin.training.jobfile import TrainingJob, load_job

JOBS_DIR = Path(__file__).resolve().parents[2] / "data" / "jobs"
MEGATRON = "[Megatron-SC21 Table 1]"
LLAMA = "[Llama3-2024 Table 4]"
LLAMA_FAIL = "[Llama3-2024 §3.3.4] (419 unexpected interruptions in 54 days on 16,384 GPUs; as reported by DCD)"
LLAMA_ETTR = "[Llama3-2024 §3.3.4] (\"higher than 90% effective training time\")"
OPT = "OPT-175B logbook, ~1,000 A100, job MTTI ~7.5 h [Klockwood-JobReliability] [S]"


@dataclass(frozen=True)
class ThroughputCase:
    """A published TFLOP/s-per-GPU figure for a job file."""

    job_file: str
    metric: str  # "gpu_hw_tflops" (counts recomputation) or "gpu_model_tflops" (model FLOPs)
    published: float
    source: str


THROUGHPUT_CASES = (
    ThroughputCase("megatron-18b-a100.toml", "gpu_hw_tflops", 135.0, MEGATRON),
    ThroughputCase("megatron-145b-a100.toml", "gpu_hw_tflops", 148.0, MEGATRON),
    ThroughputCase("megatron-1t-a100.toml", "gpu_hw_tflops", 163.0, MEGATRON),
    ThroughputCase("llama3-405b-8k.toml", "gpu_model_tflops", 430.0, LLAMA),
    ThroughputCase("llama3-405b-16k.toml", "gpu_model_tflops", 400.0, LLAMA),
    ThroughputCase("llama3-405b-128k-context.toml", "gpu_model_tflops", 380.0, LLAMA),
)


def _inputs(job: TrainingJob) -> str:
    p = job.parallel
    dims = f"TP{p.tp} CP{p.cp} PP{p.pp} DP{p.dp}" if p.cp > 1 else f"TP{p.tp} PP{p.pp} DP{p.dp}"
    return (f"{p.n_gpus:,} {job.gpu.split('-')[0]}, {dims}, v={p.virtual_stages}, mb={p.micro_batch}, "
            f"GB={p.global_batch}, s={job.model.seq_len}, recompute={p.recompute}")


def _err(model: float, published: float) -> str:
    return f"{100.0 * (model - published) / published:+.0f} %"


def throughput_rows() -> list[list[str]]:
    """Rows: case, inputs, twin, published, error, source."""
    rows = []
    for case in THROUGHPUT_CASES:
        job = load_job(JOBS_DIR / case.job_file)
        rep = throughput_report(job)
        value = rep[case.metric]
        label = "TFLOP/s/GPU incl. recompute" if case.metric == "gpu_hw_tflops" else "model TFLOP/s/GPU"
        rows.append([f"`{case.job_file}`", _inputs(job), f"{value:.0f} ({label}; MFU {100 * rep['mfu_frac']:.0f} %)",
                     f"{case.published:.0f}", _err(value, case.published), case.source])
    return rows


def sensitivity_rows() -> list[list[str]]:
    """Llama 3 16K case with virtual pipeline stages, which Table 4 does not state (not a validation)."""
    job = load_job(JOBS_DIR / "llama3-405b-16k.toml")
    rows = []
    for v in (1, 2, 4):
        for overlap in (0.0, 1.0):
            par = dataclasses.replace(job.parallel, virtual_stages=v, dp_overlap_frac=overlap)
            rep = throughput_report(dataclasses.replace(job, parallel=par))
            b = rep["breakdown_s"]
            rows.append([str(v), f"{overlap:.0f}", f"{rep['gpu_model_tflops']:.0f}", _err(rep["gpu_model_tflops"], 400.0),
                         f"{b['bubble']:.2f}", f"{b['dp_comm']:.2f}", f"{rep['step_time_s']:.2f}"])
    return rows


def reliability_rows() -> list[list[str]]:
    """Rows: case, inputs, twin, published, error, source (default failure rate of the twin)."""
    rate = goodput.DEFAULT_FAILURES_PER_1000_NODE_DAYS
    rows = []
    days, nodes = 54.0, 2048
    mttf_s = goodput.job_mttf_s(nodes, rate)
    expected = goodput.expected_interruptions(days * goodput.SECONDS_PER_DAY, mttf_s)
    rows.append(["Llama 3 405B interruptions", f"{nodes:,} nodes, {days:.0f} days, {rate} /1000 node-days",
                 f"{expected:.0f} interruptions (MTTF {mttf_s / 3600:.2f} h)", "419 (MTTF 3.09 h)",
                 _err(expected, 419.0), LLAMA_FAIL])
    rate2 = goodput.RSC2_FAILURES_PER_1000_NODE_DAYS
    expected2 = goodput.expected_interruptions(days * goodput.SECONDS_PER_DAY, goodput.job_mttf_s(nodes, rate2))
    rows.append(["same, RSC-2 rate", f"{nodes:,} nodes, {days:.0f} days, {rate2} /1000 node-days",
                 f"{expected2:.0f} interruptions", "419", _err(expected2, 419.0), LLAMA_FAIL])
    rep = throughput_report(load_job(JOBS_DIR / "llama3-405b-16k.toml"))
    rows.append(["Llama 3 405B ETTR", "job file `llama3-405b-16k.toml` (restart 600 s [E], Daly interval, "
                 f"write {rep['checkpoint_write_s']:.1f} s)", f"{100 * rep['ettr_frac']:.1f} %", "> 90 %",
                 f"{100 * rep['ettr_frac'] - 90:+.1f} points vs the 90 % bound", LLAMA_ETTR])
    opt_nodes = 124
    opt_mttf_h = goodput.job_mttf_s(opt_nodes, rate) / 3600.0
    rows.append(["OPT-175B job MTTI", f"{opt_nodes} nodes (992 A100), {rate} /1000 node-days",
                 f"{opt_mttf_h:.1f} h", "~7.5 h", _err(opt_mttf_h, 7.5), OPT])
    return rows


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown_tables() -> str:
    """The generated section of ``docs/validation.md``."""
    return "\n\n".join([
        "### Throughput\n\n" + _table(["case", "inputs", "twin", "published", "error", "source"], throughput_rows()),
        "### Sensitivity of the Llama 3 16K case to unstated inputs (not a validation)\n\n"
        + _table(["virtual stages", "DP overlap", "model TFLOP/s/GPU", "vs 400", "bubble s", "dp_comm s", "step s"],
                 sensitivity_rows()),
        "### Reliability\n\n" + _table(["case", "inputs", "twin", "published", "error", "source"], reliability_rows()),
    ])


if __name__ == "__main__":
    print(markdown_tables())
